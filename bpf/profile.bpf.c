// SPDX-License-Identifier: GPL-2.0
/*
 * profile.bpf.c — on-CPU sampler of the edge (user side: edge/ebpf_profile.c).
 *
 * One perf_event program runs on every online CPU at the configured
 * frequency (software cpu-clock: hardware PMU counters are not assumed). Each
 * run takes the kernel and user stacks of the interrupted task and either
 * stores them in this flush generation's stacks map and adds 1 to its
 * counts map keyed by (tgid, pid, user stack, kernel stack, cgroup, comm) —
 * the edge flips the generation and empties the other one every flush
 * (bpf/stacks.h) — or, in ring mode, streams the key and both stacks
 * through wt_events.
 * Tuning is load-time: the mode through rodata, map sizes before load.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile.h"
#include "stacks.h"
#include "unwinder.h"
#include "announce.h"
#include "python_walk.h"

const volatile int wt_mode = WT_MODE_HASH;
/* 1: user stacks of processes with an entry in wt_unwind_procs unwound
 * with the tables below (as its mode says); the others, and everything
 * with 0, by the kernel's frame-pointer walk */
const volatile int wt_unwind = 0;
/* generation written by the programs; the edge flips it at each drain */
volatile __u32 wt_gen;

WT_STACKS_MAP(wt_stacks0, 0);
WT_STACKS_MAP(wt_stacks1, 0);
WT_COUNTS_MAP(wt_counts0);
WT_COUNTS_MAP(wt_counts1);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} wt_events SEC(".maps");

/* per-CPU scratch: the sample being built (too large for the BPF stack) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct wt_stack_event);
	__uint(max_entries, 1);
} wt_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, WT_STAT_MAX);
} wt_stats SEC(".maps");

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&wt_stats, &i);
	if (v)
		(*v)++;
}

/* The interrupted code segment selector. The verifier lets a perf_event
 * program read its context's registers in whole 8-byte words only, and
 * newer kernels declare cs as a 2-byte member of a union. */
static __always_inline __u64 regs_cs(struct bpf_perf_event_data *ctx)
{
	return *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));
}

/* A Python stack new in this generation: to the edge, which reads its
 * code objects while the process runs. */
static __always_inline void py_announce(__u32 tgid, const struct wt_stack *py)
{
	struct wt_py_new *n = bpf_ringbuf_reserve(&wt_py_new_stacks, sizeof(*n), 0);
	if (!n) {
		stat_inc(WT_STAT_PY_NEW_LOST);
		return;
	}
	n->tgid = tgid;
	n->pad = 0;
	__builtin_memcpy(&n->s, py, sizeof(n->s));
	bpf_ringbuf_submit(n, 0);
}

/* The CPython frames of the sampled thread into ev->py when the edge
 * registered its process: 0 or -errno (bpf/python_walk.h). A subprogram
 * of its own: most samples leave after the map lookup. */
static __noinline int py_sample(const struct wt_stack_key *key, struct wt_stack_event *ev)
{
	__u32 tgid = key->tgid;
	const struct wt_py_proc *pp = bpf_map_lookup_elem(&wt_py_procs, &tgid);
	if (!pp)
		return -ENOENT;
	int r = wt_py_walk(pp, key->pid, &ev->py);
	if (!r)
		stat_inc(WT_STAT_PY_SAMPLES);
	if (!r && (ev->py.flags & WT_STACK_PY_CUT))
		stat_inc(WT_STAT_PY_CUT);
	return r;
}

/* Store the Python stack in generation g's stacks map: its id in
 * key->py_stack, 0 or -E2BIG. A stack new in this generation is announced. */
static __noinline int py_store(struct wt_stack_key *key, const struct wt_stack *py, __u32 g)
{
	__u64 h = wt_stack_hash(py);
	long r = bpf_map_update_elem(g ? (void *)&wt_stacks1 : (void *)&wt_stacks0, &h, py, BPF_NOEXIST);
	if (r && r != -EEXIST) {
		stat_inc(WT_STAT_USTACK_COLL);
		return -E2BIG;
	}
	key->py_stack = h;
	if (!r)
		py_announce(key->tgid, py);
	return 0;
}

