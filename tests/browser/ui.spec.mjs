// ui.spec.mjs — the explorer in headless Debian chromium (npm
// playwright-core), against a hub with real profiles (started and filled
// by tests/integration/test_browser.py). Every check compares what the
// page shows with an independent computation over the query API's own
// JSON (fetched here with the same read token), never with the page's
// code. Prints one line per check and "N passed, N failed"; exit 1 on
// any failure.
//
// Also: a large profile (service bigsvc, 100,000 unique stacks): prints
// the time from selecting the service to the flame graph drawn, of a click
// zoom and of a search on it (never fails on time, only on facts); the
// timeline, issues, policy editor and audit log views against their APIs.
//
// env: WT_HUB_URL WT_READ_TOKEN WT_PROJECT WT_FROM WT_UNTIL WT_ARTIFACTS
//      WT_CHROMIUM WT_PLAYWRIGHT (path of playwright-core's index.js)
//      WT_ADMIN_TOKEN (project admin) WT_REG_FROM WT_REG_UNTIL (range of
//      the regression data of service regsvc)
import fs from 'fs';
import { spawnSync } from 'child_process';
import os from 'os';
import path from 'path';

import { launch } from './chromium.mjs';

const HUB = process.env.WT_HUB_URL;
const TOKEN = process.env.WT_READ_TOKEN;
const P = process.env.WT_PROJECT || 'uitest';
const FROM = process.env.WT_FROM;
const UNTIL = process.env.WT_UNTIL;
const ART = process.env.WT_ARTIFACTS || os.tmpdir();

let passed = 0, failed = 0;
const results = [];
function check(name, ok, detail = '') {
  results.push(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ' — ' + detail : ''}`);
  console.log(results[results.length - 1]);
  if (ok) passed++; else failed++;
}

async function api(view, params) {
  const q = new URLSearchParams(Object.assign({ from: FROM, until: UNTIL }, params));
  const r = await fetch(`${HUB}/v1/projects/${P}/profiles/${view}?${q}`, { headers: { Authorization: 'Bearer ' + TOKEN } });
  if (!r.ok) throw new Error(`${view}: HTTP ${r.status} ${await r.text()}`);
  return r.json();
}

async function projApi(p, params = {}, token = TOKEN, method = 'GET', body = undefined) {
  const q = new URLSearchParams(params);
  const r = await fetch(`${HUB}/v1/projects/${P}${p}?${q}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { Authorization: 'Bearer ' + token } });
  if (!r.ok) throw new Error(`${p}: HTTP ${r.status} ${await r.text()}`);
  return r.json();
}

const timings = [];
function timing(name, ms) { timings.push(`${name}: ${Math.round(ms)} ms`); console.log(`TIME ${name}: ${Math.round(ms)} ms`); }

// canonical JSON (sorted keys) for comparing documents
function canon(v) {
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  if (v && typeof v === 'object') return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canon(v[k])).join(',') + '}';
  return JSON.stringify(v);
}

function nodes(root) {
  const out = [];
  const st = [[root, null, 0]];
  while (st.length) {
    const [n, parent, d] = st.pop();
    out.push({ n, parent, d });
    for (const c of n.children || []) st.push([c, n, d + 1]);
  }
  return out;
}

// reference search share: outermost matching nodes / root total (substring, case-insensitive)
function refShare(root, q) {
  let sum = 0;
  const st = [...(root.children || [])];
  while (st.length) {
    const n = st.pop();
    if (n.name.toLowerCase().includes(q.toLowerCase())) { sum += n.total; continue; }
    st.push(...(n.children || []));
  }
  return root.total ? sum / root.total : 0;
}

function pageUrl(params) {
  const q = new URLSearchParams(Object.assign({ project: P, from: FROM, until: UNTIL }, params));
  return `${HUB}/?${q}`;
}

async function waitLoaded(page, sel = '.flame[data-root]') {
  await page.waitForSelector(sel, { timeout: 20000 });
  await page.waitForFunction(() => document.querySelector('#view').getAttribute('aria-busy') === 'false', null, { timeout: 20000 });
}

async function tableRows(page) {
  return page.$$eval('.table-pane tr[data-function]', (trs) => trs.map((t) => ({ f: t.dataset.function, self: Number(t.dataset.self), total: Number(t.dataset.total) })));
}

