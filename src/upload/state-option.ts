/** The library's `stateDir` / `state` / `auditLog` options of a sync or an upload, checked once and opened as one store. */
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

const auditObject = z.custom<AuditLog>(
  (v) =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as Partial<AuditLog>).append === 'function' &&
    typeof (v as Partial<AuditLog>).describe === 'function',
  { message: 'expected a file path or an audit log object' },
);

/**
 * The state fields of syncAudience's and runUpload's schemas (src/upload/options.ts): a state
 * directory, or `state`, a PostgreSQL URL or a store object. `checkStateChoice` refuses both.
 */
export const STATE_FIELDS = {
  stateDir: z.string().min(1).optional(),
  state: z.union([z.string().min(1), storeObject]).optional(),
};

/** runUpload's `auditLog`: a file, or a log object. */
export const AUDIT_LOG_FIELD = z.union([z.string().min(1), auditObject]).optional();

interface StateOptions {
  stateDir?: string | undefined;
  state?: StateOption | undefined;
  auditLog?: string | AuditLog | undefined;
}

const STATE_FIX = 'pass stateDir (a directory) or state (a postgres:// URL or a store)';

export interface SyncState {
  store: StateStore;
  /** The audit log the run records in: `auditLog`'s (a file, or a log object), else the store's when given as `state`, else none. */
  audit: AuditLog | undefined;
  /** Closes the store when the run opened it. */
  close: () => Promise<void>;
}

/** An upload's state: like a sync's, but without a store (no journal) when neither `stateDir` nor `state` is given. */
export type UploadState = Omit<SyncState, 'store'> & { store: StateStore | undefined };

/** The store's choice of a parse: not both; one when the entry needs a store (`entry`, a sync). */
export function checkStateChoice(o: StateOptions, entry?: string): void {
  if (o.stateDir !== undefined && o.state !== undefined)
    throw new ConfigError('invalid_option', 'give stateDir or state, not both', { fix: STATE_FIX });
  if (entry !== undefined && o.stateDir === undefined && o.state === undefined)
    throw new ConfigError('invalid_option', `${entry} needs stateDir or state`, { fix: STATE_FIX });
}

const auditOf = (log: string | AuditLog | undefined): AuditLog | undefined =>
  typeof log === 'string' ? new FileAuditLog(log) : log;

/** The store of options the entry's schema parsed (checkStateChoice): opened, with the audit log the run records in. */
export async function openSyncState(p: StateOptions): Promise<SyncState> {
  const { stateDir, state, auditLog } = p;
  const given = auditOf(auditLog);
  if (state !== undefined && typeof state !== 'string')
    return { store: state, audit: given ?? state.audit, close: () => Promise.resolve() };
  const store = await openStateStore(
    state === undefined ? { kind: 'directory', dir: stateDir as string } : parseStateUrl(state, 'state'),
  );
  return {
    store,
    audit: given ?? (state === undefined ? undefined : store.audit),
    close: () => store.close(),
  };
}

/** The journals' store and the audit log of an upload (runUpload's parsed `stateDir`, `state`, `auditLog`). */
export async function openUploadState(p: StateOptions): Promise<UploadState> {
  if (p.stateDir === undefined && p.state === undefined)
    return { store: undefined, audit: auditOf(p.auditLog), close: () => Promise.resolve() };
  return openSyncState(p);
}
