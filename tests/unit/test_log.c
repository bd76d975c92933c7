/* Log lines: the level threshold, and the syslog priority prefix that
 * appears only when $JOURNAL_STREAM names the file stderr really is. Each
 * test points stderr (fd 2) at a scratch file and reads what was written. */
#include "proc.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;
static char *path;   /* DIR/stderr: where fd 2 points during a test */
static int saved_fd; /* the test process's own stderr */

static void setup(void)
{
    dir = test_tmpdir();
    path = xasprintf("%s/stderr", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0);
    fflush(stderr);
    saved_fd = dup(STDERR_FILENO);
    cr_assert(saved_fd >= 0);
    cr_assert_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    close(fd);
    unsetenv("JOURNAL_STREAM");
    log_set_level(LOG_INFO);
}

static void teardown(void)
{
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    test_rmtree(dir);
    free(path);
    free(dir);
}

TestSuite(log, .init = setup, .fini = teardown);

/* Everything written to stderr so far. Caller frees. */
static char *written(void)
{
    fflush(stderr);
    char *text = read_file_str(path);
    cr_assert_not_null(text);
    return text;
}

/* "DEV:INO" of the file behind `fd`, as systemd writes JOURNAL_STREAM,
 * with `ino_delta` added to the inode. Caller frees. */
static char *stream_of(int fd, long long ino_delta)
{
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    return xasprintf("%llu:%llu", (unsigned long long)st.st_dev,
                     (unsigned long long)st.st_ino + (unsigned long long)ino_delta);
}

static void expect_written(const char *want)
{
    char *got = written();
    cr_assert_str_eq(got, want);
    free(got);
}

static void log_each_level(void)
{
    log_debug("debug %d", 1);
    log_info("info %s", "two");
    log_warn("warning %c", '3');
    log_error("error %s", "four");
    log_plain(LOG_ERROR, "%s: plain", "wsrelay.yaml:1:1");
}

Test(log, without_journal_stream_lines_have_no_prefix)
{
    log_each_level();
    expect_written("wsrelay: info: info two\n"
                   "wsrelay: warning: warning 3\n"
                   "wsrelay: error: error four\n"
                   "wsrelay: wsrelay.yaml:1:1: plain\n");
}

Test(log, a_journal_stream_naming_stderr_gets_syslog_priorities_and_no_name)
{
    char *stream = stream_of(STDERR_FILENO, 0);
    setenv("JOURNAL_STREAM", stream, 1);
    log_set_level(LOG_DEBUG);
    log_each_level();
    /* Without "wsrelay: ": the journal shows the program's name already,
     * and the line would read "wsrelay[PID]: wsrelay: …". */
    expect_written("<7>debug: debug 1\n"
                   "<6>info: info two\n"
                   "<4>warning: warning 3\n"
                   "<3>error: error four\n"
                   "<3>wsrelay.yaml:1:1: plain\n");
    free(stream);
}

Test(log, a_journal_stream_naming_another_file_adds_nothing)
{
    /* The same device, another inode: systemd's stream, but stderr was
     * redirected since (a shell under the unit, `2>file`). */
    char *stream = stream_of(STDERR_FILENO, 1);
    setenv("JOURNAL_STREAM", stream, 1);
    log_warn("redirected");
    free(stream);
    /* Another file altogether: the test process's own stderr. */
    stream = stream_of(saved_fd, 0);
    struct stat a, b;
    cr_assert_eq(fstat(saved_fd, &a), 0);
    cr_assert_eq(fstat(STDERR_FILENO, &b), 0);
    cr_assert(a.st_dev != b.st_dev || a.st_ino != b.st_ino);
    setenv("JOURNAL_STREAM", stream, 1);
    log_warn("elsewhere");
    free(stream);
    expect_written("wsrelay: warning: redirected\n"
                   "wsrelay: warning: elsewhere\n");
}

Test(log, a_malformed_journal_stream_adds_nothing)
{
    struct stat st;
    cr_assert_eq(fstat(STDERR_FILENO, &st), 0);
    unsigned long long dev = (unsigned long long)st.st_dev, ino = (unsigned long long)st.st_ino;
    char *bad[] = {
        xstrdup(""),
        xasprintf("%llu", dev),
        xasprintf("%llu:", dev),
        xasprintf(":%llu", ino),
        xasprintf("%llu:%llux", dev, ino),
        xasprintf("%llu:%llu:1", dev, ino),
        xasprintf("%llu;%llu", dev, ino),
        xasprintf(" %llu:%llu", dev, ino),
        xasprintf("+%llu:%llu", dev, ino),
        xasprintf("%llu:-%llu", dev, ino),
        xasprintf("%llu:%llu0000000000000000000000", dev, ino),
        xstrdup("journal"),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("JOURNAL_STREAM", bad[i], 1);
        log_error("value %zu", i);
        free(bad[i]);
    }
    char *got = written();
    cr_assert_null(strchr(got, '<'), "a prefix for a malformed JOURNAL_STREAM:\n%s", got);
    cr_assert(strstr(got, "wsrelay: error: value 11\n"), "%s", got);
    free(got);
}

Test(log, the_threshold_drops_lower_levels_and_never_plain_lines)
{
    log_set_level(LOG_WARN);
    log_each_level();
    expect_written("wsrelay: warning: warning 3\n"
                   "wsrelay: error: error four\n"
                   "wsrelay: wsrelay.yaml:1:1: plain\n");
}

Test(log, a_long_line_is_written_whole)
{
    char *stream = stream_of(STDERR_FILENO, 0);
    setenv("JOURNAL_STREAM", stream, 1);
    char long_text[5000];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    log_info("%s.", long_text);
    char *want = xasprintf("<6>info: %s.\n", long_text);
    expect_written(want);
    free(want);
    free(stream);
}
