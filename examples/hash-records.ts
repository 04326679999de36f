// Normalize and hash rows you already hold in memory (a database cursor, an API response), on this machine.
// Run: npx tsx examples/hash-records.ts  (how to run: examples/README.md)
import { hashRecords, normalizeIdentifier, hashValue } from 'audience-kit';

// One value at a time: pure functions implementing docs/normalization.md.
console.log(JSON.stringify(normalizeIdentifier('phone_number', '+44 (0)20 7946 0958'))); // {"ok":true,"value":…}
console.log(JSON.stringify(normalizeIdentifier('phone_number', '020 7946 0958'))); // {"ok":false,"reason":"phone_needs_country"}
console.log(hashValue('adsapi')); // '49e0be2a…470d'

// Rows keyed by column name: columns are mapped by name as in the CLI (`Email`, `Phone`, `Country`, …).
const rows = [
  { customer_id: 'c-1', Email: ' Jane.Doe+news@Example.com ', Phone: '020 7946 0321', Country: 'GB' },
  { customer_id: 'c-2', Email: 'not an email', Phone: '(650) 555-1212', Country: 'US' },
];
// A generic id (`customer_id`, `user_id`) is never sent unless mapped: a partner_user_id matches only after the
// platform's ID Sync with a partner, and is sent unhashed. This advertiser has done ID Sync, so it maps it.
const users = hashRecords(rows, { defaultCountry: 'US', map: ['partner_user_id=customer_id'] });
for await (const u of users) {
  // u.user is the object sent to the platform: SHA-256 digests, `partner_user_id` as is.
  console.log(u.line, JSON.stringify(u.user), JSON.stringify(u.rejects));
}
console.log(JSON.stringify(users.summary, null, 2)); // counts per type and per reject reason
