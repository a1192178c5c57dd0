/*
 * announce.h — BPF-only: new process images announced to the edge's
 * discovery thread (edge/ebpf_sampler.c) through the ring buffer
 * wt_new_procs, so that it reads their /proc mappings (and gives them
 * their unwind tables) while they live. bpf/profile.bpf.c and
 * bpf/offcpu.bpf.c both announce; the edge loads the on-CPU program's
 * maps and hands their fds to the off-CPU program (bpf_map__reuse_fd).
 */
#ifndef WT_BPF_ANNOUNCE_H
#define WT_BPF_ANNOUNCE_H

/* tgid → image last announced through wt_new_procs (the edge deletes the
 * entries of processes that are gone) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
} wt_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} wt_new_procs SEC(".maps");

/* Announce (tgid, image) the first time it is sampled: one hash lookup per
 * sample otherwise. -1: not announced (wt_procs or the ring full; the
 * caller counts WT_STAT_PROCS_FULL). */
static __always_inline int wt_announce(const struct wt_stack_key *k)
{
	__u32 tgid = k->tgid;
	__u64 image = k->image;
	__u64 *last = bpf_map_lookup_elem(&wt_procs, &tgid);
	if (last && *last == image)
		return 0;
	if (bpf_map_update_elem(&wt_procs, &tgid, &image, BPF_ANY))
		return -1;
	struct wt_proc_event *ev = bpf_ringbuf_reserve(&wt_new_procs, sizeof(*ev), 0);
	if (!ev) {
		/* announced next time: the edge finds the image at the flush anyway */
		bpf_map_delete_elem(&wt_procs, &tgid);
		return -1;
	}
	ev->tgid = tgid;
	ev->pid = k->pid;
	ev->image = image;
	ev->cgroup_id = k->cgroup_id;
	__builtin_memcpy(ev->comm, k->comm, sizeof(ev->comm));
	ev->ts_ns = bpf_ktime_get_ns(); /* orders the tgid's images (edge_procs_get_at) */
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

#endif
