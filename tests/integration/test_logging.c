/* What `-q` and `-v` do to a real command's log lines: `-q` leaves only
 * warnings and errors, in the front (src/front.c) as in wsrelay-net, and a
 * plain `run -q` is still answered by the front when nothing is due. */
#include "proc.h"
#include "quiet.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1795000000LL

static struct relay R;

static void setup(void)
{
    relay_start_world(&R, "lab");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(logging, .init = setup, .fini = teardown, .timeout = 120);

/* Runs `program` with the global options `o1` and `o2` (NULL: none), then
 * `-c CONFIG run --now NOW`, the simulator's clock at `now`. Returns the
 * exit status; *err gets stderr (caller frees). */
static int run_with(const char *program, const char *o1, const char *o2, long long now, char **err)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&R.sim, now);
    const char *argv[10];
    size_t n = 0;
    argv[n++] = program;
    if (o1)
        argv[n++] = o1;
    if (o2)
        argv[n++] = o2;
    argv[n++] = "-c";
    argv[n++] = R.config_path;
    argv[n++] = "run";
    argv[n++] = "--now";
    argv[n++] = when;
    argv[n] = NULL;
    return run_cmd(NULL, err, 60, (char *const *)argv, NULL);
}

Test(logging, quiet_hides_the_info_lines_of_a_run_and_keeps_its_warnings)
{
    /* A secret file others can read: every run warns of it. */
    char *pass = xasprintf("%s/pass.txt", R.dir);
    cr_assert_eq(chmod(pass, 0644), 0);
    free(pass);

    char *quiet = NULL, *plain = NULL;
    cr_assert_eq(run_with(WSRELAY_BIN, "-q", NULL, T0, &quiet), 0, "%s", quiet);
    /* The same first run again, from no state, without -q. */
    relay_forget_state(&R);
    cr_assert_eq(run_with(WSRELAY_BIN, NULL, NULL, T0, &plain), 0, "%s", plain);

    cr_assert(strstr(plain, "wsrelay: info: account lab: "), "a first run says what it found:\n%s",
              plain);
    cr_assert_null(strstr(quiet, ": info: "), "-q shows an info line:\n%s", quiet);
    cr_assert_null(strstr(quiet, ": debug: "), "%s", quiet);
    const char *warning = "wsrelay: warning: secret file ";
    cr_assert(strstr(plain, warning), "%s", plain);
    cr_assert(strstr(quiet, warning), "-q hides a warning:\n%s", quiet);
    free(quiet);
    free(plain);
}

Test(logging, quiet_and_verbose_work_in_wsrelay_net_too)
{
    char *net = xasprintf("%s-net", WSRELAY_BIN);
    char *quiet = NULL, *verbose = NULL;
    cr_assert_eq(run_with(net, "-q", NULL, T0, &quiet), 0, "%s", quiet);
    cr_assert_null(strstr(quiet, ": info: "), "%s", quiet);
    cr_assert_null(strstr(quiet, ": debug: "), "%s", quiet);
    relay_forget_state(&R);
    cr_assert_eq(run_with(net, "-q", "-v", T0, &verbose), 0, "%s", verbose);
    cr_assert(strstr(verbose, "wsrelay: debug: platform: account 'lab': "),
              "the last of -q and -v wins:\n%s", verbose);
    free(quiet);
    free(verbose);
    free(net);
}

/* Runs wsrelay-net from T0 minute by minute until a run leaves a quiet
 * time of at least two minutes; returns a time one minute into it. */
static long long inside_a_quiet_time(void)
{
    char *net = xasprintf("%s-net", WSRELAY_BIN);
    for (long long now = T0; now < T0 + 1200; now += 60) {
        char *err = NULL;
        cr_assert_eq(run_with(net, NULL, NULL, now, &err), 0, "%s", err);
        free(err);
        struct quiet q;
        if (quiet_read(&q, R.state_path) == 0 && q.until - now >= 120) {
            free(net);
            return now + 60;
        }
    }
    cr_assert_fail("no quiet time in the first twenty minutes");
    return 0;
}

Test(logging, a_quiet_run_with_q_is_still_answered_by_the_front)
{
    long long now = inside_a_quiet_time();
    char *qpath = quiet_path(R.state_path);
    char *before = read_file_str(qpath);
    struct stat st_before, st_after;
    cr_assert_eq(stat(qpath, &st_before), 0);

    char *err = NULL;
    cr_assert_eq(run_with(WSRELAY_BIN, "-v", "-q", now, &err), 0, "%s", err);
    cr_assert_str_eq(err, "", "-q after -v hides the front's debug line");
    free(err);
    /* Untouched: a full run deletes the quiet file and writes a new one. */
    char *after = read_file_str(qpath);
    cr_assert_eq(stat(qpath, &st_after), 0);
    cr_assert_str_eq(after, before);
    cr_assert_eq(st_after.st_ino, st_before.st_ino);
    free(after);

    cr_assert_eq(run_with(WSRELAY_BIN, "-q", "-v", now, &err), 0, "%s", err);
    cr_assert(strstr(err, "wsrelay: debug: run: nothing is due for "), "-v after -q:\n%s", err);
    free(err);

    /* The same run through wsrelay-net is a full one: the check above
     * tells the two apart. */
    char *net = xasprintf("%s-net", WSRELAY_BIN);
    cr_assert_eq(run_with(net, "-q", NULL, now, &err), 0, "%s", err);
    free(err);
    after = read_file_str(qpath);
    cr_assert(!after || strcmp(after, before) != 0, "a full run left the quiet file as it was");
    free(after);
    free(net);
    free(before);
    free(qpath);
}

