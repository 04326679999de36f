/** Swedish column-name words (see language.ts). Compounds (`Mobilnummer`, `E-postadress`) are split on these. */
import type { LanguageWords } from './language.js';

export const sv: LanguageWords = {
  email: ['epost', 'email', 'mail', 'mejl', 'epostadress', 'mejladress'],
  phone: ['telefon', 'tel', 'mobil', 'mobiltelefon', 'telefonnummer', 'mobilnummer', 'fast'],
  own: [
    ...['hem', 'hemma', 'bostad', 'privat', 'arbete', 'arbets', 'jobb', 'jobbet', 'kontor', 'tjänst', 'huvud'],
    ...['annan', 'annat', 'övrig', 'övriga', 'adress', 'nummer', 'nr', 'kund', 'kontakt', 'personlig', 'bil'],
  ],
  someoneElse: [...['assistent', 'chef', 'företag', 'företags', 'växel'], ...['ägare', 'säljare', 'återuppringning']],
  line: ['fax', 'telefax', 'personsökare', 'sökare'],
  country: ['land', 'länder'],
  locale: ['språk', 'nationella', 'inställningar'],
  subdivision: ['län', 'stad', 'ort', 'postnummer', 'kommun', 'delstat'],
  pairType: ['typ', 'etikett'],
  pairValue: ['värde'],
};
