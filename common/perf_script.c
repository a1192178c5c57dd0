/*
 * perf_script.c — decoder for `perf script` text (see perf_script.h).
 *
 * Two passes over the text:
 *   1. headers only: which events occur, whether every record of an event
 *      has a period, the earliest time — sample types must be declared
 *      before the first sample, and times are kept relative to the first;
 *   2. records: frames interned through a per-decode cache keyed by the
 *      frame text, stacks collapsed, one sample added per record.
 * Memory is proportional to distinct frames/stacks/labelsets plus distinct
 * samples (records at distinct times are distinct samples when a base time
 * is given), never to the input size.
 *
 * Line shapes (perf 3.x .. 6.x):
 *   header   COMM PID[/TID] [CPU] [TIME:] [PERIOD] EVENT: [ADDR SYM (DSO)]
 *            COMM may contain blanks: it is the shortest prefix followed by
 *            blanks and a numeric PID (what stackcollapse-perf.pl does).
 *            EVENT modifiers ("cpu-clock:ppp:", "cycles:u:") are dropped;
 *            tracepoints ("sched:sched_switch:") keep their full name.
 *            PERF_RECORD_* side-band lines (--show-*-events) are skipped.
 *   frame    <blanks> HEXADDR SYM[+0xOFF] (DSO)     DSO may itself hold
 *            parentheses ("(/tmp/x (deleted))"); SYM may hold blanks and
 *            parentheses (C++ signatures, V8 "LazyCompile:~f file:1").
 *   srcline  <blanks> FILE:LINE   (perf script -F +srcline), after a frame:
 *            sets that frame's file and line.
 *   comments '#' in column 0 (the --header block), skipped anywhere.
 * Naming: the "+0xOFF" suffix is removed (stackcollapse does the same);
 * an "[unknown]" symbol in a file ("(/usr/bin/x)") becomes an unsymbolized
 * frame (no function) with that mapping and perf's printed address, which
 * for user-space DSOs is the address relative to the file (what perf's
 * map_ip gives: runtime ip - map start + page offset) — views name it
 * "x+0x<addr>" and the hub symbolizes it from an uploaded debug file
 * (symref.h); in a bracketed pseudo-DSO it becomes "[DSO]" ("[[vdso]]",
 * "[[kernel.kallsyms]]"), and "[unknown]" when the DSO is unknown too,
 * exactly as FlameGraph's stackcollapse-perf.pl names them.
 */
#include "perf_script.h"
#include "hex.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "text_input.h"
#include "bytemap.h"

#define NS_PER_SEC 1000000000LL
#define PERF_CPU_TYPE "cpu"
#define PERF_ERR_SNIP 60 /* bytes of offending text quoted in errors */

/* ---- small text helpers ----------------------------------------------------- */

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal digits s[0..n) → *v; 0 or -1 (not all digits / overflow). */
static int parse_u63(const char *s, size_t n, int64_t *v)
{
	int64_t acc = 0;
	size_t i;

	if (!n)
		return -1;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]) || acc > (INT64_MAX - 9) / 10)
			return -1;
		acc = acc * 10 + (s[i] - '0');
	}
	*v = acc;
	return 0;
}

/* "SEC.FRAC" (FRAC optional) → ns; 0 or -1. */
static int parse_time(const char *s, size_t n, int64_t *ns)
{
	const char *dot = memchr(s, '.', n);
	size_t il = dot ? (size_t)(dot - s) : n, i;
	int64_t sec, frac = 0, scale = NS_PER_SEC;

	if (parse_u63(s, il, &sec) || sec > INT64_MAX / NS_PER_SEC - 1)
		return -1;
	if (dot) {
		if (il + 1 == n)
			return -1;
		for (i = il + 1; i < n; i++) {
			if (!is_digit(s[i]))
				return -1;
			if (scale > 1) {
				scale /= 10;
				frac += (s[i] - '0') * scale;
			}
		}
	}
	*ns = sec * NS_PER_SEC + frac;
	return 0;
}

/* ---- header line ---------------------------------------------------------------- */

