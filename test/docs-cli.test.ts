import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';

// Every option that a command's --help shows is documented in docs/cli.md, in that command's section
// (or in Conventions, which holds the global, connection and listing options): options are added by
// several people, and the reference must not fall behind the CLI.

const root = join(import.meta.dirname, '..');
const cliDoc = readFileSync(join(root, 'docs/cli.md'), 'utf8');
const sandboxDoc = readFileSync(join(root, 'docs/sandbox.md'), 'utf8');

/** The text of the `## heading` section of docs/cli.md whose heading starts with `start`. */
function section(start: string): string {
  const from = cliDoc.indexOf(`\n## ${start}`);
  if (from < 0) throw new Error(`docs/cli.md has no section "## ${start}"`);
  const to = cliDoc.indexOf('\n## ', from + 1);
  return cliDoc.slice(from, to < 0 ? undefined : to);
}

const conventions = section('Conventions');
const commands: [argv: string[], docs: string[]][] = [
  [['hash'], [section('`hash`')]],
  [['upload'], [section('`upload`')]],
  [['sync'], [section('`sync`'), section('`upload`')]],
  ...['verify', 'list', 'show'].map((c): [string[], string[]] => [['audit', c], [section('`audit`')]]),
  ...['list', 'get', 'create', 'update', 'delete', 'wait'].map((c): [string[], string[]] => [
    ['audiences', c],
    [section('`audiences`')],
  ]),
  ...['list', 'create', 'delete'].map((c): [string[], string[]] => [['do-not-reach', c], [section('`do-not-reach`')]]),
  ...['list', 'grant', 'revoke'].map((c): [string[], string[]] => [['permissions', c], [section('`permissions`')]]),
  [['targeted'], [section('`targeted`')]],
  ...['schema', 'move'].map((c): [string[], string[]] => [['state', c], [section('`state`')]]),
  ...['login', 'status', 'logout'].map((c): [string[], string[]] => [['auth', c], [section('`auth`')]]),
  [['sandbox'], [sandboxDoc]],
];

describe('docs/cli.md', () => {
  it.each(commands)('documents every option of %j --help', async (argv, docs) => {
    const { code, stdout } = await runCli([...argv, '--help']);
    expect(code).toBe(0);
    const flags = new Set([...stdout.matchAll(/^ {2,}(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((m) => m[1] ?? ''));
    expect(flags.size).toBeGreaterThan(0);
    // Named in a code span: `--flag`, `-o, --output FILE`, `audiences get --account A --audience ID`.
    const named = (flag: string, doc: string) => new RegExp(`\`[^\`\n]*${flag}(?![a-z-])`).test(doc);
    const undocumented = [...flags].filter((flag) => ![...docs, conventions].some((doc) => named(flag, doc)));
    expect(undocumented).toEqual([]);
  });
});

describe('docs/cli.md sections', () => {
  it('has a section for every command of the top-level --help, and the tests above check each', async () => {
    const { stdout } = await runCli(['--help']);
    const names = [...stdout.matchAll(/^ {2}audience-kit ([a-z-]+)/gm)].map((m) => m[1] ?? '');
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((name) => !cliDoc.includes(`\n## \`${name}\``))).toEqual([]);
    expect(names.filter((name) => !commands.some(([argv]) => argv[0] === name))).toEqual([]);
    // The synopsis at the top lists them all, in the order of --help.
    const listed = /commands: ([^`]*?)\n```/.exec(cliDoc)?.[1]?.split(/,\s*/) ?? [];
    expect(listed).toEqual(names);
  });
});
