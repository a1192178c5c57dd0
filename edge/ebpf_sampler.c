/*
 * ebpf_sampler.c — the eBPF sampler thread (see ebpf.h): live
 * configuration, process discovery, periodic drain → symbolize → one
 * wt_profile per service → ingest pipeline, and its /metrics.
 */
#include "ebpf.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "demangle.h"
#include "ebpf_probe.h"
#include "ebpf_procs.h"
#include "format.h"
#include "log.h"
#include "pprof.h"
#include "profile.h"
#include "server.h"
#include "symbolize.h"

#define NS_PER_S 1000000000LL
#define TICK_MS 100
#define DISCOVER_NS (NS_PER_S)
#define DISCOVER_POLL_MS 200 /* longest wait for new processes (stop, unload) */
#define MAX_ELF_FILES 512
#define TRUNCATED_FRAME "[truncated]"
#define NO_STACK_FRAME "[no stack]"
#define JIT_MAPPING "[jit]" /* mapping of frames named from a perf map */
#define ENDPOINT "ebpf"

/* Outermost frames of a complete user stack: the C runtime's entry, a
 * thread start, Go's goroutine roots. A frame-pointer walk that stops
 * anywhere else was cut short (no frame pointers somewhere below). */
static const char *const stack_roots[] = {
	"_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3", "__clone",
	"__clone3", "thread_start", "_dl_start_user", "runtime.goexit", "runtime.goexit.abi0", "runtime.mstart",
	"runtime.rt0_go", "runtime.rt0_go.abi0", NULL,
};

/* per-flush, per-service state */
typedef struct fcache_ent {
	const void *key;
	uint32_t fn;
} fcache_ent;

typedef struct svc {
	char *name;
	wt_profile *p;
	size_t cpu_idx, off_idx;
	int has_off;
	fcache_ent *fc; /* symbol name pointer → function id */
	size_t fc_cap, fc_n;
	struct svc *next;
} svc;

struct edge_ebpf {
	edge_server *srv;
	const edge_config *cfg;
	char *config_path;
	pthread_t th, dth; /* sampler, discovery */
	int started, dstarted;
	pthread_mutex_t pmu; /* cpu/off pointers: sampler writes, discovery reads */
	_Atomic int pmu_wanted; /* the sampler thread waits for pmu: discovery steps aside */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, reload;
	edge_ebpf_cfg pending;
	int has_pending;

	/* sampler thread only */
	edge_ebpf_cfg cur;
	edge_ebpf_cpu *cpu;
	edge_ebpf_off *off;
	edge_ksyms *ksyms;
	edge_elf_cache *elfs;
	edge_procs *procs;
	uint64_t gen;
	int64_t window_ns;
	char host[256];
	svc *svcs;
	wt_err flush_err;
	int period_ns_cached;

	/* commits in flight */
	pthread_mutex_t cmu;
	pthread_cond_t ccv;
	int inflight;

	/* metrics */
	edge_ebpf_counters ctr[EDGE_EBPF_NKINDS];
	_Atomic int enabled, offcpu_on, frequency;
	_Atomic uint64_t flushes, profiles, flush_errors, load_errors, commit_errors, truncated, unsym_frames,
		frames, no_proc, samples_cpu, offcpu_ns, reloads, lost_procs, captured_procs, tracked_procs,
		reread_procs, jit_frames, unwind_files, unwind_rows, unwind_failed, unwind_pending;
	_Atomic int64_t last_flush_us;
};

static volatile sig_atomic_t g_hup;

static void on_hup(int sig)
{
	(void)sig;
	g_hup = 1;
}

