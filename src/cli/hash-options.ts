/**
 * The column-mapping and normalization options shared by `hash` and `upload`: one definition of
 * the flags, one translation into the library's HashCsvOptions.
 */
import { givenLabel } from '../identifiers/labels.js';
import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { Argv, Options } from 'yargs';
import { CONSENT_POLICIES, type ConsentPolicy } from '../identifiers/consent.js';
import { ConfigError } from '../errors.js';
import { consentJson, type HashSummary } from '../hashing/summary.js';
import { DEFAULT_PHONE_FORMAT } from '../platform/identifiers/types.js';
import { IDENTIFIER_TYPES } from '../platform/users.js';
import type { NormalizeOptions } from '../identifiers/types.js';
import { encodingLabel } from '../ingest/encodings.js';
import type { CsvDelimiter } from '../ingest/preamble.js';
import { guardInput, type RejectGuardOptions } from '../hashing/reject-guard.js';
import type { ColumnMapping } from '../identifiers/mapping.js';
import type { HashCsvOptions, HashCsvRun } from '../hashing/pipeline.js';
import type { CliContext } from './context.js';
import { describeMapping, summaryHints } from './hints.js';
import { writeLine } from './output.js';

export interface HashOptionArgs {
  map?: string[];
  'only-mapped'?: boolean;
  'partner-ids-may-be-emails'?: boolean;
  'default-country'?: string;
  'country-column'?: string;
  'phone-format'?: 'e164' | 'digits';
  'phone-country-code'?: 'national' | 'included' | 'auto';
  'input-hashed'?: 'auto' | 'always' | 'never';
  'value-separator'?: string;
  delimiter?: string;
  encoding?: string;
  workers?: number;
  'max-reject-rate'?: string;
  consent?: string;
}

/** Which columns feed which identifier type. */
const COLUMN_FLAGS = {
  map: {
    type: 'string',
    array: true,
    requiresArg: true,
    describe: `Map a column to an identifier type: type=Column Name (repeatable; several columns may feed one type). Types: ${IDENTIFIER_TYPES.join(', ')}, country; and for a consent column whatever its name: opt_out (true or a date = said no), opt_in (true = said yes, false = no), consent_status (subscribed, unsubscribed…). A type named here takes exactly these columns; the other types are still detected by column name and content (see --only-mapped). Generic ids (user_id, id, external_id, username) are sent only when mapped`,
  },
  'only-mapped': {
    type: 'boolean',
    describe: 'Use only the --map columns (and --country-column): detect nothing by column name or content',
  },
  'partner-ids-may-be-emails': {
    type: 'boolean',
    describe:
      "partner_user_id values (sent unhashed) may be e-mail addresses: partner ids written as addresses. Without it, a partner_user_id column with an address among its first values is refused (exit 2), and an address further down is a rejected value (partner_user_id_email), never sent: it may be a customer's address in the wrong column",
  },
} as const satisfies Record<string, Options>;

/** The country of national phone numbers: the run's default, or a column. */
const COUNTRY_FLAGS = {
  'default-country': {
    type: 'string',
    requiresArg: true,
    describe:
      'Country (ISO code such as US, GB, USA, GBR, or country name) for national-format phone numbers of rows without their own country',
  },
  'country-column': {
    type: 'string',
    requiresArg: true,
    describe:
      "The column holding each row's country (ISO alpha-2 or alpha-3 code, or a country name; default: a column with a known country name such as Country, CC, Country/Region, Mailing Country)",
  },
} as const satisfies Record<string, Options>;

/** How values are read and written before hashing. */
const VALUE_FLAGS = {
  'phone-format': {
    choices: ['digits', 'e164'] as const,
    default: DEFAULT_PHONE_FORMAT,
    describe: "Phone form before hashing: digits (14155550123, the platform's hashing tool) or e164 (+14155550123)",
  },
  'phone-country-code': {
    choices: ['auto', 'national', 'included'] as const,
    describe:
      "Phones written without +: auto (default) takes the reading that is a valid number (447700900123 in a US row is +44 7700 900123); when the national and the calling-code readings both are, the one in the country's number ranges, else rejects it as phone_ambiguous; national: always a national number of the row's country; included: always starts with the calling code (only for files written entirely one way)",
  },
  'input-hashed': {
    choices: ['auto', 'always', 'never'] as const,
    describe:
      'auto (default): a 64-hex value is an existing SHA-256 digest, passed through; always: every value must be one; never: hash everything',
  },
  'value-separator': {
    type: 'string',
    requiresArg: true,
    describe:
      'Split cells holding several values on this string (default: a column whose first rows clearly hold lists joined by , ; or | is split, and the mapping says so; other cells are one value)',
  },
} as const satisfies Record<string, Options>;

