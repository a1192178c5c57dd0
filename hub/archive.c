/*
 * archive.c — the archive job: WT_PROFILE_ARCHIVE_DAYS (environment of the
 * hub process; 0 or unset = off) moves profile_samples_v1 partitions whose
 * newest day is older than that many days to the storage volume `cold`
 * (ALTER TABLE … MOVE PARTITION ID … TO VOLUME 'cold').
 *
 * Needs storage policies (ClickHouse >= 19.15) and a table whose policy has
 * a volume named cold (system.storage_policies); configuring that policy is
 * the operator's job. Otherwise the job does nothing and logs why, once per
 * process. Only the no-op path runs on the ClickHouse 18.16 of these
 * machines: the move path is small, reviewed, and untested here (see
 * docs/operations.md "## Retention, archive and deletion"). In cluster mode
 * (clickhouse.cluster) the job does nothing either: volumes are per server
 * and moving the parts of every replica is not written yet.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "hub.h"
#include "log.h"
#include "worker.h"

#define ARCHIVE_ENV "WT_PROFILE_ARCHIVE_DAYS"
#define ARCHIVE_MAX_DAYS 36500
#define MAX_MOVES 1000

static atomic_int logged_reason; /* bit per reason */

static void once(int bit, const char *fmt_reason, const char *a)
{
	if (atomic_fetch_or(&logged_reason, bit) & bit)
		return;
	wt_info("msg=\"archive does nothing\" reason=\"%s\" detail=\"%s\"", fmt_reason, a ? a : "");
}

static int skip(json_t *summary, int bit, const char *why, const char *detail)
{
	once(bit, why, detail);
	json_object_set_new(summary, "skipped", json_string(why));
	if (detail)
		json_object_set_new(summary, "detail", json_string(detail));
	return 0;
}

static int first_line(wt_buf *out, char *dst, size_t cap)
{
	size_t n = 0;

	while (n < out->len && out->data[n] != '\n')
		n++;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, out->data, n);
	dst[n] = '\0';
	return (int)n;
}

int hub_archive_run(hub_ctx *ctx, hub_ch *ch, int64_t now_s, json_t *summary, wt_err *err)
{
	const char *env = getenv(ARCHIVE_ENV);
	hub_ch_features f;
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	char policy[256], ver[96];
	long days = 0;
	int rc = 0;

	if (env && *env) {
		char *end;
		days = strtol(env, &end, 10);
		if (*end || days < 0 || days > ARCHIVE_MAX_DAYS)
			return skip(summary, 1, "WT_PROFILE_ARCHIVE_DAYS is not a number of days 0-36500", env);
	}
	json_object_set_new(summary, "archive_days", json_integer(days));
	if (days == 0)
		return skip(summary, 2, "off (WT_PROFILE_ARCHIVE_DAYS is 0 or unset)", NULL);
	hub_ch_health_features(&ctx->store, &f);
	if (hub_ch_cluster(ch))
		return skip(summary, 32, "cluster mode: archiving to a cold volume is per server and not handled",
			    hub_ch_cluster(ch));
	if (!f.storage_policies) {
		snprintf(ver, sizeof(ver), "ClickHouse %s has no storage policies (they need 19.15 or newer)", f.version);
		return skip(summary, 4, "no storage policies on this server", ver);
	}
	wt_buf_puts(&sql, "SELECT storage_policy FROM system.tables WHERE database = currentDatabase()"
			  " AND name = 'profile_samples_v1' FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(ch, &sql, &out, err)))
		goto out;
	if (!first_line(&out, policy, sizeof(policy))) {
		rc = skip(summary, 8, "profile_samples_v1 has no storage policy", NULL);
		goto out;
	}
	wt_buf_reset(&sql);
	wt_buf_reset(&out);
	wt_buf_puts(&sql, "SELECT count() FROM system.storage_policies WHERE policy_name = ");
	hub_sql_quote(&sql, policy);
	wt_buf_puts(&sql, " AND volume_name = 'cold' FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(ch, &sql, &out, err)))
		goto out;
	if (!out.len || out.data[0] == '0') {
		rc = skip(summary, 16, "the table's storage policy has no volume named cold", policy);
		goto out;
	}
	/* partitions with a part not yet on a disk of the cold volume */
	wt_buf_reset(&sql);
	wt_buf_reset(&out);
	wt_buf_puts(&sql, "SELECT partition_id FROM system.parts WHERE database = currentDatabase()"
			  " AND table = 'profile_samples_v1' AND active AND disk_name NOT IN"
			  " (SELECT arrayJoin(disks) FROM system.storage_policies WHERE policy_name = ");
	hub_sql_quote(&sql, policy);
	wt_buf_printf(&sql, " AND volume_name = 'cold') GROUP BY partition_id HAVING max(max_date) < toDate(%ld)"
		      " ORDER BY partition_id LIMIT %d FORMAT TabSeparated", (long)(now_s / 86400) - days, MAX_MOVES);
	if ((rc = hub_ch_query_buf(ch, &sql, &out, err)))
		goto out;
	{
		json_t *moved = json_array();
		char *line = (char *)out.data, *end = line + out.len;
		while (line && line < end) {
			char *nl = memchr(line, '\n', (size_t)(end - line));
			wt_buf mv = WT_BUF_INIT;
			if (nl)
				*nl = '\0';
			if (*line) {
				wt_buf_puts(&mv, "ALTER TABLE profile_samples_v1 MOVE PARTITION ID ");
				hub_sql_quote(&mv, line);
				wt_buf_puts(&mv, " TO VOLUME 'cold'");
				rc = hub_ch_query_buf(ch, &mv, NULL, err);
				wt_buf_free(&mv);
				if (rc)
					break;
				json_array_append_new(moved, json_string(line));
			}
			line = nl ? nl + 1 : NULL;
		}
		json_object_set_new(summary, "moved_partitions", moved);
		if (json_array_size(moved))
			wt_info("msg=\"archive moved partitions to volume cold\" count=%zu", json_array_size(moved));
	}
out:
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}
