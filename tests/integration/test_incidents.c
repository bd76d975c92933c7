/* Incidents end to end: `wsrelay run` every simulated minute against a
 * simulator whose freezer goes above its limit for 50 minutes one night,
 * with a rule that repeats every 15 minutes and escalates after 20. The
 * on-call webhook gets the first notice, a reminder every 15 minutes with
 * the live reading and, at the recovery, one resolution with its record;
 * the manager's file receiver gets the escalation at 20 minutes and the
 * resolution. An acknowledgement stops reminders and escalation and is
 * announced; the platform's alarm after an early warning pages nobody; a
 * silence pages nobody until it ends; a receiver that fails for a while
 * gets each notice once. */
#include "proc.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL
#define SERIAL "5214000A"
#define ALARM_AT (T0 + 600)          /* the first reading above -70 */
#define RECOVER_AT (ALARM_AT + 3000) /* 50 minutes later, back below */
#define LOG_LAG 100                  /* the platform logs an entry this long after */
#define END (RECOVER_AT + 900)

static struct relay R;

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(incidents, .fini = teardown, .timeout = 300);

/* The freezer's reading at `t`: -80 with a wobble; from ALARM_AT a rise to
 * -64.5 at 20 minutes and a slow fall to -69 (never back inside by the
 * margin); from RECOVER_AT -78 and back to -80. */
static bool never_back; /* the freezer stays above its limit to the end */

static char *reading_at(long long t)
{
    static const char *const wobble[] = {"-80.1", "-79.9", "-80.0", "-80.2", "-79.8"};
    long i = (long)((t - T0) / 60);
    i = i < 0 ? -i : i;
    if (t < ALARM_AT || (!never_back && t >= RECOVER_AT + 120))
        return xstrdup(wobble[i % 5]);
    if (t >= RECOVER_AT)
        return xstrdup(never_back ? "-69.0" : "-78.0");
    long m = (long)((t - ALARM_AT) / 60);
    double v = m <= 20 ? -69.0 + 4.5 * m / 20.0 : -64.5 - 4.5 * (m - 20) / 30.0;
    return xasprintf("%.1f", v);
}

/* The scenario: the freezer standalone, uploading every minute (20 s
 * after each reading), its log holding the alarm and the recovery once
 * logged. */
static char *scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_puts(&b, "{\"serial\": \"" SERIAL "\", \"model\": \"TR-71A\", \"name\": \"Freezer 3\","
                 " \"time_diff\": 540, \"channels\": [{\"name\": \"Temperature\", \"unit\": "
                 "\"°C\", \"value\": \"-80.0\"}], \"readings\": [");
    for (long long t = T0 - 1800; t <= END; t += 60) {
        char *v = reading_at(t);
        buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                   t > T0 - 1800 ? "," : "", t + 20, t, v);
        free(v);
    }
    buf_printf(&b,
               "], \"alerts\": [{\"unixtime\": %lld, \"logged_at\": %lld, \"ch1\": \"CH1 Upper "
               "Limit Exceeded -69.0°C (limit -70.0°C)\"}",
               ALARM_AT, ALARM_AT + LOG_LAG);
    if (!never_back)
        buf_printf(&b,
                   ",{\"unixtime\": %lld, \"logged_at\": %lld, \"ch1\": \"CH1 Measurement "
                   "Recovery -78.0°C\"}",
                   RECOVER_AT, RECOVER_AT + LOG_LAG);
    buf_puts(&b, "]}");
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

#define ACCOUNT                                                                                    \
    "  - name: lab\n"                                                                              \
    "    base_url: @BASE_URL@\n"                                                                   \
    "    api_key: \"${TEST_API_KEY}\"\n"                                                           \
    "    login_id: " RELAY_LOGIN "\n"                                                              \
    "    login_pass_file: pass.txt\n"

/* The night's rule: the on-call webhook, reminders every 15 minutes, the
 * manager's file receiver after 20. */
