/*
 * test_ebpf_unwind.c — unwind tables from call frame information
 * (edge/ebpf_unwind.c) against binutils' own interpreter,
 * `readelf --debug-dump=frames-interp`, row by row:
 *   - the edge binary (WT_BIN/wt-edge) and Debian's libc (.eh_frame): at
 *     every row readelf prints (and at the first pc of FDEs it prints no
 *     rows for, with their CIE's initial rule) our table gives the same CFA
 *     rule (rsp+N, rbp+N; readelf's "exp" is our PLT, signal or expression
 *     type), the same rbp rule (unchanged, or saved at CFA-N) and the
 *     return address at CFA-8 (readelf "c-8"; "u" = outermost frame);
 *   - a program built with -fno-asynchronous-unwind-tables, whose
 *     functions are described in .debug_frame only, the same way; the
 *     same program without any CFI gives an empty table;
 *   - libc's PLT stubs get the PLT rule, its signal trampoline the signal
 *     type, clone the outermost-frame type; the edge's _start too;
 *   - the on-disk cache gives the same table back, and a damaged cache
 *     file is rebuilt;
 *   - the loader (real BPF maps, small rows array): a table that does not
 *     fit while the tables in it are used fails; once no process uses a
 *     table any more it is evicted for the next one; a table in use is
 *     never evicted; an evicted file is loaded again when a process needs
 *     it (needs root: skipped otherwise).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "edge/ebpf_unwind.h"
#include "edge/ebpf_procs.h"

#include <bpf/bpf.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

typedef struct cmp_stats {
	size_t rows, fdes_empty, mismatches, exp_rows, coarse;
	size_t types[8];
} cmp_stats;

typedef struct cie_init {
	int debug;
	unsigned long off;
	char cfa[32], rbp[32], ra[32];
} cie_init;

static int check_row(const edge_unwind_table *t, uint64_t pc, const char *cfa, const char *rbp, const char *ra,
		     cmp_stats *st)
{
	const struct wt_unwind_row *r = edge_unwind_find(t, pc);
	char why[160] = "";
	long n;
	st->rows++;
	if (!r) {
		snprintf(why, sizeof(why), "no row");
		goto bad;
	}
	st->types[WT_ROW_CFA_TYPE(r) & 7]++;
	if (WT_ROW_CFA_TYPE(r) == WT_CFA_SIGNAL)
		return 0; /* registers from the sigcontext: readelf prints expressions */
	if (!strcmp(ra, "u")) {
		if (WT_ROW_CFA_TYPE(r) != WT_CFA_END)
			snprintf(why, sizeof(why), "ra undefined but type %d", WT_ROW_CFA_TYPE(r));
		goto done;
	}
	if (strcmp(ra, "c-8")) {
		if (WT_ROW_CFA_TYPE(r) != WT_CFA_EXPR)
			snprintf(why, sizeof(why), "ra %s but type %d", ra, WT_ROW_CFA_TYPE(r));
		goto done;
	}
	if (!strcmp(cfa, "exp")) {
		st->exp_rows++;
		if (WT_ROW_CFA_TYPE(r) != WT_CFA_PLT && WT_ROW_CFA_TYPE(r) != WT_CFA_EXPR)
			snprintf(why, sizeof(why), "cfa exp but type %d", WT_ROW_CFA_TYPE(r));
		goto done;
	}
	/* an offset the 8-byte row cannot hold (not a multiple of 8, out of
	 * range) must have become an expression (frame pointers) */
	if (sscanf(cfa, "rsp+%ld", &n) == 1 && (n % 8 || n < 0 || n / 8 > UINT16_MAX)) {
		st->coarse++;
		if (WT_ROW_CFA_TYPE(r) != WT_CFA_EXPR)
			snprintf(why, sizeof(why), "cfa %s but type %d", cfa, WT_ROW_CFA_TYPE(r));
		goto done;
	} else if (sscanf(cfa, "rsp+%ld", &n) == 1) {
		if (WT_ROW_CFA_TYPE(r) != WT_CFA_RSP || WT_ROW_CFA_OFF(r) != n)
			snprintf(why, sizeof(why), "cfa %s but type %d off %lld", cfa, WT_ROW_CFA_TYPE(r),
				 (long long)WT_ROW_CFA_OFF(r));
	} else if (sscanf(cfa, "rbp+%ld", &n) == 1 && (n % 8 || n < 0 || n / 8 > UINT16_MAX)) {
		st->coarse++;
		if (WT_ROW_CFA_TYPE(r) != WT_CFA_EXPR)
			snprintf(why, sizeof(why), "cfa %s but type %d", cfa, WT_ROW_CFA_TYPE(r));
		goto done;
	} else if (sscanf(cfa, "rbp+%ld", &n) == 1) {
		if (WT_ROW_CFA_TYPE(r) != WT_CFA_RBP || WT_ROW_CFA_OFF(r) != n)
			snprintf(why, sizeof(why), "cfa %s but type %d off %lld", cfa, WT_ROW_CFA_TYPE(r),
				 (long long)WT_ROW_CFA_OFF(r));
	} else if (WT_ROW_CFA_TYPE(r) != WT_CFA_EXPR) {
		snprintf(why, sizeof(why), "cfa %s but type %d", cfa, WT_ROW_CFA_TYPE(r));
	}
	if (*why)
		goto bad;
	if (!strcmp(rbp, "u") || !strcmp(rbp, "s")) {
		if (WT_ROW_RBP_TYPE(r) != WT_RBP_SAME)
			snprintf(why, sizeof(why), "rbp %s but type %d", rbp, WT_ROW_RBP_TYPE(r));
	} else if (sscanf(rbp, "c%ld", &n) == 1 && (n % 8 || n / 8 < INT8_MIN || n / 8 > INT8_MAX)) {
		st->coarse++;
		if (WT_ROW_RBP_TYPE(r) != WT_RBP_OTHER)
			snprintf(why, sizeof(why), "rbp %s but type %d", rbp, WT_ROW_RBP_TYPE(r));
	} else if (sscanf(rbp, "c%ld", &n) == 1) {
		if (WT_ROW_RBP_TYPE(r) != WT_RBP_CFA || WT_ROW_RBP_OFF(r) != n)
			snprintf(why, sizeof(why), "rbp %s but type %d off %lld", rbp, WT_ROW_RBP_TYPE(r),
				 (long long)WT_ROW_RBP_OFF(r));
	} else if (WT_ROW_RBP_TYPE(r) != WT_RBP_OTHER) {
		snprintf(why, sizeof(why), "rbp %s but type %d", rbp, WT_ROW_RBP_TYPE(r));
	}
