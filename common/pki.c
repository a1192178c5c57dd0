/*
 * pki.c — site CA, hub server and edge client certificates with mbedtls'
 * x509 writer (see pki.h for the certificate profiles). mbedtls 2.28 has no
 * writer for subjectAltName or extendedKeyUsage, so those two extensions are
 * DER-encoded here with asn1write.
 */
#include "pki.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/asn1write.h>
#include <mbedtls/bignum.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/x509_crt.h>

#define PEM_OUT_MAX 4096 /* a P-256 certificate with 32 SANs fits easily */
#define SERIAL_BYTES 16
#define EXT_BUF_MAX (WT_PKI_MAX_NAMES * (WT_PKI_NAME_MAX + 4) + 64)

static const char PERS[] = "watchtower-pki";

int wt_pki_mbed_err(wt_err *err, int code, int mbed_ret, const char *what)
{
	char buf[160];

	mbedtls_strerror(mbed_ret, buf, sizeof(buf));
	return wt_err_set(err, code, "%s: %s (-0x%04x)", what, buf, (unsigned)-mbed_ret);
}

/* mbedtls errors while writing are either allocation failures or bugs in
 * our input; report allocation failures as such. */
static int mbed_fail(wt_err *err, int mbed_ret, const char *what)
{
	int code = WT_EIO;

	if (mbed_ret == MBEDTLS_ERR_MPI_ALLOC_FAILED || mbed_ret == MBEDTLS_ERR_PK_ALLOC_FAILED ||
	    mbed_ret == MBEDTLS_ERR_ASN1_ALLOC_FAILED || mbed_ret == MBEDTLS_ERR_X509_ALLOC_FAILED ||
	    mbed_ret == MBEDTLS_ERR_ECP_ALLOC_FAILED)
		code = WT_ENOMEM;
	return wt_pki_mbed_err(err, code, mbed_ret, what);
}

wt_pki_validity wt_pki_days(int64_t days)
{
	int64_t now = (int64_t)time(NULL);
	wt_pki_validity v = {now - WT_PKI_BACKDATE_SECS, now + days * 86400};
	return v;
}

void wt_pki_pair_free(wt_pki_pair *p)
{
	if (!p)
		return;
	if (p->key_pem) {
		mbedtls_platform_zeroize(p->key_pem, strlen(p->key_pem));
		free(p->key_pem);
	}
	free(p->cert_pem);
	p->cert_pem = p->key_pem = NULL;
}

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int wt_pki_valid_id(const char *id)
{
	size_t n;

	if (!id || !is_alnum(id[0]))
		return 0;
	for (n = 0; id[n]; n++) {
		char c = id[n];
		if (n >= WT_PKI_ID_MAX)
			return 0;
		if (!is_alnum(c) && c != '.' && c != '_' && c != '-')
			return 0;
	}
	return 1;
}

/* A DNS name for a SAN: labels of [A-Za-z0-9-], dots between, optional
 * leading "*." wildcard. */
static int valid_dns(const char *s)
{
	size_t n = strlen(s), label = 0;

	if (n == 0 || n > WT_PKI_NAME_MAX)
		return 0;
	if (s[0] == '*' && s[1] == '.')
		s += 2;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s == '.') {
			if (label == 0)
				return 0;
			label = 0;
		} else if (is_alnum(*s) || *s == '-') {
			if (++label > 63)
				return 0;
		} else {
			return 0;
		}
	}
	return label > 0;
}

/* A CA common name goes into mbedtls' "CN=...,O=..." string syntax. */
static int valid_cn(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (; *s; s++)
		if (*s == ',' || *s == '=' || *s == '\\' || *s == '+' || *s == '"' ||
		    (unsigned char)*s < 0x20)
			return 0;
	return 1;
}

/* ---- randomness ---------------------------------------------------------- */

typedef struct rng {
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
} rng;

static int rng_init(rng *r, wt_err *err)
{
	int ret;

	mbedtls_entropy_init(&r->entropy);
	mbedtls_ctr_drbg_init(&r->drbg);
	ret = mbedtls_ctr_drbg_seed(&r->drbg, mbedtls_entropy_func, &r->entropy,
				    (const unsigned char *)PERS, sizeof(PERS) - 1);
	if (ret)
		return mbed_fail(err, ret, "pki: seeding the random generator");
	return 0;
}