typedef struct hdr {
	const char *comm, *pid, *tid, *ev, *rest;
	size_t comm_len, pid_len, tid_len, ev_len, rest_len;
	bool has_time, has_period, skip;
	int64_t t_ns, period;
} hdr;

/* Modifier letters perf appends to an event name after ':'. */
static int all_modifiers(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if (!strchr("ukhHGIpPSDWeb", s[i]))
			return 0;
	return 1;
}

/* Parse s[0..n) (no trailing blanks). Returns NULL or a static reason. */
static const char *parse_header(const char *s, size_t n, hdr *h)
{
	size_t i, pos = 0;

	memset(h, 0, sizeof(*h));
	/* COMM PID[/TID]: the shortest prefix followed by blanks + number */
	for (i = 1; i < n; i++) {
		size_t j, k, t;

		if (!is_blank(s[i]) || is_blank(s[i - 1]))
			continue;
		for (j = i; j < n && is_blank(s[j]); j++)
			;
		for (k = j; k < n && is_digit(s[k]); k++)
			;
		if (k == j)
			continue;
		h->pid = s + j;
		h->pid_len = k - j;
		h->tid = NULL;
		h->tid_len = 0;
		if (k < n && s[k] == '/') {
			for (t = k + 1; t < n && is_digit(s[t]); t++)
				;
			if (t == k + 1)
				continue;
			h->tid = s + k + 1;
			h->tid_len = t - k - 1;
			k = t;
		}
		if (k < n && !is_blank(s[k]))
			continue;
		/* the next column must be one perf prints after the PID: [CPU],
		 * TIME:, PERIOD or EVENT: — so "Thread 2 1234/1235 ..." takes
		 * 1234/1235 as the PID/TID, not 2 */
		for (t = k; t < n && is_blank(s[t]); t++)
			;
		if (t < n && s[t] != '[') {
			size_t e2 = t, dg = 0;

			while (e2 < n && !is_blank(s[e2])) {
				dg += is_digit(s[e2]);
				e2++;
			}
			if (s[e2 - 1] != ':' && dg != e2 - t)
				continue;
		}
		h->comm = s;
		h->comm_len = i;
		pos = k;
		break;
	}
	if (!h->comm) { /* no PID column: COMM is the first token */
		for (i = 0; i < n && !is_blank(s[i]); i++)
			;
		h->comm = s;
		h->comm_len = i;
		h->pid = NULL;
		h->pid_len = 0;
		pos = i;
	}
	for (;;) {
		const char *tok;
		size_t tl;

		while (pos < n && is_blank(s[pos]))
			pos++;
		if (pos >= n)
			return "no event name (a token ending in ':')";
		tok = s + pos;
		for (tl = 0; pos + tl < n && !is_blank(tok[tl]); tl++)
			;
		pos += tl;
		if (tl >= 3 && tok[0] == '[' && tok[tl - 1] == ']')
			continue; /* [CPU] */
		if (tl > 12 && !memcmp(tok, "PERF_RECORD_", 12)) {
			h->skip = true;
			return NULL;
		}
		if (tok[tl - 1] == ':') {
			int64_t t;

			if (tl > 1 && is_digit(tok[0]) && !h->has_time && !parse_time(tok, tl - 1, &t)) {
				h->has_time = true;
				h->t_ns = t;
				continue;
			}
			if (tl == 1)
				return "empty event name";
			h->ev = tok;
			h->ev_len = tl - 1;
			/* drop ":ppp"-style modifiers, keep "sched:sched_switch" */
			{
				const char *c = memrchr(tok, ':', h->ev_len);

				if (c && c > tok &&
				    all_modifiers(c + 1, (size_t)(tok + h->ev_len - c - 1)))
					h->ev_len = (size_t)(c - tok);
			}
			while (pos < n && is_blank(s[pos]))
				pos++;
			h->rest = s + pos;
			h->rest_len = n - pos;
			return NULL;
		}
		if (is_digit(tok[0])) {
			int64_t v;

			if (parse_u63(tok, tl, &v))
				return "bad period (not a non-negative 63-bit integer)";
			h->has_period = true;
			h->period = v;
			continue;
		}
		/* any other column (-F flags, ...) is ignored */
	}
}

