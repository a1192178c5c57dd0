/*
 * daysink.h — rows grouped by UTC day (one partition each), cut into
 * blocks of at most block_rows rows, so that each INSERT of a replication
 * batch touches one partition and stays one ClickHouse block: written as
 * one part, wholly or not at all, and in order. The replication recovery
 * check (repl_apply.c) relies on both.
 *
 * Ownership: the sink owns its buffers; hub_daysink_free releases them.
 */
#ifndef HUB_DAYSINK_H
#define HUB_DAYSINK_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

typedef struct hub_dayrows {
	uint16_t day; /* days since 1970-01-01 (UTC) */
	wt_buf rows;  /* RowBinary rows */
	size_t nrows;
	size_t *cuts; /* byte offsets in rows where a block ends (every block_rows rows) */
	size_t ncuts, capcuts;
	int oom;
} hub_dayrows;

typedef struct hub_daysink {
	hub_dayrows *d;
	size_t n, cap;
	size_t block_rows; /* 0 = one block per day */
	/* Optional: called (by ch_rows.c) each time a day's block has just
	 * ended (dr->rows.len == dr->cuts[dr->ncuts - 1]); it may insert the
	 * day's complete blocks and drop them (hub_dayrows_drop_blocks), so
	 * an upload's rows need not all be held. Nonzero stops the rows. */
	int (*on_block)(void *arg, hub_dayrows *dr, wt_err *err);
	void *arg;
} hub_daysink;

/* Rows already stored for one day (replication recovery). */
typedef struct hub_day_count {
	uint16_t day;
	size_t rows;
} hub_day_count;

/* The buffer for day (created empty on first use), or NULL on OOM. */
hub_dayrows *hub_daysink_get(hub_daysink *s, uint16_t day);
/* Count one row just appended to dr->rows; ends a block every block_rows
 * rows. 0 or WT_ENOMEM. */
int hub_dayrows_row_done(const hub_daysink *s, hub_dayrows *dr);
/* Block b (0 ≤ b ≤ dr->ncuts) of a day: [*off, *off + *len) of dr->rows
 * (the last one may be empty). */
void hub_dayrows_block(const hub_dayrows *dr, size_t b, size_t *off, size_t *len);
/* Forget the day's complete blocks (inserted by the caller): what follows
 * the last cut moves to the front and counts as the start of block 0. */
void hub_dayrows_drop_blocks(hub_dayrows *dr);
void hub_daysink_free(hub_daysink *s);

#endif
