/*
 * folded.c — decoder and encoder for collapsed ("folded") stack text.
 *
 * One sample per line: `frame;frame;...;frame COUNT`, root first. The count
 * is the LAST blank-separated token, so frames may contain spaces. Dialects:
 *   - Brendan Gregg stackcollapse-*.pl, inferno, async-profiler collapsed,
 *     py-spy, rbspy, dotnet-trace folded: frames are kept exactly as written
 *     (annotations such as _[k] _[j] _[i], <addr> suffixes and pid/tid
 *     prefixed first frames like "java-1234" or "emulator-?/4152" included);
 *   - grafana/jfr-parser dumps, whose count is written "[N]";
 *   - Austin 3.x: `# key: value` headers, `P<pid>;T<tid>;file:func:line;...`;
 *     P/T become the labels "pid"/"thread", frames become (func, file, line);
 *     "# mode: wall|cpu" (when the caller named no type) selects wall/cpu in
 *     nanoseconds (Austin writes microseconds);
 *   - Austin 1.x: `Thread <hex>;func (file);L<line>;...` and the alt format
 *     `func (file:line)`; "Thread" becomes the "thread" label.
 * Empty frames (`a;;b`, a leading or trailing ';') are dropped: no tool emits
 * them on purpose and an empty name would only draw a blank box. A line with
 * a count and no frames is an empty stack (e.g. an idle Austin thread).
 *
 * Frames are interned through a per-decode cache keyed by the raw frame text
 * (xxh3), so each distinct frame string is parsed and interned once.
 */
#include "folded.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "hindex.h"
#include "text_input.h"

#define FOLDED_DEFAULT_TYPE "cpu"
#define FOLDED_DEFAULT_UNIT "samples"
#define NS_PER_SEC 1000000000LL
#define NS_PER_US 1000LL

/* ---- decoder state ---------------------------------------------------------- */

enum dialect { D_PLAIN = 0, D_AUSTIN3, D_AUSTIN1 };

/* Frame cache entry: raw frame text (in the input, which outlives the
 * decode: nothing is copied) and its frame id. With the 8-byte-slot index
 * over them, 16 + ~11 bytes per distinct frame. */
typedef struct fc_ent {
	const char *s;
	uint32_t len, frame;
} fc_ent;

typedef struct fc_key {
	const char *s;
	size_t n;
} fc_key;

typedef struct dec {
	wt_profile *p;
	const wt_folded_opts *opts;
	wt_err *err;
	fc_ent *fc;     /* raw frame text → frame id: entries ... */
	size_t nfc, fc_cap;
	wt_hindex fci;  /* ... and their index */
	uint32_t *ids; /* frame ids of the current line, root first */
	size_t ids_cap;
	char *scratch; /* NUL-terminated copies (file names) */
	size_t scratch_cap;
	size_t line;
	bool typed;          /* sample type declared */
	bool austin_header;  /* saw "# austin: ..." */
	const char *austin_mode;
	int64_t mult_num, mult_den; /* every count is scaled by num/den */
	int64_t sum;
	int64_t raw_sum;     /* unscaled counts (saturating), the producer's samples */
	int64_t nsample_lines;
	/* last labelset, reused while consecutive lines name the same thread */
	const char *lab_p, *lab_t;
	size_t lab_plen, lab_tlen;
	uint32_t lab_id;
	bool lab_valid;
} dec;

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return 0;
	return 1;
}

static int scratch_cstr(dec *d, const char *s, size_t n, const char **out)
{
	if (n + 1 > d->scratch_cap) {
		size_t ncap = d->scratch_cap ? d->scratch_cap : 256;
		char *ns;

		while (ncap < n + 1)
			ncap *= 2;
		ns = realloc(d->scratch, ncap);
		if (!ns)
			return wt_err_set(d->err, WT_ENOMEM, "folded: out of memory");
		d->scratch = ns;
		d->scratch_cap = ncap;
	}
	memcpy(d->scratch, s, n);
	d->scratch[n] = 0;
	*out = d->scratch;
	return 0;
}

/* Parse a non-negative decimal integer (or "[N]") into *v.
 * Returns 0, or 1 = not a number, 2 = negative, 3 = overflow. */