/** How the file is read, when the run stops, and on how many threads. */
const READING_FLAGS = {
  delimiter: {
    type: 'string',
    requiresArg: true,
    describe: 'CSV delimiter: , ; | or tab (default: detected)',
  },
  encoding: {
    type: 'string',
    requiresArg: true,
    describe:
      'Text encoding of the file: utf-8, utf-16le, windows-1252 (latin1), windows-1250, iso-8859-2, shift_jis, euc-jp, gbk, big5, euc-kr... (default: the byte-order mark, else detected: UTF-8, or the legacy encoding whose text reads as its languages; a file that reads well in two is refused, naming both)',
  },
  'max-reject-rate': {
    type: 'string',
    requiresArg: true,
    describe:
      'Fail (exit 3) when more than this share of the values is rejected, e.g. 5% (upload: before sending what is left). A run that produces no user fails too',
  },
  workers: {
    type: 'number',
    requiresArg: true,
    describe: 'Worker threads for hashing (default: number of cores; 0 = main thread only)',
  },
} as const satisfies Record<string, Options>;

/** What the consent and opt-out columns decide. */
const CONSENT_FLAGS = {
  consent: {
    type: 'string',
    requiresArg: true,
    describe:
      'What consent and opt-out columns (Email Opt Out, Unsubscribed, Marketing status, OPT_IN, Einwilligung…: the mapping lists them) decide for a custom audience: exclude (default: a row that says no is not sent), require-consent (only rows that say yes are sent), include (every row is sent; each run says so), do-not-reach=LIST (upload and sync: as exclude, and the rows that say no go to that do-not-reach list in the same run). Do-not-reach lists are never filtered. See docs/privacy.md',
  },
} as const satisfies Record<string, Options>;

/** Add the mapping/normalization/CSV options to a command's builder (in this order in its help). */
export function addHashOptions<T>(y: Argv<T>): Argv<T & HashOptionArgs> {
  return y.options({
    ...COLUMN_FLAGS,
    ...COUNTRY_FLAGS,
    ...VALUE_FLAGS,
    ...READING_FLAGS,
    ...CONSENT_FLAGS,
  }) as unknown as Argv<T & HashOptionArgs>;
}

const DELIMITERS: Readonly<Record<string, CsvDelimiter>> = {
  ',': ',',
  comma: ',',
  ';': ';',
  semicolon: ';',
  '|': '|',
  pipe: '|',
  tab: '\t',
  '\t': '\t',
  '\\t': '\t',
};

/**
 * Turn parsed arguments into hashCsv options. `stdin` is what `-` reads. Validation of values
 * (country, worker count) happens in the library, which throws ConfigError naming the option.
 */
export function hashOptionsFromArgs(args: HashOptionArgs, stdin?: Readable): HashCsvOptions {
  const opts: HashCsvOptions = {};
  if (args.map !== undefined) opts.map = args.map;
  if (args['only-mapped'] === true) opts.onlyMapped = true;
  if (args['partner-ids-may-be-emails'] === true) opts.partnerIdsMayBeEmails = true;
  if (args['default-country'] !== undefined) opts.defaultCountry = args['default-country'];
  if (args['country-column'] !== undefined) opts.countryColumn = args['country-column'];
  if (args['phone-format'] !== undefined) opts.phoneFormat = args['phone-format'];
  if (args['phone-country-code'] !== undefined) opts.phoneCountryCode = args['phone-country-code'];
  if (args['input-hashed'] !== undefined) opts.inputHashed = args['input-hashed'];
  if (args['value-separator'] !== undefined) {
    if (args['value-separator'] === '') {
      throw new ConfigError('invalid_option', '--value-separator is empty', {
        fix: 'pass the separator, for example --value-separator ";"',
      });
    }
    opts.valueSeparator = args['value-separator'];
  }
  if (args.delimiter !== undefined) {
    const delimiter = DELIMITERS[args.delimiter.toLowerCase()];
    if (delimiter === undefined) {
      throw new ConfigError('invalid_option', `--delimiter ${givenLabel(args.delimiter)} is not supported`, {
        fix: 'use one of: , ; | tab',
      });
    }
    opts.delimiter = delimiter;
  }
  if (args.encoding !== undefined) opts.encoding = args.encoding;
  if (args.workers !== undefined) {
    if (!Number.isInteger(args.workers) || args.workers < 0) {
      throw new ConfigError('invalid_option', '--workers must be a whole number >= 0', {
        fix: 'pass for example --workers 2',
      });
    }
    opts.workers = args.workers;
  }
  if (args.consent !== undefined) opts.consent = consentPolicyOf(args.consent).policy;
  if (stdin !== undefined) opts.stdin = stdin;
  return opts;
}

