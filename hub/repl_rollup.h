/*
 * repl_rollup.h — the function rollup of a replicated upload as the hub
 * computes it from the decoded original (common/rollup.c, the same code and
 * time fallback the edge uses). Its rows are wt_rollup_rows (no protobuf
 * copy: at millions of functions that copy was a quarter of a GB). The hub stores these rows instead of the ones the edge sent, so
 * an edge cannot make the rollup disagree with the samples; the edge's rows
 * are only used for an upload whose original the edge dropped (disk quota).
 */
#ifndef HUB_REPL_ROLLUP_H
#define HUB_REPL_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"
#include "proto/repl.pb-c.h"
#include "rollup.h"

typedef struct hub_repl_rollup {
	wt_rollup r; /* r.rows: sorted by (type, minute, function) */
	size_t n;    /* r.n */
} hub_repl_rollup;

/* Build from p (samples with time 0 at p->time_ns, else fallback_ns).
 * out is owned by the caller: hub_repl_rollup_free (also after failure). */
int hub_repl_rollup_build(const wt_profile *p, int64_t fallback_ns, hub_repl_rollup *out, wt_err *err);
void hub_repl_rollup_free(hub_repl_rollup *r);

/* Number of the edge's rows that differ from ours (0: the same rows in the
 * same order, rows with self = total = 0 ignored on both sides). */
size_t hub_repl_rollup_diff(const hub_repl_rollup *own, Watchtower__Repl__RollupRow *const *edge, size_t n);

#endif
