// tree.js — pure functions over call trees (no DOM): import from the API's
// flamegraph JSON, hide frames by prefix, per-function table, search share,
// sandwich (callers/callees of one function), and two-tree diff.
//
// Node shape: {name, self, total, children: [], parent, depth}.

export function fromJson(j, parent = null, depth = 0) {
  const n = { name: j.name, self: j.self || 0, total: j.total || 0, children: [], parent, depth };
  const kids = j.children || [];
  for (let i = 0; i < kids.length; i++) n.children.push(fromJson(kids[i], n, depth + 1));
  return n;
}

// Iterative version for deep trees (avoids stack overflow on 100k nodes).
export function importTree(j) {
  const root = { name: j.name || 'total', self: j.self || 0, total: j.total || 0, _x: 0, _w: 0, _qg: 0, _qm: false, _c: '', _cd: false, children: [], parent: null, depth: 0 };
  // parallel stacks: no allocation per node besides the node itself
  const srcs = [j], dsts = [root];
  while (srcs.length) {
    const src = srcs.pop(), dst = dsts.pop();
    const kids = src.children || [];
    for (let i = 0; i < kids.length; i++) {
      const k = kids[i];
      const n = { name: k.name, self: k.self || 0, total: k.total || 0, _x: 0, _w: 0, _qg: 0, _qm: false, _c: '', _cd: false, children: [], parent: dst, depth: dst.depth + 1 };
      dst.children.push(n);
      srcs.push(k);
      dsts.push(n);
    }
  }
  return root;
}

export function walk(root, fn) {
  const stack = [root];
  while (stack.length) {
    const n = stack.pop();
    fn(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
}

export function countNodes(root) {
  let c = 0;
  walk(root, () => c++);
  return c;
}

// Recompute totals (self + children) and depths/parents, children sorted
// by total descending.
export function finish(root) {
  const order = [];
  walk(root, (n) => order.push(n));
  for (let i = order.length - 1; i >= 0; i--) {
    const n = order[i];
    let t = n.self;
    for (const c of n.children) { t += c.total; c.parent = n; }
    n.total = t;
    n.children.sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : 1));
  }
  for (const n of order) n.depth = n.parent ? n.parent.depth + 1 : 0;
  return root;
}

export function matchesPrefix(name, prefixes) {
  for (const p of prefixes) if (p && name.startsWith(p)) return true;
  return false;
}

// Hide frames whose name starts with one of prefixes: the hidden frame's
// self time goes to the nearest visible caller's self, and its children
// are re-parented to that caller (merging children of the same name).
// The root ("total") is never hidden. Returns a new tree.
export function hideFrames(root, prefixes) {
  prefixes = (prefixes || []).filter(Boolean);
  const out = { name: root.name, self: root.self, total: 0, _x: 0, _w: 0, _qg: 0, _qm: false, _c: '', _cd: false, children: [], parent: null, depth: 0 };
  if (!prefixes.length) return copyTree(root);
  const index = new Map(); // per output node: name -> child
  const childOf = (parent, name) => {
    let m = index.get(parent);
    if (!m) { m = new Map(); index.set(parent, m); }
    let c = m.get(name);
    if (!c) {
      c = { name, self: 0, total: 0, _x: 0, _w: 0, _qg: 0, _qm: false, _c: '', _cd: false, children: [], parent, depth: 0 };
      m.set(name, c);
      parent.children.push(c);
    }
    return c;
  };
  const stack = [[root, out]];
  while (stack.length) {
    const [src, dst] = stack.pop();
    for (const c of src.children) {
      if (matchesPrefix(c.name, prefixes)) {
        dst.self += c.self;
        stack.push([c, dst]);
      } else {
        const d = childOf(dst, c.name);
        d.self += c.self;
        stack.push([c, d]);
      }
    }
  }
  return finish(out);
}

