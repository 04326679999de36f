/**
 * The response shapes the target kinds read (platform/kinds/), stated once: api/schemas.ts
 * passes them on with the others. Platform field names stay snake_case; unknown fields pass
 * through (looseObject) so a platform addition never breaks a run, while a missing or mistyped
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

/** What a user batch confirms: of its users (one operation object's, or the whole request's). */
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
