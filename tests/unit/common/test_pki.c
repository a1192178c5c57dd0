/*
 * test_pki.c — common/pki.c: a site CA, a hub server certificate and an edge
 * client certificate, checked with mbedtls' own chain verifier
 * (mbedtls_x509_crt_verify) and extension checks rather than with pki.c:
 * valid chains verify, expired / not-yet-valid / foreign-CA certificates do
 * not, purposes (serverAuth/clientAuth) and SANs are what we asked for,
 * identities come out of the CN, files get the right modes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <mbedtls/oid.h>
#include <mbedtls/x509_crt.h>

#include "pki.h"

typedef struct fixture {
	wt_pki_pair ca, hub, edge, ca2, edge2;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	const char *names[] = {"localhost", "hub.example.net", "127.0.0.1", "::1"};
	wt_err err = {0};

	assert_non_null(f);
	assert_int_equal(wt_pki_make_ca(NULL, wt_pki_days(30), &f->ca, &err), 0);
	assert_int_equal(wt_pki_issue_server(&f->ca, names, 4, wt_pki_days(10), &f->hub, &err), 0);
	assert_int_equal(wt_pki_issue_client(&f->ca, "edge-1", wt_pki_days(10), &f->edge, &err), 0);
	assert_int_equal(wt_pki_make_ca("Other CA", wt_pki_days(30), &f->ca2, &err), 0);
	assert_int_equal(wt_pki_issue_client(&f->ca2, "edge-1", wt_pki_days(10), &f->edge2, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	wt_pki_pair_free(&f->ca);
	wt_pki_pair_free(&f->hub);
	wt_pki_pair_free(&f->edge);
	wt_pki_pair_free(&f->ca2);
	wt_pki_pair_free(&f->edge2);
	free(f);
	return 0;
}

static void parse(mbedtls_x509_crt *c, const char *pem)
{
	mbedtls_x509_crt_init(c);
	assert_int_equal(mbedtls_x509_crt_parse(c, (const unsigned char *)pem, strlen(pem) + 1), 0);
}

/* Verify pem against ca_pem with mbedtls directly; returns the flags (0 =
 * trusted). */
static uint32_t verify(const char *ca_pem, const char *pem, const char *cn)
{
	mbedtls_x509_crt ca, c;
	uint32_t flags = 0;
	int ret;

	parse(&ca, ca_pem);
	parse(&c, pem);
	ret = mbedtls_x509_crt_verify(&c, &ca, NULL, cn, &flags, NULL, NULL);
	if (ret == 0)
		assert_int_equal(flags, 0);
	else
		assert_int_equal(ret, MBEDTLS_ERR_X509_CERT_VERIFY_FAILED);
	mbedtls_x509_crt_free(&c);
	mbedtls_x509_crt_free(&ca);
	return ret == 0 ? 0 : (flags ? flags : 0xffffffffu);
}

static void test_ca_shape(void **state)
{
	fixture *f = *state;
	mbedtls_x509_crt ca;
	char dn[256];

	parse(&ca, f->ca.cert_pem);
	assert_int_equal(ca.version, 3);
	assert_int_equal(ca.ca_istrue, 1);
	assert_int_equal(ca.max_pathlen, 1); /* mbedtls stores pathlen + 1 */
	assert_int_equal(mbedtls_x509_crt_check_key_usage(&ca, MBEDTLS_X509_KU_KEY_CERT_SIGN), 0);
	assert_int_equal(mbedtls_pk_get_type(&ca.pk), MBEDTLS_PK_ECKEY);
	assert_int_equal(mbedtls_pk_ec(ca.pk)->grp.id, MBEDTLS_ECP_DP_SECP256R1);
	assert_true(mbedtls_x509_dn_gets(dn, sizeof(dn), &ca.subject) > 0);
	assert_string_equal(dn, "CN=Watchtower site CA, O=Watchtower");
	/* self-signed: verifies against itself */
	assert_int_equal(verify(f->ca.cert_pem, f->ca.cert_pem, NULL), 0);
	assert_true(strstr(f->ca.key_pem, "-----BEGIN EC PRIVATE KEY-----") != NULL);
	mbedtls_x509_crt_free(&ca);
}

