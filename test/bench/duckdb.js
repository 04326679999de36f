// The hashing bench's analytical-database peer (test/bench/hash.js): DuckDB computes
// sha256(lower(trim(email))) over a CSV with N threads, run as a measured child process.
//
//   node test/bench/duckdb.js --module DIR --file CSV --threads N [--out FILE]
//
// DIR is where peers/package.json was installed (installPeers in hash.js). Without --out the
// digests are aggregated (count and bit_xor), so DuckDB writes nothing; with --out they are
// written one per line in the file's row order (DuckDB keeps insertion order), for the check.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { opt } from './common.js';

const require = createRequire(join(opt('module', ''), 'package.json'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const sqlString = (s) => `'${s.replaceAll("'", "''")}'`;
const file = opt('file', '');
const out = opt('out', undefined);
const db = await DuckDBInstance.create(':memory:', { threads: opt('threads', '2') });
const connection = await db.connect();
const digests = `SELECT sha256(lower(trim(email))) AS digest FROM read_csv(${sqlString(file)}, header = true, all_varchar = true)`;
if (out === undefined) {
  const reader = await connection.runAndReadAll(`SELECT count(*) AS n, bit_xor(hash(digest)) AS x FROM (${digests})`);
  process.stdout.write(`${JSON.stringify(reader.getRowObjectsJson())}\n`);
} else {
  await connection.run(`COPY (${digests}) TO ${sqlString(out)} (FORMAT csv, HEADER false)`);
}
connection.closeSync();
