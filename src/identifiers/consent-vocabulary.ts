/**
 * What consent and opt-out columns are called and what their values mean, as data (consent.ts
 * reads it). Names and values are compared as keys: lowercase letters and digits only, accents
 * dropped (`Email Opt-Out`, `email_opt_out` and `EMAIL OPT OUT` are one key), as column names
 * are compared for identifiers (mapping.ts's columnKey).
 *
 * A column's kind says how its values read:
 * - `opt-out`: the name says the person refused (`Email Opt Out`, `Unsubscribed`, `abgemeldet`):
 *   a true value or a date ("opted out at") means no; false or empty says nothing;
 * - `opt-in`: the name says the person agreed (`OPT_IN`, `Einwilligung`, `Accepts Email
 *   Marketing`): a true value or a date means yes, a false value no (no consent);
 * - `confirmation`: a second step of an opt-in (`DOUBLE_OPT-IN`): true means yes, false says
 *   nothing (a single opt-in stands without it);
 * - `status`: the name says the values are a status (`Email Subscription Status`, `Marketing
 *   status`): only status words are read; booleans and dates cannot be.
 * Status words are read in every kind of column: `unsubscribed` means no wherever it is written.
 */

export type ConsentKind = 'opt-out' | 'opt-in' | 'confirmation' | 'status';

/** A value read: a refusal, an agreement, or a value that says nothing either way. */
export type ConsentReading = 'no' | 'yes' | 'none';

/**
 * Column-name keys of each kind, matched as a part of the column's key (`hasoptedoutofemails`
 * holds `optedout`). Checked in this order: `confirmation` before `opt-in` (`doubleoptin` holds
 * `optin`), `opt-out` before `opt-in` (`optinoptout`?: a refusal wins), `status` last.
 * English, German, French, Spanish, Portuguese, Italian, Dutch, Polish, Swedish, Japanese.
 */
export const CONSENT_NAME_KEYS: readonly (readonly [ConsentKind, readonly string[]])[] = [
  ['confirmation', ['doubleoptin', 'confirmedoptin', 'doppeltesoptin', 'doubleoptincontact']],
  [
    'opt-out',
    [
      // English
      'optout',
      'optedout',
      'unsubscribe',
      'blacklist',
      'blocklist',
      'donotemail',
      'donotcontact',
      'donotcall',
      'donotsell',
      'donotshare',
      'donotmail',
      'donotmarket',
      'donottrack',
      'suppressed',
      'consentwithdrawn',
      'withdrawnconsent',
      'unsub', // Mailchimp's UNSUB_TIME, UNSUB_CAMPAIGN_TITLE
      'dontemail',
      'dontmarket', // Salesforce Individual's labels: Don't Market, Don't Track, Don't Profile, Don't Process
      'donttrack',
      'dontprofile',
      'dontprocess',
      'donotbulkemail', // Dynamics 365: donotbulkemail, Do not allow Bulk Emails
      'donotallow',
      'marketingsuspended', // Marketo
      'shouldforget', // Salesforce Individual: forget this person
      'suppression', // Klaviyo's Email Suppressions
      'globalprivacycontrol', // a browser's GPC signal: do not sell or share
      'gpcsignal',
      // "Without" the agreement, as one phrase of its language (never `sin`, `sem` alone: an SIN
      // number, search engine marketing): Keine Einwilligung, Sin consentimiento, Brak zgody…
      'keineeinwilligung',
      'keineinwilligung',
      'keinezustimmung',
      'sinconsentimiento',
      'semconsentimento',
      'sansconsentement',
      'senzaconsenso',
      'geentoestemming',
      'ingetsamtycke',
      'ingensamtycke',
      'brakzgod',
      'withoutconsent',
      'notconsented',
      'nonconsent',
      'ohneeinwilligung',
      'ohnezustimmung',
      'keinoptin',
      'keineoptin',
      'sansoptin',
      'keinewerbeeinwilligung',
      // German
      'abgemeldet',
      'abbestellt',
      'abmelde', // Abmeldedatum
      'abmeldung',
      'widerruf',
      'werbewiderspruch',
      'sperrliste',
      // French
      'desabonne',
      'desinscrit',
      'desinscription',
      'desabonnement',
      'listenoire',
      // Spanish
      'baja',
      'desuscrito',
      'desuscripcion',
      'listanegra',
      // Portuguese
      'descadastrado',
      'descadastro',
      'descadastrar',
      // Italian
      'disiscritto',
      'disiscrizione',
      // Dutch
      'afgemeld',
      'uitgeschreven',
      'afmelding',
      // Polish
      'wypisany',
      'wypisanie',
      'rezygnacja',
      // Swedish
      'avregistrerad',
      'avanmald',
      'avregistrering',
      // Japanese (配信停止 "delivery stopped", 購読解除 "unsubscribed", オプトアウト)
      '配信停止',
      '購読解除',
      'オプトアウト',
    ],
  ],
  [
    'opt-in',
    [
      // English
      'optin',
      'optedin',
      'consent',
      'acceptsemailmarketing',
      'acceptssmsmarketing',
      'acceptsmarketing',
      'emailsubscribe',
      'smssubscribe',
      'pushsubscribe',
      'marketingoptin',
      'marketingpermission',
      'permissiontocontact',
      'gdprconsent',
      // German
      'einwilligung',
      'zustimmung',
      'werbeeinwilligung',
      'newsletteranmeldung',
      // French
      'consentement',
      'accordmarketing',
      // Spanish
      'consentimiento',
      'aceptamarketing',
      // Portuguese
      'consentimento',
      // Italian
      'consenso',
      // Dutch
      'toestemming',
      // Polish
      'zgoda',
      'zgodamarketingowa',
      // Swedish
      'samtycke',
      // Japanese (同意 "agreement", 配信許可 "delivery allowed", オプトイン)
      '同意',
      '配信許可',
      'オプトイン',
    ],
  ],
  [
    'status',
    [
      'subscriptionstatus',
      'marketingstatus',
      'emailstatus',
      'smsstatus',
      'consentstatus',
      'optinstatus',
      'newsletterstatus',
      'permissionstatus', // Constant Contact's Email permission status
      'emailpreference',
      'abonnementstatus',
      'statutabonnement',
      'estadosuscripcion',
      'statusassinatura',
      'statoiscrizione',
      '配信ステータス',
    ],
  ],
];

