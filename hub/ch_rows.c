/*
 * ch_rows.c — profile → ClickHouse rows (see ch_rows.h).
 *
 * profile_samples_v1 gets one row per (sample, sample type) with a nonzero
 * value. The label columns of a row depend only on its labelset, so they
 * are encoded once per labelset and copied. Stack ids are xxh3-64 of the
 * frame names (root first, NUL-separated): the same stack gets the same id
 * in every upload and project, and profile_stacks_v1 is written only for
 * ids this hub has not written before (stackcache).
 */
#include "ch_rows.h"
#include "clock.h"
#include "symref.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ch_format.h"
#include "failpoint.h"
#include "rollup.h"
#include "ch_health.h"

#define SAMPLES_INSERT \
	"INSERT INTO profile_samples_v1 (date, time_ns, project, service, sample_type, unit," \
	" stack_id, value, host, thread, container, span_id, trace_id, labels.key, labels.value," \
	" upload_id, retention_days) FORMAT RowBinary"
#define STACKS_INSERT "INSERT INTO profile_stacks_v1 (project, stack_id, frames) FORMAT RowBinary"
#define ROLLUP_INSERT \
	"INSERT INTO function_rollup_v1 (minute, project, service, sample_type, unit, function," \
	" self, total, retention_days) FORMAT RowBinary"

const char hub_samples_insert_sql[] = SAMPLES_INSERT;

static const char *const column_labels[] = {"host", "thread", "container", "span_id", "trace_id"};
#define NCOL_LABELS 5

uint16_t hub_date_of_ns(int64_t ns)
{
	int64_t d = ns / 1000000000LL / 86400;
	return d < 0 ? 0 : d > 65535 ? 65535 : (uint16_t)d;
}

typedef struct kv {
	const char *k, *v;
	char num[32];
} kv;

/* Encode the label columns of labelset ls (plus request labels) into b:
 * host, thread, container, span_id, trace_id, labels.key, labels.value. */
static int encode_labels(const wt_profile *p, uint32_t ls, const hub_ch_rows_req *rq, wt_buf *b)
{
	kv *items;
	size_t n = 0, nl = 0, i, j, extra = 0;
	const wt_label *l = NULL;
	int rc = 0;

	if (ls < p->nlabelsets)
		l = wt_profile_labelset(p, ls, &nl);
	items = calloc(nl + rq->nlabels + 1, sizeof(kv));
	if (!items)
		return WT_ENOMEM;
	for (i = 0; i < nl; i++) {
		items[n].k = wt_profile_str(p, l[i].key);
		if (l[i].str) {
			items[n].v = wt_profile_str(p, l[i].str);
		} else {
			snprintf(items[n].num, sizeof(items[n].num), "%lld", (long long)l[i].num);
			items[n].v = items[n].num;
		}
		n++;
	}
	for (i = 0; i < rq->nlabels; i++) {
		for (j = 0; j < n; j++)
			if (!strcmp(items[j].k, rq->labels[i].key))
				break;
		items[j].k = rq->labels[i].key;
		items[j].v = rq->labels[i].value;
		items[j].num[0] = '\0';
		if (j == n)
			n++;
	}
	for (i = 0; i < NCOL_LABELS; i++) {
		const char *v = "";
		for (j = 0; j < n; j++)
			if (items[j].k && !strcmp(items[j].k, column_labels[i])) {
				v = items[j].v;
				items[j].k = NULL; /* a column, not a Nested label */
				break;
			}
		rc |= hub_rb_cstr(b, v);
	}
	for (j = 0; j < n; j++)
		extra += items[j].k != NULL;
	rc |= hub_rb_varuint(b, extra);
	for (j = 0; j < n; j++)
		if (items[j].k)
			rc |= hub_rb_cstr(b, items[j].k);
	rc |= hub_rb_varuint(b, extra);
	for (j = 0; j < n; j++)
		if (items[j].k)
			rc |= hub_rb_cstr(b, items[j].v);
	free(items);
	return rc ? WT_ENOMEM : 0;
}

static int flush(hub_ch *ch, const char *sql, wt_buf *b, hub_ch_rows_stats *st, wt_err *err)
{
	int64_t t0;
	int rc;

	if (b->oom)
		return wt_err_set(err, WT_ENOMEM, "out of memory encoding rows");
	if (!b->len)
		return 0;
	t0 = wt_now_ns(CLOCK_REALTIME);
	rc = hub_ch_insert(ch, sql, b->data, b->len, err);
	if (!rc)
		rc = hub_failpoint_insert(err);
	st->insert_ns += wt_now_ns(CLOCK_REALTIME) - t0;
	wt_buf_reset(b);
	return rc;
}

