/*
 * speedscope.h — speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json; what py-spy
 * --format speedscope, dotnet-trace --format speedscope, pyinstrument,
 * austin2speedscope and many converters write) into a wt_profile.
 *
 * shared.frames[] become functions (name, file, line); every profile of
 * type "sampled" (samples[] = frame-index stacks ROOT FIRST, weights[]) or
 * "evented" (openFrame "O" / closeFrame "C" events with "at") becomes
 * samples labelled thread=<profile name>. Evented profiles are converted to
 * weights per stack: the time between consecutive events is given to the
 * stack open during it (self time of the innermost frame). Units and the
 * sample types they map to are documented in docs/formats.md ("speedscope").
 *
 * Ownership: *out is a new profile owned by the caller (NULL on error).
 * Errors: WT_EINVAL naming the JSON path ("speedscope: profiles[1].samples[7][2]:
 * frame index 912 out of range (300 frames)") or the JSON syntax position,
 * WT_ELIMIT when the input exceeds *lim, WT_ENOMEM.
 */
#ifndef WT_SPEEDSCOPE_H
#define WT_SPEEDSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "profile.h"

/* lim: NULL = defaults. time_ns: unix ns to place the profiles at (the
 * format has no wall clock); 0 = unknown. */
int wt_speedscope_decode(const uint8_t *buf, size_t len, const wt_limits *lim,
			 int64_t time_ns, wt_profile **out, wt_err *err);

/* Encoder (speedscope_encode.c): sample types types[0..ntypes) of p as a
 * speedscope document appended to *out — shared.frames[] one per distinct
 * (printable name, file), one "sampled" profile per type and, when samples
 * carry a `thread` label, per thread (named after it; "TYPE: THREAD" when
 * several types are written, the type's name for unlabelled samples), with
 * distinct stacks root first and their summed values as weights. Units:
 * time units and bytes kept, others "none". `name` is the document's name
 * (NULL = "profile"). Errors: WT_EINVAL for a type index out of range or a
 * stack whose value is negative (speedscope weights are non-negative),
 * WT_ENOMEM. The caller owns *out. */
int wt_speedscope_encode(const wt_profile *p, const size_t *types, size_t ntypes,
			 const char *name, wt_buf *out, wt_err *err);

#endif
