/**
 * Normalization and hashing of CRM identifiers, exactly as the platform expects them (the rules table in the
 * README is the contract): `buildUser` and `userBuilder` turn mapped records into users to send, and
 * `normalizeIdentifier` one value; the rules of each type are the platform's (platform/identifiers/rules.ts,
 * TYPE_RULES), country names in countries.ts, the user's canonical JSON in serialize.ts.
 * `buildUser` is the per-row hot path of the `hash` and `upload` pipelines, so it avoids per-call regex
 * construction, closures and needless allocation.
 *
 * Raw values never leave this module except as normalized/hashed output: rejects carry a reason code, the line
 * and the column, never the value.
 */
import type { PhoneCountryCode, PhoneNotes } from '../platform/identifiers/phone-reading.js';
import { cleanValue, hashValue, HEX64_RE, TYPE_RULES, type RuleContext } from '../platform/identifiers/rules.js';
import {
  DEFAULT_PHONE_FORMAT,
  type Normalized,
  type PhoneCountry,
  type PhoneFormat,
} from '../platform/identifiers/types.js';
import { resolveCountry } from './countries.js';
import { typeSaysSomeoneElse } from './vocabulary/index.js';
import { IDENTIFIER_TYPES, type AudienceUser, type IdentifierType } from '../platform/users.js';
import {
  MAX_VALUE_LENGTH,
  MAX_VALUES_PER_RECORD,
  type BuildNotes,
  type BuiltUser,
  type FieldValue,
  type InputHashed,
  type MappedRecord,
  type NormalizeOptions,
  type Reject,
  type RejectReason,
  type RowValues,
} from './types.js';

const SEPARATORS = [';', ',', '|'];

/**
 * Builds the users of one run (one NormalizeOptions) and owns the per-record scratch state, reused
 * across records instead of allocated per row: read() and build() are synchronous and call no user code.
 * After read(), the row is its RowValues (the scratch lists, rejects and notes) until the next read.
 */
class UserBuilder implements RuleContext, RowValues {
  readonly digits: boolean;
  readonly countryCode: PhoneCountryCode;
  readonly partnerEmails: boolean;
  readonly phoneNotes: PhoneNotes = { codeWithoutPlus: 0, twoReadings: 0, codeWithoutCountry: 0 };
  /** The field being read is of a column that shows national numbers (set per field). */
  nationalColumn = false;
  private readonly defaultCountry: string | undefined;
  private readonly inputHashed: InputHashed;
  /** The value separator given, if any (a rejected cell holding another one gets a note). */
  private readonly separator: string | undefined;
  /** Never shortened (setting an array's length is a runtime call): the row's values are the first sizes[t]. */
  readonly lists: string[][] = IDENTIFIER_TYPES.map(() => []);
  readonly sizes: number[] = IDENTIFIER_TYPES.map(() => 0);
  readonly digestCounts: number[] = IDENTIFIER_TYPES.map(() => 0);
  rejects: Reject[] | undefined = undefined;
  notes: BuildNotes | undefined = undefined;
  private readonly country: PhoneCountry = { code: undefined, invalid: false };
  private countryResolved = false;
  private record: MappedRecord | undefined = undefined;
  private severalValues: BuildNotes['severalValues'] = undefined;

  constructor(opts: NormalizeOptions) {
    this.defaultCountry = opts.defaultCountry;
    this.inputHashed = opts.inputHashed ?? 'auto';
    this.digits = (opts.phoneFormat ?? DEFAULT_PHONE_FORMAT) === 'digits';
    this.countryCode = opts.phoneCountryCode ?? 'auto';
    this.separator = opts.valueSeparator;
    this.partnerEmails = opts.partnerIdsMayBeEmails === true;
  }

  /** The record's country, resolved once per record, and only for records that have a phone. */
  phoneCountry(): PhoneCountry {
    if (!this.countryResolved) {
      this.countryResolved = true;
      const own = this.record?.country;
      resolveCountry(own !== undefined && own.trim() !== '' ? own : this.defaultCountry, this.country);
    }
    return this.country;
  }

  /**
   * Turns one mapped record into the user object to send plus the rejects. Several columns may feed one type,
   * a cell may hold several values (`valueSeparator`), duplicates within the user are removed (after
   * normalization, so `A@x.com` and `a@x.com` are one value). Empty cells are neither values nor rejects.
   */
  build(record: MappedRecord): BuiltUser {
    this.read(record);
    return this.built(record.line);
  }

