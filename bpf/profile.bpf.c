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
#include "unwind.h"

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

/* unwind tables of every file loaded (edge/ebpf_unwind.c), one range of
 * rows per file; the size is set before load */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct wt_unwind_row);
	__uint(max_entries, 1);
} wt_unwind_rows SEC(".maps");

/* tgid → its mappings with tables */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct wt_unwind_proc);
	__uint(max_entries, 4096);
} wt_unwind_procs SEC(".maps");

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

/* ---- user stacks from unwind tables ------------------------------------- */

/* x86-64 signal frame: at the trampoline rsp points at the ucontext, whose
 * uc_mcontext (struct sigcontext) starts 40 bytes in */
#define SIG_MCTX 40
#define SIG_RBP (SIG_MCTX + 80)
#define SIG_RSP (SIG_MCTX + 120)
#define SIG_RIP (SIG_MCTX + 128)

struct unwind_ctx {
	struct wt_stack *s;
	const struct wt_unwind_proc *proc;
	__u64 pc, sp, bp;
	int exact; /* pc is an interrupted instruction, not a return address */
	int strict; /* WT_UNWIND_MODE_TABLES: no frame-pointer steps */
	int complete;
};

static __always_inline __u64 read_user(__u64 addr, int *ok)
{
	__u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		*ok = 0;
	return v;
}

/* the row for pc in the process's tables, or NULL */
static __always_inline const struct wt_unwind_row *find_row(const struct wt_unwind_proc *proc, __u64 pc)
{
	__u32 lo = 0, hi = proc->n;
	if (hi > WT_UNWIND_MAPS)
		hi = WT_UNWIND_MAPS;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 6 && lo < hi; i++) {
		__u32 mid = (lo + hi) / 2;
		if (proc->m[mid & (WT_UNWIND_MAPS - 1)].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct wt_unwind_map *m = &proc->m[(lo - 1) & (WT_UNWIND_MAPS - 1)];
	if (pc >= m->end || !m->count)
		return NULL;
	__u64 va = pc - m->bias;
	__u32 rlo = m->first, rhi = m->first + m->count;
	const struct wt_unwind_row *best = NULL;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 25 && rlo < rhi; i++) {
		__u32 mid = rlo + (rhi - rlo) / 2;
		const struct wt_unwind_row *r = bpf_map_lookup_elem(&wt_unwind_rows, &mid);
		if (!r)
			return NULL;
		if (r->pc <= va) {
			best = r;
			rlo = mid + 1;
		} else {
			rhi = mid;
		}
	}
	return best;
}

static long unwind_step(__u32 i, void *arg)
{
	struct unwind_ctx *c = arg;
	int ok = 1;
	__u32 idx = i;
	if (idx >= WT_MAX_STACK_DEPTH || !c->pc)
		return 1;
	/* the mask is for the verifier (clang may recompute the index from
	 * another register than the one compared): idx < 127 already */
	asm volatile("" : "+r"(idx));
	c->s->ips[idx & 127] = c->pc;
	c->s->len = idx + 1;
	const struct wt_unwind_row *r = c->proc ? find_row(c->proc, c->exact ? c->pc : c->pc - 1) : NULL;
	__u8 type = r ? r->cfa_type : WT_CFA_NONE;
	__u64 cfa;
	switch (type) {
	case WT_CFA_END:
		c->complete = 1;
		return 1;
	case WT_CFA_SIGNAL:
		c->bp = read_user(c->sp + SIG_RBP, &ok);
		c->pc = read_user(c->sp + SIG_RIP, &ok);
		c->sp = read_user(c->sp + SIG_RSP, &ok);
		c->exact = 1;
		return ok ? 0 : 1;
	case WT_CFA_RSP:
	case WT_CFA_RBP:
	case WT_CFA_PLT:
		cfa = (type == WT_CFA_RBP ? c->bp : c->sp) + (__s64)r->cfa_off;
		if (type == WT_CFA_PLT && (c->pc & 15) >= (__u64)r->rbp_off)
			cfa += 8;
		c->pc = read_user(cfa - 8, &ok);
		if (type != WT_CFA_PLT && r->rbp_type == WT_RBP_CFA)
			c->bp = read_user(cfa + (__s64)r->rbp_off, &ok);
		else if (type != WT_CFA_PLT && r->rbp_type == WT_RBP_OTHER)
			c->bp = 0;
		c->sp = cfa;
		c->exact = 0;
		return ok ? 0 : 1;
	default:
		/* no table for this pc: one frame-pointer step (auto), or the
		 * end of the stack (tables only) */
		if (!c->bp || c->strict)
			return 1;
		c->pc = read_user(c->bp + 8, &ok);
		c->sp = c->bp + 16;
		c->bp = read_user(c->bp, &ok);
		c->exact = 0;
		return ok ? 0 : 1;
	}
}

/* Unwind the user stack of the current task into s from its user
 * registers: the sampled ones when the sample interrupted user mode, else
 * those saved at kernel entry. 0, or -errno (-EFAULT: no user stack). */
static __always_inline int unwind_user(struct bpf_perf_event_data *ctx, struct wt_stack *s,
				       const struct wt_unwind_proc *proc, int user_mode)
{
	struct unwind_ctx c = {};
	c.s = s;
	c.proc = proc;
	c.strict = proc->mode == WT_UNWIND_MODE_TABLES;
	s->len = 0;
	if (user_mode) {
		c.pc = *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, ip));
		c.sp = *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, sp));
		c.bp = *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, bp));
	} else {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		if (!regs)
			return -EFAULT;
		c.pc = BPF_CORE_READ(regs, ip);
		c.sp = BPF_CORE_READ(regs, sp);
		c.bp = BPF_CORE_READ(regs, bp);
	}
	if (!c.pc)
		return -EFAULT;
	c.exact = 1;
	bpf_loop(WT_MAX_STACK_DEPTH, unwind_step, &c, 0);
	return s->len ? 0 : -EFAULT;
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
	announce(key);
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
	if (g ? count(&wt_counts1, key) : count(&wt_counts0, key))
		return 0;
	stat_inc(WT_STAT_SAMPLES);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