/**
 * Starts of words that hold a name key but say nothing of consent, taken out of each word of a
 * name before its key is made (the rest of the word stays: `TRABAJADORBAJA` is an opt-out), and
 * `bajada(s)` as a whole word (`BAJADATE` is `baja` and a date):
 * `Trabaja actualmente` (works currently), `Rebaja` (a discount), `Embajada`, `Bajada` hold `baja`,
 * Spanish for an unsubscription, which `FECHABAJA`, `Baja Date` or `dadodebaja` hold as such.
 */
export const CONSENT_NAME_FALSE_STARTS: RegExp = /^(?:trabaj|rebaj|embajad)|^bajadas?$/;

/**
 * Whole names (as keys) that say only what was subscribed to (`Subscribed`, `Newsletter`,
 * `Marketing Emails`): opt-ins. Whole names only: `Active Subscriptions`, `Newsletter Opens` and
 * `Subscription Plan` are not consent, nor is `Marketing Emails Disabled` an agreement.
 */
export const CONSENT_OPT_IN_NAMES: readonly string[] = [
  'subscribed',
  'issubscribed',
  'emailsubscribed',
  'emailsubscription',
  'newslettersubscription',
  'newsletter',
  'newsletterabo',
  'marketingemails',
  'nieuwsbrief',
  'メルマガ配信',
  'メール受信許可',
];

/**
 * What a name whose first word is `no` refuses (`No Marketing`, `No consent`, `No Contact`): an
 * opt-out. Not `No Email`, which may say the record has no address.
 */
export const CONSENT_NO_NAMES: readonly string[] = ['marketing', 'consent', 'optin', 'contact', 'newsletter'];

/**
 * Words of a column's name that turn an agreement's name into a refusal's (`Consent Revoked`,
 * `Withdrew Consent`, `Opt-in declined`, `Consentement retiré`, `Einwilligung zurückgezogen`):
 * a true value or a date in such a column is a no. Whole words (as keys), never parts of one
 * (`Retirement Newsletter` is no `retiré`); `no` counts only as the name's first word (`No
 * consent`, not `Mobile No Opt-in`, where it is a number: CONSENT_NO_NAMES). Scripts written
 * without spaces (`同意撤回`) by CONSENT_NAME_NEGATION_PARTS.
 */
