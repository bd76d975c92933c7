/* `wsrelay run` where things go wrong or are unusual: accounts sharing a
 * login ID, devices the platform refuses, a clock that jumped, more devices
 * than the budget looks at in an hour, a discovery reply without devices,
 * a receiver renamed with events queued, and more entries between two
 * polls than the platform keeps. */
#include "proc.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL

static struct relay R;

static void teardown(void)
{
    relay_stop(&R);
}

/* A scenario of `n` standalone devices 5214A0NN, each with one alert at
 * `alert_at` (0: none); device 0 is refused by the platform when
 * `refuse_first`. */
static char *scenario_of(int n, long long alert_at, bool refuse_first)
{
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"now\": %lld, \"accounts\": [{\"api_key\": \"@API_KEY@\", "
                   "\"login_id\": \"@LOGIN@\", \"login_pass\": \"@PASSWORD@\", \"devices\": [",
               T0);
    for (int i = 0; i < n; i++) {
        buf_printf(&b, "%s{\"serial\": \"5214A0%02d\", \"model\": \"TR-72A2\", \"name\": \"F%d\"",
                   i ? "," : "", i, i);
        if (i == 0 && refuse_first)
            buf_puts(&b, ", \"alert_supported\": false");
        if (alert_at)
            buf_printf(&b, ", \"alerts\": [{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit "
                           "Exceeded %d\"}]",
                       alert_at, i);
        buf_puts(&b, "}");
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

static void start(int n, long long alert_at, bool refuse_first)
{
    char *scen = scenario_of(n, alert_at, refuse_first);
    relay_start(&R, scen);
    free(scen);
}

static int alert_calls_to(const char *serial)
{
    struct json_object *stats = sim_stats(&R.sim), *calls, *v;
    int count = 0;
    cr_assert(json_object_object_get_ex(stats, "calls", &calls));
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        struct json_object *c = json_object_array_get_idx(calls, i);
        if (json_object_object_get_ex(c, "serial", &v) && v &&
            strcmp(json_object_get_string(v), serial) == 0)
            count++;
    }
    json_object_put(stats);
    return count;
}

static int max_alert_calls_per_hour(void)
{
    struct json_object *stats = sim_stats(&R.sim), *v, *login;
    cr_assert(json_object_object_get_ex(stats, "max_alert_calls_per_hour", &v));
    int n = json_object_object_get_ex(v, RELAY_LOGIN, &login) ? json_object_get_int(login) : 0;
    json_object_put(stats);
    return n;
}

Test(resilience, accounts_sharing_a_login_id_share_its_budget_fairly, .fini = teardown,
     .timeout = 120)
{
    start(4, T0 - 60, false);
    relay_config(&R,
                 "  - name: first-half\n"
                 "    base_url: @BASE_URL@\n"
                 "    api_key: \"${TEST_API_KEY}\"\n"
                 "    login_id: " RELAY_LOGIN "\n"
                 "    login_pass_file: pass.txt\n"
                 "    include: [\"5214A000\", \"5214A001\"]\n"
                 "  - name: second-half\n"
                 "    base_url: @BASE_URL@\n"
                 "    api_key: \"${TEST_API_KEY}\"\n"
                 "    login_id: " RELAY_LOGIN "\n"
                 "    login_pass_file: pass.txt\n"
                 "    exclude: [\"5214A000\", \"5214A001\"]\n",
                 NULL);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 4, "every device of both accounts, once:\n%s", keys);
    free(keys);
    cr_assert_leq(max_alert_calls_per_hour(), 12);
}

Test(resilience, a_refused_device_is_asked_once_a_day_and_frees_the_budget, .fini = teardown,
     .timeout = 120)
{
    start(2, T0 - 60, true);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1, "the first refusal is a failure");
    cr_assert(strstr(err, "refused"), "%s", err);
    cr_assert(strstr(err, "exclude"), "the log says what to do: %s", err);
    free(err);
    for (int i = 1; i <= 12; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 300, NULL), 0, "run %d", i);
    cr_assert_eq(alert_calls_to("5214A000"), 1, "not asked again within the day");
    /* 13 runs in an hour: 11 calls, the twelfth kept for an urgent look. */
    cr_assert_geq(alert_calls_to("5214A001"), 10, "the budget goes to the working device");
    cr_assert_eq(relay_run_at(&R, T0 + 86400 + 300, NULL), 1, "asked again the next day");
    cr_assert_eq(alert_calls_to("5214A000"), 2);
}

