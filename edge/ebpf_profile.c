/*
 * ebpf_profile.c — user side of bpf/profile.bpf.c (the on-CPU sampler) and
 * the map-draining code both probes share (see ebpf_probe.h).
 *
 * Sampling: one PERF_COUNT_SW_CPU_CLOCK event per online CPU with
 * sample_period = 1e9 / frequency ns, so every sample stands for exactly
 * one period of CPU time. A frequency change closes the events and opens
 * new ones; the loaded program and its maps stay, so nothing is lost.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ebpf_probe.h"
#include "log.h"

#include "bpf/profile.skel.h"

#define NS_PER_S 1000000000ULL
#define RING_BYTES (1u << 20)
#define MAX_CPUS 4096

/* ---- user-space aggregation (ring mode) -------------------------------- */

typedef struct agg_ent {
	struct wt_stack_key key;
	uint64_t value;
	int used;
} agg_ent;

typedef struct agg {
	agg_ent *e;
	size_t cap, n, max;
} agg;

static void key_seen(edge_ebpf_seen fn, void *arg, const struct wt_stack_key *k)
{
	struct wt_proc_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.tgid = k->tgid;
	ev.pid = k->pid;
	ev.image = k->image;
	ev.cgroup_id = k->cgroup_id;
	memcpy(ev.comm, k->comm, sizeof(ev.comm));
	fn(arg, &ev);
}

static uint64_t key_hash(const struct wt_stack_key *k)
{
	return XXH3_64bits(k, sizeof(*k));
}

/* 1 = added, 0 = full (dropped), <0 = ENOMEM */
static int agg_add(agg *a, const struct wt_stack_key *k, uint64_t v, int *is_new)
{
	*is_new = 0;
	if ((a->n + 1) * 2 > a->cap) {
		if (a->n >= a->max)
			goto find_only;
		size_t nc = a->cap ? a->cap * 2 : 1024;
		agg_ent *ne = calloc(nc, sizeof(*ne));
		if (!ne)
			return WT_ENOMEM;
		for (size_t i = 0; i < a->cap; i++) {
			if (!a->e[i].used)
				continue;
			size_t j = key_hash(&a->e[i].key) & (nc - 1);
			while (ne[j].used)
				j = (j + 1) & (nc - 1);
			ne[j] = a->e[i];
		}
		free(a->e);
		a->e = ne;
		a->cap = nc;
	}
	size_t j = key_hash(k) & (a->cap - 1);
	while (a->e[j].used) {
		if (!memcmp(&a->e[j].key, k, sizeof(*k))) {
			a->e[j].value += v;
			return 1;
		}
		j = (j + 1) & (a->cap - 1);
	}
	a->e[j].key = *k;
	a->e[j].value = v;
	a->e[j].used = 1;
	a->n++;
	*is_new = 1;
	return 1;
find_only:
	if (a->cap) {
		j = key_hash(k) & (a->cap - 1);
		while (a->e[j].used) {
			if (!memcmp(&a->e[j].key, k, sizeof(*k))) {
				a->e[j].value += v;
				return 1;
			}
			j = (j + 1) & (a->cap - 1);
		}
	}
	return 0;
}

/* ---- shared map draining -------------------------------------------------- */

typedef struct stack_ent {
	int32_t id;
	int state; /* 0 empty, 1 present, 2 missing */
	uint32_t n;
	uint64_t *ips;
} stack_ent;

typedef struct stack_tab {
	stack_ent *e;
	size_t cap;
	int fd;
} stack_tab;

static stack_ent *stack_get(stack_tab *t, int32_t id, edge_ebpf_counters *ctr)
{
	size_t j = ((uint32_t)id * 2654435761u) & (t->cap - 1);
	while (t->e[j].state && t->e[j].id != id)
		j = (j + 1) & (t->cap - 1);
	stack_ent *s = &t->e[j];
	if (s->state)
		return s->state == 1 ? s : NULL;
	s->id = id;
	s->ips = calloc(WT_MAX_STACK_DEPTH, sizeof(uint64_t));
	if (!s->ips || bpf_map_lookup_elem(t->fd, &id, s->ips) != 0) {
		atomic_fetch_add(&ctr->missing_stacks, 1);
		free(s->ips);
		s->ips = NULL;
		s->state = 2;
		return NULL;
	}
	s->state = 1;
	while (s->n < WT_MAX_STACK_DEPTH && s->ips[s->n])
		s->n++;
	return s;
}

