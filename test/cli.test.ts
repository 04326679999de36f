import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, runCli, runCliProcess } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

describe('audience-kit', () => {
  it('as a process (bin/): exits with the code main() returns and writes on its own streams', async () => {
    const unknown = await runCliProcess(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: /m);
    const version = await runCliProcess(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('as a process, `hash` with the workers bin/ starts first: the same lines; stopped before hashing, it exits', async () => {
    const file = join(FIXTURES, 'crm-export.csv');
    const [inProcess, asProcess] = await Promise.all([
      runCli(['hash', file, '--format', 'jsonl', '--workers', '0']),
      // More workers than Node's 10 listeners a stream: their output joins the process's quietly.
      runCliProcess(['hash', file, '--format', 'jsonl', '--workers', '11']),
    ]);
    expect(asProcess.code).toBe(0);
    expect(asProcess.stderr).not.toMatch(/Warning/);
    expect(asProcess.stdout).toBe(inProcess.stdout);
    expect(asProcess.stdout.split('\n').length).toBeGreaterThan(2900);
    // The workers started for it do not keep the process: it ends with the input's error.
    const missing = await runCliProcess(['hash', join(FIXTURES, 'no-such-file.csv')], { timeoutMs: 10_000 });
    expect(missing).toMatchObject({ code: 3, signal: null });
    expect(missing.stderr).toMatch(/no-such-file\.csv/);
  });

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
      [['hash', file, '--frob'], /unknown option --frob for hash/],
      [['hash'], /Not enough non-option arguments/],
      [['hash', file, '--format', 'xml'], /Invalid values: Argument: format/],
      [['hash', file, '--map'], /Not enough arguments following: map/],
      [
        ['upload', file, '--account', 'a', '--audience', 'x', '--do-not-reach-list', 'y', '--dry-run'],
        /mutually exclusive/,
      ],
      [[], /no command given/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toMatch(
        args[0] === undefined
          ? /fix: see `audience-kit --help`/
          : new RegExp(`fix: see \`audience-kit ${args[0]} --help\``),
      );
      // The handler never ran: no output, no mapping or summary printed.
      expect(r.stdout).toBe('');
      expect(r.stderr).not.toMatch(/column mapping|rows read/);
    }
  });

  it('names an unknown option or command with the nearest one, before any missing required option', async () => {
    const cases: [string[], string, string][] = [
      [
        ['audiences', 'delete', '--acount', '1', '--audience', '2'],
        'error: unknown option --acount for audiences delete',
        'fix: did you mean --account? (`audience-kit audiences delete --help` lists the options)',
      ],
      [['upload', 'x.csv', '--dryrun'], 'error: unknown option --dryrun for upload', 'fix: did you mean --dry-run?'],
      [
        ['hash', 'x.csv', '--workrs', '0', '--frob'],
        'error: unknown options --workrs, --frob',
        'did you mean --workers?',
      ],
      [['hsh', 'x.csv'], 'error: unknown command "hsh"', 'fix: did you mean `audience-kit hash`?'],
      [
        ['hash', 'x.csv', '-qx'],
        'error: unknown option -x for hash',
        'fix: see `audience-kit hash --help` for the options',
      ],
      [
        ['audiences', 'lst'],
        'error: unknown command "lst" for audiences',
        'did you mean `audience-kit audiences list`?',
      ],
      [['audiences', 'frob'], 'error: unknown command "frob" for audiences', 'fix: use one of: list, get, create'],
      // The database URL's flag under the names people guess (not the nearest spelling, --base-url).
      [['sync', 'x.csv', '--state-url', 'u'], 'error: unknown option --state-url for sync', 'did you mean --state?'],
      [['upload', 'x.csv', '--database-url', 'u'], 'error: unknown option --database-url', 'did you mean --state?'],
      [['sync', 'x.csv', '--account-id', '1'], 'error: unknown option --account-id', 'did you mean --account?'],
    ];
    for (const [args, message, fix] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stderr).toContain(fix);
    }
    // Known options, their --no- forms and aliases are not reported; the missing one is.
    const missing = await runCli(['do-not-reach', 'create', '--name', 'x', '--no-debug']);
    expect(missing.stderr).toContain('error: Missing required argument: account');
  });

  it('--json: every command that fails before it has a result prints the same document on stdout', async () => {
    const dir = tempDir('ak-cli-json-');
    const cases: [string[], number, string][] = [
      [['hash', 'missing.csv', '-o', 'out.csv'], 3, 'input_not_found'],
      [['upload', 'missing.csv', '--sandbox'], 3, 'input_not_found'],
      [['sync', 'missing.csv', '--sandbox', '--state-dir', 'state'], 3, 'input_not_found'],
      [['audit', 'list', '--state-dir', 'empty'], 3, 'audit_log_missing'],
      [['audiences', 'list', '--account', 'a'], 2, 'config_missing_base_url'],
      [['sync', 'x.csv', '--state-url', 'u'], 2, 'invalid_option'],
    ];
    for (const [args, exitCode, code] of cases) {
      const r = await runCli([...args, '--json'], { cwd: dir, env: { AUDIENCE_KIT_CONFIG_DIR: dir } });
      const what = args.slice(0, 2).join(' ');
      expect(r.code, `${what}: ${r.stderr}`).toBe(exitCode);
      const doc = JSON.parse(r.stdout) as Record<string, unknown>;
      const fileCommand = ['hash', 'upload', 'sync'].includes(args[0] ?? '') && exitCode !== 2;
      expect(Object.keys(doc), what).toEqual(['status', 'exit_code', ...(fileCommand ? ['input'] : []), 'error']);
      expect(doc, what).toMatchObject({ status: 'failed', exit_code: exitCode, error: { code } });
      expect(Object.keys(doc.error as object), what).toEqual(['code', 'message', 'fix']);
      // The same cause on stderr, for a person watching the run.
      expect(r.stderr, what).toContain(`error: ${(doc.error as { message: string }).message}`);
    }
  });

  it("audit's help names where the log is now (not the old .audience-kit/) and exit 8", async () => {
    for (const args of [
      ['audit', '--help'],
      ['audit', 'verify', '--help'],
    ]) {
      const r = await runCli(args);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain('.audience-kit/');
      expect(r.stdout.replace(/\s+/g, ' ')).toMatch(/8 the state cannot be read/);
    }
    expect((await runCli(['audit', '--help'])).stdout.replace(/\s+/g, ' ')).toContain('~/.local/state/audience-kit');
  });

  it('prints the package version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("prints the platform's x-api-warn of a successful response as a warning line", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-api-warn': 'parameter foo is deprecated' });
      res.end(
        JSON.stringify({
          data: {
            id: 'ca1',
            name: 'Buyers',
            description: null,
            audience_size: null,
            targetable: false,
            deleted: false,
          },
          request: { params: {} },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const env = {
        AUDIENCE_KIT_ADS_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        AUDIENCE_KIT_CONSUMER_KEY: 'key',
        AUDIENCE_KIT_CONSUMER_SECRET: 'consumer-secret-value',
        AUDIENCE_KIT_ACCESS_TOKEN: 'token',
        AUDIENCE_KIT_ACCESS_TOKEN_SECRET: 'token-secret-value',
        AUDIENCE_KIT_CONFIG_DIR: join(FIXTURES, 'no-such-config-dir'),
      };
      const r = await runCli(['audiences', 'get', '--account', 'a', '--audience', 'ca1'], { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(
        'warning: platform: parameter foo is deprecated (GET /12/accounts/a/custom_audiences/ca1)',
      );
      expect(r.stderr + r.stdout).not.toMatch(/consumer-secret-value|token-secret-value/);
    } finally {
      server.close();
    }
  });
});