  /** Reads one record into the scratch state (RowValues): what build() makes its BuiltUser of. */
  read(record: MappedRecord): void {
    this.start(record);
    let rejects: Reject[] | undefined;
    const fields = record.fields;
    let values = 0;
    for (let f = 0; f < fields.length; f++) {
      const field = fields[f]!;
      const raw = field.raw;
      const sep = field.separator ?? this.separator;
      const split = sep !== undefined && sep !== '' && raw.includes(sep);
      values += split ? countParts(raw, sep) : raw === '' ? 0 : 1;
      if (values > MAX_VALUES_PER_RECORD) return this.tooManyValues(record, field);
      this.nationalColumn = field.national === true;
      if (field.kind !== undefined && field.kind !== '') {
        rejects = this.addPaired(record.line, field, split ? sep : undefined, rejects);
      } else if (split) {
        const parts = raw.split(sep);
        for (let p = 0; p < parts.length; p++) {
          const reason = this.addValue(parts[p]!, field.type);
          if (reason !== undefined)
            (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
        }
      } else {
        const reason = this.addValue(raw, field.type);
        if (reason !== undefined) {
          (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
          // A lossy spreadsheet number (4,91512E+12) has a decimal comma, not a list.
          if (this.severalValues === undefined && reason !== 'phone_lossy_number')
            this.noteSeveralValues(raw, field.column);
        }
      }
    }
    this.rejects = rejects;
    this.notes = this.collectNotes();
    this.record = undefined;
  }

  /**
   * A paired layout's cell: its values, except those its type cell says are someone else's
   * (`not_own_by_type` rejects). A type cell split like its value cell (`Work ::: Fax`) types
   * each value; otherwise it types them all.
   */
  private addPaired(line: number, field: FieldValue, sep: string | undefined, rejects: Reject[] | undefined) {
    const parts = sep === undefined ? [field.raw] : field.raw.split(sep);
    const kinds = sep !== undefined && (field.kind as string).includes(sep) ? (field.kind as string).split(sep) : [];
    const all = kinds.length === parts.length ? undefined : typeSaysSomeoneElse(field.kind as string);
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p] as string;
      const notOwn = all ?? typeSaysSomeoneElse(kinds[p] as string);
      const reason = notOwn
        ? cleanValue(part) === ''
          ? undefined
          : 'not_own_by_type'
        : this.addValue(part, field.type);
      if (reason !== undefined) (rejects ??= []).push({ line, column: field.column, type: field.type, reason });
    }
    return rejects;
  }

  private start(record: MappedRecord): void {
    this.record = record;
    this.severalValues = undefined;
    this.countryResolved = false;
    this.phoneNotes.codeWithoutPlus = 0;
    this.phoneNotes.twoReadings = 0;
    this.phoneNotes.codeWithoutCountry = 0;
    for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
      this.sizes[t] = 0;
      this.digestCounts[t] = 0;
    }
  }

  /** The row just read as a BuiltUser (its user, rejects, digests and notes), in copies of the scratch lists. */
  built(line: number): BuiltUser {
    const built: BuiltUser = { line, user: {}, rejects: this.rejects ?? [] };
    const user: AudienceUser = built.user;
    let digests: Partial<Record<IdentifierType, number>> | undefined;
    for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
      const n = this.sizes[t]!;
      if (n === 0) continue;
      const type = IDENTIFIER_TYPES[t]!;
      user[type] = this.lists[t]!.slice(0, n);
      const d = this.digestCounts[t]!;
      if (d > 0) (digests ??= {})[type] = d;
    }
    if (digests !== undefined) built.digests = digests;
    if (this.notes !== undefined) built.notes = this.notes;
    return built;
  }

  /** The record's one reject when it holds more than MAX_VALUES_PER_RECORD values: none of them is used. */
  private tooManyValues(record: MappedRecord, field: MappedRecord['fields'][number]): void {
    this.start(record);
    this.rejects = [{ line: record.line, column: field.column, type: field.type, reason: 'too_many_values' }];
    this.notes = undefined;
    this.record = undefined;
  }

  /** The notes of the row just built, or undefined (the common case: nothing to note). */
  private collectNotes(): BuildNotes | undefined {
    const unknownCountry = this.countryResolved && this.country.invalid;
    const phoneNotes = this.phoneNotes;
    const phones = phoneNotes.codeWithoutPlus + phoneNotes.twoReadings + phoneNotes.codeWithoutCountry;
    if (phones === 0 && this.severalValues === undefined && !unknownCountry) return undefined;
    const notes: BuildNotes = {};
    if (phoneNotes.codeWithoutPlus > 0) notes.phoneCodeWithoutPlus = phoneNotes.codeWithoutPlus;
    if (phoneNotes.twoReadings > 0) notes.phoneTwoReadings = phoneNotes.twoReadings;
    if (phoneNotes.codeWithoutCountry > 0) notes.phoneCodeWithoutCountry = phoneNotes.codeWithoutCountry;
    if (this.severalValues !== undefined) notes.severalValues = this.severalValues;
    if (unknownCountry) {
      const own = this.record?.country;
      notes.unknownCountry = cleanValue(own !== undefined && own.trim() !== '' ? own : (this.defaultCountry ?? ''));
    }
    return notes;
  }

  /** A rejected cell holding a separator (other than the one given) looks like a list of values. */
  private noteSeveralValues(raw: string, column: string): void {
    for (const separator of SEPARATORS) {
      if (separator !== this.separator && raw.includes(separator)) {
        this.severalValues = { column, separator };
        return;
      }
    }
  }

  /** Adds one cell value to the scratch user; returns the reject reason, or undefined (added, duplicate or empty). */
  private addValue(raw: string, type: IdentifierType): RejectReason | undefined {
    if (raw.length > MAX_VALUE_LENGTH && raw.trim().length > MAX_VALUE_LENGTH) return 'value_too_long';
    const value = cleanValue(raw);
    if (value === '') return undefined;
    const rule = TYPE_RULES[type];
    let n: Normalized;
    if (!rule.hashed) {
      n = rule.clean(value, this);
      if (!n.ok) return n.reason;
      this.add(rule.index, n.value);
      return undefined;
    }
    if (this.inputHashed !== 'never' && value.length === 64 && HEX64_RE.test(value)) {
      if (this.add(rule.index, value.toLowerCase())) this.digestCounts[rule.index]!++;
      return undefined;
    }
    if (this.inputHashed === 'always') return 'hash_invalid';
    n = rule.clean(value, this);
    if (!n.ok) return n.reason;
    this.add(rule.index, hashValue(n.value));
    return undefined;
  }

  /** Adds a value to the row's values of type index `t` unless it is there already; true if added. */
  private add(t: number, value: string): boolean {
    const list = this.lists[t]!;
    const n = this.sizes[t]!;
    for (let i = 0; i < n; i++) if (list[i] === value) return false;
    list[n] = value;
    this.sizes[t] = n + 1;
    return true;
  }
}

