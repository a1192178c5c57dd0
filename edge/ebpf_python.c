/*
 * ebpf_python.c — CPython frames for the eBPF sampler (see ebpf_python.h):
 * process detection, the per-version offsets table, code objects read from
 * the process and cached, line tables, frame names.
 *
 * The offsets table is the one place that knows CPython's layouts. A row
 * was taken from the version's own headers (offsetof over
 * Include/internal/pycore_{runtime,interp,frame,code}.h and
 * Include/cpython/{pystate,code,unicodeobject,bytesobject}.h built with
 * Py_BUILD_CORE; x86-64); a version without a row gets native frames only.
 */
#include "ebpf_python.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/types.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf/profile.h"
#include "bpf/python.h"
#include "buf.h"

#define MAX_STR 512        /* characters of a name or file kept */
#define MAX_LINETABLE 65536 /* bytes of a line table kept (longer: first line only) */

typedef struct py_layout {
	uint32_t version; /* major << 8 | minor */
	struct wt_py_proc bpf;
	uint16_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_read;
	uint16_t uni_length, uni_state, uni_ascii_data, uni_compact_data;
	uint16_t bytes_size, bytes_data;
} py_layout;

static const py_layout layouts[] = {
	{
		/* 3.11 (Debian 12's python3) */
		.version = 0x030b,
		.bpf =
			{
				.rt_interp_head = 40,
				.is_threads_head = 16,
				.ts_next = 8,
				.ts_native_tid = 160,
				.ts_cframe = 56,
				.cf_frame = 8,
				.fr_code = 32,
				.fr_previous = 48,
				.fr_instr = 56,
				.fr_entry = 68,
				.fr_owner = 69,
				.co_code = 184,
				.entry_kind = WT_PY_ENTRY_FLAG,
				.owner_cstack = 0xff,
			},
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 72,
		.co_read = 144,
		.uni_length = 16,
		.uni_state = 32,
		.uni_ascii_data = 48,
		.uni_compact_data = 72,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	{
		/* 3.12: the frame's entry is a shim frame owned by the C stack;
		 * str objects lost their wstr fields */
		.version = 0x030c,
		.bpf =
			{
				.rt_interp_head = 40,
				.is_threads_head = 72,
				.ts_next = 8,
				.ts_native_tid = 144,
				.ts_cframe = 56,
				.cf_frame = 0,
				.fr_code = 0,
				.fr_previous = 8,
				.fr_instr = 56,
				.fr_owner = 70,
				.co_code = 192,
				.entry_kind = WT_PY_ENTRY_SHIM,
				.owner_cstack = 3,
			},
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.co_read = 144,
		.uni_length = 16,
		.uni_state = 32,
		.uni_ascii_data = 40,
		.uni_compact_data = 56,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	{
		/* 3.13: no _PyCFrame (the thread state holds current_frame);
		 * f_executable, instr_ptr (the instruction executing) */
		.version = 0x030d,
		.bpf =
			{
				.rt_interp_head = 632,
				.is_threads_head = 7344,
				.ts_next = 8,
				.ts_native_tid = 160,
				.ts_cframe = 0xffff,
				.cf_frame = 72,
				.fr_code = 0,
				.fr_previous = 8,
				.fr_instr = 56,
				.fr_owner = 70,
				.co_code = 200,
				.entry_kind = WT_PY_ENTRY_SHIM,
				.owner_cstack = 3,
			},
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.co_read = 144,
		.uni_length = 16,
		.uni_state = 32,
		.uni_ascii_data = 40,
		.uni_compact_data = 56,
		.bytes_size = 16,
		.bytes_data = 32,
	},
};

typedef struct code_ent {
	uint32_t tgid;
	uint64_t code;
	char *name; /* "module.qualname" */
	char *file;
	int64_t firstlineno;
	uint8_t *lines;
	size_t nlines;
	uint64_t sig[4]; /* co_qualname, co_filename, co_linetable pointers and co_firstlineno as read */
} code_ent;

/* per registered process: its layout, and where its interpreter's
 * PyCode_Type and PyUnicode_Type are (0: not known, not checked) */
typedef struct py_proc {
	uint32_t tgid;
	const py_layout *l;
	uint64_t code_type, str_type;
	struct py_proc *next;
} py_proc;

struct edge_py {
	pthread_mutex_t mu;
	code_ent **slots; /* open addressing on (tgid, code); NULL empty, TOMB deleted */
	size_t cap, n, used, max;
	py_proc *procs;
	edge_py_stats st;
};

static code_ent tomb_ent;
#define TOMB (&tomb_ent)

edge_py *edge_py_new(size_t max_codes)
{
	edge_py *py = calloc(1, sizeof(*py));
	if (!py)
		return NULL;
	pthread_mutex_init(&py->mu, NULL);
	py->max = max_codes;
	return py;
}

static void ent_free(code_ent *e)
{
	if (!e || e == TOMB)
		return;
	free(e->name);
	free(e->file);
	free(e->lines);
	free(e);
}

void edge_py_free(edge_py *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->cap; i++)
		ent_free(py->slots[i]);
	free(py->slots);
	for (py_proc *p = py->procs, *nx; p; p = nx) {
		nx = p->next;
		free(p);
	}
	pthread_mutex_destroy(&py->mu);
	free(py);
}

static size_t slot_hash(uint32_t tgid, uint64_t code)
{
	uint64_t h = (code ^ ((uint64_t)tgid << 32) ^ tgid) * 0x9e3779b97f4a7c15ULL;
	return (size_t)(h >> 20);
}

/* the slot holding (tgid, code), or where to insert it (first empty or
 * tombstone); NULL when the table has no room */
static code_ent **slot_find(edge_py *py, uint32_t tgid, uint64_t code, int *found)
{
	code_ent **ins = NULL;
	*found = 0;
	if (!py->cap)
		return NULL;
	for (size_t j = slot_hash(tgid, code) & (py->cap - 1), k = 0; k < py->cap; k++, j = (j + 1) & (py->cap - 1)) {
		code_ent *e = py->slots[j];
		if (!e)
			return ins ? ins : &py->slots[j];
		if (e == TOMB) {
			if (!ins)
				ins = &py->slots[j];
			continue;
		}
		if (e->tgid == tgid && e->code == code) {
			*found = 1;
			return &py->slots[j];
		}
	}
	return ins;
}

/* room for one more (load ≤ 1/2 counting tombstones) */
static int grow(edge_py *py)
{
	if ((py->used + 1) * 2 <= py->cap)
		return 0;
	size_t nc = py->cap ? py->cap : 1024;
	while ((py->n + 1) * 4 > nc) /* a quarter full at most after a rehash */
		nc *= 2;
	code_ent **ns = calloc(nc, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < py->cap; i++) {
		code_ent *e = py->slots[i];
		if (!e || e == TOMB)
			continue;
		size_t j = slot_hash(e->tgid, e->code) & (nc - 1);
		while (ns[j])
			j = (j + 1) & (nc - 1);
		ns[j] = e;
	}
	free(py->slots);
	py->slots = ns;
	py->cap = nc;
	py->used = py->n;
	return 0;
}

static py_proc *proc_of(edge_py *py, uint32_t tgid)
{
	for (py_proc *p = py->procs; p; p = p->next)
		if (p->tgid == tgid)
			return p;
	return NULL;
}

static const py_layout *proc_layout(edge_py *py, uint32_t tgid)
{
	py_proc *p = proc_of(py, tgid);
	return p ? p->l : NULL;
}

/* ---- detection -------------------------------------------------------------- */

static int is_python_file(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	return !strncmp(b, "python3", 7) || !strncmp(b, "libpython3", 10);
}

typedef struct elf_facts {
	uint64_t runtime, version_addr;
	uint64_t code_type, str_type; /* PyCode_Type, PyUnicode_Type (0: no symbol) */
	uint64_t map_vaddr; /* the link-time address of file offset pgoff (page-aligned segment start) */
	uint32_t version;
	int have_runtime;
} elf_facts;

/* _PyRuntime, Py_Version, PyCode_Type and PyUnicode_Type of the ELF file
 * at path, the version's value
 * read from the file, and the link-time address that the mapping at file
 * offset pgoff starts at. 0 when _PyRuntime and that segment are there. */
static int elf_facts_read(const char *path, uint64_t pgoff, elf_facts *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
	Elf *elf = NULL;
	size_t nph = 0;
	memset(f, 0, sizeof(*f));
	if (fd < 0)
		return -1;
	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		goto out;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; d && i < n; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || !s.st_value)
				continue;
			const char *nm = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!nm)
				continue;
			if (!strcmp(nm, "Py_Version")) {
				f->version_addr = s.st_value;
			} else if (!strcmp(nm, "_PyRuntime")) {
				f->runtime = s.st_value;
				f->have_runtime = 1;
			} else if (!strcmp(nm, "PyCode_Type")) {
				f->code_type = s.st_value;
			} else if (!strcmp(nm, "PyUnicode_Type")) {
				f->str_type = s.st_value;
			}
		}
	}
	if (!f->have_runtime || elf_getphdrnum(elf, &nph))
		goto out;
	int have_base = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t off0 = ph.p_offset & ~0xfffULL;
		if (!have_base && pgoff >= off0 && pgoff < ph.p_offset + ph.p_filesz) {
			/* the kernel mapped file offset off0 at p_vaddr's page */
			f->map_vaddr = (ph.p_vaddr & ~0xfffULL) + (pgoff - off0);
			have_base = 1;
		}
		if (f->version_addr >= ph.p_vaddr && f->version_addr + 4 <= ph.p_vaddr + ph.p_filesz) {
			uint32_t v = 0;
			if (pread(fd, &v, 4, (off_t)(f->version_addr - ph.p_vaddr + ph.p_offset)) == 4)
				f->version = v;
		}
	}
	rc = have_base ? 0 : -1;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* "python3.11" / "libpython3.12.so.1.0" → 0x030b / 0x030c; 0 unknown */
