/*
 * test_ebpf_python.c — the user side of CPython frames (edge/ebpf_python.c):
 *   - line numbers from a CPython 3.11 location table (co_linetable of
 *     tests/unit/edge/test_ebpf_python.c's sample function below, as
 *     python3.11 compiled it), checked at every code unit against
 *     code.co_lines() of the same function (no location → 0);
 *   - module names from code object files (site-packages, the standard
 *     library, frozen modules, scripts, packages);
 *   - against a live /usr/bin/python3 (Debian 12's, a static build): the
 *     process is detected as CPython 3.11 from its ELF, and the code object of a known
 *     function, given by address like the BPF program records it, reads
 *     back as "lt.work.inner (lt.py:6)" for an instruction of line 6 (the
 *     index the child found with co_lines()), and with the function's
 *     first line when the index is unknown; forgetting the process empties
 *     the cache.
 * The live part needs /usr/bin/python3 3.11: with another version it fails
 * and says so.
 *
 * def sample(n):               # line 1
 *     total = 0
 *     for i in range(n):
 *         if i % 3 == 0:
 *             total += i
 *
 *         else:
 *             total -= 1
 *     try:
 *         x = [j * 2 for j in range(n)]
 *     except ValueError:
 *         x = None
 *     return total, x
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/types.h>

#include "bpf/profile.h"
#include "bpf/python.h"
#include "edge/ebpf_python.h"

static const uint8_t sample_table[] = {128, 0, 216, 12, 13, 128, 69, 221, 13, 18, 144, 49, 137, 88, 140, 88, 240, 0, 5, 5, 23, 240, 0, 5, 5, 23, 136, 1, 216, 11, 12, 136, 113, 137, 53, 144, 65, 138, 58, 136, 58, 216, 12, 17, 144, 81, 137, 74, 136, 69, 136, 69, 240, 6, 0, 13, 18, 144, 81, 137, 74, 136, 69, 136, 69, 240, 2, 3, 5, 17, 216, 12, 37, 208, 12, 37, 157, 69, 160, 33, 153, 72, 156, 72, 208, 12, 37, 209, 12, 37, 212, 12, 37, 136, 1, 136, 1, 248, 221, 11, 21, 240, 0, 1, 5, 17, 240, 0, 1, 5, 17, 240, 0, 1, 5, 17, 216, 12, 16, 136, 1, 136, 1, 136, 1, 240, 3, 1, 5, 17, 248, 248, 248, 224, 11, 16, 144, 33, 136, 56, 128, 79};

/* [start, end) code units → line (0: none), from code.co_lines() */
static const struct {
	uint32_t start, end;
	int64_t line;
} sample_lines[] = {
	{0, 1, 1},
	{1, 2, 2},
	{2, 3, 2},
	{3, 9, 3},
	{9, 10, 3},
	{10, 12, 3},
	{12, 17, 3},
	{17, 18, 3},
	{18, 19, 3},
	{19, 20, 3},
	{20, 21, 4},
	{21, 22, 4},
	{22, 24, 4},
	{24, 25, 4},
	{25, 28, 4},
	{28, 29, 4},
	{29, 30, 5},
	{30, 31, 5},
	{31, 33, 5},
	{33, 34, 5},
	{34, 35, 5},
	{35, 36, 8},
	{36, 37, 8},
	{37, 39, 8},
	{39, 40, 8},
	{40, 41, 8},
	{41, 42, 9},
	{42, 43, 10},
	{43, 44, 10},
	{44, 50, 10},
	{50, 51, 10},
	{51, 53, 10},
	{53, 58, 10},
	{58, 59, 10},
	{59, 61, 10},
	{61, 66, 10},
	{66, 67, 10},
	{67, 68, 10},
	{68, 69, 0},
	{69, 75, 11},
	{75, 76, 11},
	{76, 77, 11},
	{77, 78, 11},
	{78, 79, 12},
	{79, 80, 12},
	{80, 81, 12},
	{81, 82, 12},
	{82, 83, 11},
	{83, 84, 0},
	{84, 85, 0},
	{85, 86, 0},
	{86, 87, 13},
	{87, 88, 13},
	{88, 89, 13},
	{89, 90, 13},
};

static void test_addr2line(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(sample_lines) / sizeof(sample_lines[0]); i++)
		for (uint32_t u = sample_lines[i].start; u < sample_lines[i].end; u++) {
			int64_t got = edge_py_addr2line(sample_table, sizeof(sample_table), 1, u);
			if (got != sample_lines[i].line)
				fail_msg("code unit %u: line %lld, want %lld", u, (long long)got,
					 (long long)sample_lines[i].line);
		}
	/* past the end, and an empty table */
	assert_int_equal(edge_py_addr2line(sample_table, sizeof(sample_table), 1, 10000), 0);
	assert_int_equal(edge_py_addr2line(NULL, 0, 1, 0), 0);
	/* a truncated long-form entry does not read past the end */
	static const uint8_t cut[] = {0xf0, 0x40};
	assert_true(edge_py_addr2line(cut, sizeof(cut), 5, 0) >= 0);
}

static void test_module(void **state)
{
	(void)state;
	static const struct {
		const char *file, *want;
	} cases[] = {
		{"/usr/lib/python3/dist-packages/requests/sessions.py", "requests.sessions"},
		{"/srv/venv/lib/python3.11/site-packages/flask/__init__.py", "flask"},
		{"/usr/lib/python3.11/json/decoder.py", "json.decoder"},
		{"/usr/lib/python3.11/zlib_helper.py", "zlib_helper"},
		{"<frozen importlib._bootstrap>", "importlib._bootstrap"},
		{"/home/u/app/pywork.py", "pywork"},
		{"pywork.py", "pywork"},
		{"<string>", "<string>"},
	};
	char buf[256];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		edge_py_module(cases[i].file, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].want);
	}
}

