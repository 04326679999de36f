import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashCsv, hashRecords, type HashCsvRun } from '../src/hashing/pipeline.js';
import type { RawRecord } from '../src/identifiers/rows.js';
import type { ConsentPolicy } from '../src/identifiers/consent.js';
import type { AudienceUser } from '../src/platform/users.js';
import { readConsentValue, readsAccepted, consentKindOfName } from '../src/identifiers/consent.js';
import { resolveMapping } from '../src/identifiers/mapping.js';
import { reportJson } from '../src/upload/report.js';
import { runUpload as libraryRunUpload } from '../src/upload/run.js';
import { syncAudience as librarySync } from '../src/upload/sync.js';
import { uploadAudience as libraryUpload } from '../src/upload/upload.js';
import type { SyncReport } from '../src/upload/sync-report.js';
import { ConfigError } from '../src/errors.js';
import { SUMMARY_LINES } from '../src/hashing/summary.js';
import { startSandbox } from '../src/sandbox/index.js';
import { FIXTURES, runCli } from './helpers/cli.js';
import { sandboxEnv } from './helpers/upload-cli.js';
import {
  consentCsv,
  consentExport,
  HELD_OUT_SEED,
  sentUnder,
  TUNING_SEEDS,
  type ConsentExport,
  type Policy,
  type Truth,
} from './helpers/consent-generator.js';
import { customers, members, range, setup, setupWithSlowHook } from './helpers/sync.js';
import { runUpload, syncAudience, uploadAudience } from './helpers/small-audience.js';
import { tempDir } from './helpers/temp.js';

const POLICIES: readonly Policy[] = ['exclude', 'require-consent', 'include', 'refused'];
const tmp = tempDir('ak-consent-');

/** The rows (0-based) whose user a run produced, and its consent counts. */
async function sentRows(e: ConsentExport, consent: ConsentPolicy) {
  const run = hashRecords(e.records, { consent });
  const sent = new Set<number>();
  for await (const u of run) if (u.withheld !== true) sent.add(u.line - 1);
  return { sent, summary: run.summary, mapping: run.mapping };
}

const count = (e: ConsentExport, t: Truth): number => e.truth.filter((x) => x === t).length;

/** Every way the tool can be wrong on one export, as counts (0 everywhere: right). */
async function errors(e: ConsentExport) {
  const out = { columnsMissed: 0, rowsWrong: 0, countsWrong: 0 };
  for (const policy of POLICIES) {
    const { sent, summary, mapping } = await sentRows(e, policy);
    if (policy === 'exclude') {
      const found = (mapping?.consent ?? []).map((c) => c.column);
      out.columnsMissed += e.consentColumns.filter((c) => !found.includes(c)).length;
      // A consent column is never an identifier column.
      out.columnsMissed += (mapping?.columns ?? []).filter((c) => e.consentColumns.includes(c.column)).length;
    }
    e.truth.forEach((t, row) => {
      if (sent.has(row) !== sentUnder(policy, t)) out.rowsWrong++;
    });
    const c = summary.consent;
    const wanted = [count(e, 'no'), count(e, 'yes'), count(e, 'none'), count(e, 'unreadable')];
    const got = [c?.no, c?.yes, c?.none.count, c?.unreadable.count];
    if (JSON.stringify(wanted) !== JSON.stringify(got)) out.countsWrong++;
    // A value read neither as yes nor as no is counted with its line numbers (the first few).
    const unreadableLines = e.truth.flatMap((t, row) => (t === 'unreadable' ? [row + 1] : [])).slice(0, SUMMARY_LINES);
    if (JSON.stringify(c?.unreadable.lines) !== JSON.stringify(unreadableLines)) out.countsWrong++;
    for (const [column, n] of Object.entries(e.saysNo)) if ((c?.columns[column]?.no ?? 0) !== n) out.countsWrong++;
  }
  return out;
}

describe('consent columns on generated exports (ground truth per row)', () => {
  it('every policy sends exactly the rows it should, on the tuning seeds', async () => {
    for (const seed of TUNING_SEEDS) {
      const e = consentExport(seed);
      expect({ seed, columns: e.consentColumns, ...(await errors(e)) }).toEqual({
        seed,
        columns: e.consentColumns,
        columnsMissed: 0,
        rowsWrong: 0,
        countsWrong: 0,
      });
    }
  });

  it('the held-out seed: the same, with its figures', async () => {
    const e = consentExport(HELD_OUT_SEED, 2000);
    const result = await errors(e);
    expect(result).toEqual({ columnsMissed: 0, rowsWrong: 0, countsWrong: 0 });
  });

  it('the file path (workers and the calling thread) decides as the records path does', async () => {
    const e = consentExport(7, 3000);
    const file = join(tmp, 'seed7.csv');
    writeFileSync(file, consentCsv(e));
    for (const workers of [0, 2]) {
      const run: HashCsvRun = await hashCsv(file, { workers, chunkBytes: 16 * 1024 });
      const sent = new Set<number>();
      for await (const chunk of run) for (const u of chunk.users) if (u.withheld !== true) sent.add(u.line - 2);
      const wanted = e.truth.flatMap((t, row) => (sentUnder('exclude', t) ? [row] : []));
      expect([...sent].sort((a, b) => a - b)).toEqual(wanted);
      expect(run.summary.consent?.leftOut.count).toBe(count(e, 'no'));
      expect(run.summary.consent?.no).toBe(count(e, 'no'));
      expect(run.summary.users).toBe(wanted.length);
      expect(run.summary.rows).toBe(3000);
    }
  });
});

