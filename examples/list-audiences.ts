// List an ad account's custom audiences with the API client, credentials resolved as the CLI does
// (flags > AUDIENCE_KIT_* environment > config file profile; see docs/configuration.md).
// Run: npx tsx examples/list-audiences.ts ACCOUNT_ID  (how to run: examples/README.md)
import { createClient, listCustomAudiences, paginate, resolveConnectionConfig } from 'audience-kit';

const accountId = process.argv[2];
if (accountId === undefined) throw new Error('usage: list-audiences.ts ACCOUNT_ID');

const { options, sources } = await resolveConnectionConfig({ env: process.env });
console.error('credentials from', sources); // where each value came from; never the values
const client = createClient({
  ...options,
  onWait: (e) => console.error(`waiting ${e.ms} ms (${e.reason}) for ${e.path}`),
});
try {
  // paginate() follows next_cursor until the last page.
  for await (const a of paginate((cursor) =>
    listCustomAudiences(client, cursor ? { accountId, cursor } : { accountId }),
  )) {
    console.log(a.id, a.name, a.audience_size ?? '-', a.targetable ? 'targetable' : a.reasons_not_targetable);
  }
  console.error(client.stats()); // { requests, retries, waitedMs, rateLimitWaits, rateLimited }
} finally {
  await client.close(); // closes the keep-alive connection pool
}
