/**
 * Which text encoding a CSV export is in, when it is not UTF-8 (nor UTF-16), and its bytes as
 * UTF-8.
 *
 * Spreadsheets and CRMs still write exports in the legacy code page of the user's language:
 * Windows-125x (Latin-1 is Windows-1252 for every decoder that follows the WHATWG Encoding
 * standard, Node's included), ISO-8859-2/15, and the double-byte encodings of Japanese, Chinese
 * and Korean. Any byte sequence decodes in a single-byte code page, and most decode in several
 * double-byte ones, so decoding without an error proves little: each candidate's text is judged by
 * the letters it produces and where they stand in its words (what a language written in that
 * encoding uses and its spelling rules, kept as data below), and when two candidates give different
 * text that both read well, the file is refused with both named rather than read with one picked
 * at random. The detection reads a prefix of the file; the whole
 * file is then decoded as a stream, and a byte the chosen encoding does not define makes its record
 * a malformed row (with its line), never a U+FFFD that would be hashed.
 */
import { InputError } from '../errors.js';
import { headerLanguages, isAccentedWord, LANGUAGES } from '../identifiers/vocabulary/index.js';

/** A WHATWG encoding name (`new TextDecoder(label).encoding`): `utf-8`, `utf-16le`, `windows-1252`, `shift_jis`… */
export type CsvEncoding = string;

/** How the encoding was chosen: its byte-order mark, the bytes themselves, or the `encoding` option. */
export type CsvEncodingSource = 'bom' | 'detected' | 'option';

/**
 * The canonical name of an encoding label (`latin1` → `windows-1252`, `sjis` → `shift_jis`), or
 * undefined when no decoder knows it.
 */
export function canonicalEncoding(label: string): CsvEncoding | undefined {
  try {
    return new TextDecoder(label.trim()).encoding;
  } catch {
    return undefined;
  }
}

const DISPLAY: Readonly<Record<string, string>> = {
  shift_jis: 'Shift_JIS',
  big5: 'Big5',
  gbk: 'GBK',
  gb18030: 'GB18030',
};

/** The usual spelling of an encoding's name: UTF-8, Windows-1252, Shift_JIS, EUC-KR, ISO-8859-2. */
export function encodingLabel(encoding: CsvEncoding): string {
  const known = DISPLAY[encoding];
  if (known !== undefined) return known;
  if (encoding.startsWith('windows-')) return `Windows-${encoding.slice('windows-'.length)}`;
  return encoding.toUpperCase();
}

// ---------------------------------------------------------------------------------------------
// Knowledge: the letters each language uses beyond ASCII, and which languages each candidate
// encoding is written in. `core` letters are common in the language; `rare` ones occur (loan
// words, names) but are weak evidence. Case is derived.

interface Language {
  readonly name: string;
  readonly core: string;
  readonly rare?: string;
  /** Letters of another script than Latin: a word mixing them with ASCII letters is not plausible. */
  readonly script?: 'cyrillic' | 'greek';
  /** Where the language's spelling puts some of its letters: a word breaking a rule is not of this language. */
  readonly context?: readonly Context[];
}

/**
 * A spelling rule of a language: its `letters` only come after (`after`) or before (`before`) one
 * of the letters listed, never after (`notAfter`) or before (`notBefore`) one of those listed; `^`
 * and `$` stand for the word's start and end. Lower case; the word is compared in lower case.
 * Only rules without exceptions in the language's own words belong here: a rule that rejects a real
 * word would count a file's own reading against it.
 */
interface Context {
  readonly letters: string;
  readonly after?: string;
  readonly before?: string;
  readonly notAfter?: string;
  readonly notBefore?: string;
}

/** Consonant letters, as the neighbours syllabic letters (Slovak ŕ, ĺ) and Czech ů need. */
const CONSONANTS = 'bcdfghjklmnpqrstvwxzčďľňřšťžĺŕ';

