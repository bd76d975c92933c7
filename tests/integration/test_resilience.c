/* `wsrelay run` where things go wrong or are unusual: accounts sharing a
 * login ID, devices the platform refuses, a clock that jumped, more devices
 * than the budget looks at in an hour, a discovery reply without devices,
 * a receiver renamed with events queued, and more entries between two
 * polls than the platform keeps. */
#include "proc.h"
#include "relay.h"
#include "state.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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
    relay_scenario_open(&b, T0);
    for (int i = 0; i < n; i++) {
        buf_printf(&b, "%s{\"serial\": \"5214A0%02d\", \"model\": \"TR-72A2\", \"name\": \"F%d\"",
                   i ? "," : "", i, i);
        if (i == 0 && refuse_first)
            buf_puts(&b, ", \"alert_supported\": false");
        if (alert_at)
            buf_printf(&b,
                       ", \"alerts\": [{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit "
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
        struct json_object *c = json_object_array_get_idx(calls, i), *op = NULL;
        if (json_object_object_get_ex(c, "serial", &v) && v &&
            strcmp(json_object_get_string(v), serial) == 0 &&
            json_object_object_get_ex(c, "op", &op) && !strcmp(json_object_get_string(op), "alert"))
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

/* Two accounts of one login ID that both want every device: the login's
 * pool holds each device once, so the first polls (one a run, from the
 * first run on) make one call per device, not two. */
Test(resilience, a_device_two_accounts_want_is_polled_once, .fini = teardown, .timeout = 60)
{
    start(4, T0 - 60, false);
    relay_config(&R,
                 "  - name: all\n"
                 "    base_url: @BASE_URL@\n"
                 "    api_key: \"${TEST_API_KEY}\"\n"
                 "    login_id: " RELAY_LOGIN "\n"
                 "    login_pass_file: pass.txt\n"
                 "  - name: all-again\n"
                 "    base_url: @BASE_URL@\n"
                 "    api_key: \"${TEST_API_KEY}\"\n"
                 "    login_id: " RELAY_LOGIN "\n"
                 "    login_pass_file: pass.txt\n",
                 NULL);
    static const char *const serials[] = {"5214A000", "5214A001", "5214A002", "5214A003"};
    /* A run a minute until every device had its first poll (four runs; ten
     * at most), before the round robin could come back to the first. */
    size_t polled = 0;
    for (int i = 0; i < 10 && polled < 4; i++) {
        cr_assert_eq(relay_run_at(&R, T0 + i * 60, NULL), 0);
        polled = 0;
        for (size_t k = 0; k < 4; k++)
            polled += alert_calls_to(serials[k]) > 0;
    }
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(alert_calls_to(serials[i]), 1, "%s", serials[i]);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 4, "every device once:\n%s", keys);
    free(keys);
}

/* The events of kind "relay" the webhook got, as one text of their
 * conditions and texts. */
static char *relay_events_text(void)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        if (strstr(rq->body, "\"kind\":\"relay\"") || strstr(rq->body, "\"kind\": \"relay\""))
            buf_printf(&b, "%s\n", rq->body);
        hook_request_free(rq);
    }
    return buf_steal(&b);
}

/* A device the platform refuses is asked again after 15 minutes, then an
 * hour; the third refusal in a row parks it (asked every 6 hours) and a
 * relay event says so. The budget it does not use goes to the others. */
