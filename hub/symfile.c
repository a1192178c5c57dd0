/*
 * symfile.c — ELF/DWARF lookups in one debug file with libdwfl (see
 * symfile.h).
 */
#include "symfile.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demangle.h"

typedef struct fsym {
	uint64_t addr, size; /* module addresses (bias applied) */
	const char *name;    /* libelf's string, valid while dwfl lives */
} fsym;

struct hub_symfile {
	fsym *syms; /* function symbols by address: dwfl_module_addrinfo is a
		     * linear scan per call, this a binary search */
	size_t nsyms;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Phdr *loads; /* PT_LOAD headers, for offset → vaddr */
	size_t nloads;
	int exec;           /* ET_EXEC: loaded at its link addresses */
	uint64_t min_vaddr; /* lowest PT_LOAD address */
};

/* Never look elsewhere (/usr/lib/debug, debuginfod): the file is all we use. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks offline_cb = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static int read_loads(hub_symfile *sf, Elf *elf)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n) || !n)
		return 0;
	if (!(sf->loads = calloc(n, sizeof(*sf->loads))))
		return WT_ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			if (!sf->nloads || ph.p_vaddr < sf->min_vaddr)
				sf->min_vaddr = ph.p_vaddr;
			sf->loads[sf->nloads++] = ph;
		}
	}
	{
		GElf_Ehdr eh;
		sf->exec = gelf_getehdr(elf, &eh) && eh.e_type == ET_EXEC;
	}
	return 0;
}

static int fsym_cmp(const void *a, const void *b)
{
	const fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* equal addresses: sized symbols first (aliases keep one name) */
	return (x->size < y->size) - (x->size > y->size);
}

static int read_syms(hub_symfile *sf)
{
	int n = dwfl_module_getsymtab(sf->mod);

	if (n <= 0)
		return 0;
	if (!(sf->syms = calloc((size_t)n, sizeof(*sf->syms))))
		return WT_ENOMEM;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(sf->mod, i, &sym, &addr, NULL, NULL, NULL);

		if (name && *name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF && addr) {
			sf->syms[sf->nsyms].addr = addr;
			sf->syms[sf->nsyms].size = sym.st_size;
			sf->syms[sf->nsyms++].name = name;
		}
	}
	qsort(sf->syms, sf->nsyms, sizeof(*sf->syms), fsym_cmp);
	return 0;
}

/* The function symbol containing addr (an unsized one reaches to the next
 * symbol), or NULL. */
static const char *sym_at(const hub_symfile *sf, uint64_t addr)
{
	size_t lo = 0, hi = sf->nsyms;

	while (lo < hi) { /* first symbol above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (sf->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	{
		uint64_t a = sf->syms[lo - 1].addr;
		size_t i = lo - 1;

		while (i > 0 && sf->syms[i - 1].addr == a) /* the sized alias */
			i--;
		if (sf->syms[i].size && addr >= a + sf->syms[i].size)
			return NULL;
		return sf->syms[i].name;
	}
}

int hub_symfile_open(const char *path, hub_symfile **out, wt_err *err)
{
	hub_symfile *sf = calloc(1, sizeof(*sf));
	GElf_Addr bias;
	Elf *elf;
	int rc = 0;

	*out = NULL;
	if (!sf)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (!(sf->dwfl = dwfl_begin(&offline_cb))) {
		rc = wt_err_set(err, WT_ENOMEM, "libdwfl: %s", dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_begin(sf->dwfl);
	sf->mod = dwfl_report_offline(sf->dwfl, "debugfile", path, -1);
	dwfl_report_end(sf->dwfl, NULL, NULL);
	if (!sf->mod || !(elf = dwfl_module_getelf(sf->mod, &bias))) {
		rc = wt_err_set(err, WT_EINVAL, "%s: not an ELF file (%s)", path, dwfl_errmsg(-1));
		goto fail;
	}
	if ((rc = read_loads(sf, elf)) || (rc = read_syms(sf))) {
		wt_err_set(err, rc, "out of memory");
		goto fail;
	}
	*out = sf;
	return 0;
fail:
	hub_symfile_close(sf);
	return rc;
}

void hub_symfile_close(hub_symfile *sf)
{
	if (!sf)
		return;
	if (sf->dwfl)
		dwfl_end(sf->dwfl);
	free(sf->loads);
	free(sf->syms);
	free(sf);
}

/* perf script prints file-relative addresses for shared objects and PIEs
 * but link-time (= run-time) addresses for non-PIE executables: in an
 * ET_EXEC file a value at or above the lowest load address is taken as an
 * address already (file offsets of such files are below it unless the file
 * is larger than its load address, 4 MiB on x86-64 by default). */
static uint64_t vaddr_of(const hub_symfile *sf, uint64_t off)
{
	if (sf->exec && sf->min_vaddr && off >= sf->min_vaddr)
		return off;
	for (size_t i = 0; i < sf->nloads; i++) {
		const GElf_Phdr *ph = &sf->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_filesz)
			return off - ph->p_offset + ph->p_vaddr;
	}
	return off;
}

static void set_str(char *dst, size_t cap, const char *s)
{
	snprintf(dst, cap, "%s", s ? s : "");
}

/* A function name as views show it: demangled when mangled (C++, legacy
 * Rust), as is otherwise. */
static void set_name(char *dst, size_t cap, const char *name)
{
	char *d = wt_demangle(name);

	set_str(dst, cap, d ? d : name);
	free(d);
}

/* The name of an inlined instance or subprogram DIE: its linkage name
 * demangled (qualified C++ names), else DW_AT_name (both looked up through
 * DW_AT_abstract_origin / DW_AT_specification). */
static void die_name(Dwarf_Die *die, char *dst, size_t cap)
{
	Dwarf_Attribute a;
	const char *ln = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));

	if (!ln)
		ln = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (ln)
		set_name(dst, cap, ln);
	else
		set_str(dst, cap, dwarf_diename(die));
}

