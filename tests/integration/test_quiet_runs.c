/* Quiet runs (src/quiet.h, src/front.c): `wsrelay run` answers by itself
 * when the last full run said nothing is due, and such runs change
 * nothing that a full run would have done: the same calls at the same
 * minutes, the same alerts delivered. Whatever the quiet time depended on
 * (configuration, environment, state, clock) makes the next run a full one. */
#include "proc.h"
#include "relay.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1795000000LL
#define QUIET_LINE "run: nothing is due"

static struct relay R;

static void setup(void)
{
    relay_start_world(&R, "lab");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(quiet_runs, .init = setup, .fini = teardown, .timeout = 240);

/* Runs `program` (WSRELAY_BIN, or wsrelay-net beside it) with -v at `now`;
 * returns the exit status, and in *quiet whether the front answered. */
static int run_status(const char *program, long long now, bool *quiet, char **errs)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&R.sim, now);
    char *argv[] = {(char *)program, (char *)"-v",    (char *)"-c", R.config_path,
                    (char *)"run",   (char *)"--now", when,         NULL};
    char *out = NULL, *err = NULL;
    int status = run_cmd(&out, &err, 60, argv, NULL);
    if (quiet)
        *quiet = err && strstr(err, QUIET_LINE);
    free(out);
    *errs = err;
    return status;
}

/* run_status for a run that must end well. */
static void run_program(const char *program, long long now, bool *quiet)
{
    char *err = NULL;
    int status = run_status(program, now, quiet, &err);
    cr_assert_eq(status, 0, "%s run at %lld failed:\n%s", program, now, err ? err : "");
    free(err);
}

static char *net_bin(void)
{
    return xasprintf("%s-net", WSRELAY_BIN);
}

/* Alert and current calls the simulator has answered so far. */
static long long sim_calls(void)
{
    struct json_object *stats = sim_stats(&R.sim), *totals, *login, *v;
    long long n = 0;
    cr_assert(json_object_object_get_ex(stats, "totals", &totals));
    cr_assert(json_object_object_get_ex(totals, RELAY_LOGIN, &login));
    if (json_object_object_get_ex(login, "alert", &v))
        n += json_object_get_int64(v);
    if (json_object_object_get_ex(login, "current", &v))
        n += json_object_get_int64(v);
    json_object_put(stats);
    return n;
}

#define MINUTES 75

/* Runs every minute for MINUTES with `program`; calls[i] gets the calls of
 * minute i; returns how many runs the front answered. New alerts come in
 * at minutes 7 and 31, so that rounds find something to deliver. */
static int minutely(const char *program, long long *calls)
{
    int quiet_runs = 0;
    for (int i = 0; i < MINUTES; i++) {
        long long now = T0 + 60LL * i;
        if (i == 7)
            sim_add_alert(&R.sim, "52F00001",
                          "{\"unixtime\": 1795000400, \"ch1\": \"CH1 上限値警報 13.0\"}");
        if (i == 31)
            sim_add_alert(
                &R.sim, "5214000A",
                "{\"unixtime\": 1795001800, \"ch1\": \"CH1 Upper Limit Exceeded -69.0\"}");
        long long before = sim_calls();
        bool quiet = false;
        run_program(program, now, &quiet);
        calls[i] = sim_calls() - before;
        quiet_runs += quiet;
        if (quiet)
            cr_assert_eq(calls[i], 0, "a quiet run made a call at minute %d", i);
    }
    return quiet_runs;
}

Test(quiet_runs, quiet_runs_change_nothing_a_full_run_would_have_done)
{
    long long full[MINUTES], fronted[MINUTES];
    char *net = net_bin();
    cr_assert_eq(minutely(net, full), 0, "wsrelay-net never answers quietly");
    size_t n_full = 0;
    char *keys_full = relay_hook_keys(&R, &n_full);
    free(net);

    relay_stop(&R);
    relay_start_world(&R, "lab");
    int quiet = minutely(WSRELAY_BIN, fronted);
    size_t n_fronted = 0;
    char *keys_fronted = relay_hook_keys(&R, &n_fronted);

    long long total = 0;
    for (int i = 0; i < MINUTES; i++)
        total += full[i];
    cr_log_info("%d of %d runs quiet; %lld calls; %zu events delivered", quiet, MINUTES, total,
                n_full);
    for (int i = 0; i < MINUTES; i++)
        cr_assert_eq(fronted[i], full[i], "minute %d: %lld calls through the front, %lld without",
                     i, fronted[i], full[i]);
    cr_assert_str_eq(keys_fronted, keys_full);
    cr_assert_geq(n_full, 6, "the alerts of the world and the two added later");
    /* Alert calls come every 5.5 minutes and device lists every 10: most
     * minutes have nothing to do. */
    cr_assert_geq(quiet, MINUTES / 2, "only %d quiet runs of %d", quiet, MINUTES);
    free(keys_full);
    free(keys_fronted);
}

