// table.js — the top-functions table: a real DOM <table> (readable by
// assistive tech and tests), sortable by self/total/name, filtered by the
// search box. Rows carry data-function/data-self/data-total.

import { esc, fmtPct, fmtValue } from './util.js';
import { makeMatcher } from './tree.js';

const PAGE = 300;

export class FunctionTable {
  constructor(host, opts = {}) {
    this.host = host;
    this.opts = opts; // {unit, onSelect(fn), columns?: 'diff'}
    this.sort = opts.sort || 'self';
    this.desc = true;
    this.filter = '';
    this.limit = PAGE;
    host.classList.add('ftable-host');
    host.addEventListener('click', (e) => {
      const th = e.target.closest('th[data-sort]');
      if (th) {
        const k = th.dataset.sort;
        if (this.sort === k) this.desc = !this.desc; else { this.sort = k; this.desc = k !== 'function'; }
        this.render();
        return;
      }
      if (e.target.closest('button.more')) { this.limit += PAGE * 3; this.render(); return; }
      const tr = e.target.closest('tr[data-function]');
      if (tr && this.opts.onSelect) this.opts.onSelect(tr.dataset.function, e);
    });
  }

  setRows(rows, total, unit) {
    this.rows = rows;
    this.total = total;
    this.unit = unit;
    this.limit = PAGE;
    this.render();
  }

  setFilter(q) { this.filter = q || ''; this.limit = PAGE; this.render(); }

  render() {
    if (!this.rows) return;
    const m = makeMatcher(this.filter);
    let rows = m ? this.rows.filter((r) => m(r.function)) : this.rows.slice();
    const k = this.sort, d = this.desc ? -1 : 1;
    rows.sort((a, b) => {
      const x = a[k], y = b[k];
      if (x === y) return a.function < b.function ? -1 : 1;
      return (x < y ? -1 : 1) * d;
    });
    const shown = rows.slice(0, this.limit);
    const u = this.unit, T = this.total || 1;
    const arrow = (c) => (this.sort === c ? (this.desc ? ' ▾' : ' ▴') : '');
    const aria = (c) => (this.sort === c ? (this.desc ? 'descending' : 'ascending') : 'none');
    let sumSelf = 0;
    for (const r of rows) sumSelf += r.self;
    const diff = this.opts.columns === 'diff';
    const head = diff
      ? `<tr><th data-sort="function" aria-sort="${aria('function')}">Function${arrow('function')}</th><th data-sort="base_self" class="num" aria-sort="${aria('base_self')}">Base self${arrow('base_self')}</th><th data-sort="target_self" class="num" aria-sort="${aria('target_self')}">Target self${arrow('target_self')}</th><th data-sort="change" class="num" aria-sort="${aria('change')}">Change${arrow('change')}</th><th data-sort="significance" class="num" title="z statistic of the difference (hub diff API)">z${arrow('significance')}</th></tr>`
      : `<tr><th data-sort="function" aria-sort="${aria('function')}">Function${arrow('function')}</th><th data-sort="self" class="num" aria-sort="${aria('self')}">Self${arrow('self')}</th><th class="num">Self %</th><th data-sort="total" class="num" aria-sort="${aria('total')}">Total${arrow('total')}</th><th class="num">Total %</th></tr>`;
    const body = shown.map((r) => diff
      ? `<tr data-function="${esc(r.function)}" data-change="${r.change}"><td class="fn" title="${esc(r.function)}">${esc(r.function)}</td><td class="num">${esc(fmtValue(r.base_self, u))}</td><td class="num">${esc(fmtValue(r.target_self, u))}</td><td class="num ${r.change > 0 ? 'up' : r.change < 0 ? 'down' : ''}">${esc(this.opts.normalize === false ? (r.change > 0 ? '+' : '') + fmtValue(r.change, u) : fmtChange(r.change))}</td><td class="num">${typeof r.significance === 'number' ? r.significance.toFixed(1) : '—'}</td></tr>`
      : `<tr data-function="${esc(r.function)}" data-self="${r.self}" data-total="${r.total}"><td class="fn" title="${esc(r.function)}"><span class="bar" data-w="${Math.round(1000 * r.self / T)}"></span><span class="name">${esc(r.function)}</span></td><td class="num">${esc(fmtValue(r.self, u))}</td><td class="num">${fmtPct(r.self / T)}</td><td class="num">${esc(fmtValue(r.total, u))}</td><td class="num">${fmtPct(r.total / T)}</td></tr>`).join('');
    const more = rows.length > shown.length ? `<button class="more">show more (${rows.length - shown.length} hidden)</button>` : '';
    this.host.innerHTML = `<div class="ftable-meta" data-rows="${rows.length}" data-sum-self="${sumSelf}" data-total="${this.total}">${rows.length} functions${this.filter ? ` matching “${esc(this.filter)}”` : ''} · total ${esc(fmtValue(this.total, u))}</div><table class="ftable" data-sort="${k}" data-order="${this.desc ? 'desc' : 'asc'}"><thead>${head}</thead><tbody>${body}</tbody></table>${more}`;
    // self bars: width via CSSOM (the CSP forbids inline style attributes)
    for (const b of this.host.querySelectorAll('.bar')) b.style.width = (Number(b.dataset.w) / 10) + '%';
  }
}

// A change of share, in percentage points.
export function fmtChange(c) {
  if (c === null || c === undefined || !isFinite(c)) return '—';
  return (c > 0 ? '+' : '') + (c * 100).toFixed(2) + ' pp';
}
