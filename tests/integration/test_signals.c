/* Signals and early warnings end to end: `wsrelay run` every simulated
 * minute against a simulator whose freezer uploads a reading a minute and
 * whose alert log lags the readings as the platform's does. A reading
 * beyond a configured limit reaches the webhook at once, its alert-log
 * alarm follows (marked with the warning it follows) and a mail receiver
 * threads it under the warning's mail. */
#include "relay.h"
#include "smtpd.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL
#define SERIAL "5214000A"
#define ALARM_AT (T0 + 300)   /* the first reading beyond -70 */
#define RECOVER_AT (T0 + 900) /* the first reading back below */
#define LOG_LAG 100           /* the platform logs an entry this long after */
#define LAST_RUN (T0 + 1800)

static struct relay R;
static struct smtpd S;

static void teardown(void)
{
    smtpd_stop(&S);
    relay_stop(&R);
}

TestSuite(signals, .fini = teardown, .timeout = 180);

/* The freezer's reading at `t`: -80 with a small wobble; from ALARM_AT -65
 * and then hovering at the limit (-69.8 .. -70.1: inside the bare limit
 * now and then, never by the margin); from RECOVER_AT -78 and back to -80. */
static const char *reading_at(long long t)
{
    static const char *const wobble[] = {"-80.1", "-79.9", "-80.0", "-80.2", "-79.8"};
    static const char *const hover[] = {"-69.9", "-70.1", "-70.0", "-69.8"};
    long i = (long)((t - T0) / 60);
    i = i < 0 ? -i : i;
    if (t < ALARM_AT || t >= RECOVER_AT + 120)
        return wobble[i % 5];
    if (t == ALARM_AT)
        return "-65.0";
    if (t < RECOVER_AT)
        return hover[i % 4];
    return "-78.0";
}

/* The freezer standalone, and as a remote unit behind a base unit. */
#define STANDALONE "{\"serial\": \"" SERIAL "\", \"model\": \"TR-71A\", \"name\": \"Freezer 3\","
#define REMOTE                                                                                     \
    "{\"serial\": \"" SERIAL "\", \"model\": \"RTR501B\", \"name\": \"Freezer 3\", \"num\": 1,"    \
    " \"base\": {\"serial\": \"5893C000\", \"model\": \"RTR500BW\", \"name\": \"Base 1\"},"

/* Opens a freezer's record: `head` (STANDALONE, REMOTE or the like), its
 * one channel, and its readings array. */
static void open_freezer(struct buf *b, const char *head)
{
    buf_puts(b, head);
    buf_puts(b, " \"time_diff\": 540,"
                " \"channels\": [{\"name\": \"Temperature\", \"unit\": \"°C\", \"value\": "
                "\"-80.0\"}],"
                " \"readings\": [");
}

/* The reading measured at `t` (from T0 - 1800, the first), uploaded 20 s
 * later. */
static void put_reading(struct buf *b, long long t, const char *value)
{
    buf_printf(b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
               t > T0 - 1800 ? "," : "", t + 20, t, value);
}

/* Closes the readings array and the record with its alert log: ch1's
 * `alarm` text at `alarm_at`, logged at `alarm_logged`, then, unless
 * `recovery` is NULL, its recovery text at `back_at`, logged at
 * `back_logged`. */
static void close_freezer(struct buf *b, const char *alarm, long long alarm_at,
                          long long alarm_logged, const char *recovery, long long back_at,
                          long long back_logged)
{
    buf_printf(b, "], \"alerts\": [{\"unixtime\": %lld, \"logged_at\": %lld, \"ch1\": \"%s\"}",
               alarm_at, alarm_logged, alarm);
    if (recovery)
        buf_printf(b, ",{\"unixtime\": %lld, \"logged_at\": %lld, \"ch1\": \"%s\"}", back_at,
                   back_logged, recovery);
    buf_puts(b, "]}");
}

/* Starts the simulator on `scen` (freed here) and writes the configuration
 * of `account_yaml` and `receivers` (relay.h). */
static void start_on(char *scen, const char *account_yaml, const char *receivers)
{
    relay_start(&R, scen);
    free(scen);
    relay_config(&R, account_yaml, receivers);
}

/* The freezer (`device`: STANDALONE or REMOTE) uploading every minute
 * (each reading 20 s after its measurement), with the alarm and recovery
 * its log holds once the platform has logged them, `lag` seconds after
 * their readings. */
static char *scenario_of(const char *device, long long lag)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    open_freezer(&b, device);
    for (long long t = T0 - 1800; t <= LAST_RUN; t += 60)
        put_reading(&b, t, reading_at(t));
    close_freezer(&b, "CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)", ALARM_AT, ALARM_AT + lag,
                  "CH1 Measurement Recovery -78.0°C", RECOVER_AT, RECOVER_AT + lag);
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

