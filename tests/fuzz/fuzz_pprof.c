/*
 * fuzz_pprof.c — libFuzzer target: arbitrary bytes through the pprof path
 * of wt_format_decode() (gzip detection, wire walk, protobuf-c unpack,
 * id/index resolution) with small limits, plus an encode of whatever
 * decodes. Run by tests/fuzz/run (make fuzz).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "format.h"
#include "pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_decode_opts o;
	wt_profile *p = NULL;
	wt_err e;

	wt_decode_opts_default(&o);
	o.lim.max_body = 1 << 20;
	o.lim.max_decompressed = 4 << 20;
	o.lim.max_samples = 10000;
	o.lim.max_stack_depth = 256;
	o.lim.max_strings = 10000;
	o.lim.max_string_len = 4096;
	o.lim.max_labels = 16;
	o.lim.max_types = 8;
	if (wt_format_decode(data, size, WT_FMT_PPROF, &o, &p, NULL, &e) == 0) {
		uint8_t *out = NULL;
		size_t n = 0;
		if (wt_pprof_encode(p, 0, &out, &n, &e) == 0)
			free(out);
		wt_profile_free(p);
	}
	return 0;
}
