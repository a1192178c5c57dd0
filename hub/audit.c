/*
 * audit.c — insert one audit event row (see audit.h).
 */
#include "audit.h"
#include "clock.h"

#include "ch_format.h"
#include "ch_health.h"

int hub_audit_record(hub_ch *ch, const char *project, const char *actor, const char *action,
		     const char *detail, const char *deletion_id, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	int rc;

	wt_buf_printf(&sql, "INSERT INTO audit_events_v1 (time_ns, project, actor, action, detail, deletion_id)"
		      " VALUES (%lld, ", (long long)wt_now_ns(CLOCK_REALTIME));
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, actor);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, action);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, detail);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, deletion_id ? deletion_id : "");
	wt_buf_puts(&sql, ")");
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	return rc;
}