static int drain_entries(const struct wt_stack_key *keys, const uint64_t *vals, size_t n, int stacks_fd, int kind,
			 edge_ebpf_sink fn, void *arg, edge_ebpf_counters *ctr, wt_err *err)
{
	stack_tab t = {0};
	t.fd = stacks_fd;
	t.cap = 64;
	while (t.cap < 4 * n + 64)
		t.cap *= 2;
	t.e = calloc(t.cap, sizeof(*t.e));
	if (!t.e)
		return wt_err_set(err, WT_ENOMEM, "out of memory draining BPF maps");
	for (size_t i = 0; i < n; i++) {
		const struct wt_stack_key *k = &keys[i];
		stack_ent *us = k->user_stack_id >= 0 ? stack_get(&t, k->user_stack_id, ctr) : NULL;
		stack_ent *ks = k->kern_stack_id >= 0 ? stack_get(&t, k->kern_stack_id, ctr) : NULL;
		fn(arg, kind, k, vals[i], us ? us->ips : NULL, us ? us->n : 0, ks ? ks->ips : NULL, ks ? ks->n : 0);
	}
	atomic_fetch_add(&ctr->entries, n);
	/* forget the stacks these entries used; a sample taken since reuses
	 * the id and re-inserts it, so only an entry created in the window
	 * between our read and this delete can lose its stack (missing_stacks) */
	for (size_t j = 0; j < t.cap; j++) {
		if (t.e[j].state == 1)
			bpf_map_delete_elem(stacks_fd, &t.e[j].id);
		free(t.e[j].ips);
	}
	free(t.e);
	return 0;
}

/* Entries read per batch call: one syscall moves this many keys instead of
 * two syscalls per key (get_next_key + lookup_and_delete). */
#define BATCH 1024

/* Per-key fallback for kernels without batch operations on hash maps
 * (before 5.6): collect first, delete after (deleting while walking
 * restarts the walk). */
static size_t drain_per_key(int counts_fd, size_t max_keys, struct wt_stack_key *keys, uint64_t *vals)
{
	size_t n = 0, m = 0;
	void *prev = NULL;
	while (n < max_keys && bpf_map_get_next_key(counts_fd, prev, &keys[n]) == 0) {
		prev = &keys[n];
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		if (bpf_map_lookup_and_delete_elem(counts_fd, &keys[i], &vals[m]) == 0) {
			if (m != i)
				keys[m] = keys[i];
			m++;
		}
	}
	return m;
}

/* Batched walk of a hash map of wt_stack_key → u64 (deleting what it reads
 * when del): returns the entries read, or -1 when the kernel has no batch
 * operations for it (caller falls back to the per-key walk). A bucket
 * larger than the room left (ENOSPC) ends the walk early; the rest stays
 * for the next call. */
static long batch_walk(int fd, int del, size_t max_keys, struct wt_stack_key *keys, uint64_t *vals)
{
	struct wt_stack_key token; /* hash maps use a u32 bucket index; key-sized is always enough */
	size_t n = 0;
	int first = 1;
	while (n < max_keys) {
		__u32 cnt = (__u32)(max_keys - n < BATCH ? max_keys - n : BATCH);
		int r = del ? bpf_map_lookup_and_delete_batch(fd, first ? NULL : &token, &token, keys + n, vals + n, &cnt,
							      NULL)
			    : bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys + n, vals + n, &cnt, NULL);
		int e = r ? errno : 0;
		if (r && e != ENOENT && e != ENOSPC) {
			if (first && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP || e == ENOSYS))
				return -1;
			if (e == EFAULT)
				cnt = 0;
		}
		n += cnt;
		first = 0;
		if (r)
			break;
	}
	return (long)n;
}

