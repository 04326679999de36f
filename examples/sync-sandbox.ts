// Keep a custom audience of the embedded sandbox equal to a customer table that changes between runs:
// the first sync sends everyone, the next one only the customers who left (Delete) and joined (Update).
// Run: npx tsx examples/sync-sandbox.ts  (how to run: examples/README.md)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, createCustomAudience, syncAudience, type SyncReport } from 'audience-kit';
import { startSandbox } from 'audience-kit/sandbox'; // a test tool: its own entry point

/** Rows as a database cursor would give them: keyed by column name, raw values (hashed here). */
function customers(from: number, to: number): { email: string; customer_id: string }[] {
  const rows = [];
  for (let i = from; i <= to; i++) rows.push({ email: `Customer.${i}@Example.com`, customer_id: `c-${i}` });
  return rows;
}

const sandbox = await startSandbox();
const client = createClient({ adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials });
// The snapshot of what the platform confirmed lives here; a real pipeline keeps it between runs.
const stateDir = mkdtempSync(join(tmpdir(), 'audience-kit-sync-'));
try {
  const accountId = sandbox.accounts.primary;
  const audience = await createCustomAudience(client, { accountId, name: 'CRM customers' });
  const sync = (rows: Record<string, string>[]): Promise<SyncReport> =>
    syncAudience({ client, accountId, target: { customAudienceId: audience.id }, users: rows, records: {}, stateDir });

  // Day 1: 200 customers. No snapshot yet, so everyone goes as Update and nothing is removed.
  const first = await sync(customers(1, 200));
  // Day 2: customers 1-10 left, 201-205 joined; the other 190 are already confirmed and not sent again.
  const second = await sync(customers(11, 205));

  for (const [day, r] of [
    ['day 1', first],
    ['day 2', second],
  ] as const) {
    console.log(
      `${day}: ${r.status} first sync ${r.first_sync} +${r.adds} -${r.removes} unchanged ${r.unchanged} requests ${r.requests}`,
    );
  }
  console.log('sandbox audience size', sandbox.state.audienceSize(audience.id));
  if (second.status !== 'completed') process.exitCode = 1;
} finally {
  await client.close();
  await sandbox.close();
  rmSync(stateDir, { recursive: true, force: true });
}
