/*
 * repl_claim.h — the claim that makes one hub, of all hubs sharing the
 * ClickHouse database, the only one applying a replication batch's seqs
 * (protocol and argument in repl.h; used by repl_apply.c).
 *
 * Usage: hub_repl_claim_insert() first (before the ledger is read),
 * hub_repl_claim_decide() before anything depends on being the only
 * applier (it waits out the settle time), hub_repl_claim_keep() before
 * every data INSERT, hub_repl_claim_release() at the end whatever happened.
 * Errors are WT_EUNAVAIL (retry_after_s > 0: another apply holds the seqs)
 * or ClickHouse's.
 */
#ifndef HUB_REPL_CLAIM_H
#define HUB_REPL_CLAIM_H

#include <stdint.h>

#include "ch_client.h"
#include "err.h"

#define HUB_REPL_RETRY_MAX_S 5 /* longest Retry-After given to an edge */

typedef struct hub_repl_claim {
	char edge[128], incarnation[72];
	char token[160];          /* hub instance id / counter: unique per claim */
	uint64_t lo, hi;          /* seq range claimed */
	int64_t claim_ns;         /* hub clock when the claim was written (its rank) */
	int64_t expires_ns;       /* lease end, as last written */
	int64_t version;
	int64_t ttl_ns, settle_ns;
	int64_t need_ns;          /* lease an INSERT needs left when it starts */
	int inserted, won;
	int retry_after_s;        /* set when refused: when the edge should ask again */
} hub_repl_claim;

/* Write a claim on [lo, hi] of (edge, incarnation) with a lease of ttl_s.
 * insert_ms: the longest one data INSERT can take (hub_config_insert_budget_ms);
 * ttl_s must exceed twice insert_ms + settle_ms (hub/config.c checks).
 * Fails (WT_EUNAVAIL, retry_after_s = 1) when the write took longer than
 * settle_ms: such a claim may be missed by others and must not win. */
int hub_repl_claim_insert(hub_ch *ch, hub_repl_claim *c, const char *edge, const char *incarnation, uint64_t lo,
			  uint64_t hi, int ttl_s, int settle_ms, long long insert_ms, wt_err *err);

/* Wait until settle_ms after the claim was written, then read the live
 * claims overlapping it: 0 when ours is the earliest (we apply), else
 * WT_EUNAVAIL with retry_after_s set and our claim released. Idempotent
 * once won. */
int hub_repl_claim_decide(hub_ch *ch, hub_repl_claim *c, wt_err *err);

/* Before each data INSERT: renew the lease when half of it is gone or
 * less is left than the INSERT may take; WT_EUNAVAIL when it is (nearly)
 * expired — others may take over, so nothing more may be written under
 * it. An INSERT therefore always ends (or is abandoned by ClickHouse's
 * timeout) before the lease others see runs out. */
int hub_repl_claim_keep(hub_ch *ch, hub_repl_claim *c, wt_err *err);

/* Mark the claim released (no-op when not inserted). Never fails: a
 * release that cannot be written is kept and retried by
 * hub_repl_claim_flush(); at worst the claim expires after its lease. */
void hub_repl_claim_release(hub_ch *ch, hub_repl_claim *c);

/* Retry the releases that failed in this process (call before an apply;
 * no query when there are none). */
void hub_repl_claim_flush(hub_ch *ch);

#endif
