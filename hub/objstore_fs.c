/*
 * objstore_fs.c — filesystem backend of the object store: one file per
 * object under a root directory. Writes are atomic and durable: write a
 * unique temporary file, fsync it, rename it into place, fsync the
 * directory. Readers never see a partial object.
 */
#include "objstore.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsdir.h"
#include "rng.h"
#include "sha.h"

typedef struct fs_priv {
	char *root;
} fs_priv;

/* mkdir -p for the parent directories of path (path itself excluded);
 * 0 or -errno. */
static int mkdirs_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	return wt_mkdir_p(dir, 0750, NULL) ? -errno : 0;
}

static int full_path(hub_objstore *os, const char *key, char *out, size_t cap)
{
	fs_priv *fp = os->priv;
	int n = snprintf(out, cap, "%s/%s", fp->root, key);
	return (n < 0 || (size_t)n >= cap) ? WT_EINVAL : 0;
}

static int fsync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, rc;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = fsync(fd) ? -errno : 0;
	close(fd);
	return rc;
}

static int fs_put(hub_objstore *os, const char *key, const void *data, size_t len, wt_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	uint8_t rnd[8];
	char rhex[17];
	const uint8_t *p = data;
	size_t left = len;
	int fd = -1, rc = 0, eno = 0;

	if (full_path(os, key, path, sizeof(path)))
		return wt_err_set(err, WT_EINVAL, "object store: key too long");
	wt_random_bytes(rnd, sizeof(rnd));
	hub_hex(rnd, sizeof(rnd), rhex);
	snprintf(tmp, sizeof(tmp), "%s.tmp-%s", path, rhex);
	if (mkdirs_parent(path) < 0) {
		eno = errno;
		rc = wt_err_set(err, WT_EIO, "object store: mkdir for %s: %s", path, strerror(errno));
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0) {
		eno = errno;
		rc = wt_err_set(err, WT_EIO, "object store: create %s: %s", tmp, strerror(errno));
		goto out;
	}
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			eno = errno;
		rc = wt_err_set(err, WT_EIO, "object store: write %s: %s", tmp, strerror(errno));
			goto out;
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd)) {
		eno = errno;
		rc = wt_err_set(err, WT_EIO, "object store: fsync %s: %s", tmp, strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path)) {
		eno = errno;
		rc = wt_err_set(err, WT_EIO, "object store: rename to %s: %s", path, strerror(errno));
		goto out;
	}
	if (fsync_dir_of(path) < 0) {
		eno = errno;
		rc = wt_err_set(err, WT_EIO, "object store: fsync dir of %s: %s", path, strerror(errno));
	}
out:
	if (fd >= 0)
		close(fd);
	if (rc) {
		int full = eno == ENOSPC || eno == EDQUOT;
		unlink(tmp);
		/* a full disk is the operator's to fix, and passes: say so, and
		 * answer 503 (retry later) rather than 500 */
		if (full)
			rc = wt_err_set(err, WT_EUNAVAIL, "the hub's object store is full (%s: %s); nothing "
					"was stored; retry later", os->name, strerror(ENOSPC));
	}
	return rc;
}

static int fs_get(hub_objstore *os, const char *key, size_t max, wt_buf *out, wt_err *err)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, rc = 0;

	if (full_path(os, key, path, sizeof(path)))
		return wt_err_set(err, WT_EINVAL, "object store: key too long");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wt_err_set(err, errno == ENOENT ? WT_ENOTFOUND : WT_EIO,
				  "object store: open %s: %s", key, strerror(errno));
	if (fstat(fd, &st) || (size_t)st.st_size > max) {
		rc = wt_err_set(err, WT_ELIMIT, "object store: %s larger than %zu bytes", key, max);
		goto out;
	}
	if (wt_buf_reserve(out, (size_t)st.st_size)) {
		rc = wt_err_set(err, WT_ENOMEM, "object store: out of memory");
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, out->data + out->len, out->cap - out->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = wt_err_set(err, WT_EIO, "object store: read %s: %s", key, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		out->len += (size_t)r;
		if (out->len == out->cap)
			break;
	}
out:
	close(fd);
	return rc;
}

static int fs_del(hub_objstore *os, const char *key, wt_err *err)
{
	char path[PATH_MAX];

	if (full_path(os, key, path, sizeof(path)))
		return wt_err_set(err, WT_EINVAL, "object store: key too long");
	if (unlink(path) && errno != ENOENT)
		return wt_err_set(err, WT_EIO, "object store: unlink %s: %s", key, strerror(errno));
	return 0;
}

static void fs_close(hub_objstore *os)
{
	fs_priv *fp = os->priv;

	free(fp->root);
	free(fp);
	free(os);
}

static const hub_objstore_ops fs_ops = {fs_put, fs_get, fs_del, fs_close};

int hub_objstore_fs_open(const char *root, hub_objstore **out, wt_err *err)
{
	hub_objstore *os = calloc(1, sizeof(*os));
	fs_priv *fp = calloc(1, sizeof(*fp));
	char probe[PATH_MAX];

	if (!os || !fp || !(fp->root = strdup(root))) {
		free(os);
		if (fp)
			free(fp->root);
		free(fp);
		return wt_err_set(err, WT_ENOMEM, "object store: out of memory");
	}
	os->ops = &fs_ops;
	os->name = "fs";
	os->priv = fp;
	snprintf(probe, sizeof(probe), "%s/x", root);
	if (mkdirs_parent(probe) < 0 && errno != EEXIST) {
		int e = errno;
		fs_close(os);
		return wt_err_set(err, WT_EIO, "object store: cannot create %s: %s", root, strerror(e));
	}
	*out = os;
	return 0;
}
