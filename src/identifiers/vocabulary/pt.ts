/** Portuguese column-name words (see language.ts). */
import type { LanguageWords } from './language.js';

export const pt: LanguageWords = {
  email: ['correio', 'eletrônico', 'electrónico', 'email', 'mail'],
  phone: ['telefone', 'telefones', 'tel', 'celular', 'telemóvel', 'móvel', 'fixo', 'whatsapp'],
  own: [
    ...['residencial', 'casa', 'comercial', 'trabalho', 'pessoal', 'principal', 'outro', 'outra', 'endereço'],
    ...[
      'número',
      'num',
      'nº',
      'no',
      'de',
      'do',
      'da',
      'cliente',
      'contato',
      'contacto',
      'privado',
      'particular',
      'ou',
      'região',
    ],
  ],
  someoneElse: [
    ...['assistente', 'gerente', 'responsável', 'empresa', 'companhia', 'proprietário'],
    ...['representante', 'vendedor', 'retorno'],
  ],
  line: ['fax', 'pager', 'bip'],
  country: ['país', 'nação'],
  locale: ['idioma', 'língua', 'localidade'],
  subdivision: ['estado', 'cidade', 'distrito', 'cep', 'município', 'uf'],
  pairType: ['tipo', 'rótulo', 'etiqueta'],
  pairValue: ['valor'],
};