Test(resilience, a_refused_device_is_confirmed_then_parked_and_frees_the_budget, .fini = teardown,
     .timeout = 180)
{
    start(2, T0 - 60, true);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1, "the first refusal is a failure");
    cr_assert(strstr(err, "refused (1 in a row)"), "%s", err);
    cr_assert(strstr(err, "asked again in 15m"), "%s", err);
    free(err);
    for (int i = 1; i <= 12; i++)
        relay_run_at(&R, T0 + i * 300, NULL);
    cr_assert_eq(alert_calls_to("5214A000"), 2, "asked again after 15 minutes, then waits an hour");
    /* 13 runs in an hour: 11 calls, the twelfth kept for an urgent look. */
    cr_assert_geq(alert_calls_to("5214A001"), 9, "the budget goes to the working device");
    char *relay = relay_events_text();
    cr_assert_eq(strstr(relay, "devices-refused"), NULL, "parked too soon: %s", relay);
    free(relay);
    cr_assert_eq(relay_run_at(&R, T0 + 900 + 3600, &err), 1);
    cr_assert(strstr(err, "refused 3 times in a row"), "%s", err);
    cr_assert(strstr(err, "exclude"), "the log says what to do: %s", err);
    free(err);
    cr_assert_eq(alert_calls_to("5214A000"), 3);
    relay = relay_events_text();
    cr_assert(strstr(relay, "devices-refused"), "no relay event: %s", relay);
    cr_assert(strstr(relay, "5214A000 (lab)"), "%s", relay);
    free(relay);
    cr_assert_eq(relay_run_at(&R, T0 + 4500 + 6 * 3600 - 300, NULL), 0);
    cr_assert_eq(alert_calls_to("5214A000"), 3, "parked for 6 hours");
    cr_assert_eq(relay_run_at(&R, T0 + 4500 + 6 * 3600, NULL), 1, "asked again after 6 hours");
    cr_assert_eq(alert_calls_to("5214A000"), 4);
}

/* A platform that answers 400 for every device for half an hour (a
 * glitch) delays their alerts by minutes; it neither parks the devices
 * nor loses an alert. An alert every 10 minutes for 3 hours, runs every 5
 * minutes. */
