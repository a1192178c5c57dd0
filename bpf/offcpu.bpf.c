// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu.bpf.c — off-CPU (blocked) time of the edge sampler (user side:
 * edge/ebpf_offcpu.c).
 *
 * On sched_switch, a thread that leaves the CPU in a sleeping state (not
 * merely preempted: run-queue wait is not blocked time) gets its stacks and
 * the time recorded in wt_off_start; when it is switched back in, the
 * interval is added to wt_off_counts under the same key as the on-CPU
 * sampler uses, if it reached the minimum duration (rodata wt_min_ns).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "offcpu.h"

#define EEXIST 17
#define ENOMEM 12

const volatile __u64 wt_min_ns = 1000000;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct wt_off_start);
	__uint(max_entries, 32768);
} wt_off_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, WT_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} wt_off_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wt_stack_key);
	__type(value, __u64);
	__uint(max_entries, 16384);
} wt_off_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, WT_STAT_MAX);
} wt_off_stats SEC(".maps");

/* task_struct::state was renamed __state in 5.14 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&wt_off_stats, &i);
	if (v)
		(*v)++;
}

static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(wt_offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_pid = BPF_CORE_READ(prev, pid);
	__u32 next_pid = BPF_CORE_READ(next, pid);

	if (prev_pid != 0 && task_state(prev) != 0) {
		struct wt_off_start s = {};
		s.ts = now;
		s.key.pid = prev_pid;
		s.key.tgid = BPF_CORE_READ(prev, tgid);
		/* prev is still current here: its stacks and cgroup */
		s.key.cgroup_id = bpf_get_current_cgroup_id();
		s.key.image = (__u64)BPF_CORE_READ(prev, mm);
		bpf_get_current_comm(s.key.comm, sizeof(s.key.comm));
		s.key.kern_stack_id = bpf_get_stackid(ctx, &wt_off_stacks, 0);
		s.key.user_stack_id = bpf_get_stackid(ctx, &wt_off_stacks, BPF_F_USER_STACK);
		if (s.key.kern_stack_id == -EEXIST || s.key.kern_stack_id == -ENOMEM)
			stat_inc(WT_STAT_KSTACK_COLL);
		if (s.key.user_stack_id == -EEXIST || s.key.user_stack_id == -ENOMEM)
			stat_inc(WT_STAT_USTACK_COLL);
		if (bpf_map_update_elem(&wt_off_start, &prev_pid, &s, BPF_ANY))
			stat_inc(WT_STAT_LOST);
	}
	if (next_pid == 0)
		return 0;
	struct wt_off_start *sp = bpf_map_lookup_elem(&wt_off_start, &next_pid);
	if (!sp)
		return 0;
	__u64 delta = now - sp->ts;
	if (delta < wt_min_ns) {
		stat_inc(WT_STAT_OFF_SHORT);
	} else {
		__u64 *v = bpf_map_lookup_elem(&wt_off_counts, &sp->key);
		if (v) {
			__sync_fetch_and_add(v, delta);
		} else if (bpf_map_update_elem(&wt_off_counts, &sp->key, &delta, BPF_NOEXIST)) {
			v = bpf_map_lookup_elem(&wt_off_counts, &sp->key);
			if (v)
				__sync_fetch_and_add(v, delta);
			else
				stat_inc(WT_STAT_LOST);
		}
		stat_inc(WT_STAT_SAMPLES);
	}
	bpf_map_delete_elem(&wt_off_start, &next_pid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