static int parse_count(const char *s, size_t n, int64_t *v)
{
	uint64_t acc = 0;
	size_t i;

	if (n >= 3 && s[0] == '[' && s[n - 1] == ']') { /* jfr-parser dumps */
		s++;
		n -= 2;
	}
	if (n >= 2 && s[0] == '-' && all_digits(s + 1, n - 1))
		return 2;
	if (n >= 2 && s[0] == '+')
		s++, n--;
	if (!all_digits(s, n))
		return 1;
	for (i = 0; i < n; i++) {
		unsigned dgt = (unsigned)(s[i] - '0');

		if (acc > ((uint64_t)INT64_MAX - dgt) / 10)
			return 3;
		acc = acc * 10 + dgt;
	}
	*v = (int64_t)acc;
	return 0;
}

/* "# key: value" header; only Austin's are interpreted. */
static void parse_header(dec *d, const char *s, size_t n)
{
	const char *k, *colon;
	size_t klen;

	while (n && (*s == '#' || *s == ' ')) {
		s++;
		n--;
	}
	colon = memchr(s, ':', n);
	if (!colon)
		return;
	k = s;
	klen = (size_t)(colon - s);
	s = colon + 1;
	n -= klen + 1;
	while (n && *s == ' ')
		s++, n--;
	if (klen == 6 && !memcmp(k, "austin", 6)) {
		d->austin_header = true;
	} else if (klen == 4 && !memcmp(k, "mode", 4) && d->austin_header) {
		if (n == 4 && !memcmp(s, "wall", 4))
			d->austin_mode = "wall";
		else if (n == 3 && !memcmp(s, "cpu", 3))
			d->austin_mode = "cpu";
	}
}

static int declare_type(dec *d)
{
	const char *type = d->opts ? d->opts->type : NULL;
	const char *unit = d->opts ? d->opts->unit : NULL;
	int64_t rate = d->opts ? d->opts->sample_rate : 0;
	size_t idx;
	int rc;

	d->mult_num = 1;
	d->mult_den = 1;
	if (!type && d->austin_mode) {
		/* Austin's wall/cpu counts are microseconds. */
		type = d->austin_mode;
		unit = "nanoseconds";
		d->mult_num = NS_PER_US;
	} else {
		if (!type)
			type = FOLDED_DEFAULT_TYPE;
		if (!unit)
			unit = FOLDED_DEFAULT_UNIT;
		if (rate > 0 && !strcmp(unit, "nanoseconds")) {
			/* counts are samples at `rate` Hz */
			d->mult_num = NS_PER_SEC;
			d->mult_den = rate;
			d->p->period = NS_PER_SEC / rate;
			if ((rc = wt_profile_intern_cstr(d->p, type, &d->p->period_type, d->err)) ||
			    (rc = wt_profile_intern_cstr(d->p, unit, &d->p->period_unit, d->err)))
				return rc;
		}
	}
	rc = wt_profile_add_type(d->p, type, unit, NULL, &idx, d->err);
	if (rc)
		return wt_err_prefix(d->err, "folded");
	d->typed = true;
	return 0;
}

/* Split "func (file:line)" / "func (file)" (Austin 1.x). Returns 1 if matched. */
static int split_paren(const char *s, size_t n, size_t *fn_len, const char **file,
		       size_t *file_len, int64_t *line)
{
	const char *open;
	size_t i;

	if (n < 4 || s[n - 1] != ')')
		return 0;
	open = NULL;
	for (i = n - 1; i > 0; i--) {
		if (s[i - 1] == ' ' && s[i] == '(') {
			open = s + i;
			break;
		}
	}
	if (!open)
		return 0;
	*fn_len = (size_t)(open - 1 - s);
	*file = open + 1;
	*file_len = (size_t)(s + n - 1 - *file);
	*line = 0;
	/* optional ":line" at the end of the file part */
	for (i = *file_len; i > 0 && is_digit((*file)[i - 1]); i--)
		;
	if (i > 0 && i < *file_len && (*file)[i - 1] == ':') {
		int64_t v;

		if (!parse_count(*file + i, *file_len - i, &v))
			*line = v;
		*file_len = i - 1;
	}
	return *fn_len > 0;
}

/* Split "file:func:line" (Austin 3.x), scanning from the right so file may
 * contain ':'. Returns 1 if matched. */
