/**
 * The users a sync sends, between planning and sending. Planning reads the whole input before
 * anything is sent (the removals, and so the safety checks, are known only at its end), so the
 * users to send (adds and refreshes) wait in a spool: in memory while small, then in a file in
 * the target's snapshot directory (mode 0600; hashed values only, like the snapshot). The users
 * of batches in flight are kept by sequence number until their batch is confirmed, when they
 * go to the snapshot.
 */
import { closeSync, createReadStream, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { PackedUsers } from '../hashing/chunk.js';
import { writeUserFingerprint } from '../identifiers/normalize.js';
import type { Snapshot, SnapshotUser } from '../state/snapshot.js';
import type { GroupHandle, PackedBatch } from './plan.js';
import { PLAN_ADD, PLAN_REFRESH, type SyncPlanner } from './sync-plan.js';
import type { UploadPackedChunk } from './types.js';

/** A user waiting to be sent: its fingerprint, canonical JSON and input line. */
export interface SpooledUser extends SnapshotUser {
  line: number;
}

const SPOOL_MEMORY_BYTES = 32 << 20;
const CHUNK_USERS = 4096;

/** Users to send, in input order; spills to `<dir>/spool-<id>` beyond 32 MB. */
export class Spool {
  private memory: SpooledUser[] = [];
  private memoryBytes = 0;
  private fd = -1;
  private readonly path: string;
  count = 0;

  constructor(dir: string, id: string) {
    this.path = join(dir, `spool-${id}`);
  }

  /** The spools of syncs that were killed (the caller holds the target's lock: none is in use). */
  static removeLeftovers(dir: string): void {
    for (const f of readdirSync(dir)) if (f.startsWith('spool-')) rmSync(join(dir, f), { force: true });
  }

  push(user: SpooledUser): void {
    this.count++;
    this.memory.push(user);
    this.memoryBytes += user.json.length + 64;
    if (this.memoryBytes > SPOOL_MEMORY_BYTES) this.spill();
  }

  private spill(): void {
    if (this.fd < 0) this.fd = openSync(this.path, 'w', 0o600);
    const text = this.memory.map((u) => `${u.line} ${u.hi} ${u.lo} ${u.json}\n`).join('');
    const buf = Buffer.from(text);
    for (let done = 0; done < buf.length;) done += writeSync(this.fd, buf, done, buf.length - done);
    this.memory = [];
    this.memoryBytes = 0;
  }

  /** The users in chunks, in the order pushed. */
  async *chunks(): AsyncGenerator<SpooledUser[]> {
    if (this.fd >= 0) {
      this.spill();
      closeSync(this.fd);
      this.fd = -1;
      let chunk: SpooledUser[] = [];
      const input = createReadStream(this.path);
      try {
        for await (const text of createInterface({ input, crlfDelay: Infinity })) {
          const [line, hi, lo] = text.split(' ', 3);
          const json = text.slice((line?.length ?? 0) + (hi?.length ?? 0) + (lo?.length ?? 0) + 3);
          chunk.push({ line: Number(line), hi: Number(hi), lo: Number(lo), json });
          if (chunk.length >= CHUNK_USERS) {
            yield chunk;
            chunk = [];
          }
        }
      } finally {
        input.destroy();
      }
      if (chunk.length > 0) yield chunk;
      return;
    }
    for (let i = 0; i < this.memory.length; i += CHUNK_USERS) yield this.memory.slice(i, i + CHUNK_USERS);
  }

  remove(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    this.memory = [];
    rmSync(this.path, { force: true });
  }
}

/**
 * Stands in for the batch packer while planning: `readInput` hands it every input user (any
 * shape the uploader takes, summary and checks included); it classifies them against the
 * snapshot and spools the ones to send. It never closes a batch.
 */
export class PlanCollector {
  readonly handle: GroupHandle = { group: { operationType: 'Update' } };
  private readonly scratch = new Uint32Array(2);

  constructor(
    private readonly planner: SyncPlanner,
    private readonly spool: Spool,
  ) {}

  add(_handle: GroupHandle, json: string, line: number, fingerprint?: readonly [number, number]): undefined {
    let hi: number;
    let lo: number;
    if (fingerprint === undefined) {
      writeUserFingerprint(json, this.scratch, 0);
      hi = this.scratch[0] as number;
      lo = this.scratch[1] as number;
    } else [hi, lo] = fingerprint;
    const action = this.planner.classify(hi, lo);
    if (action === PLAN_ADD || action === PLAN_REFRESH) this.spool.push({ hi, lo, json, line });
    return undefined;
  }

  /**
   * A chunk of the file pipeline: classified by fingerprint (or by the snapshot position the
   * workers found), text cut out only for users to send (the workers left out the others' text).
   */
  addPacked({ jsonLines, lines, fingerprints, positions }: PackedUsers): void {
    for (let start = 0, k = 0; start < jsonLines.length; k++) {
      let end = jsonLines.indexOf('\n', start);
      if (end < 0) end = jsonLines.length;
      const hi = fingerprints[2 * k] as number;
      const lo = fingerprints[2 * k + 1] as number;
      const pos = positions?.[k];
      const action = pos === undefined ? this.planner.classify(hi, lo) : this.planner.classifyAt(pos, hi, lo);
      if (action === PLAN_ADD || action === PLAN_REFRESH) {
        // The workers leave out only users the planner calls unchanged (found, not stale).
        if (end === start) throw new Error('internal error: a user to send arrived without its text');
        // A copy: a slice would keep the whole chunk's text alive as long as the spool holds it.
        const json = Buffer.from(jsonLines.slice(start, end)).toString();
        this.spool.push({ hi, lo, json, line: lines[k] ?? 0 });
      }
      start = end + 1;
    }
  }

  finish(): PackedBatch[] {
    return [];
  }
}

/**
 * Users being sent, by sequence number (the `line` the engine hands back in `onConfirmed`):
 * taken out when their batch is confirmed; what remains at the end was not confirmed.
 * `beforeSend` hears of each chunk, and is awaited, before the sender gets it (the snapshot's
 * write-ahead record, durable in the state store).
 */
export class InFlight {
  private readonly users = new Map<number, SpooledUser>();
  private next = 1;

  constructor(private readonly beforeSend?: (users: SpooledUser[]) => void | Promise<void>) {}

  /** The users as packed chunks for sendUsers, each registered under its sequence number. */
  async *chunks(source: AsyncIterable<SpooledUser[]> | Iterable<SpooledUser[]>): AsyncGenerator<UploadPackedChunk> {
    for await (const users of source) {
      await this.beforeSend?.(users);
      const lines = new Uint32Array(users.length);
      const fingerprints = new Uint32Array(2 * users.length);
      let jsonLines = '';
      users.forEach((u, i) => {
        const seq = this.next++;
        this.users.set(seq, u);
        lines[i] = seq;
        fingerprints[2 * i] = u.hi;
        fingerprints[2 * i + 1] = u.lo;
        jsonLines += `${u.json}\n`;
      });
      const packed: PackedUsers = { jsonLines, lines, fingerprints };
      yield { packed };
    }
  }

  /** The users of a confirmed batch, forgotten here. */
  take(seqs: Uint32Array): SpooledUser[] {
    const out: SpooledUser[] = [];
    for (const seq of seqs) {
      const u = this.users.get(seq);
      if (u === undefined) continue;
      out.push(u);
      this.users.delete(seq);
    }
    return out;
  }

  /** The input line of a user still here (a refused user), or null. */
  lineOf(seq: number): number | null {
    return this.users.get(seq)?.line ?? null;
  }
}

/** The snapshot users whose bit in `keep` is clear, as spool chunks (line 0: they are in no input). */
export function* snapshotUsers(snapshot: Snapshot, keep: Uint8Array): Generator<SpooledUser[]> {
  for (const chunk of snapshot.usersNotIn(keep, CHUNK_USERS)) yield chunk.map((u) => ({ ...u, line: 0 }));
}
