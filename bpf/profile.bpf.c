// SPDX-License-Identifier: GPL-2.0
/*
 * profile.bpf.c — on-CPU sampler of the edge (user side: edge/ebpf_profile.c).
 *
 * One perf_event program runs on every online CPU at the configured
 * frequency (software cpu-clock: hardware PMU counters are not assumed). Each
 * run records the kernel and user stacks of the interrupted task into
 * wt_stacks and either adds 1 to the in-kernel counts map wt_counts keyed by
 * (tgid, pid, user stack, kernel stack, cgroup, comm) — the edge drains it
 * every flush — or, in ring mode, streams the key through wt_events.
 * Tuning is load-time: the mode through rodata, map sizes before load.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile.h"

#define EEXIST 17
#define ENOMEM 12
#define EFAULT 14

const volatile int wt_mode = WT_MODE_HASH;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, WT_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} wt_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wt_stack_key);
	__type(value, __u64);
	__uint(max_entries, 16384);
} wt_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} wt_events SEC(".maps");

/* tgid → image last announced through wt_new_procs (the edge deletes the
 * entries of processes that are gone) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
} wt_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} wt_new_procs SEC(".maps");

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

/* Announce (tgid, image) the first time it is sampled: one hash lookup per
 * sample otherwise. */
static __always_inline void announce(const struct wt_stack_key *k)
{
	__u32 tgid = k->tgid;
	__u64 image = k->image;
	__u64 *last = bpf_map_lookup_elem(&wt_procs, &tgid);
	if (last && *last == image)
		return;
	if (bpf_map_update_elem(&wt_procs, &tgid, &image, BPF_ANY)) {
		stat_inc(WT_STAT_PROCS_FULL);
		return;
	}
	struct wt_proc_event *ev = bpf_ringbuf_reserve(&wt_new_procs, sizeof(*ev), 0);
	if (!ev) {
		/* announced next time: the edge finds the image at the flush anyway */
		bpf_map_delete_elem(&wt_procs, &tgid);
		stat_inc(WT_STAT_PROCS_FULL);
		return;
	}
	ev->tgid = tgid;
	ev->pid = k->pid;
	ev->image = image;
	ev->cgroup_id = k->cgroup_id;
	__builtin_memcpy(ev->comm, k->comm, sizeof(ev->comm));
	bpf_ringbuf_submit(ev, 0);
}

SEC("perf_event")
int wt_profile_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct wt_stack_key key = {};

	if ((__u32)id == 0) {
		/* the idle task: not a process anyone profiles */
		stat_inc(WT_STAT_IDLE);
		return 0;
	}
	key.pid = (__u32)id;
	key.tgid = id >> 32;
	key.cgroup_id = bpf_get_current_cgroup_id();
	key.image = (__u64)BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), mm);
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	announce(&key);
	/* interrupted in user mode: there is no kernel stack to walk (the
	 * walk would return -EFAULT after paying for its setup) */
	if ((regs_cs(ctx) & 3) == 3)
		key.kern_stack_id = -EFAULT;
	else
		key.kern_stack_id = bpf_get_stackid(ctx, &wt_stacks, 0);
	key.user_stack_id = bpf_get_stackid(ctx, &wt_stacks, BPF_F_USER_STACK);
	/* a collision here means the stack map is too small (or two stacks
	 * hashed alike): the sample stays, without that stack */
	if (key.kern_stack_id == -EEXIST || key.kern_stack_id == -ENOMEM)
		stat_inc(WT_STAT_KSTACK_COLL);
	if (key.user_stack_id == -EEXIST || key.user_stack_id == -ENOMEM)
		stat_inc(WT_STAT_USTACK_COLL);

	if (wt_mode == WT_MODE_RING) {
		struct wt_stack_event *e = bpf_ringbuf_reserve(&wt_events, sizeof(*e), 0);
		if (!e) {
			stat_inc(WT_STAT_LOST);
			return 0;
		}
		e->key = key;
		e->value = 1;
		bpf_ringbuf_submit(e, 0);
	} else {
		__u64 *c = bpf_map_lookup_elem(&wt_counts, &key);
		if (c) {
			__sync_fetch_and_add(c, 1);
		} else {
			__u64 one = 1;
			if (bpf_map_update_elem(&wt_counts, &key, &one, BPF_NOEXIST)) {
				/* raced with another CPU, or the map is full */
				c = bpf_map_lookup_elem(&wt_counts, &key);
				if (!c) {
					stat_inc(WT_STAT_LOST);
					return 0;
				}
				__sync_fetch_and_add(c, 1);
			}
		}
	}
	stat_inc(WT_STAT_SAMPLES);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
