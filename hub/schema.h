/*
 * schema.h — ClickHouse server version detection, the feature flags chosen
 * from it, and the hub's versioned schema migrations (recorded in the
 * `schema_migrations` table). Table layouts and the reasons for their keys
 * are documented in docs/operations.md "## ClickHouse versions and features".
 */
#ifndef HUB_SCHEMA_H
#define HUB_SCHEMA_H

#include "ch_client.h"
#include "err.h"

typedef struct hub_ch_features {
	char version[64];     /* as SELECT version() answered */
	int major, minor;
	int ttl;              /* table TTL (>= 19.6) */
	int storage_policies; /* storage policies / volumes (>= 19.15) */
	int low_cardinality;  /* LowCardinality(String) without opt-in (>= 19.3) */
	int dedup_token;      /* insert_deduplication_token (>= 22.2) */
} hub_ch_features;

/* Parse a version string ("18.16.1", "23.8.2.7") and fill the flags.
 * Returns 0 or WT_EINVAL. Pure; unit-tested. */
int hub_features_from_version(const char *version, hub_ch_features *f);

/* SELECT version() and hub_features_from_version(). */
int hub_schema_detect(hub_ch *ch, hub_ch_features *f, wt_err *err);

/* Create the database (name db) and apply every migration not yet recorded.
 * Idempotent and safe to run from several hubs at once (every statement is
 * IF NOT EXISTS). */
int hub_schema_migrate(hub_ch *ch, const char *db, const hub_ch_features *f, wt_err *err);

/* Append "ALTER TABLE <table>" for one of the hub's tables: in cluster mode
 * "ALTER TABLE <table>_local ON CLUSTER `c`" (mutations and partition
 * drops cannot go through a Distributed table; on Replicated tables they
 * reach every replica). Returns wt_buf's result. */
int hub_sql_alter(wt_buf *b, const hub_ch *ch, const char *table);

/* Number of migrations this build knows (the schema version it expects). */
int hub_schema_version(void);

#endif