/* A python3 child that prints its code objects' addresses, then waits.
 * Also two objects that are not code objects but have a code object's
 * fields where 3.11 keeps them (the data of two bytes objects): one whose
 * type is dict and whose names are real str objects (what a frame's code
 * pointer finds when the code object was freed and its memory reused),
 * one whose type is the code type and whose names point to a fake str (a
 * str's fields, type bytes). The reader must refuse both. */
static const char *const child_src =
	"import struct, sys, time\n"
	"class work:\n"
	"    @staticmethod\n"
	"    def inner(n):\n"
	"        x = n + 1\n"
	"        return x * 2\n"
	"def other():\n"
	"    pass\n"
	"c = work.inner.__code__\n"
	"six = min(s // 2 for s, e, l in c.co_lines() if l == 6)\n"
	"def fake(typ, name, file):\n"
	"    b = bytearray(144)\n"
	"    struct.pack_into('<QQ', b, 0, 1, typ)\n"
	"    struct.pack_into('<i', b, 72, 1)\n"
	"    struct.pack_into('<QQQ', b, 112, file, name, name)\n"
	"    return bytes(b)\n"
	"qual, fname = 'fakename', '/x/fake.py'\n"
	"fs = struct.pack('<QQqqIIQ', 1, id(bytes), 7, -1, 4 | 32 | 64, 0, 0) + b'fakestr\\0'\n"
	"f1 = fake(id(dict), id(qual), id(fname))\n"
	"f2 = fake(id(type(c)), id(fs) + 32, id(fs) + 32)\n"
	"print(id(c), six, id(f1) + 32, id(f2) + 32, flush=True)\n"
	"time.sleep(30)\n";

static void test_live(void **state)
{
	(void)state;
	char dir[] = "/tmp/wt-test-py-XXXXXX", path[300];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lt.py", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(child_src, f);
	fclose(f);
	int in[2], out[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("/usr/bin/python3", "python3", path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	FILE *rf = fdopen(out[0], "r");
	unsigned long long inner = 0, six = 0, fake1 = 0, fake2 = 0;
	int got = fscanf(rf, "%llu %llu %llu %llu", &inner, &six, &fake1, &fake2);
	edge_py *py = edge_py_new(16);
	assert_non_null(py);
	/* its interpreter's executable mapping, as the process table has it */
	char maps[64], ml[1024], file[512] = "";
	unsigned long long start = 0, pgoff = 0;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	FILE *mf = fopen(maps, "r");
	while (mf && fgets(ml, sizeof(ml), mf)) {
		unsigned long long s, e, off;
		char perm[8];
		int pos = 0;
		if (sscanf(ml, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perm, &off, &pos) >= 4 && pos &&
		    perm[2] == 'x') {
			ml[strcspn(ml, "\n")] = 0;
			if (edge_py_candidate(ml + pos) && !*file) {
				snprintf(file, sizeof(file), "%s", ml + pos);
				start = s;
				pgoff = off;
			}
		}
	}
	if (mf)
		fclose(mf);
	int det = got == 4 && *file ? edge_py_detect(py, "/proc", (uint32_t)pid, file, start, pgoff, -1) : -1;
	char name[512] = "";
	int64_t line = 0;
	/* the first instruction of "return x * 2" (line 6), as the child
	 * found it with co_lines() */
	int rc0 = edge_py_frame(py, (uint32_t)pid, inner | (six << WT_PY_INSTR_SHIFT), name, sizeof(name), file,
				sizeof(file), &line);
	char name0[512];
	snprintf(name0, sizeof(name0), "%s", name);
	int64_t line0 = line;
	int rcn = edge_py_frame(py, (uint32_t)pid, inner | (WT_PY_NO_INSTR << WT_PY_INSTR_SHIFT), name, sizeof(name),
				file, sizeof(file), &line);
	int64_t line_none = line;
	char fname1[512] = "", fname2[512] = "", ffile[512];
	int rcf1 = edge_py_frame(py, (uint32_t)pid, fake1, fname1, sizeof(fname1), ffile, sizeof(ffile), &line);
	int rcf2 = edge_py_frame(py, (uint32_t)pid, fake2, fname2, sizeof(fname2), ffile, sizeof(ffile), &line);
	edge_py_stats st;
	edge_py_get_stats(py, &st);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(rf);
	close(in[1]);
	unlink(path);
	rmdir(dir);

	assert_int_equal(got, 4);
	if (det != 1)
		fail_msg("python3 not detected as a CPython with an offsets row (is it 3.11?)");
	assert_int_equal(rc0, 0);
	assert_string_equal(name0, "lt.work.inner (lt.py:6)");
	assert_int_equal(line0, 6);
	assert_int_equal(rcn, 0);
	assert_int_equal(line_none, 3); /* no instruction: co_firstlineno (the decorator's line) */
	assert_true(strstr(file, "/lt.py") != NULL);
	assert_int_equal(st.procs, 1);
	if (rcf1 == 0)
		fail_msg("an object of another type read as a code object: %s", fname1);
	if (rcf2 == 0)
		fail_msg("an object of another type read as a str: %s", fname2);
	edge_py_forget(py, (uint32_t)pid);
	edge_py_get_stats(py, &st);
	assert_int_equal(st.codes, 0);
	edge_py_free(py);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr2line),
		cmocka_unit_test(test_module),
		cmocka_unit_test(test_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
