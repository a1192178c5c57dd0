/*
 * objstore_s3.h — pure helpers of the S3 backend (URL, SigV4 provider
 * string, payload hash header), exposed for unit tests.
 */
#ifndef HUB_OBJSTORE_S3_H
#define HUB_OBJSTORE_S3_H

#include <stddef.h>

#include "objstore.h"

#define HUB_S3_PAYLOAD_HDR_LEN (sizeof("x-amz-content-sha256: ") + 64)

/* "<endpoint>/<bucket>/<key>" (key NULL: the bucket URL). 0 or WT_EINVAL. */
int hub_s3_url(const char *endpoint, const char *bucket, const char *key, char *out, size_t cap);
/* CURLOPT_AWS_SIGV4 value: "aws:amz:<region>:s3". */
int hub_s3_sigv4_param(const char *region, char *out, size_t cap);
/* "x-amz-content-sha256: <hex sha256 of data>" (data NULL: empty payload). */
void hub_s3_payload_header(const void *data, size_t len, char out[HUB_S3_PAYLOAD_HDR_LEN]);

#endif
