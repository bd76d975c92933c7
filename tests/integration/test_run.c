/* `wsrelay run` end to end: the real binary against the real simulator and
 * a real webhook receiver on 127.0.0.1, run after run on a virtual clock. */
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

static struct relay R;

static void setup(void)
{
    relay_start_world(&R, "lab");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(run, .init = setup, .fini = teardown, .timeout = 240);

static int run_at(long long now, char **err)
{
    return relay_run_at(&R, now, err);
}

/* Runs every five minutes from T0 until all three devices were polled. */
static void poll_everything(void)
{
    for (int i = 0; i < 3; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
}

Test(run, recent_alerts_are_delivered_once_and_old_ones_only_recorded)
{
    poll_everything();
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 4, "expected 4 events, got %zu:\n%s", n, keys);
    cr_assert_eq(occurrences(keys, "5214000A/1794999000/ch1\n"), 1);
    cr_assert_eq(occurrences(keys, "5214000A/1794999000/battery-level\n"), 1);
    cr_assert_eq(occurrences(keys, "52F00001/1794998000/ch1\n"), 1);
    cr_assert_eq(occurrences(keys, "52F00002/1794999400/communication-status\n"), 1);
    cr_assert_eq(occurrences(keys, "/1794990000/"), 0, "older than catch_up: not sent");
    free(keys);

    char *text = read_file_str(R.out_path);
    cr_assert_not_null(text);
    cr_assert_eq(occurrences(text, "CH1 Upper Limit Exceeded -70.2"), 1);
    cr_assert_eq(occurrences(text, "CH1 上限値警報 12.3"), 1, "UTF-8 passes unchanged");
    cr_assert(strstr(text, "+09:00"), "device-local time with its offset:\n%s", text);
    cr_assert_eq(occurrences(text, "(old)"), 0);
    free(text);
}

Test(run, later_runs_send_nothing_new)
{
    poll_everything();
    size_t before = hooksink_count(R.hook);
    char *text_before = read_file_str(R.out_path);
    for (int i = 3; i < 15; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), before, "no request after everything was delivered");
    char *text_after = read_file_str(R.out_path);
    cr_assert_str_eq(text_after, text_before);
    free(text_before);
    free(text_after);
}

Test(run, an_alert_added_later_is_delivered_once)
{
    poll_everything();
    sim_add_alert(&R.sim, "52F00001",
                  "{\"unixtime\": 1795000700, \"ch1\": \"CH1 Lower Limit Exceeded 1.0\"}");
    for (int i = 3; i < 12; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 5, "%s", keys);
    cr_assert_eq(occurrences(keys, "52F00001/1795000700/ch1\n"), 1);
    free(keys);
}

/* A device file that cannot be written (a directory where its temporary
 * file goes) fails the run, yet the alert found is delivered: its key
 * waits in the state file's journal, and once the file can be written
 * again the alert is neither lost nor sent twice. */
Test(run, a_device_file_that_cannot_be_written_delays_nothing)
{
    poll_everything();
    char *file = xasprintf("%s.d/52F00001.json", R.state_path);
    char *tmp = xasprintf("%s.tmp", file);
    cr_assert_eq(mkdir(tmp, 0700), 0, "%s", tmp);
    sim_add_alert(&R.sim, "52F00001",
                  "{\"unixtime\": 1795000700, \"ch1\": \"CH1 Lower Limit Exceeded 1.0\"}");
    int failed = 0;
    for (int i = 3; i < 12; i++)
        failed += run_at(T0 + i * 300, NULL) != 0;
    cr_assert_gt(failed, 0, "the file that cannot be written fails runs");
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(occurrences(keys, "52F00001/1795000700/ch1\n"), 1, "delivered anyway:\n%s", keys);
    free(keys);
    cr_assert_eq(rmdir(tmp), 0);
    for (int i = 12; i < 24; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 5, "nothing repeated:\n%s", keys);
    free(keys);
    char *text = read_file_str(file);
    cr_assert_not_null(strstr(text, "1795000700/ch1"), "the key reached its file: %s", text);
    free(text);
    free(tmp);
    free(file);
}

/* A device file that cannot be read (a directory in its place, as a
 * restore with the wrong owner would leave): that device is not polled,
 * since every entry of its log would look new, and the run fails; the
 * other devices are polled as usual. Once the file is back, nothing of
 * that device was lost or repeats. */
