import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { constants, createWriteStream, openSync, type WriteStream } from 'node:fs';
import { lstat, rename, stat, unlink } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import type { Argv, CommandModule } from 'yargs';
import { ConfigError, EnvironmentError, environmentError } from '../../errors.js';
import type { CsvBadRow } from '../../ingest/csv.js';
import { csvCell } from '../../ingest/csv-text.js';
import { hashCsvHeader, mappedTypes } from '../../hashing/chunk.js';
import { hashCsv, type HashCsvOptions, type HashCsvRun } from '../../hashing/pipeline.js';
import { makeDirs } from '../../util/make-dirs.js';
import { guardFailure, type RejectGuardOptions } from '../../hashing/reject-guard.js';
import type { Reject } from '../../identifiers/types.js';
import type { CliContext } from '../context.js';
import { HashProgress } from '../hash-progress.js';
import { renderHashSummary } from '../hash-summary.js';
import { summaryHints } from '../hints.js';
import {
  addHashOptions,
  consentPolicyOf,
  hashInputSource,
  hashOptionsFromArgs,
  hashSummaryJson,
  mappingJson,
  printHints,
  printInputMapping,
  readingJson,
  rejectGuardFromArgs,
  type HashOptionArgs,
} from '../hash-options.js';
import { exitCodesEpilogue, handle, stderrColumns, writeJson, writeLine, type GlobalArgs } from '../output.js';
import { type CliErrorCode, EXIT_CODES } from '../exit-codes.js';

interface HashArgs extends GlobalArgs, HashOptionArgs {
  file: string;
  quiet?: boolean;
  format: 'csv' | 'jsonl';
  output: string;
  rejects?: string;
}

/** An output (stdout or a file written under a temporary name, renamed only on success). */
interface Output {
  /** Write with backpressure; throws the stream's error (EPIPE, ENOSPC...) instead of losing it. */
  write(data: string | Uint8Array): Promise<void>;
  /** Ends the stream: every byte written, or the write's error (a full disk shows here). */
  finish(): Promise<void>;
  /** Puts a finished file in place (renames it); only once every output has finished. */
  publish(): Promise<void>;
  abort(): Promise<void>;
}

/** How an output ends: `finish` flushes and closes it, `publish` puts it in place. */
interface Ending {
  finish: () => Promise<void>;
  publish: () => Promise<void>;
  abort: () => Promise<void>;
}

function output(stream: Writable, name: string, ending: Ending): Output {
  let failure: unknown;
  // EPIPE stays as it is (a reader that went away); anything else (a full disk) names the output.
  const fail = (error: unknown): unknown =>
    (failure ??= (error as NodeJS.ErrnoException).code === 'EPIPE' ? error : environmentError(error, 'writing', name));
  // Never removed: a write still in flight when abort() destroys the stream fails afterwards
  // (ERR_STREAM_DESTROYED), and an 'error' without a listener would crash the process.
  stream.on('error', fail);
  return {
    write: async (data) => {
      if (failure !== undefined) throw failure;
      try {
        // stdout redirected to a file writes synchronously and throws here.
        if (data.length > 0 && !stream.write(data)) await once(stream, 'drain');
      } catch (error) {
        throw fail(error);
      }
    },
    finish: async () => {
      await ending.finish().catch((error: unknown) => {
        throw fail(error);
      });
      if (failure !== undefined) throw failure;
    },
    publish: () =>
      ending.publish().catch((error: unknown) => {
        throw fail(error);
      }),
    abort: ending.abort,
  };
}

/** Finishes every output, then publishes them: no file is put in place while another can still fail. */
async function commitAll(outputs: readonly Output[]): Promise<void> {
  for (const o of outputs) await o.finish();
  for (const o of outputs) await o.publish();
}

const nothing = async (): Promise<void> => undefined;

/** `-` (stdout), a device or pipe written directly, or a file replaced once the output is complete. */
async function openOutput(ctx: CliContext, path: string, option: string): Promise<Output> {
  if (path === '-') return output(ctx.stdout, 'stdout', { finish: nothing, publish: nothing, abort: nothing });
  const target = resolve(ctx.cwd, path);
  const existing = await stat(target).catch(() => undefined);
  if (existing?.isFile() === true && (await lstat(target)).isSymbolicLink()) {
    // A link to a regular file: a planted link must not decide which file gets our output.
    throw new EnvironmentError('path_is_symlink', `${option} ${path} is a symbolic link to a file: refused`, {
      path: target,
      fix: 'pass the real path of the file (or remove the link)',
    });
  }
  if (existing !== undefined && !existing.isFile()) {
    // A device or pipe (/dev/null, a FIFO) cannot be replaced by a rename: write to it directly.
    // Aborting does not wait for it to close: a reader that stopped reading would hold the error.
    const direct = createWriteStream(target);
    return output(direct, `${option} ${path}`, {
      finish: () => finished(direct.end()),
      publish: nothing,
      abort: async () => void direct.destroy(),
    });
  }
  await makeParent(ctx, target, option);
  return replacingOutput(target, `${option} ${path}`);
}

