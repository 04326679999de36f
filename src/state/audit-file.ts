/** The audit log as a file (`audit.jsonl`): the AuditLog of the directory store, or of an explicit path. */
import {
  appendAuditRecord,
  lastRecordedSnapshot,
  readAuditRuns,
  verifyAuditLog,
  type AuditRecord,
  type AuditRun,
  type AuditSnapshotState,
  type AuditVerification,
  type ChainedAuditRecord,
} from './audit.js';
import type { AuditLog, SnapshotTarget } from './store.js';

export class FileAuditLog implements AuditLog {
  constructor(readonly path: string) {}

  describe(): string {
    return this.path;
  }

  append(record: AuditRecord): Promise<ChainedAuditRecord> {
    return appendAuditRecord(this.path, record);
  }

  lastRecordedSnapshot(target: SnapshotTarget): Promise<AuditSnapshotState | undefined> {
    return Promise.resolve(lastRecordedSnapshot(this.path, target));
  }

  verify(options: { head?: string } = {}): Promise<AuditVerification> {
    return Promise.resolve(verifyAuditLog(this.path, options));
  }

  runs(): Promise<AuditRun[]> {
    return Promise.resolve(readAuditRuns(this.path));
  }
}