static uint32_t version_of_name(const char *path)
{
	const char *b = strrchr(path, '/');
	unsigned maj, min;
	b = b ? b + 1 : path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (sscanf(b, "python%u.%u", &maj, &min) == 2 && maj < 256 && min < 256)
		return maj << 8 | min;
	return 0;
}

/* "python3.13t", "libpython3.13t.so…": a free-threaded build, whose
 * objects have another layout than the rows describe */
static int free_threaded(const char *path)
{
	const char *b = strrchr(path, '/');
	unsigned maj, min;
	int n = 0;
	b = b ? b + 1 : path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	return sscanf(b, "python%u.%u%n", &maj, &min, &n) == 2 && n > 0 && b[n] == 't';
}

static void proc_set(edge_py *py, uint32_t tgid, const py_layout *l, uint64_t code_type, uint64_t str_type)
{
	py_proc **pp = &py->procs;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->tgid == tgid)
			break;
	if (*pp && !l) {
		py_proc *d = *pp;
		*pp = d->next;
		free(d);
	} else if (*pp) {
		(*pp)->l = l;
		(*pp)->code_type = code_type;
		(*pp)->str_type = str_type;
	} else if (l) {
		py_proc *p = calloc(1, sizeof(*p));
		if (!p)
			return;
		p->tgid = tgid;
		p->l = l;
		p->code_type = code_type;
		p->str_type = str_type;
		p->next = py->procs;
		py->procs = p;
	}
}

