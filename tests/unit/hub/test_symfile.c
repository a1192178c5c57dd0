/*
 * test_symfile.c — hub/symfile.c against binutils addr2line: a small C
 * program (with an always_inline function) is built with gcc -g -O2 as a
 * PIE, a stripped copy and a separate .debug file are made with strip and
 * objcopy; for every address of its hot functions, our lookup from the
 * unstripped file and from the .debug file must print what
 * `addr2line -f -i -e prog <addr>` prints (names, base file names, lines);
 * a non-PIE build checks the file offset → address translation, a C++
 * build the demangled, qualified names (addr2line -C).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "elfid.h"
#include "hub/symfile.h"

static char dir[] = "/tmp/wt-symfile-XXXXXX";

static const char prog_c[] =
	"#include <stdlib.h>\n"
	"static volatile unsigned long sink;\n"
	"static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)\n"
	"{\n"
	"\tfor (int i = 0; i < 50; i++)\n"
	"\t\tx = x * 6364136223846793005UL + 1442695040888963407UL;\n"
	"\treturn x;\n"
	"}\n"
	"__attribute__((noinline)) unsigned long hot_leaf(unsigned long n)\n"
	"{\n"
	"\tunsigned long s = 0;\n"
	"\tfor (unsigned long i = 0; i < n; i++)\n"
	"\t\ts += mix(i);\n"
	"\treturn s;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tsink = hot_leaf(argc > 1 ? strtoul(argv[1], 0, 10) : 10);\n"
	"\treturn 0;\n"
	"}\n";

static const char prog_cc[] =
	"#include <cstdlib>\n"
	"namespace app {\n"
	"template <typename T> struct Mixer {\n"
	"\tstatic inline __attribute__((always_inline)) T mix(T x)\n"
	"\t{\n"
	"\t\tfor (int i = 0; i < 50; i++)\n"
	"\t\t\tx = x * 6364136223846793005UL + 1442695040888963407UL;\n"
	"\t\treturn x;\n"
	"\t}\n"
	"};\n"
	"__attribute__((noinline)) unsigned long hot_leaf(unsigned long n)\n"
	"{\n"
	"\tunsigned long s = 0;\n"
	"\tfor (unsigned long i = 0; i < n; i++)\n"
	"\t\ts += Mixer<unsigned long>::mix(i);\n"
	"\treturn s;\n"
	"}\n"
	"}\n"
	"static volatile unsigned long sink;\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tsink = app::hot_leaf(argc > 1 ? strtoul(argv[1], 0, 10) : 10);\n"
	"\treturn 0;\n"
	"}\n";

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int setup(void **state)
{
	char path[256];
	FILE *f;
	(void)state;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	if (!(f = fopen(path, "w")))
		return -1;
	fputs(prog_c, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/prog.cc", dir);
	if (!(f = fopen(path, "w")))
		return -1;
	fputs(prog_cc, f);
	fclose(f);
	return sh("cd %s && gcc -g -O2 -fno-omit-frame-pointer -pie -fPIE -o prog prog.c && "
		  "gcc -g -O2 -fno-omit-frame-pointer -no-pie -o prog-nopie prog.c && "
		  "g++ -g -O2 -fno-omit-frame-pointer -o prog-cc prog.cc && "
		  "objcopy --only-keep-debug prog prog.debug && cp prog prog.stripped && strip prog.stripped", dir);
}

static int teardown(void **state)
{
	(void)state;
	return sh("rm -rf %s", dir);
}

/* addr2line's answer for addr as "name@file:line;..." outermost first. */
static void reference_of(const char *bin, uint64_t addr, char *out, size_t cap)
{
	char cmd[512], name[512], loc[512], parts[16][1100];
	size_t n = 0;
	FILE *p;

	/* -C: demangled names (a no-op for C) */
	snprintf(cmd, sizeof(cmd), "addr2line -f -i -C -e %s/%s 0x%llx", dir, bin, (unsigned long long)addr);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n < 16 && fgets(name, sizeof(name), p) && fgets(loc, sizeof(loc), p)) {
		char *nl, *base, *disc;

		name[strcspn(name, "\n")] = 0;
		loc[strcspn(loc, "\n")] = 0;
		if ((disc = strstr(loc, " (discriminator")))
			*disc = 0;
		base = (nl = strrchr(loc, '/')) ? nl + 1 : loc;
		snprintf(parts[n++], sizeof(parts[0]), "%s@%s", name, base);
	}
	pclose(p);
	out[0] = 0;
	while (n-- > 0) { /* addr2line prints innermost first */
		strncat(out, parts[n], cap - strlen(out) - 1);
		if (n)
			strncat(out, ";", cap - strlen(out) - 1);
	}
}

