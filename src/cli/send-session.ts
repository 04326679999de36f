/**
 * One sending command's session (`upload`, `sync`): the input hashed for sending, the client or
 * the embedded sandbox with its new target, Ctrl-C, and closing what was opened.
 */
import { basename } from 'node:path';
import { createClient, type AdsClient } from '../api/client.js';
import { createDoNotReachList } from '../api/endpoints.js';
import { createTargetLike, describeTarget, type Target } from '../upload/target.js';
import { hashCsv, type HashCsvRun } from '../hashing/pipeline.js';
import { startSandbox, type Sandbox } from '../sandbox/index.js';
import { clientFromArgs, withDebugLines, withTransportFlags } from './connection.js';
import type { CliContext } from './context.js';
import { guardRun, type SendInput } from './hash-options.js';
import { writeLine } from './output.js';
import type { UploadArgs } from './send-options.js';

export interface Connected {
  client: AdsClient | undefined;
  sandbox: Sandbox | undefined;
  accountId: string;
  target: Target;
  /** `--consent do-not-reach=LIST`: the list (with --sandbox, one made in the sandbox). */
  doNotReachListId?: string;
}

export interface ConnectOptions {
  /** With --sandbox: the same account and target ids every time. */
  seed?: number;
  /** With --sandbox: run on each new target before the faults are armed (the sync's refill). */
  prepare?: (c: Connected) => Promise<void>;
  /** `--consent do-not-reach=LIST`'s list. */
  doNotReachListId?: string | undefined;
}

/** The library's `consent` option of `--consent do-not-reach=LIST`, for the list `connect` settled. */
export function consentOption(c: Connected): { consent?: { policy: 'do-not-reach'; doNotReachListId: string } } {
  const id = c.doNotReachListId;
  return id === undefined ? {} : { consent: { policy: 'do-not-reach', doNotReachListId: id } };
}

/**
 * The client, and with --sandbox the embedded sandbox with a new audience or list to upload to,
 * and the do-not-reach list of `--consent do-not-reach` made there too. `--sandbox-faults` count
 * from the command's own requests: they are armed after the sandbox's setup (the targets'
 * creation, and `prepare` on each).
 */
export async function connect(
  ctx: CliContext,
  args: UploadArgs,
  target: Target,
  { seed, prepare, doNotReachListId }: ConnectOptions = {},
): Promise<Connected> {
  if (args.sandbox !== true) {
    const client = args['dry-run'] === true ? undefined : (await clientFromArgs(ctx, args)).client;
    const list = doNotReachListId === undefined ? {} : { doNotReachListId };
    return { client, sandbox: undefined, accountId: args.account ?? '', target, ...list };
  }
  // --max-attempts and --request-timeout apply to the sandbox too (checked before it starts).
  const transport = withTransportFlags(ctx, args, {});
  const faults = args['sandbox-faults'];
  const sandbox = await startSandbox({ port: 0, ...(seed === undefined ? {} : { seed }), faults: faults ?? '' });
  const base = { ...transport, adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials };
  const client = createClient(withDebugLines(ctx, args, base));
  try {
    sandbox.setFaults('');
    const accountId = args.account ?? sandbox.accounts.primary;
    const name = `audience-kit ${basename(args.file)}`;
    const created = await createTargetLike(target, client, accountId, name);
    const c: Connected = { client, sandbox, accountId, target: created };
    await prepare?.(c);
    if (doNotReachListId !== undefined) {
      const list = describeTarget({
        doNotReachListId: (await createDoNotReachList(client, { accountId, description: name })).id,
      });
      c.doNotReachListId = list.id;
      await prepare?.({ ...c, target: list });
    }
    if (faults !== undefined) sandbox.setFaults(faults);
    return c;
  } catch (error) {
    await client.close();
    await sandbox.close();
    throw error;
  }
}

/**
 * The CSV hashed for sending (`emit: 'packed'`) behind the reject guard. Do-not-reach lists take
 * only some identifier types: other columns are left out of the mapping.
 */
export async function openSendInput(input: SendInput, { types, filtersConsent }: Target): Promise<HashCsvRun> {
  const run = await hashCsv(input.source, {
    ...input.hash,
    emit: 'packed',
    ...(types === undefined ? {} : { types }),
    // Do-not-reach lists are never filtered (the people who said no belong there), except the
    // pass of --consent do-not-reach, which sends them those rows alone.
    ...(!filtersConsent && input.hash.consent !== 'refused' ? { consent: 'include' } : {}),
  });
  return guardRun(run, input.guard);
}

/**
 * Ctrl-C (the context's signal) aborts `signal`: finish what is in flight and save the journal (a
 * second one quits at once: processContext). Install it before the slow preparations (starting
 * the sandbox, fingerprinting a large file); `release()` removes the listener.
 */
export function interruptSignal(ctx: CliContext): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const onInterrupt = (): void => {
    writeLine(
      ctx.stderr,
      '\ninterrupted: finishing the requests in flight and saving the journal (Ctrl-C again to quit at once)',
    );
    controller.abort();
  };
  ctx.signal.addEventListener('abort', onInterrupt, { once: true });
  if (ctx.signal.aborted) controller.abort();
  return { signal: controller.signal, release: () => ctx.signal.removeEventListener('abort', onInterrupt) };
}

/** Stops reading the input and closes the client and the sandbox, whatever was opened. */
export async function closeSend(run: HashCsvRun, c: Connected | undefined): Promise<void> {
  await run.close();
  await c?.client?.close();
  await c?.sandbox?.close();
}

/** With --sandbox: how many users the embedded sandbox's target holds, and the report's name for it. */
export function sandboxTargetSize(c: Connected): { label: string; size: number } | undefined {
  if (c.sandbox === undefined) return undefined;
  const t = c.target;
  // The kind names the sandbox state's count (the sandbox states its own kinds).
  return { label: `sandbox ${t.noun} size`, size: c.sandbox.state.targetSize(t.kind, t.id) };
}