Test(resilience, a_clock_that_was_ahead_does_not_stop_polling, .fini = teardown, .timeout = 120)
{
    start(1, 0, false);
    cr_assert_eq(relay_run_at(&R, T0 + 86400, NULL), 0, "a run with the clock a day ahead");
    sim_add_alert(&R.sim, "5214A000", "{\"unixtime\": 1795000700, \"ch1\": \"CH1 late\"}");
    for (int i = 1; i <= 6; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 1, "polling resumed within half an hour: %s", keys);
    free(keys);
}

Test(resilience, alarms_after_installation_are_sent_however_late_the_first_poll,
     .fini = teardown, .timeout = 180)
{
    /* 16 devices, runs every 5 minutes, 11 routine calls an hour: calls at
     * 0, 5, ..., 50 min, then from 65 min on. The last device is first
     * polled 85 minutes after installation, when its alarm is over an hour
     * old, and the first one (polled before its alarm) again at 90. */
    start(16, T0 + 120, false);
    for (int i = 0; i <= 18; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 16, "%s", keys);
    free(keys);
}

Test(resilience, a_discovery_reply_without_devices_keeps_the_known_ones, .fini = teardown,
     .timeout = 120)
{
    start(3, T0 - 60, false);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    sim_fault(&R.sim, "current", 200, 1, "{\"devices\": []}");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 600, &err), 0);
    cr_assert(strstr(err, "listed no devices"), "%s", err);
    free(err);
    cr_assert_eq(relay_run_at(&R, T0 + 900, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 3, "%s", keys);
    free(keys);
}

Test(resilience, events_queued_for_a_renamed_receiver_are_not_forgotten_silently,
     .fini = teardown, .timeout = 120)
{
    start(1, T0 - 60, false);
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    hooksink_clear(R.hook); /* the failed attempt */
    relay_config(&R, NULL,
                 "  - name: hook-renamed\n"
                 "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: \"Bearer t0ken\"}}\n");
    hooksink_set_status(R.hook, 200);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 300, &err), 0);
    cr_assert(strstr(err, "1 queued event for receiver 'hook', which is no longer configured"),
              "%s", err);
    free(err);
    /* Configured again, the receiver gets its event. */
    relay_config(&R, NULL, NULL);
    cr_assert_eq(relay_run_at(&R, T0 + 600, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 1, "%s", keys);
    free(keys);
}

Test(resilience, more_entries_than_the_platform_keeps_are_reported_and_keys_stay_bounded,
     .fini = teardown, .timeout = 120)
{
    start(1, T0 - 60, false);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    for (int i = 0; i < 21; i++) {
        char alert[128];
        snprintf(alert, sizeof alert, "{\"unixtime\": %lld, \"ch1\": \"CH1 burst %d\"}",
                 T0 + 10 + i, i);
        sim_add_alert(&R.sim, "5214A000", alert);
    }
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 300, &err), 0);
    cr_assert(strstr(err, "may have been lost: a gap event is sent"), "%s", err);
    free(err);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    /* What the platform still had, once, and a gap event that names the
     * span: from the last look to the oldest entry still kept. */
    cr_assert_eq(n, 1 + 20 + 1, "%s", keys);
    char gap_key[64];
    snprintf(gap_key, sizeof gap_key, "5214A000/%lld/gap\n", T0 + 11);
    cr_assert(strstr(keys, gap_key), "%s", keys);
    free(keys);
    cr_assert_eq(relay_run_at(&R, T0 + 600, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1 + 1, "the gap is reported once");
    char *state = read_file_str(R.state_path);
    cr_assert_eq(occurrences(state, "/ch1\""), 20, "only the keys of the 20 kept entries");
    free(state);
}