done:
	if (!*why)
		return 0;
bad:
	if (st->mismatches++ < 10)
		print_message("mismatch at %#lx (readelf: cfa %s rbp %s ra %s): %s\n", (unsigned long)pc, cfa, rbp, ra,
			      why);
	return 1;
}

/* a .debug_frame FDE that .eh_frame also describes */
static int covered_by_eh(const uint64_t *lo, const uint64_t *hi, size_t n, unsigned long pc)
{
	for (size_t i = 0; i < n; i++)
		if (pc >= lo[i] && pc < hi[i])
			return 1;
	return 0;
}

/* Walk readelf's interpretation of every FDE and check each row. With
 * only_debug, rows of .eh_frame are skipped and .debug_frame rows are
 * checked where no .eh_frame FDE covers them (the table prefers
 * .eh_frame). */
static void compare_with_readelf(const char *path, const edge_unwind_table *t, int only_debug, cmp_stats *st)
{
	char cmd[4200], line[4096];
	char cols[32][16];
	int ncols = 0, section_debug = 0, in_fde = 0, fde_rows = 0;
	unsigned long fde_begin = 0, fde_end = 0, cie_off = 0;
	cie_init *cies = calloc(4096, sizeof(*cies));
	size_t ncies = 0;
	cie_init *cur_cie = NULL;
	uint64_t *eh_lo = calloc(1 << 20, sizeof(uint64_t)), *eh_hi = calloc(1 << 20, sizeof(uint64_t));
	size_t neh = 0;
	assert_non_null(cies);
	assert_non_null(eh_lo);
	assert_non_null(eh_hi);
	snprintf(cmd, sizeof(cmd), "LC_ALL=C readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	memset(st, 0, sizeof(*st));

#define FDE_DONE()                                                                                               \
	do {                                                                                                     \
		if (in_fde && !fde_rows) {                                                                       \
			st->fdes_empty++;                                                                        \
			for (size_t i_ = 0; i_ < ncies; i_++)                                                    \
				if (cies[i_].off == cie_off && cies[i_].debug == section_debug && checkable()) { \
					check_row(t, fde_begin, cies[i_].cfa, cies[i_].rbp, cies[i_].ra, st);    \
					break;                                                                   \
				}                                                                                \
		}                                                                                                \
		in_fde = 0;                                                                                      \
	} while (0)
#define checkable() (only_debug ? section_debug && !covered_by_eh(eh_lo, eh_hi, neh, fde_begin) : !section_debug)

	while (fgets(line, sizeof(line), f)) {
		unsigned long off, lo, hi, loc;
		char kind[8];
		if (strstr(line, "Contents of the .debug_frame")) {
			FDE_DONE();
			section_debug = 1;
			continue;
		}
		if (strstr(line, "Contents of the .eh_frame")) {
			FDE_DONE();
			section_debug = 0;
			continue;
		}
		if (sscanf(line, "%lx %*x %*x %7s", &off, kind) == 2 && !strcmp(kind, "CIE")) {
			FDE_DONE();
			cur_cie = ncies < 4096 ? &cies[ncies++] : NULL;
			if (cur_cie) {
				memset(cur_cie, 0, sizeof(*cur_cie));
				cur_cie->off = off;
				cur_cie->debug = section_debug;
			}
			ncols = 0;
			continue;
		}
		if (sscanf(line, "%lx %*x %*x FDE cie=%lx pc=%lx..%lx", &off, &cie_off, &lo, &hi) == 4) {
			FDE_DONE();
			in_fde = 1;
			fde_rows = 0;
			fde_begin = lo;
			fde_end = hi;
			cur_cie = NULL;
			ncols = 0;
			if (!section_debug && neh < (1 << 20)) {
				eh_lo[neh] = lo;
				eh_hi[neh++] = hi;
			}
			continue;
		}
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			ncols = 0;
			char *save = NULL;
			for (char *tok = strtok_r(line, " \n", &save); tok && ncols < 32; tok = strtok_r(NULL, " \n", &save))
				snprintf(cols[ncols++], sizeof(cols[0]), "%s", tok);
			continue;
		}
		if (ncols >= 3 && sscanf(line, "%lx", &loc) == 1 && strlen(line) > 20 && line[16] == ' ') {
			char vals[32][32];
			int nv = 0;
			char *save = NULL;
			for (char *tok = strtok_r(line, " \n", &save); tok && nv < 32; tok = strtok_r(NULL, " \n", &save)) {
				if (tok[0] == '(' && nv > 0)
					continue; /* "r10 (r10)": a register rule names the register twice */
				snprintf(vals[nv++], sizeof(vals[0]), "%s", tok);
			}
			const char *cfa = "", *rbp = "u", *ra = "u";
			for (int i = 1; i < nv && i < ncols; i++) {
				if (!strcmp(cols[i], "CFA"))
					cfa = vals[i];
				else if (!strcmp(cols[i], "rbp"))
					rbp = vals[i];
				else if (!strcmp(cols[i], "ra"))
					ra = vals[i];
			}
			if (cur_cie && !cur_cie->cfa[0]) {
				snprintf(cur_cie->cfa, sizeof(cur_cie->cfa), "%s", cfa);
				snprintf(cur_cie->rbp, sizeof(cur_cie->rbp), "%s", rbp);
				snprintf(cur_cie->ra, sizeof(cur_cie->ra), "%s", ra);
				continue;
			}
			if (!in_fde)
				continue;
			fde_rows++;
			if (loc >= fde_end || !checkable())
				continue;
			check_row(t, loc, cfa, rbp, ra, st);
		}
	}
	FDE_DONE();
	pclose(f);
	free(cies);
	free(eh_lo);
	free(eh_hi);
#undef FDE_DONE
#undef checkable
}

