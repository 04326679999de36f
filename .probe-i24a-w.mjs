import { Worker } from 'node:worker_threads';
const code = `
const { normalizeCountryCode } = await import(${JSON.stringify(new URL('./.tmpbuild-i24a/identifiers/countries.js', import.meta.url).href)});
globalThis.gc(); const h0 = process.memoryUsage().heapUsed;
const t1 = performance.now();
const r = normalizeCountryCode('Allemagne');
const t2 = performance.now();
globalThis.gc(); const h1 = process.memoryUsage().heapUsed;
(await import('node:worker_threads')).parentPort.postMessage({ r, firstLookupMs: +(t2 - t1).toFixed(1), heapAddedMB: +((h1 - h0) / 1e6).toFixed(2) });
`;
for (let i = 0; i < 5; i++) {
  const w = new Worker(new URL('data:text/javascript,' + encodeURIComponent(code)));
  console.log(await new Promise((res) => w.once('message', res)));
  await w.terminate();
}
