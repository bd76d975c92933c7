/* Self-monitoring end to end: the real binary, the simulator and a webhook
 * sink on a virtual clock. Each condition of wsrelay's own health makes
 * one relay event when it starts and one when it clears, never one per
 * run; the outbox's limits; a corrupt state file; the heartbeat. */
#include "proc.h"
#include "relay.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define T0 1795000000LL

static struct relay R;

static void setup(void)
{
    relay_start_world(&R, "freezer-a-yesterday");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(self, .init = setup, .fini = teardown, .timeout = 240);

/* The relay events the sink `h` got, as "CONDITION\n" lines in order; with
 * `only`, the events of that condition alone, as "TEXT\n" lines. The number
 * of all events, relay or not, in *all. Caller frees. */
static char *relays_of(struct hooksink *h, const char *only, size_t *all)
{
    char *out = xstrdup("");
    size_t n = hooksink_count(h);
    *all = 0;
    for (size_t i = 0; i < n; i++) {
        struct hook_request *rq = hooksink_request(h, i);
        if (strcmp(rq->method, "POST") != 0) {
            hook_request_free(rq);
            continue;
        }
        struct json_object *doc = json_tokener_parse(rq->body), *events, *v;
        cr_assert_not_null(doc, "%s", rq->body);
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        for (size_t k = 0; k < json_object_array_length(events); k++) {
            struct json_object *ev = json_object_array_get_idx(events, k);
            (*all)++;
            cr_assert(json_object_object_get_ex(ev, "kind", &v));
            if (strcmp(json_object_get_string(v), "relay") != 0)
                continue;
            cr_assert(json_object_object_get_ex(ev, "condition", &v));
            const char *condition = json_object_get_string(v);
            if (only && strcmp(condition, only) != 0)
                continue;
            cr_assert(json_object_object_get_ex(ev, "text", &v));
            char *more = xasprintf("%s%s\n", out, only ? json_object_get_string(v) : condition);
            free(out);
            out = more;
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
    return out;
}

/* The relay events the webhook "hook" got (see relays_of). */
static char *hook_relays(size_t *all)
{
    return relays_of(R.hook, NULL, all);
}

Test(self, a_wrong_password_gives_one_relay_event_and_pauses_the_login)
{
    char *pass = xasprintf("%s/pass.txt", R.dir);
    write_file(pass, "wrong-pass\n");
    size_t refused_calls = 0;
    for (int i = 0; i < 30; i++) {
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, T0 + 60 * i, &err), 1);
        cr_assert_null(strstr(err, "wrong-pass"));
        refused_calls += occurrences(err, "HTTP 401") > 0;
        if (i > 0)
            cr_assert(strstr(err, "no call until the configuration changes"), "run %d: %s", i, err);
        free(err);
    }
    cr_expect_eq(refused_calls, 1, "the login was called again while paused");
    size_t all;
    char *relays = hook_relays(&all);
    cr_assert_str_eq(relays, "login-refused\n");
    cr_assert_eq(all, 1);
    free(relays);
    struct hook_request *rq = hooksink_request(R.hook, 0);
    cr_expect(strstr(rq->body, "cannot log in to WebStorage as " RELAY_LOGIN " (401)"), "%s",
              rq->body);
    cr_expect_null(strstr(rq->body, "wrong-pass"));
    hook_request_free(rq);
    char *log = read_file_str(R.out_path);
    cr_assert(log && occurrences(log, "cannot log in to WebStorage") == 1, "%s", log);
    free(log);

    /* An hour after the refusal: one call; refused again, still no event. */
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 3600, &err), 1);
    cr_expect_eq(occurrences(err, "HTTP 401"), 1, "%s", err);
    free(err);
    cr_assert_eq(relay_run_at(&R, T0 + 3660, &err), 1);
    cr_expect_eq(occurrences(err, "HTTP 401"), 0, "%s", err);
    free(err);
    relays = hook_relays(&all);
    cr_assert_str_eq(relays, "login-refused\n");
    free(relays);

    /* The password fixed: polling resumes at once, and says so. */
    write_file(pass, RELAY_PASSWORD "\n");
    free(pass);
    cr_assert_eq(relay_run_at(&R, T0 + 3720, &err), 0, "%s", err);
    free(err);
    relays = hook_relays(&all);
    cr_assert_str_eq(relays, "login-refused\nlogin-refused-cleared\n");
    free(relays);
    rq = hooksink_request(R.hook, hooksink_count(R.hook) - 1);
    cr_expect(strstr(rq->body, "can log in to WebStorage as " RELAY_LOGIN " again"), "%s",
              rq->body);
    hook_request_free(rq);
}

