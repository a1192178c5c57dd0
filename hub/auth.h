/*
 * auth.h — projects' tokens: generation, hashing, lookup with a short-lived
 * cache, and role checks.
 *
 * Tokens are 32 random bytes (getrandom) shown once as 64 hex characters;
 * ClickHouse keeps only their sha256 (tokens_v1.token_sha256). Lookups are
 * cached for token_cache_ttl_ms (unknown tokens for at most 1 s) so a
 * revoked token stops working within that time on every hub (a revocation
 * is a newer tokens_v1 row with revoked = 1; lookups read the newest row).
 * The admin token from hub.cfg is a super-admin of every project (compared
 * in constant time). A lookup that reaches ClickHouse records the token's
 * use in token_usage_v1, at most once per HUB_TOKEN_USAGE_INTERVAL_S per
 * token and hub (the listing's last_used_ns).
 */
#ifndef HUB_AUTH_H
#define HUB_AUTH_H

#include <pthread.h>
#include <stdint.h>

#include "ch_client.h"
#include "err.h"

enum {
	HUB_ROLE_UPLOAD = 1,
	HUB_ROLE_READ = 2,
	HUB_ROLE_ADMIN = 4,
	HUB_ROLE_DELETE = 8, /* "DeleteTelemetry" */
};

#define HUB_PROJECT_MAX 64
#define HUB_TOKEN_HEX 64
#define HUB_TOKEN_USAGE_INTERVAL_S 60

typedef struct hub_principal {
	char project[HUB_PROJECT_MAX + 1]; /* "" for the super-admin */
	char token_id[33];                 /* "admin" for the super-admin */
	int role;                          /* one HUB_ROLE_* */
	int super;                         /* the hub.cfg admin token */
} hub_principal;

/* "upload" | "read" | "admin" | "DeleteTelemetry" → HUB_ROLE_*; 0 or WT_EINVAL. */
int hub_role_parse(const char *s, int *role);
const char *hub_role_name(int role);

/* 1 if name is a valid project name: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}. */
int hub_project_name_valid(const char *name);

/* New secret (64 hex chars + NUL) and id (16 hex chars + NUL). */
int hub_token_generate(char secret[HUB_TOKEN_HEX + 1], char id[17]);

typedef struct hub_auth hub_auth;

/* admin_token is borrowed (must outlive the cache). NULL on OOM. */
hub_auth *hub_auth_new(const char *admin_token, int ttl_ms);
void hub_auth_free(hub_auth *a);
/* Forget every cached entry (after token changes made by this hub). */
void hub_auth_flush(hub_auth *a);

/* Resolve a bearer token. WT_EAUTH when unknown/revoked, WT_EUNAVAIL when
 * ClickHouse cannot be asked (and the token is not cached). */
int hub_auth_lookup(hub_auth *a, hub_ch *ch, const char *token, hub_principal *out, wt_err *err);

/* 0 if p may act with `need` (one HUB_ROLE_*) on project; else
 * WT_EFORBIDDEN with a message. ADMIN implies UPLOAD and READ. */
int hub_auth_allows(const hub_principal *p, const char *project, int need, wt_err *err);

#endif
