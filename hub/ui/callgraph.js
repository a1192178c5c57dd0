// callgraph.js — call graph of the hottest functions as SVG: nodes are
// layered by longest path from the roots (back edges of recursion are
// ignored for layering), ordered in each layer by the barycentre of their
// callers, edges drawn with a width proportional to their value.

import { esc, fmtPct, fmtValue } from './util.js';

const NODE_W = 190, NODE_H = 38, GAP_X = 24, GAP_Y = 56;

export function renderCallGraph(host, data, opts = {}) {
  const maxNodes = opts.maxNodes || 40;
  const total = data.total || 1;
  const unit = data.unit;
  const nodes = (data.nodes || []).slice().sort((a, b) => b.total - a.total).slice(0, maxNodes);
  const keep = new Map(nodes.map((n) => [n.id, n]));
  const edges = (data.edges || []).filter((e) => keep.has(e.from) && keep.has(e.to) && e.from !== e.to)
    .sort((a, b) => b.value - a.value).slice(0, maxNodes * 3);
  if (!nodes.length) { host.innerHTML = '<p class="empty">No data in this selection.</p>'; return; }
  // layering: DFS from nodes without (kept) callers, longest path, ignoring back edges
  const out = new Map(), inc = new Map();
  for (const n of nodes) { out.set(n.id, []); inc.set(n.id, []); }
  for (const e of edges) { out.get(e.from).push(e); inc.get(e.to).push(e); }
  const layer = new Map();
  const state = new Map(); // 1 visiting, 2 done
  const back = new Set();
  const visit = (id) => {
    state.set(id, 1);
    for (const e of out.get(id)) {
      const s = state.get(e.to);
      if (s === 1) { back.add(e); continue; }
      if (!s) visit(e.to);
    }
    state.set(id, 2);
  };
  const roots = nodes.filter((n) => inc.get(n.id).length === 0);
  for (const r of roots) if (!state.get(r.id)) visit(r.id);
  for (const n of nodes) if (!state.get(n.id)) visit(n.id);
  // longest path over forward edges (topological order via repeated relaxation, bounded)
  for (const n of nodes) layer.set(n.id, 0);
  for (let it = 0; it < nodes.length; it++) {
    let changed = false;
    for (const e of edges) {
      if (back.has(e)) continue;
      const l = layer.get(e.from) + 1;
      if (l > layer.get(e.to)) { layer.set(e.to, l); changed = true; }
    }
    if (!changed) break;
  }
  const layers = [];
  for (const n of nodes) (layers[layer.get(n.id)] || (layers[layer.get(n.id)] = [])).push(n);
  const pos = new Map();
  layers.forEach((L, li) => {
    if (li > 0) {
      const bc = (n) => {
        const ins = inc.get(n.id).filter((e) => pos.has(e.from));
        if (!ins.length) return 1e9;
        let s = 0, w = 0;
        for (const e of ins) { s += pos.get(e.from).i * e.value; w += e.value; }
        return s / w;
      };
      L.sort((a, b) => bc(a) - bc(b));
    } else L.sort((a, b) => b.total - a.total);
    L.forEach((n, i) => pos.set(n.id, { i, li }));
  });
  const widest = Math.max(...layers.map((L) => (L ? L.length : 0)));
  const W = Math.max(400, widest * (NODE_W + GAP_X) + GAP_X);
  const H = layers.length * (NODE_H + GAP_Y) + GAP_Y;
  const xy = (id) => {
    const p = pos.get(id);
    const L = layers[p.li];
    const rowW = L.length * (NODE_W + GAP_X) - GAP_X;
    return { x: (W - rowW) / 2 + p.i * (NODE_W + GAP_X), y: GAP_Y / 2 + p.li * (NODE_H + GAP_Y) };
  };
  const maxEdge = Math.max(1, ...edges.map((e) => e.value));
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" class="callgraph" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="Call graph of the ${nodes.length} hottest functions">`;
  svg += '<defs><marker id="cg-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="cg-arrowhead"/></marker></defs>';
  for (const e of edges) {
    const a = xy(e.from), b = xy(e.to);
    const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y;
    const sw = 1 + 7 * (e.value / maxEdge);
    const d = back.has(e) || y2 <= y1
      ? `M${x1},${a.y} C${x1 + 80},${a.y - 60} ${x2 + 80},${y2 + NODE_H + 60} ${x2},${y2 + NODE_H}`
      : `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`;
    svg += `<path class="cg-edge" d="${d}" stroke-width="${sw.toFixed(1)}" marker-end="url(#cg-arrow)"><title>${esc(keep.get(e.from).function)} → ${esc(keep.get(e.to).function)}: ${esc(fmtValue(e.value, unit))} (${fmtPct(e.value / total)})</title></path>`;
  }
  for (const n of nodes) {
    const { x, y } = xy(n.id);
    const heat = Math.min(1, n.self / (total * 0.2 || 1));
    const name = n.function.length > 28 ? '…' + n.function.slice(-27) : n.function;
    svg += `<g class="cg-node" data-function="${esc(n.function)}" data-total="${n.total}" data-self="${n.self}" transform="translate(${x},${y})"><rect width="${NODE_W}" height="${NODE_H}" rx="4" fill="hsl(${Math.round(30 - 30 * heat)},${Math.round(40 + 55 * heat)}%,${Math.round(80 - 25 * heat)}%)"/><text x="6" y="15" class="cg-name">${esc(name)}</text><text x="6" y="31" class="cg-val">${esc(fmtPct(n.total / total))} total · ${esc(fmtPct(n.self / total))} self</text><title>${esc(n.function)}\ntotal ${esc(fmtValue(n.total, unit))}, self ${esc(fmtValue(n.self, unit))}</title></g>`;
  }
  svg += '</svg>';
  host.innerHTML = `<div class="cg-meta">${nodes.length} hottest functions, ${edges.length} edges${data.truncated ? ' (truncated at the server)' : ''}</div><div class="cg-scroll">${svg}</div>`;
  if (opts.onSelect) host.querySelectorAll('.cg-node').forEach((g) => g.addEventListener('click', () => opts.onSelect(g.dataset.function)));
}