export function copyTree(root) {
  const out = { name: root.name, self: root.self, total: root.total, _x: 0, _w: 0, _qg: 0, _qm: false, _c: '', _cd: false, children: [], parent: null, depth: 0 };
  const stack = [[root, out]];
  while (stack.length) {
    const [s, d] = stack.pop();
    for (const c of s.children) {
      const n = { name: c.name, self: c.self, total: c.total, _x: 0, _w: 0, _qg: 0, _qm: false, _c: '', _cd: false, children: [], parent: d, depth: d.depth + 1 };
      d.children.push(n);
      stack.push([c, n]);
    }
  }
  return out;
}

// Per-function rows like the API's table: self summed over all nodes;
// total counts a function once per stack (outermost occurrence only).
export function tableFromTree(root) {
  // one row per name; `on` counts the row's frames on the current path so a
  // recursive function's total counts its outermost frames only
  const rows = new Map();
  // iterative DFS with enter/exit events on parallel stacks (no per-node
  // allocation: this runs over 100k-node trees)
  const nodes = [], rowOf = [];
  for (let i = root.children.length - 1; i >= 0; i--) { nodes.push(root.children[i]); rowOf.push(null); }
  while (nodes.length) {
    const n = nodes.pop();
    const exitRow = rowOf.pop();
    if (exitRow) { exitRow.on--; continue; }
    let r = rows.get(n.name);
    if (!r) { r = { function: n.name, self: 0, total: 0, on: 0 }; rows.set(n.name, r); }
    r.self += n.self;
    if (!r.on) r.total += n.total;
    r.on++;
    nodes.push(n);
    rowOf.push(r);
    const kids = n.children;
    for (let i = kids.length - 1; i >= 0; i--) { nodes.push(kids[i]); rowOf.push(null); }
  }
  const out = [];
  for (const r of rows.values()) out.push({ function: r.function, self: r.self, total: r.total });
  if (root.self) out.push({ function: root.name === 'total' ? '[self of root]' : root.name, self: root.self, total: root.self });
  return out.sort((a, b) => b.self - a.self || b.total - a.total || (a.function < b.function ? -1 : 1));
}

export function makeMatcher(q) {
  if (!q) return null;
  const m = /^\/(.*)\/([i]*)$/.exec(q);
  if (m) {
    try { const re = new RegExp(m[1], m[2]); return (s) => re.test(s); } catch { /* fall through */ }
  }
  const lq = q.toLowerCase();
  return (s) => s.toLowerCase().includes(lq);
}

// Share of root.total under nodes that match (outermost matches only).
export function matchedTotal(root, match) {
  if (!match) return 0;
  let sum = 0;
  const stack = [...root.children];
  while (stack.length) {
    const n = stack.pop();
    if (match(n.name)) { sum += n.total; continue; }
    for (const c of n.children) stack.push(c);
  }
  return sum;
}

// Sandwich: callers (inverted tree, root = fn) and callees (merged
// subtrees of fn) for the outermost occurrences of fn in each stack.
export function sandwich(root, fn) {
  const callees = { name: fn, self: 0, total: 0, children: [], parent: null, depth: 0 };
  const callers = { name: fn, self: 0, total: 0, children: [], parent: null, depth: 0 };
  const mergeInto = (dst, src) => {
    dst.self += src.self;
    const stack = [[src, dst]];
    while (stack.length) {
      const [s, d] = stack.pop();
      for (const c of s.children) {
        let t = d.children.find((x) => x.name === c.name);
        if (!t) { t = { name: c.name, self: 0, total: 0, children: [], parent: d, depth: 0 }; d.children.push(t); }
        t.self += c.self;
        stack.push([c, t]);
      }
    }
  };
  const stack = [...root.children];
  while (stack.length) {
    const n = stack.pop();
    if (n.name === fn) {
      mergeInto(callees, n);
      // callers: walk up, weight n.total
      let d = callers;
      d.total += n.total;
      for (let p = n.parent; p && p.parent; p = p.parent) {
        let t = d.children.find((x) => x.name === p.name);
        if (!t) { t = { name: p.name, self: 0, total: 0, children: [], parent: d, depth: 0, fixed: true }; d.children.push(t); }
        t.total += n.total;
        d = t;
      }
      d.self += n.total; // time entering from the root
      continue;
    }
    for (const c of n.children) stack.push(c);
  }
  finish(callees);
  // callers keep the totals accumulated above (self = "called from root")
  walk(callers, (x) => x.children.sort((a, b) => b.total - a.total));
  const fix = [];
  walk(callers, (x) => fix.push(x));
  for (const x of fix) x.depth = x.parent ? x.parent.depth + 1 : 0;
  // self of inner caller nodes = total - sum(children) (the part where this caller is outermost)
  for (const x of fix) {
    let s = 0;
    for (const c of x.children) s += c.total;
    x.self = Math.max(0, x.total - s);
  }
  return { callers, callees };
}

