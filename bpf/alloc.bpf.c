// SPDX-License-Identifier: GPL-2.0
/*
 * alloc.bpf.c — sampled native allocations (user side: edge/ebpf_alloc.c):
 * uprobes on the entries of libc's malloc, calloc, realloc and free and
 * uretprobes on the first three's returns, attached per libc file (every
 * process mapping it runs them). C++'s operator new and delete call these
 * entry points, so they are covered through them.
 *
 * Only processes the edge enabled (wt_alloc_pids: tgid → 1, set per
 * service by the policy) are sampled; any other process that maps the
 * file pays the trap and one hash lookup per call. Sampling (bpf/alloc.h):
 * per thread, the bytes to the next sampling point go down by each
 * allocation's size; an allocation that reaches it is sampled: its
 * estimates and the caller's user stack (bpf/unwinder.h tables where the
 * process has them, else the kernel's frame-pointer walk, whose first
 * frame is replaced by the return address: at the allocator's entry rbp
 * is still the caller's) go to this flush's counts, and at its return
 * the address goes to wt_alloc_live until free() of it.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "alloc.h"
#include "stacks.h"
#include "unwinder.h"
#include "announce.h"

#ifndef ENOENT
#define ENOENT 2
#endif

/* 1: the unwind maps are the on-CPU program's (bpf/unwinder.h) */
const volatile int wt_unwind = 0;
/* mean bytes between sampling points, and the draws (alloc.h) */
const volatile __u64 wt_alloc_mean = 524288;
const volatile __u32 wt_alloc_exp[WT_ALLOC_EXP_N] = {};
/* 0 (ebpf.alloc_inuse = false): entry probes only — no returns, no free,
 * no live allocations (and no outermost-call tracking: glibc 2.36's
 * realloc(NULL, n) does not enter malloc for n > 0; a libc whose realloc
 * did would have that call counted twice, the second under realloc) */
const volatile int wt_alloc_inuse = 1;
/* generation written by the program; the edge flips it at each drain */
volatile __u32 wt_gen;

/* tgid → 1: allocations of this process are sampled (edge/ebpf_alloc.c) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 16384);
} wt_alloc_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct wt_alloc_thread);
} wt_alloc_threads SEC(".maps");

/* sampled allocations not yet freed (size set by the loader) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wt_alloc_live_key);
	__type(value, struct wt_alloc_live);
	__uint(max_entries, 32768);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} wt_alloc_live SEC(".maps");

/* the stacks of the live allocations (not per generation) */
WT_STACKS_MAP(wt_alloc_live_stacks, BPF_F_NO_PREALLOC);

/* the stack being taken; one spare slot after it: bpf/unwinder.h's
 * masked store (idx & 127) may reach one past ips[] */
struct alloc_stack {
	struct wt_stack s;
	__u64 spare;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct alloc_stack);
	__uint(max_entries, 1);
} wt_alloc_scratch SEC(".maps");

WT_STACKS_MAP(wt_alloc_stacks0, BPF_F_NO_PREALLOC);
WT_STACKS_MAP(wt_alloc_stacks1, BPF_F_NO_PREALLOC);
WT_COUNTS_MAP(wt_alloc_counts0);
WT_COUNTS_MAP(wt_alloc_counts1);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, WT_STAT_MAX);
} wt_alloc_stats SEC(".maps");

/* WT_STAT_SAMPLES: sampled allocations; WT_STAT_LOST: a sample's counts or
 * its live entry not stored (map full); WT_STAT_OFF_MISSED (reused): the
 * return of a sampled call not seen */
static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&wt_alloc_stats, &i);
	if (v)
		(*v)++;
}

static __always_inline __u64 draw(void)
{
	__u32 i = bpf_get_prandom_u32() & (WT_ALLOC_EXP_N - 1);
	return wt_alloc_exp[i];
}

/* The allocator's caller's user stack into st (key->user_err). */
static __always_inline void take_stack(struct pt_regs *ctx, struct wt_stack_key *key, struct wt_stack *st)
{
	const struct wt_unwind_proc *proc = NULL;
	__u64 sp = PT_REGS_SP(ctx), ret = 0;
	if (bpf_probe_read_user(&ret, sizeof(ret), (const void *)sp) || !ret) {
		key->user_err = -EFAULT;
		return;
	}
	if (wt_unwind && key->image)
		proc = bpf_map_lookup_elem(&wt_unwind_procs, &key->tgid);
	st->flags = 0;
	if (proc) {
		key->user_err = wt_unwind_regs(st, proc, ret, sp + 8, PT_REGS_FP(ctx), 0);
	} else {
		key->user_err = wt_stack_len(st, bpf_get_stack(ctx, st->ips, sizeof(st->ips), BPF_F_USER_STACK));
		if (!key->user_err)
			st->ips[0] = ret; /* was the allocator's own pc; its caller follows */
	}
}

