import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import { FIXTURES, runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

// One export per source, shaped like the real ones (real header names, synthetic values), run
// through `hash` and `upload --sandbox` in process with no flag: what a new user would type.
const EXPORTS = join(FIXTURES, 'exports');
const tmp = tempDir('ak-crm-exports-');

const cli = (argv: string[]) => runCli(argv, { cwd: tmp, env: { AUDIENCE_KIT_CONFIG_DIR: tmp } });

type Counts = Record<string, [valid: number, invalid: number]>;

interface Expected {
  file: string;
  mapping: string[];
  rows: number;
  users: number;
  types: Counts;
  /** A hint line expected in the summary (the cause and its fix). */
  hint?: RegExp;
  /**
   * Exports with consent or opt-out columns: the mapping's consent columns and the lines of the
   * rows that say no (checked by hand against the file), left out by default.
   */
  consent?: { columns: string[]; leftOut: number[] };
}

const CASES: Expected[] = [
  {
    file: 'hubspot-contacts.csv',
    mapping: [
      'email           <- "Email", "Additional email addresses"',
      'phone_number    <- "Phone Number", "Mobile Phone Number"',
      'country         <- "Country/Region"',
    ],
    rows: 10,
    users: 9,
    types: { email: [9, 4], phone_number: [14, 1] },
    hint: /cells of "Additional email addresses" hold several addresses; fix: --value-separator ";"/,
  },
  {
    file: 'salesforce-contacts.csv',
    mapping: ['phone_number    <- "Phone", "Mobile"', 'country         <- "Mailing Country"'],
    rows: 8,
    users: 8,
    types: { email: [7, 0], phone_number: [12, 1] },
  },
  {
    file: 'mailchimp-audience.csv',
    mapping: ['email           <- "Email Address"', 'phone_number    <- "Phone Number"', 'country         <- "CC"'],
    rows: 17,
    users: 17,
    types: { email: [17, 0], phone_number: [17, 0] },
    // A date in OPTIN_TIME is a yes; nobody says no.
    consent: { columns: ['OPTIN_TIME'], leftOut: [] },
  },
  {
    file: 'shopify-customers.csv',
    mapping: [
      'phone_number    <- "Default Address Phone", "Phone"',
      'country         <- "Default Address Country Code"',
      '(ignored "Customer ID": a generic id column',
    ],
    rows: 6,
    users: 3,
    types: { email: [3, 0], phone_number: [5, 0] },
    consent: { columns: ['Accepts Email Marketing', 'Accepts SMS Marketing'], leftOut: [3, 5, 7] },
  },
  {
    file: 'klaviyo-profiles.csv',
    mapping: ['phone_number    <- "Phone Number"', 'country         <- "Country"'],
    rows: 7,
    users: 6,
    types: { email: [5, 0], phone_number: [4, 2] },
    // NEVER_SUBSCRIBED says nothing; UNSUBSCRIBED (line 5) says no.
    consent: { columns: ['Email Marketing Consent', 'SMS Consent'], leftOut: [5] },
    hint: /country values not recognized \(rows\): "Middle Earth" 2/,
  },
  {
    file: 'google-customer-match.csv',
    mapping: ['email           <- "Email"', 'phone_number    <- "Phone"', 'country         <- "Country"'],
    rows: 6,
    users: 6,
    types: { email: [5, 0], phone_number: [5, 0] },
    hint: /2 phone numbers were read as starting with their country code without \+/,
  },
  {
    file: 'google-customer-match-mobile-ids.csv',
    mapping: ['device_id       <- "Mobile Device ID"'],
    rows: 5,
    users: 3,
    types: { device_id: [3, 2] },
    hint: /2 of 5 device_id values rejected \(40%\)/,
  },
  {
    file: 'meta-customer-list.csv',
    mapping: [
      'email           <- "email", "email"',
      'phone_number    <- "phone", "phone"',
      'device_id       <- "madid"',
      'country         <- "country"',
    ],
    rows: 5,
    users: 5,
    types: { email: [5, 0], phone_number: [5, 0], device_id: [2, 0] },
  },
  {
    file: 'brevo-contacts.csv',
    mapping: [
      'email           <- "EMAIL"',
      'phone_number    <- "SMS", "WHATSAPP", "LANDLINE_NUMBER"',
      '(ignored "EXT_ID": a generic id column',
    ],
    rows: 5,
    // Line 6 has only its EXT_ID (not sent without --map) and a value that is not an address.
    users: 4,
    types: { email: [3, 1], phone_number: [4, 0] },
    hint: /2 phone numbers were read as starting with their country code without \+/,
  },
  {
    file: 'linkedin-contact-list.csv',
    mapping: ['email           <- "email"', 'device_id       <- "googleaid"', 'country         <- "country"'],
    rows: 4,
    users: 4,
    types: { email: [3, 0], device_id: [2, 0] },
  },
  {
    file: 'zoho-contacts.csv',
    mapping: [
      'email           <- "Email", "Secondary Email"',
      'phone_number    <- "Phone", "Home Phone", "Other Phone", "Mobile"',
      'handle          <- "Twitter"',
      'country         <- "Mailing Country"',
      '(ignored "Fax": not the person\'s own (the name says "fax"))',
      '(ignored "Asst Phone": not the person\'s own (the name says "asst"))',
      '(ignored "Record Id": a generic id column',
    ],
    rows: 6,
    users: 5,
    types: { email: [5, 0], phone_number: [10, 0], handle: [3, 0] },
    consent: { columns: ['Email Opt Out'], leftOut: [4] },
  },
  {
    // Read without flags: Pipedrive's "Person - …" names, and cells holding several values.
    file: 'pipedrive-persons.csv',
    mapping: [
      'email           <- "Person - Email - Work" (lists split on ","), "Person - Email - Home", "Person - Email - Other"',
      'phone_number    <- "Person - Phone - Work", "Person - Phone - Home", "Person - Phone - Mobile" (lists split on ","), "Person - Phone - Other"',
      'country         <- "Person - Country of Postal address"',
      '(ignored "Person - ID": a generic id column',
    ],
    rows: 5,
    users: 5,
    types: { email: [8, 0], phone_number: [8, 0] },
  },
  {
    file: 'activecampaign-contacts.csv',
    mapping: ['email           <- "Email"', 'phone_number    <- "Phone"', '(ignored "Id": a generic id column'],
    rows: 6,
    users: 6,
    types: { email: [6, 0], phone_number: [4, 1] },
    hint: /1 of 5 phone_number values rejected \(20%\), mostly phone_needs_country: .*fix: --default-country CC/,
  },
  {
    file: 'marketo-leads.csv',
    mapping: [
      'email           <- "Email Address"',
      'phone_number    <- "Phone Number", "Mobile Phone Number"',
      '(ignored "Lead Owner Email Address": not the person\'s own (the name says "owner"))',
    ],
    rows: 5,
    users: 4,
    types: { email: [4, 0], phone_number: [6, 0] },
    consent: { columns: ['Unsubscribed'], leftOut: [4] },
  },
  {
    // user_id is the app's own id: never service_id. The device id lists are read and split.
    file: 'braze-users.csv',
    mapping: [
      'device_id       <- "IDFAs" (lists split on ","), "google_ad_ids" (lists split on ",")',
      'country         <- "country"',
      '(ignored "user_id": a generic id column',
      '(ignored "Braze ID": a generic id column',
    ],
    rows: 6,
    users: 4,
    types: { email: [4, 0], phone_number: [3, 0], device_id: [6, 1] },
    // Any no wins: line 5 is unsubscribed from push only.
    consent: { columns: ['email_subscribe', 'push_subscribe'], leftOut: [4, 5] },
    hint: /"user_id", "Braze ID" look like your own ids and are not sent/,
  },
  {
    file: 'iterable-users.csv',
    mapping: [
      'email           <- "email"',
      'phone_number    <- "phoneNumber"',
      '(ignored "userId": a generic id column',
    ],
    rows: 5,
    users: 5,
    types: { email: [5, 0], phone_number: [4, 0] },
  },
  {
    file: 'intercom-users.csv',
    mapping: [
      'email           <- "Email"',
      'phone_number    <- "Phone"',
      'country         <- "Country"',
      '(ignored "User ID": a generic id column',
    ],
    rows: 5,
    users: 4,
    types: { email: [3, 0], phone_number: [4, 0] },
    consent: { columns: ['Unsubscribed from Emails'], leftOut: [4] },
    // The hint never suggests service_id without saying when it would be right.
    hint: /"User ID" looks like your own ids and is not sent: .*only if it holds the platform's own user ids/,
  },
  {
    file: 'stripe-customers.csv',
    mapping: ['phone_number    <- "Phone", "Shipping Phone"', 'country         <- "Address Country"'],
    rows: 6,
    users: 6,
    types: { email: [6, 0], phone_number: [5, 2] },
    hint: /2 of 7 phone_number values rejected \(29%\), mostly phone_needs_country: .*"Address Country" cell is empty; fix: --default-country CC/,
  },
  {
    // The WordPress user ID and customer_id are the shop's own ids: not sent as partner_user_id
    // without --map. user_email is WordPress's own name for the customer's address.
    file: 'woocommerce-customers.csv',
    mapping: [
      'email           <- "user_email", "billing_email"',
      'phone_number    <- "billing_phone"',
      'country         <- "billing_country"',
      '(ignored "ID": a generic id column',
      '(ignored "customer_id": a generic id column',
      '(ignored "user_login": a generic id column',
    ],
    rows: 5,
    users: 5,
    types: { email: [5, 0], phone_number: [4, 0] },
  },
  {
    // WooCommerce's own export (Analytics > Customers): no phone, and a username never sent.
    file: 'woocommerce-analytics-customers.csv',
    mapping: [
      'email           <- "Email"',
      'country         <- "Country / Region"',
      '(ignored "Username": a generic id column',
    ],
    rows: 4,
    users: 4,
    types: { email: [4, 0] },
  },
  {
    file: 'square-customers.csv',
    mapping: ['email           <- "Email Address"', 'phone_number    <- "Phone Number"'],
    rows: 4,
    users: 3,
    types: { email: [3, 0], phone_number: [2, 2] },
    // Subscribed, or Unknown (nothing said): nobody is left out.
    consent: { columns: ['Email Subscription Status'], leftOut: [] },
    hint: /2 of 4 phone_number values rejected \(50%\), mostly phone_needs_country: .*fix: --default-country CC/,
  },
];

describe('real CRM exports and ad-platform templates, without flags', () => {
  for (const c of CASES) {
    it(`${c.file}: hash maps and counts as expected`, async () => {
      const out = join(tmp, `${c.file}.jsonl`);
      const r = await cli(['hash', join(EXPORTS, c.file), '--workers', '0', '--format', 'jsonl', '-o', out, '--json']);
      expect(r.code, r.stderr).toBe(0);
      for (const line of c.mapping) expect(r.stderr).toContain(line);
      const doc = JSON.parse(r.stdout) as {
        summary: {
          rows: number;
          users: number;
          types: Record<string, { valid: number; invalid: number }>;
          consent: { rows_left_out: { count: number; lines: number[] } } | null;
        };
        mapping: { columns: { type: string }[]; consent: { column: string }[] };
        hints: string[];
      };
      expect(doc.mapping.consent.map((m) => m.column)).toEqual(c.consent?.columns ?? []);
      if (c.consent !== undefined) expect(doc.summary.consent?.rows_left_out.lines).toEqual(c.consent.leftOut);
      else expect(doc.summary.consent).toBeNull();
      expect(doc.summary.rows).toBe(c.rows);
      expect(doc.summary.users).toBe(c.users);
      const types = Object.fromEntries(
        Object.entries(doc.summary.types).map(([t, n]) => [t, [n.valid, n.invalid]]),
      ) as Counts;
      expect(types).toEqual(c.types);
      // Ids are sent only when --map names them: no export here has a column named for them.
      expect(doc.mapping.columns.filter((m) => m.type === 'service_id' || m.type === 'partner_user_id')).toEqual([]);
      if (c.hint !== undefined) expect(doc.hints.join('\n')).toMatch(c.hint);
      expect(readFileSync(out, 'utf8').trimEnd().split('\n')).toHaveLength(c.rows);
    });

    it(`${c.file}: upload --sandbox sends every user whose row does not say no`, async () => {
      const r = await cli(['upload', join(EXPORTS, c.file), '--sandbox', '--workers', '0', '--json']);
      expect(r.code, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as {
        status: string;
        users: number;
        sandbox: { audience_size: number };
        hints: string[];
      };
      expect(report.status).toBe('completed');
      expect(report.users).toBe(c.users);
      expect(report.sandbox.audience_size).toBe(c.users);
      // The same hints as `hash`: an upload that loses values says why, too.
      if (c.hint !== undefined) expect(report.hints.join('\n')).toMatch(c.hint);
    });
  }

  it('Shopify ids go out without the spreadsheet apostrophe', async () => {
    const out = join(tmp, 'shopify.csv');
    // Every row, those whose consent columns say no included.
    const map = ['--map', 'partner_user_id=Customer ID', '--consent', 'include'];
    const r = await cli(['hash', join(EXPORTS, 'shopify-customers.csv'), ...map, '--workers', '0', '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    const ids = readFileSync(out, 'utf8')
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',')[2]);
    expect(ids[0]).toBe('7210448301100');
    expect(ids.every((id) => id !== undefined && /^\d+$/.test(id))).toBe(true);
  });

  it('HubSpot additional emails are all kept with the --value-separator the hint names', async () => {
    const out = join(tmp, 'hubspot.jsonl');
    const args = ['hash', join(EXPORTS, 'hubspot-contacts.csv'), '--workers', '0', '-o', out, '--json'];
    const r = await cli([...args, '--value-separator', ';']);
    const doc = JSON.parse(r.stdout) as { summary: { types: Record<string, { valid: number; invalid: number }> } };
    // 2 cells of two addresses split on ";" (the cell joined by "," stays rejected, as does a non-address).
    expect(doc.summary.types.email).toMatchObject({ valid: 13, invalid: 2 });
  });
});

interface HashDoc {
  summary: { users: number; types: Record<string, { valid: number; invalid: number }> };
  hints: string[];
}

/** `hash FILE ARGS --json` on one of the exports: exit code, stderr and the parsed summary. */
async function hashExport(
  file: string,
  args: string[],
): Promise<{ code: number | null; stderr: string; doc?: HashDoc }> {
  const r = await cli([
    'hash',
    join(EXPORTS, file),
    '--workers',
    '0',
    '-o',
    join(tmp, `${file}.out`),
    '--json',
    ...args,
  ]);
  return { code: r.code, stderr: r.stderr, ...(r.stdout === '' ? {} : { doc: JSON.parse(r.stdout) as HashDoc }) };
}

describe('--map adds to detection; --only-mapped replaces it', () => {
  it('--map for one type keeps the other types and the country detected', async () => {
    const r = await hashExport('hubspot-contacts.csv', ['--map', 'phone_number=Mobile Phone Number']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('column mapping (detected by column name, with --map)');
    expect(r.stderr).toContain('email           <- "Email", "Additional email addresses"');
    expect(r.stderr).toContain('phone_number    <- "Mobile Phone Number" (--map)');
    expect(r.stderr).toContain('country         <- "Country/Region"');
    // The row with neither an email nor a mobile number has no user now ("Phone Number" is not read).
    expect(r.doc?.summary.users).toBe(8);
    expect(r.doc?.summary.types.phone_number).toMatchObject({ valid: 7, invalid: 0 });
  });

  it('--map country=Column names the country and keeps every identifier column detected', async () => {
    const r = await hashExport('hubspot-contacts.csv', ['--map', 'country=Country/Region']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('country         <- "Country/Region" (--map)');
    expect(r.stderr).toContain('phone_number    <- "Phone Number", "Mobile Phone Number"');
    expect(r.doc?.summary.types.phone_number).toMatchObject({ valid: 14, invalid: 1 });
  });

  it('--only-mapped uses the --map columns alone; without a country its phones fail, saying which column to name', async () => {
    const alone = await hashExport('hubspot-contacts.csv', [
      '--only-mapped',
      '--map',
      'phone_number=Mobile Phone Number',
    ]);
    expect(alone.code).toBe(3);
    expect(alone.stderr).toContain('column mapping (from --map)');
    expect(alone.stderr).toContain('error: no row produced a user (10 rows read)');
    expect(alone.stderr).toContain('fix: --country-column "Country/Region" (or --default-country CC)');
    const both = await hashExport('hubspot-contacts.csv', [
      '--only-mapped',
      '--map',
      'phone_number=Mobile Phone Number',
      '--map',
      'country=Country/Region',
    ]);
    expect(both.code, both.stderr).toBe(0);
    expect(Object.keys(both.doc?.summary.types ?? {})).toEqual(['phone_number']);
    expect(both.doc?.summary.users).toBe(7);
  });
});

describe('--phone-country-code: phones with their calling code but no +', () => {
  // The Customer Match template writes 447400123172 (GB) in rows whose country says otherwise.
  it('auto (default) reads them and says so; national rejects them with the flag as fix; included reads all', async () => {
    const auto = await hashExport('google-customer-match.csv', []);
    expect(auto.doc?.summary.types.phone_number).toMatchObject({ valid: 5, invalid: 0 });
    expect(auto.doc?.hints.join('\n')).toContain(
      '2 phone numbers were read as starting with their country code without +',
    );
    const national = await hashExport('google-customer-match.csv', ['--phone-country-code', 'national']);
    expect(national.doc?.summary.types.phone_number).toMatchObject({ valid: 3, invalid: 2 });
    expect(national.doc?.hints[0]).toMatch(
      /^2 of 5 phone_number values rejected \(40%\), mostly phone_invalid: .*fix: --phone-country-code auto \(columns "Phone"\)$/,
    );
    const included = await hashExport('google-customer-match.csv', ['--phone-country-code', 'included']);
    expect(included.doc?.summary.types.phone_number).toMatchObject({ valid: 5, invalid: 0 });
    const bad = await hashExport('google-customer-match.csv', ['--phone-country-code', 'sometimes']);
    expect(bad.code).toBe(2);
  });
});

describe('upload checks its target before hashing the input', () => {
  it('a mistyped --audience or --do-not-reach-list fails at once (stdin still open), naming the list command', async () => {
    const sandbox = await startSandbox({ seed: 10 });
    onTestFinished(() => sandbox.close());
    const env = {
      AUDIENCE_KIT_CONFIG_DIR: tmp,
      AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
      AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
      AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
      AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
      AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
    };
    const account = sandbox.accounts.primary;
    for (const [target, list] of [
      [['--audience', 'nope1'], '`audience-kit audiences list`'],
      [['--do-not-reach-list', 'nope2'], '`audience-kit do-not-reach list`'],
    ] as const) {
      // More than the 64 KiB sample the header is found in, and the pipe left open: a check made
      // after hashing the input would wait for its end.
      const stdin = new PassThrough();
      stdin.write(`Email,Phone Number\n${Array.from({ length: 4000 }, (_, i) => `user${i}@example.com,\n`).join('')}`);
      const r = await runCli(['upload', '-', '--account', account, ...target], { cwd: tmp, env, stdin });
      stdin.destroy();
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error: (custom audience nope1|do-not-reach list nope2) does not exist in account /m);
      expect(r.stderr).toContain(list);
      expect(r.stderr).not.toContain('--resume');
    }
    expect(sandbox.state.requests.filter((q) => q.users !== undefined)).toEqual([]);
    expect(existsSync(join(tmp, '.audience-kit', 'runs'))).toBe(false);
  });
});

/** Every key of a JSON document, at any depth. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => [k, ...keysOf(v)]);
}

describe('--json: one document on stdout, snake_case keys, lists in { data }', () => {
  it('hash --json puts the summary on stdout and needs -o for the data', async () => {
    const file = join(EXPORTS, 'klaviyo-profiles.csv');
    const refused = await cli(['hash', file, '--json']);
    expect(refused.code).toBe(2);
    // The failure document of every --json command (cli: one --json failure document).
    expect(JSON.parse(refused.stdout)).toMatchObject({ status: 'failed', exit_code: 2 });
    expect(refused.stderr).toContain('fix: write the data to a file with -o FILE');
    const r = await cli(['hash', file, '--json', '-o', join(tmp, 'k.csv'), '--workers', '0']);
    const doc = JSON.parse(r.stdout) as { summary: { unknown_countries: unknown } };
    expect(doc.summary.unknown_countries).toEqual([{ value: 'Middle Earth', rows: 2 }]);
    expect(keysOf(doc).filter((k) => /[a-z][A-Z]/.test(k))).toEqual([]);
  });

  it('upload and audit list: snake_case keys, the list in an envelope', async () => {
    const up = await cli(['upload', join(EXPORTS, 'meta-customer-list.csv'), '--sandbox', '--json', '--workers', '0']);
    expect(keysOf(JSON.parse(up.stdout)).filter((k) => /[a-z][A-Z]/.test(k))).toEqual([]);
    const list = await cli(['audit', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    const doc = JSON.parse(list.stdout) as { data: { run_id: string }[] };
    expect(doc.data.length).toBeGreaterThan(0);
  });
});

describe('--max-reject-rate and runs without users: non-zero exit, saying why', () => {
  const klaviyo = join(EXPORTS, 'klaviyo-profiles.csv');

  it('hash: above the rate, exit 3 with the cause and the hint as fix; the rejects list is still written', async () => {
    const out = join(tmp, 'guarded.csv');
    const rej = join(tmp, 'guarded-rejects.csv');
    const include = ['--consent', 'include'];
    const r = await cli([
      'hash',
      klaviyo,
      ...include,
      '--max-reject-rate',
      '10%',
      '-o',
      out,
      '--rejects',
      rej,
      '--workers',
      '0',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('error: 15.4% of the values were rejected (2 of 13), above --max-reject-rate 10%');
    expect(r.stderr).toMatch(/fix: 2 of 7 phone_number values rejected .* country value is not recognized/);
    expect(existsSync(out)).toBe(false);
    expect(readFileSync(rej, 'utf8').trimEnd().split('\n')).toHaveLength(3);
    const ok = await cli(['hash', klaviyo, '--max-reject-rate', '20', '-o', out, '--workers', '0']);
    expect(ok.code, ok.stderr).toBe(0);
    const bad = await cli(['hash', klaviyo, '--max-reject-rate', 'lots', '-o', out]);
    expect(bad.code).toBe(2);
  });

  it('hash and upload: no user at all is exit 3, nothing sent, the audit end record says why', async () => {
    const file = join(tmp, 'no-users.csv');
    writeFileSync(file, 'Email,Phone Number\nnot-an-email,12\nstill-not,\n');
    const h = await cli(['hash', file, '-o', join(tmp, 'none.csv'), '--workers', '0']);
    expect(h.code).toBe(3);
    expect(h.stderr).toContain('error: no row produced a user (2 rows read)');
    const dir = tempDir('ak-no-users-');
    const u = await runCli(['upload', file, '--sandbox', '--workers', '0'], {
      cwd: dir,
      env: { AUDIENCE_KIT_CONFIG_DIR: dir },
    });
    expect(u.code).toBe(3);
    expect(u.stderr).toContain('error: no row produced a user');
    const list = await runCli(['audit', 'list', '--json'], { cwd: dir, env: { AUDIENCE_KIT_CONFIG_DIR: dir } });
    const runs = (JSON.parse(list.stdout) as { data: { end: { outcome: string; error: string } }[] }).data;
    expect(runs.at(-1)?.end).toMatchObject({ outcome: 'failed', error: 'input_no_users' });
  });

  it('upload: above the rate, nothing of the file is sent', async () => {
    const dir = tempDir('ak-rate-');
    const r = await runCli(['upload', klaviyo, '--sandbox', '--max-reject-rate', '5%', '--json', '--workers', '0'], {
      cwd: dir,
      env: { AUDIENCE_KIT_CONFIG_DIR: dir },
    });
    expect(r.code).toBe(3);
    // Nothing sent: the --json failure document says why.
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'failed',
      exit_code: 3,
      error: { code: 'input_reject_rate_exceeded' },
    });
    expect(r.stderr).toContain('above --max-reject-rate 5%');
  });
});