static int64_t now_ns(int clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* ---- config copies ------------------------------------------------------- */

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int cfg_copy(edge_ebpf_cfg *dst, const edge_ebpf_cfg *src)
{
	*dst = *src;
	dst->rules = NULL;
	dst->nrules = 0;
	if (!src->nrules)
		return 0;
	dst->rules = calloc(src->nrules, sizeof(*dst->rules));
	if (!dst->rules)
		return WT_ENOMEM;
	for (size_t i = 0; i < src->nrules; i++) {
		dst->rules[i].comm = dup0(src->rules[i].comm);
		dst->rules[i].cgroup = dup0(src->rules[i].cgroup);
		dst->rules[i].container = dup0(src->rules[i].container);
		dst->rules[i].service = dup0(src->rules[i].service);
		dst->nrules = i + 1;
	}
	return 0;
}

/* ---- building profiles ------------------------------------------------------ */

static void svcs_free(edge_ebpf *e)
{
	svc *s = e->svcs, *nx;
	for (; s; s = nx) {
		nx = s->next;
		free(s->name);
		wt_profile_free(s->p);
		free(s->fc);
		free(s);
	}
	e->svcs = NULL;
}

static svc *svc_get(edge_ebpf *e, edge_proc *pr)
{
	if (pr->user_gen == e->gen && pr->user)
		return pr->user;
	svc *s;
	for (s = e->svcs; s; s = s->next)
		if (!strcmp(s->name, pr->service))
			break;
	if (!s) {
		wt_err err = {0};
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->name = strdup(pr->service);
		s->p = wt_profile_new(NULL);
		if (!s->name || !s->p || wt_profile_add_type(s->p, "cpu", "nanoseconds", NULL, &s->cpu_idx, &err) ||
		    (e->cur.offcpu && wt_profile_add_type(s->p, "offcpu", "nanoseconds", NULL, &s->off_idx, &err))) {
			free(s->name);
			wt_profile_free(s->p);
			free(s);
			return NULL;
		}
		s->has_off = e->cur.offcpu;
		s->next = e->svcs;
		e->svcs = s;
	}
	pr->user = s;
	pr->user_gen = e->gen;
	return s;
}

static uint32_t *fc_slot(svc *s, const void *key)
{
	if ((s->fc_n + 1) * 2 > s->fc_cap) {
		size_t nc = s->fc_cap ? s->fc_cap * 2 : 1024;
		fcache_ent *ne = calloc(nc, sizeof(*ne));
		if (!ne)
			return NULL;
		for (size_t i = 0; i < s->fc_cap; i++) {
			if (!s->fc[i].key)
				continue;
			size_t j = ((uintptr_t)s->fc[i].key * 11400714819323198485ull >> 17) & (nc - 1);
			while (ne[j].key)
				j = (j + 1) & (nc - 1);
			ne[j] = s->fc[i];
		}
		free(s->fc);
		s->fc = ne;
		s->fc_cap = nc;
	}
	size_t j = ((uintptr_t)key * 11400714819323198485ull >> 17) & (s->fc_cap - 1);
	while (s->fc[j].key && s->fc[j].key != key)
		j = (j + 1) & (s->fc_cap - 1);
	if (!s->fc[j].key) {
		s->fc[j].key = key;
		s->fc[j].fn = WT_NO_FUNCTION;
		s->fc_n++;
	}
	return &s->fc[j].fn;
}

/* function id of symbol `name` (a stable pointer into kallsyms or an ELF
 * cache entry), demangled once per flush and service */
static int func_of(svc *s, const char *name, const char *file, const char *build_id, uint32_t *out, wt_err *err)
{
	uint32_t *slot = fc_slot(s, name);
	int rc;
	if (!slot)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (*slot != WT_NO_FUNCTION) {
		*out = *slot;
		return 0;
	}
	wt_function f = {0};
	char *dem = wt_demangle(name);
	if ((rc = wt_profile_intern_cstr(s->p, dem ? dem : name, &f.name, err)) ||
	    (dem && (rc = wt_profile_intern_cstr(s->p, name, &f.system_name, err))) ||
	    (file && (rc = wt_profile_intern_cstr(s->p, file, &f.filename, err))) ||
	    (build_id && *build_id && (rc = wt_profile_intern_cstr(s->p, build_id, &f.build_id, err))) ||
	    (rc = wt_profile_add_function(s->p, &f, out, err))) {
		free(dem);
		return rc;
	}
	free(dem);
	*slot = *out;
	return 0;
}

static int mapping_of(svc *s, const char *file, const char *build_id, uint32_t *out, wt_err *err)
{
	wt_mapping m = {0};
	int rc;
	if ((rc = wt_profile_intern_cstr(s->p, file, &m.filename, err)) ||
	    (build_id && *build_id && (rc = wt_profile_intern_cstr(s->p, build_id, &m.build_id, err))))
		return rc;
	return wt_profile_add_mapping(s->p, &m, out, err);
}

static int marker_frame(svc *s, const char *name, uint32_t *out, wt_err *err)
{
	uint32_t fn;
	int rc = wt_profile_add_function_named(s->p, name, strlen(name), NULL, &fn, err);
	if (rc)
		return rc;
	wt_frame fr = {fn, WT_NO_MAPPING, 0, 0};
	return wt_profile_add_frame(s->p, &fr, out, err);
}

static int kernel_frame(edge_ebpf *e, svc *s, uint64_t ip, int leaf, uint32_t *out, wt_err *err)
{
	const char *mod = NULL;
	const char *name = edge_ksyms_find(e->ksyms, leaf ? ip : ip - 1, &mod);
	char mname[96];
	wt_frame fr = {WT_NO_FUNCTION, WT_NO_MAPPING, 0, ip};
	int rc;

	snprintf(mname, sizeof(mname), "[%s]", mod ? mod : "kernel.kallsyms");
	if ((rc = mapping_of(s, mname, NULL, &fr.mapping, err)))
		return rc;
	if (name) {
		if ((rc = func_of(s, name, NULL, NULL, &fr.function, err)))
			return rc;
	} else {
		atomic_fetch_add(&e->unsym_frames, 1);
	}
	return wt_profile_add_frame(s->p, &fr, out, err);
}

static int user_frame(edge_ebpf *e, svc *s, edge_proc *pr, uint64_t ip, int leaf, uint32_t *out,
		      const char **fname, wt_err *err)
{
	const edge_proc_map *m = edge_proc_find_map(pr, ip);
	wt_frame fr = {WT_NO_FUNCTION, WT_NO_MAPPING, 0, ip};
	const char *jit;
	int rc;

	*fname = NULL;
	if (!m && leaf && pr->state == EDGE_PROC_LIVE) {
		/* dlopen since the capture. Only the leaf (the interrupted
		 * instruction) is surely code: a caller address that misses is
		 * most often a frame-pointer walk through code built without
		 * them, which no re-read of the mappings would resolve. */
		edge_procs_refresh(e->procs, pr, e->gen);
		m = edge_proc_find_map(pr, ip);
	}
	if (m) {
		/* frames keep the file offset: with the build id that is what
		 * the hub needs to symbolize from an uploaded debug file */
		uint64_t off = ip - m->start + m->pgoff;
		const char *bid = edge_elf_build_id(m->elf);
		const char *name = m->elf ? edge_elf_lookup(m->elf, leaf ? off : off - 1) : NULL;
		fr.address = off;
		if ((rc = mapping_of(s, m->path, bid, &fr.mapping, err)))
			return rc;
		if (name && (rc = func_of(s, name, m->path, bid, &fr.function, err)))
			return rc;
		*fname = name;
	} else if ((jit = edge_proc_jit_lookup(e->procs, pr, leaf ? ip : ip - 1, e->gen))) {
		/* JIT code (anonymous memory) named by the runtime's perf map;
		 * the address stays the virtual one, as perf shows it */
		if ((rc = mapping_of(s, JIT_MAPPING, NULL, &fr.mapping, err)) ||
		    (rc = func_of(s, jit, JIT_MAPPING, NULL, &fr.function, err)))
			return rc;
		atomic_fetch_add(&e->jit_frames, 1);
		*fname = jit;
	}
	if (fr.function == WT_NO_FUNCTION)
		atomic_fetch_add(&e->unsym_frames, 1);
	return wt_profile_add_frame(s->p, &fr, out, err);
}

/* Queue a live process for its unwind tables: once, and again when its
 * mappings were read again since (a capture inside execve or before
 * ld.so mapped the libraries, then re-read; dlopen). */
static void unwind_give(edge_ebpf *e, edge_proc *pr)
{
	if (pr->state != EDGE_PROC_LIVE)
		return;
	if (atomic_exchange(&pr->unwind_loaded, 1) && atomic_load(&pr->unwind_nmaps) == pr->nmaps)
		return;
	atomic_store(&pr->unwind_nmaps, pr->nmaps);
	edge_ebpf_cpu_unwind_add(e->cpu, pr);
}

static int is_root(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; stack_roots[i]; i++)
		if (!strcmp(name, stack_roots[i]))
			return 1;
	return 0;
}

