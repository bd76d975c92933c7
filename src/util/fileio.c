/* Reading whole files and replacing them atomically, like a database
 * snapshot: temp file, fsync, rename, fsync the directory. */
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file that is not a regular one is, for an error message. */
static const char *file_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "of an unknown type";
}

int file_open_regular(const char *path, enum file_links links, struct stat *st, struct err *e)
{
    return file_open_regular_at(AT_FDCWD, path, path, links, st, e);
}

int file_open_regular_at(int dirfd, const char *name, const char *path, enum file_links links,
                         struct stat *st, struct err *e)
{
    struct stat own;
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (links == FILE_NOFOLLOW)
        flags |= O_NOFOLLOW;
    if (!st)
        st = &own;
    /* O_NONBLOCK: opening a FIFO without a writer would wait forever. */
    int fd = openat(dirfd, name, flags);
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP && links == FILE_NOFOLLOW &&
            fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st->st_mode))
            err_set(e, "%s: is a symbolic link (refused: wsrelay never follows one here)", path);
        else
            err_set(e, "%s: %s", path, strerror(err));
        errno = err;
        return -1;
    }
    if (fstat(fd, st) < 0) {
        int err = errno;
        err_set(e, "%s: %s", path, strerror(err));
        close(fd);
        errno = err;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        err_set(e, "%s: not a regular file (%s)", path, file_kind(st->st_mode));
        close(fd);
        errno = EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* Reads straight into the buffer: a regular file of known size in one
 * read, into one allocation made for it (and a byte more, so that a file
 * that grew meanwhile shows it); anything else 64 KiB at a time. At most
 * one byte past the cap is read, to tell a text at the cap from a longer
 * one. */
int file_read_fd(struct buf *out, int fd, const char *path, struct err *e)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        size_t size = (size_t)st.st_size + 1;
        if (out->limit && size > out->limit + 1)
            size = out->limit + 1;
        buf_reserve(out, size < 4096 ? 4096 : size);
    }
    for (;;) {
        size_t room = out->cap > out->len + 1 ? out->cap - out->len - 1 : 0;
        if (room == 0) {
            buf_reserve(out, 65536);
            room = out->cap - out->len - 1;
        }
        if (out->limit && room > out->limit - out->len + 1)
            room = out->limit - out->len + 1;
        ssize_t n = read(fd, out->data + out->len, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_set(e, "%s: %s", path, strerror(errno));
        if (n == 0)
            break;
        if (out->limit && out->len + (size_t)n > out->limit)
            return err_set(e, "%s: larger than %zu bytes", path, out->limit);
        out->len += (size_t)n;
        out->data[out->len] = '\0';
    }
    return 0;
}

int file_read(struct buf *out, const char *path, struct err *e)
{
    int fd = file_open_regular(path, FILE_FOLLOW, NULL, e);
    if (fd < 0)
        return -1;
    int rc = file_read_fd(out, fd, path, e);
    close(fd);
    return rc;
}

char *file_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return xstrdup(".");
    if (slash == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

int file_write_all(int fd, const void *buf, size_t len)
{
    const char *data = buf;
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int file_sync_dir(const char *dir, struct err *e)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 || fsync(fd) < 0 ? -1 : 0;
    if (rc < 0)
        err_set(e, "%s: cannot sync directory: %s", dir, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

int file_write_atomic_at(int dirfd, const char *dir, const char *name, const void *data, size_t len,
                         mode_t mode, struct err *e)
{
    int rc = -1;
    char *tmp = xasprintf("%s.tmp", name);
    char *shown = dir ? xasprintf("%s/%s", dir, tmp) : xstrdup(tmp); /* for messages */
    int fd = -1;
    /* A fresh file, never one left (or planted) there: whatever NAME.tmp
     * is, even a symlink, goes, and O_EXCL fails if it comes back. */
    if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT) {
        err_set(e, "%s: %s", shown, strerror(errno));
        goto out;
    }
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        err_set(e, "%s: %s", shown, strerror(errno));
        goto out;
    }
    if (fchmod(fd, mode) < 0 || file_write_all(fd, data, len) < 0 || fsync(fd) < 0) {
        err_set(e, "%s: %s", shown, strerror(errno));
        goto out;
    }
    if (close(fd) < 0) {
        fd = -1;
        err_set(e, "%s: %s", shown, strerror(errno));
        goto out;
    }
    fd = -1;
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        err_set(e, "%s: cannot rename to %s: %s", shown, name, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlinkat(dirfd, tmp, 0);
    free(tmp);
    free(shown);
    return rc;
}

int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, struct err *e)
{
    char *dir = file_dirname(path);
    int rc = -1;
    if (file_write_atomic_at(AT_FDCWD, NULL, path, data, len, mode, e) == 0 &&
        file_sync_dir(dir, e) == 0)
        rc = 0;
    free(dir);
    return rc;
}

static long long nanoseconds(struct timespec t)
{
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int file_id_of(struct file_id *out, const char *path)
{
    struct stat st;
    *out = (struct file_id){0};
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return -1;
    *out = (struct file_id){.dev = (unsigned long long)st.st_dev,
                            .ino = (unsigned long long)st.st_ino,
                            .size = (unsigned long long)st.st_size,
                            .mtime_ns = nanoseconds(st.st_mtim),
                            .ctime_ns = nanoseconds(st.st_ctim)};
    return 0;
}

bool file_id_same(const struct file_id *a, const struct file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

char *file_exe_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    return file_dirname(exe);
}

int file_open_dir(const char *dir, struct err *e)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int err = errno;
    struct stat st;
    if ((err == ELOOP || err == ENOTDIR) && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
        err_set(e, "%s: is a symbolic link (refused: wsrelay never follows one here)", dir);
    else if (err == ENOTDIR)
        err_set(e, "%s: not a directory", dir);
    else
        err_set(e, "%s: %s", dir, strerror(err));
    errno = err;
    return -1;
}