Test(resilience, a_receiver_that_asks_for_a_pause_gets_one, .fini = teardown, .timeout = 120)
{
    start(1, T0 - 60, false);
    hooksink_push_reply(R.hook, 429, "slow down", 600);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    cr_assert_eq(hooksink_count(R.hook), 1);
    /* The back-off alone would try again after a minute. */
    cr_assert_eq(relay_run_at(&R, T0 + 60, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 599, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1, "not before Retry-After");
    cr_assert_eq(relay_run_at(&R, T0 + 600, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 2);
}

/* Runs `wsrelay test-receiver NAME`. */
static int test_receiver(const char *name, char **out)
{
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", R.config_path, (char *)"test-receiver",
                    (char *)name, NULL};
    char *err = NULL;
    int status = run_cmd(out, &err, 30, argv, NULL);
    free(err);
    return status;
}

Test(resilience, test_receiver_sends_a_marked_message_and_shows_the_answer, .fini = teardown,
     .timeout = 60)
{
    start(1, 0, false);
    char *out = NULL;
    cr_assert_eq(test_receiver("hook", &out), 0, "%s", out);
    cr_assert(strstr(out, "receiver hook (webhook): test notification accepted"), "%s", out);
    cr_assert(strstr(out, "answered 200: ok"), "%s", out);
    free(out);
    struct hook_request *rq = hooksink_request(R.hook, 0);
    cr_assert_not_null(rq);
    struct json_object *doc = json_tokener_parse(rq->body), *flag;
    cr_assert_not_null(doc, "%s", rq->body);
    cr_assert(json_object_object_get_ex(doc, "test", &flag) && json_object_get_boolean(flag),
              "%s", rq->body);
    json_object_put(doc);
    cr_assert(strstr(rq->body, "TEST: this is a test notification"), "%s", rq->body);
    hook_request_free(rq);

    hooksink_push_reply(R.hook, 404, "no such hook", 0);
    cr_assert_eq(test_receiver("hook", &out), 1);
    cr_assert(strstr(out, "NOT accepted"), "%s", out);
    cr_assert(strstr(out, "answered 404: no such hook"), "%s", out);
    free(out);

    cr_assert_eq(test_receiver("nobody", &out), 2);
    free(out);
    cr_assert_null(read_file_str(R.state_path), "a test touches no state");
}

/* metrics_file: the counters of the runs so far, written after each run. */
Test(resilience, the_metrics_file_counts_calls_events_and_messages, .fini = teardown,
     .timeout = 120)
{
    start(2, T0 - 60, true);
    char *conf = read_file_str(R.config_path);
    char *with = xasprintf("metrics_file: %s/wsrelay.prom\n%s", R.dir, conf);
    write_file(R.config_path, with);
    free(with);
    free(conf);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1); /* the refused device */
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 1); /* the other; the webhook fails */
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 600, NULL), 0); /* delivered on the retry */
    char *path = xasprintf("%s/wsrelay.prom", R.dir);
    char *text = read_file_str(path);
    cr_assert_not_null(text);
    char want[256];
    static const char *const lines[] = {
        /* discovery at T0 and T0+600; the refused device, then the other twice */
        "wsrelay_platform_calls_total{login=\"" RELAY_LOGIN "\",op=\"current\",result=\"ok\"} 2\n",
        "wsrelay_platform_calls_total{login=\"" RELAY_LOGIN "\",op=\"alert\",result=\"error\"} 1\n",
        "wsrelay_platform_errors_total{login=\"" RELAY_LOGIN "\",op=\"alert\",code=\"400\"} 1\n",
        "wsrelay_platform_calls_total{login=\"" RELAY_LOGIN "\",op=\"alert\",result=\"ok\"} 2\n",
        "wsrelay_events_total{outcome=\"routed\"} 1\n",
        "wsrelay_notifications_total{receiver=\"hook\",outcome=\"failed\"} 1\n",
        "wsrelay_notifications_total{receiver=\"hook\",outcome=\"sent\"} 1\n",
        "wsrelay_notifications_total{receiver=\"log\",outcome=\"sent\"} 1\n",
        "wsrelay_outbox_events{receiver=\"hook\"} 0\n",
        "wsrelay_last_run_success 1\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert(strstr(text, lines[i]), "missing %s in\n%s", lines[i], text);
    snprintf(want, sizeof want, "wsrelay_last_success_timestamp_seconds %lld\n", T0 + 600);
    cr_assert(strstr(text, want), "%s", text);
    free(text);
    free(path);
}

/* Three devices on the account "lab" whose `devices:` and what follows are
 * `devices_yaml`; runs 310 s apart, about one call each, 11 an hour at
 * most. Fills calls[] with each device's alert calls. */
