/*
 * python_walk.h — BPF side of CPython frames (user side:
 * edge/ebpf_python.c; shared layout: bpf/python.h). Included by
 * bpf/profile.bpf.c, which calls wt_py_walk for each sample of a process
 * the edge registered in wt_py_procs.
 *
 * The walk: the sampled thread's PyThreadState (cached per thread in
 * wt_py_threads, checked against its native_thread_id at every use; found
 * by walking the main interpreter's thread list from _PyRuntime when the
 * cache misses), its current _PyInterpreterFrame, then `previous` links up
 * to WT_PY_MAX_FRAMES frames. Each frame is one slot (bpf/python.h): code
 * object address, last instruction index, entry-frame bit. Names, files
 * and lines are resolved from the code objects in user space. Every read
 * is bpf_probe_read_user: a wrong offset or a torn chain yields a short or
 * empty stack (flagged WT_STACK_PY_CUT), never a fault.
 */
#ifndef WT_BPF_PYTHON_WALK_H
#define WT_BPF_PYTHON_WALK_H

#include "python.h"

#ifndef ENOENT
#define ENOENT 2
#endif

/* tgid → where its interpreter is (the edge fills it) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct wt_py_proc);
	__uint(max_entries, 4096);
} wt_py_procs SEC(".maps");

/* thread (kernel pid) → its PyThreadState address, last seen */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
} wt_py_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} wt_py_new_stacks SEC(".maps");

static __always_inline __u64 wt_py_read(__u64 addr, int *ok)
{
	__u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		*ok = 0;
	return v;
}

/* The sampled thread's PyThreadState, or 0 (a thread Python does not
 * know: no Python frames) */
static __always_inline __u64 wt_py_tstate(const struct wt_py_proc *pp, __u32 pid)
{
	int ok = 1;
	__u64 *c = bpf_map_lookup_elem(&wt_py_threads, &pid);
	if (c && *c && wt_py_read(*c + pp->ts_native_tid, &ok) == pid && ok)
		return *c;
	__u64 interp = wt_py_read(pp->runtime + pp->rt_interp_head, &ok);
	if (!ok || !interp)
		return 0;
	__u64 ts = wt_py_read(interp + pp->is_threads_head, &ok);
#pragma clang loop unroll(disable)
	for (int i = 0; i < WT_PY_MAX_THREADS && ts && ok; i++) {
		if (wt_py_read(ts + pp->ts_native_tid, &ok) == pid && ok) {
			bpf_map_update_elem(&wt_py_threads, &pid, &ts, BPF_ANY);
			return ts;
		}
		ts = wt_py_read(ts + pp->ts_next, &ok);
	}
	return 0;
}

struct wt_py_walk {
	struct wt_stack *s;
	const struct wt_py_proc *pp;
	__u64 frame;
};

static long wt_py_step(__u32 i, void *arg)
{
	struct wt_py_walk *w = arg;
	const struct wt_py_proc *pp = w->pp;
	int ok = 1;
	__u32 len = w->s->len;
	__u64 f = w->frame;
	if (!f || len >= WT_PY_MAX_FRAMES)
		return 1;
	__u64 code = wt_py_read(f + pp->fr_code, &ok);
	__u64 instr = wt_py_read(f + pp->fr_instr, &ok);
	__u8 mark = 0;
	w->frame = wt_py_read(f + pp->fr_previous, &ok);
	if (!ok || !code) {
		w->s->flags |= WT_STACK_PY_CUT;
		return 1;
	}
	if (pp->entry_kind == WT_PY_ENTRY_SHIM) {
		/* a shim frame closes the native call of the frame before it */
		if (bpf_probe_read_user(&mark, 1, (const void *)(f + pp->fr_owner))) {
			w->s->flags |= WT_STACK_PY_CUT;
			return 1;
		}
		if (mark == pp->owner_cstack) {
			if (len > 0)
				w->s->ips[(len - 1) & 127] |= WT_PY_ENTRY;
			return 0;
		}
		mark = 0;
	} else if (bpf_probe_read_user(&mark, 1, (const void *)(f + pp->fr_entry))) {
		w->s->flags |= WT_STACK_PY_CUT;
		return 1;
	}
	__u64 first = code + pp->co_code, idx = WT_PY_NO_INSTR;
	if (instr >= first && (instr - first) / 2 < WT_PY_NO_INSTR)
		idx = (instr - first) / 2;
	asm volatile("" : "+r"(len));
	w->s->ips[len & 127] = (code & WT_PY_CODE_MASK) | (idx << WT_PY_INSTR_SHIFT) | (mark ? WT_PY_ENTRY : 0);
	w->s->len = len + 1;
	return 0;
}

/* Walk the Python frames of thread pid into s (flags WT_STACK_PYTHON, plus
 * WT_STACK_PY_TRUNC when cut at the frame limit, WT_STACK_PY_CUT when a
 * frame could not be read: a frame not mapped at that moment, or a chain
 * torn while it changed). 0, -ENOENT when the thread has no Python
 * state or no frame (not running Python code), -EFAULT on a failed read
 * before the first frame. */
static __always_inline int wt_py_walk(const struct wt_py_proc *pp, __u32 pid, struct wt_stack *s)
{
	struct wt_py_walk w = {};
	int ok = 1;
	s->len = 0;
	s->flags = WT_STACK_PYTHON;
	__u64 ts = wt_py_tstate(pp, pid);
	if (!ts)
		return -ENOENT;
	if (pp->ts_cframe != 0xffff) {
		__u64 cf = wt_py_read(ts + pp->ts_cframe, &ok);
		if (!ok || !cf)
			return -EFAULT;
		w.frame = wt_py_read(cf + pp->cf_frame, &ok);
	} else {
		w.frame = wt_py_read(ts + pp->cf_frame, &ok);
	}
	if (!ok)
		return -EFAULT;
	w.s = s;
	w.pp = pp;
	bpf_loop(WT_PY_MAX_FRAMES + 1, wt_py_step, &w, 0);
	if (w.frame && s->len >= WT_PY_MAX_FRAMES)
		s->flags |= WT_STACK_PY_TRUNC;
	return s->len ? 0 : -ENOENT;
}

#endif
