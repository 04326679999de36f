import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/errors.js';
import { createHashSummary, mergeHashSummary, type HashSummary } from '../src/hashing/summary.js';
import {
  hashCsv,
  hashRecords,
  type HashCsvOptions,
  type HashCsvRun,
  type HashedChunk,
} from '../src/hashing/pipeline.js';
import { HashWorkerPool, prestartHashWorkers } from '../src/hashing/pool.js';
import type { HashChunkContext } from '../src/hashing/chunk.js';
import { hashValue } from '../src/platform/identifiers/rules.js';
import { serializeUser } from '../src/identifiers/serialize.js';
import type { BuiltUser } from '../src/identifiers/types.js';
import { readCsv } from '../src/ingest/csv.js';
import { findKey, isKnownFresh } from '../src/hashing/known-users.js';
import { KeyTableBuilder } from '../src/state/key-table.js';
import { renderHashSummary } from '../src/cli/hash-summary.js';
import { guardInput } from '../src/hashing/reject-guard.js';
import { FIXTURES } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

const tmp = tempDir('ak-hash-');
const CRM = join(FIXTURES, 'crm-export.csv');

async function reference(
  path: string,
  opts: HashCsvOptions = {},
): Promise<{ users: BuiltUser[]; summary: HashSummary }> {
  const run = hashRecords(readCsv(path, opts), opts);
  const users: BuiltUser[] = [];
  for await (const u of run) users.push(u);
  return { users, summary: run.summary };
}

async function fast(
  path: string,
  opts: HashCsvOptions,
): Promise<{ users: BuiltUser[]; summary: HashSummary; texts: string[] }> {
  const run = await hashCsv(path, opts);
  const users: BuiltUser[] = [];
  const texts: string[] = [];
  let seq = 0;
  for await (const chunk of run) {
    expect(chunk.seq).toBe(seq++);
    for (const u of chunk.users) {
      expect(u.json).toBe(serializeUser(u.user));
      const { json: _json, ...built } = u;
      users.push(built);
    }
    texts.push(new TextDecoder().decode(chunk.output));
  }
  return { users, summary: run.summary, texts };
}

describe('hashRecords', () => {
  it('hashes objects keyed by column name, with positions as line numbers', async () => {
    const run = hashRecords(
      [
        { Email: ' Jane.Doe@Example.com ', Phone: '020 7946 0321', Country: 'GB' },
        { Email: 'not-an-email', Phone: '', Country: '' },
      ],
      {},
    );
    const out: BuiltUser[] = [];
    for await (const u of run) out.push(u);
    expect(out[0]).toEqual({
      line: 1,
      user: { email: [hashValue('jane.doe@example.com')], phone_number: [hashValue('442079460321')] },
      rejects: [],
    });
    expect(out[1]).toEqual({
      line: 2,
      user: {},
      rejects: [{ line: 2, column: 'Email', type: 'email', reason: 'email_invalid' }],
    });
    expect(run.mapping?.country?.column).toBe('Country');
    expect(run.summary).toMatchObject({ rows: 2, users: 1, emptyRows: 1 });
    expect(run.summary.rejects.email_invalid).toEqual({ count: 1, lines: [2] });
  });

  it('validates options with a ConfigError naming the field', () => {
    expect(() => hashRecords([], { defaultCountry: 'XX' })).toThrow(ConfigError);
    expect(() => hashRecords([], { phoneFormat: 'national' as 'e164' })).toThrow(/phoneFormat/);
  });

  it('counts digests, several columns per type and a value separator', async () => {
    const digest = hashValue('someone@example.com');
    const run = hashRecords([{ email: `${digest.toUpperCase()};b@example.com`, work_email: 'B@example.com' }], {
      valueSeparator: ';',
    });
    const out: BuiltUser[] = [];
    for await (const u of run) out.push(u);
    expect(out[0]?.user.email).toEqual([digest, hashValue('b@example.com')]);
    expect(run.summary.types.email).toEqual({ valid: 1, invalid: 0, digests: 1 });
  });
});

