/*
 * repl_rollup.c — the hub's own rollup of a replicated upload (see
 * repl_rollup.h): wt_rollup_build over the decoded original; repl_apply.c
 * inserts its rows through the same path as rows that came in the batch.
 */
#include "repl_rollup.h"

#include <stdlib.h>
#include <string.h>

int hub_repl_rollup_build(const wt_profile *p, int64_t fallback_ns, hub_repl_rollup *out, wt_err *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = wt_rollup_build(p, fallback_ns, &out->r, err)))
		return rc;
	out->n = out->r.n;
	return 0;
}

void hub_repl_rollup_free(hub_repl_rollup *r)
{
	wt_rollup_free(&r->r);
	memset(r, 0, sizeof(*r));
}

static int same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

size_t hub_repl_rollup_diff(const hub_repl_rollup *own, Watchtower__Repl__RollupRow *const *edge, size_t n)
{
	size_t i = 0, k = 0, diff = 0;

	for (;;) {
		while (i < own->n && !own->r.rows[i].self && !own->r.rows[i].total)
			i++;
		while (k < n && !edge[k]->self && !edge[k]->total)
			k++;
		if (i == own->n || k == n)
			break;
		const wt_rollup_row *a = &own->r.rows[i++];
		const Watchtower__Repl__RollupRow *b = edge[k++];
		if (a->minute != b->minute || a->self != b->self || a->total != b->total || !same_str(a->type, b->type) ||
		    !same_str(a->unit, b->unit) || !same_str(a->function, b->function))
			diff++;
	}
	for (; i < own->n; i++)
		diff += own->r.rows[i].self || own->r.rows[i].total;
	for (; k < n; k++)
		diff += edge[k]->self || edge[k]->total;
	return diff;
}
