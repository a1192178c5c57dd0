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
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ebpf_probe.h"
#include "ebpf_procs.h"
#include "ebpf_unwind.h"
#include "hindex.h"
#include "log.h"
#include "u64map.h"

#include "bpf/profile.skel.h"
#include "bpf/python.h"

#define NS_PER_S 1000000000ULL
#define RING_BYTES (1u << 20)
#define MAX_CPUS 4096

/* ---- user-space aggregation (ring mode) -------------------------------- */

/* ring mode's user-side aggregation: key → summed value, the entries in a
 * dense array found through a hash index over it (common/hindex.h) */
typedef struct agg_ent {
	struct wt_stack_key key;
	uint64_t value;
} agg_ent;

typedef struct agg {
	agg_ent *e;
	size_t cap, n, max;
	wt_hindex idx;
} agg;

static void agg_free(agg *a)
{
	free(a->e);
	wt_hindex_free(&a->idx);
	a->e = NULL;
	a->cap = a->n = 0;
}

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

static int agg_eq(const void *ctx, uint32_t id, const void *key)
{
	return !memcmp(&((const agg *)ctx)->e[id].key, key, sizeof(struct wt_stack_key));
}

/* 1 = added, 0 = full (dropped), <0 = ENOMEM */
static int agg_add(agg *a, const struct wt_stack_key *k, uint64_t v, int *is_new)
{
	uint64_t h = key_hash(k);
	uint32_t id;
	size_t slot;
	int r = wt_hindex_lookup(&a->idx, h, k, agg_eq, a, &id, &slot);

	*is_new = 0;
	if (r < 0)
		return r;
	if (r) {
		a->e[id].value += v;
		return 1;
	}
	if (a->n >= a->max)
		return 0;
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 1024;
		agg_ent *ne = realloc(a->e, nc * sizeof(*ne));
		if (!ne)
			return WT_ENOMEM;
		a->e = ne;
		a->cap = nc;
	}
	a->e[a->n].key = *k;
	a->e[a->n].value = v;
	wt_hindex_put(&a->idx, slot, h, (uint32_t)a->n++);
	*is_new = 1;
	return 1;
}

/* ---- stacks on the user side ---------------------------------------------- */

typedef struct stk_ent {
	uint32_t n;
	uint32_t flags; /* WT_STACK_* */
	uint64_t *ips;
} stk_ent;

/* Stack id → frames: one generation's stacks map read out (hash mode) or
 * the stacks streamed since the last drain (ring mode). At most max. The
 * entries are dense (e[0..n)); idx maps an id to its entry. */
typedef struct stk_tab {
	wt_u64map idx;
	stk_ent *e;
	size_t ecap, n, max;
} stk_tab;

/* 1 = stored (or already there), 0 = table full, WT_ENOMEM */
static int stk_put(stk_tab *t, uint64_t id, const struct wt_stack *s)
{
	uint32_t v, n;
	size_t slot;

	if (wt_u64map_get(&t->idx, id, &v))
		return 1;
	if (t->n >= t->max)
		return 0;
	if (t->n == t->ecap) {
		size_t nc = t->ecap ? t->ecap * 2 : 256;
		stk_ent *ne = realloc(t->e, nc * sizeof(*ne));
		if (!ne)
			return WT_ENOMEM;
		t->e = ne;
		t->ecap = nc;
	}
	if (wt_u64map_slot(&t->idx, id, &slot))
		return WT_ENOMEM;
	n = s->len < WT_MAX_STACK_DEPTH ? s->len : WT_MAX_STACK_DEPTH;
	if (!(t->e[t->n].ips = malloc((n ? n : 1) * sizeof(uint64_t))))
		return WT_ENOMEM;
	memcpy(t->e[t->n].ips, s->ips, n * sizeof(uint64_t));
	t->e[t->n].n = n;
	t->e[t->n].flags = s->flags;
	t->idx.keys[slot] = id;
	t->idx.vals[slot] = (uint32_t)t->n++;
	t->idx.n++;
	return 1;
}

static const stk_ent *stk_get(const stk_tab *t, uint64_t id)
{
	uint32_t v;

	return id && wt_u64map_get(&t->idx, id, &v) ? &t->e[v] : NULL;
}

static void stk_free(stk_tab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].ips);
	free(t->e);
	wt_u64map_free(&t->idx);
	t->e = NULL;
	t->ecap = t->n = 0;
}

/* ---- shared map draining -------------------------------------------------- */

