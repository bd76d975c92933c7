/* Whole-file reads and crash-safe writes. */
#ifndef WSRELAY_FILEIO_H
#define WSRELAY_FILEIO_H

#include "util/buf.h"
#include "util/err.h"

#include <sys/types.h>

/* Reads all of `path` into `out` (initialised by the caller, whose cap
 * applies). Fails with "PATH: reason" when it cannot be opened or read or is
 * larger than the cap. */
int file_read(struct buf *out, const char *path, struct err *e);

/* Replaces `path` with `data` so that a crash at any moment leaves either
 * the old or the new contents: writes PATH.tmp with `mode`, fsyncs it,
 * renames it over `path`, then fsyncs the directory. PATH.tmp is always a
 * new file (a leftover or a symlink there is removed first, and the open
 * refuses to follow one). On failure the old file is untouched and the
 * temporary file removed. */
int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, struct err *e);

/* Writes all `len` bytes to `fd`, retrying short writes and EINTR. Returns
 * -1 with errno set on failure. */
int file_write_all(int fd, const void *buf, size_t len);

/* The directory part of `path` ("." when there is none); caller frees. */
char *file_dirname(const char *path);

#endif
