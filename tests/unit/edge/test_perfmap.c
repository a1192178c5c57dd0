/*
 * test_perfmap.c — JIT perf maps for the eBPF sampler (edge/perfmap.c),
 * against a fake /proc root holding ROOT/PID/status (with an NSpid line)
 * and ROOT/PID/root/tmp/perf-NSPID.map:
 *   - the file is found under the pid the process has in its own pid
 *     namespace; addresses inside an entry get its name, the end of an
 *     entry and gaps get none; 0x prefixes and CRLF are accepted and
 *     malformed lines skipped;
 *   - appended lines are read at the next generation only, from where the
 *     last read stopped; a half-written last line waits for its newline;
 *   - code compiled again over the same addresses: the later entry wins;
 *   - a file replaced by a shorter one is read anew;
 *   - no file: no names, and one that appears later is found;
 *   - a file rewritten in place with entries inserted before the end (the
 *     JVM's `jcmd PID Compiler.perfmap` writes the whole map each time, in
 *     code-cache order) is read anew: the inserted entry is found;
 *   - pinned while the process runs, the map is still read once its /proc
 *     entry is gone (a process that exits before the flush), and one
 *     that had been opened stays readable after the pin is released;
 *     closed (the sampler stopped), its entries stay.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "edge/perfmap.h"

static char g_root[256];

static void write_file(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void mkfake(uint32_t pid, uint32_t nspid)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%u", g_root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/root", g_root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/root/tmp", g_root, pid);
	mkdir(p, 0755);
	char st[128];
	snprintf(st, sizeof(st), "Name:\tnode\nTgid:\t%u\nNSpid:\t%u\t%u\n", pid, pid, nspid);
	snprintf(p, sizeof(p), "%s/%u/status", g_root, pid);
	write_file(p, "w", st);
}

static void map_path(char *out, size_t cap, uint32_t pid, uint32_t nspid)
{
	snprintf(out, cap, "%s/%u/root/tmp/perf-%u.map", g_root, pid, nspid);
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_root, sizeof(g_root), "/tmp/wt-perfmap-test-%d", (int)getpid());
	mkdir(g_root, 0755);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_lookup_and_namespace(void **state)
{
	(void)state;
	char p[512];
	mkfake(4242, 7);
	map_path(p, sizeof(p), 4242, 7);
	write_file(p, "w",
		   "7f0000001000 100 LazyCompile:*hot /srv/app.js:3\n"
		   "0x7f0000002000 0x40 Builtin:ArgumentsAdaptorTrampoline\r\n"
		   "garbage line\n"
		   "7f0000003000 zz bad size\n"
		   "7f0000004000 10 JS:~cold file:///srv/app.js:9\n");
	edge_perfmap *m = edge_perfmap_new(g_root, 4242);
	assert_non_null(m);
	assert_string_equal(edge_perfmap_lookup(m, 0x7f0000001000, 1), "LazyCompile:*hot /srv/app.js:3");
	assert_string_equal(edge_perfmap_lookup(m, 0x7f00000010ff, 1), "LazyCompile:*hot /srv/app.js:3");
	assert_null(edge_perfmap_lookup(m, 0x7f0000001100, 1)); /* end is exclusive */
	assert_null(edge_perfmap_lookup(m, 0x7f0000000fff, 1));
	assert_string_equal(edge_perfmap_lookup(m, 0x7f0000002020, 1), "Builtin:ArgumentsAdaptorTrampoline");
	assert_null(edge_perfmap_lookup(m, 0x7f0000003000, 1)); /* malformed line skipped */
	assert_string_equal(edge_perfmap_lookup(m, 0x7f0000004008, 1), "JS:~cold file:///srv/app.js:9");
	assert_int_equal(edge_perfmap_entries(m), 3);
	assert_int_equal(edge_perfmap_truncated(m), 0);
	edge_perfmap_free(m);
}

static void test_append_and_recompile(void **state)
{
	(void)state;
	char p[512];
	mkfake(4243, 4243);
	map_path(p, sizeof(p), 4243, 4243);
	write_file(p, "w", "1000 100 first\n");
	edge_perfmap *m = edge_perfmap_new(g_root, 4243);
	assert_string_equal(edge_perfmap_lookup(m, 0x1010, 1), "first");
	/* appended: a new function, the old range compiled again, and a line
	 * still being written */
	write_file(p, "a", "5000 20 second\n1000 80 first_again\n6000 10 half");
	assert_null(edge_perfmap_lookup(m, 0x5000, 1)); /* same generation: not re-read */
	assert_string_equal(edge_perfmap_lookup(m, 0x5010, 2), "second");
	assert_string_equal(edge_perfmap_lookup(m, 0x1010, 2), "first_again");
	assert_string_equal(edge_perfmap_lookup(m, 0x1090, 2), "first"); /* past the new, shorter range */
	assert_null(edge_perfmap_lookup(m, 0x6000, 2));
	write_file(p, "a", "written\n");
	assert_string_equal(edge_perfmap_lookup(m, 0x6004, 3), "halfwritten");
	assert_int_equal(edge_perfmap_entries(m), 4);
	/* replaced by a shorter file (a new process reused the pid) */
	write_file(p, "w", "9000 10 fresh\n");
	assert_string_equal(edge_perfmap_lookup(m, 0x9000, 4), "fresh");
	assert_null(edge_perfmap_lookup(m, 0x1010, 4));
	assert_int_equal(edge_perfmap_entries(m), 1);
	edge_perfmap_free(m);
}

