/*
 * input.h — how wtctl's offline commands (profile summary, convert) get a
 * file's bytes, and the progress line they show while decoding large ones.
 *
 * Regular files are mmap'd read-only (no copy, no growing buffer: the
 * kernel pages the input in as the parser walks it, and those pages are
 * file-backed, reclaimable memory); stdin ("-") and other non-mappable
 * inputs are read into memory. Either way the size is bounded by `max`.
 *
 * The progress line is shown on stderr only when stderr is a terminal and
 * the input is at least CLI_PROGRESS_MIN_BYTES: "wtctl: FILE: decoding
 * 412 MB ... 37% read, 3.2 s", refreshed every CLI_PROGRESS_INTERVAL_MS by
 * a helper thread, then replaced by a final "decoded ... in S s (X MB/s)".
 * The percentage is the share of the mapping's pages the parser has touched
 * (from /proc/self/pagemap); it is omitted when that is not readable.
 *
 * Ownership: cli_input_open fills *in, which owns its mapping or buffer;
 * release with cli_input_close(). cli_progress_start returns a handle owned
 * by the caller (NULL when no line is shown), released by cli_progress_stop.
 */
#ifndef WT_CLI_INPUT_H
#define WT_CLI_INPUT_H

#include <stddef.h>
#include <stdint.h>

#define CLI_PROGRESS_MIN_BYTES ((size_t)50 << 20)
#define CLI_PROGRESS_INTERVAL_MS 250

typedef struct cli_input {
	const char *path;
	const uint8_t *data; /* len bytes; never NULL (an empty file is "") */
	size_t len;
	void *map;      /* mmap'd region, or NULL */
	uint8_t *heap;  /* malloc'd copy (stdin, pipes), or NULL */
} cli_input;

/* Open path ("-" = stdin) for reading at most max bytes. On failure prints
 * "wtctl: PATH: reason" on stderr and returns -1. */
int cli_input_open(const char *path, size_t max, cli_input *in);
void cli_input_close(cli_input *in);

typedef struct cli_progress cli_progress;

/* Start the progress line for decoding `in` (what: e.g. "decoding"), or
 * return NULL when it is not wanted (stderr not a terminal, small input)
 * or cannot be started. */
cli_progress *cli_progress_start(const cli_input *in, const char *what);
/* Stop and join the helper thread; ok != 0 prints the final line, else the
 * line is cleared (the caller prints its error). NULL is a no-op. */
void cli_progress_stop(cli_progress *pr, int ok);

#endif
