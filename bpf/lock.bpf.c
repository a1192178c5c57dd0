// SPDX-License-Identifier: GPL-2.0
/*
 * lock.bpf.c — lock contention of every process (user side:
 * edge/ebpf_lock.c): the futex waits of glibc's pthread mutexes and
 * rwlocks, timed from the futex syscall's entry to its exit: the
 * syscalls/sys_{enter,exit}_futex tracepoints (only futex calls run the
 * program), or as a fallback the raw sys_enter/sys_exit tracepoints
 * (tp_btf; every syscall runs it up to the number check). The edge loads
 * one pair (edge/ebpf_lock.c).
 *
 * An uncontended lock makes no syscall, so nothing here runs on the fast
 * path. A wait is classified by glibc's futex protocol (nptl
 * lowlevellock.h, pthread_rwlock_common.c): a mutex or internal lll_lock
 * waits with FUTEX_WAIT / FUTEX_WAIT_BITSET for the value 2 (locked,
 * waiters); an rwlock with FUTEX_WAIT_BITSET on __writers_futex or
 * __wrphase_futex for 3 (1 | PTHREAD_RWLOCK_FUTEX_USED); PI mutexes with
 * FUTEX_LOCK_PI(2). Condition variables wait for 0 (__g_signals) or with
 * plain FUTEX_WAIT for odd __g_refs values, and are left out, as are
 * other libraries' protocols (musl waits for the lock word's own value).
 * At the exit the wait's time and, unless it is a retry of the same lock
 * call (lock.h), one contention are added to this flush generation's
 * counts under the waiting thread's user stack, taken at the entry
 * (bpf/unwinder.h tables
 * where the process has them — the contended path __lll_lock_wait is a
 * frameless leaf — else the kernel's frame-pointer walk), like the on-CPU
 * program's samples.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "lock.h"
#include "stacks.h"
#include "unwinder.h"
#include "announce.h"

#ifndef ENOENT
#define ENOENT 2
#endif

/* 1: the unwind maps are the on-CPU program's (bpf/unwinder.h) */
const volatile int wt_unwind = 0;
/* generation written by the program; the edge flips it at each drain */
volatile __u32 wt_gen;
/* set by the edge while some service wants lock addresses (policy
 * ebpf.lock_address): the futex word's address then goes into the key */
volatile __u32 wt_lock_addr;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct wt_lock_thread);
	__uint(max_entries, 16384);
} wt_lock_threads SEC(".maps");

/* the stack being taken; one spare slot after it: bpf/unwinder.h's
 * masked store (idx & 127) may reach one past ips[] */
struct lock_stack {
	struct wt_stack s;
	__u64 spare;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct lock_stack);
	__uint(max_entries, 1);
} wt_lock_scratch SEC(".maps");

/* a zeroed thread record to insert (too big for the BPF stack) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct wt_lock_thread);
	__uint(max_entries, 1);
} wt_lock_zero SEC(".maps");

WT_STACKS_MAP(wt_lock_stacks0, BPF_F_NO_PREALLOC);
WT_STACKS_MAP(wt_lock_stacks1, BPF_F_NO_PREALLOC);
WT_COUNTS_MAP(wt_lock_counts0);
WT_COUNTS_MAP(wt_lock_counts1);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, WT_STAT_MAX);
} wt_lock_stats SEC(".maps");

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&wt_lock_stats, &i);
	if (v)
		(*v)++;
}

/* 0, or -1 when the value is lost (counts map full) */
static __always_inline int add(void *counts, struct wt_stack_key *key, __u64 delta)
{
	if (wt_counts_add(counts, key, delta)) {
		stat_inc(WT_STAT_LOST);
		return -1;
	}
	return 0;
}

/* a contended wait of glibc's mutexes and rwlocks? */
static __always_inline int contended(__u32 cmd, __u32 val)
{
	if (cmd == WT_FUTEX_LOCK_PI || cmd == WT_FUTEX_LOCK_PI2)
		return 1;
	if (cmd == WT_FUTEX_WAIT)
		return val == 2;
	if (cmd == WT_FUTEX_WAIT_BITSET)
		return val == 2 || val == 3;
	return 0;
}

/* The current thread's key and user stack, the stack stored in stacks
 * map generation g (key->user_stack, or user_err). */
