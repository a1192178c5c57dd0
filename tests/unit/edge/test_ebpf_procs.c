/*
 * test_ebpf_procs.c — the eBPF sampler's process table and ELF cache
 * (edge/ebpf_procs.c, edge/symbolize.c), against this very test process:
 *   - a file /proc/self/maps lists is found in the ELF cache by the device
 *     and inode of that line (which stat(2) of the file confirms), without
 *     opening the path again;
 *   - process images: a second image of the same tgid (an exec) is a new
 *     capture and supersedes the first; a sweep drops the superseded image
 *     without reporting the process gone, and reports a dead pid gone;
 *     image 0 (samples in a process's exit, after exit_mm) supersedes
 *     nothing; a superseded image still names JIT code from the pid's
 *     perf map; of two images the one first sampled later is current,
 *     whatever the order of their captures (a pre-exec image captured
 *     late supersedes nothing);
 *   - a cgroup id seen once is not read from /proc again;
 *   - the captured mappings (PROCMAP_QUERY where the kernel has it, and
 *     the text path of kernels before 6.11, forced) equal the executable
 *     lines of /proc/self/maps read as text, each file found as ELF;
 *   - a capture that came too early (no executable mapping yet, only
 *     the dynamic loader besides it, or the loader without libc yet) is
 *     read again five times, a complete one never (a fake /proc root);
 *   - a new file is parsed at its first lookup, not when opened; a file
 *     that is not ELF has no symbols;
 *   - edge_maps_read, the one reader of /proc/PID/maps text: executable
 *     mappings of files (a deleted one, a path with spaces, a last line
 *     without newline) and [vdso] reach the callback with their fields;
 *     data, anonymous code and [vsyscall] do not; nonzero stops it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "edge/ebpf_procs.h"
#include "edge/symbolize.h"

/* device and inode of our executable as /proc/self/maps shows them */
static int self_maps_identity(uint64_t *dev, uint64_t *ino, char *path, size_t cap)
{
	char exe[4096], line[8192];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;
	if (n <= 0 || !f)
		return -1;
	exe[n] = '\0';
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long i;
		int pos = 0;
		if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu %n", &maj, &min, &i, &pos) == 3 &&
		    !strncmp(line + pos, exe, strlen(exe))) {
			*dev = ((uint64_t)maj << 32) | min;
			*ino = i;
			snprintf(path, cap, "%s", exe);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

static void elf_cache_by_maps_identity(void **state)
{
	uint64_t dev = 0, ino = 0;
	char path[4096];
	struct stat st;
	(void)state;
	assert_int_equal(self_maps_identity(&dev, &ino, path, sizeof(path)), 0);
	/* the identity the maps line gives is the file's (independent check) */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal((uint64_t)st.st_ino, ino);
	assert_int_equal(major(st.st_dev), dev >> 32);
	assert_int_equal(minor(st.st_dev), dev & 0xffffffffu);

	edge_elf_cache *c = edge_elf_cache_new(4);
	edge_elf *a = edge_elf_get_mapped(c, dev, ino, path);
	assert_non_null(a);
	assert_true(edge_elf_nsyms(a) > 0);
	/* same identity: served from the cache, the path is not opened */
	edge_elf *b = edge_elf_get_mapped(c, dev, ino, "/nonexistent/binary");
	assert_ptr_equal(a, b);
	/* another identity is opened by path: missing file, no entry */
	assert_null(edge_elf_get_mapped(c, dev, ino + 1, "/nonexistent/binary"));
	/* the same file reached by path alone is the same entry */
	edge_elf *d = edge_elf_get(c, path);
	assert_ptr_equal(a, d);
	edge_elf_unref(c, a);
	edge_elf_unref(c, b);
	edge_elf_unref(c, d);
	edge_elf_cache_free(c);
}

/* The mappings captured for this process equal the executable
 * file-backed lines of /proc/self/maps read as text here (the edge asks
 * the kernel with PROCMAP_QUERY where it can). */
static void check_maps(int text)
{
	edge_elf_cache *c = edge_elf_cache_new(16);
	edge_procs *t = edge_procs_new("/proc", c, NULL, 0);
	if (text)
		edge_procs_set_text_maps(t, 1);
	edge_proc *p = edge_procs_get(t, (uint32_t)getpid(), 0x1000, 0, NULL, 0);
	char line[8192];
	size_t n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(p);
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &a, &b, perms, &off, &pos) < 4 || !strchr(perms, 'x'))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (line[pos] != '/' && strcmp(line + pos, "[vdso]") != 0)
			continue;
		const edge_proc_map *m = edge_proc_find_map(p, a);
		assert_non_null(m);
		assert_int_equal(m->start, a);
		assert_int_equal(m->end, b);
		assert_int_equal(m->pgoff, off);
		assert_string_equal(m->path, line + pos);
		n++;
	}
	fclose(f);
	assert_true(n > 0);
	assert_int_equal(p->nmaps, n);
	/* every file-backed mapping found its ELF file (this test binary,
	 * libc, ...): the identity either path reports matches the cache */
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].path[0] == '/')
			assert_non_null(p->maps[i].elf);
	edge_procs_free(t);
	edge_elf_cache_free(c);
}

