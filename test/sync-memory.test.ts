import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { snapshotDir } from '../src/state/snapshot.js';
import { Spool, SPOOL_MEMORY_BYTES, type SpooledUser } from '../src/upload/sync-input.js';
import { syncAudience } from './helpers/small-audience.js';
import { members, setup } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';

/**
 * A sync's memory does not grow with its users: the users it will send wait in the spool as
 * bytes, on disk beyond SPOOL_MEMORY_BYTES, and the library's input is pulled as it is planned,
 * never collected. Not timed: what is checked is where the users are, not how much RSS there is
 * (`npm run bench -- sync` measures that).
 */
const digest = (s: string): string => createHash('sha256').update(s).digest('hex');

describe('Spool', () => {
  it('keeps the block being filled in memory, writes the full ones to its file, and gives every user back in order', async () => {
    const dir = tempDir('ak-spool-');
    mkdirSync(dir, { recursive: true });
    const spool = new Spool(dir, 'test', 4096);
    const users: SpooledUser[] = [];
    for (let i = 0; i < 5000; i++) {
      // A partner id with non-ASCII text, and a user larger than a block.
      const json =
        i === 7
          ? JSON.stringify({ partner_user_id: ['é'.repeat(3000), 'ü'] })
          : JSON.stringify({ email: [digest(`u${i}`)] });
      users.push({ hi: i * 7919, lo: 0xffffffff - i, json, line: i + 2 });
      spool.push(i * 7919, 0xffffffff - i, i + 2, `x${json}y`, 1, json.length + 1);
    }
    const file = join(dir, 'spool-test');
    expect(statSync(file).size).toBeGreaterThan(5000 * 70 - 8192);
    const back = [];
    for await (const chunk of spool.chunks()) back.push(...chunk);
    expect(back).toEqual(users);
    spool.remove();
    expect(existsSync(file)).toBe(false);
  });
});

describe('a first sync through the library', () => {
  it('spools the users to disk while it pulls the input, sends once the input has ended, and removes the spool', async () => {
    const t = await setup();
    // About 90 bytes each in the spool: the first quarter of them stays in memory.
    const n = Math.ceil((4 * SPOOL_MEMORY_BYTES) / 90);
    const dir = snapshotDir(t.stateDir, {
      accountId: t.sandbox.accounts.primary,
      kind: 'custom_audience',
      id: t.audienceId,
    });
    const spoolBytes = (): number =>
      existsSync(dir)
        ? readdirSync(dir)
            .filter((f) => f.startsWith('spool-'))
            .reduce((b, f) => b + statSync(join(dir, f)).size, 0)
        : 0;
    let pulled = 0;
    /** The spool file's size when each tenth of the input was pulled. */
    const seen: number[] = [];
    // Hashed users, as a pipeline that hashed them itself passes them: no hashing here.
    async function* users(): AsyncGenerator<{ email: string[] }> {
      for (; pulled < n; pulled++) {
        if (pulled % Math.ceil(n / 10) === 0) seen.push(spoolBytes());
        yield { email: [digest(`customer.${pulled}`)] };
      }
    }
    let pulledWhenSending = -1;
    const report = await syncAudience({
      client: t.client,
      accountId: t.sandbox.accounts.primary,
      target: { customAudienceId: t.audienceId },
      users: users(),
      stateDir: t.stateDir,
      onPhase: (phase) => {
        if (phase === 'updating') pulledWhenSending = pulled;
      },
    });
    expect(report).toMatchObject({ status: 'completed', first_sync: true, adds: n, users: n });
    expect(members(t.sandbox, t.audienceId)).toHaveLength(n);
    // Users reached the file while the input was still being pulled, and it kept growing: the
    // input was neither collected first nor held as objects.
    expect(seen[0]).toBe(0);
    expect(seen[4]).toBeGreaterThan(0);
    expect(seen[9]).toBeGreaterThan(seen[4] as number);
    // Nothing is sent before the input has ended (sync.ts: the plan and its checks come first).
    expect(pulledWhenSending).toBe(n);
    expect(readdirSync(dir).filter((f) => f.startsWith('spool-'))).toEqual([]);
  });
});