describe('hashRecords on database rows', () => {
  async function all(rows: Parameters<typeof hashRecords>[0], opts: Parameters<typeof hashRecords>[1] = {}) {
    const run = hashRecords(rows, opts);
    const users: BuiltUser[] = [];
    for await (const u of run) users.push(u);
    return { run, users };
  }

  it('takes null, undefined and numbers as cells', async () => {
    const { users, run } = await all([
      { id: 1, email: 'a@example.com', phone: null, country: undefined, active: true },
      { id: 2, email: null, phone: 2025550143, country: 'US', active: false },
    ]);
    expect(users[0]?.user.email).toEqual([hashValue('a@example.com')]);
    expect(users[1]?.user.phone_number).toEqual([hashValue('12025550143')]);
    expect(run.summary.users).toBe(2);
    expect(run.ignoredKeys).toEqual(['id', 'active']);
  });

  it('maps keys that first appear in later records, and lists the keys that feed nothing', async () => {
    const { users, run } = await all([
      { name: 'Ann', email: 'a@example.com' },
      { name: 'Bo', email: 'b@example.com', mobile: '+12025550143', note: 'x' },
      { name: 'Cy', twitter_handle: '@cy_example' },
    ]);
    expect(users[1]?.user.phone_number).toEqual([hashValue('12025550143')]);
    expect(users[2]?.user.handle).toEqual([hashValue('cy_example')]);
    expect(run.mapping?.columns.map((c) => c.column)).toEqual(['email', 'mobile', 'twitter_handle']);
    expect(run.ignoredKeys).toEqual(['name', 'note']);
  });

  it('rows before the first identifier key count as empty; no identifier key at all is an error', async () => {
    const { users, run } = await all([{ name: 'Ann' }, { name: 'Bo', email: 'b@example.com' }]);
    expect(users.map((u) => Object.keys(u.user).length)).toEqual([0, 1]);
    expect(run.summary.emptyRows).toBe(1);
    await expect(all([{ name: 'Ann' }, { name: 'Bo' }])).rejects.toMatchObject({
      code: 'mapping_no_identifier_column',
    });
  });

  it('a --map entry may name a key the first records leave out; onlyMapped maps nothing else', async () => {
    const rows = [{ email: 'a@example.com' }, { email: 'b@example.com', alt: 'c@example.com' }];
    const { users } = await all(rows, { map: ['email=alt'] });
    // email is named by map: exactly its columns ("alt"), the "email" key is not detected for it.
    expect(users.map((u) => u.user.email)).toEqual([undefined, [hashValue('c@example.com')]]);
    const only = await all([{ phone: '+12025550143', alt: 'c@example.com' }], { map: ['email=alt'], onlyMapped: true });
    expect(only.users[0]?.user).toEqual({ email: [hashValue('c@example.com')] });
  });
});

