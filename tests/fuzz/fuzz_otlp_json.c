/*
 * fuzz_otlp_json.c — libFuzzer target for OTLP/JSON (protojson): bytes
 * through wt_otlp_decode() and the merged wt_format_decode path, which parse
 * the JSON, re-encode it as protobuf for each schema layout
 * (common/protojson.c) and decode the chosen encoding like a binary
 * request, with small limits. Inputs that do not start with '{' get one
 * prepended so that every run takes the JSON path. Run by tests/fuzz/run
 * (make fuzz); seeds are the corpus's JSON files (tests/fuzz/run picks
 * them by the target's name), among them the OTLP 1.8.0 and 1.10.0
 * protojson captures.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_decode_opts o;
	wt_otlp_result r;
	wt_profile *p = NULL;
	uint8_t *buf = NULL;
	wt_err e;

	if (!size || data[0] != '{') {
		if (!(buf = malloc(size + 1)))
			return 0;
		buf[0] = '{';
		memcpy(buf + 1, data, size);
		data = buf;
		size++;
	}
	wt_decode_opts_default(&o);
	o.lim.max_body = 2 << 20;
	o.lim.max_decompressed = 4 << 20;
	o.lim.max_samples = 10000;
	o.lim.max_stack_depth = 256;
	o.lim.max_strings = 10000;
	o.lim.max_string_len = 4096;
	o.lim.max_labels = 16;
	o.lim.max_types = 8;
	if (wt_otlp_decode(data, size, &o.lim, &r, &e) == 0)
		wt_otlp_result_free(&r);
	if (wt_format_decode(data, size, WT_FMT_OTLP, &o, &p, NULL, &e) == 0)
		wt_profile_free(p);
	free(buf);
	return 0;
}
