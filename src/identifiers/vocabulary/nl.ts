/** Dutch column-name words (see language.ts). Compounds (`Telefoonnummer`, `E-mailadres`) are split on these. */
import type { LanguageWords } from './language.js';

export const nl: LanguageWords = {
  email: ['email', 'mail', 'emailadres'],
  phone: ['telefoon', 'tel', 'mobiel', 'mobiele', 'gsm', 'vast', 'vaste', 'telefoonnummer'],
  own: [
    ...['thuis', 'privé', 'prive', 'werk', 'zakelijk', 'kantoor', 'persoonlijk', 'hoofd', 'ander', 'andere'],
    ...['overig', 'overige', 'adres', 'nummer', 'nr', 'klant', 'contact', 'tweede', 'auto', 'van'],
  ],
  someoneElse: [
    ...['assistent', 'manager', 'bedrijf', 'bedrijfs', 'firma', 'centrale'],
    ...['eigenaar', 'vertegenwoordiger', 'terugbel', 'terugbellen'],
  ],
  line: ['fax', 'pieper', 'semafoon'],
  country: ['land', 'landen'],
  locale: ['taal', 'landinstelling'],
  subdivision: ['provincie', 'plaats', 'stad', 'gemeente', 'postcode'],
  pairType: ['type', 'soort', 'label'],
  pairValue: ['waarde'],
};