static void poll_three(const char *devices_yaml, int runs, int calls[3])
{
    start(3, 0, false);
    char *accounts = xasprintf("  - name: lab\n"
                               "    base_url: @BASE_URL@\n"
                               "    api_key: \"${TEST_API_KEY}\"\n"
                               "    login_id: " RELAY_LOGIN "\n"
                               "    login_pass_file: pass.txt\n"
                               "%s",
                               devices_yaml);
    relay_config(&R, accounts, NULL);
    free(accounts);
    for (int i = 0; i < runs; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 310LL, NULL), 0);
    calls[0] = alert_calls_to("5214A000");
    calls[1] = alert_calls_to("5214A001");
    calls[2] = alert_calls_to("5214A002");
    cr_assert_leq(max_alert_calls_per_hour(), 11, "routine polling kept the reserve");
}

/* A device listed with priority 3 is looked at three times as often as
 * each of the two others, within the same budget: 46 calls in 50 runs. */
Test(resilience, a_device_of_priority_three_is_polled_three_times_as_often, .fini = teardown,
     .timeout = 120)
{
    int n[3];
    poll_three("    devices:\n"
               "      - serial: 5214A000\n"
               "      - {serial: 5214A001, priority: 3}\n"
               "      - serial: 5214A002\n",
               50, n);
    cr_assert(n[0] + n[1] + n[2] >= 45 && n[0] + n[1] + n[2] <= 47, "%d %d %d", n[0], n[1],
              n[2]);
    cr_assert(n[1] >= 25 && n[1] <= 30, "%d %d %d", n[0], n[1], n[2]);
    cr_assert(n[0] >= 8 && n[0] <= 10 && n[2] >= 8 && n[2] <= 10, "%d %d %d", n[0], n[1], n[2]);
}

/* Discovered devices take their priority from the account's priorities:
 * over two simulated hours, the device whose serial matches the glob is
 * looked at about three times as often as each of the two others. */
Test(resilience, priorities_by_glob_apply_to_discovered_devices, .fini = teardown, .timeout = 120)
{
    int n[3];
    poll_three("    devices: auto\n"
               "    priorities: [{serial: \"*01\", priority: 3}]\n",
               24, n);
    cr_assert(n[0] + n[1] + n[2] >= 20 && n[0] + n[1] + n[2] <= 24, "%d %d %d", n[0], n[1],
              n[2]);
    cr_assert(n[1] >= 2 * n[0] && n[1] >= 2 * n[2], "%d %d %d", n[0], n[1], n[2]);
    cr_assert(n[0] >= 3 && n[2] >= 3, "the others are still looked at: %d %d %d", n[0], n[1],
              n[2]);
}

/* On a device's first poll, a full page newer than the catch_up horizon
 * means entries since the horizon may have been lost: a gap event says so
 * (entries older than the horizon were never to be sent). */
Test(resilience, a_full_first_page_within_catch_up_gives_a_gap, .fini = teardown, .timeout = 120)
{
    start(1, 0, false);
    for (int i = 0; i < 25; i++) {
        char alert[128];
        snprintf(alert, sizeof alert, "{\"unixtime\": %lld, \"ch1\": \"CH1 burst %d\"}",
                 T0 - 1500 + 60 * i, i);
        sim_add_alert(&R.sim, "5214A000", alert);
    }
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 0);
    cr_assert(strstr(err, "20 new entries on the first poll"), "%s", err);
    free(err);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 20 + 1, "%s", keys);
    char gap_key[64];
    snprintf(gap_key, sizeof gap_key, "5214A000/%lld/gap\n", T0 - 1500 + 60 * 5);
    cr_assert(strstr(keys, gap_key), "%s", keys);
    free(keys);
}

/* A full first page that reaches back past the horizon lost nothing that
 * was to be sent: no gap. */
Test(resilience, a_full_first_page_older_than_catch_up_gives_no_gap, .fini = teardown,
     .timeout = 120)
{
    start(1, 0, false);
    for (int i = 0; i < 25; i++) {
        char alert[128];
        snprintf(alert, sizeof alert, "{\"unixtime\": %lld, \"ch1\": \"CH1 old %d\"}",
                 T0 - 7200 + 200 * i, i);
        sim_add_alert(&R.sim, "5214A000", alert);
    }
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_null(strstr(keys, "/gap"), "%s", keys);
    free(keys);
}