/**
 * `--consent`: one of the policies a user names (`refused` is the do-not-reach pass's, not a flag
 * value), or `do-not-reach=LIST`: `exclude`, and the rows left out go to that list too.
 */
export function consentPolicyOf(text: string): { policy: ConsentPolicy; doNotReachListId?: string } {
  const value = text.trim();
  const list = /^do-not-reach[=:](.+)$/i.exec(value)?.[1]?.trim();
  if (list !== undefined && list !== '') return { policy: 'exclude', doNotReachListId: list };
  const policy = CONSENT_POLICIES.find((p) => p === value.toLowerCase() && p !== 'refused');
  if (policy !== undefined) return { policy };
  throw new ConfigError('invalid_option', `--consent ${givenLabel(text)} is not a consent policy`, {
    fix: 'pass exclude (the default), require-consent, include, or do-not-reach=LIST_ID (upload and sync; docs/privacy.md)',
  });
}

/** `--max-reject-rate 5%` (or `5`) as a share; every run requires at least one user. */
export function rejectGuardFromArgs(args: HashOptionArgs): RejectGuardOptions {
  const text = args['max-reject-rate'];
  if (text === undefined) return { requireUsers: true };
  const percent = Number(text.trim().replace(/%$/, ''));
  if (text.trim() === '' || !Number.isFinite(percent) || percent < 0 || percent > 100) {
    throw new ConfigError('invalid_option', `--max-reject-rate ${givenLabel(text)} is not a percentage`, {
      fix: 'pass a share between 0% and 100%, for example --max-reject-rate 5%',
    });
  }
  return { maxRejectRate: percent / 100, requireUsers: true };
}

/**
 * The input guard of `hash` and `upload` over a run (options: rejectGuardFromArgs); the error's fix is
 * the summary's first hint when there is one.
 */
export function guardRun<R extends HashCsvRun>(run: R, guard: RejectGuardOptions): R {
  return guardInput(
    run,
    () => run.summary,
    guard,
    (s) => summaryHints(s, run.mapping, run.normalize)[0],
  );
}

/**
 * The source to pass to hashCsv for a `<file|->` positional: `-` for stdin (yargs hands a lone
 * `-` over as ''), otherwise the path resolved against the working directory.
 */
export function hashInputSource(file: string, cwd: string): string {
  return file === '-' || file === '' ? '-' : resolve(cwd, file);
}

/** A sending command's input (`upload`, `sync`), its flags read once: where from, its reject guard, how it is hashed. */
export interface SendInput {
  /** hashCsv's source (hashInputSource): `-` for stdin, else the path resolved. */
  source: string;
  /** The `<file>` positional as given: the run's input name. */
  file: string;
  guard: RejectGuardOptions;
  hash: HashCsvOptions;
  /** `--consent do-not-reach=LIST`: the list the rows left out of the custom audience go to, in the same run. */
  doNotReachListId?: string;
}

