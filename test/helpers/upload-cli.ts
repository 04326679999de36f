// What the upload CLI tests share (upload-cli.test.ts in-process, upload-signals.test.ts as processes).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Papa from 'papaparse';
import { afterAll, beforeAll } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { FIXTURES } from './cli.js';
import { tempDir } from './temp.js';

export const FIXTURE = join(FIXTURES, 'crm-export.csv');
const USERS_PATH = /\/users$/;

/** Raw identifier values of the fixture (long enough not to match by accident). */
export function rawValues(): string[] {
  const text = readFileSync(FIXTURE, 'utf8').replace(/^\uFEFF/, '');
  const parsed = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });
  const out = new Set<string>();
  for (const row of parsed.data) {
    for (const col of ['Email', 'work_email', 'Phone', 'customer_id']) {
      const v = (row[col] ?? '').trim();
      if (v.length >= 6 && !/^[0-9a-f]{64}$/i.test(v)) out.add(v);
    }
  }
  return [...out];
}

export function scanFor(texts: Record<string, string>, needles: readonly string[]): string[] {
  const hits: string[] = [];
  for (const [name, text] of Object.entries(texts)) {
    for (const n of needles) if (text.includes(n)) hits.push(`${name}: ${n.length > 3 ? `${n.slice(0, 3)}…` : n}`);
  }
  return hits;
}

/**
 * The file's sandbox and the CLI environment pointing at it. Every user batch answers after
 * 120 ms, so a run of ~30 batches lasts long enough to be interrupted or killed mid-way.
 */
export const target = {} as { sandbox: Sandbox; env: NodeJS.ProcessEnv };

/** The CLI environment pointing at `sandbox` (with a config directory of its own). */
export function sandboxEnv(sandbox: Sandbox): NodeJS.ProcessEnv {
  return {
    AUDIENCE_KIT_CONFIG_DIR: tempDir('ak-config-'),
    AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
    AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
    AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
    AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
    AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
  };
}

/** `sync <dir>/<file>` of one target, every removal allowed (the tests choose their files). */
export function syncArgs(
  t: { dir: string; account: string; audience: string; stateDir: string },
  file: string,
  ...extra: string[]
): string[] {
  const target = ['--account', t.account, '--audience', t.audience];
  return ['sync', join(t.dir, file), ...target, '--state-dir', t.stateDir, '--max-removals', '100%', ...extra];
}

/** Starts the file's slow sandbox before its tests and closes it after. */
export function useSlowSandbox(): void {
  beforeAll(async () => {
    target.sandbox = await startSandbox({ seed: 3, faults: 'slow=120%1' });
    target.env = sandboxEnv(target.sandbox);
  });
  afterAll(async () => {
    await target.sandbox?.close();
  });
}

/**
 * The user batches of the held sandbox wait at this gate (the `slow` fault's wait) while
 * `holding`: a test lets them through one by one, and a process killed while one is held was
 * certainly mid-run, whatever the machine's speed.
 */
export class RequestGate {
  holding = false;
  /** Batches that reached the gate (held or not). */
  entered = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly arrivals: (() => void)[] = [];

  readonly wait = (): Promise<void> => {
    this.entered++;
    if (!this.holding) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      for (const arrived of this.arrivals.splice(0)) arrived();
    });
  };

  /** Resolves once a batch is held (at once when one is). */
  held(): Promise<void> {
    if (this.waiting.length > 0) return Promise.resolve();
    return new Promise((resolve) => this.arrivals.push(resolve));
  }

  /** Lets the first held batch through. */
  releaseOne(): void {
    this.waiting.shift()?.();
  }

  /** Stops holding and lets every held batch through. */
  releaseAll(): void {
    this.holding = false;
    for (const release of this.waiting.splice(0)) release();
  }
}

export const gate = new RequestGate();

/** Starts the file's held sandbox (user batches wait at `gate`) before its tests and closes it after. */
export function useHeldSandbox(): void {
  beforeAll(async () => {
    target.sandbox = await startSandbox({ seed: 3, faults: 'slow%1', sleep: gate.wait });
    target.env = sandboxEnv(target.sandbox);
  });
  afterAll(async () => {
    gate.releaseAll();
    await target.sandbox?.close();
  });
}

export function newAudience(): string {
  return target.sandbox.state.createCustomAudience(target.sandbox.accounts.primary, `t${Date.now()}`).id;
}

export function uploadArgs(audienceId: string, extra: string[] = []): string[] {
  return [
    'upload',
    FIXTURE,
    '--account',
    target.sandbox.accounts.primary,
    '--audience',
    audienceId,
    '--default-country',
    'US',
    '--max-body-bytes',
    '20000',
    '--concurrency',
    '2',
    ...extra,
  ];
}

export function userRequests(audienceId: string): number {
  return target.sandbox.state.requests.filter(
    (r) => r.method === 'POST' && USERS_PATH.test(r.path) && r.path.includes(`/${audienceId}/`),
  ).length;
}

/**
 * userRequests once the sandbox has answered what a killed process left in flight: requests are
 * logged when answered, and the slow sandbox answers 120 ms late, after the process is gone.
 */
export async function settledUserRequests(audienceId: string): Promise<number> {
  for (;;) {
    const count = userRequests(audienceId);
    await new Promise((r) => setTimeout(r, 400));
    if (userRequests(audienceId) === count) return count;
  }
}

export interface JournalLine {
  type: string;
  index?: number;
}

export function journalLines(stateDir: string): JournalLine[] {
  const runs = join(stateDir, 'runs');
  if (!existsSync(runs)) return [];
  const [dir] = readdirSync(runs);
  if (dir === undefined) return [];
  const path = join(runs, dir, 'journal.jsonl');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{') && l.endsWith('}'))
    .map((l) => JSON.parse(l) as JournalLine);
}

export const confirmedIndices = (stateDir: string): number[] =>
  journalLines(stateDir)
    .filter((l) => l.type === 'confirmed')
    .map((l) => l.index as number);

export async function waitFor(cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