Test(run, a_device_file_that_cannot_be_read_is_not_polled)
{
    poll_everything();
    char *file = xasprintf("%s.d/52F00001.json", R.state_path);
    char *kept = xasprintf("%s.kept", file);
    cr_assert_eq(rename(file, kept), 0, "%s", file);
    cr_assert_eq(mkdir(file, 0700), 0);
    sim_add_alert(&R.sim, "5214000A",
                  "{\"unixtime\": 1795000700, \"ch1\": \"CH1 Upper Limit Exceeded -69.0\"}");
    sim_add_alert(&R.sim, "52F00001",
                  "{\"unixtime\": 1795000800, \"ch1\": \"CH1 Lower Limit Exceeded 1.0\"}");
    int failed = 0;
    for (int i = 3; i < 12; i++)
        failed += run_at(T0 + i * 300, NULL) != 0;
    cr_assert_gt(failed, 0, "the device that cannot be read fails runs");
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 5, "the other device's alert only:\n%s", keys);
    cr_assert_eq(occurrences(keys, "5214000A/1795000700/ch1\n"), 1, "%s", keys);
    free(keys);
    cr_assert_eq(rmdir(file), 0);
    cr_assert_eq(rename(kept, file), 0);
    for (int i = 12; i < 24; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 6, "its alert once it can be read, nothing repeated:\n%s", keys);
    cr_assert_eq(occurrences(keys, "52F00001/1795000800/ch1\n"), 1, "%s", keys);
    free(keys);
    free(kept);
    free(file);
}