/* ---- frame line ----------------------------------------------------------------- */

typedef struct pframe {
	const char *sym, *dso, *src;
	uint32_t sym_len, dso_len, src_len;
	uint64_t addr;
	int64_t line;
	bool unknown;
} pframe;

/* Parse "HEXADDR SYM (DSO)" from s[0..n) (leading blanks already
 * skipped, no trailing blanks). Returns 0 if it is a frame line. */
static int parse_frame(const char *s, size_t n, pframe *f)
{
	size_t i = 0, e;
	uint64_t a = 0;

	while (i < n && wt_hex_digit(s[i]) >= 0) {
		if (i < 16)
			a = a << 4 | (uint64_t)wt_hex_digit(s[i]);
		i++;
	}
	if (i == 0 || i > 16 || (i < n && !is_blank(s[i])))
		return -1;
	memset(f, 0, sizeof(*f));
	f->addr = a;
	while (i < n && is_blank(s[i]))
		i++;
	e = n;
	if (e > i && s[e - 1] == ')') { /* the last balanced "(...)" is the DSO */
		size_t k = e - 1;
		int depth = 0;

		for (;;) {
			if (s[k] == ')')
				depth++;
			else if (s[k] == '(' && --depth == 0)
				break;
			if (k == i)
				break;
			k--;
		}
		if (depth == 0 && s[k] == '(' && (k == i || is_blank(s[k - 1]))) {
			f->dso = s + k + 1;
			f->dso_len = (uint32_t)(e - 1 - k - 1);
			e = k;
			while (e > i && is_blank(s[e - 1]))
				e--;
		}
	}
	/* drop "+0xOFF" */
	{
		size_t j = e;

		while (j > i && wt_hex_digit(s[j - 1]) >= 0)
			j--;
		if (j < e && j >= i + 3 && s[j - 1] == 'x' && s[j - 2] == '0' && s[j - 3] == '+')
			e = j - 3;
	}
	f->sym = s + i;
	f->sym_len = (uint32_t)(e - i);
	if (!f->sym_len || (f->sym_len == 9 && !memcmp(f->sym, "[unknown]", 9)))
		f->unknown = true;
	return 0;
}

/* "FILE:LINE" (srcline) → 0 and the parts. */
static int parse_srcline(const char *s, size_t n, const char **file, size_t *flen, int64_t *line)
{
	const char *c = memrchr(s, ':', n);

	if (!c || c == s || parse_u63(c + 1, (size_t)(s + n - c - 1), line) || *line <= 0)
		return -1;
	*file = s;
	*flen = (size_t)(c - s);
	if (*flen == 2 && !memcmp(s, "??", 2))
		return -1;
	return 0;
}

/* ---- decoder ----------------------------------------------------------------- */

typedef struct pevent {
	const char *name;
	size_t len;
	bool all_period;
	int type; /* index of its own type, -1 = only the total */
	int64_t first_period;
} pevent;

typedef struct dec {
	wt_profile *p;
	wt_err *err;
	size_t line;
	pevent *ev;
	size_t nev;
	int total_type;
	int64_t base, tmin, tmax;
	bool have_time;
	/* current record */
	hdr h;
	bool in_rec;
	size_t rec_line;
	bool cut_end;          /* the input does not end with a newline */
	size_t nblank_ended;   /* records closed by a blank line (pass 2) */
	pframe *fr;
	size_t nfr, fr_cap;
	uint32_t *ids;
	int64_t *vals;
	int64_t *sums; /* per type: totals must stay within int64 */
	wt_bytemap cache; /* frame text → frame id */
	char *key;
	size_t key_cap;
	/* last labelset */
	char *lab_key;
	size_t lab_len, lab_cap;
	uint32_t lab_id;
	bool lab_valid;
} dec;