describe('hashCsv (fast path) equals hashRecords (reference)', () => {
  it('on the CRM fixture, with workers and tiny chunks: same users, order, lines and summary', async () => {
    const expected = await reference(CRM);
    expect(expected.users.length).toBeGreaterThan(2900);
    for (const opts of [
      { workers: 2, chunkBytes: 512 },
      { workers: 0, chunkBytes: 97 },
      { workers: 3, chunkBytes: 4096, maxChunksInFlight: 1 },
      { workers: 1 },
    ]) {
      const got = await fast(CRM, opts);
      expect(got.users).toEqual(expected.users);
      expect(got.summary).toEqual(expected.summary);
    }
  });

  it('with quoted multi-line fields and malformed rows across chunk boundaries', async () => {
    const lines = ['email,note,phone,country'];
    for (let i = 0; i < 300; i++) {
      if (i % 37 === 5) lines.push(`bad${i}@example.com,"unterminated,+1 202 555 0100,US`);
      else if (i % 23 === 3) lines.push(`wrong${i}@example.com,1`);
      else if (i % 11 === 0)
        lines.push(`q${i}@example.com,"multi\nline ""${i}""",+1 202 555 01${String(i % 100).padStart(2, '0')},US`);
      else lines.push(`u${i}@example.com,n${i},+44 20 7946 0${String(i).padStart(3, '0')},GB`);
    }
    const path = join(tmp, 'mixed.csv');
    writeFileSync(path, `${lines.join('\n')}\n`);
    const expected = await reference(path);
    expect(expected.summary.malformed.count).toBeGreaterThan(10);
    for (const chunkBytes of [1, 64, 300, 5000]) {
      const got = await fast(path, { workers: 2, chunkBytes });
      expect(got.users).toEqual(expected.users);
      expect(got.summary).toEqual(expected.summary);
    }
  });

  it('renders jsonl in input order, one line per well-formed row', async () => {
    const expected = await reference(CRM);
    const got = await fast(CRM, { workers: 2, chunkBytes: 2048, emit: 'jsonl' });
    expect(got.users).toEqual([]);
    expect(got.texts.join('')).toBe(expected.users.map((u) => `${serializeUser(u.user)}\n`).join(''));
  });

  it('exposes mapping, sizes and progress, and can be closed early without hanging', async () => {
    const run = await hashCsv(CRM, { workers: 2, chunkBytes: 1024 });
    expect(run.mapping.columns.map((c) => c.column)).toEqual(['Email', 'work_email', 'Phone']);
    expect(run.totalBytes).toBeGreaterThan(100_000);
    for await (const chunk of run) {
      expect(chunk.users.length).toBeGreaterThan(0);
      break;
    }
    expect(run.bytesRead()).toBeGreaterThan(0);
    await run.close();
  });

  it('takes workers started beforehand (the CLI starts them first) and hands them the run by message', async () => {
    const expected = await reference(CRM);
    const started = prestartHashWorkers(2);
    const lastId = started[1]?.threadId ?? 0;
    const ended = started.map(() => false);
    started.forEach((w, i) => w.once('exit', () => (ended[i] = true)));
    const run = await hashCsv(CRM, { workers: 2, emit: 'jsonl' });
    const texts: string[] = [];
    for await (const chunk of run) {
      texts.push(new TextDecoder().decode(chunk.output));
      // Hashing with them: not ended as spares when the pool was made.
      expect(ended).toEqual([false, false]);
    }
    expect(texts.join('')).toBe(expected.users.map((u) => `${serializeUser(u.user)}\n`).join(''));
    // Ended with the pool (its close awaits each worker's exit), and no worker was made in between
    // (thread ids count up in a process): the pool hashed with those two.
    expect(ended).toEqual([true, true]);
    const [next] = prestartHashWorkers(1);
    expect(next?.threadId).toBe(lastId + 1);
    await next?.terminate();
  });

  it('ends workers started beforehand for other limits, and those one too many', async () => {
    const expected = await reference(CRM);
    // Other limits (smaller chunks): both ended, two made; one worker asked: one taken, one ended.
    for (const [opts, made] of [
      [{ workers: 2, chunkBytes: 4096 }, 2],
      [{ workers: 1 }, 0],
    ] as const) {
      const started = prestartHashWorkers(2);
      const lastId = started[1]?.threadId ?? 0;
      const exits = started.map((w) => new Promise((resolve) => w.once('exit', resolve)));
      const got = await fast(CRM, opts);
      expect(got.users).toEqual(expected.users);
      await Promise.all(exits);
      const [next] = prestartHashWorkers(1);
      expect(next?.threadId).toBe(lastId + made + 1);
      await next?.terminate();
    }
  });

  it('leaves no worker running when the pool cannot send its context', async () => {
    const started = prestartHashWorkers(2);
    const exits = started.map((w) => new Promise((resolve) => w.once('exit', resolve)));
    const ctx = { notCloneable: () => 1 } as unknown as HashChunkContext;
    expect(() => new HashWorkerPool(2, ctx, 64 * 1024)).toThrow(/could not be cloned/);
    // The one it took and the one it did not are both ended: nothing keeps the process.
    await Promise.all(exits);
  });

  it('a pool takes a new context until it is closed or a worker has failed', async () => {
    const ctx = {} as HashChunkContext; // no chunk is sent: a worker only keeps it
    const failing = new HashWorkerPool(1, ctx, 64 * 1024);
    expect(failing.setContext(ctx)).toBe(true);
    const { workers } = failing as unknown as { workers: { worker: { terminate(): Promise<number> } }[] };
    await workers[0]?.worker.terminate(); // exits while the pool is open: the pool has failed
    expect(failing.setContext(ctx)).toBe(false);
    await failing.close();
    const closed = new HashWorkerPool(1, ctx, 64 * 1024);
    await closed.close();
    expect(closed.setContext(ctx)).toBe(false);
  });

  it('throws mapping errors before reading rows, and reads stdin', async () => {
    await expect(hashCsv(CRM, { map: ['email=nope'] })).rejects.toThrow(/no column "nope"/);
    const run = await hashCsv('-', {
      stdin: Readable.from([Buffer.from('email\na@example.com\n')]),
      workers: 1,
      emit: 'jsonl',
    });
    let text = '';
    for await (const c of run) text += new TextDecoder().decode(c.output);
    expect(text).toBe(`{"email":["${hashValue('a@example.com')}"]}\n`);
  });
});

