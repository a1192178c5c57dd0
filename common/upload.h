/*
 * upload.h — the upload contract: what an upload's parameters are, which
 * values they accept, how they become decode options and where the
 * samples land in time. One definition for every route an upload takes:
 * the edge's POST /v1/profiles and /ingest (edge/http_ingest.c), the hub's
 * direct POST /v1/profiles (hub/http_ingest.c) and the hub's replication
 * apply (hub/repl_decode.c), which must decode an original exactly as the
 * edge did. The hub's query side checks label keys with the same rule
 * (hub/params.c, hub/label_selector.c), so every stored label can be
 * filtered. docs/api.md "### Ingest" describes the parameters.
 */
#ifndef WT_UPLOAD_H
#define WT_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "format.h"
#include "profile.h"

#define WT_UPLOAD_MAX_LABELS 64        /* label.K=V per upload */
#define WT_UPLOAD_NAME_MAX 255         /* service: bytes */
#define WT_UPLOAD_LABEL_KEY_MAX 255    /* label key / sample type name: bytes */
#define WT_UPLOAD_LABEL_VALUE_MAX 4095 /* label value: bytes */

/* What decoding and time placement need: the fields the edge records in
 * the replication header (proto/repl.proto UploadHeader) so that the hub
 * reproduces the edge's profile. Strings are borrowed; NULL = not given. */
typedef struct wt_upload_decode {
	wt_format fmt;       /* format= (WT_FMT_AUTO = detect) */
	const char *type;    /* type=: sample type name for formats without one */
	const char *hint;    /* decoder hint: profile kind ("block", "mutex", "cpu", ...) */
	const char *units;   /* Pyroscope `units` */
	int64_t sample_rate; /* Pyroscope `sampleRate` (0 = unset) */
	int64_t from_ns;     /* from= (0 = not given) */
	int64_t until_ns;    /* until= (0 = not given) */
} wt_upload_decode;

typedef struct wt_upload_label {
	char *key, *value; /* owned */
} wt_upload_label;

/* One upload's parameters. Every string is owned (wt_upload_free);
 * dec's strings point at the owned copies. */
typedef struct wt_upload {
	char *service;
	char *requested_format; /* format= as given ("auto" when absent) */
	char *type, *hint, *units, *spy_name, *aggregation;
	wt_upload_decode dec;
	wt_upload_label labels[WT_UPLOAD_MAX_LABELS]; /* request order, keys unique */
	size_t nlabels;
} wt_upload;

void wt_upload_init(wt_upload *u);
void wt_upload_free(wt_upload *u);

/* The rules (docs/api.md "#### Labels"):
 * service: 1..WT_UPLOAD_NAME_MAX bytes without control characters;
 * label key (and sample type name): [A-Za-z_][A-Za-z0-9_./-]*, at most
 * WT_UPLOAD_LABEL_KEY_MAX bytes — "k8s/pod", "app.kubernetes.io/name";
 * label value: at most WT_UPLOAD_LABEL_VALUE_MAX bytes without control
 * characters. Each returns 1 when s is valid. */
int wt_upload_service_valid(const char *s);
int wt_upload_label_key_valid(const char *s);
int wt_upload_label_value_valid(const char *s);

/* Apply one query parameter of POST /v1/profiles: service, format, type,
 * from, until, label.K. pyroscope != 0 also takes the /ingest parameters
 * (sampleRate, spyName, units, aggregationType; "format" defaults to
 * folded there). Other keys are ignored. 0, or WT_EINVAL / WT_EFORMAT /
 * WT_ELIMIT / WT_ENOMEM with a message naming the parameter. */
int wt_upload_param(wt_upload *u, int pyroscope, const char *key, const char *value, wt_err *err);

/* Setters for what does not come as one parameter (the Pyroscope name
 * "app.cpu{k=v}", an OTLP resource's service.name). Same errors. */
int wt_upload_set_service(wt_upload *u, const char *service, wt_err *err);
int wt_upload_set_type(wt_upload *u, const char *type, wt_err *err);
int wt_upload_set_hint(wt_upload *u, const char *hint, wt_err *err);
int wt_upload_add_label(wt_upload *u, const char *key, const char *value, wt_err *err);

/* After the last parameter: service given, until not before from. */
int wt_upload_finish(wt_upload *u, wt_err *err);

/* The decoder hint a type= implies: Go's contentions/delay types are
 * ambiguous, so "block..." says block and "mutex..." mutex; otherwise the
 * type itself. Static or type; NULL for NULL. */
const char *wt_upload_type_hint(const char *type);

/* The options wt_format_decode gets for this upload: d's type, hint,
 * units (Pyroscope unit name → unit) and sample rate, within lim, and the
 * time for formats without a clock: from= when given, else received_ns. */
void wt_upload_decode_opts(const wt_upload_decode *d, const wt_limits *lim, int64_t received_ns,
			   wt_decode_opts *o);

/* Place p in time. With from=, the profile starts at from and samples
 * that carry a time keep their offset to the profile's own start (a JFR
 * recording or perf capture moved as a whole); with until= after from,
 * the profile lasts until - from. Without from=, the format's own clock,
 * else received_ns. O(samples). */
void wt_upload_place_times(const wt_upload_decode *d, wt_profile *p, int64_t received_ns);

#endif
