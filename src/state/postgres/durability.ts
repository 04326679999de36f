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
 */
import type pg from 'pg';
import { EnvironmentError } from '../../errors.js';
import { ident, urlParts } from './errors.js';

/** What the server says of its durability, as the store's session sees it. */
export interface Durability {
  synchronousCommit: string;
  /** `sync_state` of each standby streaming from this server (null: not visible to this role). */
  standbys: (string | null)[];
}

/** Why commits can be lost silently on this server; undefined when nothing shows it. */
export function commitLossRisk(d: Durability): string | undefined {
  if (d.synchronousCommit === 'off') return 'synchronous_commit is off: a crash of the server loses the last commits';
  const visible = d.standbys.filter((s): s is string => s !== null);
  if (visible.length === 0) return undefined;
  if (d.synchronousCommit === 'local')
    return `synchronous_commit is local and ${visible.length} standby(s) stream from it: a failover loses the commits they had not received`;
  if (!visible.some((s) => s === 'sync' || s === 'quorum'))
    return `its ${visible.length} standby(s) are all asynchronous (${[...new Set(visible)].join(', ')}): a failover to one loses the commits it had not received`;
  return undefined;
}

export async function readDurability(client: pg.ClientBase): Promise<Durability> {
  const setting = await client.query<{ v: string }>(`SELECT current_setting('synchronous_commit') AS v`);
  const standbys = await client.query<{ s: string | null }>('SELECT sync_state AS s FROM pg_stat_replication');
  return { synchronousCommit: setting.rows[0]?.v ?? 'on', standbys: standbys.rows.map((r) => r.s) };
}

/** Refuse a server whose acknowledged commits can be lost silently (`state_commits_unsafe`). */
export async function checkDurability(client: pg.ClientBase, where: string): Promise<void> {
  const risk = commitLossRisk(await readDurability(client));
  if (risk === undefined) return;
  const { user } = urlParts(where);
  throw new EnvironmentError(
    'state_commits_unsafe',
    `the state database ${where} can lose commits it acknowledged without an error (${risk}); the sync state would then silently fall behind the platform, so it is not used`,
    {
      path: where,
      fix: risk.startsWith('synchronous_commit is off')
        ? `set it for the user the syncs connect as: ALTER ROLE ${ident(user)} SET synchronous_commit = on (or add options=-c%20synchronous_commit%3Don to the URL)`
        : `have the primary wait for a standby (synchronous_standby_names, and synchronous_commit = on for ${ident(user)}), or keep the state on a server whose failover loses no commit; a store restored or failed over to an older state needs its targets re-anchored (docs/configuration.md)`,
    },
  );
}
