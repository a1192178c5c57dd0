// extra.js — the compare view, and the views that appear only when the
// hub has their API (feature-detected with a request; 404 hides the tab):
// timeline/heatmap, insights, leaks, issues, policy editor, audit log.
// Their JSON is rendered tolerantly: known fields get special treatment,
// anything else is shown as a plain table.

import { FlameGraph } from './flame.js';
import { FunctionTable } from './table.js';
import { ApiError } from './api.js';
import { importTree, hideFrames, tableFromTree, diffTrees, importDiffTree } from './tree.js';
import { el, esc, fmtPct, fmtTime, fmtValue, parseTime } from './util.js';

export const EXTRA_VIEWS = [
  { id: 'timeline', title: 'Timeline', path: '/profiles/timeline', probeParams: (S) => ({ service: S.service, by: 'thread', from: Math.floor(Date.now() / 1000) - 60 }) },
  { id: 'insights', title: 'Insights', path: '/profiles/insights' },
  { id: 'leaks', title: 'Leaks', path: '/profiles/leaks' },
  { id: 'issues', title: 'Issues', path: '/issues' },
  { id: 'policy', title: 'Policy', path: '/policy' },
  { id: 'audit', title: 'Audit log', path: '/audit' },
];

// ---- compare ---------------------------------------------------------------------

function baseWindow(S) {
  const f = parseTime(S.from), u = parseTime(S.until);
  if (S.base_from && S.base_until) return [parseTime(S.base_from), parseTime(S.base_until)];
  if (Object.keys(S.baseLabels || {}).length || S.base_service) return [f, u];
  return [f - (u - f), f]; // the window just before the target
}

// Same definition as the hub's /profiles/diff: the difference of the
// self shares (normalised) or of the self values (absolute).
function changeOf(b, t, bt, tt, normalize) {
  if (normalize) return (tt ? t / tt : 0) - (bt ? b / bt : 0);
  return t - b;
}

