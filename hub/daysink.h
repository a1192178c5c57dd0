/*
 * daysink.h — rows grouped by UTC day, so that each day's rows of a
 * replication batch go to ClickHouse as ONE insert into ONE partition.
 * ClickHouse writes such an insert as a single part, atomically: after a
 * crash it is either wholly there or not at all, which is what makes the
 * replication recovery check (repl_apply.c) exact.
 *
 * Ownership: the sink owns its buffers; hub_daysink_free releases them.
 */
#ifndef HUB_DAYSINK_H
#define HUB_DAYSINK_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct hub_dayrows {
	uint16_t day; /* days since 1970-01-01 (UTC) */
	wt_buf rows;  /* RowBinary rows */
	size_t nrows;
} hub_dayrows;

typedef struct hub_daysink {
	hub_dayrows *d;
	size_t n, cap;
} hub_daysink;

/* The buffer for day (created empty on first use), or NULL on OOM. */
hub_dayrows *hub_daysink_get(hub_daysink *s, uint16_t day);
void hub_daysink_free(hub_daysink *s);

#endif
