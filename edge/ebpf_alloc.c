/*
 * ebpf_alloc.c — user side of bpf/alloc.bpf.c: sampled native allocations
 * (libc malloc, calloc, realloc, free) as the `native_alloc` (bytes) and
 * `native_alloc_objects` (count) sample types of each flush, and the
 * sampled allocations not yet freed as an `inuse_space` / `inuse_objects`
 * snapshot at each flush (the input of the hub's leak analysis,
 * hub/http_leaks.c). Built into profiles by ebpf_build.c like the other
 * probes; the unwind maps are the on-CPU probe's (edge_ebpf_cpu_unwind_fds).
 *
 * Attach: the program is loaded when some service may want allocations
 * (edge_ebpf_cfg_alloc_any). A process of such a service, once discovered
 * (ebpf_sampler.c's announcement handling), is entered in wt_alloc_pids
 * and its glibc file gets the probes: uprobes through perf_event_open's
 * uprobe PMU with pid -1 on the file's path as that process sees it
 * (/proc/PID/root/...), once per distinct file (device, inode), so every
 * process that maps it later runs them too. A process without glibc
 * (statically linked: no libc mapping; musl: edge_proc_libc) is skipped
 * and counted. Cost per call: docs/operations.md "Native allocations".
 *
 * Threads: open/drain/close on the sampler thread; edge_ebpf_alloc_proc
 * and _forget on the discovery or the sampler thread (one mutex inside);
 * the counters are atomics.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/alloc.h"
#include "ebpf_procs.h"
#include "ebpf_probe.h"
#include "log.h"
#include "u64map.h"

#include "bpf/alloc.skel.h"

#define MAX_FILES 64 /* distinct libc files with probes */

enum { P_MALLOC, P_CALLOC, P_REALLOC, P_FREE, P_MALLOC_RET, P_CALLOC_RET, P_REALLOC_RET, NPROBES };

typedef struct libc_file {
	uint64_t dev, ino;
	struct bpf_link *links[NPROBES];
} libc_file;

struct edge_ebpf_alloc {
	struct wt_alloc_bpf *skel;
	edge_ebpf_gen g;
	edge_ebpf_counters *ctr;
	uint64_t prev[WT_STAT_MAX];
	libc_file files[MAX_FILES];
	size_t nfiles;
	pthread_mutex_t mu; /* pids, files, nfiles (discovery and sampler threads) */
	wt_u64map pids;    /* tgid → state (PID_*) */
	wt_u64map unref;   /* live stacks no live allocation named at the last drain */
	size_t max_live, max_stacks;
	int inuse; /* ebpf.alloc_inuse: return and free probes, the in-use snapshot */
	_Atomic uint64_t attached, nprocs, skipped_static, skipped_musl, live, failed_files;
};

enum { PID_OFF = 1, PID_ON = 2, PID_STATIC = 3, PID_MUSL = 4 };

/* the exponential draws of bytes between sampling points, mean exactly
 * mean (quantiles at (i + 1/2) / N, rescaled) */
static void exp_table(uint32_t *t, uint64_t mean)
{
	double sum = 0, v[WT_ALLOC_EXP_N];
	for (int i = 0; i < WT_ALLOC_EXP_N; i++) {
		v[i] = -log(1.0 - (i + 0.5) / WT_ALLOC_EXP_N);
		sum += v[i];
	}
	for (int i = 0; i < WT_ALLOC_EXP_N; i++) {
		double b = v[i] * (double)mean * WT_ALLOC_EXP_N / sum;
		t[i] = b < 1 ? 1 : b > 4e9 ? 4000000000u : (uint32_t)b;
	}
}

