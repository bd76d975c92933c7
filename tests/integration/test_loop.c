/* `wsrelay run --loop`: ticks on the real clock until SIGTERM, which ends
 * it with 0 and a saved state; an edit of the configuration is picked up
 * without a restart, and a broken one does not stop the loop. */
#include "proc.h"
#include "relay.h"
#include "state.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct relay R;
static struct proc P;
static long long alert_at; /* the unixtime of the device's alert */

static void teardown(void)
{
    proc_stop(&P);
    relay_stop(&R);
}

/* One device with an alert a minute ago, on the simulator's clock set to
 * the real one (the loop follows the real clock). */
static void start(void)
{
    long long now = (long long)time(NULL);
    alert_at = now - 60;
    char *scen = xasprintf("{\"now\": %lld, \"accounts\": [{\"api_key\": \"@API_KEY@\", "
                           "\"login_id\": \"@LOGIN@\", \"login_pass\": \"@PASSWORD@\", "
                           "\"devices\": [{\"serial\": \"5214A000\", \"name\": \"F0\", "
                           "\"alerts\": [{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit "
                           "Exceeded -70.2\"}]}]}]}",
                           now, alert_at);
    relay_start(&R, scen);
    free(scen);
}

static void start_loop(const char *interval)
{
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",         R.config_path,    (char *)"run",
                    (char *)"--loop",    (char *)"--interval", (char *)interval, NULL};
    proc_start(&P, argv, NULL, R.dir);
}

/* Waits up to `seconds` for the webhook sink to have `n` requests. */
static bool wait_for_requests(size_t n, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        if (hooksink_count(R.hook) >= n)
            return true;
        if (proc_poll(&P) >= 0)
            return false;
        test_sleep_ms(100);
    }
    return false;
}

Test(loop, delivers_then_stops_cleanly_on_sigterm, .fini = teardown, .timeout = 60)
{
    start();
    start_loop("1s");
    cr_assert(wait_for_requests(1, 20), "no delivery from the loop");
    test_sleep_ms(1500); /* at least one more tick, with nothing new */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int status = proc_terminate(&P, 10);
    clock_gettime(CLOCK_MONOTONIC, &b);
    char *err = proc_stderr(&P);
    cr_assert_eq(status, 0, "%s", err);
    cr_assert_lt(b.tv_sec - a.tv_sec, 5, "SIGTERM took too long to act");
    cr_assert(strstr(err, "loop: stopped by a signal; the state is saved"), "%s", err);
    free(err);
    cr_assert_eq(hooksink_count(R.hook), 1, "the event went out once");
    /* The state is whole: the event is recorded as seen (in the state file
     * or its device's file), nothing is owed. */
    struct state *st = NULL;
    struct err e = {{0}};
    cr_assert_eq(state_peek(&st, R.state_path, &e), 0, "%s", e.msg);
    cr_expect(state_seen(st, "5214A000", alert_at, "ch1"));
    cr_expect_eq(state_outbox_count(st, NULL), 0);
    state_close(st);
}

static const char account_a[] = "  - name: a\n"
                                "    base_url: @BASE_URL@\n"
                                "    api_key: \"${TEST_API_KEY}\"\n"
                                "    login_id: " RELAY_LOGIN "\n"
                                "    login_pass_file: pass.txt\n";
static const char account_b[] = "  - name: b\n"
                                "    base_url: @BASE_URL@\n"
                                "    api_key: \"${TEST_API_KEY}\"\n"
                                "    login_id: tbzz8888\n"
                                "    login_pass: second\n";

