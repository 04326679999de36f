/**
 * Query-parameter reading for the sandbox routes: strict (unknown parameters are refused, so a
 * client bug shows up in tests rather than in production) and echoing what was read into
 * `request.params`, as the platform does.
 */

/** A protocol-level failure answered as the platform's error envelope (never thrown to users). */
export class SandboxApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly parameter?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function invalid(parameter: string, message: string): SandboxApiFailure {
  return new SandboxApiFailure(400, 'INVALID_PARAMETER', message, parameter);
}

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
const CURSOR_RE = /^[A-Za-z0-9_-]{1,32}$/;

export class QueryReader {
  readonly echo: Record<string, unknown>;
  private readonly read = new Set<string>();

  constructor(
    private readonly query: URLSearchParams,
    pathParams: Record<string, string>,
  ) {
    this.echo = { ...pathParams };
  }

  private raw(name: string): string | undefined {
    this.read.add(name);
    return this.query.get(name) ?? undefined;
  }

  string(name: string, opts: { required?: boolean; max?: number } = {}): string | undefined {
    const v = this.raw(name);
    if (v === undefined || v === '') {
      if (opts.required === true) throw new SandboxApiFailure(400, 'MISSING_PARAMETER', `${name} is required`, name);
      return undefined;
    }
    if (opts.max !== undefined && v.length > opts.max)
      throw invalid(name, `${name} must be at most ${opts.max} characters`);
    this.echo[name] = v;
    return v;
  }

  int(name: string, min: number, max: number, fallback: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = /^\d{1,9}$/.test(v) ? Number(v) : Number.NaN;
    if (!(n >= min && n <= max)) throw invalid(name, `${name} must be an integer from ${min} to ${max}`);
    this.echo[name] = n;
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (v !== 'true' && v !== 'false') throw invalid(name, `${name} must be true or false`);
    this.echo[name] = v === 'true';
    return v === 'true';
  }

  ids(name: string, max: number): string[] | undefined {
    const v = this.raw(name);
    if (v === undefined || v === '') return undefined;
    const ids = v.split(',').map((s) => s.trim());
    if (ids.length > max) throw invalid(name, `${name} takes at most ${max} ids; got ${ids.length}`);
    if (!ids.every((id) => ID_RE.test(id))) throw invalid(name, `${name} must be a comma-separated list of ids`);
    this.echo[name] = ids;
    return ids;
  }

  oneOf<T extends string>(name: string, values: readonly T[], opts: { required?: boolean } = {}): T | undefined {
    const v = this.string(name, opts);
    if (v === undefined) return undefined;
    if (!(values as readonly string[]).includes(v)) throw invalid(name, `${name} must be one of ${values.join(', ')}`);
    return v as T;
  }

  /** Decodes an opaque cursor into an offset; refuses with_total_count together with a cursor. */
  cursor(withTotalCount: boolean): number {
    const v = this.raw('cursor');
    if (v === undefined) return 0;
    if (withTotalCount) throw invalid('with_total_count', 'with_total_count cannot be combined with cursor');
    const decoded = CURSOR_RE.test(v) ? Buffer.from(v, 'base64url').toString('utf8') : '';
    const m = /^o:(\d{1,9})$/.exec(decoded);
    if (m === null) throw invalid('cursor', 'cursor is not a cursor this endpoint returned');
    this.echo['cursor'] = v;
    return Number(m[1]);
  }

  /** Refuses parameters the endpoint does not know. Call after reading every known one. */
  finish(): void {
    for (const name of this.query.keys()) {
      if (!this.read.has(name)) throw invalid(name, `Unknown parameter ${name.slice(0, 40)}`);
    }
  }
}

export function encodeCursor(offset: number): string {
  return Buffer.from(`o:${offset}`, 'utf8').toString('base64url');
}

export interface PageResult<T> {
  data: T[];
  next_cursor: string | null;
  total_count?: number;
}

export function pageOf<T>(items: readonly T[], offset: number, count: number, withTotalCount: boolean): PageResult<T> {
  const data = items.slice(offset, offset + count);
  const end = offset + data.length;
  return {
    data,
    next_cursor: end < items.length ? encodeCursor(end) : null,
    ...(withTotalCount ? { total_count: items.length } : {}),
  };
}
