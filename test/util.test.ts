import { getEventListeners } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backoffMs, isAborted, sleep } from '../src/util/clock.js';
import { collectGarbage } from '../src/util/collect.js';
import { fileSha256, sha256Hex } from '../src/util/sha256.js';
import { tempDir } from './helpers/temp.js';

describe('sleep', () => {
  it('leaves no abort listener behind on the signal it was given', async () => {
    const controller = new AbortController();
    for (let i = 0; i < 50; i++) await sleep(0, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('rejects with the reason when aborted, before or during the wait', async () => {
    const controller = new AbortController();
    const waiting = sleep(60_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await expect(sleep(0, controller.signal)).rejects.toThrow('stop');
    expect(isAborted(controller.signal)).toBe(true);
    expect(isAborted(undefined)).toBe(false);
  });
});

describe('backoffMs', () => {
  it('is equal jitter: between half and all of the capped exponential', () => {
    const o = { baseMs: 500, maxMs: 30_000 };
    expect(backoffMs(1, o, () => 0)).toBe(250);
    expect(backoffMs(1, o, () => 1)).toBe(500);
    expect(backoffMs(3, o, () => 0.5)).toBe(1500);
    expect(backoffMs(20, o, () => 1)).toBe(30_000);
  });
});

describe('sha256', () => {
  it('hashes strings as UTF-8 and bytes as they are (FIPS 180-2 "abc")', () => {
    const abc = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
    expect(sha256Hex('abc')).toBe(abc);
    expect(sha256Hex(Buffer.from('abc'))).toBe(abc);
    expect(sha256Hex('é')).toBe(sha256Hex(Buffer.from('é', 'utf8')));
  });

  it('streams a file', async () => {
    const path = join(tempDir(), 'abc.txt');
    writeFileSync(path, 'abc');
    expect(await fileSha256(path)).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('collectGarbage', () => {
  it('runs a full collection: an object nothing refers to is gone after it', async () => {
    const ref = ((): WeakRef<object> => new WeakRef({ big: new Array(1000).fill(0) }))();
    // A WeakRef keeps its target until the job that made it has ended.
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(ref.deref()).toBeUndefined();
  });
});