static void reference(uint64_t addr, char *out, size_t cap)
{
	reference_of("prog", addr, out, cap);
}

static void ours(hub_symfile *sf, uint64_t off, char *out, size_t cap)
{
	hub_symframe fr[HUB_SYMFRAMES_MAX];
	size_t n = hub_symfile_lookup(sf, off, fr, HUB_SYMFRAMES_MAX);

	out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const char *b = strrchr(fr[i].file, '/');
		char one[600];

		if (fr[i].line)
			snprintf(one, sizeof(one), "%s@%s:%d", fr[i].name, b ? b + 1 : fr[i].file, fr[i].line);
		else
			snprintf(one, sizeof(one), "%s@??:0", fr[i].name);
		strncat(out, one, cap - strlen(out) - 1);
		if (i + 1 < n)
			strncat(out, ";", cap - strlen(out) - 1);
	}
}

/* Every instruction address of hot_leaf (from nm/objdump-independent
 * `nm -S`): our frames equal addr2line's, from both files; the inlined
 * mix() appears as its own frame somewhere. */
static void test_against_addr2line(void **state)
{
	char cmd[512], line[256], path[256], want[4096], got[4096];
	unsigned long long start = 0, size = 0;
	hub_symfile *full = NULL, *dbg = NULL;
	int saw_inline = 0, checked = 0;
	wt_err e;
	FILE *p;
	(void)state;

	snprintf(cmd, sizeof(cmd), "nm -S %s/prog", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, " hot_leaf\n"))
			sscanf(line, "%llx %llx", &start, &size);
	pclose(p);
	assert_true(start && size);
	snprintf(path, sizeof(path), "%s/prog", dir);
	assert_int_equal(hub_symfile_open(path, &full, &e), 0);
	snprintf(path, sizeof(path), "%s/prog.debug", dir);
	assert_int_equal(hub_symfile_open(path, &dbg, &e), 0);
	/* in this PIE, text file offsets equal virtual addresses (ld's default
	 * layout; checked by readelf in the integration test) */
	for (unsigned long long a = start; a < start + size; a++) {
		reference(a, want, sizeof(want));
		ours(full, a, got, sizeof(got));
		assert_string_equal(got, want);
		ours(dbg, a, got, sizeof(got));
		assert_string_equal(got, want);
		if (strstr(want, "mix@"))
			saw_inline = 1;
		checked++;
	}
	assert_true(saw_inline);
	assert_true(checked > 10);
	hub_symfile_close(full);
	hub_symfile_close(dbg);
}

/* Non-PIE: the text segment's file offsets differ from its addresses
 * (readelf -l: Offset 0x1000, VirtAddr 0x401000); a file offset is
 * translated through PT_LOAD, an address (what perf script prints for
 * such executables) is taken as is; both equal addr2line at the address. */
