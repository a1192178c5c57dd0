/*
 * recording_rules.h — per-project recording rules: metrics derived from
 * profiles at ingest time (docs/api.md "Recording rules").
 *
 * A rule names a service, a sample type, a function regular expression
 * (POSIX extended, unanchored like grep -E) and whether it sums the
 * samples whose leaf function matches ("self") or whose stack holds a
 * matching function at least once ("total"), broken down by the labels it
 * keeps. Every upload the hub stores after the rule exists is evaluated
 * exactly, sample by sample: the per-minute values go to rule_values_v1
 * (the series of GET …/recording-rules/{name}/series) and into this
 * process's counters, exposed on /metrics as
 * wt_profile_rule_value{project,rule,service,type,unit,<kept labels>}
 * (at most recording_rules.max_series series; the rest are counted in
 * wt_profile_rule_series_dropped_total).
 *
 * Rules are stored in recording_rules_v1 (one revision per PUT) and cached
 * per project for a second, so a PUT through another hub applies within
 * that time.
 */
#ifndef HUB_RECORDING_RULES_H
#define HUB_RECORDING_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ch_client.h"
#include "err.h"
#include "hub.h"
#include "params.h"
#include "profile.h"

/* Route handlers (rows of server.c's table): GET|PUT
 * /v1/projects/{p}/recording-rules and
 * GET /v1/projects/{p}/recording-rules/{id: the rule name}/series. */
int hub_handle_rules(hub_req *r, wt_err *err);
int hub_handle_rule_series(hub_req *r, wt_err *err);

/* Evaluate project's rules for service over p (upload upload_id, just
 * stored; upload labels ul override the samples' labels; samples without
 * a time are placed at p->time_ns or fallback_ns), store the values and
 * count them. 0 (also when no rule applies) or the ClickHouse error. */
int hub_rules_apply(hub_ch *ch, const char *project, const char *service, const char *upload_id,
		    const hub_label_param *ul, size_t nul, const wt_profile *p, int64_t fallback_ns, wt_err *err);

/* The same in three steps, for replication (repl_apply.c), which stores
 * a batch's values with its data rows and counts them only once the batch
 * is applied: eval (→ *out, NULL when no rule applies; caller frees with
 * hub_rules_pending_free), store (recovery: skip when the upload's values
 * are already stored), count. */
typedef struct hub_rules_pending hub_rules_pending;
int hub_rules_eval(hub_ch *ch, const char *project, const char *service, const char *upload_id,
		   const hub_label_param *ul, size_t nul, const wt_profile *p, int64_t fallback_ns,
		   hub_rules_pending **out, wt_err *err);
int hub_rules_store(hub_ch *ch, const hub_rules_pending *pd, int recovery, wt_err *err);
void hub_rules_count(const hub_rules_pending *pd);
void hub_rules_pending_free(hub_rules_pending *pd);

/* Set the cap on counter series (config recording_rules.max_series). */
void hub_rules_set_max_series(size_t n);

/* Append the counters in Prometheus text format. */
int hub_rules_metrics_render(wt_buf *out);

#endif
