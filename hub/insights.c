/*
 * insights.c — burst, saturation and starvation detection over a dense
 * per-bucket CPU series (see insights.h).
 */
#include "insights.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

void hub_insight_opts_default(hub_insight_opts *o)
{
	o->bucket_ns = 100000000LL;
	o->window = 10;
	o->burst_usage = 0.75;
	o->burst_min_ns = 10000000000LL;
	o->sat_usage = 1.0;
	o->sat_min_ns = 1000000000LL;
	o->busy_usage = 0.5;
	o->starve_min_ns = 100000000LL;
	o->starve_max_ns = 2000000000LL;
}

const char *hub_insight_kind_name(int kind)
{
	switch (kind) {
	case HUB_INSIGHT_BURST: return "cpu_burst";
	case HUB_INSIGHT_SATURATION: return "cpu_saturation";
	default: return "starvation";
	}
}

static int push(hub_insight_card **cards, size_t *n, const hub_insight_card *c)
{
	hub_insight_card *nc = realloc(*cards, (*n + 1) * sizeof(*nc));

	if (!nc)
		return WT_ENOMEM;
	nc[*n] = *c;
	*cards = nc;
	(*n)++;
	return 0;
}

/* Window-marked runs above (strict) or at least (!strict) `usage`. */
static int runs(const int64_t *cpu, const int64_t *pre, size_t n, int64_t b0, const hub_insight_opts *o,
		double usage, int strict, int64_t min_ns, int kind, unsigned char *mark, double *peak,
		hub_insight_card **cards, size_t *ncards)
{
	size_t w = (size_t)o->window, i, a, b;
	double win_ns = (double)o->window * (double)o->bucket_ns;

	memset(mark, 0, n);
	for (i = 0; i < n; i++)
		peak[i] = 0;
	for (i = 0; i + w <= n; i++) {
		double mean = (double)(pre[i + w] - pre[i]) / win_ns;
		size_t k;
		if (strict ? !(mean > usage) : !(mean >= usage))
			continue;
		for (k = i; k < i + w; k++) {
			mark[k] = 1;
			if (mean > peak[k])
				peak[k] = mean;
		}
	}
	for (i = 0; i < n;) {
		double pk = 0;
		size_t k;
		if (!mark[i]) {
			i++;
			continue;
		}
		a = i;
		while (i < n && mark[i])
			i++;
		b = i - 1;
		while (a <= b && cpu[a] == 0)
			a++;
		while (b > a && cpu[b] == 0)
			b--;
		if (a > b || cpu[a] == 0)
			continue;
		if ((int64_t)(b - a + 1) * o->bucket_ns < min_ns)
			continue;
		for (k = a; k <= b; k++)
			if (peak[k] > pk)
				pk = peak[k];
		{
			hub_insight_card c = {kind, (b0 + (int64_t)a) * o->bucket_ns,
					      (b0 + (int64_t)b + 1) * o->bucket_ns,
					      (double)(pre[b + 1] - pre[a]) / ((double)(b - a + 1) * (double)o->bucket_ns),
					      pk};
			if (push(cards, ncards, &c))
				return WT_ENOMEM;
		}
	}
	return 0;
}

int hub_insights_find(const int64_t *cpu, size_t n, int64_t b0, const hub_insight_opts *o,
		      hub_insight_card **cards, size_t *ncards)
{
	int64_t *pre = calloc(n + 1, sizeof(*pre));
	unsigned char *mark = malloc(n + 1);
	double *peak = malloc((n + 1) * sizeof(*peak));
	double busy = o->busy_usage * (double)o->bucket_ns;
	size_t i;
	int rc = 0;

	if (!pre || !mark || !peak) {
		rc = WT_ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		pre[i + 1] = pre[i] + cpu[i];
	if ((rc = runs(cpu, pre, n, b0, o, o->burst_usage, 1, o->burst_min_ns, HUB_INSIGHT_BURST, mark, peak,
		       cards, ncards)) ||
	    (rc = runs(cpu, pre, n, b0, o, o->sat_usage, 0, o->sat_min_ns, HUB_INSIGHT_SATURATION, mark, peak,
		       cards, ncards)))
		goto out;
	for (i = 1; i < n;) {
		size_t a, b;
		int64_t len;
		if (cpu[i] != 0) {
			i++;
			continue;
		}
		a = i;
		while (i < n && cpu[i] == 0)
			i++;
		b = i - 1;
		if (i >= n)
			break; /* the series ends idle: no busy bucket after */
		len = (int64_t)(b - a + 1) * o->bucket_ns;
		if ((double)cpu[a - 1] >= busy && (double)cpu[b + 1] >= busy && len >= o->starve_min_ns &&
		    len <= o->starve_max_ns) {
			hub_insight_card c = {HUB_INSIGHT_STARVATION, (b0 + (int64_t)a) * o->bucket_ns,
					      (b0 + (int64_t)b + 1) * o->bucket_ns, (double)len / 1e9, 0};
			if ((rc = push(cards, ncards, &c)))
				goto out;
		}
	}
out:
	free(pre);
	free(mark);
	free(peak);
	return rc;
}