static void test_hub_chain_and_names(void **state)
{
	fixture *f = *state;
	mbedtls_x509_crt hub;
	int seen_v4 = 0, seen_v6 = 0;
	static const unsigned char v4[4] = {127, 0, 0, 1};
	static const unsigned char v6[16] = {[15] = 1};

	assert_int_equal(verify(f->ca.cert_pem, f->hub.cert_pem, "localhost"), 0);
	assert_int_equal(verify(f->ca.cert_pem, f->hub.cert_pem, "hub.example.net"), 0);
	assert_true(verify(f->ca.cert_pem, f->hub.cert_pem, "evil.example.net") &
		    MBEDTLS_X509_BADCERT_CN_MISMATCH);
	assert_true(verify(f->ca2.cert_pem, f->hub.cert_pem, "localhost") &
		    MBEDTLS_X509_BADCERT_NOT_TRUSTED);

	parse(&hub, f->hub.cert_pem);
	assert_int_equal(hub.ca_istrue, 0);
	assert_int_equal(mbedtls_x509_crt_check_extended_key_usage(&hub, MBEDTLS_OID_SERVER_AUTH,
								  MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)), 0);
	assert_int_not_equal(mbedtls_x509_crt_check_extended_key_usage(&hub, MBEDTLS_OID_CLIENT_AUTH,
								      MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH)), 0);
	for (const mbedtls_x509_sequence *s = &hub.subject_alt_names; s && s->buf.p; s = s->next) {
		if (s->buf.tag != (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7))
			continue;
		if (s->buf.len == 4 && !memcmp(s->buf.p, v4, 4))
			seen_v4 = 1;
		if (s->buf.len == 16 && !memcmp(s->buf.p, v6, 16))
			seen_v6 = 1;
	}
	assert_true(seen_v4);
	assert_true(seen_v6);
	{
		char names[4][WT_PKI_NAME_MAX + 1];
		assert_int_equal(wt_pki_crt_dns_names(&hub, names, 4), 2);
		assert_string_equal(names[0], "localhost");
		assert_string_equal(names[1], "hub.example.net");
	}
	mbedtls_x509_crt_free(&hub);
}

static void test_edge_chain_and_id(void **state)
{
	fixture *f = *state;
	mbedtls_x509_crt edge, hub;
	char id[WT_PKI_ID_MAX + 1], dn[256];
	char names[2][WT_PKI_NAME_MAX + 1];
	wt_err err = {0};

	assert_int_equal(verify(f->ca.cert_pem, f->edge.cert_pem, NULL), 0);
	assert_int_equal(verify(f->ca.cert_pem, f->edge.cert_pem, "edge-1"), 0);
	/* same id, other CA: not trusted by ours, and ours not by theirs */
	assert_true(verify(f->ca.cert_pem, f->edge2.cert_pem, NULL) & MBEDTLS_X509_BADCERT_NOT_TRUSTED);
	assert_true(verify(f->ca2.cert_pem, f->edge.cert_pem, NULL) & MBEDTLS_X509_BADCERT_NOT_TRUSTED);

	parse(&edge, f->edge.cert_pem);
	assert_true(mbedtls_x509_dn_gets(dn, sizeof(dn), &edge.subject) > 0);
	assert_string_equal(dn, "CN=edge-1, O=Watchtower edge");
	assert_true(mbedtls_x509_dn_gets(dn, sizeof(dn), &edge.issuer) > 0);
	assert_string_equal(dn, "CN=Watchtower site CA, O=Watchtower");
	assert_int_equal(wt_pki_crt_id(&edge, id, sizeof(id)), 0);
	assert_string_equal(id, "edge-1");
	assert_int_equal(wt_pki_crt_dns_names(&edge, names, 2), 1);
	assert_string_equal(names[0], "edge-1");
	assert_int_equal(mbedtls_x509_crt_check_extended_key_usage(&edge, MBEDTLS_OID_CLIENT_AUTH,
								  MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH)), 0);
	assert_int_not_equal(mbedtls_x509_crt_check_extended_key_usage(&edge, MBEDTLS_OID_SERVER_AUTH,
								      MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)), 0);
	assert_int_equal(mbedtls_x509_crt_check_key_usage(&edge, MBEDTLS_X509_KU_DIGITAL_SIGNATURE), 0);
	assert_int_not_equal(mbedtls_x509_crt_check_key_usage(&edge, MBEDTLS_X509_KU_KEY_CERT_SIGN), 0);
	assert_int_equal(wt_pki_pem_id(f->edge.cert_pem, id, sizeof(id), &err), 0);
	assert_string_equal(id, "edge-1");
	/* the hub's identity is its first name */
	parse(&hub, f->hub.cert_pem);
	assert_int_equal(wt_pki_crt_id(&hub, id, sizeof(id)), 0);
	assert_string_equal(id, "localhost");
	/* too small an output buffer is an error, not a truncation */
	assert_int_equal(wt_pki_crt_id(&edge, id, 4), WT_EINVAL);
	mbedtls_x509_crt_free(&hub);
	mbedtls_x509_crt_free(&edge);
}