/**
 * The output's missing parent directories (`-o out/hashed.csv` in a fresh checkout) are created,
 * 0700 as they will hold digests, and named on stderr: nothing is made without saying so.
 */
async function makeParent(ctx: CliContext, target: string, option: string): Promise<void> {
  const parent = dirname(target);
  const found = await stat(parent).catch(() => undefined);
  if (found?.isDirectory() === true) return;
  const inTheWay = (cause?: unknown): ConfigError<CliErrorCode> =>
    new ConfigError<CliErrorCode>('output_not_writable', `${option}: a file is in the way of the directory ${parent}`, {
      fix: 'pass a path whose directories exist or can be created',
      cause,
    });
  if (found !== undefined) throw inTheWay();
  let made: string | undefined;
  try {
    // Not Node's recursive mkdir: it never returns where the file system answers ENOENT (/proc/x).
    made = makeDirs(parent, 0o700);
  } catch (error) {
    // A file where a directory should be is a wrong option; a read-only or full disk, the machine's.
    const errno = (error as NodeJS.ErrnoException).code;
    throw errno === 'ENOTDIR' || errno === 'EEXIST' ? inTheWay(error) : environmentError(error, 'creating', parent);
  }
  if (made !== undefined)
    writeLine(ctx.stderr, `created directory ${relative(ctx.cwd, parent) || parent} for ${option}`);
}

/** Written to a temporary file beside `target`, renamed over it on commit, deleted on abort. */
function replacingOutput(target: string, name: string): Output {
  // An unpredictable name, created exclusively, never through a link, 0600 (it holds digests).
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.partial`);
  let fd: number;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    // A directory gone since makeParent is a wrong option; a full, read-only or unwritable one, the machine's.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw environmentError(error, 'writing in', dirname(target));
    throw new ConfigError<CliErrorCode>(
      'output_not_writable',
      `${name} cannot be written (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      {
        fix: 'pass a path in an existing, writable directory',
        cause: error,
      },
    );
  }
  const stream: WriteStream = createWriteStream(temp, { fd });
  return output(stream, name, {
    finish: () => finished(stream.end()),
    publish: () => rename(temp, target),
    abort: async () => {
      // Deleted once closed: a write in flight completes first and could otherwise land in a
      // file that is no longer linked (or, on Windows, make the deletion fail).
      stream.destroy();
      await finished(stream).catch(() => undefined);
      await unlink(temp).catch(() => undefined);
    },
  });
}

/** Rejected values and skipped records, in line order: line,column,type,reason (never the value). */
function rejectLines(rejects: readonly Reject[], malformed: readonly CsvBadRow[]): string {
  let out = '';
  let m = 0;
  for (const r of rejects) {
    for (; m < malformed.length && (malformed[m] as CsvBadRow).line < r.line; m++)
      out += `${(malformed[m] as CsvBadRow).line},,,malformed_${(malformed[m] as CsvBadRow).error}\n`;
    out += `${r.line},${csvCell(r.column)},${r.type},${r.reason}\n`;
  }
  for (; m < malformed.length; m++)
    out += `${(malformed[m] as CsvBadRow).line},,,malformed_${(malformed[m] as CsvBadRow).error}\n`;
  return out;
}

export function hashCommand(ctx: CliContext): CommandModule<GlobalArgs, HashArgs> {
  return {
    command: 'hash <file>',
    describe: 'Normalize and SHA-256-hash the identifiers of a CSV file, locally (nothing is sent)',
    builder: hashBuilder,
    handler: handle(ctx, async (args: HashArgs) => runHash(ctx, args)),
  };
}

/** The hash command's positional and options. */
function hashBuilder(y: Argv<GlobalArgs>): Argv<HashArgs> {
  return addHashOptions(
    y.positional('file', {
      type: 'string',
      demandOption: true,
      describe: 'CSV file (.gz accepted; UTF-8 or UTF-16 with BOM), or - for stdin',
    }),
  )
    .option('format', {
      choices: ['csv', 'jsonl'] as const,
      default: 'csv' as const,
      describe:
        'csv: one column per mapped identifier type, hashed values joined by |; jsonl: one user object per data row ({} when none is valid)',
    })
    .option('output', {
      alias: 'o',
      type: 'string',
      default: '-',
      requiresArg: true,
      describe: 'Output file (written to a temporary name, renamed when complete), or - for stdout',
    })
    .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress line (shown on a terminal only)' })
    .option('rejects', {
      type: 'string',
      requiresArg: true,
      describe:
        'Write line,column,type,reason of every rejected value and skipped row to this CSV file (never the value)',
    })
    .example(
      '$0 hash fixtures/crm-export.csv --default-country US > hashed.csv',
      'Hash the detected columns; national phones without a country are US',
    )
    .example(
      '$0 hash export.csv.gz --map email=Email --map "email=Work Email" --default-country GB --format jsonl -o users.jsonl',
      'Two email columns, national phones as GB',
    )
    .example('cat export.csv | $0 hash - --rejects rejects.csv', 'Read stdin and keep a list of rejected values')
    .epilogue(
      'Output rows are in input order, one per well-formed data row; malformed CSV records are skipped, counted in the summary and listed in --rejects. The summary goes to stderr (JSON with --json) and never contains identifiers.\n' +
        exitCodesEpilogue({
          ok: 'ok',
          usage: 'usage/config (bad option, unknown column)',
          input: 'unreadable input (missing file, no header, bad encoding or gzip)',
        }),
    ) as never;
}