export const CONSENT_NAME_NEGATIONS: readonly string[] = [
  'revoke',
  'revoked',
  'revocation',
  'withdraw',
  'withdrawn',
  'withdrew',
  'withdrawal',
  'decline',
  'declined',
  'refuse',
  'refused',
  'refusal',
  'reject',
  'rejected',
  'denied',
  'retracted',
  'cancelled',
  'canceled',
  'disabled',
  'stopped',
  'paused',
  'expired',
  'retire',
  'revoque',
  'revocado',
  'revocada',
  'retirado',
  'revocato',
  'revocata',
  'zuruckgezogen',
  'abgelehnt',
  'verweigert',
  'ingetrokken',
  'geweigerd',
  'cofnieta',
  'cofniety',
  'aterkallat',
];
/** Negations matched as parts of the key, for scripts written without spaces. */
export const CONSENT_NAME_NEGATION_PARTS: readonly string[] = ['撤回', '拒否', 'なし'];

/**
 * Last words of a column name that say it is about the consent, not the consent itself
 * (`OPTIN_IP`, `Opt Out Reason`, `consent_source`): never read as consent.
 */
export const CONSENT_NAME_NOT: ReadonlySet<string> = new Set([
  'ip',
  'reason',
  'source',
  'method',
  'channel',
  'id',
  'text',
  'version',
  'url',
  'by',
  'note',
  'notes',
  'type',
  'language',
  'form',
]);

/** Boolean spellings (keys), in the ten languages: true. */
export const TRUE_VALUES: readonly string[] = [
  'true',
  't',
  'yes',
  'y',
  '1',
  'on',
  'checked',
  'x',
  'ja',
  'wahr',
  'oui',
  'vrai',
  'si',
  'sim',
  'verdadeiro',
  'verdadero',
  'vero',
  'tak',
  'prawda',
  'sant',
  'はい',
  '有',
  '真',
];

/** A ticked box as spreadsheets write it (`✓`, Japanese `○`): true. Compared as written, not as keys. */
export const TRUE_MARKS: readonly string[] = ['✓', '✔', '☑', '☒', '○', '◯', '●'];
/** A crossed or empty box (`✗`, Japanese `×`): false. */
export const FALSE_MARKS: readonly string[] = ['✗', '✘', '×', '☐'];

/**
 * Values that accept (a consent banner's or form's `Accepted`): yes in a column whose name or map
 * entry says consent (not an opt-out), never evidence of a consent column by themselves, since an
 * invitation's or an order's status says them too.
 */
export const ACCEPT_VALUES: readonly string[] = [
  'accepted',
  'acceptall',
  'allaccepted',
  'granted',
  'consentgranted',
  'akzeptiert',
  'accepte', // French accepté
  'aceptado',
  'aceito',
  'accettato',
  'geaccepteerd',
  'zaakceptowano',
  'godkand', // Swedish godkänd
  '承諾',
];

/** Boolean spellings (keys): false. */
export const FALSE_VALUES: readonly string[] = [
  'false',
  'f',
  'no',
  'n',
  '0',
  'off',
  'unchecked',
  'nein',
  'falsch',
  'non',
  'faux',
  'nao',
  'falso',
  'nie',
  'nee',
  'onwaar',
  'nej',
  'falskt',
  'いいえ',
  '無',
  '偽',
];

/**
 * Status words (keys) and their reading, whatever the column's kind. A value whose key starts
 * with one of the `no` prefixes reads no (`Opt-Out: Manual` is `optoutmanual`).
 */