export async function renderCompare(host, ctx) {
  const { api, S, selection, set, flameOpts, widgets, hidden, cached } = ctx;
  const normalize = S.normalize !== 'false';
  const [bf, bu] = baseWindow(S);
  const target = selection();
  const base = Object.assign(selection(), { from: bf, until: bu, service: S.base_service || S.service });
  for (const k of Object.keys(base)) if (k.startsWith('label.')) delete base[k];
  const baseLabels = Object.keys(S.baseLabels || {}).length ? S.baseLabels : S.labels;
  for (const [k, v] of Object.entries(baseLabels)) base['label.' + k] = v;

  // controls
  const ctl = el('div', { class: 'compare-head' },
    el('fieldset', {}, el('legend', { text: 'Base' }),
      el('label', {}, 'from ', el('input', { id: 'base-from', value: S.base_from || String(bf), size: 12 })),
      el('label', {}, ' until ', el('input', { id: 'base-until', value: S.base_until || String(bu), size: 12 })),
      el('label', {}, ' service ', el('input', { id: 'base-service', value: S.base_service || '', placeholder: S.service || '(same)', size: 12 })),
      el('label', {}, ' labels ', el('input', { id: 'base-labels', value: Object.entries(S.baseLabels || {}).map(([k, v]) => `${k}=${v}`).join(','), placeholder: 'k=v,…', size: 16 })),
      el('button', { type: 'button', id: 'base-apply', text: 'Apply' })),
    el('fieldset', {}, el('legend', { text: 'Target' }), el('span', { class: 'small', text: `the selection above (${fmtTime(target.from)} → ${fmtTime(target.until)}${Object.keys(S.labels).length ? ', ' + Object.entries(S.labels).map(([k, v]) => k + '=' + v).join(',') : ''})` })),
    el('label', { class: 'small' }, el('input', { type: 'radio', name: 'norm', id: 'norm-on', checked: normalize }), ' normalised'),
    el('label', { class: 'small' }, el('input', { type: 'radio', name: 'norm', id: 'norm-off', checked: !normalize }), ' absolute'));
  host.append(ctl);
  ctl.querySelector('#base-apply').onclick = () => {
    const bl = {};
    for (const kv of ctl.querySelector('#base-labels').value.split(',')) { const i = kv.indexOf('='); if (i > 0) bl[kv.slice(0, i).trim()] = kv.slice(i + 1).trim(); }
    set({ base_from: ctl.querySelector('#base-from').value, base_until: ctl.querySelector('#base-until').value, base_service: ctl.querySelector('#base-service').value.trim(), baseLabels: bl });
  };
  ctl.querySelector('#norm-on').onchange = () => set({ normalize: '' });
  ctl.querySelector('#norm-off').onchange = () => set({ normalize: 'false' });

  // data: the diff API when the hub has it (rows + tree), else two flame graphs
  let diffJson = null;
  const hid = hidden();
  if (await api.probe('diff', api.proj('/profiles/diff'), {})) {
    const p = Object.assign({}, target, { normalize: String(normalize), max_nodes: 100000 });
    p.base_from = base.from; p.base_until = base.until;
    if (base.service) p.base_service = base.service;
    for (const [k, v] of Object.entries(base)) if (k.startsWith('label.')) p['base_' + k] = v;
    try { diffJson = await api.profiles('diff', p); } catch (e) { if (!(e instanceof ApiError) || e.status !== 404) throw e; }
  }
  const [bj, tj] = await Promise.all([cached('flamegraph', Object.assign({}, base, { max_nodes: 100000 })), cached('flamegraph', Object.assign({}, target, { max_nodes: 100000 }))]);
  if (!ctx.seq()) return;
  let bt = importTree(bj.root), tt = importTree(tj.root);
  if (hid.length) { bt = hideFrames(bt, hid); tt = hideFrames(tt, hid); }
  const unit = tj.unit || bj.unit;
  const treeJson = diffJson && (diffJson.root || diffJson.tree || diffJson.flamegraph);
  const dtree = treeJson && !hid.length ? importDiffTree(treeJson.root || treeJson) : diffTrees(bt, tt);
  let rows;
  if (diffJson && Array.isArray(diffJson.rows) && !hid.length) {
    rows = diffJson.rows.map((r) => ({ function: r.function, base_self: r.base_self, target_self: r.target_self, change: typeof r.change === 'number' ? r.change : changeOf(r.base_self, r.target_self, diffJson.base_total, diffJson.target_total, normalize), significance: r.significance }));
  } else {
    const br = new Map(tableFromTree(bt).map((r) => [r.function, r]));
    const trs = tableFromTree(tt);
    const all = new Map();
    for (const r of trs) all.set(r.function, { function: r.function, base_self: 0, target_self: r.self });
    for (const [f, r] of br) { const x = all.get(f) || { function: f, base_self: 0, target_self: 0 }; x.base_self = r.self; all.set(f, x); }
    rows = [...all.values()].filter((r) => r.base_self || r.target_self);
    for (const r of rows) r.change = changeOf(r.base_self, r.target_self, bt.total, tt.total, normalize);
  }
  host.dataset.diffSource = diffJson ? 'api' : 'client';
  host.dataset.baseTotal = String(bt.total);
  host.dataset.targetTotal = String(tt.total);
  host.append(el('p', { class: 'muted small', text: `base total ${fmtValue(bt.total, unit)} · target total ${fmtValue(tt.total, unit)} · ${normalize ? 'normalised by totals' : 'absolute values'} · diff ${diffJson ? 'from the hub' : 'computed in the browser'}` }));
  const side = el('div', { class: 'split' });
  const bh = el('section', { class: 'pane', 'aria-label': 'Base flame graph' }, el('h3', { text: 'Base' }));
  const th = el('section', { class: 'pane', 'aria-label': 'Target flame graph' }, el('h3', { text: 'Target' }));
  const bfh = el('div'), tfh = el('div');
  bh.append(bfh); th.append(tfh);
  side.append(bh, th);
  const dh = el('section', { class: 'pane', 'aria-label': 'Diff flame graph' }, el('h3', { text: 'Diff (red: grew, blue: shrank)' }));
  const dfh = el('div', { id: 'diff-flame' });
  dh.append(dfh);
  const tabh = el('section', { class: 'pane', 'aria-label': 'Changes' }, el('h3', { text: 'Changes by function' }));
  const tabd = el('div', { id: 'diff-table' });
  tabh.append(tabd);
  host.append(side, dh, tabh);
  const o = flameOpts({ unit, onZoom: null });
  const f1 = new FlameGraph(bfh, Object.assign({}, o, { ariaLabel: 'Base flame graph' }));
  const f2 = new FlameGraph(tfh, Object.assign({}, o, { ariaLabel: 'Target flame graph' }));
  const f3 = new FlameGraph(dfh, Object.assign({}, o, { ariaLabel: 'Diff flame graph', diff: true, normalize }));
  f1.setTree(bt); f2.setTree(tt); f3.setTree(dtree);
  widgets.push(f1, f2, f3);
  // rank by the size of the change (as the hub does)
  for (const r of rows) r._w = Math.abs(r.change);
  const t = new FunctionTable(tabd, { columns: 'diff', normalize, sort: '_w' });
  t.setRows(rows, tt.total, unit);
  widgets.push({ setSearch: (q) => t.setFilter(q) });
}