/* The config with every "from" in it replaced by `to`. */
static void config_replace(const char *from, const char *to)
{
    char *text = read_file_str(R.config_path);
    cr_assert_not_null(text);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "no '%s' in:\n%s", from, text);
    char *fixed = xasprintf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    write_file(R.config_path, fixed);
    free(fixed);
    free(text);
}

/* A mistyped login ID: refused, reported, and its report could not reach
 * the webhook (failing then). Once the ID is fixed, the next run sends the
 * all-clear, and the report that the login is paused, no longer true, is
 * dropped from the webhook's outbox instead of arriving after the fix. */
Test(self, a_fixed_login_id_sends_its_all_clear_and_not_its_stale_pause)
{
    config_replace("login_id: " RELAY_LOGIN, "login_id: tbzz9998");
    hooksink_set_status(R.hook, 503);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert(strstr(err, "cannot log in to WebStorage as tbzz9998 (401)"), "%s", err);
    free(err);
    char *log = read_file_str(R.out_path);
    cr_assert(log && occurrences(log, "cannot log in to WebStorage as tbzz9998") == 1, "%s", log);
    free(log);

    config_replace("login_id: tbzz9998", "login_id: " RELAY_LOGIN);
    hooksink_set_status(R.hook, 200);
    hooksink_clear(R.hook);
    err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 120, &err), 0, "%s", err);
    cr_expect(strstr(err, "receiver hook: dropped a relay event (login-refused) queued 120 s ago "
                          "that is no longer true: wsrelay cannot log in to WebStorage as "
                          "tbzz9998 (401)"),
              "%s", err);
    free(err);
    size_t all;
    char *relays = hook_relays(&all);
    cr_expect_str_eq(relays, "login-refused-cleared\n");
    free(relays);
    relays = relays_of(R.hook, "login-refused-cleared", &all);
    cr_expect(strstr(relays, "wsrelay no longer logs in to WebStorage as tbzz9998: that login ID "
                             "left the configuration"),
              "%s", relays);
    free(relays);
    /* The file receiver, which had the report, gets the all-clear too. */
    log = read_file_str(R.out_path);
    cr_expect(log && occurrences(log, "no longer logs in to WebStorage as tbzz9998") == 1, "%s",
              log);
    free(log);
    /* Said once: the next run has nothing more to say about it. */
    cr_assert_eq(relay_run_at(&R, T0 + 180, &err), 0, "%s", err);
    free(err);
    relays = hook_relays(&all);
    cr_expect_str_eq(relays, "login-refused-cleared\n");
    free(relays);
}

Test(self, a_failing_platform_is_reported_once_after_self_after_and_its_recovery)
{
    /* Discovery fails from the start, 500 after 500. */
    sim_fault(&R.sim, "current", 500, 1000, NULL);
    sim_fault(&R.sim, "alert", 500, 1000, NULL);
    for (int i = 0; i <= 30; i++)
        cr_assert_eq(relay_run_at(&R, T0 + 60 * i, NULL), 1);
    size_t all;
    char *relays = hook_relays(&all);
    cr_assert_str_eq(relays, "platform-failing\n");
    free(relays);
    struct hook_request *rq = hooksink_request(R.hook, 0);
    cr_expect(strstr(rq->body, "failing to poll WebStorage as " RELAY_LOGIN " for 15 min"), "%s",
              rq->body);
    hook_request_free(rq);
    sim_fault(&R.sim, "current", 500, 0, NULL);
    sim_fault(&R.sim, "alert", 500, 0, NULL);
    cr_assert_eq(relay_run_at(&R, T0 + 31 * 60, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 32 * 60, NULL), 0);
    relays = hook_relays(&all);
    cr_assert_str_eq(relays, "platform-failing\nplatform-failing-cleared\n");
    free(relays);
}

