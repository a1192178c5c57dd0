/*
 * fuzz_pprof.c — libFuzzer target: arbitrary bytes through the pprof path
 * of wt_format_decode() (gzip detection, wire walk, the direct wire reader,
 * id/index resolution) with small limits, plus an encode of whatever
 * decodes. Run by tests/fuzz/run (make fuzz).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "format.h"
#include "fuzz_limits.h"
#include "pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_decode_opts o;
	wt_profile *p = NULL;
	wt_err e;

	wt_decode_opts_default(&o);
	fuzz_limits(&o.lim);
	if (wt_format_decode(data, size, WT_FMT_PPROF, &o, &p, NULL, &e) == 0) {
		uint8_t *out = NULL;
		size_t n = 0;
		if (wt_pprof_encode(p, 0, &out, &n, &e) == 0)
			free(out);
		wt_profile_free(p);
	}
	return 0;
}
