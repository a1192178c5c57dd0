/*
 * cpuprofile.h — V8 / Node.js `.cpuprofile` JSON (what `node --cpu-prof`,
 * Chrome DevTools and the inspector's Profiler.stop write) into a
 * wt_profile, and the folded conversion behind
 * `wtctl profile convert-cpuprofile`.
 *
 * Accepted layouts: the current one (nodes[] with callFrame {functionName,
 * url, lineNumber, columnNumber}, id, children[] and/or parent, samples[],
 * timeDeltas[], startTime/endTime in microseconds) and the pre-Node-11 one
 * (a "head" tree of nodes with functionName/url/lineNumber at the node
 * level). The mapping onto sample types, names and times is documented in
 * docs/formats.md ("V8 cpuprofile").
 *
 * Ownership: *out is a new profile owned by the caller (NULL on error).
 * Errors: WT_EINVAL naming the JSON field ("cpuprofile: nodes[12].children[3]:
 * unknown node id 99") or the JSON syntax error position (line, column,
 * byte), WT_ELIMIT when the input exceeds *lim, WT_ENOMEM.
 */
#ifndef WT_CPUPROFILE_H
#define WT_CPUPROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

/* lim: NULL = defaults. time_ns: unix ns to place the profile's startTime
 * at (V8 times are monotonic microseconds); 0 = leave sample times unknown
 * (samples of the same stack then aggregate). */
int wt_cpuprofile_decode(const uint8_t *buf, size_t len, const wt_limits *lim,
			 int64_t time_ns, wt_profile **out, wt_err *err);

#endif