/** Hashes the file to --output (and --rejects), then prints the summary. */
async function runHash(ctx: CliContext, args: HashArgs): Promise<number> {
  if (args.json === true && args.output === '-') {
    throw new ConfigError('invalid_option', '--json prints the summary on stdout, where the hashed data would go', {
      fix: 'write the data to a file with -o FILE (or drop --json for the text summary on stderr)',
    });
  }
  if (args.consent !== undefined && consentPolicyOf(args.consent).doNotReachListId !== undefined)
    throw new ConfigError('invalid_option', '--consent do-not-reach=LIST sends to a list: hash sends nothing', {
      fix: 'use it with upload or sync; hash counts what --consent exclude leaves out',
    });
  const opts = hashOptionsFromArgs(args, ctx.stdin);
  const guard = rejectGuardFromArgs(args);
  const run = await hashCsv(hashInputSource(args.file, ctx.cwd), { ...opts, emit: args.format });
  try {
    await writeHashed(ctx, args, run, opts, guard);
  } catch (error) {
    if (args.output === '-' && (error as NodeJS.ErrnoException).code === 'EPIPE') {
      // The reader went away (`| head`): stop like any Unix filter, without an error.
      writeLine(ctx.stderr, 'stdout was closed by the reader; stopped early');
      return EXIT_CODES.ok;
    }
    throw error;
  }
  if (args.json === true)
    writeJson(ctx, {
      input: run.name,
      reading: readingJson(run),
      mapping: mappingJson(run.mapping),
      summary: hashSummaryJson(run.summary),
      hints: summaryHints(run.summary, run.mapping, opts),
    });
  else {
    writeLine(ctx.stderr, renderHashSummary(run.summary));
    printHints(ctx, run.summary, run.mapping, opts);
  }
  return EXIT_CODES.ok;
}

/** Progress for a terminal's stderr, unless --quiet. */
function hashProgress(ctx: CliContext, args: HashArgs, run: HashCsvRun): HashProgress | undefined {
  if (!ctx.stderrIsTTY || args.quiet === true) return undefined;
  return new HashProgress({
    write: (t) => ctx.stderr.write(t),
    columns: () => stderrColumns(ctx),
    totalBytes: run.totalBytes,
    ...(ctx.now === undefined ? {} : { now: ctx.now }),
  });
}

/**
 * Writes the hashed rows and the rejects, committing the outputs only when the run completes
 * within the reject guard; on any failure the run is closed and the outputs removed.
 */
async function writeHashed(
  ctx: CliContext,
  args: HashArgs,
  run: HashCsvRun,
  opts: HashCsvOptions,
  guard: RejectGuardOptions,
): Promise<void> {
  const outputs: Output[] = [];
  try {
    printInputMapping(ctx, run);
    const out = await openOutput(ctx, args.output, '--output');
    outputs.push(out);
    const rejects = args.rejects === undefined ? undefined : await openOutput(ctx, args.rejects, '--rejects');
    if (rejects !== undefined) {
      outputs.push(rejects);
      await rejects.write('line,column,type,reason\n');
    }
    if (args.format === 'csv') await out.write(hashCsvHeader(mappedTypes(run.mapping)));
    const progress = hashProgress(ctx, args, run);
    try {
      for await (const chunk of run) {
        await out.write(chunk.output);
        if (rejects !== undefined) await rejects.write(rejectLines(chunk.rejects, chunk.malformed));
        progress?.update(run.summary.rows, run.bytesRead());
      }
    } finally {
      progress?.finish();
    }
    const refused = guardFailure(run.summary, guard, summaryHints(run.summary, run.mapping, opts)[0]);
    if (refused !== undefined) {
      // The data is not written, but the list of rejects is: it is what explains the failure.
      if (rejects !== undefined) await commitAll(outputs.splice(outputs.indexOf(rejects), 1));
      writeLine(ctx.stderr, renderHashSummary(run.summary));
      throw refused;
    }
    await commitAll(outputs);
  } catch (error) {
    await run.close();
    for (const o of outputs) await o.abort();
    throw error;
  }
}