static char *scenario(void)
{
    return scenario_of(STANDALONE, LOG_LAG);
}

/* The account with signals on (the default), without and with limits. */
#define PLAIN_ACCOUNT                                                                              \
    "  - name: lab\n"                                                                              \
    "    base_url: @BASE_URL@\n"                                                                   \
    "    api_key: \"${TEST_API_KEY}\"\n"                                                           \
    "    login_id: " RELAY_LOGIN "\n"                                                              \
    "    login_pass_file: pass.txt\n"
static const char plain_account[] = PLAIN_ACCOUNT;
static const char account[] = PLAIN_ACCOUNT "    limits:\n"
                                            "      - {serial: \"5214*\", channel: 1, upper: -70}\n";

static void start(const char *receivers)
{
    start_on(scenario(), account, receivers);
}

/* Runs `wsrelay run` every minute from `from` to `to` (inclusive), 30 s
 * into the minute, after that minute's reading was uploaded (at 20 s). */
static void run_minutes(long long from, long long to)
{
    for (long long t = from; t <= to; t += 60) {
        char *err = NULL;
        int status = relay_run_at(&R, t + 30, &err);
        cr_assert_eq(status, 0, "run at T+%lld failed:\n%s", t - T0, err);
        free(err);
    }
}

/* The webhook's event whose id is `id`, as a new reference; NULL when none
 * arrived. */
