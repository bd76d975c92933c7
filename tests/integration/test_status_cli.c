/* `wsrelay status` after real runs: the real binary against the simulator
 * and a webhook sink, on a virtual clock, in both forms; its exit status
 * is what a monitoring script sees. Times are printed in UTC (TZ is set).
 * The sample of `wsrelay status` in wsrelay(1) (STATUS REPORT) comes
 * from this setup. */
#include "jsonpath.h"
#include "proc.h"
#include "relay.h"
#include "state.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL /* 2026-11-18 11:06:40 UTC */

static struct relay R;

static void setup(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    relay_start_world(&R, "lab");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(status_cli, .init = setup, .fini = teardown, .timeout = 240);

struct out {
    int status;
    char *text;
    char *err;
};

/* `wsrelay -c CONFIG status [--json] --now NOW`; no secret may appear. */
static struct out status_at(long long now, bool json)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    char *argv[] = {(char *)WSRELAY_BIN,
                    (char *)"-c",
                    R.config_path,
                    (char *)"status",
                    (char *)"--now",
                    when,
                    json ? (char *)"--json" : NULL,
                    NULL};
    struct out o;
    o.status = run_cmd(&o.text, &o.err, 20, argv, NULL);
    const char *secrets[] = {RELAY_API_KEY, "ss\\word", "t0ken", hooksink_url(R.hook)};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
        cr_assert_null(strstr(o.text, secrets[i]), "'%s' in:\n%s", secrets[i], o.text);
        cr_assert_null(strstr(o.err, secrets[i]), "'%s' in:\n%s", secrets[i], o.err);
    }
    return o;
}

static void out_free(struct out *o)
{
    free(o->text);
    free(o->err);
}

static struct json_object *parse(const struct out *o)
{
    struct json_object *j = json_tokener_parse(o->text);
    cr_assert_not_null(j, "not JSON:\n%s", o->text);
    return j;
}

/* Times a run records as it goes (the login's calls and their outcome)
 * are its clock plus the seconds it has run. */
static void expect_near(struct json_object *o, const char *path, long long want)
{
    long long got = json_int_at(o, path);
    cr_expect(got >= want && got <= want + 5, "%s: %lld, want %lld (+5 s)", path, got, want);
}

static bool null_at(struct json_object *o, const char *path)
{
    return json_object_is_type(json_at(o, path), json_type_null);
}

static void expect_line(const char *text, const char *line)
{
    size_t len = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[len] == '\n')
            return;
    cr_expect_fail("no line '%s' in:\n%s", line, text);
}

static void expect_first_line(const char *text, const char *prefix)
{
    cr_expect_eq(strncmp(text, prefix, strlen(prefix)), 0, "the first line is not '%s…':\n%s",
                 prefix, text);
}

/* The simulator's count of `op` calls of the test's login ID. */
static long long sim_total(const char *op)
{
    struct json_object *stats = sim_stats(&R.sim);
    char *path = xasprintf("totals.%s.%s", RELAY_LOGIN, op);
    long long n = json_int_at(stats, path);
    free(path);
    json_object_put(stats);
    return n;
}

/* Three runs six minutes apart: every device polled once. (Five would
 * do, but a run stamps its calls with its clock plus the seconds it has
 * run, and a call stamped T0 + 1 leaves no slot at T0 + 300.) */
static void three_runs(void)
{
    for (int i = 0; i < 3; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 360, NULL), 0);
}

Test(status_cli, before_any_run_it_is_a_problem)
{
    struct out o = status_at(T0, false);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    char *want = xasprintf("PROBLEM: no run has completed yet (%s records no platform call)\n",
                           R.state_path);
    expect_first_line(o.text, want);
    free(want);
    out_free(&o);
    o = status_at(T0, true);
    cr_expect_eq(o.status, 1);
    struct json_object *j = parse(&o);
    cr_expect_str_eq(json_str_at(j, "verdict"), "PROBLEM");
    json_object_put(j);
    out_free(&o);
}

