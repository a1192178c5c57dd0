/*
 * test_config_client.c — edge/config_client.c applying a remote config:
 * a token is accepted when its sha256 (computed here with a hand-checked
 * reference: sha256("abc") from FIPS 180-2) is listed for its role; local
 * tokens keep working; limits are min(local, policy); malformed configs
 * are refused with the field named and leave the previous config in force;
 * the policy's ebpf.python reaches the sampler policy hook, and the
 * per-service interpreter-frame rules decide first match first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "edge/config.h"
#include "edge/config_client.h"

/* FIPS 180-2 appendix B.1: sha256("abc") */
#define ABC_SHA256 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static void test_apply(void **state)
{
	edge_config cfg;
	edge_config_client *c;
	wt_err err = {0, ""};
	char *up[] = {"local-up"};
	edge_project_cfg proj = {"demo", up, 1, NULL, 0};
	const char *conf =
		"{\"edge_id\":\"edge1\",\"etag\":\"x\",\"projects\":[{\"name\":\"demo\",\"policy_revision\":3,"
		"\"effective\":{\"limits\":{\"max_body\":4096,\"max_samples\":999999999}},"
		"\"upload_token_sha256\":[\"" ABC_SHA256 "\"],\"read_token_sha256\":[]}]}";
	(void)state;

	edge_config_defaults(&cfg);
	free(cfg.id);
	cfg.id = strdup("edge1");
	cfg.projects = &proj;
	cfg.nprojects = 1;
	c = edge_config_client_new_detached(&cfg);
	assert_non_null(c);
	edge_config_set_remote_auth(NULL, NULL);
	assert_null(edge_config_auth(&cfg, "abc", EDGE_ROLE_UPLOAD));

	assert_int_equal(edge_config_client_apply(c, conf, strlen(conf), 0, &err), 0);
	assert_int_equal(cfg.max_body, 4096);          /* tighter than the local 64 MiB */
	assert_int_equal(cfg.max_samples, 5000000);    /* the policy cannot raise the local limit */

	edge_config_client_register_auth(c);
	assert_ptr_equal(edge_config_auth(&cfg, "abc", EDGE_ROLE_UPLOAD), &proj);
	assert_null(edge_config_auth(&cfg, "abc", EDGE_ROLE_READ));   /* listed for upload only */
	assert_null(edge_config_auth(&cfg, "abd", EDGE_ROLE_UPLOAD));
	assert_ptr_equal(edge_config_auth(&cfg, "local-up", EDGE_ROLE_UPLOAD), &proj);
	/* a bad config is refused and the previous one stays in force */
	assert_int_equal(edge_config_client_apply(c, "{\"edge_id\":\"edge1\"}", 18, 0, &err), WT_EINVAL);
	assert_ptr_equal(edge_config_auth(&cfg, "abc", EDGE_ROLE_UPLOAD), &proj);
	edge_config_client_register_auth(NULL);
	edge_config_client_free_detached(c);
	cfg.projects = NULL;
	cfg.nprojects = 0;
	edge_config_free(&cfg);
}

static void test_reject(void **state)
{
	edge_config cfg;
	edge_config_client *c;
	wt_err err = {0, ""};
	(void)state;

	edge_config_defaults(&cfg);
	c = edge_config_client_new_detached(&cfg);
	assert_int_equal(edge_config_client_apply(c, "[]", 2, 0, &err), WT_EINVAL);
	{
		const char *other = "{\"edge_id\":\"other\",\"projects\":[]}";
		assert_int_equal(edge_config_client_apply(c, other, strlen(other), 0, &err), WT_EINVAL);
	}
	assert_non_null(strstr(err.msg, "edge_id"));
	{
		const char *bad = "{\"edge_id\":\"edge1\",\"projects\":[{\"name\":\"demo\",\"upload_token_sha256\":[\"zz\"]}]}";
		assert_int_equal(edge_config_client_apply(c, bad, strlen(bad), 0, &err), WT_EINVAL);
		assert_non_null(strstr(err.msg, "projects[0].upload_token_sha256[0]"));
	}
	edge_config_client_free_detached(c);
	edge_config_free(&cfg);
}

static int g_python = -2, g_lock = -2, g_lock_address = -2, g_alloc = -2;

static void hook(void *arg, const edge_sampler_policy *p)
{
	(void)arg;
	g_python = p->python;
	g_lock = p->lock;
	g_lock_address = p->lock_address;
	g_alloc = p->alloc;
}

/* A detached client of edge1 over cfg (after edge_config_defaults), with
 * proj as its one project and default, and the policy hook above set. */
