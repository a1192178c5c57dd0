/*
 * fuzz_jfr.c — libFuzzer target: arbitrary bytes through the JFR path of
 * wt_format_decode() (gzip detection, chunk headers, metadata element
 * tree, constant-pool chain, lazy value decoding, event mapping) with small
 * limits. Run by tests/fuzz/run (make fuzz); seeds in tests/fuzz/seed/fuzz_jfr/
 * (small corpus recordings).
 */
#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "fuzz_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_decode_opts o;
	wt_profile *p = NULL;
	wt_err e;

	wt_decode_opts_default(&o);
	fuzz_limits(&o.lim);
	o.lim.max_types = 16;
	if (wt_format_decode(data, size, WT_FMT_JFR, &o, &p, NULL, &e) == 0)
		wt_profile_free(p);
	return 0;
}