const GERMAN: Language = { name: 'German', core: 'äöüß' };
const WESTERN: readonly Language[] = [
  GERMAN,
  { name: 'French', core: 'éèàçêâîôûùëïœ', rare: 'ÿæ' },
  { name: 'Spanish', core: 'áéíóúñü' },
  { name: 'Portuguese', core: 'áàâãçéêíóôõú', rare: 'ü' },
  { name: 'Italian', core: 'àèéìòù', rare: 'íóîú' },
  { name: 'Dutch', core: 'ëïéè', rare: 'öüáóú' },
  { name: 'Swedish', core: 'åäö', rare: 'é' },
  { name: 'Danish/Norwegian', core: 'æøå', rare: 'éó' },
  { name: 'Finnish', core: 'äö', rare: 'åšž' },
  { name: 'Icelandic', core: 'áéíóúæö', rare: 'ðþý' },
  { name: 'Catalan', core: 'àçèéíïòóúü' },
];
const CENTRAL: readonly Language[] = [
  GERMAN,
  {
    name: 'Polish',
    core: 'ąćęłńóśźż',
    // ć, ń, ś, ź before a vowel are written ci, ni, si, zi (Muńoz, Peńa are Spanish ñ read as ń).
    context: [{ letters: 'ćńśź', notBefore: 'aeiouyóąę' }],
  },
  {
    name: 'Czech',
    core: 'áčďéěíňóřšťúůýž',
    context: [
      // ě only after b, p, v, f, m, d, t, n; ů never starts a word; ď, ť, ň before e, i are written de, ti, ně...
      { letters: 'ě', after: 'bpvfmdtn' },
      { letters: 'ů', after: CONSONANTS },
      { letters: 'ďťň', notBefore: 'eií' },
      { letters: 'ř', notAfter: 'r', notBefore: 'r' },
    ],
  },
  {
    name: 'Slovak',
    core: 'áčďéíľňóšťúýž',
    rare: 'äĺŕô',
    // Syllabic ŕ, ĺ stand between consonants (vŕba, dĺžka); ď, ť, ň before e, i are written de, ti, ne.
    context: [
      { letters: 'ŕĺ', after: CONSONANTS, before: CONSONANTS },
      { letters: 'ďťň', notBefore: 'eií' },
    ],
  },
  { name: 'Hungarian', core: 'áéíóöőúüű' },
  { name: 'Slovene', core: 'čšž' },
  { name: 'Croatian', core: 'čćđšž' },
  { name: 'Romanian', core: 'ăâîşţ' },
  { name: 'Albanian', core: 'ëç' },
];
const BALTIC: readonly Language[] = [
  GERMAN,
  {
    name: 'Lithuanian',
    core: 'ąčęėįšųūž',
    // ė never follows a vowel; ę, ų end a word or stand before s, š, z, ž (or j: gerųjų).
    context: [
      { letters: 'ė', notAfter: 'aeiouyąęėįųū' },
      { letters: 'ęų', before: 'sšzžj$' },
    ],
  },
  { name: 'Latvian', core: 'āčēģīķļņšūž' },
  { name: 'Estonian', core: 'äöõüšž' },
];
const TURKISH: readonly Language[] = [{ name: 'Turkish', core: 'çğıöşüİ', rare: 'âîû' }, ...WESTERN];

const CYRILLIC: readonly Language[] = [{ name: 'Cyrillic', core: range(0x0400, 0x045f) + 'Ґґ', script: 'cyrillic' }];
const GREEK: readonly Language[] = [
  {
    name: 'Greek',
    core: range(0x0384, 0x03ce),
    script: 'greek',
    // ς ends a word, σ never does (Russian `Петров` read in Windows-1253 is `Οεςπξβ`).
    context: [
      { letters: 'ς', before: '$' },
      { letters: 'σ', notBefore: '$' },
    ],
  },
];