/* memcpy that accepts (NULL, 0); returns dst + n. */
static char *put(char *dst, const char *src, size_t n)
{
	if (n)
		memcpy(dst, src, n);
	return dst + n;
}

static int oom(dec *d)
{
	return wt_err_set(d->err, WT_ENOMEM, "perf: out of memory at line %zu", d->line);
}

static int grow_bytes(char **b, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 256;
	char *nb;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (!(nb = realloc(*b, ncap)))
		return WT_ENOMEM;
	*b = nb;
	*cap = ncap;
	return 0;
}

static int find_event(dec *d, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < d->nev; i++)
		if (d->ev[i].len == n && !memcmp(d->ev[i].name, s, n))
			return (int)i;
	return -1;
}

static int is_clock_event(const char *s, size_t n)
{
	return (n == 9 && !memcmp(s, "cpu-clock", 9)) || (n == 10 && !memcmp(s, "task-clock", 10));
}

static int header_error(dec *d, const char *s, size_t n, const char *why)
{
	return wt_err_set(d->err, WT_EINVAL,
			  "perf: line %zu: cannot parse sample header \"%.*s\": %s (expected "
			  "`comm pid[/tid] [cpu] time: [period] event:`)",
			  d->line, (int)(n > PERF_ERR_SNIP ? PERF_ERR_SNIP : n), s, why);
}

/* Iterate lines: returns 0 at the end; [*ls, *le) without trailing blanks. */
static int next_line(const char **pos, const char *end, const char **ls, const char **le)
{
	const char *nl;

	if (*pos >= end)
		return 0;
	*ls = *pos;
	nl = memchr(*pos, '\n', (size_t)(end - *pos));
	*le = nl ? nl : end;
	*pos = nl ? nl + 1 : end;
	while (*le > *ls && is_blank((*le)[-1]))
		(*le)--;
	return 1;
}

/* Pass 1: events, periods, earliest time; every header is validated. */
static int scan_headers(dec *d, const char *s, const char *end)
{
	const char *ls, *le;
	bool in_rec = false;
	hdr h;

	d->line = 0;
	while (next_line(&s, end, &ls, &le)) {
		const char *why;
		int e;

		d->line++;
		if (ls == le) {
			in_rec = false;
			continue;
		}
		if (*ls == '#')
			continue;
		if (is_blank(*ls)) {
			if (!in_rec) {
				const char *q = ls;

				while (q < le && is_blank(*q))
					q++;
				if (q < le)
					return wt_err_set(d->err, WT_EINVAL,
							  "perf: line %zu: indented line \"%.*s\" outside a "
							  "sample (no header line before it)",
							  d->line, (int)(le - q > PERF_ERR_SNIP ? PERF_ERR_SNIP : le - q), q);
			}
			continue;
		}
		if ((why = parse_header(ls, (size_t)(le - ls), &h))) {
			if (d->cut_end && s == end)
				break; /* a header cut short: pass 2 drops it with a warning */
			return header_error(d, ls, (size_t)(le - ls), why);
		}
		if (h.skip) {
			in_rec = false;
			continue;
		}
		in_rec = true;
		if ((e = find_event(d, h.ev, h.ev_len)) < 0) {
			pevent *ne;

			if (d->nev + 1 >= d->p->lim.max_types)
				return wt_err_set(d->err, WT_ELIMIT,
						  "perf: line %zu: more than %zu events (max_types %zu)",
						  d->line, d->nev, d->p->lim.max_types);
			if (!(ne = realloc(d->ev, (d->nev + 1) * sizeof(*ne))))
				return oom(d);
			d->ev = ne;
			e = (int)d->nev++;
			d->ev[e].name = h.ev;
			d->ev[e].len = h.ev_len;
			d->ev[e].all_period = true;
			d->ev[e].first_period = h.period;
			d->ev[e].type = -1;
		}
		if (!h.has_period)
			d->ev[e].all_period = false;
		if (h.has_time) {
			if (!d->have_time || h.t_ns < d->tmin)
				d->tmin = h.t_ns;
			if (!d->have_time || h.t_ns > d->tmax)
				d->tmax = h.t_ns;
			d->have_time = true;
		}
	}
	return 0;
}

