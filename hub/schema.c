/*
 * schema.c — version detection and versioned migrations of the hub's
 * ClickHouse schema.
 *
 * Key design (details in docs/operations.md):
 *  - profile_samples_v1: one row per (upload, sample type, stack, labels,
 *    time); PARTITION BY day so retention drops whole partitions; ORDER BY
 *    (project, service, sample_type, time_ns) so a query for one
 *    project/service/type/time range reads a contiguous key range.
 *  - profile_stacks_v1: stack_id → frame names, ROOT FIRST, deduplicated by
 *    ReplacingMergeTree on (project, stack_id).
 *  - function_rollup_v1: SummingMergeTree per minute and function.
 * On servers with TTL support a TTL on `date + retention_days` is added; on
 * 18.16 retention is the worker's job (partition drops / ALTER DELETE).
 */
#include "schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "log.h"
#include "stackagg.h"

int hub_features_from_version(const char *version, hub_ch_features *f)
{
	int major = 0, minor = 0;

	memset(f, 0, sizeof(*f));
	if (!version || sscanf(version, "%d.%d", &major, &minor) != 2 || major <= 0)
		return WT_EINVAL;
	snprintf(f->version, sizeof(f->version), "%s", version);
	f->major = major;
	f->minor = minor;
#define AT_LEAST(M, m) (major > (M) || (major == (M) && minor >= (m)))
	f->ttl = AT_LEAST(19, 6);
	f->storage_policies = AT_LEAST(19, 15);
	f->low_cardinality = AT_LEAST(19, 3);
	f->dedup_token = AT_LEAST(22, 2);
#undef AT_LEAST
	return 0;
}

int hub_schema_detect(hub_ch *ch, hub_ch_features *f, wt_err *err)
{
	wt_buf out = WT_BUF_INIT;
	int rc = hub_ch_query_nodb(ch, "SELECT version()", &out, err);

	if (rc)
		goto done;
	while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == '\r'))
		out.len--;
	if (wt_buf_putc(&out, '\0')) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto done;
	}
	if (hub_features_from_version((const char *)out.data, f))
		rc = wt_err_set(err, WT_EIO, "clickhouse: cannot parse version \"%s\"", (const char *)out.data);
done:
	wt_buf_free(&out);
	return rc;
}

/* What a migration's DDL depends on: the server's features and, in
 * cluster mode, the cluster and database (for ON CLUSTER and the
 * ReplicatedMergeTree ZooKeeper path). */
typedef struct ddl_ctx {
	const hub_ch_features *f;
	const char *cluster; /* NULL: single server */
	const char *db;
} ddl_ctx;

/* "CREATE TABLE IF NOT EXISTS name" — in cluster mode the replicated
 * shard-local table db.name_local, created on every server (ON CLUSTER
 * statements run on the other servers without the request's database, so
 * names are qualified). */
static void ddl_create(wt_buf *b, const ddl_ctx *cx, const char *name)
{
	if (cx->cluster)
		wt_buf_printf(b, "CREATE TABLE IF NOT EXISTS `%s`.%s_local ON CLUSTER `%s`", cx->db, name, cx->cluster);
	else
		wt_buf_printf(b, "CREATE TABLE IF NOT EXISTS %s", name);
}

/* " ENGINE = <engine>(args)" — in cluster mode Replicated<engine> with the
 * table's ZooKeeper path per shard and the {replica} macro first. */
static void ddl_engine(wt_buf *b, const ddl_ctx *cx, const char *name, const char *engine, const char *args)
{
	if (!cx->cluster) {
		wt_buf_printf(b, " ENGINE = %s(%s)", engine, args);
		return;
	}
	wt_buf_printf(b, " ENGINE = Replicated%s('/clickhouse/tables/{shard}/%s/%s_local', '{replica}'%s%s)",
		      engine, cx->db, name, *args ? ", " : "", args);
}

/* A migration writes its DDL into b, adapted to the server's features. */
typedef struct migration {
	int version;
	const char *name;
	int (*ddl)(wt_buf *b, const ddl_ctx *cx);
	const char *shard_key; /* Distributed sharding expression (cluster mode);
				* NULL: no table of its own (a view, a statement) */
} migration;

#define LC(cx) ((cx)->f->low_cardinality ? "LowCardinality(String)" : "String")

