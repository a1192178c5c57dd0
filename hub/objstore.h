/*
 * objstore.h — the hub's object store for raw upload originals (and, later,
 * debug files). Two backends behind one interface:
 *   fs — files under a directory, written atomically (tmp file, fsync,
 *        rename, fsync of the directory);
 *   s3 — an S3-compatible bucket over libcurl with CURLOPT_AWS_SIGV4
 *        (path-style URLs; x-amz-content-sha256 sent explicitly).
 * hub_objstore_put_content() names an object by its content,
 * "<prefix>/<sha[0:2]>/<sha256>", so storing the same bytes twice is a
 * no-op. Upload originals are named per project and upload
 * (hub_objstore_put_upload) so that no two uploads share an object.
 *
 * Thread-safety: a hub_objstore is shared by all workers; every call is
 * independent (the s3 backend uses one curl handle per call).
 * Ownership: hub_objstore_open() returns a store owned by the caller
 * (hub_objstore_close). hub_objstore_get() appends into a caller's wt_buf.
 */
#ifndef HUB_OBJSTORE_H
#define HUB_OBJSTORE_H

#include <stddef.h>

#include "buf.h"
#include "config.h"
#include "err.h"

typedef struct hub_objstore hub_objstore;

/* Backend operations (objstore_fs.c, objstore_s3.c). */
typedef struct hub_objstore_ops {
	int (*put)(hub_objstore *os, const char *key, const void *data, size_t len, wt_err *err);
	int (*get)(hub_objstore *os, const char *key, size_t max, wt_buf *out, wt_err *err);
	int (*del)(hub_objstore *os, const char *key, wt_err *err);
	void (*close)(hub_objstore *os);
} hub_objstore_ops;

struct hub_objstore {
	const hub_objstore_ops *ops;
	const char *name; /* "fs" or "s3" */
	void *priv;
};

int hub_objstore_open(const hub_config *cfg, hub_objstore **out, wt_err *err);
void hub_objstore_close(hub_objstore *os);

/* Keys: [A-Za-z0-9._-] segments separated by '/', no "..", <= 512 bytes.
 * 0 or WT_EINVAL. */
int hub_objstore_key_valid(const char *key);

int hub_objstore_put(hub_objstore *os, const char *key, const void *data, size_t len, wt_err *err);
/* WT_ENOTFOUND when absent; WT_ELIMIT when larger than max. */
int hub_objstore_get(hub_objstore *os, const char *key, size_t max, wt_buf *out, wt_err *err);
/* Deleting an absent object is not an error. */
int hub_objstore_delete(hub_objstore *os, const char *key, wt_err *err);

/* Store data under "<prefix>/<sha[0:2]>/<sha>" and write that key into key
 * (cap >= strlen(prefix) + 69). */
int hub_objstore_put_content(hub_objstore *os, const char *prefix, const void *data,
			     size_t len, char *key, size_t cap, wt_err *err);

/* Store the original of one upload under
 * "raw/<project>/<sha[0:2]>/<sha>-<u>", u = the first 16 hex digits of
 * sha256(upload_id), and write that key into key (cap >=
 * HUB_OBJSTORE_KEY_MAX). One object per (project, upload): a retried
 * upload (same id) rewrites its own object, and no two uploads — of one
 * project or of two — ever share one, so deleting an upload's original
 * cannot remove bytes another upload still needs (deletion.c). */
#define HUB_OBJSTORE_KEY_MAX 192
int hub_objstore_put_upload(hub_objstore *os, const char *project, const char *upload_id, const void *data,
			    size_t len, char *key, size_t cap, wt_err *err);

/* Backend constructors. */
int hub_objstore_fs_open(const char *root, hub_objstore **out, wt_err *err);
int hub_objstore_s3_open(const hub_config *cfg, hub_objstore **out, wt_err *err);

#endif