static int add_type(dec *d, const char *type, size_t tlen, const char *unit, int *idx)
{
	char name[256];
	size_t i;
	int rc;

	if (tlen >= sizeof(name))
		tlen = sizeof(name) - 1;
	memcpy(name, type, tlen);
	name[tlen] = 0;
	rc = wt_profile_add_type(d->p, name, unit, NULL, &i, d->err);
	if (rc)
		return wt_err_prefix(d->err, "perf: event %s", name);
	*idx = (int)i;
	return 0;
}

/* Types (docs/formats.md "perf script"): a clock event (cpu-clock,
 * task-clock) with periods → cpu/nanoseconds; other events with periods →
 * EVENT/count (the period is an event count); events without periods get
 * their own EVENT/samples type only when the file has several events; and
 * one total type counting records: cpu/samples when no cpu type exists,
 * else samples/count. The default type is "cpu". */
static int declare_types(dec *d)
{
	bool cpu_taken = false;
	uint32_t id;
	size_t i;
	int rc;

	for (i = 0; i < d->nev; i++) {
		pevent *e = &d->ev[i];
		int clock = is_clock_event(e->name, e->len);

		if (e->all_period) {
			if (clock && !cpu_taken) {
				rc = add_type(d, PERF_CPU_TYPE, 3, "nanoseconds", &e->type);
				cpu_taken = true;
				d->p->period = e->first_period;
				if (!rc && (rc = wt_profile_intern_cstr(d->p, PERF_CPU_TYPE,
									&d->p->period_type, d->err)) == 0)
					rc = wt_profile_intern_cstr(d->p, "nanoseconds",
								    &d->p->period_unit, d->err);
			} else {
				rc = add_type(d, e->name, e->len, clock ? "nanoseconds" : "count",
					      &e->type);
			}
		} else if (d->nev > 1) {
			rc = add_type(d, e->name, e->len, "samples", &e->type);
		} else {
			rc = 0;
		}
		if (rc)
			return rc;
	}
	if (cpu_taken)
		rc = add_type(d, "samples", 7, "count", &d->total_type);
	else
		rc = add_type(d, PERF_CPU_TYPE, 3, "samples", &d->total_type);
	if (rc)
		return rc;
	if ((rc = wt_profile_intern_cstr(d->p, PERF_CPU_TYPE, &id, d->err)))
		return rc;
	d->p->default_type = id;
	if (!(d->vals = calloc(d->p->ntypes, sizeof(*d->vals))) ||
	    !(d->sums = calloc(d->p->ntypes, sizeof(*d->sums))) ||
	    !(d->ids = malloc(d->p->lim.max_stack_depth ? d->p->lim.max_stack_depth * sizeof(*d->ids)
							 : sizeof(*d->ids))))
		return oom(d);
	return 0;
}