static struct json_object *hook_event(const char *id)
{
    struct json_object *found = NULL;
    for (size_t i = 0; i < hooksink_count(R.hook) && !found; i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        struct json_object *doc = json_tokener_parse(rq->body), *events, *v;
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        for (size_t k = 0; k < json_object_array_length(events) && !found; k++) {
            struct json_object *ev = json_object_array_get_idx(events, k);
            if (json_object_object_get_ex(ev, "id", &v) && !strcmp(json_object_get_string(v), id))
                found = json_object_get(ev);
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
    return found;
}

static long long member_int(struct json_object *o, const char *key)
{
    struct json_object *v;
    cr_assert(json_object_object_get_ex(o, key, &v), "no '%s'", key);
    return json_object_get_int64(v);
}

static const char *member_str(struct json_object *o, const char *key)
{
    struct json_object *v;
    cr_assert(json_object_object_get_ex(o, key, &v), "no '%s'", key);
    return json_object_get_string(v);
}

static char *key_of(long long t, const char *kind)
{
    return xasprintf(SERIAL "/%lld/%s\n", t, kind);
}

/* The run at `t` (30 s into its minute), which must succeed and log `line`. */
static void run_logging(long long t, const char *line)
{
    char *err = NULL;
    int status = relay_run_at(&R, t + 30, &err);
    cr_assert_eq(status, 0, "run at T+%lld failed:\n%s", t - T0, err);
    cr_assert(strstr(err, line), "no \"%s\" in:\n%s", line, err);
    free(err);
}

Test(signals, a_reading_beyond_its_limit_is_announced_before_the_alert_log)
{
    start(NULL);
    run_minutes(T0 - 600, ALARM_AT - 60);
    /* The warning is out: the look for its log entry may wait behind
     * signals whose news is not (scheduler.h). */
    run_logging(ALARM_AT, "device " SERIAL ": signal (limit): its warning is out");
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    char *warning = key_of(ALARM_AT, "reading-ch1"), *alarm = key_of(ALARM_AT, "ch1");
    cr_assert_eq(occurrences(keys, warning), 1, "the run that saw -65.0 warned:\n%s", keys);
    cr_assert_eq(occurrences(keys, alarm), 0, "the platform had not logged it yet:\n%s", keys);
    free(keys);

    /* The alarm is logged 100 s later: a signal's poll that found nothing
     * looks once more 4 minutes later. */
    run_minutes(ALARM_AT + 60, ALARM_AT + 300);
    keys = relay_hook_keys(&R, &n);
    cr_assert_eq(occurrences(keys, alarm), 1, "within 5 minutes of the reading:\n%s", keys);
    free(keys);

    /* Hovering at the limit warns nobody again; the way back does, then the
     * platform's recovery follows. */
    run_minutes(ALARM_AT + 360, LAST_RUN);
    keys = relay_hook_keys(&R, &n);
    char *back = key_of(RECOVER_AT, "reading-ch1"), *recovery = key_of(RECOVER_AT, "ch1");
    cr_assert_eq(occurrences(keys, warning), 1, "%s", keys);
    cr_assert_eq(occurrences(keys, alarm), 1, "%s", keys);
    cr_assert_eq(occurrences(keys, back), 1, "%s", keys);
    cr_assert_eq(occurrences(keys, recovery), 1, "%s", keys);
    cr_assert_eq(n, 4, "nothing else was sent:\n%s", keys);
    free(keys);

    struct json_object *ev = hook_event(SERIAL "/1795000300/reading-ch1");
    cr_assert_not_null(ev);
    cr_expect_str_eq(member_str(ev, "kind"), "reading");
    cr_expect_str_eq(member_str(ev, "state"), "alarm");
    cr_expect_eq(member_int(ev, "channel"), 1);
    cr_expect_str_eq(member_str(ev, "value"), "-65.0°C");
    cr_expect_str_eq(member_str(ev, "limit"), "-70°C");
    cr_expect(strstr(member_str(ev, "text"), "current readings"), "%s", member_str(ev, "text"));
    struct json_object *v;
    cr_assert(json_object_object_get_ex(ev, "is_reading", &v));
    cr_expect(json_object_get_boolean(v));
    json_object_put(ev);

    ev = hook_event(SERIAL "/1795000300/ch1");
    cr_assert_not_null(ev);
    cr_expect_eq(member_int(ev, "early_warning"), ALARM_AT, "the alarm names the warning");
    json_object_put(ev);
    ev = hook_event(SERIAL "/1795000900/reading-ch1");
    cr_assert_not_null(ev);
    cr_expect_str_eq(member_str(ev, "state"), "recovered");
    json_object_put(ev);
    free(warning);
    free(alarm);
    free(back);
    free(recovery);
}

Test(signals, a_remote_units_alarm_logged_before_its_upload_is_read_in_the_run_that_sees_it)
{
    /* Its base unit's monitoring tick logged the alarm 10 s after the
     * measurement, before the upload (20 s) that shows it: the run that
     * sees the reading looks at once, not a run or two later. */
    start_on(scenario_of(REMOTE, 10), account, NULL);
    /* The round robin's looks (one every 5 minutes) fall on other minutes. */
    run_minutes(T0 - 540, ALARM_AT - 60);
    run_logging(ALARM_AT, "device " SERIAL ": signal (limit)");
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    char *warning = key_of(ALARM_AT, "reading-ch1"), *alarm = key_of(ALARM_AT, "ch1");
    cr_assert_eq(occurrences(keys, warning), 1, "%s", keys);
    cr_assert_eq(occurrences(keys, alarm), 1, "the alarm in the run that saw -65.0:\n%s", keys);
    free(keys);
    free(warning);
    free(alarm);
}

/* Two standalone freezers, nothing configured. The other one's log holds
 * an old alarm whose text teaches its upper limit, -70; this one's log is
 * empty until, from T0, it warms a degree a minute from -80 (it crosses -70
 * at ALARM_AT + 300) and the platform logs the alarm LOG_LAG later. */
#define OTHER "5214000B"
#define RAMP_CROSS (ALARM_AT + 300)
static char *likely_scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int d = 0; d < 2; d++) {
        char *head = xasprintf("%s{\"serial\": \"%s\", \"model\": \"TR-71A\", \"name\": "
                               "\"Freezer %d\",",
                               d ? "," : "", d ? OTHER : SERIAL, d + 3);
        open_freezer(&b, head);
        free(head);
        for (long long t = T0 - 1800; t <= LAST_RUN; t += 60) {
            long long warm = d == 0 && t >= T0 ? (t - T0) / 60 : 0;
            char value[16];
            snprintf(value, sizeof value, "%.1f",
                     -80.0 + (warm > 20 ? 20 : warm) + ((t / 60) % 3) * 0.1);
            put_reading(&b, t, value);
        }
        if (d == 0)
            close_freezer(&b, "CH1 Upper Limit Exceeded -69.9°C (limit -70.0°C)", RAMP_CROSS,
                          RAMP_CROSS + LOG_LAG, NULL, 0, 0);
        else
            close_freezer(&b, "CH1 Upper Limit Exceeded -69.5°C (limit -70.0°C)", T0 - 3 * 86400,
                          T0 - 3 * 86400 + 30, "CH1 Measurement Recovery -71.0°C",
                          T0 - 3 * 86400 + 600, T0 - 3 * 86400 + 630);
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

Test(signals, a_ramp_past_the_limit_its_fleet_makes_likely_is_looked_at_when_it_crosses)
{
    /* The ramp leaves its band minutes before the limit, and the looks
     * then find nothing; the reading past -70 (the other freezer's limit,
     * learnt from its first poll) asks for a look of its own, and the
     * alarm reaches the hook within minutes of being logged. */
    start_on(likely_scenario(), plain_account, NULL);
    run_minutes(T0 - 1200, RAMP_CROSS - 60);
    run_logging(RAMP_CROSS, "device " SERIAL ": signal (likely limit)");
    run_minutes(RAMP_CROSS + 60, RAMP_CROSS + LOG_LAG + 360);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    char *alarm = key_of(RAMP_CROSS, "ch1");
    cr_assert_eq(occurrences(keys, alarm), 1, "the alarm within minutes:\n%s", keys);
    free(keys);
    free(alarm);
}

/* The freezer as a remote unit on ten-minute uploads, among twelve quiet
 * ones of its base unit (so that the round robin comes round once an
 * hour), its upper limit -70 configured. From T0 it warms: -76.0, then
 * -71.6 at T0 + 600, 4.4 degrees in ten minutes, so that it crosses -70 at
 * FORESEEN_CROSS, which the platform logs at its base unit's next tick;
 * the upload that shows it (-68.0) comes at T0 + 1200. */
#define FORESEEN_CROSS (T0 + 818)
#define FORESEEN_LOGGED (T0 + 880)
static char *foreseen_scenario(void)
{
    static const char *const wobble[] = {"-80.1", "-79.9", "-80.0", "-80.2", "-79.8"};
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int d = 0; d < 13; d++) {
        char *head = d ? xasprintf(",{\"serial\": \"5820%04d\", \"model\": \"RTR501B\", "
                                   "\"name\": \"Fridge %d\", \"num\": %d, \"base\": "
                                   "{\"serial\": \"5893C000\", \"model\": \"RTR500BW\", "
                                   "\"name\": \"Base 1\"},",
                                   d, d, d + 1)
                       : xstrdup(REMOTE);
        open_freezer(&b, head);
        free(head);
        for (long long t = T0 - 12000; t <= T0 + 1800; t += 600) {
            const char *v = wobble[(t - T0 + 12000) / 600 % 5];
            if (d == 0 && t >= T0)
                v = t == T0 ? "-76.0" : t == T0 + 600 ? "-71.6" : "-68.0";
            buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                       t > T0 - 12000 ? "," : "", t + 20, t, v);
        }
        if (d == 0)
            close_freezer(&b, "CH1 Upper Limit Exceeded -69.9°C (limit -70.0°C)", FORESEEN_CROSS,
                          FORESEEN_LOGGED, NULL, 0, 0);
        else
            buf_puts(&b, "], \"alerts\": []}");
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

Test(signals, a_crossing_foreseen_between_two_uploads_is_looked_at_just_after_it)
{
    /* Ten-minute runs, then a run a minute. The reading at T0 + 600 is
     * near the limit: its look finds nothing, and so would a look once
     * more four minutes later. The way it goes, it crosses -70 before the
     * next upload: the look just after that finds the alarm, five
     * minutes before the upload could show it. */
    start_on(foreseen_scenario(), account, NULL);
    for (long long t = T0 - 12000; t < T0; t += 600)
        run_minutes(t, t);
    run_minutes(T0, T0 + 540);
    run_logging(T0 + 600, "device " SERIAL ": a limit will be crossed before its next upload");
    run_minutes(T0 + 660, FORESEEN_CROSS + 180);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    char *alarm = key_of(FORESEEN_CROSS, "ch1");
    cr_assert_eq(occurrences(keys, alarm), 1, "the alarm before the upload that shows it:\n%s",
                 keys);
    free(keys);
    free(alarm);
}

/* The freezer, its upper limit -70 configured, in a short excursion that
 * no reading shows beyond the limit: -70.5 at NEAR_AT, then -74.0 for nine
 * minutes, back to -80 at BACK_AT. The platform logged the alarm just
 * before NEAR_AT and the recovery just before BACK_AT. */
#define NEAR_AT (T0 + 300)
#define BACK_AT (NEAR_AT + 600)
static char *short_excursion_scenario(void)
{
    static const char *const wobble[] = {"-80.1", "-79.9", "-80.0", "-80.2", "-79.8"};
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    open_freezer(&b, STANDALONE);
    for (long long t = T0 - 1800; t <= LAST_RUN; t += 60)
        put_reading(&b, t,
                    t == NEAR_AT                 ? "-70.5"
                    : t > NEAR_AT && t < BACK_AT ? "-74.0"
                                                 : wobble[(t - T0 + 3600) / 60 % 5]);
    close_freezer(&b, "CH1 Upper Limit Exceeded -69.8°C (limit -70.0°C)", NEAR_AT - 20,
                  NEAR_AT - 10, "CH1 Measurement Recovery -70.2°C", BACK_AT - 30, BACK_AT - 20);
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

Test(signals, the_way_back_of_an_alarm_no_reading_showed_is_looked_at)
{
    /* -70.5 is nearer the limit than the band's edge: a look, which finds
     * the alarm. No reading is beyond -70, so no crossing will tell of the
     * way back; the readings back in their band do, since the log's newest
     * entry of the channel is that alarm, and the recovery follows. */
    start_on(short_excursion_scenario(), account, NULL);
    run_minutes(T0 - 1200, NEAR_AT - 60);
    run_logging(NEAR_AT, "device " SERIAL ": signal (band)");
    run_minutes(NEAR_AT + 60, BACK_AT - 60);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    char *alarm = key_of(NEAR_AT - 20, "ch1"), *recovery = key_of(BACK_AT - 30, "ch1");
    cr_assert_eq(occurrences(keys, alarm), 1, "the alarm, from the look near the limit:\n%s", keys);
    free(keys);
    run_logging(BACK_AT, "device " SERIAL ": signal (band)");
    run_minutes(BACK_AT + 60, BACK_AT + 120);
    keys = relay_hook_keys(&R, &n);
    cr_assert_eq(occurrences(keys, recovery), 1, "the recovery, from the way back:\n%s", keys);
    free(keys);
    free(alarm);
    free(recovery);
}

Test(signals, an_urgent_look_shows_the_last_reading_and_its_signal)
{
    start(NULL);
    run_minutes(T0 - 600, ALARM_AT - 60);
    char *err = NULL;
    /* The run that sees -65.0 raises the signal; the look is made in it. */
    cr_assert_eq(relay_run_with(&R, ALARM_AT + 30, SERIAL, &err), 0, "%s", err);
    cr_assert(strstr(err, "device " SERIAL ": an urgent look; its last reading: ch1 -65 (above "
                          "its limit); battery 5; a signal (limit)"),
              "%s", err);
    free(err);
}

/* A room logger whose ch1 crosses its upper limit at ALARM_AT while ch2,
 * above its own since the start, comes back inside the bare limit (69.9
 * against 70: not yet by the margin) in the same reading. */
static char *two_channel_scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_puts(&b, "{\"serial\": \"5214000C\", \"model\": \"TR-72A2\", \"name\": \"Room 1\","
                 " \"channels\": [{\"name\": \"T\", \"unit\": \"C\", \"value\": \"-80.0\"},"
                 " {\"name\": \"H\", \"unit\": \"%RH\", \"value\": \"75.0\"}],"
                 " \"readings\": [");
    for (long long t = T0 - 1800; t <= LAST_RUN; t += 60)
        buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\", \"%s\"]}",
                   t > T0 - 1800 ? "," : "", t + 20, t, t < ALARM_AT ? "-80.0" : "-65.0",
                   t < ALARM_AT ? "75.0" : "69.9");
    buf_puts(&b, "]}]}]}");
    return buf_steal(&b);
}

/* The warning of ch1 told people of its alarm, but nothing tells of ch2's
 * way back (the platform's recovery, which only the alert log carries):
 * the signal is not "told", and its look does not wait behind others. */
Test(signals, a_way_back_beside_an_announced_crossing_is_news_nobody_has)
{
    start_on(two_channel_scenario(),
             PLAIN_ACCOUNT "    limits:\n"
                           "      - {serial: \"5214*\", channel: 1, upper: -70}\n"
                           "      - {serial: \"5214*\", channel: 2, lower: 20, upper: 70}\n",
             NULL);
    run_minutes(T0 - 600, ALARM_AT - 60);
    run_logging(ALARM_AT, "device 5214000C: signal (limit): its alert log is read next");
}

/* The webhook got the alarm and the recovery of the alert log, and no
 * early warning. */
static void expect_only_the_log_at_the_hook(void)
{
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(occurrences(keys, "reading"), 0, "%s", keys);
    cr_assert_eq(n, 2, "the alarm and the recovery:\n%s", keys);
    free(keys);
}

Test(signals, early_warning_false_waits_for_the_alert_log)
{
    start(NULL);
    char *accounts = xasprintf("%s    early_warning: false\n", account);
    relay_config(&R, accounts, NULL);
    free(accounts);
    run_minutes(T0 - 600, ALARM_AT - 60);
    /* No warning told anyone: its look goes first. */
    run_logging(ALARM_AT, "device " SERIAL ": signal (limit): its alert log is read next");
    run_minutes(ALARM_AT + 60, LAST_RUN);
    expect_only_the_log_at_the_hook();
}

Test(signals, a_rule_routes_early_warnings_by_kind)
{
    start(NULL);
    char *rules = xasprintf("%s/rules.yaml", R.dir);
    write_file(rules, "- name: warnings-to-log\n"
                      "  match: {kind: reading}\n"
                      "  receivers: [log]\n"
                      "- name: the-rest\n"
                      "  receivers: [hook]\n");
    relay_config_extra(&R, account, NULL, "rules: @DIR@/rules.yaml\n");
    run_minutes(T0 - 600, LAST_RUN);
    expect_only_the_log_at_the_hook();
    char *log = read_file_str(R.out_path);
    cr_assert_not_null(log);
    cr_assert_eq(occurrences(log, "in the current readings"), 2, "%s", log);
    free(log);
    free(rules);
}

/* Twelve fridges uploading every minute; the first stops uploading at
 * SILENT_FROM for an hour. The platform logs its communication error 20
 * minutes after the last upload and the recovery at the first upload
 * after the outage, half a minute late. With `second`, the second fridge
 * stops too, at SECOND_FROM for 40 minutes, and the platform logs its
 * error and recovery alike. */
#define FRIDGES 12
#define SILENT_FROM (T0 + 60)
#define SILENT_UNTIL (T0 + 3660)
#define COMM_ERROR_AT (T0 + 60 + 1200)
#define SECOND_FROM (T0 + 4800)
#define SECOND_UNTIL (T0 + 7200)

/* A fridge's alert log: its communication error at `error_at`, its recovery
 * at `back`, logged 40 s late. */
static void put_outage(struct buf *b, long long error_at, long long back)
{
    buf_printf(b,
               ", \"alerts\": [{\"unixtime\": %lld, \"communication-status\": "
               "\"Communication Error\"}, {\"unixtime\": %lld, \"logged_at\": %lld, "
               "\"communication-status\": \"Communication Recovery\"}]",
               error_at, back, back + 40);
}

static char *silent_scenario_of(bool second)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int k = 0; k < FRIDGES; k++) {
        buf_printf(&b,
                   "%s{\"serial\": \"5214F0%02d\", \"model\": \"TR-72A2\", "
                   "\"channels\": [{\"name\": \"T\", \"unit\": \"C\", \"value\": \"5.0\"}], "
                   "\"readings\": [",
                   k ? "," : "", k);
        bool first = true;
        for (long long t = T0 - 4800; t <= (second ? SECOND_UNTIL : SILENT_UNTIL) + 1200; t += 60) {
            if ((k == 0 && t > SILENT_FROM && t < SILENT_UNTIL) ||
                (second && k == 1 && t > SECOND_FROM && t < SECOND_UNTIL))
                continue;
            buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                       first ? "" : ",", t + 10, t, t / 60 % 2 ? "5.0" : "5.1");
            first = false;
        }
        buf_puts(&b, "]");
        if (k == 0)
            put_outage(&b, COMM_ERROR_AT, SILENT_UNTIL);
        if (second && k == 1)
            put_outage(&b, SECOND_FROM + 1200, SECOND_UNTIL);
        buf_puts(&b, "}");
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

