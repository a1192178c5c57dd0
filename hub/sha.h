/*
 * sha.h — SHA-256 (mbedtls) as lowercase hex, used for token hashes, object
 * keys (content addressing) and S3 payload hashes.
 */
#ifndef HUB_SHA_H
#define HUB_SHA_H

#include <stddef.h>
#include <stdint.h>

#define HUB_SHA256_HEX_LEN 64

/* hex must hold HUB_SHA256_HEX_LEN + 1 bytes; always NUL-terminated. */
void hub_sha256_hex(const void *data, size_t len, char hex[HUB_SHA256_HEX_LEN + 1]);
void hub_hex(const uint8_t *in, size_t n, char *out /* 2n+1 */);

#endif