Test(status_cli, after_a_few_runs_every_device_and_the_budget_are_shown)
{
    three_runs();
    struct out o = status_at(T0 + 750, false);
    cr_expect_eq(o.status, 0, "%s%s", o.text, o.err);
    expect_first_line(o.text, "OK\n");
    expect_line(o.text, "login tbzz9999 (account lab)");
    /* The last call at T0 + 720, the next a spacing (3600 / 11 s) less
     * the slack (32 s) after it: 265 s from now. */
    expect_line(o.text, "  alert calls: 3 of 12 in the last hour (1 kept for an urgent look); "
                        "next allowed 11:23 (in 5 min)");
    expect_line(o.text, "  current-readings calls: 1 of 10 in the last 2 min");
    expect_line(o.text, "  last success: 11:18 (just now)");
    expect_line(o.text, "  last error: none");
    expect_line(o.text,
                "  3 devices, each looked at about every 17 min (next polls are estimates)");
    expect_line(o.text, "    5214000A  Freezer A (TR-72A2, group Lab)");
    expect_line(o.text, "      last poll 11:06 (12 min ago), ok; next about 11:23 (in 5 min); "
                        "3 keys seen");
    expect_line(o.text, "    52F00001  冷蔵室 1 (RTR501B)");
    expect_line(o.text, "      last poll 11:12 (6 min ago), ok; next about 11:29 (in 10 min); "
                        "2 keys seen");
    expect_line(o.text, "    52F00002  Warehouse (RTR502B)");
    expect_line(o.text, "      last poll 11:18 (just now), ok; next about 11:34 (in 16 min); "
                        "1 key seen");
    expect_line(o.text, "  hook (webhook)");
    expect_line(o.text, "  log (file)");
    expect_line(o.text, "    outbox: empty");
    expect_line(o.text, "    last success: 11:18 (just now)");
    out_free(&o);

    o = status_at(T0 + 750, true);
    cr_expect_eq(o.status, 0);
    struct json_object *j = parse(&o);
    cr_expect_str_eq(json_str_at(j, "verdict"), "OK");
    cr_expect_eq(json_int_at(j, "now"), T0 + 750);
    cr_expect_str_eq(json_str_at(j, "logins.0.login_id"), RELAY_LOGIN);
    cr_expect_eq(json_int_at(j, "logins.0.alert.used"), sim_total("alert"),
                 "the ledger counts what the platform counted");
    cr_expect_eq(json_int_at(j, "logins.0.alert.used"), 3);
    cr_expect_eq(json_int_at(j, "logins.0.alert.limit"), 12);
    /* 11 routine calls an hour: a spacing of 327 s, less 32 s of slack. */
    expect_near(j, "logins.0.alert.next_call", T0 + 720 + 327 - 32);
    cr_expect_eq(json_int_at(j, "logins.0.alert.reserve"), 1);
    cr_expect_eq(json_int_at(j, "logins.0.current.limit"), 10);
    cr_expect_eq(json_int_at(j, "logins.0.current.used"), 1, "the discovery 30 s ago");
    cr_expect_eq(sim_total("current"), 2, "a discovery every 10 minutes");
    expect_near(j, "logins.0.last_ok", T0 + 720);
    cr_expect_eq(json_int_at(j, "logins.0.failures"), 0);
    cr_expect(null_at(j, "logins.0.last_error"));
    cr_expect_eq(json_int_at(j, "logins.0.look_interval"), 3 * 327);
    cr_assert_eq(json_object_array_length(json_at(j, "logins.0.devices")), 3);
    static const struct {
        const char *serial;
        long long last_poll, next_poll, seen;
    } want[] = {{"5214000A", T0, T0 + 1015, 3},
                {"52F00001", T0 + 360, T0 + 1015 + 327, 2},
                {"52F00002", T0 + 720, T0 + 1015 + 2 * 327, 1}};
    for (size_t i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof path, "logins.0.devices.%zu", i);
        struct json_object *d = json_at(j, path);
        cr_expect_str_eq(json_str_at(d, "serial"), want[i].serial);
        cr_expect_str_eq(json_str_at(d, "state"), "polled");
        cr_expect_eq(json_int_at(d, "last_poll"), want[i].last_poll, "%s", want[i].serial);
        cr_expect_eq(json_int_at(d, "last_ok"), want[i].last_poll, "%s", want[i].serial);
        expect_near(d, "next_poll", want[i].next_poll);
        cr_expect_eq(json_int_at(d, "seen_keys"), want[i].seen, "%s", want[i].serial);
        cr_expect(null_at(d, "refused_until"));
    }
    cr_expect_str_eq(json_str_at(j, "receivers.0.name"), "hook");
    cr_expect_str_eq(json_str_at(j, "receivers.0.type"), "webhook");
    cr_expect_eq(json_int_at(j, "receivers.0.outbox.count"), 0);
    cr_expect_eq(json_int_at(j, "receivers.0.last_ok"), T0 + 720);
    cr_expect_eq(json_int_at(j, "receivers.0.failures"), 0);
    cr_expect_eq(json_int_at(j, "counters.unrouted"), 0);
    json_object_put(j);
    out_free(&o);
}

