// A CRM table with an opt-out column, uploaded in one call: the people who unsubscribed are kept off
// the custom audience and put on the account's do-not-reach list (consent policy 'do-not-reach').
// Run: npx tsx examples/consent-do-not-reach.ts  (how to run: examples/README.md)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, createCustomAudience, createDoNotReachList, reportJson, runUpload } from 'audience-kit';
import { startSandbox } from 'audience-kit/sandbox'; // a test tool: its own entry point

/** Rows as a database cursor would give them; every fifth person unsubscribed. Given as an array: read twice. */
const rows = Array.from({ length: 150 }, (_, i) => ({
  email: `Customer.${i}@Example.com`,
  Unsubscribed: i % 5 === 0 ? 'true' : 'false',
}));

const sandbox = await startSandbox();
const client = createClient({ adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials });
// The run journals and the audit log of both runs (the audience's and the list's) live here.
const stateDir = mkdtempSync(join(tmpdir(), 'audience-kit-consent-'));
try {
  const accountId = sandbox.accounts.primary;
  const audience = await createCustomAudience(client, { accountId, name: 'CRM customers' });
  const list = await createDoNotReachList(client, { accountId });

  const report = await runUpload({
    client,
    accountId,
    target: { customAudienceId: audience.id },
    users: rows,
    records: {}, // raw records, hashed here; the Unsubscribed column is read as an opt-out
    consent: { policy: 'do-not-reach', doNotReachListId: list.id },
    stateDir,
  });

  // `status` is both runs': completed only when the audience and the list are.
  const json = reportJson(report);
  console.log(`${json.status}: audience +${json.users_confirmed}, said no ${json.consent?.rows_said_no ?? 0}`);
  console.log(`do-not-reach list: ${json.do_not_reach?.status} +${json.do_not_reach?.users_confirmed}`);
  console.log(
    'sandbox audience size',
    sandbox.state.audienceSize(audience.id),
    'list size',
    sandbox.state.dnrListSize(list.id),
  );
  if (report.status !== 'completed') process.exitCode = 1;
} finally {
  await client.close();
  await sandbox.close();
  rmSync(stateDir, { recursive: true, force: true });
}
