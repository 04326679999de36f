/**
 * Commits the server can lose without an error. The store's guarantees (a killed sync's write-ahead
 * rows found by the next one, a commit never undone) hold only if a commit the server acknowledged
 * stays. Two settings break that silently, and the store refuses to run where the server shows them:
 * `synchronous_commit = off` (for the session, the role or the database: a server crash loses the
 * last commits), and standbys that are all asynchronous (a failover to one loses the commits it had
 * not received; with `synchronous_commit = local` every standby is). What the server does not show
 * (`pg_stat_replication`'s `sync_state` is hidden from a role without `pg_read_all_stats`, a managed
 * service's own replication) is not judged: docs/configuration.md says what a restore of the whole
 * store means and how to re-anchor a target.
 *
 * A failover's loss can be accepted explicitly, for a deployment whose standbys are read replicas
 * it will not make synchronous: the URL parameter `audience_kit_async_standby=accept` (read and
 * removed here, never passed to the server) says its owner re-anchors the targets after a failover.
 * A crash's loss (`synchronous_commit = off`) cannot be accepted: its fix is one setting.
 */
import type pg from 'pg';
import { ConfigError, EnvironmentError } from '../../errors.js';
import { ident, urlParts } from './errors.js';

/** What the server says of its durability, as the store's session sees it. */
export interface Durability {
  synchronousCommit: string;
  /** `sync_state` of each standby streaming from this server (null: not visible to this role). */
  standbys: (string | null)[];
}

/** The URL parameter that accepts a failover's loss of commits, and its one value. */
export const ACCEPT_PARAM = 'audience_kit_async_standby';
const ACCEPT_VALUE = 'accept';

/** A state URL without the store's own parameter, and whether it accepts a failover's loss (any other value is refused). */
export function acceptedLoss(url: string): { url: string; acceptFailoverLoss: boolean } {
  if (!URL.canParse(url)) return { url, acceptFailoverLoss: false };
  const u = new URL(url);
  const values = u.searchParams.getAll(ACCEPT_PARAM);
  if (values.length === 0) return { url, acceptFailoverLoss: false };
  if (values.some((v) => v !== ACCEPT_VALUE))
    throw new ConfigError(
      'invalid_option',
      `the state URL's ${ACCEPT_PARAM} parameter takes one value: ${ACCEPT_VALUE}`,
      {
        fix: `write ${ACCEPT_PARAM}=${ACCEPT_VALUE} to accept that a failover may lose the last commits (docs/configuration.md), or remove it`,
      },
    );
  u.searchParams.delete(ACCEPT_PARAM);
  return { url: u.toString(), acceptFailoverLoss: true };
}

/** Why commits can be lost silently on this server, and whether by a failover; undefined when nothing shows it. */
export function commitLossRisk(d: Durability): { risk: string; failover: boolean } | undefined {
  if (d.synchronousCommit === 'off')
    return { risk: 'synchronous_commit is off: a crash of the server loses the last commits', failover: false };
  const visible = d.standbys.filter((s): s is string => s !== null);
  if (visible.length === 0) return undefined;
  if (d.synchronousCommit === 'local')
    return {
      risk: `synchronous_commit is local and ${visible.length} standby(s) stream from it: a failover loses the commits they had not received`,
      failover: true,
    };
  if (!visible.some((s) => s === 'sync' || s === 'quorum'))
    return {
      risk: `its ${visible.length} standby(s) are all asynchronous (${[...new Set(visible)].join(', ')}): a failover to one loses the commits it had not received`,
      failover: true,
    };
  return undefined;
}

export async function readDurability(client: pg.ClientBase): Promise<Durability> {
  const setting = await client.query<{ v: string }>(`SELECT current_setting('synchronous_commit') AS v`);
  const standbys = await client.query<{ s: string | null }>('SELECT sync_state AS s FROM pg_stat_replication');
  return { synchronousCommit: setting.rows[0]?.v ?? 'on', standbys: standbys.rows.map((r) => r.s) };
}

/**
 * Refuse a server whose acknowledged commits can be lost silently (`state_commits_unsafe`), but
 * for a failover's loss when `acceptFailoverLoss` (the URL's parameter).
 */
export async function checkDurability(client: pg.ClientBase, where: string, acceptFailoverLoss = false): Promise<void> {
  const found = commitLossRisk(await readDurability(client));
  if (found === undefined || (found.failover && acceptFailoverLoss)) return;
  const { user } = urlParts(where);
  throw new EnvironmentError(
    'state_commits_unsafe',
    `the state database ${where} can lose commits it acknowledged without an error (${found.risk}); the sync state would then silently fall behind the platform, so it is not used`,
    {
      path: where,
      fix: found.failover
        ? `have the primary wait for a standby (as a superuser: ALTER SYSTEM SET synchronous_standby_names = '*'; SELECT pg_reload_conf(); and synchronous_commit = on for ${ident(user)}), or keep the state on a server whose failover loses no commit; or, to accept that a failover may lose the last commits and re-anchor the targets after one (docs/configuration.md), add ${ACCEPT_PARAM}=${ACCEPT_VALUE} to the state URL`
        : `set it for the user the syncs connect as: ALTER ROLE ${ident(user)} SET synchronous_commit = on (or add options=-c%20synchronous_commit%3Don to the URL)`,
    },
  );
}
