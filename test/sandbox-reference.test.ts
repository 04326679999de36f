import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import {
  ALLOWED_PARAMS,
  ALLOWED_USER_KEYS,
  latestDoNotReachExpiry,
  LIST_COUNT,
  MAX_BODY_BYTES,
  MAX_LISTED_IDS,
  MAX_OPERATIONS,
  MEMBERSHIP_MONTHS,
  OAUTH_SIGNATURE_METHOD,
  OAUTH_VERSION,
  OPERATION_FIELDS,
  OPERATION_TYPES,
  PERMISSION_LEVELS,
  TOTAL_COUNT_RATE_LIMIT,
  UNHASHED_USER_KEY,
  USER_BATCH_RATE_LIMIT,
  USER_KEYS,
  type BatchKind,
} from '../src/sandbox/platform.js';
import { checkUserBatch } from '../src/sandbox/users.js';
import { maxDoNotReachExpiry } from '../src/platform/kinds/do-not-reach-list.js';

/**
 * The sandbox's rules (src/sandbox/platform.ts) against the platform reference's own words. The
 * reference (shared/reference/*.md) is not part of the repository, so the rows the rules come
 * from are quoted here verbatim, each under its document and section, and the values are read
 * out of the quotes rather than typed again.
 */
const AUDIENCES = {
  // ads-audiences-api.md, "Endpoints" > "Custom audience users (batch)"
  usersRow:
    '| params.users | array | yes | objects with optional arrays: `email`, `device_id` (IDFA, AdID or Android id), `handle`, `service_id` (the platform user id), `phone_number`, `partner_user_id` |',
  paramsRow: '| params | object | yes | holds `users`, `effective_at`, `expires_at` |',
  operationTypeRow: '| operation_type | enum | yes | Update, Delete |',
  expiresRow:
    '| params.expires_at | string | no | UTC ISO 8601, later than effective_at, default 13 months after the request |',
  hashed: 'All values in `users` except `partner_user_id` are hashed with SHA256 after normalization.',
  // ads-audiences-api.md, "Endpoints" > "Do-not-reach lists"
  dnrRow:
    '| POST | /12/batch/accounts/:account_id/do_not_reach_lists/:do_not_reach_list_id/users | JSON array of operations: `operation_type` (Update, Delete), `params` with `users` (objects with arrays `email`, `phone_number`, hashed) and `expires_at` (UTC ISO 8601; one listing marks it required, another defaults it to 13 months) | `data`: array of `{success_count, total_count}`; `request`: array echoing params and operation_type |',
  // ads-audiences-api.md, "Limits"
  batchLimitRow:
    '| Custom audience users batch | 2500 operation objects per request; body at most 5,000,000 bytes; 1500 requests per 1 minute window |',
  totalCountRow: '| with_total_count requests | lower rate limit, currently 200 per 15 minutes |',
  lifetimeRow: '| Default audience membership lifetime | 13 months |',
  listLimitRow: '| Permissions GET count | 1 to 1000, default 200; id lists up to 200 |',
  // ads-audiences-api.md, "Resources and their fields" > "Audience permission (tailored and custom)"
  permissionLevelRow: '| permission_level | enum | READ_ONLY, READ_WRITE |',
};
// platform-core-api.md, "Authentication"
const CORE_OAUTH =
  'OAuth 1.0a header parameters: oauth_consumer_key, oauth_nonce, oauth_signature, oauth_signature_method (HMAC-SHA1), oauth_timestamp, oauth_token, oauth_version (1.0), oauth_callback (request-token step only).';

const backticked = (text: string): string[] => [...text.matchAll(/`([a-z_]+)`/g)].map((m) => m[1] ?? '');
const numberIn = (text: string, pattern: RegExp): number => Number(pattern.exec(text)?.[1]?.replaceAll(',', ''));

