/*
 * unwinder.h — BPF-only: the user-stack unwinder of bpf/profile.bpf.c
 * (on-CPU samples) and bpf/offcpu.bpf.c (blocked threads), reading the
 * unwind tables the edge builds from .eh_frame / .debug_frame
 * (edge/ebpf_unwind.c, rows in unwind.h). Each program object declares
 * its own two maps here; the edge loads the on-CPU program's and hands
 * their fds to the off-CPU program before it loads (bpf_map__reuse_fd),
 * so both read the same tables.
 *
 * Per frame: the process's mapping of the pc (binary search over at most
 * WT_UNWIND_MAPS mappings), then the row (binary search, at most 25
 * steps; both shaped for the verifier, see find_row), then CFA / return
 * address / rbp from the row; a pc without a row takes one frame-pointer
 * step (WT_UNWIND_MODE_AUTO) or ends the stack (WT_UNWIND_MODE_TABLES).
 * At most WT_MAX_STACK_DEPTH frames in a bpf_loop (Linux 5.17+; its body
 * is verified once).
 */
#ifndef WT_BPF_UNWINDER_H
#define WT_BPF_UNWINDER_H

#include "unwind.h"

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

/* The row for pc in the process's tables, or NULL.
 *
 * Both searches halve a length that does not depend on what they read
 * and move a base when the entry at base + half is at or below the key:
 * the only branch on what was read compares two values unknown to the
 * verifier, so it marks nothing precise and the paths it splits merge
 * again at the loop head. (A search narrowing [lo, hi) compares lo with
 * hi, which newer verifiers can sometimes decide; each decision makes lo
 * and hi precise, the paths never merge, and 6 + 25 steps exceed the
 * verifier's budget of a million instructions.) */
static __always_inline const struct wt_unwind_row *find_row(const struct wt_unwind_proc *proc, __u64 pc)
{
	__u32 base = 0, len = proc->n, half;
	if (len > WT_UNWIND_MAPS)
		len = WT_UNWIND_MAPS;
	if (!len)
		return NULL;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 6 && len > 1; i++) {
		half = len / 2;
		if (proc->m[(base + half) & (WT_UNWIND_MAPS - 1)].start <= pc)
			base += half;
		len -= half;
	}
	const struct wt_unwind_map *m = &proc->m[base & (WT_UNWIND_MAPS - 1)];
	if (pc < m->start || pc >= m->end || !m->count)
		return NULL;
	__u64 va = pc - m->bias;
	__u32 row = m->first;
	len = m->count;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 25 && len > 1; i++) {
		half = len / 2;
		__u32 mid = row + half;
		const struct wt_unwind_row *r = bpf_map_lookup_elem(&wt_unwind_rows, &mid);
		if (!r)
			return NULL;
		if (r->pc <= va)
			row = mid;
		len -= half;
	}
	if (len > 1)
		return NULL; /* more rows than 25 halvings cover */
	const struct wt_unwind_row *r = bpf_map_lookup_elem(&wt_unwind_rows, &row);
	return r && r->pc <= va ? r : NULL;
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
	__u8 type = r ? WT_ROW_CFA_TYPE(r) : WT_CFA_NONE;
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
		cfa = (type == WT_CFA_RBP ? c->bp : c->sp) + WT_ROW_CFA_OFF(r);
		if (type == WT_CFA_PLT && (c->pc & 15) >= WT_ROW_PLT_THR(r))
			cfa += 8;
		c->pc = read_user(cfa - 8, &ok);
		if (type != WT_CFA_PLT && WT_ROW_RBP_TYPE(r) == WT_RBP_CFA)
			c->bp = read_user(cfa + WT_ROW_RBP_OFF(r), &ok);
		else if (type != WT_CFA_PLT && WT_ROW_RBP_TYPE(r) == WT_RBP_OTHER)
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

/* Unwind into s from pc, sp, bp of the current task's user code; exact:
 * pc is the interrupted instruction (else a return address, looked up at
 * pc - 1: bpf/alloc.bpf.c starts at the allocator's caller). 0, or
 * -EFAULT (no user stack). */
static __always_inline int wt_unwind_regs(struct wt_stack *s, const struct wt_unwind_proc *proc, __u64 pc,
					  __u64 sp, __u64 bp, int exact)
{
	struct unwind_ctx c = {};
	c.s = s;
	c.proc = proc;
	c.strict = proc->mode == WT_UNWIND_MODE_TABLES;
	c.pc = pc;
	c.sp = sp;
	c.bp = bp;
	s->len = 0;
	if (!c.pc)
		return -EFAULT;
	c.exact = exact;
	bpf_loop(WT_MAX_STACK_DEPTH, unwind_step, &c, 0);
	return s->len ? 0 : -EFAULT;
}

/* The same from the registers pc, sp, bp of an interrupted instruction. */
static __always_inline int wt_unwind_from(struct wt_stack *s, const struct wt_unwind_proc *proc, __u64 pc,
					  __u64 sp, __u64 bp)
{
	return wt_unwind_regs(s, proc, pc, sp, bp, 1);
}

/* The same from the user registers the current task saved at kernel
 * entry (a sample taken in the kernel, a thread switched out). */
static __always_inline int wt_unwind_task(struct wt_stack *s, const struct wt_unwind_proc *proc)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	s->len = 0;
	if (!regs)
		return -EFAULT;
	return wt_unwind_from(s, proc, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp));
}

#endif
