/*
 * selection.c — SQL and loaders for one selection of samples (see
 * selection.h). Same WHERE semantics as http_query.c: host, thread,
 * container, span_id and trace_id are columns, other labels are looked up
 * in the Nested label arrays.
 */
#include "selection.h"

#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "label_selector.h"

#define MAX_FRAMES 4096

static const char *const column_labels[] = {"host", "thread", "container", "span_id", "trace_id"};
#define NCOL (sizeof(column_labels) / sizeof(column_labels[0]))

static void date_str(int64_t ns, char out[11])
{
	time_t sec = (time_t)(ns / 1000000000LL);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(out, 11, "%Y-%m-%d", &tm);
}

void hub_sel_where(wt_buf *w, const hub_sel *s, const char *type)
{
	const hub_params *hp = &s->hp;
	char d0[11], d1[11];
	size_t i, j;

	date_str(s->from, d0);
	date_str(s->until, d1);
	wt_buf_puts(w, " WHERE project = ");
	hub_sql_quote(w, s->project);
	if (hp->service) {
		wt_buf_puts(w, " AND service = ");
		hub_sql_quote(w, hp->service);
	}
	if (type) {
		wt_buf_puts(w, " AND sample_type = ");
		hub_sql_quote(w, type);
	}
	wt_buf_printf(w, " AND date >= '%s' AND date <= '%s' AND time_ns >= %lld AND time_ns < %lld",
		      d0, d1, (long long)s->from, (long long)s->until);
	for (i = 0; i < hp->nlabels; i++) {
		const char *k = hp->labels[i].key;
		for (j = 0; j < NCOL; j++)
			if (!strcmp(k, column_labels[j]))
				break;
		if (j < NCOL) {
			wt_buf_printf(w, " AND %s = ", column_labels[j]);
		} else {
			wt_buf_puts(w, " AND labels.value[indexOf(labels.key, ");
			hub_sql_quote(w, k);
			wt_buf_puts(w, ")] = ");
		}
		hub_sql_quote(w, hp->labels[i].value);
	}
	hub_lsel_where(w, s->lsel);
}

static int first_field(void *ctx, char **f, size_t n)
{
	char *dst = ctx;
	if (n >= 1 && !dst[0])
		snprintf(dst, HUB_TYPE_MAX, "%s", f[0]);
	return 0;
}