// Merge two trees into one with base/target values per node (for the diff
// flame graph). total = target total (node widths) unless widthBy = 'max'.
export function diffTrees(base, target) {
  const out = { name: 'total', self: 0, total: 0, base: 0, target: 0, baseSelf: 0, targetSelf: 0, children: [], parent: null, depth: 0 };
  const add = (src, key) => {
    const stack = [[src, out]];
    out[key] += src.total;
    out[key + 'Self'] += src.self;
    while (stack.length) {
      const [s, d] = stack.pop();
      for (const c of s.children) {
        let t = d._m && d._m.get(c.name);
        if (!t) {
          t = { name: c.name, self: 0, total: 0, base: 0, target: 0, baseSelf: 0, targetSelf: 0, children: [], parent: d, depth: d.depth + 1 };
          if (!d._m) d._m = new Map();
          d._m.set(c.name, t);
          d.children.push(t);
        }
        t[key] += c.total;
        t[key + 'Self'] += c.self;
        stack.push([c, t]);
      }
    }
  };
  add(base, 'base');
  add(target, 'target');
  // width = max(base, target) so that vanished frames stay visible
  walk(out, (n) => { delete n._m; });
  const order = [];
  walk(out, (n) => order.push(n));
  for (let i = order.length - 1; i >= 0; i--) {
    const n = order[i];
    const s = Math.max(n.baseSelf, n.targetSelf);
    let t = s;
    for (const c of n.children) t += c.total;
    n.self = s;
    n.total = t;
    n.children.sort((a, b) => b.total - a.total);
  }
  return out;
}

// Import the API's diff flame tree ({name, base, target, children}) when
// /profiles/diff provides one; tolerant of field names.
export function importDiffTree(j) {
  const get = (o, ...ks) => { for (const k of ks) if (o[k] !== undefined) return o[k]; return 0; };
  const conv = (src, parent, depth) => {
    const n = {
      name: src.name || src.function || '?',
      base: get(src, 'base', 'base_total'), target: get(src, 'target', 'target_total'),
      baseSelf: get(src, 'base_self'), targetSelf: get(src, 'target_self'),
      children: [], parent, depth, self: 0, total: 0,
    };
    for (const c of src.children || []) n.children.push(conv(c, n, depth + 1));
    return n;
  };
  const root = conv(j, null, 0);
  const order = [];
  walk(root, (n) => order.push(n));
  for (let i = order.length - 1; i >= 0; i--) {
    const n = order[i];
    let ct = 0;
    for (const c of n.children) ct += c.total;
    const own = Math.max(n.base, n.target);
    n.total = Math.max(own, ct);
    n.self = n.total - ct;
    n.children.sort((a, b) => b.total - a.total);
  }
  return root;
}

export function pathOf(n) {
  const p = [];
  for (let x = n; x && x.parent; x = x.parent) p.push(x.name);
  return p.reverse();
}

export function findPath(root, path) {
  let n = root;
  for (const name of path) {
    const c = n.children.find((x) => x.name === name);
    if (!c) return n;
    n = c;
  }
  return n;
}

// Default prefix of a frame's "package": up to and including the last
// '.', '::', '/' or '\' before the function's own name.
export function packageOf(name) {
  const paren = name.indexOf('(');
  const s = paren > 0 ? name.slice(0, paren) : name;
  let cut = -1;
  for (const sep of ['::', '.', '/', '\\']) {
    const i = s.lastIndexOf(sep);
    if (i > 0 && i + sep.length > cut) cut = i + sep.length;
  }
  return cut > 0 ? name.slice(0, cut) : name;
}
