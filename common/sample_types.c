/*
 * sample_types.c — canonical sample type table and the format → canonical
 * mapping. Keep docs/formats.md in step with the table below.
 */
#include "sample_types.h"

#include <string.h>
#include <strings.h>

static const struct {
	const char *name, *unit;
} canon[] = {
	{"cpu", "nanoseconds"},          {"wall", "nanoseconds"},
	{"alloc_objects", "count"},      {"alloc_space", "bytes"},
	{"inuse_objects", "count"},      {"inuse_space", "bytes"},
	{"goroutine", "count"},          {"mutex_contentions", "count"},
	{"mutex_delay", "nanoseconds"},  {"block_contentions", "count"},
	{"block_delay", "nanoseconds"},  {"lock", "nanoseconds"},
	{"offcpu", "nanoseconds"},       {"gc_pause", "nanoseconds"},
	{"exceptions", "count"},         {"native_alloc", "bytes"},
	{"native_alloc_objects", "count"},
};

/* Aliases: a format's type name (case-insensitive) → canonical. The unit is
 * checked only where the same name means different things. */
static const struct {
	const char *type, *unit, *canonical;
} alias[] = {
	/* Go runtime/pprof, pprof-rs, async-profiler pprof, Node @datadog/pprof */
	{"cpu", NULL, "cpu"},
	{"wall", NULL, "wall"},
	{"wall time", NULL, "wall"},          /* austin2pprof */
	{"alloc_objects", NULL, "alloc_objects"},
	{"alloc_space", NULL, "alloc_space"},
	{"inuse_objects", NULL, "inuse_objects"},
	{"inuse_space", NULL, "inuse_space"},
	{"objects", NULL, "inuse_objects"},   /* Node heap (inuse) */
	{"space", NULL, "inuse_space"},
	{"goroutine", NULL, "goroutine"},
	{"goroutines", NULL, "goroutine"},
	{"alloc_samples", NULL, "alloc_objects"}, /* .NET */
	{"alloc_size", NULL, "alloc_space"},
	{"inuse_samples", NULL, "inuse_objects"},
	{"lock_count", NULL, "mutex_contentions"},
	{"lock_time", NULL, "lock"},
	{"alloc-samples", NULL, "alloc_objects"}, /* older .NET profilers: dashes */
	{"alloc-size", NULL, "alloc_space"},
	{"lock-count", NULL, "mutex_contentions"},
	{"lock-time", NULL, "lock"},
	{"exception", NULL, "exceptions"},
	{"exceptions", NULL, "exceptions"},
	{"offcpu", NULL, "offcpu"},
	{"off_cpu", NULL, "offcpu"},
	{"lock", NULL, "lock"},
	{"gc_pause", NULL, "gc_pause"},
	{"native_alloc", NULL, "native_alloc"},
	{"malloc", NULL, "native_alloc"},
	{"native_alloc_objects", NULL, "native_alloc_objects"},
	{"itimer", NULL, "cpu"},              /* async-profiler event names */
	{"alloc", "bytes", "alloc_space"},
	{"alloc", "count", "alloc_objects"},
	{"alloc_in_new_tlab_bytes", NULL, "alloc_space"},
	{"alloc_in_new_tlab_objects", NULL, "alloc_objects"},
	{"sample", "count", "samples"},       /* Pyroscope Node.js SDK, @datadog/pprof */
};

const char *wt_sample_type_canonical(const char *type, const char *unit, const char *hint)
{
	size_t i;

	if (!type || !*type)
		return "samples";
	if (!unit)
		unit = "";
	/* Go mutex/block profiles share type names; the uploader's kind decides. */
	if (!strcasecmp(type, "contentions") || !strcasecmp(type, "delay")) {
		int block = hint && !strcasecmp(hint, "block");
		if (!strcasecmp(type, "contentions"))
			return block ? "block_contentions" : "mutex_contentions";
		return block ? "block_delay" : "mutex_delay";
	}
	for (i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
		if (strcasecmp(type, alias[i].type))
			continue;
		if (alias[i].unit && strcasecmp(unit, alias[i].unit))
			continue;
		return alias[i].canonical;
	}
	return type;
}

const char *wt_sample_type_unit(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(canon) / sizeof(canon[0]); i++)
		if (!strcmp(name, canon[i].name))
			return canon[i].unit;
	return NULL;
}

int wt_sample_type_is_canonical(const char *name)
{
	return wt_sample_type_unit(name) != NULL;
}

const char *wt_pyroscope_unit(const char *u)
{
	if (!u)
		return NULL;
	if (!strcmp(u, "objects") || !strcmp(u, "goroutines") || !strcmp(u, "lock_samples"))
		return "count";
	if (!strcmp(u, "lock_nanoseconds"))
		return "nanoseconds";
	return u;
}