const KANA = range(0x3041, 0x3096) + range(0x30a1, 0x30fa) + 'ー';
/** Half-width katakana: old systems still write them, but Korean text read as Shift_JIS is made of them. */
const HALF_WIDTH_KANA = range(0xff66, 0xff9f);
/** Frequent characters (common words, family and given names, place words) per written language. */
const JAPANESE_KANJI =
  '日一国人年大十二本中長出三時行見月後前生五間上東四今金九入学高円子外八六下来気小七山話女北午百書先名川千水半男西電校語土木聞食車何南万毎白天母火右読友左休父雨田藤村野佐鈴橋伊渡辺林加吉松口清斎森池阿部石原岡谷太郎美和恵雄幸真由香智健翔陽花京都府県市区町丁目番地号阪神奈浜古屋福札幌株式会社営業'; // prettier-ignore
const SIMPLIFIED_HAN =
  '的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发天如然作方成者日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知现长理已明开女力问因真点新全由东海关被高文德王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤伟芳娜敏静丽强磊洋勇艳杰娟涛明超秀霞平刚桂英华玉兰红梅建志春晓云波辉鹏飞宇浩俊婷雪琳晨欣怡佳思雨涵轩博北京海广州深圳市省区路街号楼室县镇村公司有限'; // prettier-ignore
const TRADITIONAL_HAN =
  '的一是不了人我在有他這為之大來以個中上們到說國和地也子時道出而要於就下得可你年生自會那後能對著事其裡所去行過家十用發天如然作方成者日都三小軍二無同麼經法當起與好看學進種將還分此心前面又定見只主沒公從知現長理已明開女力問因真點新全由東海關被高文德王李張劉陳楊黃趙吳周徐孫馬朱胡郭何林羅鄭梁謝宋唐許韓馮鄧曹彭曾蕭田董袁潘蔣蔡余杜葉程蘇魏呂丁任沈姚盧姜崔鍾譚陸汪范金石廖賈夏韋付白鄒孟熊秦邱江尹薛段雷侯龍史陶黎賀顧毛郝龔邵萬錢嚴武戴莫孔向湯偉芳娜敏靜麗強磊洋勇艷傑娟濤明超秀霞平剛桂英華玉蘭紅梅建志春曉雲波輝鵬飛宇浩俊婷雪琳晨欣怡佳思雨涵軒博台北臺中高雄市縣區路街號樓室鄉鎮村公司有限'; // prettier-ignore
const HANGUL_SYLLABLES =
  '이김박최정강조윤장임한오서신권황안송류전홍고문양손배백허유남심노하곽성차주우구민라진지엄채원천방공현함변염여추도소석선설마길연위표명기반왕금옥육인맹제모탁국어은봉경사상수영희철호숙자미혜순준아예태동재훈승혁용규광대다나리가니에의를는을와과로으서만까요습했것들그저울시번아파트회님드립니감사합고객센터'; // prettier-ignore
/**
 * The characters of the vocabulary's Japanese column-name and type words (携帯, 自宅, 勤務先, 種類,
 * 値): the words a Japanese export is most certain to hold, in its header and its type cells.
 */
const JAPANESE_VOCABULARY = [
  ...new Set(
    Object.values(LANGUAGES.ja ?? {})
      .flat()
      .join(''),
  ),
]
  .filter((c) => c.charCodeAt(0) >= 0x80)
  .join('');
const HAN = range(0x4e00, 0x9fff);
const HANGUL = range(0xac00, 0xd7a3);

const JAPANESE: readonly Language[] = [
  { name: 'Japanese', core: KANA + JAPANESE_KANJI + JAPANESE_VOCABULARY, rare: HAN + HALF_WIDTH_KANA },
];
const CHINESE_SIMPLIFIED: readonly Language[] = [{ name: 'Chinese', core: SIMPLIFIED_HAN, rare: HAN }];
const CHINESE_TRADITIONAL: readonly Language[] = [{ name: 'Chinese', core: TRADITIONAL_HAN, rare: HAN }];
const KOREAN: readonly Language[] = [{ name: 'Korean', core: HANGUL_SYLLABLES, rare: HANGUL + HAN }];

