/*
 * ebpf_lock.c — user side of bpf/lock.bpf.c: lock contention (wait time
 * and contentions per stack) from the futex syscall's tracepoints, drained
 * at each flush like the on-CPU and off-CPU probes (edge_ebpf_drain_gen)
 * and built into the `lock` and `mutex_contentions` sample types by
 * ebpf_build.c. The unwind maps and process announcements are the on-CPU
 * probe's (edge_ebpf_cpu_unwind_fds), as for off-CPU time.
 *
 * Attach point: syscalls/sys_{enter,exit}_futex when tracefs is mounted
 * (only futex calls run the program); else the raw sys_enter/sys_exit
 * tracepoints (tp_btf), which every syscall of the machine runs up to the
 * syscall number check — cost in docs/operations.md "Lock contention".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/lock.h"
#include "ebpf_probe.h"
#include "log.h"

#include "bpf/lock.skel.h"

struct edge_ebpf_lock {
	struct wt_lock_bpf *skel;
	struct bpf_link *enter, *exit;
	int raw; /* attached to the raw syscall tracepoints */
	edge_ebpf_gen g;
	edge_ebpf_counters *ctr;
	uint64_t prev[WT_STAT_MAX];
};

int edge_ebpf_lock_open(const edge_ebpf_cfg *cfg, const edge_ebpf_cpu *cpu, edge_ebpf_counters *ctr,
			edge_ebpf_lock **out, wt_err *err)
{
	edge_ebpf_lock *l = calloc(1, sizeof(*l));
	int rc = 0, e, rows_fd, procs_fd;

	*out = NULL;
	if (!l)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	l->ctr = ctr;
	l->skel = wt_lock_bpf__open();
	if (!l->skel) {
		rc = wt_err_set(err, WT_EIO, "ebpf: opening the lock skeleton: %s", strerror(errno));
		goto fail;
	}
	bpf_map__set_max_entries(l->skel->maps.wt_lock_stacks0, (uint32_t)cfg->max_stacks);
	bpf_map__set_max_entries(l->skel->maps.wt_lock_stacks1, (uint32_t)cfg->max_stacks);
	/* two entries (wait time, contentions) per stack and thread */
	bpf_map__set_max_entries(l->skel->maps.wt_lock_counts0, (uint32_t)cfg->max_keys);
	bpf_map__set_max_entries(l->skel->maps.wt_lock_counts1, (uint32_t)cfg->max_keys);
	if (cpu && edge_ebpf_cpu_unwind_fds(cpu, &rows_fd, &procs_fd) == 0) {
		l->skel->rodata->wt_unwind = 1;
		if ((e = bpf_map__reuse_fd(l->skel->maps.wt_unwind_rows, rows_fd)) ||
		    (e = bpf_map__reuse_fd(l->skel->maps.wt_unwind_procs, procs_fd)) ||
		    (e = bpf_map__reuse_fd(l->skel->maps.wt_procs, edge_ebpf_cpu_procs_fd(cpu, 0))) ||
		    (e = bpf_map__reuse_fd(l->skel->maps.wt_new_procs, edge_ebpf_cpu_procs_fd(cpu, 1)))) {
			rc = wt_err_set(err, WT_EIO, "ebpf: sharing the unwind maps with the lock program: %s",
					strerror(-e));
			goto fail;
		}
	} else {
		bpf_map__set_max_entries(l->skel->maps.wt_unwind_rows, 1);
		bpf_map__set_max_entries(l->skel->maps.wt_unwind_procs, 1);
		bpf_map__set_max_entries(l->skel->maps.wt_procs, 1);
		bpf_map__set_max_entries(l->skel->maps.wt_new_procs, (uint32_t)sysconf(_SC_PAGESIZE));
	}
	/* libbpf finds the tracepoints' ids in tracefs at one of these */
	l->raw = access("/sys/kernel/tracing/events/syscalls/sys_enter_futex/id", R_OK) != 0 &&
		 access("/sys/kernel/debug/tracing/events/syscalls/sys_enter_futex/id", R_OK) != 0;
	bpf_program__set_autoload(l->skel->progs.wt_lock_enter_tp, !l->raw);
	bpf_program__set_autoload(l->skel->progs.wt_lock_exit_tp, !l->raw);
	bpf_program__set_autoload(l->skel->progs.wt_lock_enter_raw, l->raw);
	bpf_program__set_autoload(l->skel->progs.wt_lock_exit_raw, l->raw);
	if ((e = wt_lock_bpf__load(l->skel))) {
		rc = wt_err_set(err, WT_EIO, "ebpf: loading the lock program failed: %s", strerror(-e));
		goto fail;
	}
	l->g.gen = (uint32_t *)&l->skel->bss->wt_gen;
	l->g.counts_fd[0] = bpf_map__fd(l->skel->maps.wt_lock_counts0);
	l->g.counts_fd[1] = bpf_map__fd(l->skel->maps.wt_lock_counts1);
	l->g.stacks_fd[0] = bpf_map__fd(l->skel->maps.wt_lock_stacks0);
	l->g.stacks_fd[1] = bpf_map__fd(l->skel->maps.wt_lock_stacks1);
	l->g.max_keys = (size_t)cfg->max_keys;
	l->g.max_stacks = (size_t)cfg->max_stacks;
	/* exit first: a wait whose enter is seen then always has its exit */
	if (!(l->exit = bpf_program__attach(l->raw ? l->skel->progs.wt_lock_exit_raw : l->skel->progs.wt_lock_exit_tp)) ||
	    !(l->enter = bpf_program__attach(l->raw ? l->skel->progs.wt_lock_enter_raw
						    : l->skel->progs.wt_lock_enter_tp))) {
		rc = wt_err_set(err, WT_EIO, "ebpf: attaching the lock program to %s: %s",
				l->raw ? "the raw syscall tracepoints" : "syscalls/sys_*_futex", strerror(errno));
		goto fail;
	}
	wt_info("msg=\"ebpf lock contention attached\" tracepoints=%s",
		l->raw ? "raw_syscalls (tracefs not mounted: every syscall runs the program)" : "syscalls/sys_*_futex");
	*out = l;
	return 0;
fail:
	edge_ebpf_lock_close(l);
	return rc;
}

int edge_ebpf_lock_drain(edge_ebpf_lock *l, edge_ebpf_sink fn, void *arg, wt_err *err)
{
	edge_ebpf_read_stats(bpf_map__fd(l->skel->maps.wt_lock_stats), l->prev, l->ctr);
	return edge_ebpf_drain_gen(&l->g, EDGE_EBPF_LOCK, fn, arg, l->ctr, err);
}

void edge_ebpf_lock_close(edge_ebpf_lock *l)
{
	if (!l)
		return;
	if (l->enter)
		bpf_link__destroy(l->enter);
	if (l->exit)
		bpf_link__destroy(l->exit);
	if (l->skel)
		wt_lock_bpf__destroy(l->skel);
	free(l);
}
