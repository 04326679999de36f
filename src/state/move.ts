/**
 * Moving the state from one store to another (`audience-kit state move`, `moveState`): a
 * directory into PostgreSQL and back, so switching stores never means a first sync (which
 * re-sends every user and removes nobody).
 *
 * What moves: every target's committed snapshot files (the same bytes: the snapshot's format is
 * the same in every store), copied under both stores' target locks, and the audit log's lines as
 * they are (the same chain, so `audit verify` gives the same head). What is refused, before
 * anything is written: a destination holding any state (a move never merges two histories), a
 * target whose sync is unfinished (write-ahead records: a sync of it commits them first) or
 * running (its lock), an unfinished upload (its journal binds to the store it started in:
 * `--resume` it first), a source audit log that does not verify. Completed upload journals are
 * not moved (they have nothing left to resume). The destination is read back and compared
 * (every file's SHA-256, each index's user count and membership digest, the audit head) before
 * the move reports success; the source is left as it was, for the user to remove once checked.
 * From its first write until that check, the destination carries a marker (StateStore.moveMarker):
 * its targets are not synced (a target not copied yet would look like one never synced), and the
 * same move run again removes what it wrote and starts over.
 * Files are copied by the kernel and hashed as streams: memory stays flat whatever the snapshot size.
 */
import { chmodSync, copyFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { fileSha256 } from '../util/sha256.js';
import { ensureDir } from './fs.js';
import { destinationNotEmpty } from './audit-file.js';
import { openStateStore, parseStateUrl } from './open-store.js';
import { COMMITTED_FILE } from './snapshot-format.js';
import { readIndexHeader } from './snapshot-index.js';
import type { SnapshotTarget } from './snapshot-format.js';
import type { StateStore, TargetSession } from './store.js';

export interface MovedTarget {
  target: SnapshotTarget;
  users: number;
  /** The membership digest of the index (the audit log's snapshot digests). */
  digest: string;
  files: number;
  bytes: number;
}

export interface StateMoveReport {
  from: string;
  to: string;
  targets: MovedTarget[];
  audit: { records: number; head: string };
  /** Completed upload journals of the source, not moved. */
  journalsNotMoved: number;
}

const unfinished = (message: string, fix: string): ConfigError => new ConfigError('state_unfinished', message, { fix });

const mismatch = (what: string): ConfigError =>
  new ConfigError('state_move_mismatch', `the destination does not read back as the source: ${what}`, {
    fix: 'nothing of the source was changed; remove what the move wrote to the destination and run it again',
  });

/** Refused unless the destination holds no snapshot, no audit record and no journal. */
async function checkEmpty(to: StateStore): Promise<void> {
  const held = (await to.targets()).length > 0 || (await to.journals.list()).length > 0;
  if (held || (await to.audit.lines()).length > 0) throw destinationNotEmpty(to.describe());
}

/** Refused while an upload of the source is unfinished; the number of completed journals. */
async function checkJournals(from: StateStore): Promise<number> {
  const journals = await from.journals.list();
  const open = journals.filter((j) => !j.complete);
  if (open.length > 0) {
    throw unfinished(
      `${open.length} upload${open.length === 1 ? ' is' : 's are'} unfinished in ${from.describe()} (${open[0]?.path ?? ''}${open.length > 1 ? ', …' : ''})`,
      'finish them first (upload --resume with the same file and options), or start them over with --restart once moved',
    );
  }
  return journals.length;
}

const committedFiles = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => COMMITTED_FILE.test(f))
        .sort()
    : [];

async function fileDigests(dir: string, files: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const f of files) out.push(await fileSha256(join(dir, f)));
  return out;
}

/** Copy one target's committed files under both locks; the digests of what was copied. */
async function copyTarget(src: TargetSession, dst: TargetSession, name: string): Promise<string[]> {
  if (existsSync(join(src.dir, 'pending'))) {
    throw unfinished(
      `the sync of ${name} is unfinished in the source (write-ahead records of a killed sync)`,
      'run a sync of that target against the source first: it commits them',
    );
  }
  if (committedFiles(dst.dir).length > 0)
    throw new ConfigError('state_destination_not_empty', `the destination already holds a snapshot of ${name}`, {
      fix: 'move the state into an empty store (a new directory, or a database without audience_kit_* tables)',
    });
  const files = committedFiles(src.dir);
  ensureDir(dst.dir);
  for (const f of files) {
    copyFileSync(join(src.dir, f), join(dst.dir, f));
    chmodSync(join(dst.dir, f), 0o600);
  }
  await dst.persist();
  return fileDigests(src.dir, files);
}

const describeTarget = (t: SnapshotTarget): string => `${t.kind} ${t.id} (account ${t.accountId})`;