static __always_inline void capture(void *ctx, struct wt_stack_key *key, __u32 g)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 zero = 0;
	struct lock_stack *ls = bpf_map_lookup_elem(&wt_lock_scratch, &zero);
	struct wt_stack *st = ls ? &ls->s : NULL;
	__builtin_memset(key, 0, sizeof(*key));
	key->pid = (__u32)pid_tgid;
	key->tgid = (__u32)(pid_tgid >> 32);
	key->cgroup_id = bpf_get_current_cgroup_id();
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	key->image = (__u64)BPF_CORE_READ(task, mm);
	bpf_get_current_comm(key->comm, sizeof(key->comm));
	key->kern_err = -EFAULT; /* the wait's kernel side is futex_wait: not kept */
	key->py_err = -ENOENT;
	key->user_err = -EFAULT;
	if (!st)
		return;
	/* a process met here first is announced (and given its tables) */
	if (wt_unwind && key->image && wt_announce(key))
		stat_inc(WT_STAT_PROCS_FULL);
	const struct wt_unwind_proc *proc = NULL;
	if (wt_unwind && key->image)
		proc = bpf_map_lookup_elem(&wt_unwind_procs, &key->tgid);
	st->flags = 0;
	if (proc)
		key->user_err = wt_unwind_task(st, proc);
	else
		key->user_err = wt_stack_len(st, bpf_get_stack(ctx, st->ips, sizeof(st->ips), BPF_F_USER_STACK));
	if (!key->user_err) {
		key->user_err = g ? WT_STACK_STORE(&wt_lock_stacks1, st, &key->user_stack)
				  : WT_STACK_STORE(&wt_lock_stacks0, st, &key->user_stack);
		if (key->user_err)
			stat_inc(WT_STAT_USTACK_COLL);
	}
}

static __always_inline int lock_enter(void *ctx, __u64 uaddr, __u32 op, __u32 val)
{
	__u32 cmd = op & WT_FUTEX_CMD_MASK;
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0;

	if (cmd == WT_FUTEX_WAKE || cmd == WT_FUTEX_WAKE_BITSET) {
		/* the thread released the lock it last waited for: its next
		 * wait there is a new contention */
		struct wt_lock_thread *t = bpf_map_lookup_elem(&wt_lock_threads, &tid);
		if (t && t->last_uaddr == uaddr)
			t->last_uaddr = 0;
		return 0;
	}
	if (!contended(cmd, val))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct wt_lock_thread *t = bpf_map_lookup_elem(&wt_lock_threads, &tid);
	if (!t) {
		struct wt_lock_thread *n = bpf_map_lookup_elem(&wt_lock_zero, &zero);
		if (!n || bpf_map_update_elem(&wt_lock_threads, &tid, n, BPF_ANY) ||
		    !(t = bpf_map_lookup_elem(&wt_lock_threads, &tid))) {
			stat_inc(WT_STAT_LOST);
			return 0;
		}
	}
	t->counted = !(t->last_uaddr == uaddr && now - t->last_exit < WT_LOCK_RETRY_NS);
	t->uaddr = uaddr;
	/* the stack now, while the thread is about to sleep anyway: the
	 * exit, which delays the woken thread's taking the lock, only adds */
	t->gen = wt_gen & 1;
	capture(ctx, &t->key, t->gen);
	t->start = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int lock_exit(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct wt_lock_thread *t = bpf_map_lookup_elem(&wt_lock_threads, &tid);
	if (!t || !t->start)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 delta = now - t->start;
	t->start = 0;
	t->last_uaddr = t->uaddr;
	t->last_exit = now;
	__u32 g = wt_gen & 1;
	if (t->gen != g) {
		/* a flush flipped the generation during the wait: the stack
		 * goes to this one (the registers are still those of the call) */
		t->gen = g;
		capture(ctx, &t->key, g);
	}
	t->key.kern_stack = wt_lock_addr ? t->uaddr : 0;
	t->key.pad = WT_LOCK_NS;
	if (g ? add(&wt_lock_counts1, &t->key, delta) : add(&wt_lock_counts0, &t->key, delta))
		return 0;
	stat_inc(WT_STAT_SAMPLES);
	if (t->counted) {
		t->key.pad = WT_LOCK_COUNT;
		if (g)
			add(&wt_lock_counts1, &t->key, 1);
		else
			add(&wt_lock_counts0, &t->key, 1);
	}
	return 0;
}

/* the tracepoints of the futex syscall itself (tracefs mounted): only
 * futex calls run the program */
SEC("tp/syscalls/sys_enter_futex")
int wt_lock_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	return lock_enter(ctx, (__u64)ctx->args[0], (__u32)ctx->args[1], (__u32)ctx->args[2]);
}

SEC("tp/syscalls/sys_exit_futex")
int wt_lock_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	return lock_exit(ctx);
}

/* without tracefs: the raw syscall tracepoints (BTF), every syscall
 * runs the program up to the number check */
#define WT_NR_FUTEX 202 /* x86-64 */

SEC("tp_btf/sys_enter")
int BPF_PROG(wt_lock_enter_raw, struct pt_regs *regs, long id)
{
	if (id != WT_NR_FUTEX)
		return 0;
	return lock_enter(ctx, BPF_CORE_READ(regs, di), (__u32)BPF_CORE_READ(regs, si), (__u32)BPF_CORE_READ(regs, dx));
}

SEC("tp_btf/sys_exit")
int BPF_PROG(wt_lock_exit_raw, struct pt_regs *regs, long ret)
{
	if (BPF_CORE_READ(regs, orig_ax) != WT_NR_FUTEX)
		return 0;
	return lock_exit(ctx);
}

char LICENSE[] SEC("license") = "GPL";