int hub_sel_resolve(hub_ch *ch, hub_sel *s, int64_t now_ns, int default_range_s, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc = 0;

	s->until = s->hp.has_until ? s->hp.until_ns : now_ns;
	s->from = s->hp.has_from ? s->hp.from_ns : s->until - (int64_t)default_range_s * 1000000000LL;
	if (s->from < 0)
		s->from = 0;
	s->type[0] = '\0';
	if (s->hp.type) {
		snprintf(s->type, sizeof(s->type), "%s", s->hp.type);
		return 0;
	}
	wt_buf_puts(&sql, "SELECT sample_type FROM profile_samples_v1");
	hub_sel_where(&sql, s, NULL);
	wt_buf_puts(&sql, " GROUP BY sample_type ORDER BY sample_type = 'cpu' DESC, min(time_ns), sample_type"
		    " LIMIT 1 FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 1, first_field, s->type);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

/* Rewrite the stack names[offs[0..*n)] into out with every symbolizable
 * frame replaced by its inline chain (offs[] then index into out; at most
 * MAX_FRAMES frames, the rest dropped like over-deep stacks). */
static int symbolize(hub_ch *ch, const hub_sel *s, const wt_buf *names, size_t *offs, uint64_t *n,
		     wt_buf *out, wt_err *err)
{
	size_t in[MAX_FRAMES], m = 0, i;
	int rc;

	memcpy(in, offs, (size_t)*n * sizeof(*offs));
	wt_buf_reset(out);
	for (i = 0; i < *n && m < MAX_FRAMES; i++) {
		const char *f = (const char *)names->data + in[i];
		size_t len = strlen(f), before = out->len, k = 0;

		if ((rc = hub_symbols_expand(s->syms, ch, s->project, f, len, out, &k, err)))
			return rc;
		if (!k) {
			wt_buf_append(out, f, len + 1);
			k = 1;
		}
		if (out->oom)
			break;
		for (size_t j = 0, p = before; j < k && m < MAX_FRAMES; j++) {
			offs[m++] = p;
			p += strlen((const char *)out->data + p) + 1;
		}
	}
	if (out->oom)
		return wt_err_set(err, WT_ENOMEM, "out of memory symbolizing");
	*n = m;
	return 0;
}

int hub_sel_load_flame(hub_ch *ch, const hub_sel *s, wt_flame *f, char **unit, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT, names = WT_BUF_INIT, sym = WT_BUF_INIT;
	hub_rb_reader rd;
	size_t *offs = NULL;
	const char **frames = NULL;
	int rc = 0;

	*unit = NULL;
	if (!s->type[0])
		return 0;
	offs = malloc(MAX_FRAMES * sizeof(*offs));
	frames = malloc(MAX_FRAMES * sizeof(*frames));
	if (!offs || !frames) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	wt_buf_puts(&sql, "SELECT s.stack_id, s.v, st.frames, s.unit FROM (SELECT stack_id, sum(value) AS v,"
		    " any(unit) AS unit FROM profile_samples_v1");
	hub_sel_where(&sql, s, s->type);
	wt_buf_puts(&sql, " GROUP BY stack_id HAVING v != 0) AS s ANY LEFT JOIN (SELECT stack_id, frames"
		    " FROM profile_stacks_v1 WHERE project = ");
	hub_sql_quote(&sql, s->project);
	wt_buf_puts(&sql, ") AS st USING stack_id FORMAT RowBinary");
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	hub_rb_reader_init(&rd, res.data, res.len);
	while (!hub_rb_eof(&rd)) {
		uint64_t sid, nframes, i;
		int64_t v;
		const char *str, *u;
		size_t sl, ul;

		if (hub_rb_read_u64(&rd, &sid) || hub_rb_read_i64(&rd, &v) ||
		    hub_rb_read_varuint(&rd, &nframes))
			goto bad;
		wt_buf_reset(&names);
		for (i = 0; i < nframes; i++) {
			if (hub_rb_read_str(&rd, &str, &sl))
				goto bad;
			if (i < MAX_FRAMES) {
				offs[i] = names.len;
				wt_buf_append(&names, str, sl);
				wt_buf_putc(&names, '\0');
			}
		}
		if (hub_rb_read_str(&rd, &u, &ul))
			goto bad;
		if (names.oom) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
			goto out;
		}
		if (nframes > MAX_FRAMES)
			nframes = MAX_FRAMES;
		if (s->syms) {
			if ((rc = symbolize(ch, s, &names, offs, &nframes, &sym, err)))
				goto out;
			for (i = 0; i < nframes; i++)
				frames[i] = (const char *)sym.data + offs[i];
		} else {
			for (i = 0; i < nframes; i++)
				frames[i] = (const char *)names.data + offs[i];
		}
		if (nframes == 0) {
			frames[0] = "[unknown stack]";
			nframes = 1;
		}
		if (!*unit && !(*unit = strndup(u, ul))) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = wt_flame_add(f, frames, (size_t)nframes, v))) {
			rc = wt_err_set(err, rc, "building the view failed");
			goto out;
		}
	}
	goto out;
bad:
	rc = wt_err_set(err, WT_EIO, "clickhouse: truncated RowBinary result at byte %zu",
			(size_t)(rd.p - res.data));
out:
	free(offs);
	free(frames);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	wt_buf_free(&names);
	wt_buf_free(&sym);
	return rc;
}

static int int_field(void *ctx, char **f, size_t n)
{
	int64_t *dst = ctx;
	if (n >= 1)
		*dst = strtoll(f[0], NULL, 10);
	return 0;
}

