/*
 * repl_claim.c — who applies a replication batch: a claim with an owner and
 * a lease on (edge, incarnation, seq range), kept in ClickHouse so that it
 * holds across every hub sharing the database (repl.h has the protocol and
 * the argument; docs/operations.md "## Replication" the operator's view).
 *
 * Table repl_claims_v1 is append-only: a claim is a row (token, claim_ns,
 * expires_ns, version); renewing or releasing it appends a row with a higher
 * version, and the newest version's expires_ns is the lease (0 = released).
 */
#include "repl_claim.h"
#include "clock.h"

#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "hub.h"
#include "log.h"
#include "worker.h"

static int claim_row(hub_ch *ch, const hub_repl_claim *c, int64_t expires_ns, int64_t version, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&sql, "INSERT INTO repl_claims_v1 (edge_id, incarnation, first_seq, last_seq, token, claim_ns,"
			  " expires_ns, version) VALUES (");
	hub_sql_quote(&sql, c->edge);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, c->incarnation);
	wt_buf_printf(&sql, ", %" PRIu64 ", %" PRIu64 ", ", c->lo, c->hi);
	hub_sql_quote(&sql, c->token);
	wt_buf_printf(&sql, ", %" PRId64 ", %" PRId64 ", %" PRId64 ")", c->claim_ns, expires_ns, version);
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	return rc;
}

int hub_repl_claim_insert(hub_ch *ch, hub_repl_claim *c, const char *edge, const char *incarnation, uint64_t lo,
			  uint64_t hi, int ttl_s, int settle_ms, long long insert_ms, wt_err *err)
{
	static _Atomic uint64_t counter;
	int64_t done;
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->edge, sizeof(c->edge), "%s", edge);
	snprintf(c->incarnation, sizeof(c->incarnation), "%s", incarnation);
	snprintf(c->token, sizeof(c->token), "%s/%" PRIu64, hub_worker_instance(), atomic_fetch_add(&counter, 1));
	c->lo = lo;
	c->hi = hi;
	c->ttl_ns = (int64_t)ttl_s * 1000000000LL;
	c->settle_ns = (int64_t)settle_ms * 1000000LL;
	c->need_ns = (int64_t)insert_ms * 1000000LL + c->settle_ns;
	c->claim_ns = wt_now_ns(CLOCK_REALTIME);
	c->expires_ns = c->claim_ns + c->ttl_ns;
	c->version = c->claim_ns;
	if ((rc = claim_row(ch, c, c->expires_ns, c->version, err)))
		return rc;
	c->inserted = 1;
	done = wt_now_ns(CLOCK_REALTIME);
	if (done - c->claim_ns > c->settle_ns) {
		/* Others may already have decided without seeing this claim:
		 * it must not win. */
		c->retry_after_s = 1;
		hub_repl_claim_release(ch, c);
		return wt_err_set(err, WT_EUNAVAIL, "replication claim: writing it took %" PRId64 " ms, more than"
				  " replication.claim_settle_ms (%d); retry", (done - c->claim_ns) / 1000000, settle_ms);
	}
	return 0;
}

typedef struct live_ctx {
	char first[160];
	int64_t first_expires;
	size_t n;
} live_ctx;

static int live_row(void *vctx, char **f, size_t n)
{
	live_ctx *l = vctx;

	if (n < 3)
		return 0;
	if (!l->n++) {
		snprintf(l->first, sizeof(l->first), "%s", f[0]);
		l->first_expires = strtoll(f[2], NULL, 10);
	}
	return 0;
}

