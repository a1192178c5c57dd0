// newwork.cc — C++ allocation workload of tests/integration/test_ebpf_alloc.py:
// operator new / delete (libstdc++'s, which call glibc's malloc and free).
// Built with -fno-allocation-dce (else GCC drops the new/delete pairs).
//
//   newwork run SECONDS GOFILE   spins until GOFILE exists, then for SECONDS
//       new_arrays (16 x new char[4096], delete[]) and new_objects
//       (16 x new Obj of 512 bytes, delete) run in turn; prints one JSON line
//       {pid, bytes{fn}}.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

struct Obj {
	char b[512];
};

static void *volatile keep;
static long long bytes_arrays, bytes_objects;

__attribute__((noinline)) static void new_arrays()
{
	for (int i = 0; i < 16; i++) {
		char *p = new char[4096];
		p[0] = 1;
		keep = p;
		delete[] p;
	}
	bytes_arrays += 16 * 4096;
}

__attribute__((noinline)) static void new_objects()
{
	for (int i = 0; i < 16; i++) {
		Obj *o = new Obj;
		o->b[0] = 1;
		keep = o;
		delete o;
	}
	bytes_objects += 16 * (long long)sizeof(Obj);
}

int main(int argc, char **argv)
{
	using clk = std::chrono::steady_clock;
	if (argc != 4 || strcmp(argv[1], "run")) {
		fprintf(stderr, "usage: newwork run SECONDS GOFILE\n");
		return 2;
	}
	auto give_up = clk::now() + std::chrono::seconds(60);
	volatile unsigned long spin = 0;
	while (access(argv[3], F_OK) != 0) {
		if (clk::now() > give_up)
			return 2;
		for (int i = 0; i < 100000; i++)
			spin += (unsigned long)i;
	}
	auto end = clk::now() + std::chrono::duration<double>(atof(argv[2]));
	while (clk::now() < end)
		for (int r = 0; r < 16; r++) {
			new_arrays();
			new_objects();
		}
	printf("{\"pid\": %d, \"bytes\": {\"new_arrays\": %lld, \"new_objects\": %lld}}\n", (int)getpid(), bytes_arrays,
	       bytes_objects);
	return 0;
}
