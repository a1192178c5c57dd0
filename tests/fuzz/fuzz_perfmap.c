/*
 * fuzz_perfmap.c — libFuzzer target: JIT perf maps as the eBPF sampler
 * reads them (edge/perfmap.c). The input is written as
 * ROOT/1/root/tmp/perf-1.map of a fake /proc root under /dev/shm (or
 * TMPDIR), read through edge_perfmap_lookup, then looked up at addresses
 * taken from the input; a second generation appends the input again, so
 * the append path (and its half-line carry-over) runs too. Any input must
 * parse without crash, leak or over-read, and a name found must lie in the
 * names read.
 * Seeds: tests/fuzz/seed/fuzz_perfmap/ (perf maps Node.js wrote).
 * Links with: edge/perfmap.c (tests/fuzz/run reads this line)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edge/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_root[256], g_map[320];

/* the fake root goes when the fuzzer exits */
static void cleanup(void)
{
	char p[300];

	unlink(g_map);
	snprintf(p, sizeof(p), "%s/1/root/tmp", g_root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/1/root", g_root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/1", g_root);
	rmdir(p);
	rmdir(g_root);
}

static int setup(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	char p[300];

	snprintf(g_root, sizeof(g_root), "%s/wt-fuzz-perfmap-%d", base, (int)getpid());
	mkdir(g_root, 0700);
	snprintf(p, sizeof(p), "%s/1", g_root);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/1/root", g_root);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/1/root/tmp", g_root);
	mkdir(p, 0700);
	snprintf(g_map, sizeof(g_map), "%s/1/root/tmp/perf-1.map", g_root);
	return atexit(cleanup);
}

static void put(const uint8_t *data, size_t size, const char *mode)
{
	FILE *f = fopen(g_map, mode);
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	edge_perfmap *m;

	if (!ready)
		ready = setup() == 0;
	put(data, size, "w");
	m = edge_perfmap_new(g_root, 1);
	if (!m)
		return 0;
	for (int gen = 1; gen <= 2; gen++) {
		/* addresses from the input: every 8 bytes as one, and a few fixed */
		uint64_t probe[8] = {0, 1, 0x1000, 0x7f0000000000ull, UINT64_MAX, 0, 0, 0};
		for (size_t i = 0; i + 8 <= size && i < 24; i += 8)
			memcpy(&probe[5 + i / 8], data + i, 8);
		for (size_t k = 0; k < 8; k++) {
			const char *name = edge_perfmap_lookup(m, probe[k], (uint64_t)gen);
			if (name && strlen(name) > size)
				abort(); /* a name is a piece of a line of the input */
		}
		if (gen == 1)
			put(data, size, "a");
	}
	edge_perfmap_free(m);
	return 0;
}