static int split_colon3(const char *s, size_t n, const char **fn, size_t *fn_len,
			size_t *file_len, int64_t *line)
{
	size_t i = n, c2, c1;

	while (i > 0 && is_digit(s[i - 1]))
		i--;
	if (i == n || i == 0 || s[i - 1] != ':')
		return 0;
	c2 = i - 1;
	for (c1 = c2; c1 > 0 && s[c1 - 1] != ':'; c1--)
		;
	if (c1 == 0 || c1 == c2)
		return 0;
	c1--; /* index of the first ':' */
	if (parse_count(s + c2 + 1, n - c2 - 1, line))
		return 0;
	*fn = s + c1 + 1;
	*fn_len = c2 - c1 - 1;
	*file_len = c1;
	return *fn_len > 0;
}

static int fc_eq(const void *ctx, uint32_t id, const void *key)
{
	const fc_ent *e = &((const dec *)ctx)->fc[id];
	const fc_key *k = key;

	return e->len == k->n && !memcmp(e->s, k->s, k->n);
}

/* Intern the frame whose raw text is s[0..n) (key) and whose symbol text is
 * s[0..sym_n) with an optional explicit line (Austin 1.x "L<n>" frames). */
static int intern_frame(dec *d, enum dialect dl, const char *s, size_t n, size_t sym_n,
			int64_t xline, uint32_t *out)
{
	uint64_t h = XXH3_64bits(s, n);
	fc_key key = {s, n};
	size_t slot;
	uint32_t ci;
	wt_frame fr = {0, WT_NO_MAPPING, 0, 0};
	const char *fn = s, *file = NULL, *fcstr = NULL;
	size_t fn_len = sym_n, file_len = 0;
	int64_t line = 0;
	int rc;

	rc = wt_hindex_lookup(&d->fci, h, &key, fc_eq, d, &ci, &slot);
	if (rc == 1) {
		*out = d->fc[ci].frame;
		return 0;
	}
	if (rc || n > UINT32_MAX)
		return wt_err_set(d->err, WT_ENOMEM, "folded: out of memory");
	if (sym_n > d->p->lim.max_string_len)
		return wt_err_set(d->err, WT_ELIMIT,
				  "folded: line %zu: frame of %zu bytes exceeds max_string_len %zu",
				  d->line, sym_n, d->p->lim.max_string_len);
	if (dl == D_AUSTIN3) {
		const char *f2;
		size_t f2len;

		if (split_colon3(s, sym_n, &f2, &f2len, &file_len, &line)) {
			file = s;
			fn = f2;
			fn_len = f2len;
		}
	} else if (dl == D_AUSTIN1) {
		const char *f;
		size_t fl, fnl;

		if (split_paren(s, sym_n, &fnl, &f, &fl, &line)) {
			fn_len = fnl;
			file = f;
			file_len = fl;
		}
	}
	if (xline)
		line = xline;
	if (file && (rc = scratch_cstr(d, file, file_len, &fcstr)))
		return rc;
	rc = wt_profile_add_function_named(d->p, fn, fn_len, fcstr, &fr.function, d->err);
	if (rc)
		return wt_err_prefix(d->err, "folded: line %zu", d->line);
	fr.line = line;
	rc = wt_profile_add_frame(d->p, &fr, out, d->err);
	if (rc)
		return wt_err_prefix(d->err, "folded: line %zu", d->line);
	if (d->nfc == d->fc_cap) {
		size_t nc = d->fc_cap ? d->fc_cap * 2 : 1024;
		fc_ent *ne = realloc(d->fc, nc * sizeof(*ne));

		if (!ne)
			return wt_err_set(d->err, WT_ENOMEM, "folded: out of memory");
		d->fc = ne;
		d->fc_cap = nc;
	}
	d->fc[d->nfc].s = s;
	d->fc[d->nfc].len = (uint32_t)n;
	d->fc[d->nfc].frame = *out;
	wt_hindex_put(&d->fci, slot, h, (uint32_t)d->nfc++);
	return 0;
}

