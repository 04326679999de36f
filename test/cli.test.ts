import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';

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

  it('prints the package version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
