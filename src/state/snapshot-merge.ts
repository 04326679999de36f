/**
 * Merging a `pending` log into the index. The changes the log holds (users upserted, deleted,
 * made uncertain) are read back and walked in key order. A first sync of 10M users logs 20M
 * upserts (an intent and a confirmation each): held in memory they took 24 bytes each, 800 MB
 * with the arrays' doubling. So they are kept in memory only up to RUN_ENTRIES; each full run is
 * sorted and written to a file beside the index (`commit-<name>.<k>`, removed once merged, and by
 * the next open if a kill left it), and the walk merges the runs. Memory: one run plus a small
 * read buffer per run, whatever the number of changes.
 */
import { closeSync, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SNAPSHOT_ENTRY_BYTES } from './snapshot-format.js';
import {
  compareKeys,
  DeadFrames,
  entryChunks,
  entryOffset,
  IndexWriter,
  readInto,
  sortKeyOrder,
  uint32At,
  writeAt,
  writeEntry,
} from './snapshot-index.js';

/** Changes kept in memory before a run is sorted and written (24 MB of columns). */
export const RUN_ENTRIES = 1 << 20;
/** Entries read at a time from each run file. */
const READ_ENTRIES = 1 << 14;
const RUN_PREFIX = 'commit-';

/** One change: a user's fingerprint, its frame in the data file, and the time of the record. */
export interface Change {
  hi: number;
  lo: number;
  offset: number;
  len: number;
  time: number;
}

/** Growable columns of changes in log order, with full runs sorted into files. */
export class Changes {
  hi = new Uint32Array(1024);
  lo = new Uint32Array(1024);
  offset = new Float64Array(1024);
  len = new Uint32Array(1024);
  time = new Uint32Array(1024);
  n = 0;
  private readonly runs: string[] = [];

  /** Full runs go to `<dir>/commit-<name>.<k>`. */
  constructor(
    private readonly dir: string,
    private readonly name: string,
    private readonly runEntries = RUN_ENTRIES,
  ) {}

  /** Removes the run files that a commit killed midway left in `dir`. */
  static removeLeftovers(dir: string): void {
    for (const f of readdirSync(dir)) if (f.startsWith(RUN_PREFIX)) rmSync(join(dir, f), { force: true });
  }

  push(hi: number, lo: number, offset: number, len: number, time: number): void {
    if (this.n === this.hi.length) this.grow();
    this.hi[this.n] = hi;
    this.lo[this.n] = lo;
    this.offset[this.n] = offset;
    this.len[this.n] = len;
    this.time[this.n] = time;
    this.n++;
    if (this.n === this.runEntries) this.spill();
  }

  private grow(): void {
    const grow = <T extends Uint32Array | Float64Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(Math.min(a.length * 2, Math.max(this.runEntries, 1024)));
      b.set(a);
      return b;
    };
    this.hi = grow(this.hi);
    this.lo = grow(this.lo);
    this.offset = grow(this.offset);
    this.len = grow(this.len);
    this.time = grow(this.time);
  }

  /** Sort the changes in memory (stable: log order within a key) and write them as the next run. */
  private spill(): void {
    const path = join(this.dir, `${RUN_PREFIX}${this.name}.${this.runs.length}`);
    const fd = openSync(path, 'w', 0o600);
    try {
      const order = sortKeyOrder(this.hi, this.lo, this.n);
      const buf = Buffer.allocUnsafe(READ_ENTRIES * SNAPSHOT_ENTRY_BYTES);
      let position = 0;
      for (let i = 0; i < this.n; i += READ_ENTRIES) {
        const end = Math.min(this.n, i + READ_ENTRIES);
        for (let j = i; j < end; j++) writeEntry(buf, (j - i) * SNAPSHOT_ENTRY_BYTES, this.at(order[j] as number));
        const bytes = (end - i) * SNAPSHOT_ENTRY_BYTES;
        writeAt(fd, buf.subarray(0, bytes), position, path);
        position += bytes;
      }
    } finally {
      closeSync(fd);
    }
    this.runs.push(path);
    this.n = 0;
  }

  private at(k: number): Change {
    const { hi, lo, offset, len, time } = this;
    return {
      hi: hi[k] as number,
      lo: lo[k] as number,
      offset: offset[k] as number,
      len: len[k] as number,
      time: time[k] as number,
    };
  }

  /** The changes in key order, one per key: of a key changed more than once, the latest record. */
  sorted(): SortedChanges {
    const order = sortKeyOrder(this.hi, this.lo, this.n);
    const memory: Source = {
      ...this.at(0),
      done: false,
      next: () => {
        const k = order[memory.i++];
        if (k === undefined) memory.done = true;
        else Object.assign(memory, this.at(k));
      },
      close: () => undefined,
      i: 0,
    };
    const sources: Source[] = this.runs.map((path) => runSource(path, this.runEntries));
    sources.push(memory);
    for (const s of sources) s.next();
    return new SortedChanges(sources);
  }

  /** Removes the run files (the commit is done with them). */
  remove(): void {
    for (const path of this.runs.splice(0)) rmSync(path, { force: true });
  }
}

/** A sorted stream of changes: the current one in its fields, `next()` to move on. */
interface Source extends Change {
  done: boolean;
  next: () => void;
  close: () => void;
  i: number;
}