static void maps_match_the_text(void **state)
{
	(void)state;
	check_maps(0);
}

/* The path of kernels before 6.11 (no PROCMAP_QUERY), forced here: the
 * same mappings from parsing the text. */
static void maps_match_the_text_text_path(void **state)
{
	(void)state;
	check_maps(1);
}

static uint32_t gone_tgid;
static int gone_calls;

static void on_gone(void *arg, uint32_t tgid)
{
	(void)arg;
	gone_tgid = tgid;
	gone_calls++;
}

static void images_per_exec(void **state)
{
	(void)state;
	edge_elf_cache *c = edge_elf_cache_new(16);
	edge_procs *t = edge_procs_new("/proc", c, NULL, 0);
	uint32_t me = (uint32_t)getpid();
	uint64_t captured, lost, tracked, rereads;

	edge_proc *p1 = edge_procs_get(t, me, 0x1000, 0, NULL, 0);
	assert_non_null(p1);
	assert_int_equal(p1->state, EDGE_PROC_LIVE);
	assert_true(p1->nmaps > 0);
	assert_false(p1->superseded);
	assert_ptr_equal(edge_procs_get(t, me, 0x1000, 0, NULL, 0), p1); /* known image: no capture */
	edge_proc *p2 = edge_procs_get(t, me, 0x2000, 0, NULL, 0);        /* exec: a new image */
	assert_non_null(p2);
	assert_ptr_not_equal(p1, p2);
	assert_true(p1->superseded);
	assert_false(p2->superseded);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(captured, 2);
	assert_int_equal(tracked, 2);

	/* a child that has exited and been reaped: its pid is gone */
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	assert_true(child > 0);
	waitpid(child, NULL, 0);
	edge_proc *dead = edge_procs_get(t, (uint32_t)child, 0x3000, 0, "kid", 0);
	assert_non_null(dead);
	assert_int_equal(dead->state, EDGE_PROC_LOST);
	assert_string_equal(dead->service, "kid");
	/* the same with the leader's sampled name (no /proc/PID/comm read):
	 * still found gone, by its executable link */
	edge_proc *dead2 = edge_procs_get(t, (uint32_t)child, 0x4000, 0, "kid2", 1);
	assert_non_null(dead2);
	assert_int_equal(dead2->state, EDGE_PROC_LOST);
	assert_string_equal(dead2->service, "kid2");
	/* a live process named by its sample keeps that name */
	edge_proc *named = edge_procs_get(t, me, 0x5000, 0, "sampled-name", 1);
	assert_non_null(named);
	assert_int_equal(named->state, EDGE_PROC_LIVE);
	assert_string_equal(named->comm, "sampled-name");
	assert_true(named->nmaps > 0);

	/* generation 1: named had samples in it, p1, p2 (superseded by
	 * named) and the dead ones did not */
	named->gen = 1;
	edge_procs_sweep(t, 1, on_gone, NULL);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(tracked, 1); /* named only */
	assert_int_equal(gone_calls, 1); /* the child's first image was superseded by its second */
	assert_int_equal(gone_tgid, (uint32_t)child);
	assert_ptr_equal(edge_procs_get(t, me, 0x5000, 0, NULL, 0), named);
	/* samples taken in a process's exit after it left its address space
	 * carry image 0: no exec, its image stays the one that owns its
	 * perf map (once marked superseded, its JIT frames went unnamed) */
	assert_non_null(edge_procs_get(t, me, 0, 0, "sampled-name", 1));
	assert_false(named->superseded);

	edge_procs_free(t);
	edge_elf_cache_free(c);
}

