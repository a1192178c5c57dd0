/*
 * pyroscope_flame.h — our flame trees in Pyroscope's encodings, for the
 * query API of pyroscope_api.c: a tree merged from one or two
 * wt_flame_tree_json() trees (common/flame.c; two for a diff), written as
 * a FlameGraph (names + levels of [x offset, total, self, name] per node,
 * x offsets delta-encoded per level, a node's self value before its
 * children, children sorted by name), a FlameGraphDiff (7 values per
 * node: both sides' x/total/self, then the name) or a wt_profile with one
 * sample per stack that has a self value (for pprof).
 *
 * Ownership: a hub_pf_node tree borrows its names from the JSON trees it
 * was built from (keep them alive); hub_pf_node_free releases the nodes.
 * The encoders allocate the message's repeated fields with malloc, as
 * protobuf_c_message_free_unpacked(…, NULL) frees them.
 */
#ifndef HUB_PYROSCOPE_FLAME_H
#define HUB_PYROSCOPE_FLAME_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"
#include "proto/pyroscope_querier.pb-c.h"

#define HUB_PF_MAX_DEPTH 8192 /* deepest stack hub_pf_to_profile writes */

typedef struct hub_pf_node {
	const char *name; /* borrowed from the JSON trees */
	int64_t total[2], self[2]; /* [0] left (or only) side, [1] right */
	struct hub_pf_node *kids;
	size_t nkids, cap;
} hub_pf_node;

/* Add the JSON tree node j ({"name","self","total","children"}) into d as
 * side 0 or 1, merging children by name. 0 or WT_ENOMEM. */
int hub_pf_node_add(hub_pf_node *d, json_t *j, int side);
void hub_pf_node_free(hub_pf_node *d);

/* Encode side 0 of root (the "total" node) into fg. 0 or WT_ENOMEM. */
int hub_pf_flamegraph(hub_pf_node *root, Querier__V1__FlameGraph *fg);
/* Encode both sides of root into fd (leftTicks, rightTicks, total). */
int hub_pf_diff(hub_pf_node *root, Querier__V1__FlameGraphDiff *fd);
/* Add one sample per node of side 0 with a self value to p (which has one
 * sample type): the stack is the path from the root, functions by name. */
int hub_pf_to_profile(hub_pf_node *root, wt_profile *p, wt_err *err);

#endif
