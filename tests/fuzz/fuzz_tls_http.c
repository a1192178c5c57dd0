/*
 * fuzz_tls_http.c — libFuzzer target: the hub's mTLS HTTP/1.1 request
 * reader (hub/http1_parse.c, called by hub/tls_server.c) on arbitrary
 * bytes as if they arrived on one keep-alive connection: heads framed by
 * CRLFCRLF within HUB_HTTP1_MAX_HEADER_BYTES, parsed by
 * hub_http1_parse_head (the function the server calls), bodies sized by Content-Length, pipelined requests after
 * them — the framing of serve_http() without the TLS session. Each head is
 * copied into a buffer of exactly its size so ASan sees any over-read.
 * Seeds: tests/fuzz/seed/fuzz_tls_http/.
 * Links with: hub/http1_parse.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/http1_parse.h"

#define FUZZ_MAX_BODY (1u << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		const uint8_t *end = memmem(data + off, size - off, "\r\n\r\n", 4);
		size_t hlen;
		char *buf;
		hub_http1_head h;
		const char *why = NULL;
		int st;

		if (!end)
			break; /* the server would read more, then time out */
		hlen = (size_t)(end - (data + off)) + 4;
		if (hlen > HUB_HTTP1_MAX_HEADER_BYTES)
			break; /* 431 */
		buf = malloc(hlen);
		if (!buf)
			break;
		memcpy(buf, data + off, hlen);
		st = hub_http1_parse_head(buf, hlen, FUZZ_MAX_BODY, &h, &why);
		if (st) {
			if (st < 400 || st > 499 || !why || !*why)
				abort(); /* every refusal is a 4xx with a reason */
			free(buf);
			break; /* the server answers and closes */
		}
		if (!h.method || !*h.method || !h.path || h.path[0] != '/' || !h.query ||
		    h.nhdr > HUB_HTTP1_MAX_HEADERS || h.content_length > FUZZ_MAX_BODY)
			abort();
		for (size_t i = 0; i < h.nhdr; i++) {
			const char *v = hub_http1_find_header(h.hdr, h.nhdr, h.hdr[i].name);
			if (!v || !h.hdr[i].value)
				abort();
			for (const char *q = h.hdr[i].name; *q; q++)
				if (*q >= 'A' && *q <= 'Z')
					abort(); /* names are lower-cased */
		}
		(void)hub_http1_find_header(h.hdr, h.nhdr, "content-type");
		free(buf);
		if (h.content_length > size - off - hlen)
			break; /* body incomplete */
		off += hlen + h.content_length;
		if (!h.keep_alive)
			break;
	}
	return 0;
}
