/*
 * repl_decode.h — one replicated upload's header and original, read as the
 * edge wrote them (edge/http_ingest.c): the header from the typed UploadHeader
 * (proto/repl.proto) or, for batches buffered by edges from before it, the
 * JSON header_json; the original decoded with the options the header
 * names. Pure: no ClickHouse, no object store; hub_repl_apply()
 * (repl_apply.c) uses both for every upload of a batch, and
 * tests/fuzz/fuzz_repl_batch.c feeds them arbitrary batches.
 */
#ifndef HUB_REPL_DECODE_H
#define HUB_REPL_DECODE_H

#include <jansson.h>

#include "err.h"
#include "format.h"
#include "params.h"
#include "proto/repl.pb-c.h"

#define HUB_REPL_MAX_LABELS 64

/* An upload's header; strings point into the batch or into the parsed
 * JSON header (see hub_repl_header_init). NULL = not given. */
typedef struct hub_repl_header {
	const char *project, *service, *format, *type, *hint, *units, *otlp_service;
	int64_t sample_rate, from_ns, until_ns;
	hub_label_param lp[HUB_REPL_MAX_LABELS];
	size_t nlp;      /* labels beyond HUB_REPL_MAX_LABELS are left out of lp */
	size_t nlabels;  /* labels the header has (hub_repl_header_check refuses > the limit) */
} hub_repl_header;

/* Fill h from u's typed header, else from its JSON header, parsed into *js
 * (NULL when not needed; the caller json_decref()s it after the last use
 * of h). 0, or WT_EINVAL when there is no header or it names no project or
 * service. */
int hub_repl_header_init(const Watchtower__Repl__Upload *u, json_t **js, hub_repl_header *h);

/* The upload contract's rules (common/upload.h: wt_upload_set_service,
 * wt_upload_add_label) on h's service and labels, as a direct upload is
 * checked: edges from before that contract accepted labels the hub then
 * could not query (64 labels with any printable key). 0, or WT_EINVAL /
 * WT_ELIMIT with the upload's own message ("label.K: …"), or WT_ENOMEM.
 * A NULL service is left to hub_repl_header_init. */
int hub_repl_header_check(const hub_repl_header *h, wt_err *err);

/* Check h (hub_repl_header_check), then decode u->original with h's
 * options (format, hint, type, units,
 * sample_rate; otlp_service picks one service of an OTLP request) within
 * lim, and place its time: from_ns/until_ns when given, else the profile's
 * own time, else u->received_ns. On success *p is a new profile owned by
 * the caller and *det the format parsed. Errors are the decoders'
 * (WT_EINVAL, WT_EFORMAT, WT_ELIMIT, WT_ENOMEM). */
int hub_repl_decode_upload(const Watchtower__Repl__Upload *u, const hub_repl_header *h, const wt_limits *lim,
			   wt_profile **p, wt_format *det, wt_err *err);

#endif