/* A stack taken inside the sched_switch tracepoint starts with the BPF
 * program and the tracing glue (bpf_trace_run*, __traceiter_*): frames
 * of ours, not of the blocked thread. Index of the first real frame. */
static size_t skip_tracing(edge_ebpf *e, int kind, const uint64_t *kstack, size_t nk)
{
	size_t first = 0;
	if (kind != EDGE_EBPF_OFFCPU)
		return 0;
	for (size_t i = 0; i < nk && i < 8; i++) {
		const char *mod = NULL, *name = edge_ksyms_find(e->ksyms, kstack[i], &mod);
		if (name && (!strncmp(name, "bpf_trace_run", 13) || !strncmp(name, "__bpf_trace_", 12) ||
			     !strncmp(name, "__traceiter_", 12)))
			first = i + 1;
	}
	return first < nk ? first : 0;
}

static int is_main(const char *name)
{
	return name && (!strcmp(name, "main") || !strcmp(name, "main.main"));
}

static void sink(void *arg, int kind, const struct wt_stack_key *k, uint64_t value, const uint64_t *ustack,
		 size_t nu, const uint64_t *kstack, size_t nk)
{
	edge_ebpf *e = arg;
	wt_err *err = &e->flush_err;
	uint32_t frames[2 * WT_MAX_STACK_DEPTH + 2], stack, ls;
	const char *root = NULL, *below_root = NULL;
	size_t n = 0;
	char comm[WT_COMM_LEN + 1];
	wt_label lab[4];
	size_t nl = 0;
	int64_t vals[2] = {0, 0};
	int rc = 0;

	memset(lab, 0, sizeof(lab));
	if (err->code)
		return; /* this flush already failed (OOM / limits) */
	memcpy(comm, k->comm, WT_COMM_LEN);
	comm[WT_COMM_LEN] = '\0';
	edge_proc *pr = edge_procs_get(e->procs, k->tgid, k->image, k->cgroup_id, comm, k->pid == k->tgid);
	svc *s = pr ? svc_get(e, pr) : NULL;
	if (!s) {
		atomic_fetch_add(&e->no_proc, 1);
		return;
	}
	pr->gen = e->gen;
	if (e->cpu && e->cur.unwind != EDGE_UNWIND_FP) /* not announced (found at the flush), or re-read */
		unwind_give(e, pr);
	for (size_t i = skip_tracing(e, kind, kstack, nk); i < nk && rc == 0; i++)
		rc = kernel_frame(e, s, kstack[i], i == 0, &frames[n++], err);
	for (size_t i = 0; i < nu && rc == 0; i++) {
		below_root = root;
		rc = user_frame(e, s, pr, ustack[i], i == 0, &frames[n++], &root, err);
	}
	/* complete: ends in a known root, or in main's caller (the C
	 * runtime, whose static start code has no dynamic symbol) */
	if (rc == 0 && nu &&
	    (nu >= WT_MAX_STACK_DEPTH ||
	     (pr->state == EDGE_PROC_LIVE && !(is_root(root) || is_main(root) || is_main(below_root))))) {
		atomic_fetch_add(&e->truncated, 1);
		rc = marker_frame(s, TRUNCATED_FRAME, &frames[n++], err);
	}
	if (rc == 0 && n == 0)
		rc = marker_frame(s, NO_STACK_FRAME, &frames[n++], err);
	atomic_fetch_add(&e->frames, n);
	if (rc || (rc = wt_profile_add_stack(s->p, frames, n, &stack, err)))
		return;
	/* labels: the sampled thread, its process, host and container */
	if ((rc = wt_profile_intern_cstr(s->p, "host", &lab[nl].key, err)) ||
	    (rc = wt_profile_intern_cstr(s->p, e->host, &lab[nl].str, err)))
		return;
	nl++;
	if ((rc = wt_profile_intern_cstr(s->p, "thread", &lab[nl].key, err)) ||
	    (rc = wt_profile_intern_cstr(s->p, *comm ? comm : "?", &lab[nl].str, err)))
		return;
	nl++;
	if ((rc = wt_profile_intern_cstr(s->p, "pid", &lab[nl].key, err)))
		return;
	lab[nl++].num = k->tgid;
	if (*pr->container) {
		if ((rc = wt_profile_intern_cstr(s->p, "container", &lab[nl].key, err)) ||
		    (rc = wt_profile_intern_cstr(s->p, pr->container, &lab[nl].str, err)))
			return;
		nl++;
	}
	if ((rc = wt_profile_add_labelset(s->p, lab, nl, &ls, err)))
		return;
	if (kind == EDGE_EBPF_CPU) {
		vals[s->cpu_idx] = (int64_t)(value * (uint64_t)e->period_ns_cached);
		atomic_fetch_add(&e->samples_cpu, value);
	} else if (s->has_off) {
		vals[s->off_idx] = (int64_t)value;
		atomic_fetch_add(&e->offcpu_ns, value);
	} else {
		return;
	}
	wt_profile_add_sample(s->p, stack, ls, 0, vals, err);
}

