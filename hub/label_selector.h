/*
 * label_selector.h — Prometheus-style label selectors
 * (`{service_name="a", env=~"prod.*", host!="b", k!~"x|y"}`) as Pyroscope's
 * query API sends them, parsed once into a list of matchers and rendered as
 * the SQL conditions of a selection (selection.h carries one in hub_sel).
 *
 * Names map onto the hub's columns: service_name → service; host, thread,
 * container, span_id, trace_id → their columns; any other name → the
 * Nested label of that key (a missing label reads as "", as in
 * Prometheus). Regular expressions are RE2 (ClickHouse match()), anchored
 * at both ends like Prometheus'. Names starting with "__" are not rendered:
 * the caller reads them (hub_lsel_get: __profile_type__).
 *
 * Ownership: a hub_lsel owns its strings; hub_lsel_free releases them.
 */
#ifndef HUB_LABEL_SELECTOR_H
#define HUB_LABEL_SELECTOR_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

#define HUB_LSEL_MAX 64 /* matchers in one selector */

enum { HUB_LM_EQ, HUB_LM_NE, HUB_LM_RE, HUB_LM_NRE };

typedef struct hub_lmatch {
	char *name;
	char *value;
	int op; /* HUB_LM_* */
} hub_lmatch;

typedef struct hub_lsel {
	hub_lmatch m[HUB_LSEL_MAX];
	size_t n;
} hub_lsel;

/* Parse s ("" and "{}" select everything) into out (which the caller
 * frees with hub_lsel_free, also after an error). WT_EINVAL with a message
 * naming the 1-based character position ("position 12: expected '='").
 * Label names are the upload contract's keys, [A-Za-z_][A-Za-z0-9_./-]*
 * (common/upload.h); values double-, single- or
 * back-quoted, with Go escapes (\" \\ \n \t \' \uXXXX left as is). */
int hub_lsel_parse(const char *s, hub_lsel *out, wt_err *err);

/* Append one matcher; takes copies. 0, WT_ELIMIT or WT_ENOMEM. */
int hub_lsel_add(hub_lsel *s, const char *name, int op, const char *value);

void hub_lsel_free(hub_lsel *s);

/* Value of the first "=" matcher on name, or NULL. */
const char *hub_lsel_get(const hub_lsel *s, const char *name);

/* The SQL column expression of a label name (service_name → service,
 * column labels, else the Nested label lookup). */
void hub_lsel_column(wt_buf *w, const char *name);

/* Append " AND <cond>" for every matcher whose name does not start with
 * "__". */
void hub_lsel_where(wt_buf *w, const hub_lsel *s);

#endif