int hub_repl_claim_decide(hub_ch *ch, hub_repl_claim *c, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	live_ctx l;
	int64_t now = wt_now_ns(CLOCK_REALTIME), wait = c->claim_ns + c->settle_ns - now;
	int rc;

	if (c->won)
		return 0;
	if (wait > 0) {
		wt_sleep_ns(wait);
		now = wt_now_ns(CLOCK_REALTIME);
	}
	/* Every live claim overlapping ours, earliest first: a claim written
	 * before ours is visible by now (repl.h), so the first row is the same
	 * for every claimant that reads it. */
	wt_buf_puts(&sql, "SELECT token, min(claim_ns) AS c, argMax(expires_ns, version) AS e FROM repl_claims_v1"
			  " WHERE edge_id = ");
	hub_sql_quote(&sql, c->edge);
	wt_buf_puts(&sql, " AND incarnation = ");
	hub_sql_quote(&sql, c->incarnation);
	wt_buf_printf(&sql, " AND first_seq <= %" PRIu64 " AND last_seq >= %" PRIu64 " GROUP BY token"
		      " HAVING e > %" PRId64 " ORDER BY c, token FORMAT TabSeparated", c->hi, c->lo, now);
	memset(&l, 0, sizeof(l));
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 3, live_row, &l);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	if (rc)
		return rc;
	if (l.n && !strcmp(l.first, c->token)) {
		c->won = 1;
		return 0;
	}
	/* Someone else applies these seqs (or ours vanished): come back
	 * when that apply has had time to end, at most a few seconds. */
	if (l.n) {
		int64_t left = (l.first_expires - now) / 1000000000LL + 1;
		c->retry_after_s = left < 1 ? 1 : left > HUB_REPL_RETRY_MAX_S ? HUB_REPL_RETRY_MAX_S : (int)left;
	} else {
		c->retry_after_s = 1;
	}
	hub_repl_claim_release(ch, c);
	return wt_err_set(err, WT_EUNAVAIL, "seqs %" PRIu64 "..%" PRIu64 " of edge %s are being applied by %s;"
			  " retry in %d s", c->lo, c->hi, c->edge, l.n ? l.first : "(claim not visible)",
			  c->retry_after_s);
}

int hub_repl_claim_keep(hub_ch *ch, hub_repl_claim *c, wt_err *err)
{
	int64_t now = wt_now_ns(CLOCK_REALTIME), v;
	int rc;

	if (now + c->settle_ns >= c->expires_ns)
		return wt_err_set(err, WT_EUNAVAIL, "replication claim on edge %s seqs %" PRIu64 "..%" PRIu64
				  " expired while applying (replication.claim_ttl_s too short for this batch?)",
				  c->edge, c->lo, c->hi);
	if (c->expires_ns - now > c->ttl_ns / 2 && c->expires_ns - now > c->need_ns)
		return 0;
	v = now > c->version ? now : c->version + 1;
	if ((rc = claim_row(ch, c, now + c->ttl_ns, v, err)))
		return rc;
	c->version = v;
	c->expires_ns = now + c->ttl_ns;
	/* the renewal itself took time: check again */
	now = wt_now_ns(CLOCK_REALTIME);
	if (c->expires_ns - now <= c->need_ns)
		return wt_err_set(err, WT_EUNAVAIL, "replication claim on edge %s: lease of %lld s leaves less"
				  " than an INSERT may take; raise replication.claim_ttl_s", c->edge,
				  (long long)(c->ttl_ns / 1000000000LL));
	return 0;
}

/* Claims whose release failed (ClickHouse unreachable at the end of the
 * apply): released again before the next apply on this hub, so a
 * ClickHouse outage does not leave the edge's seqs blocked for a lease. */
#define PENDING_MAX 64
static hub_repl_claim pending[PENDING_MAX];
static size_t npending;
static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;

static int release_row(hub_ch *ch, hub_repl_claim *c, wt_err *err)
{
	int64_t now = wt_now_ns(CLOCK_REALTIME), v = now > c->version ? now : c->version + 1;
	int rc = claim_row(ch, c, 0, v, err);

	if (!rc)
		c->version = v;
	return rc;
}

void hub_repl_claim_release(hub_ch *ch, hub_repl_claim *c)
{
	wt_err err = {0, ""};

	if (!c->inserted)
		return;
	c->inserted = 0;
	if (!release_row(ch, c, &err))
		return;
	pthread_mutex_lock(&pending_mu);
	if (npending < PENDING_MAX)
		pending[npending++] = *c;
	pthread_mutex_unlock(&pending_mu);
	wt_warn("msg=\"replication claim not released; retried before the next apply (else it expires by itself)\""
		" edge=%s seqs=%" PRIu64 "..%" PRIu64 " error=\"%s\"", c->edge, c->lo, c->hi, err.msg);
}

void hub_repl_claim_flush(hub_ch *ch)
{
	hub_repl_claim c;
	wt_err err = {0, ""};

	for (;;) {
		pthread_mutex_lock(&pending_mu);
		if (!npending) {
			pthread_mutex_unlock(&pending_mu);
			return;
		}
		c = pending[--npending];
		pthread_mutex_unlock(&pending_mu);
		if (release_row(ch, &c, &err)) {
			pthread_mutex_lock(&pending_mu);
			if (npending < PENDING_MAX)
				pending[npending++] = c;
			pthread_mutex_unlock(&pending_mu);
			return; /* still unreachable: next time */
		}
		wt_info("msg=\"replication claim released late\" edge=%s seqs=%" PRIu64 "..%" PRIu64, c.edge, c.lo, c.hi);
	}
}