int edge_ebpf_drain_maps(int counts_fd, int stacks_fd, int kind, size_t max_keys, edge_ebpf_sink fn, void *arg,
			 edge_ebpf_counters *ctr, wt_err *err)
{
	struct wt_stack_key *keys = calloc(max_keys + 1, sizeof(*keys));
	uint64_t *vals = calloc(max_keys + 1, sizeof(*vals));
	size_t m = 0;
	int rc = 0;

	if (!keys || !vals) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory draining BPF maps");
		goto out;
	}
	long got = batch_walk(counts_fd, 1, max_keys, keys, vals);
	m = got >= 0 ? (size_t)got : drain_per_key(counts_fd, max_keys, keys, vals);
	rc = drain_entries(keys, vals, m, stacks_fd, kind, fn, arg, ctr, err);
out:
	free(keys);
	free(vals);
	return rc;
}

void edge_ebpf_scan_keys(int counts_fd, size_t max_keys, edge_ebpf_seen fn, void *arg)
{
	struct wt_stack_key *keys = calloc(max_keys + 1, sizeof(*keys));
	uint64_t *vals = calloc(max_keys + 1, sizeof(*vals));
	uint32_t last = 0;
	long n;

	if (keys && vals && (n = batch_walk(counts_fd, 0, max_keys, keys, vals)) >= 0) {
		for (long i = 0; i < n; i++) {
			if (keys[i].tgid != last)
				key_seen(fn, arg, &keys[i]);
			last = keys[i].tgid;
		}
	} else {
		struct wt_stack_key a, b, *cur = &a, *prev = NULL;
		for (size_t i = 0; i < max_keys && bpf_map_get_next_key(counts_fd, prev, cur) == 0; i++) {
			if (cur->tgid != last)
				key_seen(fn, arg, cur);
			last = cur->tgid;
			prev = cur;
			cur = cur == &a ? &b : &a;
		}
	}
	free(keys);
	free(vals);
}

void edge_ebpf_read_stats(int stats_fd, uint64_t prev[WT_STAT_MAX], edge_ebpf_counters *ctr)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0 || ncpu > MAX_CPUS)
		return;
	uint64_t *v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return;
	for (uint32_t i = 0; i < WT_STAT_MAX; i++) {
		uint64_t sum = 0;
		if (bpf_map_lookup_elem(stats_fd, &i, v) != 0)
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += v[c];
		if (sum >= prev[i])
			atomic_fetch_add(&ctr->stat[i], sum - prev[i]);
		prev[i] = sum;
	}
	free(v);
}

/* ---- the on-CPU probe --------------------------------------------------------- */

struct edge_ebpf_cpu {
	struct wt_profile_bpf *skel;
	struct bpf_link **links;
	int *cpus;
	int ncpus, nlinks, hz, mode;
	size_t max_keys;
	struct ring_buffer *ring;
	agg ua; /* ring mode: user-space aggregation */
	edge_ebpf_seen seen;
	void *seen_arg;
	struct ring_buffer *procs_ring; /* wt_new_procs (discovery thread) */
	edge_ebpf_seen procs_seen;
	void *procs_arg;
	size_t procs_n;
	edge_ebpf_counters *ctr;
	uint64_t prev[WT_STAT_MAX];
};

static int online_cpus(int **out, int *n)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char buf[4096];
	int *v = NULL, cnt = 0;
	if (!f)
		return WT_EIO;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return WT_EIO;
	}
	fclose(f);
	v = calloc(MAX_CPUS, sizeof(*v));
	if (!v)
		return WT_ENOMEM;
	for (char *p = buf; *p && *p != '\n';) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && cnt < MAX_CPUS; c++)
			v[cnt++] = (int)c;
		p = *end == ',' ? end + 1 : end;
	}
	*out = v;
	*n = cnt;
	return cnt ? 0 : WT_EIO;
}

static void detach(edge_ebpf_cpu *c)
{
	/* destroying a perf link disables and closes its perf event fd too */
	for (int i = 0; i < c->nlinks; i++)
		bpf_link__destroy(c->links[i]);
	c->nlinks = 0;
}

