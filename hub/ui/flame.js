// flame.js — canvas flame graph / icicle. One <canvas>, no per-node DOM:
// nodes are laid out once into per-depth arrays (sorted by x) so drawing
// and hit-testing stay fast on 100k-node trees. For tests and assistive
// tech the widget keeps data attributes (data-root, data-total,
// data-matched-share, data-nodes) and an offscreen list of the widest
// visible frames (role=list, <li data-name data-total data-self>).

import { makeMatcher, matchedTotal, pathOf } from './tree.js';
import { fmtValue, fmtPct, esc } from './util.js';

const ROW = 18;
let queryGen = 0; // distinguishes searches in the per-node match cache
const MIN_W = 0.35; // px: narrower nodes are not drawn

function hashHue(name) {
  let h = 2166136261;
  const s = name.length > 64 ? name.slice(0, 64) : name;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return (h >>> 0) % 1000 / 1000;
}

export class FlameGraph {
  constructor(host, opts = {}) {
    this.host = host;
    this.opts = opts; // {unit, onZoom(node), onContext(node, ev), tooltip, ariaLabel, diff, normalize}
    host.classList.add('flame');
    host.innerHTML = '';
    this.status = document.createElement('div');
    this.status.className = 'flame-status';
    this.scroller = document.createElement('div');
    this.scroller.className = 'flame-scroll';
    this.canvas = document.createElement('canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', opts.ariaLabel || 'Flame graph');
    this.canvas.tabIndex = 0;
    this.scroller.appendChild(this.canvas);
    this.aria = document.createElement('ul');
    this.aria.className = 'sr-only flame-frames';
    this.aria.setAttribute('aria-label', (opts.ariaLabel || 'Flame graph') + ': widest frames');
    host.append(this.status, this.scroller, this.aria);
    this.icicle = !!opts.icicle;
    this.match = null;
    this.root = null;
    this.focus = null;
    this.hover = null;
    this.canvas.addEventListener('mousemove', (e) => this._move(e));
    this.canvas.addEventListener('mouseleave', () => { this.hover = null; this._tip(null); this.draw(); });
    this.canvas.addEventListener('click', (e) => {
      const n = this._hit(e);
      if (n) this.zoom(n, true);
    });
    this.canvas.addEventListener('contextmenu', (e) => {
      const n = this._hit(e);
      if (n && this.opts.onContext) { e.preventDefault(); this.opts.onContext(n, e); }
    });
    this.ro = new ResizeObserver(() => this.draw());
    this.ro.observe(this.scroller);
  }

  destroy() { this.ro.disconnect(); }

