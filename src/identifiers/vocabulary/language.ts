/**
 * The shape of one language's column-name words (see ./index.ts for how they are used, and
 * docs/columns.md for how to add a language). Words are written as people write them (accents,
 * capitals, scripts); they are folded like header words when loaded.
 */
export interface LanguageWords {
  /** Words naming an e-mail address (`E-Mail`, `courriel`, `メール`). */
  email: readonly string[];
  /** Words naming a phone number, mobile or landline (`Telefon`, `Handy`, `celular`, `電話`). */
  phone: readonly string[];
  /**
   * Words that say nothing of whose the value is, or say it is the person's own: home, work,
   * private, main, other, primary, number, address, numbering words (`privat`, `domicile`, `番号`).
   */
  own: readonly string[];
  /**
   * Words saying the value is someone else's: assistant, manager, company, owner, callback
   * (`Firma`, `Assistent`, `代表`).
   */
  someoneElse: readonly string[];
  /** Words naming a line that is not a person's (fax, pager, telex): someone else's, and a phone's. */
  line: readonly string[];
  /** Words naming a country (`Land`, `pays`, `país`, `国`). */
  country: readonly string[];
  /** Words naming a locale or a language (`Sprache`, `langue`, `言語`): values `en_GB`, `de-DE`, `fr`. */
  locale: readonly string[];
  /** Words naming a part of a country, never a country column (`state`, `Bundesland`, `都道府県`). */
  subdivision: readonly string[];
  /** The type cell of a paired layout (`Phone 1 - Type`): `type`, `Typ`, `tipo`, `種類`. */
  pairType: readonly string[];
  /** The value cell of a paired layout (`Phone 1 - Value`): `value`, `Wert`, `valeur`, `値`. */
  pairValue: readonly string[];
}
