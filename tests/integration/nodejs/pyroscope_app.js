// pyroscope_app.js — a small Node program profiled by the real
// @pyroscope/nodejs SDK with its default profilers (wall + heap), pushing
// to the edge given in argv. The one setting changed is the flush interval
// (1 s instead of 60 s): the heap profiler exports only on a flush, not
// at stop(). Every request the SDK makes is also written
// to OUT_DIR (URL + body) so the test can compare what arrived with what
// the SDK itself exported. Run by tests/integration/test_nodejs_sdk.py.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const [serverAddress, token, outDir, seconds] = process.argv.slice(2);
let n = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = async (url, opts) => {
  const i = n++;
  const body = Buffer.from(opts.body);
  fs.writeFileSync(path.join(outDir, `req-${i}.url`), String(url));
  fs.writeFileSync(path.join(outDir, `req-${i}.body`), body);
  const resp = await realFetch(url, opts);
  fs.writeFileSync(path.join(outDir, `req-${i}.status`), String(resp.status));
  return resp;
};

const Pyroscope = require('@pyroscope/nodejs');

// named so the profiles show them
function burnCpu(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) x += Math.sqrt(x + 1);
  return x;
}
const kept = [];
function allocateObjects(k) {
  for (let i = 0; i < k; i++) kept.push({ i, s: 'x'.repeat(64) + i });
}

async function main() {
  Pyroscope.init({ serverAddress, appName: 'node-app', authToken: token, flushIntervalMs: 1000,
    tags: { env: 'it', region: 'eu-1' } });
  Pyroscope.start();
  const end = Date.now() + Number(seconds) * 1000;
  while (Date.now() < end) {
    burnCpu(50);
    allocateObjects(20000);
    await new Promise((r) => setTimeout(r, 5));
  }
  await Pyroscope.stop();
  console.log(JSON.stringify({ requests: n, kept: kept.length }));
}
main().catch((e) => { console.error(e); process.exit(1); });