/* The time of the first run after which `key` had reached the webhook,
 * running every minute from `from`; 0 when it never did by `to`. */
static long long arrival_of(const char *key, long long from, long long to)
{
    for (long long t = from; t <= to; t += 60) {
        run_minutes(t, t);
        size_t n = 0;
        char *keys = relay_hook_keys(&R, &n);
        bool there = occurrences(keys, key) > 0;
        free(keys);
        if (there)
            return t;
    }
    return 0;
}

Test(signals, a_silent_device_is_looked_at_until_its_communication_error)
{
    /* With 12 devices the round robin looks at each every 80 minutes; the
     * silence makes wsrelay look again and again (each wait half the
     * silence so far) until the platform's error is there, and the
     * resumption looks once the recovery is logged, though the first look
     * after it finds only the outage's error. */
    start_on(silent_scenario_of(false), plain_account, NULL);
    /* An hour and a quarter before: the first polls leave the budget's
     * window before the outage. */
    run_minutes(T0 - 4500, T0);
    char *error = xasprintf("5214F000/%lld/communication-status\n", (long long)COMM_ERROR_AT);
    long long at = arrival_of(error, T0 + 60, SILENT_UNTIL);
    cr_assert_neq(at, 0, "the communication error never arrived");
    cr_expect_leq(at - COMM_ERROR_AT, 600, "it arrived %lld s after it was logged",
                  at - COMM_ERROR_AT);
    char *recovery = xasprintf("5214F000/%lld/communication-status\n", (long long)SILENT_UNTIL);
    at = arrival_of(recovery, at + 60, SILENT_UNTIL + 1200);
    cr_assert_neq(at, 0, "the recovery never arrived");
    cr_expect_leq(at - SILENT_UNTIL, 360, "it arrived %lld s after it was logged",
                  at - SILENT_UNTIL);
    struct json_object *stats = sim_stats(&R.sim), *per_hour, *calls;
    cr_assert(json_object_object_get_ex(stats, "max_alert_calls_per_hour", &per_hour));
    cr_assert(json_object_object_get_ex(per_hour, RELAY_LOGIN, &calls));
    cr_expect_leq(json_object_get_int(calls), 12);
    json_object_put(stats);
    free(error);
    free(recovery);
}