/* The first quiet minute after T0's full run. */
static long long first_quiet(void)
{
    bool quiet = false;
    run_program(WSRELAY_BIN, T0, &quiet);
    cr_assert_not(quiet);
    for (long long now = T0 + 60; now < T0 + 600; now += 60) {
        run_program(WSRELAY_BIN, now, &quiet);
        if (quiet)
            return now;
    }
    cr_assert_fail("no quiet run in the first ten minutes");
    return 0;
}

/* Whether a run at `now` is quiet. */
static bool quiet_at(long long now)
{
    bool quiet = false;
    char *err = NULL;
    run_status(WSRELAY_BIN, now, &quiet, &err);
    free(err);
    return quiet;
}

/* -c and -v after `run`, as wsrelay-net takes them, leave the run plain:
 * the front answers it. */
Test(quiet_runs, global_options_after_run_are_answered_by_the_front)
{
    long long now = first_quiet() + 1;
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&R.sim, now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"run", (char *)"--now", when,
                    (char *)"-c",        R.config_path, (char *)"-v",    NULL};
    char *err = NULL;
    cr_assert_eq(run_cmd(NULL, &err, 60, argv, NULL), 0, "%s", err);
    cr_assert(strstr(err, QUIET_LINE), "%s", err);
    free(err);
}

Test(quiet_runs, a_changed_configuration_makes_a_full_run)
{
    long long now = first_quiet();
    char *text = read_file_str(R.config_path);
    write_file(R.config_path, text); /* the same words, a new version of the file */
    cr_assert_not(quiet_at(now + 1));
    free(text);
}

Test(quiet_runs, a_changed_variable_of_the_configuration_makes_a_full_run)
{
    long long now = first_quiet();
    setenv("WSRELAY_NOT_NAMED", "1", 1);
    cr_assert(quiet_at(now + 1), "a variable the configuration does not name");
    setenv("TEST_API_KEY", RELAY_API_KEY "x", 1);
    cr_assert_not(quiet_at(now + 2));
}

Test(quiet_runs, a_state_written_by_another_makes_a_full_run)
{
    long long now = first_quiet();
    char *text = read_file_str(R.state_path);
    char *tmp = xasprintf("%s.new", R.state_path);
    write_file(tmp, text);
    chmod(tmp, 0600);
    cr_assert_eq(rename(tmp, R.state_path), 0);
    cr_assert_not(quiet_at(now + 1));
    free(tmp);
    free(text);
}

Test(quiet_runs, a_clock_that_went_back_makes_a_full_run)
{
    first_quiet();
    cr_assert_not(quiet_at(T0 - 60));
}

Test(quiet_runs, a_failing_receiver_leaves_no_quiet_time)
{
    relay_config(&R, NULL,
                 "  - name: hook\n"
                 "    webhook: {url: \"http://127.0.0.1:9/nobody\"}\n"
                 "    timeout: 5s\n");
    char *qpath = xasprintf("%s.quiet", R.state_path);
    cr_assert_not(quiet_at(T0));
    cr_assert_eq(access(qpath, F_OK), -1, "the outbox waits: no quiet file");
    cr_assert_not(quiet_at(T0 + 60));
    free(qpath);
}

/* The front answers a plain `run` only: a look, a dry run and any other
 * command go to wsrelay-net, quiet time or not. */
Test(quiet_runs, a_look_or_a_dry_run_is_never_quiet)
{
    long long now = first_quiet();
    char when[32];
    snprintf(when, sizeof when, "%lld", now + 1);
    char *argv[] = {
        (char *)WSRELAY_BIN, (char *)"-v", (char *)"-c",        R.config_path, (char *)"run",
        (char *)"--now",     when,         (char *)"--dry-run", NULL,          NULL};
    char *out = NULL, *err = NULL;
    cr_assert_eq(run_cmd(&out, &err, 60, argv, NULL), 0, "%s", err);
    cr_assert_null(strstr(err, QUIET_LINE), "a dry run is never answered by the front:\n%s", err);
    free(out);
    free(err);
    argv[7] = (char *)"--look";
    argv[8] = (char *)"52F00002";
    long long before = sim_calls();
    cr_assert_eq(run_cmd(&out, &err, 60, argv, NULL), 0, "%s", err);
    cr_assert_null(strstr(err, QUIET_LINE), "%s", err);
    cr_assert_eq(sim_calls() - before, 1, "the look was made");
    free(out);
    free(err);
}
