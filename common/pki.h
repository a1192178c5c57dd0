/*
 * pki.h — the site PKI behind edge→hub mutual TLS, written with mbedtls'
 * x509 writer: EC P-256 keys, a self-signed site CA, the hub's server
 * certificate and one client certificate per edge, PEM files on disk.
 *
 * The shape of every certificate (see docs/operations.md "PKI and
 * certificates"):
 *   site CA   CN=<name>, O=Watchtower; basicConstraints CA:true pathlen:0
 *             (critical); keyUsage keyCertSign|cRLSign; SKID.
 *   hub       CN=<first name>, O=Watchtower hub; SAN = the given DNS names
 *             and IP addresses; keyUsage digitalSignature;
 *             extendedKeyUsage serverAuth; SKID+AKID; CA:false.
 *   edge      CN=<edge id>, O=Watchtower edge; SAN DNS = <edge id>;
 *             keyUsage digitalSignature; extendedKeyUsage clientAuth;
 *             SKID+AKID; CA:false.
 * The hub takes an edge's identity from its certificate (wt_pki_crt_id()),
 * so the edge id is restricted to wt_pki_valid_id() characters.
 *
 * Randomness (keys, serials, ECDSA nonces) comes from mbedtls_ctr_drbg
 * seeded by mbedtls_entropy (getrandom on Linux), a fresh DRBG per call.
 * All functions are thread-safe (no shared state).
 */
#ifndef WT_PKI_H
#define WT_PKI_H

#include <stddef.h>
#include <stdint.h>

#include <mbedtls/x509_crt.h>

#include "err.h"

/* Defaults used by `wtctl pki` (days of validity). */
#define WT_PKI_CA_DAYS 3650
#define WT_PKI_HUB_DAYS 825
#define WT_PKI_EDGE_DAYS 397
/* Certificates are back-dated this much so a peer whose clock is a little
 * behind does not see a "future" certificate. */
#define WT_PKI_BACKDATE_SECS 300

#define WT_PKI_ID_MAX 64      /* edge id: 1..64 chars, see wt_pki_valid_id */
#define WT_PKI_MAX_NAMES 32   /* SAN entries of a hub certificate */
#define WT_PKI_NAME_MAX 253   /* one DNS name */
#define WT_PKI_MAX_PEM (64u << 10) /* largest cert/key file we read */

/* A certificate and its private key, both PEM text (NUL-terminated,
 * malloc'd, owned by the pair; wt_pki_pair_free releases them). */
typedef struct wt_pki_pair {
	char *cert_pem;
	char *key_pem;
} wt_pki_pair;

#define WT_PKI_PAIR_INIT {NULL, NULL}

/* Validity window in unix seconds (UTC). not_after > not_before. Tests pass
 * a window in the past to get an expired certificate. */
typedef struct wt_pki_validity {
	int64_t not_before;
	int64_t not_after;
} wt_pki_validity;

/* now − WT_PKI_BACKDATE_SECS .. now + days. */
wt_pki_validity wt_pki_days(int64_t days);

void wt_pki_pair_free(wt_pki_pair *p);

/* Is id a valid edge id: 1..WT_PKI_ID_MAX chars of [A-Za-z0-9._-], first
 * one alphanumeric? (It becomes a CN, a DNS SAN, a file name and a
 * ClickHouse value, so nothing else is allowed.) */
int wt_pki_valid_id(const char *id);

/* Create a self-signed site CA with a fresh P-256 key. cn: the CA's
 * common name (NULL = "Watchtower site CA"; no ',', '=', '\\' or '+').
 * On success *out holds new PEM strings (caller frees with
 * wt_pki_pair_free). Returns 0, WT_EINVAL (bad cn/validity), WT_ENOMEM or
 * WT_EIO (mbedtls failure), message in err. */
int wt_pki_make_ca(const char *cn, wt_pki_validity v, wt_pki_pair *out, wt_err *err);

/* Issue the hub's server certificate, signed by ca (cert+key PEM).
 * names: 1..WT_PKI_MAX_NAMES entries; each one that parses as an IPv4/IPv6
 * address becomes an iPAddress SAN, any other must be a DNS name
 * (letters, digits, '-', '.', leading "*." allowed) and becomes a dNSName
 * SAN. The CN is names[0]. Same returns as wt_pki_make_ca. */
int wt_pki_issue_server(const wt_pki_pair *ca, const char *const *names, size_t nnames,
			wt_pki_validity v, wt_pki_pair *out, wt_err *err);

/* Issue an edge's client certificate (CN and SAN DNS = edge_id, which must
 * pass wt_pki_valid_id), signed by ca. Same returns as wt_pki_make_ca. */
int wt_pki_issue_client(const wt_pki_pair *ca, const char *edge_id, wt_pki_validity v,
			wt_pki_pair *out, wt_err *err);

/* Write p's certificate to cert_path (mode 0644) and key to key_path (mode
 * 0600), each atomically (temporary file in the same directory, fsync,
 * rename). Unless overwrite, an existing file is an error (WT_EINVAL) and
 * nothing is written. Returns 0 or WT_EIO/WT_EINVAL. */
int wt_pki_write_pair(const wt_pki_pair *p, const char *cert_path, const char *key_path,
		      int overwrite, wt_err *err);

/* Read a PEM file (at most WT_PKI_MAX_PEM bytes) into a malloc'd
 * NUL-terminated string *out (caller frees). Returns 0, WT_EIO or
 * WT_ELIMIT. */
int wt_pki_read_file(const char *path, char **out, wt_err *err);

/* Read a certificate and its key and check that they belong together (the
 * key's public half is the certificate's). key_path may be NULL (only the
 * certificate is read; out->key_pem stays NULL). Caller frees *out.
 * Returns 0, WT_EIO, WT_ELIMIT or WT_EINVAL (unparsable, mismatch). */
int wt_pki_read_pair(const char *cert_path, const char *key_path, wt_pki_pair *out,
		     wt_err *err);

/* The identity a certificate names: its subject CN if present, otherwise
 * its first dNSName SAN. Copies it NUL-terminated into id (idlen bytes).
 * Returns 0, WT_ENOTFOUND (neither present) or WT_EINVAL (does not pass
 * wt_pki_valid_id — embedded NULs, too long, odd characters). */
int wt_pki_crt_id(const mbedtls_x509_crt *crt, char *id, size_t idlen);

/* Copy up to max dNSName SAN entries of crt, each NUL-terminated, into
 * names[i] (WT_PKI_NAME_MAX+1 bytes each). Returns the number copied
 * (entries too long or with NULs are skipped). */
size_t wt_pki_crt_dns_names(const mbedtls_x509_crt *crt, char (*names)[WT_PKI_NAME_MAX + 1],
			    size_t max);

/* Parse cert_pem and return its identity (as wt_pki_crt_id). */
int wt_pki_pem_id(const char *cert_pem, char *id, size_t idlen, wt_err *err);

/* Verify cert_pem against the CA(s) in ca_pem (one or more concatenated
 * certificates — a bundle of old and new CA during CA rotation), at the
 * current time; cn, if non-NULL, must match a SAN/CN. Returns 0 or WT_EAUTH
 * with mbedtls' reasons ("The certificate validity has expired") in err. */
int wt_pki_verify(const char *ca_pem, const char *cert_pem, const char *cn, wt_err *err);

/* Format an mbedtls error code as "what: mbedtls text (-0xNNNN)" into err
 * and return code (a WT_E* value). For the TLS modules. */
int wt_pki_mbed_err(wt_err *err, int code, int mbed_ret, const char *what);

#endif