describe('reading names and values', () => {
  it('polarity: true in an opt-out column is no, in an opt-in column yes; a date in a status column is unreadable', () => {
    const cases: [Parameters<typeof readConsentValue>, string][] = [
      [['opt-out', 'true'], 'no'],
      [['opt-in', 'Yes'], 'yes'],
      [['opt-in', 'nein'], 'no'],
      [['opt-out', 'false'], 'none'],
      [['opt-out', '2024-05-01T10:00:00Z'], 'no'],
      [['opt-out', ''], 'none'],
      [['status', 'unsubscribed'], 'no'],
      [['status', 'Opt-Out: Manual'], 'no'],
      [['status', 'not subscribed'], 'none'],
      [['status', '2024-05-01'], 'unreadable'],
      [['confirmation', 'No'], 'none'],
      [['opt-out', 'maybe'], 'unreadable'],
    ];
    expect(cases.map(([args]) => readConsentValue(...args))).toEqual(cases.map(([, want]) => want));
  });

  it("the exports' own refusals, found by review: each row that says no is left out under the default policy, the others sent", async () => {
    // [column, [value that says no, value that does not]]: vendors' labels, names that take an agreement
    // back, Mailchimp's unsubscribed members, status columns found by their values.
    const cases: [string, string, string][] = [
      ['Consent Revoked', 'true', 'false'],
      ['Marketing Consent Revoked', 'Yes', 'No'],
      ['Withdrew Consent', 'true', ''],
      ['No consent', 'x', ''],
      ['Opt-in revoked', 'true', 'false'],
      ['Consentement retiré', 'oui', 'non'],
      ['Einwilligung zurückgezogen', 'ja', 'nein'],
      ['同意撤回', 'はい', 'いいえ'],
      ['UNSUB_TIME', '2024-05-01 09:00:00', ''],
      ["Don't Market", 'true', 'false'],
      ["Don't Track", 'true', 'false'],
      ['donotbulkemail', '1', '0'],
      ['Do not allow Bulk Emails', 'Do Not Allow', 'Allow'],
      ['Marketing Suspended', 'true', 'false'],
      ['Newsletter abbestellt', 'ja', 'nein'],
      ['Status', 'Unsubscribed', 'Active'],
      ['ShouldForget', 'true', 'false'],
      ['Email Suppressions', 'SPAM_COMPLAINT', ''],
      ['GPC Signal', 'true', 'false'],
      ['No Marketing', 'true', 'false'],
      ['Abmeldedatum', '01-05-2024', ''],
      ['Email Opt Out Date', '5/1/2024 10:22 AM', ''],
      ['Unsubscribed At', 'May 1, 2024', ''],
      ['Unsubscribed At', '1 May 2024', ''],
      ['Unsubscribed At', '2024-05-01 10:22:00 UTC', ''],
      ['配信停止日', '2024/05/01', ''],
      ['Unsubscribed', '✓', ''],
      ['配信停止', '○', ''],
      ['Email Opt-In', '✗', '✓'],
      ['Subscribed', 'false', 'true'],
      ['is_subscribed', '0', '1'],
      ['Email Subscription', 'No', 'Yes'],
      ['Newsletter', 'nein', 'ja'],
      ['Marketing Emails', 'No', 'Yes'],
      ['Nieuwsbrief', 'nee', 'ja'],
      ['メルマガ配信', '希望しない', '希望する'],
      ['Consentimiento', 'no consiente', 'sí'],
      ['Email permission status', 'Unsubscribed', 'Implicit'],
      ['Email Preference', 'Unsubscribed', 'Weekly'],
    ];
    for (const [column, no, other] of cases) {
      // Six rows each way (a status column is found by its values: Bounced and Unconfirmed among them).
      const values = [no, other, no, other, no, other, 'Bounced', 'Unconfirmed'].slice(0, column === 'Status' ? 8 : 6);
      const records = values.map((v, i) => ({ Email: `p${i}@example.com`, [column]: v }));
      const run = hashRecords(records, {});
      const sent: number[] = [];
      for await (const u of run) if (u.withheld !== true) sent.push(u.line);
      const said = values.flatMap((v, i) => (v === no ? [] : [i + 1]));
      expect([column, sent], column).toEqual([column, said]);
    }
  });

  it('names that only look like consent stay what they are: a negation or a generic name counts as a whole word or name', () => {
    const kinds: [string, ReturnType<typeof consentKindOfName>][] = [
      ['Casino Opt In', 'opt-in'],
      ['Mobile No Opt-in', 'opt-in'],
      ['Contact No. Consent', 'opt-in'],
      ['Techno Consent', 'opt-in'],
      ['Opt-in Cancelled', 'opt-out'],
      ['No Marketing', 'opt-out'],
      ['Casino Marketing', undefined],
      ['Casino Email Marketing', undefined],
      ['Retirement Newsletter', undefined],
      ['Active Subscriptions', undefined],
      ['Subscription Count', undefined],
      ['Subscription Plan', undefined],
      ['Newsletter Opens', undefined],
      ['Marketing Emails Disabled', undefined],
      ['Newsletter Cancelled', undefined],
      ['No Email', undefined],
      ['Newsletter Status', 'status'],
      // Spanish `baja` (an unsubscription), wherever it stands, but not in `trabaja` or `rebaja`.
      ['Trabaja actualmente', undefined],
      ['TRABAJADOR', undefined],
      ['Rebaja aplicada', undefined],
      ['Bajada de precio', undefined],
      ['Embajada', undefined],
      ['Dado de baja', 'opt-out'],
      ['FechaBaja', 'opt-out'],
      ['Bajas', 'opt-out'],
      // `Keine Einwilligung`, `Sin consentimiento`, `同意なし`: without the agreement, a refusal; but
      // not an SIN number's or search engine marketing's opt-in.
      ['Keine Einwilligung', 'opt-out'],
      ['Sin consentimiento', 'opt-out'],
      ['Sans consentement', 'opt-out'],
      ['Geen toestemming', 'opt-out'],
      ['Brak zgody marketingowej', 'opt-out'],
      ['同意なし', 'opt-out'],
      ['Without consent', 'opt-out'],
      ['Not consented', 'opt-out'],
      ['Ohne Einwilligung', 'opt-out'],
      ['Kein Opt-in', 'opt-out'],
      ['Keine Werbeeinwilligung', 'opt-out'],
      ['SEM Opt In', 'opt-in'],
      ['SIN Consent', 'opt-in'],
      ['SEM Double Opt-In', 'confirmation'],
      ['TRABAJADORBAJA', 'opt-out'],
      ['REBAJAOPTOUT', 'opt-out'],
      // One word starting with baja: an opt-out (BAJADATE: baja, a date), whatever follows.
      ['BAJADATE', 'opt-out'],
      ['bajadaprecio', 'opt-out'],
      ...[
        'FECHABAJA',
        'EMAILBAJA',
        'ISBAJA',
        'BAJANEWSLETTER',
        'dadodebaja',
        'bajaemail',
        'Baja2023',
        'Bája',
        'Baja Date',
        'baja_date',
        'Baja datos',
        'Fecha baja dada',
        'Nombre baja',
        'Octubre Baja',
      ].map((n) => [n, 'opt-out'] as [string, ReturnType<typeof consentKindOfName>]),
    ];
    expect(kinds.map(([name]) => [name, consentKindOfName(name)])).toEqual(kinds);
    // Values that are not consent words do not make a column of another meaning a consent column.
    const sample = ['Accepted', 'Declined', 'Pending', 'Accepted', 'Declined'].map((v, i) => [`p${i}@example.com`, v]);
    expect(resolveMapping(['Email', 'Invitation Status'], {}, sample).consent).toBeUndefined();
  });

  it('a refusal starting a longer value is counted by its written start, never with the rest of the cell (an address, a name)', async () => {
    const records: RawRecord[] = [
      { Email: 'a@example.com', Status: 'Unsubscribed by jane.doe@example.com on request' },
      { Email: 'b@example.com', Status: 'Opt-Out: Manual' },
      { Email: 'c@example.com', Status: 'unsubscribed' },
      { Email: 'd@example.com', Status: 'subscribed' },
    ];
    const run = hashRecords(records, {});
    for await (const u of run) void u;
    const values = run.summary.consent?.columns.Status?.values;
    expect(values).toEqual({ 'Unsubscribed…': 1, 'Opt-Out…': 1, unsubscribed: 1 });
    expect(JSON.stringify(run.summary)).not.toContain('jane');
  });

  it('names about the consent are not consent (OPTIN_IP, Opt Out Reason); an unrelated Blocked column is not', () => {
    expect(consentKindOfName('OPTIN_IP')).toBeUndefined();
    expect(consentKindOfName('Opt Out Reason')).toBeUndefined();
    expect(consentKindOfName('Blocked from online booking')).toBeUndefined();
    expect(consentKindOfName('HasOptedOutOfEmails')).toBe('opt-out');
    expect(consentKindOfName('DOUBLE_OPT-IN')).toBe('confirmation');
    expect(consentKindOfName('Email Subscription Status')).toBe('status');
  });

  it('a column of unknown name holding status words is read by its values; an email-named opt-out is never an email column', () => {
    const sample = [
      ['a@example.com', 'subscribed', 'true'],
      ['b@example.com', 'unsubscribed', 'false'],
      ['c@example.com', 'subscribed', 'false'],
    ];
    const m = resolveMapping(['Email', 'Mailing', 'Email Opt Out'], {}, sample);
    expect(m.consent).toEqual([
      { index: 1, column: 'Mailing', label: 'Mailing', kind: 'status', content: true },
      { index: 2, column: 'Email Opt Out', label: 'Email Opt Out', kind: 'opt-out' },
    ]);
    expect(m.columns.map((c) => c.column)).toEqual(['Email']);
    expect(m.notUsed).toBeUndefined();
  });
});