static int drain_entries(const struct wt_stack_key *keys, const uint64_t *vals, size_t n, const stk_tab *t, int kind,
			 edge_ebpf_sink fn, void *arg, edge_ebpf_counters *ctr)
{
	for (size_t i = 0; i < n; i++) {
		const struct wt_stack_key *k = &keys[i];
		/* kern_stack is a stack id only without kern_err (the lock
		 * program keeps the lock's address there: bpf/lock.h) */
		uint64_t kid = k->kern_err ? 0 : k->kern_stack;
		const stk_ent *us = stk_get(t, k->user_stack), *ks = stk_get(t, kid), *ps = stk_get(t, k->py_stack);
		if ((k->user_stack && !us) || (kid && !ks) || (k->py_stack && !ps))
			atomic_fetch_add(&ctr->missing_stacks, 1);
		if (ps && !(ps->flags & WT_STACK_PYTHON))
			ps = NULL;
		fn(arg, kind, k, vals[i], us ? us->ips : NULL, us ? us->n : 0, ks ? ks->ips : NULL, ks ? ks->n : 0,
		   ps ? ps->ips : NULL, ps ? ps->n : 0, ps ? ps->flags : 0);
	}
	atomic_fetch_add(&ctr->entries, n);
	return 0;
}

/* Entries read per batch call: one syscall moves this many keys instead of
 * two syscalls per key (get_next_key + lookup_and_delete). */
#define BATCH 1024

typedef edge_ebpf_walk_fn walk_fn;

/* Per-key fallback for kernels without batch operations on hash maps
 * (before 5.6): collect the keys first, then read (and delete) each
 * (deleting while walking restarts the walk). */
static size_t walk_per_key(int fd, int del, size_t ksz, size_t vsz, size_t max, walk_fn fn, void *arg)
{
	char *keys = calloc(max + 1, ksz), *val = calloc(1, vsz);
	size_t n = 0, m = 0;
	void *prev = NULL;
	if (!keys || !val)
		goto out;
	while (n < max && bpf_map_get_next_key(fd, prev, keys + n * ksz) == 0) {
		prev = keys + n * ksz;
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		int r = del ? bpf_map_lookup_and_delete_elem(fd, keys + i * ksz, val)
			    : bpf_map_lookup_elem(fd, keys + i * ksz, val);
		if (r == 0) {
			m++;
			if (fn(arg, keys + i * ksz, val, 1))
				break;
		}
	}
out:
	free(keys);
	free(val);
	return m;
}

/* Batched walk of a hash map (deleting what it reads when del), BATCH
 * entries per system call handed to fn, at most max in all: returns the
 * entries read, or -1 when the kernel has no batch operations for it
 * (caller falls back to the per-key walk). A bucket larger than the room
 * left (ENOSPC) ends the walk early. fn returning nonzero stops it. */
static long batch_walk(int fd, int del, size_t ksz, size_t vsz, size_t max, walk_fn fn, void *arg)
{
	uint64_t token[16]; /* hash maps use a u32 bucket index */
	size_t n = 0;
	int first = 1;
	char *keys = malloc(BATCH * ksz), *vals = malloc(BATCH * vsz);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return 0;
	}
	while (n < max) {
		__u32 cnt = (__u32)(max - n < BATCH ? max - n : BATCH);
		int r = del ? bpf_map_lookup_and_delete_batch(fd, first ? NULL : token, token, keys, vals, &cnt, NULL)
			    : bpf_map_lookup_batch(fd, first ? NULL : token, token, keys, vals, &cnt, NULL);
		int e = r ? errno : 0;
		if (r && e != ENOENT && e != ENOSPC) {
			if (first && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP || e == ENOSYS)) {
				free(keys);
				free(vals);
				return -1;
			}
			if (e == EFAULT)
				cnt = 0;
		}
		n += cnt;
		first = 0;
		if (cnt && fn(arg, keys, vals, cnt))
			break;
		if (r)
			break;
	}
	free(keys);
	free(vals);
	return (long)n;
}

static size_t walk(int fd, int del, size_t ksz, size_t vsz, size_t max, walk_fn fn, void *arg)
{
	return edge_ebpf_walk(fd, del, ksz, vsz, max, fn, arg);
}

size_t edge_ebpf_walk(int fd, int del, size_t ksz, size_t vsz, size_t max, edge_ebpf_walk_fn fn, void *arg)
{
	long got = batch_walk(fd, del, ksz, vsz, max, fn, arg);
	return got >= 0 ? (size_t)got : walk_per_key(fd, del, ksz, vsz, max, fn, arg);
}