/** A run file's entries, read READ_ENTRIES at a time. */
function runSource(path: string, count: number): Source {
  const fd = openSync(path, 'r');
  const buf = Buffer.allocUnsafe(READ_ENTRIES * SNAPSHOT_ENTRY_BYTES);
  let loaded = 0;
  let first = 0;
  const s: Source = {
    hi: 0,
    lo: 0,
    offset: 0,
    len: 0,
    time: 0,
    done: false,
    i: 0,
    close: () => {
      if (!s.done) closeSync(fd);
      s.done = true;
    },
    next: () => {
      if (s.i === count) {
        s.close();
        return;
      }
      if (s.i === first + loaded) {
        first = s.i;
        loaded = Math.min(READ_ENTRIES, count - first);
        readInto(fd, buf, loaded * SNAPSHOT_ENTRY_BYTES, first * SNAPSHOT_ENTRY_BYTES);
      }
      const at = (s.i++ - first) * SNAPSHOT_ENTRY_BYTES;
      s.hi = uint32At(buf, at);
      s.lo = uint32At(buf, at + 4);
      s.offset = entryOffset(buf, at);
      s.len = uint32At(buf, at + 16);
      s.time = uint32At(buf, at + 20);
    },
  };
  return s;
}

/**
 * The merge of sorted sources (oldest first): the current change in its fields, the latest
 * record of its key (a later source, or later within a source, wins).
 */
export class SortedChanges implements Change {
  hi = 0;
  lo = 0;
  offset = 0;
  len = 0;
  time = 0;
  done = false;

  constructor(private readonly sources: Source[]) {
    this.next();
  }

  next(): void {
    let min: Source | undefined;
    for (const s of this.sources)
      if (!s.done && (min === undefined || compareKeys(s.hi, s.lo, min.hi, min.lo) < 0)) min = s;
    if (min === undefined) {
      this.done = true;
      return;
    }
    const { hi, lo } = min;
    for (const s of this.sources) {
      while (!s.done && s.hi === hi && s.lo === lo) {
        this.hi = s.hi;
        this.lo = s.lo;
        this.offset = s.offset;
        this.len = s.len;
        this.time = s.time;
        s.next();
      }
    }
  }

  /** Whether (hi, lo) is among the changes; questions must come in ascending key order. */
  has(hi: number, lo: number): boolean {
    while (!this.done && compareKeys(this.hi, this.lo, hi, lo) < 0) this.next();
    return !this.done && this.hi === hi && this.lo === lo;
  }

  /** Closes the run files still open. */
  close(): void {
    for (const s of this.sources) s.close();
  }
}

/** What a `pending` log changes: confirmed and intended upserts (in log order), confirmed deletes, intended deletes. */
export interface PendingChanges {
  upserts: Changes;
  deletes: Changes;
  /** Users whose Delete may have been applied, unconfirmed: kept, due for a re-send (time 0). */
  uncertain: Changes;
}

/** Empty changes whose full runs go to files in `dir`. */
export function pendingChanges(dir: string): PendingChanges {
  return {
    upserts: new Changes(dir, 'upserts'),
    deletes: new Changes(dir, 'deletes'),
    uncertain: new Changes(dir, 'uncertain'),
  };
}

/**
 * Old index + upserts - deletes, in key order; entries of `uncertain` get time 0. A key both
 * upserted and deleted by the same pending log cannot come from one sync (removals are users the
 * input lacks, updates users it holds); the upsert wins. Of one key upserted twice, the later
 * record wins. The frames of replaced and removed entries go to `dead`. The run files are removed.
 */
export function mergeIndex(
  oldPath: string,
  oldCount: number,
  changes: PendingChanges,
  out: IndexWriter,
  dead: DeadFrames,
): void {
  const all = [changes.upserts, changes.deletes, changes.uncertain];
  const walks: SortedChanges[] = [];
  try {
    for (const c of all) walks.push(c.sorted());
    mergeSorted(oldPath, oldCount, walks as [SortedChanges, SortedChanges, SortedChanges], out, dead);
  } finally {
    for (const w of walks) w.close();
    for (const c of all) c.remove();
  }
}

function mergeSorted(
  oldPath: string,
  oldCount: number,
  [u, deletes, uncertain]: [SortedChanges, SortedChanges, SortedChanges],
  out: IndexWriter,
  dead: DeadFrames,
): void {
  /** Emit the upserts below (hi, lo), or all of them. */
  const emitUpsertsBefore = (hi: number, lo: number, all: boolean): void => {
    for (; !u.done && (all || compareKeys(u.hi, u.lo, hi, lo) < 0); u.next()) out.add(u);
  };
  for (const { buf, n } of entryChunks(oldPath, oldCount)) {
    // Entries kept as they are go in runs: copied together when the run ends.
    let run = 0;
    const end = n * SNAPSHOT_ENTRY_BYTES;
    for (let at = 0; at < end; at += SNAPSHOT_ENTRY_BYTES) {
      const hi = uint32At(buf, at);
      const lo = uint32At(buf, at + 4);
      if (!u.done && compareKeys(u.hi, u.lo, hi, lo) < 0) {
        out.addRaw(buf, run, at);
        run = at;
        emitUpsertsBefore(hi, lo, false);
      }
      const replaced = !u.done && u.hi === hi && u.lo === lo;
      const removed = !replaced && deletes.has(hi, lo);
      const touched = !replaced && !removed && uncertain.has(hi, lo);
      if (!replaced && !removed && !touched) continue;
      out.addRaw(buf, run, at);
      run = at + SNAPSHOT_ENTRY_BYTES;
      const frame = { offset: entryOffset(buf, at), len: uint32At(buf, at + 16) };
      if (touched) out.add({ hi, lo, ...frame, time: 0 });
      else if (replaced && u.offset === frame.offset)
        continue; // the same frame, re-confirmed
      else dead.push(frame.offset, frame.len);
    }
    out.addRaw(buf, run, end);
  }
  emitUpsertsBefore(0, 0, true);
}