Test(signals, a_silence_is_looked_at_when_the_platform_logs_its_error_once_that_is_known)
{
    /* The first fridge's silence teaches how long after a last upload the
     * platform logs its communication error (its last reading, at
     * SILENT_FROM, was seen in the run 30 s later: 1170 s). The second
     * fridge's silence is looked at then, not after three minutes and
     * again and again, and its error arrives within minutes. */
    start_on(silent_scenario_of(true), plain_account, NULL);
    run_minutes(T0 - 4500, T0);
    bool learnt = false;
    long long first_look = 0;
    for (long long t = T0 + 60; t <= SECOND_FROM + 1800; t += 60) {
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, t + 30, &err), 0, "run at T+%lld:\n%s", t - T0, err);
        learnt = learnt || strstr(err, "the platform logged the communication error of device "
                                       "5214F000 1170 s after its last upload");
        if (!first_look && strstr(err, "device 5214F001: signal (silent)"))
            first_look = t;
        free(err);
    }
    cr_assert(learnt, "the delay was not learnt");
    cr_assert_geq(first_look, SECOND_FROM + 1200, "looked at T+%lld, before the error was logged",
                  first_look - T0);
    cr_assert_leq(first_look, SECOND_FROM + 1320, "looked at T+%lld", first_look - T0);
    char *error = xasprintf("5214F001/%lld/communication-status\n", (long long)SECOND_FROM + 1200);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_expect_gt(occurrences(keys, error), 0, "the second error never arrived:\n%s", keys);
    free(keys);
    free(error);
}

