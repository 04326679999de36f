import { describe, expect, it } from 'vitest';
import type { AdsClient } from '../src/api/client.js';
import { createEngine } from '../src/upload/engine.js';
import { Ledger } from '../src/upload/ledger.js';
import { BatchPacker, type PackedBatch } from '../src/upload/plan.js';
import type { SendableBatch } from '../src/upload/sender.js';
import type { Target } from '../src/upload/target.js';
import type { UserBatchResult } from '../src/platform/responses.js';

/** Four batches of three users each. */
function batches(): PackedBatch[] {
  const packer = new BatchPacker({ maxBodyBytes: 4096, maxOperations: 1, maxUsersPerOperation: 3 });
  const handle = packer.group({ operationType: 'Update' });
  const out: PackedBatch[] = [];
  for (let i = 0; i < 12; i++) {
    const closed = packer.add(handle, `{"email":["${String(i).padStart(64, '0')}"]}`, i + 2);
    if (closed !== undefined) out.push(closed);
  }
  out.push(...packer.finish());
  return out;
}

describe('the sending engine', () => {
  it('gives back the body of a confirmed batch only, never of one that failed or had wrong counts', async () => {
    const sent = batches();
    const answers: ((users: number) => Promise<UserBatchResult>)[] = [
      async (users) => ({ success_count: users, total_count: users }),
      () => Promise.reject(new Error('socket hang up')),
      async (users) => ({ success_count: users - 1, total_count: users }),
      async (users) => ({ success_count: users, total_count: users }),
    ];
    const target = {
      postUsers: (_client: AdsClient, _account: string, body: Buffer) => {
        const batch = sent.find((b) => b.body === body) as PackedBatch;
        return (answers[batch.index] as (users: number) => Promise<UserBatchResult>)(batch.users);
      },
    } as unknown as Target;
    const released: number[] = [];
    const ledger = new Ledger(undefined, undefined);
    const engine = createEngine({
      sender: {
        client: {} as AdsClient,
        accountId: 'a',
        target,
        maxRetries: 0,
        retryBaseMs: 1,
        clock: { now: () => 0, sleep: async () => {} },
        random: () => 0,
        signal: undefined,
        cancelSignal: undefined,
      },
      concurrency: 2,
      ledger,
      // Called after the batch's record: the ledger has counted it by then.
      release: (batch: SendableBatch) => {
        expect(ledger.confirmed).toBeGreaterThan(0);
        released.push(batch.index);
      },
    });
    for (const batch of sent) await engine.offer(batch);
    await engine.drain();
    expect(sent).toHaveLength(4);
    expect(released.sort()).toEqual([0, 3]);
    expect(ledger.failed.map((f) => f.index).sort()).toEqual([1, 2]);
  });
});
