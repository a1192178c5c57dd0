/*
 * profile.h — the one in-memory profile model every format converts into.
 *
 * A wt_profile is a self-contained, interned description of a profile:
 *   strings    — string table; id 0 is always "".
 *   types      — sample types (type + unit, with the canonical Watchtower name,
 *                see sample_types.h); every sample has one value per type.
 *   mappings   — executable mappings (file, build id) for native frames.
 *   functions  — (name, system name, file, start line, build id) interned.
 *   frames     — a function at a line/address inside a mapping, interned.
 *   stacks     — sequences of frame ids, LEAF FIRST (pprof order), interned.
 *   labelsets  — sorted sets of (key, string value | number) labels, interned;
 *                labelset 0 is the empty set. span_id / trace_id / thread /
 *                host / container are ordinary labels with those keys.
 *   samples    — (stack, labelset, time) → values[ntypes]; adding a sample
 *                with an existing key adds its values, so memory grows with
 *                unique (stack, labels, time) keys, not with raw samples.
 *
 * Parsers build a profile through the wt_profile_add_* calls, which enforce
 * the wt_limits given at creation (bounded memory for hostile input).
 * Readers use the public arrays directly (read-only) and the accessors below.
 * String pointers returned by wt_profile_str() stay valid until the next
 * call that adds a string.
 *
 * Ownership: wt_profile_new() returns a profile owned by the caller, freed
 * with wt_profile_free(). Nothing in it points outside itself.
 */
#ifndef WT_PROFILE_H
#define WT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Limits on what one input may make us allocate. Defaults (wt_limits_default)
 * are documented in docs/formats.md; daemons override them from config. */
typedef struct wt_limits {
	size_t max_body;         /* bytes of the (possibly compressed) input; 64 MiB */
	size_t max_decompressed; /* bytes after decompression; 512 MiB */
	size_t max_samples;      /* distinct sample keys; 5,000,000 */
	size_t max_stack_depth;  /* frames in one stack; 2048 */
	size_t max_strings;      /* string table entries; 4,000,000 */
	size_t max_string_len;   /* bytes in one string; 64 KiB */
	size_t max_labels;       /* labels on one sample; 64 */
	size_t max_types;        /* sample types in one profile; 32 */
} wt_limits;

void wt_limits_default(wt_limits *l);

typedef struct wt_sample_type {
	uint32_t type;      /* string id: the format's own name ("samples", "cpu") */
	uint32_t unit;      /* string id: "nanoseconds", "count", "bytes", ... */
	uint32_t canonical; /* string id: Watchtower's name (sample_types.h) */
} wt_sample_type;

typedef struct wt_mapping {
	uint64_t start, limit, offset;
	uint32_t filename; /* string id */
	uint32_t build_id; /* string id */
} wt_mapping;

typedef struct wt_function {
	uint32_t name;        /* string id; demangled/plain name */
	uint32_t system_name; /* string id; mangled name, if different */
	uint32_t filename;    /* string id */
	uint32_t build_id;    /* string id, for native code */
	int64_t start_line;
} wt_function;

/* Frame function WT_NO_FUNCTION means "unsymbolized": only address/mapping. */
#define WT_NO_FUNCTION UINT32_MAX
#define WT_NO_MAPPING UINT32_MAX

typedef struct wt_frame {
	uint32_t function; /* index into functions, or WT_NO_FUNCTION */
	uint32_t mapping;  /* index into mappings, or WT_NO_MAPPING */
	int64_t line;
	uint64_t address;
} wt_frame;

typedef struct wt_label {
	uint32_t key;      /* string id */
	uint32_t str;      /* string id, 0 when numeric */
	int64_t num;       /* numeric value when str == 0 */
	uint32_t num_unit; /* string id, may be 0 */
} wt_label;

typedef struct wt_sample {
	uint32_t stack;    /* stack id */
	uint32_t labelset; /* labelset id, 0 = none */
	int64_t time_ns;   /* unix ns of this sample, 0 = unknown (use profile time) */
	/* values: wt_profile_values(p, i) */
} wt_sample;