Test(self, a_failing_receiver_is_reported_to_the_other_one)
{
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    for (int i = 1; i <= 25; i++) /* tried again as the back-off allows */
        relay_run_at(&R, T0 + 60 * i, NULL);
    char *log = read_file_str(R.out_path);
    cr_assert(log && occurrences(log, "unable to deliver to receiver 'hook'") == 1, "%s", log);
    cr_expect(strstr(log, "for 15 min"), "%s", log);
    free(log);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 90 * 60, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 91 * 60, NULL), 0);
    log = read_file_str(R.out_path);
    cr_expect_eq(occurrences(log, "unable to deliver to receiver 'hook'"), 1, "%s", log);
    cr_expect_eq(occurrences(log, "delivers to receiver 'hook' again"), 1, "%s", log);
    free(log);
    /* The hook never heard of its own trouble, but got the alert. */
    size_t all;
    char *relays = hook_relays(&all);
    cr_expect_str_eq(relays, "");
    free(relays);
    struct hook_request *rq = hooksink_request(R.hook, hooksink_count(R.hook) - 1);
    cr_expect(strstr(rq->body, "\"id\":\"5214000A/1794997000/ch1\""), "%s", rq->body);
    hook_request_free(rq);
}

Test(self, self_receivers_get_relay_events_and_nothing_else_does)
{
    relay_config_extra(&R, NULL, NULL, "self:\n  receivers: log\n");
    char *pass = xasprintf("%s/pass.txt", R.dir);
    write_file(pass, "wrong-pass\n");
    free(pass);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    cr_expect_eq(hooksink_count(R.hook), 0);
    char *log = read_file_str(R.out_path);
    cr_assert(log && strstr(log, "cannot log in"), "%s", log);
    free(log);
}

Test(self, events_older_than_max_age_are_given_up_loudly)
{
    relay_config_extra(&R, NULL, NULL,
                       "outbox: {max_age: 10m}\nself: {after: 1h, receivers: [log]}\n"
                       "metrics_file: @DIR@/wsrelay.prom\n");
    hooksink_set_status(R.hook, 503);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    char *err = NULL;
    for (int i = 1; i <= 11; i++) {
        free(err);
        err = NULL;
        relay_run_at(&R, T0 + 60 * i, &err);
    }
    cr_assert(strstr(err, "error: wsrelay gave up 1 event for receiver 'hook'"), "%s", err);
    free(err);
    char *log = read_file_str(R.out_path);
    cr_assert(log && occurrences(log, "gave up 1 event for receiver 'hook'") == 1, "%s", log);
    free(log);
    char *prom = xasprintf("%s/wsrelay.prom", R.dir);
    char *text = read_file_str(prom);
    cr_assert(text && strstr(text, "wsrelay_notifications_total{receiver=\"hook\","
                                   "outcome=\"expired\"} 1\n"),
              "%s", text);
    cr_expect(strstr(text, "wsrelay_outbox_events{receiver=\"hook\"} 0\n"), "%s", text);
    free(text);
    free(prom);
}

/* `wsrelay status --json` at `now`: how many events wait for `receiver`
 * (its outbox.count) and how many the outbox cap dropped so far
 * (self.dropped). */
