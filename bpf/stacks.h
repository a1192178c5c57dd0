/*
 * stacks.h — BPF-only helpers of bpf/profile.bpf.c and bpf/offcpu.bpf.c:
 * the per-flush stacks maps.
 *
 * Every stack a program records goes into a hash map keyed by a 64-bit
 * hash of its frames (struct wt_stack in profile.h). There are two of
 * everything a flush drains (counts and stacks), selected by the global
 * wt_gen: the edge flips wt_gen, lets running programs finish, then reads
 * the other generation and empties it completely (edge/ebpf_profile.c,
 * edge_ebpf_drain_gen). So the maps hold one flush's stacks at most and
 * never fill up over time, whatever the samples' fate (short off-CPU
 * intervals, lost processes); a full map in one flush costs that flush's
 * remaining new stacks only (counted as collisions).
 */
#ifndef WT_BPF_STACKS_H
#define WT_BPF_STACKS_H

#define EEXIST 17
#define ENOMEM 12
#define EFAULT 14
#define E2BIG 7

/* FNV-style over 64-bit words with a final avalanche; the kind and length
 * are part of the hash. Never 0 (0 = no stack in the key). */
static __always_inline __u64 wt_stack_hash(const struct wt_stack *s)
{
	__u64 h = 0xcbf29ce484222325ULL ^ ((__u64)s->flags << 40) ^ s->len;
	__u32 n = s->len;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < WT_MAX_STACK_DEPTH; i++) {
		if (i >= n)
			break;
		h = (h ^ s->ips[i]) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	h ^= h >> 32;
	return h ? h : 1;
}

/* bpf_get_stack result (bytes or -errno) → s->len, or the error */
static __always_inline int wt_stack_len(struct wt_stack *s, long r)
{
	if (r < 0) {
		s->len = 0;
		return (int)r;
	}
	s->len = (__u32)(r / 8);
	if (s->len > WT_MAX_STACK_DEPTH)
		s->len = WT_MAX_STACK_DEPTH;
	return s->len ? 0 : -EFAULT;
}

/* Store s (already measured) in stacks map m of this generation: its id
 * in *id, or -E2BIG when the map is full. The same stack sampled before in
 * this flush is already there (BPF_NOEXIST answers -EEXIST: fine). */
#define WT_STACK_STORE(m, s, id)                                                     \
	({                                                                           \
		__u64 h_ = wt_stack_hash(s);                                         \
		long r_ = bpf_map_update_elem(m, &h_, s, BPF_NOEXIST);              \
		int e_ = 0;                                                          \
		if (r_ && r_ != -EEXIST)                                             \
			e_ = -E2BIG;                                                 \
		else                                                                 \
			*(id) = h_;                                                  \
		e_;                                                                  \
	})

/* Add delta to key's value in a per-flush counts map (a hash of
 * struct wt_stack_key → __u64), creating it: 0, or -1 when the map is full
 * (the caller counts the value as lost). */
static __always_inline int wt_counts_add(void *counts, const struct wt_stack_key *key, __u64 delta)
{
	__u64 *v = bpf_map_lookup_elem(counts, key);
	if (v) {
		__sync_fetch_and_add(v, delta);
		return 0;
	}
	if (bpf_map_update_elem(counts, key, &delta, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(counts, key);
		if (!v)
			return -1;
		__sync_fetch_and_add(v, delta);
	}
	return 0;
}

#endif