static void test_validity_window(void **state)
{
	fixture *f = *state;
	int64_t now = (int64_t)time(NULL);
	wt_pki_validity past = {now - 20 * 86400, now - 10 * 86400};
	wt_pki_validity future = {now + 10 * 86400, now + 20 * 86400};
	wt_pki_pair expired = WT_PKI_PAIR_INIT, early = WT_PKI_PAIR_INIT, bad = WT_PKI_PAIR_INIT;
	mbedtls_x509_crt c;
	wt_err err = {0};

	assert_int_equal(wt_pki_issue_client(&f->ca, "old-edge", past, &expired, &err), 0);
	assert_true(verify(f->ca.cert_pem, expired.cert_pem, NULL) & MBEDTLS_X509_BADCERT_EXPIRED);
	assert_int_equal(wt_pki_verify(f->ca.cert_pem, expired.cert_pem, NULL, &err), WT_EAUTH);
	assert_non_null(strstr(err.msg, "expired"));
	parse(&c, expired.cert_pem);
	{
		time_t t = (time_t)past.not_after;
		struct tm tm;
		gmtime_r(&t, &tm);
		assert_int_equal(c.valid_to.year, 1900 + tm.tm_year);
		assert_int_equal(c.valid_to.mon, 1 + tm.tm_mon);
		assert_int_equal(c.valid_to.day, tm.tm_mday);
	}
	assert_int_equal(mbedtls_x509_time_is_past(&c.valid_to), 1);
	mbedtls_x509_crt_free(&c);

	assert_int_equal(wt_pki_issue_client(&f->ca, "new-edge", future, &early, &err), 0);
	assert_true(verify(f->ca.cert_pem, early.cert_pem, NULL) & MBEDTLS_X509_BADCERT_FUTURE);

	/* an inverted window is refused */
	assert_int_equal(wt_pki_issue_client(&f->ca, "x", (wt_pki_validity){now, now - 1}, &bad, &err),
			 WT_EINVAL);
	assert_null(bad.cert_pem);
	wt_pki_pair_free(&expired);
	wt_pki_pair_free(&early);
}

static void test_ca_bundle_rotation(void **state)
{
	fixture *f = *state;
	size_t n1 = strlen(f->ca.cert_pem), n2 = strlen(f->ca2.cert_pem);
	char *bundle = malloc(n1 + n2 + 1);
	wt_err err = {0};

	assert_non_null(bundle);
	memcpy(bundle, f->ca.cert_pem, n1);
	memcpy(bundle + n1, f->ca2.cert_pem, n2 + 1);
	assert_int_equal(verify(bundle, f->edge.cert_pem, NULL), 0);
	assert_int_equal(verify(bundle, f->edge2.cert_pem, NULL), 0);
	assert_int_equal(wt_pki_verify(bundle, f->edge2.cert_pem, "edge-1", &err), 0);
	assert_int_equal(wt_pki_verify(f->ca.cert_pem, f->edge2.cert_pem, NULL, &err), WT_EAUTH);
	free(bundle);
}

static void test_bad_inputs(void **state)
{
	fixture *f = *state;
	wt_pki_pair p = WT_PKI_PAIR_INIT;
	wt_err err = {0};
	const char *bad_names[] = {"bad name"};
	const char *bad_names2[] = {"ok.example", "a..b"};
	char long_id[WT_PKI_ID_MAX + 2];

	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = 0;
	assert_true(wt_pki_valid_id("edge-1"));
	assert_true(wt_pki_valid_id("dc1.rack_2"));
	assert_false(wt_pki_valid_id(""));
	assert_false(wt_pki_valid_id("-edge"));
	assert_false(wt_pki_valid_id("a,CN=hub"));
	assert_false(wt_pki_valid_id("a b"));
	assert_false(wt_pki_valid_id(long_id));
	long_id[WT_PKI_ID_MAX] = 0;
	assert_true(wt_pki_valid_id(long_id));

	assert_int_equal(wt_pki_issue_client(&f->ca, "a,CN=hub", wt_pki_days(1), &p, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "a,CN=hub"));
	assert_int_equal(wt_pki_issue_server(&f->ca, bad_names, 1, wt_pki_days(1), &p, &err), WT_EINVAL);
	assert_int_equal(wt_pki_issue_server(&f->ca, bad_names2, 2, wt_pki_days(1), &p, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "name 1"));
	assert_int_equal(wt_pki_issue_server(&f->ca, bad_names, 0, wt_pki_days(1), &p, &err), WT_EINVAL);
	assert_int_equal(wt_pki_make_ca("x,y", wt_pki_days(1), &p, &err), WT_EINVAL);
	/* a leaf cannot act as a CA; a CA with someone else's key neither */
	assert_int_equal(wt_pki_issue_client(&f->edge, "e2", wt_pki_days(1), &p, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "not a CA"));
	{
		wt_pki_pair mixed = {f->ca.cert_pem, f->ca2.key_pem};
		assert_int_equal(wt_pki_issue_client(&mixed, "e2", wt_pki_days(1), &p, &err), WT_EINVAL);
		assert_non_null(strstr(err.msg, "does not match"));
	}
	assert_null(p.cert_pem);
}