static void seen(void *arg, const struct wt_proc_event *ev)
{
	edge_ebpf *e = arg;
	char comm[WT_COMM_LEN + 1];
	memcpy(comm, ev->comm, WT_COMM_LEN);
	comm[WT_COMM_LEN] = '\0';
	edge_proc *pr = edge_procs_get(e->procs, ev->tgid, ev->image, ev->cgroup_id, comm, ev->pid == ev->tgid);
	/* tables at capture: the process's next samples are unwound with them */
	if (pr && e->cpu && e->cur.unwind != EDGE_UNWIND_FP)
		unwind_give(e, pr);
}

/* An off-CPU key's image: processes the on-CPU program announced in the
 * meantime go first (the first scan after a start captures every process
 * on the machine, which takes a while; a short-lived process waiting
 * behind it would be gone). */
static void seen_scan(void *arg, const struct wt_proc_event *ev)
{
	edge_ebpf *e = arg;
	if (e->cpu)
		edge_ebpf_cpu_consume_procs(e->cpu, seen, e);
	seen(arg, ev);
}

static void gone(void *arg, uint32_t tgid)
{
	edge_ebpf *e = arg;
	edge_ebpf_cpu_forget(e->cpu, tgid);
}

static void commit_done(edge_commit *c)
{
	edge_ebpf *e = c->arg;
	if (c->rc)
		atomic_fetch_add(&e->commit_errors, 1);
	pthread_mutex_lock(&e->cmu);
	e->inflight--;
	pthread_cond_broadcast(&e->ccv);
	pthread_mutex_unlock(&e->cmu);
}

static void submit_all(edge_ebpf *e, int64_t start_ns, int64_t end_ns)
{
	size_t n = 0, k = 0;
	for (svc *s = e->svcs; s; s = s->next)
		n++;
	if (!n)
		return;
	edge_commit *cs = calloc(n, sizeof(*cs));
	if (!cs) {
		atomic_fetch_add(&e->flush_errors, 1);
		return;
	}
	for (svc *s = e->svcs; s; s = s->next) {
		wt_err err = {0};
		uint8_t *pb = NULL;
		size_t pbl = 0;
		wt_profile *p = s->p;
		if (!p->nsamples)
			continue;
		p->time_ns = start_ns;
		p->duration_ns = end_ns - start_ns;
		p->period = e->period_ns_cached;
		if (wt_profile_intern_cstr(p, "cpu", &p->period_type, &err) ||
		    wt_profile_intern_cstr(p, "nanoseconds", &p->period_unit, &err) ||
		    wt_pprof_encode(p, 0, &pb, &pbl, &err) ||
		    edge_ingest_prepare_fmt(e->srv, &cs[k], e->cfg->default_project, s->name, end_ns, ENDPOINT,
					    WT_FMT_PPROF, pb, pbl, p, &err)) {
			wt_warn("msg=\"ebpf profile not stored\" service=%s error=\"%s\"", s->name, err.msg);
			atomic_fetch_add(&e->flush_errors, 1);
			free(cs[k].raw);
			free(cs[k].rolluplog);
			wt_buf_free(&cs[k].ops);
			memset(&cs[k], 0, sizeof(cs[k]));
			free(pb);
			continue;
		}
		free(pb);
		cs[k].done = commit_done;
		cs[k].arg = e;
		k++;
	}
	pthread_mutex_lock(&e->cmu);
	e->inflight += (int)k;
	pthread_mutex_unlock(&e->cmu);
	for (size_t i = 0; i < k; i++)
		edge_buffer_submit(e->srv->store, &cs[i]);
	pthread_mutex_lock(&e->cmu);
	while (e->inflight > 0)
		pthread_cond_wait(&e->ccv, &e->cmu);
	pthread_mutex_unlock(&e->cmu);
	atomic_fetch_add(&e->profiles, k);
	for (size_t i = 0; i < k; i++) {
		free(cs[i].raw);
		free(cs[i].rolluplog);
		wt_buf_free(&cs[i].ops);
	}
	free(cs);
}

