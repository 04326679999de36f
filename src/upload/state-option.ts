/**
 * The library's `stateDir` / `state` / `auditLog` options of a sync or an upload: resolved at the
 * entry, before any I/O, into the run's storage (a state URL is parsed there: a mistyped one is
 * refused before a request is made or a row read), and opened as one store by the entry.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { FileAuditLog } from '../state/audit-file.js';
import { openStateStore, parseStateUrl, type StateSpec } from '../state/open-store.js';
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
 * The state fields of syncAudience's and runUpload's schemas: a state directory, or `state`, a
 * PostgreSQL URL or a store object. `resolveStorage` settles them.
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

/** A run's store: one the entry opens (a directory, or a PostgreSQL URL parsed), or a store object the caller opened (and closes). */
export type StoreChoice = { kind: 'spec'; spec: StateSpec } | { kind: 'given'; store: StateStore };

/** Where a run keeps its state, resolved at the entry (nothing opened): this module's part of the entry's options. */
export interface Storage {
  /** The store; none for an upload without journal. */
  store: StoreChoice | undefined;
  /** The audit log named apart from the store: a file, or a log object. */
  auditLog: string | AuditLog | undefined;
}

/** A sync's storage: it always has a store. */
export type SyncStorage = Storage & { store: StoreChoice };

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

/**
 * The storage of an entry's options (ConfigError before any I/O): not both `stateDir` and
 * `state`; one when the entry needs a store (`entry`, a sync); a state URL that is a PostgreSQL URL.
 */
export function resolveStorage(o: StateOptions, entry: string): SyncStorage;
export function resolveStorage(o: StateOptions): Storage;
export function resolveStorage(o: StateOptions, entry?: string): Storage {
  const { stateDir, state, auditLog } = o;
  if (stateDir !== undefined && state !== undefined)
    throw new ConfigError('invalid_option', 'give stateDir or state, not both', { fix: STATE_FIX });
  if (entry !== undefined && stateDir === undefined && state === undefined)
    throw new ConfigError('invalid_option', `${entry} needs stateDir or state`, { fix: STATE_FIX });
  const store: StoreChoice | undefined =
    typeof state === 'string'
      ? { kind: 'spec', spec: parseStateUrl(state, 'state') }
      : stateDir !== undefined
        ? { kind: 'spec', spec: { kind: 'directory', dir: stateDir } }
        : state === undefined
          ? undefined
          : { kind: 'given', store: state };
  return { store, auditLog };
}

const auditOf = (log: string | AuditLog | undefined): AuditLog | undefined =>
  typeof log === 'string' ? new FileAuditLog(log) : log;

/** A sync's storage opened: the store, with the audit log the run records in. */
export async function openSyncState({ store: where, auditLog }: SyncStorage): Promise<SyncState> {
  const given = auditOf(auditLog);
  if (where.kind === 'given')
    return { store: where.store, audit: given ?? where.store.audit, close: () => Promise.resolve() };
  const store = await openStateStore(where.spec);
  return {
    store,
    audit: given ?? (where.spec.kind === 'directory' ? undefined : store.audit),
    close: () => store.close(),
  };
}

/** An upload's storage opened: the journals' store (none without one) and the audit log. */
export async function openUploadState(storage: Storage): Promise<UploadState> {
  if (storage.store === undefined)
    return { store: undefined, audit: auditOf(storage.auditLog), close: () => Promise.resolve() };
  return openSyncState({ store: storage.store, auditLog: storage.auditLog });
}
