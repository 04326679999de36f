import { givenLabel } from '../../identifiers/labels.js';
import { once } from 'node:events';
import type { CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import {
  DEFAULT_SANDBOX_RATE_LIMIT,
  parseFaultSpec,
  startSandbox,
  type Sandbox,
  type SandboxOptions,
} from '../../sandbox/index.js';
import type { CliContext } from '../context.js';
import { handle, writeJson, writeLine, type GlobalArgs } from '../output.js';
import { EXIT_CODES } from '../exit-codes.js';

interface SandboxArgs extends GlobalArgs {
  port: number;
  host: string;
  faults?: string;
  seed?: number;
  'rate-limit'?: string;
  'processing-ms'?: number;
}

const RATE_RE = /^(\d+)\/(\d+(?:\.\d+)?)$/;

function parseRateLimit(text: string): { limit: number; windowMs: number } {
  const m = RATE_RE.exec(text.trim());
  const limit = Number(m?.[1]);
  const windowMs = Math.round(Number(m?.[2]) * 1000);
  if (m === null || limit < 1 || windowMs < 1) {
    throw new ConfigError('invalid_option', `--rate-limit must be REQUESTS/SECONDS, got ${givenLabel(text)}`, {
      fix: 'pass for example --rate-limit 1500/60 (the platform) or --rate-limit 30/2',
    });
  }
  return { limit, windowMs };
}

function wholeNumber(option: string, value: number | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError('invalid_option', `${option} must be a whole number from ${min} to ${max}, got ${value}`, {
      fix: `pass for example ${option} ${min}`,
    });
  }
  return value;
}

function sandboxOptions(args: SandboxArgs): SandboxOptions {
  const options: SandboxOptions = { host: args.host };
  const port = wholeNumber('--port', args.port, 0, 65535);
  if (port !== undefined) options.port = port;
  const seed = wholeNumber('--seed', args.seed, 0, 2 ** 32 - 1);
  if (seed !== undefined) options.seed = seed;
  const processingMs = wholeNumber('--processing-ms', args['processing-ms'], 0, 86_400_000);
  if (processingMs !== undefined) options.processingMs = processingMs;
  if (args.faults !== undefined) options.faults = parseFaultSpec(args.faults);
  if (args['rate-limit'] !== undefined) options.rateLimit = parseRateLimit(args['rate-limit']);
  return options;
}

interface Demo {
  customAudienceId: string;
  doNotReachListId: string;
}

/** A demo audience (with campaigns, so `targeted` and the delete guard can be tried at once) and a do-not-reach list. */
function addDemoObjects(sandbox: Sandbox): Demo {
  const { primary } = sandbox.accounts;
  const audience = sandbox.state.createCustomAudience(primary, 'Demo audience', 'Created by audience-kit sandbox');
  const dnr = sandbox.state.createDoNotReachList(primary, 'Demo do-not-reach list, created by audience-kit sandbox');
  sandbox.state.addCampaign(primary, audience.id, {
    name: 'Demo spring sale',
    lineItems: [{ name: 'Demo prospecting', servable: true }],
  });
  sandbox.state.addCampaign(primary, audience.id, {
    name: 'Demo paused campaign',
    lineItems: [{ name: 'Demo retargeting', servable: false }],
  });
  return { customAudienceId: audience.id, doNotReachListId: dnr.id };
}