/* Labelset for Austin's P<pid> / T<tid> / "Thread <hex>" prefixes. */
static int thread_labels(dec *d, const char *pv, size_t plen, const char *tv, size_t tlen,
			 uint32_t *ls)
{
	wt_label lab[2];
	size_t n = 0;
	int rc;

	if (d->lab_valid && plen == d->lab_plen && tlen == d->lab_tlen &&
	    (!plen || !memcmp(pv, d->lab_p, plen)) && !memcmp(tv, d->lab_t, tlen)) {
		*ls = d->lab_id;
		return 0;
	}
	memset(lab, 0, sizeof(lab));
	if (plen) {
		if ((rc = wt_profile_intern_cstr(d->p, "pid", &lab[n].key, d->err)) ||
		    (rc = wt_profile_intern(d->p, pv, plen, &lab[n].str, d->err)))
			return wt_err_prefix(d->err, "folded: line %zu", d->line);
		n++;
	}
	if (tlen) {
		if ((rc = wt_profile_intern_cstr(d->p, "thread", &lab[n].key, d->err)) ||
		    (rc = wt_profile_intern(d->p, tv, tlen, &lab[n].str, d->err)))
			return wt_err_prefix(d->err, "folded: line %zu", d->line);
		n++;
	}
	rc = wt_profile_add_labelset(d->p, lab, n, ls, d->err);
	if (rc)
		return wt_err_prefix(d->err, "folded: line %zu", d->line);
	d->lab_p = pv;
	d->lab_plen = plen;
	d->lab_t = tv;
	d->lab_tlen = tlen;
	d->lab_id = *ls;
	d->lab_valid = true;
	return 0;
}

static int decode_line(dec *d, const char *s, size_t n)
{
	const char *sep, *st, *end, *pv = NULL, *tv = NULL;
	size_t stn, nids = 0, plen = 0, tlen = 0, maxd = d->p->lim.max_stack_depth;
	enum dialect dl = D_PLAIN;
	int64_t count, v;
	uint32_t stack, ls = 0;
	int rc;

	/* the count is the last blank-separated token */
	for (sep = s + n; sep > s && !(sep[-1] == ' ' || sep[-1] == '\t'); sep--)
		;
	if (sep == s)
		return wt_err_set(d->err, WT_EINVAL, "folded: line %zu: missing sample count", d->line);
	switch (parse_count(sep, (size_t)(s + n - sep), &count)) {
	case 0:
		break;
	case 2:
		return wt_err_set(d->err, WT_EINVAL, "folded: line %zu: negative sample count %.*s",
				  d->line, (int)(s + n - sep > 40 ? 40 : s + n - sep), sep);
	case 3:
		return wt_err_set(d->err, WT_EINVAL,
				  "folded: line %zu: sample count %.*s overflows int64", d->line,
				  (int)(s + n - sep > 40 ? 40 : s + n - sep), sep);
	default:
		return wt_err_set(d->err, WT_EINVAL,
				  "folded: line %zu: missing sample count (last token \"%.*s\" is not a number)",
				  d->line, (int)(s + n - sep > 40 ? 40 : s + n - sep), sep);
	}
	if (!d->typed && (rc = declare_type(d)))
		return rc;
	/* scale, with overflow detection */
	if (d->mult_num != 1 || d->mult_den != 1) {
		__int128 x = (__int128)count * d->mult_num;

		x = (x + d->mult_den / 2) / d->mult_den;
		if (x > INT64_MAX)
			return wt_err_set(d->err, WT_EINVAL,
					  "folded: line %zu: scaled sample count overflows int64", d->line);
		v = (int64_t)x;
	} else {
		v = count;
	}
	if (__builtin_add_overflow(d->sum, v, &d->sum))
		return wt_err_set(d->err, WT_EINVAL,
				  "folded: line %zu: sum of sample counts overflows int64", d->line);
	if (__builtin_add_overflow(d->raw_sum, count, &d->raw_sum))
		d->raw_sum = INT64_MAX;
	d->nsample_lines++;

	st = s;
	end = sep;
	while (end > st && is_blank(end[-1]))
		end--;
	while (st < end && is_blank(*st))
		st++;
	stn = (size_t)(end - st);

	/* Austin prefixes → labels */
	if (stn >= 2 && st[0] == 'P' && is_digit(st[1])) {
		const char *semi = memchr(st, ';', stn), *pe = semi ? semi : end, *q;

		if (all_digits(st + 1, (size_t)(pe - st - 1)) && semi && pe + 1 < end && pe[1] == 'T') {
			const char *t = pe + 1, *te = memchr(t, ';', (size_t)(end - t));

			if (!te)
				te = end;
			pv = st + 1;
			plen = (size_t)(pe - pv);
			tv = t + 1;
			tlen = (size_t)(te - tv);
			for (q = tv; q < te && (is_hex(*q) || *q == ':'); q++)
				;
			if (tlen && q == te) {
				dl = D_AUSTIN3;
				st = te;
			} else {
				pv = tv = NULL;
				plen = tlen = 0;
			}
		}
	} else if (stn > 7 && !memcmp(st, "Thread ", 7)) {
		const char *semi = memchr(st, ';', stn), *te = semi ? semi : end, *q;

		for (q = st + 7; q < te && is_hex(*q); q++)
			;
		if (q == te && q > st + 7) {
			dl = D_AUSTIN1;
			tv = st + 7;
			tlen = (size_t)(te - tv);
			st = te;
		}
	}
	if (tlen && (rc = thread_labels(d, pv, plen, tv, tlen, &ls)))
		return rc;

	/* split frames, root first */
	while (st < end) {
		const char *semi = memchr(st, ';', (size_t)(end - st));
		const char *fe = semi ? semi : end, *ke = fe;
		int64_t xline = 0;
		uint32_t id;

		if (fe == st) { /* empty frame: dropped */
			st = fe + 1;
			continue;
		}
		if (dl == D_AUSTIN1 && semi && semi + 2 < end && semi[1] == 'L' && is_digit(semi[2])) {
			/* "func (file);L<line>": the L frame is this frame's line */
			const char *l = semi + 1, *le = memchr(l, ';', (size_t)(end - l));

			if (!le)
				le = end;
			if (all_digits(l + 1, (size_t)(le - l - 1)) &&
			    !parse_count(l + 1, (size_t)(le - l - 1), &xline)) {
				ke = le;
				semi = le < end ? le : NULL;
			}
		}
		if (nids >= maxd)
			return wt_err_set(d->err, WT_ELIMIT,
					  "folded: line %zu: stack deeper than max_stack_depth %zu",
					  d->line, maxd);
		if (nids >= d->ids_cap) {
			size_t ncap = d->ids_cap ? d->ids_cap * 2 : 64;
			uint32_t *ni = realloc(d->ids, ncap * sizeof(*ni));

			if (!ni)
				return wt_err_set(d->err, WT_ENOMEM, "folded: out of memory");
			d->ids = ni;
			d->ids_cap = ncap;
		}
		rc = intern_frame(d, dl, st, (size_t)(ke - st), (size_t)(fe - st), xline, &id);
		if (rc)
			return rc;
		d->ids[nids++] = id;
		st = semi ? semi + 1 : end;
	}
	/* leaf first for the model */
	for (size_t i = 0; i < nids / 2; i++) {
		uint32_t t = d->ids[i];

		d->ids[i] = d->ids[nids - 1 - i];
		d->ids[nids - 1 - i] = t;
	}
	rc = wt_profile_add_stack(d->p, d->ids, nids, &stack, d->err);
	if (rc)
		return wt_err_prefix(d->err, "folded: line %zu", d->line);
	rc = wt_profile_add_sample(d->p, stack, ls, 0, &v, d->err);
	if (rc)
		return wt_err_prefix(d->err, "folded: line %zu", d->line);
	return 0;
}

