import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../src/state/memory-backend.js';
import { MirrorStore } from '../src/state/mirror.js';
import type { StateStore } from '../src/state/store.js';
import { openSyncState, resolveStorage } from '../src/upload/state-option.js';
import { tempDir } from './helpers/temp.js';

// `state` is a PostgreSQL URL or a store object the caller opened: which one the entry resolved
// is said by the storage itself, not guessed from the object's members.
describe('a run’s storage', () => {
  it('a store object is used as given, whatever its members look like to `in` (a proxy of a mock)', async () => {
    const store = new MirrorStore(new MemoryBackend());
    // Its members through `get`, as a mocking proxy serves them; `in` sees none of them.
    const given = new Proxy(store, { has: () => false, get: (s, k) => Reflect.get(s, k, s) as unknown }) as StateStore;
    const state = await openSyncState(resolveStorage({ state: given }, 'syncAudience'));
    expect(state.store).toBe(given);
    expect(state.audit).toBe(store.audit);
    await state.close();
    await store.close();
  });

  it('a directory and a URL are opened by the entry, and closed by it', async () => {
    const dir = await openSyncState(resolveStorage({ stateDir: tempDir('ak-storage-') }, 'syncAudience'));
    expect(dir.store.kind).toBe('directory');
    expect(dir.audit).toBeUndefined();
    await dir.close();
    expect(resolveStorage({ state: 'postgres://u@127.0.0.1:5432/test' }).store).toEqual({
      kind: 'spec',
      spec: { kind: 'postgres', url: 'postgres://u@127.0.0.1:5432/test' },
    });
  });
});
