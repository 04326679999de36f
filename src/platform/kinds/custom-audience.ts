/**
 * Custom audiences (reference: ads-audiences-api.md, "Custom audiences" and "Custom audience
 * users (batch)"): every identifier type, `effective_at` and any later `expires_at`; consent
 * decides which rows go in, and the minimum audience size applies.
 */
import { accountPath, pathSegment } from '../request.js';
import { customAudienceSchema, dataEnvelope, userBatchResultSchema, type CustomAudience } from '../responses.js';
import { declareKind, type ReadBack } from './kind.js';

/** The account's custom audiences, and one of them (api/endpoints.ts's manage calls use them too). */
export const customAudiencesPath = (accountId: string): string => `${accountPath(accountId)}/custom_audiences`;
export const customAudiencePath = (accountId: string, id: string): string =>
  `${customAudiencesPath(accountId)}/${pathSegment(id, 'custom audience id')}`;

/** A deleted audience is missing; one shared with this account without READ_WRITE is read-only. */
function audienceReadBack(audience: CustomAudience): ReadBack {
  if (audience.deleted === true) return 'missing';
  return audience.is_owner === false && audience.permission_level !== 'READ_WRITE' ? 'read_only' : 'writable';
}

export const CUSTOM_AUDIENCE = declareKind({
  kind: 'custom_audience',
  idOption: 'customAudienceId',
  name: 'custom audience',
  noun: 'audience',
  command: 'audiences',
  types: undefined,
  takesEffectiveAt: true,
  maxExpiry: () => undefined,
  filtersConsent: true,
  hasMinimumSize: true,
  flag: { name: 'audience', describe: 'Custom audience id to add users to / remove users from' },
  endpoints: {
    // Retrying a user batch is safe: adding the same users again (or removing them again) leaves
    // the audience unchanged, so the request is idempotent even though it is a POST.
    postUsers: (accountId: string, id: string, body: Buffer) => ({
      method: 'POST',
      path: `${customAudiencePath(accountId, id)}/users`,
      json: body,
      schema: dataEnvelope(userBatchResultSchema).transform((r) => r.data),
    }),
    readBack: (accountId: string, id: string) => ({
      method: 'GET',
      path: customAudiencePath(accountId, id),
      schema: dataEnvelope(customAudienceSchema).transform((r) => audienceReadBack(r.data)),
    }),
    create: (accountId: string, name: string) => ({
      method: 'POST',
      path: customAudiencesPath(accountId),
      query: { name },
      idempotent: false,
      schema: dataEnvelope(customAudienceSchema).transform((r) => r.data.id),
    }),
  },
});