async function moveTarget(from: StateStore, to: StateStore, target: SnapshotTarget): Promise<MovedTarget> {
  const name = describeTarget(target);
  const src = await from.lockTarget(target);
  try {
    // A damaged source is not copied as if it were sound: a sync --recover against it comes first.
    if (src.damage !== undefined) throw src.damage;
    const files = committedFiles(src.dir);
    const dst = await to.lockTarget(target, { moving: true });
    let expected: string[];
    try {
      expected = await copyTarget(src, dst, name);
    } finally {
      await dst.release();
    }
    // Read back through a new session: for a database, the files as stored, not the local copy.
    const check = await to.lockTarget(target, { moving: true });
    try {
      if (check.damage !== undefined) throw mismatch(`${name}: ${check.damage.code}`);
      if (committedFiles(check.dir).join() !== files.join()) throw mismatch(`${name}: other files`);
      if ((await fileDigests(check.dir, files)).join() !== expected.join()) throw mismatch(`${name}: other bytes`);
      const [a, b] = [readIndexHeader(join(src.dir, 'index')), readIndexHeader(join(check.dir, 'index'))];
      if (a?.count !== b?.count || a?.digest !== b?.digest) throw mismatch(`${name}: another membership`);
      let bytes = 0;
      for (const f of files) bytes += statSync(join(check.dir, f)).size;
      return { target, users: b?.count ?? 0, digest: b?.digest ?? '', files: files.length, bytes };
    } finally {
      await check.release();
    }
  } finally {
    await src.release();
  }
}

/** The audit log's lines, as they are, into the (empty) destination log; its head checked against the source's. */
async function moveAudit(from: StateStore, to: StateStore): Promise<{ records: number; head: string }> {
  const lines = await from.audit.lines();
  if (lines.length === 0) return { records: 0, head: '' };
  const source = await from.audit.verify();
  if (!source.ok) {
    throw new ConfigError(
      'state_move_mismatch',
      `the source's audit log does not verify (line ${source.broken?.line ?? '?'}: ${source.broken?.problem ?? ''}): it is not moved as if it did`,
      { fix: 'find out what changed it (audit verify), then move the state' },
    );
  }
  await to.audit.importLines(lines);
  const moved = await to.audit.verify();
  if (!moved.ok || moved.head !== source.head || moved.records !== source.records)
    throw mismatch('the audit log verifies to another head');
  return { records: moved.records, head: moved.head };
}

export interface MoveStateOptions {
  /** The source: a state directory, a PostgreSQL URL (`postgres://…`), or a store object (left open). */
  from: string | StateStore;
  /** The destination, which must hold no state: the same forms. */
  to: string | StateStore;
}

/**
 * Copy every target's snapshot and the audit log from `from` into `to` (an empty store), verify
 * the copy, and report; `from` is left as it was. Stores given as strings are opened and closed here.
 */
export async function moveState(o: MoveStateOptions): Promise<StateMoveReport> {
  const opened: StateStore[] = [];
  const open = async (value: string | StateStore, name: string): Promise<StateStore> => {
    if (typeof value !== 'string') return value;
    const spec = /^postgres(?:ql)?:/i.test(value)
      ? parseStateUrl(value, name)
      : { kind: 'directory' as const, dir: resolve(value) };
    const store = await openStateStore(spec);
    opened.push(store);
    return store;
  };
  try {
    return await moveStores(await open(o.from, 'from'), await open(o.to, 'to'));
  } finally {
    for (const store of opened.reverse()) await store.close();
  }
}

async function moveStores(from: StateStore, to: StateStore): Promise<StateMoveReport> {
  if (from.kind === to.kind && from.describe() === to.describe())
    throw new ConfigError('invalid_option', 'the source and the destination are the same store', {
      fix: 'pass another store as the destination',
    });
  const journals = await checkJournals(from);
  await startOver(from, to);
  const sources = await from.targets();
  // A mistyped source directory holds nothing: "moved 0 targets" would read as success.
  if (sources.length === 0 && (await from.audit.lines()).length === 0) {
    throw new ConfigError('state_source_empty', `${from.describe()} holds no snapshot and no audit record`, {
      fix: 'check --from: the state directory or database the syncs used',
    });
  }
  // From the first write until the copy is verified, the destination's targets are not synced.
  await to.setMoveMarker(from.describe());
  const targets: MovedTarget[] = [];
  for (const target of sources) targets.push(await moveTarget(from, to, target));
  const audit = await moveAudit(from, to);
  await to.setMoveMarker(undefined);
  return { from: from.describe(), to: to.describe(), targets, audit, journalsNotMoved: journals };
}

/**
 * A destination must be empty, or hold what an unfinished move from the same source wrote (its
 * marker proves it was empty when that move began): that is removed, and the copy starts over.
 */
async function startOver(from: StateStore, to: StateStore): Promise<void> {
  const marked = await to.moveMarker();
  if (marked === undefined) return checkEmpty(to);
  if (marked !== from.describe()) {
    throw new ConfigError(
      'state_move_unfinished',
      `${to.describe()} holds an unfinished state move from ${marked}, not from ${from.describe()}`,
      { fix: `run that move again (--from ${marked}): it starts the copy over; or move into another, empty store` },
    );
  }
  await to.discardMoved();
}
