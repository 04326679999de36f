/** German column-name words (see language.ts). Compounds (`Mobiltelefon`, `Handynummer`) are split on these. */
import type { LanguageWords } from './language.js';

export const de: LanguageWords = {
  email: ['mail', 'email', 'emailadresse', 'mailadresse'],
  phone: ['telefon', 'tel', 'handy', 'mobil', 'mobiltelefon', 'rufnummer', 'fon', 'festnetz', 'funk'],
  own: [
    ...['privat', 'geschäftlich', 'geschäfts', 'dienstlich', 'dienst', 'büro', 'arbeit', 'weitere', 'weiteres'],
    ...['weiterer', 'haupt', 'zuhause', 'nummer', 'nr', 'adresse', 'kontakt', 'kunde', 'kunden', 'primär'],
    ...['sonstige', 'andere', 'zweite', 'auto', 'persönlich', 'anschrift', 'heim', 'oder', 'region'],
  ],
  someoneElse: [
    ...['assistent', 'assistentin', 'assistenz', 'vorgesetzter'],
    ...['firma', 'firmen', 'unternehmen', 'zentrale', 'rückmeldung', 'rückruf', 'besitzer', 'inhaber'],
    ...['vertreter', 'betreuer', 'ansprechpartner', 'sekretariat', 'arbeitgeber'],
  ],
  line: ['fax', 'telefax', 'pager', 'piepser', 'funkruf', 'telex'],
  country: ['land', 'länder'],
  locale: ['sprache', 'gebietsschema'],
  subdivision: ['bundesland', 'ort', 'stadt', 'kanton', 'plz', 'postleitzahl'],
  pairType: ['typ', 'art', 'bezeichnung'],
  pairValue: ['wert'],
};
