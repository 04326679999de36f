/**
 * Japanese column-name words (see language.ts). Japanese writes no spaces: a name is split into
 * these words (`携帯電話番号` = 携帯 + 電話 + 番号).
 */
import type { LanguageWords } from './language.js';

export const ja: LanguageWords = {
  email: ['メール', 'メールアドレス', 'eメール', '電子メール', 'メアド', 'mail'],
  phone: ['電話', '携帯', '携帯電話', 'ケータイ', 'スマホ', 'tel', '固定電話', '電話番号'],
  own: [
    ...['自宅', '勤務先', '仕事', '個人', 'プライベート', 'メイン', '主', 'その他', '他', '番号', 'アドレス'],
    ...['連絡先', '顧客', '会員', '第', '予備', 'ビジネス', '会社', '地域'],
  ],
  someoneElse: ['アシスタント', '秘書', '上司', 'マネージャー', '代表', '担当者', '担当', 'コールバック'],
  line: ['ファックス', 'ファクス', 'fax', 'ポケベル'],
  country: ['国', '国名', '国家', '国地域'],
  locale: ['言語', 'ロケール'],
  subdivision: ['都道府県', '市区町村', '州', '郵便番号'],
  pairType: ['種類', 'タイプ', 'ラベル', '種別'],
  pairValue: ['値'],
};