static void rng_free(rng *r)
{
	mbedtls_ctr_drbg_free(&r->drbg);
	mbedtls_entropy_free(&r->entropy);
}

/* ---- helpers --------------------------------------------------------------- */

static int gen_key(mbedtls_pk_context *key, rng *r, wt_err *err)
{
	int ret = mbedtls_pk_setup(key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));

	if (ret)
		return mbed_fail(err, ret, "pki: key setup");
	ret = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*key),
				  mbedtls_ctr_drbg_random, &r->drbg);
	if (ret)
		return mbed_fail(err, ret, "pki: generating a P-256 key");
	return 0;
}

/* "YYYYMMDDhhmmss" UTC, as mbedtls_x509write_crt_set_validity wants. */
static int fmt_time(int64_t t, char out[16], wt_err *err)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 1950 || tm.tm_year + 1900 > 9999)
		return wt_err_set(err, WT_EINVAL, "pki: time %lld out of range", (long long)t);
	strftime(out, 16, "%Y%m%d%H%M%S", &tm);
	return 0;
}

static int set_serial(mbedtls_x509write_cert *crt, rng *r, wt_err *err)
{
	unsigned char b[SERIAL_BYTES];
	mbedtls_mpi serial;
	int ret;

	mbedtls_mpi_init(&serial);
	ret = mbedtls_ctr_drbg_random(&r->drbg, b, sizeof(b));
	if (!ret) {
		b[0] = (b[0] & 0x7f) | 0x01; /* positive, and never zero */
		ret = mbedtls_mpi_read_binary(&serial, b, sizeof(b));
	}
	if (!ret)
		ret = mbedtls_x509write_crt_set_serial(crt, &serial);
	mbedtls_mpi_free(&serial);
	if (ret)
		return mbed_fail(err, ret, "pki: serial number");
	return 0;
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

/* subjectAltName: SEQUENCE OF GeneralName, dNSName [2] IA5String or
 * iPAddress [7] OCTET STRING (4 or 16 bytes). asn1write writes backwards,
 * so the names go in reverse to keep their order. */
static int set_san(mbedtls_x509write_cert *crt, const char *const *names, size_t n, wt_err *err)
{
	unsigned char buf[EXT_BUF_MAX];
	unsigned char *p = buf + sizeof(buf);
	size_t len = 0;
	int ret;

	for (size_t i = n; i-- > 0;) {
		unsigned char ip[16];
		const unsigned char *val;
		size_t vlen;
		unsigned char tag;

		if (inet_pton(AF_INET, names[i], ip) == 1) {
			val = ip, vlen = 4, tag = MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7;
		} else if (inet_pton(AF_INET6, names[i], ip) == 1) {
			val = ip, vlen = 16, tag = MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7;
		} else {
			val = (const unsigned char *)names[i], vlen = strlen(names[i]);
			tag = MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2;
		}
		ret = mbedtls_asn1_write_raw_buffer(&p, buf, val, vlen);
		if (ret < 0)
			goto fail;
		len += (size_t)ret;
		ret = mbedtls_asn1_write_len(&p, buf, vlen);
		if (ret < 0)
			goto fail;
		len += (size_t)ret;
		ret = mbedtls_asn1_write_tag(&p, buf, tag);
		if (ret < 0)
			goto fail;
		len += (size_t)ret;
	}
	ret = mbedtls_asn1_write_len(&p, buf, len);
	if (ret < 0)
		goto fail;
	len += (size_t)ret;
	ret = mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
	if (ret < 0)
		goto fail;
	len += (size_t)ret;
	ret = mbedtls_x509write_crt_set_extension(crt, MBEDTLS_OID_SUBJECT_ALT_NAME,
						  MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0,
						  p, len);
	if (ret)
		goto fail;
	return 0;
fail:
	return mbed_fail(err, ret, "pki: subjectAltName");
}

/* extendedKeyUsage: SEQUENCE OF OBJECT IDENTIFIER (one purpose). */
static int set_eku(mbedtls_x509write_cert *crt, const char *oid, size_t oidlen, wt_err *err)
{
	unsigned char buf[32];
	unsigned char *p = buf + sizeof(buf);
	size_t len = 0;
	int ret;

	ret = mbedtls_asn1_write_oid(&p, buf, oid, oidlen);
	if (ret < 0)
		goto fail;
	len += (size_t)ret;
	ret = mbedtls_asn1_write_len(&p, buf, len);
	if (ret < 0)
		goto fail;
	len += (size_t)ret;
	ret = mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
	if (ret < 0)
		goto fail;
	len += (size_t)ret;
	ret = mbedtls_x509write_crt_set_extension(crt, MBEDTLS_OID_EXTENDED_KEY_USAGE,
						  MBEDTLS_OID_SIZE(MBEDTLS_OID_EXTENDED_KEY_USAGE), 0,
						  p, len);
	if (ret)
		goto fail;
	return 0;
fail:
	return mbed_fail(err, ret, "pki: extendedKeyUsage");
}

/* What distinguishes the three kinds of certificate. */
typedef struct crt_spec {
	const char *subject;        /* "CN=...,O=..." */
	int is_ca;
	const char *const *names;   /* SAN entries (leaf only) */
	size_t nnames;
	const char *eku_oid;        /* leaf only */
	size_t eku_len;
} crt_spec;

/* Build, sign and PEM-encode one certificate. issuer_key/issuer_crt NULL =
 * self-signed with subject_key. Writes a malloc'd PEM into *pem. */
static int write_crt(const crt_spec *s, mbedtls_pk_context *subject_key,
		     mbedtls_pk_context *issuer_key, const mbedtls_x509_crt *issuer_crt,
		     wt_pki_validity v, rng *r, char **pem, wt_err *err)
{
	mbedtls_x509write_cert crt;
	char nb[16], na[16], issuer_name[512];
	unsigned char *out = NULL;
	int ret, rc;

	*pem = NULL;
	if (v.not_after <= v.not_before)
		return wt_err_set(err, WT_EINVAL, "pki: not_after must be later than not_before");
	if ((rc = fmt_time(v.not_before, nb, err)) || (rc = fmt_time(v.not_after, na, err)))
		return rc;
	mbedtls_x509write_crt_init(&crt);
	mbedtls_x509write_crt_set_version(&crt, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&crt, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&crt, subject_key);
	mbedtls_x509write_crt_set_issuer_key(&crt, issuer_key ? issuer_key : subject_key);
	if ((rc = set_serial(&crt, r, err)))
		goto out;
	ret = mbedtls_x509write_crt_set_validity(&crt, nb, na);
	if (ret) {
		rc = mbed_fail(err, ret, "pki: validity");
		goto out;
	}
	ret = mbedtls_x509write_crt_set_subject_name(&crt, s->subject);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: subject name");
		goto out;
	}
	if (issuer_crt) {
		/* The issuer name is the CA's subject, re-encoded from its
		 * string form (what mbedtls' own cert_write does). */
		ret = mbedtls_x509_dn_gets(issuer_name, sizeof(issuer_name), &issuer_crt->subject);
		if (ret < 0) {
			rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: CA subject");
			goto out;
		}
		ret = mbedtls_x509write_crt_set_issuer_name(&crt, issuer_name);
	} else {
		ret = mbedtls_x509write_crt_set_issuer_name(&crt, s->subject);
	}
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: issuer name");
		goto out;
	}
	ret = mbedtls_x509write_crt_set_basic_constraints(&crt, s->is_ca, s->is_ca ? 0 : -1);
	if (!ret)
		ret = mbedtls_x509write_crt_set_subject_key_identifier(&crt);
	if (!ret && issuer_key)
		ret = mbedtls_x509write_crt_set_authority_key_identifier(&crt);
	if (!ret)
		ret = mbedtls_x509write_crt_set_key_usage(
			&crt, s->is_ca ? (MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN)
				       : MBEDTLS_X509_KU_DIGITAL_SIGNATURE);
	if (ret) {
		rc = mbed_fail(err, ret, "pki: extensions");
		goto out;
	}
	if (s->nnames && (rc = set_san(&crt, s->names, s->nnames, err)))
		goto out;
	if (s->eku_oid && (rc = set_eku(&crt, s->eku_oid, s->eku_len, err)))
		goto out;
	out = malloc(PEM_OUT_MAX);
	if (!out) {
		rc = wt_err_set(err, WT_ENOMEM, "pki: out of memory");
		goto out;
	}
	ret = mbedtls_x509write_crt_pem(&crt, out, PEM_OUT_MAX, mbedtls_ctr_drbg_random, &r->drbg);
	if (ret) {
		rc = mbed_fail(err, ret, "pki: signing the certificate");
		goto out;
	}
	*pem = dup_str((char *)out);
	rc = *pem ? 0 : wt_err_set(err, WT_ENOMEM, "pki: out of memory");
