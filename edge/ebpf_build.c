/*
 * ebpf_build.c — the eBPF sampler's profile building: each flush drains the
 * on-CPU, off-CPU and lock programs' aggregates (ebpf_profile.c,
 * ebpf_offcpu.c, ebpf_lock.c),
 * turns every stack into frames (kernel symbols, ELF symbols through
 * symbolize.c, JIT perf maps, markers for truncated or missing stacks),
 * builds one wt_profile per service and stores each through the edge's
 * ingest pipeline (edge_ingest_prepare_fmt). The thread that calls it is in
 * ebpf_sampler.c; the shared state is in ebpf_sampler_int.h.
 */
#include "ebpf_sampler_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/alloc.h"
#include "bpf/lock.h"
#include "bpf/python.h"
#include "clock.h"
#include "demangle.h"
#include "format.h"
#include "log.h"
#include "pprof.h"

#define TRUNCATED_FRAME "[truncated]"
#define NO_STACK_FRAME "[no stack]"
#define JIT_MAPPING "[jit]" /* mapping of frames named from a perf map */
#define PY_MAPPING "[python]" /* mapping of CPython frames */
#define PY_UNKNOWN_FRAME "[python]" /* a Python frame whose code object could not be read */
#define PY_EVAL "_PyEval_EvalFrameDefault" /* the native frame that runs Python frames */
#define ENDPOINT "ebpf"


/* Outermost frames of a complete user stack: the C runtime's entry, a
 * thread start, Go's goroutine roots. A frame-pointer walk that stops
 * anywhere else was cut short (no frame pointers somewhere below). */
static const char *const stack_roots[] = {
	"_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3", "__clone",
	"__clone3", "thread_start", "_dl_start_user", "runtime.goexit", "runtime.goexit.abi0", "runtime.mstart",
	"runtime.rt0_go", "runtime.rt0_go.abi0", NULL,
};

/* ---- building profiles ------------------------------------------------------ */

void edge_ebpf_svcs_free(edge_ebpf *e)
{
	svc *s = e->svcs, *nx;
	for (; s; s = nx) {
		nx = s->next;
		free(s->name);
		wt_profile_free(s->p);
		wt_u64map_free(&s->fc);
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
		    (e->cur.offcpu && wt_profile_add_type(s->p, "offcpu", "nanoseconds", NULL, &s->off_idx, &err)) ||
		    (e->lock && (wt_profile_add_type(s->p, "lock", "nanoseconds", NULL, &s->lock_idx, &err) ||
				 wt_profile_add_type(s->p, "mutex_contentions", "count", NULL, &s->cont_idx, &err))) ||
		    (e->alloc && (wt_profile_add_type(s->p, "native_alloc", "bytes", NULL, &s->alloc_idx, &err) ||
				  wt_profile_add_type(s->p, "native_alloc_objects", "count", NULL, &s->aobj_idx, &err))) ||
		    (e->alloc && e->cur.alloc_inuse &&
		     (wt_profile_add_type(s->p, "inuse_space", "bytes", NULL, &s->inuse_idx, &err) ||
		      wt_profile_add_type(s->p, "inuse_objects", "count", NULL, &s->iobj_idx, &err)))) {
			free(s->name);
			wt_profile_free(s->p);
			free(s);
			return NULL;
		}
		s->has_off = e->cur.offcpu;
		s->has_lock = e->lock != NULL;
		s->has_alloc = e->alloc != NULL;
		s->has_inuse = e->alloc && e->cur.alloc_inuse;
		s->next = e->svcs;
		e->svcs = s;
	}
	pr->user = s;
	pr->user_gen = e->gen;
	return s;
}

/* function id of symbol `name` (a stable pointer into kallsyms or an ELF
 * cache entry), demangled once per flush and service */
