/**
 * Column-name words of ten languages, kept as data (one module per language, see language.ts and
 * docs/columns.md), and how a header name is read with them: split into words (spaces,
 * punctuation, camelCase, letters and digits, Latin and Japanese script), each word looked up
 * whole or split into vocabulary words (compounds: `Mobiltelefon` = mobil + telefon,
 * `携帯電話番号` = 携帯 + 電話 + 番号). Imported statically: nothing is read from disk at run time.
 */
import { de } from './de.js';
import { en } from './en.js';
import { es } from './es.js';
import { fr } from './fr.js';
import { it } from './it.js';
import { ja } from './ja.js';
import type { LanguageWords } from './language.js';
import { nl } from './nl.js';
import { pl } from './pl.js';
import { pt } from './pt.js';
import { sv } from './sv.js';

/** The languages whose words are known, by ISO 639-1 code. */
export const LANGUAGES: Readonly<Record<string, LanguageWords>> = { en, de, fr, es, pt, it, nl, pl, sv, ja };

export type WordClass = keyof LanguageWords;
/**
 * When one folded word is in several classes (`mobile`: a phone word in English, French and
 * Italian), the first class of this list wins; a test keeps the data free of such conflicts
 * between different classes.
 */
export const WORD_CLASSES: readonly WordClass[] = [
  'someoneElse',
  'line',
  'email',
  'phone',
  'country',
  'locale',
  'subdivision',
  'pairType',
  'pairValue',
  'own',
];

/** A word as compared: NFKD, marks dropped, lowercase. */
export function foldWord(word: string): string {
  return word
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}ー]/u;
const CJK_RUN = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}ー]+)/gu;

/**
 * A table built on its first use, not at import: the hashing workers import this module (for
 * typeSaysSomeoneElse) but read the tables only for paired type columns, and building them all
 * cost each worker about 20 ms of start-up.
 */
function once<T>(build: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= build());
}

/** Folded word → its class (first class of WORD_CLASSES when in several). */
const wordClasses = once((): ReadonlyMap<string, WordClass> => {
  const table = new Map<string, WordClass>();
  for (const cls of [...WORD_CLASSES].reverse())
    for (const language of Object.values(LANGUAGES))
      for (const w of language[cls]) for (const f of splitWords(w)) table.set(f, cls);
  return table;
});

/**
 * The vocabulary's words written with letters beyond ASCII, as written (NFC, lower case), in every
 * language: `città`, `société`, `geschäftlich`. Evidence of a legacy encoding (src/ingest/encodings.ts):
 * a header word that reads as one of them in one code page and as no word in another.
 */
const accentedWords = once((): ReadonlySet<string> => {
  const words = new Set<string>();
  for (const language of Object.values(LANGUAGES))
    for (const cls of WORD_CLASSES)
      for (const w of language[cls])
        for (const part of w
          .normalize('NFC')
          .toLowerCase()
          .split(/[^\p{L}]+/u))
          if (/[^\0-\x7f]/u.test(part) && !CJK.test(part)) words.add(part);
  return words;
});

/** Whether `word` (lower case, NFC) is one of the vocabulary's words written with letters beyond ASCII. */
export function isAccentedWord(word: string): boolean {
  return accentedWords().has(word);
}

/** Each language's words, folded: which languages a header word belongs to. */
const languageWords = once((): readonly [string, ReadonlySet<string>][] =>
  Object.entries(LANGUAGES).map(([code, language]) => [
    code,
    new Set(WORD_CLASSES.flatMap((cls) => language[cls].flatMap(splitWords))),
  ]),
);

/**
 * The languages of a header row: of the first `lines` of a text, the line with the most
 * vocabulary words (a preamble may come first), and the languages whose words it has most
 * (several when they tie: `Telefon` is German, Swedish, Polish...). Empty when no line has any.
 */
export function headerLanguages(text: string, lines = 20): string[] {
  let best: { known: number; hits: Map<string, number> } = { known: 0, hits: new Map() };
  for (const line of text.split(/\r?\n/, lines)) {
    const words = splitWords(line);
    const hits = new Map<string, number>();
    let known = 0;
    for (const w of words) {
      if (wordClasses().has(w)) known++;
      for (const [code, set] of languageWords()) if (set.has(w)) hits.set(code, (hits.get(code) ?? 0) + 1);
    }
    if (known > best.known) best = { known, hits };
  }
  const max = Math.max(0, ...best.hits.values());
  return max === 0 ? [] : [...best.hits].filter(([, n]) => n === max).map(([code]) => code);
}

/**
 * A name's words, folded: split on anything but letters and digits, on camelCase, between
 * letters and digits and between Latin and Japanese script; a lone `e` is joined to the next
 * word (`E-Mail`, `e-post`, `Eメール`).
 */
