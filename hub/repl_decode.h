/*
 * repl_decode.h — decode one replicated upload's original exactly as the
 * edge decoded it (edge/ingest.c), from the options its header names.
 * Pure: no ClickHouse, no object store; hub_repl_apply() (repl_apply.c)
 * calls it for every upload of a batch, and tests/fuzz/fuzz_repl_batch.c
 * feeds it arbitrary batches.
 */
#ifndef HUB_REPL_DECODE_H
#define HUB_REPL_DECODE_H

#include <jansson.h>

#include "err.h"
#include "format.h"
#include "proto/repl.pb-c.h"

/* Decode u->original with the header hdr's options ("format", "hint",
 * "type", "units", "sample_rate", "otlp_service" picks one service of an
 * OTLP request) within lim, and place its time: "from_ns"/"until_ns" when
 * given, else the profile's own time, else u->received_ns. On success *p is
 * a new profile owned by the caller and *det the format parsed. Errors are
 * the decoders' (WT_EINVAL, WT_EFORMAT, WT_ELIMIT, WT_ENOMEM). */
int hub_repl_decode_upload(const Watchtower__Repl__Upload *u, json_t *hdr, const wt_limits *lim,
			   wt_profile **p, wt_format *det, wt_err *err);

#endif