// ---- generic rendering -------------------------------------------------------------

function firstArray(j) {
  if (Array.isArray(j)) return j;
  for (const v of Object.values(j || {})) if (Array.isArray(v)) return v;
  return [];
}

function cell(k, v, unit) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return `<code>${esc(JSON.stringify(v).slice(0, 200))}</code>`;
  if (typeof v === 'number' && /(_ns|time|from|until|start|end|opened|last_seen|resolved|_at)$/.test(k) && v > 1e17) return esc(fmtTime(v / 1e9));
  if (typeof v === 'number' && /^(value|self|total|bytes)$/.test(k) && unit) return esc(fmtValue(v, unit));
  if (typeof v === 'number' && !Number.isInteger(v)) return esc(Math.abs(v) < 0.01 ? v.toExponential(2) : v.toFixed(3));
  return esc(String(v));
}

// rowAttrs(item) -> {name: value}: data attributes of the item's <tr>
function genericTable(items, unit, extraCol, rowAttrs) {
  if (!items.length) return '<p class="empty">Nothing to show.</p>';
  const keys = [...new Set(items.flatMap((x) => Object.keys(x)))].filter((k) => typeof items[0][k] !== 'object' || items[0][k] === null).slice(0, 10);
  const attrs = (x) => (rowAttrs ? Object.entries(rowAttrs(x)).map(([k, v]) => ` data-${k}="${esc(String(v ?? ''))}"`).join('') : '');
  return `<table class="ftable generic"><thead><tr>${keys.map((k) => `<th>${esc(k)}</th>`).join('')}${extraCol ? '<th></th>' : ''}</tr></thead><tbody>${items.map((x) => `<tr${attrs(x)}>${keys.map((k) => `<td>${cell(k, x[k], unit || x.unit)}</td>`).join('')}${extraCol ? `<td>${extraCol(x)}</td>` : ''}</tr>`).join('')}</tbody></table>`;
}

function compareLink(S, it) {
  // an issue names its function and the windows it compares
  const g = (...ks) => { for (const k of ks) if (it[k] !== undefined && it[k] !== null) return it[k]; return undefined; };
  const sec = (v) => (v === undefined ? undefined : v > 1e12 ? Math.floor(v / 1e9) : v);
  const q = new URLSearchParams({ project: S.project, view: 'compare' });
  const svc = g('service');
  if (svc) q.set('service', svc);
  const type = g('type', 'sample_type');
  if (type) q.set('type', type);
  const bl = it.baseline || {}, rc = it.recent || {};
  const bf = sec(bl.from ?? g('base_from')), bu = sec(bl.until ?? g('base_until'));
  const tf = sec(rc.from ?? g('target_from', 'from')), tu = sec(rc.until ?? g('target_until', 'until'));
  if (bf && bu) { q.set('base_from', bf); q.set('base_until', bu); }
  if (tf && tu) { q.set('from', tf); q.set('until', tu); }
  const fn = g('function');
  if (fn) q.set('q', fn);
  return `<a class="compare-link" href="/?${esc(q.toString())}">compare</a>`;
}

