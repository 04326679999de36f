import { z } from 'zod';
import {
  ALLOWED_PARAMS,
  ALLOWED_USER_KEYS,
  MAX_BODY_BYTES,
  MAX_OPERATIONS,
  OPERATION_TYPES,
  PERMISSION_LEVELS,
  UNHASHED_USER_KEY,
  type BatchKind,
} from '../../src/sandbox/platform.js';

/**
 * The documented request of each ads endpoint the client calls: its query parameters and its
 * body. Sources: the platform reference (shared/reference/ads-audiences-api.md, "Endpoints"),
 * whose user-batch rules src/sandbox/platform.ts states and test/sandbox-reference.test.ts checks;
 * where the reference says "not shown" (custom audience create, read, update, delete; the
 * do-not-reach listing and create), the platform's Audiences reference (docs.x.com/x-ads-api,
 * `x-ads-api/audiences/reference.mdx` in `xdevplatform/docs`), whose example responses are the
 * replay fixtures.
 */
interface DocumentedRequest {
  method: string;
  path: RegExp;
  required?: readonly string[];
  optional?: readonly string[];
  /** A user batch: a JSON body of operations (application/json). Anything else sends no body. */
  batch?: BatchKind;
}

const A = '[^/]+';
const path = (pattern: string): RegExp => new RegExp(`^${pattern.replaceAll(':id', A)}$`);
const LIST = ['count', 'cursor', 'sort_by', 'with_total_count'];
const ENUMS: Record<string, readonly string[]> = {
  permission_scope: ['OWNER', 'SHARED'],
  permission_level: PERMISSION_LEVELS,
  with_deleted: ['true', 'false'],
  with_total_count: ['true', 'false'],
  with_active: ['true', 'false'],
};

const DOCUMENTED: readonly DocumentedRequest[] = [
  {
    method: 'GET',
    path: path('/12/accounts/:id/custom_audiences'),
    optional: [...LIST, 'permission_scope', 'q', 'custom_audience_ids', 'with_deleted'],
  },
  { method: 'POST', path: path('/12/accounts/:id/custom_audiences'), required: ['name'], optional: ['description'] },
  { method: 'GET', path: path('/12/accounts/:id/custom_audiences/:id'), optional: ['with_deleted'] },
  { method: 'PUT', path: path('/12/accounts/:id/custom_audiences/:id'), optional: ['name', 'description'] },
  { method: 'DELETE', path: path('/12/accounts/:id/custom_audiences/:id') },
  { method: 'POST', path: path('/12/accounts/:id/custom_audiences/:id/users'), batch: 'custom' },
  {
    method: 'GET',
    path: path('/12/accounts/:id/custom_audiences/:id/permissions'),
    optional: [...LIST, 'granted_account_ids', 'custom_audience_permission_ids'],
  },
  {
    method: 'GET',
    path: path('/5/accounts/:id/tailored_audiences/:id/permissions'),
    optional: [...LIST, 'granted_account_ids', 'tailored_audience_permission_ids'],
  },
  ...['/12/accounts/:id/custom_audiences/:id/permissions', '/5/accounts/:id/tailored_audiences/:id/permissions'].map(
    (p) => ({ method: 'POST', path: path(p), required: ['granted_account_id', 'permission_level'] }),
  ),
  { method: 'DELETE', path: path('/12/accounts/:id/custom_audiences/:id/permissions/:id') },
  { method: 'DELETE', path: path('/5/accounts/:id/tailored_audiences/:id/permissions/:id') },
  { method: 'GET', path: path('/12/accounts/:id/custom_audiences/:id/targeted'), optional: ['with_active', 'cursor'] },
  { method: 'GET', path: path('/12/accounts/:id/do_not_reach_lists'), optional: ['with_deleted'] },
  { method: 'POST', path: path('/12/accounts/:id/do_not_reach_lists'), optional: ['description'] },
  { method: 'DELETE', path: path('/12/accounts/:id/do_not_reach_lists/:id') },
  { method: 'POST', path: path('/12/batch/accounts/:id/do_not_reach_lists/:id/users'), batch: 'dnr' },
];

const ISO_UTC = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z$/, 'a UTC ISO 8601 time');

/** "objects with optional arrays" of the allowed keys, all hashed (64 lowercase hex) but partner_user_id. */
function userSchema(kind: BatchKind): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const key of ALLOWED_USER_KEYS[kind]) {
    const value =
      key === UNHASHED_USER_KEY ? z.string().min(1) : z.string().regex(/^[0-9a-f]{64}$/, 'a SHA-256 digest');
    shape[key] = z.array(value).min(1).optional();
  }
  return z.strictObject(shape).refine((user) => Object.keys(user).length > 0, 'a user carries at least one identifier');
}

function batchSchema(kind: BatchKind): z.ZodType {
  const params: Record<string, z.ZodType> = { users: z.array(userSchema(kind)).min(1) };
  for (const name of ALLOWED_PARAMS[kind]) if (name !== 'users') params[name] = ISO_UTC.optional();
  const operation = z.strictObject({ operation_type: z.enum(OPERATION_TYPES), params: z.strictObject(params) });
  return z.array(operation).min(1).max(MAX_OPERATIONS);
}

const BATCH_SCHEMAS: Record<BatchKind, z.ZodType> = { custom: batchSchema('custom'), dnr: batchSchema('dnr') };

export interface SentRequest {
  method: string;
  url: URL;
  contentType: string | undefined;
  body: Buffer;
}

/** How the request departs from its endpoint's documented shape (empty when it does not). */
export function undocumentedParts(req: SentRequest): string[] {
  const doc = DOCUMENTED.find((d) => d.method === req.method && d.path.test(req.url.pathname));
  if (doc === undefined) return [`${req.method} ${req.url.pathname} is not a documented endpoint`];
  const problems = queryProblems(doc, req.url.searchParams);
  if (doc.batch === undefined) {
    if (req.body.length > 0) problems.push(`a body (${req.body.length} bytes) where none is documented`);
    return problems;
  }
  if (!(req.contentType ?? '').toLowerCase().startsWith('application/json')) {
    problems.push(`content type ${String(req.contentType)}, not application/json`);
  }
  if (req.body.length > MAX_BODY_BYTES) problems.push(`a body of ${req.body.length} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(req.body.toString('utf8'));
  } catch {
    return [...problems, 'a body that is not JSON'];
  }
  const checked = BATCH_SCHEMAS[doc.batch].safeParse(json);
  if (!checked.success) {
    for (const issue of checked.error.issues.slice(0, 5))
      problems.push(`body.${issue.path.join('.')}: ${issue.message}`);
  }
  return problems;
}

function queryProblems(doc: DocumentedRequest, query: URLSearchParams): string[] {
  const problems: string[] = [];
  const allowed = new Set([...(doc.required ?? []), ...(doc.optional ?? [])]);
  for (const name of doc.required ?? []) if (!query.has(name)) problems.push(`query ${name} is missing`);
  for (const [name, value] of query) {
    if (!allowed.has(name)) problems.push(`query ${name} is not documented here`);
    else if (value === '') problems.push(`query ${name} is empty`);
    else if (ENUMS[name] !== undefined && !ENUMS[name].includes(value)) problems.push(`query ${name}=${value}`);
    if (query.getAll(name).length > 1) problems.push(`query ${name} repeated`);
  }
  return [...new Set(problems)];
}
