/*
 * otlp.h — OpenTelemetry profiles (ExportProfilesServiceRequest, protobuf
 * binary) → wt_profile.
 *
 * One request holds many profiles for many resources (services). The
 * decoder groups them by service: every sample goes to the service named
 * by its own service.name attribute, else its resource's service.name,
 * else "unknown_service"; all OTLP profiles of one service become ONE
 * wt_profile whose sample types are the union of theirs (a sample has 0
 * for the types its OTLP profile did not have).
 *
 * Schema layouts read (detected from the wire structure, see otlp.c and
 * docs/formats.md "## OTLP profiles"): opentelemetry-proto v1.10.0 (the
 * target), v1.9.0, v1.8.0, v1.7.0, and v1.3–v1.5 (per-profile tables).
 * v1.6.0 requests carry no tables and are not readable. OTLP/JSON
 * (protojson, a body starting with '{') of any of these layouts is read
 * through common/protojson.c.
 */
#ifndef WT_OTLP_H
#define WT_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

#define WT_OTLP_UNKNOWN_SERVICE "unknown_service"

typedef struct wt_otlp_item {
	char *service;       /* service name (owned); never NULL */
	wt_profile *profile; /* owned; resource/scope/sample attributes are
			      * already sample labels in it */
	size_t nprofiles;    /* OTLP Profile messages that contributed */
} wt_otlp_item;

typedef struct wt_otlp_result {
	wt_otlp_item *items; /* owned; one per service, in order of appearance */
	size_t n;
	const char *version; /* layout read: "1.10", "1.9", "1.8", "1.7", "1.5" (static) */
	size_t nprofiles;    /* OTLP Profile messages in the request */
} wt_otlp_result;

/* Decode an ExportProfilesServiceRequest (raw protobuf; callers inflate
 * gzip first). lim NULL = defaults. On success *out holds n >= 0 items the
 * caller frees with wt_otlp_result_free(). Errors: WT_EINVAL naming the
 * field path and index ("otlp 1.8: resource_profiles[0]...samples[3].
 * stack_index 1000000000 out of range (stack_table has 54 entries)"),
 * WT_ELIMIT, WT_ENOMEM; OTLP/JSON errors name the JSON position or path.
 * On error *out is empty. */
int wt_otlp_decode(const uint8_t *buf, size_t len, const wt_limits *lim, wt_otlp_result *out,
		   wt_err *err);
void wt_otlp_result_free(wt_otlp_result *r);

/* Single-profile convenience (wt_format_decode, wtctl): every service of
 * the request merged into one profile; each sample carries a "service"
 * label with its service name. Caller owns *out. */
int wt_otlp_decode_merged(const uint8_t *buf, size_t len, const wt_limits *lim, wt_profile **out,
			  wt_err *err);

#endif