  setTree(root, focusPath) {
    const t0 = performance.now();
    this.root = root;
    // levels[d] = nodes at depth d in x order; x/w as fractions of root.total
    const levels = [];
    const total = root.total || 1;
    root._x = 0;
    const stack = [root];
    let count = 0;
    while (stack.length) {
      const n = stack.pop();
      count++;
      (levels[n.depth] || (levels[n.depth] = [])).push(n);
      n._w = n.total / total;
      let x = n._x;
      // children are pushed in reverse so that they pop in x order
      const kids = n.children;
      for (let i = 0; i < kids.length; i++) { kids[i]._x = x; x += kids[i].total / total; }
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
    this.levels = levels;
    this.count = count;
    this.host.dataset.nodes = String(count);
    this.host.dataset.total = String(root.total);
    this.focus = root;
    if (focusPath && focusPath.length) {
      let n = root;
      for (const name of focusPath) {
        const c = n.children.find((x) => x.name === name);
        if (!c) break;
        n = c;
      }
      this.focus = n;
    }
    this.host.dataset.layoutMs = (performance.now() - t0).toFixed(1);
    this._searchShare();
    this.draw();
  }

  setIcicle(v) { this.icicle = v; this.draw(); }

  setSearch(q) {
    const t0 = performance.now();
    this.query = q || '';
    const m = makeMatcher(q);
    // memoised per name (a profile repeats few thousand names over 100k
    // nodes) and per node (drawing asks again on every redraw)
    this.match = null;
    if (m) {
      const byName = new Map();
      const gen = ++queryGen;
      this.match = (name) => { let v = byName.get(name); if (v === undefined) { v = m(name); byName.set(name, v); } return v; };
      this._nodeMatch = (n) => { if (n._qg !== gen) { n._qg = gen; n._qm = this.match(n.name); } return n._qm; };
    }
    this._searchShare();
    this.draw();
    this.host.dataset.searchMs = (performance.now() - t0).toFixed(1);
  }

  _searchShare() {
    if (!this.root) return;
    if (!this.match) {
      delete this.host.dataset.matchedShare;
      delete this.host.dataset.matchedTotal;
      this.matched = 0;
      return;
    }
    const base = this.focus || this.root;
    const m = this.match(base.name) && base !== this.root ? base.total : matchedTotal(base, this.match);
    this.matched = m;
    this.host.dataset.matchedTotal = String(m);
    this.host.dataset.matchedShare = (base.total ? m / base.total : 0).toFixed(6);
  }

  zoom(n, user) {
    this.focus = n || this.root;
    this._searchShare();
    this.draw();
    if (user && this.opts.onZoom) this.opts.onZoom(this.focus);
  }

  reset() { this.zoom(this.root, true); }

  _color(n, dark) {
    if (this.opts.diff) return this._diffColor(n, dark);
    if (this.match) {
      if (this._nodeMatch(n)) return dark ? '#d946ef' : '#c026d3';
      return dark ? '#3b3f4a' : '#d9dce3';
    }
    // the palette colour depends on the name only: cached per node
    if (n._cd !== dark || !n._c) { n._c = this._paletteColor(n, dark); n._cd = dark; }
    return n._c;
  }

  _paletteColor(n, dark) {
    const h = hashHue(n.name);
    if (n.depth === 0) return dark ? '#6b7280' : '#9ca3af';
    // warm palette (flame graph tradition)
    const r = 205 + Math.round(50 * h), g = Math.round(90 + 130 * ((h * 7) % 1)), b = Math.round(40 * h);
    return dark ? `rgb(${r - 40},${g - 30},${b + 10})` : `rgb(${r},${g},${b})`;
  }

  // Colour by relative change between base and target (normalised by
  // their totals unless opts.normalize is false): red grew, blue shrank.
  _diffColor(n, dark) {
    const r = this.root;
    let b = n.base || 0, t = n.target || 0;
    if (this.opts.normalize !== false && r.base && r.target) { b = b / r.base; t = t / r.target; }
    if (this.match && this._nodeMatch(n)) return dark ? '#d946ef' : '#c026d3';
    let ch;
    if (b === 0 && t === 0) ch = 0;
    else if (b === 0) ch = 1;
    else ch = Math.max(-1, Math.min(1, (t - b) / b));
    const a = Math.min(1, Math.abs(ch));
    const neutral = dark ? [70, 74, 84] : [220, 222, 228];
    const tgt = ch > 0 ? [230, 40, 40] : [40, 110, 230];
    const mix = neutral.map((v, i) => Math.round(v + (tgt[i] - v) * (0.25 + 0.75 * a) * (a > 0.01 ? 1 : 0)));
    return `rgb(${mix[0]},${mix[1]},${mix[2]})`;
  }

  draw() {
    if (!this.root || !this.levels) return;
    const tDraw = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(100, this.scroller.clientWidth - 2);
    const depth = this.levels.length;
    const height = Math.max(ROW * 3, depth * ROW + 4);
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = width + 'px';
      this.canvas.style.height = height + 'px';
    }
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const dark = document.documentElement.dataset.theme === 'dark';
    ctx.clearRect(0, 0, width, height);
    ctx.font = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
    ctx.textBaseline = 'middle';
    const f = this.focus || this.root;
    const fx = f._x, fw = f._w || 1;
    const scale = width / fw;
    const ancestors = new Set();
    for (let a = f; a; a = a.parent) ancestors.add(a);
    const visible = [];
    let lastFill = null;
    const textColor = dark ? '#111' : '#111';
    for (let d = 0; d < depth; d++) {
      const lvl = this.levels[d];
      const y = this.icicle ? d * ROW : height - (d + 1) * ROW;
      // binary search first node with x + w > fx
      let lo = 0, hi = lvl.length;
      if (d > f.depth) {
        while (lo < hi) { const mid = (lo + hi) >> 1; if (lvl[mid]._x + lvl[mid]._w <= fx + 1e-12) lo = mid + 1; else hi = mid; }
      }
      for (let i = lo; i < lvl.length; i++) {
        const n = lvl[i];
        let x0, w;
        if (d <= f.depth) {
          if (!ancestors.has(n)) continue;
          x0 = 0; w = width;
        } else {
          if (n._x >= fx + fw - 1e-12) break;
          x0 = (n._x - fx) * scale;
          w = n._w * scale;
        }
        if (w < MIN_W) continue;
        const col = this._color(n, dark);
        if (col !== lastFill) { ctx.fillStyle = col; lastFill = col; }
        ctx.fillRect(x0, y, Math.max(w - 0.5, 0.5), ROW - 1);
        if (n === this.hover) {
          ctx.strokeStyle = dark ? '#fff' : '#000';
          ctx.lineWidth = 1;
          ctx.strokeRect(x0 + 0.5, y + 0.5, Math.max(w - 1.5, 0.5), ROW - 2);
        }
        if (w > 28) {
          ctx.fillStyle = lastFill = this.match && !this._nodeMatch(n) && !this.opts.diff ? (dark ? '#9ca3af' : '#4b5563') : textColor;
          const label = n.depth === 0 ? `total (${fmtValue(n.total, this.opts.unit)})` : n.name;
          const maxChars = Math.floor((w - 6) / 7.2);
          const txt = label.length > maxChars ? label.slice(0, Math.max(0, maxChars - 1)) + '…' : label;
          ctx.fillText(txt, x0 + 3, y + ROW / 2);
        }
        if (w >= 1) visible.push(n);
      }
    }
    this.host.dataset.root = f.name;
    this.host.dataset.rootTotal = String(f.total);
    this.host.dataset.rootPath = pathOf(f).join(';');
    this.host.dataset.mode = this.icicle ? 'icicle' : 'flame';
    const share = this.match && this.root.total ? ` — search matches ${fmtPct(this.matched / (f.total || 1))} (${fmtValue(this.matched, this.opts.unit)})` : '';
    this.status.textContent = (f !== this.root ? `zoomed: ${f.name} (${fmtPct(f.total / (this.root.total || 1))} of total) — Esc resets` : `${this.count} nodes, total ${fmtValue(this.root.total, this.opts.unit)}`) + share;
    this.status.dataset.matched = this.match ? '1' : '0';
    this._aria(visible);
    this.host.dataset.drawMs = (performance.now() - tDraw).toFixed(1);
  }

