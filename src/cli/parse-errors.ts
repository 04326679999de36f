/**
 * What the CLI says when yargs refuses a command line. yargs checks required options before
 * unknown ones, so `--acount 1` would be reported as a missing `--account`: the unknown option is
 * named first here, with the nearest known one, and an unknown command with the nearest command.
 */
import { givenLabel, looksLikeData } from '../identifiers/labels.js';

/** Where yargs stopped: the command path it entered and what that command knows. */
export interface ParseContext {
  /** Command words entered (`['audiences', 'delete']`). */
  commands: readonly string[];
  /** Subcommands of the last command entered (top-level commands when none). */
  subcommands: readonly string[];
  /** Option names and aliases of the command entered (globals included). */
  options: readonly string[];
}

export interface ParseProblem {
  message: string;
  fix: string;
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** The candidate nearest to `word`, if near enough to be a typo (a third of its letters, at least 1). */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = distance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best;
}

const camel = (name: string): string => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The options in `argv` (before `--`) that the command does not know, as typed (`--acount`, `-x`). */
export function unknownOptions(argv: readonly string[], known: readonly string[]): string[] {
  const names = new Set(known.flatMap((k) => [k, camel(k)]));
  const out: string[] = [];
  for (const arg of argv) {
    if (arg === '--') break;
    if (/^-[A-Za-z]+$/.test(arg)) {
      // Grouped short flags (-qh): each letter is one.
      for (const letter of arg.slice(1)) if (!names.has(letter)) out.push(`-${letter}`);
      continue;
    }
    if (!arg.startsWith('--')) continue;
    const name = arg.slice(2).split('=')[0] ?? '';
    if (names.has(name) || (name.startsWith('no-') && names.has(name.slice(3)))) continue;
    out.push(`--${name}`);
  }
  return out;
}

/** The long option names worth suggesting (yargs' camelCase copies and one-letter aliases left out). */
const suggestable = (options: readonly string[]): string[] =>
  options.filter((o) => o.length > 1 && !/[A-Z]/.test(o) && o !== '$0' && o !== '_');

/** Other names people give the PostgreSQL state's URL (`--state`). */
const STATE_URL_NAMES = new Set([
  'database-url',
  'db-url',
  'postgres-url',
  'postgresql-url',
  'pg-url',
  'database',
  'db',
]);

/**
 * The option meant by an unknown `--typed`: `--state` for a database URL's usual names, a known
 * option followed by a qualifier (`--state-url` is `--state`, `--account-id` is `--account`),
 * else the nearest name.
 */
export function suggestOption(typed: string, options: readonly string[]): string | undefined {
  const name = typed.toLowerCase();
  if (STATE_URL_NAMES.has(name) && options.includes('state')) return 'state';
  const stem = options.filter((o) => name.startsWith(`${o}-`)).sort((a, b) => b.length - a.length)[0];
  return stem ?? nearest(typed, options);
}

/**
 * The message and fix for a command line yargs refused with `message`; a value given on it that
 * looks like data (an e-mail typed as a flag's value or as an option) is not repeated.
 */
export function describeParseFailure(message: string, argv: readonly string[], at: ParseContext): ParseProblem {
  const problem = parseProblem(message, argv, at);
  return { ...problem, message: withoutDataValues(problem.message) };
}

/** Quoted values and option names in a message that look like data, each as givenLabel shows it. */
function withoutDataValues(message: string): string {
  return message
    .replace(/"([^"\n]*)"/g, (quoted, value: string) => (looksLikeData(value) ? givenLabel(value) : quoted))
    .replace(/(^|[\s,])(-{1,2}[^\s,]+)/g, (all, before: string, option: string) =>
      looksLikeData(option) ? `${before}${givenLabel(option)}` : all,
    );
}

function parseProblem(message: string, argv: readonly string[], at: ParseContext): ParseProblem {
  const path = at.commands.join(' ');
  const help = `\`audience-kit ${path === '' ? '' : `${path} `}--help\``;
  const unknown = unknownOptions(argv, at.options);
  if (unknown.length > 0) {
    const first = unknown[0] as string;
    const guess = first.startsWith('--') ? suggestOption(first.slice(2), suggestable(at.options)) : undefined;
    const list = unknown.join(', ');
    return {
      message: `unknown option${unknown.length === 1 ? '' : 's'} ${list}${path === '' ? '' : ` for ${path}`}`,
      fix: guess !== undefined ? `did you mean --${guess}? (${help} lists the options)` : `see ${help} for the options`,
    };
  }
  const word = /^(?:Unknown argument: (\S+)|Did you mean \S+\?)$/.exec(message.trim());
  const typed = word?.[1] ?? argv.filter((a) => !a.startsWith('-'))[at.commands.length];
  if (word !== null && typed !== undefined && at.subcommands.length > 0) {
    const names = at.subcommands.map((c) => c.split(' ')[0] ?? c);
    const guess = nearest(typed, names);
    const full = (name: string): string => `audience-kit ${path === '' ? '' : `${path} `}${name}`;
    return {
      message: `unknown command "${typed}"${path === '' ? '' : ` for ${path}`}`,
      fix:
        guess !== undefined
          ? `did you mean \`${full(guess)}\`? (${help} lists the commands)`
          : `use one of: ${names.join(', ')} (${help})`,
    };
  }
  return { message: message.replace(/\s*\n\s*/g, ' '), fix: `see ${help} for the options and examples` };
}