static int m_samples(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "profile_samples_v1");
	wt_buf_printf(b,
		" ("
		" date Date,"
		" time_ns UInt64,"               /* unix ns; 18.16 has no DateTime64 */
		" project %s, service %s, sample_type %s, unit %s,"
		" stack_id UInt64,"
		" value Int64,"
		" host %s, thread String, container String,"
		" span_id String, trace_id String,"
		" labels Nested(key String, value String),"
		" upload_id String,"
		" retention_days UInt16)",
		LC(cx), LC(cx), LC(cx), LC(cx), LC(cx));
	ddl_engine(b, cx, "profile_samples_v1", "MergeTree", "");
	wt_buf_puts(b,
		" PARTITION BY toYYYYMMDD(date)"
		" ORDER BY (project, service, sample_type, time_ns, stack_id)");
	if (cx->f->ttl)
		wt_buf_puts(b, " TTL date + toIntervalDay(retention_days)");
	return wt_buf_puts(b, " SETTINGS index_granularity = 8192");
}

static int m_stacks(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "profile_stacks_v1");
	wt_buf_printf(b,
		" ("
		" project %s,"
		" stack_id UInt64,"
		" frames Array(String),"         /* ROOT FIRST */
		" first_seen DateTime DEFAULT now())",
		LC(cx));
	ddl_engine(b, cx, "profile_stacks_v1", "ReplacingMergeTree", "");
	return wt_buf_puts(b,
		" ORDER BY (project, stack_id)");
}

static int m_rollup(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "function_rollup_v1");
	wt_buf_printf(b,
		" ("
		" minute DateTime,"
		" project %s, service %s, sample_type %s, unit %s,"
		" function String,"
		" self Int64, total Int64,"
		" retention_days UInt16)",
		LC(cx), LC(cx), LC(cx), LC(cx));
	ddl_engine(b, cx, "function_rollup_v1", "SummingMergeTree", "(self, total)");
	wt_buf_puts(b,
		" PARTITION BY toYYYYMMDD(minute)"
		" ORDER BY (project, service, sample_type, function, minute, unit, retention_days)");
	if (cx->f->ttl)
		wt_buf_puts(b, " TTL minute + toIntervalDay(retention_days)");
	return 0;
}

static int m_type_retention(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "profile_type_retention_v1");
	wt_buf_puts(b,
		" ("
		" project String, sample_type String, retention_days UInt32,"
		" updated_ns UInt64)");
	ddl_engine(b, cx, "profile_type_retention_v1", "ReplacingMergeTree", "updated_ns");
	return wt_buf_puts(b,
		" ORDER BY (project, sample_type)");
}

static int m_projects(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "projects_v1");
	wt_buf_puts(b,
		" ("
		" name String, retention_days UInt32,"
		" created_at DateTime, updated_ns UInt64)");
	ddl_engine(b, cx, "projects_v1", "ReplacingMergeTree", "updated_ns");
	return wt_buf_puts(b,
		" ORDER BY name");
}

static int m_tokens(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "tokens_v1");
	wt_buf_puts(b,
		" ("
		" token_sha256 String,"          /* hex sha256 of the secret */
		" id String, project String, role String,"
		" created_at DateTime, revoked UInt8, updated_ns UInt64)");
	ddl_engine(b, cx, "tokens_v1", "ReplacingMergeTree", "updated_ns");
	return wt_buf_puts(b,
		" ORDER BY token_sha256");
}

static int m_audit(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "audit_events_v1");
	wt_buf_puts(b,
		" ("
		" time_ns UInt64, project String, actor String, action String,"
		" detail String, deletion_id String)");
	ddl_engine(b, cx, "audit_events_v1", "MergeTree", "");
	return wt_buf_puts(b,
		" PARTITION BY toYYYYMM(toDate(toDateTime(intDiv(time_ns, 1000000000))))"
		" ORDER BY (project, time_ns)");
}

static int m_raw_objects(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "raw_objects_v1");
	wt_buf_puts(b,
		" ("
		" date Date, time_ns UInt64, project String, service String,"
		" upload_id String, object_key String, format String, size UInt64,"
		" deleted UInt8)");
	ddl_engine(b, cx, "raw_objects_v1", "MergeTree", "");
	return wt_buf_puts(b,
		" PARTITION BY toYYYYMM(date)"
		" ORDER BY (project, time_ns)");
}

