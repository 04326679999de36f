/**
 * Contact exports with ground truth, for measuring what `hash` reads without flags (issue #30):
 * random layouts (one column per type, numbered columns, paired type/value columns, lists in a
 * cell), header names composed from words of ten languages (the generator's own lists, written
 * apart from src/identifiers/vocabulary/), columns of someone else's values (assistant, fax,
 * company line, owner e-mail, internal ids), phone numbers in the forms exports hold them, and
 * country columns (codes, names in several languages, locales). For each data row the truth
 * says which digests must be sent (the person's e-mails, and the phones that can be known from
 * the row), which may be (the person's other phones), and which must never be (everyone else's).
 */
import examplesJson from 'libphonenumber-js/examples.mobile.json';
import { parsePhoneNumberFromString as parseMax, type CountryCode } from 'libphonenumber-js/max';
import { createRequire } from 'node:module';
import { hashValue } from '../../src/platform/identifiers/rules.js';
import { mulberry32 } from '../../src/sandbox/faults.js';
import { encodeLegacy } from './legacy-encoding.js';

type Iso = typeof import('i18n-iso-countries');
const require = createRequire(import.meta.url);
const iso = require('i18n-iso-countries') as Iso;
for (const locale of ['en', 'de', 'fr', 'es', 'pt', 'it', 'nl', 'pl', 'sv', 'ja'])
  iso.registerLocale(require(`i18n-iso-countries/langs/${locale}.json`) as never);

export interface ExportOptions {
  /** Data rows per file (inclusive range). */
  rows?: [number, number];
  /** Lines of notes before the header (`Exported from … on …`), in some files. */
  preambles?: boolean;
  /** `00` + a calling code, in any row (read as international with or without a row country). */
  internationalPrefixes?: boolean;
  /**
   * Spreadsheet numbers: `….0`, scientific, a national number without its leading 0, and rounded
   * ones (`4,91512E+12`, never to be hashed).
   */
  spreadsheetForms?: boolean;
}

/** What one data row must, may and must never give (SHA-256 digests as `hash` writes them). */
export interface RowTruth {
  /** The person's e-mails and knowable phones, each with its column. */
  expected: { digest: string; column: string; type: 'email' | 'phone_number' }[];
  /** Everything of the person's that may be sent (expected, and phones that cannot be known from the row). */
  allowed: Set<string>;
  /** Values of other people, faxes, company lines: never sent. */
  never: Set<string>;
}

export interface GeneratedExport {
  name: string;
  bytes: Buffer;
  language: string;
  layout: Layout;
  header: string[];
  /** How its bytes are written: utf8, utf8-bom, utf16le-bom, or the legacy encoding's name. */
  encoding: string;
  /** The data rows' cells (for saying what went wrong). */
  cells: string[][];
  rows: RowTruth[];
}

type Layout = 'flat' | 'numbered' | 'paired' | 'lists';
type Random = () => number;

/** The generator's header words per language (its own lists: names the vocabulary may not know). */
interface Words {
  email: string[];
  phone: string[];
  mobile: string[];
  home: string[];
  work: string[];
  other: string[];
  fax: string[];
  assistant: string[];
  company: string[];
  owner: string[];
  country: string[];
  locale: string[];
  type: string;
  value: string;
  ids: string[];
  plain: string[];
  /** Type cells: the person's own, and someone else's. */
  ownTypes: string[];
  otherTypes: string[];
  /** Whether words of this language join into one (Mobiltelefon). */
  compounds: boolean;
}

