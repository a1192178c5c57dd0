/*
 * offcpu.h — what bpf/offcpu.bpf.c shares with edge/ebpf_offcpu.c beyond
 * the common key in profile.h.
 */
#ifndef WT_BPF_OFFCPU_H
#define WT_BPF_OFFCPU_H

#include "profile.h"

/* A thread that blocked: when, and where — its stacks themselves,
 * captured at switch-out (the only moment they are current) and stored in
 * the stacks map of the flush in which the interval ends, so a sleep that
 * spans a flush keeps its stacks. */
struct wt_off_start {
	__u64 ts;
	struct wt_stack_key key;
	struct wt_stack user;
	struct wt_stack kern;
	struct wt_stack py; /* CPython frames (bpf/python_walk.h), when key.py_err is 0 */
};

#endif
