// util.js — formatting, escaping and time helpers shared by the views.

export function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

export function fmtPct(x) {
  if (!isFinite(x)) return '—';
  const p = x * 100;
  return (p >= 10 ? p.toFixed(1) : p >= 0.1 ? p.toFixed(2) : p.toFixed(3)) + '%';
}

const SI = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];

export function fmtValue(v, unit) {
  if (v === undefined || v === null) return '—';
  const a = Math.abs(v);
  if (unit === 'nanoseconds') {
    if (a >= 3600e9) return (v / 3600e9).toFixed(2) + ' h';
    if (a >= 60e9) return (v / 60e9).toFixed(2) + ' min';
    if (a >= 1e9) return (v / 1e9).toFixed(2) + ' s';
    if (a >= 1e6) return (v / 1e6).toFixed(2) + ' ms';
    if (a >= 1e3) return (v / 1e3).toFixed(2) + ' µs';
    return v + ' ns';
  }
  if (unit === 'bytes') {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0, x = v;
    while (Math.abs(x) >= 1024 && i < u.length - 1) { x /= 1024; i++; }
    return (i ? x.toFixed(2) : String(x)) + ' ' + u[i];
  }
  for (const [d, s] of SI) if (a >= d) return (v / d).toFixed(2) + s + (unit && unit !== 'count' ? ' ' + unit : '');
  return String(v) + (unit && unit !== 'count' ? ' ' + unit : '');
}

// Time expressions in the URL: "now", "now-1h", "now-30m", "now-7d",
// unix seconds, or RFC 3339. Returns unix seconds (number).
export function parseTime(s, now = Date.now() / 1000) {
  if (s === undefined || s === null || s === '') return null;
  s = String(s).trim();
  const m = /^now(?:-(\d+(?:\.\d+)?)([smhdw]))?$/.exec(s);
  if (m) {
    if (!m[1]) return Math.floor(now);
    const mult = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2]];
    return Math.floor(now - parseFloat(m[1]) * mult);
  }
  if (/^\d+(\.\d+)?$/.test(s)) return parseFloat(s);
  const t = Date.parse(s);
  return isNaN(t) ? null : t / 1000;
}

export function fmtTime(sec) {
  const d = new Date(sec * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

export function debounce(fn, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}