out:
	free(out);
	mbedtls_x509write_crt_free(&crt);
	return rc;
}

static int key_pem(mbedtls_pk_context *key, char **pem, wt_err *err)
{
	unsigned char buf[PEM_OUT_MAX];
	int ret = mbedtls_pk_write_key_pem(key, buf, sizeof(buf));

	if (ret)
		return mbed_fail(err, ret, "pki: writing the key");
	*pem = dup_str((char *)buf);
	mbedtls_platform_zeroize(buf, sizeof(buf));
	return *pem ? 0 : wt_err_set(err, WT_ENOMEM, "pki: out of memory");
}

/* Parse a CA pair and check that key and certificate belong together and
 * that the certificate is a CA. */
static int load_ca(const wt_pki_pair *ca, mbedtls_x509_crt *crt, mbedtls_pk_context *key,
		   wt_err *err)
{
	int ret;

	if (!ca || !ca->cert_pem || !ca->key_pem)
		return wt_err_set(err, WT_EINVAL, "pki: CA certificate and key are required");
	ret = mbedtls_x509_crt_parse(crt, (const unsigned char *)ca->cert_pem,
				     strlen(ca->cert_pem) + 1);
	if (ret)
		return wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: CA certificate");
	if (!crt->ca_istrue)
		return wt_err_set(err, WT_EINVAL, "pki: CA certificate is not a CA (CA:false)");
	ret = mbedtls_pk_parse_key(key, (const unsigned char *)ca->key_pem,
				   strlen(ca->key_pem) + 1, NULL, 0);
	if (ret)
		return wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: CA key");
	ret = mbedtls_pk_check_pair(&crt->pk, key);
	if (ret)
		return wt_err_set(err, WT_EINVAL, "pki: CA key does not match the CA certificate");
	return 0;
}

