// app.js — the explorer: login, URL state, pickers, view switching and
// data loading. Views: explore (table + flame side by side), flame, table,
// callgraph, sandwich, compare, and — when their APIs exist — timeline,
// insights, leaks, issues, policy, audit (extra.js).

import { Api, ApiError } from './api.js';
import { FlameGraph } from './flame.js';
import { FunctionTable } from './table.js';
import { renderCallGraph } from './callgraph.js';
import { TimeSeries } from './timeseries.js';
import { importTree, hideFrames, tableFromTree, sandwich, makeMatcher, matchedTotal, packageOf, pathOf } from './tree.js';
import { renderCompare, renderExtra, EXTRA_VIEWS } from './extra.js';
import { esc, fmtPct, fmtTime, fmtValue, parseTime, debounce, el } from './util.js';
import { treeToPprof, treeToSvg, gzip, download } from './export.js';

const $ = (id) => document.getElementById(id);
const BASE_VIEWS = [
  ['explore', 'Table + flame'], ['flame', 'Flame graph'], ['table', 'Table'], ['callgraph', 'Call graph'],
  ['sandwich', 'Sandwich'], ['compare', 'Compare'],
];
const MAX_NODES = 250000; // the flame graph stays interactive well beyond 100k nodes (docs/ui.md)

// ---- state in the URL ---------------------------------------------------------
const KEYS = ['project', 'service', 'type', 'from', 'until', 'view', 'q', 'focus', 'icicle', 'fn', 'span_id', 'trace_id',
  'base_from', 'base_until', 'base_service', 'normalize', 'by'];

const S = { labels: {}, baseLabels: {} };

function readUrl() {
  const u = new URL(location.href);
  for (const k of KEYS) S[k] = u.searchParams.get(k) || '';
  S.labels = {};
  S.baseLabels = {};
  for (const [k, v] of u.searchParams) {
    if (k.startsWith('label.')) S.labels[k.slice(6)] = v;
    if (k.startsWith('base_label.')) S.baseLabels[k.slice(11)] = v;
  }
  if (!S.view) S.view = 'explore';
  if (!S.from) S.from = S.span_id || S.trace_id ? 'now-30d' : 'now-1h';
  if (!S.until) S.until = 'now';
  // a shared link carries the hidden packages (hide=prefix, repeated, or
  // hide= for none): they become this browser's list for the service, and
  // leave the address bar (writeUrl does not write them back)
  if (u.searchParams.has('hide')) {
    localStorage.setItem(hideKey(), JSON.stringify([...new Set(u.searchParams.getAll('hide').filter(Boolean))]));
  }
}

// The link that opens exactly this view: absolute times instead of "now-…",
// every other key as it is, and the hidden packages; never the token.
function shareUrl() {
  const u = new URL(location.origin + location.pathname);
  for (const k of KEYS) if (S[k]) u.searchParams.set(k, S[k]);
  const f = parseTime(S.from), t = parseTime(S.until);
  if (f !== null) u.searchParams.set('from', String(Math.floor(f)));
  if (t !== null) u.searchParams.set('until', String(Math.ceil(t)));
  for (const [k, v] of Object.entries(S.labels)) u.searchParams.set('label.' + k, v);
  for (const [k, v] of Object.entries(S.baseLabels || {})) u.searchParams.set('base_label.' + k, v);
  const h = hidden();
  if (h.length) for (const p of h) u.searchParams.append('hide', p);
  else u.searchParams.set('hide', '');
  return u.href;
}

function writeUrl(push) {
  const u = new URL(location.href);
  u.search = '';
  for (const k of KEYS) if (S[k]) u.searchParams.set(k, S[k]);
  for (const [k, v] of Object.entries(S.labels)) u.searchParams.set('label.' + k, v);
  for (const [k, v] of Object.entries(S.baseLabels || {})) u.searchParams.set('base_label.' + k, v);
  u.hash = '';
  if (u.href !== location.href) history[push ? 'pushState' : 'replaceState'](null, '', u.href);
}

function set(patch, { push = true, reload = true } = {}) {
  Object.assign(S, patch);
  writeUrl(push);
  if (reload) render();
}

// ---- login ------------------------------------------------------------------------
let api = null;