typedef struct wt_span { uint32_t off, len; } wt_span;

#define WT_PROFILE_MAX_WARNINGS 4
#define WT_PROFILE_WARNING_MAX 256 /* bytes of one warning, longer ones are cut */

typedef struct wt_profile {
	wt_limits lim;

	/* strings: bytes are in str_data at str_off[id], NUL-terminated */
	char *str_data;
	size_t str_data_len, str_data_cap;
	uint32_t *str_off;
	uint32_t *str_len;
	size_t nstrings, str_cap;

	wt_sample_type *types;
	size_t ntypes;

	wt_mapping *mappings;
	size_t nmappings, mapping_cap;

	wt_function *functions;
	size_t nfunctions, function_cap;

	wt_frame *frames;
	size_t nframes, frame_cap;

	/* stacks: frame ids (leaf first) of stack s are
	 * stack_frames[stacks[s].off .. +stacks[s].len] */
	wt_span *stacks;
	size_t nstacks, stack_cap;
	uint32_t *stack_frames;
	size_t stack_frames_len, stack_frames_cap;

	wt_span *labelsets; /* into labels[] */
	size_t nlabelsets, labelset_cap;
	wt_label *labels;
	size_t labels_len, labels_cap;

	wt_sample *samples;
	size_t nsamples, sample_cap;
	int64_t *values; /* nsamples * ntypes, row-major */

	/* metadata */
	int64_t time_ns;     /* start of the profile, unix ns; 0 = unknown */
	int64_t duration_ns; /* 0 = unknown */
	uint32_t period_type, period_unit; /* string ids */
	int64_t period;      /* e.g. 10000000 ns for 100 Hz CPU, 0 = unknown */
	uint32_t default_type; /* string id of the default sample type name, 0 = first */
	/* Samples as the producer counted them before any merging (pprof Sample
	 * records, speedscope samples entries, folded counts, JFR events used),
	 * -1 when the parser does not know. Distinct from nsamples (rows). */
	int64_t source_samples;
	/* Non-fatal problems the parser worked around ("perf: line 301: record
	 * cut short at the end of the input: dropped"), oldest first; at most
	 * WT_PROFILE_MAX_WARNINGS are kept, then nwarnings_dropped counts. */
	char *warnings[WT_PROFILE_MAX_WARNINGS];
	size_t nwarnings, nwarnings_dropped;

	void *priv; /* interning hash tables (profile.c) */
} wt_profile;

/* Create an empty profile with limits *lim (NULL = defaults). Returns NULL on
 * out-of-memory. Caller owns; free with wt_profile_free(). */
wt_profile *wt_profile_new(const wt_limits *lim);
void wt_profile_free(wt_profile *p);

/* Free the interning indexes (8-byte slots per string, function, frame,
 * stack and sample: about a quarter of a decoded profile with millions of
 * distinct stacks) once decoding is done: the profile stays readable; any
 * later intern/add is WT_EINVAL. The edge and the hub seal an upload's
 * profile before building its rows. */
void wt_profile_seal(wt_profile *p);

/* Size the tables for an input that declares (or bounds) how many distinct
 * entries it has, so they are allocated once instead of doubling: each
 * count is clamped to the limits (max_samples, max_strings); 0 leaves a
 * table as it is. Pages of a reserved table are touched only as entries
 * are added, so an upper bound costs address space, not memory. Returns 0
 * or WT_ENOMEM (the profile stays usable). */
typedef struct wt_profile_sizes {
	size_t strings, functions, frames, stacks, samples;
	size_t stack_frames; /* frame ids of all stacks (clamped to max_decompressed) */
} wt_profile_sizes;
int wt_profile_reserve(wt_profile *p, const wt_profile_sizes *n);

/* Intern a string of len bytes (need not be NUL-terminated; must not contain
 * NUL — embedded NULs are rejected with WT_EINVAL). *id receives the id.
 * Errors: WT_ELIMIT when a string or table limit is hit, WT_ENOMEM. */