static void drop_codes(edge_py *py, uint32_t tgid);
static int rd(uint32_t tgid, uint64_t addr, void *buf, size_t len);

/* 3.13+ describe their own layout in _Py_DebugOffsets at the start of
 * _PyRuntime (Include/internal/pycore_runtime.h): 1 when it is there
 * ("xdebugpy"), not free-threaded, and agrees with row l on every offset
 * the walk and the code object reader use. Offsets within the struct as
 * in 3.13.0. */
static int debug_offsets_agree(const py_layout *l, uint32_t tgid, uint64_t runtime)
{
	uint8_t d[352];
	static const struct {
		uint16_t at;
		size_t row; /* offsetof(py_layout, …) */
	} checks[] = {
		{40, offsetof(py_layout, bpf.rt_interp_head)},   {72, offsetof(py_layout, bpf.is_threads_head)},
		{168, offsetof(py_layout, bpf.ts_next)},         {184, offsetof(py_layout, bpf.cf_frame)},
		{200, offsetof(py_layout, bpf.ts_native_tid)},   {232, offsetof(py_layout, bpf.fr_previous)},
		{240, offsetof(py_layout, bpf.fr_code)},         {248, offsetof(py_layout, bpf.fr_instr)},
		{264, offsetof(py_layout, bpf.fr_owner)},        {280, offsetof(py_layout, co_filename)},
		{288, offsetof(py_layout, co_name)},             {296, offsetof(py_layout, co_qualname)},
		{304, offsetof(py_layout, co_linetable)},        {312, offsetof(py_layout, co_firstlineno)},
		{344, offsetof(py_layout, bpf.co_code)},
	};
	if (rd(tgid, runtime, d, sizeof(d)) || memcmp(d, "xdebugpy", 8))
		return 0;
	uint64_t v;
	memcpy(&v, d + 16, 8); /* free_threaded */
	if (v)
		return 0;
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		uint16_t want;
		memcpy(&want, (const uint8_t *)l + checks[i].row, 2);
		memcpy(&v, d + checks[i].at, 8);
		if (v != want)
			return 0;
	}
	return 1;
}

