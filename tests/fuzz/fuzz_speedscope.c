/*
 * fuzz_speedscope.c — libFuzzer target for the speedscope JSON decoder: any
 * input must decode or fail with an error message, never crash, leak or
 * overflow; small limits reach the limit paths. Weights are non-negative
 * by contract, so every decoded total must be >= 0.
 */
#include <stdint.h>
#include <stdlib.h>

#include "speedscope.h"

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
	if (wt_speedscope_decode(data, size, &lim, 0, &p, &err) == 0) {
		for (t = 0; t < p->ntypes; t++)
			if (wt_profile_total(p, t) < 0)
				abort();
	} else if (!err.msg[0]) {
		abort();
	}
	wt_profile_free(p);
	return 0;
}