/* Replication ledger: one row per (edge, seq) and state. state 1 = being
 * applied (written BEFORE any data row), 2 = applied, 3 = rejected by the
 * hub (kept, never retried). A seq whose highest state is 1 was interrupted
 * by a crash: repl_apply.c then checks which per-day parts landed. */
static int m_repl_ledger(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "repl_ledger_v1");
	wt_buf_puts(b,
		" ("
		" edge_id String, seq UInt64, state UInt8, upload_id String,"
		" project String, service String, time_ns UInt64, detail String)");
	ddl_engine(b, cx, "repl_ledger_v1", "MergeTree", "");
	return wt_buf_puts(b,
		" ORDER BY (edge_id, seq, state)");
}

/* Ledger keyed by the edge's incarnation (its data dir: seqs start at 1 in
 * each; repl.h). States as in repl_ledger_v1, which stays readable for the
 * legacy incarnation "" (edges from before incarnations). */
static int m_repl_ledger2(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "repl_ledger_v2");
	wt_buf_puts(b,
		" ("
		" edge_id String, incarnation String, seq UInt64, state UInt8, upload_id String,"
		" project String, service String, time_ns UInt64, detail String)");
	ddl_engine(b, cx, "repl_ledger_v2", "MergeTree", "");
	return wt_buf_puts(b,
		" ORDER BY (edge_id, incarnation, seq, state)");
}

/* Claims on a batch's seqs (repl_claim.c): append-only; the newest version
 * of a token's rows holds its lease (expires_ns, 0 = released). */
static int m_repl_claims(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "repl_claims_v1");
	wt_buf_puts(b,
		" ("
		" edge_id String, incarnation String, first_seq UInt64, last_seq UInt64,"
		" token String, claim_ns UInt64, expires_ns UInt64, version UInt64)");
	ddl_engine(b, cx, "repl_claims_v1", "MergeTree", "");
	return wt_buf_puts(b,
		" ORDER BY (edge_id, incarnation, token, version)");
}

/* Control plane (versions 30-39): policies, worker leases, object
 * deletions left to retry. */
static int m_policies(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "policies_v1");
	wt_buf_puts(b,
		" ("
		" project String, revision UInt64, policy String,"
		" updated_by String, updated_ns UInt64)");
	ddl_engine(b, cx, "policies_v1", "MergeTree", "");
	return wt_buf_puts(b,
		" ORDER BY (project, revision, updated_ns)");
}

/* Recording rules (recording_rules.c): one row per PUT, the newest
 * revision wins; and the values computed at ingest, per minute. */
static int m_recording_rules(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "recording_rules_v1");
	wt_buf_puts(b,
		" ("
		" project String, revision UInt64, rules String,"
		" updated_by String, updated_ns UInt64)");
	ddl_engine(b, cx, "recording_rules_v1", "MergeTree", "");
	return wt_buf_puts(b,
		" ORDER BY (project, revision, updated_ns)");
}

static int m_rule_values(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "rule_values_v1");
	wt_buf_printf(b,
		" ("
		" date Date, minute UInt32,"
		" project %s, rule %s, service %s, sample_type %s, unit %s,"
		" labels Nested(key String, value String),"
		" value Int64, upload_id String)",
		LC(cx), LC(cx), LC(cx), LC(cx), LC(cx));
	ddl_engine(b, cx, "rule_values_v1", "MergeTree", "");
	return wt_buf_puts(b,
		" PARTITION BY toYYYYMMDD(date)"
		" ORDER BY (project, rule, minute)");
}

static int m_worker_leases(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "worker_leases");
	wt_buf_puts(b,
		" ("
		" job String, holder String, expires_ns UInt64, last_done_ns UInt64,"
		" version UInt64)");
	ddl_engine(b, cx, "worker_leases", "ReplacingMergeTree", "version");
	return wt_buf_puts(b,
		" ORDER BY job");
}

/* Cluster-mode lease claims (worker.h): claim_time is filled by the
 * ClickHouse server, which orders claims independently of the hubs' clocks
 * and of how long a hub took between reading the lease and claiming. */
static int m_lease_claims(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "worker_lease_claims");
	wt_buf_puts(b, " (job String, base_version UInt64, holder String, claim_time DateTime DEFAULT now())");
	ddl_engine(b, cx, "worker_lease_claims", "MergeTree", "");
	return wt_buf_puts(b, " PARTITION BY toYYYYMM(claim_time) ORDER BY (job, base_version, claim_time, holder)");
}