function takeFragmentToken() {
  if (!location.hash) return;
  const h = new URLSearchParams(location.hash.slice(1));
  const t = h.get('token');
  if (t) {
    sessionStorage.setItem('wt.token', t);
    if (h.get('project')) sessionStorage.setItem('wt.project', h.get('project'));
  }
  // never leave the secret in the address bar or history
  history.replaceState(null, '', location.pathname + location.search);
}

function showLogin(msg) {
  $('app').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = msg || '';
  $('login-project').value = S.project || sessionStorage.getItem('wt.project') || 'demo';
  $('login-token').focus();
}

async function login(token, project) {
  const a = new Api(token, project);
  try {
    await a.get(a.proj('/profiles/table'), { limit: 1, from: Math.floor(Date.now() / 1000) - 60 });
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) throw new Error(e.status === 401 ? 'This token is not valid.' : `This token cannot read project “${project}”.`);
    if (!(e instanceof ApiError)) throw new Error('The hub is not reachable: ' + e.message);
  }
  sessionStorage.setItem('wt.token', token);
  sessionStorage.setItem('wt.project', project);
  return a;
}

// ---- theme & panels -----------------------------------------------------------
function applyTheme(t) {
  document.documentElement.dataset.theme = t;
  localStorage.setItem('wt.theme', t);
  redrawAll();
}

function initTheme() {
  const t = localStorage.getItem('wt.theme') || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  document.documentElement.dataset.theme = t;
}

// ---- hide packages ----------------------------------------------------------------
const hideKey = () => `wt.hide.${S.project}.${S.service || '*'}`;
function hidden() {
  try { return JSON.parse(localStorage.getItem(hideKey()) || '[]'); } catch { return []; }
}
function setHidden(list) {
  localStorage.setItem(hideKey(), JSON.stringify([...new Set(list.filter(Boolean))]));
  updateHideUi();
  rebuild();
}
function updateHideUi() {
  const h = hidden();
  $('hide-count').textContent = h.length ? `(${h.length})` : '';
  $('hide-service').textContent = S.service || 'all services';
  $('hide-list').innerHTML = h.map((p) => `<li data-prefix="${esc(p)}"><code>${esc(p)}</code> <button type="button" data-remove="${esc(p)}" aria-label="Show ${esc(p)} again">×</button></li>`).join('') || '<li class="muted">nothing hidden</li>';
}

// ---- data -------------------------------------------------------------------------
const cache = new Map();
function selection(extra = {}) {
  const p = { service: S.service, type: S.type, from: parseTime(S.from), until: parseTime(S.until), span_id: S.span_id, trace_id: S.trace_id };
  for (const [k, v] of Object.entries(S.labels)) p['label.' + k] = v;
  return Object.assign(p, extra);
}

async function cached(view, params) {
  const key = view + '?' + JSON.stringify(params);
  if (!cache.has(key)) {
    cache.set(key, api.profiles(view, params).catch((e) => { cache.delete(key); throw e; }));
    if (cache.size > 40) cache.delete(cache.keys().next().value);
  }
  return cache.get(key);
}

let current = null; // {raw, tree, rows, unit, total, truncated}

// The first paint asks for FIRST_NODES nodes, a few times the pixels
// across a screen (frames under a third of a pixel are not drawn): at full
// width it looks like the whole tree. When that tree is cut, the whole one
// (MAX_NODES) is fetched next and replaces it (render; docs/ui.md).
const FIRST_NODES = 8192;

function statusText(j, firstMs, allMs) {
  const cut = j.truncated ? 'truncated at ' + (allMs === undefined ? FIRST_NODES : MAX_NODES) + ' nodes · ' : '';
  const rest = allMs === undefined ? '' : ` (all nodes in ${Math.round(allMs)} ms)`;
  return `${fmtValue(j.total, j.unit)} ${j.type || ''} · ${cut}loaded in ${Math.round(firstMs)} ms${rest}`;
}