static void test_non_pie_offsets(void **state)
{
	char cmd[512], line[512], path[256], want[4096], got[4096];
	unsigned long long start = 0, size = 0, off = 0, va = 0;
	hub_symfile *sf = NULL;
	wt_err e;
	FILE *p;
	(void)state;

	snprintf(cmd, sizeof(cmd), "nm -S %s/prog-nopie", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, " hot_leaf\n"))
			sscanf(line, "%llx %llx", &start, &size);
	pclose(p);
	snprintf(cmd, sizeof(cmd), "readelf -lW %s/prog-nopie", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "  LOAD ") && strstr(line, " R E "))
			sscanf(line, " LOAD %llx %llx", &off, &va);
	pclose(p);
	assert_true(start && size && va && off != va);
	snprintf(path, sizeof(path), "%s/prog-nopie", dir);
	assert_int_equal(hub_symfile_open(path, &sf, &e), 0);
	for (unsigned long long a = start; a < start + size; a += 3) {
		reference_of("prog-nopie", a, want, sizeof(want));
		ours(sf, a, got, sizeof(got));
		assert_string_equal(got, want);
		ours(sf, a - va + off, got, sizeof(got));
		assert_string_equal(got, want);
	}
	hub_symfile_close(sf);
}

/* C++: qualified, demangled names, also for the inlined template member
 * (from its DW_AT_linkage_name), as addr2line -C prints them. */
static void test_cplusplus(void **state)
{
	char cmd[512], line[512], path[256], want[4096], got[4096];
	unsigned long long start = 0, size = 0;
	hub_symfile *sf = NULL;
	int saw_inline = 0;
	wt_err e;
	FILE *p;
	(void)state;

	snprintf(cmd, sizeof(cmd), "nm -S %s/prog-cc", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, " _ZN3app8hot_leafEm\n"))
			sscanf(line, "%llx %llx", &start, &size);
	pclose(p);
	assert_true(start && size);
	snprintf(path, sizeof(path), "%s/prog-cc", dir);
	assert_int_equal(hub_symfile_open(path, &sf, &e), 0);
	for (unsigned long long a = start; a < start + size; a++) {
		reference_of("prog-cc", a, want, sizeof(want));
		ours(sf, a, got, sizeof(got));
		assert_string_equal(got, want);
		saw_inline |= strstr(want, "app::Mixer<unsigned long>::mix(unsigned long)@") != NULL;
	}
	assert_true(saw_inline);
	assert_non_null(strstr(want, "app::hot_leaf(unsigned long)@"));
	hub_symfile_close(sf);
}

/* A damaged upload (the file cut at several lengths, and with its
 * .debug_info overwritten) never crashes a lookup: names or nothing. */
static void test_damaged(void **state)
{
	static const long cuts[] = {64, 700, 4096, 9000, 14000};
	char path[256];
	hub_symframe fr[HUB_SYMFRAMES_MAX];
	(void)state;

	for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		hub_symfile *sf = NULL;
		wt_err e;

		assert_int_equal(sh("head -c %ld %s/prog > %s/cut", cuts[k], dir, dir), 0);
		snprintf(path, sizeof(path), "%s/cut", dir);
		if (hub_symfile_open(path, &sf, &e))
			continue;
		for (uint64_t a = 0; a < 0x3000; a += 7)
			(void)hub_symfile_lookup(sf, a, fr, HUB_SYMFRAMES_MAX);
		hub_symfile_close(sf);
	}
	/* garbage over the DWARF: objcopy rewrites .debug_info with zeros+junk */
	assert_int_equal(sh("cd %s && head -c 3000 /dev/urandom > junk && "
			    "objcopy --update-section .debug_info=junk prog junked 2>/dev/null", dir), 0);
	{
		hub_symfile *sf = NULL;
		wt_err e;

		snprintf(path, sizeof(path), "%s/junked", dir);
		if (!hub_symfile_open(path, &sf, &e)) {
			for (uint64_t a = 0x1000; a < 0x1400; a++)
				(void)hub_symfile_lookup(sf, a, fr, HUB_SYMFRAMES_MAX);
			hub_symfile_close(sf);
		}
	}
}