describe('HashSummary', () => {
  it('merges with line offsets keeping the first lines, and renders without values', async () => {
    const { summary } = await reference(CRM);
    const merged = mergeHashSummary(mergeHashSummary(createHashSummary(), summary), summary, 10_000);
    expect(merged.rows).toBe(summary.rows * 2);
    expect(merged.rejects.email_invalid?.lines).toEqual(summary.rejects.email_invalid?.lines);
    const text = renderHashSummary(summary);
    expect(text).toMatch(/rows read\s+2991/);
    expect(text).toMatch(/email_invalid\s+\d+\s+lines \d+/);
    expect(text).not.toMatch(/@|example/);
  });
});

describe("hashCsv packed for a sync: the snapshot's fresh users leave out their text", () => {
  interface Packed {
    hi: number;
    lo: number;
    text: string;
    pos: number | undefined;
  }
  /** Every user of a packed run: fingerprint, text (empty when left out), position in the snapshot. */
  async function packedUsers(run: HashCsvRun): Promise<Packed[]> {
    const out: Packed[] = [];
    for await (const chunk of run) {
      const { jsonLines, fingerprints, positions } = chunk.packed ?? { jsonLines: '', fingerprints: [] };
      jsonLines
        .split('\n')
        .slice(0, -1)
        .forEach((text, k) =>
          out.push({ hi: fingerprints[2 * k] ?? 0, lo: fingerprints[2 * k + 1] ?? 0, text, pos: positions?.[k] }),
        );
    }
    return out;
  }
  const byKey = (a: Packed, b: Packed): number => a.hi - b.hi || a.lo - b.lo;
  /** A snapshot's table of `users` (each once, in key order); `stale(i)`: the i-th of them is due for a refresh. */
  function tableOf(users: Packed[], stale: (i: number) => boolean = () => false) {
    const known = [...new Map(users.map((u) => [`${u.hi}/${u.lo}`, u])).values()].sort(byKey);
    const builder = new KeyTableBuilder(known.length);
    known.forEach((u, i) => builder.push(u.hi, u.lo, stale(i)));
    return builder.finish();
  }

  it('in the workers and on the calling thread, given before the run starts', async () => {
    const all = await packedUsers(await hashCsv(CRM, { emit: 'packed', workers: 0 }));
    expect(all.every((u) => u.text !== '' && u.pos === undefined)).toBe(true);
    // A snapshot of every third user, one of them stale (due for a refresh: its text is needed).
    const table = tableOf(
      all.filter((_, i) => i % 3 === 0),
      (i) => i === 0,
    );
    for (const workers of [0, 2]) {
      const run = await hashCsv(CRM, { emit: 'packed', workers, chunkBytes: 4096 });
      expect(run.leaveOutKnownUsers(table)).toBe(true);
      const got = await packedUsers(run);
      expect(got.map((u) => [u.hi, u.lo])).toEqual(all.map((u) => [u.hi, u.lo]));
      got.forEach((u, i) => {
        expect(u.text).toBe(isKnownFresh(table, u.hi, u.lo) ? '' : all[i]?.text);
        expect(u.pos).toBe(findKey(table, u.hi, u.lo));
      });
      expect(got.filter((u) => u.text === '').length).toBeGreaterThan(table.count / 2);
      expect(run.leaveOutKnownUsers(table)).toBe(false); // read to its end: closed
    }
    // Not a packed run, or not a run at all: nothing is left out.
    const jsonl = await hashCsv(CRM, { emit: 'jsonl', workers: 0 });
    expect(jsonl.leaveOutKnownUsers(table)).toBe(false);
    await jsonl.close();
  });

  it('given once the run has started (a sync reads ahead for its minimum size), from the next chunks sent on', async () => {
    const all = await packedUsers(await hashCsv(CRM, { emit: 'packed', workers: 0 }));
    const table = tableOf(all);
    for (const workers of [0, 2]) {
      // At most 2 chunks in flight: when the first is read, no more than the first 2 were sent without the table.
      const run = await hashCsv(CRM, { emit: 'packed', workers, chunkBytes: 4096, maxChunksInFlight: 2 });
      const chunks: { texts: string[]; positions: Int32Array | undefined; found: number[] }[] = [];
      const collect = (chunk: HashedChunk): void => {
        const texts = (chunk.packed?.jsonLines ?? '').split('\n').slice(0, -1);
        const fp = chunk.packed?.fingerprints ?? new Uint32Array();
        const found = texts.map((_, k) => findKey(table, fp[2 * k] ?? 0, fp[2 * k + 1] ?? 0));
        chunks.push({ texts, positions: chunk.packed?.positions, found });
      };
      const it = run[Symbol.asyncIterator]();
      const first = await it.next();
      if (first.done !== true) collect(first.value);
      expect(run.leaveOutKnownUsers(table)).toBe(true);
      for (let next = await it.next(); next.done !== true; next = await it.next()) collect(next.value);
      // Every user is in the table: a chunk hashed with it leaves every text out, one hashed before keeps them all.
      const withTable = chunks.map((c) => c.positions !== undefined);
      expect(withTable.indexOf(true)).toBeGreaterThan(0);
      expect(withTable.indexOf(true)).toBeLessThanOrEqual(2);
      expect(withTable.slice(withTable.indexOf(true)).every(Boolean)).toBe(true);
      for (const c of chunks) {
        expect(c.texts.every((t) => (t === '') === (c.positions !== undefined))).toBe(true);
        if (c.positions !== undefined) expect([...c.positions]).toEqual(c.found);
      }
      expect(chunks.flatMap((c) => c.found).every((pos) => pos >= 0)).toBe(true);
      expect(chunks.flatMap((c) => c.texts)).toHaveLength(all.length);
    }
  });

  it('a table taken back, or given to a run that ended, leaves nothing out; a guarded run forwards it', async () => {
    const all = await packedUsers(await hashCsv(CRM, { emit: 'packed', workers: 0 }));
    const table = tableOf([...all].sort(byKey).slice(0, 1));
    const takenBack = await hashCsv(CRM, { emit: 'packed', workers: 0 });
    expect(takenBack.leaveOutKnownUsers(table)).toBe(true);
    expect(takenBack.leaveOutKnownUsers(undefined)).toBe(true);
    expect(await packedUsers(takenBack)).toEqual(all);
    const closed = await hashCsv(CRM, { emit: 'packed', workers: 0 });
    await closed.close();
    expect(closed.leaveOutKnownUsers(table)).toBe(false);
    // --max-reject-rate wraps the run in guardInput's Proxy: the sync's table still reaches it.
    const run = await hashCsv(CRM, { emit: 'packed', workers: 0 });
    const guarded = guardInput(run, () => run.summary, { maxRejectRate: 0.9 });
    expect(guarded.leaveOutKnownUsers(table)).toBe(true);
    expect((await packedUsers(guarded)).filter((u) => u.text === '')).toHaveLength(1);
    // Read once only, refused before a worker pool is made (one would keep the process alive).
    const twice = await hashCsv(CRM, { emit: 'packed', workers: 2 });
    await packedUsers(twice);
    await expect(packedUsers(twice)).rejects.toThrow('a hashCsv run can be iterated only once');
  });
});