const WORDS: Record<string, Words> = {
  en: {
    email: ['Email', 'E-mail', 'Email Address', 'E-mail Address', 'Mail'],
    phone: ['Phone', 'Telephone', 'Phone Number', 'Tel'],
    mobile: ['Mobile', 'Cell', 'Mobile Phone', 'Cell Phone'],
    home: ['Home', 'Personal', 'Private'],
    work: ['Work', 'Business', 'Office'],
    other: ['Other', 'Primary', 'Main', 'Alternate'],
    fax: ['Fax', 'Business Fax', 'Home Fax'],
    assistant: ["Assistant's Phone", 'Assistant Phone'],
    company: ['Company Main Phone', 'Company Phone'],
    owner: ['Owner Email', 'Account Owner Email', 'Sales Rep Email'],
    country: ['Country', 'Country/Region', 'Home Country', 'Business Country/Region', 'Address 1: Country/Region'],
    locale: ['Locale', 'Language'],
    type: 'Type',
    value: 'Value',
    ids: ['Contact ID', 'Record Id', 'ID', 'Customer Number'],
    plain: ['First Name', 'Last Name', 'Company', 'Notes', 'City'],
    ownTypes: ['Mobile', '* Mobile', 'Home', 'Work', 'Main', 'Other', 'Gym', '* Work'],
    otherTypes: ['Work Fax', 'Home Fax', 'Pager', 'Assistant', 'Company', 'Callback'],
    compounds: false,
  },
  de: {
    email: ['E-Mail', 'E-Mail-Adresse', 'Email', 'E-Mail Adresse'],
    phone: ['Telefon', 'Telefonnummer', 'Rufnummer', 'Tel.'],
    mobile: ['Mobiltelefon', 'Handy', 'Handynummer', 'Mobil'],
    home: ['privat', 'Privat'],
    work: ['geschäftlich', 'Geschäftlich', 'Büro'],
    other: ['Weiteres', 'Haupt', 'Weitere'],
    fax: ['Fax geschäftlich', 'Fax privat', 'Faxnummer'],
    assistant: ['Telefon Assistent', 'Assistent Telefon'],
    company: ['Telefon Firma', 'Firmentelefon'],
    owner: ['E-Mail Betreuer', 'Besitzer E-Mail'],
    country: ['Land', 'Land/Region', 'Staat/Land'],
    locale: ['Sprache', 'Gebietsschema'],
    type: 'Typ',
    value: 'Wert',
    ids: ['Kunden-ID', 'Kundennummer', 'ID'],
    plain: ['Vorname', 'Nachname', 'Firma', 'Notizen', 'Ort'],
    ownTypes: ['Mobil', 'Privat', 'Geschäftlich', 'Weitere', 'Haupt'],
    otherTypes: ['Fax geschäftlich', 'Fax', 'Pager', 'Assistent', 'Firma'],
    compounds: true,
  },
  fr: {
    email: ['Courriel', 'E-mail', 'Adresse e-mail', 'Adresse de messagerie', 'Mél'],
    phone: ['Téléphone', 'Numéro de téléphone', 'Tél'],
    mobile: ['Portable', 'Téléphone portable', 'Mobile', 'Téléphone mobile'],
    home: ['domicile', 'personnel'],
    work: ['travail', 'bureau', 'professionnel'],
    other: ['autre', 'principal'],
    fax: ['Télécopie', 'Fax bureau', 'Télécopie domicile'],
    assistant: ["Téléphone de l'assistant", 'Téléphone assistante'],
    company: ['Téléphone société', "Téléphone de l'entreprise"],
    owner: ['E-mail du propriétaire', 'Courriel du commercial'],
    country: ['Pays', 'PAYS', 'Pays/Région'],
    locale: ['Langue', 'Paramètres régionaux'],
    type: 'Type',
    value: 'Valeur',
    ids: ['ID contact', 'Identifiant', 'ID'],
    plain: ['Prénom', 'Nom', 'Société', 'Remarques', 'Ville'],
    ownTypes: ['Mobile', 'Domicile', 'Travail', 'Autre', 'Principal'],
    otherTypes: ['Télécopie', 'Fax', 'Assistant', 'Société'],
    compounds: false,
  },
  es: {
    email: ['Correo electrónico', 'Correo', 'Email', 'Dirección de correo electrónico'],
    phone: ['Teléfono', 'Número de teléfono', 'Tel'],
    mobile: ['Móvil', 'Teléfono móvil', 'Celular'],
    home: ['particular', 'casa', 'personal'],
    work: ['trabajo', 'oficina'],
    other: ['otro', 'principal'],
    fax: ['Fax', 'Fax del trabajo', 'Fax particular'],
    assistant: ['Teléfono del asistente', 'Teléfono asistente'],
    company: ['Teléfono de la empresa', 'Teléfono de la compañía'],
    owner: ['Correo del propietario', 'Email del vendedor'],
    country: ['País', 'País/Región', 'País o región'],
    locale: ['Idioma', 'Configuración regional'],
    type: 'Tipo',
    value: 'Valor',
    ids: ['ID de contacto', 'ID', 'Identificador'],
    plain: ['Nombre', 'Apellidos', 'Empresa', 'Notas', 'Ciudad'],
    ownTypes: ['Móvil', 'Casa', 'Trabajo', 'Otro', 'Principal', 'Celular'],
    otherTypes: ['Fax', 'Fax del trabajo', 'Asistente', 'Empresa', 'Buscapersonas'],
    compounds: false,
  },
  pt: {
    email: ['E-mail', 'Endereço de e-mail', 'Email', 'Correio eletrônico'],
    phone: ['Telefone', 'Número de telefone', 'Tel'],
    mobile: ['Celular', 'Telemóvel', 'Telefone celular'],
    home: ['residencial', 'pessoal'],
    work: ['comercial', 'trabalho'],
    other: ['outro', 'principal'],
    fax: ['Fax', 'Fax comercial', 'Fax residencial'],
    assistant: ['Telefone do assistente', 'Telefone assistente'],
    company: ['Telefone da empresa'],
    owner: ['E-mail do proprietário', 'E-mail do vendedor'],
    country: ['País', 'País/Região'],
    locale: ['Idioma'],
    type: 'Tipo',
    value: 'Valor',
    ids: ['ID do contato', 'ID', 'Código'],
    plain: ['Nome', 'Sobrenome', 'Empresa', 'Observações', 'Cidade'],
    ownTypes: ['Celular', 'Residencial', 'Comercial', 'Outro', 'Principal'],
    otherTypes: ['Fax', 'Fax comercial', 'Assistente', 'Empresa', 'Pager'],
    compounds: false,
  },
  it: {
    email: ['Email', 'E-mail', 'Indirizzo email', 'Indirizzo di posta elettronica'],
    phone: ['Telefono', 'Numero di telefono', 'Tel'],
    mobile: ['Cellulare', 'Cell', 'Telefono cellulare'],
    home: ['casa', 'abitazione', 'personale'],
    work: ['lavoro', 'ufficio'],
    other: ['altro', 'principale'],
    fax: ['Fax', 'Fax ufficio', 'Fax abitazione'],
    assistant: ["Telefono dell'assistente", 'Telefono assistente'],
    company: ['Telefono azienda', 'Telefono della società'],
    owner: ['Email del proprietario', 'Email referente'],
    country: ['Paese', 'Paese/Regione', 'Nazione'],
    locale: ['Lingua'],
    type: 'Tipo',
    value: 'Valore',
    ids: ['ID contatto', 'ID', 'Codice cliente'],
    plain: ['Nome', 'Cognome', 'Società', 'Note', 'Città'],
    ownTypes: ['Cellulare', 'Casa', 'Lavoro', 'Altro', 'Principale'],
    otherTypes: ['Fax', 'Fax ufficio', 'Assistente', 'Azienda', 'Cercapersone'],
    compounds: false,
  },
  nl: {
    email: ['E-mail', 'E-mailadres', 'Email'],
    phone: ['Telefoon', 'Telefoonnummer', 'Tel'],
    mobile: ['Mobiel', 'Mobiele telefoon', 'Mobiel nummer', 'GSM'],
    home: ['thuis', 'privé'],
    work: ['werk', 'zakelijk', 'kantoor'],
    other: ['overig', 'ander'],
    fax: ['Fax werk', 'Fax thuis', 'Faxnummer'],
    assistant: ['Telefoon assistent', 'Telefoonnummer assistent'],
    company: ['Bedrijfstelefoon', 'Telefoon bedrijf'],
    owner: ['E-mail eigenaar'],
    country: ['Land', 'Land/regio'],
    locale: ['Taal'],
    type: 'Type',
    value: 'Waarde',
    ids: ['Klant-ID', 'ID', 'Klantnummer'],
    plain: ['Voornaam', 'Achternaam', 'Bedrijf', 'Notities', 'Plaats'],
    ownTypes: ['Mobiel', 'Thuis', 'Werk', 'Overig'],
    otherTypes: ['Fax', 'Fax werk', 'Assistent', 'Bedrijf', 'Pieper'],
    compounds: true,
  },
  pl: {
    email: ['E-mail', 'Adres e-mail', 'Email'],
    phone: ['Telefon', 'Numer telefonu', 'Tel.'],
    mobile: ['Telefon komórkowy', 'Komórka', 'Tel. kom.'],
    home: ['domowy', 'prywatny'],
    work: ['służbowy', 'firmowy'],
    other: ['inny', 'główny'],
    fax: ['Faks', 'Faks służbowy', 'Fax'],
    assistant: ['Telefon asystenta', 'Telefon asystent'],
    company: ['Telefon firmy', 'Telefon centrala'],
    owner: ['E-mail opiekuna', 'E-mail właściciela'],
    country: ['Kraj', 'Kraj/region'],
    locale: ['Język'],
    type: 'Typ',
    value: 'Wartość',
    ids: ['ID kontaktu', 'ID', 'Numer klienta'],
    plain: ['Imię', 'Nazwisko', 'Firma', 'Notatki', 'Miasto'],
    ownTypes: ['Komórkowy', 'Domowy', 'Służbowy', 'Inny'],
    otherTypes: ['Faks', 'Asystent', 'Firma', 'Pager'],
    compounds: false,
  },
  sv: {
    email: ['E-post', 'E-postadress', 'E-mail', 'Mejl'],
    phone: ['Telefon', 'Telefonnummer', 'Tel'],
    mobile: ['Mobil', 'Mobiltelefon', 'Mobilnummer'],
    home: ['hem', 'privat'],
    work: ['arbete', 'jobb'],
    other: ['annan', 'övrig'],
    fax: ['Fax', 'Fax arbete', 'Telefax'],
    assistant: ['Telefon assistent', 'Assistentens telefon'],
    company: ['Företagets telefon', 'Företagstelefon', 'Växel'],
    owner: ['Ägarens e-post', 'Säljare e-post'],
    country: ['Land', 'Land/region'],
    locale: ['Språk'],
    type: 'Typ',
    value: 'Värde',
    ids: ['Kund-ID', 'ID', 'Kundnummer'],
    plain: ['Förnamn', 'Efternamn', 'Företag', 'Anteckningar', 'Ort'],
    ownTypes: ['Mobil', 'Hem', 'Arbete', 'Annan'],
    otherTypes: ['Fax', 'Personsökare', 'Assistent', 'Företag'],
    compounds: true,
  },
  ja: {
    email: ['メールアドレス', 'メール', 'Eメール', '電子メール'],
    phone: ['電話番号', '電話', 'TEL'],
    mobile: ['携帯電話', '携帯', '携帯電話番号'],
    home: ['自宅'],
    work: ['勤務先', '会社'],
    other: ['その他'],
    fax: ['FAX', 'ファックス', '勤務先FAX'],
    assistant: ['アシスタント電話', '秘書電話'],
    company: ['会社代表電話', '代表電話'],
    owner: ['担当者メール'],
    country: ['国', '国/地域', '国名'],
    locale: ['言語'],
    type: '種類',
    value: '値',
    ids: ['顧客ID', 'ID'],
    plain: ['姓', '名', '会社名', 'メモ', '市区町村'],
    ownTypes: ['携帯', '自宅', '勤務先', 'その他'],
    otherTypes: ['FAX', 'ファックス', 'アシスタント', 'ポケベル'],
    compounds: true,
  },
};