static const char rules[] = "- name: freezers\n"
                            "  match: {device: \"Freezer*\"}\n"
                            "  receivers: [hook]\n"
                            "  severity: critical\n"
                            "  repeat: 15m\n"
                            "  escalate:\n"
                            "    - {after: 20m, receivers: [log]}\n";

/* Starts the night with incidents on, `account` (NULL: ACCOUNT). */
static void start(const char *account)
{
    char *scen = scenario();
    relay_start(&R, scen);
    free(scen);
    R.incidents = true;
    char *path = xasprintf("%s/rules.yaml", R.dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(rules, f);
    fclose(f);
    free(path);
    relay_config_extra(&R, account ? account : ACCOUNT, NULL, "rules: @DIR@/rules.yaml\n");
}

/* Runs `wsrelay run` every minute from `from` to `to` (inclusive), 30 s
 * into the minute, after that minute's reading was uploaded. */
static void run_minutes(long long from, long long to)
{
    for (long long t = from; t <= to; t += 60) {
        char *err = NULL;
        int status = relay_run_at(&R, t + 30, &err);
        cr_assert_eq(status, 0, "run at T+%lld failed:\n%s", t - T0, err);
        free(err);
    }
}

/* run_minutes for runs that may fail (a receiver that fails makes the
 * run fail, and the next one tries again). */
static void run_minutes_failing(long long from, long long to)
{
    for (long long t = from; t <= to; t += 60) {
        char *err = NULL;
        relay_run_at(&R, t + 30, &err);
        free(err);
    }
}

/* One message the webhook got about an incident: its notice, the
 * incident's id, the event's text and the snapshot. */
struct notice {
    char notice[32];
    char id[16];
    char *text;
    struct json_object *snap; /* a reference */
};

/* Every event the webhook got, in order: *n of them; free with
 * notices_free. An event outside an incident has notice "". */
static struct notice *notices(size_t *n)
{
    struct notice *out = NULL;
    *n = 0;
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        struct json_object *doc = json_tokener_parse(rq->body), *events, *v;
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        for (size_t k = 0; k < json_object_array_length(events); k++) {
            struct json_object *ev = json_object_array_get_idx(events, k), *inc = NULL;
            out = xreallocarray(out, *n + 1, sizeof *out);
            struct notice *nt = &out[(*n)++];
            memset(nt, 0, sizeof *nt);
            cr_assert(json_object_object_get_ex(ev, "text", &v));
            nt->text = xstrdup(json_object_get_string(v));
            if (json_object_object_get_ex(ev, "incident", &inc) && inc) {
                nt->snap = json_object_get(inc);
                cr_assert(json_object_object_get_ex(inc, "notice", &v));
                snprintf(nt->notice, sizeof nt->notice, "%s", json_object_get_string(v));
                cr_assert(json_object_object_get_ex(inc, "id", &v));
                snprintf(nt->id, sizeof nt->id, "%s", json_object_get_string(v));
            }
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
    return out;
}

static void notices_free(struct notice *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].text);
        json_object_put(v[i].snap);
    }
    free(v);
}

/* "opened reminder reminder ..." of the webhook so far. */
static char *notice_list(void)
{
    size_t n = 0;
    struct notice *v = notices(&n);
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "%s%s", i ? " " : "", *v[i].notice ? v[i].notice : "plain");
    notices_free(v, n);
    return buf_steal(&b);
}

static const char *snap_str(const struct notice *nt, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(nt->snap, key, &v), "no %s in the snapshot", key);
    return json_object_get_string(v);
}

/* The file receiver's text so far; caller frees. */
static char *log_text(void)
{
    FILE *f = fopen(R.out_path, "r");
    struct buf b;
    buf_init(&b, 0);
    if (f) {
        char chunk[4096];
        size_t got;
        while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
            buf_append(&b, chunk, got);
        fclose(f);
    }
    return buf_steal(&b);
}

/* Every line of the incident log (STATE.incidents/), month files in name
 * order; caller frees. */