static void flush(edge_ebpf *e)
{
	int64_t t0 = now_ns(CLOCK_MONOTONIC), end = now_ns(CLOCK_REALTIME);
	wt_err err = {0};
	uint64_t cap, lost, tracked, reread;

	if (!e->cpu && !e->off)
		return;
	e->gen++;
	memset(&e->flush_err, 0, sizeof(e->flush_err));
	e->period_ns_cached = (int)(NS_PER_S / (e->cpu ? edge_ebpf_cpu_frequency(e->cpu) : e->cur.frequency_hz));
	if (e->cpu && edge_ebpf_cpu_drain(e->cpu, sink, e, &err))
		wt_warn("msg=\"ebpf cpu drain failed\" error=\"%s\"", err.msg);
	if (e->off && edge_ebpf_off_drain(e->off, sink, e, &err))
		wt_warn("msg=\"ebpf offcpu drain failed\" error=\"%s\"", err.msg);
	if (e->flush_err.code) {
		wt_warn("msg=\"ebpf flush incomplete\" error=\"%s\"", e->flush_err.msg);
		atomic_fetch_add(&e->flush_errors, 1);
	}
	submit_all(e, e->window_ns, end);
	svcs_free(e);
	e->window_ns = end;
	edge_procs_sweep(e->procs, e->gen, gone, e);
	edge_procs_stats(e->procs, &cap, &lost, &tracked, &reread);
	atomic_store(&e->reread_procs, reread);
	atomic_store(&e->captured_procs, cap);
	atomic_store(&e->lost_procs, lost);
	atomic_store(&e->tracked_procs, tracked);
	uint64_t uf = 0, ur = 0, ufail = 0, upend = 0;
	edge_ebpf_cpu_unwind_stats(e->cpu, &uf, &ur, &ufail, &upend);
	atomic_store(&e->unwind_pending, upend);
	atomic_store(&e->unwind_files, uf);
	atomic_store(&e->unwind_rows, ur);
	atomic_store(&e->unwind_failed, ufail);
	atomic_fetch_add(&e->flushes, 1);
	atomic_store(&e->last_flush_us, (now_ns(CLOCK_MONOTONIC) - t0) / 1000);
}

/* The discovery thread holds pmu while it polls and captures, and would
 * take it again at once: the sampler thread (load, unload) announces that
 * it waits, and discovery lets it through. */
static void pmu_lock_sampler(edge_ebpf *e)
{
	atomic_fetch_add(&e->pmu_wanted, 1);
	pthread_mutex_lock(&e->pmu);
	atomic_fetch_sub(&e->pmu_wanted, 1);
}

/* Discovery runs on its own thread so that a slow flush (many new
 * binaries to parse, a loaded machine) does not delay capturing the
 * mappings of processes that are about to exit. The on-CPU program
 * announces each new process image (wt_new_procs): the thread sleeps in
 * the ring buffer's poll and captures it within moments of its first
 * sample. Off-CPU keys are scanned every second (batched reads). */
static void *discover_run(void *arg)
{
	edge_ebpf *e = arg;
	int64_t next_scan = 0;
	for (;;) {
		pthread_mutex_lock(&e->mu);
		int stop = e->stop;
		pthread_mutex_unlock(&e->mu);
		if (stop)
			break;
		pthread_mutex_lock(&e->pmu);
		int have = e->cpu != NULL;
		if (e->cpu)
			edge_ebpf_cpu_poll_procs(e->cpu, DISCOVER_POLL_MS, seen, e);
		if (e->off && now_ns(CLOCK_MONOTONIC) >= next_scan) {
			edge_ebpf_off_scan(e->off, seen_scan, e);
			next_scan = now_ns(CLOCK_MONOTONIC) + DISCOVER_NS;
		}
		pthread_mutex_unlock(&e->pmu);
		while (atomic_load(&e->pmu_wanted) > 0) {
			struct timespec pause = {0, 1000000};
			nanosleep(&pause, NULL);
		}
		if (have)
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += DISCOVER_NS / NS_PER_S;
		pthread_mutex_lock(&e->mu);
		if (!e->stop)
			pthread_cond_timedwait(&e->cv, &e->mu, &ts);
		pthread_mutex_unlock(&e->mu);
	}
	return NULL;
}

/* ---- load / unload / live changes ----------------------------------------------- */

static void unload(edge_ebpf *e)
{
	pmu_lock_sampler(e);
	edge_ebpf_cpu_close(e->cpu);
	edge_ebpf_off_close(e->off);
	e->cpu = NULL;
	e->off = NULL;
	pthread_mutex_unlock(&e->pmu);
	atomic_store(&e->enabled, 0);
	atomic_store(&e->offcpu_on, 0);
	atomic_store(&e->frequency, 0);
}

