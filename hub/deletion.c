/*
 * deletion.c — removing raw originals from the object store, shared by the
 * deletion API (http_delete.c) and the retention job (retention.c), and
 * the retry of object deletes that failed earlier (object_deletions_v1).
 *
 * Each upload's original is its own object (hub_objstore_put_upload), so
 * the rows being removed name only their own objects; objects stored under
 * the older content-addressed keys may back several uploads, hence the
 * check: an object is deleted only when every raw_objects_v1 row naming it
 * is among the rows being removed.
 * Index rows are removed by the caller (ALTER TABLE raw_objects_v1 DELETE)
 * after this ran, so a crash in between leaves rows whose objects are gone
 * or pending, never objects without rows.
 */
#include "deletion.h"
#include "clock.h"

#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "hub.h"
#include "log.h"

#define MAX_KEYS_PER_RUN 100000

typedef struct rel_ctx {
	hub_ctx *ctx;
	hub_ch *ch;
	const char *deletion_id, *project;
	wt_buf failed; /* INSERT values for object_deletions_v1 */
	size_t deleted, kept, failed_n;
} rel_ctx;

static void add_pending(rel_ctx *rc, const char *key, const char *why)
{
	wt_buf_printf(&rc->failed, "%s(", rc->failed_n++ ? ", " : "");
	hub_sql_quote(&rc->failed, key);
	wt_buf_puts(&rc->failed, ", ");
	hub_sql_quote(&rc->failed, rc->deletion_id);
	wt_buf_puts(&rc->failed, ", ");
	hub_sql_quote(&rc->failed, rc->project ? rc->project : "");
	wt_buf_puts(&rc->failed, ", 0, ");
	hub_sql_quote(&rc->failed, why);
	wt_buf_printf(&rc->failed, ", %lld)", (long long)wt_now_ns(CLOCK_REALTIME));
}

static int key_row(void *arg, char **f, size_t n)
{
	rel_ctx *rc = arg;
	wt_err err = {0, ""};

	if (n < 2)
		return 0;
	if (strcmp(f[1], "0")) { /* still referenced by a row that stays */
		rc->kept++;
		return 0;
	}
	if (hub_objstore_delete(rc->ctx->os, f[0], &err)) {
		wt_warn("msg=\"object delete failed; the retention job retries it\" key=%s deletion_id=%s error=\"%s\"",
			f[0], rc->deletion_id, err.msg);
		add_pending(rc, f[0], err.msg);
	} else {
		rc->deleted++;
	}
	return 0;
}

int hub_objects_release(hub_ctx *ctx, hub_ch *ch, const char *cond, const char *project,
			const char *deletion_id, hub_release_stats *st, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	rel_ctx rc = {ctx, ch, deletion_id, project, WT_BUF_INIT, 0, 0, 0};
	int r;

	memset(st, 0, sizeof(*st));
	wt_buf_printf(&sql, "SELECT object_key, max(NOT (%s)) FROM raw_objects_v1 WHERE object_key IN"
		      " (SELECT object_key FROM raw_objects_v1 WHERE %s) GROUP BY object_key LIMIT %d"
		      " FORMAT TabSeparated", cond, cond, MAX_KEYS_PER_RUN);
	if ((r = hub_ch_query_buf(ch, &sql, &out, err)))
		goto out;
	hub_tsv_each((char *)out.data, out.len, 2, key_row, &rc);
	if (rc.failed_n) {
		wt_buf_reset(&sql);
		wt_buf_puts(&sql, "INSERT INTO object_deletions_v1 (object_key, deletion_id, project, done, error,"
				  " updated_ns) VALUES ");
		wt_buf_append(&sql, rc.failed.data, rc.failed.len);
		if ((r = hub_ch_query_buf(ch, &sql, NULL, err)))
			goto out;
	}
	st->deleted = rc.deleted;
	st->kept = rc.kept;
	st->failed = rc.failed_n;
out:
	wt_buf_free(&sql);
	wt_buf_free(&out);
	wt_buf_free(&rc.failed);
	return r;
}

/* ---- retry ------------------------------------------------------------------------ */

typedef struct retry_ctx {
	hub_ctx *ctx;
	hub_ch *ch;
	wt_buf done;
	size_t n, ok, still, rereferenced;
} retry_ctx;

static int retry_row(void *arg, char **f, size_t n)
{
	retry_ctx *rc = arg;
	wt_err err = {0, ""};
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int refs = 0;

	if (n < 3)
		return 0;
	/* the same bytes may have been uploaded again since: keep the object then */
	wt_buf_puts(&sql, "SELECT count() FROM raw_objects_v1 WHERE object_key = ");
	hub_sql_quote(&sql, f[0]);
	wt_buf_puts(&sql, " FORMAT TabSeparated");
	if (hub_ch_query_buf(rc->ch, &sql, &out, &err)) {
		rc->still++;
		goto out;
	}
	refs = out.len && out.data[0] != '0';
	if (refs)
		rc->rereferenced++;
	else if (hub_objstore_delete(rc->ctx->os, f[0], &err)) {
		rc->still++;
		goto out;
	}
	if (!refs)
		rc->ok++;
	wt_buf_printf(&rc->done, "%s(", rc->n++ ? ", " : "");
	hub_sql_quote(&rc->done, f[0]);
	wt_buf_puts(&rc->done, ", ");
	hub_sql_quote(&rc->done, f[1]);
	wt_buf_puts(&rc->done, ", ");
	hub_sql_quote(&rc->done, f[2]);
	wt_buf_printf(&rc->done, ", 1, %s, %lld)", refs ? "'kept: referenced again'" : "''", (long long)wt_now_ns(CLOCK_REALTIME));
out:
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return 0;
}

int hub_deletion_retry(hub_ctx *ctx, hub_ch *ch, json_t *summary, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	retry_ctx rc = {ctx, ch, WT_BUF_INIT, 0, 0, 0, 0};
	int r;

	wt_buf_printf(&sql, "SELECT object_key, deletion_id, project FROM object_deletions_v1 FINAL WHERE done = 0"
		      " LIMIT %d FORMAT TabSeparated", MAX_KEYS_PER_RUN);
	if ((r = hub_ch_query_buf(ch, &sql, &out, err)))
		goto out;
	hub_tsv_each((char *)out.data, out.len, 3, retry_row, &rc);
	if (rc.n) {
		wt_buf_reset(&sql);
		wt_buf_puts(&sql, "INSERT INTO object_deletions_v1 (object_key, deletion_id, project, done, error,"
				  " updated_ns) VALUES ");
		wt_buf_append(&sql, rc.done.data, rc.done.len);
		if ((r = hub_ch_query_buf(ch, &sql, NULL, err)))
			goto out;
	}
	json_object_set_new(summary, "retried_object_deletes",
			    json_pack("{s:I, s:I, s:I}", "deleted", (json_int_t)rc.ok, "still_failing",
				      (json_int_t)rc.still, "kept_referenced_again", (json_int_t)rc.rereferenced));
out:
	wt_buf_free(&sql);
	wt_buf_free(&out);
	wt_buf_free(&rc.done);
	return r;
}
