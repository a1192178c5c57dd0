/*
 * text_input.h — the checks every line-oriented text parser (folded,
 * perf script) makes on its input before parsing: size within
 * lim->max_decompressed, no NUL byte (the error names line and offset),
 * and a leading UTF-8 BOM skipped.
 */
#ifndef WT_TEXT_INPUT_H
#define WT_TEXT_INPUT_H

#include <stddef.h>

#include "err.h"
#include "profile.h"

/* what: the format name used as message prefix ("folded", "perf").
 * Returns 0 and *skip = bytes to skip at the start (BOM), or WT_ELIMIT /
 * WT_EINVAL with *err filled. */
int wt_text_input_check(const char *what, const char *s, size_t len, const wt_limits *lim,
			size_t *skip, wt_err *err);

#endif
