/*
 * objstore.c — backend selection, key validation and content addressing for
 * the object store (see objstore.h).
 */
#include "objstore.h"

#include <stdio.h>
#include <string.h>

#include "sha.h"

int hub_objstore_open(const hub_config *cfg, hub_objstore **out, wt_err *err)
{
	if (!strcmp(cfg->os_backend, "s3"))
		return hub_objstore_s3_open(cfg, out, err);
	return hub_objstore_fs_open(cfg->os_path, out, err);
}

void hub_objstore_close(hub_objstore *os)
{
	if (os)
		os->ops->close(os);
}

int hub_objstore_key_valid(const char *key)
{
	size_t i, n = key ? strlen(key) : 0, seg = 0;

	if (n == 0 || n > 512 || key[0] == '/' || key[n - 1] == '/')
		return WT_EINVAL;
	for (i = 0; i <= n; i++) {
		char c = key[i];
		if (c == '/' || c == '\0') {
			if (seg == 0)
				return WT_EINVAL;
			if ((seg == 1 && key[i - 1] == '.') ||
			    (seg == 2 && key[i - 1] == '.' && key[i - 2] == '.'))
				return WT_EINVAL;
			seg = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return WT_EINVAL;
		seg++;
	}
	return 0;
}

int hub_objstore_put(hub_objstore *os, const char *key, const void *data, size_t len, wt_err *err)
{
	if (hub_objstore_key_valid(key))
		return wt_err_set(err, WT_EINVAL, "object store: invalid key \"%s\"", key ? key : "");
	return os->ops->put(os, key, data, len, err);
}

int hub_objstore_get(hub_objstore *os, const char *key, size_t max, wt_buf *out, wt_err *err)
{
	if (hub_objstore_key_valid(key))
		return wt_err_set(err, WT_EINVAL, "object store: invalid key \"%s\"", key ? key : "");
	return os->ops->get(os, key, max, out, err);
}

int hub_objstore_delete(hub_objstore *os, const char *key, wt_err *err)
{
	if (hub_objstore_key_valid(key))
		return wt_err_set(err, WT_EINVAL, "object store: invalid key \"%s\"", key ? key : "");
	return os->ops->del(os, key, err);
}

int hub_objstore_put_content(hub_objstore *os, const char *prefix, const void *data,
			     size_t len, char *key, size_t cap, wt_err *err)
{
	char hex[HUB_SHA256_HEX_LEN + 1];
	int n;

	hub_sha256_hex(data, len, hex);
	n = snprintf(key, cap, "%s/%.2s/%s", prefix, hex, hex);
	if (n < 0 || (size_t)n >= cap)
		return wt_err_set(err, WT_EINVAL, "object store: key buffer too small");
	return hub_objstore_put(os, key, data, len, err);
}

int hub_objstore_put_upload(hub_objstore *os, const char *project, const char *upload_id, const void *data,
			    size_t len, char *key, size_t cap, wt_err *err)
{
	char hex[HUB_SHA256_HEX_LEN + 1], uid[HUB_SHA256_HEX_LEN + 1];
	int n;

	hub_sha256_hex(data, len, hex);
	hub_sha256_hex(upload_id, strlen(upload_id), uid);
	n = snprintf(key, cap, "raw/%s/%.2s/%s-%.16s", project, hex, hex, uid);
	if (n < 0 || (size_t)n >= cap)
		return wt_err_set(err, WT_EINVAL, "object store: key buffer too small");
	return hub_objstore_put(os, key, data, len, err);
}