static int attach(edge_ebpf_cpu *c, int hz, wt_err *err)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = NS_PER_S / (uint64_t)hz;
	for (int i = 0; i < c->ncpus; i++) {
		int fd = (int)syscall(__NR_perf_event_open, &attr, -1, c->cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV) /* went offline meanwhile */
				continue;
			int e = errno;
			detach(c);
			return wt_err_set(err, WT_EIO, "ebpf: perf_event_open(cpu-clock, cpu %d): %s", c->cpus[i], strerror(e));
		}
		struct bpf_link *l = bpf_program__attach_perf_event(c->skel->progs.wt_profile_cpu, fd);
		if (!l) {
			int e = errno;
			close(fd);
			detach(c);
			return wt_err_set(err, WT_EIO, "ebpf: attaching wt_profile_cpu to cpu %d: %s", c->cpus[i], strerror(e));
		}
		c->links[c->nlinks++] = l;
	}
	c->hz = hz;
	return 0;
}

static int ring_cb(void *ctx, void *data, size_t len)
{
	edge_ebpf_cpu *c = ctx;
	const struct wt_stack_event *e = data;
	int is_new = 0;
	if (len < sizeof(*e))
		return 0;
	int r = agg_add(&c->ua, &e->key, e->value, &is_new);
	if (r <= 0)
		atomic_fetch_add(&c->ctr->stat[WT_STAT_LOST], 1);
	else if (is_new && c->seen)
		key_seen(c->seen, c->seen_arg, &e->key);
	return 0;
}

static int procs_cb(void *ctx, void *data, size_t len)
{
	edge_ebpf_cpu *c = ctx;
	const struct wt_proc_event *ev = data;
	if (len < sizeof(*ev) || !c->procs_seen)
		return 0;
	c->procs_seen(c->procs_arg, ev);
	c->procs_n++;
	return 0;
}

int edge_ebpf_cpu_open(const edge_ebpf_cfg *cfg, edge_ebpf_counters *ctr, edge_ebpf_cpu **out, wt_err *err)
{
	edge_ebpf_cpu *c = calloc(1, sizeof(*c));
	int rc = 0, e;

	*out = NULL;
	if (!c)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	c->ctr = ctr;
	c->mode = cfg->mode;
	c->max_keys = (size_t)cfg->max_keys;
	c->ua.max = c->max_keys;
	if ((rc = online_cpus(&c->cpus, &c->ncpus))) {
		wt_err_set(err, rc, "ebpf: cannot read /sys/devices/system/cpu/online");
		goto fail;
	}
	c->links = calloc((size_t)c->ncpus, sizeof(*c->links));
	if (!c->links) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	c->skel = wt_profile_bpf__open();
	if (!c->skel) {
		rc = wt_err_set(err, WT_EIO, "ebpf: opening the profile skeleton: %s", strerror(errno));
		goto fail;
	}
	c->skel->rodata->wt_mode = cfg->mode == EDGE_EBPF_RING ? WT_MODE_RING : WT_MODE_HASH;
	bpf_map__set_max_entries(c->skel->maps.wt_stacks, (uint32_t)cfg->max_stacks);
	bpf_map__set_max_entries(c->skel->maps.wt_counts,
				 cfg->mode == EDGE_EBPF_RING ? 1 : (uint32_t)cfg->max_keys);
	bpf_map__set_max_entries(c->skel->maps.wt_events,
				 cfg->mode == EDGE_EBPF_RING ? RING_BYTES : (uint32_t)sysconf(_SC_PAGESIZE));
	if ((e = wt_profile_bpf__load(c->skel))) {
		rc = wt_err_set(err, WT_EIO, "ebpf: loading wt_profile_cpu failed: %s (needs root or CAP_BPF+CAP_PERFMON)",
				strerror(-e));
		goto fail;
	}
	if (cfg->mode == EDGE_EBPF_RING) {
		c->ring = ring_buffer__new(bpf_map__fd(c->skel->maps.wt_events), ring_cb, c, NULL);
		if (!c->ring) {
			rc = wt_err_set(err, WT_EIO, "ebpf: ring buffer setup: %s", strerror(errno));
			goto fail;
		}
	}
	c->procs_ring = ring_buffer__new(bpf_map__fd(c->skel->maps.wt_new_procs), procs_cb, c, NULL);
	if (!c->procs_ring) {
		rc = wt_err_set(err, WT_EIO, "ebpf: ring buffer setup (wt_new_procs): %s", strerror(errno));
		goto fail;
	}
	if ((rc = attach(c, cfg->frequency_hz, err)))
		goto fail;
	*out = c;
	return 0;
fail:
	edge_ebpf_cpu_close(c);
	return rc;
}