static char *incident_log(void)
{
    char *dir = xasprintf("%s.incidents", R.state_path);
    struct buf b;
    buf_init(&b, 0);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "no incident log at %s", dir);
    struct dirent *de;
    char names[16][300];
    size_t n = 0;
    while ((de = readdir(d)) && n < 16)
        if (strstr(de->d_name, ".jsonl"))
            snprintf(names[n++], sizeof names[0], "%s", de->d_name);
    closedir(d);
    qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (size_t i = 0; i < n; i++) {
        char *path = xasprintf("%s/%s", dir, names[i]);
        FILE *f = fopen(path, "r");
        char chunk[4096];
        size_t got;
        while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
            buf_append(&b, chunk, got);
        if (f)
            fclose(f);
        free(path);
    }
    free(dir);
    return buf_steal(&b);
}

Test(incidents, an_alarm_nobody_acknowledges_is_repeated_escalated_and_resolved_once)
{
    start(NULL);
    run_minutes(T0 - 600, END);
    char *list = notice_list();
    /* the first notice, reminders at 15, 30 and 45 minutes (the alarm is
     * read a few minutes after its reading; the recovery comes at 50),
     * one resolution */
    cr_expect_str_eq(list, "opened reminder reminder reminder resolved", "%s", list);
    free(list);

    size_t n = 0;
    struct notice *v = notices(&n);
    cr_assert_eq(n, 5);
    cr_expect_str_eq(v[0].id, "1");
    cr_expect(strstr(v[0].text, "Upper Limit Exceeded"), "%s", v[0].text);
    cr_expect(strstr(v[1].text, "Reminder 1: incident 1 open for 15 min, not acknowledged. Now "),
              "%s", v[1].text);
    cr_expect(strstr(v[1].text, "(limit -70.0°C, peak "), "the live reading: %s", v[1].text);
    cr_expect(strstr(v[1].text, "wsrelay ack 1"), "%s", v[1].text);
    cr_expect(strstr(v[2].text, "Reminder 2: incident 1 open for 30 min"), "%s", v[2].text);
    cr_expect_str_eq(snap_str(&v[4], "peak"), "-64.5°C", "the farthest reading");
    cr_expect(strstr(v[4].text, "Incident 1: beyond its limit for 50 min, peak -64.5°C"), "%s",
              v[4].text);
    cr_expect(strstr(v[4].text, "nobody acknowledged it"), "%s", v[4].text);
    notices_free(v, n);

    /* the manager: the escalation at 20 minutes, then the resolution */
    char *text = log_text();
    cr_expect(strstr(text, "Escalated: incident 1 open for 20 min, nobody acknowledged it."), "%s",
              text);
    cr_expect_eq(occurrences(text, "Escalated:"), 1, "%s", text);
    cr_expect_eq(occurrences(text, "Incident 1: beyond its limit for 50 min"), 1, "%s", text);
    cr_expect_eq(occurrences(text, "Reminder"), 2, "reminders after the escalation only:\n%s",
                 text);
    free(text);

    /* the record: the incident log has the whole timeline, each step once */
    struct cmd_result r =
        wsrelay_cmd(30, "-c", R.config_path, "incidents", "--all", "--now", "1795004600", NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "resolved"), "%s", r.out);
    cmd_result_free(&r);
}