/* Issue a leaf under ca with a fresh key. */
static int issue_leaf(const wt_pki_pair *ca, const crt_spec *s, wt_pki_validity v,
		      wt_pki_pair *out, wt_err *err)
{
	mbedtls_x509_crt ca_crt;
	mbedtls_pk_context ca_key, key;
	wt_pki_pair p = WT_PKI_PAIR_INIT;
	rng r;
	int rc;

	mbedtls_x509_crt_init(&ca_crt);
	mbedtls_pk_init(&ca_key);
	mbedtls_pk_init(&key);
	if ((rc = rng_init(&r, err)))
		goto out;
	if ((rc = load_ca(ca, &ca_crt, &ca_key, err)))
		goto out;
	if ((rc = gen_key(&key, &r, err)))
		goto out;
	if ((rc = write_crt(s, &key, &ca_key, &ca_crt, v, &r, &p.cert_pem, err)))
		goto out;
	if ((rc = key_pem(&key, &p.key_pem, err)))
		goto out;
	*out = p;
	p.cert_pem = p.key_pem = NULL;
out:
	wt_pki_pair_free(&p);
	mbedtls_pk_free(&key);
	mbedtls_pk_free(&ca_key);
	mbedtls_x509_crt_free(&ca_crt);
	rng_free(&r);
	return rc;
}

/* ---- public: issuing ------------------------------------------------------- */

