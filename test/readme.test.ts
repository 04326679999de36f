import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLING_THREAD, FIXTURES, runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

// The README is what a newcomer follows literally: its quickstart commands run as written in a
// fresh directory holding only the shipped fixture, and it shows what a pipeline needs.

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The ```sh blocks of the README section whose heading starts with `heading`. */
function shellBlocks(heading: string): string[] {
  const from = README.indexOf(`\n${heading}`);
  if (from < 0) throw new Error(`README.md has no heading "${heading}"`);
  const to = README.indexOf('\n#', from + heading.length + 1);
  const section = README.slice(from, to < 0 ? undefined : to);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
}

/** A command line's words, as a shell splits them (plain and quoted words; no expansions). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}

/** Runs the README's lines in `cwd`: the CLI in-process, anything else (grep, mkdir) in a shell. */
async function follow(cwd: string, block: string): Promise<string[]> {
  const outputs: string[] = [];
  for (const line of block.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'))) {
    const command = line.replace(/\s+#.*$/, '');
    if (command.startsWith('npx audience-kit ')) {
      // The hashing on the calling thread: the commands' subject here is the README, not the workers.
      const r = await runCli([...words(command).slice(2), ...CALLING_THREAD], { cwd, defaultMinimum: true });
      expect(r.code, `${command}\n${r.stderr}`).toBe(0);
      outputs.push(r.stdout + r.stderr);
    } else {
      const r = spawnSync('sh', ['-c', command], { cwd, encoding: 'utf8' });
      expect(r.status, `${command}\n${r.stderr}`).toBe(0);
    }
  }
  return outputs;
}

describe('README.md', () => {
  it('quickstart: hash, then the two syncs, run as written in a fresh directory (out/ made by the tool)', async () => {
    const cwd = tempDir('ak-readme-');
    mkdirSync(join(cwd, 'fixtures'));
    copyFileSync(join(FIXTURES, 'crm-export.csv'), join(cwd, 'fixtures', 'crm-export.csv'));
    const [hash = ''] = shellBlocks('### 1. Hash');
    const [hashed = ''] = await follow(cwd, hash);
    expect(hashed).toContain('created directory out for --output');
    expect(readFileSync(join(cwd, 'out', 'hashed.csv'), 'utf8').split('\n')[0]).toBe('email,phone_number');
    const [sync = ''] = shellBlocks('### 3. Sync');
    const [first = '', second = ''] = await follow(cwd, sync);
    // What the README says of the second sync: the 10 customers gone removed, nobody else sent.
    const users = Number(/^snapshot +0 -> (\d+) users/m.exec(first)?.[1]);
    expect(second).toMatch(new RegExp(`plan +\\+0 added, -10 removed, ~0 refreshed, ${users - 10} unchanged`));
  });

  it('shows the PostgreSQL state (--state postgres://) in a command', () => {
    const commands = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(commands.some((c) => /npx audience-kit sync .*--state postgres:\/\//.test(c))).toBe(true);
  });
});