static edge_config_client *policy_client(edge_config *cfg, edge_project_cfg *proj)
{
	edge_config_client *c;

	free(cfg->id);
	cfg->id = strdup("edge1");
	free(cfg->default_project);
	cfg->default_project = strdup("demo");
	cfg->projects = proj;
	cfg->nprojects = 1;
	c = edge_config_client_new_detached(cfg);
	assert_non_null(c);
	edge_config_set_policy_hook(hook, NULL);
	return c;
}

/* Undo policy_client and free cfg (proj is the caller's). */
static void policy_client_free(edge_config_client *c, edge_config *cfg)
{
	edge_config_set_policy_hook(NULL, NULL);
	edge_config_client_free_detached(c);
	cfg->projects = NULL;
	cfg->nprojects = 0;
	edge_config_free(cfg);
}

static void test_python_policy(void **state)
{
	edge_config cfg;
	edge_config_client *c;
	wt_err err = {0, ""};
	edge_project_cfg proj = {"demo", NULL, 0, NULL, 0};
	const char *conf =
		"{\"edge_id\":\"edge1\",\"etag\":\"y\",\"projects\":[{\"name\":\"demo\",\"policy_revision\":4,"
		"\"effective\":{\"ebpf\":{\"python\":false},\"services\":[{\"match\":{\"service\":\"api-*\"},"
		"\"ebpf\":{\"python\":true}}]},\"upload_token_sha256\":[],\"read_token_sha256\":[]}]}";
	(void)state;

	edge_config_defaults(&cfg);
	assert_int_equal(cfg.ebpf.python, 1); /* on by default */
	c = policy_client(&cfg, &proj);
	assert_int_equal(edge_config_client_apply(c, conf, strlen(conf), 0, &err), 0);
	assert_int_equal(g_python, 0);
	policy_client_free(c, &cfg);

	/* first match wins; a rule without ebpf.python (-1) keeps the default */
	edge_service_rule rules[] = {{"api-*", {1, -1, -1, -1}}, {"db*", {-1, -1, -1, -1}}, {"*", {0, -1, -1, -1}}};
	edge_ebpf_cfg e = {0};
	e.svc_rules = rules;
	e.nsvc_rules = 3;
	e.python = 1;
	assert_int_equal(edge_ebpf_cfg_python(&e, "api-1"), 1);
	assert_int_equal(edge_ebpf_cfg_python(&e, "db-main"), 1);
	assert_int_equal(edge_ebpf_cfg_python(&e, "web"), 0);
	e.python = 0;
	assert_int_equal(edge_ebpf_cfg_python(&e, "api-1"), 1);
	assert_int_equal(edge_ebpf_cfg_python(&e, "db-main"), 0);
	e.nsvc_rules = 0;
	assert_int_equal(edge_ebpf_cfg_python(&e, "api-1"), 0);
}

/* lock contention: rules.ebpf.lock, sample_types.lock = false wins over
 * it; per service the same first-match rules as ebpf.python */
static void test_lock_policy(void **state)
{
	edge_config cfg;
	edge_config_client *c;
	wt_err err = {0, ""};
	edge_project_cfg proj = {"demo", NULL, 0, NULL, 0};
	const char *off = "{\"edge_id\":\"edge1\",\"etag\":\"a\",\"projects\":[{\"name\":\"demo\",\"policy_revision\":1,"
			  "\"effective\":{\"ebpf\":{\"lock\":true},\"sample_types\":{\"lock\":false}},"
			  "\"upload_token_sha256\":[],\"read_token_sha256\":[]}]}";
	const char *on = "{\"edge_id\":\"edge1\",\"etag\":\"b\",\"projects\":[{\"name\":\"demo\",\"policy_revision\":2,"
			 "\"effective\":{\"ebpf\":{\"lock\":true,\"lock_address\":true}},\"upload_token_sha256\":[],\"read_token_sha256\":[]}]}";
	(void)state;

	edge_config_defaults(&cfg);
	assert_int_equal(cfg.ebpf.lock, 1); /* on by default */
	c = policy_client(&cfg, &proj);
	assert_int_equal(edge_config_client_apply(c, off, strlen(off), 0, &err), 0);
	assert_int_equal(g_lock, 0);
	assert_int_equal(g_lock_address, -1); /* not set: the edge's own ebpf.lock_address */
	assert_int_equal(edge_config_client_apply(c, on, strlen(on), 0, &err), 0);
	assert_int_equal(g_lock, 1);
	assert_int_equal(g_lock_address, 1);
	policy_client_free(c, &cfg);

	edge_service_rule rules[] = {{"db*", {-1, 0, -1, -1}}, {"api-*", {-1, -1, -1, -1}}};
	edge_ebpf_cfg e = {0};
	e.svc_rules = rules;
	e.nsvc_rules = 2;
	e.lock = 1;
	assert_int_equal(edge_ebpf_cfg_lock(&e, "db-main"), 0);
	assert_int_equal(edge_ebpf_cfg_lock(&e, "api-1"), 1);
	assert_int_equal(edge_ebpf_cfg_lock(&e, "web"), 1);
	assert_int_equal(edge_ebpf_cfg_lock_any(&e), 1);
	e.lock = 0;
	assert_int_equal(edge_ebpf_cfg_lock(&e, "api-1"), 0);
	assert_int_equal(edge_ebpf_cfg_lock_any(&e), 0); /* nothing turns it on: not loaded */
	rules[1].on[EDGE_SVC_LOCK] = 1;
	assert_int_equal(edge_ebpf_cfg_lock(&e, "api-1"), 1);
	assert_int_equal(edge_ebpf_cfg_lock_any(&e), 1);
	/* the other switches of the same rules stay at their defaults */
	assert_int_equal(edge_ebpf_cfg_python(&e, "api-1"), 0);
	assert_int_equal(edge_ebpf_cfg_alloc_any(&e), 0);

	/* lock addresses: off by default, on for the services a rule names */
	assert_int_equal(edge_ebpf_cfg_lock_address(&e, "db-main"), 0);
	assert_int_equal(edge_ebpf_cfg_lock_address_any(&e), 0);
	rules[0].on[EDGE_SVC_LOCK_ADDRESS] = 1;
	assert_int_equal(edge_ebpf_cfg_lock_address(&e, "db-main"), 1);
	assert_int_equal(edge_ebpf_cfg_lock_address(&e, "api-1"), 0);
	assert_int_equal(edge_ebpf_cfg_lock_address_any(&e), 1);
}

