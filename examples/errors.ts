// Handling audience-kit's errors: one hierarchy with a stable `code`, a one-line message that never holds
// an identifier or a secret, and a `fix`. Branch on the class or the code, never on the message.
// Run: npx tsx examples/errors.ts  (how to run: examples/README.md)
import {
  AudienceKitError,
  AuthError,
  ConfigError,
  HttpError,
  RateLimitError,
  createClient,
  getCustomAudience,
} from 'audience-kit';
import { startSandbox } from 'audience-kit/sandbox';

function explain(error: unknown): void {
  if (!(error instanceof AudienceKitError)) throw error; // a bug: let it crash with its stack
  console.error(`error: ${error.message}`);
  if (error.fix) console.error(`  fix: ${error.fix}`);
  if (error instanceof AuthError) console.error('  (credentials or account refused: do not retry)');
  else if (error instanceof RateLimitError) console.error(`  (rate limited until ${error.resetAt?.toISOString()})`);
  else if (error instanceof HttpError)
    console.error(`  (HTTP ${error.status} ${error.method} ${error.path}, ${error.attempts} attempts)`);
  else if (error instanceof ConfigError) console.error('  (bad option: nothing was sent)');
  // `code` is typed ErrorCode (the union of ERROR_CODES), so this switch is checked by the compiler.
  switch (error.code) {
    case 'api_not_found':
      console.error('  code api_not_found: check the account and audience ids');
      break;
    default:
      console.error(`  code ${error.code}`);
  }
}

// 1. A bad option is refused before anything is sent (ConfigError naming the option): no scheme here.
try {
  createClient({ adsBaseUrl: 'ads-api.example.com', credentials: { consumerKey: 'k', consumerSecret: 's' } });
} catch (error) {
  explain(error);
}

// 2. A platform refusal: an audience that does not exist is a 404 (HttpError `api_not_found`).
const sandbox = await startSandbox();
const client = createClient({ adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials });
try {
  await getCustomAudience(client, { accountId: sandbox.accounts.primary, customAudienceId: 'nosuch' });
} catch (error) {
  explain(error);
} finally {
  await client.close();
  await sandbox.close();
}
