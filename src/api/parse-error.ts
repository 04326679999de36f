/**
 * Turns a non-2xx response into one typed error with a one-line message and a fix. Four body
 * shapes are understood: the ads API's `errors` (+ `operation_errors`), the core API's Error
 * object `{code, message}`, an RFC 7807 Problem object, and anything else (status + excerpt).
 * Every string taken from the response passes the redactor: a server may echo anything back.
 */
import { z } from 'zod';
import {
  AuthError,
  HttpError,
  RateLimitError,
  type ErrorCode,
  type HttpErrorInit,
  type OperationErrorDetail,
  type PlatformErrorDetail,
} from '../errors.js';

const platformErrorSchema = z.looseObject({
  code: z.union([z.string(), z.number()]),
  message: z.string(),
  parameter: z.string().optional(),
  details: z.string().optional(),
  value: z.unknown().optional(),
});

/** `index` may be absent when the error sits in its operation's own array (see operationErrorsOf). */
const operationErrorSchema = z.looseObject({
  index: z.number().int().nonnegative().optional(),
  message: z.string(),
  code: z.union([z.string(), z.number()]).optional(),
  user_index: z.number().int().nonnegative().optional(),
});
type RawOperationError = z.infer<typeof operationErrorSchema>;

/** The ads API envelope, read part by part: one part of an unknown shape never hides another. */
const platformBodySchema = z.looseObject({ errors: z.unknown().optional(), operation_errors: z.unknown().optional() });

/** Entries of `errors` that have the documented shape; the others are counted, not shown. */
function platformErrorsOf(raw: unknown): { errors: z.infer<typeof platformErrorSchema>[]; unknown: number } {
  if (!Array.isArray(raw)) return { errors: [], unknown: raw === undefined ? 0 : 1 };
  const errors: z.infer<typeof platformErrorSchema>[] = [];
  for (const e of raw) {
    const parsed = platformErrorSchema.safeParse(e);
    if (parsed.success) errors.push(parsed.data);
  }
  return { errors, unknown: raw.length - errors.length };
}

/**
 * `operation_errors` comes in two shapes: flat, each entry naming its operation (`index`), or
 * one array per operation (as the java SDK models it), the position of the array naming the
 * operation. Both become `{ index, user_index? }` entries; entries of neither shape are counted.
 */
function operationErrorsOf(raw: unknown): { errors: Array<RawOperationError & { index: number }>; unknown: number } {
  if (!Array.isArray(raw)) return { errors: [], unknown: raw === undefined || raw === null ? 0 : 1 };
  const errors: Array<RawOperationError & { index: number }> = [];
  let unknown = 0;
  const add = (entry: unknown, operation: number | undefined): void => {
    const parsed = operationErrorSchema.safeParse(entry);
    const index = operation ?? (parsed.success ? parsed.data.index : undefined);
    if (parsed.success && index !== undefined) errors.push({ ...parsed.data, index });
    else unknown++;
  };
  raw.forEach((item: unknown, position) => {
    if (Array.isArray(item)) for (const entry of item) add(entry, position);
    else if (item !== null) add(item, undefined);
  });
  return { errors, unknown };
}

const coreErrorSchema = z.looseObject({ code: z.union([z.number(), z.string()]), message: z.string() });

const problemSchema = z.looseObject({
  type: z.string(),
  title: z.string(),
  detail: z.string().optional(),
  status: z.number().int().optional(),
});

export interface ErrorResponse {
  status: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Removes secrets from any text the server sent back before it reaches a message. */
  redact: (text: string) => string;
  resetAt?: Date;
  /** Attempts made, this one included. */
  attempts?: number;
}