static int m_object_deletions(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "object_deletions_v1");
	wt_buf_puts(b,
		" ("
		" object_key String, deletion_id String, project String,"
		" done UInt8, error String, updated_ns UInt64)");
	ddl_engine(b, cx, "object_deletions_v1", "ReplacingMergeTree", "updated_ns");
	return wt_buf_puts(b,
		" ORDER BY (object_key, deletion_id)");
}

/* Analysis (versions 20-29): regression issues (regress.h) and
 * the users' state of them (acknowledged/muted), kept apart so a detector
 * run never overwrites a user's change. */
static int m_issues(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "issues_v1");
	wt_buf_puts(b,
		" ("
		" project String, issue_id String,"
		" service String, sample_type String, unit String, function String,"
		" state String,"                 /* open | resolved (detector) */
		" opened_ns UInt64, last_seen_ns UInt64, resolved_ns UInt64,"
		" baseline_from_ns UInt64, recent_from_ns UInt64, window_end_ns UInt64,"
		" baseline_share Float64, recent_share Float64,"
		" baseline_self Int64, recent_self Int64, baseline_total Int64, recent_total Int64,"
		" z Float64, p_value Float64,"
		" version UInt64)");               /* window end: equal runs write equal rows */
	ddl_engine(b, cx, "issues_v1", "ReplacingMergeTree", "version");
	return wt_buf_puts(b,
		" ORDER BY (project, issue_id)");
}

static int m_issue_states(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "issue_states_v1");
	wt_buf_puts(b,
		" ("
		" project String, issue_id String, user_state String, actor String,"
		" updated_ns UInt64)");
	ddl_engine(b, cx, "issue_states_v1", "ReplacingMergeTree", "updated_ns");
	return wt_buf_puts(b,
		" ORDER BY (project, issue_id)");
}

/* Symbolization (versions 40-49): the index of uploaded (and
 * debuginfod-fetched) debug files; the bytes are in the object store under
 * debuginfo/<project>/<build id>. A delete writes a row with deleted = 1:
 * readers take the newest row per (project, build_id) by version. */
static int m_debug_files(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "debug_files_v1");
	wt_buf_puts(b,
		" ("
		" project String, build_id String, file_name String, size UInt64,"
		" uploaded_by String, uploaded_ns UInt64, source String,"
		" deleted UInt8, version UInt64)");
	ddl_engine(b, cx, "debug_files_v1", "ReplacingMergeTree", "version");
	return wt_buf_puts(b,
		" ORDER BY (project, build_id)");
}

/* Stack aggregates (stackagg.h; versions 50-59). stack_agg_v1 and
 * label_sets_v1 are filled by materialized views on profile_samples_v1 —
 * in cluster mode on each shard's profile_samples_v1_local into the same
 * shard's _local tables, so an aggregate row lives on the shard of its
 * (project, service) like the raw rows it sums. */
/* stack_agg_v1 (with_stack), or series_agg_v1: the same sums per label
 * set without the stack (the timeline's rows) */
static int agg_table(wt_buf *b, const ddl_ctx *cx, const char *name, int with_stack)
{
	ddl_create(b, cx, name);
	wt_buf_printf(b,
		" ("
		" date Date,"
		" res UInt32,"                   /* 60 / 3600 / 86400 s */
		" bucket UInt32,"                /* unix s of the bucket start */
		" project %s, service %s, sample_type %s, unit %s,"
		" labelset_id UInt64,"           /* stack_agg_v1: 0 = every label set */
		"%s"
		" value Int64,"
		" retention_days UInt16)",
		LC(cx), LC(cx), LC(cx), LC(cx), with_stack ? " stack_id UInt64," : "");
	ddl_engine(b, cx, name, "SummingMergeTree", "(value)");
	wt_buf_printf(b,
		" PARTITION BY toYYYYMMDD(date)"
		" ORDER BY (project, service, sample_type, res, labelset_id, bucket,%s unit, retention_days)",
		with_stack ? " stack_id," : "");
	if (cx->f->ttl)
		wt_buf_puts(b, " TTL date + toIntervalDay(retention_days)");
	return wt_buf_puts(b, " SETTINGS index_granularity = 8192");
}

static int m_stack_agg(wt_buf *b, const ddl_ctx *cx)
{
	return agg_table(b, cx, "stack_agg_v1", 1);
}

