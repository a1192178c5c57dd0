/*
 * ebpf.h — the edge's whole-system eBPF sampler (docs/operations.md
 * "## eBPF sampler", docs/profilers.md "### The edge's own eBPF sampler").
 *
 * One sampler thread owns the probes (ebpf_probe.h); a discovery thread
 * captures the mappings of each new process image the moment the BPF
 * program announces it (so short-lived processes, and a process after an
 * exec, symbolize); the sampler thread every flush_interval_s drains the in-kernel aggregates, symbolizes them
 * (symbolize.h), builds one wt_profile per service (types cpu and offcpu,
 * nanoseconds) and submits each through the ordinary ingest pipeline
 * (edge_ingest_prepare_fmt: raw pprof original, rollup, stacks; one group
 * commit) to the project edge.default_project.
 *
 * The sampler always runs a (cheap) thread so that SIGHUP — or
 * edge_ebpf_apply from remote policy — can turn it on, off or retune it
 * live; with enabled = false nothing is loaded into the kernel.
 *
 * Ownership: edge_ebpf_start returns an object owned by the caller, stopped
 * and freed by edge_ebpf_stop (which flushes what was sampled, then
 * unloads every BPF program and map). srv and cfg must outlive it.
 */
#ifndef EDGE_EBPF_H
#define EDGE_EBPF_H

#include "buf.h"
#include "config.h"
#include "err.h"

struct edge_server;
typedef struct edge_ebpf edge_ebpf;

/* Start the sampler thread; config_path (may be NULL) is re-read on
 * SIGHUP for its ebpf section. Loading failures when enabled are not
 * fatal to the edge: they are logged, exposed in /metrics
 * (wt_edge_ebpf_enabled 0, wt_edge_ebpf_load_errors_total) and retried
 * on the next reload. */
int edge_ebpf_start(struct edge_server *srv, const edge_config *cfg, const char *config_path, edge_ebpf **out,
		    wt_err *err);
/* Apply a new ebpf section live (copied). Thread-safe; takes effect
 * within ~100 ms on the sampler thread. */
int edge_ebpf_apply(edge_ebpf *e, const edge_ebpf_cfg *next);
/* Request a reload from config_path (what SIGHUP does: edge/server.c reads
 * it from common/signals.h's signalfd). NULL-safe. */
void edge_ebpf_reload(edge_ebpf *e);
void edge_ebpf_stop(edge_ebpf *e);

/* Prometheus text for /metrics (e may be NULL: nothing). */
void edge_ebpf_metrics(edge_ebpf *e, wt_buf *b);

#endif