// first: the first paint's smaller tree (its function table is the tree's;
// the whole tree's comes with it, from the hub when that is cut too)
async function loadProfile(first = false) {
  const params = selection({ max_nodes: first ? FIRST_NODES : MAX_NODES });
  const t0 = performance.now();
  const j = await cached('flamegraph', params);
  const tFetched = performance.now();
  const raw = importTree(j.root || { name: 'total', self: 0, total: 0 });
  const hid = hidden();
  const tree = hid.length ? hideFrames(raw, hid) : raw;
  const tImported = performance.now();
  let rows;
  if (j.truncated && !hid.length && !first) {
    const t = await cached('table', selection({ limit: 100000 }));
    rows = t.rows;
  } else {
    rows = tableFromTree(tree);
  }
  current = { json: j, raw, tree, rows, unit: j.unit, total: j.total, truncated: j.truncated, type: j.type, ms: performance.now() - t0, fetchMs: tFetched - t0, tFetched, importMs: tImported - tFetched, rowsMs: performance.now() - tImported };
  if (!S.type && j.type) { S.type = j.type; writeUrl(false); syncPickers(); }
  $('status').textContent = statusText(j, current.ms);
  document.body.dataset.loaded = String(Date.now());
  return current;
}

// ---- pickers ------------------------------------------------------------------------
let services = null; // [{name, types:[{type,unit}]}] or null when the hub has no list

async function loadServices() {
  try {
    const j = await api.get(api.proj('/services'));
    services = j.services || [];
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) services = null;
    else throw e;
  }
  if (services && !S.service && services.length) {
    // default: the service with a cpu type, else the first
    const s = services.find((x) => x.types.some((t) => t.type === 'cpu')) || services[0];
    S.service = s.name;
    writeUrl(false);
  }
  syncPickers();
}

function syncPickers() {
  $('project').value = S.project;
  const sv = $('service');
  const names = services ? services.map((s) => s.name) : [];
  if (S.service && !names.includes(S.service)) names.unshift(S.service);
  sv.innerHTML = '<option value="">(all services)</option>' + names.map((n) => `<option${n === S.service ? ' selected' : ''}>${esc(n)}</option>`).join('');
  const svc = services && services.find((s) => s.name === S.service);
  let types = svc ? svc.types.map((t) => t.type) : services ? [...new Set(services.flatMap((s) => s.types.map((t) => t.type)))] : [];
  if (S.type && !types.includes(S.type)) types.unshift(S.type);
  if (!types.length) types = ['cpu'];
  $('type').innerHTML = types.map((t) => `<option${t === S.type ? ' selected' : ''}>${esc(t)}</option>`).join('');
  const r = $('range');
  const preset = S.until === 'now' && [...r.options].some((o) => o.value === S.from);
  r.value = preset ? S.from : 'custom';
  const f = parseTime(S.from), u = parseTime(S.until);
  $('range-text').textContent = f !== null && u !== null ? `${fmtTime(f)} → ${fmtTime(u)}` : '';
  $('label-chips').innerHTML = Object.entries(S.labels).map(([k, v]) => `<span class="chip" data-key="${esc(k)}">${esc(k)}=${esc(v)} <button type="button" data-unlabel="${esc(k)}" aria-label="Remove filter ${esc(k)}">×</button></span>`).join('');
  $('icicle').checked = S.icicle === '1';
  $('search').value = S.q;
  updateHideUi();
}

let labelsData = [];
async function loadLabels() {
  try {
    const j = await api.get(api.proj('/labels'), { service: S.service, from: parseTime(S.from), until: parseTime(S.until) });
    labelsData = j.labels || [];
  } catch { labelsData = []; }
  $('label-key').innerHTML = '<option value="">label…</option>' + labelsData.map((l) => `<option>${esc(l.key)}</option>`).join('');
  $('label-value').innerHTML = '';
}

// ---- top time series ------------------------------------------------------------------
let ts = null;
async function loadSeries() {
  if (!ts) ts = new TimeSeries($('tseries'), { onSelect: (a, b) => set({ from: String(a), until: String(b) }) });
  try {
    const p = selection({ points: 240 });
    const j = await api.profiles('series', p);
    $('tseries').hidden = false;
    ts.setData(j);
  } catch (e) {
    // no series endpoint (older hub) or an error: hide the chart gracefully
    $('tseries').hidden = true;
  }
}