export function splitWords(name: string): string[] {
  const raw = foldWord(
    name
      .replace(/['’]s\b/g, '')
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .replace(CJK_RUN, ' $1 ')
      .replace(/(\p{L})(\p{N})|(\p{N})(\p{L})/gu, '$1$3 $2$4'),
  )
    .split(/[^\p{L}\p{N}ー]+/u)
    .filter((w) => w !== '');
  const out: string[] = [];
  for (let i = 0; i < raw.length; i++) {
    const w = raw[i] as string;
    const next = raw[i + 1];
    if (w === 'e' && next !== undefined && /^\p{L}/u.test(next)) {
      out.push(w + next);
      i++;
    } else out.push(w);
  }
  return out;
}

/** One word of a name: its text and class (undefined: not a known word). */
export interface NamePart {
  word: string;
  cls: WordClass | undefined;
}

/** Whether `piece` may be a part of a compound: Japanese words of any length, others of 3 letters or more. */
const partOk = (piece: string, last: boolean): boolean =>
  piece.length >= 3 || CJK.test(piece) || (last && piece.length === 2);

/**
 * Whether `piece` may be the known head of a word whose rest is unknown: a Japanese word, a
 * someone-else word of 3 letters or more (`Notfallfax`), any other of 4 or more (`Hotel` is not
 * a phone word).
 */
function headOk(piece: string): boolean {
  const cls = wordClasses().get(piece);
  if (!HEAD_CLASSES.has(cls)) return false;
  return CJK.test(piece) || piece.length >= (cls === 'someoneElse' || cls === 'line' ? 3 : 4);
}

/** `word` split wholly into known words (fewest parts), or undefined. */
function compound(word: string): string[] | undefined {
  const best: (string[] | undefined)[] = [[]];
  for (let i = 1; i <= word.length; i++) {
    for (let j = 0; j < i; j++) {
      const before = best[j];
      const piece = word.slice(j, i);
      if (before === undefined || !wordClasses().has(piece) || !partOk(piece, i === word.length)) continue;
      const current = best[i];
      if (current === undefined || before.length + 1 < current.length) best[i] = [...before, piece];
    }
  }
  return best[word.length];
}

/** Classes a compound's head (last or first known word) may carry when the rest is unknown. */
const HEAD_CLASSES: ReadonlySet<WordClass | undefined> = new Set([
  'email',
  'phone',
  'someoneElse',
  'line',
  'country',
  'locale',
]);

/**
 * One word's parts: the word itself when known, its split into known words, or its longest known
 * last (then first) word of a class in HEAD_CLASSES with the rest read the same way
 * (`Notfalltelefon`: notfall, unknown, + telefon); otherwise the word, unknown.
 */
export function wordParts(word: string): NamePart[] {
  if (/^\p{N}+$/u.test(word)) return [{ word, cls: 'own' }];
  const cls = wordClasses().get(word);
  if (cls !== undefined) return [{ word, cls }];
  const split = compound(word);
  if (split !== undefined) return split.map((w) => ({ word: w, cls: wordClasses().get(w) }));
  for (let i = 1; i < word.length; i++) {
    const tail = word.slice(i);
    if (headOk(tail)) return [...wordParts(word.slice(0, i)), { word: tail, cls: wordClasses().get(tail) }];
  }
  for (let i = word.length - 1; i > 0; i--) {
    const head = word.slice(0, i);
    if (headOk(head)) return [{ word: head, cls: wordClasses().get(head) }, ...wordParts(word.slice(i))];
  }
  return [{ word, cls: undefined }];
}

/** A name's parts (see wordParts), in order. */
export function nameParts(name: string): NamePart[] {
  return splitWords(name).flatMap(wordParts);
}

/** Type cells seen (`* Mobile`, `Work Fax`, `アシスタント`) → whether they say someone else's: few distinct. */
const typeCache = new Map<string, boolean>();
const TYPE_CACHE_MAX = 1024;

/**
 * Whether a paired layout's type cell (`Phone 1 - Type`: Mobile, Work, Fax, Assistant…) says the
 * value is not the person's own: one of its words is someone else's (fax, pager, assistant,
 * manager, company, callback, in any of the languages). Any other label, custom ones included,
 * is the person's own.
 */
export function typeSaysSomeoneElse(cell: string): boolean {
  let verdict = typeCache.get(cell);
  if (verdict === undefined) {
    verdict = nameParts(cell).some((p) => p.cls === 'someoneElse' || p.cls === 'line');
    if (typeCache.size < TYPE_CACHE_MAX) typeCache.set(cell, verdict);
  }
  return verdict;
}