/** The input flags of a sending command; `guard` overrides the reject guard's defaults (sync: no user required). */
export function sendInputFromArgs(
  ctx: CliContext,
  args: HashOptionArgs & { file: string },
  guard: Partial<RejectGuardOptions> = {},
): SendInput {
  const list = args.consent === undefined ? undefined : consentPolicyOf(args.consent).doNotReachListId;
  const source = hashInputSource(args.file, ctx.cwd);
  if (list !== undefined && source === '-') {
    throw new ConfigError(
      'invalid_option',
      '--consent do-not-reach reads the input twice: stdin cannot be read again',
      {
        fix: 'write the export to a file and pass its path',
      },
    );
  }
  return {
    source,
    file: args.file,
    guard: { ...rejectGuardFromArgs(args), ...guard },
    hash: hashOptionsFromArgs(args, ctx.stdin),
    ...(list === undefined ? {} : { doNotReachListId: list }),
  };
}

/** Print (stderr) what is being read and the chosen column mapping. Column names only, never values. */
export function printInputMapping(ctx: CliContext, run: HashCsvRun): void {
  const traits = [
    `${encodingLabel(run.encoding)}${run.encoding !== 'utf-8' && run.encodingSource === 'detected' ? ' (detected)' : ''}`,
    ...(run.compressed ? ['gzip'] : []),
    `delimiter ${run.delimiter === '\t' ? 'tab' : JSON.stringify(run.delimiter)}`,
    `${run.workers} worker${run.workers === 1 ? '' : 's'}`,
  ];
  writeLine(ctx.stderr, `reading ${run.name} (${traits.join(', ')})`);
  if (run.headerLine > 1) writeLine(ctx.stderr, preambleNotice(run.headerLine));
  writeLine(ctx.stderr, describeMapping(run.mapping));
}

/** The hint lines of a finished run on stderr (`hint: ...`), for the text output. */
export function printHints(
  ctx: CliContext,
  summary: HashSummary,
  mapping: ColumnMapping,
  opts: NormalizeOptions,
  consentFiltered = true,
): void {
  for (const hint of summaryHints(summary, mapping, opts, consentFiltered)) writeLine(ctx.stderr, `hint: ${hint}`);
}

/** The lines before the header, named by number only (a note may hold personal data). */
function preambleNotice(headerLine: number): string {
  const skipped = headerLine === 2 ? 'line 1' : `lines 1-${headerLine - 1}`;
  return `header on line ${headerLine}; ${skipped} skipped as a preamble`;
}

/** How the input was read, in --json output. */
export function readingJson(run: HashCsvRun): Record<string, unknown> {
  return {
    encoding: run.encoding,
    encoding_source: run.encodingSource,
    delimiter: run.delimiter,
    compressed: run.compressed,
    header_line: run.headerLine,
    preamble_lines: run.headerLine - 1,
  };
}

/** The column mapping in --json output: snake_case, column labels only (never a cell that looks like data). */
export function mappingJson(mapping: ColumnMapping): Record<string, unknown> {
  return {
    consent: (mapping.consent ?? []).map((c) => ({
      column: c.label,
      kind: c.kind,
      from: c.mapped === true ? 'map' : c.content === true ? 'content' : 'name',
      ...(c.nameKind === undefined ? {} : { name_kind: c.nameKind }),
    })),
    columns: mapping.columns.map((c) => ({
      column: c.label,
      type: c.type,
      from: c.mapped === true ? 'map' : c.content === true ? 'content' : 'name',
      separator: c.separator ?? null,
      ...(c.typeLabel === undefined ? {} : { type_column: c.typeLabel }),
    })),
    country_column: mapping.country?.label ?? null,
    ignored: mapping.ignored,
    not_used: (mapping.notUsed ?? []).map((c) => ({ column: c.label, reason: c.reason })),
  };
}

/** A HashSummary in --json output: snake_case keys, unrecognized countries as a list. */
export function hashSummaryJson(summary: HashSummary): Record<string, unknown> {
  const notes = summary.notes;
  return {
    rows: summary.rows,
    users: summary.users,
    empty_rows: summary.emptyRows,
    malformed: summary.malformed,
    types: summary.types,
    rejects: summary.rejects,
    phone_code_without_plus: notes.phoneCodeWithoutPlus,
    phone_two_readings: notes.phoneTwoReadings,
    phone_code_without_country: notes.phoneCodeWithoutCountry,
    unknown_countries: Object.entries(notes.unknownCountries).map(([value, rows]) => ({ value, rows })),
    unknown_countries_other: notes.unknownCountriesOther,
    several_values: notes.severalValues ?? null,
    consent: summary.consent === undefined ? null : consentJson(summary.consent),
  };
}
