import { createHash, randomBytes } from 'node:crypto';
import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { serializeUser, writeUserFingerprint } from '../src/identifiers/serialize.js';
import { decodeUserRecord, encodeUserRecord } from '../src/state/snapshot-format.js';
import { EMPTY_SNAPSHOT_DIGEST, Snapshot, snapshotDir, type SnapshotUser } from '../src/state/snapshot.js';
import { sortKeyOrder } from '../src/state/snapshot-index.js';
import { Changes } from '../src/state/snapshot-merge.js';
import { setIndexChunkEntries } from '../src/state/snapshot-index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ak-snapshot-'));
  dirs.push(d);
  return join(d, 'snap');
}

const seed = randomBytes(8).toString('hex');
let counter = 0;
const hex = (): string => createHash('sha256').update(`${seed}${counter++}`).digest('hex');
function user(json = serializeUser({ email: [hex()], phone_number: [hex()] })): SnapshotUser {
  const fp = new Uint32Array(2);
  writeUserFingerprint(json, fp, 0);
  return { hi: fp[0] as number, lo: fp[1] as number, json };
}
const T = { accountId: 'acc', kind: 'custom_audience', id: 'aud' } as const;
/** An Update's write-ahead record, then its confirmation (what a sync does around a batch). */
function confirmUpdates(s: Snapshot, users: SnapshotUser[]): void {
  s.recordIntentUpdates(users);
  s.recordUpdates(users);
}
function confirmDeletes(s: Snapshot, users: SnapshotUser[]): void {
  s.recordIntentDeletes(users);
  s.recordDeletes(users);
}
const all = (s: Snapshot): string[] =>
  [...s.usersNotIn(new Uint8Array(Math.ceil(s.count / 8)))].flat().map((u) => u.json);

describe('user records', () => {
  it('round-trip canonical JSON, digests in 32 bytes and partner ids as text', () => {
    const json = serializeUser({ email: [hex(), hex()], device_id: [hex()], partner_user_id: ['p-1 "é"\n'] });
    const record = encodeUserRecord(json);
    expect(decodeUserRecord(record)).toBe(json);
    expect(record.length).toBeLessThan(json.length / 1.7);
  });
});

describe('sortKeyOrder', () => {
  it('sorts 64-bit keys as unsigned and is stable', () => {
    const n = 20_000;
    const hi = new Uint32Array(n);
    const lo = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      hi[i] = i % 7 === 0 ? 0xffffffff : Math.floor(Math.random() * 0x100000000);
      lo[i] = i % 5 === 0 ? 3 : Math.floor(Math.random() * 0x100000000);
    }
    const order = [...sortKeyOrder(hi, lo, n)];
    const expected = [...Array(n).keys()].sort((a, b) =>
      hi[a] !== hi[b]
        ? (hi[a] as number) - (hi[b] as number)
        : lo[a] !== lo[b]
          ? (lo[a] as number) - (lo[b] as number)
          : a - b,
    );
    expect(order).toEqual(expected);
  });
});

describe('Changes', () => {
  it('spill sorted runs to files and walk them in key order, the latest record of a key winning', () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const n = 5_000;
    const changes = new Changes(dir, 'test', 64);
    const latest = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      // Few distinct keys: each comes back in many runs and within runs.
      const hi = i % 7 === 0 ? 0xffffffff : (i * 2654435761) % 97;
      const lo = (i * 40503) % 13;
      changes.push(hi, lo, i, i % 251, i);
      latest.set(`${hi}/${lo}`, i);
    }
    expect(readdirSync(dir).filter((f) => f.startsWith('commit-test.')).length).toBe(Math.floor(n / 64));
    const walk = changes.sorted();
    const got: [number, number, number][] = [];
    for (; !walk.done; walk.next()) got.push([walk.hi, walk.lo, walk.offset]);
    const expected = [...latest]
      .map(([k, i]) => [...k.split('/').map(Number), i] as [number, number, number])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(got).toEqual(expected);
    walk.close();
    changes.remove();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a commit leaves no run file behind, and the next open removes those of a killed commit', () => {
    const dir = tempDir();
    const s = Snapshot.open(dir, { target: T });
    const users = Array.from({ length: 300 }, () => user());
    confirmUpdates(s, users);
    s.commit();
    expect(s.count).toBe(300);
    expect(readdirSync(dir).filter((f) => f.startsWith('commit-'))).toEqual([]);
    s.close();
    appendFileSync(join(dir, 'commit-upserts.0'), 'left by a kill');
    const again = Snapshot.open(dir, { target: T });
    expect(readdirSync(dir).filter((f) => f.startsWith('commit-'))).toEqual([]);
    expect(all(again).sort()).toEqual(users.map((u) => u.json).sort());
    again.close();
  });
});

