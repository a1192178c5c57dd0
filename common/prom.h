/*
 * prom.h — the one Prometheus text-exposition writer (format 0.0.4), used by
 * the edge's and the hub's GET /metrics and the eBPF sampler's metrics.
 * Named prom, not metrics, so that it never shadows hub/metrics.h (the
 * hub's counters) on the include path.
 *
 * A family is "# HELP name help\n# TYPE name type\n" followed by samples
 * "name{k="v",...} value\n". Label values are escaped (\\, \", \n) here;
 * names, label keys and HELP text are the caller's constants. Integers
 * print as integers; doubles with the precision the caller gives (the
 * daemons use %.3f for ages and timestamps, %.6f for summed seconds).
 * Everything appends to a wt_buf; allocation failure shows as b->oom.
 */
#ifndef WT_PROM_H
#define WT_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* "# HELP" and "# TYPE" lines; type is "counter", "gauge" or "histogram". */
void wt_prom_family(wt_buf *b, const char *name, const char *type, const char *help);

/* One sample. lk/lv: one label (lk NULL: none). */
void wt_prom_u64(wt_buf *b, const char *name, const char *lk, const char *lv, uint64_t v);
void wt_prom_i64(wt_buf *b, const char *name, const char *lk, const char *lv, int64_t v);
void wt_prom_f(wt_buf *b, const char *name, const char *lk, const char *lv, int prec, double v);
/* One sample with labels kv = {k1, v1, k2, v2, ..., NULL}. */
void wt_prom_labels_u64(wt_buf *b, const char *name, const char *const *kv, uint64_t v);
void wt_prom_labels_i64(wt_buf *b, const char *name, const char *const *kv, int64_t v);
void wt_prom_labels_f(wt_buf *b, const char *name, const char *const *kv, int prec, double v);
/* One sample whose label text ("k=\"v\",...") the caller built with
 * wt_prom_escape (the hub's recording rules keep series keyed by it). */
void wt_prom_raw_i64(wt_buf *b, const char *name, const char *labels, int64_t v);

/* A whole family with one unlabelled sample. */
void wt_prom_counter(wt_buf *b, const char *name, const char *help, uint64_t v);
void wt_prom_counter_f(wt_buf *b, const char *name, const char *help, int prec, double v);
void wt_prom_gauge(wt_buf *b, const char *name, const char *help, int64_t v);
void wt_prom_gauge_f(wt_buf *b, const char *name, const char *help, int prec, double v);

/* A histogram family: counts[i] observations <= bounds[i] (not cumulative;
 * written cumulative), over the n bounds, then +Inf (= count), _sum, _count. */
void wt_prom_histogram(wt_buf *b, const char *name, const char *help, const double *bounds,
		       const uint64_t *counts, size_t n, uint64_t count, double sum);

/* Append key as a Prometheus label name: every byte outside
 * [A-Za-z0-9_] written as '_' ("k8s/pod" → k8s_pod, as Prometheus' own
 * translation of OpenTelemetry attribute names does). key is a label key
 * of the upload rule (common/upload.h), so it does not start with a digit. */
void wt_prom_label_name(wt_buf *b, const char *key);
/* 1 when a and b are written as the same label name. */
int wt_prom_label_name_eq(const char *a, const char *b);

/* Append v escaped as a label value (no quotes). */
void wt_prom_escape(wt_buf *b, const char *v);

#endif
