/*
 * gzbomb.h — build a valid gzip "bomb" (a small stream that inflates to
 * many MiB of zeros) in memory, fast, for decompression-limit tests.
 * Ownership: the returned buffer is malloc'd; the caller frees it.
 */
#ifndef WT_TEST_GZBOMB_H
#define WT_TEST_GZBOMB_H

#include <stddef.h>
#include <stdint.h>

/* A gzip member that inflates to mib MiB of zeros (CRC and size correct).
 * Returns NULL on failure; *len receives the compressed size. */
uint8_t *wt_test_gzip_bomb(size_t mib, size_t *len);

#endif