/* Stack ids (and the frames insert for new ones). */
static int do_stacks(hub_ch *ch, const hub_ch_rows_req *rq, const wt_profile *p, uint64_t *ids,
		     hub_ch_rows_stats *st, wt_err *err)
{
	uint64_t proj_hash = XXH3_64bits(rq->project, strlen(rq->project));
	wt_buf names = WT_BUF_INIT, rows = WT_BUF_INIT;
	size_t *offs = NULL;
	uint64_t *added = NULL;
	size_t nadded = 0, s, maxdepth = 0, rows_in_batch = 0;
	int rc = 0;

	for (s = 0; s < p->nstacks; s++)
		if (p->stacks[s].len > maxdepth)
			maxdepth = p->stacks[s].len;
	offs = calloc(maxdepth + 1, sizeof(*offs));
	added = calloc(p->nstacks + 1, sizeof(*added));
	if (!offs || !added) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	for (s = 0; s < p->nstacks; s++) {
		size_t n, i;
		const uint32_t *frames = wt_profile_stack(p, (uint32_t)s, &n);

		wt_buf_reset(&names);
		/* leaf first in the model; root first in storage; offsets because
		 * names may move while it grows */
		for (i = 0; i < n; i++) {
			char tmp[512];
			const char *name = wt_profile_frame_key(p, frames[n - 1 - i], tmp, sizeof(tmp));
			offs[i] = names.len;
			wt_buf_append(&names, name, strlen(name) + 1);
		}
		if (names.oom) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		ids[s] = XXH3_64bits(names.data, names.len);
		if (hub_stackcache_has(rq->stacks, proj_hash, ids[s], rq->cache_generation))
			continue;
		hub_rb_cstr(&rows, rq->project);
		hub_rb_u64(&rows, ids[s]);
		hub_rb_varuint(&rows, n);
		for (i = 0; i < n; i++) {
			const char *nm = (const char *)names.data + offs[i];
			hub_rb_cstr(&rows, nm);
		}
		added[nadded++] = ids[s];
		st->stack_rows++;
		if (++rows_in_batch >= rq->batch_rows) {
			if ((rc = flush(ch, STACKS_INSERT, &rows, st, err)))
				goto out;
			rows_in_batch = 0;
		}
	}
	if ((rc = flush(ch, STACKS_INSERT, &rows, st, err)))
		goto out;
	for (s = 0; s < nadded; s++)
		hub_stackcache_add(rq->stacks, proj_hash, added[s]);
out:
	free(offs);
	free(added);
	wt_buf_free(&names);
	wt_buf_free(&rows);
	return rc;
}