int edge_ebpf_alloc_open(const edge_ebpf_cfg *cfg, const edge_ebpf_cpu *cpu, edge_ebpf_counters *ctr,
			 edge_ebpf_alloc **out, wt_err *err)
{
	edge_ebpf_alloc *a = calloc(1, sizeof(*a));
	int rc = 0, e, rows_fd, procs_fd;

	*out = NULL;
	if (!a)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	a->ctr = ctr;
	pthread_mutex_init(&a->mu, NULL);
	a->max_live = (size_t)cfg->alloc_max_live;
	a->max_stacks = (size_t)cfg->max_stacks;
	a->inuse = cfg->alloc_inuse;
	a->skel = wt_alloc_bpf__open();
	if (!a->skel) {
		rc = wt_err_set(err, WT_EIO, "ebpf: opening the allocation skeleton: %s", strerror(errno));
		goto fail;
	}
	a->skel->rodata->wt_alloc_mean = (uint64_t)cfg->alloc_sample_bytes;
	a->skel->rodata->wt_alloc_inuse = a->inuse;
	exp_table((uint32_t *)a->skel->rodata->wt_alloc_exp, (uint64_t)cfg->alloc_sample_bytes);
	bpf_map__set_max_entries(a->skel->maps.wt_alloc_stacks0, (uint32_t)cfg->max_stacks);
	bpf_map__set_max_entries(a->skel->maps.wt_alloc_stacks1, (uint32_t)cfg->max_stacks);
	bpf_map__set_max_entries(a->skel->maps.wt_alloc_live_stacks, (uint32_t)cfg->max_stacks);
	bpf_map__set_max_entries(a->skel->maps.wt_alloc_counts0, (uint32_t)cfg->max_keys);
	bpf_map__set_max_entries(a->skel->maps.wt_alloc_counts1, (uint32_t)cfg->max_keys);
	bpf_map__set_max_entries(a->skel->maps.wt_alloc_live, a->inuse ? (uint32_t)cfg->alloc_max_live : 1);
	if (cpu && edge_ebpf_cpu_unwind_fds(cpu, &rows_fd, &procs_fd) == 0) {
		a->skel->rodata->wt_unwind = 1;
		if ((e = bpf_map__reuse_fd(a->skel->maps.wt_unwind_rows, rows_fd)) ||
		    (e = bpf_map__reuse_fd(a->skel->maps.wt_unwind_procs, procs_fd))) {
			rc = wt_err_set(err, WT_EIO, "ebpf: sharing the unwind maps with the allocation program: %s",
					strerror(-e));
			goto fail;
		}
	} else {
		bpf_map__set_max_entries(a->skel->maps.wt_unwind_rows, 1);
		bpf_map__set_max_entries(a->skel->maps.wt_unwind_procs, 1);
	}
	if ((e = wt_alloc_bpf__load(a->skel))) {
		rc = wt_err_set(err, WT_EIO, "ebpf: loading the allocation program failed: %s", strerror(-e));
		goto fail;
	}
	a->g.gen = (uint32_t *)&a->skel->bss->wt_gen;
	a->g.counts_fd[0] = bpf_map__fd(a->skel->maps.wt_alloc_counts0);
	a->g.counts_fd[1] = bpf_map__fd(a->skel->maps.wt_alloc_counts1);
	a->g.stacks_fd[0] = bpf_map__fd(a->skel->maps.wt_alloc_stacks0);
	a->g.stacks_fd[1] = bpf_map__fd(a->skel->maps.wt_alloc_stacks1);
	a->g.max_keys = (size_t)cfg->max_keys;
	a->g.max_stacks = (size_t)cfg->max_stacks;
	wt_info("msg=\"ebpf native allocations loaded\" sample_bytes=%lld max_live=%lld inuse=%s",
		(long long)cfg->alloc_sample_bytes, (long long)cfg->alloc_max_live, a->inuse ? "true" : "false");
	*out = a;
	return 0;
fail:
	edge_ebpf_alloc_close(a);
	return rc;
}

/* Where free's probe goes, as an offset into the function. glibc's free
 * opens with `test %rdi,%rdi; je` (free(NULL) returns): an instruction the
 * kernel single-steps out of line (a second trap; in a virtual machine the
 * single step costs ~10 us, docs/operations.md), where the push after it
 * is emulated. The probe goes on that push when the file has this shape
 * (free(NULL) then runs nothing, which is fine: NULL is never live),
 * else at the entry. */
static size_t free_offset(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = NULL;
	uint64_t va = 0;
	size_t off = 0;
	if (fd < 0)
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		goto out;
	for (Elf_Scn *scn = NULL; !va && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;
			if (gelf_getsym(d, (int)i, &sym) && sym.st_value && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
			    (nm = elf_strptr(elf, sh.sh_link, sym.st_name)) && !strcmp(nm, "free")) {
				va = sym.st_value;
				break;
			}
		}
	}
	size_t nph = 0;
	if (!va || elf_getphdrnum(elf, &nph))
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		unsigned char b[16];
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || va < ph.p_vaddr ||
		    va + sizeof(b) > ph.p_vaddr + ph.p_filesz)
			continue;
		if (pread(fd, b, sizeof(b), (off_t)(va - ph.p_vaddr + ph.p_offset)) != (ssize_t)sizeof(b))
			break;
		size_t k = 0;
		if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
			k = 4; /* endbr64 */
		if (b[k] != 0x48 || b[k + 1] != 0x85 || b[k + 2] != 0xff) /* test %rdi,%rdi */
			break;
		k += 3;
		if (b[k] == 0x74) /* je rel8 */
			k += 2;
		else if (b[k] == 0x0f && b[k + 1] == 0x84) /* je rel32 */
			k += 6;
		else
			break;
		/* push %reg (50-57, or 41 50-57) */
		if ((b[k] >= 0x50 && b[k] <= 0x57) || (b[k] == 0x41 && b[k + 1] >= 0x50 && b[k + 1] <= 0x57))
			off = k;
		break;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return off;
}