static int m_series_agg(wt_buf *b, const ddl_ctx *cx)
{
	return agg_table(b, cx, "series_agg_v1", 0);
}

static int m_label_sets(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "label_sets_v1");
	wt_buf_printf(b,
		" ("
		" project %s, labelset_id UInt64,"
		" host %s, thread String, container String,"
		" labels Nested(key String, value String))",
		LC(cx), LC(cx));
	ddl_engine(b, cx, "label_sets_v1", "ReplacingMergeTree", "");
	return wt_buf_puts(b, " ORDER BY (project, labelset_id)");
}

/* key 'agg_from_day': aggregates are complete for days >= value */
static int m_agg_state(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "agg_state_v1");
	wt_buf_puts(b, " (key String, value Int64, updated_ns UInt64)");
	ddl_engine(b, cx, "agg_state_v1", "ReplacingMergeTree", "updated_ns");
	return wt_buf_puts(b, " ORDER BY key");
}

/* `db`.name, or `db`.name_local in cluster mode */
static void ddl_local(wt_buf *b, const ddl_ctx *cx, const char *name)
{
	wt_buf_printf(b, "`%s`.%s%s", cx->db, name, cx->cluster ? "_local" : "");
}

static void ddl_mv(wt_buf *b, const ddl_ctx *cx, const char *name, const char *to)
{
	wt_buf_printf(b, "CREATE MATERIALIZED VIEW IF NOT EXISTS `%s`.%s", cx->db, name);
	if (cx->cluster)
		wt_buf_printf(b, " ON CLUSTER `%s`", cx->cluster);
	wt_buf_puts(b, " TO ");
	ddl_local(b, cx, to);
	wt_buf_puts(b, " AS ");
}

/* The view `name` filling aggregate table `to` from profile_samples_v1 with
 * select (stackagg.h) at every resolution */
static int agg_mv(wt_buf *b, const ddl_ctx *cx, const char *name, const char *to,
		  int (*select)(wt_buf *b, const char *src, const char *where, const char *res_list))
{
	wt_buf src = WT_BUF_INIT;
	int rc;

	ddl_mv(b, cx, name, to);
	ddl_local(&src, cx, "profile_samples_v1");
	rc = wt_buf_putc(&src, '\0') || select(b, (const char *)src.data, NULL, "[60, 3600, 86400]");
	wt_buf_free(&src);
	return rc ? WT_ENOMEM : 0;
}

static int m_stack_agg_mv(wt_buf *b, const ddl_ctx *cx)
{
	return agg_mv(b, cx, "stack_agg_mv_v1", "stack_agg_v1", hub_agg_select_sql);
}

static int m_series_agg_mv(wt_buf *b, const ddl_ctx *cx)
{
	return agg_mv(b, cx, "series_agg_mv_v1", "series_agg_v1", hub_series_select_sql);
}

static int m_label_sets_mv(wt_buf *b, const ddl_ctx *cx)
{
	wt_buf src = WT_BUF_INIT;
	int rc;

	ddl_mv(b, cx, "label_sets_mv_v1", "label_sets_v1");
	ddl_local(&src, cx, "profile_samples_v1");
	rc = wt_buf_putc(&src, '\0') || hub_labelsets_select_sql(b, (const char *)src.data, NULL);
	wt_buf_free(&src);
	return rc ? WT_ENOMEM : 0;
}

/* After the views exist: every raw day already stored (up to the newest)
 * is left to the backfill job; an empty database is complete at once. */
static int m_agg_state_init(wt_buf *b, const ddl_ctx *cx)
{
	(void)cx;
	return wt_buf_puts(b, "INSERT INTO agg_state_v1 (key, value, updated_ns)"
			   " SELECT 'agg_from_day', count() = 0 ? 0 : toInt64(toUInt16(max(date))) + 1, 1"
			   " FROM profile_samples_v1");
}

/* After series_agg_v1's view exists on a hub that had stack aggregates:
 * every raw day stored is left to the backfill job again (it rebuilds
 * both tables; queries read those days raw until then). Newer than any
 * coverage row the backfill wrote (updated_ns now, not 1). */
static int m_series_agg_init(wt_buf *b, const ddl_ctx *cx)
{
	(void)cx;
	return wt_buf_puts(b, "INSERT INTO agg_state_v1 (key, value, updated_ns)"
			   " SELECT 'agg_from_day', count() = 0 ? 0 : toInt64(toUInt16(max(date))) + 1,"
			   " toUInt64(now()) * 1000000000 FROM profile_samples_v1");
}