/* Source file number idx of the CU, or NULL. */
static const char *cu_file(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;

	if (dwarf_getsrcfiles(cu, &files, &n) || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

#define CHAIN_MAX 64

/* Find the scopes containing pc below die (depth-first, one walk; only
 * children whose ranges hold pc are entered, namespaces and types are
 * searched through). Appends them OUTERMOST first to chain[*n]. 1 when a
 * subprogram holding pc was found. */
static int find_pc(Dwarf_Die *die, Dwarf_Addr pc, Dwarf_Die *chain, int *n, int depth)
{
	Dwarf_Die child;

	if (depth > CHAIN_MAX || dwarf_child(die, &child) != 0)
		return 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&child, pc) == 1) {
				if (*n < CHAIN_MAX)
					chain[(*n)++] = child;
				find_pc(&child, pc, chain, n, depth + 1);
				return 1;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (find_pc(&child, pc, chain, n, depth + 1))
				return 1;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* The scopes holding pc in the CU, INNERMOST first (the order of
 * dwarf_getscopes_die), in one walk of the CU instead of the two of
 * dwarf_getscopes + dwarf_getscopes_die. 0 when none. */
static int pc_chain(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *chain)
{
	int n = 0;

	if (!find_pc(cu, pc, chain, &n, 0))
		return 0;
	for (int a = 0, b = n - 1; a < b; a++, b--) {
		Dwarf_Die t = chain[a];
		chain[a] = chain[b];
		chain[b] = t;
	}
	return n;
}

size_t hub_symfile_lookup(hub_symfile *sf, uint64_t off, hub_symframe *out, size_t max)
{
	GElf_Addr bias = 0, modbias = 0, addr;
	Dwarf_Die *cu, *scopes = NULL, *sc = NULL, chain[CHAIN_MAX];
	const char *symname, *file = NULL;
	Dwfl_Line *ln;
	int line = 0, nscopes, i;
	size_t n = 0;

	if (!max || !dwfl_module_getelf(sf->mod, &modbias))
		return 0;
	addr = vaddr_of(sf, off) + modbias;
	symname = sym_at(sf, addr);
	if ((ln = dwfl_module_getsrc(sf->mod, addr)))
		file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
	cu = dwfl_module_addrdie(sf->mod, addr, &bias);
	nscopes = cu ? pc_chain(cu, addr - bias, chain) : 0;
	if (nscopes > 0) {
		sc = chain;
	} else if (cu && (nscopes = dwarf_getscopes(cu, addr - bias, &scopes)) > 0) {
		/* dwarf_getscopes continues from an inlined instance into its
		 * abstract definition; the physical nesting (inlined instance →
		 * the function it was inlined into) is dwarf_getscopes_die's */
		Dwarf_Die inner = scopes[0];

		free(scopes);
		scopes = NULL;
		nscopes = dwarf_getscopes_die(&inner, &scopes);
		sc = scopes;
	}
	/* innermost scope first: each inlined instance is a frame at the
	 * current file:line, and its call site is the line of the next one */
	for (i = 0; i < nscopes && n < max; i++) {
		int tag = dwarf_tag(&sc[i]);
		Dwarf_Attribute a;
		Dwarf_Word w;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		/* DWARF's name (also for the outermost function: "do_request",
		 * where the symbol table has the clone "do_request.isra.0"),
		 * as addr2line prints it; the symbol table when it has none */
		die_name(&sc[i], out[n].name, sizeof(out[n].name));
		if (!out[n].name[0])
			set_name(out[n].name, sizeof(out[n].name), symname ? symname : "??");
		set_str(out[n].file, sizeof(out[n].file), file);
		out[n].line = file ? line : 0;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		file = NULL;
		line = 0;
		if (dwarf_formudata(dwarf_attr(&sc[i], DW_AT_call_file, &a), &w) == 0)
			file = cu_file(cu, w);
		if (dwarf_formudata(dwarf_attr(&sc[i], DW_AT_call_line, &a), &w) == 0)
			line = (int)w;
	}
	free(scopes);
	if (!n && symname) { /* no DWARF: the symbol table only */
		set_name(out[0].name, sizeof(out[0].name), symname);
		set_str(out[0].file, sizeof(out[0].file), file);
		out[0].line = file ? line : 0;
		n = 1;
	}
	/* reverse into outermost first */
	for (size_t a = 0, b = n ? n - 1 : 0; a < b; a++, b--) {
		hub_symframe t = out[a];
		out[a] = out[b];
		out[b] = t;
	}
	return n;
}
