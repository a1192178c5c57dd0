/*
 * ebpf_procs.c — the sampler's process table (see ebpf_procs.h): reading
 * /proc/PID/{comm,exe,cgroup,maps}, resolving the service, keeping
 * mappings of exited processes until their samples are flushed.
 */
#include "ebpf_procs.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "perfmap.h"

#define NBUCKETS 4096
#define MAX_PROCS 65536
#define MAX_MAPS 8192
#define CG_BUCKETS 1024
#define MAX_CGROUPS 4096
/* re-reads of a capture that came too early (see edge_proc_maps_early), in ms */
static const int early_wait_ms[] = {1, 3, 8, 20, 50};
#define NEARLY ((int)(sizeof(early_wait_ms) / sizeof(early_wait_ms[0])))

/* cgroup v2 id → path, so that the many processes of one cgroup (a build,
 * a container) read /proc/PID/cgroup once */
typedef struct cg_ent {
	uint64_t id;
	char *path;
	struct cg_ent *next;
} cg_ent;

struct edge_procs {
	pthread_mutex_t mu; /* discovery thread vs sampler thread */
	char root[64];
	edge_elf_cache *elfs;
	const edge_ebpf_rule *rules;
	size_t nrules;
	edge_proc *b[NBUCKETS];
	size_t n;
	uint64_t captured, lost;
	cg_ent *cg[CG_BUCKETS];
	size_t ncg;
	int no_query; /* the kernel has no PROCMAP_QUERY: read the text */
	uint64_t rereads;
};

edge_procs *edge_procs_new(const char *root, edge_elf_cache *elfs, const edge_ebpf_rule *rules, size_t nrules)
{
	edge_procs *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->mu, NULL);
	snprintf(t->root, sizeof(t->root), "%s", root);
	t->elfs = elfs;
	t->rules = rules;
	t->nrules = nrules;
	/* diagnostic/test switch: the text path every kernel before 6.11 takes */
	const char *pm = getenv("WT_EDGE_PROCMAPS");
	if (pm && !strcmp(pm, "text"))
		edge_procs_set_text_maps(t, 1);
	return t;
}

void edge_procs_set_text_maps(edge_procs *t, int on)
{
	pthread_mutex_lock(&t->mu);
	t->no_query = on;
	pthread_mutex_unlock(&t->mu);
	if (on)
		wt_info("msg=\"ebpf: process mappings read from /proc/PID/maps text\"");
}

static void maps_release(edge_procs *t, edge_proc_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		edge_elf_unref(t->elfs, maps[i].elf);
		free(maps[i].path);
	}
	free(maps);
}

static void maps_free(edge_procs *t, edge_proc *p)
{
	maps_release(t, p->maps, p->nmaps);
	p->maps = NULL;
	p->nmaps = 0;
}

static void proc_free(edge_procs *t, edge_proc *p)
{
	maps_free(t, p);
	edge_perfmap_free(p->jit);
	free(p->cgroup);
	free(p->service);
	free(p);
}

void edge_procs_free(edge_procs *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < NBUCKETS; i++) {
		edge_proc *p = t->b[i], *nx;
		for (; p; p = nx) {
			nx = p->next;
			proc_free(t, p);
		}
	}
	for (size_t i = 0; i < CG_BUCKETS; i++) {
		cg_ent *c = t->cg[i], *nx;
		for (; c; c = nx) {
			nx = c->next;
			free(c->path);
			free(c);
		}
	}
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static int read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	if (fd < 0)
		return -1;
	/* a /proc file hands its whole (small) text to one read: a short
	 * read is the end, no second read for the EOF */
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if ((size_t)r < cap - 1 - (n - (size_t)r))
			break;
	}
	close(fd);
	buf[n] = '\0';
	return (int)n;
}

static const char *rule_text(const char *s)
{
	return s ? s : "";
}

static void resolve_service(edge_procs *t, edge_proc *p)
{
	const char *svc = NULL;
	for (size_t i = 0; i < t->nrules && !svc; i++) {
		const edge_ebpf_rule *r = &t->rules[i];
		if (r->comm && fnmatch(r->comm, p->comm, 0) != 0)
			continue;
		if (r->cgroup && fnmatch(r->cgroup, rule_text(p->cgroup), 0) != 0)
			continue;
		if (r->container && fnmatch(r->container, p->container, 0) != 0)
			continue;
		svc = r->service;
	}
	if (!svc)
		svc = p->state == EDGE_PROC_KERNEL ? "kernel" : *p->exe ? p->exe : *p->comm ? p->comm : "unknown";
	free(p->service);
	p->service = strdup(svc);
}

