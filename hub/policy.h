/*
 * policy.h — per-project profiling policy (docs/api.md "### Policy"): the JSON document,
 * its validation, the effective rules one edge gets, and its versioned
 * storage in ClickHouse (policies_v1, one row per revision).
 *
 * Document (docs/api.md "Policy" has the full reference):
 *   {"version": 1,
 *    "rules":  {"sample_types": {"cpu": true, "alloc_space": false},
 *               "ebpf":   {"enabled": true, "frequency_hz": 99},
 *               "offcpu": {"enabled": true, "threshold_us": 1000},
 *               "services": [{"match": {"service": "api-*"} | {"label": {"k": "v"}},
 *                             "sample_types": …, "ebpf": …, "offcpu": …}, …]},
 *    "limits": {"max_body": BYTES, "max_samples": N},
 *    "edges":  {"edge1": {"rules": {…}, "limits": {…}}}}
 * Per-service rules: first match wins (edge rules first, then project rules).
 *
 * Ownership: functions returning json_t* return a new reference.
 */
#ifndef HUB_POLICY_H
#define HUB_POLICY_H

#include <jansson.h>
#include <stdint.h>

#include "buf.h"
#include "ch_client.h"
#include "err.h"

#define HUB_POLICY_MAX_BYTES (64 * 1024)
#define HUB_POLICY_MAX_SERVICES 64
#define HUB_POLICY_MAX_EDGES 256
#define HUB_POLICY_MAX_LABELS 16
#define HUB_POLICY_FREQ_MAX 10000
#define HUB_POLICY_THRESHOLD_MAX_US 10000000LL

/* Validate doc. 0, or WT_EINVAL with a message naming the JSON path
 * ("rules.ebpf.frequency_hz: expected an integer 1-10000"). Pure. */
int hub_policy_validate(const json_t *doc, wt_err *err);

/* The policy in force when none was stored: {"version":1,"rules":{}}. */
json_t *hub_policy_default(void);

/* Effective rules of doc for edge_id (NULL = no edge override):
 * {"sample_types":{…},"ebpf":{…},"offcpu":{…},"services":[…],"limits":{…}}.
 * NULL on OOM. doc must be valid. */
json_t *hub_policy_effective(const json_t *doc, const char *edge_id);

/* Append a short description of what changed between old and neu
 * ("rules.ebpf.frequency_hz: 99 -> 49; limits.max_body: added") to out,
 * at most max bytes (then "…"). */
int hub_policy_diff(const json_t *old, const json_t *neu, wt_buf *out, size_t max);

typedef struct hub_policy_rec {
	json_t *doc;          /* owned */
	uint64_t revision;    /* 0 = none stored (doc is the default) */
	char updated_by[64];
	int64_t updated_ns;
} hub_policy_rec;

/* Latest revision of project's policy (or the default, revision 0). */
int hub_policy_load(hub_ch *ch, const char *project, hub_policy_rec *out, wt_err *err);
void hub_policy_rec_free(hub_policy_rec *r);

/* Store doc as revision prev+1 (doc must be valid). Two concurrent PUTs may
 * pick the same revision: the later updated_ns wins on read. */
int hub_policy_store(hub_ch *ch, const char *project, const json_t *doc, const char *actor,
		     uint64_t prev_revision, uint64_t *revision, wt_err *err);

/* Change notification inside this process (wakes edge long-polls at once;
 * changes made through other hubs are seen by the periodic re-check). */
void hub_policy_bump(void);
uint64_t hub_policy_generation(void);
/* Wait up to ms for the generation to differ from gen. */
void hub_policy_wait(uint64_t gen, int ms);

#endif
