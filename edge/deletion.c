/*
 * deletion.c — apply one hub deletion to the edge's buffer (see
 * deletion.h for what is deleted and what is deliberately kept).
 */
#include "deletion.h"
#include "clock.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compress.h"
#include "keys.h"
#include "log.h"

#define MAX_ID 128
#define MAX_LOG_DECOMPRESSED (64u << 20)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int matches(const json_t *j, const char *project, const char *service)
{
	const char *p = json_string_value(json_object_get(j, "project"));
	const char *s = json_string_value(json_object_get(j, "service"));

	return p && !strcmp(p, project) && (!service || (s && !strcmp(s, service)));
}

/* raw record: "WTR1" LE64(received_ns) LE32(hdrlen) header-JSON ... */
static int raw_matches(const uint8_t *v, size_t vl, const char *project, const char *service, int64_t before_ns)
{
	json_t *h;
	uint32_t hl;
	int m;

	if (vl < 16 || memcmp(v, "WTR1", 4))
		return 0;
	if (edge_le64_get(v + 4) >= before_ns)
		return 0;
	hl = le32(v + 12);
	if (hl > vl - 16)
		return 0;
	h = json_loadb((const char *)v + 16, hl, 0, NULL);
	m = h && matches(h, project, service);
	json_decref(h);
	return m;
}

/* rolluplog value: LE64 received_ns, zstd(JSON {project, service, ...}) */
static int log_matches(const uint8_t *v, size_t vl, const char *project, const char *service, int64_t before_ns)
{
	uint8_t *txt = NULL;
	size_t tl = 0;
	wt_err e = {0, ""};
	json_t *j;
	int m;

	if (vl < 8 || edge_le64_get(v) >= before_ns)
		return 0;
	if (wt_zstd_decompress(v + 8, vl - 8, MAX_LOG_DECOMPRESSED, &txt, &tl, &e))
		return 0;
	j = json_loadb((const char *)txt, tl, 0, NULL);
	free(txt);
	m = j && matches(j, project, service);
	json_decref(j);
	return m;
}

/* Delete replicated records (seq <= cursor) of cf that match. */
static size_t sweep_replicated(edge_buffer *s, rocksdb_readoptions_t *ro, rocksdb_writebatch_t *wb, int cf,
			       uint64_t cursor, const char *project, const char *service, int64_t before_ns)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(edge_buffer_db(s), ro, edge_buffer_cf(s, cf));
	uint8_t first[8];
	size_t n = 0;

	edge_be64_put(first, 0);
	for (rocksdb_iter_seek(it, (const char *)first, 8); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vl);
		if (kl != 8 || edge_be64_get((const uint8_t *)k) > cursor)
			break;
		if (cf == EDGE_CF_RAW ? raw_matches(v, vl, project, service, before_ns)
				      : log_matches(v, vl, project, service, before_ns)) {
			rocksdb_writebatch_delete_cf(wb, edge_buffer_cf(s, cf), k, kl);
			n++;
		}
	}
	rocksdb_iter_destroy(it);
	return n;
}

/* Series (meta types/ proj\0svc\0type) of the project(/service): delete
 * rollup and stacks minutes [0, end_min). */
static size_t sweep_series(edge_buffer *s, rocksdb_readoptions_t *ro, rocksdb_writebatch_t *wb,
			   const char *project, const char *service, int64_t end_min)
{
	const size_t pl = strlen(EDGE_META_TYPES);
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(edge_buffer_db(s), ro, edge_buffer_cf(s, EDGE_CF_META));
	size_t n = 0;

	for (rocksdb_iter_seek(it, EDGE_META_TYPES, pl); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, rl;
		const char *k = rocksdb_iter_key(it, &kl);
		const char *proj, *svc, *type;
		const uint8_t *rest;
		wt_buf a = WT_BUF_INIT, b = WT_BUF_INIT;
		uint8_t m[8];

		if (kl < pl || memcmp(k, EDGE_META_TYPES, pl))
			break;
		if (edge_key_split((const uint8_t *)k + pl, kl - pl, &proj, &svc, &type, &rest, &rl) || rl)
			continue;
		if (strcmp(proj, project) || (service && strcmp(svc, service)))
			continue;
		wt_buf_append(&a, k + pl, kl - pl);
		wt_buf_append(&b, k + pl, kl - pl);
		edge_be64_put(m, 0);
		wt_buf_append(&a, m, 8);
		edge_be64_put(m, (uint64_t)end_min);
		wt_buf_append(&b, m, 8);
		if (!a.oom && !b.oom) {
			rocksdb_writebatch_delete_range_cf(wb, edge_buffer_cf(s, EDGE_CF_ROLLUP), (char *)a.data, a.len,
							   (char *)b.data, b.len);
			rocksdb_writebatch_delete_range_cf(wb, edge_buffer_cf(s, EDGE_CF_STACKS), (char *)a.data, a.len,
							   (char *)b.data, b.len);
			rocksdb_writebatch_delete_range_cf(wb, edge_buffer_cf(s, EDGE_CF_STACKIDX), (char *)a.data, a.len,
							   (char *)b.data, b.len);
			/* stackdict: the days wholly before end_min (keys.h) */
			b.len -= 8;
			edge_be64_put(m, (uint64_t)(end_min / EDGE_MINUTES_PER_DAY));
			wt_buf_append(&b, m, 8);
			if (!b.oom)
				rocksdb_writebatch_delete_range_cf(wb, edge_buffer_cf(s, EDGE_CF_STACKDICT), (char *)a.data,
								   a.len, (char *)b.data, b.len);
			n++;
		}
		wt_buf_free(&a);
		wt_buf_free(&b);
	}
	rocksdb_iter_destroy(it);
	return n;
}