typedef struct keys_acc {
	struct wt_stack_key *keys;
	uint64_t *vals;
	size_t n, max;
} keys_acc;

static int keys_take(void *arg, const void *keys, const void *vals, size_t n)
{
	keys_acc *a = arg;
	if (n > a->max - a->n)
		n = a->max - a->n;
	memcpy(a->keys + a->n, keys, n * sizeof(*a->keys));
	memcpy(a->vals + a->n, vals, n * sizeof(*a->vals));
	a->n += n;
	return a->n >= a->max;
}

typedef struct stacks_acc {
	stk_tab *t;
	int rc;
} stacks_acc;

static int stacks_take(void *arg, const void *keys, const void *vals, size_t n)
{
	stacks_acc *a = arg;
	const uint64_t *ids = keys;
	const struct wt_stack *ss = vals;
	for (size_t i = 0; i < n && a->rc >= 0; i++)
		a->rc = stk_put(a->t, ids[i], &ss[i]);
	return a->rc < 0;
}

/* Let programs that read the old generation finish: a BPF program runs to
 * its end without sleeping, in microseconds. */
#define GEN_SETTLE_NS 2000000L

int edge_ebpf_drain_gen(const edge_ebpf_gen *g, int kind, edge_ebpf_sink fn, void *arg, edge_ebpf_counters *ctr,
			wt_err *err)
{
	keys_acc ka = {0};
	stk_tab t = {0};
	stacks_acc sa = {&t, 0};
	int rc = 0;
	uint32_t old = __atomic_load_n(g->gen, __ATOMIC_ACQUIRE) & 1;

	__atomic_store_n(g->gen, old ^ 1, __ATOMIC_RELEASE);
	struct timespec settle = {0, GEN_SETTLE_NS};
	nanosleep(&settle, NULL);
	ka.max = g->max_keys;
	ka.keys = calloc(ka.max + 1, sizeof(*ka.keys));
	ka.vals = calloc(ka.max + 1, sizeof(*ka.vals));
	t.max = g->max_stacks;
	if (!ka.keys || !ka.vals) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory draining BPF maps");
		goto out;
	}
	/* everything of the old generation is read and deleted: the maps are
	 * empty when the programs come back to them at the next flip */
	walk(g->counts_fd[old], 1, sizeof(struct wt_stack_key), sizeof(uint64_t), ka.max, keys_take, &ka);
	walk(g->stacks_fd[old], 1, sizeof(uint64_t), sizeof(struct wt_stack), g->max_stacks, stacks_take, &sa);
	if (sa.rc < 0) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory draining BPF stacks");
		goto out;
	}
	rc = drain_entries(ka.keys, ka.vals, ka.n, &t, kind, fn, arg, ctr);
out:
	stk_free(&t);
	free(ka.keys);
	free(ka.vals);
	return rc;
}

typedef struct scan_acc {
	edge_ebpf_seen fn;
	void *arg;
	uint32_t last;
} scan_acc;

static int scan_take(void *arg, const void *keys, const void *vals, size_t n)
{
	scan_acc *a = arg;
	const struct wt_stack_key *k = keys;
	(void)vals;
	for (size_t i = 0; i < n; i++) {
		if (k[i].tgid != a->last)
			key_seen(a->fn, a->arg, &k[i]);
		a->last = k[i].tgid;
	}
	return 0;
}

