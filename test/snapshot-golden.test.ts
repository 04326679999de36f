import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { serializeUser, writeUserFingerprint } from '../src/identifiers/serialize.js';
import type { AudienceUser } from '../src/platform/users.js';
import { Snapshot, type SnapshotUser } from '../src/state/snapshot.js';
import { encodeUserRecord, TYPE_CODES } from '../src/state/snapshot-format.js';
import { recoverSnapshot } from '../src/state/snapshot-recover.js';
import { tempDir } from './helpers/temp.js';

// The snapshot's format 2, pinned: files written by this version (test/golden/snapshot-v2/,
// rewritten with UPDATE_GOLDEN=1 only when the format version changes) are read back, a fresh
// write gives the same bytes, and a newer format is refused. The fingerprints every snapshot
// is keyed on depend on the canonical JSON's key order: pinned too.

const GOLDEN = fileURLToPath(new URL('./golden/snapshot-v2/', import.meta.url));
const TARGET = { accountId: '18ce54d4x5t', kind: 'custom_audience', id: '1nmth' } as const;
const NOW = 1_767_225_600_000;

const digest = (text: string): string => createHash('sha256').update(text).digest('hex');
const USERS: AudienceUser[] = [
  { email: [digest('a@example.com')], phone_number: [digest('14155550100')] },
  { email: [digest('b@example.com')], partner_user_id: ['partner "7"'] },
  { device_id: [digest('device-c')], handle: [digest('c_handle')] },
  { service_id: [digest('1234')], email: [digest('d@example.com'), digest('d2@example.com')] },
];
function snapshotUser(user: AudienceUser): SnapshotUser {
  const json = serializeUser(user);
  const fp = new Uint32Array(2);
  writeUserFingerprint(json, fp, 0);
  return { hi: fp[0] as number, lo: fp[1] as number, json };
}

/** Three users confirmed and committed; then a sync killed after its write-ahead records (a Delete, an Update). */
function writeGolden(dir: string): void {
  const [u0, u1, u2, u3] = USERS.map(snapshotUser) as [SnapshotUser, SnapshotUser, SnapshotUser, SnapshotUser];
  const s = Snapshot.open(dir, { target: TARGET, now: () => NOW });
  s.recordIntentUpdates([u0, u1, u2]);
  s.recordUpdates([u0, u1, u2], NOW);
  s.commit();
  s.recordIntentDeletes([u0]);
  s.recordIntentUpdates([u3]);
  s.close();
}

describe('snapshot format 2 (golden files)', () => {
  if (process.env.UPDATE_GOLDEN === '1') {
    mkdirSync(GOLDEN, { recursive: true });
    writeGolden(GOLDEN);
  }

  it('a fresh write gives the golden bytes', () => {
    const dir = join(tempDir('ak-golden-'), 'snap');
    writeGolden(dir);
    expect(readdirSync(dir).sort()).toEqual(['data.0', 'index', 'pending']);
    for (const f of ['index', 'data.0', 'pending'])
      expect(readFileSync(join(dir, f)), f).toEqual(readFileSync(join(GOLDEN, f)));
  });

  it("the golden files read back: users, objects, and the killed sync's users uncertain (due for a re-send)", () => {
    const dir = join(tempDir('ak-golden-'), 'snap');
    cpSync(GOLDEN, dir, { recursive: true });
    const s = Snapshot.open(dir, { target: TARGET, now: () => NOW });
    expect(s.count).toBe(4);
    const all = [...s.usersNotIn(new Uint8Array(1))].flat().map((u) => u.json);
    expect(new Set(all)).toEqual(new Set(USERS.map(serializeUser)));
    const keys = s.keys(NOW / 1000 - 1, 2 ** 32);
    const stale = all.filter((_, i) => ((keys.stale[0] as number) >> i) & 1);
    const uncertain = [USERS[0], USERS[3]].map((u) => serializeUser(u as AudienceUser));
    expect(new Set(stale)).toEqual(new Set(uncertain));
    s.close();
  });

  it.each([
    ['index', 11],
    ['data.0', 11],
    ['pending', 23],
  ])('a newer format of %s is refused, never misread', (file, at) => {
    const dir = join(tempDir('ak-golden-'), 'snap');
    cpSync(GOLDEN, dir, { recursive: true });
    const buf = readFileSync(join(dir, file));
    buf[at] = 3;
    writeFileSync(join(dir, file), buf);
    expect(() => Snapshot.open(dir, { target: TARGET })).toThrow(
      expect.objectContaining({ code: 'snapshot_newer_format', message: expect.stringMatching(/newer audience-kit/) }),
    );
  });

  it('a format 1 snapshot (no frames) is refused, and recovered through its index with every user uncertain', () => {
    const dir = join(tempDir('ak-golden-'), 'snap');
    mkdirSync(dir, { recursive: true });
    const users = USERS.map(snapshotUser).sort((a, b) => a.hi - b.hi || a.lo - b.lo);
    const bodies = users.map((u) => encodeUserRecord(u.json));
    const index = Buffer.alloc(96 + 24 * users.length);
    index.write('AKSNAP01', 0, 'latin1');
    index.writeUInt32BE(1, 8);
    index.writeDoubleBE(users.length, 24);
    let offset = 0;
    users.forEach((u, i) => {
      const at = 96 + 24 * i;
      index.writeUInt32BE(u.hi, at);
      index.writeUInt32BE(u.lo, at + 4);
      index.writeUIntBE(offset, at + 8, 6);
      index.writeUInt32BE((bodies[i] as Buffer).length, at + 16);
      index.writeUInt32BE(NOW / 1000, at + 20);
      offset += (bodies[i] as Buffer).length;
    });
    writeFileSync(join(dir, 'index'), index);
    writeFileSync(join(dir, 'data.0'), Buffer.concat(bodies));
    expect(() => Snapshot.open(dir, { target: TARGET })).toThrow(
      expect.objectContaining({ code: 'snapshot_old_format' }),
    );
    expect(recoverSnapshot(dir, { target: TARGET })).toEqual({ salvaged: 4, lost: 0, exact: true });
    const s = Snapshot.open(dir, { target: TARGET });
    expect(new Set([...s.usersNotIn(new Uint8Array(1))].flat().map((u) => u.json))).toEqual(
      new Set(USERS.map(serializeUser)),
    );
    expect(s.keys(1, 2 ** 32).stale[0]).toBe(0b1111);
    s.close();
  });

  it('pins the type codes on disk, the canonical key order and the fingerprint', () => {
    expect(TYPE_CODES).toEqual({
      email: 0,
      phone_number: 1,
      handle: 2,
      device_id: 3,
      service_id: 4,
      partner_user_id: 5,
    });
    const json = serializeUser({ partner_user_id: ['p1'], service_id: ['s'], email: ['e'], phone_number: ['p'] });
    expect(json).toBe('{"email":["e"],"phone_number":["p"],"service_id":["s"],"partner_user_id":["p1"]}');
    const { hi, lo } = snapshotUser(USERS[0] as AudienceUser);
    expect([hi.toString(16), lo.toString(16)]).toEqual(['b2d6acb', 'acbc1033']);
  });
});