void edge_procs_set_rules(edge_procs *t, const edge_ebpf_rule *rules, size_t nrules)
{
	pthread_mutex_lock(&t->mu);
	t->rules = rules;
	t->nrules = nrules;
	for (size_t i = 0; i < NBUCKETS; i++)
		for (edge_proc *p = t->b[i]; p; p = p->next)
			resolve_service(t, p);
	pthread_mutex_unlock(&t->mu);
}

static int map_cmp(const void *a, const void *b)
{
	const edge_proc_map *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Append one executable mapping (file-backed or [vdso]; anonymous code
 * such as JIT output stays unmapped: bare addresses). -1: stop (OOM). */
static int add_map(edge_procs *t, edge_proc *p, size_t *cap, uint64_t start, uint64_t end, uint64_t off,
		   uint64_t dev, uint64_t ino, const char *name)
{
	char file[4096 + 128];
	if (*name != '/' && strcmp(name, "[vdso]") != 0)
		return 0;
	if (p->nmaps == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		edge_proc_map *nm = realloc(p->maps, nc * sizeof(*nm));
		if (!nm)
			return -1;
		p->maps = nm;
		*cap = nc;
	}
	edge_proc_map *m = &p->maps[p->nmaps];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->pgoff = off;
	m->path = strdup(name);
	if (!m->path)
		return -1;
	if (*name == '/') {
		/* through the process's root (containers); a deleted or
		 * replaced file through map_files, which still has it */
		size_t nl = strlen(name);
		if (nl > 10 && !strcmp(name + nl - 10, " (deleted)"))
			snprintf(file, sizeof(file), "%s/%u/map_files/%llx-%llx", t->root, p->tgid, (unsigned long long)start,
				 (unsigned long long)end);
		else
			snprintf(file, sizeof(file), "%s/%u/root%s", t->root, p->tgid, name);
		m->elf = edge_elf_get_mapped(t->elfs, dev, ino, file);
	}
	p->nmaps++;
	return 0;
}

/* PROCMAP_QUERY (Linux 6.11, uapi linux/fs.h; declared here for older
 * headers): the kernel hands over the executable mappings one by one, so
 * the text of every other mapping is neither generated nor parsed —
 * measured 12-15 us per process against 25-45 us for the text on this
 * machine. */
struct wt_procmap_query {
	uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define WT_PROCMAP_QUERY _IOWR('f', 17, struct wt_procmap_query)
#define WT_PMQ_EXECUTABLE 0x04
#define WT_PMQ_COVERING_OR_NEXT 0x10

/* 0 done, -1 the kernel has no PROCMAP_QUERY (nothing read) */
static int maps_query(edge_procs *t, edge_proc *p, int fd)
{
	char name[4096];
	size_t cap = 0;
	uint64_t addr = 0;
	for (int first = 1; p->nmaps < MAX_MAPS; first = 0) {
		struct wt_procmap_query q;
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_flags = WT_PMQ_EXECUTABLE | WT_PMQ_COVERING_OR_NEXT;
		q.query_addr = addr;
		q.vma_name_addr = (uint64_t)(uintptr_t)name;
		q.vma_name_size = sizeof(name);
		if (ioctl(fd, WT_PROCMAP_QUERY, &q) != 0) {
			if (first && (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP))
				return -1;
			return 0; /* ENOENT: no further mapping; ESRCH: no mm (kernel thread, exited) */
		}
		if (q.vma_end <= addr)
			return 0;
		addr = q.vma_end;
		if (!q.vma_name_size)
			continue; /* anonymous */
		name[sizeof(name) - 1] = '\0';
		if (add_map(t, p, &cap, q.vma_start, q.vma_end, q.vma_offset, ((uint64_t)q.dev_major << 32) | q.dev_minor,
			    q.inode, name))
			return 0;
	}
	return 0;
}

void edge_maps_read(int fd, int (*fn)(void *arg, const edge_maps_line *m), void *arg)
{
	char line[4096 + 256], iobuf[65536];
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	/* /proc/PID/maps is generated per read(2): fewer, larger reads */
	setvbuf(f, iobuf, _IOFBF, sizeof(iobuf));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned dmaj, dmin;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &dmaj, &dmin, &ino, &pos) < 7 ||
		    !strchr(perms, 'x'))
			continue;
		char *name = line + pos;
		name[strcspn(name, "\n")] = '\0';
		if (*name != '/' && strcmp(name, "[vdso]") != 0)
			continue; /* anonymous code such as JIT output */
		edge_maps_line m = {start, end, off, ((uint64_t)dmaj << 32) | dmin, ino, name};
		if (fn(arg, &m))
			break;
	}
	fclose(f);
}

