/* Whole-file reads and crash-safe writes. */
#ifndef WSRELAY_FILEIO_H
#define WSRELAY_FILEIO_H

#include "util/buf.h"
#include "util/err.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* How file_open_regular treats the last component of a path. */
enum file_links {
    FILE_FOLLOW,   /* a symlink to a regular file is fine (config, secrets) */
    FILE_NOFOLLOW, /* a symlink is refused (files wsrelay owns: the state) */
};

/* Opens `path` read-only, but only when it is a regular file: a FIFO, a
 * device, a socket or a directory is refused by name ("PATH: not a
 * regular file (a FIFO)") without blocking, since the open is made with
 * O_NONBLOCK and the type checked with fstat on what was opened (no race
 * between a check and the open). With FILE_NOFOLLOW a symlink is refused
 * too ("PATH: is a symbolic link"). On success returns the descriptor
 * (O_CLOEXEC, blocking again) and fills *st (may be NULL) from fstat; on
 * failure -1 with "PATH: reason" in `e` and errno kept (ENOENT for a
 * missing file). */
int file_open_regular(const char *path, enum file_links links, struct stat *st, struct err *e);

/* file_open_regular for `name` relative to the directory open as `dirfd`
 * (AT_FDCWD: the working directory), naming it `path` in messages. */
int file_open_regular_at(int dirfd, const char *name, const char *path, enum file_links links,
                         struct stat *st, struct err *e);

/* Opens the directory `dir` (O_DIRECTORY, close-on-exec) without following
 * a symbolic link: the descriptor, or -1 with errno kept (ENOENT when it
 * does not exist) and a message in `e` naming a link, a file that is not
 * a directory, or the error. */
int file_open_dir(const char *dir, struct err *e);

/* Reads what remains of `fd` into `out` (whose cap applies); `path` names
 * it in errors. Does not close `fd`. */
int file_read_fd(struct buf *out, int fd, const char *path, struct err *e);

/* Reads all of `path` into `out` (initialised by the caller, whose cap
 * applies), following a symlink but refusing anything but a regular file
 * (file_open_regular). Fails with "PATH: reason" when it cannot be opened
 * or read, is not a regular file, or is larger than the cap. */
int file_read(struct buf *out, const char *path, struct err *e);

/* Replaces `path` with `data` so that a crash at any moment leaves either
 * the old or the new contents: writes PATH.tmp with `mode`, fsyncs it,
 * renames it over `path`, then fsyncs the directory. PATH.tmp is always a
 * new file (a leftover or a symlink there is removed first, and the open
 * refuses to follow one). On failure the old file is untouched and the
 * temporary file removed. */
int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, struct err *e);

/* file_write_atomic for `name` in the directory open as `dirfd`
 * (AT_FDCWD: the working directory), every step relative to it (openat,
 * renameat), and without the directory's fsync: the caller makes a batch
 * of such writes durable with one fsync of `dirfd` (file_write_atomic is
 * this and file_sync_dir). Messages name the temporary file DIR/NAME.tmp,
 * or NAME.tmp when `dir` is NULL. */
int file_write_atomic_at(int dirfd, const char *dir, const char *name, const void *data, size_t len,
                         mode_t mode, struct err *e);

/* Makes the entries of directory `dir` durable (open it and fsync it): a
 * rename, a link or a new file in it survives a crash once this returns
 * 0. On failure -1 with "DIR: cannot sync directory: reason" in `e`. */
int file_sync_dir(const char *dir, struct err *e);

/* Writes all `len` bytes to `fd`, retrying short writes and EINTR. Returns
 * -1 with errno set on failure. */
int file_write_all(int fd, const void *buf, size_t len);

/* Which file a path named, and in what version of it: enough to tell
 * that a file was replaced or written since. */
struct file_id {
    unsigned long long dev, ino, size;
    long long mtime_ns, ctime_ns; /* ctime too: mtime ticks coarsely, and an
                                     inode number comes back after a rename */
};

/* Fills *out for the regular file at `path`, following a symlink. Returns
 * -1 (and zeroes *out) when there is none. */
int file_id_of(struct file_id *out, const char *path);

bool file_id_same(const struct file_id *a, const struct file_id *b);

/* The directory part of `path` ("." when there is none); caller frees. */
char *file_dirname(const char *path);

/* The directory of the running program, from /proc/self/exe (the caller
 * frees it); NULL when it cannot be known. */
char *file_exe_dir(void);

#endif