int edge_ebpf_cpu_set_frequency(edge_ebpf_cpu *c, int hz, wt_err *err)
{
	if (hz == c->hz)
		return 0;
	detach(c);
	return attach(c, hz, err);
}

int edge_ebpf_cpu_frequency(const edge_ebpf_cpu *c)
{
	return c ? c->hz : 0;
}

int edge_ebpf_cpu_poll(edge_ebpf_cpu *c, int timeout_ms, edge_ebpf_seen seen, void *arg)
{
	if (!c->ring)
		return 0;
	c->seen = seen;
	c->seen_arg = arg;
	int n = ring_buffer__poll(c->ring, timeout_ms);
	c->seen = NULL;
	return n < 0 && n != -EINTR ? WT_EIO : 0;
}

/* Run seen() over the announced process images: waiting up to timeout_ms
 * for them (ring_buffer__poll), or, without wait, taking only what is
 * there (ring_buffer__consume: no system call). */
static int procs_take(edge_ebpf_cpu *c, int wait, int timeout_ms, edge_ebpf_seen seen, void *arg)
{
	c->procs_seen = seen;
	c->procs_arg = arg;
	c->procs_n = 0;
	int n = wait ? ring_buffer__poll(c->procs_ring, timeout_ms) : ring_buffer__consume(c->procs_ring);
	c->procs_seen = NULL;
	return n < 0 ? 0 : (int)c->procs_n;
}

int edge_ebpf_cpu_poll_procs(edge_ebpf_cpu *c, int timeout_ms, edge_ebpf_seen seen, void *arg)
{
	return procs_take(c, 1, timeout_ms, seen, arg);
}

int edge_ebpf_cpu_consume_procs(edge_ebpf_cpu *c, edge_ebpf_seen seen, void *arg)
{
	return procs_take(c, 0, 0, seen, arg);
}

void edge_ebpf_cpu_forget(edge_ebpf_cpu *c, uint32_t tgid)
{
	if (c)
		bpf_map_delete_elem(bpf_map__fd(c->skel->maps.wt_procs), &tgid);
}

int edge_ebpf_cpu_drain(edge_ebpf_cpu *c, edge_ebpf_sink fn, void *arg, wt_err *err)
{
	int rc;
	edge_ebpf_read_stats(bpf_map__fd(c->skel->maps.wt_stats), c->prev, c->ctr);
	if (!c->ring)
		return edge_ebpf_drain_maps(bpf_map__fd(c->skel->maps.wt_counts), bpf_map__fd(c->skel->maps.wt_stacks),
					    EDGE_EBPF_CPU, c->max_keys, fn, arg, c->ctr, err);
	/* ring mode: take what is queued, then hand over the aggregation */
	ring_buffer__consume(c->ring);
	struct wt_stack_key *keys = calloc(c->ua.n + 1, sizeof(*keys));
	uint64_t *vals = calloc(c->ua.n + 1, sizeof(*vals));
	size_t n = 0;
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return wt_err_set(err, WT_ENOMEM, "out of memory draining the ring aggregation");
	}
	for (size_t i = 0; i < c->ua.cap; i++)
		if (c->ua.e[i].used) {
			keys[n] = c->ua.e[i].key;
			vals[n++] = c->ua.e[i].value;
		}
	free(c->ua.e);
	c->ua.e = NULL;
	c->ua.cap = c->ua.n = 0;
	rc = drain_entries(keys, vals, n, bpf_map__fd(c->skel->maps.wt_stacks), EDGE_EBPF_CPU, fn, arg, c->ctr, err);
	free(keys);
	free(vals);
	return rc;
}

void edge_ebpf_cpu_close(edge_ebpf_cpu *c)
{
	if (!c)
		return;
	detach(c);
	if (c->ring)
		ring_buffer__free(c->ring);
	if (c->procs_ring)
		ring_buffer__free(c->procs_ring);
	if (c->skel)
		wt_profile_bpf__destroy(c->skel);
	free(c->ua.e);
	free(c->links);
	free(c->cpus);
	free(c);
}