static int intern_frame(dec *d, const pframe *f, uint32_t *out)
{
	size_t kn = (size_t)f->sym_len + f->dso_len + f->src_len + 3 + (f->unknown ? 8 : 0);
	wt_frame fr = {WT_NO_FUNCTION, WT_NO_MAPPING, 0, 0};
	wt_function fn = {0, 0, 0, 0, 0};
	const char *name = f->sym;
	size_t name_len = f->sym_len;
	char ubuf[300];
	uint64_t h;
	wt_bytemap_ent *slot;
	char *k;
	int rc;

	if (grow_bytes(&d->key, &d->key_cap, kn))
		return oom(d);
	k = d->key;
	k = put(k, f->sym, f->sym_len);
	*k++ = 0;
	k = put(k, f->dso, f->dso_len);
	*k++ = 0;
	k = put(k, f->src, f->src_len);
	*k++ = 0;
	if (f->unknown) {
		memcpy(k, &f->addr, 8);
		k += 8;
	}
	h = XXH3_64bits(d->key, kn);
	if (wt_bytemap_reserve(&d->cache))
		return oom(d);
	slot = wt_bytemap_find(&d->cache, d->key, kn, h);
	if (slot->used) {
		*out = slot->val;
		return 0;
	}
	if (f->sym_len > d->p->lim.max_string_len || f->dso_len > d->p->lim.max_string_len)
		return wt_err_set(d->err, WT_ELIMIT,
				  "perf: line %zu: symbol or dso of %u bytes exceeds max_string_len %zu",
				  d->line, f->sym_len > f->dso_len ? f->sym_len : f->dso_len,
				  d->p->lim.max_string_len);
	if (f->unknown) {
		/* stackcollapse-perf.pl: "[<dso basename>]", else "[unknown]" */
		const char *b = f->dso;
		size_t bl = f->dso_len;
		const char *sl = bl ? memrchr(b, '/', bl) : NULL;

		if (sl) {
			bl -= (size_t)(sl + 1 - b);
			b = sl + 1;
		}
		if (!bl || (bl == 9 && !memcmp(b, "[unknown]", 9)))
			name_len = (size_t)snprintf(ubuf, sizeof(ubuf), "[unknown]");
		else /* brackets are added to bracketed DSOs too: "[[vdso]]" */
			name_len = (size_t)snprintf(ubuf, sizeof(ubuf), "[%.*s]",
						    (int)(bl > 256 ? 256 : bl), b);
		name = ubuf;
		fr.address = f->addr;
	}
	/* an [unknown] symbol inside a file stays unsymbolized (no function):
	 * it is named "<file>+0x<addr>" and the hub can symbolize it later */
	if (!(f->unknown && f->dso_len && f->dso[0] == '/') &&
	    ((rc = wt_profile_intern(d->p, name, name_len, &fn.name, d->err)) ||
	     (f->src_len && (rc = wt_profile_intern(d->p, f->src, f->src_len, &fn.filename, d->err))) ||
	     (rc = wt_profile_add_function(d->p, &fn, &fr.function, d->err))))
		return wt_err_prefix(d->err, "perf: line %zu", d->line);
	if (f->dso_len && !(f->dso_len == 9 && !memcmp(f->dso, "[unknown]", 9)) &&
	    !(f->dso_len == 7 && !memcmp(f->dso, "inlined", 7))) {
		wt_mapping m = {0, 0, 0, 0, 0};

		if ((rc = wt_profile_intern(d->p, f->dso, f->dso_len, &m.filename, d->err)) ||
		    (rc = wt_profile_add_mapping(d->p, &m, &fr.mapping, d->err)))
			return wt_err_prefix(d->err, "perf: line %zu", d->line);
	}
	fr.line = f->line;
	if ((rc = wt_profile_add_frame(d->p, &fr, out, d->err)))
		return wt_err_prefix(d->err, "perf: line %zu", d->line);
	if (wt_bytemap_put(&d->cache, slot, d->key, kn, h, *out))
		return oom(d);
	return 0;
}