/* 0, or -1 when the sample is lost (counts map full) */
static __always_inline int count(void *counts, struct wt_stack_key *key)
{
	__u64 *c = bpf_map_lookup_elem(counts, key);
	if (c) {
		__sync_fetch_and_add(c, 1);
		return 0;
	}
	__u64 one = 1;
	if (bpf_map_update_elem(counts, key, &one, BPF_NOEXIST)) {
		/* raced with another CPU, or the map is full */
		c = bpf_map_lookup_elem(counts, key);
		if (!c) {
			stat_inc(WT_STAT_LOST);
			return -1;
		}
		__sync_fetch_and_add(c, 1);
	}
	return 0;
}

/* Unwind the user stack of the current task into s from its user
 * registers: the sampled ones when the sample interrupted user mode, else
 * those saved at kernel entry. 0, or -errno (-EFAULT: no user stack). */
static __always_inline int unwind_user(struct bpf_perf_event_data *ctx, struct wt_stack *s,
				       const struct wt_unwind_proc *proc, int user_mode)
{
	if (!user_mode)
		return wt_unwind_task(s, proc);
	return wt_unwind_from(s, proc, *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, ip)),
			      *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, sp)),
			      *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, bp)));
}

SEC("perf_event")
int wt_profile_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 zero = 0;
	struct wt_stack_event *ev;
	struct wt_stack_key *key;

	if ((__u32)id == 0) {
		/* the idle task: not a process anyone profiles */
		stat_inc(WT_STAT_IDLE);
		return 0;
	}
	ev = bpf_map_lookup_elem(&wt_scratch, &zero);
	if (!ev)
		return 0;
	key = &ev->key;
	__builtin_memset(key, 0, sizeof(*key));
	key->pid = (__u32)id;
	key->tgid = id >> 32;
	key->cgroup_id = bpf_get_current_cgroup_id();
	key->image = (__u64)BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), mm);
	bpf_get_current_comm(key->comm, sizeof(key->comm));
	ev->value = 1;
	if (wt_announce(key))
		stat_inc(WT_STAT_PROCS_FULL);
	/* interrupted in user mode: there is no kernel stack to walk (the
	 * walk would cost its setup for nothing) */
	ev->kern.flags = WT_STACK_KERNEL;
	if ((regs_cs(ctx) & 3) == 3)
		key->kern_err = wt_stack_len(&ev->kern, -EFAULT);
	else
		key->kern_err = wt_stack_len(&ev->kern, bpf_get_stack(ctx, ev->kern.ips, sizeof(ev->kern.ips), 0));
	ev->user.flags = 0;
	/* a process not (yet) given tables, or whose service unwinds by
	 * frame pointers: the kernel's walk, cheaper than a loop of ours */
	const struct wt_unwind_proc *proc = NULL;
	if (wt_unwind && key->image)
		proc = bpf_map_lookup_elem(&wt_unwind_procs, &key->tgid);
	if (proc)
		key->user_err = unwind_user(ctx, &ev->user, proc, (regs_cs(ctx) & 3) == 3);
	else
		key->user_err = wt_stack_len(&ev->user,
					     bpf_get_stack(ctx, ev->user.ips, sizeof(ev->user.ips), BPF_F_USER_STACK));

	key->py_err = key->image ? py_sample(key, ev) : -ENOENT;

	if (wt_mode == WT_MODE_RING) {
		if (bpf_ringbuf_output(&wt_events, ev, sizeof(*ev), 0)) {
			stat_inc(WT_STAT_LOST);
			return 0;
		}
		stat_inc(WT_STAT_SAMPLES);
		return 0;
	}
	__u32 g = wt_gen & 1;
	if (!key->kern_err) {
		key->kern_err = g ? WT_STACK_STORE(&wt_stacks1, &ev->kern, &key->kern_stack)
				  : WT_STACK_STORE(&wt_stacks0, &ev->kern, &key->kern_stack);
		if (key->kern_err)
			stat_inc(WT_STAT_KSTACK_COLL);
	}
	if (!key->user_err) {
		key->user_err = g ? WT_STACK_STORE(&wt_stacks1, &ev->user, &key->user_stack)
				  : WT_STACK_STORE(&wt_stacks0, &ev->user, &key->user_stack);
		if (key->user_err)
			stat_inc(WT_STAT_USTACK_COLL);
	}
	if (!key->py_err)
		key->py_err = py_store(key, &ev->py, g);
	if (g ? count(&wt_counts1, key) : count(&wt_counts0, key))
		return 0;
	stat_inc(WT_STAT_SAMPLES);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
