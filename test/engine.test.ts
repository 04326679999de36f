import { describe, expect, it } from 'vitest';
import type { AdsClient } from '../src/api/client.js';
import { createEngine } from '../src/upload/engine.js';
import { Ledger } from '../src/upload/ledger.js';
import { BatchPacker, type PackedBatch } from '../src/upload/plan.js';
import type { SendableBatch } from '../src/upload/sender.js';
import type { PostHow, Target } from '../src/upload/target.js';
import type { UserBatchResult } from '../src/platform/responses.js';

/** Five batches of three users each. */
function batches(): PackedBatch[] {
  const packer = new BatchPacker({ maxBodyBytes: 4096, maxOperations: 1, maxUsersPerOperation: 3 });
  const handle = packer.group({ operationType: 'Update' });
  const out: PackedBatch[] = [];
  for (let i = 0; i < 15; i++) {
    const closed = packer.add(handle, `{"email":["${String(i).padStart(64, '0')}"]}`, i + 2);
    if (closed !== undefined) out.push(closed);
  }
  out.push(...packer.finish());
  return out;
}

describe('the sending engine', () => {
  it('gives back the body of a batch confirmed at its first request only, never of one that failed or was sent again', async () => {
    const sent = batches();
    const counts = (n: number): UserBatchResult => ({ success_count: n, total_count: n });
    let resent = false;
    // Per batch: what the platform answers, each HTTP attempt counted as the client counts it.
    const answers: ((users: number, attempt: () => void) => Promise<UserBatchResult>)[] = [
      async (users, attempt) => (attempt(), counts(users)),
      (_users, attempt) => (attempt(), Promise.reject(new Error('socket hang up'))),
      // Wrong counts, then right on the re-send: confirmed, in two requests.
      async (users, attempt) => {
        attempt();
        resent = !resent;
        return resent ? { ...counts(users), success_count: 0 } : counts(users);
      },
      // The client's own retry (a 503, say), then confirmed.
      async (users, attempt) => (attempt(), attempt(), counts(users)),
      async (users, attempt) => (attempt(), counts(users)),
    ];
    const target = {
      postUsers: (_client: AdsClient, _account: string, body: Buffer, how: PostHow) => {
        const batch = sent.find((b) => b.body === body) as PackedBatch;
        const answer = answers[batch.index] as (users: number, attempt: () => void) => Promise<UserBatchResult>;
        return answer(batch.users, () => how.onAttempt?.());
      },
    } as unknown as Target;
    const released: number[] = [];
    const ledger = new Ledger(undefined, undefined);
    const engine = createEngine({
      sender: {
        client: {} as AdsClient,
        accountId: 'a',
        target,
        maxRetries: 1,
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
    expect(sent).toHaveLength(5);
    expect(ledger.confirmed).toBe(4);
    expect(ledger.failed.map((f) => f.index)).toEqual([1]);
    expect(released.sort()).toEqual([0, 4]);
  });
});
