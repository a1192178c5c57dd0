/*
 * flame.h — the query views shared by edge (local queries) and hub (global
 * queries): a flame graph tree, a function table and a call graph, built from
 * (stack of frame names ROOT FIRST, value) pairs, rendered as JSON (jansson).
 *
 * JSON shapes (docs/api.md):
 *   flamegraph: {"unit":U,"total":N,"truncated":B,
 *                "root":{"name":"total","self":S,"total":N,"children":[...]}}
 *   table:      {"unit":U,"total":N,"rows":[{"function":F,"self":S,"total":T}]}
 *               rows sorted by self desc, then total desc, then name.
 *   callgraph:  {"unit":U,"total":N,"nodes":[{"id":i,"function":F,"self":S,
 *                "total":T}],"edges":[{"from":i,"to":j,"value":V}]}
 * Function totals count a function once per stack (recursion-safe).
 *
 * Ownership: wt_flame_new() returns a builder owned by the caller
 * (wt_flame_free). The *_json() functions return new jansson references.
 */
#ifndef WT_FLAME_H
#define WT_FLAME_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "profile.h"

typedef struct wt_flame wt_flame;

wt_flame *wt_flame_new(void);
/* Do not keep the call-graph edges (a third of the work of an add): for
 * builders whose callgraph view is never asked for (flamegraph, table,
 * diff). Call before the first add; wt_flame_callgraph_json then has no
 * edges. */
void wt_flame_skip_edges(wt_flame *f);
/* Keep only what one view needs (call before the first add):
 * wt_flame_skip_tree — no tree nodes below the root (a table view:
 * wt_flame_tree_json then shows only the root, with the total);
 * wt_flame_skip_functions — no per-function self/total (a flame graph
 * view: wt_flame_fn finds nothing, the table and call graph are empty). */
void wt_flame_skip_tree(wt_flame *f);
void wt_flame_skip_functions(wt_flame *f);
/* Room for about names distinct names and nodes tree nodes (a caller that
 * knows its sizes saves the growing); a hint: 0 or WT_ENOMEM. */
int wt_flame_reserve(wt_flame *f, size_t names, size_t nodes);
void wt_flame_free(wt_flame *f);

/* Add value for the stack frames[0..n) given ROOT FIRST. 0 or WT_ENOMEM. */
int wt_flame_add(wt_flame *f, const char *const *frames, size_t n, int64_t value);

/* The same in two steps, for callers that add the same frames many times:
 * wt_flame_intern gives frame's name id in this builder (as wt_flame_add
 * interns it), wt_flame_add_ids adds value for the stack of name ids[0..n)
 * ROOT FIRST (ids from this builder's wt_flame_intern). 0 or WT_ENOMEM
 * (WT_EINVAL for an id the builder did not give). */
int wt_flame_intern(wt_flame *f, const char *frame, uint32_t *id);
int wt_flame_add_ids(wt_flame *f, const uint32_t *ids, size_t n, int64_t value);

/* wt_flame_intern for names[0..n), which the caller knows to be distinct
 * from each other (e.g. the entries of a dictionary): ids[i] = the id
 * wt_flame_intern would give. On a builder holding few names (a new one)
 * they are added without hashing (indexed only if wt_flame_intern is
 * called later); else, or when a name is shown shorter than stored
 * (symref.h), one by one as wt_flame_intern does. 0 or WT_ENOMEM. */
int wt_flame_intern_new(wt_flame *f, const char *const *names, size_t n, uint32_t *ids);

/* Many stacks at once: stack s (s < n) is ids[off[s] .. off[s] + len[s])
 * ROOT FIRST (name ids as for wt_flame_add_ids) with value values[s]. The
 * views are those of wt_flame_add_ids called for each stack in order,
 * but the tree is built a depth at a time (each distinct call-path prefix
 * found once, by sorting the stacks' frames at that depth, instead of a
 * hash lookup per frame); tree node ids then run depth by depth (what
 * breaks ties where wt_flame_tree_json cuts at max_nodes: shallower
 * first). Temporary memory: about 64 bytes per stack, and 4 bytes per
 * frame when there are more than wt_flame_bulk_cols_frames frames in all
 * (then copied a depth at a time, see flame.c). 0, WT_ENOMEM or
 * WT_EINVAL (an id the builder did not give). */
extern size_t wt_flame_bulk_cols_frames; /* 4 Mi; the tests set 0 to take that path on small input */
int wt_flame_add_stacks(wt_flame *f, const uint32_t *ids, const uint32_t *off, const uint32_t *len,
			const int64_t *values, size_t n);

/* Per-function figures without rendering a table: name ids run from 0 to
 * wt_flame_nnames(f) - 1; wt_flame_fn gives id's name (owned by f), self
 * and total and returns 1 when the name appeared in some stack (as a row
 * of wt_flame_table_json), else 0. */
size_t wt_flame_nnames(const wt_flame *f);
int wt_flame_fn(const wt_flame *f, size_t id, const char **name, int64_t *self, int64_t *total);

/* Add every sample of type type_idx of p. */
int wt_flame_add_profile(wt_flame *f, const wt_profile *p, size_t type_idx, wt_err *err);

int64_t wt_flame_total(const wt_flame *f);

/* max_nodes bounds the tree (smallest subtrees are folded into their parent's
 * self value and "truncated":true is set); 0 = no limit. */
json_t *wt_flame_tree_json(const wt_flame *f, const char *unit, size_t max_nodes);
/* The same tree written straight into out as compact JSON text, byte for
 * byte what json_dumps(wt_flame_tree_json(...), JSON_COMPACT) gives
 * (wt_buf_json_str: a name that is not valid UTF-8, which jansson
 * refuses, gets U+FFFD), without a jansson object per node. extra, when
 * not NULL, is appended before the document's closing brace (members such
 * as ,"source":"edge", with their leading comma). 0, WT_ENOMEM, or
 * WT_ELIMIT (2^30 nodes or more). */
int wt_flame_tree_text(const wt_flame *f, const char *unit, size_t max_nodes, const char *extra, wt_buf *out);
/* limit rows (0 = all). */
json_t *wt_flame_table_json(const wt_flame *f, const char *unit, size_t limit);
json_t *wt_flame_callgraph_json(const wt_flame *f, const char *unit, size_t max_nodes);

#endif
