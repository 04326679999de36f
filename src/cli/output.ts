import { basename } from 'node:path';
import { AudienceKitError, environmentError, HttpError } from '../errors.js';
import { stateFailure } from '../state/fs.js';
import type { CliContext } from './context.js';
import { withFlagNames } from './flag-names.js';
import { EXIT_CODES, exitCodeFor } from './exit-codes.js';

export type ExitCodeName = keyof typeof EXIT_CODES;

/** What each exit code means for a command: `Exit codes: 0 ok; 2 ...`, for its help's epilogue. */
export function exitCodesEpilogue(meanings: Partial<Record<ExitCodeName, string>>): string {
  const codes = (Object.entries(meanings) as Array<[ExitCodeName, string]>)
    .map(([name, text]) => [EXIT_CODES[name], text] as const)
    .sort(([a], [b]) => a - b);
  return `Exit codes: ${codes.map(([code, text]) => `${code} ${text}`).join('; ')}.`;
}

export interface GlobalArgs {
  debug?: boolean;
  json?: boolean;
  /** The input file of the commands that read one (hash, upload, sync). */
  file?: string;
}

/** The input as a report names it: its file name, or `-` for stdin. */
export const inputName = (file: string): string => (file === '-' || file === '' ? '-' : basename(file));

export function writeLine(stream: NodeJS.WritableStream, line = ''): void {
  stream.write(`${line}\n`);
}

/**
 * Print the one JSON document of a command on stdout, keys in snake_case whatever the library
 * objects use (`windowMs` -> `window_ms`), so every command has one key style. Only lower-to-
 * upper boundaries change: environment variable names and codes stay as they are.
 */
export function writeJson(ctx: CliContext, value: unknown): void {
  writeLine(ctx.stdout, JSON.stringify(snakeKeys(value), null, 2));
}

const snakeKey = (key: string): string => key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[/[a-z0-9][A-Z]/.test(k) ? snakeKey(k) : k] = snakeKeys(v);
  return out;
}

export interface Column<Row> {
  header: string;
  value: (row: Row) => string | number | boolean | null | undefined;
  align?: 'left' | 'right';
}

/** A plain-text table: headers, a rule, aligned cells. Numbers align right by default. */
export function renderTable<Row>(rows: readonly Row[], columns: readonly Column<Row>[]): string {
  const cells = rows.map((row) => columns.map((c) => formatCell(c.value(row))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => (r[i] ?? '').length)));
  const alignOf = (i: number, sample: unknown): 'left' | 'right' =>
    columns[i]?.align ?? (typeof sample === 'number' ? 'right' : 'left');
  const pad = (text: string, i: number, align: 'left' | 'right'): string =>
    align === 'right' ? text.padStart(widths[i] ?? 0) : text.padEnd(widths[i] ?? 0);
  const sampleRow = rows[0];
  const aligns = columns.map((c, i) => alignOf(i, sampleRow === undefined ? '' : c.value(sampleRow)));
  const lines = [
    columns.map((c, i) => pad(c.header, i, aligns[i] ?? 'left')).join('  '),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...cells.map((r) => r.map((cell, i) => pad(cell, i, aligns[i] ?? 'left')).join('  ')),
  ];
  return lines.map((l) => l.trimEnd()).join('\n');
}