  _aria(visible) {
    const top = visible.filter((n) => n.depth > 0).sort((a, b) => b.total - a.total).slice(0, 40);
    const html = top.map((n) => `<li data-name="${esc(n.name)}" data-total="${n.total}" data-self="${n.self}" data-depth="${n.depth}"${this.match && this._nodeMatch(n) ? ' data-match="1"' : ''}>${esc(n.name)}: total ${esc(fmtValue(n.total, this.opts.unit))}, self ${esc(fmtValue(n.self, this.opts.unit))}</li>`).join('');
    if (this.aria.innerHTML !== html) this.aria.innerHTML = html;
  }

  _hit(e) {
    if (!this.levels) return null;
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left, y = e.clientY - rect.top;
    const height = rect.height, width = rect.width;
    const d = this.icicle ? Math.floor(y / ROW) : Math.floor((height - y) / ROW);
    if (d < 0 || d >= this.levels.length) return null;
    const f = this.focus || this.root;
    if (d <= f.depth) {
      for (let a = f; a; a = a.parent) if (a.depth === d) return a;
      return null;
    }
    const fx = f._x + (x / width) * f._w;
    if (fx < f._x || fx > f._x + f._w) return null;
    const lvl = this.levels[d];
    let lo = 0, hi = lvl.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const n = lvl[mid];
      if (fx < n._x) hi = mid - 1;
      else if (fx >= n._x + n._w) lo = mid + 1;
      else return n;
    }
    return null;
  }

  _move(e) {
    const n = this._hit(e);
    if (n !== this.hover) { this.hover = n; this.draw(); }
    this._tip(n, e);
  }

  _tip(n, e) {
    const tip = this.opts.tooltip;
    if (!tip) return;
    if (!n) { tip.hidden = true; return; }
    const u = this.opts.unit;
    const rt = this.root.total || 1;
    let html = `<b>${esc(n.name)}</b><br>`;
    if (this.opts.diff) {
      const r = this.root;
      const nb = r.base ? n.base / r.base : 0, nt = r.target ? n.target / r.target : 0;
      html += `base: ${esc(fmtValue(n.base, u))} (${fmtPct(nb)})<br>target: ${esc(fmtValue(n.target, u))} (${fmtPct(nt)})<br>`;
      const ch = this.opts.normalize === false ? (n.base ? (n.target - n.base) / n.base : null) : (nb ? (nt - nb) / nb : null);
      html += `change: ${ch === null ? (n.target ? 'new' : '—') : (ch > 0 ? '+' : '') + (ch * 100).toFixed(1) + '%'}`;
    } else {
      html += `total: ${esc(fmtValue(n.total, u))} (${fmtPct(n.total / rt)})<br>self: ${esc(fmtValue(n.self, u))} (${fmtPct(n.self / rt)})`;
      if (n.parent) html += `<br>share of caller: ${fmtPct(n.total / (n.parent.total || 1))}`;
    }
    html += '<br><span class="muted">click: zoom · right-click: more</span>';
    tip.innerHTML = html;
    tip.hidden = false;
    const pad = 14;
    let x = e.clientX + pad, y = e.clientY + pad;
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    if (x + tw > window.innerWidth) x = e.clientX - tw - pad;
    if (y + th > window.innerHeight) y = e.clientY - th - pad;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
}
