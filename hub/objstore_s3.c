/*
 * objstore_s3.c — S3 backend of the object store (path-style URLs,
 * libcurl CURLOPT_AWS_SIGV4). libcurl signs the request but does not add
 * the x-amz-content-sha256 header that S3 (and s3rver) require, so we send
 * it ourselves; libcurl then signs it too and uses its value as the payload
 * hash. The pure pieces (URL, sigv4 provider string, payload header) are in
 * hub_s3_* helpers, unit-tested in tests/unit/hub/test_s3.c.
 */
#include "objstore_s3.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "log.h"
#include "sha.h"

typedef struct s3_priv {
	char *endpoint, *bucket, *region, *userpwd;
	long timeout_ms;
} s3_priv;

int hub_s3_url(const char *endpoint, const char *bucket, const char *key, char *out, size_t cap)
{
	size_t el = strlen(endpoint);
	int n;

	while (el && endpoint[el - 1] == '/')
		el--;
	n = key ? snprintf(out, cap, "%.*s/%s/%s", (int)el, endpoint, bucket, key)
		: snprintf(out, cap, "%.*s/%s", (int)el, endpoint, bucket);
	return (n < 0 || (size_t)n >= cap) ? WT_EINVAL : 0;
}

int hub_s3_sigv4_param(const char *region, char *out, size_t cap)
{
	int n = snprintf(out, cap, "aws:amz:%s:s3", region && *region ? region : "us-east-1");
	return (n < 0 || (size_t)n >= cap) ? WT_EINVAL : 0;
}

void hub_s3_payload_header(const void *data, size_t len, char out[HUB_S3_PAYLOAD_HDR_LEN])
{
	char hex[HUB_SHA256_HEX_LEN + 1];

	hub_sha256_hex(data ? data : "", data ? len : 0, hex);
	snprintf(out, HUB_S3_PAYLOAD_HDR_LEN, "x-amz-content-sha256: %s", hex);
}

/* One signed request. method: "PUT", "GET", "DELETE". *status gets the HTTP
 * status. data/len: request body (PUT). out: response body (GET), bounded. */
static int s3_request(s3_priv *sp, const char *method, const char *key, const void *data,
		      size_t len, wt_buf *out, size_t max, long *status, wt_err *err)
{
	char url[2048], sig[128], payload[HUB_S3_PAYLOAD_HDR_LEN];
	const char *hdrs[3] = {payload, NULL, NULL};
	wt_buf errb = WT_BUF_INIT; /* first bytes of an error answer */
	int put = !strcmp(method, "PUT");
	wt_http_req q = {.method = method, .url = url, .headers = hdrs, .body = put ? data : NULL,
			 .len = put ? len : 0, .resp = out, .max_response = max, .keep = &errb, .keep_max = 512,
			 .timeout_ms = sp->timeout_ms, .connect_timeout_ms = 5000};
	wt_http_result r;
	CURL *h = curl_easy_init();
	int rc = 0;

	if (!h)
		return wt_err_set(err, WT_ENOMEM, "s3: out of memory");
	if (hub_s3_url(sp->endpoint, sp->bucket, key, url, sizeof(url)) ||
	    hub_s3_sigv4_param(sp->region, sig, sizeof(sig))) {
		rc = wt_err_set(err, WT_EINVAL, "s3: URL too long for key %s", key ? key : "");
		goto out;
	}
	hub_s3_payload_header(put ? data : NULL, len, payload);
	if (put)
		hdrs[1] = "Content-Type: application/octet-stream";
	/* the signature is the handle's: libcurl signs what it sends */
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sig);
	curl_easy_setopt(h, CURLOPT_USERPWD, sp->userpwd);
	rc = wt_http_request(h, &q, &r);
	if (rc == WT_ELIMIT) {
		rc = wt_err_set(err, WT_ELIMIT, "s3: object %s larger than %zu bytes", key, max);
		goto out;
	}
	if (rc == WT_ENOMEM) {
		rc = wt_err_set(err, WT_ENOMEM, "s3: out of memory");
		goto out;
	}
	if (rc) {
		rc = wt_err_set(err, WT_EUNAVAIL, "s3: %s %s: %s", method, url, curl_easy_strerror(r.cc));
		goto out;
	}
	*status = r.status;
	if (*status >= 300 && out) {
		/* error body landed in out: keep it out of the caller's data */
		size_t n = out->len < 300 ? out->len : 300;
		wt_buf_append(&errb, out->data, n);
		out->len = 0;
	}
	if (*status >= 300 && *status != 404 && *status != 409) {
		wt_buf_putc(&errb, '\0');
		rc = wt_err_set(err, WT_EIO, "s3: %s %s: HTTP %ld: %.300s", method, url, *status,
				errb.data ? (const char *)errb.data : "");
	}
