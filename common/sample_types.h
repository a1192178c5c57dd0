/*
 * sample_types.h — Watchtower's canonical sample type names and the mapping
 * from each format's own (type, unit) pairs onto them (the per-format
 * table is docs/formats.md "## Sample types").
 *
 * An unmapped type keeps its own name: nothing is ever dropped.
 */
#ifndef WT_SAMPLE_TYPES_H
#define WT_SAMPLE_TYPES_H

/* Canonical name for a format's (type, unit). `hint` is the uploader's
 * profile kind where the format is ambiguous (Go "contentions"/"delay" are
 * mutex unless hint is "block"); may be NULL. Returns a static string, or
 * `type` itself when unmapped. Never NULL (an empty type gives "samples"). */
const char *wt_sample_type_canonical(const char *type, const char *unit, const char *hint);

/* Unit a canonical type is reported in ("nanoseconds", "bytes", "count"),
 * or NULL when the name is not canonical. */
const char *wt_sample_type_unit(const char *canonical);

/* 1 if `name` is one of the canonical names. */
int wt_sample_type_is_canonical(const char *name);

/* The unit our decoders take for a Pyroscope /ingest `units` value
 * ("objects", "goroutines", "lock_samples" → "count"; "lock_nanoseconds"
 * → "nanoseconds"; others as given). The edge decodes an upload with it
 * and the hub decodes the replicated original the same way. NULL → NULL. */
const char *wt_pyroscope_unit(const char *units);

#endif
