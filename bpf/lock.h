/*
 * lock.h — what bpf/lock.bpf.c (lock contention from the futex
 * syscall's tracepoints) shares with its user side edge/ebpf_lock.c beyond the
 * common key and stacks of profile.h.
 *
 * Counts entries use struct wt_stack_key like the on-CPU and off-CPU
 * programs; its pad field says which value the entry holds
 * (enum wt_lock_value): wait time or contentions, two entries per
 * (thread, stack, process image). The wait's kernel side is not kept
 * (kern_err is always set), so kern_stack holds the futex word's address
 * instead while the edge asks for lock addresses (wt_lock_addr), else 0:
 * a mutex's own address; for an rwlock, the address of one of its words.
 */
#ifndef WT_BPF_LOCK_H
#define WT_BPF_LOCK_H

#include "profile.h"

enum wt_lock_value {
	WT_LOCK_NS = 0,    /* nanoseconds waited (syscall entry → exit) */
	WT_LOCK_COUNT = 1, /* contentions: waits that were not a retry of the previous one */
};

/* futex(2) operations (linux/futex.h) */
#define WT_FUTEX_WAIT 0
#define WT_FUTEX_WAKE 1
#define WT_FUTEX_LOCK_PI 6
#define WT_FUTEX_WAIT_BITSET 9
#define WT_FUTEX_WAKE_BITSET 10
#define WT_FUTEX_LOCK_PI2 13
#define WT_FUTEX_CMD_MASK 127 /* without FUTEX_PRIVATE_FLAG (128), FUTEX_CLOCK_REALTIME (256) */

/* A wait that starts within this of the same thread's previous wait on
 * the same futex word, with no wake by the thread on it in between, is
 * the same lock call going round its loop (woken, lost the race): its
 * time counts, not as another contention. */
#define WT_LOCK_RETRY_NS 100000

/* Per thread (LRU: threads that exit while waiting age out). The key,
 * user stack stored in generation gen, is taken when the wait starts. */
struct wt_lock_thread {
	__u64 start;      /* entry of the wait in progress (0: none) */
	__u64 uaddr;      /* its futex word */
	__u64 last_uaddr; /* the previous wait's word (0 after the thread woke it) */
	__u64 last_exit;  /* and when it ended */
	__u32 counted;    /* the wait in progress is a new contention */
	__u32 gen;        /* generation of key.user_stack */
	struct wt_stack_key key;
};

#endif