// ---- views ------------------------------------------------------------------------------
let views = BASE_VIEWS.slice();
let widgets = [];
let renderSeq = 0;

function redrawAll() { for (const w of widgets) if (w.draw) w.draw(); if (ts) ts.draw(); }

async function detectFeatures() {
  const found = BASE_VIEWS.slice();
  const probes = EXTRA_VIEWS.map(async (v) => [v, await api.probe(v.id, api.proj(v.path), v.probeParams ? v.probeParams(S) : { from: Math.floor(Date.now() / 1000) - 60 })]);
  for (const [v, ok] of await Promise.all(probes)) if (ok) found.push([v.id, v.title]);
  views = found;
  document.body.dataset.features = Object.entries(api.features).filter(([, v]) => v).map(([k]) => k).join(' ');
  renderTabs();
}

function renderTabs() {
  $('tabs').innerHTML = views.map(([id, title], i) => `<button role="tab" data-view="${id}" aria-selected="${S.view === id}" title="${esc(title)} (${i + 1})">${esc(title)}</button>`).join('');
}

function clearWidgets() {
  for (const w of widgets) if (w.destroy) w.destroy();
  widgets = [];
  $('view').innerHTML = '';
  $('tooltip').hidden = true;
}

function flameOpts(extra = {}) {
  return Object.assign({
    unit: current && current.unit,
    tooltip: $('tooltip'),
    icicle: S.icicle === '1',
    onZoom: (n) => { S.focus = pathOf(n).join(';'); writeUrl(false); updateSearchInfo(); },
    onContext: (n, e) => contextMenu(n, e),
  }, extra);
}

let flame = null, table = null;

// Requests that wait for the first paint of the view (start): a hub worker
// serves the requests of the connections it accepted one at a time, so
// they would otherwise hold up the view's own.
let afterFirstPaint = null;
function runAfterFirstPaint() {
  const f = afterFirstPaint;
  afterFirstPaint = null;
  if (f) f();
}

async function render() {
  const seq = ++renderSeq;
  syncPickers();
  renderTabs();
  spanBanner();
  clearWidgets();
  flame = table = null;
  const host = $('view');
  host.dataset.view = S.view;
  host.setAttribute('aria-busy', 'true');
  try {
    if (S.view === 'compare') {
      await renderCompare(host, { api, S, selection, set, flameOpts, widgets, hidden, cached, seq: () => seq === renderSeq });
    } else if (EXTRA_VIEWS.some((v) => v.id === S.view)) {
      await renderExtra(S.view, host, { api, S, selection, set, widgets });
    } else {
      const tStart = performance.now();
      await loadProfile(true);
      if (seq !== renderSeq) return;
      drawProfileView(host);
      runAfterFirstPaint();
      if (current.truncated) {
        // the whole tree replaces the first paint's (zoom and search
        // are in S and kept); the view stays busy until it is drawn
        const firstMs = current.ms;
        $('status').textContent += ' · loading all nodes…';
        await loadProfile();
        if (seq !== renderSeq) return;
        $('status').textContent = statusText(current.json, firstMs, performance.now() - tStart);
        clearWidgets();
        flame = table = null;
        drawProfileView(host);
      }
      // timings for the docs and the browser test: hub request, page work
      // before the first draw, the first draw, all page work after the data
      const tEnd = performance.now();
      host.dataset.fetchMs = current.fetchMs.toFixed(1);
      host.dataset.drawMs = flame ? flame.host.dataset.drawMs : '0';
      host.dataset.renderMs = (tEnd - current.tFetched).toFixed(1);
      host.dataset.importMs = current.importMs.toFixed(1);
      host.dataset.rowsMs = current.rowsMs.toFixed(1);
      host.dataset.layoutMs = flame ? flame.host.dataset.layoutMs : '0';
      host.dataset.prepMs = (tEnd - current.tFetched - Number(host.dataset.drawMs)).toFixed(1);
      performance.mark('wt-profile-drawn');
    }
  } catch (e) {
    if (seq !== renderSeq) return;
    if (e instanceof ApiError && e.status === 401) { sessionStorage.removeItem('wt.token'); showLogin('The session token was rejected; sign in again.'); return; }
    host.innerHTML = `<div class="error" role="alert">${esc(e.message || String(e))}</div>`;
  } finally {
    runAfterFirstPaint();
    if (seq === renderSeq) host.setAttribute('aria-busy', 'false');
  }
}