static void outbox_status(long long now, const char *receiver, long long *count, long long *dropped)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",    R.config_path, (char *)"status",
                    (char *)"--json",    (char *)"--now", when,          NULL};
    char *out = NULL;
    int status = run_cmd(&out, NULL, 60, argv, NULL);
    cr_assert(status == 0 || status == 1, "status exited %d: %s", status, out);
    struct json_object *doc = json_tokener_parse(out), *receivers, *self, *v;
    cr_assert_not_null(doc, "%s", out);
    cr_assert(json_object_object_get_ex(doc, "receivers", &receivers));
    *count = -1;
    for (size_t i = 0; i < json_object_array_length(receivers); i++) {
        struct json_object *r = json_object_array_get_idx(receivers, i), *box;
        cr_assert(json_object_object_get_ex(r, "name", &v));
        if (strcmp(json_object_get_string(v), receiver) != 0)
            continue;
        cr_assert(json_object_object_get_ex(r, "outbox", &box));
        cr_assert(json_object_object_get_ex(box, "count", &v));
        *count = json_object_get_int64(v);
    }
    cr_assert_neq(*count, -1, "no receiver %s in %s", receiver, out);
    cr_assert(json_object_object_get_ex(doc, "self", &self));
    cr_assert(json_object_object_get_ex(self, "dropped", &v));
    *dropped = json_object_get_int64(v);
    json_object_put(doc);
    free(out);
}

/* A receiver that keeps failing holds at most outbox.max_items events.
 * Each run that has to drop the oldest says how many, once, to the self
 * receivers, logs it and counts it; a run that drops nothing says nothing.
 * Once the receiver works again it gets the events that were kept, the
 * newest, each once. */
Test(self, a_full_outbox_drops_the_oldest_and_says_so_once_per_trim)
{
    struct hooksink *ops = hooksink_start();
    char *receivers = xasprintf("  - name: hook\n"
                                "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: "
                                "\"Bearer t0ken\"}}\n"
                                "  - name: ops\n"
                                "    webhook: {url: \"%s\"}\n",
                                hooksink_url(ops));
    relay_config_extra(&R, NULL, receivers,
                       "outbox: {max_items: 10}\nself: {receivers: [ops]}\n"
                       "metrics_file: @DIR@/wsrelay.prom\n");
    free(receivers);
    hooksink_set_status(R.hook, 500);
    /* Run 0 sends the alert of 50 minutes ago; runs 1 to 4 and 6 find new
     * ones: 18 events for the hook in all, of which it can keep 10. */
    static const struct {
        int new_alerts;
        long long waiting, dropped;
        const char *said; /* "" when the run drops nothing */
    } runs[] = {
        {0, 1, 0, ""},
        {4, 5, 0, ""},
        {4, 9, 0, ""},
        {4, 10, 3, "3 oldest events"},
        {4, 10, 7, "4 oldest events"},
        {0, 10, 7, ""},
        {1, 10, 8, "1 oldest event"},
        {0, 10, 8, ""},
    };
    char *told = xstrdup("");
    long long now = T0;
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        now = T0 + 310LL * (long long)r; /* an alert call each run */
        for (int j = 0; j < runs[r].new_alerts; j++) {
            char alert[128];
            snprintf(alert, sizeof alert,
                     "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded %zu.%d\"}",
                     now - 200 + 10 * j, r, j);
            sim_add_alert(&R.sim, "5214000A", alert);
        }
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, now, &err), 1, "run %zu: %s", r, err);
        if (*runs[r].said) {
            char *text = xasprintf("wsrelay dropped the %s waiting for receiver 'hook': its "
                                   "outbox holds at most 10 (outbox.max_items). Look them up on "
                                   "WebStorage.",
                                   runs[r].said);
            cr_expect_eq(occurrences(err, text), 2, "run %zu: an error and a relay event: %s", r,
                         err);
            char *more = xasprintf("%s%s\n", told, text);
            free(told);
            told = more;
            free(text);
        } else {
            cr_expect_null(strstr(err, "wsrelay dropped"), "run %zu: %s", r, err);
        }
        free(err);
        long long waiting, dropped;
        outbox_status(now, "hook", &waiting, &dropped);
        cr_assert_eq(waiting, runs[r].waiting, "run %zu", r);
        cr_assert_eq(dropped, runs[r].dropped, "run %zu", r);
        size_t all;
        char *full = relays_of(ops, "outbox-full", &all);
        cr_assert_str_eq(full, told, "run %zu", r);
        free(full);
        char *hook = hook_relays(&all);
        cr_assert_str_eq(hook, "", "the hook's own outbox holds no relay event");
        free(hook);
    }
    free(told);
    char *prom = xasprintf("%s/wsrelay.prom", R.dir);
    char *text = read_file_str(prom);
    cr_assert(text && strstr(text, "wsrelay_notifications_total{receiver=\"hook\","
                                   "outcome=\"dropped\"} 8\n"),
              "%s", text);
    cr_expect(strstr(text, "wsrelay_outbox_events{receiver=\"hook\"} 10\n"), "%s", text);
    free(text);
    free(prom);

    /* The hook recovers: past the longest back-off it gets the ten kept,
     * the newest, in the order they came, and nothing twice. */
    hooksink_set_status(R.hook, 200);
    hooksink_clear(R.hook);
    now += 3700;
    cr_assert_eq(relay_run_at(&R, now, NULL), 0);
    cr_assert_eq(relay_run_at(&R, now + 60, NULL), 0);
    char *want = xstrdup("");
    for (size_t r = 2; r < sizeof runs / sizeof runs[0]; r++)
        for (int j = r == 2 ? 3 : 0; j < runs[r].new_alerts; j++) {
            char *more =
                xasprintf("%s5214000A/%lld/ch1\n", want, T0 + 310LL * (long long)r - 200 + 10 * j);
            free(want);
            want = more;
        }
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_expect_eq(n, 10, "%s", keys);
    cr_expect_str_eq(keys, want);
    free(keys);
    free(want);
    long long waiting, dropped;
    outbox_status(now + 60, "hook", &waiting, &dropped);
    cr_expect_eq(waiting, 0);
    cr_expect_eq(dropped, 8);
    hooksink_stop(ops);
}