static edge_unwind_table *build(const char *path)
{
	edge_unwind_table *t = NULL;
	wt_err err = {0};
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int rc = edge_unwind_build(path, &t, &err);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (rc)
		print_message("%s\n", err.msg);
	assert_int_equal(rc, 0);
	double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	print_message("%s: %zu FDEs, %zu rows (%zu KiB), %.1f KiB of CFI, built in %.1f ms (%.1f ms per MiB)\n", path,
		      t->fdes, t->n, t->n * sizeof(*t->rows) / 1024, t->cfi_bytes / 1024.0, ms,
		      ms / (t->cfi_bytes / 1048576.0));
	return t;
}

static void expect_match(const char *path, int only_debug, size_t min_rows)
{
	edge_unwind_table *t = build(path);
	cmp_stats st;
	compare_with_readelf(path, t, only_debug, &st);
	print_message("%s: %zu readelf rows compared (%zu from FDEs without rows, %zu expressions), %zu mismatches; "
		      "types rsp %zu rbp %zu plt %zu end %zu signal %zu expr %zu; %zu rules an 8-byte row cannot hold\n",
		      path, st.rows, st.fdes_empty, st.exp_rows, st.mismatches, st.types[WT_CFA_RSP],
		      st.types[WT_CFA_RBP], st.types[WT_CFA_PLT], st.types[WT_CFA_END], st.types[WT_CFA_SIGNAL],
		      st.types[WT_CFA_EXPR], st.coarse);
	assert_true(st.rows >= min_rows);
	/* offsets in units of 8 cover compiled code: at most 1 in 1,000 rows */
	assert_true(st.coarse * 1000 <= st.rows);
	assert_int_equal(st.mismatches, 0);
	edge_unwind_free(t);
}