/* the probes on the glibc file at path (pid's view); 0, or -1 */
static int attach_file(edge_ebpf_alloc *a, const char *path, uint64_t dev, uint64_t ino)
{
	static const struct {
		const char *fn;
		int ret;
	} what[NPROBES] = {{"malloc", 0}, {"calloc", 0}, {"realloc", 0}, {"free", 0},
			   {"malloc", 1}, {"calloc", 1}, {"realloc", 1}};
	struct bpf_program *prog[NPROBES] = {a->skel->progs.wt_malloc,    a->skel->progs.wt_calloc,
					    a->skel->progs.wt_realloc,   a->skel->progs.wt_free,
					    a->skel->progs.wt_alloc_ret, a->skel->progs.wt_alloc_ret,
					    a->skel->progs.wt_alloc_ret};
	libc_file *f = &a->files[a->nfiles];
	size_t free_off = free_offset(path);
	memset(f, 0, sizeof(*f));
	/* WT_EBPF_ALLOC_PROBES in the edge's environment: a bit mask of the
	 * probes to attach (enum order), to measure each one's cost by hand
	 * (the per-probe figures in docs/operations.md "Native
	 * allocations"); all by default */
	const char *mask_env = getenv("WT_EBPF_ALLOC_PROBES");
	unsigned mask = mask_env ? (unsigned)strtoul(mask_env, NULL, 0) : ~0u;
	if (!a->inuse) /* allocations only: the entries of malloc, calloc, realloc */
		mask &= (1u << P_MALLOC) | (1u << P_CALLOC) | (1u << P_REALLOC);
	/* returns first: an entry whose sampled call is seen always has its return */
	for (int i = NPROBES - 1; i >= 0; i--) {
		if (!(mask & (1u << i)))
			continue;
		LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = what[i].fn, .retprobe = what[i].ret != 0);
		f->links[i] = bpf_program__attach_uprobe_opts(prog[i], -1, path, i == P_FREE ? free_off : 0, &o);
		if (!f->links[i]) {
			int e = errno;
			wt_warn("msg=\"ebpf native allocations: probe not attached\" file=%s function=%s%s error=\"%s\"",
				path, what[i].fn, what[i].ret ? " (return)" : "", strerror(e));
			for (int k = i + 1; k < NPROBES; k++)
				bpf_link__destroy(f->links[k]);
			atomic_fetch_add(&a->failed_files, 1);
			return -1;
		}
	}
	f->dev = dev;
	f->ino = ino;
	a->nfiles++;
	atomic_fetch_add(&a->attached, 1);
	wt_info("msg=\"ebpf native allocations attached\" file=%s free_offset=%zu", path, free_off);
	return 0;
}

static void proc_locked(edge_ebpf_alloc *a, const edge_proc *p, int on)
{
	size_t slot;
	if (wt_u64map_slot(&a->pids, p->tgid, &slot))
		return;
	uint32_t was = a->pids.vals[slot];
	if (was == PID_STATIC || was == PID_MUSL || was == (uint32_t)(on ? PID_ON : PID_OFF))
		return;
	uint32_t st = on ? PID_ON : PID_OFF;
	const edge_proc_map *libc = NULL;
	if (on) {
		int musl = edge_proc_libc(p, &libc) == EDGE_LIBC_MUSL;
		if (!libc) {
			if (edge_proc_maps_early(p))
				return; /* not yet mapped: decided at its next look */
			st = musl ? PID_MUSL : PID_STATIC;
			atomic_fetch_add(musl ? &a->skipped_musl : &a->skipped_static, 1);
			wt_info("msg=\"ebpf native allocations: process skipped\" pid=%u exe=%s reason=%s", p->tgid,
				p->exe, musl ? "musl" : "no glibc (statically linked)");
		}
	}
	if (libc) {
		char path[4400];
		struct stat sb;
		snprintf(path, sizeof(path), "/proc/%u/root%s", p->tgid, libc->path);
		if (stat(path, &sb))
			return; /* gone (or the file is): tried again at its next look */
		size_t i = 0;
		while (i < a->nfiles && !(a->files[i].dev == (uint64_t)sb.st_dev && a->files[i].ino == (uint64_t)sb.st_ino))
			i++;
		if (i == a->nfiles && (a->nfiles >= MAX_FILES || attach_file(a, path, sb.st_dev, sb.st_ino)))
			return;
	}
	uint32_t key = p->tgid, v = 1;
	if (st == PID_ON && bpf_map_update_elem(bpf_map__fd(a->skel->maps.wt_alloc_pids), &key, &v, BPF_ANY))
		return; /* wt_alloc_pids full */
	if (st != PID_ON && was == PID_ON)
		bpf_map_delete_elem(bpf_map__fd(a->skel->maps.wt_alloc_pids), &key);
	if (was == WT_U64MAP_EMPTY) {
		a->pids.keys[slot] = p->tgid;
		a->pids.n++;
	}
	if (st == PID_ON && was != PID_ON)
		atomic_fetch_add(&a->nprocs, 1);
	if (was == PID_ON && st != PID_ON)
		atomic_fetch_sub(&a->nprocs, 1);
	a->pids.vals[slot] = st;
}

