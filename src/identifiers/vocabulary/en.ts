/** English column-name words (see language.ts). */
import type { LanguageWords } from './language.js';

export const en: LanguageWords = {
  email: ['email', 'emails', 'mail', 'mails', 'emailaddress', 'emailaddresses'],
  phone: [
    ...['phone', 'phones', 'tel', 'telephone', 'telephones', 'mobile', 'mobiles', 'cell', 'cellphone', 'cellular'],
    ...['sms', 'whatsapp', 'landline', 'msisdn', 'phonenumber', 'mobilephone', 'cellnumber', 'telno'],
  ],
  own: [
    ...['work', 'home', 'primary', 'personal', 'private', 'billing', 'shipping', 'main', 'business', 'office'],
    ...['contact', 'customer', 'client', 'subscriber', 'member', 'user', 'lead', 'person', 'default', 'preferred'],
    ...['other', 'secondary', 'alternate', 'alternative', 'additional', 'alt', 'my', 'me', 'your', 'own', 'reach'],
    ...['at', 'no', 'nr', 'num', 'number', 'numbers', 'address', 'addresses', 'addr', 'car', 'direct', 'day'],
    ...[
      'evening',
      'night',
      'mailing',
      'postal',
      'of',
      'and',
      'or',
      'first',
      'second',
      'third',
      'new',
      'fixed',
      'region',
    ],
  ],
  someoneElse: [
    ...['owner', 'assistant', 'assistants', 'asst', 'rep', 'representative', 'salesperson', 'agent', 'manager'],
    ...['company', 'referrer', 'referral', 'by', 'callback'],
    ...['switchboard', 'reception', 'employer', 'supervisor', 'boss', 'secretary'],
  ],
  line: ['fax', 'faxes', 'telefax', 'pager', 'beeper', 'telex'],
  country: ['country', 'countries', 'nation'],
  locale: ['locale', 'language', 'lang', 'languages'],
  subdivision: ['state', 'province', 'county', 'city', 'zip', 'postcode', 'prefecture', 'territory'],
  pairType: ['type', 'label', 'kind'],
  pairValue: ['value'],
};