export async function renderExtra(view, host, ctx) {
  const { api, S, selection } = ctx;
  const sel = selection();
  if (view === 'timeline') {
    const by = S.by || 'thread';
    const ctl = el('div', { class: 'compare-head' }, 'Group by ', ...['thread', 'host', 'container'].map((b) => el('button', { type: 'button', 'aria-pressed': String(b === by), onclick: () => ctx.set({ by: b }) }, b)));
    host.append(ctl);
    const j = await api.profiles('timeline', Object.assign(sel, { by }));
    host.append(heatmap(j));
    return;
  }
  if (view === 'insights') {
    const j = await api.profiles('insights', sel);
    const items = firstArray(j);
    const wrap = el('div', { class: 'cards' });
    wrap.innerHTML = items.length ? items.map((x) => `<div class="card insight" data-kind="${esc(x.kind || x.type || '')}"><h3>${esc(x.title || x.kind || x.type || 'insight')}</h3><p>${esc(x.detail || x.message || x.description || '')}</p><p class="muted small">${x.from || x.start_ns ? esc(fmtTime((x.from || x.start_ns) / 1e9)) : ''}${x.until || x.end_ns ? ' → ' + esc(fmtTime((x.until || x.end_ns) / 1e9)) : ''}${x.service ? ' · ' + esc(x.service) : ''}</p></div>`).join('') : '<p class="empty">No insights in this selection.</p>';
    host.append(wrap);
    return;
  }
  if (view === 'leaks') {
    const j = await api.profiles('leaks', sel);
    const d = el('div');
    d.innerHTML = genericTable(firstArray(j), j.unit);
    host.append(d);
    return;
  }
  if (view === 'issues') {
    const j = await api.get(api.proj('/issues'), { service: S.service });
    const d = el('div', { class: 'issues' });
    d.innerHTML = genericTable(firstArray(j), j.unit, (x) => compareLink(S, x), (x) => ({ id: x.id, function: x.function, service: x.service }));
    host.append(d);
    return;
  }
  if (view === 'policy' || view === 'audit') {
    const adminTok = sessionStorage.getItem('wt.adminToken');
    const path = api.proj('/' + view);
    let j = null, err = null;
    try { j = await api.get(path, {}, adminTok || undefined); } catch (e) { err = e; }
    if (err && err instanceof ApiError && (err.status === 401 || err.status === 403)) {
      const f = el('form', { class: 'card' }, el('p', { text: `The ${view === 'policy' ? 'policy editor' : 'audit log'} needs an admin token of this project (kept in this tab only).` }),
        el('input', { type: 'password', id: 'admin-token', placeholder: 'admin token', autocomplete: 'off' }), el('button', { type: 'submit', text: 'Use token' }));
      f.onsubmit = (e) => { e.preventDefault(); sessionStorage.setItem('wt.adminToken', f.querySelector('#admin-token').value.trim()); ctx.set({}); };
      host.append(f);
      return;
    }
    if (err) throw err;
    if (view === 'audit') {
      const d = el('div', { class: 'audit' });
      d.innerHTML = genericTable(firstArray(j), undefined, undefined, (x) => ({ action: x.action, actor: x.actor, detail: x.detail }));
      host.append(d);
      return;
    }
    const ta = el('textarea', { id: 'policy-text', rows: 24, cols: 100, spellcheck: 'false', 'aria-label': 'Policy JSON' });
    ta.value = JSON.stringify(j && j.policy !== undefined ? j.policy : j, null, 2);
    host.append(el('p', { class: 'muted small', id: 'policy-rev', 'data-rev': String(j.revision ?? ''), text: `revision ${j.revision ?? '—'}${j.updated_by ? ' by ' + j.updated_by : ''}${j.updated_ns ? ' at ' + fmtTime(j.updated_ns / 1e9) : ''}` }));
    const msg = el('div', { class: 'small', role: 'status', id: 'policy-msg' });
    const save = el('button', { type: 'button', id: 'policy-save', text: 'Save policy' });
    save.onclick = async () => {
      msg.textContent = 'Saving…';
      let body;
      try { body = JSON.parse(ta.value); } catch (e) { msg.textContent = 'Not valid JSON: ' + e.message; return; }
      try {
        await api.request('PUT', path, null, body, adminTok || undefined);
        msg.textContent = 'Saved.';
        ctx.set({});
      } catch (e) {
        if (e instanceof ApiError && e.status === 405) {
          try { await api.request('POST', path, null, body, adminTok || undefined); msg.textContent = 'Saved.'; } catch (e2) { msg.textContent = 'Save failed: ' + e2.message; }
        } else msg.textContent = 'Save failed: ' + e.message;
      }
    };
    host.append(el('p', { class: 'muted small', text: 'Rules: sample types on/off, frequency, per-service overrides, upload limits. Edges pull the saved policy.' }), ta, el('div', {}, save, msg));
  }
}

