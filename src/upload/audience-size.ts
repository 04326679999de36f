/**
 * Too small to be anonymous: a custom audience that would hold fewer than a minimum number of
 * users is refused before any request is sent (the platform does not target small audiences, and
 * a handful of people could be singled out). An upload reads its input until the minimum of
 * distinct users is seen or the input ends, keeps what it read, and hands the same stream on;
 * a sync reads its input ahead the same way before its target check, and judges its plan
 * (sync-plan.ts) before any change.
 */
import { ConfigError } from '../errors.js';
import { serializeUser } from '../identifiers/serialize.js';
import { readAhead } from '../util/read-ahead.js';
import type { Target } from './target.js';
import { itemUsers } from './input.js';
import type { UploadItem, UploadPackedChunk, UploadUsers } from './types.js';

/** The default minimum (docs/privacy.md); 0 turns the check off. */
export const DEFAULT_MIN_AUDIENCE_SIZE = 100;

export function audienceTooSmall(users: number, min: number, what: string): ConfigError {
  return new ConfigError(
    'audience_too_small',
    `${what} would hold ${users} user${users === 1 ? '' : 's'}, fewer than the minimum of ${min}: so small an audience is not anonymous (the platform does not target it, and its few people could be singled out); nothing was sent`,
    {
      fix: `send a larger list; if the audience holds enough users already, or the size is intended, set minAudienceSize to ${users} (0 turns the check off)`,
    },
  );
}

/**
 * Adds the distinct users of each item to `seen` as the uploader tells users apart: by their
 * serializeUser text (a bare object's key order and empty lists do not make it another user), or
 * a packed chunk's fingerprints.
 */
function keyCounter(seen: Set<string>): (item: UploadItem) => void {
  const bare = { position: 0 };
  return (item) => {
    const packed = (item as Partial<UploadPackedChunk> | null)?.packed;
    if (packed !== undefined) {
      const n = packed.fingerprints.length / 2;
      for (let k = 0; k < n; k++) seen.add(`${packed.fingerprints[2 * k]}:${packed.fingerprints[2 * k + 1]}`);
      return;
    }
    for (const u of itemUsers(item, bare)) {
      const json = u.json ?? serializeUser(u.user);
      if (json !== '{}') seen.add(json);
    }
  };
}

/**
 * `users` with its first items read ahead until `min` distinct users were seen; ConfigError
 * `audience_too_small` when the input ends first. The items read are handed out again, first; the
 * run's other properties (summary, mapping, close…) are the run's own.
 */
export async function withMinimumUsers(
  users: UploadUsers,
  min: number,
  target: Target,
  operation: 'update' | 'delete',
  /** A sync: an input without users is not judged here (sync_empty_input, or emptying on purpose). */
  sync = false,
): Promise<UploadUsers> {
  if (min === 0 || !target.hasMinimumSize || operation !== 'update') return users;
  const seen = new Set<string>();
  const addKeys = keyCounter(seen);
  const ahead = await readAhead(users as AsyncIterable<UploadItem> | Iterable<UploadItem>, (head) => {
    const last = head.at(-1);
    if (last !== undefined) addKeys(last);
    return seen.size < min;
  });
  if (ahead.ended && seen.size < min && !(sync && seen.size === 0)) {
    await users.close?.();
    throw audienceTooSmall(seen.size, min, `${sync ? 'after this sync, ' : ''}${target.name} ${target.id}`);
  }
  const replay = ahead.all;
  return new Proxy(users, {
    has: (t, p) => p === Symbol.asyncIterator || Reflect.has(t, p),
    get: (t, p, r): unknown =>
      p === Symbol.asyncIterator ? replay : p === Symbol.iterator ? undefined : (Reflect.get(t, p, r) as unknown),
  });
}