/* Which image of a tgid is current follows the time of its first sample,
 * not the order of captures: under load the discovery thread (or a flush)
 * can capture the image from before an exec after the one from after it,
 * and marked the running image superseded (no map refresh, no tables
 * given again, no CPython registration, dropped at the next sweep). */
static void images_by_sample_time(void **state)
{
	(void)state;
	edge_elf_cache *c = edge_elf_cache_new(16);
	edge_procs *t = edge_procs_new("/proc", c, NULL, 0);
	uint32_t me = (uint32_t)getpid();
	uint64_t captured, lost, tracked, rereads;

	edge_proc *now = edge_procs_get_at(t, me, 0x2000, 0, NULL, 0, 2000); /* after the exec */
	edge_proc *before = edge_procs_get_at(t, me, 0x1000, 0, NULL, 0, 1000); /* before it, captured late */
	assert_non_null(now);
	assert_non_null(before);
	assert_false(now->superseded);
	assert_true(before->superseded);
	/* the sweep drops the stale image, keeps the current one */
	now->gen = 1;
	gone_calls = 0;
	edge_procs_sweep(t, 1, on_gone, NULL);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(tracked, 1);
	assert_int_equal(gone_calls, 0);
	assert_ptr_equal(edge_procs_get_at(t, me, 0x2000, 0, NULL, 0, 5000), now);
	/* image 0 (a process's exit) supersedes nothing */
	assert_non_null(edge_procs_get_at(t, me, 0, 0, NULL, 0, 6000));
	assert_false(now->superseded);
	/* a later exec does */
	edge_proc *next = edge_procs_get_at(t, me, 0x3000, 0, NULL, 0, 7000);
	assert_non_null(next);
	assert_true(now->superseded);
	assert_false(next->superseded);
	edge_procs_free(t);
	edge_elf_cache_free(c);
}

/* cgroup v2 path of this process, "" when there is none */
static void self_cgroup(char *out, size_t cap)
{
	char buf[4096];
	FILE *f = fopen("/proc/self/cgroup", "r");
	out[0] = '\0';
	while (f && fgets(buf, sizeof(buf), f)) {
		if (!strncmp(buf, "0::", 3)) {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(out, cap, "%s", buf + 3);
		}
	}
	if (f)
		fclose(f);
}

static void cgroup_read_once_per_id(void **state)
{
	char want[4096];
	(void)state;
	self_cgroup(want, sizeof(want));
	if (!want[0])
		skip(); /* no cgroup v2 here */
	edge_elf_cache *c = edge_elf_cache_new(16);
	edge_procs *t = edge_procs_new("/proc", c, NULL, 0);
	edge_proc *p = edge_procs_get(t, (uint32_t)getpid(), 0x1000, 0xfeed, NULL, 0);
	assert_non_null(p);
	assert_string_equal(p->cgroup, want);
	/* the parent, said to be in cgroup 0xfeed too, gets the cached path
	 * (it is not read from /proc/PPID/cgroup) */
	edge_proc *q = edge_procs_get(t, (uint32_t)getppid(), 0x2000, 0xfeed, NULL, 0);
	assert_non_null(q);
	assert_string_equal(q->cgroup, want);
	edge_procs_free(t);
	edge_elf_cache_free(c);
}

