/**
 * Parsing and checking of user-batch bodies (custom audience users and do-not-reach list users).
 * This is the sandbox's hot path: a 5 MB body must be parsed and checked in well under 100 ms.
 * A byte scanner handles the shape clients send without creating a string per digest; anything
 * it does not vouch for goes through JSON.parse and the general checks, which word the errors.
 *
 * Users are stored as 53-bit numbers (a hash of the canonical user: identifier types in a fixed
 * order, values sorted) rather than strings: a million users cost tens of MB in a Set<number>
 * instead of hundreds of MB of hex strings, and the uploader's benchmark runs in the same process.
 */
import {
  ALLOWED_PARAMS,
  ALLOWED_USER_KEYS,
  latestDoNotReachExpiry,
  MAX_OPERATIONS,
  MEMBERSHIP_MONTHS,
  OPERATION_FIELDS,
  UNHASHED_USER_KEY,
  USER_KEYS,
  type BatchKind,
  type UserKey,
} from './platform.js';
/** Caps the size of an error response; the first ones are what a caller needs. */
const MAX_OPERATION_ERRORS = 100;

const HEX64 = /^[0-9a-f]{64}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/;
const KNOWN_TYPES = new Set<string>(USER_KEYS);
const OPERATION_KEYS = new Set<string>(OPERATION_FIELDS);
const PARTNER_INDEX = USER_KEYS.indexOf(UNHASHED_USER_KEY);
const DIGEST_KEY_CHARS = 16;
const TYPE_CODES: ReadonlyArray<readonly [UserKey, number]> = USER_KEYS.map((t, i) => [t, 0x41 + i]);

/** Per batch kind, a bit per USER_KEYS index the kind accepts. */
const ACCEPTED_MASK: Record<BatchKind, number> = {
  custom: typeMask(ALLOWED_USER_KEYS.custom),
  dnr: typeMask(ALLOWED_USER_KEYS.dnr),
};

function typeMask(types: readonly UserKey[]): number {
  return types.reduce((mask, t) => mask | (1 << USER_KEYS.indexOf(t)), 0);
}

export interface SandboxOperationError {
  index: number;
  code: string;
  message: string;
  user_index?: number;
  parameter?: string;
}

export interface CheckedOperation {
  type: 'Update' | 'Delete';
  /** One key per user, in order (duplicates kept: they count in success_count). */
  keys: number[];
  /** The operation's params without `users`, for the DNR `request` echo. */
  echo: Record<string, string>;
}

