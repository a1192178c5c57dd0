/*
 * profile.h — what bpf/profile.bpf.c and bpf/offcpu.bpf.c share with the
 * edge's user side (edge/ebpf_profile.c): map keys, values and counters.
 *
 * Included from BPF C (after vmlinux.h, which defines __u32 & co.) and from
 * ordinary C (after <linux/types.h>); keep it free of anything else.
 */
#ifndef WT_BPF_PROFILE_H
#define WT_BPF_PROFILE_H

/* Frames kept per stack. 127 is the kernel's default
 * perf_event_max_stack; deeper stacks are cut at the root. */
#define WT_MAX_STACK_DEPTH 127
#define WT_COMM_LEN 16

/* One stack as the programs store it: leaf first, len frames used. The
 * value of the per-flush stacks maps (key: its id, a 64-bit hash of the
 * frames, never 0) and of the off-CPU start records. */
struct wt_stack {
	__u32 len;
	__u32 flags; /* WT_STACK_* */
	__u64 ips[WT_MAX_STACK_DEPTH];
};

enum wt_stack_flag {
	WT_STACK_KERNEL = 1, /* kernel addresses (else user) */
	WT_STACK_PYTHON = 2, /* CPython frames, one per slot (bpf/python.h) */
	WT_STACK_PY_TRUNC = 4, /* with WT_STACK_PYTHON: cut at WT_PY_MAX_FRAMES */
	WT_STACK_PY_CUT = 8,   /* with WT_STACK_PYTHON: a frame could not be read; the outer ones are missing */
};

/* One aggregation key for on-CPU counts and off-CPU nanoseconds. pid is the
 * thread (kernel pid), tgid the process; image is the process's address
 * space (the task's mm pointer: a new one on every exec, 0 for kernel
 * threads), so samples taken before and after an exec are told apart and
 * each symbolizes with its own binary; comm is the thread's name at sample
 * time. user_stack / kern_stack are stack ids (struct wt_stack hashes) in
 * the stacks map of the same generation (0 = none); user_err / kern_err
 * say why there is none: -EFAULT no such stack (kernel thread, or a sample
 * taken in user mode has no kernel stack), -E2BIG the stacks map of this
 * flush is full (counted in stats), other -errno from bpf_get_stack.
 * py_stack / py_err: the CPython frames of the sampled thread (a stack
 * flagged WT_STACK_PYTHON in the same stacks map; bpf/python_walk.h), 0 /
 * -ENOENT for threads that run no Python code and processes that are not
 * CPython. */
struct wt_stack_key {
	__u32 tgid;
	__u32 pid;
	__u64 user_stack;
	__u64 kern_stack;
	__s32 user_err;
	__s32 kern_err;
	__u64 cgroup_id;
	__u64 image;
	char comm[WT_COMM_LEN];
	__u64 py_stack;
	__s32 py_err;
	__u32 pad;
};

/* A process image (tgid, image) sampled for the first time: streamed
 * through wt_new_procs so that the edge reads /proc/PID/maps while the
 * process still lives (short-lived processes, and the new binary after an
 * exec). */
struct wt_proc_event {
	__u32 tgid;
	__u32 pid;           /* the sampled thread */
	__u64 image;
	__u64 cgroup_id;
	char comm[WT_COMM_LEN]; /* the sampled thread's name */
	__u64 ts_ns;         /* bpf_ktime_get_ns() of the announcing sample (0: found by a scan) */
};

/* A sample streamed through the ring buffer (ring mode): the key, the
 * sample's value (1 for on-CPU) and both stacks themselves, so nothing of
 * it waits in a map. */
struct wt_stack_event {
	struct wt_stack_key key;
	__u64 value;
	struct wt_stack user;
	struct wt_stack kern;
	struct wt_stack py;
};

/* Counters, one slot each in a per-CPU array (summed by user space). */
enum wt_stat {
	WT_STAT_SAMPLES = 0,     /* program runs that recorded a sample */
	WT_STAT_IDLE,            /* samples of the idle task (not recorded) */
	WT_STAT_LOST,            /* samples dropped: counts map full / ring full */
	WT_STAT_USTACK_COLL,     /* user stack not stored: the flush's stacks map full */
	WT_STAT_KSTACK_COLL,     /* kernel stack not stored: the flush's stacks map full */
	WT_STAT_OFF_SHORT,       /* off-CPU intervals under the threshold */
	WT_STAT_OFF_MISSED,      /* switch-in without a recorded switch-out */
	WT_STAT_PROCS_FULL,      /* new process image not announced: wt_procs full / ring full */
	WT_STAT_PY_SAMPLES,      /* samples with Python frames */
	WT_STAT_PY_NEW_LOST,     /* new Python stacks not streamed to the edge (ring full) */
	WT_STAT_PY_CUT,          /* Python stacks cut by a frame that could not be read */
	WT_STAT_MAX
};

/* Modes of the on-CPU program (rodata, fixed at load). */
enum wt_mode {
	WT_MODE_HASH = 0, /* aggregate in the in-kernel counts map, drained periodically */
	WT_MODE_RING = 1, /* stream every sample through a ring buffer */
};

/* BPF side only (SEC and __uint come from the BPF headers): one set of the
 * double-buffered maps the programs fill and the edge empties at each
 * flush — stacks by hash (size set by the loader), counts by key. */
#define WT_STACKS_MAP(name, flags)                                                                         \
	struct {                                                                                           \
		__uint(type, BPF_MAP_TYPE_HASH);                                                           \
		__type(key, __u64);                                                                        \
		__type(value, struct wt_stack);                                                            \
		__uint(max_entries, 16384);                                                                \
		__uint(map_flags, flags);                                                                  \
	} name SEC(".maps")

#define WT_COUNTS_MAP(name)                                                                                \
	struct {                                                                                           \
		__uint(type, BPF_MAP_TYPE_HASH);                                                           \
		__type(key, struct wt_stack_key);                                                          \
		__type(value, __u64);                                                                      \
		__uint(max_entries, 16384);                                                                \
	} name SEC(".maps")

#endif
