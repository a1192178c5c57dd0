// names.spec.mjs — does the explorer's flame graph of one service show
// given function names? Run by tests/integration/test_appliance.py against
// the `make run` cluster's hub (a stock python3 program sampled by edge1's
// eBPF sampler, its Python functions named by the edge; a C program's lock
// contention and native allocations, types lock and native_alloc), in headless
// Debian chromium with npm playwright-core, like ui.spec.mjs. The page's
// widest frames (the flame graph's accessible list, built from the frames
// drawn on the canvas) must include a frame matching each WT_EXPECT
// pattern, and none matching a WT_ABSENT pattern (a function the program
// never calls: the check can fail); the query API's tree of the same
// selection must agree. Prints one line per check; exit 1 on any failure.
//
// env: WT_HUB_URL WT_READ_TOKEN WT_PROJECT WT_SERVICE WT_TYPE WT_FROM
//      WT_UNTIL WT_LABELS (JSON object, e.g. {"pid": "123"}) WT_EXPECT
//      WT_ABSENT (JSON arrays of regular expressions) WT_ARTIFACTS
//      WT_CHROMIUM WT_PLAYWRIGHT (path of playwright-core's index.js)
import path from 'path';

import { launch } from './chromium.mjs';

const E = process.env;
const labels = JSON.parse(E.WT_LABELS || '{}');
const expect = JSON.parse(E.WT_EXPECT || '[]').map((s) => new RegExp(s));
const absent = JSON.parse(E.WT_ABSENT || '[]').map((s) => new RegExp(s));
const sel = { project: E.WT_PROJECT, service: E.WT_SERVICE, type: E.WT_TYPE || 'cpu', from: E.WT_FROM, until: E.WT_UNTIL };
for (const [k, v] of Object.entries(labels)) sel['label.' + k] = v;

let failed = 0;
function check(name, ok, detail = '') {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ' — ' + detail : ''}`);
  if (!ok) failed++;
}

async function main() {
  // the API's tree of the same selection: every name in it
  const q = new URLSearchParams(Object.assign({}, sel, { max_nodes: 100000 }));
  q.delete('project');
  const r = await fetch(`${E.WT_HUB_URL}/v1/projects/${E.WT_PROJECT}/profiles/flamegraph?${q}`,
    { headers: { Authorization: 'Bearer ' + E.WT_READ_TOKEN } });
  const fg = await r.json();
  const apiNames = new Set();
  for (const st = [fg.root]; st.length;) { const n = st.pop(); apiNames.add(n.name); st.push(...(n.children || [])); }

  const { page, close } = await launch();
  try {
    await page.goto(`${E.WT_HUB_URL}/?${new URLSearchParams(sel)}#token=${E.WT_READ_TOKEN}`);
    await page.waitForSelector('.flame[data-root]', { timeout: 30000 });
    await page.waitForFunction(() => document.querySelector('#view').getAttribute('aria-busy') === 'false', null, { timeout: 30000 });
    const shown = await page.$$eval('.flame-pane .flame-frames li', (lis) => lis.map((l) => l.dataset.name));
    const total = await page.$eval('.flame-pane.flame', (e) => Number(e.dataset.rootTotal));
    check('the flame graph has samples', total > 0 && shown.length > 0, `total ${total}, ${shown.length} frames listed`);
    for (const re of expect) {
      const hit = shown.find((n) => re.test(n));
      check(`the page shows ${re.source}`, !!hit, hit || `widest frames: ${shown.slice(0, 12).join(' | ')}`);
      check(`the API tree has ${re.source}`, [...apiNames].some((n) => re.test(n)));
    }
    for (const re of absent) {
      const hit = shown.find((n) => re.test(n));
      check(`the page does not show ${re.source}`, !hit, hit || '');
    }
    if (E.WT_ARTIFACTS) await page.screenshot({ path: path.join(E.WT_ARTIFACTS, 'appliance-python-names.png') });
  } finally {
    await close();
  }
}

main().then(() => { console.log(failed ? `${failed} failed` : 'all passed'); process.exit(failed ? 1 : 0); },
  (e) => { console.log('FAIL ' + (e && e.stack || e)); process.exit(1); });
