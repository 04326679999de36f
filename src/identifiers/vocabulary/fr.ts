/** French column-name words (see language.ts). */
import type { LanguageWords } from './language.js';

export const fr: LanguageWords = {
  email: ['messagerie', 'courriel', 'courriels', 'mél', 'mel', 'email', 'mail', 'électronique'],
  phone: ['téléphone', 'téléphones', 'tél', 'tel', 'portable', 'mobile', 'cellulaire', 'fixe', 'gsm'],
  own: [
    ...['domicile', 'maison', 'travail', 'bureau', 'professionnel', 'professionnelle', 'pro', 'perso', 'personnel'],
    ...['personnelle', 'principal', 'principale', 'autre', 'autres', 'adresse', 'numéro', 'num', 'no', 'de', 'du'],
    ...['client', 'contact', 'privé', 'privée', 'secondaire', 'voiture', 'postale', 'ou', 'région'],
  ],
  someoneElse: [
    ...['assistant', 'assistante', 'responsable'],
    ...['gestionnaire', 'société', 'entreprise', 'standard', 'rappel', 'propriétaire', 'commercial', 'parrain'],
  ],
  line: ['télécopie', 'télécopieur', 'fax', 'bipeur'],
  country: ['pays', 'nation'],
  locale: ['langue', 'paramètres', 'régionaux'],
  subdivision: ['département', 'ville', 'province', 'état', 'cp'],
  pairType: ['type', 'libellé', 'étiquette'],
  pairValue: ['valeur'],
};