Test(loop, picks_up_a_config_edit_and_survives_a_broken_one, .fini = teardown, .timeout = 60)
{
    /* Two login IDs on the platform, each with a device with an alert. */
    long long now = (long long)time(NULL);
    alert_at = now - 60;
    char *scen = xasprintf(
        "{\"now\": %lld, \"accounts\": ["
        "{\"api_key\": \"@API_KEY@\", \"login_id\": \"@LOGIN@\", \"login_pass\": \"@PASSWORD@\","
        " \"devices\": [{\"serial\": \"5214A000\", \"alerts\": [{\"unixtime\": %lld, \"ch1\": "
        "\"CH1 Upper Limit Exceeded 1\"}]}]},"
        "{\"api_key\": \"@API_KEY@\", \"login_id\": \"tbzz8888\", \"login_pass\": \"second\","
        " \"devices\": [{\"serial\": \"5214B000\", \"alerts\": [{\"unixtime\": %lld, \"ch1\": "
        "\"CH1 Upper Limit Exceeded 2\"}]}]}]}",
        now, now - 60, now - 60);
    relay_start(&R, scen);
    free(scen);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",         R.config_path, (char *)"run",
                    (char *)"--loop",    (char *)"--interval", (char *)"1s",  NULL};
    /* A broken file at the start is a configuration error: exit 2. */
    write_file(R.config_path, "accounts: [\n");
    cr_assert_eq(run_cmd(NULL, NULL, 20, argv, NULL), 2);
    relay_config(&R, account_a, NULL);
    start_loop("1s");
    cr_assert(wait_for_requests(1, 20), "no delivery from the loop");
    /* A broken edit is logged and the loop goes on with what it had. */
    write_file(R.config_path, "accounts: [\n");
    test_sleep_ms(2500);
    cr_assert_eq(proc_poll(&P), -1, "a broken edit must not stop the loop");
    /* A good edit adds the second account: its alert arrives without a
     * restart. */
    char *both = xasprintf("%s%s", account_a, account_b);
    relay_config(&R, both, NULL);
    free(both);
    cr_assert(wait_for_requests(2, 20), "the edit was not picked up");
    cr_assert_eq(proc_terminate(&P, 10), 0);
    char *err = proc_stderr(&P);
    cr_assert(strstr(err, "keeping the configuration read before"), "%s", err);
    free(err);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 2, "%s", keys);
    cr_assert(strstr(keys, "5214A000/") && strstr(keys, "5214B000/"), "%s", keys);
    free(keys);
}

Test(loop, refuses_now_a_lonely_interval_and_a_look)
{
    char *argv1[] = {(char *)WSRELAY_BIN, (char *)"-c",    (char *)"/nonexistent", (char *)"run",
                     (char *)"--loop",    (char *)"--now", (char *)"100",          NULL};
    char *err = NULL;
    cr_assert_eq(run_cmd(NULL, &err, 10, argv1, NULL), 2);
    cr_assert(strstr(err, "--now cannot be used with it"), "%s", err);
    free(err);
    char *argv2[] = {(char *)WSRELAY_BIN,
                     (char *)"-c",
                     (char *)"/nonexistent",
                     (char *)"run",
                     (char *)"--interval",
                     (char *)"5s",
                     NULL};
    cr_assert_eq(run_cmd(NULL, &err, 10, argv2, NULL), 2);
    cr_assert(strstr(err, "--interval needs --loop"), "%s", err);
    free(err);
    char *argv3[] = {
        (char *)WSRELAY_BIN, (char *)"-c",         (char *)"/nonexistent", (char *)"run",
        (char *)"--loop",    (char *)"--interval", (char *)"0s",           NULL};
    cr_assert_eq(run_cmd(NULL, &err, 10, argv3, NULL), 2);
    cr_assert(strstr(err, "--interval expects a duration"), "%s", err);
    free(err);
    char *argv4[] = {(char *)WSRELAY_BIN, (char *)"-c",     (char *)"/nonexistent", (char *)"run",
                     (char *)"--loop",    (char *)"--look", (char *)"5214000A",     NULL};
    cr_assert_eq(run_cmd(NULL, &err, 10, argv4, NULL), 2);
    cr_assert(strstr(err, "--look is for one run"), "%s", err);
    free(err);
}
