/*
 * fuzz_perf_script.c — libFuzzer target for the perf script decoder: any
 * input must decode or fail with an error (never crash, leak or overflow),
 * under small limits so that limit paths are reached. A decoded profile
 * must have one "total" type counting every record — each sample's values
 * include a 1 for it — and must encode as folded text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "perf_script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_limits lim;
	wt_profile *p = NULL;
	wt_buf out = WT_BUF_INIT;
	wt_err err;
	int64_t base = size && (data[0] & 1) ? 1700000000000000000LL : 0;

	wt_limits_default(&lim);
	lim.max_stack_depth = 64;
	lim.max_samples = 1000;
	lim.max_strings = 5000;
	lim.max_string_len = 256;
	lim.max_types = 6;
	lim.max_decompressed = 1 << 20;
	if (wt_perf_script_decode(data, size, &lim, base, &p, &err) == 0) {
		int t = wt_profile_find_type(p, "samples");

		if (t < 0)
			t = wt_profile_find_type(p, "cpu");
		if (t < 0 || wt_profile_total(p, (size_t)t) < (int64_t)(p->nsamples ? 1 : 0))
			abort();
		(void)wt_folded_encode(p, (size_t)t, &out, &err);
	} else if (!err.msg[0]) {
		abort(); /* every error carries a message */
	}
	wt_profile_free(p);
	wt_buf_free(&out);
	return 0;
}
