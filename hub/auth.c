/*
 * auth.c — token generation, sha256 lookup in tokens_v1 with a bounded
 * cache, and role checks (see auth.h).
 */
#include "auth.h"
#include "clock.h"

#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "log.h"
#include "rng.h"
#include "sha.h"
#include "ch_health.h"

#define CACHE_SLOTS 4096
#define NEG_TTL_NS 1000000000LL

typedef struct slot {
	char hash[HUB_SHA256_HEX_LEN + 1];
	hub_principal p;
	int found;
	int64_t expires_ns;
	int64_t usage_ns; /* when this hub last wrote a token_usage_v1 row for it */
} slot;

struct hub_auth {
	const char *admin_token;
	int64_t ttl_ns;
	pthread_mutex_t mu;
	slot slots[CACHE_SLOTS];
};

static const struct { const char *name; int role; } roles[] = {
	{"upload", HUB_ROLE_UPLOAD},
	{"read", HUB_ROLE_READ},
	{"admin", HUB_ROLE_ADMIN},
	{"DeleteTelemetry", HUB_ROLE_DELETE},
};

int hub_role_parse(const char *s, int *role)
{
	size_t i;

	for (i = 0; s && i < sizeof(roles) / sizeof(roles[0]); i++)
		if (!strcmp(s, roles[i].name)) {
			*role = roles[i].role;
			return 0;
		}
	return WT_EINVAL;
}

const char *hub_role_name(int role)
{
	size_t i;

	for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (roles[i].role == role)
			return roles[i].name;
	return "unknown";
}

int hub_project_name_valid(const char *name)
{
	size_t i, n = name ? strlen(name) : 0;

	if (n == 0 || n > HUB_PROJECT_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return 0;
	}
	return 1;
}

int hub_token_generate(char secret[HUB_TOKEN_HEX + 1], char id[17])
{
	uint8_t rnd[32], rid[8];

	if (wt_random_bytes(rnd, sizeof(rnd)) || wt_random_bytes(rid, sizeof(rid)))
		return WT_EIO;
	hub_hex(rnd, sizeof(rnd), secret);
	hub_hex(rid, sizeof(rid), id);
	return 0;
}

