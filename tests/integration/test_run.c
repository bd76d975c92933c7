/* `wsrelay run` end to end: the real binary against the real simulator and
 * a real webhook receiver on 127.0.0.1, run after run on a virtual clock. */
#include "hooksink.h"
#include "proc.h"
#include "simctl.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define T0 1795000000LL
#define API_KEY "TEST-API-KEY-abcdefghijklmnopqrstuvwxyz01234"
#define PASSWORD "p\"ss\\word"

static char *dir;
static struct sim sim;
static struct hooksink *hook;
static char *config_path;
static char *out_path;
static char *state_path;

/* Three devices: a standalone freezer, and two remote units of one base
 * unit. Each has one entry older than catch_up (1 h) and recent ones; the
 * freezer's recent entry carries two kinds at once. */
static const char scenario[] =
    "{\"now\": 1795000000, \"accounts\": [{"
    "  \"api_key\": \"" API_KEY "\", \"login_id\": \"tbzz9999\","
    "  \"login_pass\": \"p\\\"ss\\\\word\","
    "  \"devices\": ["
    "   {\"serial\": \"5214000A\", \"model\": \"TR-72A2\", \"name\": \"Freezer A\","
    "    \"time_diff\": 540,"
    "    \"channels\": [{\"name\": \"Temperature\", \"unit\": \"C\", \"value\": \"-80.0\"}],"
    "    \"alerts\": ["
    "      {\"unixtime\": 1794990000, \"ch1\": \"CH1 Upper Limit Exceeded (old)\"},"
    "      {\"unixtime\": 1794999000, \"ch1\": \"CH1 Upper Limit Exceeded -70.2\","
    "       \"battery-level\": \"Low Battery Warning\"}]},"
    "   {\"serial\": \"52F00001\", \"model\": \"RTR501B\", \"name\": \"冷蔵室 1\","
    "    \"base\": {\"serial\": \"58B20000\", \"model\": \"RTR500BW\", \"name\": \"Base 1\"},"
    "    \"alerts\": ["
    "      {\"unixtime\": 1794980000, \"ch1\": \"CH1 上限値警報 (old)\"},"
    "      {\"unixtime\": 1794998000, \"ch1\": \"CH1 上限値警報 12.3\"}]},"
    "   {\"serial\": \"52F00002\", \"model\": \"RTR502B\", \"name\": \"Warehouse\","
    "    \"base\": {\"serial\": \"58B20000\", \"model\": \"RTR500BW\", \"name\": \"Base 1\"},"
    "    \"alerts\": ["
    "      {\"unixtime\": 1794999400, \"communication-status\": \"Communication Error\"}]}"
    "  ]}]}";

static void write_config(const char *extra_receiver_yaml)
{
    char text[4096];
    snprintf(text, sizeof text,
             "state_file: %s\n"
             "catch_up: 1h\n"
             "accounts:\n"
             "  - name: lab\n"
             "    base_url: %s\n"
             "    api_key: \"${TEST_API_KEY}\"\n"
             "    login_id: tbzz9999\n"
             "    login_pass_file: pass.txt\n"
             "receivers:\n"
             "  - name: hook\n"
             "    webhook: {url: \"%s\", headers: {Authorization: \"Bearer t0ken\"}}\n"
             "  - name: log\n"
             "    file: {path: \"%s\"}\n"
             "%s",
             state_path, sim.base_url, hooksink_url(hook), out_path,
             extra_receiver_yaml ? extra_receiver_yaml : "");
    write_file(config_path, text);
}

static void setup(void)
{
    dir = test_tmpdir();
    char *scen = xasprintf("%s/scenario.json", dir);
    config_path = xasprintf("%s/wsrelay.yaml", dir);
    out_path = xasprintf("%s/alerts.txt", dir);
    state_path = xasprintf("%s/state.json", dir);
    write_file(scen, scenario);
    char *pass = xasprintf("%s/pass.txt", dir);
    write_file(pass, PASSWORD "\n");
    chmod(pass, 0600);
    free(pass);
    sim_start(&sim, scen, dir);
    free(scen);
    hook = hooksink_start();
    setenv("TEST_API_KEY", API_KEY, 1);
    write_config(NULL);
}

static void teardown(void)
{
    hooksink_stop(hook);
    sim_stop(&sim);
    test_rmtree(dir);
    free(dir);
    free(config_path);
    free(out_path);
    free(state_path);
}

TestSuite(run, .init = setup, .fini = teardown, .timeout = 240);

/* Runs `wsrelay run` at `now` (moving the simulator's clock there first)
 * and returns its exit status; its stderr is kept in *err when asked. */
