// export.js — the explorer's exports of the current view (app.js "Export"
// buttons): the call tree as a gzipped pprof profile (profile.proto, read
// by `go tool pprof` and by our own upload), and as a standalone flame
// graph SVG in the shape of FlameGraph's flamegraph.pl (one <g> per frame
// with a <title> tooltip, widths proportional to total). Both take the tree
// the page shows (tree.js node shape), hidden packages already applied.

// ---- protobuf writer (just what profile.proto needs) ------------------------
class PbWriter {
  constructor() { this.buf = new Uint8Array(1024); this.len = 0; }
  _grow(n) {
    if (this.len + n <= this.buf.length) return;
    let c = this.buf.length * 2;
    while (c < this.len + n) c *= 2;
    const b = new Uint8Array(c);
    b.set(this.buf.subarray(0, this.len));
    this.buf = b;
  }
  // unsigned varint of a non-negative safe integer (values reach 2^53, so
  // no 32-bit bit operations)
  varint(v) {
    this._grow(10);
    let x = Math.max(0, Math.floor(v));
    while (x >= 128) { this.buf[this.len++] = (x % 128) | 128; x = Math.floor(x / 128); }
    this.buf[this.len++] = x;
  }
  tag(field, wire) { this.varint(field * 8 + wire); }
  int(field, v) { if (v) { this.tag(field, 0); this.varint(v); } }
  bytes(field, u8) { this.tag(field, 2); this.varint(u8.length); this._grow(u8.length); this.buf.set(u8, this.len); this.len += u8.length; }
  msg(field, w) { this.bytes(field, w.done()); }
  packed(field, vals) { if (!vals.length) return; const w = new PbWriter(); for (const v of vals) w.varint(v); this.bytes(field, w.done()); }
  done() { return this.buf.subarray(0, this.len); }
}

// The tree as a profile.proto message (uncompressed). One sample per node
// with self value, its stack the node's path leaf first; one function and
// one location per distinct frame name. opts: {type, unit, from, until}
// (seconds). Returns Uint8Array.
export function treeToPprof(root, opts = {}) {
  const strings = [''], sidx = new Map([['', 0]]);
  const str = (s) => { s = String(s); let i = sidx.get(s); if (i === undefined) { i = strings.length; strings.push(s); sidx.set(s, i); } return i; };
  const fnIds = new Map();
  const fnOf = (name) => { let id = fnIds.get(name); if (id === undefined) { id = fnIds.size + 1; fnIds.set(name, id); } return id; };
  const p = new PbWriter();
  const vt = new PbWriter();
  vt.int(1, str(opts.type || 'samples'));
  vt.int(2, str(opts.unit || 'count'));
  p.msg(1, vt);
  const stack = [[root, []]];
  while (stack.length) {
    const [n, path] = stack.pop();
    const here = n.parent ? [fnOf(n.name)].concat(path) : path; // the root ("total") is not a frame
    if (n.parent && n.self > 0) {
      const s = new PbWriter();
      s.packed(1, here); // location id = function id
      s.packed(2, [n.self]);
      p.msg(2, s);
    }
    for (const c of n.children) stack.push([c, here]);
  }
  for (const [name, id] of fnIds) {
    const line = new PbWriter();
    line.int(1, id);
    const loc = new PbWriter();
    loc.int(1, id);
    loc.msg(4, line);
    p.msg(4, loc);
  }
  for (const [name, id] of fnIds) {
    const f = new PbWriter();
    f.int(1, id);
    f.int(2, str(name));
    f.int(3, str(name));
    p.msg(5, f);
  }
  const enc = new TextEncoder();
  for (const s of strings) p.bytes(6, enc.encode(s));
  if (opts.from) p.int(9, opts.from * 1e9);
  if (opts.from && opts.until && opts.until > opts.from) p.int(10, (opts.until - opts.from) * 1e9);
  return p.done();
}

export async function gzip(u8) {
  const cs = new CompressionStream('gzip');
  const out = new Response(new Blob([u8]).stream().pipeThrough(cs));
  return new Uint8Array(await out.arrayBuffer());
}

// ---- SVG ----------------------------------------------------------------------------
const xmlEsc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }[c]));

function hue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return h;
}

// A flame graph (root at the bottom) of the tree, width px wide; frames
// narrower than 0.3 px are left out (as flamegraph.pl's minwidth). fmt(v)
// formats values for the tooltips. Returns the SVG document as a string.
export function treeToSvg(root, { width = 1200, title = 'Flame graph', fmt = String } = {}) {
  const rowH = 16, pad = 10, top = 34;
  let maxDepth = 0;
  const frames = [];
  const total = root.total || 1;
  const scale = (width - 2 * pad) / total;
  const stack = [[root, 0, 0]];
  while (stack.length) {
    const [n, x, d] = stack.pop();
    const w = n.total * scale;
    if (w < 0.3) continue;
    frames.push([n, x, d, w]);
    if (d > maxDepth) maxDepth = d;
    let cx = x;
    for (const c of n.children) { stack.push([c, cx, d + 1]); cx += c.total * scale; }
  }
  const height = top + (maxDepth + 1) * rowH + pad;
  const out = [];
  out.push(`<?xml version="1.0" standalone="no"?>\n<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" data-total="${root.total}">`);
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="${width / 2}" y="20" text-anchor="middle" font-family="Verdana, sans-serif" font-size="15">${xmlEsc(title)}</text>`);
  for (const [n, x, d, w] of frames) {
    const y = height - pad - (d + 1) * rowH;
    const name = n.parent ? n.name : 'all';
    const h = hue(name);
    const fill = n.parent ? `rgb(${205 + (h % 50)},${(h >> 8) % 200},${(h >> 16) % 55})` : 'rgb(220,220,220)';
    const pct = (100 * n.total / total).toFixed(2);
    const chars = Math.floor((w - 6) / 7);
    const label = chars >= 3 ? (name.length > chars ? name.slice(0, chars - 2) + '..' : name) : '';
    out.push(`<g class="frame" data-name="${xmlEsc(name)}" data-total="${n.total}" data-self="${n.self}" data-depth="${d}"><title>${xmlEsc(name)} (${xmlEsc(fmt(n.total))}, ${pct}%)</title>` +
      `<rect x="${x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${rowH - 1}" fill="${fill}" rx="2" ry="2"/>` +
      (label ? `<text x="${(x + 3).toFixed(2)}" y="${y + 11.5}" font-family="Verdana, sans-serif" font-size="12">${xmlEsc(label)}</text>` : '') + '</g>');
  }
  out.push('</svg>\n');
  return out.join('\n');
}

// Save bytes or text as a file through a temporary link.
export function download(name, data, type) {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
