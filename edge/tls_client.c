/*
 * tls_client.c — mutual-TLS HTTPS client for edge→hub replication on one
 * persistent libcurl easy handle (see tls_client.h).
 */
#include "tls_client.h"
#include "http_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

struct edge_tls_client {
	CURL *h;
	char *ca_file, *cert_file, *key_file;
	struct curl_slist *resolve;
	size_t max_response;
	long connects;
	int (*cancel)(void *arg);
	void *cancel_arg;
	int last_failure;
	char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	edge_tls_client *c = arg;
	return c->cancel(c->cancel_arg) ? 1 : 0;
}

static int failure_kind(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
		return WT_TLS_FAIL_CONNECT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_ENGINE_INITFAILED:
		return WT_TLS_FAIL_TLS;
	case CURLE_OPERATION_TIMEDOUT:
		return WT_TLS_FAIL_TIMEOUT;
	case CURLE_ABORTED_BY_CALLBACK:
		return WT_TLS_FAIL_CANCELLED;
	default:
		return WT_TLS_FAIL_OTHER;
	}
}

static int check_file(const char *what, const char *path, wt_err *err)
{
	if (!path || !*path)
		return wt_err_set(err, WT_EINVAL, "tls client: %s file is required", what);
	if (access(path, R_OK))
		return wt_err_set(err, WT_EINVAL, "tls client: %s file %s is not readable", what, path);
	return 0;
}

int edge_tls_client_set_files(edge_tls_client *c, const char *ca_file, const char *cert_file,
			    const char *key_file, wt_err *err)
{
	char *ca, *cert, *key;
	int rc;

	if ((rc = check_file("CA", ca_file, err)) || (rc = check_file("certificate", cert_file, err)) ||
	    (rc = check_file("key", key_file, err)))
		return rc;
	ca = strdup(ca_file);
	cert = strdup(cert_file);
	key = strdup(key_file);
	if (!ca || !cert || !key) {
		free(ca);
		free(cert);
		free(key);
		return wt_err_set(err, WT_ENOMEM, "tls client: out of memory");
	}
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	c->ca_file = ca;
	c->cert_file = cert;
	c->key_file = key;
	curl_easy_setopt(c->h, CURLOPT_CAINFO, c->ca_file);
	curl_easy_setopt(c->h, CURLOPT_SSLCERT, c->cert_file);
	curl_easy_setopt(c->h, CURLOPT_SSLKEY, c->key_file);
	/* a connection opened with the old certificate must not be reused */
	curl_easy_setopt(c->h, CURLOPT_FRESH_CONNECT, 1L);
	return 0;
}

int edge_tls_client_new(const edge_tls_client_config *cfg, edge_tls_client **out, wt_err *err)
{
	edge_tls_client *c;
	int rc;

	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return wt_err_set(err, WT_EIO, "tls client: curl_global_init: %s",
				  curl_easy_strerror(curl_init_rc));
	c = calloc(1, sizeof(*c));
	if (!c)
		return wt_err_set(err, WT_ENOMEM, "tls client: out of memory");
	c->h = curl_easy_init();
	if (!c->h) {
		rc = wt_err_set(err, WT_ENOMEM, "tls client: curl_easy_init failed");
		goto fail;
	}
	if ((rc = edge_tls_client_set_files(c, cfg->ca_file, cfg->cert_file, cfg->key_file, err)))
		goto fail;
	curl_easy_setopt(c->h, CURLOPT_FRESH_CONNECT, 0L);
	for (const char *const *r = cfg->resolve; r && *r; r++) {
		struct curl_slist *n = curl_slist_append(c->resolve, *r);
		if (!n) {
			rc = wt_err_set(err, WT_ENOMEM, "tls client: out of memory");
			goto fail;
		}
		c->resolve = n;
	}
	c->max_response = cfg->max_response ? cfg->max_response : EDGE_TLS_CLIENT_MAX_RESPONSE;
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "https"); /* never plain HTTP */
	curl_easy_setopt(c->h, CURLOPT_SSLCERTTYPE, "PEM");
	curl_easy_setopt(c->h, CURLOPT_SSLKEYTYPE, "PEM");
	curl_easy_setopt(c->h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c->h, CURLOPT_SSL_VERIFYHOST, 2L); /* hub name from the URL */
	curl_easy_setopt(c->h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS,
			 cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : EDGE_TLS_CLIENT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS,
			 cfg->timeout_ms > 0 ? cfg->timeout_ms : EDGE_TLS_CLIENT_TIMEOUT_MS);
	curl_easy_setopt(c->h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (c->resolve)
		curl_easy_setopt(c->h, CURLOPT_RESOLVE, c->resolve);
	if (cfg->cancel) {
		c->cancel = cfg->cancel;
		c->cancel_arg = cfg->cancel_arg;
		curl_easy_setopt(c->h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c->h, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(c->h, CURLOPT_NOPROGRESS, 0L);
	}
	*out = c;
	return 0;
fail:
	edge_tls_client_free(c);
	return rc;
}

int edge_tls_client_request(edge_tls_client *c, const char *method, const char *url,
			  const char *const *headers, const void *body, size_t len, long *status,
			  wt_buf *resp, wt_err *err)
{
	wt_http_result r;
	long conns = 0;
	int rc;

	*status = 0;
	c->errbuf[0] = 0;
	rc = wt_http_perform(c->h, method, url, headers, body, len, resp, c->max_response, &r);
	curl_easy_setopt(c->h, CURLOPT_FRESH_CONNECT, 0L);
	if (curl_easy_getinfo(c->h, CURLINFO_NUM_CONNECTS, &conns) == CURLE_OK)
		c->connects += conns;
	c->last_failure = WT_TLS_FAIL_NONE;
	if (r.over) {
		c->last_failure = WT_TLS_FAIL_OTHER;
		rc = wt_err_set(err, WT_ELIMIT, "%s: response larger than %zu bytes", url, c->max_response);
	} else if (rc == WT_ENOMEM) {
		c->last_failure = WT_TLS_FAIL_OTHER;
		if (r.cc == CURLE_OK) /* the header list, before any transfer */
			rc = wt_err_set(err, WT_ENOMEM, "tls client: out of memory");
		else
			rc = wt_err_set(err, WT_ENOMEM, "%s: out of memory for the response", url);
	} else if (rc) {
		c->last_failure = failure_kind(r.cc);
		rc = wt_err_set(err, WT_EUNAVAIL, "%s: %s", url, c->errbuf[0] ? c->errbuf : curl_easy_strerror(r.cc));
	} else {
		*status = r.status;
	}
	return rc;
}

int edge_tls_client_post(edge_tls_client *c, const char *url, const char *const *headers,
		       const void *body, size_t len, long *status, wt_buf *resp, wt_err *err)
{
	return edge_tls_client_request(c, "POST", url, headers, body, len, status, resp, err);
}

int edge_tls_client_last_failure(const edge_tls_client *c)
{
	return c->last_failure;
}

long edge_tls_client_connects(const edge_tls_client *c)
{
	return c->connects;
}

void edge_tls_client_free(edge_tls_client *c)
{
	if (!c)
		return;
	if (c->h)
		curl_easy_cleanup(c->h);
	curl_slist_free_all(c->resolve);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	free(c);
}