Test(status_cli, a_failing_receiver_is_a_problem_until_it_delivers)
{
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    /* Failing, but its events have waited only a few minutes. */
    struct out o = status_at(T0 + 300, false);
    cr_expect_eq(o.status, 0, "%s", o.text);
    expect_first_line(o.text, "OK\nWARNING: receiver hook: last delivery failed 5 min ago "
                              "(receiver 'hook' (webhook): ");
    out_free(&o);
    for (int i = 1; i <= 4; i++)
        relay_run_at(&R, T0 + i * 300, NULL);
    o = status_at(T0 + 1230, false);
    cr_expect_eq(o.status, 1, "%s", o.text);
    expect_first_line(o.text, "PROBLEM: receiver hook: 4 events waiting since 11:06 (20 min ago), "
                              "last error ");
    cr_expect(strstr(o.text, "HTTP 503"), "%s", o.text);
    expect_line(o.text, "    last success: never");
    out_free(&o);
    o = status_at(T0 + 1230, true);
    cr_expect_eq(o.status, 1);
    struct json_object *j = parse(&o);
    cr_expect_str_eq(json_str_at(j, "verdict"), "PROBLEM");
    cr_expect_eq(json_object_array_length(json_at(j, "problems")), 1);
    cr_expect_str_eq(json_str_at(j, "receivers.0.name"), "hook");
    cr_expect_eq(json_int_at(j, "receivers.0.outbox.count"), 4);
    cr_expect_eq(json_int_at(j, "receivers.0.outbox.oldest_queued"), T0);
    cr_expect_geq(json_int_at(j, "receivers.0.failures"), 3);
    cr_expect(null_at(j, "receivers.0.last_ok"));
    cr_expect(strstr(json_str_at(j, "receivers.0.last_error.message"), "HTTP 503"));
    cr_expect_eq(json_int_at(j, "receivers.1.failures"), 0, "the file receiver is fine");
    json_object_put(j);
    out_free(&o);

    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 1500 + 3600, NULL), 0);
    o = status_at(T0 + 1500 + 3600 + 30, false);
    cr_expect_eq(o.status, 0, "%s", o.text);
    expect_first_line(o.text, "OK\n");
    expect_line(o.text, "    outbox: empty");
    out_free(&o);
}