/* A file new to the cache is opened but not parsed until its first
 * lookup (the capture thread must not spend a large binary's parse); a
 * file that is not ELF gets an entry without symbols or build id. */
static void elf_parse_deferred(void **state)
{
	(void)state;
	edge_elf_cache *c = edge_elf_cache_new(16);
	char tmpl[] = "/tmp/wt-notelf-XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an elf file\n", 16), 16);
	close(fd);

	edge_elf *e = edge_elf_get(c, "/proc/self/exe");
	assert_non_null(e);
	assert_false(edge_elf_parsed(e));
	assert_true(edge_elf_nsyms(e) > 0); /* parses */
	assert_true(edge_elf_parsed(e));
	assert_int_equal(strlen(edge_elf_build_id(e)), 40);
	assert_ptr_equal(edge_elf_get(c, "/proc/self/exe"), e); /* cached */
	edge_elf_unref(c, e);
	edge_elf_unref(c, e);

	edge_elf *x = edge_elf_get(c, tmpl);
	assert_non_null(x);
	assert_null(edge_elf_lookup(x, 0));
	assert_int_equal(edge_elf_nsyms(x), 0);
	assert_string_equal(edge_elf_build_id(x), "");
	edge_elf_unref(c, x);
	unlink(tmpl);
	edge_elf_cache_free(c);
}

/* ---- edge_maps_read, on a text written here -------------------------------- */

typedef struct got_maps {
	size_t n, stop_at;
	edge_maps_line m[8];
	char names[8][128];
} got_maps;

static int got_map(void *arg, const edge_maps_line *m)
{
	got_maps *g = arg;
	assert_true(g->n < 8);
	g->m[g->n] = *m;
	snprintf(g->names[g->n], sizeof(g->names[0]), "%s", m->name);
	return ++g->n == g->stop_at;
}

static int maps_text_fd(const char *text)
{
	char path[] = "/tmp/wt_maps_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void maps_text_lines(void **state)
{
	(void)state;
	static const char text[] =
		"555500000000-555500001000 r--p 00000000 08:01 1234 /usr/bin/true\n"
		"555500001000-555500002000 r-xp 00001000 08:01 1234 /usr/bin/true\n"
		"555500003000-555500004000 rw-p 00003000 08:01 1234 /usr/bin/true\n"
		"7f0000000000-7f0000100000 rwxp 00000000 00:00 0 \n"
		"7f1000028000-7f100017d000 r-xp 00028000 103:02 77 /opt/my app/lib x.so (deleted)\n"
		"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
		"7ffc000f0000-7ffc000f2000 r-xp 00000000 00:00 0                          [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
		"7f2000010000-7f2000090000 r-xp 00010000 fd:00 99 /lib/libm.so.6";
	got_maps g = {0};
	edge_maps_read(maps_text_fd(text), got_map, &g);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.names[0], "/usr/bin/true");
	assert_true(g.m[0].start == 0x555500001000ull && g.m[0].end == 0x555500002000ull);
	assert_true(g.m[0].pgoff == 0x1000 && g.m[0].dev == ((8ull << 32) | 1) && g.m[0].ino == 1234);
	assert_string_equal(g.names[1], "/opt/my app/lib x.so (deleted)");
	assert_true(g.m[1].dev == ((0x103ull << 32) | 2) && g.m[1].ino == 77 && g.m[1].pgoff == 0x28000);
	assert_string_equal(g.names[2], "[vdso]");
	assert_true(g.m[2].start == 0x7ffc000f0000ull && g.m[2].end == 0x7ffc000f2000ull);
	assert_string_equal(g.names[3], "/lib/libm.so.6");
	assert_true(g.m[3].dev == ((0xfdull << 32) | 0) && g.m[3].ino == 99);

	/* the callback's nonzero ends the read */
	got_maps h = {.stop_at = 2};
	edge_maps_read(maps_text_fd(text), got_map, &h);
	assert_int_equal(h.n, 2);
}