/* Tenancy (versions 70-79): edge → project registrations (edge_projects.h;
 * newest row per (edge_id, project) by updated_ns wins) and when each token
 * was last used at a hub (auth.c: at most one row per token, hub and
 * HUB_TOKEN_USAGE_INTERVAL_S). */
static int m_edge_projects(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "edge_projects_v1");
	wt_buf_puts(b,
		" ("
		" edge_id String, project String, allowed UInt8, actor String,"
		" updated_ns UInt64)");
	ddl_engine(b, cx, "edge_projects_v1", "ReplacingMergeTree", "updated_ns");
	return wt_buf_puts(b,
		" ORDER BY (edge_id, project)");
}

static int m_token_usage(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "token_usage_v1");
	wt_buf_puts(b,
		" ("
		" project String, id String, used_ns UInt64)");
	ddl_engine(b, cx, "token_usage_v1", "ReplacingMergeTree", "used_ns");
	return wt_buf_puts(b,
		" ORDER BY (project, id)");
}

/* Shard keys (cluster mode, docs/operations.md "## Scale out"): data rows of
 * one (project, service) stay on one shard, so one upload's per-day insert
 * is one block on one shard (atomic, deduplicated as a whole) and a query
 * for one service reads one shard; control tables are sharded by their
 * ORDER BY key so ReplacingMergeTree (read with FINAL) sees every version
 * of a row on the same shard. */
static const migration migrations[] = {
	{1, "profile_samples_v1", m_samples, "cityHash64(project, service)"},
	{2, "profile_stacks_v1", m_stacks, "cityHash64(project, stack_id)"},
	{3, "function_rollup_v1", m_rollup, "cityHash64(project, service)"},
	{4, "profile_type_retention_v1", m_type_retention, "cityHash64(project, sample_type)"},
	{5, "projects_v1", m_projects, "cityHash64(name)"},
	{6, "tokens_v1", m_tokens, "cityHash64(token_sha256)"},
	{7, "audit_events_v1", m_audit, "cityHash64(project)"},
	{8, "raw_objects_v1", m_raw_objects, "cityHash64(project, service)"},
	{9, "repl_ledger_v1", m_repl_ledger, "cityHash64(edge_id)"},
	{10, "repl_ledger_v2", m_repl_ledger2, "cityHash64(edge_id)"},
	{11, "repl_claims_v1", m_repl_claims, "cityHash64(edge_id)"},
	{20, "issues_v1", m_issues, "cityHash64(project, issue_id)"},
	{21, "issue_states_v1", m_issue_states, "cityHash64(project, issue_id)"},
	{30, "policies_v1", m_policies, "cityHash64(project)"},
	{31, "worker_leases", m_worker_leases, "cityHash64(job)"},
	{32, "object_deletions_v1", m_object_deletions, "cityHash64(object_key, deletion_id)"},
	{33, "worker_lease_claims", m_lease_claims, "cityHash64(job)"},
	{40, "debug_files_v1", m_debug_files, "cityHash64(project, build_id)"},
	{50, "stack_agg_v1", m_stack_agg, "cityHash64(project, service)"},
	{51, "label_sets_v1", m_label_sets, "cityHash64(project, labelset_id)"},
	{52, "agg_state_v1", m_agg_state, "cityHash64(key)"},
	/* no Distributed table (shard_key NULL): views and statements */
	{53, "stack_agg_mv_v1", m_stack_agg_mv, NULL},
	{54, "label_sets_mv_v1", m_label_sets_mv, NULL},
	{55, "agg_state_init", m_agg_state_init, NULL},
	{56, "series_agg_v1", m_series_agg, "cityHash64(project, service)"},
	{57, "series_agg_mv_v1", m_series_agg_mv, NULL},
	{58, "series_agg_init", m_series_agg_init, NULL},
	{60, "recording_rules_v1", m_recording_rules, "cityHash64(project)"},
	{61, "rule_values_v1", m_rule_values, "cityHash64(project, rule)"},
	{70, "edge_projects_v1", m_edge_projects, "cityHash64(edge_id, project)"},
	{71, "token_usage_v1", m_token_usage, "cityHash64(project, id)"},
};
#define NMIG (sizeof(migrations) / sizeof(migrations[0]))