function drawProfileView(host) {
  const c = current;
  const v = S.view;
  if (!c.total) host.append(el('p', { class: 'empty', text: 'No samples in this selection (try a longer time range or another service).' }));
  if (v === 'explore' || v === 'table') {
    const split = el('div', { class: v === 'explore' ? 'split' : 'single' });
    const th = el('section', { class: 'pane table-pane', 'aria-label': 'Top functions' });
    split.append(th);
    if (v === 'explore') {
      const fh = el('section', { class: 'pane flame-pane', 'aria-label': 'Flame graph' });
      split.append(splitGutter(split), fh);
      host.append(split);
      flame = new FlameGraph(fh, flameOpts());
      widgets.push(flame);
    } else host.append(split);
    table = new FunctionTable(th, { onSelect: (fn) => { S.q = fn; $('search').value = fn; writeUrl(false); applySearch(); } });
    table.setRows(c.rows, c.tree.total, c.unit);
  } else if (v === 'flame') {
    const fh = el('section', { class: 'pane flame-pane full', 'aria-label': 'Flame graph' });
    host.append(fh);
    flame = new FlameGraph(fh, flameOpts());
    widgets.push(flame);
  } else if (v === 'callgraph') {
    const cg = el('section', { class: 'pane', 'aria-label': 'Call graph' });
    host.append(cg);
    drawCallGraph(cg);
    return;
  } else if (v === 'sandwich') {
    drawSandwich(host);
    return;
  }
  if (flame) flame.setTree(c.tree, S.focus ? S.focus.split(';') : null);
  applySearch();
}

// The gutter between table and flame graph: drag (or arrow keys) to move
// the split; the table's share is kept in this browser (wt.split).
const SPLIT_MIN = 15, SPLIT_MAX = 75;
function splitGutter(split) {
  const g = el('div', { class: 'gutter', role: 'separator', 'aria-orientation': 'vertical', 'aria-label': 'Resize table and flame graph', tabindex: '0' });
  const apply = (pct) => {
    pct = Math.max(SPLIT_MIN, Math.min(SPLIT_MAX, pct));
    split.style.setProperty('--split', pct.toFixed(1) + '%');
    g.setAttribute('aria-valuenow', pct.toFixed(0));
    split.dataset.split = pct.toFixed(1);
    return pct;
  };
  let pct = apply(Number(localStorage.getItem('wt.split')) || 40);
  const save = () => localStorage.setItem('wt.split', pct.toFixed(1));
  g.addEventListener('pointerdown', (e) => {
    e.preventDefault();
    g.setPointerCapture(e.pointerId);
    g.classList.add('dragging');
    const move = (ev) => { const r = split.getBoundingClientRect(); pct = apply(100 * (ev.clientX - r.left) / r.width); };
    const up = () => { g.classList.remove('dragging'); g.removeEventListener('pointermove', move); g.removeEventListener('pointerup', up); save(); };
    g.addEventListener('pointermove', move);
    g.addEventListener('pointerup', up);
  });
  g.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    e.preventDefault();
    pct = apply(pct + (e.key === 'ArrowLeft' ? -2 : 2));
    save();
  });
  return g;
}

async function exportView(kind) {
  if (!current || EXTRA_VIEWS.some((v) => v.id === S.view) || S.view === 'compare') {
    $('status').textContent = 'Export works on the profile views (table, flame graph, call graph, sandwich).';
    return;
  }
  const name = `${S.project}-${S.service || 'all'}-${current.type || S.type || 'profile'}`.replace(/[^A-Za-z0-9._-]+/g, '_');
  if (kind === 'pprof') {
    const from = parseTime(S.from), until = parseTime(S.until);
    const pb = treeToPprof(current.tree, { type: current.type || S.type, unit: current.unit, from, until });
    download(name + '.pb.gz', await gzip(pb), 'application/octet-stream');
  } else {
    const title = `${S.service || 'all services'} · ${current.type || S.type} · ${fmtTime(parseTime(S.from))} → ${fmtTime(parseTime(S.until))}`;
    download(name + '.svg', treeToSvg(current.tree, { title, fmt: (v) => fmtValue(v, current.unit) }), 'image/svg+xml');
  }
}