/* An allocation of size bytes starts (the entry of malloc & co.). */
static __noinline int alloc_enter(struct pt_regs *ctx, __u64 size)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(pid_tgid >> 32), zero = 0;
	__u32 *on = bpf_map_lookup_elem(&wt_alloc_pids, &tgid);
	if (!on || !*on)
		return 0;
	struct wt_alloc_thread *t =
		bpf_task_storage_get(&wt_alloc_threads, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	__u64 sp = PT_REGS_SP(ctx);
	if (wt_alloc_inuse) {
		if (t->outer_sp && sp < t->outer_sp)
			return 0; /* entered by the allocator itself (alloc.h) */
		if (t->pending)
			stat_inc(WT_STAT_OFF_MISSED); /* the previous sampled call's return was not seen */
		t->outer_sp = sp;
		t->pending = 0;
	}
	if (!t->init) {
		t->until = (__s64)draw();
		t->init = 1;
	}
	t->until -= (__s64)size;
	if (t->until > 0)
		return 0;
	/* sampled: the number of points in [.., ..+size) */
	__u64 k = 0, mean = wt_alloc_mean;
	for (int i = 0; i < 16 && t->until <= 0; i++) {
		t->until += (__s64)draw();
		k++;
	}
	if (t->until <= 0) { /* a huge allocation: its mean number of points */
		__u64 more = (__u64)(-t->until) / mean + 1;
		k += more;
		t->until += (__s64)(more * mean);
	}
	struct wt_alloc_live *lv = &t->live;
	struct wt_stack_key *key = &lv->key;
	lv->bytes = k * mean;
	lv->objects = size ? k * mean * WT_ALLOC_OBJ_SCALE / size : k * WT_ALLOC_OBJ_SCALE;
	__builtin_memset(key, 0, sizeof(*key));
	key->pid = (__u32)pid_tgid;
	key->tgid = tgid;
	key->cgroup_id = bpf_get_current_cgroup_id();
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	key->image = (__u64)BPF_CORE_READ(task, mm);
	bpf_get_current_comm(key->comm, sizeof(key->comm));
	key->kern_err = -EFAULT;
	key->py_err = -ENOENT;
	key->user_err = -EFAULT;
	struct alloc_stack *as = bpf_map_lookup_elem(&wt_alloc_scratch, &zero);
	if (as) {
		struct wt_stack *st = &as->s;
		take_stack(ctx, key, st);
		if (!key->user_err) {
			__u32 g = wt_gen & 1;
			key->user_err = g ? WT_STACK_STORE(&wt_alloc_stacks1, st, &key->user_stack)
					  : WT_STACK_STORE(&wt_alloc_stacks0, st, &key->user_stack);
			if (!key->user_err && wt_alloc_inuse && WT_STACK_STORE(&wt_alloc_live_stacks, st, &key->user_stack))
				stat_inc(WT_STAT_USTACK_COLL); /* counted, not shown in use */
			if (key->user_err)
				stat_inc(WT_STAT_USTACK_COLL);
		}
	}
	__u32 g = wt_gen & 1;
	void *counts = g ? (void *)&wt_alloc_counts1 : (void *)&wt_alloc_counts0;
	key->pad = WT_ALLOC_BYTES;
	if (wt_counts_add(counts, key, lv->bytes)) {
		stat_inc(WT_STAT_LOST);
	} else {
		key->pad = WT_ALLOC_OBJECTS;
		wt_counts_add(counts, key, lv->objects);
	}
	key->pad = 0;
	stat_inc(WT_STAT_SAMPLES);
	t->pending = wt_alloc_inuse;
	return 0;
}

/* The outermost allocator call returns addr: a sampled one is live now. */
static __always_inline int alloc_exit(struct pt_regs *ctx)
{
	struct wt_alloc_thread *t = bpf_task_storage_get(&wt_alloc_threads, bpf_get_current_task_btf(), 0, 0);
	if (!t || !t->outer_sp)
		return 0;
	/* after the return, sp is above the entry's (its return address popped) */
	if (PT_REGS_SP(ctx) <= t->outer_sp)
		return 0; /* an inner call's return */
	t->outer_sp = 0;
	if (!t->pending)
		return 0;
	t->pending = 0;
	struct wt_alloc_live_key lk = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), .addr = PT_REGS_RC(ctx)};
	if (!lk.addr)
		return 0;
	if (bpf_map_update_elem(&wt_alloc_live, &lk, &t->live, BPF_ANY))
		stat_inc(WT_STAT_LOST);
	return 0;
}

static __always_inline void forget(__u64 addr)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	if (!addr)
		return;
	__u32 *on = bpf_map_lookup_elem(&wt_alloc_pids, &tgid);
	if (!on || !*on)
		return;
	struct wt_alloc_live_key lk = {.tgid = tgid, .addr = addr};
	bpf_map_delete_elem(&wt_alloc_live, &lk);
}

SEC("uprobe")
int BPF_KPROBE(wt_malloc, __u64 size)
{
	return alloc_enter(ctx, size);
}

SEC("uprobe")
int BPF_KPROBE(wt_calloc, __u64 n, __u64 size)
{
	return alloc_enter(ctx, n * size);
}

SEC("uprobe")
int BPF_KPROBE(wt_realloc, __u64 ptr, __u64 size)
{
	if (wt_alloc_inuse)
		forget(ptr);
	return alloc_enter(ctx, size);
}

SEC("uretprobe")
int BPF_KRETPROBE(wt_alloc_ret)
{
	return alloc_exit(ctx);
}

SEC("uprobe")
int BPF_KPROBE(wt_free, __u64 ptr)
{
	forget(ptr);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
