/* The quiet file: what a full run leaves, what the front accepts, and the
 * digest of the environment a configuration names. */
#include "proc.h"
#include "quiet.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;
static char *state; /* DIR/state.json */
static char *qpath; /* DIR/state.json.quiet */

static void setup(void)
{
    dir = test_tmpdir();
    state = xasprintf("%s/state.json", dir);
    qpath = quiet_path(state);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(qpath);
    free(state);
    free(dir);
}

TestSuite(quiet, .init = setup, .fini = teardown);

static const struct quiet sample = {
    .written_at = 1795699620,
    .until = 1795699917,
    .state = {.dev = 2049,
              .ino = 131075,
              .size = 52305,
              .mtime_ns = 1795699620123456789LL,
              .ctime_ns = 1795699620123456790LL},
    .config = {.dev = 2049,
               .ino = 131001,
               .size = 812,
               .mtime_ns = 1795600000000000001LL,
               .ctime_ns = 1795600000000000002LL},
    .env = 0x0123456789abcdefULL,
};

Test(quiet, what_is_written_reads_back)
{
    struct err e;
    struct quiet q;
    cr_assert_str_eq(qpath + strlen(dir), "/state.json.quiet");
    cr_assert_eq(quiet_write(&sample, state, &e), 0, "%s", e.msg);
    cr_assert_eq(quiet_read(&q, state), 0);
    cr_assert_eq(memcmp(&q, &sample, sizeof q), 0);
    struct stat st;
    cr_assert_eq(stat(qpath, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    char *text = read_file_str(qpath);
    cr_assert_str_eq(text, "wsrelay-quiet 1\n"
                           "written_at 1795699620\n"
                           "until 1795699917\n"
                           "state 2049 131075 52305 1795699620123456789 1795699620123456790\n"
                           "config 2049 131001 812 1795600000000000001 1795600000000000002\n"
                           "env 0123456789abcdef\n");
    free(text);
}

/* Anything but what quiet_write writes makes a full run. */
Test(quiet, a_file_of_another_shape_is_refused)
{
    static const char *const bad[] = {
        "",
        "wsrelay-quiet 1\n",
        "wsrelay-quiet 2\nwritten_at 1\nuntil 2\nstate 1 2 3 4 5\nconfig 1 2 3 4 5\nenv 00\n",
        "wsrelay-quiet 1\nuntil 2\nwritten_at 1\nstate 1 2 3 4 5\nconfig 1 2 3 4 5\nenv 00\n",
        "wsrelay-quiet 1\nwritten_at 1\nuntil 2x\nstate 1 2 3 4 5\nconfig 1 2 3 4 5\nenv 00\n",
        "wsrelay-quiet 1\nwritten_at 1\nuntil 2\nstate 1 2 3\nconfig 1 2 3 4 5\nenv 00\n",
        "wsrelay-quiet 1\nwritten_at 1\nuntil 2\nstate 1 2 3 4 5\nconfig 1 2 3 4 5\nenv 00",
        "wsrelay-quiet 1\nwritten_at 1\nuntil 2\nstate 1 2 3 4 5\nconfig 1 2 3 4 5\nenv 00\nmore\n",
        "wsrelay-quiet 1\nwritten_at 1\nuntil 2\nstate 1 2 3 4 5\nconfig 1 2 3 4 5\nenv zz\n",
    };
    struct quiet q;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(qpath, bad[i]);
        cr_assert_eq(quiet_read(&q, state), -1, "accepted: %s", bad[i]);
    }
    unlink(qpath);
    cr_assert_eq(quiet_read(&q, state), -1, "no file");
}

Test(quiet, a_symlink_is_not_followed)
{
    struct err e;
    struct quiet q;
    char *elsewhere = xasprintf("%s/elsewhere", dir);
    cr_assert_eq(quiet_write(&sample, elsewhere, &e), 0, "%s", e.msg);
    char *target = quiet_path(elsewhere);
    cr_assert_eq(symlink(target, qpath), 0);
    cr_assert_eq(quiet_read(&q, state), -1);
    free(target);
    free(elsewhere);
}

Test(quiet, forget_deletes_it_and_a_missing_one_is_fine)
{
    struct err e;
    cr_assert_eq(quiet_write(&sample, state, &e), 0, "%s", e.msg);
    cr_assert_eq(quiet_forget(state, &e), 0, "%s", e.msg);
    cr_assert_eq(access(qpath, F_OK), -1);
    cr_assert_eq(quiet_forget(state, &e), 0, "%s", e.msg);
}

static uint64_t digest_of(const char *config_text)
{
    char *config = xasprintf("%s/wsrelay.yaml", dir);
    uint64_t d = 0;
    write_file(config, config_text);
    cr_assert_eq(quiet_env_digest(&d, config), 0);
    free(config);
    return d;
}

Test(quiet, the_digest_follows_the_variables_the_configuration_names)
{
    const char *text = "accounts:\n  - api_key: ${WSRELAY_T_KEY}\n"
                       "# login: ${WSRELAY_T_COMMENT}\nbroken: ${not closed\nempty: ${}\n";
    unsetenv("WSRELAY_T_KEY");
    unsetenv("WSRELAY_T_COMMENT");
    uint64_t unset = digest_of(text);
    setenv("WSRELAY_T_KEY", "", 1);
    uint64_t empty = digest_of(text);
    cr_assert_neq(unset, empty, "unset and empty differ");
    setenv("WSRELAY_T_KEY", "abc", 1);
    uint64_t abc = digest_of(text);
    cr_assert_neq(abc, empty);
    cr_assert_eq(digest_of(text), abc, "the same environment, the same digest");
    setenv("WSRELAY_T_COMMENT", "x", 1);
    cr_assert_neq(digest_of(text), abc, "a name in a comment counts too");
    setenv("WSRELAY_T_OTHER", "y", 1);
    uint64_t plain = digest_of("state_file: /var/lib/wsrelay/state.json\n");
    setenv("WSRELAY_T_OTHER", "z", 1);
    cr_assert_eq(digest_of("state_file: /var/lib/wsrelay/state.json\n"), plain,
                 "a variable the file does not name does not count");
    /* Names and values cannot run into each other. */
    setenv("WSRELAY_T_A", "b", 1);
    setenv("WSRELAY_T_AB", "", 1);
    uint64_t one = digest_of("${WSRELAY_T_A}");
    uint64_t two = digest_of("${WSRELAY_T_AB}");
    cr_assert_neq(one, two);
}
