/**
 * Reading the users into the batch plan. Every shape a producer may yield (built users, arrays,
 * hashCsv chunks, packed chunks, bare hashed user objects) becomes canonical JSON added to the
 * packer; each batch it closes is handed to `onPacked`, which the reader awaits, so reading is
 * paced by sending.
 */
import { ConfigError } from '../errors.js';
import type { PackedUsers } from '../hashing/chunk.js';
import { addUserToSummary, type HashSummary } from '../hashing/summary.js';
import { IDENTIFIER_TYPES, type AudienceUser, type IdentifierType } from '../platform/users.js';
import { serializeUser } from '../identifiers/serialize.js';
import { partnerUserIdFits } from '../platform/users.js';
import type { BatchPacker, GroupHandle, PackedBatch } from './plan.js';
import type { Target } from './target.js';
import type { UploadItem, UploadPackedChunk, UploadUser, UploadUsers } from './types.js';
import { isAborted } from '../util/clock.js';

export interface ReadInputOptions {
  users: UploadUsers;
  /**
   * The batch packer. Sync's planner stands in for it while planning, and takes packed chunks
   * whole (`addPacked`): it needs the text of only the few users it will send.
   */
  packer: Pick<BatchPacker, 'add' | 'finish'> & { addPacked?: (packed: PackedUsers) => void };
  handle: GroupHandle;
  /** Its identifier types are checked: a user with another type is refused before it is sent. */
  target: Target;
  /** Set when the producer keeps no summary of its own: the reader counts. */
  ownSummary: HashSummary | undefined;
  signal: AbortSignal | undefined;
  onPacked: (batch: PackedBatch) => Promise<void>;
  /** After each item (progress). */
  onItem: () => void;
  /** True once sending has stopped for good (a fatal error): reading stops too. */
  stopped: () => boolean;
}

export interface ReadResult {
  /** The input was read to its end and every batch handed out. */
  ended: boolean;
  interrupted: boolean;
  error: unknown;
}

/** Read `users` to the end (or until interrupted or stopped), packing as it goes. */
export async function readInput(o: ReadInputOptions): Promise<ReadResult> {
  const users = o.users as AsyncIterable<UploadItem> | Iterable<UploadItem>;
  const iterator = Symbol.asyncIterator in users ? users[Symbol.asyncIterator]() : users[Symbol.iterator]();
  const add = itemAdder(o);
  const result: ReadResult = { ended: false, interrupted: false, error: undefined };
  /** An iterator.next() that an interrupt left unsettled (the producer waits for input). */
  let pendingNext: Promise<unknown> | undefined;
  const halted = (): boolean => {
    if (isAborted(o.signal)) result.interrupted = true;
    return result.interrupted || o.stopped();
  };
  try {
    while (!halted()) {
      const pending = Promise.resolve(iterator.next());
      const next = await raceAbort(pending, o.signal);
      if (next === 'aborted') {
        result.interrupted = true;
        pendingNext = pending;
      } else if (next.done === true) {
        for (const b of o.packer.finish()) if (!halted()) await o.onPacked(b);
        result.ended = !halted();
      } else {
        await add(next.value);
        o.onItem();
        continue;
      }
      break;
    }
  } catch (error) {
    result.error = error;
  } finally {
    // Stops the producer (closes files, ends worker threads) when we leave early. An async
    // generator queues return() behind a pending next(), so that case needs the producer's close().
    if (!result.ended) {
      if (pendingNext === undefined) await iterator.return?.();
      else {
        pendingNext.catch(() => undefined);
        await o.users.close?.();
      }
    }
  }
  return result;
}

/** Adds one item of any shape; synchronous on the hot path, only a closed batch costs an await. */
function itemAdder(o: ReadInputOptions): (item: UploadItem) => Promise<void> {
  const taken = o.target.types;
  const notTaken = notTakenKey(taken);
  const addUser = (u: UploadUser): PackedBatch | undefined => {
    if (o.ownSummary !== undefined) addUserToSummary(o.ownSummary, u);
    if (taken !== undefined)
      for (const type in u.user) if (!taken.includes(type as IdentifierType)) refuseType(o.target, type, u.line);
    const json = u.json ?? serializeUser(u.user);
    return json === '{}' ? undefined : o.packer.add(o.handle, json, u.line);
  };
  const bare = { position: 0 };
  return async (item) => {
    const packed = (item as Partial<UploadPackedChunk> | null)?.packed;
    if (packed !== undefined) return addPacked(o, packed, notTaken);
    const list = itemUsers(item, bare);
    for (let i = 0; i < list.length; i++) {
      const closed = addUser(list[i] as UploadUser);
      if (closed !== undefined) await o.onPacked(closed);
    }
  };
}

/** Matches a key of a serialized user that the target does not take (undefined: it takes every type). */
function notTakenKey(taken: readonly IdentifierType[] | undefined): RegExp | undefined {
  return taken === undefined
    ? undefined
    : new RegExp(`"(${IDENTIFIER_TYPES.filter((t) => !taken.includes(t)).join('|')})":`);
}

