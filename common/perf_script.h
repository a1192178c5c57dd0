/*
 * perf_script.h — `perf script` text (Linux perf) into a wt_profile.
 *
 * Input: what `perf script` prints for a recording made with or without -g
 * (frame-pointer, DWARF or LBR call graphs), with or without the
 * `perf script --header` "# ========" block, with or without the tid, cpu,
 * time and period columns, several events in one file, `-F +srcline` lines.
 * Each record (header line + indented frame lines, leaf first, ended by a
 * blank line or the next header) becomes one sample; stacks are collapsed
 * inside the parser. The mapping onto sample types, labels and times is
 * documented in docs/formats.md ("perf script").
 *
 * Ownership: *out is a new profile owned by the caller (NULL on error).
 * Errors: WT_EINVAL with "perf: line N: ..." for malformed text, WT_ELIMIT
 * when the input exceeds *lim, WT_ENOMEM.
 */
#ifndef WT_PERF_SCRIPT_H
#define WT_PERF_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

/* lim: NULL = defaults. time_ns: unix ns to place the first sample at (perf
 * times are monotonic seconds since boot; later samples keep their offset
 * from the first); 0 = leave sample times unknown. */
int wt_perf_script_decode(const uint8_t *buf, size_t len, const wt_limits *lim,
			  int64_t time_ns, wt_profile **out, wt_err *err);

#endif
