/*
 * ebpf_lock.c — user side of bpf/lock.bpf.c: lock contention (wait time
 * and contentions per stack) from the futex syscall's tracepoints, drained
 * at each flush like the on-CPU and off-CPU probes (edge_ebpf_drain_gen)
 * and built into the `lock` and `mutex_contentions` sample types by
 * ebpf_build.c. The unwind maps and process announcements are the on-CPU
 * probe's (edge_ebpf_cpu_unwind_fds), as for off-CPU time.
 *
 * Attach point: syscalls/sys_{enter,exit}_futex (only futex calls run the
 * program). Their perf event ids are in tracefs: libbpf reads them where
 * tracefs is mounted; where it is not, a child process mounts one in a
 * mount namespace of its own (private: the machine's mounts do not
 * change) and reads them there. Failing both, the raw sys_enter/sys_exit
 * tracepoints (tp_btf), which every syscall of the machine runs up to the
 * syscall number check — costs in docs/operations.md "Lock contention".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

enum { VIA_TRACEFS, VIA_PRIVATE_TRACEFS, VIA_RAW };
static const char *const via_name[] = {"syscalls/sys_*_futex", "syscalls/sys_*_futex (ids from a private tracefs mount)",
				       "raw_syscalls (no tracefs: every syscall runs the program)"};

/* the decimal number in file path, or -1 (async-signal-safe: for the
 * forked child below) */
static int read_id(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC), v = 0;
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (buf[i] - '0');
	return v;
}

/* The perf event ids of syscalls/sys_enter_futex and sys_exit_futex from a
 * tracefs mounted in a child's own mount namespace (made private first, so
 * nothing propagates to the machine's mounts; it goes away with the
 * child). 0, or -1. The child runs async-signal-safe calls only (the edge
 * has threads). */
static int private_tracefs_ids(int ids[2])
{
	int pfd[2], st = 0, rc = -1;
	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		int v[2] = {-1, -1};
		close(pfd[0]);
		if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0) {
			v[0] = read_id("/sys/kernel/tracing/events/syscalls/sys_enter_futex/id");
			v[1] = read_id("/sys/kernel/tracing/events/syscalls/sys_exit_futex/id");
		}
		ssize_t w = write(pfd[1], v, sizeof(v));
		_exit(w == (ssize_t)sizeof(v) ? 0 : 1);
	}
	close(pfd[1]);
	if (pid > 0) {
		ssize_t n;
		do
			n = read(pfd[0], ids, 2 * sizeof(int));
		while (n < 0 && errno == EINTR);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		rc = n == (ssize_t)(2 * sizeof(int)) && ids[0] > 0 && ids[1] > 0 ? 0 : -1;
	}
	close(pfd[0]);
	return rc;
}

/* prog attached to the tracepoint with perf event id: the link (owning
 * the event's fd), or NULL with errno */
static struct bpf_link *attach_tp_id(struct bpf_program *prog, int id)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.size = sizeof(attr);
	attr.config = (uint64_t)id;
	attr.sample_period = 1;
	attr.wakeup_events = 1;
	/* one event (cpu 0) is enough: the program runs on every CPU */
	int fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct bpf_link *link = bpf_program__attach_perf_event(prog, fd);
	if (!link) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return link;
}

int edge_ebpf_lock_open(const edge_ebpf_cfg *cfg, const edge_ebpf_cpu *cpu, edge_ebpf_counters *ctr,
			edge_ebpf_lock **out, wt_err *err)
{
	edge_ebpf_lock *l = calloc(1, sizeof(*l));
	int rc = 0, e, rows_fd, procs_fd, ids[2] = {-1, -1}, via;

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
	const char *force = getenv("WT_EBPF_LOCK_ATTACH"); /* "raw": bench/ebpf_lock.sh measures the fallback */
	if (force && !strcmp(force, "raw"))
		via = VIA_RAW;
	else if (access("/sys/kernel/tracing/events/syscalls/sys_enter_futex/id", R_OK) == 0 ||
		 access("/sys/kernel/debug/tracing/events/syscalls/sys_enter_futex/id", R_OK) == 0)
		via = VIA_TRACEFS;
	else
		via = private_tracefs_ids(ids) == 0 ? VIA_PRIVATE_TRACEFS : VIA_RAW;
	l->raw = via == VIA_RAW;
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
	if (via == VIA_PRIVATE_TRACEFS) {
		l->exit = attach_tp_id(l->skel->progs.wt_lock_exit_tp, ids[1]);
		l->enter = l->exit ? attach_tp_id(l->skel->progs.wt_lock_enter_tp, ids[0]) : NULL;
	} else {
		l->exit = bpf_program__attach(l->raw ? l->skel->progs.wt_lock_exit_raw : l->skel->progs.wt_lock_exit_tp);
		l->enter = !l->exit ? NULL
			   : bpf_program__attach(l->raw ? l->skel->progs.wt_lock_enter_raw : l->skel->progs.wt_lock_enter_tp);
	}
	if (!l->exit || !l->enter) {
		rc = wt_err_set(err, WT_EIO, "ebpf: attaching the lock program to %s: %s", via_name[via], strerror(errno));
		goto fail;
	}
	wt_info("msg=\"ebpf lock contention attached\" tracepoints=\"%s\"", via_name[via]);
	*out = l;
	return 0;
fail:
	edge_ebpf_lock_close(l);
	return rc;
}

int edge_ebpf_lock_drain(edge_ebpf_lock *l, int addresses, edge_ebpf_sink fn, void *arg, wt_err *err)
{
	/* from the next wait on: the settings of this flush */
	l->skel->bss->wt_lock_addr = addresses ? 1 : 0;
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
