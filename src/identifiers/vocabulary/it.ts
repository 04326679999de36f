/** Italian column-name words (see language.ts). */
import type { LanguageWords } from './language.js';

export const it: LanguageWords = {
  email: ['email', 'mail', 'elettronica', 'pec'],
  phone: ['telefono', 'telefoni', 'tel', 'cellulare', 'cell', 'fisso', 'mobile'],
  own: [
    ...['casa', 'abitazione', 'lavoro', 'ufficio', 'personale', 'privato', 'principale', 'altro', 'altra'],
    ...[
      'indirizzo',
      'numero',
      'num',
      'n',
      'di',
      'del',
      'della',
      'cliente',
      'contatto',
      'posta',
      'secondario',
      'regione',
      'area',
      'geografica',
    ],
  ],
  someoneElse: [
    ...['assistente', 'responsabile', 'azienda', 'società', 'ditta', 'centralino'],
    ...['proprietario', 'titolare', 'referente', 'agente', 'richiamata'],
  ],
  line: ['fax', 'cercapersone'],
  country: ['paese', 'nazione', 'stato'],
  locale: ['lingua', 'impostazioni'],
  subdivision: ['provincia', 'città', 'comune', 'cap'],
  pairType: ['tipo', 'etichetta'],
  pairValue: ['valore'],
};