int wt_folded_decode(const uint8_t *buf, size_t len, const wt_folded_opts *opts,
		     wt_profile **out, wt_err *err)
{
	dec d;
	const char *s = buf ? (const char *)buf : "", *end = s + (buf ? len : 0);
	size_t skip;
	int rc = 0;

	*out = NULL;
	memset(&d, 0, sizeof(d));
	d.opts = opts;
	d.err = err;
	d.p = wt_profile_new(opts ? opts->lim : NULL);
	if (!d.p)
		return wt_err_set(err, WT_ENOMEM, "folded: out of memory");
	if ((rc = wt_text_input_check("folded", s, len, &d.p->lim, &skip, err)))
		goto cleanup;
	s += skip;
	if (opts && opts->time_ns)
		d.p->time_ns = opts->time_ns;
	{
		/* each line is at most one stack and one sample: size those
		 * tables once (wt_profile_reserve) instead of doubling them */
		wt_profile_sizes n = {0};
		for (const char *q = s; q < end && (q = memchr(q, '\n', (size_t)(end - q))); q++)
			n.stacks++;
		n.samples = ++n.stacks;
		/* frames: a guess (a large profile has about one new leaf a
		 * line), so the indexes are not doubled past it by a few
		 * entries; reserved slots that stay empty are never touched,
		 * so an over-guess costs address space, not memory */
		n.strings = n.functions = n.frames = n.stacks + n.stacks / 8 + 64;
		if (wt_profile_reserve(d.p, &n) || wt_hindex_reserve(&d.fci, n.frames)) {
			rc = wt_err_set(err, WT_ENOMEM, "folded: out of memory");
			goto cleanup;
		}
	}
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end, *ls = s;

		d.line++;
		while (le > s && is_blank(le[-1]))
			le--;
		while (ls < le && (*ls == ' ' || *ls == '\t'))
			ls++;
		/* Leading blanks stay: " 21" is an empty stack with count 21
		 * (what the encoder writes for one). A comment has its '#' in
		 * column 0, so " #x;y 1" is a stack whose root is "#x". */
		if (ls == le) {
			/* blank */
		} else if (*s == '#') {
			if (!d.typed)
				parse_header(&d, ls, (size_t)(le - ls));
		} else if ((rc = decode_line(&d, s, (size_t)(le - s)))) {
			goto cleanup;
		}
		s = nl ? nl + 1 : end;
	}
	if (!d.typed && (rc = declare_type(&d)))
		goto cleanup;
	/* Austin's time modes write one line per sample with its duration as
	 * the count; everyone else writes how many samples had the stack. */
	d.p->source_samples = d.austin_mode ? d.nsample_lines : d.raw_sum;
	*out = d.p;
	d.p = NULL;
