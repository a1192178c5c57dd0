/*
 * symbolize.c — kallsyms and ELF symbol tables for the eBPF sampler (see
 * symbolize.h): load, sort, binary search; the ELF file cache.
 */
#include "symbolize.h"

#include <ctype.h>
#include <elf.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "elfid.h"

/* bounds on what one file may make us hold */
#define MAX_KSYMS (4u << 20)
#define MAX_ELF_SYMS (4u << 20)
#define MAX_LOADS 64
/* files opened but not parsed yet (each holds an fd until its first
 * lookup); past this many a new file is parsed at once */
#define MAX_PENDING 256

typedef struct sym {
	uint64_t addr, size;
	uint32_t name;   /* offset into names */
	uint32_t module; /* offset into names, 0 = none (offset 0 holds "") */
} sym;

static int sym_cmp(const void *a, const void *b)
{
	const sym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* index of the last symbol with addr <= a, or -1 */
static long sym_search(const sym *s, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static int names_add(wt_buf *names, const char *s, size_t len, uint32_t *off)
{
	if (names->len + len + 1 > UINT32_MAX)
		return WT_ELIMIT;
	*off = (uint32_t)names->len;
	wt_buf_append(names, s, len);
	wt_buf_append(names, "", 1);
	return names->oom ? WT_ENOMEM : 0;
}

/* ---- kernel -------------------------------------------------------------- */

struct edge_ksyms {
	sym *s;
	size_t n;
	wt_buf names;
};

int edge_ksyms_load(const char *path, edge_ksyms **out, wt_err *err)
{
	FILE *f = fopen(path, "re");
	edge_ksyms *k = NULL;
	char line[512];
	size_t cap = 0;
	int rc = 0;

	*out = NULL;
	if (!f)
		return wt_err_set(err, WT_EIO, "%s: cannot open", path);
	k = calloc(1, sizeof(*k));
	if (!k) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	wt_buf_append(&k->names, "", 1);
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		uint64_t a = strtoull(p, &end, 16);
		if (end == p || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		char t = end[1];
		if (t != 't' && t != 'T' && t != 'w' && t != 'W')
			continue;
		char *name = end + 3, *mod = NULL;
		size_t nl = strcspn(name, "\t\n");
		if (name[nl] == '\t') {
			mod = name + nl + 1;
			mod[strcspn(mod, "\n")] = '\0';
			if (*mod == '[')
				mod++;
			mod[strcspn(mod, "]")] = '\0';
		}
		if (a == 0 || nl == 0)
			continue;
		if (k->n == cap) {
			if (cap >= MAX_KSYMS) {
				rc = wt_err_set(err, WT_ELIMIT, "%s: more than %u text symbols", path, MAX_KSYMS);
				goto out;
			}
			size_t nc = cap ? cap * 2 : 65536;
			sym *ns = realloc(k->s, nc * sizeof(*ns));
			if (!ns) {
				rc = wt_err_set(err, WT_ENOMEM, "out of memory");
				goto out;
			}
			k->s = ns;
			cap = nc;
		}
		sym *s = &k->s[k->n];
		memset(s, 0, sizeof(*s));
		s->addr = a;
		if ((rc = names_add(&k->names, name, nl, &s->name)) ||
		    (mod && *mod && (rc = names_add(&k->names, mod, strlen(mod), &s->module)))) {
			wt_err_set(err, rc, "%s: out of memory", path);
			goto out;
		}
		k->n++;
	}
	if (k->n == 0) {
		rc = wt_err_set(err, WT_EINVAL, "%s: no text symbol addresses (kernel.kptr_restrict hides them from this user?)",
				path);
		goto out;
	}
	qsort(k->s, k->n, sizeof(*k->s), sym_cmp);
	*out = k;
	k = NULL;
out:
	fclose(f);
	edge_ksyms_free(k);
	return rc;
}

void edge_ksyms_free(edge_ksyms *k)
{
	if (!k)
		return;
	free(k->s);
	wt_buf_free(&k->names);
	free(k);
}

size_t edge_ksyms_count(const edge_ksyms *k)
{
	return k ? k->n : 0;
}

const char *edge_ksyms_find(const edge_ksyms *k, uint64_t addr, const char **module)
{
	*module = NULL;
	if (!k)
		return NULL;
	long i = sym_search(k->s, k->n, addr);
	/* past the last symbol: not a kernel text address we know */
	if (i < 0 || (size_t)i == k->n - 1)
		return NULL;
	/* the end markers of kernel text: what lies past them (BPF JIT
	 * images, trampolines) is not the marker's code */
	const char *nm = (const char *)k->names.data + k->s[i].name;
	if (!strcmp(nm, "_etext") || !strcmp(nm, "_einittext") || !strcmp(nm, "_end") || !strcmp(nm, "__init_end"))
		return NULL;
	if (k->s[i].module)
		*module = (const char *)k->names.data + k->s[i].module;
	return (const char *)k->names.data + k->s[i].name;
}

/* ---- ELF files -------------------------------------------------------------- */

typedef struct load {
	uint64_t off, vaddr, filesz;
} load;

struct edge_elf {
	dev_t dev;
	ino_t ino;
	uint64_t map_dev, map_ino; /* as /proc/PID/maps shows them, 0 = unknown */
	off_t size;
	struct timespec mtime;
	int refs;
	uint64_t last_use;
	sym *s;
	size_t n;
	load loads[MAX_LOADS];
	size_t nloads;
	wt_buf names;
	char build_id[81];
	int fd;            /* open until parsed, then -1 */
	atomic_int parsed; /* symbols, loads and build id read (elf_load) */
};

struct edge_elf_cache {
	edge_elf **e;
	size_t n, cap, max_files;
	uint64_t clock;
};

edge_elf_cache *edge_elf_cache_new(size_t max_files)
{
	edge_elf_cache *c = calloc(1, sizeof(*c));
	elf_version(EV_CURRENT); /* once, before any thread parses */
	if (c)
		c->max_files = max_files ? max_files : 1;
	return c;
}

static void elf_free(edge_elf *e)
{
	if (!e)
		return;
	if (e->fd >= 0)
		close(e->fd);
	free(e->s);
	wt_buf_free(&e->names);
	free(e);
}

void edge_elf_cache_free(edge_elf_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		elf_free(c->e[i]);
	free(c->e);
	free(c);
}

static int add_syms(edge_elf *e, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || !sh->sh_entsize)
		return 0;
	size_t cnt = sh->sh_size / sh->sh_entsize;
	/* room for every symbol and the whole string table at once: growing
	 * by doubling copies and touches fresh pages again and again */
	if (e->n + cnt > *cap && e->n + cnt <= MAX_ELF_SYMS) {
		sym *ns = realloc(e->s, (e->n + cnt) * sizeof(*ns));
		if (!ns)
			return WT_ENOMEM;
		e->s = ns;
		*cap = e->n + cnt;
	}
	Elf_Scn *strs = elf_getscn(elf, sh->sh_link);
	GElf_Shdr ssh;
	if (strs && gelf_getshdr(strs, &ssh) && ssh.sh_size < (64u << 20) && wt_buf_reserve(&e->names, ssh.sh_size))
		return WT_ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		GElf_Sym gs;
		if (!gelf_getsym(data, (int)i, &gs))
			break;
		int t = GELF_ST_TYPE(gs.st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || gs.st_shndx == SHN_UNDEF || !gs.st_value)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, gs.st_name);
		if (!name || !*name)
			continue;
		if (e->n == *cap) {
			if (*cap >= MAX_ELF_SYMS)
				return WT_ELIMIT;
			size_t nc = *cap ? *cap * 2 : 1024;
			sym *ns = realloc(e->s, nc * sizeof(*ns));
			if (!ns)
				return WT_ENOMEM;
			e->s = ns;
			*cap = nc;
		}
		sym *s = &e->s[e->n];
		memset(s, 0, sizeof(*s));
		s->addr = gs.st_value;
		s->size = gs.st_size;
		int rc = names_add(&e->names, name, strlen(name), &s->name);
		if (rc)
			return rc;
		e->n++;
	}
	return 0;
}

