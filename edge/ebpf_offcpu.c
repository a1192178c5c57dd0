/*
 * ebpf_offcpu.c — user side of bpf/offcpu.bpf.c: blocked time per stack
 * from sched_switch (tp_btf). The minimum duration is rodata, set at load;
 * the unwind maps are the on-CPU probe's (edge_ebpf_cpu_unwind_fds).
 *
 * Threads that block and never run again (they exited while blocked) leave
 * an entry in wt_off_start; each drain removes the entries of threads that
 * no longer exist so the map cannot fill up with them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/offcpu.h"
#include "ebpf_probe.h"
#include "log.h"

#include "bpf/offcpu.skel.h"

/* threads blocked at once (entries allocated on use, ~2 KiB each) */
#define START_ENTRIES 32768

struct edge_ebpf_off {
	struct wt_offcpu_bpf *skel;
	struct bpf_link *link;
	size_t max_keys;
	edge_ebpf_gen g;
	edge_ebpf_counters *ctr;
	uint64_t prev[WT_STAT_MAX];
};

int edge_ebpf_off_open(const edge_ebpf_cfg *cfg, const edge_ebpf_cpu *cpu, edge_ebpf_counters *ctr,
		       edge_ebpf_off **out, wt_err *err)
{
	edge_ebpf_off *o = calloc(1, sizeof(*o));
	int rc = 0, e, rows_fd, procs_fd;

	*out = NULL;
	if (!o)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	o->ctr = ctr;
	o->max_keys = (size_t)cfg->max_keys;
	o->skel = wt_offcpu_bpf__open();
	if (!o->skel) {
		rc = wt_err_set(err, WT_EIO, "ebpf: opening the offcpu skeleton: %s", strerror(errno));
		goto fail;
	}
	o->skel->rodata->wt_min_ns = (uint64_t)cfg->offcpu_min_us * 1000;
	bpf_map__set_max_entries(o->skel->maps.wt_off_stacks0, (uint32_t)cfg->max_stacks);
	bpf_map__set_max_entries(o->skel->maps.wt_off_stacks1, (uint32_t)cfg->max_stacks);
	bpf_map__set_max_entries(o->skel->maps.wt_off_counts0, (uint32_t)cfg->max_keys);
	bpf_map__set_max_entries(o->skel->maps.wt_off_counts1, (uint32_t)cfg->max_keys);
	bpf_map__set_max_entries(o->skel->maps.wt_off_start, START_ENTRIES);
	/* CPython frames: the on-CPU program's process and thread maps and its
	 * new-stack ring (without it, nothing registers processes here) */
	int pyfd[3];
	if (edge_ebpf_cpu_py_fds(cpu, pyfd) == 0 &&
	    (bpf_map__reuse_fd(o->skel->maps.wt_py_procs, pyfd[0]) ||
	     bpf_map__reuse_fd(o->skel->maps.wt_py_threads, pyfd[1]) ||
	     bpf_map__reuse_fd(o->skel->maps.wt_py_new_stacks, pyfd[2]))) {
		rc = wt_err_set(err, WT_EIO, "ebpf: sharing the CPython maps with the offcpu program: %s", strerror(errno));
		goto fail;
	}
	/* the on-CPU probe's tables and its announcements of new process
	 * images (its maps, shared) */
	if (edge_ebpf_cpu_unwind_fds(cpu, &rows_fd, &procs_fd) == 0) {
		o->skel->rodata->wt_unwind = 1;
		if ((e = bpf_map__reuse_fd(o->skel->maps.wt_unwind_rows, rows_fd)) ||
		    (e = bpf_map__reuse_fd(o->skel->maps.wt_unwind_procs, procs_fd)) ||
		    (e = bpf_map__reuse_fd(o->skel->maps.wt_procs, edge_ebpf_cpu_procs_fd(cpu, 0))) ||
		    (e = bpf_map__reuse_fd(o->skel->maps.wt_new_procs, edge_ebpf_cpu_procs_fd(cpu, 1)))) {
			rc = wt_err_set(err, WT_EIO, "ebpf: sharing the unwind maps with wt_offcpu_switch: %s",
					strerror(-e));
			goto fail;
		}
	} else {
		/* unused without the unwinder: as small as they can be */
		bpf_map__set_max_entries(o->skel->maps.wt_unwind_rows, 1);
		bpf_map__set_max_entries(o->skel->maps.wt_unwind_procs, 1);
		bpf_map__set_max_entries(o->skel->maps.wt_procs, 1);
		bpf_map__set_max_entries(o->skel->maps.wt_new_procs, (uint32_t)sysconf(_SC_PAGESIZE));
	}
	if ((e = wt_offcpu_bpf__load(o->skel))) {
		rc = wt_err_set(err, WT_EIO, "ebpf: loading wt_offcpu_switch (tp_btf/sched_switch) failed: %s", strerror(-e));
		goto fail;
	}
	o->g.gen = (uint32_t *)&o->skel->bss->wt_gen;
	o->g.counts_fd[0] = bpf_map__fd(o->skel->maps.wt_off_counts0);
	o->g.counts_fd[1] = bpf_map__fd(o->skel->maps.wt_off_counts1);
	o->g.stacks_fd[0] = bpf_map__fd(o->skel->maps.wt_off_stacks0);
	o->g.stacks_fd[1] = bpf_map__fd(o->skel->maps.wt_off_stacks1);
	o->g.max_keys = (size_t)cfg->max_keys;
	o->g.max_stacks = (size_t)cfg->max_stacks;
	o->link = bpf_program__attach(o->skel->progs.wt_offcpu_switch);
	if (!o->link) {
		rc = wt_err_set(err, WT_EIO, "ebpf: attaching wt_offcpu_switch: %s", strerror(errno));
		goto fail;
	}
	*out = o;
	return 0;
fail:
	edge_ebpf_off_close(o);
	return rc;
}

void edge_ebpf_off_scan(edge_ebpf_off *o, edge_ebpf_seen fn, void *arg)
{
	/* both generations: the one being written and, during a drain, the other */
	edge_ebpf_scan_keys(o->g.counts_fd[0], o->max_keys, fn, arg);
	edge_ebpf_scan_keys(o->g.counts_fd[1], o->max_keys, fn, arg);
}

static void prune_start(edge_ebpf_off *o)
{
	int fd = bpf_map__fd(o->skel->maps.wt_off_start);
	uint32_t *keys = calloc(START_ENTRIES, sizeof(*keys));
	size_t n = 0;
	char path[64];
	if (!keys)
		return;
	uint32_t *prev = NULL;
	while (n < START_ENTRIES && bpf_map_get_next_key(fd, prev, &keys[n]) == 0) {
		prev = &keys[n];
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/%u", keys[i]);
		if (access(path, F_OK) != 0 && errno == ENOENT)
			bpf_map_delete_elem(fd, &keys[i]);
	}
	free(keys);
}

int edge_ebpf_off_drain(edge_ebpf_off *o, edge_ebpf_sink fn, void *arg, wt_err *err)
{
	edge_ebpf_read_stats(bpf_map__fd(o->skel->maps.wt_off_stats), o->prev, o->ctr);
	prune_start(o);
	return edge_ebpf_drain_gen(&o->g, EDGE_EBPF_OFFCPU, fn, arg, o->ctr, err);
}

void edge_ebpf_off_close(edge_ebpf_off *o)
{
	if (!o)
		return;
	if (o->link)
		bpf_link__destroy(o->link);
	if (o->skel)
		wt_offcpu_bpf__destroy(o->skel);
	free(o);
}