hub_auth *hub_auth_new(const char *admin_token, int ttl_ms)
{
	hub_auth *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->admin_token = admin_token;
	a->ttl_ns = (int64_t)ttl_ms * 1000000LL;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

void hub_auth_free(hub_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	free(a);
}

void hub_auth_flush(hub_auth *a)
{
	pthread_mutex_lock(&a->mu);
	memset(a->slots, 0, sizeof(a->slots));
	pthread_mutex_unlock(&a->mu);
}

static int ct_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i;
	unsigned char d = la != lb;

	for (i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

static size_t slot_of(const char *hash)
{
	size_t h = 0;
	int i;

	for (i = 0; i < 8; i++)
		h = (h << 4) | (size_t)(hash[i] <= '9' ? hash[i] - '0' : hash[i] - 'a' + 10);
	return h % CACHE_SLOTS;
}

typedef struct lookup_ctx {
	hub_principal *p;
	int found;
} lookup_ctx;

static int token_row(void *ctx, char **f, size_t n)
{
	lookup_ctx *lc = ctx;
	int role;

	if (n < 4 || hub_role_parse(f[2], &role) || strcmp(f[3], "0"))
		return 0; /* the newest version says revoked */
	snprintf(lc->p->project, sizeof(lc->p->project), "%s", f[0]);
	snprintf(lc->p->token_id, sizeof(lc->p->token_id), "%s", f[1]);
	lc->p->role = role;
	lc->p->super = 0;
	lc->found = 1;
	return 0;
}

int hub_auth_lookup(hub_auth *a, hub_ch *ch, const char *token, hub_principal *out, wt_err *err)
{
	char hash[HUB_SHA256_HEX_LEN + 1];
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	lookup_ctx lc = {out, 0};
	slot *s;
	int rc = 0, record;

	memset(out, 0, sizeof(*out));
	if (!token || !*token)
		return wt_err_set(err, WT_EAUTH, "missing bearer token");
	if (ct_equal(token, a->admin_token)) {
		out->super = 1;
		out->role = HUB_ROLE_ADMIN;
		snprintf(out->token_id, sizeof(out->token_id), "admin");
		return 0;
	}
	hub_sha256_hex(token, strlen(token), hash);
	pthread_mutex_lock(&a->mu);
	s = &a->slots[slot_of(hash)];
	if (!strcmp(s->hash, hash) && s->expires_ns > now) {
		int found = s->found;
		*out = s->p;
		pthread_mutex_unlock(&a->mu);
		return found ? 0 : wt_err_set(err, WT_EAUTH, "unknown or revoked token");
	}
	pthread_mutex_unlock(&a->mu);

	/* the newest version of the token's row: a revocation is a newer row
	 * with revoked = 1 (not FINAL + WHERE revoked = 0, which may see the
	 * older row before the parts are merged) */
	wt_buf_puts(&sql, "SELECT project, id, role, revoked FROM tokens_v1 WHERE token_sha256 = ");
	hub_sql_quote(&sql, hash);
	wt_buf_puts(&sql, " ORDER BY updated_ns DESC LIMIT 1 FORMAT TabSeparated");
	if (sql.oom || wt_buf_putc(&sql, '\0')) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = hub_ch_query(ch, (const char *)sql.data, &res, err)))
		goto out;
	hub_tsv_each((char *)res.data, res.len, 4, token_row, &lc);
	pthread_mutex_lock(&a->mu);
	if (strcmp(s->hash, hash))
		s->usage_ns = 0;
	snprintf(s->hash, sizeof(s->hash), "%s", hash);
	s->p = *out;
	s->found = lc.found;
	s->expires_ns = now + (lc.found ? a->ttl_ns : (a->ttl_ns < NEG_TTL_NS ? a->ttl_ns : NEG_TTL_NS));
	record = lc.found && now - s->usage_ns >= HUB_TOKEN_USAGE_INTERVAL_S * 1000000000LL;
	if (record)
		s->usage_ns = now;
	pthread_mutex_unlock(&a->mu);
	if (record) {
		/* last use, for the token listing; a failure only loses that */
		wt_err uerr = {0, ""};
		wt_buf_reset(&sql);
		wt_buf_puts(&sql, "INSERT INTO token_usage_v1 (project, id, used_ns) VALUES (");
		hub_sql_quote(&sql, out->project);
		wt_buf_puts(&sql, ", ");
		hub_sql_quote(&sql, out->token_id);
		wt_buf_printf(&sql, ", %lld)", (long long)now);
		if (hub_ch_query_buf(ch, &sql, NULL, &uerr))
			wt_warn("msg=\"token use not recorded\" id=%s error=\"%s\"", out->token_id, uerr.msg);
	}
	if (!lc.found)
		rc = wt_err_set(err, WT_EAUTH, "unknown or revoked token");
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

int hub_auth_allows(const hub_principal *p, const char *project, int need, wt_err *err)
{
	if (p->super)
		return 0;
	if (!project || strcmp(p->project, project))
		return wt_err_set(err, WT_EFORBIDDEN, "token does not belong to project \"%s\"",
				  project ? project : "");
	if (p->role == need)
		return 0;
	if (p->role == HUB_ROLE_ADMIN && (need == HUB_ROLE_READ || need == HUB_ROLE_UPLOAD))
		return 0;
	return wt_err_set(err, WT_EFORBIDDEN, "token role \"%s\" cannot %s", hub_role_name(p->role),
			  need == HUB_ROLE_UPLOAD ? "upload" : need == HUB_ROLE_READ ? "read profiles" :
			  need == HUB_ROLE_DELETE ? "delete telemetry" : "administer the project");
}