const EXCERPT_CHARS = 120;

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** A short, single-line excerpt of a non-JSON body (HTML tags dropped). */
export function bodyExcerpt(body: string): string {
  const text = oneLine(body.replace(/<[^>]*>/g, ' '));
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

function header(headers: ErrorResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** What to do, by status: the message says what happened, this says what to change. */
export function fixForStatus(status: number, hasOperationErrors: boolean): string {
  if (hasOperationErrors)
    return 'Fix the users of the operation named in the message (index = operation position) and send it again';
  switch (status) {
    case 400:
      return 'Check the parameter named in the message against the documented limits';
    case 401:
      return 'Check the four credentials (consumerKey, consumerSecret, accessToken, accessTokenSecret) and the system clock, or get a new access token with the OAuth PIN flow';
    case 403:
      return 'The account is not yours or these credentials lack permission: use an ad account of the authenticated user, or the account that owns the object';
    case 404:
      return 'Check the id: the account, audience, list or permission does not exist or is not visible to these credentials';
    case 408:
    case 423:
      return 'Try again in a moment';
    case 413:
      return 'Send smaller batches';
    case 429:
      return "The rate limit was reached: wait for the window to reset and run again (an upload continues with unfinished: 'resume')";
    default:
      return status >= 500
        ? "The platform failed: try again later (an upload continues with unfinished: 'resume')"
        : 'Check the request parameters';
  }
}

export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'api_bad_request';
    case 401:
      return 'auth_unauthorized';
    case 403:
      return 'auth_forbidden';
    case 404:
      return 'api_not_found';
    case 408:
      return 'api_request_timeout';
    case 409:
      return 'api_conflict';
    case 413:
      return 'api_request_too_large';
    case 423:
      return 'api_locked';
    case 429:
      return 'rate_limited';
    case 503:
      return 'api_unavailable';
    default:
      return status >= 500 ? 'api_server_error' : 'api_http_error';
  }
}

interface ParsedBody {
  errors: PlatformErrorDetail[];
  operationErrors: OperationErrorDetail[];
  summary: string;
  problemType?: string;
  problemStatus?: number;
  bodyExcerpt?: string;
}

function describePlatformError(e: PlatformErrorDetail): string {
  return `${String(e.code)}: ${e.message}${e.parameter === undefined ? '' : ` (parameter ${e.parameter})`}`;
}

/** Redacts every string inside a JSON value (keys included): `value` echoes what was sent. */
function redactDeep(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactDeep(v, redact)]));
  }
  return value;
}

function redactCode(code: string | number, redact: (text: string) => string): string | number {
  return typeof code === 'string' ? redact(code) : code;
}

/** The ads API's envelope, when `errors` or `operation_errors` holds at least one entry of a known shape. */
function parsePlatformBody(json: unknown, redact: (text: string) => string): ParsedBody | undefined {
  const body = platformBodySchema.safeParse(json);
  if (!body.success) return undefined;
  const top = platformErrorsOf(body.data.errors);
  const ops = operationErrorsOf(body.data.operation_errors);
  if (top.errors.length === 0 && ops.errors.length === 0) return undefined;
  const errors: PlatformErrorDetail[] = top.errors.map((e) => ({
    code: redactCode(e.code, redact),
    message: redact(e.message),
    ...(e.parameter === undefined ? {} : { parameter: redact(e.parameter) }),
    ...(e.details === undefined ? {} : { details: redact(e.details) }),
    ...(e.value === undefined ? {} : { value: redactDeep(e.value, redact) }),
  }));
  const operationErrors: OperationErrorDetail[] = ops.errors.map((e) => ({
    index: e.index,
    message: redact(e.message),
    ...(e.code === undefined ? {} : { code: redactCode(e.code, redact) }),
    ...(e.user_index === undefined ? {} : { userIndex: e.user_index }),
  }));
  const parts: string[] = [];
  const first = errors[0];
  if (first !== undefined)
    parts.push(describePlatformError(first) + (errors.length > 1 ? ` (+${errors.length - 1} more)` : ''));
  const firstOp = operationErrors[0];
  if (firstOp !== undefined) {
    parts.push(
      `operation ${firstOp.index}${firstOp.userIndex === undefined ? '' : ` user ${firstOp.userIndex}`}: ${firstOp.message}` +
        (operationErrors.length > 1 ? ` (+${operationErrors.length - 1} more operation errors)` : ''),
    );
  }
  const unknown = top.unknown + ops.unknown;
  if (unknown > 0) parts.push(`${unknown} more error entr${unknown === 1 ? 'y' : 'ies'} of an unknown shape`);
  return { errors, operationErrors, summary: oneLine(parts.join('; ')) };
}

