/**
 * A user-batch request as the platform defines it (reference: ads-audiences-api.md, "Custom
 * audience users (batch)", "Do-not-reach lists" and "Limits"): a JSON array of operation objects,
 * each `Update` or `Delete` with its users and the times they share, within two limits.
 */

export type OperationType = 'Update' | 'Delete';

/**
 * A membership sent without `expires_at` lasts 13 months (reference: "Default audience membership lifetime"): 390
 * days, 13 of 30, the longest a sync may wait before it re-sends a user (`refreshAfterDays`).
 */
export const MEMBERSHIP_DAYS = 390;

/** What the users of one operation object share: its type and its `params` times. */
export interface BatchGroup {
  operationType: OperationType;
  /** UTC ISO 8601 (custom audiences only). */
  effectiveAt?: string;
  /** UTC ISO 8601. */
  expiresAt?: string;
}

/** The limits of one user-batch request: operation objects, and the body's exact UTF-8 bytes. */
export const USER_BATCH_LIMITS = Object.freeze({ maxOperations: 2500, maxBodyBytes: 5_000_000 } as const);

/** Listing pages: `count` from 1 to this (permissions, audiences). */
export const LIST_COUNT_MAX = 1000;
/** The most ids one comma-separated id list parameter takes. */
export const ID_LIST_MAX = 200;