int wt_profile_intern(wt_profile *p, const char *s, size_t len, uint32_t *id, wt_err *err);
int wt_profile_intern_cstr(wt_profile *p, const char *s, uint32_t *id, wt_err *err);
const char *wt_profile_str(const wt_profile *p, uint32_t id);

/* Declare the sample types. Must be called before the first sample is added
 * (adding a type afterwards is WT_EINVAL). `hint` disambiguates canonical
 * names where a format's names are ambiguous (e.g. "block" vs "mutex" for
 * Go's contentions/delay); may be NULL. *idx receives the type index. */
int wt_profile_add_type(wt_profile *p, const char *type, const char *unit,
			const char *hint, size_t *idx, wt_err *err);
/* Index of the type whose canonical name (or, failing that, own name) is
 * `name`; -1 if none. */
int wt_profile_find_type(const wt_profile *p, const char *name);

/* Interning constructors. Each returns 0 and the (new or existing) index, or
 * a WT_E* code with *err filled. String arguments are string ids. */
int wt_profile_add_mapping(wt_profile *p, const wt_mapping *m, uint32_t *idx, wt_err *err);
int wt_profile_add_function(wt_profile *p, const wt_function *f, uint32_t *idx, wt_err *err);
/* Convenience: intern name (and optionally filename) and the function. */
int wt_profile_add_function_named(wt_profile *p, const char *name, size_t name_len,
				  const char *file, uint32_t *idx, wt_err *err);
int wt_profile_add_frame(wt_profile *p, const wt_frame *f, uint32_t *idx, wt_err *err);
/* frames: frame ids, LEAF FIRST. n may be 0 (an empty stack is legal).
 * n > lim.max_stack_depth is WT_ELIMIT. */
int wt_profile_add_stack(wt_profile *p, const uint32_t *frames, size_t n, uint32_t *idx, wt_err *err);
/* labels need not be sorted; duplicates of a key keep the last. n == 0 → 0. */
int wt_profile_add_labelset(wt_profile *p, const wt_label *labels, size_t n, uint32_t *idx, wt_err *err);

/* Add values[ntypes] to the sample keyed by (stack, labelset, time_ns),
 * creating it if new. Values may be negative (diff/delta formats). */
int wt_profile_add_sample(wt_profile *p, uint32_t stack, uint32_t labelset,
			  int64_t time_ns, const int64_t *values, wt_err *err);

/* Values of sample i: an array of ntypes. */
static inline int64_t *wt_profile_values(const wt_profile *p, size_t i)
{
	return p->values ? p->values + i * p->ntypes : NULL;
}

/* Frame ids of a stack, leaf first. */
static inline const uint32_t *wt_profile_stack(const wt_profile *p, uint32_t s, size_t *n)
{
	*n = p->stacks[s].len;
	return p->stack_frames ? p->stack_frames + p->stacks[s].off : NULL;
}

static inline const wt_label *wt_profile_labelset(const wt_profile *p, uint32_t ls, size_t *n)
{
	*n = p->labelsets[ls].len;
	return p->labels ? p->labels + p->labelsets[ls].off : NULL;
}

/* Printable name of a frame for views: the function name; else the system
 * name; else "<mapping basename>+0x<addr>" or "0x<addr>". Writes into buf
 * (always NUL-terminated) and returns buf, or returns the interned name
 * directly when one exists (no copy). */
const char *wt_profile_frame_name(const wt_profile *p, uint32_t frame, char *buf, size_t buflen);

/* Value of label `key` on labelset ls, or NULL. */
const char *wt_profile_label_str(const wt_profile *p, uint32_t ls, const char *key);

/* Record a warning (printf format) on the profile. Never fails: on
 * out-of-memory or past WT_PROFILE_MAX_WARNINGS the warning is only
 * counted in nwarnings_dropped. */
void wt_profile_warn(wt_profile *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sum of values of type idx over all samples. */
int64_t wt_profile_total(const wt_profile *p, size_t type_idx);

#endif