function parseBody(r: ErrorResponse): ParsedBody {
  let json: unknown;
  let isJson = false;
  try {
    json = JSON.parse(r.body);
    isJson = true;
  } catch {
    json = undefined;
  }
  const platform = parsePlatformBody(json, r.redact);
  if (platform !== undefined) return platform;
  // Any object with `type` and `title` is a Problem, whatever its Content-Type says: servers
  // (and proxies) send them as plain application/json, with types outside /problems/.
  const problem = problemSchema.safeParse(json);
  if (problem.success) {
    const p = problem.data;
    const type = r.redact(p.type);
    const summary = oneLine(`${r.redact(p.title)}${p.detail === undefined ? '' : `: ${r.redact(p.detail)}`}`);
    return {
      errors: [{ code: type, message: summary }],
      operationErrors: [],
      summary,
      problemType: type,
      ...(p.status === undefined ? {} : { problemStatus: p.status }),
    };
  }
  const core = coreErrorSchema.safeParse(json);
  if (core.success) {
    const e = { code: redactCode(core.data.code, r.redact), message: r.redact(core.data.message) };
    return { errors: [e], operationErrors: [], summary: oneLine(describePlatformError(e)) };
  }
  const excerpt = bodyExcerpt(r.redact(r.body));
  const kind = isJson ? 'JSON body of an unknown shape' : 'non-JSON body';
  return {
    errors: [],
    operationErrors: [],
    summary: excerpt === '' ? 'empty body' : `${kind}: ${excerpt}`,
    ...(excerpt === '' ? {} : { bodyExcerpt: excerpt }),
  };
}

/** Entries of an `errors` or `operation_errors` value (an operation's own array counted by its entries; null is none). */
function entries(value: unknown): number {
  if (value === null || value === undefined) return 0;
  if (!Array.isArray(value)) return typeof value === 'object' && Object.keys(value).length === 0 ? 0 : 1;
  let n = 0;
  for (const e of value) n += Array.isArray(e) ? entries(e) : e === null || e === undefined ? 0 : 1;
  return n;
}

/** Whether a parsed body holds at least one of the platform's errors, whatever its shape: the platform refused something. */
export function carriesErrors(json: unknown): boolean {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false;
  const body = json as { errors?: unknown; operation_errors?: unknown };
  return entries(body.errors) + entries(body.operation_errors) > 0;
}

export function buildHttpError(r: ErrorResponse): HttpError {
  const parsed = parseBody(r);
  const apiWarn = header(r.headers, 'x-api-warn');
  const requestId = header(r.headers, 'x-transaction-id') ?? header(r.headers, 'x-request-id');
  const attempts = r.attempts ?? 1;
  const init: HttpErrorInit = {
    status: r.status,
    method: r.method,
    path: r.path,
    errors: parsed.errors,
    operationErrors: parsed.operationErrors,
    fix: fixForStatus(r.status, parsed.operationErrors.length > 0),
    ...(apiWarn === undefined ? {} : { apiWarn: r.redact(apiWarn) }),
    ...(requestId === undefined ? {} : { requestId: r.redact(requestId) }),
    ...(parsed.bodyExcerpt === undefined ? {} : { bodyExcerpt: parsed.bodyExcerpt }),
    ...(parsed.problemType === undefined ? {} : { problemType: parsed.problemType }),
    ...(parsed.problemStatus === undefined ? {} : { problemStatus: parsed.problemStatus }),
    attempts,
  };
  const code = codeForStatus(r.status);
  const message = `${r.method} ${r.path} failed with HTTP ${r.status}: ${parsed.summary}`;
  if (r.status === 401 || r.status === 403) return new AuthError(code, message, init);
  if (r.status === 429)
    return new RateLimitError(code, message, { ...init, ...(r.resetAt === undefined ? {} : { resetAt: r.resetAt }) });
  return new HttpError(code, message, init);
}