int edge_py_candidate(const char *path)
{
	return path && *path == '/' && is_python_file(path);
}

int edge_py_detect(edge_py *py, const char *proc_root, uint32_t tgid, const char *file, uint64_t start,
		   uint64_t pgoff, int map_fd)
{
	char path[1200];
	int found = file != NULL;
	elf_facts ef;
	const py_layout *l = NULL;
	uint32_t ver = 0;
	if (found) {
		snprintf(path, sizeof(path), "%s/%u/root%s", proc_root, tgid, file);
		if (elf_facts_read(path, pgoff, &ef) == 0) {
			/* Py_Version is PY_VERSION_HEX: 0x030b07f0 for 3.11.7 */
			ver = ef.version ? ef.version >> 16 : version_of_name(file);
			for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]) && !free_threaded(file); i++)
				if (layouts[i].version == ver)
					l = &layouts[i];
		} else {
			found = 0; /* no _PyRuntime: not an interpreter (a tool named python3-…) */
		}
	}
	/* where the file's link-time addresses are in the process */
	uint64_t bias = found ? start - ef.map_vaddr : 0;
	uint64_t runtime = found ? bias + ef.runtime : 0;
	uint64_t code_type = found && ef.code_type ? bias + ef.code_type : 0;
	uint64_t str_type = found && ef.str_type ? bias + ef.str_type : 0;
	if (l && l->version >= 0x030d && !debug_offsets_agree(l, tgid, runtime))
		l = NULL; /* a build whose layout is not the row's */
	pthread_mutex_lock(&py->mu);
	if (found && !l)
		py->st.unknown++;
	int was = proc_layout(py, tgid) != NULL;
	if (was)
		drop_codes(py, tgid); /* an exec, or checked again: read anew */
	proc_set(py, tgid, l, code_type, str_type);
	if (l && !was)
		py->st.procs++;
	pthread_mutex_unlock(&py->mu);
	if (!l) {
		if (was && map_fd >= 0)
			bpf_map_delete_elem(map_fd, &tgid);
		return 0;
	}
	struct wt_py_proc e = l->bpf;
	e.runtime = runtime;
	e.version = ver;
	if (map_fd >= 0 && bpf_map_update_elem(map_fd, &tgid, &e, BPF_ANY))
		return 0;
	return 1;
}

/* ---- code objects ---------------------------------------------------------- */