int hub_sql_alter(wt_buf *b, const hub_ch *ch, const char *table)
{
	const char *c = hub_ch_cluster(ch);

	if (c)
		return wt_buf_printf(b, "ALTER TABLE `%s`.%s_local ON CLUSTER `%s`", hub_ch_database(ch), table, c);
	return wt_buf_printf(b, "ALTER TABLE %s", table);
}

int hub_schema_version(void)
{
	int v = 0;
	size_t i;

	for (i = 0; i < NMIG; i++)
		if (migrations[i].version > v)
			v = migrations[i].version;
	return v;
}

static int applied_cb(void *ctx, char **fields, size_t n)
{
	unsigned char *done = ctx;
	long v = n ? strtol(fields[0], NULL, 10) : 0;
	size_t i;

	/* versions are not contiguous (ranges per feature area): match by value */
	for (i = 0; i < NMIG; i++)
		if (migrations[i].version == v)
			done[i] = 1;
	return 0;
}

static int m_schema_migrations(wt_buf *b, const ddl_ctx *cx)
{
	ddl_create(b, cx, "schema_migrations");
	wt_buf_puts(b, " (version UInt32, name String, applied_at DateTime, server_version String)");
	ddl_engine(b, cx, "schema_migrations", "ReplacingMergeTree", "");
	return wt_buf_puts(b, " ORDER BY version");
}

/* Run the DDL of m (cluster mode: then the Distributed table over the
 * shard-local one, on every server). sql is scratch. */
static int apply_ddl(hub_ch *ch, const ddl_ctx *cx, int (*ddl)(wt_buf *, const ddl_ctx *), const char *name,
		     const char *shard_key, wt_buf *sql, wt_err *err)
{
	int rc;

	wt_buf_reset(sql);
	ddl(sql, cx);
	if ((rc = hub_ch_query_buf(ch, sql, NULL, err)) || !cx->cluster || !shard_key)
		return rc;
	wt_buf_reset(sql);
	wt_buf_printf(sql, "CREATE TABLE IF NOT EXISTS `%s`.%s ON CLUSTER `%s` AS `%s`.%s_local"
		      " ENGINE = Distributed(`%s`, `%s`, %s_local, %s)",
		      cx->db, name, cx->cluster, cx->db, name, cx->cluster, cx->db, name, shard_key);
	return hub_ch_query_buf(ch, sql, NULL, err);
}

int hub_schema_migrate(hub_ch *ch, const char *db, const hub_ch_features *f, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	unsigned char done[NMIG] = {0};
	ddl_ctx cx = {f, hub_ch_cluster(ch), db};
	size_t i;
	int rc;

	wt_buf_printf(&sql, "CREATE DATABASE IF NOT EXISTS `%s`", db);
	if (cx.cluster)
		wt_buf_printf(&sql, " ON CLUSTER `%s`", cx.cluster);
	if (sql.oom || wt_buf_putc(&sql, '\0')) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = hub_ch_query_nodb(ch, (const char *)sql.data, NULL, err)))
		goto out;
	if ((rc = apply_ddl(ch, &cx, m_schema_migrations, "schema_migrations", "version", &sql, err)))
		goto out;
	if ((rc = hub_ch_query(ch, "SELECT version FROM schema_migrations FORMAT TabSeparated", &out, err)))
		goto out;
	hub_tsv_each((char *)out.data, out.len, 1, applied_cb, done);

	for (i = 0; i < NMIG; i++) {
		const migration *m = &migrations[i];
		if (done[i])
			continue;
		if ((rc = apply_ddl(ch, &cx, m->ddl, m->name, m->shard_key, &sql, err))) {
			wt_err_prefix(err, "migration %d (%s)", m->version, m->name);
			goto out;
		}
		wt_buf_reset(&sql);
		wt_buf_printf(&sql, "INSERT INTO schema_migrations (version, name, applied_at, server_version)"
			      " VALUES (%d, ", m->version);
		hub_sql_quote(&sql, m->name);
		wt_buf_puts(&sql, ", now(), ");
		hub_sql_quote(&sql, f->version);
		wt_buf_puts(&sql, ")");
		if (sql.oom || wt_buf_putc(&sql, '\0')) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = hub_ch_query(ch, (const char *)sql.data, NULL, err)))
			goto out;
		wt_info("msg=\"schema migration applied\" version=%d name=%s", m->version, m->name);
	}
out:
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}
