/*
 * rng.h — the one random source of the daemons and the CLI.
 *
 * wt_random_bytes: bytes from getrandom(2), for identifiers that must not
 * repeat across processes (incarnations, upload and object ids).
 * wt_rng_u64 / wt_rng_below: a fast per-thread xorshift64* generator seeded
 * from getrandom on each thread's first call, for retry jitter and sampling
 * decisions — not for secrets. Thread-safe: no shared state.
 */
#ifndef WT_RNG_H
#define WT_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Fill buf with n bytes from getrandom(2). 0, or WT_EIO. */
int wt_random_bytes(void *buf, size_t n);

/* The next 64 random bits of this thread's generator. */
uint64_t wt_rng_u64(void);

/* Uniform in [0, n) (n > 0; 0 when n is 0). */
uint64_t wt_rng_below(uint64_t n);

#endif
