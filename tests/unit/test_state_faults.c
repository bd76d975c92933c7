/* Saves of the state under disk faults that only fsync reports: a
 * directory fsync that fails after the rename it was to make durable, so
 * that a save reports a failure although the file on disk has changed.
 * fsync is interposed here (this program's definition wins over libc's
 * for the core library's calls): a test asks for the Nth directory fsync
 * from now, or the next fsync of the state file's temporary copy, to fail
 * with EIO; every other fsync is the real one. */
#define _GNU_SOURCE /* syscall */
#include "proc.h"
#include "state.h"
#include "statefile.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char *dir;
static char *path; /* DIR/state.json */

static int failing_dir_sync;    /* the Nth directory fsync from now fails; 0: none */
static bool failing_state_sync; /* the next fsync of DIR/state.json.tmp fails */

/* Whether descriptor `fd` is the file `want`. */
static bool fd_is(int fd, const char *want)
{
    char link[64], target[512];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0)
        return false;
    target[n] = '\0';
    return strcmp(target, want) == 0;
}

int fsync(int fd)
{
    struct stat st;
    if (failing_dir_sync > 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
        --failing_dir_sync == 0) {
        errno = EIO;
        return -1;
    }
    if (failing_state_sync) {
        char *tmp = xasprintf("%s.tmp", path);
        bool hit = fd_is(fd, tmp);
        free(tmp);
        if (hit) {
            failing_state_sync = false;
            errno = EIO;
            return -1;
        }
    }
    return (int)syscall(SYS_fsync, fd);
}

static void setup(void)
{
    dir = test_tmpdir();
    path = xasprintf("%s/state.json", dir);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(dir);
    free(path);
    failing_dir_sync = 0;
    failing_state_sync = false;
}

TestSuite(state_faults, .init = setup, .fini = teardown, .timeout = 60);

static void remember(struct state *s, int i, long long t)
{
    char serial[16];
    snprintf(serial, sizeof serial, "52140%03d", i);
    struct watch w = {.unixtime = t, .seen_at = t, .n_ch = 1};
    w.ch[0] = (struct watch_channel){.num = 1, .value = i};
    state_set_watch(s, serial, &w);
}

static int memories(const struct state *s)
{
    char serial[16];
    struct watch w;
    int n = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(serial, sizeof serial, "52140%03d", i);
        n += state_watch(s, serial, &w);
    }
    return n;
}

/* Generation 1 holds 40 readings memories. A save that prunes 39 of them
 * writes generation 2 whole, replaces the state file to name it, and then
 * the directory's fsync fails: the save fails, yet the file on disk names
 * generation 2. The next save must not write generation 2 again: when it
 * fails too, before its state file, what the disk names must still be
 * there to load. */
Test(state_faults, a_save_whose_directory_sync_failed_keeps_what_the_disk_names)
{
    struct state *s = state_open_ok(path);
    struct err e;
    for (int i = 0; i < 40; i++)
        remember(s, i, 1795000000);
    cr_assert_eq(state_save(s, &e), 0, "%s", e.msg);
    remember(s, 1, 1795003600);
    cr_assert_eq(state_prune_watches(s, 1795001000), 39);
    failing_dir_sync = 2; /* the first: the new fleet file's; the second: the state file's */
    cr_assert_lt(state_save(s, &e), 0, "the directory fsync failed");
    cr_assert_eq(failing_dir_sync, 0, "both directory fsyncs were made");

    remember(s, 77, 1795003660);
    failing_state_sync = true;
    cr_assert_lt(state_save(s, &e), 0, "the state file's fsync failed");
    cr_assert_not(failing_state_sync, "the state file's fsync was made");
    state_close(s);

    s = state_open_ok(path);
    const char *why = NULL;
    cr_expect_null(state_set_aside(s, &why), "set aside as corrupt: %s", why ? why : "");
    cr_expect_eq(memories(s), 1, "the save the disk names: one memory, not %d", memories(s));
    /* And the state goes on from there: a save that succeeds keeps one
     * fleet file only. */
    remember(s, 78, 1795003720);
    cr_assert_eq(state_save(s, &e), 0, "%s", e.msg);
    state_close(s);
    s = state_open_ok(path);
    cr_expect_eq(memories(s), 2);
    state_close(s);
    char *cmd = xasprintf("test $(ls '%s' | grep -c '^state.json.fleet-[0-9]*$') -eq 1", dir);
    cr_expect_eq(system(cmd), 0, "exactly one fleet file is left");
    free(cmd);
}