describe('Snapshot', () => {
  it('starts empty, commits confirmed updates and deletes, and reopens', () => {
    const dir = tempDir();
    const s = Snapshot.open(dir, { target: T, now: () => 1_700_000_000_000 });
    expect(s.existed).toBe(false);
    expect(s.count).toBe(0);
    expect(s.digest).toBe(EMPTY_SNAPSHOT_DIGEST);
    const users = Array.from({ length: 300 }, () => user());
    confirmUpdates(s, users.slice(0, 200));
    confirmUpdates(s, users.slice(200));
    expect(s.commit()).toBe(true);
    expect(s.count).toBe(300);
    const d1 = s.digest;
    expect(d1).not.toBe(EMPTY_SNAPSHOT_DIGEST);
    confirmDeletes(s, users.slice(0, 50));
    s.commit();
    s.close();

    const again = Snapshot.open(dir, { target: T });
    expect(again.existed).toBe(true);
    expect(again.count).toBe(250);
    expect(new Set(all(again))).toEqual(new Set(users.slice(50).map((u) => u.json)));
    const { directory, mid, lo, count } = again.keys(0, 2 ** 32);
    const key = (i: number): number => {
      let bucket = 0;
      while ((directory[bucket + 1] as number) <= i) bucket++;
      return (bucket * 65536 + (mid[i] as number)) * 2 ** 32 + (lo[i] as number);
    };
    expect(count).toBe(250);
    for (let i = 1; i < count; i++) expect(key(i)).toBeGreaterThan(key(i - 1));
    const stored = new Set(users.slice(50).map((u) => u.hi * 2 ** 32 + u.lo));
    for (let i = 0; i < count; i++) expect(stored.has(key(i))).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of readdirSync(dir)) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
    again.close();
  });

  it(
    'merges random updates and deletes across index chunks exactly as a model (order, digest, objects)',
    { timeout: 60_000 },
    () => {
      // Chunks of 256 entries instead of 65,536: the first round's 2,000 users fill 7 of them and
      // end inside the 8th, and each merge reads and writes across every boundary.
      const previousChunk = setIndexChunkEntries(256);
      onTestFinished(() => void setIndexChunkEntries(previousChunk));
      const dir = tempDir();
      const model = new Map<string, SnapshotUser>();
      const keyOf = (u: SnapshotUser): string =>
        `${u.hi.toString(16).padStart(8, '0')}${u.lo.toString(16).padStart(8, '0')}`;
      let s = Snapshot.open(dir, { target: T });
      for (let round = 0; round < 3; round++) {
        const current = [...model.values()];
        const fresh = Array.from({ length: round === 0 ? 2_000 : 1_500 }, () => user());
        const refreshed = current.filter((_, i) => i % 50 === 7).map((u) => ({ ...u }));
        const removed = current.filter((_, i) => i % 40 === 3);
        confirmDeletes(s, removed);
        for (let i = 0; i < fresh.length; i += 500) confirmUpdates(s, fresh.slice(i, i + 500));
        confirmUpdates(s, refreshed);
        for (const u of removed) model.delete(keyOf(u));
        for (const u of [...fresh, ...refreshed]) model.set(keyOf(u), u);
        s.commit();
        s.close();
        s = Snapshot.open(dir, { target: T });
        const sorted = [...model.keys()].sort();
        expect(s.count).toBe(sorted.length);
        expect(s.digest).toBe(
          createHash('sha256')
            .update(Buffer.from(sorted.join(''), 'hex'))
            .digest('hex'),
        );
        const byJson = new Set([...model.values()].map((u) => u.json));
        const stored = all(s);
        expect(stored.length).toBe(byJson.size);
        expect(stored.every((j) => byJson.has(j))).toBe(true);
        // The live bytes (what decides a compaction), summed as entries are copied in runs.
        const liveBytes = [...model.values()].reduce((n, u) => n + 16 + encodeUserRecord(u.json).length, 0);
        expect(readFileSync(join(dir, 'index')).readDoubleBE(32)).toBe(liveBytes);
      }
      s.close();
    },
  );

  it('marks users last sent before the cut-off as stale, and a refresh renews the time', () => {
    const dir = tempDir();
    let now = 1_000_000_000_000;
    const s = Snapshot.open(dir, { target: T, now: () => now });
    const users = Array.from({ length: 20 }, () => user());
    confirmUpdates(s, users);
    s.commit();
    now += 10_000_000;
    confirmUpdates(s, users.slice(0, 5));
    s.commit();
    const staleCount = (staleBefore: number, futureAfter: number): number => {
      const { stale, count } = s.keys(staleBefore, futureAfter);
      let n = 0;
      for (let i = 0; i < count; i++) n += ((stale[i >>> 3] as number) >>> (i & 7)) & 1;
      return n;
    };
    expect(staleCount(now / 1000 - 1, 2 ** 32)).toBe(15);
    // Times after the cut-off at the other end were recorded by a clock running fast: stale too.
    expect(staleCount(0, now / 1000 - 1)).toBe(5);
    expect(staleCount(now / 1000 - 1, now / 1000 - 1)).toBe(20);
    expect(s.count).toBe(20);
    s.close();
  });

  it('a sync killed before its commit is committed by the next open; a torn last record is dropped', () => {
    const dir = tempDir();
    const s = Snapshot.open(dir, { target: T });
    const users = Array.from({ length: 10 }, () => user());
    confirmUpdates(s, users.slice(0, 6));
    confirmUpdates(s, users.slice(6));
    s.close(); // no commit: as after SIGKILL
    appendFileSync(join(dir, 'pending'), Buffer.from([0, 0, 1, 0, 9, 9]));
    const again = Snapshot.open(dir, { target: T });
    expect(again.existed).toBe(true);
    expect(again.count).toBe(10);
    expect(readdirSync(dir)).not.toContain('pending');
    again.close();
  });

  it('a pending log whose index was already replaced is dropped, not applied twice', () => {
    const dir = tempDir();
    const s = Snapshot.open(dir, { target: T });
    const users = Array.from({ length: 10 }, () => user());
    confirmUpdates(s, users);
    s.commit();
    confirmDeletes(s, users.slice(0, 4));
    copyFileSync(join(dir, 'pending'), join(dir, 'pending.copy'));
    s.commit();
    confirmUpdates(s, users.slice(0, 2));
    s.commit();
    s.close();
    // As if killed after the rename of the delete commit, before `pending` was removed.
    copyFileSync(join(dir, 'pending.copy'), join(dir, 'pending'));
    rmSync(join(dir, 'pending.copy'));
    const again = Snapshot.open(dir, { target: T });
    expect(again.count).toBe(8);
    again.close();
  });

  it('compacts the data file when most records are dead, keeping every live object', () => {
    const dir = tempDir();
    const s = Snapshot.open(dir, { target: T });
    const users = Array.from({ length: 12_000 }, () => user());
    confirmUpdates(s, users);
    s.commit();
    const before = s.bytesOnDisk;
    confirmDeletes(s, users.slice(0, 9000));
    s.commit();
    expect(readdirSync(dir).filter((f) => f.startsWith('data.'))).toEqual(['data.1']);
    expect(s.bytesOnDisk).toBeLessThan(before / 3);
    expect(new Set(all(s))).toEqual(new Set(users.slice(9000).map((u) => u.json)));
    // ~113 bytes per user of email + phone: 24 of index, 16 of frame head, 73 of record.
    expect(s.bytesOnDisk / s.count).toBeLessThan(120);
    s.close();
  });

  it('names one directory per account and target', () => {
    const a = snapshotDir('/s', { accountId: 'a', kind: 'custom_audience', id: 'x' });
    expect(a).not.toBe(snapshotDir('/s', { accountId: 'a', kind: 'do_not_reach_list', id: 'x' }));
    expect(a).not.toBe(snapshotDir('/s', { accountId: 'b', kind: 'custom_audience', id: 'x' }));
  });
});
