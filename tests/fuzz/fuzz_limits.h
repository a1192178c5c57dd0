/*
 * fuzz_limits.h — the decode limits the fuzz targets of whole uploads share
 * (fuzz_pprof, fuzz_otlp, fuzz_jfr, fuzz_pyroscope, fuzz_repl_batch): small
 * enough that one input cannot take a run past libFuzzer's RSS limit, and
 * that the limit paths of the decoders are reached.
 */
#ifndef WT_FUZZ_LIMITS_H
#define WT_FUZZ_LIMITS_H

#include "profile.h"

static inline void fuzz_limits(wt_limits *l)
{
	wt_limits_default(l);
	l->max_body = 1 << 20;
	l->max_decompressed = 4 << 20;
	l->max_samples = 10000;
	l->max_stack_depth = 256;
	l->max_strings = 10000;
	l->max_string_len = 4096;
	l->max_labels = 16;
	l->max_types = 8;
}

#endif
