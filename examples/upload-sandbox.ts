// Upload a CSV export to a custom audience of the embedded sandbox (a local imitation of the platform):
// hashed on this machine, packed into verified batches, retried where the sandbox injects faults.
// Run: npx tsx examples/upload-sandbox.ts [file.csv]  (how to run: examples/README.md)
import { createRequire } from 'node:module';
import { createClient, createCustomAudience, hashCsv, uploadAudience } from 'audience-kit';
import { startSandbox } from 'audience-kit/sandbox'; // a test tool: its own entry point

// Without a file: the synthetic CRM export the package ships (2,991 rows with the mess of real exports).
const input = process.argv[2] ?? createRequire(import.meta.url).resolve('audience-kit/fixtures/crm-export.csv');

// A 503 on the first request and a count mismatch on the second: both are retried and the run completes.
const sandbox = await startSandbox({ faults: '503=1@1,mismatch@2' });
const client = createClient({
  adsBaseUrl: sandbox.adsBaseUrl,
  credentials: sandbox.credentials,
  retry: { baseMs: 10 },
});
try {
  const accountId = sandbox.accounts.primary;
  const audience = await createCustomAudience(client, { accountId, name: 'CRM buyers' });

  const report = await uploadAudience({
    client,
    accountId,
    target: { customAudienceId: audience.id },
    users: await hashCsv(input, { defaultCountry: 'US', emit: 'packed' }),
    limits: { maxBodyBytes: 200_000 }, // small requests, to show several batches
    retryBaseMs: 10,
    onProgress: (p) => p.done && console.error(`${p.usersConfirmed} users confirmed`),
  });

  // A failed or partial run returns its report (what was confirmed is never lost); it does not throw.
  console.log(report.status, `${report.batches_confirmed}/${report.batches} batches`, `retries ${report.retries}`);
  console.log('sandbox audience size', sandbox.state.audienceSize(audience.id));
  if (report.status !== 'completed') process.exitCode = 1;
} finally {
  await client.close();
  await sandbox.close();
}