static void test_absent_then_present(void **state)
{
	(void)state;
	char p[512];
	mkfake(4244, 4244);
	edge_perfmap *m = edge_perfmap_new(g_root, 4244);
	assert_null(edge_perfmap_lookup(m, 0x1000, 1));
	map_path(p, sizeof(p), 4244, 4244);
	write_file(p, "w", "1000 10 late\n");
	assert_string_equal(edge_perfmap_lookup(m, 0x1000, 2), "late");
	edge_perfmap_free(m);
	/* a process without /proc entries at all */
	m = edge_perfmap_new(g_root, 999999);
	assert_null(edge_perfmap_lookup(m, 0x1000, 1));
	edge_perfmap_free(m);
}

static void test_rewritten_in_place(void **state)
{
	(void)state;
	char p[512];
	mkfake(4245, 4245);
	map_path(p, sizeof(p), 4245, 4245);
	write_file(p, "w", "0x1000 0x100 long A.a(long)\n0x3000 0x100 long A.c(long)\n");
	edge_perfmap *m = edge_perfmap_new(g_root, 4245);
	assert_string_equal(edge_perfmap_lookup(m, 0x3010, 1), "long A.c(long)");
	/* same inode, truncated and written again, longer, b in the middle */
	write_file(p, "w", "0x1000 0x100 long A.a(long)\n0x2000 0x100 long A.b(long)\n0x3000 0x100 long A.c(long)\n");
	assert_string_equal(edge_perfmap_lookup(m, 0x2010, 2), "long A.b(long)");
	assert_string_equal(edge_perfmap_lookup(m, 0x1010, 2), "long A.a(long)");
	assert_string_equal(edge_perfmap_lookup(m, 0x3010, 2), "long A.c(long)");
	assert_int_equal(edge_perfmap_entries(m), 3);
	/* then appended to: only the new line is read */
	write_file(p, "a", "0x4000 0x10 long A.d(long)\n");
	assert_string_equal(edge_perfmap_lookup(m, 0x4000, 3), "long A.d(long)");
	assert_int_equal(edge_perfmap_entries(m), 4);
	edge_perfmap_free(m);
}

static void test_pinned_after_exit(void **state)
{
	(void)state;
	char p[512], gone[512], dir[512];
	mkfake(4246, 5);
	edge_perfmap *m = edge_perfmap_new(g_root, 4246);
	assert_int_equal(edge_perfmap_pin(m), 0); /* at the capture: no map yet */
	map_path(p, sizeof(p), 4246, 5);
	write_file(p, "w", "1000 10 early\n");
	/* the process exits before any read: its /proc entry goes */
	snprintf(dir, sizeof(dir), "%s/4246", g_root);
	snprintf(gone, sizeof(gone), "%s/gone-4246", g_root);
	assert_int_equal(rename(dir, gone), 0);
	assert_string_equal(edge_perfmap_lookup(m, 0x1000, 1), "early");
	assert_int_equal(rename(gone, dir), 0);
	/* the pin released while it runs: the open map is kept, and what the
	 * runtime appends before it exits is read after */
	edge_perfmap_unpin(m);
	write_file(p, "a", "2000 10 later\n");
	assert_int_equal(rename(dir, gone), 0);
	assert_string_equal(edge_perfmap_lookup(m, 0x2000, 2), "later");
	assert_string_equal(edge_perfmap_lookup(m, 0x1000, 2), "early");
	assert_int_equal(rename(gone, dir), 0);
	/* the sampler stopped: descriptors closed, entries kept, read by path */
	assert_int_equal(edge_perfmap_pin(m), 0);
	edge_perfmap_close(m);
	assert_false(edge_perfmap_pinned(m));
	assert_string_equal(edge_perfmap_lookup(m, 0x2000, 3), "later");
	edge_perfmap_free(m);
	/* no /proc entry at the pin: nothing pinned, no names */
	m = edge_perfmap_new(g_root, 999998);
	assert_int_not_equal(edge_perfmap_pin(m), 0);
	assert_null(edge_perfmap_lookup(m, 0x1000, 1));
	edge_perfmap_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_and_namespace),
		cmocka_unit_test(test_append_and_recompile),
		cmocka_unit_test(test_absent_then_present),
		cmocka_unit_test(test_rewritten_in_place),
		cmocka_unit_test(test_pinned_after_exit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
