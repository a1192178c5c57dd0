/*
 * fuzz_cpuprofile.c — libFuzzer target for the V8 .cpuprofile decoder: any
 * input (JSON or not) must decode or fail with an error message, never
 * crash, leak or overflow; small limits reach the limit paths. A decoded
 * profile's "samples" total equals its number of sample records' counts,
 * so it must be >= 0, and cpu must be >= 0 (negative deltas count 0).
 */
#include <stdint.h>
#include <stdlib.h>

#include "cpuprofile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_limits lim;
	wt_profile *p = NULL;
	wt_err err;
	size_t t;

	wt_limits_default(&lim);
	lim.max_stack_depth = 64;
	lim.max_samples = 2000;
	lim.max_strings = 5000;
	lim.max_string_len = 256;
	lim.max_body = 1 << 20;
	if (wt_cpuprofile_decode(data, size, &lim, size & 1 ? 1700000000000000000LL : 0, &p, &err) == 0) {
		for (t = 0; t < p->ntypes; t++)
			if (wt_profile_total(p, t) < 0)
				abort();
	} else if (!err.msg[0]) {
		abort();
	}
	wt_profile_free(p);
	return 0;
}