static int func_of(svc *s, const char *name, const char *file, const char *build_id, uint32_t *out, wt_err *err)
{
	size_t slot;
	int rc;
	if (wt_u64map_slot(&s->fc, (uint64_t)(uintptr_t)name, &slot))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (s->fc.vals[slot] != WT_U64MAP_EMPTY) {
		*out = s->fc.vals[slot];
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
	/* nothing above touched s->fc: the slot is still the free one */
	s->fc.keys[slot] = (uint64_t)(uintptr_t)name;
	s->fc.vals[slot] = *out;
	s->fc.n++;
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
 * ld.so mapped the libraries, then re-read; dlopen) or its service's
 * unwinding mode changed (fp: its entry is taken out). */
void edge_ebpf_unwind_give(edge_ebpf *e, edge_proc *pr)
{
	if (pr->state != EDGE_PROC_LIVE)
		return;
	int mode = edge_ebpf_unwind_mode(e, pr);
	if (atomic_exchange(&pr->unwind_loaded, 1) && atomic_load(&pr->unwind_nmaps) == pr->nmaps &&
	    atomic_load(&pr->unwind_mode) == mode)
		return;
	atomic_store(&pr->unwind_nmaps, pr->nmaps);
	atomic_store(&pr->unwind_mode, mode);
	edge_ebpf_cpu_unwind_add(e->cpu, pr, mode);
}

/* One CPython frame (a bpf/python.h slot) of process pr. */
static int python_frame(edge_ebpf *e, svc *s, edge_proc *pr, uint64_t slot, uint32_t *out, wt_err *err)
{
	char name[1200], file[600];
	int64_t line = 0;
	wt_frame fr = {WT_NO_FUNCTION, WT_NO_MAPPING, 0, slot & WT_PY_CODE_MASK};
	wt_function f = {0};
	int rc;
	if (edge_py_frame(e->py, pr->tgid, slot, name, sizeof(name), file, sizeof(file), &line)) {
		atomic_fetch_add(&e->py_unnamed, 1);
		snprintf(name, sizeof(name), "%s", PY_UNKNOWN_FRAME);
		*file = '\0';
	}
	atomic_fetch_add(&e->py_frames, 1);
	if ((rc = mapping_of(s, PY_MAPPING, NULL, &fr.mapping, err)) ||
	    (rc = wt_profile_intern_cstr(s->p, name, &f.name, err)) ||
	    (*file && (rc = wt_profile_intern_cstr(s->p, file, &f.filename, err))) ||
	    (rc = wt_profile_add_function(s->p, &f, &fr.function, err)))
		return rc;
	fr.line = line;
	return wt_profile_add_frame(s->p, &fr, out, err);
}

/* The Python frames of one _PyEval_EvalFrameDefault call, from py[*pi]:
 * up to and including the next entry frame (or to the end: when the walk
 * was cut (pyflags WT_STACK_PY_CUT), [truncated] follows the last frame,
 * in the place of the callers it could not read). */
static int python_segment(edge_ebpf *e, svc *s, edge_proc *pr, const uint64_t *py, size_t npy, uint32_t pyflags,
			  size_t *pi, uint32_t *frames, size_t *n, wt_err *err)
{
	int rc = 0;
	while (*pi < npy && rc == 0) {
		uint64_t slot = py[(*pi)++];
		rc = python_frame(e, s, pr, slot, &frames[(*n)++], err);
		if (slot & WT_PY_ENTRY)
			break;
	}
	if (rc == 0 && *pi == npy && (pyflags & WT_STACK_PY_CUT))
		rc = marker_frame(s, TRUNCATED_FRAME, &frames[(*n)++], err);
	return rc;
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

/* C++'s operator new / new[] (mangled _Znw*, _Zna*, or demangled): its
 * malloc's caller; an allocation profile names the function that called
 * new instead, as Go's and tcmalloc's heap profiles leave out their
 * allocator's frames */
static int alloc_wrapper(const char *name)
{
	return name && (!strncmp(name, "_Znw", 4) || !strncmp(name, "_Zna", 4) || !strncmp(name, "operator new", 12));
}

int edge_ebpf_lock_skips(edge_ebpf *e, edge_proc *pr)
{
	/* musl's locks use the futex word otherwise than glibc's (bpf/lock.h
	 * reads glibc's protocol): whatever its waits match is not a lock
	 * wait. A statically linked glibc program keeps glibc's protocol. */
	if (atomic_load(&pr->lock_skipped))
		return 1;
	if (edge_proc_libc(pr, NULL) != EDGE_LIBC_MUSL)
		return 0;
	if (!atomic_exchange(&pr->lock_skipped, 1)) {
		atomic_fetch_add(&e->lock_skipped_musl, 1);
		wt_info("msg=\"ebpf lock contention: process skipped\" pid=%u exe=%s reason=musl", pr->tgid, pr->exe);
	}
	return 1;
}

static void sink(void *arg, int kind, const struct wt_stack_key *k, uint64_t value, const uint64_t *ustack,
		 size_t nu, const uint64_t *kstack, size_t nk, const uint64_t *py, size_t npy, uint32_t pyflags)
{
	edge_ebpf *e = arg;
	wt_err *err = &e->flush_err;
	uint32_t frames[2 * WT_MAX_STACK_DEPTH + WT_PY_MAX_FRAMES + 2], stack, ls;
	const char *root = NULL, *below_root = NULL;
	size_t n = 0;
	char comm[WT_COMM_LEN + 1];
	wt_label lab[5];
	size_t nl = 0;
	int64_t vals[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	int rc = 0;

	memset(lab, 0, sizeof(lab));
	if (err->code)
		return; /* this flush already failed (OOM / limits) */
	memcpy(comm, k->comm, WT_COMM_LEN);
	comm[WT_COMM_LEN] = '\0';
	edge_proc *pr = edge_procs_get_at(e->procs, k->tgid, k->image, k->cgroup_id, comm, k->pid == k->tgid,
					  (uint64_t)atomic_load(&e->drained_since_ns));
	svc *s = pr ? svc_get(e, pr) : NULL;
	if (!s) {
		atomic_fetch_add(&e->no_proc, 1);
		return;
	}
	pr->gen = e->gen;
	if (kind == EDGE_EBPF_LOCK && (!s->has_lock || !edge_ebpf_cfg_lock(&e->cur, pr->service)))
		return; /* lock contention off for this service (policy) */
	if (kind == EDGE_EBPF_LOCK && edge_ebpf_lock_skips(e, pr))
		return;
	if (kind == EDGE_EBPF_ALLOC && (!s->has_alloc || !edge_ebpf_cfg_alloc(&e->cur, pr->service)))
		return; /* native allocations off for this service (policy) */
	/* still too early after the capture's re-reads (a loaded machine):
	 * again, once per flush, so its libraries get symbols and tables */
	if (pr->state == EDGE_PROC_LIVE && edge_proc_maps_early(pr))
		edge_procs_refresh(e->procs, pr, e->gen);
	if (e->cpu) /* not announced (found at the flush), or re-read */
		edge_ebpf_unwind_give(e, pr);
	edge_ebpf_py_check(e, pr); /* not announced, or the settings changed since */
	if (e->alloc && !pr->superseded) /* likewise (a no-op once decided) */
		edge_ebpf_alloc_proc(e->alloc, pr, edge_ebpf_cfg_alloc(&e->cur, pr->service));
	for (size_t i = skip_tracing(e, kind, kstack, nk); i < nk && rc == 0; i++)
		rc = kernel_frame(e, s, kstack[i], i == 0, &frames[n++], err);
	if (py && npy && !edge_ebpf_py_on(e, pr->service))
		py = NULL, npy = 0;
	/* Python frames take the place of the _PyEval_EvalFrameDefault
	 * frame that runs them; native frames below and above stay. When
	 * the native walk found fewer such frames than the Python stack has
	 * calls of it (the walk lost its way in code without frame
	 * pointers), the native frames end before the first of them (all
	 * are kept when there is none, but for addresses in no mapping) and
	 * the whole Python stack follows. */
	uint32_t uf[WT_MAX_STACK_DEPTH];
	uint8_t is_eval[WT_MAX_STACK_DEPTH];
	size_t pi = 0, nseg = 0, neval = 0;
	if (nu > WT_MAX_STACK_DEPTH)
		nu = WT_MAX_STACK_DEPTH;
	for (size_t i = 0; i < npy; i++)
		nseg += (py[i] & WT_PY_ENTRY) || i + 1 == npy;
	/* an allocation's stack starts at a return address (the allocator's
	 * caller), not at an interrupted instruction */
	size_t skip = 0;
	for (size_t i = 0; i < nu && rc == 0; i++) {
		const char *name = NULL;
		rc = user_frame(e, s, pr, ustack[i], i == 0 && kind != EDGE_EBPF_ALLOC, &uf[i], &name, err);
		if (kind == EDGE_EBPF_ALLOC && i == skip && i + 1 < nu && alloc_wrapper(name))
			skip++;
		is_eval[i] = name && !strcmp(name, PY_EVAL);
		neval += is_eval[i];
		below_root = root;
		root = name;
	}
	for (size_t i = skip; i < nu && rc == 0; i++) {
		if (neval < nseg && !edge_proc_find_map(pr, ustack[i]) &&
		    !edge_proc_jit_lookup(e->procs, pr, ustack[i], e->gen)) {
			continue; /* a lost walk's stray value: no code there */
		} else if (!is_eval[i] || pi >= npy) {
			frames[n++] = uf[i];
		} else if (neval >= nseg) {
			rc = python_segment(e, s, pr, py, npy, pyflags, &pi, frames, &n, err);
		} else {
			break;
		}
	}
	while (pi < npy && rc == 0)
		rc = python_segment(e, s, pr, py, npy, pyflags, &pi, frames, &n, err);
	int py_done = npy && !(pyflags & WT_STACK_PY_TRUNC);
	/* complete: ends in a known root, or in main's caller (the C
	 * runtime, whose static start code has no dynamic symbol), a whole
	 * Python stack, or the unnamed frame that called a known root (a
	 * stripped program's _start calling __libc_start_main) */
	if (rc == 0 && nu && !py_done &&
	    (nu >= WT_MAX_STACK_DEPTH ||
	     (pr->state == EDGE_PROC_LIVE && !(is_root(root) || is_main(root) || is_main(below_root) || (!root && is_root(below_root)))))) {
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
	/* the lock's address, where the policy asks (bpf/lock.h) */
	if (kind == EDGE_EBPF_LOCK && k->kern_stack && edge_ebpf_cfg_lock_address(&e->cur, pr->service)) {
		char addr[24];
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)k->kern_stack);
		if ((rc = wt_profile_intern_cstr(s->p, "lock_address", &lab[nl].key, err)) ||
		    (rc = wt_profile_intern_cstr(s->p, addr, &lab[nl].str, err)))
			return;
		nl++;
	}
	if ((rc = wt_profile_add_labelset(s->p, lab, nl, &ls, err)))
		return;
	if (kind == EDGE_EBPF_CPU) {
		vals[s->cpu_idx] = (int64_t)(value * (uint64_t)e->period_ns_cached);
		atomic_fetch_add(&e->samples_cpu, value);
	} else if (kind == EDGE_EBPF_LOCK) {
		if (k->pad == WT_LOCK_COUNT) {
			vals[s->cont_idx] = (int64_t)value;
			atomic_fetch_add(&e->lock_contentions, value);
		} else {
			vals[s->lock_idx] = (int64_t)value;
			atomic_fetch_add(&e->lock_ns, value);
		}
	} else if (kind == EDGE_EBPF_ALLOC) {
		/* objects come scaled by WT_ALLOC_OBJ_SCALE (bpf/alloc.h) */
		uint64_t objs = (value + WT_ALLOC_OBJ_SCALE / 2) / WT_ALLOC_OBJ_SCALE;
		switch (k->pad) {
		case WT_ALLOC_BYTES:
			vals[s->alloc_idx] = (int64_t)value;
			atomic_fetch_add(&e->alloc_bytes, value);
			break;
		case WT_ALLOC_OBJECTS:
			vals[s->aobj_idx] = (int64_t)objs;
			break;
		case EDGE_ALLOC_INUSE_BYTES:
			if (!s->has_inuse)
				return;
			vals[s->inuse_idx] = (int64_t)value;
			break;
		default:
			if (!s->has_inuse)
				return;
			vals[s->iobj_idx] = (int64_t)objs;
			break;
		}
	} else if (s->has_off) {
		vals[s->off_idx] = (int64_t)value;
		atomic_fetch_add(&e->offcpu_ns, value);
	} else {
		return;
	}
	wt_profile_add_sample(s->p, stack, ls, 0, vals, err);
}

/* A process that exited: its unwind tables leave the BPF maps. */
static void gone(void *arg, uint32_t tgid)
{
	edge_ebpf *e = arg;
	edge_ebpf_cpu_forget(e->cpu, tgid);
	edge_py_forget(e->py, tgid);
	edge_ebpf_alloc_forget(e->alloc, tgid);
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

void edge_ebpf_flush(edge_ebpf *e)
{
	int64_t t0 = wt_now_ns(CLOCK_MONOTONIC), end = wt_now_ns(CLOCK_REALTIME);
	wt_err err = {0};
	uint64_t cap, lost, tracked, reread;

	if (!e->cpu && !e->off)
		return;
	e->gen++;
	/* the generation drained now began at the previous flush */
	atomic_store(&e->drained_since_ns, atomic_load(&e->gen_since_ns));
	atomic_store(&e->gen_since_ns, t0);
	memset(&e->flush_err, 0, sizeof(e->flush_err));
	e->period_ns_cached = (int)(NS_PER_S / (e->cpu ? edge_ebpf_cpu_frequency(e->cpu) : e->cur.frequency_hz));
	if (e->cpu && edge_ebpf_cpu_drain(e->cpu, sink, e, &err))
		wt_warn("msg=\"ebpf cpu drain failed\" error=\"%s\"", err.msg);
	if (e->off && edge_ebpf_off_drain(e->off, sink, e, &err))
		wt_warn("msg=\"ebpf offcpu drain failed\" error=\"%s\"", err.msg);
	if (e->lock && edge_ebpf_lock_drain(e->lock, edge_ebpf_cfg_lock_address_any(&e->cur), sink, e, &err))
		wt_warn("msg=\"ebpf lock drain failed\" error=\"%s\"", err.msg);
	if (e->alloc && edge_ebpf_alloc_drain(e->alloc, sink, e, &err))
		wt_warn("msg=\"ebpf alloc drain failed\" error=\"%s\"", err.msg);
	if (e->flush_err.code) {
		wt_warn("msg=\"ebpf flush incomplete\" error=\"%s\"", e->flush_err.msg);
		atomic_fetch_add(&e->flush_errors, 1);
	}
	submit_all(e, e->window_ns, end);
	edge_ebpf_svcs_free(e);
	e->window_ns = end;
	edge_procs_sweep(e->procs, e->gen, gone, e);
	edge_procs_stats(e->procs, &cap, &lost, &tracked, &reread);
	atomic_store(&e->reread_procs, reread);
	atomic_store(&e->captured_procs, cap);
	atomic_store(&e->lost_procs, lost);
	atomic_store(&e->tracked_procs, tracked);
	uint64_t af, ap, ast, amu, alive;
	edge_ebpf_alloc_stats(e->alloc, &af, &ap, &ast, &amu, &alive);
	atomic_store(&e->alloc_files, af);
	atomic_store(&e->alloc_procs, ap);
	atomic_store(&e->alloc_skipped_static, ast);
	atomic_store(&e->alloc_skipped_musl, amu);
	atomic_store(&e->alloc_live, alive);
	uint64_t uf = 0, ur = 0, ufail = 0, upend = 0;
	edge_ebpf_cpu_unwind_stats(e->cpu, &uf, &ur, &ufail, &upend);
	atomic_store(&e->unwind_pending, upend);
	atomic_store(&e->unwind_files, uf);
	atomic_store(&e->unwind_rows, ur);
	atomic_store(&e->unwind_failed, ufail);
	edge_ebpf_cpu_unwind_build_stats(e->cpu, &uf, &ur, &ufail, &upend);
	atomic_store(&e->unwind_built, uf);
	atomic_store(&e->unwind_build_ns, ur);
	atomic_store(&e->unwind_cfi_bytes, ufail);
	atomic_store(&e->unwind_from_cache, upend);
	atomic_fetch_add(&e->flushes, 1);
	atomic_store(&e->last_flush_us, (wt_now_ns(CLOCK_MONOTONIC) - t0) / 1000);
}
