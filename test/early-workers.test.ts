import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { earlyWorkers } from '../src/cli/early-workers.js';

describe('the workers bin/ starts before the CLI loads', () => {
  it('are those `hash` will use: the cores by default, or as many as --workers says in either form', () => {
    expect(earlyWorkers(['hash', 'a.csv'])).toBe(availableParallelism());
    expect(earlyWorkers(['--debug', 'hash', 'a.csv', '-o', 'out.jsonl'])).toBe(availableParallelism());
    expect(earlyWorkers(['hash', 'a.csv', '--workers', '3'])).toBe(3);
    expect(earlyWorkers(['hash', '--workers=5', 'a.csv'])).toBe(5);
    expect(earlyWorkers(['hash', 'a.csv', '--workers', '256'])).toBe(256);
  });

  it('are none for another command, for help, or for a value the CLI refuses', () => {
    for (const args of [
      ['upload', 'a.csv', '--audience', '1'],
      ['sync', 'a.csv'],
      [],
      ['hash', '--help'],
      ['hash', 'a.csv', '-h'],
      ['hash', 'a.csv', '--workers', '0'],
      ['hash', 'a.csv', '--workers', '-1'],
      ['hash', 'a.csv', '--workers', '257'],
      ['hash', 'a.csv', '--workers', '1.5'],
      ['hash', 'a.csv', '--workers', 'two'],
      ['hash', 'a.csv', '--workers='],
      ['hash', 'a.csv', '--workers'],
    ])
      expect(earlyWorkers(args), args.join(' ')).toBe(0);
  });
});