Test(incidents, an_acknowledgement_stops_reminders_and_escalation_and_is_announced)
{
    start(NULL);
    /* the incident opens when the alarm is read (about 4 minutes after
     * its reading), its first reminder 15 minutes later */
    run_minutes(T0 - 600, ALARM_AT + 21 * 60);
    char *list = notice_list();
    cr_assert_str_eq(list, "opened reminder", "%s", list);
    free(list);
    struct cmd_result r =
        wsrelay_cmd(30, "-c", R.config_path, "ack", "1", "--by", "night shift", "--note",
                    "moving the samples to freezer B", "--now", "1795001920", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "incident 1 acknowledged by night shift"), "%s", r.out);
    cmd_result_free(&r);
    /* a second acknowledgement says who had it */
    r = wsrelay_cmd(30, "-c", R.config_path, "ack", "1", NULL);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "acknowledged already, by night shift"), "%s", r.err);
    cmd_result_free(&r);

    run_minutes(ALARM_AT + 22 * 60, END);
    list = notice_list();
    cr_expect_str_eq(list, "opened reminder acknowledged resolved", "%s", list);
    free(list);
    size_t n = 0;
    struct notice *v = notices(&n);
    cr_assert_eq(n, 4);
    cr_expect(strstr(v[2].text, "Incident 1 acknowledged by night shift at "), "%s", v[2].text);
    cr_expect(strstr(v[2].text, ": moving the samples to freezer B"), "%s", v[2].text);
    cr_expect(strstr(v[3].text, "acknowledged by night shift at "), "the record says who: %s",
              v[3].text);
    notices_free(v, n);
    char *text = log_text();
    cr_expect_eq(occurrences(text, "Escalated"), 0, "acknowledged before 20 minutes:\n%s", text);
    cr_expect_eq(occurrences(text, "Reminder"), 0, "%s", text);
    free(text);
}

/* With the limit configured, the early warning of the readings opens the
 * incident; the platform's alarm that follows joins it and pages nobody,
 * and so does its recovery after the readings' way back. */
Test(incidents, the_platforms_alarm_after_an_early_warning_pages_nobody)
{
    start(ACCOUNT "    limits:\n"
                  "      - {serial: \"5214*\", channel: 1, upper: -70}\n");
    run_minutes(T0 - 600, ALARM_AT + 10 * 60);
    size_t n = 0;
    struct notice *v = notices(&n);
    cr_assert_eq(n, 1, "only the warning pages");
    cr_expect_str_eq(v[0].notice, "opened");
    cr_expect(strstr(v[0].text, "in the current readings"), "the early warning: %s", v[0].text);
    notices_free(v, n);
    run_minutes(ALARM_AT + 11 * 60, END);
    char *list = notice_list();
    cr_expect_str_eq(list, "opened reminder reminder reminder resolved", "%s", list);
    free(list);
    /* both platform entries were read, and joined: the incident log says so */
    char *log = incident_log();
    cr_expect_eq(occurrences(log, "\"what\":\"joined\""), 2, "%s", log);
    cr_expect_eq(occurrences(log, "\"what\":\"opened\""), 1, "%s", log);
    cr_expect_eq(occurrences(log, "\"what\":\"resolved\""), 1, "%s", log);
    free(log);
}

Test(incidents, a_silenced_alarm_pages_nobody_until_the_silence_ends)
{
    start(NULL);
    run_minutes(T0 - 600, T0 - 60);
    struct cmd_result r =
        wsrelay_cmd(30, "-c", R.config_path, "silence", "add", "Freezer*", "--for", "25m",
                    "--reason", "defrost", "--by", "alice", "--now", "1795000000", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cmd_result_free(&r);
    run_minutes(T0, T0 + 24 * 60);
    cr_expect_eq(hooksink_count(R.hook), 0, "nobody paged during the silence");
    /* the silence ends at T0 + 25 min with the incident still open: it
     * pages as if it had just opened, and repeats from then on */
    run_minutes(T0 + 25 * 60, END);
    char *list = notice_list();
    cr_expect_str_eq(list, "opened reminder reminder resolved", "%s", list);
    free(list);
    char *log = incident_log();
    cr_expect_eq(occurrences(log, "\"what\":\"silenced\""), 1, "%s", log);
    free(log);
}

/* A receiver that fails for a while gets each notice once, when it comes
 * back: each was in the state before it was sent. */
Test(incidents, a_failing_receiver_gets_each_notice_once_when_it_comes_back)
{
    start(NULL);
    run_minutes(T0 - 600, ALARM_AT + 10 * 60);
    hooksink_set_status(R.hook, 500);
    run_minutes_failing(ALARM_AT + 11 * 60, ALARM_AT + 31 * 60);
    hooksink_set_status(R.hook, 200);
    hooksink_clear(R.hook);
    run_minutes(ALARM_AT + 32 * 60, END + 3600);
    size_t n = 0;
    struct notice *v = notices(&n);
    /* the two reminders queued while it failed, then the third and the
     * resolution: nothing lost, nothing twice */
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "%s%s", i ? " " : "", v[i].notice);
    cr_expect_eq(occurrences(buf_str(&b), "reminder"), 3, "%s", buf_str(&b));
    cr_expect_eq(occurrences(buf_str(&b), "resolved"), 1, "%s", buf_str(&b));
    cr_expect_eq(occurrences(buf_str(&b), "opened"), 0, "%s", buf_str(&b));
    buf_free(&b);
    notices_free(v, n);
}

