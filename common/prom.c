/*
 * prom.c — Prometheus text exposition (see prom.h).
 */
#include "prom.h"

#include <stdio.h>
#include <string.h>

void wt_prom_escape(wt_buf *b, const char *v)
{
	const char *run = v;

	for (; *v; v++) {
		const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
		if (!esc)
			continue;
		wt_buf_append(b, run, (size_t)(v - run));
		wt_buf_puts(b, esc);
		run = v + 1;
	}
	wt_buf_append(b, run, (size_t)(v - run));
}

void wt_prom_family(wt_buf *b, const char *name, const char *type, const char *help)
{
	wt_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* "name" or "name{k="v",...}" then a space; kv is NULL-terminated pairs. */
static void head(wt_buf *b, const char *name, const char *const *kv)
{
	wt_buf_puts(b, name);
	if (kv && kv[0]) {
		wt_buf_puts(b, "{");
		for (size_t i = 0; kv[i] && kv[i + 1]; i += 2) {
			wt_buf_printf(b, "%s%s=\"", i ? "," : "", kv[i]);
			wt_prom_escape(b, kv[i + 1]);
			wt_buf_puts(b, "\"");
		}
		wt_buf_puts(b, "}");
	}
	wt_buf_puts(b, " ");
}

void wt_prom_u64(wt_buf *b, const char *name, const char *lk, const char *lv, uint64_t v)
{
	const char *kv[3] = {lk, lv, NULL};

	wt_prom_labels_u64(b, name, kv, v);
}

void wt_prom_labels_u64(wt_buf *b, const char *name, const char *const *kv, uint64_t v)
{
	head(b, name, kv);
	wt_buf_printf(b, "%llu\n", (unsigned long long)v);
}

void wt_prom_i64(wt_buf *b, const char *name, const char *lk, const char *lv, int64_t v)
{
	const char *kv[3] = {lk, lv, NULL};

	wt_prom_labels_i64(b, name, kv, v);
}

void wt_prom_f(wt_buf *b, const char *name, const char *lk, const char *lv, int prec, double v)
{
	const char *kv[3] = {lk, lv, NULL};

	wt_prom_labels_f(b, name, kv, prec, v);
}

void wt_prom_labels_i64(wt_buf *b, const char *name, const char *const *kv, int64_t v)
{
	head(b, name, kv);
	wt_buf_printf(b, "%lld\n", (long long)v);
}

void wt_prom_labels_f(wt_buf *b, const char *name, const char *const *kv, int prec, double v)
{
	head(b, name, kv);
	wt_buf_printf(b, "%.*f\n", prec, v);
}

void wt_prom_raw_i64(wt_buf *b, const char *name, const char *labels, int64_t v)
{
	wt_buf_printf(b, "%s{%s} %lld\n", name, labels, (long long)v);
}

void wt_prom_counter(wt_buf *b, const char *name, const char *help, uint64_t v)
{
	wt_prom_family(b, name, "counter", help);
	wt_prom_u64(b, name, NULL, NULL, v);
}

void wt_prom_counter_f(wt_buf *b, const char *name, const char *help, int prec, double v)
{
	wt_prom_family(b, name, "counter", help);
	wt_prom_f(b, name, NULL, NULL, prec, v);
}

void wt_prom_gauge(wt_buf *b, const char *name, const char *help, int64_t v)
{
	wt_prom_family(b, name, "gauge", help);
	wt_prom_i64(b, name, NULL, NULL, v);
}

void wt_prom_gauge_f(wt_buf *b, const char *name, const char *help, int prec, double v)
{
	wt_prom_family(b, name, "gauge", help);
	wt_prom_f(b, name, NULL, NULL, prec, v);
}

void wt_prom_histogram(wt_buf *b, const char *name, const char *help, const double *bounds,
		       const uint64_t *counts, size_t n, uint64_t count, double sum)
{
	uint64_t cum = 0;
	char le[64];

	wt_prom_family(b, name, "histogram", help);
	for (size_t i = 0; i < n; i++) {
		cum += counts[i];
		snprintf(le, sizeof(le), "%g", bounds[i]);
		wt_buf_printf(b, "%s_bucket{le=\"%s\"} %llu\n", name, le, (unsigned long long)cum);
	}
	wt_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)count);
	wt_buf_printf(b, "%s_sum %.6f\n%s_count %llu\n", name, sum, name, (unsigned long long)count);
}

static char label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
}

void wt_prom_label_name(wt_buf *b, const char *key)
{
	for (; *key; key++)
		wt_buf_putc(b, label_char(*key));
}

int wt_prom_label_name_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (label_char(*a) != label_char(*b))
			return 0;
	return !*a && !*b;
}