static const char *edge_bin(char *buf, size_t cap)
{
	const char *bin = getenv("WT_BIN");
	snprintf(buf, cap, "%s/wt-edge", bin ? bin : "build/bin");
	return access(buf, R_OK) == 0 ? buf : "/proc/self/exe";
}

static void test_edge_binary(void **state)
{
	(void)state;
	char buf[4096];
	const char *p = edge_bin(buf, sizeof(buf));
	expect_match(p, 0, 1000);
	/* _start: the C runtime marks the return address undefined */
	edge_unwind_table *t = build(p);
	char cmd[4300], line[256];
	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"_start\" { print $1 }'", p);
	FILE *f = popen(cmd, "r");
	unsigned long start = 0;
	assert_non_null(f);
	if (fgets(line, sizeof(line), f))
		start = strtoul(line, NULL, 16);
	pclose(f);
	assert_true(start != 0);
	const struct wt_unwind_row *r = edge_unwind_find(t, start + 1);
	assert_non_null(r);
	assert_int_equal(WT_ROW_CFA_TYPE(r), WT_CFA_END);
	edge_unwind_free(t);
}

static void test_libc(void **state)
{
	(void)state;
	if (access(LIBC, R_OK) != 0) {
		print_message("no %s\n", LIBC);
		fail();
	}
	expect_match(LIBC, 0, 20000);
	edge_unwind_table *t = build(LIBC);
	size_t plt = 0, sig = 0, end = 0;
	for (size_t i = 0; i < t->n; i++) {
		plt += WT_ROW_CFA_TYPE(&t->rows[i]) == WT_CFA_PLT;
		sig += WT_ROW_CFA_TYPE(&t->rows[i]) == WT_CFA_SIGNAL;
		end += WT_ROW_CFA_TYPE(&t->rows[i]) == WT_CFA_END;
		if (WT_ROW_CFA_TYPE(&t->rows[i]) == WT_CFA_PLT) {
			assert_int_equal(WT_ROW_CFA_OFF(&t->rows[i]), 8);
			assert_true(WT_ROW_PLT_THR(&t->rows[i]) == 10 || WT_ROW_PLT_THR(&t->rows[i]) == 11);
		}
		if (i)
			assert_true(t->rows[i].pc > t->rows[i - 1].pc);
	}
	print_message("libc: %zu PLT rows, %zu signal rows, %zu outermost rows\n", plt, sig, end);
	assert_true(plt >= 1);
	assert_true(sig >= 1);
	assert_true(end >= 1);
	edge_unwind_free(t);
}

