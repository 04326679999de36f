/**
 * Reading a target back before the input is read (runUpload's and syncAudience's `checkTarget`):
 * it exists and this account may write to it, so a mistyped id is found before anything is hashed.
 */
import type { AdsClient } from '../api/client.js';
import { ConfigError, HttpError } from '../errors.js';
import type { Target } from './target.js';

/** checkTarget of `target`, then of `alsoCheck` (the do-not-reach list of a consent policy) when given. */
export async function checkTargets(
  client: AdsClient,
  accountId: string,
  target: Target,
  alsoCheck: Target | undefined,
): Promise<void> {
  for (const t of alsoCheck === undefined ? [target] : [target, alsoCheck]) await checkTarget(client, accountId, t);
}

/** One GET: a mistyped id is found before the input is hashed, with a fix that can help. */
async function checkTarget(client: AdsClient, accountId: string, t: Target): Promise<void> {
  const id = t.id;
  const what = `${t.name} ${id}`;
  const notFound = (cause?: unknown): ConfigError =>
    new ConfigError('target_not_found', `${what} does not exist in account ${accountId}`, {
      fix: `check accountId and the ${t.noun} id; \`audience-kit ${t.command} list\` shows the account's ${t.noun}s`,
      ...(cause === undefined ? {} : { cause }),
    });
  try {
    const found = await t.readBack(client, accountId);
    if (found === 'missing') throw notFound();
    if (found === 'read_only') {
      throw new ConfigError('target_read_only', `account ${accountId} may read ${what} but not change it`, {
        fix: `ask the ${t.noun}'s owner account for a READ_WRITE permission, or upload from the owner account`,
      });
    }
  } catch (error) {
    if (error instanceof HttpError && error.status === 404) throw notFound(error);
    throw error;
  }
}