describe('the sandbox states the reference rules', () => {
  it('user keys: the six of the custom audience endpoint, email and phone_number on do-not-reach lists', () => {
    expect([...USER_KEYS].sort()).toEqual(backticked(AUDIENCES.usersRow).sort());
    expect(ALLOWED_USER_KEYS.custom).toBe(USER_KEYS);
    const dnrUsers = /`users` \(objects with arrays ([^)]*)\)/.exec(AUDIENCES.dnrRow)?.[1] ?? '';
    expect([...ALLOWED_USER_KEYS.dnr].sort()).toEqual(backticked(dnrUsers).sort());
    expect(backticked(AUDIENCES.hashed)).toEqual(['users', UNHASHED_USER_KEY]);
  });

  it('operations: Update or Delete, with operation_type and params; params per endpoint', () => {
    expect(OPERATION_TYPES).toEqual(/enum \| yes \| (\w+), (\w+) \|/.exec(AUDIENCES.operationTypeRow)?.slice(1));
    expect(OPERATION_TYPES).toEqual(/`operation_type` \((\w+), (\w+)\)/.exec(AUDIENCES.dnrRow)?.slice(1));
    expect([...OPERATION_FIELDS]).toEqual(backticked(AUDIENCES.dnrRow).slice(0, 2));
    expect(ALLOWED_PARAMS.custom).toEqual(backticked(AUDIENCES.paramsRow));
    const dnrParams = backticked(AUDIENCES.dnrRow).filter((k) => ALLOWED_PARAMS.custom.includes(k));
    expect(ALLOWED_PARAMS.dnr).toEqual(dnrParams);
  });

  it('limits: 2500 operations, 5,000,000 bytes, 1500 requests a minute, 200 with_total_count per 15 minutes', () => {
    expect(MAX_OPERATIONS).toBe(numberIn(AUDIENCES.batchLimitRow, /(\d[\d,]*) operation objects per request/));
    expect(MAX_BODY_BYTES).toBe(numberIn(AUDIENCES.batchLimitRow, /body at most (\d[\d,]*) bytes/));
    expect(USER_BATCH_RATE_LIMIT.limit).toBe(numberIn(AUDIENCES.batchLimitRow, /(\d[\d,]*) requests per 1 minute/));
    expect(USER_BATCH_RATE_LIMIT.windowMs).toBe(60_000);
    expect(TOTAL_COUNT_RATE_LIMIT.limit).toBe(numberIn(AUDIENCES.totalCountRow, /currently (\d+) per/));
    expect(TOTAL_COUNT_RATE_LIMIT.windowMs).toBe(numberIn(AUDIENCES.totalCountRow, /per (\d+) minutes/) * 60_000);
  });

  it('listings: count 1 to 1000 (default 200), id lists up to 200; permission levels READ_ONLY, READ_WRITE', () => {
    const [min, max, dflt, ids] =
      /(\d+) to (\d+), default (\d+); id lists up to (\d+)/.exec(AUDIENCES.listLimitRow)?.slice(1).map(Number) ?? [];
    expect(LIST_COUNT).toEqual({ min, max, default: dflt });
    expect(MAX_LISTED_IDS).toBe(ids);
    expect(PERMISSION_LEVELS).toEqual(/enum \| (\w+), (\w+) \|/.exec(AUDIENCES.permissionLevelRow)?.slice(1));
  });

  it('membership: 13 months, in every place the reference says it', () => {
    for (const row of [AUDIENCES.lifetimeRow, AUDIENCES.expiresRow, AUDIENCES.dnrRow]) {
      expect(numberIn(row, /(\d+) months/), row).toBe(MEMBERSHIP_MONTHS);
    }
  });

  it('OAuth: HMAC-SHA1, version 1.0', () => {
    expect(OAUTH_SIGNATURE_METHOD).toBe(/oauth_signature_method \(([^)]+)\)/.exec(CORE_OAUTH)?.[1]);
    expect(OAUTH_VERSION).toBe(/oauth_version \(([^)]+)\)/.exec(CORE_OAUTH)?.[1]);
  });
});