static void test_files(void **state)
{
	fixture *f = *state;
	char dir[] = "/tmp/wt-test-pki-XXXXXX", crt[256], key[256];
	wt_pki_pair back = WT_PKI_PAIR_INIT;
	struct stat st;
	wt_err err = {0};
	mode_t old = umask(0);

	assert_non_null(mkdtemp(dir));
	snprintf(crt, sizeof(crt), "%s/e.crt", dir);
	snprintf(key, sizeof(key), "%s/e.key", dir);
	assert_int_equal(wt_pki_write_pair(&f->edge, crt, key, 0, &err), 0);
	umask(old);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(crt, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* no silent overwrite */
	assert_int_equal(wt_pki_write_pair(&f->hub, crt, key, 0, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "already exists"));
	assert_int_equal(wt_pki_read_pair(crt, key, &back, &err), 0);
	assert_string_equal(back.cert_pem, f->edge.cert_pem);
	assert_string_equal(back.key_pem, f->edge.key_pem);
	wt_pki_pair_free(&back);
	/* overwrite on request (rotation) */
	assert_int_equal(wt_pki_write_pair(&f->edge2, crt, key, 1, &err), 0);
	assert_int_equal(wt_pki_read_pair(crt, key, &back, &err), 0);
	assert_string_equal(back.cert_pem, f->edge2.cert_pem);
	wt_pki_pair_free(&back);
	/* a key that is not the certificate's */
	{
		char key2[256];
		snprintf(key2, sizeof(key2), "%s/h.key", dir);
		wt_pki_pair h = {f->hub.cert_pem, f->hub.key_pem};
		char crt2[256];
		snprintf(crt2, sizeof(crt2), "%s/h.crt", dir);
		assert_int_equal(wt_pki_write_pair(&h, crt2, key2, 0, &err), 0);
		assert_int_equal(wt_pki_read_pair(crt, key2, &back, &err), WT_EINVAL);
		assert_non_null(strstr(err.msg, "does not match"));
		unlink(key2);
		unlink(crt2);
	}
	assert_int_equal(wt_pki_read_pair("/nonexistent/x.crt", NULL, &back, &err), WT_EIO);
	unlink(crt);
	unlink(key);
	rmdir(dir);
}

static void test_serials_differ(void **state)
{
	fixture *f = *state;
	wt_pki_pair a = WT_PKI_PAIR_INIT, b = WT_PKI_PAIR_INIT;
	mbedtls_x509_crt ca, cb;
	wt_err err = {0};

	assert_int_equal(wt_pki_issue_client(&f->ca, "e", wt_pki_days(1), &a, &err), 0);
	assert_int_equal(wt_pki_issue_client(&f->ca, "e", wt_pki_days(1), &b, &err), 0);
	assert_string_not_equal(a.key_pem, b.key_pem);
	parse(&ca, a.cert_pem);
	parse(&cb, b.cert_pem);
	assert_int_equal(ca.serial.len, 16);
	assert_false(ca.serial.len == cb.serial.len && !memcmp(ca.serial.p, cb.serial.p, ca.serial.len));
	mbedtls_x509_crt_free(&ca);
	mbedtls_x509_crt_free(&cb);
	wt_pki_pair_free(&a);
	wt_pki_pair_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ca_shape),
		cmocka_unit_test(test_hub_chain_and_names),
		cmocka_unit_test(test_edge_chain_and_id),
		cmocka_unit_test(test_validity_window),
		cmocka_unit_test(test_ca_bundle_rotation),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_serials_differ),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