Test(resilience, a_transient_400_delays_but_loses_nothing, .fini = teardown, .timeout = 300)
{
    start(3, 0, false);
    int sent = 0;
    for (int i = 0; i <= 36; i++) {
        long long now = T0 + i * 300;
        if (i % 2 == 0 && i < 36) {
            char entry[128];
            for (int d = 0; d < 3; d++) {
                snprintf(entry, sizeof entry,
                         "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit "
                         "Exceeded %d\"}",
                         now - 30, i);
                char serial[16];
                snprintf(serial, sizeof serial, "5214A0%02d", d);
                sim_add_alert(&R.sim, serial, entry);
                sent++;
            }
        }
        if (i == 6)
            sim_fault(&R.sim, "alert", 400, 1000, NULL); /* every alert call for 30 min */
        if (i == 12)
            sim_fault(&R.sim, "alert", 400, 0, NULL);
        relay_run_at(&R, now, NULL);
    }
    for (int i = 37; i <= 60; i++)
        relay_run_at(&R, T0 + i * 300, NULL);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    size_t relay = occurrences(keys, "/relay\n");
    cr_expect_eq(n - relay, (size_t)sent, "every alert, once: %zu of %d\n%s", n - relay, sent,
                 keys);
    cr_expect_eq(occurrences(keys, "/gap"), 0, "%s", keys);
    free(keys);
    char *events = relay_events_text();
    cr_expect_eq(strstr(events, "devices-refused"), NULL, "parked by a glitch: %s", events);
    free(events);
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

Test(resilience, alarms_after_installation_are_sent_however_late_the_first_poll, .fini = teardown,
     .timeout = 180)
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

Test(resilience, events_queued_for_a_renamed_receiver_are_not_forgotten_silently, .fini = teardown,
     .timeout = 120)
{
    start(1, T0 - 60, false);
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    hooksink_clear(R.hook); /* the failed attempt */
    relay_config(
        &R, NULL,
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
    /* Only the keys of the 20 kept entries, wherever they are kept (the
     * state file's journal or the device's file). */
    struct state *s = NULL;
    struct err e = {{0}};
    cr_assert_eq(state_peek(&s, R.state_path, &e), 0, "%s", e.msg);
    cr_expect_eq(state_seen_count(s, "5214A000"), 20, "only the keys of the 20 kept entries");
    for (long long t = T0 + 11; t <= T0 + 30; t++)
        cr_expect(state_seen(s, "5214A000", t, "ch1"), "%lld", t);
    cr_expect_not(state_seen(s, "5214A000", T0 + 10, "ch1"), "left the log: forgotten");
    cr_expect_not(state_seen(s, "5214A000", T0 - 60, "ch1"), "left the log: forgotten");
    cr_expect_eq(state_seen_floor(s, "5214A000"), T0 + 11);
    state_close(s);
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

/* A webhook that takes longer than the receiver's `timeout:` to answer is
 * cut at that time: the delivery fails, the event stays queued, the run
 * goes on. (Before, every HTTP receiver had a fixed 30 s, and this sink's
 * 9 s answer would have been taken.) */
Test(resilience, a_slow_webhook_is_cut_at_the_receivers_timeout, .fini = teardown, .timeout = 120)
{
    start(1, T0 - 60, false);
    relay_config(&R, NULL,
                 "  - name: hook\n"
                 "    webhook: {url: \"@HOOK_URL@\"}\n"
                 "    timeout: 5s\n"
                 "  - name: log\n"
                 "    file: {path: \"@OUT@\"}\n");
    hooksink_set_delay_ms(R.hook, 9000);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1, "stderr:\n%s", err);
    clock_gettime(CLOCK_MONOTONIC, &b);
    cr_assert_lt(b.tv_sec - a.tv_sec, 9, "the run took %ld s", (long)(b.tv_sec - a.tv_sec));
    cr_assert(strstr(err, "receiver 'hook' (webhook): POST http://127.0.0.1:"), "%s", err);
    cr_assert(strstr(err, "no complete answer within 5 s (the receiver's timeout); 1 event kept "
                          "for a later run"),
              "%s", err);
    free(err);
    char *out = read_file_str(R.out_path);
    cr_assert(out && strstr(out, "5214A000"), "the file receiver still got the event");
    free(out);
    hooksink_set_delay_ms(R.hook, 0);
    cr_assert_eq(relay_run_at(&R, T0 + 60, NULL), 0);
    cr_assert_eq(hooksink_wait(R.hook, 2, 1000), 2, "delivered on the next run");
}

/* Runs `wsrelay test-receiver NAME`. */
static int test_receiver(const char *name, char **out)
{
    char *argv[] = {(char *)WSRELAY_BIN,     (char *)"-c", R.config_path,
                    (char *)"test-receiver", (char *)name, NULL};
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
    cr_assert(json_object_object_get_ex(doc, "test", &flag) && json_object_get_boolean(flag), "%s",
              rq->body);
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
                               "    signals: false\n" /* the round robin's arithmetic */
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
    cr_assert(n[0] + n[1] + n[2] >= 45 && n[0] + n[1] + n[2] <= 47, "%d %d %d", n[0], n[1], n[2]);
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
    cr_assert(n[0] + n[1] + n[2] >= 20 && n[0] + n[1] + n[2] <= 24, "%d %d %d", n[0], n[1], n[2]);
    cr_assert(n[1] >= 2 * n[0] && n[1] >= 2 * n[2], "%d %d %d", n[0], n[1], n[2]);
    cr_assert(n[0] >= 3 && n[2] >= 3, "the others are still looked at: %d %d %d", n[0], n[1], n[2]);
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

/* An alert-log reply of device 5214A000 holding entries `from` to `to`
 * (entry k at T0 - 3600 + k * 60), newest first, as the platform sends
 * it. */
static char *page_of(int from, int to)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"remote-serial\": \"5214A000\", \"remote-model\": \"TR-72A2\", "
                 "\"remote-name\": \"F0\", \"base-serial\": \"5214A000\", \"base-model\": "
                 "\"TR-72A2\", \"base-name\": \"F0\", \"time-diff\": \"540\", \"std-bias\": \"0\", "
                 "\"dst-flg\": \"0\", \"dst-bias\": \"60\", \"channel\": [], \"alert-logs\": [");
    for (int k = to; k >= from; k--)
        buf_printf(&b, "%s{\"unixtime\": \"%lld\", \"ch1\": \"CH1 Upper Limit Exceeded %d\"}",
                   k == to ? "" : ", ", T0 - 3600 + k * 60LL, k);
    buf_puts(&b, "]}");
    return buf_steal(&b);
}

/* A lagging copy of the platform serves an older page of a device's log:
 * the entries that had scrolled out of the log since (and whose keys were
 * forgotten) are not sent again, and no gap is reported. */
Test(resilience, an_older_page_brings_nothing_back, .fini = teardown, .timeout = 120)
{
    start(1, 0, false);
    char entry[128];
    for (int k = 1; k <= 25; k++) {
        snprintf(entry, sizeof entry,
                 "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit "
                 "Exceeded %d\"}",
                 T0 - 3600 + k * 60LL, k);
        sim_add_alert(&R.sim, "5214A000", entry);
        if (k == 20)
            cr_assert_eq(relay_run_at(&R, T0 - 3600 + 20 * 60 + 10, NULL), 0);
    }
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0); /* entries 6..25: 21..25 are new */
    size_t n, before;
    char *keys = relay_hook_keys(&R, &before);
    cr_assert_eq(before - occurrences(keys, "/gap"), 25, "%s", keys);
    size_t gaps = occurrences(keys, "/gap"); /* a full page on the first look */
    free(keys);
    char *old = page_of(1, 20);
    sim_fault(&R.sim, "alert", 200, 1, old);
    free(old);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 600, &err), 0);
    cr_expect(strstr(err, "older than entries already handled"), "%s", err);
    free(err);
    keys = relay_hook_keys(&R, &n);
    cr_expect_eq(n, before, "sent again:\n%s", keys);
    cr_expect_eq(occurrences(keys, "/gap"), gaps, "%s", keys);
    free(keys);
}