static int run_at(long long now, char **err)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&sim, now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", config_path, (char *)"run",
                    (char *)"--now", when, NULL};
    char *out = NULL, *errs = NULL;
    int status = run_cmd(&out, &errs, 60, argv, NULL);
    free(out);
    if (err)
        *err = errs;
    else
        free(errs);
    return status;
}

/* All events of every webhook request so far, as "SERIAL/UNIXTIME/KIND"
 * lines in arrival order; checks each document's shape on the way. */
static char *hook_keys(size_t *count)
{
    size_t cap = 1 << 16, len = 0;
    char *keys = calloc(1, cap);
    *count = 0;
    for (size_t i = 0; i < hooksink_count(hook); i++) {
        struct hook_request *rq = hooksink_request(hook, i);
        cr_assert_str_eq(rq->method, "POST");
        cr_assert(strstr(rq->content_type, "application/json"));
        cr_assert_str_eq(rq->authorization, "Bearer t0ken");
        struct json_object *doc = json_tokener_parse(rq->body);
        cr_assert_not_null(doc, "webhook body is not JSON: %s", rq->body);
        struct json_object *events, *cnt, *v;
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        cr_assert(json_object_object_get_ex(doc, "count", &cnt));
        cr_assert_eq((size_t)json_object_get_int(cnt), json_object_array_length(events));
        for (size_t k = 0; k < json_object_array_length(events); k++) {
            struct json_object *ev = json_object_array_get_idx(events, k);
            const char *serial, *kind;
            long long t;
            cr_assert(json_object_object_get_ex(ev, "serial", &v));
            serial = json_object_get_string(v);
            cr_assert(json_object_object_get_ex(ev, "kind", &v));
            kind = json_object_get_string(v);
            cr_assert(json_object_object_get_ex(ev, "unixtime", &v));
            t = json_object_get_int64(v);
            cr_assert(json_object_object_get_ex(ev, "text", &v));
            cr_assert_gt(strlen(json_object_get_string(v)), 0);
            len += (size_t)snprintf(keys + len, cap - len, "%s/%lld/%s\n", serial, t, kind);
            (*count)++;
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
    return keys;
}

static size_t occurrences(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
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
    char *keys = hook_keys(&n);
    cr_assert_eq(n, 4, "expected 4 events, got %zu:\n%s", n, keys);
    cr_assert_eq(occurrences(keys, "5214000A/1794999000/ch1\n"), 1);
    cr_assert_eq(occurrences(keys, "5214000A/1794999000/battery-level\n"), 1);
    cr_assert_eq(occurrences(keys, "52F00001/1794998000/ch1\n"), 1);
    cr_assert_eq(occurrences(keys, "52F00002/1794999400/communication-status\n"), 1);
    cr_assert_eq(occurrences(keys, "/1794990000/"), 0, "older than catch_up: not sent");
    free(keys);

    char *text = read_file_str(out_path);
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
    size_t before = hooksink_count(hook);
    char *text_before = read_file_str(out_path);
    for (int i = 3; i < 15; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    cr_assert_eq(hooksink_count(hook), before, "no request after everything was delivered");
    char *text_after = read_file_str(out_path);
    cr_assert_str_eq(text_after, text_before);
    free(text_before);
    free(text_after);
}

Test(run, an_alert_added_later_is_delivered_once)
{
    poll_everything();
    sim_add_alert(&sim, "52F00001",
                  "{\"unixtime\": 1795000700, \"ch1\": \"CH1 Lower Limit Exceeded 1.0\"}");
    for (int i = 3; i < 12; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = hook_keys(&n);
    cr_assert_eq(n, 5, "%s", keys);
    cr_assert_eq(occurrences(keys, "52F00001/1795000700/ch1\n"), 1);
    free(keys);
}

Test(run, a_failing_receiver_gets_the_events_later_and_only_once)
{
    hooksink_set_status(hook, 503);
    cr_assert_eq(run_at(T0, NULL), 1, "a failed delivery is a run-time failure");
    cr_assert_eq(hooksink_count(hook), 1);
    char *text = read_file_str(out_path);
    cr_assert_not_null(text, "the healthy receiver got its message at once");
    size_t file_events = occurrences(text, "account lab");
    cr_assert_gt(file_events, 0);
    free(text);

    hooksink_set_status(hook, 200);
    hooksink_clear(hook);
    /* The retry waits for its back-off (one minute). */
    cr_assert_eq(run_at(T0 + 30, NULL), 0);
    cr_assert_eq(hooksink_count(hook), 0, "not before the back-off");
    cr_assert_eq(run_at(T0 + 60, NULL), 0);
    size_t n;
    char *keys = hook_keys(&n);
    cr_assert_eq(n, file_events, "the same events, once: %s", keys);
    free(keys);
    cr_assert_eq(run_at(T0 + 120, NULL), 0);
    cr_assert_eq(hooksink_count(hook), 1, "nothing sent twice");
    text = read_file_str(out_path);
    cr_assert_eq(occurrences(text, "account lab"), file_events, "file receiver not repeated");
    free(text);
}

Test(run, a_platform_failure_is_retried_without_loss)
{
    sim_fault(&sim, "alert", 503, 1, "<html>Service Unavailable</html>");
    char *err = NULL;
    cr_assert_eq(run_at(T0, &err), 1);
    cr_assert(strstr(err, "503"), "stderr: %s", err);
    free(err);
    cr_assert_eq(hooksink_count(hook), 0);
    for (int i = 1; i < 6; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = hook_keys(&n);
    cr_assert_eq(n, 4, "%s", keys);
    free(keys);
}

/* 1,440 runs of the real binary: about a minute, several under ASan. */
Test(run, a_day_of_minutely_runs_keeps_within_the_budget, .timeout = 900)
{
    for (long long now = T0; now < T0 + 86400; now += 60)
        cr_assert_eq(run_at(now, NULL), 0, "run at %lld", now);
    struct json_object *stats = sim_stats(&sim), *v, *login;
    cr_assert(json_object_object_get_ex(stats, "rejected_429", &v));
    cr_assert_eq(json_object_get_int(v), 0);
    cr_assert(json_object_object_get_ex(stats, "max_alert_calls_per_hour", &v));
    cr_assert(json_object_object_get_ex(v, "tbzz9999", &login));
    cr_assert_leq(json_object_get_int(login), 12);
    cr_assert_geq(json_object_get_int(login), 12, "the budget is used, not wasted");
    cr_assert(json_object_object_get_ex(stats, "totals", &v));
    cr_assert(json_object_object_get_ex(v, "tbzz9999", &login));
    cr_assert(json_object_object_get_ex(login, "alert", &v));
    cr_assert_geq(json_object_get_int(v), 280, "about 288 alert calls a day");
    cr_assert(json_object_object_get_ex(login, "current", &v));
    cr_assert_leq(json_object_get_int(v), 24 * 6 + 1, "discovery at most every 10 minutes");
    json_object_put(stats);
    size_t n;
    char *keys = hook_keys(&n);
    cr_assert_eq(n, 4, "%s", keys);
    free(keys);
}

Test(run, the_state_file_is_private_and_holds_no_secret)
{
    poll_everything();
    struct stat st;
    cr_assert_eq(stat(state_path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    char *text = read_file_str(state_path);
    cr_assert_null(strstr(text, API_KEY));
    cr_assert_null(strstr(text, "ss\\\\word"));
    cr_assert_null(strstr(text, "t0ken"));
    free(text);
}

Test(run, wrong_password_fails_the_run_and_says_so_without_the_secret)
{
    char *pass = xasprintf("%s/pass.txt", dir);
    write_file(pass, "wrong-pass\n");
    free(pass);
    char *err = NULL;
    cr_assert_eq(run_at(T0, &err), 1);
    cr_assert(strstr(err, "401"), "stderr: %s", err);
    cr_assert_null(strstr(err, "wrong-pass"));
    cr_assert_null(strstr(err, API_KEY));
    free(err);
    cr_assert_eq(hooksink_count(hook), 0);
}

Test(run, a_dry_run_sends_nothing_and_leaves_the_alerts_for_the_real_run)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", T0);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",        config_path,     (char *)"run",
                    (char *)"--dry-run",  (char *)"--now",     when,            NULL};
    char *out = NULL, *err = NULL;
    cr_assert_eq(run_cmd(&out, &err, 60, argv, NULL), 0, "%s", err);
    cr_assert(strstr(out, "dry run"), "%s", out);
    cr_assert_eq(hooksink_count(hook), 0);
    cr_assert_null(read_file_str(out_path));
    free(out);
    free(err);
    /* The dry run's call counted: the real runs poll every device anyway. */
    for (int i = 1; i < 5; i++)
        cr_assert_eq(run_at(T0 + i * 300, NULL), 0);
    size_t n;
    char *keys = hook_keys(&n);
    cr_assert_eq(n, 4, "%s", keys);
    free(keys);
}

Test(run, a_misspelt_key_stops_before_anything_is_done)
{
    write_file(config_path, "state_file: /nonexistent/state.json\n"
                            "acounts: []\n");
    char *err = NULL;
    cr_assert_eq(run_at(T0, &err), 2);
    cr_assert(strstr(err, "wsrelay.yaml:2:1:"), "stderr: %s", err);
    cr_assert(strstr(err, "acounts"), "stderr: %s", err);
    free(err);
    struct json_object *stats = sim_stats(&sim), *calls;
    cr_assert(json_object_object_get_ex(stats, "calls", &calls));
    cr_assert_eq(json_object_array_length(calls), 0);
    json_object_put(stats);
}