void edge_ebpf_alloc_proc(edge_ebpf_alloc *a, const edge_proc *p, int on)
{
	if (!a || !p || p->state != EDGE_PROC_LIVE)
		return;
	pthread_mutex_lock(&a->mu);
	proc_locked(a, p, on);
	pthread_mutex_unlock(&a->mu);
}

void edge_ebpf_alloc_forget(edge_ebpf_alloc *a, uint32_t tgid)
{
	uint32_t was;
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	if (wt_u64map_del(&a->pids, tgid, &was) == 1) {
		if (was == PID_ON)
			atomic_fetch_sub(&a->nprocs, 1);
		bpf_map_delete_elem(bpf_map__fd(a->skel->maps.wt_alloc_pids), &tgid);
	}
	pthread_mutex_unlock(&a->mu);
	/* its live allocations go at the next drain (the process is gone) */
}

/* ---- in-use snapshot -------------------------------------------------------- */

typedef struct live_ent {
	struct wt_alloc_live_key k;
	struct wt_alloc_live v;
} live_ent;

typedef struct live_acc {
	live_ent *e;
	size_t n, max;
} live_acc;

static int live_take(void *arg, const void *keys, const void *vals, size_t n)
{
	live_acc *a = arg;
	const struct wt_alloc_live_key *k = keys;
	const struct wt_alloc_live *v = vals;
	for (size_t i = 0; i < n && a->n < a->max; i++) {
		a->e[a->n].k = k[i];
		a->e[a->n++].v = v[i];
	}
	return a->n >= a->max;
}

static int live_cmp(const void *x, const void *y)
{
	const live_ent *a = x, *b = y;
	return memcmp(&a->v.key, &b->v.key, sizeof(a->v.key));
}

/* the live stacks that no live allocation names at two drains in a row go
 * (one drain could fall between a stack's store and its allocation's
 * return) */
static void live_stacks_gc(edge_ebpf_alloc *a, const live_ent *e, size_t n)
{
	wt_u64map used = {0}, unref = {0};
	size_t slot;
	int fd = bpf_map__fd(a->skel->maps.wt_alloc_live_stacks);
	uint64_t key, next, *prev = NULL;
	for (size_t i = 0; i < n; i++)
		if (e[i].v.key.user_stack && !wt_u64map_find(&used, e[i].v.key.user_stack, &slot) &&
		    wt_u64map_slot(&used, e[i].v.key.user_stack, &slot) == 0) {
			used.keys[slot] = e[i].v.key.user_stack;
			used.vals[slot] = 0;
			used.n++;
		}
	uint64_t *del = calloc(a->max_stacks + 1, sizeof(*del));
	size_t nd = 0, seen = 0;
	while (del && seen++ < a->max_stacks && bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (wt_u64map_find(&used, key, &slot))
			continue;
		if (wt_u64map_find(&a->unref, key, &slot))
			del[nd++] = key;
		else if (wt_u64map_slot(&unref, key, &slot) == 0) {
			unref.keys[slot] = key;
			unref.vals[slot] = 0;
			unref.n++;
		}
	}
	for (size_t i = 0; i < nd; i++)
		bpf_map_delete_elem(fd, &del[i]);
	free(del);
	wt_u64map_free(&used);
	wt_u64map_free(&a->unref);
	a->unref = unref;
}