/* Adds `n` alerts to the device, 10 s apart, the last 20 s before `now`. */
static void add_alerts(long long now, int n)
{
    for (int j = 0; j < n; j++) {
        char alert[128];
        snprintf(alert, sizeof alert,
                 "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded (%lld)\"}",
                 now - 20 - 10LL * (n - 1 - j), now - 20 - 10LL * (n - 1 - j));
        sim_add_alert(&R.sim, "5214000A", alert);
    }
}

/* Without self:, relay events go to every receiver, but the one whose
 * events were dropped is not told in its own outbox: that would fill it
 * again, and every later run would drop one more alert to make room. */
Test(self, a_full_outbox_is_not_refilled_by_its_own_relay_event)
{
    relay_config_extra(&R, NULL, NULL, "outbox: {max_items: 10}\n");
    hooksink_set_status(R.hook, 500);
    for (int r = 0; r < 8; r++) {
        long long now = T0 + 310LL * r;
        add_alerts(now, r == 1 || r == 2 ? 6 : 0); /* 13 events for the hook in all */
        cr_assert_eq(relay_run_at(&R, now, NULL), 1);
        long long waiting, dropped;
        outbox_status(now, "hook", &waiting, &dropped);
        cr_assert_eq(waiting, r == 0 ? 1 : r == 1 ? 7 : 10, "run %d", r);
        cr_assert_eq(dropped, r < 2 ? 0 : 3, "run %d", r);
    }
    char *log = read_file_str(R.out_path);
    cr_assert(log && occurrences(log, "dropped the 3 oldest events waiting for receiver "
                                      "'hook'") == 1,
              "%s", log);
    cr_expect_eq(occurrences(log, "oldest event"), 1, "%s", log);
    free(log);
    size_t all;
    char *relays = hook_relays(&all);
    cr_expect_str_eq(relays, "");
    free(relays);
}

/* Two receivers fail and both outboxes are full: the report about one does
 * not go into the other's outbox, where it would push out an alert, which
 * the next run would report to the first, and so on, one alert lost per
 * run. The receiver that works is told about each once. */