/** The base URL, the throwaway credentials as export lines, the accounts and the demo objects (or one JSON object). */
function printSandbox(
  ctx: CliContext,
  args: SandboxArgs,
  sandbox: Sandbox,
  demo: Demo,
  rateLimit: { limit: number; windowMs: number },
): void {
  const { primary, secondary, foreign } = sandbox.accounts;
  const env = {
    AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
    AUDIENCE_KIT_API_BASE_URL: sandbox.apiBaseUrl,
    AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
    AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
    AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
    AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
  };
  if (args.json === true) {
    writeJson(ctx, {
      url: sandbox.url,
      env,
      accounts: sandbox.accounts,
      user: sandbox.user,
      demo: { ...demo, accountId: primary },
      faults: args.faults ?? null,
      rateLimit,
    });
    return;
  }
  const out = (line = ''): void => writeLine(ctx.stdout, line);
  out(`audience-kit sandbox listening on ${sandbox.url}${sandbox.loopbackOnly ? '' : ` (bound to ${args.host})`}`);
  out();
  out('# Throwaway credentials of this sandbox run (random per start, useless elsewhere). Paste into your shell:');
  for (const [name, value] of Object.entries(env)) out(`export ${name}=${value}`);
  out();
  out(`accounts:  primary ${primary}  secondary ${secondary}  (yours, same business)`);
  out(`           foreign ${foreign}  (another user's: 403)`);
  out(
    `demo custom audience:    ${demo.customAudienceId}  (account ${primary}; targeted by 2 demo campaigns, 1 servable line item)`,
  );
  out(`demo do-not-reach list:  ${demo.doNotReachListId}  (account ${primary})`);
  out(`rate limit (user batches): ${rateLimit.limit} per ${rateLimit.windowMs / 1000} s`);
  if (args.faults !== undefined) out(`faults: ${args.faults}`);
  out();
  out('Press Ctrl+C to stop.');
}

export function sandboxCommand(ctx: CliContext): CommandModule<GlobalArgs, SandboxArgs> {
  return {
    command: 'sandbox',
    describe: 'Run the embedded sandbox platform locally (for trying the tool and for tests)',
    builder: (y) =>
      y
        .option('port', { type: 'number', default: 0, describe: 'Port to listen on (0 picks a free one)' })
        .option('host', {
          type: 'string',
          default: '127.0.0.1',
          describe:
            'Interface to listen on; 0.0.0.0 or :: listen everywhere and print a loopback base URL (with a warning: anyone who can reach the port can use the sandbox)',
        })
        .option('faults', {
          type: 'string',
          describe:
            'Faults injected into user-batch requests (or every ads request with :all): kind[=arg]@N[+N][:all] or kind[=arg]%P[:all], comma-separated; kinds 500, 503[=retry-after s], 429, drop, slow[=ms], mismatch, html',
        })
        .option('seed', { type: 'number', describe: 'Make credentials, ids and rate-based faults reproducible' })
        .option('rate-limit', { type: 'string', describe: 'User-batch limit as REQUESTS/SECONDS (default 1500/60)' })
        .option('processing-ms', {
          type: 'number',
          describe: 'Audiences report PROCESSING this long after an upload (default 0)',
        })
        .example('$0 sandbox', 'start on a free port and print the export lines to paste')
        .example(
          '$0 sandbox --port 8787 --faults "503=1@2,drop@4,mismatch%0.01" --seed 7',
          'a flaky platform, reproducibly',
        )
        .example('$0 sandbox --rate-limit 30/2 --json', 'a scaled-down rate limit; one JSON object on stdout')
        .epilogue(
          "Prints the sandbox's base URL, its THROWAWAY credentials as `export AUDIENCE_KIT_...=` lines (the only place audience-kit ever prints a secret: these are random per start and valid only against this sandbox), the account ids, and a demo custom audience and do-not-reach list. Runs until Ctrl+C (SIGINT) or SIGTERM, then exits 0.",
        ) as never,
    handler: handle<SandboxArgs>(ctx, async (args) => {
      const options = sandboxOptions(args);
      const sandbox = await startSandbox(options);
      if (!sandbox.loopbackOnly) {
        // The credentials printed below are throwaway, but they still open this sandbox to anyone on the network.
        writeLine(
          ctx.stderr,
          `warning: the sandbox listens on ${args.host} and is reachable beyond this machine; anyone who can reach port ${new URL(sandbox.url).port} can use it with the credentials printed below (use --host 127.0.0.1 to keep it local)`,
        );
      }
      printSandbox(ctx, args, sandbox, addDemoObjects(sandbox), options.rateLimit ?? DEFAULT_SANDBOX_RATE_LIMIT);
      try {
        if (!ctx.signal.aborted) await once(ctx.signal, 'abort');
      } finally {
        await sandbox.close();
      }
      if (args.json !== true) writeLine(ctx.stderr, 'sandbox stopped');
      return EXIT_CODES.ok;
    }),
  };
}
