import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from './helpers/temp.js';

// The examples are type-checked with the rest (tsconfig.json includes examples/); these run the
// self-contained ones as a user would (`import … from 'audience-kit'` resolves to the built package)
// and check what they print, so the library guide's code cannot drift from the library.

/**
 * Runs an example as a user of the installed package would: from `cwd` (default a fresh, empty
 * directory: a new project has none of this repository's files), with `args`.
 */
async function runExample(
  name: string,
  args: string[] = [],
  cwd = tempDir('ak-example-cwd-'),
): Promise<{ out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.map(String).join(' ')));
  const error = vi
    .spyOn(console, 'error')
    .mockImplementation((...a: unknown[]) => void err.push(a.map(String).join(' ')));
  const argv = process.argv;
  const from = process.cwd();
  process.argv = [argv[0] ?? 'node', `examples/${name}.ts`, ...args];
  process.chdir(cwd);
  try {
    await import(`../examples/${name}.ts`);
  } finally {
    process.chdir(from);
    process.argv = argv;
    log.mockRestore();
    error.mockRestore();
  }
  return { out: out.join('\n'), err: err.join('\n') };
}

describe('examples read only what the package ships', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    files: string[];
    exports: Record<string, string | Record<string, string>>;
  };
  const shipped = (path: string): boolean =>
    pkg.files.some((f) => path.replace(/^\.\//, '') === f || path.replace(/^\.\//, '').startsWith(`${f}/`));

  it.each(readdirSync(new URL('../examples/', import.meta.url)).filter((f) => f.endsWith('.ts')))('%s', (file) => {
    const code = readFileSync(new URL(`../examples/${file}`, import.meta.url), 'utf8');
    // A path of this repository (fixtures/…, ./data.csv) does not exist in a user's project.
    const literals = [...code.matchAll(/'([^'\n]*)'/g)].map((m) => m[1] ?? '');
    const paths = literals.filter(
      (l) => !l.startsWith('audience-kit') && /^(\.{1,2}\/|fixtures\/|test\/|src\/)|\.(csv|tsv|gz|json)$/.test(l),
    );
    expect(paths).toEqual([]);
    // What it takes from the package resolves, through `exports`, to a file the package ships.
    for (const [, sub] of code.matchAll(/'audience-kit(\/[^']*)?'/g)) {
      const target = pkg.exports[`.${sub ?? ''}`];
      const path = typeof target === 'string' ? target : target?.default;
      expect(path, `audience-kit${sub ?? ''}`).toBeDefined();
      expect(shipped(path ?? ''), `${path} in package.json files`).toBe(true);
    }
  });
});

describe('examples', () => {
  afterEach(() => {
    process.exitCode = undefined;
  });

  it('hash-records.ts hashes rows held in memory', async () => {
    const { out } = await runExample('hash-records');
    expect(out).toContain('phone_needs_country');
    expect(out).toContain('"partner_user_id":["c-1"]');
    expect(out).toContain('email_invalid');
  });

  it('hash-csv.ts writes one JSON line per user (without arguments: the shipped fixture, to users.jsonl)', async () => {
    const dir = tempDir('ak-example-');
    const { err } = await runExample('hash-csv', [], dir);
    const lines = readFileSync(join(dir, 'users.jsonl'), 'utf8').trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(2900);
    expect(JSON.parse(lines[0] ?? '')).toHaveProperty('email');
    expect(err).toContain('column mapping');
    expect(err).toContain('rows read 2991');
  });

  it('upload-sandbox.ts completes through injected faults', async () => {
    const { out } = await runExample('upload-sandbox');
    expect(out).toMatch(/^completed \d+\/\d+ batches retries [1-9]/m);
    expect(out).toMatch(/sandbox audience size [1-9]\d*/);
    expect(process.exitCode).toBeUndefined();
  });

  it('sync-sandbox.ts sends only the changes on the second sync', async () => {
    const { out } = await runExample('sync-sandbox');
    expect(out).toContain('day 1: completed first sync true +200 -0 unchanged 0');
    expect(out).toContain('day 2: completed first sync false +5 -10 unchanged 190');
    expect(out).toContain('sandbox audience size 195');
    expect(process.exitCode).toBeUndefined();
  });

  it('consent-do-not-reach.ts keeps the 30 who opted out off the audience and puts them on the list, in one call', async () => {
    const { out } = await runExample('consent-do-not-reach');
    expect(out).toContain('completed: audience +120, said no 30');
    expect(out).toContain('do-not-reach list: completed +30');
    expect(out).toContain('sandbox audience size 120 list size 30');
    expect(process.exitCode).toBeUndefined();
  });

  it('errors.ts explains a configuration error and a 404', async () => {
    const { err } = await runExample('errors');
    expect(err).toContain('code config_invalid');
    expect(err).toContain('code api_not_found: check the account');
  });
});