/* A state file that grew past the size a save may write (a receiver that
 * failed for long, a large outbox.max_items) is brought back under it on
 * the next save: the oldest events waiting for the failing receiver are
 * given up, and a relay event to the other receiver says so. Before, the
 * file kept growing until the loader refused it and every run failed. */
Test(resilience, a_state_over_its_size_limit_gives_up_the_oldest_events, .fini = teardown,
     .timeout = 300)
{
    start(1, T0 - 60, false);
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    char *text = read_file_str(R.state_path);
    struct json_object *doc = json_tokener_parse(text), *outbox, *item = NULL;
    free(text);
    cr_assert(json_object_object_get_ex(doc, "outbox", &outbox));
    for (size_t i = 0; i < json_object_array_length(outbox) && !item; i++) {
        struct json_object *it = json_object_array_get_idx(outbox, i), *rcpt;
        if (json_object_object_get_ex(it, "receiver", &rcpt) &&
            strcmp(json_object_get_string(rcpt), "hook") == 0)
            item = it;
    }
    cr_assert_not_null(item, "no item waits for the failing webhook");
    /* 40 MB of events waiting for the webhook, next tried in an hour. */
    struct json_object *big = json_object_new_array();
    size_t size = 0, n = 0;
    json_object_to_json_string_length(item, JSON_C_TO_STRING_PLAIN, &size);
    for (; n * (size + 1) < 40u * 1024 * 1024; n++) {
        struct json_object *copy = NULL;
        cr_assert_eq(json_object_deep_copy(item, &copy, NULL), 0);
        json_object_object_add(copy, "id", json_object_new_int64((int64_t)n + 1));
        json_object_object_add(copy, "queued_at", json_object_new_int64(T0 - 86400 + (int64_t)n));
        json_object_object_add(copy, "next_try", json_object_new_int64(T0 + 3600));
        json_object_array_add(big, copy);
    }
    json_object_object_add(doc, "outbox", big);
    json_object_object_add(doc, "next_id", json_object_new_int64((int64_t)n + 1));
    write_file(R.state_path, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
    json_object_put(doc);

    char *err = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = relay_run_at(&R, T0 + 600, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_log_info("a run that brought a %zu-item outbox under the limit took %.1f s", n,
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    cr_assert(status == 0 || status == 1, "exit %d: %.2000s", status, err);
    cr_expect(strstr(err, "reached its size limit"), "%.2000s", err);
    free(err);
    struct stat st;
    cr_assert_eq(stat(R.state_path, &st), 0);
    cr_expect_leq(st.st_size, 32 * 1024 * 1024, "the state is still %lld bytes",
                  (long long)st.st_size);
    char *log = read_file_str(R.out_path);
    cr_expect(log && strstr(log, "state file reached its size limit"), "no relay event");
    cr_expect(log && strstr(log, "receiver 'hook'"), "%.1000s", log);
    free(log);
    status = relay_run_at(&R, T0 + 1200, &err);
    cr_expect(status == 0 || status == 1, "exit %d: %.2000s", status, err);
    cr_expect_null(strstr(err, "corrupt"), "%.2000s", err);
    free(err);
}
