/** The canonical JSON of a user object (the uploader's dedupe key and byte count) and its fingerprint. */
import { hash as cryptoHash } from 'node:crypto';
import { IDENTIFIER_TYPES, type AudienceUser } from '../platform/users.js';
import type { RowValues } from './types.js';

/**
 * Write the 64-bit dedupe fingerprint of a serialized user (the first 8 bytes of the SHA-256 of
 * its canonical JSON, never 0/0) into `into[2 * index]` (high word) and `into[2 * index + 1]`.
 */
export function writeUserFingerprint(json: string, into: Uint32Array, index: number): void {
  const d = cryptoHash('sha256', json, 'binary');
  const hi = ((d.charCodeAt(0) << 24) | (d.charCodeAt(1) << 16) | (d.charCodeAt(2) << 8) | d.charCodeAt(3)) >>> 0;
  const lo = ((d.charCodeAt(4) << 24) | (d.charCodeAt(5) << 16) | (d.charCodeAt(6) << 8) | d.charCodeAt(7)) >>> 0;
  // 0/0 marks an empty slot of UserDedupe's table.
  into[2 * index] = hi === 0 && lo === 0 ? 1 : hi;
  into[2 * index + 1] = lo;
}

/**
 * Canonical JSON of a user object: keys in IDENTIFIER_TYPES order, empty types omitted. It is the dedupe key
 * of the uploader and its UTF-8 length is the exact number of bytes the user adds to a request body.
 */
export function serializeUser(user: AudienceUser): string {
  const lists = IDENTIFIER_TYPES.map((type) => user[type] ?? []);
  return serialize(
    lists,
    lists.map((list) => list.length),
    false,
  );
}

/**
 * serializeUser of a row that UserBuilder read (RowValues), whose values other than partner_user_id are
 * digests it produced or validated: the same text, with the digests written without escaping (they need
 * none). This runs once per row on the hot path, where JSON.stringify of the lists cost several times
 * more than the rest of the serialization.
 */
export function serializeRow(row: Pick<RowValues, 'lists' | 'sizes'>): string {
  return serialize(row.lists, row.sizes, true);
}

/** `"type":` of each type, in IDENTIFIER_TYPES order. */
const KEYS = IDENTIFIER_TYPES.map((type) => `"${type}":`);
const PARTNER = IDENTIFIER_TYPES.indexOf('partner_user_id');

/** The JSON of the first sizes[t] values of each lists[t] (see serializeUser). */
function serialize(lists: readonly (readonly string[])[], sizes: readonly number[], digestsChecked: boolean): string {
  let out = '{';
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const n = sizes[t]!;
    if (n === 0) continue;
    const list = lists[t]!;
    if (out.length > 1) out += ',';
    out += KEYS[t]!;
    if (digestsChecked && t !== PARTNER) out += digestList(list, n);
    else out += JSON.stringify(list.length === n ? list : list.slice(0, n));
  }
  return out + '}';
}

/** The first n digests of a list as JSON (they need no escaping); most users have one value of a type. */
function digestList(list: readonly string[], n: number): string {
  let out = '["' + list[0]!;
  for (let i = 1; i < n; i++) out += '","' + list[i]!;
  return out + '"]';
}