/* A real multi-CU binary with GCC clones (.isra/.constprop/.part) and
 * static functions: wt-hub itself ($WT_BIN, set by tests/run). 100 random
 * addresses inside its function symbols (nm -S, text), each as addr2line
 * -f -i -C prints it. */
static void test_wt_hub(void **state)
{
	const char *bin = getenv("WT_BIN");
	char path[1024], cmd[1200], line[1024], want[4096], got[4096];
	unsigned long long (*fn)[2] = NULL;
	size_t nfn = 0, cap = 0;
	hub_symfile *sf = NULL;
	wt_err e;
	FILE *p;
	(void)state;

	snprintf(path, sizeof(path), "%s/wt-hub", bin ? bin : "build/bin");
	if (access(path, R_OK)) {
		print_message("skipped: %s not built\n", path);
		return;
	}
	snprintf(cmd, sizeof(cmd), "nm -S --defined-only %s", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, sz;
		char t;

		if (sscanf(line, "%llx %llx %c", &a, &sz, &t) != 3 || (t != 'T' && t != 't') || !sz)
			continue;
		if (nfn == cap) {
			cap = cap ? cap * 2 : 1024;
			fn = realloc(fn, cap * sizeof(*fn));
			assert_non_null(fn);
		}
		fn[nfn][0] = a;
		fn[nfn++][1] = sz;
	}
	pclose(p);
	assert_true(nfn > 100);
	/* wt-hub is a PIE: text offsets equal addresses */
	assert_int_equal(hub_symfile_open(path, &sf, &e), 0);
	srand(7);
	for (int i = 0; i < 100; i++) {
		size_t k = (size_t)rand() % nfn;
		unsigned long long a = fn[k][0] + (unsigned long long)rand() % fn[k][1];
		{
			char c2[1300], nm[512], loc[512], parts[16][1100];
			size_t n = 0;
			FILE *q;

			snprintf(c2, sizeof(c2), "addr2line -f -i -C -e %s 0x%llx", path, a);
			q = popen(c2, "r");
			assert_non_null(q);
			while (n < 16 && fgets(nm, sizeof(nm), q) && fgets(loc, sizeof(loc), q)) {
				char *sl, *disc;

				nm[strcspn(nm, "\n")] = 0;
				loc[strcspn(loc, "\n")] = 0;
				if ((disc = strstr(loc, " (discriminator")))
					*disc = 0;
				if (!strncmp(loc, "??:", 3) || strstr(loc, ":?") || strstr(loc, ":0"))
					snprintf(loc, sizeof(loc), "??:0"); /* no line: "??:?", "f.c:0" */
				sl = strrchr(loc, '/');
				snprintf(parts[n++], sizeof(parts[0]), "%s@%s", nm, sl ? sl + 1 : loc);
			}
			pclose(q);
			want[0] = 0;
			while (n-- > 0) {
				strncat(want, parts[n], sizeof(want) - strlen(want) - 1);
				if (n)
					strncat(want, ";", sizeof(want) - strlen(want) - 1);
			}
		}
		ours(sf, a, got, sizeof(got));
		if (strcmp(got, want))
			print_message("address 0x%llx\n", a);
		assert_string_equal(got, want);
	}
	hub_symfile_close(sf);
	free(fn);
}

static void test_not_elf(void **state)
{
	char path[256], hex[100];
	hub_symfile *sf = NULL;
	wt_err e;
	(void)state;

	snprintf(path, sizeof(path), "%s/prog.c", dir);
	assert_int_not_equal(hub_symfile_open(path, &sf, &e), 0);
	assert_null(sf);
	assert_int_equal(wt_elf_build_id("hello", 5, "x.txt", hex, sizeof(hex), &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "x.txt: not an ELF file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_addr2line),
		cmocka_unit_test(test_non_pie_offsets),
		cmocka_unit_test(test_cplusplus),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_wt_hub),
		cmocka_unit_test(test_not_elf),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
