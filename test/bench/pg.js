// A fresh PostgreSQL database for a benchmark run: created with a unique name on the server of
// `--pg-url` (or the environment's AK_BENCH_PG_URL, default the local server's `postgres`), dropped
// by `drop()`. The URL is never printed (it may hold a password): messages name the database only.
import pg from 'pg';
import { opt } from './common.js';

const SERVER = opt('pg-url', process.env.AK_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');

/** Connect to `url`, or null when no server answers within 5 s. */
async function connect(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return client;
  } catch {
    await client.end().catch(() => {});
    return null;
  }
}

/**
 * A new database `ak_bench_<label>_<pid>_<time>`: `{ name, url, bytesPerUser(users), drop() }`, or
 * null when the server does not answer (the caller says so and skips).
 */
export async function freshDatabase(label) {
  const admin = await connect(SERVER);
  if (!admin) return null;
  const name = `ak_bench_${label}_${process.pid}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(SERVER);
  u.pathname = `/${name}`;
  const url = u.toString();
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  };
  return { name, url, snapshotBytes: () => snapshotBytes(url), drop };
}

/**
 * `pg_total_relation_size` (heap, TOAST, indexes) of the snapshot tables, before and after VACUUM
 * FULL, and per committed file its size and the bytes its patch rows hold (more than the size:
 * the changed blocks the commits after its last whole write stored).
 */
async function snapshotBytes(url) {
  const client = await connect(url);
  if (!client) throw new Error('the bench database stopped answering');
  try {
    const size = async () => {
      const r = await client.query(
        `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relkind = 'r' AND n.nspname = current_schema() AND c.relname LIKE 'audience\\_kit\\_snapshot\\_%'`,
      );
      return Number(r.rows[0].bytes);
    };
    const before = await size();
    const files = await client.query(
      `SELECT f.name, f.size::bigint AS size, count(p.seq)::int AS rows, coalesce(sum(length(p.data)), 0)::bigint AS stored
       FROM audience_kit_snapshot_files f LEFT JOIN audience_kit_snapshot_patches p USING (target, name)
       GROUP BY f.target, f.name ORDER BY f.name`,
    );
    await client.query('VACUUM FULL');
    return { before, afterVacuumFull: await size(), files: files.rows };
  } finally {
    await client.end();
  }
}