static void load(edge_ebpf *e)
{
	wt_err err = {0};
	if (!e->ksyms && edge_ksyms_load("/proc/kallsyms", &e->ksyms, &err))
		wt_warn("msg=\"kernel frames stay unsymbolized\" error=\"%s\"", err.msg);
	memset(&err, 0, sizeof(err));
	pmu_lock_sampler(e);
	char cache_dir[4200];
	snprintf(cache_dir, sizeof(cache_dir), "%s/unwind", e->cfg->data_dir);
	int rc = edge_ebpf_cpu_open(&e->cur, cache_dir, &e->ctr[EDGE_EBPF_CPU], &e->cpu, &err) ||
		 (e->cur.offcpu && edge_ebpf_off_open(&e->cur, &e->ctr[EDGE_EBPF_OFFCPU], &e->off, &err));
	pthread_mutex_unlock(&e->pmu);
	if (rc) {
		wt_error("msg=\"ebpf sampler not started\" error=\"%s\"", err.msg);
		atomic_fetch_add(&e->load_errors, 1);
		unload(e);
		return;
	}
	e->window_ns = now_ns(CLOCK_REALTIME);
	atomic_store(&e->enabled, 1);
	atomic_store(&e->offcpu_on, e->off != NULL);
	atomic_store(&e->frequency, e->cur.frequency_hz);
	/* the discovery thread sleeps up to DISCOVER_NS while nothing is
	 * loaded: wake it, or processes announced in that time are gone
	 * before it looks (it did lose the first ~0.6 s of processes) */
	pthread_mutex_lock(&e->mu);
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	wt_info("msg=\"ebpf sampler running\" frequency_hz=%d offcpu=%s offcpu_min_us=%lld mode=%s flush_interval_s=%d "
		"unwind=%s",
		e->cur.frequency_hz, e->off ? "true" : "false", (long long)e->cur.offcpu_min_us,
		e->cur.mode == EDGE_EBPF_RING ? "ring" : "hash", e->cur.flush_interval_s,
		e->cur.unwind == EDGE_UNWIND_FP ? "fp" : e->cur.unwind == EDGE_UNWIND_AUTO ? "auto" : "eh_frame");
}

static void apply_cfg(edge_ebpf *e, edge_ebpf_cfg *next)
{
	edge_ebpf_cfg old = e->cur;
	int loaded = e->cpu != NULL;
	int reload = next->mode != old.mode || next->max_stacks != old.max_stacks || next->max_keys != old.max_keys ||
		     next->offcpu != old.offcpu || next->offcpu_min_us != old.offcpu_min_us ||
		     next->unwind != old.unwind || next->unwind_rows != old.unwind_rows;

	atomic_fetch_add(&e->reloads, 1);
	/* what was sampled under the old settings is flushed under them */
	if (loaded && (!next->enabled || reload || next->frequency_hz != old.frequency_hz))
		flush(e);
	e->cur = *next;
	memset(next, 0, sizeof(*next));
	edge_procs_set_rules(e->procs, e->cur.rules, e->cur.nrules);
	edge_ebpf_cfg_free(&old);
	if (!e->cur.enabled) {
		if (loaded) {
			unload(e);
			wt_info("msg=\"ebpf sampler stopped\"");
		}
		return;
	}
	if (loaded && !reload) {
		wt_err err = {0};
		if (edge_ebpf_cpu_set_frequency(e->cpu, e->cur.frequency_hz, &err)) {
			wt_error("msg=\"ebpf frequency change failed\" error=\"%s\"", err.msg);
			atomic_fetch_add(&e->load_errors, 1);
			unload(e);
			return;
		}
		atomic_store(&e->frequency, e->cur.frequency_hz);
		wt_info("msg=\"ebpf sampler retuned\" frequency_hz=%d flush_interval_s=%d", e->cur.frequency_hz,
			e->cur.flush_interval_s);
		return;
	}
	if (loaded)
		unload(e);
	load(e);
}

static void reload_file(edge_ebpf *e)
{
	edge_config c;
	wt_err err = {0};
	if (!e->config_path)
		return;
	edge_config_defaults(&c);
	if (edge_config_load(&c, e->config_path, &err)) {
		wt_error("msg=\"reload: config rejected, ebpf settings unchanged\" error=\"%s\"", err.msg);
		edge_config_free(&c);
		return;
	}
	wt_info("msg=\"reload: applying the ebpf section\" file=%s", e->config_path);
	edge_ebpf_apply(e, &c.ebpf);
	edge_config_free(&c);
}

static void *run(void *arg)
{
	edge_ebpf *e = arg;
	int64_t next_flush = 0;

	if (e->cur.enabled)
		load(e);
	next_flush = now_ns(CLOCK_MONOTONIC) + (int64_t)e->cur.flush_interval_s * NS_PER_S;
	for (;;) {
		edge_ebpf_cfg next;
		int have = 0;
		if (g_hup) {
			g_hup = 0;
			reload_file(e);
		}
		pthread_mutex_lock(&e->mu);
		if (e->stop) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		if (e->has_pending) {
			next = e->pending;
			memset(&e->pending, 0, sizeof(e->pending));
			e->has_pending = 0;
			have = 1;
		}
		pthread_mutex_unlock(&e->mu);
		if (have) {
			apply_cfg(e, &next);
			next_flush = now_ns(CLOCK_MONOTONIC) + (int64_t)e->cur.flush_interval_s * NS_PER_S;
		}
		if (e->cpu && e->cur.mode == EDGE_EBPF_RING) {
			edge_ebpf_cpu_poll(e->cpu, TICK_MS, seen, e);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += TICK_MS * 1000000L;
			if (ts.tv_nsec >= NS_PER_S) {
				ts.tv_sec++;
				ts.tv_nsec -= NS_PER_S;
			}
			pthread_mutex_lock(&e->mu);
			if (!e->stop && !e->has_pending)
				pthread_cond_timedwait(&e->cv, &e->mu, &ts);
			pthread_mutex_unlock(&e->mu);
		}
		int64_t now = now_ns(CLOCK_MONOTONIC);
		if (!e->cpu && !e->off) {
			next_flush = now + (int64_t)e->cur.flush_interval_s * NS_PER_S;
			continue;
		}
		if (now >= next_flush) {
			flush(e);
			next_flush = now + (int64_t)e->cur.flush_interval_s * NS_PER_S;
		}
	}
	if (e->cpu || e->off) {
		flush(e);
		unload(e);
	}
	return NULL;
}