Test(self, reports_about_full_outboxes_do_not_fill_each_other)
{
    struct hooksink *other = hooksink_start();
    hooksink_set_status(other, 500);
    hooksink_set_status(R.hook, 500);
    char *receivers = xasprintf("  - name: hook\n"
                                "    webhook: {url: \"@HOOK_URL@\"}\n"
                                "  - name: other\n"
                                "    webhook: {url: \"%s\"}\n"
                                "  - name: log\n"
                                "    file: {path: \"@OUT@\"}\n",
                                hooksink_url(other));
    relay_config_extra(&R, NULL, receivers, "outbox: {max_items: 10}\n");
    free(receivers);
    for (int r = 0; r < 8; r++) {
        long long now = T0 + 310LL * r;
        add_alerts(now, r == 1 || r == 2 ? 6 : 0); /* 13 events for each in all */
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, now, &err), 1);
        if (r == 2)
            cr_expect_eq(occurrences(err, "the outbox of every other receiver is full"), 0,
                         "the log takes them: %s", err);
        free(err);
        static const char *const names[] = {"hook", "other"};
        for (size_t i = 0; i < 2; i++) {
            long long waiting, dropped;
            outbox_status(now, names[i], &waiting, &dropped);
            cr_assert_eq(waiting, r == 0 ? 1 : r == 1 ? 7 : 10, "run %d, %s", r, names[i]);
            cr_assert_eq(dropped, r < 2 ? 0 : 6, "run %d: both together", r);
        }
    }
    char *log = read_file_str(R.out_path);
    cr_expect_eq(occurrences(log, "oldest events waiting for receiver 'hook'"), 1, "%s", log);
    cr_expect_eq(occurrences(log, "oldest events waiting for receiver 'other'"), 1, "%s", log);
    cr_expect_eq(occurrences(log, "oldest event"), 2, "%s", log);
    free(log);
    hooksink_stop(other);
}

/* max_items bounds what waits for a receiver, not what a run brings: a
 * receiver that works takes a burst bigger than the cap, whole. */
Test(self, a_burst_bigger_than_max_items_reaches_a_working_receiver_whole)
{
    relay_config_extra(&R, NULL, NULL, "outbox: {max_items: 10}\n");
    add_alerts(T0, 12);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 0, "%s", err);
    cr_expect_null(strstr(err, "dropped"), "%s", err);
    free(err);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_expect_eq(n, 13, "the alert of 50 minutes ago and the 12 new: %s", keys);
    free(keys);
    char *log = read_file_str(R.out_path);
    cr_expect_eq(occurrences(log, "CH1 Upper Limit Exceeded"), 13, "%s", log);
    free(log);
    long long waiting, dropped;
    outbox_status(T0, "hook", &waiting, &dropped);
    cr_expect_eq(waiting, 0);
    cr_expect_eq(dropped, 0);
}

/* The names in the state's directory that start with state.json.corrupt-. */
static size_t corrupt_files(char **name)
{
    size_t n = 0;
    DIR *d = opendir(R.dir);
    cr_assert_not_null(d);
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, "state.json.corrupt-", 19) != 0)
            continue;
        n++;
        if (name)
            *name = xstrdup(de->d_name);
    }
    closedir(d);
    return n;
}