cleanup:
	wt_profile_free(d.p);
	free(d.fc);
	wt_hindex_free(&d.fci);
	free(d.ids);
	free(d.scratch);
	return rc;
}

/* ---- encoder ------------------------------------------------------------------ */

/* Append a frame name with the two bytes that would break the format
 * replaced: ';' separates frames, '\n' ends the line. */
static void put_name(wt_buf *out, const char *name)
{
	const char *q = name;

	for (;;) {
		size_t k = strcspn(q, ";\n\r");

		wt_buf_append(out, q, k);
		q += k;
		if (!*q)
			break;
		wt_buf_putc(out, *q == ';' ? ':' : ' ');
		q++;
	}
}

int wt_folded_encode(const wt_profile *p, size_t type_idx, wt_buf *out, wt_err *err)
{
	int64_t *sum = NULL;
	uint8_t *seen = NULL;
	char nbuf[256];
	size_t i;
	int rc = 0;

	if (type_idx >= p->ntypes && p->nsamples)
		return wt_err_set(err, WT_EINVAL, "folded: sample type index %zu out of range (%zu types)",
				  type_idx, p->ntypes);
	if (!p->nstacks)
		return 0;
	sum = calloc(p->nstacks, sizeof(*sum));
	seen = calloc(p->nstacks, 1);
	if (!sum || !seen) {
		rc = wt_err_set(err, WT_ENOMEM, "folded: out of memory");
		goto cleanup;
	}
	for (i = 0; i < p->nsamples; i++) {
		uint32_t s = p->samples[i].stack;

		if (__builtin_add_overflow(sum[s], wt_profile_values(p, i)[type_idx], &sum[s])) {
			rc = wt_err_set(err, WT_EINVAL, "folded: stack %u: value overflows int64", s);
			goto cleanup;
		}
		seen[s] = 1;
	}
	for (i = 0; i < p->nstacks; i++) {
		const uint32_t *fr;
		size_t n, j;

		if (!seen[i])
			continue;
		if (sum[i] < 0) {
			rc = wt_err_set(err, WT_EINVAL,
					"folded: stack %zu has negative value %lld; folded counts are non-negative",
					i, (long long)sum[i]);
			goto cleanup;
		}
		fr = wt_profile_stack(p, (uint32_t)i, &n);
		for (j = n; j > 0; j--) {
			const char *name = wt_profile_frame_name(p, fr[j - 1], nbuf, sizeof(nbuf));

			/* a root that would read back as a comment or a BOM */
			if (j == n && (name[0] == '#' || !strncmp(name, "\xEF\xBB\xBF", 3)))
				wt_buf_putc(out, ' ');
			put_name(out, name);
			if (j > 1)
				wt_buf_putc(out, ';');
		}
		wt_buf_printf(out, " %lld\n", (long long)sum[i]);
	}
	if (out->oom)
		rc = wt_err_set(err, WT_ENOMEM, "folded: out of memory");
cleanup:
	free(sum);
	free(seen);
	return rc;
}