const digest = (text: string): string => createHash('sha256').update(text).digest('hex');
const NOW = Date.UTC(2026, 0, 31, 12, 0, 0);

function batch(kind: BatchKind, operations: unknown[]): ReturnType<typeof checkUserBatch> {
  return checkUserBatch(Buffer.from(JSON.stringify(operations)), kind, NOW);
}

describe('the sandbox applies the rules it states', () => {
  const userWith = (key: string): Record<string, string[]> => ({
    [key]: [key === UNHASHED_USER_KEY ? 'partner-1' : digest(key)],
  });

  it('takes each allowed key on each endpoint and refuses the others', () => {
    for (const kind of ['custom', 'dnr'] as const) {
      for (const key of USER_KEYS) {
        const result = batch(kind, [{ operation_type: 'Update', params: { users: [userWith(key)] } }]);
        expect(result.ok, `${kind} ${key}`).toBe(ALLOWED_USER_KEYS[kind].includes(key));
      }
    }
  });

  it('refuses effective_at on do-not-reach lists only', () => {
    const op = {
      operation_type: 'Delete',
      params: { users: [userWith('email')], effective_at: '2026-02-01T00:00:00Z' },
    };
    expect(batch('custom', [op]).ok).toBe(true);
    expect(batch('dnr', [op])).toMatchObject({ ok: false, code: 'INVALID_PARAMETER', parameter: 'effective_at' });
  });

  it('takes 2500 operations and refuses 2501', () => {
    const op = { operation_type: 'Update', params: { users: [userWith('email')] } };
    expect(batch('custom', new Array(MAX_OPERATIONS).fill(op)).ok).toBe(true);
    expect(batch('custom', new Array(MAX_OPERATIONS + 1).fill(op))).toMatchObject({
      ok: false,
      code: 'TOO_MANY_OPERATIONS',
    });
  });

  it('takes a do-not-reach expiry up to 13 calendar months ahead (Jan 31 -> Feb 28) and not a millisecond more', () => {
    const last = new Date(Date.UTC(2027, 1, 28, 12, 0, 0));
    expect(latestDoNotReachExpiry(NOW)).toBe(last.getTime());
    const at = (t: number): unknown[] => [
      { operation_type: 'Update', params: { users: [userWith('email')], expires_at: new Date(t).toISOString() } },
    ];
    expect(batch('dnr', at(last.getTime())).ok).toBe(true);
    expect(batch('dnr', at(last.getTime() + 1))).toMatchObject({ ok: false, parameter: 'expires_at' });
  });

  it("agrees with the uploader's own 13-month rule (written apart) on every day of four years", () => {
    for (let t = Date.UTC(2024, 0, 1, 23, 59, 59, 999); t < Date.UTC(2028, 0, 1); t += 86_400_000) {
      expect(latestDoNotReachExpiry(t), new Date(t).toISOString()).toBe(maxDoNotReachExpiry(new Date(t)).getTime());
    }
  });
});

describe("the sandbox is the platform's stand-in, not the client's", () => {
  const SANDBOX = fileURLToPath(new URL('../src/sandbox/', import.meta.url));

  it('imports none of the rules it judges: no uploader, identifier, hashing or OAuth-signing module', () => {
    const foreign: string[] = [];
    for (const file of readdirSync(SANDBOX).filter((f) => f.endsWith('.ts'))) {
      const imports = ts.preProcessFile(readFileSync(join(SANDBOX, file), 'utf8'), true, true).importedFiles;
      for (const { fileName } of imports) {
        if (/^\.\.\/(upload|identifiers|hashing|state|ingest)\/|^\.\.\/api\/oauth/.test(fileName)) {
          foreign.push(`${file}: ${fileName}`);
        }
      }
    }
    expect(foreign).toEqual([]);
  });
});
