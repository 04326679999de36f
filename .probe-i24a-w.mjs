import { Worker } from 'node:worker_threads';
const code = `
const t0 = performance.now();
const { normalizeCountryCode } = await import(${JSON.stringify(new URL('./.tmpbuild-i24a/identifiers/countries.js', import.meta.url).href)});
const t1 = performance.now();
const r = normalizeCountryCode('Allemagne');
const t2 = performance.now();
normalizeCountryCode('Suisse');
const t3 = performance.now();
(await import('node:worker_threads')).parentPort.postMessage({ r, importMs: t1 - t0, firstLookupMs: t2 - t1, nextMs: t3 - t2, heapMB: process.memoryUsage().heapUsed / 1e6 });
`;
for (let i = 0; i < 3; i++) {
  const w = new Worker(new URL('data:text/javascript,' + encodeURIComponent(code)));
  console.log(await new Promise((res) => w.once('message', res)));
  await w.terminate();
}