typedef struct maps_text_ctx {
	edge_procs *t;
	edge_proc *p;
	size_t cap;
} maps_text_ctx;

static int maps_text_add(void *arg, const edge_maps_line *m)
{
	maps_text_ctx *c = arg;
	return add_map(c->t, c->p, &c->cap, m->start, m->end, m->pgoff, m->dev, m->ino, m->name) ||
	       c->p->nmaps >= MAX_MAPS;
}

static void maps_text(edge_procs *t, edge_proc *p, int fd)
{
	maps_text_ctx c = {t, p, 0}; /* p has no mappings yet (read_maps) */
	edge_maps_read(fd, maps_text_add, &c);
}

static void read_maps(edge_procs *t, edge_proc *p)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%u/maps", t->root, p->tgid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	maps_free(t, p);
	if (t->no_query || maps_query(t, p, fd) != 0) {
		if (!t->no_query)
			wt_info("msg=\"ebpf: no PROCMAP_QUERY in this kernel (before 6.11): process mappings read from"
				" /proc/PID/maps text\"");
		t->no_query = 1;
		maps_text(t, p, fd); /* closes fd */
	} else {
		close(fd);
	}
	if (p->nmaps)
		qsort(p->maps, p->nmaps, sizeof(*p->maps), map_cmp);
}

static cg_ent **cg_slot(edge_procs *t, uint64_t id)
{
	cg_ent **pp = &t->cg[(id * 11400714819323198485ull >> 32) % CG_BUCKETS];
	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	return pp;
}

static void set_cgroup(edge_proc *p, const char *cg)
{
	p->cgroup = strdup(cg);
	edge_container_id(cg, p->container);
}

static void read_cgroup(edge_procs *t, edge_proc *p, uint64_t cgroup_id)
{
	char path[128], buf[4096];
	cg_ent **slot = cgroup_id ? cg_slot(t, cgroup_id) : NULL;
	if (slot && *slot) {
		set_cgroup(p, (*slot)->path);
		return;
	}
	snprintf(path, sizeof(path), "%s/%u/cgroup", t->root, p->tgid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return;
	/* cgroup v2 line "0::/path"; v1 lines use the same path layout */
	char *line = strstr(buf, "0::");
	char *cg = line ? line + 3 : strchr(buf, '/');
	if (!cg)
		return;
	cg[strcspn(cg, "\n")] = '\0';
	set_cgroup(p, cg);
	/* only a v2 path is what the sampled (v2) cgroup id names */
	if (slot && line && t->ncg < MAX_CGROUPS) {
		cg_ent *c = calloc(1, sizeof(*c));
		if (c && (c->path = strdup(cg))) {
			c->id = cgroup_id;
			*slot = c;
			t->ncg++;
		} else {
			free(c);
		}
	}
}

/* Did the capture come too early in the image's life? The first sample
 * of a new image can be taken inside execve (the new mm installed, the
 * binary not yet mapped, or mapped without its loader yet: a dynamic
 * executable alone, told from a static one by its PT_INTERP — xz captured
 * so had its liblzma samples unwound by frame pointers, and truncated,
 * until the next flush) or while the dynamic loader is still mapping the
 * libraries: then the executable's own mapping is missing, or the loader is
 * the only file besides it, or libc is not there yet (the loader maps the
 * libraries in the order they are needed, libc last: python3 needs libm,
 * libz and libexpat first — captured then, its libc frames stayed bare
 * addresses and its unwound stacks stopped there). Its later samples would miss the mappings and,
 * for a process gone by the flush, stay bare addresses. The capture then
 * reads them again after 1, 3, 8, 20 and 50 ms while they still look so (one
 * capture in six under a compile loop here: cc, cc1, as, collect2, ld
 * sampled while ld.so mapped their libraries; most complete at the first
 * re-read; a process starved on a loaded machine can take longer: the
 * unwind loader then re-reads its mappings itself for its unwind entry —
 * edge/ebpf_unwind.c — and its symbolization is completed at the next
 * flush, when a leaf address misses its mappings — edge/ebpf_build.c). */
int edge_proc_maps_early(const edge_proc *p)
{
	int has_exe = 0, has_ld = 0, has_libc = 0, files = 0;
	size_t el = strlen(p->exe);

	if (!el)
		return 0;
	for (size_t i = 0; i < p->nmaps; i++) {
		const char *b = strrchr(p->maps[i].path, '/');
		size_t bl;
		if (!b)
			continue;
		b++;
		bl = strlen(b);
		files++;
		if (!strncmp(b, p->exe, el) && (bl == el || !strcmp(b + el, " (deleted)")))
			has_exe = 1;
		else if (!strncmp(b, "ld-musl", 7))
			has_ld = has_libc = 1; /* musl's loader is its libc */
		else if (!strncmp(b, "ld-linux", 8) || !strncmp(b, "ld.so", 5) || !strncmp(b, "ld64.so", 7))
			has_ld = 1;
		else if (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5))
			has_libc = 1;
	}
	return !has_exe || (has_ld && (files <= 2 || !has_libc)) || (files == 1 && p->interp == 1);
}

