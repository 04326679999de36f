/** A sandbox and a client signed for it with instant retries and waits, both closed after each test. */
import { afterEach } from 'vitest';
import { createClient, type AdsClient, type ClientOptions } from '../../src/api/client.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { fastForwardClock } from './clock.js';

let open: { sandbox: Sandbox; client: AdsClient }[] = [];
afterEach(async () => {
  for (const o of open) {
    await o.client.close();
    await o.sandbox.close();
  }
  open = [];
});

export async function openSandboxClient(
  sandboxOptions: SandboxOptions,
  clientOptions: Partial<ClientOptions> = {},
): Promise<{ sandbox: Sandbox; client: AdsClient }> {
  const sandbox = await startSandbox(sandboxOptions);
  const client = createClient({
    adsBaseUrl: sandbox.adsBaseUrl,
    credentials: sandbox.credentials,
    clock: fastForwardClock(),
    retry: { baseMs: 1, maxMs: 2 },
    ...clientOptions,
  });
  open.push({ sandbox, client });
  return { sandbox, client };
}
