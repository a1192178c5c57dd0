/*
 * offcpu.h — what bpf/offcpu.bpf.c shares with edge/ebpf_offcpu.c beyond
 * the common key in profile.h.
 */
#ifndef WT_BPF_OFFCPU_H
#define WT_BPF_OFFCPU_H

#include "profile.h"

/* A thread that blocked: when, and where (captured at switch-out, the
 * only moment its stacks are current). */
struct wt_off_start {
	__u64 ts;
	struct wt_stack_key key;
};

#endif