/* Does the file at path (an executable) name a dynamic loader: an ELF64
 * program header PT_INTERP? 1 yes, 0 no or unreadable. Reads the ELF
 * header and at most 64 program headers. */
static int exe_has_interp(const char *path)
{
	unsigned char eh[64], ph[64 * 56];
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && !memcmp(eh, "\x7f" "ELF", 4) && eh[4] == 2 &&
	    eh[5] == 1) { /* ELFCLASS64, little endian */
		uint64_t phoff;
		uint16_t phentsize, phnum;
		memcpy(&phoff, eh + 32, 8);
		memcpy(&phentsize, eh + 54, 2);
		memcpy(&phnum, eh + 56, 2);
		if (phentsize == 56 && phnum && phnum <= 64 &&
		    pread(fd, ph, (size_t)phnum * 56, (off_t)phoff) == (ssize_t)phnum * 56)
			for (uint16_t i = 0; i < phnum && !rc; i++) {
				uint32_t type;
				memcpy(&type, ph + (size_t)i * 56, 4);
				rc = type == 3; /* PT_INTERP */
			}
	}
	close(fd);
	return rc;
}

/* p's executable mappings are one file's (its own): a static program,
 * or a capture inside execve (the dynamic loader not mapped yet). Which
 * one the executable's program headers say (p->interp). */
static void check_interp(edge_procs *t, edge_proc *p)
{
	char path[128];
	size_t files = 0;

	if (p->interp)
		return;
	for (size_t i = 0; i < p->nmaps; i++)
		files += strchr(p->maps[i].path, '/') != NULL;
	if (files != 1)
		return;
	snprintf(path, sizeof(path), "%s/%u/exe", t->root, p->tgid);
	p->interp = exe_has_interp(path);
}

/* Read p's mappings again, keeping the ones it has when the new read
 * finds none (the process has exited meanwhile: its maps file is empty). */
static void reread_keep(edge_procs *t, edge_proc *p)
{
	edge_proc_map *old = p->maps;
	size_t nold = p->nmaps;

	p->maps = NULL;
	p->nmaps = 0;
	read_maps(t, p);
	if (p->nmaps) {
		maps_release(t, old, nold);
	} else {
		free(p->maps);
		p->maps = old;
		p->nmaps = nold;
	}
}

static void lost(edge_procs *t, edge_proc *p, const char *comm)
{
	p->state = EDGE_PROC_LOST;
	snprintf(p->comm, sizeof(p->comm), "%s", comm ? comm : "");
	t->lost++;
	resolve_service(t, p);
}

