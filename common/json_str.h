/*
 * json_str.h — a jansson string from bytes that may not be UTF-8.
 *
 * Function names come from uploads and from other processes' memory;
 * json_string() refuses bytes that are not UTF-8 and a view built with it
 * would fail on one such name. wt_json_string() never refuses: it keeps
 * valid UTF-8 as is and replaces each byte that is not (a stray
 * continuation, an overlong form, a surrogate, a sequence cut short) by
 * U+FFFD, as wt_buf_json_str() does for text written without jansson.
 */
#ifndef WT_JSON_STR_H
#define WT_JSON_STR_H

#include <jansson.h>

/* A new reference (the caller owns it); NULL only when s is NULL or
 * memory ran out. */
json_t *wt_json_string(const char *s);

#endif
