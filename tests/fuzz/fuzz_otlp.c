/*
 * fuzz_otlp.c — libFuzzer target: arbitrary bytes through wt_otlp_decode()
 * (layout detection, wire walk, protobuf-c unpack, normalisation, index
 * resolution, per-service grouping) and the merged wt_format_decode path,
 * with small limits. Run by tests/fuzz/run (make fuzz); seeds in
 * tests/fuzz/seed/fuzz_otlp/ (small OTLP captures of the corpus).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "format.h"
#include "fuzz_limits.h"
#include "otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_decode_opts o;
	wt_otlp_result r;
	wt_profile *p = NULL;
	wt_err e;

	wt_decode_opts_default(&o);
	fuzz_limits(&o.lim);
	if (wt_otlp_decode(data, size, &o.lim, &r, &e) == 0)
		wt_otlp_result_free(&r);
	if (wt_format_decode(data, size, WT_FMT_OTLP, &o, &p, NULL, &e) == 0)
		wt_profile_free(p);
	return 0;
}