Test(self, a_corrupt_state_is_moved_aside_said_and_started_over)
{
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    size_t all;
    char *keys = relay_hook_keys(&R, &all);
    cr_assert_str_eq(keys, "5214000A/1794997000/ch1\n");
    free(keys);
    write_file(R.state_path, "{\"version\":1,\"seen\":{");
    sim_add_alert(&R.sim, "5214000A",
                  "{\"unixtime\": 1795005000, \"ch1\": \"CH1 Upper Limit Exceeded (new)\"}");
    /* An hour and a half later the alert sent first is older than catch_up. */
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 5400, &err), 0, "%s", err);
    cr_expect(strstr(err, "corrupt state file"), "%s", err);
    free(err);
    char *name = NULL;
    cr_assert_eq(corrupt_files(&name), 1);
    /* state.json.corrupt-YYYYmmddTHHMMSSZ */
    cr_expect_eq(strlen(name), 19 + 16, "%s", name);
    cr_expect(name[19 + 8] == 'T' && name[19 + 15] == 'Z', "%s", name);
    char *path = xasprintf("%s/%s", R.dir, name);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);
    char *text = read_file_str(path);
    cr_expect_str_eq(text, "{\"version\":1,\"seen\":{");
    free(text);
    free(path);
    char *relays = hook_relays(&all);
    cr_assert_str_eq(relays, "state-corrupt\n");
    free(relays);
    keys = relay_hook_keys(&R, &all);
    cr_expect(strstr(keys, "5214000A/1795005000/ch1\n"), "the new alert: %s", keys);
    cr_expect_eq(occurrences(keys, "5214000A/1794997000/ch1"), 1, "no flood: %s", keys);
    free(keys);
    struct hook_request *rq = hooksink_request(R.hook, hooksink_count(R.hook) - 1);
    cr_expect(strstr(rq->body, name), "the event names the file: %s", rq->body);
    hook_request_free(rq);
    free(name);
    /* The next run is an ordinary one. */
    cr_assert_eq(relay_run_at(&R, T0 + 5460, NULL), 0);
    cr_expect_eq(corrupt_files(NULL), 1);
}

/* The GET requests the sink got, as "PATH\n" lines. */
static char *gets(void)
{
    char *out = xstrdup("");
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        if (strcmp(rq->method, "GET") == 0) {
            char *more = xasprintf("%s%s\n", out, rq->path);
            free(out);
            out = more;
        }
        hook_request_free(rq);
    }
    return out;
}

Test(self, the_heartbeat_follows_good_runs_only)
{
    const char *hook = hooksink_url(R.hook); /* http://127.0.0.1:PORT/hook */
    char *extra = xasprintf("self:\n  heartbeat_file: beat.url\n");
    char *url = xasprintf("%.*s/beat/t0ken\n", (int)(strlen(hook) - strlen("/hook")), hook);
    char *file = xasprintf("%s/beat.url", R.dir);
    write_file(file, url);
    chmod(file, 0600);
    relay_config_extra(&R, NULL, NULL, extra);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 0, "%s", err);
    cr_expect_null(strstr(err, "t0ken"), "%s", err);
    free(err);
    char *got = gets();
    cr_assert_str_eq(got, "/beat/t0ken\n");
    free(got);
    /* A failed run: no heartbeat. */
    sim_fault(&R.sim, "alert", 503, 1, NULL);
    cr_assert_eq(relay_run_at(&R, T0 + 600, NULL), 1);
    got = gets();
    cr_assert_str_eq(got, "/beat/t0ken\n");
    free(got);
    /* A dry run: none either. */
    char when[32];
    snprintf(when, sizeof when, "%lld", T0 + 1200);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",    R.config_path, (char *)"run",
                    (char *)"--dry-run", (char *)"--now", when,          NULL};
    cr_assert_eq(run_cmd(NULL, NULL, 60, argv, NULL), 0);
    got = gets();
    cr_assert_str_eq(got, "/beat/t0ken\n");
    free(got);
    /* A heartbeat that fails is a warning, not a failed run. */
    hooksink_set_status(R.hook, 500);
    cr_assert_eq(relay_run_at(&R, T0 + 1800, &err), 0, "%s", err);
    cr_expect(strstr(err, "heartbeat: GET http://127.0.0.1:"), "%s", err);
    cr_expect(strstr(err, "/…: HTTP 500"), "%s", err);
    cr_expect_null(strstr(err, "t0ken"), "%s", err);
    free(err);
    got = gets();
    cr_assert_str_eq(got, "/beat/t0ken\n/beat/t0ken\n");
    free(got);
    free(file);
    free(url);
    free(extra);
}