/* ---- public ------------------------------------------------------------------------ */

int edge_ebpf_start(edge_server *srv, const edge_config *cfg, const char *config_path, edge_ebpf **out,
		    wt_err *err)
{
	edge_ebpf *e = calloc(1, sizeof(*e));
	*out = NULL;
	if (!e)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	e->srv = srv;
	e->cfg = cfg;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_mutex_init(&e->cmu, NULL);
	pthread_cond_init(&e->ccv, NULL);
	pthread_mutex_init(&e->pmu, NULL);
	if (gethostname(e->host, sizeof(e->host) - 1) != 0)
		snprintf(e->host, sizeof(e->host), "unknown");
	e->config_path = config_path ? strdup(config_path) : NULL;
	e->elfs = edge_elf_cache_new(MAX_ELF_FILES);
	if (cfg_copy(&e->cur, &cfg->ebpf) || !e->elfs ||
	    !(e->procs = edge_procs_new("/proc", e->elfs, e->cur.rules, e->cur.nrules))) {
		edge_ebpf_stop(e);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_hup;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGHUP, &sa, NULL);
	if (pthread_create(&e->th, NULL, run, e) != 0) {
		edge_ebpf_stop(e);
		return wt_err_set(err, WT_EIO, "cannot start the ebpf sampler thread");
	}
	e->started = 1;
	if (pthread_create(&e->dth, NULL, discover_run, e) != 0) {
		edge_ebpf_stop(e);
		return wt_err_set(err, WT_EIO, "cannot start the ebpf discovery thread");
	}
	e->dstarted = 1;
	*out = e;
	return 0;
}

int edge_ebpf_apply(edge_ebpf *e, const edge_ebpf_cfg *next)
{
	edge_ebpf_cfg c;
	if (cfg_copy(&c, next)) {
		edge_ebpf_cfg_free(&c);
		return WT_ENOMEM;
	}
	pthread_mutex_lock(&e->mu);
	edge_ebpf_cfg_free(&e->pending);
	e->pending = c;
	e->has_pending = 1;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

void edge_ebpf_reload(edge_ebpf *e)
{
	(void)e;
	g_hup = 1;
}

void edge_ebpf_stop(edge_ebpf *e)
{
	if (!e)
		return;
	if (e->started) {
		pthread_mutex_lock(&e->mu);
		e->stop = 1;
		pthread_cond_broadcast(&e->cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->th, NULL);
	}
	if (e->dstarted)
		pthread_join(e->dth, NULL);
	svcs_free(e);
	edge_procs_free(e->procs);
	edge_elf_cache_free(e->elfs);
	edge_ksyms_free(e->ksyms);
	edge_ebpf_cfg_free(&e->cur);
	edge_ebpf_cfg_free(&e->pending);
	free(e->config_path);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->cmu);
	pthread_cond_destroy(&e->ccv);
	pthread_mutex_destroy(&e->pmu);
	free(e);
}

static void counter(wt_buf *b, const char *name, const char *help, uint64_t v)
{
	wt_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

static void gauge(wt_buf *b, const char *name, const char *help, long long v)
{
	wt_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, v);
}

