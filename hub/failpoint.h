/*
 * failpoint.h — test hooks that hold a request at a named point so an
 * integration test can force an interleaving (e.g. an upload paused
 * between its object-store put and its index row while a deletion runs).
 *
 * WT_FAILPOINT_WAIT=<name>:<dir> arms point <name>: when the code reaches
 * it and <dir>/armed exists, the hub removes <dir>/armed (one shot),
 * creates <dir>/reached, and waits until <dir>/release exists (at most
 * HUB_FAILPOINT_MAX_WAIT_S). Unset (production) it costs one getenv.
 */
#ifndef HUB_FAILPOINT_H
#define HUB_FAILPOINT_H

#define HUB_FAILPOINT_MAX_WAIT_S 120

void hub_failpoint_wait(const char *name);

/* WT_FAILPOINT_SLOW=<edge_id>:<ms> makes the preparation of every upload
 * and every data-block INSERT of a replication batch from that edge take
 * <ms> longer (a sleep), so an apply can outlast the edge's
 * replication.timeout_s or the claim's lease (tests/soak/test_repl_wan.py,
 * test_repl_exactly_once.py). Unset: one getenv per call. */
void hub_failpoint_slow(const char *edge_id);

/* WT_FAILPOINT_INSERT=<K>[,<K>...] makes the K-th data-block INSERT of the
 * hub process (counted from 1: stacks, samples and rollup blocks of direct
 * uploads (ch_rows.c) and of replication batches (repl_apply.c)) fail
 * after ClickHouse stored it, as a timeout after the commit would
 * (tests/integration/test_direct_retry.py). Call after a successful
 * INSERT: 0, or WT_EUNAVAIL set in err. Unset: one getenv per call. */
struct wt_err;
int hub_failpoint_insert(struct wt_err *err);

#endif
