/*
 * deletion.h — deleting raw originals whose index rows are being removed
 * (deletion API, retention), with failures kept in object_deletions_v1 for
 * the daily retry (hub_deletion_retry in worker.h). See deletion.c.
 */
#ifndef HUB_DELETION_H
#define HUB_DELETION_H

#include <stddef.h>

#include "ch_client.h"
#include "err.h"

struct hub_ctx;

typedef struct hub_release_stats {
	size_t deleted; /* objects removed */
	size_t kept;    /* still referenced by rows outside cond */
	size_t failed;  /* recorded for retry */
} hub_release_stats;

/* cond: SQL condition over raw_objects_v1 selecting the rows being removed
 * (built by the caller from validated, quoted values). Deletes every object
 * only those rows name; records failures under deletion_id. The caller
 * removes the rows afterwards. */
int hub_objects_release(struct hub_ctx *ctx, hub_ch *ch, const char *cond, const char *project,
			const char *deletion_id, hub_release_stats *st, wt_err *err);

#endif