void edge_ebpf_metrics(edge_ebpf *e, wt_buf *b)
{
	static const char *const probe[EDGE_EBPF_NKINDS] = {"cpu", "offcpu"};
	if (!e)
		return;
	gauge(b, "wt_edge_ebpf_enabled", "1 while the eBPF sampler is loaded and attached.", atomic_load(&e->enabled));
	gauge(b, "wt_edge_ebpf_offcpu_enabled", "1 while the off-CPU probe is attached.", atomic_load(&e->offcpu_on));
	gauge(b, "wt_edge_ebpf_frequency_hz", "On-CPU sampling frequency in effect (0 = off).", atomic_load(&e->frequency));
	wt_buf_puts(b, "# HELP wt_edge_ebpf_samples_total Samples recorded in the kernel, by probe (offcpu: blocked intervals).\n"
		       "# TYPE wt_edge_ebpf_samples_total counter\n");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++)
		wt_buf_printf(b, "wt_edge_ebpf_samples_total{probe=\"%s\"} %llu\n", probe[k],
			      (unsigned long long)atomic_load(&e->ctr[k].stat[WT_STAT_SAMPLES]));
	wt_buf_puts(b, "# HELP wt_edge_ebpf_lost_samples_total Samples dropped because a counts map or the ring buffer was full.\n"
		       "# TYPE wt_edge_ebpf_lost_samples_total counter\n");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++)
		wt_buf_printf(b, "wt_edge_ebpf_lost_samples_total{probe=\"%s\"} %llu\n", probe[k],
			      (unsigned long long)atomic_load(&e->ctr[k].stat[WT_STAT_LOST]));
	wt_buf_puts(b, "# HELP wt_edge_ebpf_stack_collisions_total Stacks not stored: more than max_stacks distinct stacks in one flush.\n"
		       "# TYPE wt_edge_ebpf_stack_collisions_total counter\n");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++) {
		wt_buf_printf(b, "wt_edge_ebpf_stack_collisions_total{probe=\"%s\",stack=\"user\"} %llu\n", probe[k],
			      (unsigned long long)atomic_load(&e->ctr[k].stat[WT_STAT_USTACK_COLL]));
		wt_buf_printf(b, "wt_edge_ebpf_stack_collisions_total{probe=\"%s\",stack=\"kernel\"} %llu\n", probe[k],
			      (unsigned long long)atomic_load(&e->ctr[k].stat[WT_STAT_KSTACK_COLL]));
	}
	wt_buf_puts(b, "# HELP wt_edge_ebpf_missing_stacks_total Stack ids whose stack was gone at drain time.\n"
		       "# TYPE wt_edge_ebpf_missing_stacks_total counter\n");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++)
		wt_buf_printf(b, "wt_edge_ebpf_missing_stacks_total{probe=\"%s\"} %llu\n", probe[k],
			      (unsigned long long)atomic_load(&e->ctr[k].missing_stacks));
	counter(b, "wt_edge_ebpf_idle_samples_total", "On-CPU samples of the idle task (not recorded).",
		atomic_load(&e->ctr[EDGE_EBPF_CPU].stat[WT_STAT_IDLE]));
	counter(b, "wt_edge_ebpf_unannounced_processes_total",
		"New process images the program could not announce (wt_procs or its ring buffer full): captured at the flush if still alive.",
		atomic_load(&e->ctr[EDGE_EBPF_CPU].stat[WT_STAT_PROCS_FULL]));
	counter(b, "wt_edge_ebpf_offcpu_short_total", "Blocked intervals under offcpu_min_us (not recorded).",
		atomic_load(&e->ctr[EDGE_EBPF_OFFCPU].stat[WT_STAT_OFF_SHORT]));
	counter(b, "wt_edge_ebpf_cpu_samples_drained_total", "On-CPU samples turned into profiles.", atomic_load(&e->samples_cpu));
	counter(b, "wt_edge_ebpf_offcpu_nanoseconds_total", "Off-CPU nanoseconds turned into profiles.", atomic_load(&e->offcpu_ns));
	counter(b, "wt_edge_ebpf_flushes_total", "Drains of the in-kernel aggregates.", atomic_load(&e->flushes));
	counter(b, "wt_edge_ebpf_profiles_total", "Per-service profiles committed to the buffer.", atomic_load(&e->profiles));
	counter(b, "wt_edge_ebpf_flush_errors_total", "Profiles or flushes that could not be built.", atomic_load(&e->flush_errors));
	counter(b, "wt_edge_ebpf_commit_errors_total", "Profiles the buffer failed to store.", atomic_load(&e->commit_errors));
	counter(b, "wt_edge_ebpf_load_errors_total", "Failed attempts to load or attach the BPF programs.", atomic_load(&e->load_errors));
	counter(b, "wt_edge_ebpf_reloads_total", "Live configuration changes applied.", atomic_load(&e->reloads));
	counter(b, "wt_edge_ebpf_processes_captured_total", "Processes whose /proc mappings were captured.", atomic_load(&e->captured_procs));
	counter(b, "wt_edge_ebpf_processes_reread_total",
		"Mappings read again 1-12 ms after a capture that came too early (inside execve, or before the dynamic loader mapped the libraries).",
		atomic_load(&e->reread_procs));
	counter(b, "wt_edge_ebpf_processes_lost_total", "Sampled processes gone before their mappings were read (user frames unsymbolized).",
		atomic_load(&e->lost_procs));
	gauge(b, "wt_edge_ebpf_processes_tracked", "Processes in the sampler's table.", (long long)atomic_load(&e->tracked_procs));
	counter(b, "wt_edge_ebpf_frames_total", "Frames in drained stacks.", atomic_load(&e->frames));
	counter(b, "wt_edge_ebpf_unsymbolized_frames_total", "Frames kept as build id + file offset (or bare address).",
		atomic_load(&e->unsym_frames));
	counter(b, "wt_edge_ebpf_jit_frames_total", "Frames in JIT code named from the process's /tmp/perf-PID.map.",
		atomic_load(&e->jit_frames));
	counter(b, "wt_edge_ebpf_truncated_stacks_total", "User stacks that did not reach a known root (frame pointers missing).",
		atomic_load(&e->truncated));
	gauge(b, "wt_edge_ebpf_unwind_files", "Files whose unwind table is loaded into the BPF maps (ebpf.unwind eh_frame/auto).",
	      (long long)atomic_load(&e->unwind_files));
	gauge(b, "wt_edge_ebpf_unwind_rows", "Rows of the BPF unwind-table array in use (of ebpf.unwind_rows).",
	      (long long)atomic_load(&e->unwind_rows));
	gauge(b, "wt_edge_ebpf_unwind_pending_processes", "Processes waiting for their unwind tables (built on the loader's thread).",
	      (long long)atomic_load(&e->unwind_pending));
	gauge(b, "wt_edge_ebpf_unwind_failed_files",
	      "Executable files without a table: not x86-64 ELF, no CFI, unreadable, or the rows array full.",
	      (long long)atomic_load(&e->unwind_failed));
	gauge(b, "wt_edge_ebpf_last_flush_microseconds", "Duration of the last drain + symbolize + commit.",
	      (long long)atomic_load(&e->last_flush_us));
}
