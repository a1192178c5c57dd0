/*
 * alloc.h — what bpf/alloc.bpf.c (sampled native allocations from uprobes
 * on libc's malloc, calloc, realloc and free) shares with its user side
 * edge/ebpf_alloc.c beyond the common key and stacks of profile.h.
 *
 * Sampling: the bytes a thread allocates are cut by sampling points a
 * random distance apart (exponential, mean wt_alloc_mean bytes, as
 * tcmalloc and Go's runtime do). An allocation of s bytes that k points
 * fall into stands for k * mean bytes (an unbiased estimate of s: the
 * points form a Poisson process of rate 1/mean) and k * mean / s
 * allocations; allocations that no point falls into cost one counter
 * update. Counts entries (struct wt_stack_key, per flush generation as for
 * the other probes) hold both estimates, told apart by key.pad
 * (enum wt_alloc_value); allocations are counted in 1/WT_ALLOC_OBJ_SCALE
 * units so that a large sampled allocation keeps its fraction.
 *
 * In use: every sampled allocation not yet freed is kept in wt_alloc_live
 * (key: process and address) with its estimates and its key, whose user
 * stack is also stored in wt_alloc_live_stacks (not per generation: the
 * edge deletes the stacks no live allocation names any more). The edge
 * sums them at each flush into the in-use snapshot.
 */
#ifndef WT_BPF_ALLOC_H
#define WT_BPF_ALLOC_H

#include "profile.h"

enum wt_alloc_value {
	WT_ALLOC_BYTES = 0,   /* estimated bytes allocated */
	WT_ALLOC_OBJECTS = 1, /* estimated allocations, x WT_ALLOC_OBJ_SCALE */
};

#define WT_ALLOC_OBJ_SCALE 1024
/* exponential draws (bytes to the next sampling point) the edge computes
 * before load: a random one of these per point */
#define WT_ALLOC_EXP_N 1024

struct wt_alloc_live_key {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};

struct wt_alloc_live {
	__u64 bytes;   /* estimate (k * mean) */
	__u64 objects; /* estimate x WT_ALLOC_OBJ_SCALE */
	struct wt_stack_key key; /* key.user_stack in wt_alloc_live_stacks */
};

/* Per thread (task storage). The outermost allocator call in progress is
 * told by its stack pointer: an allocator entry point that calls another
 * (glibc's realloc(NULL, 0) jumps to malloc; other versions call malloc
 * for realloc(NULL, n)) is counted once, its inner return not used. */
struct wt_alloc_thread {
	__s64 until;       /* bytes to the next sampling point */
	__u64 outer_sp;    /* stack pointer at the entry of the call in progress (0: none) */
	__u32 init;        /* until drawn */
	__u32 pending;     /* the call in progress was sampled: record it at its return */
	struct wt_alloc_live live; /* what the return records */
};

#endif
