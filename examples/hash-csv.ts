// Hash a CSV export with the CLI's parallel pipeline (worker threads, input order kept) and write JSON lines.
// Run: npx tsx examples/hash-csv.ts [file.csv] [out.jsonl]  (how to run: examples/README.md)
import { createRequire } from 'node:module';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { hashCsv } from 'audience-kit';

// Without a file: the synthetic CRM export the package ships (2,991 rows with the mess of real exports).
const input = process.argv[2] ?? createRequire(import.meta.url).resolve('audience-kit/fixtures/crm-export.csv');
const output = createWriteStream(process.argv[3] ?? 'users.jsonl', { mode: 0o600 });

// Mapping and input errors (no header, not UTF-8, unknown column) are thrown here, before any row is read.
const run = await hashCsv(input, { defaultCountry: 'US' });
for (const { type, column } of run.mapping.columns) console.error(`column mapping: ${type} <- ${column}`);
if (run.mapping.country) console.error(`column mapping: country <- ${run.mapping.country.column}`);
try {
  for await (const chunk of run) {
    for (const u of chunk.users) {
      // `{}`: a row without a valid identifier (its rejects are counted in the summary).
      if (u.json !== '{}' && !output.write(u.json + '\n')) await once(output, 'drain');
    }
  }
} finally {
  await run.close(); // stops the workers, also when the loop is left early
  output.end();
  await once(output, 'close');
}
const { rows, users, types, rejects } = run.summary;
console.error(`rows read ${rows}, users ${users}`);
console.error('identifiers (valid, invalid, already hashed):', JSON.stringify(types));
console.error('rejected values by reason (count, first lines):', JSON.stringify(rejects));