async function drawCallGraph(host) {
  // the API's call graph, unless frames are hidden: then build it from the tree
  let data;
  if (!hidden().length) data = await cached('callgraph', selection({ max_nodes: 200 }));
  else data = callgraphFromTree(current.tree, current.unit);
  renderCallGraph(host, data, { maxNodes: 40, onSelect: (fn) => set({ view: 'sandwich', fn }) });
}

function callgraphFromTree(root, unit) {
  const rows = tableFromTree(root);
  const ids = new Map(rows.map((r, i) => [r.function, i]));
  const edges = new Map();
  const stack = [...root.children];
  while (stack.length) {
    const n = stack.pop();
    for (const c of n.children) {
      const k = ids.get(n.name) + ':' + ids.get(c.name);
      edges.set(k, (edges.get(k) || 0) + c.total);
      stack.push(c);
    }
  }
  return {
    unit, total: root.total,
    nodes: rows.map((r, i) => ({ id: i, function: r.function, self: r.self, total: r.total })),
    edges: [...edges].map(([k, v]) => { const [a, b] = k.split(':').map(Number); return { from: a, to: b, value: v }; }),
  };
}

function drawSandwich(host) {
  const c = current;
  const fn = S.fn || (c.rows[0] && c.rows[0].function) || '';
  const pick = el('div', { class: 'sandwich-head' },
    el('label', {}, 'Function ', el('input', { id: 'sandwich-fn', list: 'sandwich-fns', value: fn, size: 50, 'aria-label': 'Function for the sandwich view' })),
    el('datalist', { id: 'sandwich-fns' }, c.rows.slice(0, 500).map((r) => el('option', { value: r.function }))));
  host.append(pick);
  $('sandwich-fn').addEventListener('change', (e) => set({ fn: e.target.value, focus: '' }));
  if (!fn) return;
  const { callers, callees } = sandwich(c.tree, fn);
  const row = c.rows.find((r) => r.function === fn);
  host.append(el('p', { class: 'muted small', text: row ? `${fn}: self ${fmtValue(row.self, c.unit)} (${fmtPct(row.self / (c.tree.total || 1))}), total ${fmtValue(row.total, c.unit)} (${fmtPct(row.total / (c.tree.total || 1))})` : `${fn} is not in this selection` }));
  const up = el('section', { class: 'pane', 'aria-label': 'Callers' }, el('h3', { text: 'Callers (who calls it)' }));
  const upf = el('div');
  up.append(upf);
  const down = el('section', { class: 'pane', 'aria-label': 'Callees' }, el('h3', { text: 'Callees (what it calls)' }));
  const downf = el('div');
  down.append(downf);
  host.append(up, down);
  const f1 = new FlameGraph(upf, flameOpts({ icicle: false, ariaLabel: 'Callers flame graph', onZoom: null }));
  const f2 = new FlameGraph(downf, flameOpts({ icicle: true, ariaLabel: 'Callees flame graph', onZoom: null }));
  f1.setTree(callers);
  f2.setTree(callees);
  widgets.push(f1, f2);
  flame = f2;
  applySearch();
}

function rebuild() {
  // re-apply hidden prefixes without refetching
  if (!current || S.view === 'compare' || EXTRA_VIEWS.some((v) => v.id === S.view)) { render(); return; }
  const hid = hidden();
  current.tree = hid.length ? hideFrames(current.raw, hid) : current.raw;
  if (current.truncated && !hid.length) { render(); return; }
  current.rows = tableFromTree(current.tree);
  clearWidgets();
  flame = table = null;
  drawProfileView($('view'));
}

function applySearch() {
  const t0 = performance.now();
  const q = S.q;
  for (const w of widgets) if (w.setSearch) w.setSearch(q);
  if (table) table.setFilter(q);
  updateSearchInfo();
  $('search-info').dataset.ms = (performance.now() - t0).toFixed(1);
}