/**
 * The encodings detected, in the order of preference when several give the same text (a German
 * file reads the same in Windows-1252, -1250 and -1257: it is named Windows-1252).
 * Others (KOI8-R, ISO-8859-5/7, EUC-TW, ...) are read with `encoding`; detecting them would
 * confuse them with the ones here.
 */
const CANDIDATES: readonly { encoding: CsvEncoding; languages: readonly Language[]; singleByte: boolean }[] = [
  { encoding: 'windows-1252', languages: WESTERN, singleByte: true },
  { encoding: 'iso-8859-15', languages: WESTERN, singleByte: true },
  { encoding: 'windows-1250', languages: CENTRAL, singleByte: true },
  { encoding: 'iso-8859-2', languages: CENTRAL, singleByte: true },
  { encoding: 'windows-1257', languages: BALTIC, singleByte: true },
  { encoding: 'windows-1254', languages: TURKISH, singleByte: true },
  { encoding: 'windows-1251', languages: CYRILLIC, singleByte: true },
  { encoding: 'windows-1253', languages: GREEK, singleByte: true },
  { encoding: 'shift_jis', languages: JAPANESE, singleByte: false },
  { encoding: 'euc-jp', languages: JAPANESE, singleByte: false },
  { encoding: 'gbk', languages: CHINESE_SIMPLIFIED, singleByte: false },
  { encoding: 'big5', languages: CHINESE_TRADITIONAL, singleByte: false },
  { encoding: 'euc-kr', languages: KOREAN, singleByte: false },
];

/** Characters any text may hold, whatever its language: they are evidence of nothing. */
const NEUTRAL = new Set(
  '\u00a0«»–—‘’‚“”„…•·€£°§©®™¿¡ºª×\u3000、。「」『』（）・！？：；，．－～＠＃＆＊＋＝／' + range(0xff10, 0xff19),
);

/** The characters from..to (BMP), as one string: built from their UTF-16 units at once (a loop appending them took 13 ms at load). */
function range(from: number, to: number): string {
  const units = Uint16Array.from({ length: to - from + 1 }, (_, i) => from + i);
  return Buffer.from(units.buffer).toString('utf16le');
}

/** A letter's weight in a language: 1 core, RARE_WEIGHT rare, 0 not used. */
const RARE_WEIGHT = 0.4;
/** The weight of letters explained by the 1st, 2nd, ... language of a file (exports mix a few). */
const RANK_WEIGHTS = [1, 0.6, 0.4, 0.3, 0.2];

interface LanguageTable {
  readonly language: Language;
  readonly weights: ReadonlyMap<string, number>;
}

const tables = new Map<Language, LanguageTable>();

