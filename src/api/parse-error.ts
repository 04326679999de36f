/**
 * Turns a non-2xx response into one typed error with a one-line message and a fix. Four body
 * shapes are understood: the ads API's `errors` (+ `operation_errors`), the core API's Error
 * object `{code, message}`, an RFC 7807 Problem object, and anything else (status + excerpt).
 */
import { z } from 'zod';
import {
  AuthError,
  HttpError,
  RateLimitError,
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

const operationErrorSchema = z.looseObject({
  index: z.number().int(),
  message: z.string(),
  code: z.union([z.string(), z.number()]).optional(),
  user_index: z.number().int().optional(),
});

const platformBodySchema = z.looseObject({
  errors: z.array(platformErrorSchema).min(1),
  operation_errors: z.array(operationErrorSchema).optional(),
});

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
  if (hasOperationErrors) return 'Fix the users of the operation named in the message (index = operation position) and send it again';
  switch (status) {
    case 400:
      return 'Check the parameter named in the message against the documented limits';
    case 401:
      return 'Check the four credentials (AUDIENCE_KIT_CONSUMER_KEY, AUDIENCE_KIT_CONSUMER_SECRET, AUDIENCE_KIT_ACCESS_TOKEN, AUDIENCE_KIT_ACCESS_TOKEN_SECRET) and the system clock, or run `audience-kit auth login`';
    case 403:
      return 'The account is not yours or these credentials lack permission: use an ad account of the authenticated user (only the owner account manages permissions)';
    case 404:
      return 'Check the id: the account, audience, list or permission does not exist or is not visible to these credentials';
    case 408:
    case 423:
      return 'Try again in a moment';
    case 413:
      return 'Send smaller batches';
    case 429:
      return 'The rate limit was reached: wait for the window to reset and run again (uploads continue with --resume)';
    default:
      return status >= 500
        ? 'The platform failed: try again later (uploads continue with --resume)'
        : 'Check the request parameters';
  }
}

export function codeForStatus(status: number): string {
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
  bodyExcerpt?: string;
}

function describePlatformError(e: PlatformErrorDetail): string {
  return `${String(e.code)}: ${e.message}${e.parameter === undefined ? '' : ` (parameter ${e.parameter})`}`;
}

function parseBody(r: ErrorResponse): ParsedBody {
  const contentType = header(r.headers, 'content-type') ?? '';
  let json: unknown;
  try {
    json = r.body === '' ? undefined : JSON.parse(r.body);
  } catch {
    json = undefined;
  }
  const platform = platformBodySchema.safeParse(json);
  if (platform.success) {
    const errors: PlatformErrorDetail[] = platform.data.errors.map((e) => ({
      code: e.code,
      message: r.redact(e.message),
      ...(e.parameter === undefined ? {} : { parameter: e.parameter }),
      ...(e.details === undefined ? {} : { details: r.redact(e.details) }),
      ...(e.value === undefined ? {} : { value: e.value }),
    }));
    const operationErrors: OperationErrorDetail[] = (platform.data.operation_errors ?? []).map((e) => ({
      index: e.index,
      message: r.redact(e.message),
      ...(e.code === undefined ? {} : { code: e.code }),
      ...(e.user_index === undefined ? {} : { userIndex: e.user_index }),
    }));
    const first = errors[0] as PlatformErrorDetail;
    let summary = describePlatformError(first);
    if (errors.length > 1) summary += ` (+${errors.length - 1} more)`;
    const firstOp = operationErrors[0];
    if (firstOp !== undefined) {
      summary += `; operation ${firstOp.index}${firstOp.userIndex === undefined ? '' : ` user ${firstOp.userIndex}`}: ${firstOp.message}`;
      if (operationErrors.length > 1) summary += ` (+${operationErrors.length - 1} more operation errors)`;
    }
    return { errors, operationErrors, summary: oneLine(summary) };
  }
  const problem = problemSchema.safeParse(json);
  if (problem.success && (contentType.includes('problem+json') || problem.data.type.includes('/problems/') || problem.data.type === 'about:blank')) {
    const p = problem.data;
    const summary = `${r.redact(p.title)}${p.detail === undefined ? '' : `: ${r.redact(p.detail)}`}`;
    return {
      errors: [{ code: p.type, message: oneLine(summary) }],
      operationErrors: [],
      summary: oneLine(summary),
      problemType: p.type,
    };
  }
  const core = coreErrorSchema.safeParse(json);
  if (core.success) {
    const e = { code: core.data.code, message: r.redact(core.data.message) };
    return { errors: [e], operationErrors: [], summary: oneLine(describePlatformError(e)) };
  }
  const excerpt = bodyExcerpt(r.redact(r.body));
  return {
    errors: [],
    operationErrors: [],
    summary: excerpt === '' ? 'empty body' : `non-JSON body: ${excerpt}`,
    ...(excerpt === '' ? {} : { bodyExcerpt: excerpt }),
  };
}

export function buildHttpError(r: ErrorResponse): HttpError {
  const parsed = parseBody(r);
  const apiWarn = header(r.headers, 'x-api-warn');
  const requestId = header(r.headers, 'x-transaction-id') ?? header(r.headers, 'x-request-id');
  const init: HttpErrorInit = {
    status: r.status,
    method: r.method,
    path: r.path,
    errors: parsed.errors,
    operationErrors: parsed.operationErrors,
    fix: fixForStatus(r.status, parsed.operationErrors.length > 0),
    ...(apiWarn === undefined ? {} : { apiWarn: r.redact(apiWarn) }),
    ...(requestId === undefined ? {} : { requestId }),
    ...(parsed.bodyExcerpt === undefined ? {} : { bodyExcerpt: parsed.bodyExcerpt }),
    ...(parsed.problemType === undefined ? {} : { problemType: parsed.problemType }),
  };
  const code = codeForStatus(r.status);
  const message = `${r.method} ${r.path} failed with HTTP ${r.status}: ${parsed.summary}`;
  if (r.status === 401 || r.status === 403) return new AuthError(code, message, init);
  if (r.status === 429) return new RateLimitError(code, message, { ...init, ...(r.resetAt === undefined ? {} : { resetAt: r.resetAt }) });
  return new HttpError(code, message, init);
}
