/*
 * failpoint.c — WT_FAILPOINT_WAIT and WT_FAILPOINT_SLOW (see failpoint.h).
 */
#include "failpoint.h"

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "log.h"

void hub_failpoint_wait(const char *name)
{
	const char *fp = getenv("WT_FAILPOINT_WAIT"), *colon;
	char path[PATH_MAX];
	size_t nl = strlen(name);
	int fd, i;

	if (!fp || !(colon = strchr(fp, ':')) || (size_t)(colon - fp) != nl || strncmp(fp, name, nl))
		return;
	snprintf(path, sizeof(path), "%s/armed", colon + 1);
	if (unlink(path))
		return; /* not armed: pass */
	snprintf(path, sizeof(path), "%s/reached", colon + 1);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
		close(fd);
	wt_warn("msg=\"failpoint reached; waiting for release\" failpoint=%s", name);
	snprintf(path, sizeof(path), "%s/release", colon + 1);
	for (i = 0; i < HUB_FAILPOINT_MAX_WAIT_S * 100 && access(path, F_OK); i++)
		wt_sleep_ms(10);
	wt_warn("msg=\"failpoint released\" failpoint=%s", name);
}

void hub_failpoint_slow(const char *edge_id)
{
	const char *fp = getenv("WT_FAILPOINT_SLOW"), *colon;
	size_t nl = strlen(edge_id);
	long ms;

	if (!fp || !(colon = strrchr(fp, ':')) || (size_t)(colon - fp) != nl || strncmp(fp, edge_id, nl))
		return;
	ms = atol(colon + 1);
	if (ms <= 0 || ms > HUB_FAILPOINT_MAX_WAIT_S * 1000L)
		return;
	wt_sleep_ms(ms);
}

int hub_failpoint_insert(wt_err *err)
{
	static _Atomic long blocks;
	const char *fp = getenv("WT_FAILPOINT_INSERT"), *q;
	long n;

	if (!fp)
		return 0;
	n = atomic_fetch_add(&blocks, 1) + 1;
	for (q = fp; *q; q++)
		if ((q == fp || q[-1] == ',') && atol(q) == n) {
			wt_warn("msg=\"failpoint: INSERT block reported as failed after it was stored\" block=%ld", n);
			return wt_err_set(err, WT_EUNAVAIL, "clickhouse: timeout (failpoint: insert block %ld)", n);
		}
	return 0;
}