int wt_pki_make_ca(const char *cn, wt_pki_validity v, wt_pki_pair *out, wt_err *err)
{
	mbedtls_pk_context key;
	wt_pki_pair p = WT_PKI_PAIR_INIT;
	char subject[128];
	crt_spec s = {subject, 1, NULL, 0, NULL, 0};
	rng r;
	int rc;

	if (!cn)
		cn = "Watchtower site CA";
	if (!valid_cn(cn))
		return wt_err_set(err, WT_EINVAL, "pki: CA name \"%.64s\" must be 1..64 chars without , = + \\ \"", cn);
	snprintf(subject, sizeof(subject), "CN=%s,O=Watchtower", cn);
	mbedtls_pk_init(&key);
	if ((rc = rng_init(&r, err)))
		goto out;
	if ((rc = gen_key(&key, &r, err)))
		goto out;
	if ((rc = write_crt(&s, &key, NULL, NULL, v, &r, &p.cert_pem, err)))
		goto out;
	if ((rc = key_pem(&key, &p.key_pem, err)))
		goto out;
	*out = p;
	p.cert_pem = p.key_pem = NULL;
out:
	wt_pki_pair_free(&p);
	mbedtls_pk_free(&key);
	rng_free(&r);
	return rc;
}

int wt_pki_issue_server(const wt_pki_pair *ca, const char *const *names, size_t nnames,
			wt_pki_validity v, wt_pki_pair *out, wt_err *err)
{
	char subject[WT_PKI_NAME_MAX + 32];
	crt_spec s = {subject, 0, names, nnames, MBEDTLS_OID_SERVER_AUTH,
		      MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)};

	if (nnames == 0 || nnames > WT_PKI_MAX_NAMES)
		return wt_err_set(err, WT_EINVAL, "pki: a server certificate needs 1..%d names, got %zu",
				  WT_PKI_MAX_NAMES, nnames);
	for (size_t i = 0; i < nnames; i++) {
		unsigned char ip[16];
		if (!names[i] || (inet_pton(AF_INET, names[i], ip) != 1 &&
				  inet_pton(AF_INET6, names[i], ip) != 1 && !valid_dns(names[i])))
			return wt_err_set(err, WT_EINVAL,
					  "pki: server name %zu \"%.64s\" is neither an IP address nor a DNS name",
					  i, names[i] ? names[i] : "(null)");
	}
	/* An IPv6 CN would contain ':' which is fine in the string syntax. */
	snprintf(subject, sizeof(subject), "CN=%s,O=Watchtower hub", names[0]);
	return issue_leaf(ca, &s, v, out, err);
}

int wt_pki_issue_client(const wt_pki_pair *ca, const char *edge_id, wt_pki_validity v,
			wt_pki_pair *out, wt_err *err)
{
	char subject[WT_PKI_ID_MAX + 32];
	const char *names[1] = {edge_id};
	crt_spec s = {subject, 0, names, 1, MBEDTLS_OID_CLIENT_AUTH,
		      MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH)};

	if (!wt_pki_valid_id(edge_id))
		return wt_err_set(err, WT_EINVAL,
				  "pki: edge id \"%.80s\" must be 1..%d chars of [A-Za-z0-9._-] starting alphanumeric",
				  edge_id ? edge_id : "(null)", WT_PKI_ID_MAX);
	snprintf(subject, sizeof(subject), "CN=%s,O=Watchtower edge", edge_id);
	return issue_leaf(ca, &s, v, out, err);
}

/* ---- files ---------------------------------------------------------------- */