Test(run, a_failing_receiver_gets_the_events_later_and_only_once)
{
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(run_at(T0, NULL), 1, "a failed delivery is a run-time failure");
    cr_assert_eq(hooksink_count(R.hook), 1);
    char *text = read_file_str(R.out_path);
    cr_assert_not_null(text, "the healthy receiver got its message at once");
    size_t file_events = occurrences(text, "account lab");
    cr_assert_gt(file_events, 0);
    free(text);

    hooksink_set_status(R.hook, 200);
    hooksink_clear(R.hook);
    /* The retry waits for its back-off (one minute). */
    cr_assert_eq(run_at(T0 + 30, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 0, "not before the back-off");
    cr_assert_eq(run_at(T0 + 60, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, file_events, "the same events, once: %s", keys);
    free(keys);
    cr_assert_eq(run_at(T0 + 120, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1, "nothing sent twice");
    text = read_file_str(R.out_path);
    cr_assert_eq(occurrences(text, "account lab"), file_events, "file receiver not repeated");
    free(text);
}

Test(run, a_platform_failure_is_retried_without_loss)
{
    sim_fault(&R.sim, "alert", 503, 1, "<html>Service Unavailable</html>");
    char *err = NULL;
    cr_assert_eq(run_at(T0, &err), 1);
    cr_assert(strstr(err, "503"), "stderr: %s", err);
    free(err);
    cr_assert_eq(hooksink_count(R.hook), 0);
    for (int i = 1; i < 6; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 4, "%s", keys);
    free(keys);
}

/* 1,440 runs of the real binary: about a minute, several under ASan. */
Test(run, a_day_of_minutely_runs_keeps_within_the_budget, .timeout = 900)
{
    for (long long now = T0; now < T0 + 86400; now += 60)
        cr_assert_eq(run_at(now, NULL), 0, "run at %lld", now);
    struct json_object *stats = sim_stats(&R.sim), *v, *login;
    cr_assert(json_object_object_get_ex(stats, "rejected_429", &v));
    cr_assert_eq(json_object_get_int(v), 0);
    cr_assert(json_object_object_get_ex(stats, "max_alert_calls_per_hour", &v));
    cr_assert(json_object_object_get_ex(v, "tbzz9999", &login));
    cr_assert_leq(json_object_get_int(login), 11, "the twelfth call is kept for an urgent look");
    cr_assert_geq(json_object_get_int(login), 11, "the rest of the budget is used, not wasted");
    cr_assert(json_object_object_get_ex(stats, "totals", &v));
    cr_assert(json_object_object_get_ex(v, "tbzz9999", &login));
    cr_assert(json_object_object_get_ex(login, "alert", &v));
    cr_assert_geq(json_object_get_int(v), 260, "about 264 alert calls a day");
    cr_assert(json_object_object_get_ex(login, "current", &v));
    cr_assert_leq(json_object_get_int(v), 24 * 6 + 1, "discovery at most every 10 minutes");
    json_object_put(stats);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 4, "%s", keys);
    free(keys);
}

/* The alert calls of one hour, as the simulator counted them. */
static int max_alert_calls_per_hour(void)
{
    struct json_object *stats = sim_stats(&R.sim), *v, *login;
    cr_assert(json_object_object_get_ex(stats, "max_alert_calls_per_hour", &v));
    cr_assert(json_object_object_get_ex(v, "tbzz9999", &login));
    int n = json_object_get_int(login);
    cr_assert(json_object_object_get_ex(stats, "rejected_429", &v));
    cr_assert_eq(json_object_get_int(v), 0, "no call was refused");
    json_object_put(stats);
    return n;
}

Test(run, an_urgent_look_takes_the_call_kept_in_reserve)
{
    /* Runs every minute spend the 11 routine calls of the first hour. */
    long long now = T0;
    while (max_alert_calls_per_hour() < 11 && now < T0 + 3600) {
        cr_assert_eq(run_at(now, NULL), 0);
        now += 60;
    }
    cr_assert_eq(max_alert_calls_per_hour(), 11);
    for (int i = 0; i < 3; i++, now += 60)
        cr_assert_eq(run_at(now, NULL), 0);
    cr_assert_eq(max_alert_calls_per_hour(), 11, "routine polling leaves the reserve alone");
    cr_assert_lt(now, T0 + 3600, "still within the hour of the first call");
    /* A new alarm on the warehouse, and someone wants to know now. */
    char alert[128];
    snprintf(alert, sizeof alert, "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit 9.0\"}",
             now - 10);
    sim_add_alert(&R.sim, "52F00002", alert);
    size_t before = 0;
    free(relay_hook_keys(&R, &before));
    char *err = NULL;
    cr_assert_eq(relay_run_with(&R, now, "52F00002", &err), 0, "%s", err);
    cr_assert(strstr(err, "device 52F00002: an urgent look"), "%s", err);
    free(err);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, before + 1, "%s", keys);
    char key[64];
    snprintf(key, sizeof key, "52F00002/%lld/ch1\n", now - 10);
    cr_assert(strstr(keys, key), "%s", keys);
    free(keys);
    cr_assert_eq(max_alert_calls_per_hour(), 12, "the reserve was spent, and no more");
    /* The hour holds 12 calls now: a second look has to wait, and says so. */
    cr_assert_eq(relay_run_with(&R, now + 10, "52F00002", &err), 1);
    cr_assert(strstr(err, "no urgent look possible now: this hour's alert calls are spent"), "%s",
              err);
    free(err);
    cr_assert_eq(max_alert_calls_per_hour(), 12);
}

Test(run, an_urgent_look_at_an_unknown_serial_fails_the_run)
{
    char *err = NULL;
    cr_assert_eq(relay_run_with(&R, T0, "52999999", &err), 1);
    cr_assert(strstr(err, "--look 52999999: no device with that serial is polled"), "%s", err);
    free(err);
    /* The routine went on all the same. */
    size_t n = 0;
    free(relay_hook_keys(&R, &n));
    cr_assert_gt(n, 0);
}

Test(run, the_state_file_is_private_and_holds_no_secret)
{
    poll_everything();
    struct stat st;
    cr_assert_eq(stat(R.state_path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    char *text = read_file_str(R.state_path);
    cr_assert_null(strstr(text, RELAY_API_KEY));
    cr_assert_null(strstr(text, "ss\\\\word"));
    cr_assert_null(strstr(text, "t0ken"));
    free(text);
}

Test(run, wrong_password_fails_the_run_and_says_so_without_the_secret)
{
    char *pass = xasprintf("%s/pass.txt", R.dir);
    write_file(pass, "wrong-pass\n");
    free(pass);
    char *err = NULL;
    cr_assert_eq(run_at(T0, &err), 1);
    cr_assert(strstr(err, "401"), "stderr: %s", err);
    cr_assert_null(strstr(err, "wrong-pass"));
    cr_assert_null(strstr(err, RELAY_API_KEY));
    free(err);
    /* No alert, but wsrelay's own relay event saying it cannot log in. */
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 1, "%s", keys);
    cr_assert_str_eq(keys, "wsrelay/1795000000/relay\n");
    free(keys);
}

Test(run, a_dry_run_sends_nothing_and_leaves_the_alerts_for_the_real_run)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", T0);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",    R.config_path, (char *)"run",
                    (char *)"--dry-run", (char *)"--now", when,          NULL};
    char *out = NULL, *err = NULL;
    cr_assert_eq(run_cmd(&out, &err, 60, argv, NULL), 0, "%s", err);
    cr_assert(strstr(out, "dry run"), "%s", out);
    cr_assert_eq(hooksink_count(R.hook), 0);
    cr_assert_null(read_file_str(R.out_path));
    free(out);
    free(err);
    /* The dry run's call counted: the real runs poll every device anyway. */
    for (int i = 1; i < 5; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 4, "%s", keys);
    free(keys);
}

Test(run, a_misspelt_key_stops_before_anything_is_done)
{
    write_file(R.config_path, "state_file: /nonexistent/state.json\n"
                              "acounts: []\n");
    char *err = NULL;
    cr_assert_eq(run_at(T0, &err), 2);
    cr_assert(strstr(err, "wsrelay.yaml:2:1:"), "stderr: %s", err);
    cr_assert(strstr(err, "acounts"), "stderr: %s", err);
    free(err);
    struct json_object *stats = sim_stats(&R.sim), *calls;
    cr_assert(json_object_object_get_ex(stats, "calls", &calls));
    cr_assert_eq(json_object_array_length(calls), 0);
    json_object_put(stats);
}