/** The generated rows without their consent columns: what a plain upload of the rows to send holds. */
const stripped = (e: ConsentExport, rows: number[]): RawRecord[] =>
  rows.map((i) =>
    Object.fromEntries(Object.entries(e.records[i] ?? {}).filter(([k]) => !e.consentColumns.includes(k))),
  );

describe('uploads: nobody who said no reaches a custom audience', () => {
  it('library: the sandbox holds exactly the rows that do not say no; require-consent only those that say yes', async () => {
    const t = await setup();
    const e = consentExport(HELD_OUT_SEED + 1, 400);
    const accountId = t.sandbox.accounts.primary;
    for (const policy of ['exclude', 'require-consent'] as const) {
      const id = t.sandbox.state.createCustomAudience(accountId, policy).id;
      const r = await uploadAudience({
        client: t.client,
        accountId,
        target: { customAudienceId: id },
        users: e.records,
        records: { consent: policy },
      });
      expect(r.status).toBe('completed');
      expect(r.consent?.rows_left_out.count).toBe(e.truth.filter((x) => !sentUnder(policy, x)).length);
      const reference = t.sandbox.state.createCustomAudience(accountId, `${policy}-reference`).id;
      const rows = e.truth.flatMap((x, i) => (sentUnder(policy, x) ? [i] : []));
      await uploadAudience({
        client: t.client,
        accountId,
        target: { customAudienceId: reference },
        users: stripped(e, rows),
        records: {},
      });
      expect(members(t.sandbox, id)).toEqual(members(t.sandbox, reference));
    }
    await t.sandbox.close();
  });

  it('CLI: counts in the summary, --json and the audit record; include says so; a do-not-reach list is not filtered', async () => {
    const e = consentExport(11, 300);
    const dir = tempDir('ak-consent-cli-');
    const file = join(dir, 'export.csv');
    writeFileSync(file, consentCsv(e));
    const env = { AUDIENCE_KIT_CONFIG_DIR: dir };
    const cli = (argv: string[]) => runCli([...argv, '--workers', '0'], { cwd: dir, env });
    const no = e.truth.filter((x) => x === 'no').length;

    const text = await cli(['upload', file, '--sandbox']);
    expect(text.code, text.stderr).toBe(0);
    for (const c of e.consentColumns) expect(text.stderr).toContain(`consent         <- ${JSON.stringify(c)}`);
    expect(text.stdout).toContain(`rows that say no                 ${no}`);
    expect(text.stdout).toContain(`sandbox audience size            ${300 - no}`);

    const json = await cli(['upload', file, '--sandbox', '--json']);
    const report = JSON.parse(json.stdout) as { users: number; consent: { rows_said_no: number; columns: unknown[] } };
    expect(report.users).toBe(300 - no);
    expect(report.consent.rows_said_no).toBe(no);
    expect(report.consent.columns).toHaveLength(e.consentColumns.filter((c) => (e.saysNo[c] ?? 0) > 0).length);

    const include = await cli(['upload', file, '--sandbox', '--consent', 'include']);
    expect(include.stderr).toContain(`hint: --consent include: ${no} rows whose consent columns say no`);
    expect(include.stdout).toContain('sandbox audience size            300');

    const dnr = await cli(['upload', file, '--sandbox', '--do-not-reach-list', 'x']);
    expect(dnr.code, dnr.stderr).toBe(0);
    expect(dnr.stdout).toContain('sandbox list size                300');
    expect(dnr.stderr).not.toContain('--consent include');

    const shown = await cli(['upload', file, '--sandbox', '--consent', 'do-not-reach=x']);
    expect(shown.stdout).toContain('consent (rows that say no are not sent):');
    expect(shown.stdout).not.toContain('--consent exclude');
    const both = await cli(['upload', file, '--sandbox', '--consent', 'do-not-reach=x', '--json']);
    expect(both.code, both.stderr).toBe(0);
    const two = JSON.parse(both.stdout) as {
      users: number;
      do_not_reach: { users: number; users_confirmed: number; target: { kind: string } };
    };
    expect(two.users).toBe(300 - no);
    expect(two.do_not_reach).toMatchObject({ users: no, users_confirmed: no, target: { kind: 'do_not_reach_list' } });

    const log = readFileSync(join(dir, '.audience-kit', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const ends = log.map((l) => JSON.parse(l) as { event: string; consent?: { policy: string; rows_said_no: number } });
    expect(ends.filter((r) => r.event === 'run_end').map((r) => [r.consent?.policy, r.consent?.rows_said_no])).toEqual([
      ['exclude', no],
      ['exclude', no],
      ['include', no],
      ['include', no],
      ['exclude', no],
      // The do-not-reach pass of the same run: only the rows that say no.
      ['refused', no],
      ['exclude', no],
      ['refused', no],
    ]);

    const bad = await cli(['hash', file, '--consent', 'sometimes', '-o', join(dir, 'h.csv')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('fix: pass exclude (the default), require-consent, include, or do-not-reach=LIST_ID');
  });
});

describe('library: the do-not-reach policy in one call', () => {
  /** The no rows of `e` uploaded alone to a reference list: what the policy's list must hold. */
  const rowsOf = (e: ConsentExport, want: (t: Truth) => boolean) => e.truth.flatMap((t, i) => (want(t) ? [i] : []));

  it('stopped (its signal) while the audience pass sends its last batch: interrupted, the list not synced; the next sync ends both equal', async () => {
    const { t, hook } = await setupWithSlowHook();
    const accountId = t.sandbox.accounts.primary;
    const list = t.sandbox.state.createDoNotReachList(accountId).id;
    const rows = (out: (i: number) => boolean): RawRecord[] =>
      range(0, 150).map((i) => ({ email: `person.${i}@example.org`, Unsubscribed: out(i) ? 'true' : 'false' }));
    const sync = (users: RawRecord[], signal?: AbortSignal) =>
      syncAudience({
        client: t.client,
        accountId,
        target: { customAudienceId: t.audienceId },
        users,
        records: {},
        stateDir: t.stateDir,
        maxRemovals: '100%',
        consent: { policy: 'do-not-reach', doNotReachListId: list },
        ...(signal === undefined ? {} : { signal }),
      });
    expect(await sync(rows((i) => i % 10 === 0))).toMatchObject({ status: 'completed' });
    expect(t.sandbox.state.dnrListSize(list)).toBe(15);
    // Some opt back in, others opt out: both targets change.
    const v2 = rows((i) => (i % 10 === 0 && i % 20 !== 0) || i % 10 === 1);
    const stop = new AbortController();
    t.sandbox.setFaults('slow@2');
    hook.onSlow = () => stop.abort();
    const cut = await sync(v2, stop.signal);
    t.sandbox.setFaults('');
    expect(cut.status).toBe('interrupted');
    expect(cut.do_not_reach).toBeUndefined();
    const next = await sync(v2);
    expect(next).toMatchObject({ status: 'completed', do_not_reach: { status: 'completed' } });
    expect(t.sandbox.state.dnrListSize(list)).toBe(v2.filter((r) => r['Unsubscribed'] === 'true').length);
  });

  it('runUpload: the audience gets the rows that do not say no, the list the rows that do, both reports back', async () => {
    const t = await setup();
    const e = consentExport(HELD_OUT_SEED + 2, 300);
    const accountId = t.sandbox.accounts.primary;
    const list = t.sandbox.state.createDoNotReachList(accountId).id;
    const base = { client: t.client, accountId, target: { customAudienceId: t.audienceId } };
    const consent = { policy: 'do-not-reach', doNotReachListId: list } as const;
    const r = await runUpload({ ...base, users: e.records, records: {}, consent, stateDir: t.stateDir });
    const no = e.truth.filter((x) => x === 'no').length;
    expect(r).toMatchObject({ status: 'completed', users: 300 - no });
    expect(r.do_not_reach).toMatchObject({ status: 'completed', users: no, users_confirmed: no });
    expect(r.do_not_reach?.target).toEqual({ kind: 'do_not_reach_list', id: list });
    const reference = t.sandbox.state.createCustomAudience(accountId, 'reference').id;
    await uploadAudience({
      ...base,
      target: { customAudienceId: reference },
      users: stripped(
        e,
        rowsOf(e, (x) => x !== 'no'),
      ),
      records: {},
    });
    expect(members(t.sandbox, t.audienceId)).toEqual(members(t.sandbox, reference));
    expect(t.sandbox.state.dnrListSize(list)).toBe(no);
    expect(JSON.parse(JSON.stringify(reportJson(r)))).toMatchObject({ do_not_reach: { users: no } });

    // Read only once (a generator, a stream): refused before anything is read or sent.
    const requests = t.sandbox.state.requests.length;
    async function* once() {
      yield* e.records;
    }
    const refused = { code: 'invalid_option', message: expect.stringContaining('can be read only once') as unknown };
    await expect(runUpload({ ...base, users: once(), records: {}, consent })).rejects.toMatchObject(refused);
    await expect(syncAudience({ ...base, users: once(), records: {}, consent, ...t.state })).rejects.toMatchObject(
      refused,
    );
    // A list that does not exist is found with the audience, before anything is sent.
    const missing = { ...consent, doNotReachListId: 'nope' };
    await expect(runUpload({ ...base, users: e.records, records: {}, consent: missing })).rejects.toMatchObject({
      code: 'target_not_found',
    });
    // Only for an update of a custom audience, and users read with exclude.
    await expect(
      runUpload({ ...base, target: { doNotReachListId: list }, users: e.records, records: {}, consent }),
    ).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(runUpload({ ...base, users: e.records, records: { consent: 'include' }, consent })).rejects.toThrow(
      /read with consent 'include'/,
    );
    expect(t.sandbox.state.requests.slice(requests).filter((q) => q.method === 'POST')).toEqual([]);
    await t.sandbox.close();
  });

  it('syncAudience of a hashCsv run: an opt-out leaves the audience and joins the list, an opt-in the reverse', async () => {
    const t = await setup();
    const accountId = t.sandbox.accounts.primary;
    const list = t.sandbox.state.createDoNotReachList(accountId).id;
    const file = join(tmp, 'sync-consent.csv');
    const write = (out: (i: number) => boolean): void =>
      writeFileSync(
        file,
        `Email,Unsubscribed\n${range(0, 120)
          .map((i) => `p.${i}@example.org,${out(i)}`)
          .join('\n')}\n`,
      );
    const sync = async () =>
      syncAudience({
        client: t.client,
        accountId,
        target: { customAudienceId: t.audienceId },
        users: await hashCsv(file, { workers: 0, emit: 'packed' }),
        consent: { policy: 'do-not-reach', doNotReachListId: list },
        maxRemovals: '100%',
        ...t.state,
      });
    write((i) => i % 10 === 0);
    const first = await sync();
    expect(first).toMatchObject({ status: 'completed', adds: 108, do_not_reach: { status: 'completed', adds: 12 } });
    // 12 more opt out (i % 10 === 1), 6 opt back in (i % 20 === 0).
    write((i) => (i % 10 === 0 && i % 20 !== 0) || i % 10 === 1);
    const second = await sync();
    expect(second).toMatchObject({ status: 'completed', adds: 6, removes: 12 });
    expect(second.do_not_reach).toMatchObject({ status: 'completed', adds: 12, removes: 6 });
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(102);
    expect(t.sandbox.state.dnrListSize(list)).toBe(18);
    await t.sandbox.close();
  });

  it("reportJson serializes the list's error inside do_not_reach", () => {
    const error = new ConfigError('sync_too_many_removals', 'too many', { fix: 'raise it' });
    const r = { status: 'partial', do_not_reach: { status: 'failed', error } } as unknown as SyncReport;
    expect(JSON.parse(JSON.stringify(reportJson(r)))).toEqual({
      status: 'partial',
      do_not_reach: {
        status: 'failed',
        error: { code: 'sync_too_many_removals', message: 'too many', fix: 'raise it' },
      },
    });
  });
});

describe('too small to be anonymous: --min-audience-size', () => {
  it('by default (100) an upload of fewer users is refused before any request, the target check included; a sync before any change', async () => {
    const sandbox = await startSandbox({ seed: 5 });
    const dir = tempDir('ak-min-size-');
    const env = sandboxEnv(sandbox);
    const account = sandbox.accounts.primary;
    const audience = sandbox.state.createCustomAudience(account, 'small').id;
    const small = join(FIXTURES, 'exports', 'hubspot-contacts.csv');
    // No --min-audience-size, and the helper passes none: the CLI's own default.
    const to = ['--account', account, '--audience', audience, '--workers', '0'];
    const run = { cwd: dir, env, defaultMinimum: true };
    const before = sandbox.state.requests.length;
    const up = await runCli(['upload', small, ...to], run);
    expect(up.code).toBe(2);
    expect(up.stderr).toContain(`custom audience ${audience} would hold 9 users, fewer than the minimum of 100`);
    expect(up.stderr).toContain('set --min-audience-size to 9 (0 turns the check off)');
    expect(sandbox.state.requests.length).toBe(before);

    const sync = await runCli(['sync', small, ...to, '--state-dir', join(dir, 'state')], run);
    expect(sync.code).toBe(2);
    expect(sync.stderr).toContain('would hold 9 users, fewer than the minimum of 100');
    // No request at all, not even the target check's GET.
    expect(sandbox.state.requests.length).toBe(before);
    expect(sandbox.state.audienceSize(audience)).toBe(0);

    const e = consentExport(12, 150);
    const big = join(dir, 'big.csv');
    writeFileSync(big, consentCsv(e));
    const ok = await runCli(['upload', big, ...to, '--consent', 'include'], run);
    expect(ok.code, ok.stderr).toBe(0);
    expect(sandbox.state.audienceSize(audience)).toBe(150);
    await sandbox.close();
  });
  it('library: by default (100) an upload and a sync of 99 users are refused with no request; a do-not-reach list is not', async () => {
    const t = await setup();
    const accountId = t.sandbox.accounts.primary;
    const base = { client: t.client, accountId, users: customers(range(0, 99)), records: { defaultCountry: 'US' } };
    const target = { customAudienceId: t.audienceId };
    await expect(libraryUpload({ ...base, target })).rejects.toMatchObject({ code: 'audience_too_small' });
    await expect(libraryRunUpload({ ...base, target, stateDir: t.stateDir })).rejects.toMatchObject({
      code: 'audience_too_small',
    });
    await expect(librarySync({ ...base, target, ...t.state })).rejects.toThrow(
      /after this sync, custom audience \S+ would hold 99 users, fewer than the minimum of 100/,
    );
    expect(t.sandbox.state.requests).toEqual([]);
    const list = t.sandbox.state.createDoNotReachList(accountId).id;
    const dnr = await libraryUpload({ ...base, target: { doNotReachListId: list } });
    expect(dnr.status).toBe('completed');
    const ok = await libraryUpload({ ...base, users: customers(range(0, 100)), target });
    expect(ok.status).toBe('completed');
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(100);
    await t.sandbox.close();
  });
  it('library: bare hashed users are counted as the uploader tells them apart (key order, empty lists), so 60 users given twice are refused', async () => {
    const t = await setup();
    const digest = (text: string): string => createHash('sha256').update(text).digest('hex');
    const users: AudienceUser[] = [];
    for (const i of range(0, 60)) {
      const email = [digest(`customer.${i}@example.com`)];
      const phone = [digest(`1415555${1000 + i}`)];
      // The same user three times: keys in another order, and with an empty list.
      users.push(
        { email, phone_number: phone },
        { phone_number: phone, email },
        { email, phone_number: phone, handle: [] },
      );
    }
    const base = {
      client: t.client,
      accountId: t.sandbox.accounts.primary,
      target: { customAudienceId: t.audienceId },
    };
    await expect(libraryUpload({ ...base, users })).rejects.toThrow(
      /would hold 60 users, fewer than the minimum of 100/,
    );
    expect(t.sandbox.state.requests).toEqual([]);
    // A raw value among them is refused by the read-ahead as the uploader refuses it, by its position.
    const raw = [...users.slice(0, 4), { email: ['customer.1@example.com'] }];
    await expect(libraryUpload({ ...base, users: raw })).rejects.toMatchObject({
      code: 'user_not_hashed',
      message: expect.stringMatching(/^user 5 of the input has a email value that is not a SHA-256 digest/),
    });
    const ok = await libraryUpload({ ...base, users, minAudienceSize: 60 });
    expect(ok.status).toBe('completed');
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(60);
    await t.sandbox.close();
  });
});

describe('a policy that needs a consent column, on an input without one', () => {
  const file = join(FIXTURES, 'crm-export.csv'); // no consent or opt-out column

  it('require-consent is refused before any row is hashed (it sent every row)', async () => {
    const r = await runCli(['hash', file, '--consent', 'require-consent', '--workers', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--consent require-consent needs a consent or opt-out column');
    expect(r.stdout).toBe('');
    await expect(hashCsv(file, { consent: 'require-consent', workers: 0 })).rejects.toMatchObject({
      code: 'mapping_no_consent_column',
    });
    const rows: RawRecord[] = [{ email: 'a@example.com' }];
    const records = async () => {
      for await (const _ of hashRecords(rows, { consent: 'require-consent' }));
    };
    await expect(records()).rejects.toThrow(/needs a consent or opt-out column/);
  });

  it('do-not-reach is refused before anything is sent (every user went to the list too)', async () => {
    const sandbox = await startSandbox({ seed: 9 });
    try {
      const account = sandbox.accounts.primary;
      const audience = sandbox.state.createCustomAudience(account, 'c').id;
      const list = sandbox.state.createDoNotReachList(account).id;
      const before = sandbox.state.requests.length;
      const args = ['upload', file, '--account', account, '--audience', audience, '--workers', '0'];
      const r = await runCli([...args, '--consent', `do-not-reach=${list}`], { env: sandboxEnv(sandbox) });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--consent do-not-reach needs a consent or opt-out column');
      expect(sandbox.state.requests.length).toBe(before);
      expect(sandbox.state.dnrListSize(list)).toBe(0);
    } finally {
      await sandbox.close();
    }
  });
});

describe('a consent column named by --map (opt_out, opt_in, consent_status), whatever its name', () => {
  const dir = tempDir('ak-consent-map-');
  const file = join(dir, 'no-email.csv');
  writeFileSync(
    file,
    'Email,No Email,Marketing OK,Permission\na@example.com,TRUE,yes,subscribed\nb@example.com,false,no,unsubscribed\nc@example.com,,,\n',
  );
  const hashed = async (map: string[], consent = 'exclude') => {
    const args = ['hash', file, '--json', '--workers', '0', '--consent', consent, '-o', join(dir, 'out.csv')];
    const r = await runCli([...args, ...map.flatMap((m) => ['--map', m])]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      summary: { users: number; consent: { rows_said_no: number; rows_said_yes: number } };
      mapping: { consent: unknown[] };
    };
    return { doc, stderr: r.stderr };
  };

  it('opt_out=Column: a column no name rule reads (No Email) withholds the rows that say true', async () => {
    const { doc, stderr } = await hashed(['opt_out=No Email']);
    expect(stderr).toContain('consent         <- "No Email" (--map): opt-out');
    expect(doc.mapping.consent).toEqual([{ column: 'No Email', kind: 'opt-out', from: 'map' }]);
    expect(doc.summary).toMatchObject({ users: 2, consent: { rows_said_no: 1 } });
  });

  it('opt_in=Column and consent_status=Column read their kind; require-consent then sends the rows that say yes', async () => {
    const optIn = await hashed(['opt_in=Marketing OK'], 'require-consent');
    expect(optIn.doc.summary).toMatchObject({ users: 1, consent: { rows_said_no: 1, rows_said_yes: 1 } });
    const status = await hashed(['consent_status=Permission'], 'require-consent');
    expect(status.doc.mapping.consent).toEqual([{ column: 'Permission', kind: 'status', from: 'map' }]);
    expect(status.doc.summary).toMatchObject({ users: 1, consent: { rows_said_no: 1, rows_said_yes: 1 } });
  });

  it('a mapped kind replaces what the name says, other consent columns are still found, and a column is mapped once', () => {
    const header = ['Email', 'Newsletter Status', 'Unsubscribed'];
    const mapping = resolveMapping(header, { map: ['opt_in=Newsletter Status'] });
    expect(mapping.consent?.map((c) => [c.label, c.kind, c.mapped ?? false])).toEqual([
      ['Newsletter Status', 'opt-in', true],
      ['Unsubscribed', 'opt-out', false],
    ]);
    expect(() => resolveMapping(header, { map: ['email=Email', 'opt_out=Email'] })).toThrow(
      /both as consent and as another type/,
    );
    expect(() => resolveMapping(header, { map: ['opt_out=Newsletter Status', 'opt_in=Newsletter Status'] })).toThrow(
      /as two kinds of consent column/,
    );
    expect(() => resolveMapping(header, { map: ['opt-out=Unsubscribed'] })).toThrow(ConfigError);
    expect(() => resolveMapping(header, { map: ['optout=Unsubscribed'] })).toThrow(
      expect.objectContaining({ fix: expect.stringContaining('country, opt_out, opt_in, consent_status') as unknown }),
    );
  });

  it('a map entry decides against the name, and says so; one whose values it cannot read is refused', async () => {
    const header = ['Email', 'Keine Einwilligung'];
    const sample = ['true', 'false', 'true', 'false'].map((v, i) => [`p${i}@example.com`, v]);
    // Read as the map entry says, marked: the printed mapping and a hint name what the name reads as.
    const mapped = resolveMapping(['Email', 'Email Opt Out'], { map: ['opt_in=Email Opt Out'] }, sample);
    expect(mapped.consent?.[0]).toMatchObject({ kind: 'opt-in', nameKind: 'opt-out' });
    // true/false are no status words: every row would be sent unread.
    expect(() => resolveMapping(header, { map: ['consent_status=Keine Einwilligung'] }, sample)).toThrow(
      'map entry consent_status="Keine Einwilligung": 4 of its first 4 values are read neither as yes nor as no for status',
    );
    const dir = tempDir('ak-opposed-');
    const file = join(dir, 'o.csv');
    writeFileSync(file, `Email,Email Opt Out\n${sample.map((r) => r.join(',')).join('\n')}\n`);
    const args = ['hash', file, '--workers', '0', '--map', 'opt_in=Email Opt Out', '-o', join(dir, 'out.csv')];
    const r = await runCli(args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('consent         <- "Email Opt Out" (--map; its name reads as opt-out): opt-in');
    expect(r.stderr).toContain(
      'hint: "Email Opt Out" is read as opt-in, as --map says, though its name reads as opt-out: check that "true" there means yes',
    );
    const json = await runCli([...args, '--json']);
    expect((JSON.parse(json.stdout) as { mapping: { consent: unknown[] } }).mapping.consent).toEqual([
      { column: 'Email Opt Out', kind: 'opt-in', from: 'map', name_kind: 'opt-out' },
    ]);
  });

  it('the refusal of a policy without a consent column names --map opt_out as the fix', async () => {
    const r = await runCli(['hash', join(FIXTURES, 'crm-export.csv'), '--consent', 'require-consent']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--map opt_out="Column"');
  });
});

describe('accepted / rejected: a consent banner or form, or the status of something else', () => {
  it('accepted (ten languages) says yes in a mapped column or one whose name asks for agreement; never in an opt-out column or a found status column', async () => {
    for (const v of ['Accepted', 'ACCEPT ALL', 'granted', 'Akzeptiert', 'Accepté', 'aceptado', 'godkänd', '承諾'])
      expect([v, readConsentValue('status', v, true)]).toEqual([v, 'yes']);
    // Unreadable there: an `Email Status` of a delivery log (accepted = queued) is no consent column.
    expect(readConsentValue('status', 'accepted')).toBe('unreadable');
    const log = ['accepted', 'accepted', 'delivered', 'bounced'].map((v, i) => [`p${i}@example.com`, v]);
    expect(resolveMapping(['Email', 'Email Status'], {}, log).consent).toBeUndefined();
    expect(readConsentValue('status', 'Rejected')).toBe('no');
    const reads = (c: Parameters<typeof readsAccepted>[0]): boolean => readsAccepted(c);
    expect(reads({ kind: 'opt-in' })).toBe(true);
    expect(reads({ kind: 'confirmation' })).toBe(true);
    expect(reads({ kind: 'status', mapped: true })).toBe(true);
    expect(reads({ kind: 'opt-out', mapped: true })).toBe(false);
    expect(reads({ kind: 'status' })).toBe(false); // `Email Status` of a delivery log: accepted = queued
    expect(reads({ kind: 'status', content: true })).toBe(false);
    // An invitation column found by its values (declined is a refusal word): accepted stays unreadable.
    const dir = tempDir('ak-invite-');
    const file = join(dir, 'invite.csv');
    const rows = Array.from({ length: 20 }, (_, i) => `p${i}@example.com,${i === 0 ? 'accepted' : 'declined'}`);
    writeFileSync(file, `Email,Invite\n${rows.join('\n')}\n`);
    const args = ['hash', file, '--workers', '0', '--consent', 'require-consent', '-o', join(dir, 'o.csv')];
    const r = await runCli(args);
    expect(r.stderr).toMatch(/rows that say yes +0\n/);
    expect(r.stderr).toMatch(/rows with an unreadable value +1 +line 2\n/);
  });

  it('a column of unknown name holding them is not read, and a hint names the map entry that reads it', async () => {
    const sample = ['accepted', 'rejected', 'Accepted', 'accepted'].map((v, i) => [`p${i}@example.com`, v, 'x']);
    const mapping = resolveMapping(['Email', 'Cookie Banner', 'Notes'], {}, sample);
    expect(mapping.consent).toBeUndefined();
    expect(mapping.notUsed?.map((c) => [c.label, c.maybeConsent])).toEqual([['Cookie Banner', true]]);
    // A column already left out for its name (a generic id) is listed once.
    const ids = resolveMapping(['Email', 'Invite ID'], {}, sample);
    expect(ids.notUsed?.map((c) => [c.label, c.maybeConsent])).toEqual([['Invite ID', true]]);
    // Without a refusal among them (all accepted), nothing to warn of.
    const allYes = sample.map(([e]) => [e ?? '', 'accepted']);
    expect(resolveMapping(['Email', 'Cookie Banner'], {}, allYes).notUsed).toBeUndefined();
    const dir = tempDir('ak-banner-');
    const file = join(dir, 'banner.csv');
    writeFileSync(file, `Email,Cookie Banner\n${sample.map(([e, v]) => `${e},${v}`).join('\n')}\n`);
    const r = await runCli(['hash', file, '--workers', '0', '-o', join(dir, 'out.csv')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      'hint: "Cookie Banner" is not read as consent (its values (accepted, rejected…) may be consent or the status of something else), so a row that says rejected there is sent; if it is consent, --map consent_status="Cookie Banner"',
    );
  });
});