/* A freezer that never comes back: its incident closes after
 * incidents.max_open with a note to everyone told, and is then over. */
Test(incidents, an_incident_open_longer_than_max_open_closes_with_a_note)
{
    never_back = true;
    char *scen = scenario();
    never_back = false;
    relay_start(&R, scen);
    free(scen);
    R.incidents = true;
    char *path = xasprintf("%s/rules.yaml", R.dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("- name: freezers\n  receivers: [hook]\n", f);
    fclose(f);
    free(path);
    relay_config_extra(&R, ACCOUNT, NULL, "rules: @DIR@/rules.yaml\nincidents: {max_open: 1h}\n");
    run_minutes(T0 - 600, ALARM_AT + 90 * 60);
    char *list = notice_list();
    cr_expect_str_eq(list, "opened closed", "%s", list);
    free(list);
    size_t n = 0;
    struct notice *v = notices(&n);
    cr_assert_eq(n, 2);
    cr_expect(strstr(v[1].text, "Incident 1 closed after 1 h 00 min without a recovery: check the "
                                "device."),
              "%s", v[1].text);
    notices_free(v, n);
}

/* Runs killed (SIGKILL) at random moments through the night, each
 * followed by a clean one: every notice arrives, and a kill repeats at
 * most the one message it cut off, since each notice is in the state
 * before it is sent and each delivery is saved before the next. */
Test(incidents, kills_at_random_moments_repeat_at_most_the_message_in_flight)
{
    unsigned long long rng = 0x696e63696473ULL;
    start(NULL);
    hooksink_set_delay_ms(R.hook, 40);
    char **env = proc_environ_for_kills();
    size_t kills = 0;
    for (long long t = T0 - 600; t <= END; t += 60) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if (t >= ALARM_AT) {
            char when[32];
            snprintf(when, sizeof when, "%lld", t + 20);
            sim_set_clock(&R.sim, t + 20);
            char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", R.config_path, (char *)"run",
                            (char *)"--now",     when,         NULL};
            struct proc p;
            proc_start(&p, argv, env, R.dir);
            test_sleep_ms((int)((rng >> 8) % 60));
            if (proc_poll(&p) < 0)
                kill(p.pid, SIGKILL);
            kills += proc_wait(&p, 60) == 128 + SIGKILL;
            proc_stop(&p);
        }
        char *err = NULL;
        int status = relay_run_at(&R, t + 30, &err);
        cr_assert_eq(status, 0, "run at T+%lld failed:\n%s", t - T0, err);
        free(err);
    }
    proc_environ_free(env);
    size_t n = 0;
    struct notice *v = notices(&n);
    /* each notice once, a repeat only right after itself (the message a
     * kill cut off, sent again by the next run) */
    struct buf b;
    buf_init(&b, 0);
    size_t repeats = 0;
    for (size_t i = 0; i < n; i++) {
        bool again =
            i > 0 && !strcmp(v[i].notice, v[i - 1].notice) && !strcmp(v[i].text, v[i - 1].text);
        if (again)
            repeats++;
        else
            buf_printf(&b, "%s%s", b.len ? " " : "", v[i].notice);
    }
    cr_log_info("incidents: %zu runs killed, %zu messages repeated", kills, repeats);
    cr_expect_str_eq(buf_str(&b), "opened reminder reminder reminder resolved", "%s", buf_str(&b));
    cr_expect_leq(repeats, kills, "more than one message repeated per kill");
    cr_expect_geq(kills, 5, "too few runs were killed (%zu)", kills);
    buf_free(&b);
    notices_free(v, n);
    /* the timeline: each step once, whatever the kills wrote twice */
    char *log = incident_log();
    cr_expect_eq(occurrences(log, "\"what\":\"opened\""), 1, "%s", log);
    free(log);
}