/* Labels: thread = COMM, pid, tid (when given and different from pid). */
static int record_labels(dec *d, uint32_t *ls)
{
	const hdr *h = &d->h;
	size_t kn = h->comm_len + h->pid_len + h->tid_len + 2;
	wt_label lab[3];
	size_t n = 0;
	int rc;

	if (grow_bytes(&d->key, &d->key_cap, kn))
		return oom(d);
	put(put(put(d->key, h->comm, h->comm_len), "", 1), h->pid, h->pid_len)[0] = 0;
	put(d->key + h->comm_len + 2 + h->pid_len, h->tid, h->tid_len);
	if (d->lab_valid && kn == d->lab_len && !memcmp(d->key, d->lab_key, kn)) {
		*ls = d->lab_id;
		return 0;
	}
	memset(lab, 0, sizeof(lab));
	if (h->comm_len) {
		if ((rc = wt_profile_intern_cstr(d->p, "thread", &lab[n].key, d->err)) ||
		    (rc = wt_profile_intern(d->p, h->comm, h->comm_len, &lab[n].str, d->err)))
			goto fail;
		n++;
	}
	if (h->pid_len) {
		if ((rc = wt_profile_intern_cstr(d->p, "pid", &lab[n].key, d->err)) ||
		    (rc = wt_profile_intern(d->p, h->pid, h->pid_len, &lab[n].str, d->err)))
			goto fail;
		n++;
	}
	if (h->tid_len && !(h->tid_len == h->pid_len && !memcmp(h->tid, h->pid, h->pid_len))) {
		if ((rc = wt_profile_intern_cstr(d->p, "tid", &lab[n].key, d->err)) ||
		    (rc = wt_profile_intern(d->p, h->tid, h->tid_len, &lab[n].str, d->err)))
			goto fail;
		n++;
	}
	if ((rc = wt_profile_add_labelset(d->p, lab, n, ls, d->err)))
		goto fail;
	if (grow_bytes(&d->lab_key, &d->lab_cap, kn))
		return oom(d);
	memcpy(d->lab_key, d->key, kn);
	d->lab_len = kn;
	d->lab_id = *ls;
	d->lab_valid = true;
	return 0;
fail:
	return wt_err_prefix(d->err, "perf: line %zu", d->rec_line);
}

static int flush_record(dec *d)
{
	uint32_t stack, ls;
	int64_t t = 0;
	size_t i;
	int e, rc;

	if (!d->in_rec)
		return 0;
	d->in_rec = false;
	for (i = 0; i < d->nfr; i++)
		if ((rc = intern_frame(d, &d->fr[i], &d->ids[i])))
			return rc;
	if ((rc = wt_profile_add_stack(d->p, d->ids, d->nfr, &stack, d->err)) ||
	    (rc = record_labels(d, &ls)))
		return wt_err_prefix(d->err, "perf: sample at line %zu", d->rec_line);
	e = find_event(d, d->h.ev, d->h.ev_len);
	if (e < 0) /* cannot happen: pass 1 saw every header */
		return wt_err_set(d->err, WT_EINVAL, "perf: line %zu: unexpected event", d->rec_line);
	memset(d->vals, 0, d->p->ntypes * sizeof(*d->vals));
	d->vals[d->total_type] = 1;
	if (d->ev[e].type >= 0)
		d->vals[d->ev[e].type] = d->ev[e].all_period ? d->h.period : 1;
	for (i = 0; i < d->p->ntypes; i++)
		if (__builtin_add_overflow(d->sums[i], d->vals[i], &d->sums[i]))
			return wt_err_set(d->err, WT_EINVAL,
					  "perf: line %zu: sum of periods overflows int64", d->rec_line);
	if (d->base) {
		int64_t off = d->h.has_time ? d->h.t_ns - d->tmin : 0;

		if (__builtin_add_overflow(d->base, off, &t))
			return wt_err_set(d->err, WT_EINVAL, "perf: line %zu: time overflows",
					  d->rec_line);
	}
	if ((rc = wt_profile_add_sample(d->p, stack, ls, t, d->vals, d->err)))
		return wt_err_prefix(d->err, "perf: sample at line %zu", d->rec_line);
	return 0;
}

static int add_frame(dec *d, const pframe *f)
{
	if (d->nfr >= d->p->lim.max_stack_depth)
		return wt_err_set(d->err, WT_ELIMIT,
				  "perf: line %zu: stack of the sample at line %zu is deeper than "
				  "max_stack_depth %zu",
				  d->line, d->rec_line, d->p->lim.max_stack_depth);
	if (d->nfr >= d->fr_cap) {
		size_t ncap = d->fr_cap ? d->fr_cap * 2 : 64;
		pframe *nf = realloc(d->fr, ncap * sizeof(*nf));

		if (!nf)
			return oom(d);
		d->fr = nf;
		d->fr_cap = ncap;
	}
	d->fr[d->nfr++] = *f;
	return 0;
}