/* The log of a delivery names its events: every alarm at the default
 * level, every event with -v. A night of 160 alert-log events (two
 * devices, 20 entries of ch1 to ch4 each; Bulk Freezer's ch1 alarms, one
 * alarm of Freezer B's) and two gap events, to a file receiver. */
static void start_bad_night(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int d = 0; d < 2; d++) {
        buf_printf(&b, "%s{\"serial\": \"5214A00%d\", \"name\": \"%s\", \"alerts\": [",
                   d ? "," : "", d, d ? "Freezer B" : "Bulk Freezer");
        for (int a = 0; a < 20; a++) {
            buf_printf(&b, "%s{\"unixtime\": %lld", a ? "," : "", T0 - 3000 + a * 60);
            for (int ch = 1; ch <= 4; ch++)
                buf_printf(&b, ", \"ch%d\": \"CH%d %s d%d a%d\"", ch, ch,
                           (d == 0 ? ch == 1 : a == 19 && ch == 1) ? "Upper Limit Exceeded"
                                                                   : "Measurement Recovery",
                           d, a);
            buf_puts(&b, "}");
        }
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}]}");
    relay_start(&R, buf_str(&b));
    buf_free(&b);
    relay_config(&R, NULL, "  - name: log\n    file: {path: \"@OUT@\"}\n");
}

/* The stderr of runs at T0 and T0 + 300 (each device polled once at
 * least) with the option `opt` (NULL: none). */
static char *two_runs(const char *opt)
{
    char *a = NULL, *b = NULL;
    cr_assert_eq(run_with(WSRELAY_BIN, opt, NULL, T0, &a), 0, "%s", a);
    cr_assert_eq(run_with(WSRELAY_BIN, opt, NULL, T0 + 300, &b), 0, "%s", b);
    char *both = xasprintf("%s%s", a, b);
    free(a);
    free(b);
    return both;
}

Test(delivery_log, names_every_alarm_and_with_verbose_every_event, .fini = teardown, .timeout = 120)
{
    start_bad_night();
    char *plain = two_runs(NULL);
    for (int a = 0; a < 20; a++) {
        char *want = xasprintf("wsrelay: info: receiver log: delivered alarm Bulk Freezer "
                               "(5214A000/%lld/ch1): CH1 Upper Limit Exceeded d0 a%d\n",
                               T0 - 3000 + a * 60, a);
        cr_assert(strstr(plain, want), "%s not in:\n%s", want, plain);
        free(want);
    }
    char *want = xasprintf("wsrelay: info: receiver log: delivered alarm Freezer B "
                           "(5214A001/%lld/ch1): CH1 Upper Limit Exceeded d1 a19\n",
                           T0 - 3000 + 19 * 60);
    cr_assert(strstr(plain, want), "%s not in:\n%s", want, plain);
    free(want);
    cr_assert_null(strstr(plain, "Measurement Recovery"), "recoveries wait for -v:\n%s", plain);
    free(plain);

    relay_forget_state(&R);
    unlink(R.out_path);
    char *verbose = two_runs("-v");
    size_t lines = occurrences(verbose, ": receiver log: delivered ");
    cr_assert_eq(lines, 162, "%zu lines:\n%s", lines, verbose);
    for (int d = 0; d < 2; d++)
        for (int a = 0; a < 20; a++)
            for (int ch = 2; ch <= 4; ch++) {
                want = xasprintf("wsrelay: debug: receiver log: delivered recovered %s "
                                 "(5214A00%d/%lld/ch%d): CH%d Measurement Recovery d%d a%d\n",
                                 d ? "Freezer B" : "Bulk Freezer", d, T0 - 3000 + a * 60, ch, ch, d,
                                 a);
                cr_assert(strstr(verbose, want), "%s not in:\n%s", want, verbose);
                free(want);
            }
    cr_assert_eq(occurrences(verbose, "delivered other Bulk Freezer (5214A000/"), 1, "its gap");
    free(verbose);
}

/* An alert text longer than the log line's 200 bytes is cut with "…"
 * within them, after whole characters, as utf8_clean_shown cuts every
 * text people read (before: "…" came after the 200 bytes). */
Test(delivery_log, a_long_text_is_cut_with_an_ellipsis_within_its_bytes, .fini = teardown,
     .timeout = 120)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_printf(&b,
               "{\"serial\": \"5214A000\", \"name\": \"Freezer\", \"alerts\": [{\"unixtime\": "
               "%lld, \"ch1\": \"CH1 Upper Limit Exceeded ",
               T0 - 600);
    for (int i = 0; i < 100; i++)
        buf_puts(&b, "認"); /* 3 bytes each */
    buf_puts(&b, "\"}]}]}]}");
    relay_start(&R, buf_str(&b));
    buf_free(&b);
    relay_config(&R, NULL, "  - name: log\n    file: {path: \"@OUT@\"}\n");
    char *err = NULL;
    cr_assert_eq(run_with(WSRELAY_BIN, NULL, NULL, T0, &err), 0, "%s", err);
    const char *line = strstr(err, ": receiver log: delivered alarm Freezer ");
    cr_assert_not_null(line, "%s", err);
    const char *text = strstr(line, "): CH1 Upper Limit Exceeded ");
    cr_assert_not_null(text, "%s", err);
    text += 3;
    size_t len = strcspn(text, "\n");
    cr_expect_leq(len, 200, "%zu bytes: %.*s", len, (int)len, text);
    cr_expect_geq(len, 198, "%zu bytes: %.*s", len, (int)len, text);
    cr_expect_eq(strncmp(text + len - 3, "…", 3), 0, "%.*s", (int)len, text);
    free(err);
}
