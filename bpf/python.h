/*
 * python.h — what the CPython frame walker (bpf/python_walk.h, run by
 * bpf/profile.bpf.c at each sample) shares with its user side
 * (edge/ebpf_python.c): the per-process entry that says where the
 * interpreter's state is and at which offsets its structures keep the
 * fields the walk reads, and how one Python frame is packed into a stack
 * slot. The offsets come from the one per-version table in
 * edge/ebpf_python.c; the BPF side has no notion of versions.
 *
 * Included from BPF C and ordinary C like profile.h.
 */
#ifndef WT_BPF_PYTHON_H
#define WT_BPF_PYTHON_H

/* Python frames kept per sample (innermost first); deeper stacks are cut
 * at the root and flagged WT_STACK_PY_TRUNC. */
#define WT_PY_MAX_FRAMES 96
/* Threads of the main interpreter looked at to find the sampled one. */
#define WT_PY_MAX_THREADS 32

/* One Python frame in a stack slot: the code object's address (47 bits,
 * a user-space pointer on x86-64), the index of the last instruction
 * started in code units (WT_PY_NO_INSTR when unknown or out of range),
 * and whether the frame is the entry frame of a _PyEval_EvalFrameDefault
 * call (the frames up to and including it run in that one native call). */
#define WT_PY_CODE_MASK ((1ULL << 47) - 1)
#define WT_PY_INSTR_SHIFT 47
#define WT_PY_NO_INSTR 0x7fffULL
#define WT_PY_ENTRY (1ULL << 62)

/* How a frame says it is the entry frame of its native call. */
enum wt_py_entry_kind {
	WT_PY_ENTRY_FLAG = 0,  /* a bool member (3.11 is_entry) */
	WT_PY_ENTRY_SHIM = 1,  /* the entry is marked by a shim frame owned by the C stack (3.12+): the frame
				* before it is the entry frame; the shim itself is skipped */
};

/* tgid → this (wt_py_procs). All offsets in bytes. */
struct wt_py_proc {
	__u64 runtime;          /* address of _PyRuntime in the process */
	__u32 version;          /* PY_VERSION_HEX >> 16, e.g. 0x030b (informational) */
	__u16 rt_interp_head;   /* _PyRuntimeState.interpreters.head */
	__u16 is_threads_head;  /* PyInterpreterState.threads.head */
	__u16 ts_next;          /* PyThreadState.next */
	__u16 ts_native_tid;    /* PyThreadState.native_thread_id */
	__u16 ts_cframe;        /* PyThreadState.cframe (0xffff: ts_frame is on the thread state) */
	__u16 cf_frame;         /* _PyCFrame.current_frame, or PyThreadState.current_frame */
	__u16 fr_code;          /* _PyInterpreterFrame.f_code */
	__u16 fr_previous;      /* _PyInterpreterFrame.previous */
	__u16 fr_instr;         /* _PyInterpreterFrame.prev_instr */
	__u16 fr_entry;         /* is_entry (WT_PY_ENTRY_FLAG) */
	__u16 fr_owner;         /* owner */
	__u16 co_code;          /* PyCodeObject.co_code_adaptive: instructions start here */
	__u8 entry_kind;        /* enum wt_py_entry_kind */
	__u8 owner_cstack;      /* owner value of shim frames (WT_PY_ENTRY_SHIM) */
	__u16 pad;
};

/* A Python stack new in this flush generation (wt_py_new_stacks; needs
 * profile.h's struct wt_stack): the edge reads its code objects at once, while the process
 * still runs (short-lived processes keep their names). */
struct wt_py_new {
	__u32 tgid;
	__u32 pad;
	struct wt_stack s;
};

#endif
