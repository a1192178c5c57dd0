/*
 * fsdir.c — `mkdir -p` (see fsdir.h).
 */
#include "fsdir.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir that accepts an existing directory; 0 or -1 with errno. */
static int make_one(const char *dir, mode_t mode)
{
	return mkdir(dir, mode) && errno != EEXIST ? -1 : 0;
}

int wt_mkdir_p(const char *path, mode_t mode, wt_err *err)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);
	int e;

	if (n == 0 || n >= sizeof(tmp)) {
		errno = n ? ENAMETOOLONG : ENOENT;
		return wt_err_set(err, WT_EINVAL, "bad directory name");
	}
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (make_one(tmp, mode))
			goto fail;
		*p = '/';
	}
	if (make_one(tmp, mode))
		goto fail;
	return 0;
fail:
	e = errno;
	wt_err_set(err, WT_EIO, "%s: %s", tmp, strerror(e));
	errno = e;
	return WT_EIO;
}
