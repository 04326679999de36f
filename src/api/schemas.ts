/**
 * Response shapes. Platform field names stay snake_case; unknown fields pass through
 * (looseObject) so a platform addition never breaks a run, while a missing or mistyped
 * field we rely on fails with its exact path.
 */
import { z } from 'zod';

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