/* ---- early captures, against a fake /proc ---------------------------------- */

static char fake_root[64];

static void fake_write(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/4242/%s", fake_root, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

#define LD_LINE "7f0000001000-7f0000020000 r-xp 00001000 00:00 0 /lib64/ld-linux-x86-64.so.2\n"
#define EXE_LINE "555500001000-555500002000 r-xp 00001000 00:00 0 /usr/bin/true\n"
#define LIBC_LINE "7f1000028000-7f100017d000 r-xp 00028000 00:00 0 /lib/x86_64-linux-gnu/libc.so.6\n"
#define LIBM_LINE "7f2000010000-7f2000090000 r-xp 00010000 00:00 0 /lib/x86_64-linux-gnu/libm.so.6\n"
#define LIBZ_LINE "7f3000002000-7f3000014000 r-xp 00002000 00:00 0 /lib/x86_64-linux-gnu/libz.so.1.2.13\n"

/* A capture that came while the dynamic loader was still mapping the
 * libraries (only ld.so besides the executable), or inside execve (no
 * executable mapping yet), is read again five times (1, 3, 8, 20, 50 ms later)
 * while it still looks so, and keeps what it found; a complete one is not
 * read again. (A regular file answers the PROCMAP_QUERY ioctl with ENOTTY:
 * the table reads the text.) */
static void early_capture_read_again(void **state)
{
	char path[256];
	uint64_t captured, lost, tracked, rereads;
	(void)state;
	snprintf(fake_root, sizeof(fake_root), "/tmp/wt-fakeproc-XXXXXX");
	assert_non_null(mkdtemp(fake_root));
	snprintf(path, sizeof(path), "%s/4242", fake_root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/4242/root", fake_root);
	assert_int_equal(symlink("/", path), 0);
	snprintf(path, sizeof(path), "%s/4242/exe", fake_root);
	assert_int_equal(symlink("/usr/bin/true", path), 0);
	fake_write("comm", "true\n");
	fake_write("cgroup", "0::/test\n");

	edge_elf_cache *c = edge_elf_cache_new(16);
	edge_procs *t = edge_procs_new(fake_root, c, NULL, 0);
	/* complete: read once */
	fake_write("maps", EXE_LINE LD_LINE LIBC_LINE);
	edge_proc *p = edge_procs_get(t, 4242, 0x1000, 0, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->state, EDGE_PROC_LIVE);
	assert_int_equal(p->nmaps, 3);
	assert_non_null(edge_proc_find_map(p, 0x7f1000030000));
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(rereads, 0);
	/* the loader alone besides the executable: five re-reads */
	fake_write("maps", EXE_LINE LD_LINE);
	p = edge_procs_get(t, 4242, 0x2000, 0, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->nmaps, 2);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(rereads, 5);
	/* inside execve: no executable mapping */
	fake_write("maps", "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n" LD_LINE);
	p = edge_procs_get(t, 4242, 0x3000, 0, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->nmaps, 1);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(rereads, 10);
	/* the loader has mapped some libraries but not yet libc (python3
	 * needs libm, libz, libexpat, then libc: captured here, its samples
	 * in libc stayed bare addresses and its stacks stopped there) */
	fake_write("maps", EXE_LINE LD_LINE LIBM_LINE LIBZ_LINE);
	p = edge_procs_get(t, 4242, 0x4000, 0, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->nmaps, 4);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(rereads, 15);
	/* complete with libc: not read again */
	fake_write("maps", EXE_LINE LD_LINE LIBM_LINE LIBZ_LINE LIBC_LINE);
	p = edge_procs_get(t, 4242, 0x5000, 0, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->nmaps, 5);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(rereads, 15);
	/* inside execve after the executable was mapped, before its loader
	 * (its libraries' samples went unwound until the next flush): a
	 * dynamic executable (PT_INTERP) alone is read again */
	fake_write("maps", EXE_LINE);
	p = edge_procs_get(t, 4242, 0x6000, 0, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->interp, 1);
	assert_true(edge_proc_maps_early(p));
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(rereads, 20);
	/* a static executable (no PT_INTERP; a file that is no ELF here) alone:
	 * complete, not read again (the name is the mapping's, "true") */
	snprintf(path, sizeof(path), "%s/4242/exe", fake_root);
	assert_int_equal(unlink(path), 0);
	fake_write("true", "not an ELF file\n");
	char exe[300];
	snprintf(path, sizeof(path), "%s/4242/true", fake_root);
	snprintf(exe, sizeof(exe), "%s/4242/exe", fake_root);
	assert_int_equal(symlink(path, exe), 0);
	p = edge_procs_get(t, 4242, 0x7000, 0, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->interp, 0);
	edge_procs_stats(t, &captured, &lost, &tracked, &rereads);
	assert_int_equal(rereads, 20);

	edge_procs_free(t);
	edge_elf_cache_free(c);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fake_root);
	assert_int_equal(system(cmd), 0);
}

/* A superseded image still names its JIT code from the pid's perf map:
 * "superseded" follows the order of captures, and a stale image captured
 * late (a launcher's pre-exec image, under load) marked the running JVM's
 * image superseded (its frames were bare addresses before). */
static void superseded_image_keeps_jit_names(void **state)
{
	char root[64], path[256];
	(void)state;
	snprintf(root, sizeof(root), "/tmp/wt-fakeproc-XXXXXX");
	assert_non_null(mkdtemp(root));
	const char *dirs[] = {"4243", "4243/root", "4243/root/tmp"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		assert_int_equal(mkdir(path, 0700), 0);
	}
	snprintf(path, sizeof(path), "%s/4243/exe", root);
	assert_int_equal(symlink("/usr/bin/true", path), 0);
	const char *files[][2] = {{"4243/comm", "java\n"},
				  {"4243/maps", EXE_LINE LD_LINE LIBC_LINE},
				  {"4243/root/tmp/perf-4243.map", "0x7e0000001000 0x100 long A.hot(long)\n"}};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i][0]);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(files[i][1], f);
		fclose(f);
	}
	edge_elf_cache *c = edge_elf_cache_new(16);
	edge_procs *t = edge_procs_new(root, c, NULL, 0);
	edge_proc *running = edge_procs_get(t, 4243, 0x1000, 0, NULL, 0);
	assert_non_null(running);
	edge_proc *stale = edge_procs_get(t, 4243, 0x2000, 0, NULL, 0);
	assert_non_null(stale);
	assert_true(running->superseded);
	const char *name = edge_proc_jit_lookup(t, running, 0x7e0000001010, 1);
	assert_non_null(name);
	assert_string_equal(name, "long A.hot(long)");
	edge_procs_free(t);
	edge_elf_cache_free(c);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(elf_cache_by_maps_identity),
		cmocka_unit_test(maps_match_the_text),
		cmocka_unit_test(maps_match_the_text_text_path),
		cmocka_unit_test(maps_text_lines),
		cmocka_unit_test(early_capture_read_again),
		cmocka_unit_test(superseded_image_keeps_jit_names),
		cmocka_unit_test(images_by_sample_time),
		cmocka_unit_test(elf_parse_deferred),
		cmocka_unit_test(images_per_exec),
		cmocka_unit_test(cgroup_read_once_per_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
