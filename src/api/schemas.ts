/**
 * Response shapes. Platform field names stay snake_case; unknown fields pass through
 * (looseObject) so a platform addition never breaks a run, while a missing or mistyped
 * field we rely on fails with its exact path.
 */
import { z } from 'zod';

const nullableString = z.string().nullable();

export const customAudienceSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  description: nullableString.optional(),
  audience_size: z.number().nullable().optional(),
  audience_type: z.string().optional(),
  targetable: z.boolean().optional(),
  reasons_not_targetable: z.array(z.string()).optional(),
  is_owner: z.boolean().optional(),
  owner_account_id: z.string().optional(),
  permission_level: z.string().nullable().optional(),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
  deleted: z.boolean().optional(),
});
export type CustomAudience = z.infer<typeof customAudienceSchema>;

export const doNotReachListSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  description: nullableString.optional(),
  targetable: z.boolean().optional(),
  reasons_not_targetable: z.array(z.string()).optional(),
  list_size: z.number().nullable().optional(),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
  deleted: z.boolean().optional(),
});
export type DoNotReachList = z.infer<typeof doNotReachListSchema>;

export const PERMISSION_LEVELS = ['READ_ONLY', 'READ_WRITE'] as const;
export type PermissionLevel = (typeof PERMISSION_LEVELS)[number];

export const audiencePermissionSchema = z.looseObject({
  id: z.string(),
  custom_audience_id: z.string().optional(),
  tailored_audience_id: z.string().optional(),
  granted_account_id: z.string(),
  permission_level: z.enum(PERMISSION_LEVELS),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
  deleted: z.boolean().optional(),
});
export type AudiencePermission = z.infer<typeof audiencePermissionSchema>;

export const targetingRecordSchema = z.looseObject({
  campaign_id: z.string(),
  campaign_name: z.string(),
  line_items: z.array(z.looseObject({ id: z.string(), name: z.string().nullable(), servable: z.boolean() })),
});
export type TargetingRecord = z.infer<typeof targetingRecordSchema>;

export const userBatchResultSchema = z.looseObject({
  success_count: z.number().int().nonnegative(),
  total_count: z.number().int().nonnegative(),
});
export type UserBatchResult = z.infer<typeof userBatchResultSchema>;

/** `{request, data}`: a single object. */
export function dataEnvelope<T extends z.ZodType>(data: T) {
  return z.looseObject({ request: z.unknown().optional(), data });
}

/** `{request, data: [...], next_cursor, total_count?}`: one page of a list. */
export function pageEnvelope<T extends z.ZodType>(item: T) {
  return z.looseObject({
    request: z.unknown().optional(),
    data: z.array(item),
    next_cursor: z.string().nullable().optional(),
    total_count: z.number().int().nonnegative().optional(),
  });
}

export const requestTokenSchema = z.object({
  oauth_token: z.string().min(1),
  oauth_token_secret: z.string().min(1),
  // RFC 5849 2.1: the server MUST answer "true"; anything else means it did not take the callback.
  oauth_callback_confirmed: z
    .literal('true', { error: 'must be "true" (RFC 5849 2.1: the server did not confirm oauth_callback)' })
    .transform((): true => true),
});
export type RequestTokenResponse = z.infer<typeof requestTokenSchema>;

export const accessTokenSchema = z.object({
  oauth_token: z.string().min(1),
  oauth_token_secret: z.string().min(1),
  user_id: z.string(),
  screen_name: z.string(),
});
export type AccessTokenResponse = z.infer<typeof accessTokenSchema>;