/* Twenty devices whose sensor fails and recovers with every upload: each
 * reading is a signal, twenty a minute against 12 alert calls an hour. */
static char *flapping_scenario(long long from, long long to)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int k = 0; k < 20; k++) {
        buf_printf(&b,
                   "%s{\"serial\": \"5214E0%02d\", \"model\": \"TR-72A2\", "
                   "\"channels\": [{\"name\": \"T\", \"unit\": \"C\", \"value\": \"5.0\"}], "
                   "\"readings\": [",
                   k ? "," : "", k);
        for (long long t = from; t <= to; t += 60)
            buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                       t > from ? "," : "", t + 10, t, t / 60 % 2 ? "5.0" : "Sensor Error");
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

/* The relay says so within half an hour (the budget runs out in the first
 * minutes; 15 minutes of waiting signals make the event), not hours
 * later, and once in three hours. */
Test(signals, signals_beyond_the_budget_say_so_within_minutes_and_once)
{
    long long from = T0 - 3 * 3600, first = 0;
    start_on(flapping_scenario(from, T0), plain_account, NULL);
    size_t relays = 0;
    for (long long t = from; t <= T0; t += 60) {
        run_minutes(t, t);
        relays = 0;
        for (size_t i = 0; i < hooksink_count(R.hook); i++) {
            struct hook_request *rq = hooksink_request(R.hook, i);
            relays += occurrences(rq->body, "read-only login ID");
            hook_request_free(rq);
        }
        if (relays && !first)
            first = t;
    }
    cr_assert(first, "never reported");
    cr_assert_leq(first - from, 1800, "reported after %lld min", (first - from) / 60);
    cr_assert_eq(relays, 1, "one relay event names the fix");
    struct json_object *stats = sim_stats(&R.sim), *per_hour, *calls;
    cr_assert(json_object_object_get_ex(stats, "max_alert_calls_per_hour", &per_hour));
    cr_assert(json_object_object_get_ex(per_hour, RELAY_LOGIN, &calls));
    cr_expect_leq(json_object_get_int(calls), 12);
    json_object_put(stats);
}

