import { describe, expect, it } from 'vitest';
import { validateClientOptions } from '../src/api/client.js';
import { oauth1Header } from '../src/api/oauth.js';
import { runCli, startCli, startCliProcess, type ProcessRun, type StartedCli } from './helpers/cli.js';

/** `audience-kit sandbox ...` as a real process (for the signals), once `ready(stdout)` holds. */
async function startProcess(args: string[], ready: (stdout: string) => boolean): Promise<ProcessRun> {
  const run = startCliProcess(['sandbox', ...args]);
  await new Promise<void>((resolve, reject) => {
    run.child.stdout.on('data', () => {
      if (ready(run.stdout())) resolve();
    });
    run.child.once('exit', (code) => reject(new Error(`sandbox exited early with ${code}: ${run.stderr()}`)));
  });
  return run;
}

/** `audience-kit sandbox ...` in-process, once `ready(stdout)` holds. */
const start = (args: string[], ready: (stdout: string) => boolean): Promise<StartedCli> =>
  startCli(['sandbox', ...args], ready);

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

async function signedGet(url: string, env: Record<string, string>): Promise<Response> {
  return fetch(url, {
    headers: {
      authorization: oauth1Header({
        method: 'GET',
        url,
        consumerKey: env['AUDIENCE_KIT_CONSUMER_KEY'] ?? '',
        consumerSecret: env['AUDIENCE_KIT_CONSUMER_SECRET'] ?? '',
        token: env['AUDIENCE_KIT_ACCESS_TOKEN'] ?? '',
        tokenSecret: env['AUDIENCE_KIT_ACCESS_TOKEN_SECRET'] ?? '',
      }),
    },
  });
}

describe('audience-kit sandbox', () => {
  it('prints paste-ready export lines and the demo objects, serves signed requests, and exits 0 on SIGINT', async () => {
    const run = await startProcess(['--seed', '5'], (out) => out.includes('Press Ctrl+C'));
    const env = Object.fromEntries(
      [...run.stdout().matchAll(/^export (AUDIENCE_KIT_[A-Z_]+)=(\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']),
    );
    expect(Object.keys(env).sort()).toEqual([
      'AUDIENCE_KIT_ACCESS_TOKEN',
      'AUDIENCE_KIT_ACCESS_TOKEN_SECRET',
      'AUDIENCE_KIT_ADS_BASE_URL',
      'AUDIENCE_KIT_API_BASE_URL',
      'AUDIENCE_KIT_CONSUMER_KEY',
      'AUDIENCE_KIT_CONSUMER_SECRET',
    ]);
    const account = /primary (\S+)/.exec(run.stdout())?.[1] ?? '';
    const audience = /demo custom audience:\s+(\S+)/.exec(run.stdout())?.[1] ?? '';
    expect(run.stdout()).toMatch(/demo do-not-reach list:\s+\S+/);

    const r = await signedGet(`${env['AUDIENCE_KIT_ADS_BASE_URL']}/12/accounts/${account}/custom_audiences`, env);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { data: Array<{ id: string; name: string }> };
    expect(body.data).toEqual([expect.objectContaining({ id: audience, name: 'Demo audience' })]);

    run.child.kill('SIGINT');
    const { code, stderr } = await run.done;
    expect(code).toBe(0);
    expect(stderr).toContain('sandbox stopped');
  });

  it('prints one JSON object with --json and stops when interrupted', async () => {
    const run = await start(['--json', '--rate-limit', '30/2', '--faults', '503=1@2'], isJson);
    const info = JSON.parse(run.stdout()) as {
      url: string;
      env: Record<string, string>;
      accounts: { primary: string; secondary: string; foreign: string };
      demo: { custom_audience_id: string; do_not_reach_list_id: string };
      rate_limit: { limit: number; window_ms: number };
    };
    expect(info.rate_limit).toEqual({ limit: 30, window_ms: 2000 });
    expect(info.env['AUDIENCE_KIT_ADS_BASE_URL']).toBe(info.url);
    // The demo list is found through the account's listing (the platform has no GET of one list).
    const r = await signedGet(`${info.url}/12/accounts/${info.accounts.primary}/do_not_reach_lists`, info.env);
    expect(r.status).toBe(200);

    // The demo audience comes with campaigns: `targeted` and the delete guard can be tried at once.
    const args = ['--account', info.accounts.primary, '--audience', info.demo.custom_audience_id];
    const servable = await runCli(['targeted', ...args, '--json'], { env: info.env });
    expect(servable.code, servable.stderr).toBe(0);
    expect((JSON.parse(servable.stdout) as { data: unknown[] }).data).toHaveLength(1);
    const all = await runCli(['targeted', ...args, '--include-inactive', '--json'], { env: info.env });
    expect((JSON.parse(all.stdout) as { data: unknown[] }).data).toHaveLength(2);
    const guarded = await runCli(['audiences', 'delete', ...args, '--yes'], { env: info.env });
    expect(guarded.code).toBe(2);
    expect(guarded.stderr).toMatch(/Demo spring sale/);

    run.interrupt();
    expect((await run.done).code).toBe(0);
  });

  it('on a wildcard --host prints a loopback base URL the client accepts, and warns on stderr', async () => {
    const run = await start(['--host', '0.0.0.0', '--json'], isJson);
    const info = JSON.parse(run.stdout()) as {
      url: string;
      env: Record<string, string>;
      accounts: { primary: string };
    };
    expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.env['AUDIENCE_KIT_ADS_BASE_URL']).toBe(info.url);
    expect(() =>
      validateClientOptions({ adsBaseUrl: info.url, credentials: { consumerKey: 'key', consumerSecret: 'secret' } }),
    ).not.toThrow();
    const r = await signedGet(`${info.url}/12/accounts/${info.accounts.primary}/custom_audiences`, info.env);
    expect(r.status).toBe(200);
    expect(run.stderr()).toContain(
      `warning: the sandbox listens on 0.0.0.0 and is reachable beyond this machine; anyone who can reach port ${new URL(info.url).port} can use it`,
    );
    for (const secret of [
      info.env['AUDIENCE_KIT_CONSUMER_SECRET'] ?? '',
      info.env['AUDIENCE_KIT_ACCESS_TOKEN_SECRET'] ?? '',
    ]) {
      expect(run.stderr()).not.toContain(secret);
    }
    run.interrupt();
    expect((await run.done).code).toBe(0);

    // A real process on the default host: no warning, and SIGTERM stops it with exit 0.
    const local = await startProcess(['--json'], isJson);
    local.child.kill('SIGTERM');
    const { code, stderr } = await local.done;
    expect(code).toBe(0);
    expect(stderr).not.toContain('warning:');
  });

  it('refuses a bad fault spec or rate limit with exit 2 and a fix', async () => {
    const faults = await runCli(['sandbox', '--faults', '503@2,boom@3']);
    expect(faults.code).toBe(2);
    expect(faults.stderr).toContain('Fault spec item 2 "boom@3": unknown kind "boom"');
    expect(faults.stderr).toContain('fix:');
    const rate = await runCli(['sandbox', '--rate-limit', 'fast']);
    expect(rate.code).toBe(2);
    expect(rate.stderr).toContain('--rate-limit must be REQUESTS/SECONDS');
  });

  it('documents in --help that it prints throwaway secrets', async () => {
    const help = await runCli(['sandbox', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/THROWAWAY credentials/);
    expect(help.stdout).toContain('--rate-limit');
  });
});