function tableOf(language: Language): LanguageTable {
  let table = tables.get(language);
  if (table === undefined) {
    const weights = new Map<string, number>();
    const add = (letters: string, w: number): void => {
      for (const c of letters) {
        for (const v of [c, c.toUpperCase(), c.toLowerCase()]) {
          if ([...v].length === 1 && (weights.get(v) ?? 0) < w) weights.set(v, w);
        }
      }
    };
    add(language.rare ?? '', RARE_WEIGHT);
    add(language.core, 1);
    table = { language, weights };
    tables.set(language, table);
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// Scoring.

/** A candidate's reading of the sample. */
export interface EncodingReading extends Scored {
  encoding: CsvEncoding;
  text: string;
}

const C1_CONTROL = /[\u0080-\u009f]/;
const WORD = /\p{L}+/gu;
const LETTER = /\p{L}/u;

/** How well a text reads: its score, and what each character counts towards it. */
interface Scored {
  /** Share (0..1) of the non-ASCII characters explained by the languages, weighted. */
  score: number;
  /** Per UTF-16 unit of the text: the character's weight (0..1); NaN for ASCII and neutral punctuation. */
  credits: Float32Array;
}

/**
 * How well `text` reads as the candidate's languages: non-ASCII characters are counted (neutral
 * punctuation left out) and explained greedily by the languages that explain most. Implausible,
 * whatever the letters: in a single-byte encoding, a word with an upper-case letter after a
 * lower-case one, or with three non-ASCII letters in a row (double-byte text read one byte at a
 * time looks like that), or whose non-ASCII letters no one language has; Cyrillic or Greek letters
 * in a word with ASCII letters.
 */
export function scoreText(text: string, languages: readonly Language[], singleByte: boolean): Scored {
  const counts = new Map<string, number>();
  const credits = new Float32Array(text.length).fill(Number.NaN);
  const plausible: [number, string][] = [];
  // Non-ASCII characters that count: letters, and every other symbol (implausible: credit 0).
  let total = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c.charCodeAt(0) < 0x80 || NEUTRAL.has(c)) continue;
    total++;
    credits[i] = 0;
  }
  for (const m of text.matchAll(WORD)) {
    const word = m[0];
    const foreign = [...word].filter((c) => c.charCodeAt(0) >= 0x80 && !NEUTRAL.has(c));
    if (foreign.length === 0 || (singleByte && !plausibleWord(word, foreign, languages))) continue;
    plausible.push([m.index, word]);
    for (const c of foreign) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  if (total === 0) return { score: 1, credits };
  const credit = explained(counts, languages);
  let sum = 0;
  for (const [at, word] of plausible) {
    for (let i = 0; i < word.length; i++) {
      const w = credit.get(word[i] as string);
      if (w !== undefined) credits[at + i] = w;
    }
  }
  for (const [c, n] of counts) sum += n * (credit.get(c) ?? 0);
  return { score: sum / total, credits };
}

function plausibleWord(word: string, foreign: readonly string[], languages: readonly Language[]): boolean {
  if (/\p{Ll}\p{Lu}/u.test(word)) return false;
  const lower = word.toLowerCase();
  if (languages[0]?.script !== undefined) return !/[A-Za-z]/.test(word) && languages.some((l) => spelledAs(lower, l));
  if (/[^\0-\x7f]{3}/u.test(word)) return false;
  return languages.some((l) => foreign.every((c) => tableOf(l).weights.has(c)) && spelledAs(lower, l));
}

/** Whether a word (lower case) keeps the spelling rules of a language. */
function spelledAs(word: string, language: Language): boolean {
  // A letter alone is an initial (`Σ.`): no rule applies.
  if (word.length < 2) return true;
  for (const rule of language.context ?? []) {
    for (let i = 0; i < word.length; i++) {
      if (!rule.letters.includes(word[i] as string)) continue;
      const before = word[i - 1] ?? '^';
      const after = word[i + 1] ?? '$';
      if (rule.after !== undefined && !rule.after.includes(before)) return false;
      if (rule.before !== undefined && !rule.before.includes(after)) return false;
      if (rule.notAfter?.includes(before) === true || rule.notBefore?.includes(after) === true) return false;
    }
  }
  return true;
}

/**
 * What each letter counts: its weight in the language that explains it, the language that
 * explains most of the letters first, then the one that explains most of the rest, and so on,
 * each later one counting less (exports mix a few languages, not every one).
 */
function explained(counts: Map<string, number>, languages: readonly Language[]): Map<string, number> {
  const left = new Map(counts);
  const unused = languages.map(tableOf);
  const credit = new Map<string, number>();
  for (const rankWeight of RANK_WEIGHTS) {
    let best: { table: LanguageTable; gain: number } | undefined;
    for (const table of unused) {
      let gain = 0;
      for (const [c, n] of left) gain += n * (table.weights.get(c) ?? 0);
      if (gain > 0 && (best === undefined || gain > best.gain)) best = { table, gain };
    }
    if (best === undefined) break;
    for (const c of [...left.keys()]) {
      const w = best.table.weights.get(c);
      if (w === undefined) continue;
      credit.set(c, w * rankWeight);
      left.delete(c);
    }
    unused.splice(unused.indexOf(best.table), 1);
  }
  return credit;
}

/** Every candidate that decodes the sample without error and without C1 control characters, best first. */
export function readings(sample: Uint8Array): EncodingReading[] {
  const out: EncodingReading[] = [];
  for (const candidate of CANDIDATES) {
    let text: string;
    try {
      text = new TextDecoder(candidate.encoding, { fatal: true }).decode(sample, { stream: true });
    } catch {
      continue;
    }
    if (C1_CONTROL.test(text)) continue;
    out.push({ encoding: candidate.encoding, text, ...scoreText(text, candidate.languages, candidate.singleByte) });
  }
  // Stable: equal scores keep the order of preference.
  return out.sort((a, b) => b.score - a.score);
}

/** Below this score the best reading is not believed. */
export const MIN_SCORE = 0.6;
/** A single-byte reading scoring this much, aligned with the best, must be told from it too. */
const CONTENDER_SCORE = 0.3;
/** A double-byte and a single-byte reading giving other text: the best must score this much more. */
const SCORE_MARGIN = 0.12;
/** Two single-byte readings: the characters they read otherwise, at least ... */
const MIN_DIFFERING = 6;
/** ... unless the other reads this many of them as no word of its languages, and the best none (any score) ... */
const MIN_IMPLAUSIBLE = 3;
/** ... the best scoring this much more per share of the characters that differ ... */
const ALIGNED_MARGIN = 0.2;
/** ... and giving those characters this much more weight on average. */
const DIFFERENCE_MARGIN = 0;

/**
 * The encoding of a sample that is not UTF-8: the best reading when it reads well and no other
 * reading that gives different text comes near it. Throws InputError otherwise, naming the
 * encodings that were close (never a conversion command: any guess would garble the file).
 */
export function detectLegacyEncoding(sample: Uint8Array, name: string, line: number): CsvEncoding {
  const all = readings(sample);
  const best = all[0];
  const where = `${name} is not UTF-8 text (first invalid byte on line ${line})`;
  if (best === undefined || best.score < MIN_SCORE) {
    throw new InputError('input_encoding_unknown', `${where}, and its encoding could not be told`, {
      fix: 'export it as "CSV UTF-8", or pass --encoding NAME (for example windows-1252, shift_jis)',
    });
  }
  // Believed readings, and single-byte ones a little below (a file mixing many Western languages
  // scores low in Windows-1252, and must still be told from Windows-1250).
  const contenders = all.filter(
    (r) => r.score >= MIN_SCORE || (r.text.length === best.text.length && r.score >= CONTENDER_SCORE),
  );
  // The reading clearly better than every other contender, if any (at most one can be).
  const chosen =
    contenders.find((r) => r.score >= MIN_SCORE && contenders.every((o) => o === r || clearlyBetter(r, o))) ??
    byHeaderLanguage(contenders);
  if (chosen === undefined) {
    const rivals = contenders.filter((r) => r !== best && !clearlyBetter(best, r));
    const names = [...new Set([best, ...rivals].map((r) => preferred(r, all)))];
    throw new InputError(
      'input_encoding_ambiguous',
      `${where}; it reads as ${names.map(encodingLabel).join(' or ')}, which give different text`,
      { fix: `pass the one it was exported in: ${names.map((n) => `--encoding ${n}`).join(' or ')}` },
    );
  }
  return preferred(chosen, all);
}

/**
 * The code pages software writes exports in, per language of the header words (src/identifiers/
 * vocabulary/). English has none: it is written in every code page.
 */
const USUAL_ENCODINGS: Readonly<Record<string, readonly CsvEncoding[]>> = {
  ...Object.fromEntries(['de', 'fr', 'es', 'pt', 'it', 'nl', 'sv'].map((l) => [l, ['windows-1252', 'iso-8859-15']])),
  pl: ['windows-1250', 'iso-8859-2'],
  ja: ['shift_jis', 'euc-jp'],
};

/**
 * Between single-byte readings that no letter tells apart (`Imię` or `Imiê`, one word in the
 * file): the one in a usual code page of the header's language (a Polish header: Windows-1250),
 * when it reads every character it reads otherwise as a word of its languages and no rival reads
 * a column-name word there. Undefined when the header is English, of no known language, or of
 * languages with other code pages, and when the readings are not aligned.
 */
function byHeaderLanguage(contenders: readonly EncodingReading[]): EncodingReading | undefined {
  const usual = contenders.filter((r) => {
    const languages = headerLanguages(r.text);
    return (
      r.score >= MIN_SCORE &&
      languages.length > 0 &&
      languages.every((l) => USUAL_ENCODINGS[l]?.includes(r.encoding) === true)
    );
  });
  const reading = usual[0];
  if (reading === undefined || usual.some((r) => r.text !== reading.text)) return undefined;
  const fits = (o: EncodingReading): boolean => {
    if (o.text === reading.text) return true;
    if (o.text.length !== reading.text.length) return false;
    const c = compare(reading, o);
    return c.implausibleA === 0 && c.knownB === 0;
  };
  return contenders.every(fits) ? reading : undefined;
}

/** Of the encodings giving the same text as `reading`, the first in the order of preference. */
function preferred(reading: EncodingReading, all: readonly EncodingReading[]): CsvEncoding {
  const same = CANDIDATES.find((c) => all.some((r) => r.encoding === c.encoding && r.text === reading.text));
  return (same ?? reading).encoding;
}

/**
 * Whether reading `a` is clearly better than `b`. Readings that do not align (single- against
 * double-byte) are compared by score. Two single-byte readings align character by character, and
 * only the characters they read otherwise tell them apart: `a` reads all of them as words and `b`
 * at least MIN_IMPLAUSIBLE as none (`a` never wins with one it reads as none); else enough of them,
 * a score margin in proportion to their share, and no less weight on them in `a` than in `b` (a
 * whole-score margin alone let a few French letters read as Czech move the whole cover, and a file
 * was misread).
 */
function clearlyBetter(a: EncodingReading, b: EncodingReading): boolean {
  if (a.text === b.text) return true;
  if (a.text.length !== b.text.length) return a.score - b.score >= SCORE_MARGIN;
  const c = compare(a, b);
  // Where they differ, `b` reads as no word of its languages and `a` always does: `a`, whatever the
  // scores (a letter list as large as Czech's explains a mix of Western names better than the
  // Western languages each explaining their part). The reverse: never `a`.
  if (c.implausibleA > 0) return false;
  if (c.implausibleB >= MIN_IMPLAUSIBLE) return true;
  // Where they differ, `a` reads a column-name word of the vocabulary (`Città`) and `b` none
  // (`Cittŕ`): `a`. The reverse: never `a`.
  if (c.knownB > 0) return false;
  if (c.knownA > 0) return true;
  // Every word of `a` is of its languages, and `b` needs words of none of its own (a French `Noé`
  // read the same in Windows-1257, whose Baltic languages have no `é`): `a`.
  if (c.wordlessA === 0 && c.wordlessB >= MIN_IMPLAUSIBLE) return true;
  return (
    c.differ >= MIN_DIFFERING &&
    a.score - b.score >= (ALIGNED_MARGIN * c.differ) / c.nonAscii &&
    c.difference / c.differ >= DIFFERENCE_MARGIN
  );
}

/** Where two aligned readings (same length) differ, what each reads there. */
interface Comparison {
  /** Characters read otherwise, and non-ASCII characters of `a`. */
  differ: number;
  nonAscii: number;
  /** The sum of `a`'s weights minus `b`'s on the characters read otherwise. */
  difference: number;
  /** Characters read otherwise that `a` (`b`) reads as no word of its languages. */
  implausibleA: number;
  implausibleB: number;
  /** Words read otherwise that are column-name words of the vocabulary in `a` (`b`) only. */
  knownA: number;
  knownB: number;
  /** Characters anywhere (read otherwise or not) that `a` (`b`) reads as no word of its languages. */
  wordlessA: number;
  wordlessB: number;
}

function compare(a: EncodingReading, b: EncodingReading): Comparison {
  const weight = (r: EncodingReading, i: number): number => {
    const w = r.credits[i] as number;
    if (!Number.isNaN(w)) return w;
    // A neutral symbol: plausible between words, not inside one (`ºtefan`).
    return LETTER.test(r.text[i - 1] ?? '') || LETTER.test(r.text[i + 1] ?? '') ? 0 : 1;
  };
  const c = {
    ...{ differ: 0, nonAscii: 0, difference: 0, implausibleA: 0, implausibleB: 0 },
    ...{ knownA: 0, knownB: 0, wordlessA: 0, wordlessB: 0 },
  };
  for (let i = 0; i < a.text.length; i++) {
    if (a.text.charCodeAt(i) >= 0x80) c.nonAscii++;
    if (a.credits[i] === 0) c.wordlessA++;
    if (b.credits[i] === 0) c.wordlessB++;
    if (a.text.charCodeAt(i) === b.text.charCodeAt(i)) continue;
    const [wa, wb] = [weight(a, i), weight(b, i)];
    c.difference += wa - wb;
    c.differ++;
    if (wa === 0) c.implausibleA++;
    if (wb === 0) c.implausibleB++;
  }
  c.knownA = knownOnlyIn(a.text, b.text);
  c.knownB = knownOnlyIn(b.text, a.text);
  return c;
}

/**
 * The words of `text` that are column-name words of the vocabulary written beyond ASCII
 * (isAccentedWord: `società`, `geschäftlich`, `país`) and that `other` (aligned) reads otherwise.
 * Header words are few, but they are the file's most certain words: one is evidence enough.
 */
function knownOnlyIn(text: string, other: string): number {
  let n = 0;
  for (const m of text.matchAll(WORD)) {
    const word = m[0];
    const there = other.slice(m.index, m.index + word.length);
    if (word !== there && isAccentedWord(word.toLowerCase()) && !isAccentedWord(there.toLowerCase())) n++;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Decoding.

const NOT_UTF8 = Buffer.from([0xff]);

/**
 * A string as UTF-8 bytes, each match of `invalid` replaced by a byte that is never UTF-8 (0xFF):
 * the workers' UTF-8 check then rejects its record (`invalid_utf8`, with its line) instead of
 * hashing a value that decoding changed.
 */
export function utf8WithMarks(text: string, invalid: RegExp): Buffer {
  invalid.lastIndex = 0;
  if (text.search(invalid) === -1) return Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  let last = 0;
  for (const m of text.matchAll(invalid)) {
    parts.push(Buffer.from(text.slice(last, m.index), 'utf8'), NOT_UTF8);
    last = m.index + m[0].length;
  }
  parts.push(Buffer.from(text.slice(last), 'utf8'));
  return Buffer.concat(parts);
}

const REPLACEMENT = /\ufffd/gu;

/**
 * A stream in a legacy encoding as UTF-8. A byte sequence the encoding does not define becomes
 * 0xFF (its record is then malformed, `invalid_utf8`); a U+FFFD the text really holds (only
 * GB18030 can encode one) is rejected the same way, the decoder cannot tell them apart.
 */
export async function* legacyToUtf8(input: AsyncIterable<Buffer>, encoding: CsvEncoding): AsyncGenerator<Buffer> {
  const decoder = new TextDecoder(encoding);
  for await (const chunk of input) {
    const text = decoder.decode(chunk, { stream: true });
    if (text.length > 0) yield utf8WithMarks(text, REPLACEMENT);
  }
  const tail = decoder.decode();
  if (tail.length > 0) yield utf8WithMarks(tail, REPLACEMENT);
}