static void capture(edge_procs *t, edge_proc *p, uint64_t cgroup_id, const char *comm, int leader)
{
	char path[128], buf[4096];
	/* the leader's name as sampled is what /proc/PID/comm holds: one file
	 * less to read for a user process (image != 0) */
	int from_sample = comm && leader && p->image;
	int n;

	if (from_sample) {
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	} else {
		snprintf(path, sizeof(path), "%s/%u/comm", t->root, p->tgid);
		if (read_small(path, buf, sizeof(buf)) < 0) {
			lost(t, p, comm);
			return;
		}
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(p->comm, sizeof(p->comm), "%s", buf);
	}
	p->state = EDGE_PROC_LIVE;
	snprintf(path, sizeof(path), "%s/%u/exe", t->root, p->tgid);
	n = (int)readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		size_t bl = (size_t)n;
		if (bl > 10 && !strcmp(buf + bl - 10, " (deleted)"))
			buf[bl - 10] = '\0';
		const char *base = strrchr(buf, '/');
		snprintf(p->exe, sizeof(p->exe), "%s", base ? base + 1 : buf);
	}
	if (n <= 0 && from_sample && errno == ENOENT) {
		lost(t, p, comm); /* gone already */
		return;
	}
	read_cgroup(t, p, cgroup_id);
	read_maps(t, p);
	if (n <= 0 && p->nmaps == 0)
		p->state = EDGE_PROC_KERNEL;
	if (p->state == EDGE_PROC_LIVE)
		check_interp(t, p);
	/* not yet in the table: nobody else sees the mappings change. No
	 * mapping at all while the executable is known: inside execve too */
	for (int i = 0; i < NEARLY && (p->nmaps || p->state == EDGE_PROC_LIVE) && edge_proc_maps_early(p); i++) {
		struct timespec w = {0, early_wait_ms[i] * 1000000L};
		nanosleep(&w, NULL);
		reread_keep(t, p);
		t->rereads++;
	}
	/* pin the process's /tmp while it runs, so that a JIT runtime's perf
	 * map is still read at the flush when the process has exited by then
	 * (perfmap.h); released at the second sweep after this */
	if (p->state == EDGE_PROC_LIVE && p->nmaps && (p->jit = edge_perfmap_new(t->root, p->tgid)))
		edge_perfmap_pin(p->jit);
	t->captured++;
	resolve_service(t, p);
}

static edge_proc *get_locked(edge_procs *t, uint32_t tgid, uint64_t image, uint64_t cgroup_id, const char *comm,
			      int leader, uint64_t seen_ns)
{
	size_t h = (tgid * 2654435761u) % NBUCKETS;
	for (edge_proc *p = t->b[h]; p; p = p->next)
		if (p->tgid == tgid && p->image == image)
			return p;
	if (t->n >= MAX_PROCS)
		return NULL;
	edge_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tgid = tgid;
	p->image = image;
	p->seen_ns = seen_ns;
	capture(t, p, cgroup_id, comm, leader);
	if (!p->service) {
		proc_free(t, p);
		return NULL;
	}
	/* an exec: the tgid's earlier images keep their mappings for the
	 * samples still to be flushed, then go. Earlier by the time of their
	 * first sample, not by the order of captures (a pre-exec image can be
	 * captured after the image that followed it: seen_ns, ties to the
	 * later capture). Image 0 is no exec: a task sampled with no address
	 * space (a kernel thread, or a process past exit_mm in its exit,
	 * captured after its real image) supersedes nothing */
	for (edge_proc *q = t->b[h]; q && image; q = q->next) {
		if (q->tgid != tgid)
			continue;
		if (q->seen_ns <= seen_ns)
			q->superseded = 1;
		else if (q->image)
			p->superseded = 1;
	}
	p->next = t->b[h];
	t->b[h] = p;
	t->n++;
	return p;
}

edge_proc *edge_procs_get_at(edge_procs *t, uint32_t tgid, uint64_t image, uint64_t cgroup_id, const char *comm,
			     int leader, uint64_t seen_ns)
{
	pthread_mutex_lock(&t->mu);
	edge_proc *p = get_locked(t, tgid, image, cgroup_id, comm, leader, seen_ns);
	pthread_mutex_unlock(&t->mu);
	return p;
}

edge_proc *edge_procs_get(edge_procs *t, uint32_t tgid, uint64_t image, uint64_t cgroup_id, const char *comm,
			  int leader)
{
	return edge_procs_get_at(t, tgid, image, cgroup_id, comm, leader, (uint64_t)wt_now_ns(CLOCK_MONOTONIC));
}

void edge_procs_refresh(edge_procs *t, edge_proc *p, uint64_t gen)
{
	if (p->state != EDGE_PROC_LIVE || p->refreshed_gen == gen || p->superseded)
		return;
	pthread_mutex_lock(&t->mu);
	p->refreshed_gen = gen;
	reread_keep(t, p); /* exiting: its maps file is empty, keep what we have */
	pthread_mutex_unlock(&t->mu);
}

