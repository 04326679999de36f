/** The canonical JSON of a user object (the uploader's dedupe key and byte count) and its fingerprint. */
import { hash as cryptoHash } from 'node:crypto';
import { IDENTIFIER_TYPES, type AudienceUser } from '../platform/users.js';

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
  return serialize(user, false);
}

/**
 * serializeUser for a user that buildUser made, whose values other than partner_user_id are
 * digests it produced or validated: the same text, with the digests written without escaping
 * (they need none). This runs once per row on the hot path, where JSON.stringify of the lists
 * cost several times more than the rest of the serialization.
 */
export function serializeBuiltUser(user: AudienceUser): string {
  return serialize(user, true);
}

/** `"type":` of each type, in IDENTIFIER_TYPES order. */
const KEYS = IDENTIFIER_TYPES.map((type) => `"${type}":`);

function serialize(user: AudienceUser, digestsChecked: boolean): string {
  let out = '{';
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const type = IDENTIFIER_TYPES[t]!;
    const list = user[type];
    if (list === undefined || list.length === 0) continue;
    if (out.length > 1) out += ',';
    out += KEYS[t]! + (digestsChecked && type !== 'partner_user_id' ? digestList(list) : JSON.stringify(list));
  }
  return out + '}';
}

/** A list of digests as JSON (they need no escaping); most users have one value of a type. */
function digestList(list: readonly string[]): string {
  return list.length === 1 ? '["' + list[0]! + '"]' : '["' + list.join('","') + '"]';
}