function countParts(raw: string, sep: string): number {
  let n = 1;
  for (let i = raw.indexOf(sep); i !== -1 && n <= MAX_VALUES_PER_RECORD; i = raw.indexOf(sep, i + sep.length)) n++;
  return n;
}

/**
 * The builder of one run's users: the options read once, the scratch state reused by every record.
 * Use it on per-row paths; it is synchronous and keeps no reference to a record after it returns.
 */
export function userBuilder(opts: NormalizeOptions): (record: MappedRecord) => BuiltUser {
  const builder = new UserBuilder(opts);
  return (record) => builder.build(record);
}

/** What rowReader gives: a row read into RowValues, and made a BuiltUser only when one is needed. */
export interface RowReader extends RowValues {
  read(record: MappedRecord): void;
  /** The row last read as a BuiltUser of input line `line`. */
  built(line: number): BuiltUser;
}

/**
 * The builder of one run's rows for outputs written as text (serializeRow, a CSV line): a row's values stay
 * in the reader's scratch lists until the next read, with no user object per row. Same rules as userBuilder.
 */
export function rowReader(opts: NormalizeOptions): RowReader {
  return new UserBuilder(opts);
}

/** One record turned into its user and rejects (see UserBuilder.build); per-row paths use userBuilder. */
export function buildUser(record: MappedRecord, opts: NormalizeOptions): BuiltUser {
  return new UserBuilder(opts).build(record);
}

type OneValueOptions = { country?: string; format?: PhoneFormat; countryCode?: PhoneCountryCode };

/** The context of one value normalized on its own (its country resolved only if it is a phone). */
function oneValueContext(opts: OneValueOptions): RuleContext {
  let country: PhoneCountry | undefined;
  return {
    phoneCountry() {
      if (country === undefined) resolveCountry(opts.country, (country = { code: undefined, invalid: false }));
      return country;
    },
    digits: (opts.format ?? DEFAULT_PHONE_FORMAT) === 'digits',
    countryCode: opts.countryCode ?? 'auto',
    phoneNotes: { codeWithoutPlus: 0, twoReadings: 0, codeWithoutCountry: 0 },
    nationalColumn: false,
    partnerEmails: false,
  };
}

/**
 * One value of any identifier type, normalized by the rules the uploader applies (TYPE_RULES): the
 * form that is hashed (`hashValue`), or sent as is for `partner_user_id`. `opts` matter to phone
 * numbers only; `country` is read as exports write it (a code or a name, countries.ts).
 */
export function normalizeIdentifier(type: IdentifierType, raw: string, opts: OneValueOptions = {}): Normalized {
  return TYPE_RULES[type].clean(cleanValue(raw), oneValueContext(opts));
}

/** One phone value by the phone rule (platform/identifiers/rules.ts): E.164 digits by default (`format`). */
export function normalizePhone(raw: string, opts: OneValueOptions = {}): Normalized {
  return normalizeIdentifier('phone_number', raw, opts);
}
