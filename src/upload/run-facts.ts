/**
 * What runUpload and syncAudience record of a run, before anything is sent: the input's identity
 * (measured and fingerprinted) and the options the users were built and packed with, which the
 * journal key and the audit record name.
 */
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { InputError } from '../errors.js';
import type { ColumnMapping } from '../identifiers/mapping.js';
import { DEFAULT_PHONE_FORMAT } from '../platform/identifiers/types.js';
import type { NormalizeOptions } from '../identifiers/types.js';
import type { AuditRunOptions } from '../state/audit.js';
import { fileSha256 } from '../util/sha256.js';
import type { BatchGroup } from '../platform/batch.js';
import type { BatchLimits } from './plan.js';
import type { UploadUsers } from './types.js';

export interface RunInput {
  name: string;
  size: number | null;
  sha256: string | null;
}

/** The `input` option of runUpload and syncAudience: its identity, or a path measured here. */
export type RunInputOption = RunInput | { path: string; name?: string };

/**
 * What the journal key and the audit record say the run was built with: the normalization
 * options (`normalize`, else those the users' run exposes), the mapping, the batch group and limits.
 */
export function auditOptions(
  o: { normalize: NormalizeOptions | undefined; users: UploadUsers; limits: BatchLimits },
  group: BatchGroup,
): AuditRunOptions {
  const run = o.users as { mapping?: ColumnMapping; normalize?: NormalizeOptions };
  return {
    ...normalizeRecord(o.normalize ?? run.normalize, run.mapping),
    effective_at: group.effectiveAt ?? null,
    expires_at: group.expiresAt ?? null,
    max_body_bytes: o.limits.maxBodyBytes,
    max_operations: o.limits.maxOperations,
    max_users_per_operation: o.limits.maxUsersPerOperation,
  };
}

/** The input's identity: a path is measured, and fingerprinted unless a dry run (a pipe is neither). */
export async function identify(input: RunInputOption | undefined, dryRun: boolean): Promise<RunInput | undefined> {
  if (input === undefined || !('path' in input)) return input;
  const name = input.name ?? basename(input.path);
  const unreadable = (error: unknown): InputError =>
    new InputError('input_unreadable', `${name} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {
      fix: 'check the path and its permissions',
      cause: error,
    });
  try {
    const info = statSync(input.path);
    // A pipe (`<(gunzip -c x.gz)`, a FIFO) can be read once, and the users are read from it:
    // fingerprinting it would consume their rows. Like stdin, it is not journaled.
    if (!info.isFile()) return { name, size: null, sha256: null };
    return { name, size: info.size, sha256: dryRun ? null : await fileSha256(input.path) };
  } catch (error) {
    throw unreadable(error);
  }
}

function normalizeRecord(
  n: NormalizeOptions | undefined,
  mapping: ColumnMapping | undefined,
): Pick<AuditRunOptions, 'default_country' | 'country_column' | 'phone_format' | 'input_hashed' | 'mapping'> {
  const columns: Record<string, string[]> = {};
  for (const c of mapping?.columns ?? []) (columns[c.type] ??= []).push(c.label);
  return {
    default_country: n?.defaultCountry?.toUpperCase() ?? null,
    country_column: mapping?.country?.label ?? null,
    phone_format: n?.phoneFormat ?? DEFAULT_PHONE_FORMAT,
    input_hashed: n?.inputHashed ?? 'auto',
    mapping: columns,
  };
}