static int rd(uint32_t tgid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
	return process_vm_readv((pid_t)tgid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;
	memcpy(&v, b + off, 8);
	return v;
}

/* The type of the object whose header is at h (ob_type follows ob_refcnt
 * in every build the layouts describe) */
static uint64_t type_of(const uint8_t *h)
{
	return u64_at(h, 8);
}

/* A str object of process pp as UTF-8 (malloc'ed), NULL when unreadable
 * or not a str. */
static char *read_str(const py_proc *pp, uint64_t obj)
{
	const py_layout *l = pp->l;
	uint32_t tgid = pp->tgid;
	uint8_t h[80];
	if (!obj || rd(tgid, obj, h, l->uni_compact_data))
		return NULL;
	if (pp->str_type && type_of(h) != pp->str_type)
		return NULL; /* freed and reused, or a torn read */
	int64_t len;
	uint32_t state;
	memcpy(&len, h + l->uni_length, 8);
	memcpy(&state, h + l->uni_state, 4);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (len < 0 || !compact || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	if (len > MAX_STR)
		len = MAX_STR;
	size_t nb = (size_t)len * kind;
	uint8_t *raw = malloc(nb + 1);
	char *out = malloc((size_t)len * 4 + 1);
	if (!raw || !out || rd(tgid, obj + (ascii ? l->uni_ascii_data : l->uni_compact_data), raw, nb)) {
		free(raw);
		free(out);
		return NULL;
	}
	size_t o = 0;
	for (int64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? ((uint16_t *)raw)[i] : ((uint32_t *)raw)[i];
		/* a lone surrogate (a str may hold one: surrogateescape'd
		 * file names) or bytes read while the str changed: U+FFFD,
		 * never bytes that are not UTF-8 */
		if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
			c = 0xfffd;
		if (c < 0x80) {
			out[o++] = c ? (char)c : '?';
		} else if (c < 0x800) {
			out[o++] = (char)(0xc0 | c >> 6);
			out[o++] = (char)(0x80 | (c & 63));
		} else if (c < 0x10000) {
			out[o++] = (char)(0xe0 | c >> 12);
			out[o++] = (char)(0x80 | ((c >> 6) & 63));
			out[o++] = (char)(0x80 | (c & 63));
		} else {
			out[o++] = (char)(0xf0 | c >> 18);
			out[o++] = (char)(0x80 | ((c >> 12) & 63));
			out[o++] = (char)(0x80 | ((c >> 6) & 63));
			out[o++] = (char)(0x80 | (c & 63));
		}
	}
	out[o] = '\0';
	free(raw);
	return out;
}

void edge_py_module(const char *file, char *buf, size_t cap)
{
	const char *s = file, *p;
	static const char *const roots[] = {"site-packages/", "dist-packages/", NULL};
	int rooted = 0;
	size_t fl = strlen(file);
	if (!strncmp(file, "<frozen ", 8) && fl > 9 && file[fl - 1] == '>') {
		/* the standard library's frozen modules: "<frozen importlib._bootstrap>" */
		snprintf(buf, cap, "%.*s", (int)(fl - 9), file + 8);
		return;
	}
	for (size_t i = 0; roots[i]; i++)
		if ((p = strstr(file, roots[i]))) {
			s = p + strlen(roots[i]);
			rooted = 1;
		}
	if (!rooted && (p = strstr(file, "/lib/python3")) && (p = strchr(p + 12, '/'))) {
		s = p + 1;
		rooted = 1;
	}
	if (!rooted && (p = strrchr(file, '/')))
		s = p + 1;
	snprintf(buf, cap, "%s", s);
	wt_utf8_trim_tail(buf);
	size_t n = strlen(buf);
	if (n > 12 && !strcmp(buf + n - 12, "/__init__.py"))
		buf[n - 12] = '\0';
	else if (n > 3 && !strcmp(buf + n - 3, ".py"))
		buf[n - 3] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == '/')
			*c = '.';
}

/* What identifies the code object now at an address: a code object freed
 * and another allocated at the same address (modules compiled with
 * exec/eval at start-up, then the program's functions) differ here. */
static void code_sig(const py_layout *l, const uint8_t *co, uint64_t sig[4])
{
	int32_t first;
	memcpy(&first, co + l->co_firstlineno, 4);
	sig[0] = u64_at(co, l->co_qualname);
	sig[1] = u64_at(co, l->co_filename);
	sig[2] = u64_at(co, l->co_linetable);
	sig[3] = (uint32_t)first;
}

/* Whether the object read into co is a code object of pp: a frame's code
 * pointer read by the sampler may name one freed since (a module's code
 * runs once at import, then goes), whose memory now holds another object */
static int is_code(const py_proc *pp, const uint8_t *co)
{
	return !pp->code_type || type_of(co) == pp->code_type;
}

/* read code object `code` of process pp into a new entry (NULL:
 * unreadable, or not a code object) */
static code_ent *code_read(const py_proc *pp, uint64_t code)
{
	const py_layout *l = pp->l;
	uint32_t tgid = pp->tgid;
	uint8_t co[256];
	if (l->co_read > sizeof(co) || rd(tgid, code, co, l->co_read) || !is_code(pp, co))
		return NULL;
	code_ent *e = calloc(1, sizeof(*e));
	char *qual = read_str(pp, u64_at(co, l->co_qualname));
	if (!qual)
		qual = read_str(pp, u64_at(co, l->co_name));
	char *file = read_str(pp, u64_at(co, l->co_filename));
	if (!e || !qual || !file)
		goto fail;
	int32_t first;
	memcpy(&first, co + l->co_firstlineno, 4);
	e->firstlineno = first;
	code_sig(l, co, e->sig);
	char mod[256];
	edge_py_module(file, mod, sizeof(mod));
	size_t nl = strlen(mod) + strlen(qual) + 2;
	if (!(e->name = malloc(nl)))
		goto fail;
	snprintf(e->name, nl, "%s.%s", mod, qual);
	free(qual);
	e->file = file;
	e->tgid = tgid;
	e->code = code;
	uint64_t lt = u64_at(co, l->co_linetable);
	uint8_t bh[40];
	if (lt && !rd(tgid, lt, bh, l->bytes_data)) {
		int64_t sz;
		memcpy(&sz, bh + l->bytes_size, 8);
		if (sz > 0 && sz <= MAX_LINETABLE && (e->lines = malloc((size_t)sz)) &&
		    !rd(tgid, lt + l->bytes_data, e->lines, (size_t)sz))
			e->nlines = (size_t)sz;
	}
	return e;
fail:
	free(qual);
	free(file);
	free(e);
	return NULL;
}

/* cached entry of (tgid, code), reading it now when missing, and when
 * check is set and the address holds another code object now; under mu */
static code_ent *code_get(edge_py *py, uint32_t tgid, uint64_t code, int check)
{
	int found;
	code_ent **s = slot_find(py, tgid, code, &found);
	const py_proc *pp = proc_of(py, tgid);
	const py_layout *l = pp ? pp->l : NULL;
	if (found && check && l) {
		uint8_t co[256];
		uint64_t sig[4];
		if (l->co_read > sizeof(co) || rd(tgid, code, co, l->co_read))
			return *s; /* gone: keep what was read while it ran */
		code_sig(l, co, sig);
		if (is_code(pp, co) && !memcmp(sig, (*s)->sig, sizeof(sig)))
			return *s;
		py->st.reused++;
		ent_free(*s);
		*s = TOMB;
		py->n--;
		found = 0;
	}
	if (found)
		return *s;
	if (!l)
		return NULL;
	if (py->n >= py->max) {
		py->st.cache_full++;
		return NULL;
	}
	code_ent *e = code_read(pp, code);
	if (!e) {
		py->st.read_fail++;
		return NULL;
	}
	if (grow(py) || !(s = slot_find(py, tgid, code, &found))) {
		ent_free(e);
		return NULL;
	}
	if (!*s)
		py->used++;
	*s = e;
	py->n++;
	return e;
}

void edge_py_resolve(edge_py *py, uint32_t tgid, const uint64_t *slots, size_t n)
{
	pthread_mutex_lock(&py->mu);
	for (size_t i = 0; i < n; i++)
		code_get(py, tgid, slots[i] & WT_PY_CODE_MASK, 1);
	pthread_mutex_unlock(&py->mu);
}

static uint32_t varint(const uint8_t *t, size_t len, size_t *i)
{
	uint32_t v = 0;
	unsigned sh = 0;
	while (*i < len && sh < 32) {
		uint8_t b = t[(*i)++];
		v |= (uint32_t)(b & 63) << sh;
		sh += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int32_t svarint(const uint8_t *t, size_t len, size_t *i)
{
	uint32_t u = varint(t, len, i);
	return u & 1 ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

/* CPython 3.11+ location table (Objects/locations.md in CPython): entries
 * of 1 + n bytes, the first with the top bit set, a 4-bit code and the
 * number of code units covered minus one. */
int64_t edge_py_addr2line(const uint8_t *tab, size_t len, int64_t firstlineno, uint32_t idx)
{
	int64_t line = firstlineno;
	uint64_t addr = 0;
	size_t i = 0;
	while (i < len) {
		uint8_t h = tab[i++];
		if (!(h & 0x80))
			continue; /* not an entry start: resynchronize */
		unsigned code = (h >> 3) & 15, n = (h & 7) + 1;
		int has_line = 1;
		switch (code) {
		case 15:
			has_line = 0;
			break;
		case 14:
			line += svarint(tab, len, &i);
			varint(tab, len, &i);
			varint(tab, len, &i);
			varint(tab, len, &i);
			break;
		case 13:
			line += svarint(tab, len, &i);
			break;
		case 10:
		case 11:
		case 12:
			line += code - 10;
			i += 2;
			break;
		default:
			i += 1;
			break;
		}
		if (idx < addr + n)
			return has_line && line > 0 ? line : 0;
		addr += n;
	}
	return 0;
}

int edge_py_frame(edge_py *py, uint32_t tgid, uint64_t slot, char *name, size_t ncap, char *file, size_t fcap,
		  int64_t *line)
{
	int rc = -1;
	pthread_mutex_lock(&py->mu);
	code_ent *e = code_get(py, tgid, slot & WT_PY_CODE_MASK, 0);
	if (e) {
		uint32_t idx = (uint32_t)((slot >> WT_PY_INSTR_SHIFT) & WT_PY_NO_INSTR);
		int64_t ln = idx != WT_PY_NO_INSTR && e->nlines ? edge_py_addr2line(e->lines, e->nlines, e->firstlineno, idx)
								  : 0;
		if (!ln)
			ln = e->firstlineno;
		const char *b = strrchr(e->file, '/');
		snprintf(name, ncap, "%s (%s:%lld)", e->name, b ? b + 1 : e->file, (long long)ln);
		snprintf(file, fcap, "%s", e->file);
		wt_utf8_trim_tail(name);
		wt_utf8_trim_tail(file);
		*line = ln;
		rc = 0;
	}
	pthread_mutex_unlock(&py->mu);
	return rc;
}

/* drop the code objects of tgid; under mu */
static void drop_codes(edge_py *py, uint32_t tgid)
{
	for (size_t i = 0; i < py->cap; i++) {
		code_ent *e = py->slots[i];
		if (e && e != TOMB && e->tgid == tgid) {
			ent_free(e);
			py->slots[i] = TOMB;
			py->n--;
		}
	}
}

void edge_py_forget(edge_py *py, uint32_t tgid)
{
	pthread_mutex_lock(&py->mu);
	if (proc_layout(py, tgid)) {
		drop_codes(py, tgid);
		proc_set(py, tgid, NULL, 0, 0);
	}
	pthread_mutex_unlock(&py->mu);
}

void edge_py_get_stats(edge_py *py, edge_py_stats *out)
{
	pthread_mutex_lock(&py->mu);
	*out = py->st;
	out->codes = py->n;
	pthread_mutex_unlock(&py->mu);
}