/* The Message-ID and In-Reply-To of the i-th mail. */
static void mail_ids(size_t i, char **id, char **reply_to)
{
    struct json_object *mail = smtpd_mail(&S, i), *headers, *list;
    cr_assert_not_null(mail, "no mail %zu", i);
    cr_assert(json_object_object_get_ex(mail, "headers", &headers));
    cr_assert(json_object_object_get_ex(headers, "message-id", &list));
    *id = xstrdup(json_object_get_string(json_object_array_get_idx(list, 0)));
    *reply_to = json_object_object_get_ex(headers, "in-reply-to", &list)
                    ? xstrdup(json_object_get_string(json_object_array_get_idx(list, 0)))
                    : NULL;
    json_object_put(mail);
}

/* start(NULL) with the test SMTP server and one email receiver, "mail",
 * that sends to it. */
static void start_mailing(void)
{
    start(NULL);
    smtpd_start(&S, R.dir, NULL);
    char *mail = xasprintf("  - name: mail\n"
                           "    email:\n"
                           "      host: 127.0.0.1\n"
                           "      port: %d\n"
                           "      starttls: \"off\"\n"
                           "      from: \"wsrelay <relay@example.org>\"\n"
                           "      to: \"oncall@example.org\"\n",
                           S.port);
    relay_config(&R, account, mail);
    free(mail);
}

