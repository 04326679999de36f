/** The audit log as a file (`audit.jsonl`): the AuditLog of the directory store, or of an explicit path. */
import { closeSync, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../errors.js';
import {
  appendAuditRecord,
  lastRecordedSnapshot,
  readAuditRuns,
  verifyAuditLog,
  type AuditRecord,
  type AuditRun,
  type RecordedSnapshot,
  type AuditVerification,
  type ChainedAuditRecord,
} from './audit.js';
import { appendWhole, ensureDir, openNoFollow } from './fs.js';
import type { AuditLog } from './store.js';
import type { SnapshotTarget } from './snapshot-format.js';

export class FileAuditLog implements AuditLog {
  constructor(readonly path: string) {}

  describe(): string {
    return this.path;
  }

  append(record: AuditRecord): Promise<ChainedAuditRecord> {
    return appendAuditRecord(this.path, record);
  }

  lastRecordedSnapshot(target: SnapshotTarget): Promise<RecordedSnapshot | undefined> {
    return Promise.resolve(lastRecordedSnapshot(this.path, target));
  }

  verify(options: { head?: string } = {}): Promise<AuditVerification> {
    return Promise.resolve(verifyAuditLog(this.path, options));
  }

  runs(): Promise<AuditRun[]> {
    return Promise.resolve(readAuditRuns(this.path));
  }

  lines(): Promise<string[]> {
    if (!existsSync(this.path)) return Promise.resolve([]);
    const text = readFileSync(this.path, 'utf8');
    return Promise.resolve(text === '' ? [] : text.replace(/\n$/, '').split('\n'));
  }

  importLines(lines: readonly string[]): Promise<void> {
    ensureDir(dirname(this.path), 'auditLog');
    if (existsSync(this.path) && statSync(this.path).size > 0) throw destinationNotEmpty(this.path);
    if (lines.length === 0) return Promise.resolve();
    const fd = openNoFollow(this.path, 'append');
    try {
      appendWhole(fd, Buffer.from(`${lines.join('\n')}\n`, 'utf8'), this.path);
    } finally {
      closeSync(fd);
    }
    return Promise.resolve();
  }
}

/** A moved audit log goes into an empty one only: appending it to another log would fork neither chain but mix two. */
export function destinationNotEmpty(where: string): ConfigError {
  return new ConfigError('state_destination_not_empty', `the audit log ${where} already holds records`, {
    fix: 'move the state into an empty store (a new directory, or a database without audience_kit_* tables)',
  });
}
