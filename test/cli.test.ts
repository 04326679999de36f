import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, runCli } from './helpers/cli.js';

describe('audience-kit (process)', () => {
  it('prints help with the exit codes and exits 0', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('audience-kit <command>');
    expect(r.stdout).toContain('Exit codes:');
  });

  it('refuses an unknown command with exit 2 and a fix', async () => {
    const r = await runCli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: /m);
    expect(r.stderr).toContain('fix:');
  });

  it('stops on every parser error with exit 2, a fix naming the command, and nothing run', async () => {
    const file = join(FIXTURES, 'semicolon.csv');
    const cases: [string[], RegExp][] = [
      [['hash', file, '--frob'], /Unknown argument: frob/],
      [['hash'], /Not enough non-option arguments/],
      [['hash', file, '--format', 'xml'], /Invalid values: Argument: format/],
      [['hash', file, '--map'], /Not enough arguments following: map/],
      [['upload', file, '--account', 'a', '--audience', 'x', '--do-not-reach-list', 'y', '--dry-run'], /mutually exclusive/],
      [[], /no command given/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toMatch(args[0] === undefined ? /fix: see `audience-kit --help`/ : new RegExp(`fix: see \`audience-kit ${args[0]} --help\``));
      // The handler never ran: no output, no mapping or summary printed.
      expect(r.stdout).toBe('');
      expect(r.stderr).not.toMatch(/column mapping|rows read/);
    }
  });

  it('prints the package version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