static int inuse_drain(edge_ebpf_alloc *a, edge_ebpf_sink fn, void *arg, wt_err *err)
{
	int live_fd = bpf_map__fd(a->skel->maps.wt_alloc_live), st_fd = bpf_map__fd(a->skel->maps.wt_alloc_live_stacks);
	live_acc acc = {calloc(a->max_live + 1, sizeof(live_ent)), 0, a->max_live};
	struct wt_stack *stk = malloc(sizeof(*stk));
	wt_u64map64 alive = {0};
	size_t n = 0;
	int rc = 0;
	if (!acc.e || !stk) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory reading the live allocations");
		goto out;
	}
	edge_ebpf_walk(live_fd, 0, sizeof(struct wt_alloc_live_key), sizeof(struct wt_alloc_live), a->max_live, live_take,
		       &acc);
	/* processes gone, or no longer sampled (their service turned off):
	 * their entries go */
	for (size_t i = 0; i < acc.n; i++) {
		uint64_t ok;
		uint32_t tgid = acc.e[i].k.tgid, st = 0;
		if (!wt_u64map64_get(&alive, tgid, &ok)) {
			pthread_mutex_lock(&a->mu);
			ok = wt_u64map_get(&a->pids, tgid, &st) && st == PID_ON;
			pthread_mutex_unlock(&a->mu);
			ok = ok && !(kill((pid_t)tgid, 0) && errno == ESRCH);
			wt_u64map64_put(&alive, tgid, ok);
		}
		if (ok)
			acc.e[n++] = acc.e[i];
		else
			bpf_map_delete_elem(live_fd, &acc.e[i].k);
	}
	atomic_store(&a->live, n);
	qsort(acc.e, n, sizeof(live_ent), live_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint64_t bytes = 0, objs = 0;
		while (j < n && !live_cmp(&acc.e[i], &acc.e[j])) {
			bytes += acc.e[j].v.bytes;
			objs += acc.e[j].v.objects;
			j++;
		}
		struct wt_stack_key k = acc.e[i].v.key;
		const uint64_t *us = NULL;
		size_t nu = 0;
		if (k.user_stack && bpf_map_lookup_elem(st_fd, &k.user_stack, stk) == 0) {
			us = (const uint64_t *)stk->ips;
			nu = stk->len < WT_MAX_STACK_DEPTH ? stk->len : WT_MAX_STACK_DEPTH;
		} else if (k.user_stack) {
			atomic_fetch_add(&a->ctr->missing_stacks, 1);
		}
		k.pad = EDGE_ALLOC_INUSE_BYTES;
		fn(arg, EDGE_EBPF_ALLOC, &k, bytes, us, nu, NULL, 0, NULL, 0, 0);
		k.pad = EDGE_ALLOC_INUSE_OBJECTS;
		fn(arg, EDGE_EBPF_ALLOC, &k, objs, us, nu, NULL, 0, NULL, 0, 0);
		i = j;
	}
	live_stacks_gc(a, acc.e, n);
out:
	wt_u64map64_free(&alive);
	free(acc.e);
	free(stk);
	return rc;
}

int edge_ebpf_alloc_drain(edge_ebpf_alloc *a, edge_ebpf_sink fn, void *arg, wt_err *err)
{
	edge_ebpf_read_stats(bpf_map__fd(a->skel->maps.wt_alloc_stats), a->prev, a->ctr);
	int rc = edge_ebpf_drain_gen(&a->g, EDGE_EBPF_ALLOC, fn, arg, a->ctr, err);
	if (!rc && a->inuse)
		rc = inuse_drain(a, fn, arg, err);
	return rc;
}

void edge_ebpf_alloc_stats(edge_ebpf_alloc *a, uint64_t *files, uint64_t *procs, uint64_t *skipped_static,
			   uint64_t *skipped_musl, uint64_t *live)
{
	*files = a ? atomic_load(&a->attached) : 0;
	*procs = a ? atomic_load(&a->nprocs) : 0;
	*skipped_static = a ? atomic_load(&a->skipped_static) : 0;
	*skipped_musl = a ? atomic_load(&a->skipped_musl) : 0;
	*live = a ? atomic_load(&a->live) : 0;
}

void edge_ebpf_alloc_close(edge_ebpf_alloc *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nfiles; i++)
		for (int k = 0; k < NPROBES; k++)
			if (a->files[i].links[k])
				bpf_link__destroy(a->files[i].links[k]);
	if (a->skel)
		wt_alloc_bpf__destroy(a->skel);
	wt_u64map_free(&a->pids);
	wt_u64map_free(&a->unref);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