out:
	wt_buf_free(&errb);
	curl_easy_cleanup(h);
	return rc;
}

static int s3_put(hub_objstore *os, const char *key, const void *data, size_t len, wt_err *err)
{
	long status = 0;
	int rc = s3_request(os->priv, "PUT", key, data, len, NULL, 0, &status, err);

	if (!rc && status >= 300)
		rc = wt_err_set(err, WT_EIO, "s3: PUT %s: HTTP %ld", key, status);
	return rc;
}

static int s3_get(hub_objstore *os, const char *key, size_t max, wt_buf *out, wt_err *err)
{
	long status = 0;
	int rc = s3_request(os->priv, "GET", key, NULL, 0, out, max, &status, err);

	if (!rc && status == 404)
		rc = wt_err_set(err, WT_ENOTFOUND, "s3: %s not found", key);
	return rc;
}

static int s3_del(hub_objstore *os, const char *key, wt_err *err)
{
	long status = 0;
	return s3_request(os->priv, "DELETE", key, NULL, 0, NULL, 0, &status, err);
}

static void s3_close(hub_objstore *os)
{
	s3_priv *sp = os->priv;

	if (sp) {
		free(sp->endpoint);
		free(sp->bucket);
		free(sp->region);
		free(sp->userpwd);
		free(sp);
	}
	free(os);
}

static const hub_objstore_ops s3_ops = {s3_put, s3_get, s3_del, s3_close};

int hub_objstore_s3_open(const hub_config *cfg, hub_objstore **out, wt_err *err)
{
	hub_objstore *os = calloc(1, sizeof(*os));
	s3_priv *sp = calloc(1, sizeof(*sp));
	size_t n;
	long status = 0;
	int rc;

	if (!os || !sp) {
		free(os);
		free(sp);
		return wt_err_set(err, WT_ENOMEM, "s3: out of memory");
	}
	os->ops = &s3_ops;
	os->name = "s3";
	os->priv = sp;
	n = strlen(cfg->s3_access_key) + strlen(cfg->s3_secret_key) + 2;
	sp->endpoint = strdup(cfg->s3_endpoint);
	sp->bucket = strdup(cfg->s3_bucket);
	sp->region = strdup(cfg->s3_region ? cfg->s3_region : "us-east-1");
	sp->userpwd = malloc(n);
	sp->timeout_ms = cfg->s3_timeout_ms;
	if (!sp->endpoint || !sp->bucket || !sp->region || !sp->userpwd) {
		s3_close(os);
		return wt_err_set(err, WT_ENOMEM, "s3: out of memory");
	}
	snprintf(sp->userpwd, n, "%s:%s", cfg->s3_access_key, cfg->s3_secret_key);
	/* Create the bucket if it is missing; 409 = it exists already. An
	 * unreachable endpoint is not fatal at start: puts fail with 503 until
	 * it answers. */
	rc = s3_request(sp, "PUT", NULL, NULL, 0, NULL, 0, &status, err);
	if (rc == WT_EUNAVAIL)
		wt_warn("msg=\"s3 endpoint unreachable at start\" endpoint=%s", sp->endpoint);
	else if (rc) {
		s3_close(os);
		return rc;
	}
	*out = os;
	return 0;
}