function updateSearchInfo() {
  const info = $('search-info');
  if (!S.q || !current) { info.textContent = ''; delete info.dataset.share; return; }
  const m = makeMatcher(S.q);
  const base = flame && flame.focus ? flame.focus : current.tree;
  const tot = flame && flame.root === current.tree ? flame.matched : matchedTotal(current.tree, m);
  const share = base.total ? tot / base.total : 0;
  info.dataset.share = share.toFixed(6);
  info.textContent = `matched ${fmtPct(share)} (${fmtValue(tot, current.unit)})${base !== current.tree ? ' of the zoomed frame' : ''}`;
}

function spanBanner() {
  const b = $('span-banner');
  if (S.span_id || S.trace_id) {
    b.hidden = false;
    b.innerHTML = `Showing the profile of ${S.span_id ? 'span <code>' + esc(S.span_id) + '</code>' : ''}${S.span_id && S.trace_id ? ' in ' : ''}${S.trace_id ? 'trace <code>' + esc(S.trace_id) + '</code>' : ''} <button type="button" id="span-clear">show everything</button>`;
    $('span-clear').onclick = () => set({ span_id: '', trace_id: '' });
  } else b.hidden = true;
}

// ---- context menu -----------------------------------------------------------------
function contextMenu(n, e) {
  const m = $('ctxmenu');
  if (!n.parent) return;
  const pkg = packageOf(n.name);
  m.innerHTML = '';
  const item = (text, fn) => m.append(el('button', { role: 'menuitem', type: 'button', onclick: () => { m.hidden = true; fn(); } }, text));
  item('Zoom here', () => flame && flame.zoom(n, true));
  item(`Sandwich view of ${n.name.slice(0, 60)}`, () => set({ view: 'sandwich', fn: n.name }));
  item(`Search “${n.name.slice(0, 50)}”`, () => { S.q = n.name; $('search').value = n.name; writeUrl(false); applySearch(); });
  item(`Hide frames starting with “${pkg.slice(0, 50)}”`, () => setHidden(hidden().concat([pkg])));
  item('Copy function name', () => navigator.clipboard && navigator.clipboard.writeText(n.name));
  m.hidden = false;
  m.style.left = Math.min(e.clientX, window.innerWidth - 320) + 'px';
  m.style.top = Math.min(e.clientY, window.innerHeight - 200) + 'px';
}