/* Write data to path atomically with the given mode. */
static int write_file(const char *path, const char *data, mode_t mode, int overwrite, wt_err *err)
{
	char tmp[4096];
	size_t len = strlen(data), off = 0;
	int fd, rc = 0;

	if (!overwrite && access(path, F_OK) == 0)
		return wt_err_set(err, WT_EINVAL, "%s: already exists (refusing to overwrite)", path);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
		return wt_err_set(err, WT_EINVAL, "%s: path too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return wt_err_set(err, WT_EIO, "%s: %s", tmp, strerror(errno));
	if (fchmod(fd, mode) < 0) { /* exact mode, whatever the umask */
		rc = wt_err_set(err, WT_EIO, "%s: chmod: %s", tmp, strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = wt_err_set(err, WT_EIO, "%s: write: %s", tmp, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		rc = wt_err_set(err, WT_EIO, "%s: fsync: %s", tmp, strerror(errno));
		goto out;
	}
out:
	close(fd);
	if (!rc && rename(tmp, path) < 0)
		rc = wt_err_set(err, WT_EIO, "%s: rename: %s", path, strerror(errno));
	if (rc)
		unlink(tmp);
	return rc;
}

int wt_pki_write_pair(const wt_pki_pair *p, const char *cert_path, const char *key_path,
		      int overwrite, wt_err *err)
{
	int rc;

	if (!p || !p->cert_pem || !p->key_pem)
		return wt_err_set(err, WT_EINVAL, "pki: nothing to write");
	if (!overwrite) { /* check both first: write neither when one exists */
		if (access(cert_path, F_OK) == 0)
			return wt_err_set(err, WT_EINVAL, "%s: already exists (refusing to overwrite)", cert_path);
		if (access(key_path, F_OK) == 0)
			return wt_err_set(err, WT_EINVAL, "%s: already exists (refusing to overwrite)", key_path);
	}
	/* Key first: a certificate on disk without its key is useless, a key
	 * without a certificate is harmless. */
	if ((rc = write_file(key_path, p->key_pem, 0600, overwrite, err)))
		return rc;
	return write_file(cert_path, p->cert_pem, 0644, overwrite, err);
}

int wt_pki_read_file(const char *path, char **out, wt_err *err)
{
	FILE *f;
	char *buf = NULL;
	size_t n;
	int rc = 0;

	*out = NULL;
	f = fopen(path, "rb");
	if (!f)
		return wt_err_set(err, WT_EIO, "%s: %s", path, strerror(errno));
	buf = malloc(WT_PKI_MAX_PEM + 1);
	if (!buf) {
		rc = wt_err_set(err, WT_ENOMEM, "%s: out of memory", path);
		goto out;
	}
	n = fread(buf, 1, WT_PKI_MAX_PEM + 1, f);
	if (ferror(f)) {
		rc = wt_err_set(err, WT_EIO, "%s: read error", path);
		goto out;
	}
	if (n > WT_PKI_MAX_PEM) {
		rc = wt_err_set(err, WT_ELIMIT, "%s: larger than %u bytes", path, WT_PKI_MAX_PEM);
		goto out;
	}
	buf[n] = 0;
	if (strlen(buf) != n) {
		rc = wt_err_set(err, WT_EINVAL, "%s: not a PEM file (contains NUL bytes)", path);
		goto out;
	}
	*out = buf;
	buf = NULL;
out:
	if (buf) {
		mbedtls_platform_zeroize(buf, WT_PKI_MAX_PEM + 1);
		free(buf);
	}
	fclose(f);
	return rc;
}

int wt_pki_read_pair(const char *cert_path, const char *key_path, wt_pki_pair *out, wt_err *err)
{
	wt_pki_pair p = WT_PKI_PAIR_INIT;
	mbedtls_x509_crt crt;
	mbedtls_pk_context key;
	int ret, rc;

	mbedtls_x509_crt_init(&crt);
	mbedtls_pk_init(&key);
	if ((rc = wt_pki_read_file(cert_path, &p.cert_pem, err)))
		goto out;
	ret = mbedtls_x509_crt_parse(&crt, (const unsigned char *)p.cert_pem, strlen(p.cert_pem) + 1);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, cert_path);
		goto out;
	}
	if (key_path) {
		if ((rc = wt_pki_read_file(key_path, &p.key_pem, err)))
			goto out;
		ret = mbedtls_pk_parse_key(&key, (const unsigned char *)p.key_pem,
					   strlen(p.key_pem) + 1, NULL, 0);
		if (ret) {
			rc = wt_pki_mbed_err(err, WT_EINVAL, ret, key_path);
			goto out;
		}
		if (mbedtls_pk_check_pair(&crt.pk, &key)) {
			rc = wt_err_set(err, WT_EINVAL, "%s: key does not match certificate %s",
					key_path, cert_path);
			goto out;
		}
	}
	*out = p;
	p.cert_pem = p.key_pem = NULL;
out:
	wt_pki_pair_free(&p);
	mbedtls_pk_free(&key);
	mbedtls_x509_crt_free(&crt);
	return rc;
}

/* ---- identity ---------------------------------------------------------------- */

/* Copy an ASN.1 string if it is a valid id. */
static int copy_id(const mbedtls_x509_buf *b, char *id, size_t idlen)
{
	if (b->len == 0 || b->len > WT_PKI_ID_MAX || b->len >= idlen)
		return WT_EINVAL;
	memcpy(id, b->p, b->len);
	id[b->len] = 0;
	if (!wt_pki_valid_id(id)) { /* also catches embedded NULs */
		id[0] = 0;
		return WT_EINVAL;
	}
	return 0;
}

#define SAN_DNS_TAG (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2)

int wt_pki_crt_id(const mbedtls_x509_crt *crt, char *id, size_t idlen)
{
	if (idlen)
		id[0] = 0;
	for (const mbedtls_x509_name *n = &crt->subject; n; n = n->next)
		if (n->oid.p && n->oid.len == MBEDTLS_OID_SIZE(MBEDTLS_OID_AT_CN) &&
		    !memcmp(n->oid.p, MBEDTLS_OID_AT_CN, n->oid.len))
			return copy_id(&n->val, id, idlen);
	for (const mbedtls_x509_sequence *s = &crt->subject_alt_names; s && s->buf.p; s = s->next)
		if (s->buf.tag == SAN_DNS_TAG)
			return copy_id(&s->buf, id, idlen);
	return WT_ENOTFOUND;
}

size_t wt_pki_crt_dns_names(const mbedtls_x509_crt *crt, char (*names)[WT_PKI_NAME_MAX + 1],
			    size_t max)
{
	size_t n = 0;

	for (const mbedtls_x509_sequence *s = &crt->subject_alt_names; s && s->buf.p && n < max;
	     s = s->next) {
		if (s->buf.tag != SAN_DNS_TAG || s->buf.len == 0 || s->buf.len > WT_PKI_NAME_MAX ||
		    memchr(s->buf.p, 0, s->buf.len))
			continue;
		memcpy(names[n], s->buf.p, s->buf.len);
		names[n][s->buf.len] = 0;
		n++;
	}
	return n;
}

int wt_pki_pem_id(const char *cert_pem, char *id, size_t idlen, wt_err *err)
{
	mbedtls_x509_crt crt;
	int ret, rc;

	mbedtls_x509_crt_init(&crt);
	ret = mbedtls_x509_crt_parse(&crt, (const unsigned char *)cert_pem, strlen(cert_pem) + 1);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: certificate");
		goto out;
	}
	rc = wt_pki_crt_id(&crt, id, idlen);
	if (rc == WT_ENOTFOUND)
		wt_err_set(err, rc, "pki: certificate names no CN or DNS SAN");
	else if (rc)
		wt_err_set(err, rc, "pki: certificate identity is not a valid id");
out:
	mbedtls_x509_crt_free(&crt);
	return rc;
}

int wt_pki_verify(const char *ca_pem, const char *cert_pem, const char *cn, wt_err *err)
{
	mbedtls_x509_crt ca, crt;
	uint32_t flags = 0;
	char info[256];
	int ret, rc = 0;

	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&crt);
	ret = mbedtls_x509_crt_parse(&ca, (const unsigned char *)ca_pem, strlen(ca_pem) + 1);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: CA bundle");
		goto out;
	}
	ret = mbedtls_x509_crt_parse(&crt, (const unsigned char *)cert_pem, strlen(cert_pem) + 1);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "pki: certificate");
		goto out;
	}
	ret = mbedtls_x509_crt_verify(&crt, &ca, NULL, cn, &flags, NULL, NULL);
	if (ret) {
		mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
		for (char *c = info; *c; c++) /* one line */
			if (*c == '\n')
				*c = (c[1] ? ';' : 0);
		rc = wt_err_set(err, WT_EAUTH, "pki: certificate not trusted: %s", info);
	}
out:
	mbedtls_x509_crt_free(&crt);
	mbedtls_x509_crt_free(&ca);
	return rc;
}