/** Two-column key/value listing for a single object. */
export function renderFields(fields: ReadonlyArray<readonly [string, unknown]>): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${k.padEnd(width)}  ${formatCell(v)}`).join('\n');
}

function formatCell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.join(', ');
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

/**
 * Print an error as one line of cause plus one line of fix (stack only with --debug) and
 * return the documented exit code. Never prints request headers or bodies.
 */
export function reportError(ctx: CliContext, error: unknown, debug: boolean): number {
  error = shownError(error);
  if (error instanceof AudienceKitError) {
    writeLine(ctx.stderr, `error: ${error.message}`);
    if (error instanceof HttpError) {
      for (const e of error.errors.slice(0, 5)) {
        const detail = `${e.code}: ${e.message}${e.parameter === undefined ? '' : ` (parameter ${e.parameter})`}`;
        // The message usually quotes the first platform error already: say it once.
        if (!error.message.includes(detail)) writeLine(ctx.stderr, `  platform: ${detail}`);
      }
      if (error.apiWarn !== undefined) writeLine(ctx.stderr, `  platform warning: ${error.apiWarn}`);
    }
    if (error.fix !== undefined) writeLine(ctx.stderr, `  fix: ${error.fix}`);
  } else {
    const message = error instanceof Error ? error.message : String(error);
    writeLine(ctx.stderr, `error: unexpected failure: ${message}`);
    writeLine(ctx.stderr, '  fix: run again with --debug and report the output (it contains no secrets)');
  }
  if (debug && error instanceof Error && error.stack !== undefined) {
    writeLine(ctx.stderr, error.stack);
  }
  return exitCodeFor(error);
}

/** An error as the CLI shows it: a raw fs failure as the environment's, library option names as flags. */
const shownError = (error: unknown): unknown => withFlagNames(fromFsError(error));

/**
 * A command that failed before it had a result: the error on stderr (reportError) and, with
 * --json, on stdout the one document every command prints then, `{status: "failed", exit_code,
 * input?, error: {code, message, fix?}}` (a report that exists carries the same fields). The
 * reports' module (and the API client it names) is loaded only then: `hash` runs without it.
 */
export async function reportFailure(ctx: CliContext, error: unknown, args: GlobalArgs): Promise<number> {
  const shown = shownError(error);
  const exitCode = reportError(ctx, shown, args.debug === true);
  if (args.json === true) {
    const { asKitError, errorJson } = await import('../upload/report.js');
    writeJson(ctx, {
      status: 'failed',
      exit_code: exitCode,
      ...(args.file === undefined ? {} : { input: inputName(args.file) }),
      error: errorJson(asKitError(shown)),
    });
  }
  return exitCode;
}

const ENVIRONMENT_ERRNOS = new Set([
  'ENOSPC',
  'EDQUOT',
  'EACCES',
  'EPERM',
  'EROFS',
  'ELOOP',
  'EISDIR',
  'ENOTDIR',
  'EIO',
]);

/**
 * An fs failure that escaped as a raw Node error (an output stream, a state file) is the
 * environment's, not a bug: one that names its path always, one without a path for the errnos above.
 */
function fromFsError(error: unknown): unknown {
  const raw = error instanceof AudienceKitError && error.code === 'internal' ? error.cause : error;
  const at = (raw as NodeJS.ErrnoException | undefined)?.path;
  if (typeof at === 'string') return stateFailure(error, at);
  const e = error as NodeJS.ErrnoException | undefined;
  if (e?.code === undefined || e.syscall === undefined || !ENVIRONMENT_ERRNOS.has(e.code)) return error;
  return environmentError(error, e.syscall === 'open' ? 'opening' : 'writing', e.path ?? 'a file');
}

/** The width of the terminal on stderr (for progress lines), or `fallback`. */
export function stderrColumns(ctx: CliContext, fallback = 80): number {
  return (ctx.stderr as Partial<NodeJS.WriteStream>).columns ?? fallback;
}

/**
 * A reader of stdout that goes away (EPIPE) no longer ends the process at once (processContext's
 * default, right for `sandbox | head -1`): the command finishes its work, records it and exits
 * with its own code. For commands whose stdout is only their final report (upload).
 */
export function finishWhenStdoutCloses(ctx: CliContext): void {
  ctx.stdout.on('error', (error: NodeJS.ErrnoException) => {
    // Any other failure (a full disk under `> report.json`) lost the report: exit 8 once done.
    if (error.code !== 'EPIPE') stdoutFailures.set(ctx, environmentError(error, 'writing', 'stdout'));
  });
}

const stdoutFailures = new WeakMap<CliContext, unknown>();

/**
 * Wrap a command handler: run it, map any error to its exit code. Handlers stay thin: parse
 * arguments into library options, call the library, render the result.
 */
export function handle<Args extends GlobalArgs>(
  ctx: CliContext,
  run: (args: Args) => Promise<number | void>,
): (args: Args) => Promise<void> {
  return async (args) => {
    try {
      const code = await run(args);
      // A write's error is emitted on a later tick: let the report's last write report it.
      await new Promise((resolve) => setImmediate(resolve));
      const lost = stdoutFailures.get(ctx);
      ctx.exitCode = lost === undefined ? (code ?? EXIT_CODES.ok) : reportError(ctx, lost, args.debug === true);
    } catch (error) {
      ctx.exitCode = await reportFailure(ctx, error, args);
    }
  };
}
