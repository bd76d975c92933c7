/* util/fileio.h, file_read_fd: a file comes back whole, byte for byte,
 * whatever its size against the first allocation and the cap; a pipe too.
 * The atomic write, by path and relative to a directory's descriptor:
 * the same steps, the same mode, the same refusal to follow a planted
 * temporary file, and messages that name the temporary file. */
#include "proc.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/wsrelay-fileio-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    test_rmtree(dir);
}

TestSuite(fileio, .init = setup, .fini = teardown);

/* `n` bytes that differ from one position to the next. */
static char *pattern(size_t n)
{
    char *p = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)('a' + (i * 7 + i / 251) % 26);
    p[n] = '\0';
    return p;
}

/* Writes `n` bytes of pattern to a file and reads it back with `limit`;
 * returns file_read_fd's result, *got the buffer (the caller frees). */
static int round_trip(size_t n, size_t limit, struct buf *got, char **want)
{
    char *path = xasprintf("%s/f", dir);
    *want = pattern(n);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(*want, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    struct err e = {{0}};
    buf_init(got, limit);
    int rc = file_read_fd(got, fd, path, &e);
    close(fd);
    free(path);
    return rc;
}

Test(fileio, a_regular_file_comes_back_whole_at_every_size)
{
    static const size_t sizes[] = {0, 1, 4094, 4095, 4096, 4097, 65535, 65536, 65537, 1048576};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct buf got;
        char *want;
        cr_assert_eq(round_trip(sizes[i], 0, &got, &want), 0, "%zu bytes", sizes[i]);
        cr_expect_eq(got.len, sizes[i]);
        cr_expect_not_null(got.data, "%zu bytes: no buffer", sizes[i]);
        cr_expect(got.data && memcmp(got.data, want, sizes[i]) == 0 && got.data[got.len] == '\0',
                  "%zu bytes differ", sizes[i]);
        buf_free(&got);
        free(want);
    }
}

Test(fileio, the_cap_holds_to_the_byte)
{
    struct buf got;
    char *want;
    cr_expect_eq(round_trip(5000, 5000, &got, &want), 0, "a file at the cap is read");
    cr_expect_eq(got.len, 5000);
    buf_free(&got);
    free(want);
    cr_expect_eq(round_trip(5001, 5000, &got, &want), -1, "a byte past the cap is refused");
    buf_free(&got);
    free(want);
}

Test(fileio, a_pipe_is_read_to_its_end)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    size_t n = 200000;
    char *want = pattern(n);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        for (size_t done = 0; done < n;) {
            ssize_t w = write(fds[1], want + done, n - done > 3000 ? 3000 : n - done);
            if (w <= 0)
                _exit(1);
            done += (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    struct buf got;
    struct err e = {{0}};
    buf_init(&got, 0);
    cr_expect_eq(file_read_fd(&got, fds[0], "pipe", &e), 0, "%s", e.msg);
    close(fds[0]);
    cr_expect_eq(got.len, n);
    cr_expect(got.data && memcmp(got.data, want, n) == 0);
    buf_free(&got);
    free(want);
}

/* The whole text of `path`, or NULL when it cannot be read. */
static char *slurp(const char *path)
{
    struct buf b;
    struct err e = {{0}};
    buf_init(&b, 0);
    if (file_read(&b, path, &e) < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s", path);
    return (unsigned)(st.st_mode & 07777);
}

Test(fileio, a_write_relative_to_a_directory_replaces_the_file_whole_and_0600)
{
    char *sub = xasprintf("%s/d", dir);
    char *path = xasprintf("%s/d/a.json", dir);
    char *tmp = xasprintf("%s/d/a.json.tmp", dir);
    char *outside = xasprintf("%s/outside", dir);
    struct err e = {{0}};
    cr_assert_eq(mkdir(sub, 0700), 0);
    int fd = open(sub, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fd, 0);
    mode_t old = umask(0);
    /* A leftover temporary file, planted as a symlink: it goes, and what
     * it points to is never written. */
    FILE *f = fopen(outside, "w");
    cr_assert_not_null(f);
    fputs("untouched", f);
    fclose(f);
    cr_assert_eq(symlink(outside, tmp), 0);
    cr_expect_eq(file_write_atomic_at(fd, sub, "a.json", "one\n", 4, 0600, &e), 0, "%s", e.msg);
    cr_expect_eq(file_write_atomic_at(fd, sub, "a.json", "two\n", 4, 0600, &e), 0, "%s", e.msg);
    umask(old);
    char *got = slurp(path);
    cr_expect_str_eq(got ? got : "(none)", "two\n");
    cr_expect_eq(mode_of(path), 0600u);
    cr_expect_eq(access(tmp, F_OK), -1, "no temporary file is left");
    char *kept = slurp(outside);
    cr_expect_str_eq(kept ? kept : "(none)", "untouched");
    close(fd);
    free(got);
    free(kept);
    free(sub);
    free(path);
    free(tmp);
    free(outside);
}

Test(fileio, both_atomic_writes_name_the_temporary_file_when_the_rename_fails)
{
    char *sub = xasprintf("%s/d", dir);
    char *busy = xasprintf("%s/d/busy", dir);
    char *inner = xasprintf("%s/d/busy/x", dir);
    struct err e = {{0}};
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(mkdir(busy, 0700), 0);
    cr_assert_eq(mkdir(inner, 0700), 0); /* a directory not empty: no rename over it */
    int fd = open(sub, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fd, 0);
    cr_expect_eq(file_write_atomic_at(fd, sub, "busy", "x", 1, 0600, &e), -1);
    char *want = xasprintf("%s/busy.tmp: cannot rename to busy: Is a directory", sub);
    cr_expect_str_eq(e.msg, want);
    free(want);
    cr_expect_eq(faccessat(fd, "busy.tmp", F_OK, 0), -1, "the temporary file is removed");
    cr_expect_eq(file_write_atomic(busy, "x", 1, 0600, &e), -1);
    want = xasprintf("%s.tmp: cannot rename to %s: Is a directory", busy, busy);
    cr_expect_str_eq(e.msg, want);
    free(want);
    close(fd);
    free(sub);
    free(busy);
    free(inner);
}