Test(status_cli, a_refused_login_is_a_problem_and_a_refused_device_a_warning)
{
    sim_fault(&R.sim, "alert", 401, 1, NULL);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    struct out o = status_at(T0 + 10, false);
    cr_expect_eq(o.status, 1, "%s", o.text);
    expect_first_line(o.text, "PROBLEM: login tbzz9999: last call failed just now (account lab, "
                              "device 5214000A, alert logs: HTTP 401");
    cr_expect(strstr(o.text, "(check api_key, login_id and login_pass)); login tbzz9999: "
                             "credentials refused just now; polling paused until the "
                             "configuration changes or 12:06 (in 60 min)\n"),
              "%s", o.text);
    expect_line(o.text, "  login tbzz9999: credentials refused at 11:06 (just now); polling "
                        "paused until the configuration changes or 12:06 (in 60 min)");
    out_free(&o);
    o = status_at(T0 + 10, true);
    cr_expect(strstr(o.text, "\"condition\": \"login-refused\""), "%s", o.text);
    out_free(&o);

    /* The login is left alone for an hour (self-monitoring); then the
     * next call succeeds; the one after is refused for its device. */
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 0);
    sim_fault(&R.sim, "alert", 400, 1, NULL);
    cr_assert_eq(relay_run_at(&R, T0 + 3960, NULL), 1);
    o = status_at(T0 + 3970, false);
    cr_expect_eq(o.status, 0, "%s", o.text);
    expect_first_line(o.text, "OK\nWARNING: device 5214000A (account lab): refused by the "
                              "platform (1 in a row) until 12:27 (in 15 min)\n");
    expect_line(o.text, "      refused by the platform (1 in a row) until 12:27 (in 15 min); last "
                        "poll 12:12 (just now), failed; last ok 12:06 (6 min ago); 3 keys seen");
    expect_line(o.text, "  last error: 11:06 (66 min ago): account lab, device 5214000A, alert "
                        "logs: HTTP 401 (code 401: simulated fault) (check api_key, login_id and "
                        "login_pass)");
    out_free(&o);
}

Test(status_cli, a_dry_run_records_the_calls_but_no_delivery)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", T0);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",    R.config_path, (char *)"run",
                    (char *)"--dry-run", (char *)"--now", when,          NULL};
    cr_assert_eq(run_cmd(NULL, NULL, 60, argv, NULL), 0);
    struct out o = status_at(T0 + 10, true);
    cr_expect_eq(o.status, 0, "%s", o.text);
    struct json_object *j = parse(&o);
    cr_expect_eq(json_int_at(j, "logins.0.alert.used"), 1);
    expect_near(j, "logins.0.last_ok", T0);
    cr_expect(null_at(j, "receivers.0.last_ok"), "nothing was delivered");
    cr_expect_eq(json_int_at(j, "receivers.0.outbox.count"), 0, "nothing was queued on disk");
    json_object_put(j);
    out_free(&o);
}

Test(status_cli, status_does_not_wait_for_a_run_holding_the_lock)
{
    three_runs();
    struct state *held = NULL;
    struct err e = {{0}};
    cr_assert_eq(state_open(&held, R.state_path, 0, &e), 0, "%s", e.msg);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct out o = status_at(T0 + 750, false);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect_eq(o.status, 0, "%s%s", o.text, o.err);
    expect_first_line(o.text, "OK\n");
    cr_expect_lt(took, 5.0, "status took %.1f s: it waited for the lock", took);
    out_free(&o);
    state_close(held);
}

Test(status_cli, usage_errors_exit_2)
{
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",   R.config_path, (char *)"status",
                    (char *)"--now",     (char *)"soon", NULL};
    char *err = NULL;
    cr_expect_eq(run_cmd(NULL, &err, 20, argv, NULL), 2);
    cr_expect(strstr(err, "--now expects a Unix time"), "%s", err);
    free(err);
    argv[4] = (char *)"--verbose";
    argv[5] = NULL;
    cr_expect_eq(run_cmd(NULL, &err, 20, argv, NULL), 2);
    cr_expect(strstr(err, "usage: wsrelay status [--json] [--now UNIXTIME]"), "%s", err);
    free(err);
    argv[4] = (char *)"extra";
    cr_expect_eq(run_cmd(NULL, &err, 20, argv, NULL), 2);
    free(err);
    write_file(R.config_path, "acounts: []\n");
    argv[4] = NULL;
    cr_expect_eq(run_cmd(NULL, &err, 20, argv, NULL), 2);
    cr_expect(strstr(err, "acounts"), "%s", err);
    free(err);
    char *help[] = {(char *)WSRELAY_BIN, (char *)"--help", NULL};
    char *out = NULL;
    cr_expect_eq(run_cmd(&out, NULL, 20, help, NULL), 0);
    cr_expect(strstr(out, "\n  status [--json] [--now UNIXTIME]\n"), "%s", out);
    free(out);
}