// ---- events -------------------------------------------------------------------------
function wire() {
  $('login-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const p = $('login-project').value.trim(), t = $('login-token').value.trim();
    try {
      api = await login(t, p);
      S.project = p;
      writeUrl(false);
      await start();
    } catch (err) { $('login-error').textContent = err.message; }
  });
  $('logout-btn').onclick = () => { sessionStorage.removeItem('wt.token'); sessionStorage.removeItem('wt.adminToken'); api = null; showLogin('Logged out.'); };
  $('project').addEventListener('change', (e) => { S.project = e.target.value.trim(); api.project = S.project; S.service = ''; S.type = ''; cache.clear(); writeUrl(true); start(); });
  $('service').addEventListener('change', (e) => { set({ service: e.target.value, type: '', focus: '', fn: '' }); loadSeries(); loadLabels(); });
  $('type').addEventListener('change', (e) => { set({ type: e.target.value, focus: '' }); loadSeries(); });
  $('range').addEventListener('change', (e) => {
    if (e.target.value === 'custom') {
      const f = prompt('From (now-2h, unix seconds or RFC 3339)', S.from);
      const u = f && prompt('Until', S.until);
      if (f && u) set({ from: f, until: u });
      else syncPickers();
    } else set({ from: e.target.value, until: 'now' });
    loadSeries();
  });
  $('label-key').addEventListener('change', (e) => {
    const l = labelsData.find((x) => x.key === e.target.value);
    $('label-value').innerHTML = l ? l.values.map((v) => `<option>${esc(v)}</option>`).join('') : '';
  });
  $('label-add').onclick = () => {
    const k = $('label-key').value, v = $('label-value').value;
    if (k && v) { S.labels[k] = v; set({}); loadSeries(); }
  };
  $('label-chips').addEventListener('click', (e) => {
    const b = e.target.closest('[data-unlabel]');
    if (b) { delete S.labels[b.dataset.unlabel]; set({}); loadSeries(); }
  });
  $('tabs').addEventListener('click', (e) => {
    const b = e.target.closest('[data-view]');
    if (b) set({ view: b.dataset.view });
  });
  const onSearch = debounce(() => { S.q = $('search').value; writeUrl(false); applySearch(); }, 120);
  $('search').addEventListener('input', onSearch);
  $('icicle').addEventListener('change', (e) => { S.icicle = e.target.checked ? '1' : ''; writeUrl(false); for (const w of widgets) if (w.setIcicle) w.setIcicle(e.target.checked); });
  $('reset-btn').onclick = reset;
  $('theme-btn').onclick = () => applyTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
  $('help-btn').onclick = () => { $('help-panel').hidden = !$('help-panel').hidden; };
  $('share-btn').onclick = () => {
    $('share-link').value = shareUrl();
    $('share-copied').textContent = '';
    $('share-panel').hidden = false;
    $('share-link').select();
  };
  $('share-copy').onclick = async () => {
    $('share-link').select();
    try { await navigator.clipboard.writeText($('share-link').value); $('share-copied').textContent = 'copied'; } catch { $('share-copied').textContent = 'select the link and copy it'; }
  };
  $('share-close').onclick = () => { $('share-panel').hidden = true; };
  $('export-pprof-btn').onclick = () => exportView('pprof');
  $('export-svg-btn').onclick = () => exportView('svg');
  $('help-close').onclick = () => { $('help-panel').hidden = true; };
  $('hide-btn').onclick = () => { updateHideUi(); $('hide-panel').hidden = !$('hide-panel').hidden; if (!$('hide-panel').hidden) $('hide-input').focus(); };
  $('hide-close').onclick = () => { $('hide-panel').hidden = true; };
  $('hide-form').addEventListener('submit', (e) => { e.preventDefault(); const v = $('hide-input').value; $('hide-input').value = ''; if (v) setHidden(hidden().concat([v])); });
  $('hide-list').addEventListener('click', (e) => { const b = e.target.closest('[data-remove]'); if (b) setHidden(hidden().filter((p) => p !== b.dataset.remove)); });
  document.addEventListener('click', (e) => { if (!e.target.closest('#ctxmenu')) $('ctxmenu').hidden = true; });
  window.addEventListener('popstate', () => { readUrl(); render(); });
  document.addEventListener('keydown', (e) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement && document.activeElement.tagName);
    if (e.key === 'Escape') {
      $('ctxmenu').hidden = true; $('hide-panel').hidden = true; $('help-panel').hidden = true; $('share-panel').hidden = true;
      if (typing) document.activeElement.blur();
      reset();
      return;
    }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === '/') { e.preventDefault(); $('search').focus(); $('search').select(); }
    else if (e.key === 'i') $('icicle').click();
    else if (e.key === 't') $('theme-btn').click();
    else if (e.key === '?') $('help-btn').click();
    else if (/^[1-9]$/.test(e.key) && views[Number(e.key) - 1]) set({ view: views[Number(e.key) - 1][0] });
  });
}

function reset() {
  S.q = '';
  S.focus = '';
  $('search').value = '';
  writeUrl(false);
  for (const w of widgets) { if (w.setSearch) w.setSearch(''); if (w.reset) w.zoom(w.root, false); }
  if (table) table.setFilter('');
  updateSearchInfo();
}

async function start() {
  $('login').hidden = true;
  $('app').hidden = false;
  try {
    await loadServices();
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) { sessionStorage.removeItem('wt.token'); showLogin(e.message); return; }
  }
  // tabs of optional views appear when their probes answer; the data
  // view does not wait for them
  const probes = detectFeatures();
  afterFirstPaint = () => { loadSeries(); loadLabels(); };
  await Promise.all([render(), probes]);
}

async function main() {
  initTheme();
  takeFragmentToken();
  readUrl();
  wire();
  if (!S.project) S.project = sessionStorage.getItem('wt.project') || 'demo';
  const token = sessionStorage.getItem('wt.token');
  if (!token) { showLogin(); return; }
  api = new Api(token, S.project);
  writeUrl(false);
  await start();
}

main();