/* The last record of the input is incomplete: leave it out, and say so. */
static int drop_partial(dec *d)
{
	d->in_rec = false;
	wt_profile_warn(d->p,
			"perf: line %zu: the last sample is cut short (%s): dropped", d->rec_line,
			d->cut_end ? "the input ends inside a line"
				   : "no blank line ends it, as perf script ends every sample");
	return 0;
}

/* Pass 2. */
static int decode_records(dec *d, const char *s, const char *end)
{
	const char *ls, *le;
	int rc;

	d->line = 0;
	while (next_line(&s, end, &ls, &le)) {
		const char *q;
		pframe f;

		d->line++;
		if (ls == le) {
			d->nblank_ended += d->in_rec;
			if ((rc = flush_record(d)))
				return rc;
			continue;
		}
		if (*ls == '#')
			continue;
		if (!is_blank(*ls)) {
			if ((rc = flush_record(d)))
				return rc;
			if (parse_header(ls, (size_t)(le - ls), &d->h)) { /* pass 1 checked it */
				if (d->cut_end && s == end) {
					d->rec_line = d->line;
					return drop_partial(d);
				}
				return header_error(d, ls, (size_t)(le - ls), "changed");
			}
			if (d->h.skip)
				continue;
			d->in_rec = true;
			d->rec_line = d->line;
			d->nfr = 0;
			/* no call graph: the sampled IP may follow the event */
			if (d->h.rest_len && !parse_frame(d->h.rest, d->h.rest_len, &f) &&
			    (rc = add_frame(d, &f)))
				return rc;
			continue;
		}
		if (!d->in_rec)
			continue;
		for (q = ls; q < le && is_blank(*q); q++)
			;
		if (!parse_frame(q, (size_t)(le - q), &f)) {
			if ((rc = add_frame(d, &f)))
				return rc;
		} else if (d->nfr && !d->fr[d->nfr - 1].src_len) {
			const char *file;
			size_t flen;
			int64_t line;

			if (!parse_srcline(q, (size_t)(le - q), &file, &flen, &line) &&
			    flen <= d->p->lim.max_string_len) {
				d->fr[d->nfr - 1].src = file;
				d->fr[d->nfr - 1].src_len = (uint32_t)flen;
				d->fr[d->nfr - 1].line = line;
			}
		}
		/* other indented lines (e.g. -F +insn, brstack) are ignored */
	}
	/* perf script ends every record that has a call graph with a blank
	 * line: a last record without one (or without its final newline) was
	 * cut short, and its stack is partial */
	if (d->in_rec && (d->cut_end || d->nblank_ended))
		return drop_partial(d);
	return flush_record(d);
}

int wt_perf_script_decode(const uint8_t *buf, size_t len, const wt_limits *lim,
			  int64_t time_ns, wt_profile **out, wt_err *err)
{
	const char *s = (const char *)buf, *end = s + len;
	size_t skip;
	dec d;
	int rc;

	*out = NULL;
	memset(&d, 0, sizeof(d));
	d.err = err;
	d.base = time_ns;
	if (!(d.p = wt_profile_new(lim)))
		return wt_err_set(err, WT_ENOMEM, "perf: out of memory");
	if ((rc = wt_text_input_check("perf", s, len, &d.p->lim, &skip, err)))
		goto cleanup;
	s += skip;
	d.cut_end = end > s && end[-1] != '\n';
	if ((rc = scan_headers(&d, s, end)))
		goto cleanup;
	if (!d.nev) {
		rc = wt_err_set(err, WT_EINVAL, "perf: no sample header line in %zu bytes", len);
		goto cleanup;
	}
	if ((rc = declare_types(&d)))
		goto cleanup;
	d.p->time_ns = time_ns;
	if (d.have_time)
		d.p->duration_ns = d.tmax - d.tmin;
	if ((rc = decode_records(&d, s, end)))
		goto cleanup;
	*out = d.p;
	d.p = NULL;
cleanup:
	wt_profile_free(d.p);
	free(d.ev);
	free(d.fr);
	free(d.ids);
	free(d.vals);
	free(d.sums);
	wt_bytemap_free(&d.cache);
	free(d.key);
	free(d.lab_key);
	return rc;
}