static int do_samples(hub_ch *ch, const hub_ch_rows_req *rq, const wt_profile *p, const uint64_t *ids,
		      int64_t fallback_ns, hub_ch_rows_stats *st, wt_err *err)
{
	wt_buf rows = WT_BUF_INIT, prefix = WT_BUF_INIT, lab = WT_BUF_INIT, tail = WT_BUF_INIT;
	size_t *lab_off = NULL, *lab_len = NULL, *type_off = NULL, *skipped = NULL, i, t, batch = 0;
	int rc = 0;

	/* Per-labelset label columns, encoded once. */
	lab_off = calloc(p->nlabelsets + 1, sizeof(size_t));
	lab_len = calloc(p->nlabelsets + 1, sizeof(size_t));
	type_off = calloc(p->ntypes + 1, sizeof(size_t));
	skipped = calloc(rq->nskip + 1, sizeof(size_t));
	if (!lab_off || !lab_len || !type_off || !skipped) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < p->nlabelsets || i == 0; i++) {
		lab_off[i] = lab.len;
		if ((rc = encode_labels(p, (uint32_t)i, rq, &lab))) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		lab_len[i] = lab.len - lab_off[i];
	}
	/* Per-type (project, service, sample_type, unit) prefix. */
	for (t = 0; t < p->ntypes; t++) {
		type_off[t] = prefix.len;
		hub_rb_cstr(&prefix, rq->project);
		hub_rb_cstr(&prefix, rq->service);
		hub_rb_cstr(&prefix, wt_profile_str(p, p->types[t].canonical));
		hub_rb_cstr(&prefix, wt_profile_str(p, p->types[t].unit));
	}
	type_off[p->ntypes] = prefix.len;
	hub_rb_cstr(&tail, rq->upload_id);
	hub_rb_u16(&tail, (uint16_t)rq->retention_days);
	if (prefix.oom || tail.oom) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}

	for (i = 0; i < p->nsamples; i++) {
		const wt_sample *s = &p->samples[i];
		const int64_t *v = wt_profile_values(p, i);
		int64_t tns = s->time_ns ? s->time_ns : p->time_ns ? p->time_ns : fallback_ns;
		uint32_t ls = s->labelset < p->nlabelsets ? s->labelset : 0;

		uint16_t day = hub_date_of_ns(tns);
		wt_buf *out = &rows;

		hub_dayrows *dr = NULL;
		size_t k = 0, cuts;
		if (rq->sink) {
			for (k = 0; k < rq->nskip; k++)
				if (rq->skip[k].day == day)
					break;
			if (!(dr = hub_daysink_get(rq->sink, day))) {
				rc = wt_err_set(err, WT_ENOMEM, "out of memory");
				goto out;
			}
			out = &dr->rows;
		}
		for (t = 0; t < p->ntypes; t++) {
			if (!v[t])
				continue;
			if (dr && k < rq->nskip && skipped[k] < rq->skip[k].rows) {
				skipped[k]++; /* stored by the interrupted apply */
				continue;
			}
			hub_rb_u16(out, day);
			hub_rb_u64(out, (uint64_t)tns);
			wt_buf_append(out, prefix.data + type_off[t], type_off[t + 1] - type_off[t]);
			hub_rb_u64(out, ids[s->stack]);
			hub_rb_i64(out, v[t]);
			wt_buf_append(out, lab.data + lab_off[ls], lab_len[ls]);
			wt_buf_append(out, tail.data, tail.len);
			st->sample_rows++;
			cuts = dr ? dr->ncuts : 0;
			if (out->oom || (dr && hub_dayrows_row_done(rq->sink, dr))) {
				rc = wt_err_set(err, WT_ENOMEM, "out of memory encoding rows");
				goto out;
			}
			if (dr && dr->ncuts != cuts && rq->sink->on_block &&
			    (rc = rq->sink->on_block(rq->sink->arg, dr, err)))
				goto out;
			if (!rq->sink && ++batch >= rq->batch_rows) {
				if ((rc = flush(ch, SAMPLES_INSERT, &rows, st, err)))
					goto out;
				batch = 0;
			}
		}
	}
	rc = flush(ch, SAMPLES_INSERT, &rows, st, err);
out:
	free(lab_off);
	free(lab_len);
	free(type_off);
	free(skipped);
	wt_buf_free(&rows);
	wt_buf_free(&prefix);
	wt_buf_free(&lab);
	wt_buf_free(&tail);
	return rc;
}

static int do_rollup(hub_ch *ch, const hub_ch_rows_req *rq, const wt_profile *p, int64_t fallback_ns,
		     hub_ch_rows_stats *st, wt_err *err)
{
	wt_rollup r;
	wt_buf rows = WT_BUF_INIT;
	size_t i, batch = 0;
	int rc;

	memset(&r, 0, sizeof(r));
	if ((rc = wt_rollup_build(p, fallback_ns, &r, err)))
		return rc;
	for (i = 0; i < r.n; i++) {
		const wt_rollup_row *row = &r.rows[i];
		int64_t sec = row->minute * 60;
		if (!row->self && !row->total)
			continue;
		hub_rb_u32(&rows, sec < 0 ? 0 : sec > UINT32_MAX ? UINT32_MAX : (uint32_t)sec);
		hub_rb_cstr(&rows, rq->project);
		hub_rb_cstr(&rows, rq->service);
		hub_rb_cstr(&rows, row->type);
		hub_rb_cstr(&rows, row->unit);
		hub_rb_cstr(&rows, row->function);
		hub_rb_i64(&rows, row->self);
		hub_rb_i64(&rows, row->total);
		hub_rb_u16(&rows, (uint16_t)rq->retention_days);
		st->rollup_rows++;
		if (++batch >= rq->batch_rows) {
			if ((rc = flush(ch, ROLLUP_INSERT, &rows, st, err)))
				goto out;
			batch = 0;
		}
	}
	rc = flush(ch, ROLLUP_INSERT, &rows, st, err);
out:
	wt_rollup_free(&r);
	wt_buf_free(&rows);
	return rc;
}

int hub_ch_rows_profile(hub_ch *ch, const hub_ch_rows_req *rq, const wt_profile *p,
		       int64_t fallback_ns, hub_ch_rows_stats *st, wt_err *err)
{
	uint64_t *ids = calloc(p->nstacks + 1, sizeof(uint64_t));
	int rc;

	memset(st, 0, sizeof(*st));
	if (!ids)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	rc = do_stacks(ch, rq, p, ids, st, err);
	if (!rc)
		rc = do_samples(ch, rq, p, ids, fallback_ns, st, err);
	if (!rc && !rq->sink)
		rc = do_rollup(ch, rq, p, fallback_ns, st, err);
	free(ids);
	return rc;
}
