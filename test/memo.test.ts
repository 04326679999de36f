import { describe, expect, it } from 'vitest';
import { memoByKey } from '../src/util/memo.js';

describe('memoByKey', () => {
  it('computes each key once, undefined answers included, and answers every key with its own value', () => {
    const calls: string[] = [];
    const f = memoByKey((key: string) => {
      calls.push(key);
      return key === 'none' ? undefined : key.toUpperCase();
    });
    const asked = ['de', 'de', 'fr', 'de', 'none', 'none', 'fr', 'none'];
    expect(asked.map(f)).toEqual(['DE', 'DE', 'FR', 'DE', undefined, undefined, 'FR', undefined]);
    expect(calls).toEqual(['de', 'fr', 'none']);
  });
});
