/*
 * ch_client.h — ClickHouse over its HTTP interface (libcurl).
 *
 * One hub_ch per thread (it owns a CURL easy handle, which keeps the
 * connection alive between requests). Requests carry the configured
 * database, basic auth and timeouts. Idempotent requests (queries, DDL) are
 * retried with exponential backoff on transport errors and 5xx answers that
 * say the server is overloaded; inserts are retried only when the
 * connection could not be made at all (nothing was sent), because 18.16
 * cannot deduplicate a retried insert into a non-replicated table.
 *
 * Cluster mode (conf->cluster set, docs/operations.md "## Scale out"): every
 * request carries insert_distributed_sync=1 (a Distributed insert returns
 * only once every shard's block is in a replica, so "the insert succeeded"
 * still means "the rows are stored"), load_balancing=in_order and
 * prefer_localhost_replica=0 (every hub reads and writes the first healthy
 * replica of each shard, whichever server it talks to: a hub reads what
 * another hub just wrote). Inserts are then also retried after a transport
 * error: the tables are Replicated and a retried identical block is dropped
 * by ClickHouse's block deduplication.
 *
 * Results are read into a wt_buf bounded by max_result_bytes (WT_ELIMIT
 * beyond it), so a runaway query cannot take the hub's memory.
 *
 * Errors: WT_EUNAVAIL when ClickHouse cannot be reached or timed out (the
 * caller answers 503 and the health monitor is told), WT_EIO when it
 * answered with an error (message = ClickHouse's first line).
 */
#ifndef HUB_CH_CLIENT_H
#define HUB_CH_CLIENT_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

typedef struct hub_ch_conf {
	const char *url;       /* "http://127.0.0.1:8123" */
	const char *database;  /* may be NULL for server-level statements */
	const char *user, *password;
	const char *cluster;   /* NULL/"": one server; else the <remote_servers> name */
	int timeout_ms, connect_timeout_ms;
	int retries, backoff_ms;
	size_t max_result_bytes;
} hub_ch_conf;

typedef struct hub_ch hub_ch;

/* Returns NULL on out-of-memory. conf must outlive the client. */
hub_ch *hub_ch_new(const hub_ch_conf *conf);
void hub_ch_free(hub_ch *ch);

/* Run sql (sent as the POST body) and append the raw answer to *out (may be
 * NULL for statements). Retried per the rules above. */
int hub_ch_query(hub_ch *ch, const char *sql, wt_buf *out, wt_err *err);

/* hub_ch_query with SQL built in a wt_buf (checks its oom flag and
 * NUL-terminates it). */
int hub_ch_query_buf(hub_ch *ch, wt_buf *sql, wt_buf *out, wt_err *err);

/* Same, without using the configured database (for CREATE DATABASE). */
int hub_ch_query_nodb(hub_ch *ch, const char *sql, wt_buf *out, wt_err *err);

/* INSERT: insert_sql is "INSERT INTO t (cols) FORMAT RowBinary" (sent in the
 * URL), data the rows (sent as the body). */
int hub_ch_insert(hub_ch *ch, const char *insert_sql, const void *data, size_t len, wt_err *err);

/* conf->cluster, or NULL in single-server mode. */
const char *hub_ch_cluster(const hub_ch *ch);

/* conf->database ("" when unset). */
const char *hub_ch_database(const hub_ch *ch);

/* GET /ping with the connect timeout. 0 or WT_EUNAVAIL. */
int hub_ch_ping(hub_ch *ch, wt_err *err);

/* Called (from any thread) whenever a request finds ClickHouse unreachable;
 * set once by the store so the health monitor learns at once. */
void hub_ch_set_down_hook(void (*fn)(void));

#endif