int hub_sel_total(hub_ch *ch, const hub_sel *s, const char *type, int64_t *out, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc;

	*out = 0;
	wt_buf_puts(&sql, "SELECT sum(value) FROM profile_samples_v1");
	hub_sel_where(&sql, s, type);
	wt_buf_puts(&sql, " FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 1, int_field, out);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

const char *hub_count_type_of(const char *type)
{
	static const char *const pairs[][2] = {
		{"cpu", "samples"}, {"wall", "samples"},
		{"inuse_space", "inuse_objects"}, {"alloc_space", "alloc_objects"},
		{"mutex_delay", "mutex_contentions"}, {"block_delay", "block_contentions"},
	};
	size_t i;

	for (i = 0; type && i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (!strcmp(type, pairs[i][0]))
			return pairs[i][1];
	return NULL;
}

int hub_unit_is_count(const char *unit)
{
	static const char *const counts[] = {"samples", "count", "objects", "goroutines", "events",
					     "contentions", "lock_samples", ""};
	size_t i;

	for (i = 0; unit && i < sizeof(counts) / sizeof(counts[0]); i++)
		if (!strcmp(unit, counts[i]))
			return 1;
	return 0;
}

static const int64_t nice_widths_ns[] = {
	1000000LL, 2000000LL, 5000000LL, 10000000LL, 20000000LL, 50000000LL, 100000000LL,
	200000000LL, 500000000LL, 1000000000LL, 2000000000LL, 5000000000LL, 10000000000LL,
	15000000000LL, 30000000000LL, 60000000000LL, 120000000000LL, 300000000000LL,
	600000000000LL, 900000000000LL, 1800000000000LL, 3600000000000LL, 7200000000000LL,
	10800000000000LL, 21600000000000LL, 43200000000000LL, 86400000000000LL,
};

int64_t hub_nice_width(int64_t from, int64_t until, long n)
{
	const int64_t day = 86400000000000LL;
	size_t i;
	int64_t w;

	if (until <= from)
		until = from + 1;
	if (n < 1)
		n = 1;
	for (i = 0; i < sizeof(nice_widths_ns) / sizeof(nice_widths_ns[0]); i++) {
		w = nice_widths_ns[i];
		if ((until - 1) / w - from / w + 1 <= n)
			return w;
	}
	w = ((until - from) / day / n + 1) * day;
	while ((until - 1) / w - from / w + 1 > n)
		w += day;
	return w;
}

/* Is k one of the selection parameters (what a prefix may override)? */
static int is_sel_key(const char *k)
{
	return !strcmp(k, "service") || !strcmp(k, "type") || !strcmp(k, "from") ||
	       !strcmp(k, "until") || !strcmp(k, "span_id") || !strcmp(k, "trace_id") ||
	       !strncmp(k, "label.", 6);
}

int hub_sel_params_prefixed(const struct evkeyvalq *q, const char *prefix, struct evkeyvalq *tmp,
			    hub_params *out, wt_err *err)
{
	const struct evkeyval *kv;
	size_t pl = strlen(prefix);
	int rc;

	tmp->tqh_first = NULL;
	tmp->tqh_last = &tmp->tqh_first;
	/* target values first, then prefixed ones replace or add */
	for (kv = q->tqh_first; kv; kv = kv->next.tqe_next)
		if (is_sel_key(kv->key) && evhttp_add_header(tmp, kv->key, kv->value ? kv->value : ""))
			return wt_err_set(err, WT_EINVAL, "%s: value not usable", kv->key);
	for (kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
		const char *k = kv->key;
		if (strncmp(k, prefix, pl) || !is_sel_key(k + pl))
			continue;
		evhttp_remove_header(tmp, k + pl);
		if (evhttp_add_header(tmp, k + pl, kv->value ? kv->value : ""))
			return wt_err_set(err, WT_EINVAL, "%s: value not usable", k);
	}
	rc = hub_params_parse(tmp, out, err);
	if (rc) {
		/* name the prefixed parameter: "from: …" → "base_from: …" */
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s%s", prefix, err->msg);
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	}
	return rc;
}
