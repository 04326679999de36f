/** Spanish column-name words (see language.ts). */
import type { LanguageWords } from './language.js';

export const es: LanguageWords = {
  email: ['correo', 'electrónico', 'email', 'mail', 'correos'],
  phone: ['teléfono', 'teléfonos', 'tel', 'telf', 'móvil', 'movil', 'celular', 'fijo'],
  own: [
    ...['casa', 'particular', 'trabajo', 'oficina', 'personal', 'principal', 'otro', 'otra', 'dirección', 'número'],
    ...[
      'num',
      'nro',
      'no',
      'de',
      'del',
      'cliente',
      'contacto',
      'privado',
      'secundario',
      'laboral',
      'postal',
      'o',
      'región',
    ],
  ],
  someoneElse: [
    ...['asistente', 'gerente', 'responsable', 'empresa', 'compañía'],
    ...['centralita', 'propietario', 'representante', 'vendedor', 'devolución', 'llamada'],
  ],
  line: ['fax', 'buscapersonas', 'localizador'],
  country: ['país', 'nación'],
  locale: ['idioma', 'lengua', 'configuración', 'regional'],
  subdivision: ['provincia', 'estado', 'ciudad', 'comunidad', 'código'],
  pairType: ['tipo', 'etiqueta'],
  pairValue: ['valor'],
};
