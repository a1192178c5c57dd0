/*
 * audit.h — append-only audit events (audit_events_v1): who did what to
 * which project. Admin actions are recorded before they take effect where
 * order matters (deletions, later issue).
 */
#ifndef HUB_AUDIT_H
#define HUB_AUDIT_H

#include "ch_client.h"

/* deletion_id may be NULL. 0 or the ClickHouse error. */
int hub_audit_record(hub_ch *ch, const char *project, const char *actor, const char *action,
		     const char *detail, const char *deletion_id, wt_err *err);

#endif
