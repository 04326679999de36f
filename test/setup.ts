import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, expect, inject } from 'vitest';
import { fileScopedDirs } from './helpers/temp.js';

// Each test file gets its own TMPDIR under the run's root (global-setup.ts), inherited by the
// processes it starts. When the file ends, whatever a test left there fails the file: every
// test removes what it creates.
const fileTmp = mkdtempSync(join(inject('tmpRoot'), `${basename(expect.getState().testPath ?? 'file')}-`));
process.env['TMPDIR'] = fileTmp;

afterAll(() => {
  for (const dir of fileScopedDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  const left = readdirSync(fileTmp);
  rmSync(fileTmp, { recursive: true, force: true });
  if (left.length > 0) throw new Error(`left behind in the temporary directory: ${left.join(', ')}`);
});
