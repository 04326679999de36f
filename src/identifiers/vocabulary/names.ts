/**
 * Whole column names of the common exports (and the platform account types, whose columns are
 * read only under these names), and the generic id words: the data mapping.ts reads names with,
 * beside the per-language words of ./index.ts.
 */
import type { IdentifierType } from '../../platform/users.js';

/**
 * Header names recognized without a `map` entry, compared on their letters and digits only (case,
 * spaces and punctuation ignored: `Country/Region`, `country_region` and `COUNTRY REGION` are one
 * name). They cover the exports of the common CRMs and shops and the customer-list templates of
 * the large ad platforms (fixtures/exports/ holds one sample of each); docs/cli.md lists them.
 * A column found here is used only when its sampled values fit the type (content.ts). Names that
 * say the value is someone else's (a someoneElse or line word of ./index.ts) and generic ids (`user_id`, `id`, `username`)
 * are never used without `map`: `service_id` and `handle` come only from names that name this
 * platform, `partner_user_id` only from its own name.
 */
/** A type with no names here (a new one) is found only through `map`. */
export const AUTO_COLUMN_NAMES: Readonly<
  Partial<Record<IdentifierType, readonly string[]>> & { country: readonly string[] }
> = {
  email: [
    'email',
    'e-mail',
    'email_address',
    'e-mail address',
    'emails',
    'work_email',
    'personal_email',
    'primary email',
    'additional email addresses',
    'secondary email',
    'billing email',
    'user_email',
    'person - email',
    'person - email - work',
    'person - email - home',
    'person - email - other',
  ],
  phone_number: [
    'phone',
    'phone_number',
    'phone numbers',
    'telephone',
    'telephone number',
    'mobile',
    'mobile_phone',
    'mobile_number',
    'mobile phone number',
    'cell_phone',
    'cell',
    'msisdn',
    'sms phone number',
    'default address phone',
    'billing phone',
    'shipping phone',
    'sms',
    'whatsapp',
    'landline_number',
    'home phone',
    'other phone',
    'person - phone',
    'person - phone - work',
    'person - phone - home',
    'person - phone - mobile',
    'person - phone - other',
  ],
  handle: ['twitter_handle', 'twitter', 'twitter_username', 'twitter_screen_name', 'x_handle', 'x_username'],
  device_id: [
    'device_id',
    'device_ids',
    'mobile device id',
    'madid',
    'idfa',
    'idfas',
    'adid',
    'gaid',
    'maid',
    'aaid',
    'ifa',
    'android_id',
    'advertising_id',
    'advertising_ids',
    'mobile advertising id',
    'mobile_ad_id',
    'google_aid',
    'google_ad_id',
    'google_ad_ids',
    'apple_idfa',
  ],
  // The platform's docs and SDKs call its user id `twitter_id`; exports name it after the platform too.
  service_id: ['service_id', 'twitter_id', 'twitter_user_id', 'x_id', 'x_user_id'],
  // Sent unhashed, and matches only after the platform's ID Sync with a partner: its own name only.
  partner_user_id: ['partner_user_id', 'p_user_id'],
  country: [
    'country',
    'country_code',
    'cc',
    'country/region',
    'country name',
    'mailing country',
    'mailing country code',
    'billing country',
    'billing country code',
    'default address country code',
    'default address country',
    'shipping country',
    'shipping country code',
    'address country',
    'shipping address country',
    'country of postal address',
    'person - country of postal address',
  ],
};

/** Last words of a generic id column (`id`, `user_id`, `User ID`, `external_id`): never used without `map`. */
export const GENERIC_ID_WORDS: ReadonlySet<string> = new Set(['id', 'ids', 'uid', 'guid', 'uuid']);
/** Whole names of generic account columns (keys as compared). */
export const GENERIC_ID_KEYS: ReadonlySet<string> = new Set([
  'username',
  'userlogin',
  'login',
  'screenname',
  'externid',
]);