/* A seven-hour excursion read every 10 minutes: the resolution's trend
 * (the mail's chart) starts before the alarm, not six hours before the
 * recovery as another message's would. */
Test(incidents, a_resolution_shows_the_whole_excursion)
{
    const long long back = ALARM_AT + 7 * 3600;
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_puts(&b, "{\"serial\": \"" SERIAL "\", \"model\": \"TR-71A\", \"name\": \"Freezer 3\","
                 " \"time_diff\": 540, \"channels\": [{\"name\": \"Temperature\", \"unit\": "
                 "\"°C\", \"value\": \"-80.0\"}], \"readings\": [");
    for (long long t = T0 - 3 * 3600; t <= back + 3600; t += 600)
        buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                   t > T0 - 3 * 3600 ? "," : "", t + 20, t,
                   t < ALARM_AT || t >= back ? "-80.0"
                   : t < ALARM_AT + 3 * 3600 ? "-66.0"
                                             : "-62.0");
    buf_printf(&b,
               "], \"alerts\": [{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded -66.0°C "
               "(limit -70.0°C)\"}, {\"unixtime\": %lld, \"ch1\": \"CH1 Measurement Recovery "
               "-80.0°C\"}]}]}]}",
               ALARM_AT, back);
    relay_start(&R, buf_str(&b));
    buf_free(&b);
    R.incidents = true;
    relay_config(&R, ACCOUNT, NULL);
    for (long long t = T0 - 600; t <= back + 1800; t += 600) {
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, t + 60, &err), 0, "%s", err);
        free(err);
    }
    /* the resolution at the webhook: its trend reaches back to the alarm */
    struct json_object *found = NULL;
    for (size_t i = 0; i < hooksink_count(R.hook) && !found; i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        struct json_object *doc = json_tokener_parse(rq->body), *events, *inc, *v;
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        for (size_t k = 0; k < json_object_array_length(events) && !found; k++) {
            struct json_object *ev = json_object_array_get_idx(events, k);
            if (json_object_object_get_ex(ev, "incident", &inc) &&
                json_object_object_get_ex(inc, "notice", &v) &&
                !strcmp(json_object_get_string(v), "resolved"))
                found = json_object_get(ev);
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
    cr_assert_not_null(found, "no resolution reached the webhook");
    struct json_object *trend = NULL, *since = NULL;
    cr_assert(json_object_object_get_ex(found, "trend", &trend) && trend, "no trend");
    cr_assert(json_object_object_get_ex(trend, "since", &since));
    cr_expect_leq(json_object_get_int64(since), ALARM_AT,
                  "the chart starts at %lld, after the alarm",
                  (long long)json_object_get_int64(since));
    json_object_put(found);
}

/* Reminders keep to their rule's `when:`: an incident opened inside the
 * window is not repeated outside it, and its resolution still reaches
 * everyone told. */
Test(incidents, reminders_keep_to_the_rules_time_windows)
{
    char *scen = scenario();
    relay_start(&R, scen);
    free(scen);
    R.incidents = true;
    char *path = xasprintf("%s/rules.yaml", R.dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    /* T0 is 11:06:40 UTC: the alarm is read about 11:21, its first
     * reminder would come at 11:36 */
    fputs("- name: freezers\n"
          "  receivers: [hook]\n"
          "  when: \"00:00-11:30\"\n"
          "  repeat: 15m\n",
          f);
    fclose(f);
    free(path);
    relay_config_extra(&R, ACCOUNT, NULL, "rules: @DIR@/rules.yaml\ntimezone: UTC\n");
    run_minutes(T0 - 600, END);
    char *list = notice_list();
    cr_expect_str_eq(list, "opened resolved", "%s", list);
    free(list);
}
