// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu.bpf.c — off-CPU (blocked) time of the edge sampler (user side:
 * edge/ebpf_offcpu.c).
 *
 * On sched_switch, a thread that leaves the CPU in a sleeping state (not
 * merely preempted: run-queue wait is not blocked time) gets its stacks and
 * the time recorded in wt_off_start; when it is switched back in, the
 * interval is added to this flush generation's counts map under the same
 * key as the on-CPU sampler uses, and the stacks stored in its stacks map
 * (bpf/stacks.h), if it reached the minimum duration (rodata wt_min_ns).
 * Intervals below it store nothing. User stacks: the unwinder of
 * bpf/unwinder.h from the registers saved at kernel entry where the
 * process has tables, else the kernel's frame-pointer walk.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "offcpu.h"
#include "stacks.h"
#include "unwinder.h"
#include "announce.h"
#include "python_walk.h" /* its maps are the on-CPU program's (the edge reuses their fds) */

const volatile __u64 wt_min_ns = 1000000;
/* 1: the unwind maps are the on-CPU program's (bpf/unwinder.h): user
 * stacks of processes with an entry there are unwound with the tables */
const volatile int wt_unwind = 0;
/* generation written by the program; the edge flips it at each drain */
volatile __u32 wt_gen;

/* one entry per blocked thread, allocated on use (a start record holds
 * both stacks, ~2 KiB) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct wt_off_start);
	__uint(max_entries, 32768);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} wt_off_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct wt_off_start);
	__uint(max_entries, 1);
} wt_off_scratch SEC(".maps");

WT_STACKS_MAP(wt_off_stacks0, BPF_F_NO_PREALLOC);
WT_STACKS_MAP(wt_off_stacks1, BPF_F_NO_PREALLOC);
WT_COUNTS_MAP(wt_off_counts0);
WT_COUNTS_MAP(wt_off_counts1);

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

/* 0, or -1 when the interval is lost (counts map full) */
static __always_inline int add_ns(void *counts, struct wt_stack_key *key, __u64 delta)
{
	if (wt_counts_add(counts, key, delta)) {
		stat_inc(WT_STAT_LOST);
		return -1;
	}
	return 0;
}

/* CPython frames of the thread leaving the CPU (still current), as the
 * on-CPU program takes them: 0 or -errno */
static __noinline int py_off(struct wt_off_start *s)
{
	__u32 tgid = s->key.tgid;
	const struct wt_py_proc *pp = bpf_map_lookup_elem(&wt_py_procs, &tgid);
	if (!pp)
		return -ENOENT;
	int r = wt_py_walk(pp, s->key.pid, &s->py);
	if (!r && (s->py.flags & WT_STACK_PY_CUT))
		stat_inc(WT_STAT_PY_CUT);
	return r;
}

/* store the Python stack of a finished interval: 0 or -E2BIG; a stack new
 * in this generation goes to the edge (wt_py_new_stacks) */
static __noinline int py_off_store(struct wt_off_start *sp, __u32 g)
{
	__u64 h = wt_stack_hash(&sp->py);
	long r = bpf_map_update_elem(g ? (void *)&wt_off_stacks1 : (void *)&wt_off_stacks0, &h, &sp->py, BPF_NOEXIST);
	if (r && r != -EEXIST) {
		stat_inc(WT_STAT_USTACK_COLL);
		return -E2BIG;
	}
	sp->key.py_stack = h;
	if (!r) {
		struct wt_py_new *n = bpf_ringbuf_reserve(&wt_py_new_stacks, sizeof(*n), 0);
		if (!n) {
			stat_inc(WT_STAT_PY_NEW_LOST);
			return 0;
		}
		n->tgid = sp->key.tgid;
		n->pad = 0;
		__builtin_memcpy(&n->s, &sp->py, sizeof(n->s));
		bpf_ringbuf_submit(n, 0);
	}
	return 0;
}

/* switch-in of a thread whose switch-out was recorded in sp */
static __always_inline void finish(struct wt_off_start *sp, __u64 now)
{
	__u64 delta = now - sp->ts;
	struct wt_stack_key *key = &sp->key;
	if (delta < wt_min_ns) {
		stat_inc(WT_STAT_OFF_SHORT);
		return;
	}
	__u32 g = wt_gen & 1;
	if (!key->kern_err) {
		key->kern_err = g ? WT_STACK_STORE(&wt_off_stacks1, &sp->kern, &key->kern_stack)
				  : WT_STACK_STORE(&wt_off_stacks0, &sp->kern, &key->kern_stack);
		if (key->kern_err)
			stat_inc(WT_STAT_KSTACK_COLL);
	}
	if (!key->user_err) {
		key->user_err = g ? WT_STACK_STORE(&wt_off_stacks1, &sp->user, &key->user_stack)
				  : WT_STACK_STORE(&wt_off_stacks0, &sp->user, &key->user_stack);
		if (key->user_err)
			stat_inc(WT_STAT_USTACK_COLL);
	}
	if (!key->py_err)
		key->py_err = py_off_store(sp, g);
	if (g ? add_ns(&wt_off_counts1, key, delta) : add_ns(&wt_off_counts0, key, delta))
		return;
	stat_inc(WT_STAT_SAMPLES);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(wt_offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_pid = BPF_CORE_READ(prev, pid);
	__u32 next_pid = BPF_CORE_READ(next, pid);
	__u32 zero = 0;

	if (prev_pid != 0 && task_state(prev) != 0) {
		struct wt_off_start *s = bpf_map_lookup_elem(&wt_off_scratch, &zero);
		if (s) {
			__builtin_memset(&s->key, 0, sizeof(s->key));
			s->ts = now;
			s->key.pid = prev_pid;
			s->key.tgid = BPF_CORE_READ(prev, tgid);
			/* prev is still current here: its stacks and cgroup */
			s->key.cgroup_id = bpf_get_current_cgroup_id();
			s->key.image = (__u64)BPF_CORE_READ(prev, mm);
			bpf_get_current_comm(s->key.comm, sizeof(s->key.comm));
			s->kern.flags = WT_STACK_KERNEL;
			s->key.kern_err = wt_stack_len(&s->kern, bpf_get_stack(ctx, s->kern.ips, sizeof(s->kern.ips), 0));
			s->user.flags = 0;
			/* a process that blocks before the on-CPU sampler meets it
			 * (little CPU, long sleeps) is captured — and given its
			 * tables — all the same */
			if (wt_unwind && s->key.image && wt_announce(&s->key))
				stat_inc(WT_STAT_PROCS_FULL);
			/* the user registers saved when prev entered the kernel */
			const struct wt_unwind_proc *proc = NULL;
			if (wt_unwind && s->key.image)
				proc = bpf_map_lookup_elem(&wt_unwind_procs, &s->key.tgid);
			if (proc)
				s->key.user_err = wt_unwind_task(&s->user, proc);
			else
				s->key.user_err = wt_stack_len(&s->user, bpf_get_stack(ctx, s->user.ips, sizeof(s->user.ips),
											 BPF_F_USER_STACK));
			s->key.py_err = s->key.image ? py_off(s) : -ENOENT;
			if (bpf_map_update_elem(&wt_off_start, &prev_pid, s, BPF_ANY))
				stat_inc(WT_STAT_LOST);
		}
	}
	if (next_pid == 0)
		return 0;
	struct wt_off_start *sp = bpf_map_lookup_elem(&wt_off_start, &next_pid);
	if (!sp)
		return 0;
	finish(sp, now);
	bpf_map_delete_elem(&wt_off_start, &next_pid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