async function main() {
  const { page, close } = await launch();
  const errors = [];
  const external = [];
  try {
    page.on('pageerror', (e) => errors.push(String(e)));
    // feature probes answer 404 for APIs the hub lacks: chromium logs those
    // as "Failed to load resource"; they are expected, anything else is not
    page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text()); });
    page.on('request', (r) => { if (!r.url().startsWith(HUB)) external.push(r.url()); });

    // --- login by #token fragment; the token leaves the address bar ----------------
    const t0 = Date.now();
    await page.goto(pageUrl({ service: 'gowork', type: 'cpu' }) + '#token=' + TOKEN);
    await waitLoaded(page);
    const loadMs = Date.now() - t0;
    const href = page.url();
    check('fragment login removes the token from the address bar', !href.includes(TOKEN) && !href.includes('#'), href);
    check('explorer visible, login page hidden', (await page.isVisible('.flame-pane canvas')) && !(await page.isVisible('#login')));
    const stored = await page.evaluate(() => sessionStorage.getItem('wt.token'));
    check('token kept in sessionStorage', stored === TOKEN);

    // --- flame graph top frames vs the API's tree ------------------------------------
    const fg = await api('flamegraph', { service: 'gowork', type: 'cpu', max_nodes: 100000 });
    const tab = await api('table', { service: 'gowork', type: 'cpu' });
    const aria = await page.$$eval('.flame-pane .flame-frames li', (lis) => lis.map((l) => ({ name: l.dataset.name, total: Number(l.dataset.total), self: Number(l.dataset.self), depth: Number(l.dataset.depth) })));
    const all = nodes(fg.root).filter((x) => x.d > 0).sort((a, b) => b.n.total - a.n.total);
    const k = Math.min(15, aria.length);
    const refTop = all.slice(0, k).map((x) => x.n.total);
    const uiTop = aria.slice(0, k).map((x) => x.total);
    check('flame graph lists frames', aria.length >= 5, `${aria.length} frames`);
    check('flame graph top frame totals equal the API tree', JSON.stringify(refTop) === JSON.stringify(uiTop), `ui ${uiTop.slice(0, 5)} api ${refTop.slice(0, 5)}`);
    const cut = refTop[k - 1];
    const refNames = all.filter((x) => x.n.total > cut).map((x) => `${x.d}:${x.n.name}:${x.n.total}:${x.n.self}`).sort();
    const uiNames = aria.filter((x) => x.total > cut).map((x) => `${x.depth}:${x.name}:${x.total}:${x.self}`).sort();
    check('flame graph top frames (name, depth, self, total) equal the API tree', JSON.stringify(refNames) === JSON.stringify(uiNames), `${uiNames.length} frames above ${cut}`);
    const topFn = tab.rows.slice().sort((a, b) => b.total - a.total)[0].function;
    check('the hottest function of the API table is a rendered frame', aria.some((a) => a.name === topFn), topFn);
    const dsTotal = await page.$eval('.flame-pane.flame', (e) => Number(e.dataset.total));
    check('flame graph total equals the API total', dsTotal === tab.total, `${dsTotal} vs ${tab.total}`);
    await page.screenshot({ path: path.join(ART, 'ui-explore.png'), fullPage: false });
    check('screenshot saved', fs.statSync(path.join(ART, 'ui-explore.png')).size > 10000, path.join(ART, 'ui-explore.png'));

    // --- table totals vs the API's table --------------------------------------------------
    const rows = await tableRows(page);
    const meta = await page.$eval('.ftable-meta', (e) => ({ rows: Number(e.dataset.rows), sumSelf: Number(e.dataset.sumSelf), total: Number(e.dataset.total) }));
    const apiMap = new Map(tab.rows.map((r) => [r.function, r]));
    const bad = rows.filter((r) => { const a = apiMap.get(r.f); return !a || a.self !== r.self || a.total !== r.total; });
    check('table rows equal the API table (self and total per function)', rows.length > 0 && bad.length === 0, `${rows.length} rows, ${bad.length} differ${bad.length ? ': ' + JSON.stringify(bad.slice(0, 3)) : ''}`);
    check('table has every API function and the same total', meta.rows === tab.rows.length && meta.total === tab.total && meta.sumSelf === tab.total, JSON.stringify(meta) + ` api rows ${tab.rows.length} total ${tab.total}`);
    const firstSelf = rows.slice(0, 5).map((r) => r.self);
    check('table sorted by self descending', firstSelf.every((v, i) => i === 0 || firstSelf[i - 1] >= v));
    await page.click('.ftable th[data-sort="total"]');
    const byTotal = (await tableRows(page)).slice(0, 5).map((r) => r.total);
    check('table sorts by total on click', byTotal.every((v, i) => i === 0 || byTotal[i - 1] >= v) && byTotal[0] === Math.max(...tab.rows.map((r) => r.total)), String(byTotal));

    // --- search: highlight and matched share -----------------------------------------------
    const q = 'runtime.';
    await page.keyboard.press('Escape');
    await page.keyboard.press('/');
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
    check('"/" focuses the search box', focused === 'search', focused);
    await page.keyboard.type(q);
    await page.waitForFunction(() => document.querySelector('#search-info').dataset.share !== undefined, null, { timeout: 5000 });
    const share = await page.$eval('#search-info', (e) => Number(e.dataset.share));
    const ref = refShare(fg.root, q);
    check('search reports the matched share', Math.abs(share - ref) < 1e-5, `ui ${share} api-derived ${ref.toFixed(6)}`);
    const magenta = await page.$eval('.flame-pane canvas', (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 0xc0) < 12 && Math.abs(d[i + 1] - 0x26) < 12 && Math.abs(d[i + 2] - 0xd3) < 12) n++;
      return n;
    });
    check('search highlights matching frames on the canvas', magenta > 200, `${magenta} highlighted pixels`);
    const matchedLis = await page.$$eval('.flame-pane .flame-frames li[data-match]', (l) => l.map((x) => x.dataset.name));
    check('highlighted frames are the matching ones', matchedLis.length > 0 && matchedLis.every((n) => n.toLowerCase().includes(q)), String(matchedLis.slice(0, 3)));
    const filtered = await tableRows(page);
    check('search filters the table', filtered.length > 0 && filtered.every((r) => r.f.toLowerCase().includes(q)), `${filtered.length} rows`);
    await page.screenshot({ path: path.join(ART, 'ui-search.png') });
    await page.keyboard.press('Escape');
    const cleared = await page.$eval('#search', (e) => e.value);
    check('Esc clears the search', cleared === '');

    // --- click zoom --------------------------------------------------------------------------
    const first = fg.root.children[0];
    const box = await page.$eval('.flame-pane canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
    // flame (not icicle): depth 1 is the second row from the bottom (18 px rows)
    await page.mouse.click(box.x + 3, box.y + box.h - 18 - 9);
    const zoomed = await page.$eval('.flame-pane.flame', (e) => ({ root: e.dataset.root, total: Number(e.dataset.rootTotal) }));
    check('click zooms into the frame', zoomed.root === first.name && zoomed.total === first.total, JSON.stringify(zoomed) + ` expected ${first.name}`);
    check('zoom is kept in the URL', decodeURIComponent(page.url()).includes('focus=' + first.name) || new URL(page.url()).searchParams.get('focus') === first.name, page.url());
    await page.keyboard.press('Escape');
    const back = await page.$eval('.flame-pane.flame', (e) => e.dataset.root);
    check('Esc resets the zoom', back === 'total', back);

    // --- hide a package: its self time moves to the caller ----------------------------------
    const cfg = await api('flamegraph', { service: 'cwork', max_nodes: 100000 });
    const ctab = await api('table', { service: 'cwork' });
    const cn = nodes(cfg.root).filter((x) => x.d > 1);
    const names = ctab.rows.map((r) => r.function);
    // a leaf function whose every occurrence has the same caller, no other name starts with it
    let pick = null;
    for (const r of ctab.rows) {
      if (!r.self) continue;
      const occ = cn.filter((x) => x.n.name === r.function);
      if (!occ.length || occ.some((x) => (x.n.children || []).length)) continue;
      const callers = new Set(occ.map((x) => x.parent.name));
      if (callers.size !== 1) continue;
      const caller = [...callers][0];
      if (caller === r.function || caller.startsWith(r.function)) continue;
      if (names.filter((n) => n.startsWith(r.function)).length !== 1) continue;
      pick = { fn: r.function, self: r.self, caller };
      break;
    }
    check('found a frame to hide in the folded profile', !!pick, JSON.stringify(pick));
    if (pick) {
      const callerBefore = ctab.rows.find((r) => r.function === pick.caller);
      await page.goto(pageUrl({ service: 'cwork', view: 'table' }));
      await waitLoaded(page, '.table-pane tr[data-function]');
      await page.click('#hide-btn');
      await page.fill('#hide-input', pick.fn);
      await page.press('#hide-input', 'Enter');
      await page.waitForFunction((fn) => ![...document.querySelectorAll('.table-pane tr[data-function]')].some((t) => t.dataset.function === fn), pick.fn, { timeout: 5000 });
      const after = await tableRows(page);
      const c = after.find((r) => r.f === pick.caller);
      check('hiding a prefix moves its self time to the caller', c && c.self === callerBefore.self + pick.self,
        `${pick.caller}: self ${callerBefore.self} + hidden ${pick.fn} ${pick.self} = ${c && c.self}`);
      const stored2 = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('wt.hide.')).map((k) => localStorage.getItem(k)));
      check('hidden prefixes stored per service in localStorage', stored2.some((v) => v.includes(pick.fn)), JSON.stringify(stored2));
      const metaH = await page.$eval('.ftable-meta', (e) => Number(e.dataset.sumSelf));
      check('hiding keeps the total', metaH === ctab.total, `${metaH} vs ${ctab.total}`);
      await page.screenshot({ path: path.join(ART, 'ui-hidden.png') });
      await page.click('#hide-list [data-remove]');
      await page.click('#hide-close');
    }

    // --- compare: base label stage=hash vs target stage=strings -----------------------------
    const bt = await api('table', { service: 'gowork', type: 'cpu', 'label.stage': 'hash' });
    const tt = await api('table', { service: 'gowork', type: 'cpu', 'label.stage': 'strings' });
    const diffExists = (await fetch(`${HUB}/v1/projects/${P}/profiles/diff`, { headers: { Authorization: 'Bearer ' + TOKEN } })).status !== 404;
    const fns = new Set([...bt.rows.map((r) => r.function), ...tt.rows.map((r) => r.function)]);
    const bm = new Map(bt.rows.map((r) => [r.function, r.self])), tm = new Map(tt.rows.map((r) => [r.function, r.self]));
    let best = null;
    for (const f of fns) {
      const d = (tm.get(f) || 0) / tt.total - (bm.get(f) || 0) / bt.total;
      if (!best || Math.abs(d) > Math.abs(best.d)) best = { f, d };
    }
    await page.goto(pageUrl({ service: 'gowork', type: 'cpu', view: 'compare', 'label.stage': 'strings', 'base_label.stage': 'hash' }));
    await page.waitForSelector('#diff-table tr[data-function]', { timeout: 20000 });
    const src = await page.$eval('#view', (e) => e.dataset.diffSource);
    const top = await page.$$eval('#diff-table tr[data-function]', (t) => t.slice(0, 3).map((x) => ({ f: x.dataset.function, change: x.dataset.change })));
    const topOk = top[0] && top[0].f === best.f && (best.d > 0 ? (top[0].change === 'Infinity' || Number(top[0].change) > 0) : Number(top[0].change) < 0);
    check(`compare view shows the changed function first (diff ${src === 'api' ? 'from /profiles/diff' : 'computed in the browser; /profiles/diff ' + (diffExists ? 'exists but was not used' : 'not available on this hub')})`,
      topOk, `ui ${JSON.stringify(top[0])} expected ${best.f} (${best.d > 0 ? 'grew' : 'shrank'} by ${(best.d * 100).toFixed(1)} points of share)`);
    const btot = await page.$eval('#view', (e) => [Number(e.dataset.baseTotal), Number(e.dataset.targetTotal)]);
    check('compare totals equal the API totals of both selections', btot[0] === bt.total && btot[1] === tt.total, `${btot} vs ${bt.total},${tt.total}`);
    const diffFrames = await page.$$eval('#diff-flame .flame-frames li', (l) => l.length);
    check('diff flame graph rendered', diffFrames > 0, `${diffFrames} frames`);
    await page.screenshot({ path: path.join(ART, 'ui-compare.png') });

    // --- call graph and sandwich ---------------------------------------------------------------
    await page.goto(pageUrl({ service: 'gowork', type: 'cpu', view: 'callgraph' }));
    await page.waitForSelector('svg.callgraph .cg-node', { timeout: 20000 });
    const cgNames = await page.$$eval('.cg-node', (g) => g.map((x) => x.dataset.function));
    check('call graph shows the hottest function', cgNames.includes(topFn), `${cgNames.length} nodes`);
    await page.goto(pageUrl({ service: 'gowork', type: 'cpu', view: 'sandwich', fn: topFn }));
    await page.waitForSelector('[aria-label="Callees"] .flame[data-root]', { timeout: 20000 });
    const sw = await page.$eval('[aria-label="Callees"] .flame', (e) => Number(e.dataset.total));
    check('sandwich view: callees of a function total its API total', sw === tab.rows.find((r) => r.function === topFn).total, `${sw}`);

    // --- trace-to-profile: a span id opens that span's profile --------------------------------
    const spanTab = await api('table', { span_id: 'ui-span-1', from: '0', until: String(Math.floor(Date.now() / 1000) + 60) });
    await page.goto(`${HUB}/?project=${P}&service=cwork&span_id=ui-span-1&view=table`);
    await waitLoaded(page, '.table-pane tr[data-function]');
    const spanMeta = await page.$eval('.ftable-meta', (e) => Number(e.dataset.total));
    const banner = await page.$eval('#span-banner', (e) => !e.hidden && e.textContent.includes('ui-span-1'));
    check('span_id URL opens that span\'s profile', banner && spanMeta === spanTab.total && spanTab.total > 0 && spanTab.total < ctab.total,
      `ui ${spanMeta}, API span ${spanTab.total}, all ${ctab.total}`);

    // --- large profile: 100k unique stacks ------------------------------------------------
    {
      const bigFg = await api('flamegraph', { service: 'bigsvc', max_nodes: 1000000 });
      const apiNodes = nodes(bigFg.root).length;
      await page.goto(pageUrl({ service: 'gowork', type: 'cpu' }));
      await waitLoaded(page);
      const tSel = Date.now();
      await page.selectOption('#service', 'bigsvc');
      await page.waitForFunction((tot) => {
        const f = document.querySelector('.flame-pane.flame');
        return f && Number(f.dataset.total) === tot && document.querySelector('#view').getAttribute('aria-busy') === 'false';
      }, bigFg.total, { timeout: 60000 });
      const selMs = Date.now() - tSel;
      const bigMeta = await page.evaluate(() => {
        const f = document.querySelector('.flame-pane.flame'), v = document.querySelector('#view');
        return { nodes: Number(f.dataset.nodes), total: Number(f.dataset.total), fetch: Number(v.dataset.fetchMs), prep: Number(v.dataset.prepMs), draw: Number(v.dataset.drawMs), render: Number(v.dataset.renderMs), imp: Number(v.dataset.importMs), rows: Number(v.dataset.rowsMs), layout: Number(v.dataset.layoutMs) };
      });
      check('large profile: flame graph total equals the API total', bigMeta.total === bigFg.total, `${bigMeta.total} vs ${bigFg.total}`);
      check('large profile: the page holds >= 100k flame nodes', bigMeta.nodes >= 100000 && bigMeta.nodes === apiNodes, `${bigMeta.nodes} nodes in the page, ${apiNodes} in the API tree`);
      // a tree larger than the first paint's: drawn first from fewer nodes, then whole
      const bigStatus = await page.$eval('#status', (e) => e.textContent);
      check('large profile: first paint from a smaller tree, then all nodes', /loaded in \d+ ms \(all nodes in \d+ ms\)/.test(bigStatus) && !bigStatus.includes('truncated'), bigStatus);
      timing('large profile: select service -> flame graph drawn (wall, incl. hub query)', selMs);
      timing('large profile: hub flamegraph request (in page)', bigMeta.fetch);
      timing('large profile: import + table + layout (in page)', bigMeta.prep);
      console.log(`  of which: import ${bigMeta.imp} ms, function rows ${bigMeta.rows} ms, flame layout ${bigMeta.layout} ms`);
      timing('large profile: first flame draw (in page)', bigMeta.draw);
      timing('large profile: page work after the data arrived (prep + table + draw)', bigMeta.render);
      await page.screenshot({ path: path.join(ART, 'ui-large.png') });
      // click zoom on the widest depth-1 frame, timed inside the page up to the next frame
      const widest = bigFg.root.children.slice().sort((a, b) => b.total - a.total)[0];
      const zoomT = await page.evaluate(async () => {
        const c = document.querySelector('.flame-pane canvas');
        const f = document.querySelector('.flame-pane.flame');
        const r = c.getBoundingClientRect();
        // flame: depth 1 is the second row from the bottom; find the widest frame by hit-testing 3 px in
        const t = performance.now();
        c.dispatchEvent(new MouseEvent('click', { clientX: r.left + 3, clientY: r.bottom - 18 - 9, bubbles: true }));
        const sync = performance.now() - t;
        await new Promise((res) => requestAnimationFrame(() => res()));
        return { sync, frame: performance.now() - t, draw: Number(f.dataset.drawMs), root: f.dataset.root, rootTotal: Number(f.dataset.rootTotal) };
      });
      const firstKid = bigFg.root.children[0];
      check('large profile: click zooms into the frame', zoomT.root === firstKid.name && zoomT.rootTotal === firstKid.total, `${zoomT.root} ${zoomT.rootTotal} expected ${firstKid.name} ${firstKid.total} (widest ${widest.name})`);
      timing('large profile: click zoom (handler, in page)', zoomT.sync);
      timing('large profile: click zoom until the next frame (in page)', zoomT.frame);
      timing('large profile: zoomed redraw (in page)', zoomT.draw);
      await page.keyboard.press('Escape');
      // search highlight: time of applying the query (flame + table + share), in the page
      const bq = 'cache';
      const t1 = Date.now();
      await page.fill('#search', bq);
      await page.waitForFunction(() => document.querySelector('#search-info').dataset.share !== undefined, null, { timeout: 10000 });
      const searchWall = Date.now() - t1;
      const sm = await page.evaluate(() => ({ apply: Number(document.querySelector('#search-info').dataset.ms), draw: Number(document.querySelector('.flame-pane.flame').dataset.drawMs), share: Number(document.querySelector('#search-info').dataset.share), flame: Number(document.querySelector('.flame-pane.flame').dataset.searchMs) }));
      check('large profile: search share equals the API tree', Math.abs(sm.share - refShare(bigFg.root, bq)) < 1e-5, `ui ${sm.share} api-derived ${refShare(bigFg.root, bq).toFixed(6)}`);
      timing('large profile: search applied (flame + table + share, in page)', sm.apply);
      timing('large profile: search in the flame graph (match + share + draw, in page)', sm.flame);
      timing('large profile: last flame redraw (in page)', sm.draw);
      timing('large profile: typing -> share shown (wall, incl. 120 ms input debounce)', searchWall);
      await page.screenshot({ path: path.join(ART, 'ui-large-search.png') });
      await page.fill('#search', '');
      await page.keyboard.press('Escape');
    }

    // --- timeline by thread vs /profiles/timeline ---------------------------------------
    {
      const tl = await api('timeline', { service: 'threads', by: 'thread' });
      await page.goto(pageUrl({ service: 'threads', view: 'timeline', by: 'thread' }));
      await page.waitForSelector('.heatmap[data-rows]', { timeout: 20000 });
      const ui = await page.$$eval('.heatmap li[data-name]', (l) => l.map((x) => ({ name: x.dataset.name, sum: Number(x.dataset.sum) })));
      const ref = tl.rows.map((r) => ({ name: r.other ? '(other)' : r.value, sum: r.series.reduce((a, b) => a + b, 0) }));
      check('timeline by thread: rows equal the API rows (name and value)', ui.length > 1 && JSON.stringify(ui) === JSON.stringify(ref), `${ui.length} rows: ${ui.slice(0, 3).map((x) => x.name + '=' + x.sum)}; api ${ref.length} rows`);
      await page.screenshot({ path: path.join(ART, 'ui-timeline.png') });
    }

    // --- issues list (regression of regsvc, detector run by the driver) --------------------
    {
      const iss = await projApi('/issues', { service: 'regsvc' });
      await page.goto(pageUrl({ service: 'regsvc', view: 'issues', from: process.env.WT_REG_FROM, until: process.env.WT_REG_UNTIL }));
      await page.waitForSelector('#view[aria-busy=false] .issues', { timeout: 20000 });
      const ui = await page.$$eval('.issues tr[data-id]', (t) => t.map((x) => ({ id: x.dataset.id, fn: x.dataset.function, link: (x.querySelector('a.compare-link') || {}).href || '' })));
      if (!iss.issues.length) {
        console.log('SKIP issues content: the detector opened no issue on this data');
      } else {
        const ref = iss.issues.map((i) => ({ id: i.id, fn: i.function }));
        check('issues view lists the API issues', JSON.stringify(ui.map((x) => ({ id: x.id, fn: x.fn }))) === JSON.stringify(ref), `ui ${JSON.stringify(ui.map((x) => x.fn))} api ${JSON.stringify(ref.map((x) => x.fn))}`);
        const grown = iss.issues.find((i) => i.function === 'main.funcB');
        check('the detector flagged main.funcB (10% -> 48% of regsvc)', !!grown, JSON.stringify(iss.issues.map((i) => i.function)));
        await page.screenshot({ path: path.join(ART, 'ui-issues.png') });
        const link = ui.find((x) => x.fn === 'main.funcB');
        if (link && link.link) {
          await page.goto(link.link);
          await page.waitForSelector('#diff-table tr[data-function]', { timeout: 20000 });
          const ch = await page.$$eval('#diff-table tr[data-function]', (t) => t.map((x) => ({ f: x.dataset.function, change: Number(x.dataset.change) })));
          const b = ch.find((x) => x.f === 'main.funcB');
          check('an issue\'s compare link shows its function grown', !!b && b.change > 0, JSON.stringify(b));
        } else check('an issue has a compare link', false);
      }
    }

    // --- policy editor: load = API policy; save a new frequency (admin token) ---------------
    const ADM = process.env.WT_ADMIN_TOKEN;
    {
      const pol = await projApi('/policy', {}, ADM);
      await page.goto(pageUrl({ view: 'policy' }));
      await page.waitForSelector('#admin-token, #policy-text', { timeout: 20000 });
      if (await page.$('#admin-token')) {
        await page.fill('#admin-token', ADM);
        await page.press('#admin-token', 'Enter');
      }
      await page.waitForSelector('#policy-text', { timeout: 20000 });
      const shown = JSON.parse(await page.$eval('#policy-text', (t) => t.value));
      check('policy editor shows the API policy', canon(shown) === canon(pol.policy), canon(shown).slice(0, 120));
      const edited = JSON.parse(JSON.stringify(pol.policy));
      edited.rules = edited.rules || {};
      const oldHz = edited.rules.ebpf && edited.rules.ebpf.frequency_hz;
      const newHz = oldHz === 47 ? 53 : 47;
      edited.rules.ebpf = Object.assign({}, edited.rules.ebpf, { frequency_hz: newHz });
      await page.fill('#policy-text', JSON.stringify(edited, null, 2));
      await page.click('#policy-save');
      await page.waitForFunction(() => /Saved|failed|Not valid/.test(document.querySelector('#policy-msg')?.textContent || '') || document.querySelector('#policy-rev')?.dataset.rev, null, { timeout: 10000 });
      await page.waitForFunction((r) => Number(document.querySelector('#policy-rev')?.dataset.rev) > r, pol.revision, { timeout: 10000 }).catch(() => {});
      const after = await projApi('/policy', {}, ADM);
      check('saving an edited frequency changes GET /policy', after.policy.rules && after.policy.rules.ebpf && after.policy.rules.ebpf.frequency_hz === newHz && after.revision === pol.revision + 1,
        `frequency ${oldHz} -> ${after.policy.rules && after.policy.rules.ebpf && after.policy.rules.ebpf.frequency_hz}, revision ${pol.revision} -> ${after.revision}`);

      // --- audit log shows the policy.update event -------------------------------------------
      const au = await projApi('/audit', {}, ADM);
      await page.goto(pageUrl({ view: 'audit' }));
      await page.waitForSelector('#view[aria-busy=false] .audit', { timeout: 20000 });
      const rows = await page.$$eval('.audit tr[data-action]', (t) => t.map((x) => ({ action: x.dataset.action, detail: x.dataset.detail })));
      const pu = rows.find((r) => r.action === 'policy.update');
      check('audit log shows the policy.update event (as the API lists it)', !!pu && pu.detail.includes(String(newHz)) && rows.length === au.events.length,
        `${rows.length} events (api ${au.events.length}); ${pu ? pu.detail.slice(0, 100) : 'no policy.update'}`);
      await page.screenshot({ path: path.join(ART, 'ui-audit.png') });
    }

    // --- the table beside the flame graph fits; the split is resizable ----------------------------
    // bigsvc: long Go-style function names, the case that pushed the Total column out of view
    await page.goto(pageUrl({ service: 'bigsvc', view: 'explore' }));
    await waitLoaded(page);
    const fit = await page.evaluate(() => {
      const pane = document.querySelector('.table-pane'), last = document.querySelector('.table-pane thead th:last-child');
      return { pane: pane.getBoundingClientRect().right, last: last.getBoundingClientRect().right, overflow: pane.scrollWidth - pane.clientWidth, width: innerWidth };
    });
    check('at 1500 px the table beside the flame graph shows its last column whole', fit.last <= fit.pane + 0.5 && fit.overflow <= 0, JSON.stringify(fit));
    const gut = await page.$eval('.split .gutter', (e) => { const r = e.getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + 60 }; });
    const paneW = () => page.evaluate(() => ({ table: document.querySelector('.table-pane').getBoundingClientRect().width, flame: document.querySelector('.flame-pane canvas').getBoundingClientRect().width }));
    const w0 = await paneW();
    await page.mouse.move(gut.x, gut.y);
    await page.mouse.down();
    await page.mouse.move(gut.x + 150, gut.y, { steps: 6 });
    await page.mouse.up();
    await page.waitForTimeout(150);
    const w1 = await paneW();
    check('dragging the gutter 150 px widens the table by 150 px and narrows the flame graph', Math.abs(w1.table - w0.table - 150) < 8 && w1.flame < w0.flame - 100, `${JSON.stringify(w0)} -> ${JSON.stringify(w1)}`);
    await page.reload();
    await waitLoaded(page);
    const w2 = await paneW();
    check('the split is kept across reloads', Math.abs(w2.table - w1.table) < 4, `${w1.table} vs ${w2.table}`);
    await page.focus('.split .gutter');
    await page.keyboard.press('ArrowLeft');
    const w3 = await paneW();
    check('arrow keys on the gutter move the split', w3.table < w2.table - 10, `${w2.table} -> ${w3.table}`);
    await page.evaluate(() => localStorage.removeItem('wt.split'));

    // --- a service with a single upload at the range's edge is visible in the series strip -------------
    const oneAt = Number(process.env.WT_ONE_AT);
    // a range of 3601 s: 240 steps of 15 s and a last 1 s bucket right at the edge
    await page.goto(pageUrl({ service: 'onesvc', view: 'table', from: String(oneAt - 3600), until: String(oneAt + 1) }));
    await waitLoaded(page, '.table-pane tr[data-function]');
    await page.waitForFunction(() => Number(document.querySelector('#tseries').dataset.points) > 0, null, { timeout: 10000 });
    const strip = await page.$eval('#tseries canvas', (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const cols = new Set();
      let n = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (Math.abs(d[i] - 234) < 30 && Math.abs(d[i + 1] - 88) < 30 && Math.abs(d[i + 2] - 12) < 30 && d[i + 3] > 200) { n++; cols.add((i / 4) % c.width); }
      }
      return { pixels: n, columns: cols.size, dpr: devicePixelRatio };
    });
    check('a single upload at the edge of the range is drawn in the series strip (at least 3 px wide)', strip.pixels >= 9 && strip.columns >= 3 * strip.dpr, JSON.stringify(strip));

    // --- share link: the exact view, opened again --------------------------------------------------------
    await page.goto(pageUrl({ service: 'gowork', type: 'cpu', view: 'explore', from: 'now-2h', until: 'now', 'label.stage': 'hash', q: 'main.' }));
    await waitLoaded(page);
    await page.click('#hide-btn');
    await page.fill('#hide-input', 'runtime.');
    await page.press('#hide-input', 'Enter');
    await page.click('#hide-close');
    await waitLoaded(page);
    const fbox = await page.$eval('.flame-pane canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, h: r.height }; });
    await page.mouse.click(fbox.x + 3, fbox.y + fbox.h - 18 - 9);
    const before = {
      rows: await tableRows(page),
      root: await page.$eval('.flame-pane.flame', (e) => e.dataset.root),
      share: await page.$eval('#search-info', (e) => e.dataset.share),
    };
    await page.click('#share-btn');
    const link = await page.$eval('#share-link', (e) => e.value);
    const lu = new URL(link);
    check('share link carries absolute times, filters, search, zoom and hidden packages, and no token',
      /^\d+$/.test(lu.searchParams.get('from')) && /^\d+$/.test(lu.searchParams.get('until')) && lu.searchParams.get('label.stage') === 'hash' &&
      lu.searchParams.get('q') === 'main.' && lu.searchParams.get('focus') === before.root && lu.searchParams.getAll('hide').includes('runtime.') &&
      !link.includes(TOKEN), link);
    // another browser: nothing hidden there yet
    await page.evaluate(() => { for (const k of Object.keys(localStorage)) if (k.startsWith('wt.hide.')) localStorage.removeItem(k); });
    await page.waitForTimeout(1100); // "now" moves on; the link's range must not
    await page.goto(link);
    await waitLoaded(page);
    const after = {
      rows: await tableRows(page),
      root: await page.$eval('.flame-pane.flame', (e) => e.dataset.root),
      share: await page.$eval('#search-info', (e) => e.dataset.share),
    };
    check('the shared link opens the same view (table rows, zoom, search share)', JSON.stringify(before) === JSON.stringify(after) && before.rows.length > 0,
      `${before.rows.length} vs ${after.rows.length} rows, root ${before.root} vs ${after.root}, share ${before.share} vs ${after.share}`);
    check('the shared link hides the same packages', (await page.$$eval('#hide-list [data-prefix]', (l) => l.map((x) => x.dataset.prefix))).includes('runtime.'));
    check('the shared link leaves the address bar without the hide list', !page.url().includes('hide='), page.url());

    // --- export the view as SVG (runtime. still hidden) and as pprof (read back by go tool pprof) -------------
    await page.keyboard.press('Escape'); // search and zoom off: the table lists every function of the view
    const hiddenRows = await tableRows(page);
    const [dl2] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg-btn')]);
    const svgFile = path.join(ART, 'ui-export.svg');
    await dl2.saveAs(svgFile);
    const svg = fs.readFileSync(svgFile, 'utf8');
    const parsed = await page.evaluate((t) => {
      const doc = new DOMParser().parseFromString(t, 'image/svg+xml');
      if (doc.querySelector('parsererror')) return { error: doc.querySelector('parsererror').textContent };
      const g = [...doc.querySelectorAll('g.frame')];
      return { frames: g.length, total: Number(doc.documentElement.dataset.total), names: g.map((x) => x.dataset.name), titled: g.every((x) => x.querySelector('title')) };
    }, svg);
    const viewTotal = await page.$eval('.ftable-meta', (e) => Number(e.dataset.total));
    const hottest = hiddenRows.slice().sort((a, b) => b.total - a.total)[0];
    check('exported SVG is a well-formed flame graph of the view (total, frames with titles, the hottest function, hidden packages left out)',
      !parsed.error && parsed.frames > 5 && parsed.total === viewTotal && parsed.titled && parsed.names.includes(hottest.f) && !parsed.names.some((n) => n.startsWith('runtime.')),
      JSON.stringify({ error: parsed.error, frames: parsed.frames, total: parsed.total, viewTotal, hottest: hottest.f }));
    await page.evaluate(() => { for (const k of Object.keys(localStorage)) if (k.startsWith('wt.hide.')) localStorage.removeItem(k); });
    await page.goto(pageUrl({ service: 'gowork', type: 'cpu', view: 'table' }));
    await waitLoaded(page, '.table-pane tr[data-function]');
    const viewRows = await tableRows(page);
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-pprof-btn')]);
    const pprofFile = path.join(ART, 'ui-export.pb.gz');
    await dl.saveAs(pprofFile);
    const raw = spawnSync('go', ['tool', 'pprof', '-raw', pprofFile], { encoding: 'utf8', env: Object.assign({}, process.env, { HOME: os.tmpdir(), GOCACHE: path.join(os.tmpdir(), 'wt-gocache'), GOFLAGS: '' }) });
    const goSelf = new Map();
    let goTotal = 0;
    if (raw.status === 0) {
      const locs = new Map();
      const [ssec, lsec = ''] = raw.stdout.split('\nLocations\n');
      for (const m of lsec.matchAll(/^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*?) :\d+ s=\d+$/gm)) locs.set(m[1], m[2]);
      for (const m of ssec.matchAll(/^\s+(\d+): ((?:\d+ ?)+)$/gm)) {
        const leaf = locs.get(m[2].trim().split(' ')[0]);
        goSelf.set(leaf, (goSelf.get(leaf) || 0) + Number(m[1]));
        goTotal += Number(m[1]);
      }
    }
    const pageSelf = new Map(viewRows.filter((r) => r.self > 0).map((r) => [r.f, r.self]));
    check('exported pprof, read by go tool pprof, has the view\'s self time per function and its total',
      raw.status === 0 && pageSelf.size > 5 && goSelf.size === pageSelf.size && [...pageSelf].every(([f, v]) => goSelf.get(f) === v) && goTotal === tab.total,
      raw.status !== 0 ? raw.stderr.slice(0, 300) : `${goSelf.size} functions from go vs ${pageSelf.size} on the page; total ${goTotal} vs ${tab.total}`);

    // --- theme, shortcuts, shareable URL round trip ---------------------------------------------
    const th0 = await page.evaluate(() => document.documentElement.dataset.theme);
    await page.keyboard.press('t');
    const th1 = await page.evaluate(() => document.documentElement.dataset.theme);
    check('"t" toggles the dark/light theme', th0 !== th1 && ['dark', 'light'].includes(th1), `${th0} -> ${th1}`);
    await page.goto(pageUrl({ service: 'gowork', type: 'cpu', view: 'flame', q: 'main.' }));
    await waitLoaded(page);
    const st = await page.evaluate(() => ({ q: document.querySelector('#search').value, tab: document.querySelector('[role=tab][aria-selected=true]').dataset.view, share: document.querySelector('#search-info').dataset.share }));
    check('shareable URL restores view and search', st.q === 'main.' && st.tab === 'flame' && Math.abs(Number(st.share) - refShare(fg.root, 'main.')) < 1e-5, JSON.stringify(st));
    await page.screenshot({ path: path.join(ART, 'ui-flame-' + th1 + '.png') });
    const tabs = await page.$$eval('[role=tab]', (t) => t.map((x) => x.dataset.view));
    console.log(`views offered: ${tabs.join(', ')}`);

    // --- login page when the token is missing ----------------------------------------------------
    await page.evaluate(() => sessionStorage.clear());
    await page.goto(pageUrl({}));
    await page.waitForSelector('#login:not([hidden])', { timeout: 5000 });
    await page.fill('#login-project', P);
    await page.fill('#login-token', 'not-a-token');
    await page.click('#login-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#login-error').textContent.length > 0, null, { timeout: 5000 });
    await page.fill('#login-token', TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#app:not([hidden])', { timeout: 10000 });
    check('login page rejects a bad token and accepts the read token', true);

    check('page made no requests to other origins', external.length === 0, external.slice(0, 3).join(' '));
    check('no JavaScript errors', errors.length === 0, errors.slice(0, 3).join(' | '));
    console.log(`first load (login + flame + table): ${loadMs} ms`);
    for (const t of timings) console.log('timing: ' + t);
  } catch (e) {
    check('spec ran to the end', false, String(e && e.stack || e));
  } finally {
    await close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
