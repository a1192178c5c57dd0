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

/* One aggregation key for on-CPU counts and off-CPU nanoseconds. pid is the
 * thread (kernel pid), tgid the process; image is the process's address
 * space (the task's mm pointer: a new one on every exec, 0 for kernel
 * threads), so samples taken before and after an exec are told apart and
 * each symbolizes with its own binary; comm is the thread's name at sample
 * time. A negative stack id is -errno from bpf_get_stackid (-EFAULT: no user
 * stack, e.g. a kernel thread; -EEXIST/-ENOMEM: the stack map is full or
 * collided — counted in stats). */
struct wt_stack_key {
	__u32 tgid;
	__u32 pid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u64 cgroup_id;
	__u64 image;
	char comm[WT_COMM_LEN];
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
};

/* The same key streamed through the ring buffer (ring mode), with the
 * sample's value (1 for on-CPU, ns for off-CPU). */
struct wt_stack_event {
	struct wt_stack_key key;
	__u64 value;
};

/* Counters, one slot each in a per-CPU array (summed by user space). */
enum wt_stat {
	WT_STAT_SAMPLES = 0,     /* program runs that recorded a sample */
	WT_STAT_IDLE,            /* samples of the idle task (not recorded) */
	WT_STAT_LOST,            /* samples dropped: counts map full / ring full */
	WT_STAT_USTACK_COLL,     /* user stack not stored: -EEXIST/-ENOMEM */
	WT_STAT_KSTACK_COLL,     /* kernel stack not stored: -EEXIST/-ENOMEM */
	WT_STAT_OFF_SHORT,       /* off-CPU intervals under the threshold */
	WT_STAT_OFF_MISSED,      /* switch-in without a recorded switch-out */
	WT_STAT_PROCS_FULL,      /* new process image not announced: wt_procs full / ring full */
	WT_STAT_MAX
};

/* Modes of the on-CPU program (rodata, fixed at load). */
enum wt_mode {
	WT_MODE_HASH = 0, /* aggregate in the in-kernel counts map, drained periodically */
	WT_MODE_RING = 1, /* stream every sample through a ring buffer */
};

#endif