/* A cache entry for the open file fd (ownership passes to it), not parsed
 * yet. NULL on OOM (fd left to the caller). */
static edge_elf *elf_new(int fd, const struct stat *st)
{
	edge_elf *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtime = st->st_mtim;
	e->fd = fd;
	return e;
}

/* Read e's PT_LOAD headers, function symbols (.symtab, else .dynsym) and
 * GNU build id from its fd, then close it. A file that is not ELF (or out
 * of memory) leaves no symbols: its frames keep file offsets. */
static void elf_load(edge_elf *e)
{
	Elf *elf = NULL;
	size_t cap = 0, nph = 0;
	int have_symtab = 0, rc = 0;

	wt_buf_append(&e->names, "", 1);
	elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto fail;
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph && e->nloads < MAX_LOADS; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				e->loads[e->nloads++] = (load){ph.p_offset, ph.p_vaddr, ph.p_filesz};
		}
	}
	/* .symtab has everything .dynsym has; read .dynsym only without it */
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			have_symtab = 1;
			if ((rc = add_syms(e, elf, scn, &sh, &cap)))
				break;
		}
	}
	if (wt_elf_gnu_build_id(elf, e->build_id, sizeof(e->build_id)))
		e->build_id[0] = '\0';
	for (Elf_Scn *scn = NULL; !have_symtab && !rc && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			rc = add_syms(e, elf, scn, &sh, &cap);
	}
	if (rc == WT_ENOMEM || e->names.oom)
		goto fail;
	if (e->n)
		qsort(e->s, e->n, sizeof(*e->s), sym_cmp);
	/* aliases share an address: keep one, preferring the one with a size */
	size_t w = 0;
	for (size_t i = 0; i < e->n; i++) {
		if (w && e->s[w - 1].addr == e->s[i].addr) {
			if (!e->s[w - 1].size && e->s[i].size)
				e->s[w - 1] = e->s[i];
			continue;
		}
		e->s[w++] = e->s[i];
	}
	e->n = w;
	goto done;
