/*
 * fsdir.h — `mkdir -p` for the daemons and wtctl: the edge's data_dir, the
 * hub's object store and debug-file cache, wtctl's PKI directories.
 */
#ifndef WT_FSDIR_H
#define WT_FSDIR_H

#include <sys/types.h>

#include "err.h"

/* Create path and its missing parents with mode (existing ones are fine).
 * 0, or WT_EINVAL (empty or too long) / WT_EIO naming the directory that
 * could not be made; errno is left as mkdir set it. err may be NULL. */
int wt_mkdir_p(const char *path, mode_t mode, wt_err *err);

#endif
