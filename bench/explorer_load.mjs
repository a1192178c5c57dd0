// explorer_load.mjs — run by bench/explorer_load.sh: opens the explorer
// once per entry of WT_LOADS in headless Debian chromium (npm
// playwright-core: tests/browser/chromium.mjs), each a fresh
// navigation (the page's own request cache starts empty), and prints one
// line per load: `LOAD <kind> <ms> <fetch ms> <ttfb ms> <total> <all ms>`:
// ms parsed from the status text "… loaded in N ms" (hub/ui/app.js: the
// first paint), fetch ms the whole tree's request until its JSON was
// parsed (#view data-fetch-ms), ttfb ms the time from sending the first
// flame graph request to the first byte of its answer (resource timing),
// total the flame graph's root total, all ms "(all nodes in N ms)" of the
// status (the whole tree drawn; = ms when the first tree was whole); then, once they have finished, `REQ <kind> <path> <ms>`
// for the requests the page sends beside it (/services, /labels,
// /profiles/series: resource timing, from fetch() to the last byte).
// Exit 1 when a load does not finish.
//
// env: WT_HUB_URL WT_READ_TOKEN WT_PROJECT WT_SERVICE WT_CHROMIUM
//      WT_PLAYWRIGHT (path of playwright-core's index.js)
//      WT_LOADS (JSON array of {kind, from, until}, unix seconds)
import { launch } from '../tests/browser/chromium.mjs';

const E = process.env;

async function main() {
  const { page, close } = await launch();
  try {
    for (const l of JSON.parse(E.WT_LOADS)) {
      const q = new URLSearchParams({ project: E.WT_PROJECT, service: E.WT_SERVICE, type: 'cpu', from: l.from, until: l.until });
      await page.goto(`${E.WT_HUB_URL}/?${q}#token=${E.WT_READ_TOKEN}`);
      await page.waitForFunction(() => document.querySelector('#view').getAttribute('aria-busy') === 'false' &&
        /loaded in \d+ ms/.test(document.querySelector('#status').textContent), null, { timeout: 300000 });
      const r = await page.evaluate(() => ({
        status: document.querySelector('#status').textContent,
        fetch: Number(document.querySelector('#view').dataset.fetchMs),
        ttfb: performance.getEntriesByType('resource').filter((e) => e.name.includes('/profiles/flamegraph?'))
          .map((e) => e.responseStart - e.startTime)[0],
        total: Number((document.querySelector('.flame-pane.flame') || { dataset: {} }).dataset.total),
      }));
      const ms = Number(/loaded in (\d+) ms/.exec(r.status)[1]);
      const all = /all nodes in (\d+) ms/.exec(r.status);
      console.log(`LOAD ${l.kind} ${ms} ${Math.round(r.fetch)} ${Math.round(r.ttfb)} ${r.total} ${all ? all[1] : ms}`);
      await page.waitForFunction(() => ['/labels?', '/profiles/series?'].every((p) =>
        performance.getEntriesByType('resource').some((e) => e.name.includes(p))), null, { timeout: 300000 });
      const other = await page.evaluate(() => performance.getEntriesByType('resource')
        .map((e) => [/\/(services|labels|profiles\/series)\b/.exec(e.name), e.duration]).filter(([m]) => m)
        .map(([m, d]) => [m[1], Math.round(d)]));
      for (const [p, d] of other) console.log(`REQ ${l.kind} /${p} ${d}`);
    }
  } finally {
    await close();
  }
}

main().then(() => process.exit(0), (e) => { console.log('FAIL ' + (e && e.stack || e)); process.exit(1); });