/** Countries of the rows, by the file's language (most rows), and others. */
const HOME: Record<string, string[]> = {
  en: ['US', 'GB', 'CA', 'AU', 'IN'],
  de: ['DE', 'AT', 'CH'],
  fr: ['FR', 'BE', 'CH'],
  es: ['ES', 'MX', 'AR'],
  pt: ['BR', 'PT'],
  it: ['IT', 'CH'],
  nl: ['NL', 'BE'],
  pl: ['PL'],
  sv: ['SE'],
  ja: ['JP'],
};
const ALL_COUNTRIES = [...new Set(Object.values(HOME).flat())];

const pick = <T>(rnd: Random, list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
const chance = (rnd: Random, p: number): boolean => rnd() < p;
const digits = (rnd: Random, n: number): string =>
  Array.from({ length: n }, () => String(Math.floor(rnd() * 10))).join('');

/** A valid mobile or fixed-line number of `country` (E.164), from libphonenumber-js's example mobile varied. */
function phoneOf(rnd: Random, country: string): string {
  const example = (examplesJson as unknown as Record<string, string>)[country] as string;
  for (let tries = 0; tries < 200; tries++) {
    const keep = Math.max(2, example.length - 4);
    const p = parseMax(example.slice(0, keep) + digits(rnd, example.length - keep), country as CountryCode);
    if (p?.isValid() === true && p.country === country) return p.number;
  }
  return parseMax(example, country as CountryCode)!.number;
}

interface Written {
  value: string;
  /**
   * `international`: the value says its country (+, 00); `national`: it needs the row's; `digits`:
   * a spreadsheet's number, the calling code and the number without `+` or the national number
   * without its leading 0 (one reading unless its digits read another way too); `lossy`: a
   * spreadsheet's rounded number, whose digits are lost: never to be hashed.
   */
  kind: 'international' | 'national' | 'digits' | 'lossy';
}

/** Forms a spreadsheet leaves of a number it took for a number: `….0`, scientific, rounded. */
function spreadsheetForms(p: NonNullable<ReturnType<typeof parseMax>>, trunk: boolean): Written[] {
  const withCode = `${p.countryCallingCode}${p.nationalNumber}`;
  const n = Number(withCode);
  const forms: Written[] = [
    { value: `${withCode}.0`, kind: 'digits' },
    { value: n.toExponential().replace('e+', 'E+'), kind: 'digits' },
    { value: n.toExponential(5).replace('.', ','), kind: 'lossy' },
  ];
  if (trunk)
    forms.push({ value: `${p.nationalNumber}.0`, kind: 'digits' }, { value: p.nationalNumber, kind: 'digits' });
  return forms;
}

/** One written form of an E.164 number, as exports hold them. */
function writePhone(rnd: Random, e164: string, opts: ExportOptions): Written {
  const p = parseMax(e164)!;
  const national = p.formatNational();
  const intl = p.formatInternational();
  const trunk = national.replace(/\D/g, '').startsWith('0');
  const ext = pick(rnd, [' x12', ' ext. 881', ' #47', ' x5', ' ext 3']);
  const forms: Written[] = [
    { value: national, kind: 'national' },
    { value: national.replace(/[\s()]+/g, '-').replace(/^-|-$/g, ''), kind: 'national' },
    { value: national.replace(/\s+/g, '.'), kind: 'national' },
    { value: national + ext, kind: 'national' },
    { value: intl, kind: 'international' },
    { value: intl + ext, kind: 'international' },
    { value: intl.replace(/ /g, '-'), kind: 'international' },
    { value: intl.replace(/ /g, '.'), kind: 'international' },
  ];
  if (trunk)
    forms.push({ value: `+${p.countryCallingCode} (0)${national.replace(/^\(?0\)?/, '')}`, kind: 'international' });
  if (opts.internationalPrefixes === true) forms.push({ value: `00${intl.slice(1)}`, kind: 'international' });
  if (opts.spreadsheetForms === true && chance(rnd, 0.3)) return pick(rnd, spreadsheetForms(p, trunk));
  return pick(rnd, forms);
}

/**
 * Whether the value can be known from the row: a national form needs the row's country, and a
 * value without `+` or `00` whose digits read as another valid number (after a `+`, or as a
 * national number of the row's country) has two readings: no rule can know which was meant.
 */
function knowable(w: Written, e164: string, country: string | undefined): boolean {
  // A spreadsheet's number may have lost a `+` or a leading 0: only the row's country can tell.
  if (w.kind === 'lossy' || (w.kind !== 'international' && country === undefined)) return false;
  if (w.kind === 'international') return true;
  const d = w.value
    .replace(/\s*(?:x|ext\.?|#)\s*\d+$/i, '')
    .replace(/\.0$/, '')
    .replace(/^(\d),(\d+)E\+(\d+)$|^(\d)\.(\d+)E\+(\d+)$/, (m) => BigInt(Number(m.replace(',', '.'))).toString())
    .replace(/\D/g, '');
  const readings = [parseMax(`+${d}`), country === undefined ? undefined : parseMax(d, country as CountryCode)];
  return readings.every((r) => r?.isValid() !== true || r.number === e164);
}

const phoneDigest = (e164: string): string => hashValue(e164.slice(1));
const emailDigest = (email: string): string => hashValue(email.toLowerCase());

const FIRST = [
  'Ann',
  'Bo',
  'Chloé',
  'Dario',
  'Eva',
  'Felix',
  'Greta',
  'Hugo',
  'Ines',
  'Jonas',
  'Kenji',
  'Lena',
  'Marta',
  'Noé',
];
const LAST = ['Müller', 'Dupont', 'García', 'Silva', 'Rossi', 'de Vries', 'Nowak', 'Lind', 'Sato', 'Smith', 'Öberg'];
const DOMAINS = ['example.com', 'example.org', 'mail.example.net', 'example.co.uk', 'beispiel.example'];
const ascii = (s: string): string =>
  s
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^a-zA-Z]/g, '')
    .toLowerCase();

/** A column of the file: its header cell and how each row fills it. */
interface Column {
  name: string;
  fill: (row: RowState) => string;
}

/** One row being generated: the person's country, and its truth so far. */
interface RowState {
  rnd: Random;
  n: number;
  country: string;
  /** The row's country cell says the country (an empty cell or a language alone does not). */
  countryKnown: boolean;
  truth: RowTruth;
  first: string;
  last: string;
  opts: ExportOptions;
}

function ownEmail(row: RowState, column: string): string {
  const email = `${ascii(row.first)}.${ascii(row.last)}${row.n}${digits(row.rnd, 2)}@${pick(row.rnd, DOMAINS)}`;
  const written = chance(row.rnd, 0.2) ? email.toUpperCase() : email;
  const digest = emailDigest(email);
  row.truth.expected.push({ digest, column, type: 'email' });
  row.truth.allowed.add(digest);
  return written;
}

/** A number of `country` not yet in the row (the person's and others' numbers never coincide). */
function freshPhone(row: RowState, country: string): string {
  for (;;) {
    const e164 = phoneOf(row.rnd, country);
    const digest = phoneDigest(e164);
    if (!row.truth.allowed.has(digest) && !row.truth.never.has(digest)) return e164;
  }
}

function ownPhone(row: RowState, column: string, foreign = false): string {
  const country = foreign ? pick(row.rnd, ALL_COUNTRIES) : row.country;
  const e164 = freshPhone(row, country);
  let w = writePhone(row.rnd, e164, row.opts);
  // A number of another country than the row's is written with its country by people who know.
  if (country !== row.country && w.kind !== 'international')
    w = { value: parseMax(e164)!.formatInternational(), kind: 'international' };
  const digest = phoneDigest(e164);
  if (w.kind !== 'lossy') row.truth.allowed.add(digest);
  if (knowable(w, e164, row.countryKnown ? row.country : undefined))
    row.truth.expected.push({ digest, column, type: 'phone_number' });
  return w.value;
}

function otherPhone(row: RowState): string {
  const e164 = freshPhone(row, row.country);
  row.truth.never.add(phoneDigest(e164));
  return writePhone(row.rnd, e164, row.opts).value;
}

function otherEmail(row: RowState): string {
  const email = `${pick(row.rnd, ['sales', 'rep', 'k.owner', 'assistant', 'info'])}${Math.floor(row.rnd() * 50)}@company.example`;
  row.truth.never.add(emailDigest(email));
  return email;
}

/** A header name composed of a phone word and a qualifier, in the language's ways. */
function compose(rnd: Random, words: Words, base: string, qualifier: string): string {
  if (words === WORDS.ja) return chance(rnd, 0.5) ? `${qualifier}${base}` : `${base}(${qualifier})`;
  const forms = [`${base} ${qualifier}`, `${qualifier} ${base}`, `${base} (${qualifier})`, `${base} - ${qualifier}`];
  if (words.compounds && !base.includes(' ') && !qualifier.includes(' '))
    forms.push(`${qualifier.charAt(0).toUpperCase()}${qualifier.slice(1)}${base.toLowerCase()}`);
  return pick(rnd, forms);
}

function countryCell(row: RowState, language: string, locale: boolean): string {
  if (chance(row.rnd, 0.04)) {
    row.countryKnown = false;
    return '';
  }
  if (locale) {
    const lang = pick(row.rnd, ['en', 'de', 'fr', 'es', 'pt', 'it', 'nl', 'pl', 'sv', 'ja']);
    if (chance(row.rnd, 0.1)) {
      row.countryKnown = false;
      return lang;
    }
    return `${lang}${pick(row.rnd, ['_', '-'])}${row.country}`;
  }
  const alpha3 = iso.alpha2ToAlpha3(row.country) ?? row.country;
  const name = iso.getName(row.country, language) ?? iso.getName(row.country, 'en') ?? row.country;
  return pick(row.rnd, [row.country, alpha3, name, iso.getName(row.country, 'en') ?? name]);
}

/** The columns of one file. */
function layoutColumns(rnd: Random, language: string, layout: Layout): Column[] {
  const w = WORDS[language] as Words;
  const cols: Column[] = [];
  const plain = (name: string, fill: (row: RowState) => string): void => void cols.push({ name, fill });
  plain(pick(rnd, w.plain), (r) => r.first);
  plain(
    pick(
      rnd,
      w.plain.filter((p) => p !== cols[0]?.name),
    ),
    (r) => r.last,
  );
  if (layout === 'paired') return [...cols, ...pairedColumns(rnd, w)];
  if (layout === 'numbered') {
    const emails = 1 + Math.floor(rnd() * 3);
    const e = pick(rnd, w.email);
    for (let i = 1; i <= emails; i++)
      plain(`${e} ${i}`, (r) => (i === 1 || chance(r.rnd, 0.5) ? ownEmail(r, `${e} ${i}`) : ''));
    const p = pick(rnd, w.phone);
    for (let i = 1; i <= 1 + Math.floor(rnd() * 3); i++)
      plain(`${p} ${i}`, (r) => (chance(r.rnd, 0.8) ? ownPhone(r, `${p} ${i}`) : ''));
  } else if (layout === 'lists') {
    const e = pick(rnd, w.email);
    const p = pick(rnd, w.phone);
    // Not `, `: a spreadsheet's rounded number may hold one (`4,91512E+12`), and no reader could split that.
    const sep = pick(rnd, ['; ', ' | ']);
    plain(e, (r) => ownEmail(r, e));
    plain(p, (r) => [ownPhone(r, p), ...(chance(r.rnd, 0.4) ? [ownPhone(r, p)] : [])].join(sep));
  } else {
    const e = pick(rnd, w.email);
    plain(e, (r) => ownEmail(r, e));
    for (const q of [w.mobile, w.home, w.work, w.other].filter(() => chance(rnd, 0.6))) {
      const name = q === w.mobile ? pick(rnd, w.mobile) : compose(rnd, w, pick(rnd, w.phone), pick(rnd, q));
      plain(name, (r) => (chance(r.rnd, 0.85) ? ownPhone(r, name, chance(r.rnd, 0.05)) : ''));
    }
    const phone = pick(rnd, w.phone);
    if (cols.length === 3) plain(phone, (r) => ownPhone(r, phone));
  }
  return [...cols, ...someoneElse(rnd, w)];
}

/** Columns of other people's values and ids, some of them, in any layout. */
function someoneElse(rnd: Random, w: Words): Column[] {
  const cols: Column[] = [];
  if (chance(rnd, 0.5)) cols.push({ name: pick(rnd, w.fax), fill: (r) => (chance(r.rnd, 0.5) ? otherPhone(r) : '') });
  if (chance(rnd, 0.4))
    cols.push({ name: pick(rnd, w.assistant), fill: (r) => (chance(r.rnd, 0.3) ? otherPhone(r) : '') });
  if (chance(rnd, 0.4)) cols.push({ name: pick(rnd, w.company), fill: (r) => otherPhone(r) });
  if (chance(rnd, 0.4)) cols.push({ name: pick(rnd, w.owner), fill: (r) => otherEmail(r) });
  if (chance(rnd, 0.6))
    cols.push({ name: pick(rnd, w.ids), fill: (r) => String(10_000_000 + r.n * 7919 + Math.floor(r.rnd() * 999)) });
  return cols;
}

/** Paired type/value columns (Google Contacts' layout), in the language's words. */
function pairedColumns(rnd: Random, w: Words): Column[] {
  const cols: Column[] = [];
  const dash = pick(rnd, [' - ', ' ']);
  const pair = (
    base: string,
    i: number,
    fill: (r: RowState, value: string, type: string) => [string, string],
  ): void => {
    const value = `${base} ${i}${dash}${w.value}`;
    let current: [string, string] = ['', ''];
    cols.push({ name: `${base} ${i}${dash}${w.type}`, fill: (r) => (current = fill(r, value, ''))[0] });
    cols.push({ name: value, fill: () => current[1] });
  };
  const e = pick(rnd, w.email);
  for (let i = 1; i <= 1 + Math.floor(rnd() * 2); i++)
    pair(e, i, (r, column) => {
      if (i > 1 && chance(r.rnd, 0.5)) return ['', ''];
      if (chance(r.rnd, 0.1)) return ['Company', otherEmail(r)];
      const values = [ownEmail(r, column), ...(chance(r.rnd, 0.15) ? [ownEmail(r, column)] : [])];
      return [pick(r.rnd, w.ownTypes), values.join(' ::: ')];
    });
  const p = pick(rnd, w.phone);
  for (let i = 1; i <= 2 + Math.floor(rnd() * 2); i++)
    pair(p, i, (r, column) => {
      if (chance(r.rnd, 0.2)) return ['', ''];
      if (chance(r.rnd, 0.25)) return [pick(r.rnd, w.otherTypes), otherPhone(r)];
      const values = [ownPhone(r, column), ...(chance(r.rnd, 0.15) ? [ownPhone(r, column)] : [])];
      return [pick(r.rnd, w.ownTypes), values.join(' ::: ')];
    });
  return cols;
}

const csvCell = (cell: string, delimiter: string): string =>
  cell.includes(delimiter) || cell.includes('"') || cell.includes('\n') ? `"${cell.replace(/"/g, '""')}"` : cell;

/**
 * Lines of notes before the header, as some tools write them; a spreadsheet saving such a sheet as
 * CSV pads each line with delimiters to the file's width (`Report: All contacts;;;`).
 */
function preamble(rnd: Random, delimiter: string, width: number): string {
  const lines = ['Exported from Contacts on 2024-05-01 09:00', 'Report: All contacts', '', 'Filter: none'];
  const padding = chance(rnd, 0.5) ? delimiter.repeat(width - 1) : '';
  return lines
    .slice(0, 1 + Math.floor(rnd() * lines.length))
    .map((line) => `${line}${padding}\n`)
    .join('');
}

/** The legacy encoding spreadsheets write each language in. */
const LEGACY: Record<string, string> = { pl: 'windows-1250', ja: 'shift_jis' };

/** The file's bytes: UTF-8, with a BOM, UTF-16 with a BOM, or the language's legacy encoding (UTF-8 when a character has no form there). */
function encode(
  text: string,
  encoding: 'utf8' | 'utf8-bom' | 'utf16le-bom' | 'legacy',
  language: string,
): { bytes: Buffer; encoding: string } {
  if (encoding === 'utf8-bom')
    return { bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), encoding };
  if (encoding === 'utf16le-bom')
    return { bytes: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]), encoding };
  if (encoding === 'legacy') {
    const legacy = LEGACY[language] ?? 'windows-1252';
    // Latin names the encoding cannot write (Müller in Shift_JIS) lose their accents, as they would there.
    const plain = (t: string): string =>
      t.replace(/[\u00c0-\u024f]/g, (c) => c.normalize('NFKD').replace(/\p{M}/gu, ''));
    try {
      return { bytes: encodeLegacy(text, legacy), encoding: legacy };
    } catch {
      try {
        return { bytes: encodeLegacy(plain(text), legacy), encoding: legacy };
      } catch {
        // Still a character it cannot write: the file stays UTF-8.
      }
    }
  }
  return { bytes: Buffer.from(text), encoding: 'utf8' };
}