static void test_debug_frame_only(void **state)
{
	(void)state;
	char dir[] = "/tmp/wt-unwind-XXXXXX", src[128], bin[128], cmd[512];
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/t.c", dir);
	snprintf(bin, sizeof(bin), "%s/t", dir);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	fputs("int g;\n"
	      "__attribute__((noinline)) int f(int n) { int a[100]; for (int i = 0; i < 100; i++) a[i] = i * n;"
	      " g += a[n % 100]; return g; }\n"
	      "__attribute__((noinline)) int h(int n) { return f(n) + f(n + 1); }\n"
	      "int main(int c, char **v) { (void)v; return h(c); }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -g -O2 -fno-asynchronous-unwind-tables -fno-omit-frame-pointer -o %s %s", bin,
		 src);
	assert_int_equal(system(cmd), 0);
	expect_match(bin, 1, 3);
	/* without any CFI: an empty table, not an error */
	snprintf(cmd, sizeof(cmd), "objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr "
		 "--remove-section .debug_frame %s %s.nocfi", bin, bin);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s.nocfi", bin);
	edge_unwind_table *t = NULL;
	wt_err err = {0};
	assert_int_equal(edge_unwind_build(cmd, &t, &err), 0);
	assert_int_equal(t->n, 0);
	assert_int_equal(t->fdes, 0);
	edge_unwind_free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_cache(void **state)
{
	(void)state;
	char dir[] = "/tmp/wt-unwind-cache-XXXXXX", file[256], cmd[300];
	edge_unwind_table *a = NULL, *b = NULL, *c = NULL;
	wt_err err = {0};
	assert_non_null(mkdtemp(dir));
	char sub[200];
	snprintf(sub, sizeof(sub), "%s/unwind", dir);
	assert_int_equal(edge_unwind_get(sub, "00ab", LIBC, &a, &err), 0);
	assert_false(a->from_cache);
	assert_int_equal(edge_unwind_get(sub, "00ab", LIBC, &b, &err), 0);
	assert_true(b->from_cache);
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->rows, b->rows, a->n * sizeof(*a->rows));
	/* a damaged file (cut short) is rebuilt, not trusted */
	snprintf(file, sizeof(file), "%s/00ab.wtu", sub);
	assert_int_equal(truncate(file, 100), 0);
	assert_int_equal(edge_unwind_get(sub, "00ab", LIBC, &c, &err), 0);
	assert_false(c->from_cache);
	assert_int_equal(c->n, a->n);
	/* keys are hex only (they name files) */
	edge_unwind_table *d = NULL;
	assert_int_equal(edge_unwind_get(sub, "../x", LIBC, &d, &err), WT_EINVAL);
	edge_unwind_free(a);
	edge_unwind_free(b);
	edge_unwind_free(c);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* a process entry for tgid with one mapping of path (its first LOAD) */
static void give(edge_unwind_loader *l, uint32_t tgid, const char *path)
{
	edge_proc p;
	edge_proc_map m;
	memset(&p, 0, sizeof(p));
	memset(&m, 0, sizeof(m));
	m.start = 0x7f0000000000;
	m.end = 0x7f0000100000;
	m.pgoff = 0;
	m.path = (char *)path;
	p.tgid = tgid;
	p.state = EDGE_PROC_LIVE;
	p.maps = &m;
	p.nmaps = 1;
	edge_unwind_loader_add(l, &p, WT_UNWIND_MODE_AUTO);
}

static void settle(edge_unwind_loader *l, uint64_t *files, uint64_t *rows, uint64_t *failed)
{
	uint64_t pending = 1;
	for (int i = 0; i < 3000 && pending; i++) {
		edge_unwind_loader_stats(l, files, rows, failed, &pending);
		if (pending) {
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
		}
	}
	assert_int_equal(pending, 0);
}

static int has_entry(int procs_fd, uint32_t tgid)
{
	struct wt_unwind_proc v;
	return bpf_map_lookup_elem(procs_fd, &tgid, &v) == 0 && v.n == 1;
}

static void test_loader_evicts_unused_tables(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	const char *bash = "/usr/bin/bash", *perf = "/usr/bin/perf";
	if (access(bash, R_OK) || access(perf, R_OK))
		skip();
	/* libc 28,274 rows, bash 20,668, perf 38,573 (Debian 12): two of
	 * them never fit in 40,000 */
	int rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_rows", 4, sizeof(struct wt_unwind_row), 40000, NULL);
	int procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_procs", 4, sizeof(struct wt_unwind_proc), 64, NULL);
	assert_true(rows_fd >= 0 && procs_fd >= 0);
	pid_t child = fork();
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	uint32_t me = (uint32_t)getpid(), other = (uint32_t)child;
	uint64_t files, rows, failed, built, bns, cfi, cached;
	edge_unwind_loader *l = edge_unwind_loader_new(rows_fd, 40000, procs_fd, NULL);
	assert_non_null(l);

	give(l, me, LIBC);
	settle(l, &files, &rows, &failed);
	assert_true(has_entry(procs_fd, me));
	assert_int_equal(files, 1);
	uint64_t libc_rows = rows;
	assert_true(libc_rows > 20000);
	/* perf does not fit beside libc, which a process uses */
	give(l, other, perf);
	settle(l, &files, &rows, &failed);
	assert_int_equal(failed, 1);
	assert_false(has_entry(procs_fd, other));
	assert_int_equal(rows, libc_rows);
	/* no process uses libc's table any more: bash takes its rows */
	edge_unwind_loader_forget(l, me);
	give(l, other, bash);
	settle(l, &files, &rows, &failed);
	assert_true(has_entry(procs_fd, other));
	assert_int_equal(files, 1);
	assert_true(rows < libc_rows);
	edge_unwind_loader_build_stats(l, &built, &bns, &cfi, &cached);
	assert_int_equal(built, 3);
	/* libc again: built again, but bash is in use and stays */
	give(l, me, LIBC);
	settle(l, &files, &rows, &failed);
	assert_false(has_entry(procs_fd, me));
	assert_int_equal(failed, 2);
	assert_true(has_entry(procs_fd, other));
	/* bash's process gone: its table stays while there is room (the
	 * next process of bash finds it), ld.so fits beside it */
	uint64_t bash_rows = rows;
	edge_unwind_loader_forget(l, other);
	give(l, other, "/lib64/ld-linux-x86-64.so.2");
	settle(l, &files, &rows, &failed);
	assert_true(has_entry(procs_fd, other));
	assert_int_equal(files, 2);
	assert_true(rows > bash_rows);

	edge_unwind_loader_free(l);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(rows_fd);
	close(procs_fd);
}

/* A capture taken while ld.so was still mapping the libraries (only the
 * executable and the loader) gets a complete entry soon after: the loader
 * reads the process's mappings again itself (edge_unwind_loader_add). The
 * process here is a real `sleep`, complete by now; the capture handed to
 * the loader is cut to its first two mappings, as an early one is. */
static void test_loader_rechecks_early_capture(void **state)
{
	(void)state;
	if (geteuid() != 0 || access("/usr/bin/sleep", X_OK))
		skip();
	int rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_rows", 4, sizeof(struct wt_unwind_row), 200000, NULL);
	int procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_procs", 4, sizeof(struct wt_unwind_proc), 64, NULL);
	assert_true(rows_fd >= 0 && procs_fd >= 0);
	pid_t child = fork();
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	/* its executable mappings once exec and ld.so are done */
	char path[64], line[4600], names[4][512];
	edge_proc_map m[4];
	size_t n = 0;
	memset(m, 0, sizeof(m));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
	for (int tries = 0; tries < 200; tries++) {
		FILE *f = fopen(path, "re");
		int libc = 0;
		n = 0;
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long a, b, off;
			char perms[8];
			int pos = 0;
			if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &a, &b, perms, &off, &pos) < 4 || !pos ||
			    perms[2] != 'x' || line[pos] != '/')
				continue;
			line[pos + strcspn(line + pos, "\n")] = '\0';
			libc |= strstr(line + pos, "libc.so") != NULL;
			if (n < 4 && (strstr(line + pos, "/sleep") || strstr(line + pos, "ld-linux"))) {
				snprintf(names[n], sizeof(names[n]), "%s", line + pos);
				m[n].start = a;
				m[n].end = b;
				m[n].pgoff = off;
				m[n].path = names[n];
				n++;
			}
		}
		if (f)
			fclose(f);
		if (libc && n == 2)
			break;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(n, 2);
	edge_unwind_loader *l = edge_unwind_loader_new(rows_fd, 200000, procs_fd, NULL);
	assert_non_null(l);
	edge_proc p;
	memset(&p, 0, sizeof(p));
	p.tgid = (uint32_t)child;
	p.state = EDGE_PROC_LIVE;
	snprintf(p.exe, sizeof(p.exe), "sleep");
	p.maps = m;
	p.nmaps = n;
	assert_true(edge_proc_maps_early(&p));
	edge_unwind_loader_add(l, &p, WT_UNWIND_MODE_AUTO);
	/* the entry comes with the two files first, then with libc as well */
	struct wt_unwind_proc v;
	uint32_t tgid = (uint32_t)child;
	int got = 0;
	for (int i = 0; i < 500 && got < 3; i++) {
		memset(&v, 0, sizeof(v));
		if (bpf_map_lookup_elem(procs_fd, &tgid, &v) == 0)
			got = (int)v.n;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	print_message("early capture of sleep: entry with %d mappings after the recheck\n", got);
	assert_true(got >= 3);
	edge_unwind_loader_free(l);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(rows_fd);
	close(procs_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edge_binary),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_debug_frame_only),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_loader_evicts_unused_tables),
		cmocka_unit_test(test_loader_rechecks_early_capture),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