export type BatchCheck =
  | { ok: true; operations: CheckedOperation[]; users: number }
  | { ok: false; code: string; message: string; parameter?: string; operationErrors?: SandboxOperationError[] };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseTime(v: unknown): number | undefined {
  if (typeof v !== 'string' || !ISO_UTC.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

// Incremental cyrb53-style hash over the canonical bytes of one user. Hex digests are already
// uniform, so a fast non-cryptographic mix is enough; 53 bits keep collisions negligible (about
// 1 in 18,000 for a million users). Module state: every use is synchronous.
let h1 = 0;
let h2 = 0;

function hashReset(): void {
  h1 = 0xdeadbeef;
  h2 = 0x41c6ce57;
}

function hashPush(c: number): void {
  h1 = Math.imul(h1 ^ c, 2654435761);
  h2 = Math.imul(h2 ^ c, 1597334677);
}

/** Feeds one value and its separator (a byte no digest contains, so ["ab","c"] != ["a","bc"]). */
function hashValue(bytes: Uint8Array, start: number, end: number): void {
  let a = h1;
  let b = h2;
  for (let i = start; i < end; i++) {
    const c = bytes[i] ?? 0;
    a = Math.imul(a ^ c, 2654435761);
    b = Math.imul(b ^ c, 1597334677);
  }
  h1 = Math.imul(a ^ 0x2c, 2654435761);
  h2 = Math.imul(b ^ 0x2c, 1597334677);
}

function hashEnd(): number {
  let a = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  a ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  let b = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  b ^= Math.imul(a ^ (a >>> 13), 3266489909);
  return 4294967296 * (2097151 & b) + (a >>> 0);
}

/**
 * How many bytes of a value enter the key: a digest's first 16 hex characters (64 bits of a
 * SHA-256, plenty against collisions and a quarter of the hashing work), a partner id whole.
 */
function keyLength(typeIndex: number, length: number): number {
  return typeIndex === PARTNER_INDEX ? length : Math.min(length, DIGEST_KEY_CHARS);
}

/**
 * The key of a validated user: identifier types in USER_KEYS order, each type's distinct
 * values in byte order, UTF-8. The fast scanner computes the same sequence straight from the body.
 */
function userKey(user: Record<string, unknown>): number {
  hashReset();
  for (const [type, code] of TYPE_CODES) {
    const values = user[type] as string[] | undefined;
    if (values === undefined) continue;
    hashPush(code);
    const encoded = [...new Set(values)].map((v) => Buffer.from(v, 'utf8')).sort((a, b) => Buffer.compare(a, b));
    for (const v of encoded) hashValue(v, 0, keyLength(code - 0x41, v.length));
  }
  return hashEnd();
}

/** Why one user is invalid, or undefined when it is fine. */
function userProblem(user: unknown, kind: BatchKind): string | undefined {
  if (!isPlainObject(user)) return 'each user must be an object of identifier arrays';
  let count = 0;
  for (const type in user) {
    if (!KNOWN_TYPES.has(type))
      return `unknown identifier type "${type.slice(0, 40)}"; allowed: ${ALLOWED_USER_KEYS[kind].join(', ')}`;
    if (!(ALLOWED_USER_KEYS[kind] as readonly string[]).includes(type)) {
      return `identifier type ${type} is not accepted on do-not-reach lists; allowed: ${ALLOWED_USER_KEYS[kind].join(', ')}`;
    }
    const values = user[type];
    if (!Array.isArray(values) || values.length === 0) return `${type} must be a non-empty array of strings`;
    const hashed = type !== UNHASHED_USER_KEY;
    for (const v of values) {
      if (typeof v !== 'string') return `${type} must be an array of strings`;
      if (hashed ? !HEX64.test(v) : v.length === 0 || v.length > 1000) {
        return hashed
          ? `${type} values must be SHA-256 digests (64 lowercase hex characters)`
          : 'partner_user_id values must be 1 to 1000 characters';
      }
    }
    count += 1;
  }
  return count === 0 ? 'a user must carry at least one identifier' : undefined;
}

function checkParams(
  params: Record<string, unknown>,
  kind: BatchKind,
  now: number,
  errors: SandboxOperationError[],
  index: number,
): Record<string, string> | undefined {
  const echo: Record<string, string> = {};
  const fail = (parameter: string, message: string): undefined => {
    errors.push({ index, code: 'INVALID_PARAMETER', message, parameter });
    return undefined;
  };
  // A field of the other endpoint is named as such; any other unknown field is refused first.
  const known = ALLOWED_PARAMS.custom;
  const unknown = Object.keys(params).find((key) => !known.includes(key));
  if (unknown !== undefined) {
    const name = unknown.slice(0, 40);
    return fail(name, `Unknown parameter ${name}; allowed: ${ALLOWED_PARAMS[kind].join(', ')}`);
  }
  if (params['effective_at'] !== undefined && !ALLOWED_PARAMS[kind].includes('effective_at')) {
    return fail('effective_at', 'effective_at is not supported on do-not-reach lists');
  }
  let effective = now;
  if (params['effective_at'] !== undefined) {
    const t = parseTime(params['effective_at']);
    if (t === undefined) return fail('effective_at', 'effective_at must be a UTC ISO 8601 time');
    effective = t;
    echo['effective_at'] = params['effective_at'] as string;
  }
  if (params['expires_at'] !== undefined) {
    const t = parseTime(params['expires_at']);
    if (t === undefined) return fail('expires_at', 'expires_at must be a UTC ISO 8601 time');
    if (t <= effective) return fail('expires_at', 'expires_at must be later than effective_at (default now)');
    if (kind === 'dnr' && t > latestDoNotReachExpiry(now)) {
      return fail('expires_at', `expires_at must be at most ${MEMBERSHIP_MONTHS} months from now`);
    }
    echo['expires_at'] = params['expires_at'] as string;
  }
  return echo;
}

/**
 * Checks a whole user-batch body. Batches succeed or fail as a group: any invalid operation
 * fails the request (400) with `operation_errors`, and nothing is stored. Well-formed bodies take
 * the byte scanner; anything it does not vouch for is re-checked by the general path, which
 * produces the exact errors.
 */
export function checkUserBatch(body: Uint8Array, kind: BatchKind, now: number): BatchCheck {
  return scanUserBatch(body, kind, now) ?? checkParsedBatch(body, kind, now);
}

function checkParsedBatch(body: Uint8Array, kind: BatchKind, now: number): BatchCheck {
  const parsed = parseBatchBody(body);
  if (!Array.isArray(parsed)) return parsed;
  const errors: SandboxOperationError[] = [];
  const operations: CheckedOperation[] = [];
  let users = 0;
  for (let index = 0; index < parsed.length && errors.length < MAX_OPERATION_ERRORS; index++) {
    const operation = checkOperation(parsed[index], index, kind, now, errors);
    if (operation === undefined) continue;
    users += operation.keys.length;
    operations.push(operation);
  }
  return errors.length > 0 ? failedBatch(errors) : { ok: true, operations, users };
}

/** The body's operations (a non-empty JSON array within the platform's cap), or why the request fails. */
function parseBatchBody(body: Uint8Array): unknown[] | BatchCheck {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch {
    return { ok: false, code: 'INVALID_PARAMETER', message: 'The body is not valid JSON' };
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    return { ok: false, code: 'INVALID_PARAMETER', message: 'The body must be a non-empty JSON array of operations' };
  }
  if (parsed.length > MAX_OPERATIONS) {
    return {
      ok: false,
      code: 'TOO_MANY_OPERATIONS',
      message: `A request holds at most ${MAX_OPERATIONS} operations; this one has ${parsed.length}`,
    };
  }
  return parsed as unknown[];
}

/** One operation checked, or undefined with its errors pushed onto `errors`. */
function checkOperation(
  op: unknown,
  index: number,
  kind: BatchKind,
  now: number,
  errors: SandboxOperationError[],
): CheckedOperation | undefined {
  if (!isPlainObject(op)) {
    errors.push({ index, code: 'INVALID_PARAMETER', message: 'An operation must be an object' });
    return undefined;
  }
  const extra = Object.keys(op).find((k) => !OPERATION_KEYS.has(k));
  if (extra !== undefined) {
    errors.push({
      index,
      code: 'INVALID_PARAMETER',
      parameter: extra.slice(0, 40),
      message: 'Unknown operation field; allowed: operation_type, params',
    });
    return undefined;
  }
  const type = op['operation_type'];
  if (type !== 'Update' && type !== 'Delete') {
    errors.push({
      index,
      code: 'INVALID_PARAMETER',
      parameter: 'operation_type',
      message: 'operation_type must be Update or Delete',
    });
    return undefined;
  }
  const params = op['params'];
  if (!isPlainObject(params)) {
    errors.push({ index, code: 'MISSING_PARAMETER', parameter: 'params', message: 'params must be an object' });
    return undefined;
  }
  const echo = checkParams(params, kind, now, errors, index);
  if (echo === undefined) return undefined;
  const list = params['users'];
  if (!Array.isArray(list) || list.length === 0) {
    errors.push({
      index,
      code: 'MISSING_PARAMETER',
      parameter: 'users',
      message: 'params.users must be a non-empty array',
    });
    return undefined;
  }
  return { type, keys: userKeys(list, index, kind, errors), echo };
}

/** The users' keys; an invalid user leaves a hole and an error (the batch then fails anyway). */
function userKeys(list: unknown[], index: number, kind: BatchKind, errors: SandboxOperationError[]): number[] {
  const keys = new Array<number>(list.length);
  for (let u = 0; u < list.length; u++) {
    const problem = userProblem(list[u], kind);
    if (problem !== undefined) {
      errors.push({ index, user_index: u, code: 'INVALID_USER_DATA', message: problem });
      if (errors.length >= MAX_OPERATION_ERRORS) break;
      continue;
    }
    keys[u] = userKey(list[u] as Record<string, unknown>);
  }
  return keys;
}

/** The 400 for a batch with invalid items: the first error's code and parameter, and all of them listed. */
function failedBatch(errors: SandboxOperationError[]): BatchCheck {
  const first = errors[0];
  return {
    ok: false,
    code: first?.code ?? 'INVALID_PARAMETER',
    message: `${errors.length}${errors.length >= MAX_OPERATION_ERRORS ? '+' : ''} invalid item(s); see operation_errors`,
    ...(first?.parameter === undefined ? {} : { parameter: first.parameter }),
    operationErrors: errors,
  };
}

// --- Fast path ---------------------------------------------------------------------------------
// A single pass over the body bytes for the shape every well-behaved client sends: no string is
// created for a digest, and keys are computed from the bytes in place. It accepts a body only
// when the general path would accept it with the same result; on anything unusual (escapes,
// non-ASCII, duplicate keys, invalid values, ...) it bails out and the general path decides.

const BAIL: unique symbol = Symbol('bail');
const enc = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const K_OPERATION_TYPE = enc('operation_type');
const K_PARAMS = enc('params');
const K_USERS = enc('users');
const K_EFFECTIVE_AT = enc('effective_at');
const K_EXPIRES_AT = enc('expires_at');
const V_UPDATE = enc('Update');
const V_DELETE = enc('Delete');
const TYPE_KEYS: ReadonlyArray<readonly [Uint8Array, number]> = USER_KEYS.map((t, i) => [enc(t), i]);
const MAX_PARTNER_ID = 1000;
const HEX_LOWER = new Uint8Array(256);
for (const c of enc('0123456789abcdef')) HEX_LOWER[c] = 1;

class Scanner {
  p = 0;
  // Reused per user: type index, value start, value end of each identifier value.
  private types: number[] = [];
  private starts: number[] = [];
  private ends: number[] = [];
  private order: number[] = [];

  constructor(
    private readonly b: Uint8Array,
    /** Bit per USER_KEYS index the batch kind accepts; others go to the general path's errors. */
    private readonly accepted: number,
  ) {}

  ws(): void {
    const b = this.b;
    let p = this.p;
    for (;;) {
      const c = b[p];
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
      else break;
    }
    this.p = p;
  }

  /** Skips whitespace, then consumes `c` if it is next. */
  eat(c: number): boolean {
    this.ws();
    if (this.b[this.p] !== c) return false;
    this.p++;
    return true;
  }

  expect(c: number): void {
    if (!this.eat(c)) throw BAIL;
  }

  /** A string without escapes or non-ASCII bytes; returns its start (end is this.p - 1). */
  str(): number {
    this.expect(0x22);
    const b = this.b;
    const start = this.p;
    let p = start;
    for (;;) {
      const c = b[p];
      if (c === undefined || c === 0x5c || c < 0x20 || c >= 0x80) throw BAIL;
      if (c === 0x22) break;
      p++;
    }
    this.p = p + 1;
    return start;
  }

  /** A 64-character lowercase hex string, validated in the same pass; returns its start. */
  hex64(): number {
    this.ws();
    const b = this.b;
    const start = this.p + 1;
    const end = start + 64;
    if (b[this.p] !== 0x22 || b[end] !== 0x22) throw BAIL;
    // A table lookup per byte is twice as fast as range comparisons here (the hottest loop).
    let bad = 0;
    for (let i = start; i < end; i++) bad |= (HEX_LOWER[b[i] ?? 0] ?? 0) ^ 1;
    if (bad !== 0) throw BAIL;
    this.p = end + 1;
    return start;
  }

  is(start: number, end: number, key: Uint8Array): boolean {
    if (end - start !== key.length) return false;
    for (let i = 0; i < key.length; i++) if (this.b[start + i] !== key[i]) return false;
    return true;
  }

  text(start: number, end: number): string {
    return Buffer.from(this.b.buffer, this.b.byteOffset + start, end - start).toString('latin1');
  }

  /** One user object; returns its key. */
  user(): number {
    this.expect(0x7b);
    let seen = 0;
    let n = 0;
    do {
      const ks = this.str();
      const ke = this.p - 1;
      let type = -1;
      for (const [key, index] of TYPE_KEYS) {
        if (this.is(ks, ke, key)) {
          type = index;
          break;
        }
      }
      if (type < 0 || (seen & (1 << type)) !== 0 || (this.accepted & (1 << type)) === 0) throw BAIL;
      seen |= 1 << type;
      this.expect(0x3a);
      this.expect(0x5b);
      do {
        const vs = type === PARTNER_INDEX ? this.str() : this.hex64();
        const ve = this.p - 1;
        if (ve === vs || ve - vs > MAX_PARTNER_ID) throw BAIL;
        this.types[n] = type;
        this.starts[n] = vs;
        this.ends[n] = ve;
        n++;
      } while (this.eat(0x2c));
      this.expect(0x5d);
    } while (this.eat(0x2c));
    this.expect(0x7d);
    return this.keyOf(n);
  }

  /** Orders value i before value j: by type, then bytes (what Buffer.compare does in userKey). */
  private compare(i: number, j: number): number {
    const d = (this.types[i] ?? 0) - (this.types[j] ?? 0);
    if (d !== 0) return d;
    const b = this.b;
    const si = this.starts[i] ?? 0;
    const sj = this.starts[j] ?? 0;
    const li = (this.ends[i] ?? 0) - si;
    const lj = (this.ends[j] ?? 0) - sj;
    const n = Math.min(li, lj);
    for (let k = 0; k < n; k++) {
      const c = (b[si + k] ?? 0) - (b[sj + k] ?? 0);
      if (c !== 0) return c;
    }
    return li - lj;
  }

  /** Same byte sequence as userKey(): types in order, distinct values sorted. */
  private keyOf(n: number): number {
    hashReset();
    // Clients serialize types in canonical order with one value each: then no sort is needed.
    let ordered = true;
    for (let i = 1; i < n && ordered; i++) ordered = (this.types[i - 1] ?? 0) < (this.types[i] ?? 0);
    const order = this.order;
    for (let i = 0; i < n; i++) order[i] = i;
    if (!ordered) {
      // Insertion sort: a user has a handful of values.
      for (let i = 1; i < n; i++) {
        const v = order[i] ?? 0;
        let j = i - 1;
        while (j >= 0 && this.compare(order[j] ?? 0, v) > 0) {
          order[j + 1] = order[j] ?? 0;
          j--;
        }
        order[j + 1] = v;
      }
    }
    let lastType = -1;
    let prev = -1;
    for (let k = 0; k < n; k++) {
      const i = order[k] ?? 0;
      if (!ordered && prev >= 0 && this.compare(prev, i) === 0) continue;
      const type = this.types[i] ?? 0;
      if (type !== lastType) {
        hashPush(0x41 + type);
        lastType = type;
      }
      const start = this.starts[i] ?? 0;
      hashValue(this.b, start, start + keyLength(type, (this.ends[i] ?? 0) - start));
      prev = i;
    }
    return hashEnd();
  }
}

function scanUserBatch(body: Uint8Array, kind: BatchKind, now: number): BatchCheck | undefined {
  const s = new Scanner(body, ACCEPTED_MASK[kind]);
  const operations: CheckedOperation[] = [];
  let users = 0;
  try {
    s.expect(0x5b);
    do {
      if (operations.length >= MAX_OPERATIONS) return undefined;
      const operation = scanOperation(s, kind, now, operations.length);
      if (operation === undefined) return undefined;
      users += operation.keys.length;
      operations.push(operation);
    } while (s.eat(0x2c));
    s.expect(0x5d);
    s.ws();
    if (s.p !== body.length) return undefined;
  } catch (e) {
    if (e === BAIL) return undefined;
    throw e;
  }
  return { ok: true, operations, users };
}

/** An operation as it is scanned: its type, its users' keys and its time params. */
interface ScannedOperation {
  type?: 'Update' | 'Delete' | undefined;
  keys?: number[];
  params: Record<string, string>;
}

/** One operation object, checked; undefined for anything the fast path leaves to the full check. */
function scanOperation(s: Scanner, kind: BatchKind, now: number, index: number): CheckedOperation | undefined {
  s.expect(0x7b);
  const op: ScannedOperation = { params: {} };
  do {
    const ks = s.str();
    const ke = s.p - 1;
    s.expect(0x3a);
    if (s.is(ks, ke, K_OPERATION_TYPE) && op.type === undefined) {
      const vs = s.str();
      const ve = s.p - 1;
      op.type = s.is(vs, ve, V_UPDATE) ? 'Update' : s.is(vs, ve, V_DELETE) ? 'Delete' : undefined;
      if (op.type === undefined) return undefined;
    } else if (s.is(ks, ke, K_PARAMS) && op.keys === undefined) {
      if (!scanParams(s, op)) return undefined;
    } else return undefined;
  } while (s.eat(0x2c));
  s.expect(0x7d);
  const { type, keys } = op;
  if (type === undefined || keys === undefined) return undefined;
  const errors: SandboxOperationError[] = [];
  const echo = checkParams(op.params, kind, now, errors, index);
  return echo === undefined ? undefined : { type, keys, echo };
}

/** An operation's `params` object into `op` (its users, effective_at, expires_at); false for anything else. */
function scanParams(s: Scanner, op: ScannedOperation): boolean {
  s.expect(0x7b);
  do {
    const ps = s.str();
    const pe = s.p - 1;
    s.expect(0x3a);
    if (s.is(ps, pe, K_USERS) && op.keys === undefined) {
      const keys: number[] = [];
      op.keys = keys;
      s.expect(0x5b);
      do keys.push(s.user());
      while (s.eat(0x2c));
      s.expect(0x5d);
    } else if (
      (s.is(ps, pe, K_EFFECTIVE_AT) || s.is(ps, pe, K_EXPIRES_AT)) &&
      op.params[s.text(ps, pe)] === undefined
    ) {
      const name = s.text(ps, pe);
      const vs = s.str();
      op.params[name] = s.text(vs, s.p - 1);
    } else return false;
  } while (s.eat(0x2c));
  s.expect(0x7d);
  return true;
}