async function addPacked(o: ReadInputOptions, packed: PackedUsers, notTaken: RegExp | undefined): Promise<void> {
  const { jsonLines, lines, fingerprints } = packed;
  const found = notTaken === undefined ? null : notTaken.exec(jsonLines);
  if (found !== null) refuseType(o.target, found[1] ?? '', lines[countLines(jsonLines, found.index)] ?? 0);
  if (o.packer.addPacked !== undefined) {
    o.packer.addPacked(packed);
    return;
  }
  // Only a sync's packer reads positions: a run that left users' text out must not reach an upload.
  if (packed.positions !== undefined) throw new Error('internal error: users left out of a run sent to an upload');
  const fingerprint: [number, number] = [0, 0];
  for (let start = 0, k = 0; start < jsonLines.length; k++) {
    let end = jsonLines.indexOf('\n', start);
    if (end < 0) end = jsonLines.length;
    fingerprint[0] = fingerprints[2 * k] as number;
    fingerprint[1] = fingerprints[2 * k + 1] as number;
    const closed = o.packer.add(o.handle, jsonLines.slice(start, end), lines[k] ?? 0, fingerprint);
    if (closed !== undefined) await o.onPacked(closed);
    start = end + 1;
  }
}

function countLines(text: string, end: number): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * `next`, or 'aborted' as soon as the signal fires. The abort listener is removed each time:
 * racing against one long-lived promise would keep every item reachable.
 */
function raceAbort<T>(next: Promise<T>, signal: AbortSignal | undefined): Promise<T | 'aborted'> {
  if (signal === undefined) return next;
  if (signal.aborted) return Promise.resolve('aborted');
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
    next.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** Before anything of the batch is sent: the platform would refuse the whole request. */
function refuseType(target: Target, type: string, line: number): never {
  const taken = target.types ?? [];
  throw new ConfigError(
    'type_not_taken',
    `${target.name}s take only ${taken.join(' and ')} identifiers; the user of line ${line} has ${type}`,
    {
      fix: `map only ${taken.join(' and ')} columns (hashCsv and hashRecords take them as the option types: ${JSON.stringify(taken)})`,
    },
  );
}

/**
 * The built users of an item other than a packed chunk: its list, itself, or a bare user object
 * checked (checkHashedUser) and numbered by `bare` from 1 in the stream's order (its position in a
 * refusal); a list's bare objects are checked so too (anything else in a list is refused, never a
 * TypeError). The uploader and the minimum audience size's read-ahead both read items through it,
 * so both count the same users (by serializeUser's text).
 */
export function itemUsers(item: UploadItem, bare: { position: number }): readonly UploadUser[] {
  const list: readonly unknown[] | undefined = Array.isArray(item)
    ? item
    : Array.isArray((item as { users?: unknown } | null)?.users)
      ? (item as { users: readonly unknown[] }).users
      : undefined;
  if (list === undefined) return [builtUser(item, bare)];
  // A pipeline's chunk (every user with its text) is taken as it is; any other list is checked.
  for (let i = 0; i < list.length; i++)
    if ((list[i] as Partial<UploadUser> | null)?.json === undefined) return list.map((u) => builtUser(u, bare));
  return list as readonly UploadUser[];
}

/**
 * A built user as it is; its values checked when it comes without its text (`json`, which the
 * hashing pipelines compute): a user built by hand may hold raw values. A bare object checked.
 */
function builtUser(item: unknown, bare: { position: number }): UploadUser {
  if (isBuiltUser(item as UploadItem)) {
    const u = item as UploadUser;
    if (u.json === undefined) checkHashedUser(u.user, `the user of line ${u.line} of the input`);
    return u;
  }
  const position = ++bare.position;
  return { line: position, user: checkHashedUser(item, `user ${position} of the input`), rejects: [] };
}

function isBuiltUser(item: UploadItem): item is UploadUser {
  const u = item as Partial<UploadUser> | null;
  return typeof u?.line === 'number' && typeof u.user === 'object' && u.user !== null;
}

const DIGEST = /^[0-9a-f]{64}$/;

/**
 * A user object from a library caller: refused unless every value is already a digest
 * (partner_user_id excepted), so a raw identifier can never be sent by mistake. The message
 * names the user (`who`: its position or line) and the type, never the value.
 */
function checkHashedUser(item: unknown, who: string): AudienceUser {
  const refuse = (what: string): never => {
    throw new ConfigError('user_not_hashed', `${who} ${what}`, {
      fix: 'pass raw records with the records option (they are hashed here), or hash them first with hashRecords()',
    });
  };
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return refuse('is not a user object');
  for (const [type, values] of Object.entries(item)) {
    // The key is not repeated: a caller may have put a value where a type belongs.
    if (!(IDENTIFIER_TYPES as readonly string[]).includes(type))
      refuse(`has a key that is not an identifier type (allowed: ${IDENTIFIER_TYPES.join(', ')})`);
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'string'))
      refuse(`has a ${type} that is not an array of strings`);
    for (const v of values as string[]) {
      if (type === 'partner_user_id' ? !partnerUserIdFits(v) : !DIGEST.test(v)) {
        refuse(
          type === 'partner_user_id'
            ? 'has an empty or over-long partner_user_id'
            : `has a ${type} value that is not a SHA-256 digest (64 lowercase hex): raw identifiers are never sent`,
        );
      }
    }
  }
  return item;
}
