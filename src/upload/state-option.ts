/** The library's `stateDir` / `state` / `auditLog` options of a sync, checked once and opened as one store. */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { FileAuditLog } from '../state/audit-file.js';
import { openStateStore, parseStateUrl } from '../state/open-store.js';
import type { AuditLog, StateStore } from '../state/store.js';

/** A PostgreSQL URL, or a store object opened by the caller (who closes it). */
export type StateOption = string | StateStore;

const storeObject = z.custom<StateStore>(
  (v) =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as Partial<StateStore>).lockTarget === 'function' &&
    typeof (v as Partial<StateStore>).describe === 'function',
  { message: 'expected a PostgreSQL URL or a state store object' },
);

const optionsSchema = z.object({
  stateDir: z.string().min(1).optional(),
  state: z.union([z.string().min(1), storeObject]).optional(),
  auditLog: z.string().min(1).optional(),
});

export interface SyncState {
  store: StateStore;
  /** The audit log the sync records in: `auditLog`'s file, else the store's when given as `state`, else none. */
  audit: AuditLog | undefined;
  /** Closes the store when the sync opened it. */
  close: () => Promise<void>;
}

export async function openSyncState(o: {
  stateDir?: string;
  state?: StateOption;
  auditLog?: string;
}): Promise<SyncState> {
  const parsed = optionsSchema.safeParse({ stateDir: o.stateDir, state: o.state, auditLog: o.auditLog });
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join('.') ?? 'state';
    throw new ConfigError('invalid_option', `${field}: ${parsed.error.issues[0]?.message ?? 'invalid'}`, {
      fix: 'pass stateDir (a directory) or state (a postgres:// URL or a store)',
    });
  }
  const { stateDir, state, auditLog } = parsed.data;
  if ((stateDir === undefined) === (state === undefined)) {
    throw new ConfigError(
      state === undefined ? 'missing_option' : 'invalid_option',
      state === undefined ? 'a sync needs stateDir or state' : 'give stateDir or state, not both',
      { fix: 'pass stateDir (a directory) or state (a postgres:// URL or a store)' },
    );
  }
  const file = auditLog === undefined ? undefined : new FileAuditLog(auditLog);
  if (state !== undefined && typeof state !== 'string')
    return { store: state, audit: file ?? state.audit, close: () => Promise.resolve() };
  const store = await openStateStore(
    state === undefined ? { kind: 'directory', dir: stateDir as string } : parseStateUrl(state, 'state'),
  );
  return {
    store,
    audit: file ?? (state === undefined ? undefined : store.audit),
    close: () => store.close(),
  };
}
