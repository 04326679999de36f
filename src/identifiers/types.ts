/**
 * The reject reasons, options and results of a record's normalization (see normalize.ts); the
 * identifier types and their rules' reasons are the platform's (platform/users.ts, platform/identifiers/).
 */
import type { PhoneCountryCode } from '../platform/identifiers/phone-reading.js';
import { RULE_REJECT_REASONS, type PhoneFormat, type RuleRejectReason } from '../platform/identifiers/types.js';
import type { AudienceUser, IdentifierType } from '../platform/users.js';

/** The record's own reasons, after every rule's (RULE_REJECT_REASONS): not one type's rule but the reading of a record. */
const RECORD_REJECT_REASONS = ['hash_invalid', 'value_too_long', 'too_many_values', 'not_own_by_type'] as const;
export type RejectReason = RuleRejectReason | (typeof RECORD_REJECT_REASONS)[number];
export const REJECT_REASONS: readonly RejectReason[] = [...RULE_REJECT_REASONS, ...RECORD_REJECT_REASONS];
/**
 * The longest value (after trimming) normalized: no identifier comes near it, and a longer one is
 * rejected before it is lowercased or parsed, so a hostile cell costs nothing.
 */
export const MAX_VALUE_LENGTH = 512;
/**
 * The most values one record may hold (its mapped cells, each part counted with
 * `valueSeparator`). No person has a thousand identifiers; a record with more (`a;a;a;…` over a
 * megabyte) is one `too_many_values` reject instead of half a million rejects and a quadratic
 * dedupe that would exhaust a worker's heap.
 */
export const MAX_VALUES_PER_RECORD = 1000;
/** `auto`: a 64-hex value is an already-hashed digest; `always`: every value must be one; `never`: hash everything. */
export type InputHashed = 'auto' | 'always' | 'never';

export interface NormalizeOptions {
  /** ISO 3166-1 alpha-2 country for national-format phone numbers of records without their own country. */
  defaultCountry?: string;
  phoneFormat?: PhoneFormat;
  /** Default `auto`; see PhoneCountryCode. */
  phoneCountryCode?: PhoneCountryCode;
  inputHashed?: InputHashed;
  /** Splits each cell into several values (default: none, a cell is one value). */
  valueSeparator?: string;
  /**
   * partner_user_id values (sent unhashed) may be e-mail addresses: partner ids written as
   * addresses. Without it such a value is rejected (`partner_user_id_email`), and a mapping whose
   * sampled partner ids hold one is refused (`mapping_partner_ids_emails`).
   */
  partnerIdsMayBeEmails?: boolean;
}
export interface FieldValue {
  column: string;
  type: IdentifierType;
  raw: string;
  /** This column's cells are lists split on this (the mapping saw it in the sample); else valueSeparator. */
  separator?: string;
  /**
   * The row's cell of this column's paired type column (`Phone 1 - Type`): when it says someone
   * else's (fax, assistant, company…), the values are `not_own_by_type` rejects, never sent.
   */
  kind?: string;
  /** The column shows national numbers (MappedColumn.national): see phoneReading. */
  national?: true;
}
export interface MappedRecord {
  /** 1-based line number in the input file, carried into rejects. */
  line: number;
  fields: FieldValue[];
  /** The row's country (a mapped country column); empty or absent means `defaultCountry`. */
  country?: string;
}
export interface Reject {
  line: number;
  column: string;
  type: IdentifierType;
  reason: RejectReason;
}
export interface BuiltUser {
  line: number;
  /** Keys in IDENTIFIER_TYPES order, only types with at least one valid value, values deduplicated; `{}` when none. */
  user: AudienceUser;
  rejects: Reject[];
  /** Per type, how many of the values in `user` were passed through as already-hashed digests (set only when > 0). */
  digests?: Partial<Record<IdentifierType, number>>;
  /** What the summary's hints are made of (set only when something was noted). */
  notes?: BuildNotes;
  /** The row was left out by the consent policy (identifiers/consent.ts): `user` is `{}`, nothing was read. */
  withheld?: true;
}

/**
 * One row's values as UserBuilder holds them, by IDENTIFIER_TYPES index: the first `sizes[t]` of `lists[t]`
 * (deduplicated, in order), of which `digestCounts[t]` passed through as digests; what a text output is written
 * from without a user object per row (see BuiltUser for the meaning of each part).
 */
export interface RowValues {
  readonly lists: readonly (readonly string[])[];
  readonly sizes: readonly number[];
  readonly digestCounts: readonly number[];
  readonly rejects: readonly Reject[] | undefined;
  readonly notes: BuildNotes | undefined;
}

/** Observations about one row that explain rejects or choices (never identifier values). */
export interface BuildNotes {
  /**
   * Phones without `+` read as carrying their country calling code (`auto`/`included`), or, with
   * `national`, rejected although they would be valid read that way.
   */
  phoneCodeWithoutPlus?: number;
  /**
   * Phones valid (under `min`) both as national numbers and as carrying the calling code, decided by
   * the number ranges (`max`); those that stay ambiguous are `phone_ambiguous` rejects.
   */
  phoneTwoReadings?: number;
  /**
   * Of phoneCodeWithoutPlus, those in rows without a country: a national number whose leading 0 a
   * spreadsheet dropped reads the same way (a German 0151… as +1 51…), so the summary says so.
   */
  phoneCodeWithoutCountry?: number;
  /** The row's country value when it is not a recognized country (a phone needed it). */
  unknownCountry?: string;
  /** Rejected cells that look like several values joined by this separator (no valueSeparator given). */
  severalValues?: { column: string; separator: string };
}
