/** Polish column-name words (see language.ts). */
import type { LanguageWords } from './language.js';

export const pl: LanguageWords = {
  email: ['email', 'mail', 'elektroniczna', 'emailowy'],
  phone: ['telefon', 'tel', 'komórkowy', 'komórka', 'kom', 'stacjonarny', 'telefonu', 'mobilny'],
  own: [
    ...['domowy', 'dom', 'prywatny', 'służbowy', 'praca', 'firmowy', 'główny', 'inny', 'inne', 'adres'],
    ...['numer', 'nr', 'klient', 'kontakt', 'kontaktowy', 'poczta', 'osobisty', 'drugi', 'dodatkowy'],
  ],
  someoneElse: [
    ...['asystent', 'asystentka', 'kierownik', 'menedżer', 'firma', 'firmy', 'centrala'],
    ...['właściciel', 'przedstawiciel', 'opiekun', 'oddzwonienie'],
  ],
  line: ['faks', 'fax', 'pager'],
  country: ['kraj', 'państwo'],
  locale: ['język', 'ustawienia', 'regionalne'],
  subdivision: ['województwo', 'miasto', 'miejscowość', 'powiat', 'gmina', 'kod', 'pocztowy'],
  pairType: ['typ', 'rodzaj', 'etykieta'],
  pairValue: ['wartość'],
};