/** One generated export. */
export function generateExport(seed: number, index: number, opts: ExportOptions = {}): GeneratedExport {
  const rnd = mulberry32(seed * 1000 + index);
  const language = pick(rnd, Object.keys(WORDS));
  const layout = pick(rnd, ['flat', 'flat', 'numbered', 'paired', 'lists'] as const);
  const w = WORDS[language] as Words;
  const columns = layoutColumns(rnd, language, layout);
  const countryKind = pick(rnd, ['none', 'name', 'name', 'name', 'locale'] as const);
  let countryName: string | undefined;
  if (countryKind !== 'none') {
    countryName = pick(rnd, countryKind === 'locale' ? w.locale : w.country);
    const name = countryName;
    const at = 2 + Math.floor(rnd() * (columns.length - 1));
    columns.splice(at, 0, { name, fill: (r) => countryCell(r, language, countryKind === 'locale') });
  }
  // The country cell is filled first: whether it says the country decides what can be known.
  const order = columns.map((c, i) => (c.name === countryName ? -1 : i)).sort((a, b) => a - b);
  const [min, max] = opts.rows ?? [100, 300];
  const count = min + Math.floor(rnd() * (max - min + 1));
  const rows: RowTruth[] = [];
  const lines: string[][] = [];
  for (let n = 0; n < count; n++) {
    const truth: RowTruth = { expected: [], allowed: new Set(), never: new Set() };
    const state: RowState = {
      rnd,
      n,
      country: pick(rnd, chance(rnd, 0.85) ? (HOME[language] as string[]) : ALL_COUNTRIES),
      countryKnown: countryKind !== 'none',
      truth,
      first: pick(rnd, FIRST),
      last: pick(rnd, LAST),
      opts,
    };
    const cells: string[] = new Array<string>(columns.length).fill('');
    for (const i of order) {
      const at = i === -1 ? columns.findIndex((c) => c.name === countryName) : i;
      cells[at] = (columns[at] as Column).fill(state);
    }
    rows.push(truth);
    lines.push(cells);
  }
  const delimiter = pick(rnd, [',', ',', ';', '\t']);
  const header = columns.map((c) => c.name);
  const text = [header, ...lines].map((r) => r.map((c) => csvCell(c, delimiter)).join(delimiter)).join('\n') + '\n';
  const notes = opts.preambles === true && chance(rnd, 0.3) ? preamble(rnd, delimiter, header.length) : '';
  const encoding = pick(rnd, ['utf8', 'utf8', 'utf8-bom', 'utf16le-bom', 'legacy', 'legacy'] as const);
  const written = encode(notes + text, encoding, language);
  return {
    name: `export-${seed}-${index}-${language}-${layout}.csv`,
    bytes: written.bytes,
    encoding: written.encoding,
    language,
    layout,
    header,
    cells: lines,
    rows,
  };
}
