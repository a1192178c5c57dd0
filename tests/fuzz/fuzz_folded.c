/*
 * fuzz_folded.c — libFuzzer target for the folded decoder: any input must
 * decode or fail with an error (never crash, leak or overflow), under small
 * limits so that limit paths are reached; a decoded profile must encode, and
 * the encoding must decode again with the same total.
 */
#include <stdint.h>
#include <stdlib.h>

#include "folded.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_limits lim;
	wt_folded_opts opts = {&lim, NULL, NULL, 0, 0};
	wt_profile *p = NULL, *q = NULL;
	wt_buf out = WT_BUF_INIT;
	wt_err err;

	wt_limits_default(&lim);
	lim.max_stack_depth = 64;
	lim.max_samples = 1000;
	lim.max_strings = 5000;
	lim.max_string_len = 256;
	lim.max_decompressed = 1 << 20;
	/* the first byte picks a sample-rate scaling path */
	if (size && (data[0] & 1)) {
		opts.unit = "nanoseconds";
		opts.sample_rate = 1 + data[0];
	}
	if (wt_folded_decode(data, size, &opts, &p, &err) == 0) {
		if (wt_folded_encode(p, 0, &out, &err) == 0) {
			wt_folded_opts o2 = {&lim, "cpu", "samples", 0, 0};

			/* frame names are re-read verbatim, so the total survives */
			lim.max_string_len = 1 << 16;
			lim.max_strings = 1 << 20;
			if (wt_folded_decode(out.data, out.len, &o2, &q, &err) == 0 &&
			    wt_profile_total(q, 0) != wt_profile_total(p, 0))
				abort();
		}
	}
	wt_profile_free(p);
	wt_profile_free(q);
	wt_buf_free(&out);
	return 0;
}