Test(status_cli, an_unreadable_state_file_is_a_problem)
{
    write_file(R.state_path, "{\"version\":1,");
    struct out o = status_at(T0, false);
    cr_expect_eq(o.status, 1);
    char *want =
        xasprintf("PROBLEM: the state file cannot be read: %s: corrupt state file: ", R.state_path);
    expect_first_line(o.text, want);
    free(want);
    out_free(&o);
}

/* The user that the state directory is given to, as the service's own. */
#define OWNER 65534 /* nobody */

/* Gives R.dir, where the state is, to OWNER; the test needs root. It
 * skips when run as another user, but CI runs the suite as root (.ci/run,
 * which also installs the package with apt-get), so the two ownership
 * tests below always run there. */
static void give_state_dir_away(void)
{
    if (geteuid() != 0)
        cr_skip_test("needs root, to run commands as root against another user's state");
    cr_assert_eq(chown(R.dir, OWNER, OWNER), 0);
}

/* Fails unless every file of the state (PATH*, and in PATH.d) is OWNER's. */
static void expect_state_files_owned(void)
{
    char *base = strrchr(R.state_path, '/') + 1;
    size_t n_state = 0;
    DIR *d = opendir(R.dir);
    cr_assert_not_null(d);
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, base, strlen(base)) != 0)
            continue;
        char *path = xasprintf("%s/%s", R.dir, de->d_name);
        struct stat st;
        cr_assert_eq(lstat(path, &st), 0);
        cr_expect_eq(st.st_uid, OWNER, "%s is uid %u's", path, (unsigned)st.st_uid);
        n_state++;
        if (S_ISDIR(st.st_mode)) {
            DIR *sub = opendir(path);
            for (struct dirent *f; sub && (f = readdir(sub));) {
                char *inner = xasprintf("%s/%s", path, f->d_name);
                cr_assert_eq(lstat(inner, &st), 0);
                if (strcmp(f->d_name, ".."))
                    cr_expect_eq(st.st_uid, OWNER, "%s is uid %u's", inner, (unsigned)st.st_uid);
                free(inner);
            }
            if (sub)
                closedir(sub);
        }
        free(path);
    }
    closedir(d);
    cr_assert_geq(n_state, 2, "no state written in %s", R.dir);
}

/* An administrator runs `run`, `status` and `current` as root against the
 * service's state: each runs as the state's owner, and no file of the
 * state becomes root's (the service could no longer lock or save it). */
Test(status_cli, commands_run_as_root_run_as_the_owner_of_the_state)
{
    give_state_dir_away();
    char *err = NULL;
    int rc = relay_run_at(&R, T0, &err);
    cr_assert_eq(rc, 0, "%s", err);
    free(err);
    expect_state_files_owned();
    struct out o = status_at(T0 + 60, false);
    cr_expect_eq(o.status, 0, "%s%s", o.text, o.err);
    out_free(&o);
    o = status_at(T0 + 60, true);
    out_free(&o);
    char when[32];
    snprintf(when, sizeof when, "%lld", T0 + 120);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", R.config_path, (char *)"current",
                    (char *)"--now",     when,         NULL};
    char *out = NULL;
    err = NULL;
    cr_expect_eq(run_cmd(&out, &err, 60, argv, NULL), 0, "%s", err);
    free(out);
    free(err);
    expect_state_files_owned();
}

/* A lock file left as root's by an older release: the service's error
 * names the owner and the command that gives it back. */
Test(status_cli, a_lock_file_of_another_user_is_named_with_the_fix)
{
    give_state_dir_away();
    char *lock = xasprintf("%s.lock", R.state_path);
    write_file(lock, "");
    cr_assert_eq(chmod(lock, 0600), 0);
    char *err = NULL;
    int rc = relay_run_at(&R, T0, &err);
    cr_expect_neq(rc, 0);
    char *want = xasprintf("%s: cannot open lock file: %s is owned by root, and wsrelay runs as "
                           "nobody; run: chown -R nobody: %s*\n",
                           R.state_path, lock, R.state_path);
    cr_expect(strstr(err, want), "want '%s' in:\n%s", want, err);
    free(want);
    free(err);
    free(lock);
}