void edge_ebpf_scan_keys(int counts_fd, size_t max_keys, edge_ebpf_seen fn, void *arg)
{
	scan_acc a = {fn, arg, 0};
	walk(counts_fd, 0, sizeof(struct wt_stack_key), sizeof(uint64_t), max_keys, scan_take, &a);
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
	stk_tab ustk; /* ring mode: the stacks of ua's keys */
	size_t max_stacks;
	edge_ebpf_gen g; /* hash mode */
	edge_unwind_loader *unwind; /* NULL: frame pointers only */
	edge_ebpf_seen seen;
	void *seen_arg;
	struct ring_buffer *procs_ring; /* wt_new_procs (discovery thread) */
	edge_ebpf_seen procs_seen;
	void *procs_arg;
	size_t procs_n;
	edge_ebpf_counters *ctr;
	uint64_t prev[WT_STAT_MAX];
	edge_ebpf_py_new py_new; /* new Python stacks (discovery thread, with procs_ring) */
	void *py_arg;
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

/* ring mode: the id of a streamed stack (what the program computes in hash
 * mode), stored in the user-side table */
static void ring_stack(edge_ebpf_cpu *c, const struct wt_stack *s, __s32 *errp, __u64 *id, int stat)
{
	if (*errp)
		return;
	uint32_t n = s->len < WT_MAX_STACK_DEPTH ? s->len : WT_MAX_STACK_DEPTH;
	uint64_t h = XXH3_64bits_withSeed(s->ips, n * sizeof(uint64_t), s->flags) | 1;
	if (stk_put(&c->ustk, h, s) == 1) {
		*id = h;
		return;
	}
	*errp = -E2BIG;
	atomic_fetch_add(&c->ctr->stat[stat], 1);
}

static int ring_cb(void *ctx, void *data, size_t len)
{
	edge_ebpf_cpu *c = ctx;
	const struct wt_stack_event *e = data;
	struct wt_stack_key k;
	int is_new = 0;
	if (len < sizeof(*e))
		return 0;
	k = e->key;
	ring_stack(c, &e->user, &k.user_err, &k.user_stack, WT_STAT_USTACK_COLL);
	ring_stack(c, &e->kern, &k.kern_err, &k.kern_stack, WT_STAT_KSTACK_COLL);
	ring_stack(c, &e->py, &k.py_err, &k.py_stack, WT_STAT_USTACK_COLL);
	int r = agg_add(&c->ua, &k, e->value, &is_new);
	if (r <= 0)
		atomic_fetch_add(&c->ctr->stat[WT_STAT_LOST], 1);
	else if (is_new && c->seen)
		key_seen(c->seen, c->seen_arg, &k);
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

static int py_new_cb(void *ctx, void *data, size_t len)
{
	edge_ebpf_cpu *c = ctx;
	const struct wt_py_new *ev = data;
	if (len < sizeof(*ev) || !c->py_new)
		return 0;
	c->py_new(c->py_arg, ev->tgid, (const uint64_t *)ev->s.ips, ev->s.len < WT_PY_MAX_FRAMES ? ev->s.len : WT_PY_MAX_FRAMES);
	return 0;
}

void edge_ebpf_cpu_set_py(edge_ebpf_cpu *c, edge_ebpf_py_new fn, void *arg)
{
	if (!c)
		return;
	c->py_new = fn;
	c->py_arg = arg;
}

int edge_ebpf_cpu_py_fd(const edge_ebpf_cpu *c)
{
	return c ? bpf_map__fd(c->skel->maps.wt_py_procs) : -1;
}

int edge_ebpf_cpu_py_fds(const edge_ebpf_cpu *c, int fds[3])
{
	if (!c)
		return -1;
	fds[0] = bpf_map__fd(c->skel->maps.wt_py_procs);
	fds[1] = bpf_map__fd(c->skel->maps.wt_py_threads);
	fds[2] = bpf_map__fd(c->skel->maps.wt_py_new_stacks);
	return 0;
}

int edge_ebpf_cpu_open(const edge_ebpf_cfg *cfg, const char *cache_dir, edge_ebpf_counters *ctr, edge_ebpf_cpu **out,
		       wt_err *err)
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
	c->max_stacks = (size_t)cfg->max_stacks;
	c->ustk.max = c->max_stacks;
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
	/* ring mode keeps nothing in the kernel's counts and stacks maps */
	uint32_t nstacks = cfg->mode == EDGE_EBPF_RING ? 1 : (uint32_t)cfg->max_stacks;
	uint32_t nkeys = cfg->mode == EDGE_EBPF_RING ? 1 : (uint32_t)cfg->max_keys;
	bpf_map__set_max_entries(c->skel->maps.wt_stacks0, nstacks);
	bpf_map__set_max_entries(c->skel->maps.wt_stacks1, nstacks);
	bpf_map__set_max_entries(c->skel->maps.wt_counts0, nkeys);
	bpf_map__set_max_entries(c->skel->maps.wt_counts1, nkeys);
	bpf_map__set_max_entries(c->skel->maps.wt_events,
				 cfg->mode == EDGE_EBPF_RING ? RING_BYTES : (uint32_t)sysconf(_SC_PAGESIZE));
	int unwind = edge_ebpf_cfg_unwinds(cfg);
	c->skel->rodata->wt_unwind = unwind;
	bpf_map__set_max_entries(c->skel->maps.wt_unwind_rows, unwind ? (uint32_t)cfg->unwind_rows : 1);
	bpf_map__set_max_entries(c->skel->maps.wt_unwind_procs, unwind ? 4096 : 1);
	if ((e = wt_profile_bpf__load(c->skel))) {
		rc = wt_err_set(err, WT_EIO, "ebpf: loading wt_profile_cpu failed: %s (needs root or CAP_BPF+CAP_PERFMON)",
				strerror(-e));
		goto fail;
	}
	if (unwind && !(c->unwind = edge_unwind_loader_new(bpf_map__fd(c->skel->maps.wt_unwind_rows),
							   (uint32_t)cfg->unwind_rows,
							   bpf_map__fd(c->skel->maps.wt_unwind_procs), cache_dir))) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	c->g.gen = (uint32_t *)&c->skel->bss->wt_gen;
	c->g.counts_fd[0] = bpf_map__fd(c->skel->maps.wt_counts0);
	c->g.counts_fd[1] = bpf_map__fd(c->skel->maps.wt_counts1);
	c->g.stacks_fd[0] = bpf_map__fd(c->skel->maps.wt_stacks0);
	c->g.stacks_fd[1] = bpf_map__fd(c->skel->maps.wt_stacks1);
	c->g.max_keys = nkeys;
	c->g.max_stacks = nstacks;
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
	if (ring_buffer__add(c->procs_ring, bpf_map__fd(c->skel->maps.wt_py_new_stacks), py_new_cb, c)) {
		rc = wt_err_set(err, WT_EIO, "ebpf: ring buffer setup (wt_py_new_stacks): %s", strerror(errno));
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
	if (!c)
		return;
	bpf_map_delete_elem(bpf_map__fd(c->skel->maps.wt_procs), &tgid);
	bpf_map_delete_elem(bpf_map__fd(c->skel->maps.wt_py_procs), &tgid);
	edge_unwind_loader_forget(c->unwind, tgid);
}

void edge_ebpf_cpu_unwind_add(edge_ebpf_cpu *c, const struct edge_proc *p, int mode)
{
	if (!c || !c->unwind)
		return;
	if (mode == EDGE_UNWIND_FP)
		edge_unwind_loader_forget(c->unwind, p->tgid);
	else
		edge_unwind_loader_add(c->unwind, p,
				       mode == EDGE_UNWIND_EH_FRAME ? WT_UNWIND_MODE_TABLES : WT_UNWIND_MODE_AUTO);
}

int edge_ebpf_cpu_procs_fd(const edge_ebpf_cpu *c, int which)
{
	return which ? bpf_map__fd(c->skel->maps.wt_new_procs) : bpf_map__fd(c->skel->maps.wt_procs);
}

int edge_ebpf_cpu_unwind_fds(const edge_ebpf_cpu *c, int *rows_fd, int *procs_fd)
{
	if (!c || !c->unwind)
		return -1;
	*rows_fd = bpf_map__fd(c->skel->maps.wt_unwind_rows);
	*procs_fd = bpf_map__fd(c->skel->maps.wt_unwind_procs);
	return 0;
}

void edge_ebpf_cpu_unwind_build_stats(edge_ebpf_cpu *c, uint64_t *built, uint64_t *build_ns, uint64_t *cfi_bytes,
				      uint64_t *from_cache)
{
	edge_unwind_loader_build_stats(c ? c->unwind : NULL, built, build_ns, cfi_bytes, from_cache);
}

void edge_ebpf_cpu_unwind_stats(edge_ebpf_cpu *c, uint64_t *files, uint64_t *rows, uint64_t *failed,
				uint64_t *pending)
{
	edge_unwind_loader_stats(c ? c->unwind : NULL, files, rows, failed, pending);
}

int edge_ebpf_cpu_drain(edge_ebpf_cpu *c, edge_ebpf_sink fn, void *arg, wt_err *err)
{
	int rc;
	edge_ebpf_read_stats(bpf_map__fd(c->skel->maps.wt_stats), c->prev, c->ctr);
	if (!c->ring)
		return edge_ebpf_drain_gen(&c->g, EDGE_EBPF_CPU, fn, arg, c->ctr, err);
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
	for (size_t i = 0; i < c->ua.n; i++) {
		keys[n] = c->ua.e[i].key;
		vals[n++] = c->ua.e[i].value;
	}
	agg_free(&c->ua);
	rc = drain_entries(keys, vals, n, &c->ustk, EDGE_EBPF_CPU, fn, arg, c->ctr);
	stk_free(&c->ustk);
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
	agg_free(&c->ua);
	stk_free(&c->ustk);
	edge_unwind_loader_free(c->unwind);
	free(c->links);
	free(c->cpus);
	free(c);
}