fail:
	free(e->s);
	e->s = NULL;
	e->n = 0;
	e->nloads = 0;
	e->build_id[0] = '\0';
done:
	if (elf)
		elf_end(elf);
	close(e->fd);
	e->fd = -1;
	atomic_store(&e->parsed, 1);
}

/* Parse on first use: the capture of a process (the discovery thread)
 * only opens new files, so a large binary does not delay the capture of
 * the processes after it; lookups run on the sampler thread. */
static edge_elf *elf_ready(edge_elf *e)
{
	if (e && !atomic_load(&e->parsed))
		elf_load(e);
	return e;
}

void edge_elf_cache_parse_pending(edge_elf_cache *c)
{
	for (size_t i = 0; c && i < c->n; i++)
		elf_ready(c->e[i]);
}

static void cache_evict(edge_elf_cache *c)
{
	size_t unref = 0, victim = SIZE_MAX;
	for (size_t i = 0; i < c->n; i++) {
		if (c->e[i]->refs)
			continue;
		unref++;
		if (victim == SIZE_MAX || c->e[i]->last_use < c->e[victim]->last_use)
			victim = i;
	}
	if (unref <= c->max_files || victim == SIZE_MAX)
		return;
	elf_free(c->e[victim]);
	c->e[victim] = c->e[--c->n];
}

static edge_elf *take(edge_elf_cache *c, edge_elf *e)
{
	e->refs++;
	e->last_use = ++c->clock;
	cache_evict(c);
	return e;
}

edge_elf *edge_elf_get_mapped(edge_elf_cache *c, uint64_t map_dev, uint64_t map_ino, const char *path)
{
	if (map_ino) {
		for (size_t i = 0; i < c->n; i++)
			if (c->e[i]->map_ino == map_ino && c->e[i]->map_dev == map_dev)
				return take(c, c->e[i]);
	}
	edge_elf *e = edge_elf_get(c, path);
	if (e && map_ino) {
		e->map_dev = map_dev;
		e->map_ino = map_ino;
	}
	return e;
}

edge_elf *edge_elf_get(edge_elf_cache *c, const char *path)
{
	struct stat st;
	edge_elf *e = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto out;
	for (size_t i = 0; i < c->n; i++) {
		edge_elf *x = c->e[i];
		if (x->dev == st.st_dev && x->ino == st.st_ino && x->size == st.st_size &&
		    x->mtime.tv_sec == st.st_mtim.tv_sec && x->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			e = x;
			break;
		}
	}
	if (!e) {
		size_t pending = 0;
		if (c->n == c->cap) {
			size_t nc = c->cap ? c->cap * 2 : 64;
			edge_elf **ne = realloc(c->e, nc * sizeof(*ne));
			if (!ne)
				goto out;
			c->e = ne;
			c->cap = nc;
		}
		if (!(e = elf_new(fd, &st)))
			goto out;
		fd = -1; /* the entry's now */
		for (size_t i = 0; i < c->n; i++)
			pending += !atomic_load(&c->e[i]->parsed);
		if (pending >= MAX_PENDING)
			elf_load(e);
		c->e[c->n++] = e;
	}
	take(c, e);
out:
	if (fd >= 0)
		close(fd);
	return e;
}

void edge_elf_unref(edge_elf_cache *c, edge_elf *e)
{
	if (!e)
		return;
	if (e->refs > 0)
		e->refs--;
	cache_evict(c);
}

const char *edge_elf_lookup(edge_elf *e, uint64_t off)
{
	uint64_t va = 0;
	int found = 0;
	if (!elf_ready(e) || !e->n)
		return NULL;
	for (size_t i = 0; i < e->nloads; i++) {
		const load *l = &e->loads[i];
		if (off >= l->off && off < l->off + l->filesz) {
			va = off - l->off + l->vaddr;
			found = 1;
			break;
		}
	}
	if (!found)
		return NULL;
	long i = sym_search(e->s, e->n, va);
	if (i < 0)
		return NULL;
	const sym *s = &e->s[i];
	/* a sized symbol must contain the address; unsized ones (assembly)
	 * extend to the next symbol */
	if (s->size && va >= s->addr + s->size)
		return NULL;
	return (const char *)e->names.data + s->name;
}

const char *edge_elf_build_id(edge_elf *e)
{
	return elf_ready(e) ? e->build_id : "";
}

size_t edge_elf_nsyms(edge_elf *e)
{
	return elf_ready(e) ? e->n : 0;
}

int edge_elf_parsed(const edge_elf *e)
{
	return e && atomic_load(&e->parsed);
}

/* ---- container ids --------------------------------------------------------------- */

void edge_container_id(const char *path, char out[65])
{
	size_t run = 0;
	out[0] = '\0';
	for (size_t i = 0;; i++) {
		char ch = path[i];
		if (ch && isxdigit((unsigned char)ch) && !isupper((unsigned char)ch)) {
			run++;
			continue;
		}
		if (run == 64) {
			memcpy(out, path + i - 64, 64);
			out[64] = '\0';
		}
		run = 0;
		if (!ch)
			break;
	}
}
