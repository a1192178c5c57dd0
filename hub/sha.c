/*
 * sha.c — SHA-256 hex digests (mbedtls) and random bytes (getrandom).
 */
#include "sha.h"

#include <errno.h>
#include <mbedtls/sha256.h>
#include <sys/random.h>

#include "err.h"
#include "hex.h"

void hub_hex(const uint8_t *in, size_t n, char *out)
{
	wt_hex_encode(in, n, out, 2 * n + 1);
}

void hub_sha256_hex(const void *data, size_t len, char hex[HUB_SHA256_HEX_LEN + 1])
{
	unsigned char md[32];

	mbedtls_sha256_ret(data, len, md, 0);
	hub_hex(md, sizeof(md), hex);
}

int hub_random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return WT_EIO;
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}