Test(signals, mail_threads_the_alarm_under_its_early_warning)
{
    start_mailing();
    run_minutes(T0 - 600, LAST_RUN);
    cr_assert_eq(smtpd_count(&S), 4, "the warning, the alarm, the way back, the recovery");

    char *ids[4], *parents[4];
    for (size_t i = 0; i < 4; i++)
        mail_ids(i, &ids[i], &parents[i]);
    cr_expect(strstr(ids[0], ".5214000A.reading-ch1.1795000300"), "%s", ids[0]);
    cr_expect_null(parents[0], "the first warning starts a thread");
    cr_expect(strstr(ids[1], ".5214000A.ch1.1795000300"), "%s", ids[1]);
    cr_assert_not_null(parents[1]);
    cr_expect_str_eq(parents[1], ids[0], "the alarm follows its early warning");
    cr_expect(strstr(ids[2], ".5214000A.reading-ch1.1795000900"), "%s", ids[2]);
    cr_assert_not_null(parents[2]);
    cr_expect_str_eq(parents[2], ids[0], "the way back ends the warning");
    cr_assert_not_null(parents[3]);
    cr_expect_str_eq(parents[3], ids[1], "the recovery ends the alarm");
    for (size_t i = 0; i < 4; i++) {
        free(ids[i]);
        free(parents[i]);
    }
}

/* The warning's mail, then no run until the platform has logged both the
 * alarm and its recovery: the mail that carries them (with the way back)
 * follows the warning's, as the alarm's alone would. */
Test(signals, an_alarm_and_recovery_mail_threads_under_its_early_warning)
{
    start_mailing();
    run_minutes(T0 - 600, ALARM_AT);
    cr_assert_eq(smtpd_count(&S), 1, "the warning");
    run_minutes(RECOVER_AT + LOG_LAG + 60, LAST_RUN);
    size_t n = smtpd_count(&S);
    cr_assert_geq(n, 2);
    char *warning, *none, *id, *parent;
    mail_ids(0, &warning, &none);
    cr_expect(strstr(warning, ".5214000A.reading-ch1.1795000300"), "%s", warning);
    cr_expect_null(none, "the warning starts a thread");
    bool both = false;
    for (size_t i = 1; i < n; i++) {
        struct json_object *m = smtpd_mail(&S, i);
        const char *text = json_object_get_string(json_object_object_get(
            json_object_array_get_idx(json_object_object_get(m, "parts"), 0), "body"));
        both = both || (text && strstr(text, "CH1 Upper Limit Exceeded") &&
                        strstr(text, "CH1 Measurement Recovery"));
        json_object_put(m);
        mail_ids(i, &id, &parent);
        cr_assert_not_null(parent, "mail %zu (%s) threads under the warning", i, id);
        cr_expect_str_eq(parent, warning, "mail %zu (%s)", i, id);
        free(id);
        free(parent);
    }
    cr_assert(both, "one mail holds the alarm and its recovery");
    free(warning);
    free(none);
}

/* A mail of an alarm, its recovery and the way back carries three charts
 * of one channel: each has a file name and a Content-ID of its own, and
 * its alt text says what it shows in words. */
Test(signals, charts_of_one_channel_in_one_mail_have_names_of_their_own)
{
    start_mailing();
    run_minutes(T0 - 600, ALARM_AT);
    run_minutes(RECOVER_AT + LOG_LAG + 60, LAST_RUN);
    cr_assert_eq(smtpd_count(&S), 2);
    struct json_object *m = smtpd_mail(&S, 1), *parts = json_object_object_get(m, "parts");
    const char *html =
        json_object_get_string(json_object_object_get(json_object_array_get_idx(parts, 1), "body"));
    const char *want_names[] = {SERIAL "-ch1.png", SERIAL "-ch1-2.png", SERIAL "-ch1-3.png"};
    const char *want_ids[] = {"<chart-1@wsrelay>", "<chart-2@wsrelay>", "<chart-3@wsrelay>"};
    cr_assert_eq(json_object_array_length(parts), 5, "text, HTML, three charts: %s",
                 json_object_to_json_string(parts));
    for (size_t i = 0; i < 3; i++) {
        struct json_object *png = json_object_array_get_idx(parts, 2 + i);
        cr_assert_str_eq(json_object_get_string(json_object_object_get(png, "filename")),
                         want_names[i]);
        cr_assert_str_eq(json_object_get_string(json_object_object_get(png, "content_id")),
                         want_ids[i]);
    }
    cr_assert_null(strstr(html, "alt=\"▁"), "no sparkline as alt text: %s", html);
    const char *alts[] = {
        "alt=\"Chart of Freezer 3, Temperature, last ",
        "; upper limit -70 °C; alarm at 20:11\"",
        "; upper limit -70 °C; recovery at 20:21\"",
        "; upper limit -70 °C; back within the limit at 20:23\"",
    };
    for (size_t i = 0; i < 4; i++)
        cr_assert(strstr(html, alts[i]), "%s not in %s", alts[i], html);
    json_object_put(m);
}
