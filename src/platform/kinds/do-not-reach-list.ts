/**
 * Do-not-reach lists (reference: ads-audiences-api.md, "Do-not-reach lists"): email and
 * phone_number only, no `effective_at`, an `expires_at` before 13 months ahead; every row goes to
 * the list whatever its consent, and no minimum size applies. The platform documents three calls
 * on the lists (GET the account's lists, `with_deleted` only; POST one, `description` only, the
 * platform names it; DELETE it) and the user batch: an account holds at most one list, and there
 * is no GET of one list, so it is found in the listing.
 */
import { accountPath, pathSegment } from '../request.js';
import { dataEnvelope, doNotReachListSchema, pageEnvelope, userBatchResultSchema } from '../responses.js';
import type { IdentifierType } from '../users.js';
import { declareKind } from './kind.js';
import { z } from 'zod';

/** The identifier types a do-not-reach list takes (custom audiences take all of them). */
export const DO_NOT_REACH_TYPES: readonly IdentifierType[] = ['email', 'phone_number'];

/**
 * 13 calendar months after `now`, the platform's longest do-not-reach membership; an expiry
 * must be before it. A day the target month lacks (Jan 31 -> Feb) is clamped to its last day
 * instead of overflowing into the month after.
 */
export function maxDoNotReachExpiry(now: Date): Date {
  const d = new Date(now.getTime());
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + 13);
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, lastDay));
  return d;
}

/** The account's do-not-reach lists (api/endpoints.ts's manage calls use it too). */
export const doNotReachListsPath = (accountId: string): string => `${accountPath(accountId)}/do_not_reach_lists`;

const listId = (id: string): string => pathSegment(id, 'do-not-reach list id');

/** One list (its DELETE); its user batches go to the `batch` path instead. */
export const doNotReachListPath = (accountId: string, id: string): string =>
  `${doNotReachListsPath(accountId)}/${listId(id)}`;

export const DO_NOT_REACH_LIST = declareKind({
  kind: 'do_not_reach_list',
  idOption: 'doNotReachListId',
  name: 'do-not-reach list',
  noun: 'list',
  command: 'do-not-reach',
  types: DO_NOT_REACH_TYPES,
  takesEffectiveAt: false,
  maxExpiry: maxDoNotReachExpiry,
  filtersConsent: false,
  hasMinimumSize: false,
  flag: { name: 'do-not-reach-list', describe: 'Do-not-reach list id (instead of --audience)' },
  endpoints: {
    // One count per operation object, as the batch path answers.
    postUsers: (accountId: string, id: string, body: Buffer) => ({
      method: 'POST',
      path: `/12/batch/accounts/${pathSegment(accountId, 'account id')}/do_not_reach_lists/${listId(id)}/users`,
      json: body,
      schema: dataEnvelope(z.array(userBatchResultSchema)).transform((r) => r.data),
    }),
    // No GET of one list: it is found through the account's listing.
    readBack: (accountId: string, id: string) => ({
      method: 'GET',
      path: doNotReachListsPath(accountId),
      schema: pageEnvelope(doNotReachListSchema).transform((page) => {
        const list = page.data.find((l) => l.id === id);
        return list === undefined || list.deleted === true ? 'missing' : 'writable';
      }),
    }),
    create: (accountId: string, description: string) => ({
      method: 'POST',
      path: doNotReachListsPath(accountId),
      query: { description },
      idempotent: false,
      schema: dataEnvelope(doNotReachListSchema).transform((r) => r.data.id),
    }),
  },
});