export const STATUS_WORDS: Readonly<Record<ConsentReading, readonly string[]>> = {
  no: [
    'donotallow', // Dynamics 365's option: Do Not Allow
    'donotsend',
    'abbestellt',
    'unsubscribed',
    'unsubscribe',
    'optedout',
    'optout',
    'blacklisted',
    'blocklisted',
    'blocked',
    'nonmarketable',
    'notmarketable',
    'unmarketable',
    'noconsent',
    'consentwithdrawn',
    'withdrawn',
    'revoked',
    'denied',
    'declined',
    'refused',
    'rejected',
    'donotsell',
    'donotshare',
    'donotsellorshare',
    'donotsellshare',
    'adstrackingoff',
    'adtrackingoff',
    'trackingoff',
    'limitadtracking',
    'suppressed',
    'donotcontact',
    'donotemail',
    'spamreported',
    'complained',
    'abgemeldet',
    'keineeinwilligung',
    'widerrufen',
    'desabonne',
    'desinscrit',
    'sansconsentement',
    'dadodebaja',
    'debaja',
    'baja',
    'desuscrito',
    'sinconsentimiento',
    'noconsiente',
    'spamcomplaint', // Klaviyo's suppression reasons
    'usersuppressed',
    '希望しない', // Japanese: "does not wish" (to receive)
    'noacepta',
    'noaceptado',
    'descadastrado',
    'semconsentimento',
    'disiscritto',
    'senzaconsenso',
    'afgemeld',
    'uitgeschreven',
    'geentoestemming',
    'wypisany',
    'brakzgody',
    'avregistrerad',
    'avanmald',
    'ejsamtycke',
    '配信停止',
    '購読解除',
    '同意なし',
    '拒否',
  ],
  yes: [
    '希望する', // Japanese: "wishes" (to receive)
    'explicit', // Constant Contact's permission: explicit consent
    'subscribed',
    'optedin',
    'optin',
    'singleoptin',
    'doubleoptin',
    'confirmedoptin',
    'consented',
    'consentgiven',
    'granted',
    'marketable',
    'angemeldet',
    'abonniert',
    'eingewilligt',
    'abonne',
    'inscrit',
    'consentementdonne',
    'suscrito',
    'inscrito',
    'assinante',
    'iscritto',
    'aangemeld',
    'ingeschreven',
    'zapisany',
    'prenumererar',
    'registrerad',
    '配信中',
    '購読中',
    '同意済み',
  ],
  none: [
    'active', // ActiveCampaign's and Marketing Cloud's contacts: subscribed, which is no consent either
    'implicit', // Constant Contact's implied permission
    'allow', // Dynamics 365's option Allow: not opted out, which is no consent either
    'archived', // Mailchimp: an archived contact, whatever it said
    'held', // Marketing Cloud: sending held after bounces
    'notsubscribed',
    'neversubscribed',
    'nonsubscribed',
    'pending',
    'unconfirmed',
    'unknown',
    'cleaned',
    'bounced',
    'transactional',
    'transactionalonly',
    'none',
    'na',
    'null',
    'nichtabonniert',
    'ausstehend',
    'enattente',
    'pendiente',
    'pendente',
    'inattesa',
    'inafwachting',
    'oczekujacy',
    'vantande',
    '未登録',
    '保留',
  ],
};

/** English month names and their three-letter forms (`May 1, 2024`, `1 May 2024`, `01-May-2024`). */
const MONTH =
  '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\\.?';
const MONTH_DAY_YEAR = `${MONTH} \\d{1,2},? \\d{4}`;
const DAY_MONTH_YEAR = `\\d{1,2}[ -]${MONTH}[ -]\\d{2,4}`;
/** A time after the date (`T10:22`, ` 10:22:00.5`, ` 10:22 AM`) and a zone (`Z`, `+02:00`, ` UTC`), each optional. */
const TIME =
  '(?:[T ,]+\\d{1,2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:\\s*[ap]\\.?m\\.?)?)?(?:\\s*(?:z|utc|gmt|[+-]\\d{2}:?\\d{2}))?';

/**
 * Date values ("opted out at", "opted in at"): ISO dates and timestamps, `YYYY/MM/DD`,
 * `MM/DD/YYYY`, `DD.MM.YYYY`, `DD-MM-YYYY`, `May 1, 2024`, `1 May 2024`, optionally with a time
 * (Salesforce reports write `5/1/2024 10:22 AM`) and a zone. Tested on the trimmed cell.
 */
export const DATE_VALUE = new RegExp(
  `^(?:\\d{4}[-/.]\\d{1,2}[-/.]\\d{1,2}|\\d{1,2}[-/.]\\d{1,2}[-/.]\\d{2,4}|${MONTH_DAY_YEAR}|${DAY_MONTH_YEAR})${TIME}$`,
  'i',
);