/* native allocations: off by default; rules.ebpf.alloc turns them on,
 * sample_types.native_alloc = false wins over it; per service the same
 * first-match rules as ebpf.lock */
static void test_alloc_policy(void **state)
{
	edge_config cfg;
	edge_config_client *c;
	wt_err err = {0, ""};
	edge_project_cfg proj = {"demo", NULL, 0, NULL, 0};
	const char *off = "{\"edge_id\":\"edge1\",\"etag\":\"a\",\"projects\":[{\"name\":\"demo\",\"policy_revision\":1,"
			  "\"effective\":{\"ebpf\":{\"alloc\":true},\"sample_types\":{\"native_alloc\":false}},"
			  "\"upload_token_sha256\":[],\"read_token_sha256\":[]}]}";
	const char *on = "{\"edge_id\":\"edge1\",\"etag\":\"b\",\"projects\":[{\"name\":\"demo\",\"policy_revision\":2,"
			 "\"effective\":{\"ebpf\":{\"alloc\":true}},\"upload_token_sha256\":[],\"read_token_sha256\":[]}]}";
	const char *unset = "{\"edge_id\":\"edge1\",\"etag\":\"c\",\"projects\":[{\"name\":\"demo\",\"policy_revision\":3,"
			    "\"effective\":{},\"upload_token_sha256\":[],\"read_token_sha256\":[]}]}";
	(void)state;

	edge_config_defaults(&cfg);
	assert_int_equal(cfg.ebpf.alloc, 0); /* off by default */
	assert_int_equal(cfg.ebpf.alloc_sample_bytes, 512 * 1024);
	c = policy_client(&cfg, &proj);
	assert_int_equal(edge_config_client_apply(c, off, strlen(off), 0, &err), 0);
	assert_int_equal(g_alloc, 0);
	assert_int_equal(edge_config_client_apply(c, on, strlen(on), 0, &err), 0);
	assert_int_equal(g_alloc, 1);
	assert_int_equal(edge_config_client_apply(c, unset, strlen(unset), 0, &err), 0);
	assert_int_equal(g_alloc, -1);
	policy_client_free(c, &cfg);

	edge_service_rule rules[] = {{"db*", {-1, -1, -1, 1}}, {"api-*", {-1, -1, -1, -1}}};
	edge_ebpf_cfg e = {0};
	e.svc_rules = rules;
	e.nsvc_rules = 2;
	assert_int_equal(edge_ebpf_cfg_alloc(&e, "db-main"), 1);
	assert_int_equal(edge_ebpf_cfg_alloc(&e, "api-1"), 0);
	assert_int_equal(edge_ebpf_cfg_alloc(&e, "web"), 0);
	assert_int_equal(edge_ebpf_cfg_alloc_any(&e), 1); /* a rule turns it on: loaded */
	rules[0].on[EDGE_SVC_ALLOC] = -1;
	assert_int_equal(edge_ebpf_cfg_alloc_any(&e), 0);
	e.alloc = 1;
	assert_int_equal(edge_ebpf_cfg_alloc(&e, "api-1"), 1);
	assert_int_equal(edge_ebpf_cfg_alloc_any(&e), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_python_policy),
		cmocka_unit_test(test_lock_policy),
		cmocka_unit_test(test_alloc_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