static const char *path_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int edge_proc_libc(const edge_proc *p, const edge_proc_map **libc)
{
	int musl = 0;
	for (size_t i = 0; i < p->nmaps; i++) {
		if (!p->maps[i].path)
			continue;
		const char *b = path_base(p->maps[i].path);
		/* glibc's libc: libc.so.6 (or libc-2.NN.so) */
		if (!strncmp(b, "libc.so.6", 9) || (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"))) {
			if (libc)
				*libc = &p->maps[i];
			return EDGE_LIBC_GLIBC;
		}
		/* Alpine maps /lib/ld-musl-ARCH.so.1; Debian's musl links
		 * that name to /usr/lib/ARCH-linux-musl/libc.so, and the
		 * mapping shows the file */
		musl |= !strncmp(b, "ld-musl-", 8) || !strncmp(b, "libc.musl-", 10) ||
			(!strcmp(b, "libc.so") && strstr(p->maps[i].path, "musl"));
	}
	return musl ? EDGE_LIBC_MUSL : EDGE_LIBC_NONE;
}

const edge_proc_map *edge_proc_find_map(const edge_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const edge_proc_map *m = &p->maps[lo - 1];
	return addr < m->end ? m : NULL;
}

const char *edge_proc_jit_lookup(edge_procs *t, edge_proc *p, uint64_t addr, uint64_t gen)
{
	/* a superseded image asks too: the pid has one perf map, most often
	 * written by the image that ran the JIT, and "superseded" follows the
	 * order of captures, not of execs — under load the capture of a
	 * stale image (the launcher's pre-exec one, sampled late) marked the
	 * running JVM's image superseded, and it went unnamed */
	if (p->state != EDGE_PROC_LIVE)
		return NULL;
	if (!p->jit && !(p->jit = edge_perfmap_new(t->root, p->tgid)))
		return NULL;
	return edge_perfmap_lookup(p->jit, addr, gen);
}

void edge_procs_sweep(edge_procs *t, uint64_t gen, void (*gone)(void *arg, uint32_t tgid), void *arg)
{
	char path[128];
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < NBUCKETS; i++) {
		edge_proc **pp = &t->b[i];
		while (*pp) {
			edge_proc *p = *pp;
			int dead = 0;
			if (p->gen < gen && !p->superseded) {
				snprintf(path, sizeof(path), "%s/%u", t->root, p->tgid);
				/* gone, or lost and idle: a later process may reuse the pid */
				dead = p->state == EDGE_PROC_LOST || (access(path, F_OK) != 0 && errno == ENOENT);
			}
			if (p->gen < gen && (dead || p->superseded)) {
				*pp = p->next;
				if (dead && gone)
					gone(arg, p->tgid);
				proc_free(t, p);
				t->n--;
				continue;
			}
			/* the flush after the capture has named its samples: from
			 * now the map is read by path while the process runs and
			 * through the descriptor kept open after (perfmap.h) */
			if (edge_perfmap_pinned(p->jit) && ++p->jit_sweeps >= 2)
				edge_perfmap_unpin(p->jit);
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&t->mu);
}

void edge_procs_close_files(edge_procs *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < NBUCKETS; i++)
		for (edge_proc *p = t->b[i]; p; p = p->next)
			edge_perfmap_close(p->jit);
	pthread_mutex_unlock(&t->mu);
}

void edge_procs_each(edge_procs *t, void (*fn)(void *arg, edge_proc *p), void *arg)
{
	edge_proc **v = NULL;
	size_t n = 0;
	pthread_mutex_lock(&t->mu);
	if (t->n && (v = malloc(t->n * sizeof(*v))))
		for (size_t i = 0; i < NBUCKETS; i++)
			for (edge_proc *p = t->b[i]; p && n < t->n; p = p->next)
				v[n++] = p;
	pthread_mutex_unlock(&t->mu);
	for (size_t i = 0; i < n; i++)
		fn(arg, v[i]);
	free(v);
}

void edge_procs_stats(const edge_procs *t, uint64_t *captured, uint64_t *lost, uint64_t *tracked,
		       uint64_t *rereads)
{
	if (!t) {
		*captured = *lost = *tracked = *rereads = 0;
		return;
	}
	pthread_mutex_lock((pthread_mutex_t *)&t->mu);
	*rereads = t->rereads;
	*captured = t->captured;
	*lost = t->lost;
	*tracked = t->n;
	pthread_mutex_unlock((pthread_mutex_t *)&t->mu);
}