function heatmap(j) {
  const rows = Array.isArray(j.rows) ? j.rows : firstArray(j);
  let buckets = Array.isArray(j.buckets) ? j.buckets : [];
  if (!buckets.length && typeof j.buckets === 'number' && j.bucket_ns) for (let i = 0; i < j.buckets; i++) buckets.push(j.start_ns + i * j.bucket_ns);
  const box = el('div', { class: 'heatmap' });
  if (!rows.length) { box.innerHTML = '<p class="empty">No data in this selection.</p>'; return box; }
  const vals = rows.map((r) => r.series || r.values || (r.points || []).map((p) => p[1]) || []);
  const max = Math.max(1, ...vals.flat());
  const names = rows.map((r) => (r.other ? '(other)' : r.value || r.key || r.label || r.name || '(none)'));
  const W = 900, rowH = 16, labelW = 180;
  const cv = document.createElement('canvas');
  const n = Math.max(1, buckets.length || (vals[0] || []).length);
  const dpr = window.devicePixelRatio || 1;
  cv.width = (labelW + W) * dpr; cv.height = rows.length * rowH * dpr + 20 * dpr;
  cv.style.width = labelW + W + 'px'; cv.style.height = rows.length * rowH + 20 + 'px';
  cv.setAttribute('role', 'img');
  cv.setAttribute('aria-label', `Heatmap of ${rows.length} rows`);
  const ctx = cv.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const dark = document.documentElement.dataset.theme === 'dark';
  ctx.font = '11px sans-serif';
  ctx.textBaseline = 'middle';
  rows.forEach((r, i) => {
    ctx.fillStyle = dark ? '#ddd' : '#222';
    ctx.fillText(String(names[i]).slice(0, 28), 2, i * rowH + rowH / 2);
    (vals[i] || []).forEach((v, b) => {
      if (!v) return;
      const a = Math.sqrt(v / max);
      ctx.fillStyle = `rgba(234,88,12,${(0.1 + 0.9 * a).toFixed(3)})`;
      ctx.fillRect(labelW + (b * W) / n, i * rowH + 1, Math.max(1, W / n - 0.5), rowH - 2);
    });
  });
  if (buckets.length) {
    ctx.fillStyle = dark ? '#aaa' : '#555';
    const t0 = buckets[0], t1 = buckets[buckets.length - 1];
    ctx.fillText(fmtTime((t0 > 1e12 ? t0 / 1e9 : t0)), labelW, rows.length * rowH + 10);
    const s = fmtTime(t1 > 1e12 ? t1 / 1e9 : t1);
    ctx.fillText(s, labelW + W - ctx.measureText(s).width, rows.length * rowH + 10);
  }
  box.append(cv);
  const list = el('ul', { class: 'sr-only' });
  list.innerHTML = rows.map((r, i) => `<li data-name="${esc(names[i])}" data-sum="${(vals[i] || []).reduce((a, b) => a + b, 0)}">${esc(names[i])}: ${esc(fmtValue((vals[i] || []).reduce((a, b) => a + b, 0), j.unit))}</li>`).join('');
  box.append(list);
  box.dataset.rows = String(rows.length);
  void fmtPct;
  return box;
}
