/*
 * gzbomb.c — see gzbomb.h. Deflating 1 GiB of zeros takes seconds, so we
 * deflate one MiB with Z_FULL_FLUSH (which resets the compressor, making
 * every further MiB compress to the same bytes), repeat those bytes, close
 * the stream with an empty final stored block and write the gzip trailer
 * (CRC-32 combined arithmetically, ISIZE mod 2^32) ourselves.
 */
#include "gzbomb.h"

#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#define MIB (1u << 20)

uint8_t *wt_test_gzip_bomb(size_t mib, size_t *len)
{
	static uint8_t zeros[MIB];
	uint8_t first[8192], block[8192];
	size_t nfirst, nblock, i, cap, off;
	uLong crc1, crc;
	uint64_t total = (uint64_t)mib * MIB;
	uint8_t *out;
	z_stream zs;

	if (mib < 2)
		return NULL;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	zs.next_in = zeros;
	zs.avail_in = MIB;
	zs.next_out = first;
	zs.avail_out = sizeof(first);
	if (deflate(&zs, Z_FULL_FLUSH) != Z_OK || zs.avail_in) /* header + MiB 1 */
		goto fail;
	nfirst = sizeof(first) - zs.avail_out;
	zs.next_in = zeros;
	zs.avail_in = MIB;
	zs.next_out = block;
	zs.avail_out = sizeof(block);
	if (deflate(&zs, Z_FULL_FLUSH) != Z_OK || zs.avail_in) /* MiB 2: the repeat unit */
		goto fail;
	nblock = sizeof(block) - zs.avail_out;
	deflateEnd(&zs);

	cap = nfirst + nblock * (mib - 1) + 5 + 8;
	out = malloc(cap);
	if (!out)
		return NULL;
	memcpy(out, first, nfirst);
	off = nfirst;
	for (i = 1; i < mib; i++) {
		memcpy(out + off, block, nblock);
		off += nblock;
	}
	/* final empty stored block: BFINAL=1 BTYPE=00, LEN=0, NLEN=0xffff */
	memcpy(out + off, "\x01\x00\x00\xff\xff", 5);
	off += 5;
	crc1 = crc32(0L, zeros, MIB);
	crc = crc1;
	for (i = 1; i < mib; i++)
		crc = crc32_combine(crc, crc1, MIB);
	for (i = 0; i < 4; i++)
		out[off++] = (uint8_t)(crc >> (8 * i));
	for (i = 0; i < 4; i++)
		out[off++] = (uint8_t)((total & 0xffffffffu) >> (8 * i));
	*len = off;
	return out;
fail:
	deflateEnd(&zs);
	return NULL;
}
