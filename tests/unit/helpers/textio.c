/*
 * textio.c — see textio.h.
 */
#include "textio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *wt_test_root(void)
{
	const char *r = getenv("WT_ROOT");

	return r && *r ? r : ".";
}

const char *wt_test_build(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

const char *wt_test_corpus(char *buf, size_t len)
{
	const char *c = getenv("WT_CORPUS");

	if (c && *c)
		snprintf(buf, len, "%s", c);
	else
		snprintf(buf, len, "%s/tests/corpus", wt_test_root());
	return buf;
}

static char *read_all(FILE *fp, size_t *len)
{
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0, r;

	do {
		if (n + 65536 + 1 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			if (!(nb = realloc(buf, cap))) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, fp);
		n += r;
	} while (r > 0);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

char *wt_test_read_file(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *b;

	if (!fp)
		return NULL;
	b = read_all(fp, len);
	fclose(fp);
	return b;
}

char *wt_test_cmd_output(const char *cmd, int *status)
{
	FILE *fp = popen(cmd, "r");
	char *b;
	int st;

	if (status)
		*status = -1;
	if (!fp)
		return calloc(1, 1);
	b = read_all(fp, NULL);
	st = pclose(fp);
	if (status && st != -1 && WIFEXITED(st))
		*status = WEXITSTATUS(st);
	return b ? b : calloc(1, 1);
}
