/**
 * The consent policy `do-not-reach` of runUpload and syncAudience: as `exclude` for the custom
 * audience (a row that says no is not sent to it), and in the same call the rows that say no (and
 * only them) go to a do-not-reach list, as a run of its own (its journal or snapshot, its audit
 * records). The input is read twice: a hashCsv run of a regular file is opened again, raw records
 * given as an array are iterated again; a source that can be read only once is refused before
 * anything is read or sent, never half-done.
 *
 * One rule for both entries: the list is checked with the audience before anything is sent; its
 * pass runs after the audience's, with the same dry run, unless the audience's pass ended
 * interrupted or refused; the call's status is `completed` only when both passes are.
 */
import { z } from 'zod';
import { ConfigError, type AudienceKitError } from '../errors.js';
import { rereadCsv } from '../hashing/pipeline.js';
import { checkConsentColumns, type ConsentPolicy } from '../identifiers/consent.js';
import type { RowRules } from '../identifiers/rows.js';
import { asKitError } from './report.js';
import { describeTarget, type Target } from './target.js';
import type { UploadOperation, UploadStatus, UploadUsers } from './types.js';

/** The `consent` option of runUpload and syncAudience. */
export interface DoNotReachConsent {
  policy: 'do-not-reach';
  /** The list the rows that say no go to (or, on a sync, are kept equal to). */
  doNotReachListId: string;
}

export const CONSENT_FIELD = z
  .object({ policy: z.literal('do-not-reach'), doNotReachListId: z.string().min(1) })
  .strict()
  .optional();

/** The list's pass: its target, and its users (the input read again) opened when it starts. */
export interface DoNotReachPass {
  target: Target;
  open: () => Promise<{ users: UploadUsers; records: RowRules | undefined }>;
}

/** `consent` with its target and operation: the policy goes with an update of a custom audience. */
export function checkConsentTarget(
  consent: DoNotReachConsent | undefined,
  target: Target,
  operation: UploadOperation = 'update',
): void {
  if (consent === undefined || (target.filtersConsent && operation === 'update')) return;
  throw new ConfigError(
    'invalid_option',
    "consent 'do-not-reach' goes with an update (operation 'update') of a custom audience",
    {
      fix: 'name a custom audience as target, or drop consent (a do-not-reach list is never filtered: every row goes to it)',
    },
  );
}

/**
 * The list's pass of `o`, or undefined without the policy. ConfigError, before anything is read,
 * when the audience's users are not read with `exclude` or cannot be read a second time.
 */
export function doNotReachPass(
  consent: DoNotReachConsent | undefined,
  users: UploadUsers,
  records: RowRules | undefined,
): DoNotReachPass | undefined {
  if (consent === undefined) return undefined;
  const target = describeTarget({ doNotReachListId: consent.doNotReachListId });
  const policy = records?.consent ?? (users as { consent?: ConsentPolicy }).consent;
  if (policy !== undefined && policy !== 'exclude') {
    throw new ConfigError(
      'invalid_option',
      `consent 'do-not-reach' sends the audience the rows that do not say no: its users are read with consent '${policy}'`,
      { fix: "read the input with consent 'exclude' (the default), or drop the do-not-reach policy" },
    );
  }
  const mapped = (users as { mapping?: { consent?: readonly unknown[] } }).mapping;
  // A hashCsv run's mapping is known before anything is sent: without a consent column no row says no.
  if (mapped !== undefined) checkConsentColumns('refused', mapped.consent);
  const types = target.types === undefined ? {} : { types: target.types };
  if (records !== undefined && Array.isArray(users)) {
    const rules: RowRules = { ...records, mapping: { ...records.mapping, ...types }, consent: 'refused' };
    return { target, open: () => Promise.resolve({ users, records: rules }) };
  }
  const again = records === undefined ? rereadCsv(users) : undefined;
  if (again !== undefined) {
    const changes = { consent: 'refused' as const, ...types };
    return { target, open: async () => ({ users: await again(changes), records: undefined }) };
  }
  throw new ConfigError(
    'invalid_option',
    "consent 'do-not-reach' reads the input twice (the audience's rows, then the list's), and these users can be read only once",
    {
      fix: 'pass a hashCsv run of a file path (not stdin or a stream), or the raw records as an array with `records`; or send the rows that say no to the list yourself (consent: "refused")',
    },
  );
}

/** A report of either entry, as the list's pass joins it. */
interface PassReport {
  status: UploadStatus | 'refused';
  error?: AudienceKitError;
}

/** The call's status from its two passes': `completed` only when both are. */
function bothStatus<S extends PassReport['status']>(a: S, b: S): S {
  if (a === b) return a;
  return (a === 'interrupted' || b === 'interrupted' ? 'interrupted' : 'partial') as S;
}

/** The list's pass as an entry runs it: its target, and its users (the input read again). */
export interface ListTarget {
  target: Target;
  users: UploadUsers;
  records: RowRules | undefined;
}

/**
 * An entry's call under the policy (`list`; without it, `one()`): `one` on the audience, the list
 * read back with it, then `listOne` on the list with its users (the input read again).
 */
export async function bothTargets<R extends PassReport & { do_not_reach?: R }>(
  list: DoNotReachPass | undefined,
  signal: AbortSignal | undefined,
  one: (alsoCheck?: Target) => Promise<R>,
  listOne: (list: ListTarget) => Promise<R>,
): Promise<R> {
  const report = await one(list?.target);
  if (list === undefined) return report;
  const pass = async (): Promise<R> => {
    const { users, records } = await list.open();
    try {
      return await listOne({ target: list.target, users, records });
    } finally {
      await users.close?.();
    }
  };
  return withListPass(report, pass, signal);
}

/**
 * The audience's `report` with the list's pass run after it (unless the audience's ended
 * interrupted or refused, or `signal` was aborted: then interrupted): `do_not_reach` is the
 * list's report, the status both passes', the error the audience's, else the list's. A list pass
 * that throws (its snapshot damaged, another sync holding it, too many removals) is the call's
 * error; the audience's report is kept.
 */
async function withListPass<R extends PassReport & { do_not_reach?: R }>(
  report: R,
  pass: () => Promise<R>,
  signal: AbortSignal | undefined,
): Promise<R> {
  if (report.status === 'interrupted' || report.status === 'refused') return report;
  // Stopped after the audience's pass ended (Ctrl-C lets the requests on the wire finish): the
  // list was not synced, so the run is interrupted whatever the audience's report says.
  if (signal?.aborted === true) {
    report.status = bothStatus(report.status, 'interrupted');
    return report;
  }
  let list: R;
  try {
    list = await pass();
  } catch (error) {
    report.error ??= asKitError(error);
    report.status = bothStatus(report.status, 'failed');
    return report;
  }
  report.do_not_reach = list;
  report.status = bothStatus(report.status, list.status);
  if (list.error !== undefined) report.error ??= list.error;
  return report;
}