int edge_deletion_apply(edge_buffer *s, const char *deletion_id, const char *project, const char *service,
			int64_t before_ns, wt_err *err)
{
	rocksdb_readoptions_t *ro = NULL;
	rocksdb_writeoptions_t *wo = NULL;
	rocksdb_writebatch_t *wb = NULL;
	char key[sizeof(EDGE_META_DELETIONS) + MAX_ID], *v, *e = NULL;
	uint8_t stamp[8];
	size_t vl = 0, nseries, nraw, nlog;
	uint64_t cursor = 0;
	int rc = 0;

	if (!deletion_id || !*deletion_id || strlen(deletion_id) >= MAX_ID)
		return wt_err_set(err, WT_EINVAL, "deletion: deletion_id: expected 1-%d characters", MAX_ID - 1);
	if (!project || !*project)
		return wt_err_set(err, WT_EINVAL, "deletion %s: project: required", deletion_id);
	if (before_ns <= 0)
		return wt_err_set(err, WT_EINVAL, "deletion %s: before_ns: expected a positive time", deletion_id);
	snprintf(key, sizeof(key), "%s%s", EDGE_META_DELETIONS, deletion_id);
	ro = rocksdb_readoptions_create();
	v = rocksdb_get_cf(edge_buffer_db(s), ro, edge_buffer_cf(s, EDGE_CF_META), key, strlen(key), &vl, &e);
	if (e) {
		rc = wt_err_set(err, WT_EIO, "deletion %s: reading meta: %s", deletion_id, e);
		goto out;
	}
	if (v) { /* applied before */
		free(v);
		goto out;
	}
	v = rocksdb_get_cf(edge_buffer_db(s), ro, edge_buffer_cf(s, EDGE_CF_META), EDGE_META_REPL_CURSOR,
			   strlen(EDGE_META_REPL_CURSOR), &vl, &e);
	if (e) {
		rc = wt_err_set(err, WT_EIO, "deletion %s: reading the replication cursor: %s", deletion_id, e);
		goto out;
	}
	if (v && vl == 8)
		cursor = edge_be64_get((const uint8_t *)v);
	free(v);

	wb = rocksdb_writebatch_create();
	nseries = sweep_series(s, ro, wb, project, service, before_ns / 60000000000LL);
	nraw = cursor ? sweep_replicated(s, ro, wb, EDGE_CF_RAW, cursor, project, service, before_ns) : 0;
	nlog = cursor ? sweep_replicated(s, ro, wb, EDGE_CF_ROLLUPLOG, cursor, project, service, before_ns) : 0;
	edge_le64_put(stamp, wt_now_ns(CLOCK_REALTIME));
	rocksdb_writebatch_put_cf(wb, edge_buffer_cf(s, EDGE_CF_META), key, strlen(key), (const char *)stamp, 8);
	wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(wo, 1);
	rocksdb_write(edge_buffer_db(s), wo, wb, &e);
	if (e) {
		rc = wt_err_set(err, WT_EIO, "deletion %s: write failed: %s", deletion_id, e);
		goto out;
	}
	wt_info("deletion applied deletion_id=%s project=%s service=%s before_ns=%lld series=%zu"
		" raw_deleted=%zu rolluplog_deleted=%zu repl_cursor=%llu (unreplicated records kept)", deletion_id,
		project, service ? service : "*", (long long)before_ns, nseries, nraw, nlog,
		(unsigned long long)cursor);
	rc = 1;
out:
	free(e);
	if (wb)
		rocksdb_writebatch_destroy(wb);
	if (wo)
		rocksdb_writeoptions_destroy(wo);
	rocksdb_readoptions_destroy(ro);
	return rc;
}
