// timeseries.js — the selected service's value over time (canvas area
// chart) at the top of the page; drag across it to select a time range.

import { fmtTime, fmtValue } from './util.js';

export class TimeSeries {
  constructor(host, opts = {}) {
    this.host = host;
    this.opts = opts; // {onSelect(fromSec, untilSec)}
    host.classList.add('tseries');
    this.canvas = document.createElement('canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', 'Time series of the selected service; drag to select a range');
    this.label = document.createElement('div');
    this.label.className = 'tseries-label';
    host.append(this.canvas, this.label);
    this.drag = null;
    this.canvas.addEventListener('mousedown', (e) => { this.drag = { x0: this._x(e), x1: this._x(e) }; this.draw(); });
    window.addEventListener('mousemove', (e) => {
      if (this.drag) { this.drag.x1 = this._x(e); this.draw(); } else if (e.target === this.canvas) this._hover(e);
    });
    window.addEventListener('mouseup', () => {
      if (!this.drag) return;
      const d = this.drag;
      this.drag = null;
      const a = Math.min(d.x0, d.x1), b = Math.max(d.x0, d.x1);
      if (b - a > 3 && this.data) {
        const W = this.canvas.clientWidth;
        const t0 = this.data.from / 1e9, t1 = this.data.until / 1e9;
        this.opts.onSelect && this.opts.onSelect(Math.floor(t0 + (t1 - t0) * a / W), Math.ceil(t0 + (t1 - t0) * b / W));
      }
      this.draw();
    });
    new ResizeObserver(() => this.draw()).observe(host);
  }

  _x(e) { const r = this.canvas.getBoundingClientRect(); return Math.max(0, Math.min(r.width, e.clientX - r.left)); }

  setData(d) {
    this.data = d;
    this.host.dataset.points = String((d && d.points && d.points.length) || 0);
    this.draw();
  }

  _hover(e) {
    if (!this.data) return;
    const W = this.canvas.clientWidth, x = this._x(e);
    const t = this.data.from + (this.data.until - this.data.from) * x / W;
    const step = this.data.step || 1;
    const p = (this.data.points || []).find((q) => t >= q[0] && t < q[0] + step);
    this.label.textContent = `${fmtTime(t / 1e9)}${p ? ' — ' + fmtValue(p[1], this.data.unit) : ''}`;
  }

  draw() {
    const d = this.data;
    const dpr = window.devicePixelRatio || 1;
    const W = Math.max(100, this.host.clientWidth), H = 64;
    this.canvas.width = W * dpr; this.canvas.height = H * dpr;
    this.canvas.style.width = W + 'px'; this.canvas.style.height = H + 'px';
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const dark = document.documentElement.dataset.theme === 'dark';
    if (!d || !d.points) return;
    const span = d.until - d.from || 1;
    const max = Math.max(1, ...d.points.map((p) => p[1]));
    const bw = Math.max(1, W * (d.step || span) / span);
    ctx.fillStyle = dark ? '#f59e0b' : '#ea580c';
    // every bucket with a value stays visible: at least 3 px wide and
    // high, and inside the canvas even at the range's edges; a sparse
    // series (a few uploads in a long range) gets a marker on each point
    const nz = d.points.filter((p) => p[1] > 0);
    const sparse = nz.length > 0 && nz.length <= 24;
    let drawn = 0;
    for (const [t, v] of d.points) {
      if (v <= 0) continue;
      const w = Math.max(3, bw - 1);
      const x = Math.min(Math.max(0, W * (t - d.from) / span), W - w);
      const h = Math.max(3, (H - 14) * v / max);
      ctx.fillRect(x, H - h - 1, w, h);
      if (sparse) {
        ctx.beginPath();
        ctx.arc(x + w / 2, Math.max(4, H - h - 4), 3, 0, 2 * Math.PI);
        ctx.fill();
      }
      drawn++;
    }
    this.host.dataset.drawn = String(drawn);
    ctx.fillStyle = dark ? '#9ca3af' : '#6b7280';
    ctx.font = '10px sans-serif';
    ctx.fillText(fmtTime(d.from / 1e9), 2, 10);
    const end = fmtTime(d.until / 1e9);
    ctx.fillText(end, W - ctx.measureText(end).width - 2, 10);
    ctx.fillText('max ' + fmtValue(max, d.unit) + ' per ' + Math.round((d.step || 0) / 1e9) + ' s', W / 2 - 60, 10);
    if (this.drag) {
      ctx.fillStyle = 'rgba(59,130,246,0.25)';
      ctx.fillRect(Math.min(this.drag.x0, this.drag.x1), 0, Math.abs(this.drag.x1 - this.drag.x0), H);
    }
  }
}
