/*
 * textio.h — small I/O helpers shared by the unit tests of the text and
 * JSON profile formats (perf script, cpuprofile, speedscope): where the
 * repository, build and test corpus (tests/corpus) are, whole-file reads, and running
 * an independent reference command (awk, python3, perf report) to collect
 * its output.
 * Ownership: returned buffers are malloc'd, NUL-terminated; the caller
 * frees them.
 */
#ifndef WT_TEST_TEXTIO_H
#define WT_TEST_TEXTIO_H

#include <stddef.h>

const char *wt_test_root(void);   /* $WT_ROOT or "." */
const char *wt_test_build(void);  /* $BUILD or "build" */
/* $WT_ROOT/tests/corpus (or $WT_CORPUS) into buf; returns buf. */
const char *wt_test_corpus(char *buf, size_t len);

/* The bytes of a file, or NULL when it cannot be read. */
char *wt_test_read_file(const char *path, size_t *len);

/* All of a shell command's stdout; *status (if non-NULL) its exit status
 * (-1 when it could not run). Never NULL (an empty string on failure). */
char *wt_test_cmd_output(const char *cmd, int *status);

#endif
