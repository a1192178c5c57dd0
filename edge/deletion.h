/*
 * deletion.h — applying the hub's audited deletions to the edge's buffer
 * (docs/operations.md "## Retention, archive and deletion": edges also
 * delete matching data still in their buffers).
 *
 * The hub's remote config lists each project's recent deletions
 * (deletion_id, before_ns, service or null = all); config_client.c calls
 * edge_deletion_apply() for each. A deletion runs once: its id is kept in
 * CF meta under "deletions/<id>" (LE64 unix ns when applied).
 *
 * What is deleted, for keys of that project (and service, if given):
 *   - CF rollup and stacks: minutes ending at or before `before`
 *     (minute + 1 <= before in minutes, the hub's function_rollup_v1 rule);
 *   - CF raw and rolluplog: records received before `before` that are
 *     ALREADY replicated (seq <= repl/raw_cursor).
 * Unreplicated records are left alone (never dropped silently): they
 * reach the hub later and are not covered by that deletion.
 *
 * Ownership: store is borrowed; strings are only read during the call.
 */
#ifndef EDGE_DELETION_H
#define EDGE_DELETION_H

#include <stdint.h>

#include "err.h"
#include "buffer.h"

#define EDGE_META_DELETIONS "deletions/"

/* Returns 1 when applied now, 0 when it was applied before, or a negative
 * WT_E* code (err set). service may be NULL (all services). */
int edge_deletion_apply(edge_buffer *s, const char *deletion_id, const char *project, const char *service,
			int64_t before_ns, wt_err *err);

#endif
