/* `wsrelay status` on states built in a temporary directory: the verdict,
 * the words, and the JSON read back field by field. Times are printed in
 * UTC here (TZ is set). */
#include "jsonpath.h"
#include "proc.h"
#include "config.h"
#include "state.h"
#include "status.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* 2026-11-18 12:00:00 UTC */
#define NOW 1795003200LL
#define MIN 60LL
/* Routine polls spread 11 of the 12 hourly alert calls (one is kept for
 * an urgent look): one every 3600 / 11 s, and a slot may come a tenth of
 * that early. */
#define SPACING 327LL
#define SLACK 32LL

/* When the budget allows the next routine call after one at `last`: the
 * next boundary of the grid of SPACING seconds, and 0.9 spacing after it
 * (see scheduler.h). */
static long long next_slot(long long last)
{
    long long boundary = (last / SPACING + 1) * SPACING;
    return boundary > last + SPACING - SLACK ? boundary : last + SPACING - SLACK;
}

#define API_KEY "SECRET-API-KEY-0123456789abcdef"
#define PASSWORD "s3cret-pass-word"
#define HOOK_PATH "T0KEN-IN-THE-PATH"
#define HEADER_SECRET "hdr-secret-value"

static char dir[64];
static char *state_path;
static struct config *cfg;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* Two accounts sharing the login ID tbzz9999 (one excludes 3F36*), a
 * third with its own login ID, and two receivers. */
static void setup(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    strcpy(dir, "/tmp/wsrelay-status-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    state_path = xasprintf("%s/state.json", dir);
    char *yaml = xasprintf("state_file: %s\n"
                           "accounts:\n"
                           "  - name: lab\n"
                           "    base_url: http://127.0.0.1:9\n"
                           "    api_key: " API_KEY "\n"
                           "    login_id: tbzz9999\n"
                           "    login_pass: " PASSWORD "\n"
                           "    exclude: [\"3F36*\"]\n"
                           "    signals: false\n"
                           "  - name: annex\n"
                           "    base_url: http://127.0.0.1:9\n"
                           "    api_key: " API_KEY "\n"
                           "    login_id: tbzz9999\n"
                           "    login_pass: " PASSWORD "\n"
                           "    signals: false\n"
                           "  - name: museum\n"
                           "    base_url: http://127.0.0.1:9\n"
                           "    api_key: " API_KEY "\n"
                           "    login_id: muse0001\n"
                           "    login_pass: " PASSWORD "\n"
                           "    signals: false\n"
                           "receivers:\n"
                           "  - name: hook\n"
                           "    webhook: {url: \"https://hooks.example.org/" HOOK_PATH "\",\n"
                           "              headers: {Authorization: \"Bearer " HEADER_SECRET "\"}}\n"
                           "  - name: log\n"
                           "    file: {path: \"%s/out.txt\"}\n",
                           state_path, dir);
    char *cfg_path = xasprintf("%s/wsrelay.yaml", dir);
    write_text(cfg_path, yaml);
    struct err e = {{0}};
    cr_assert_eq(config_load(&cfg, cfg_path, &e), 0, "%s", e.msg);
    free(cfg_path);
    free(yaml);
}

static void teardown(void)
{
    config_free(cfg);
    test_rmtree(dir);
    free(state_path);
}

TestSuite(status, .init = setup, .fini = teardown);

/* --- building states ---------------------------------------------------- */

static struct state *begin(void)
{
    struct state *s = NULL;
    struct err e = {{0}};
    cr_assert_eq(state_open(&s, state_path, 0, &e), 0, "%s", e.msg);
    return s;
}

static void commit(struct state *s)
{
    struct err e = {{0}};
    cr_assert_eq(state_save(s, &e), 0, "%s", e.msg);
    state_close(s);
}

static void set_device(struct state *s, const char *account, const char *serial, const char *name,
                       const char *model)
{
    size_t n = 0;
    struct state_device *old = state_devices(s, account, &n);
    struct state_device *devs = xcalloc(n + 1, sizeof *devs);
    for (size_t i = 0; i < n; i++)
        devs[i] = old[i];
    devs[n] = (struct state_device){.serial = (char *)serial,
                                    .base = (char *)serial,
                                    .model = (char *)model,
                                    .name = (char *)name,
                                    .group = (char *)""};
    state_set_devices(s, account, devs, n + 1, NOW - 86400);
    free(devs);
    state_devices_free(old, n);
}

static void poll_at(struct state *s, const char *account, const char *serial, long long at, bool ok)
{
    state_record_call(s, account[0] == 'm' ? "muse0001" : "tbzz9999", PLATFORM_ALERT, at);
    state_device_polled(s, account, serial, NULL, at, ok);
    state_login_result(s, account[0] == 'm' ? "muse0001" : "tbzz9999", ok, ok ? 200 : 503,
                       ok ? NULL : "HTTP 503 (code 503: busy)", at);
}

/* A healthy site: tbzz9999 polls three devices of "lab" (one excluded) and
 * one of "annex" every 5 minutes, museum one device; both receivers
 * delivered a minute ago. */
static void healthy(struct state *s)
{
    set_device(s, "lab", "5214000A", "Freezer A", "TR-72A2");
    set_device(s, "lab", "5214000B", "冷蔵庫 2F", "TR-75wb");
    set_device(s, "lab", "3F360001", "Office", "TR-72A");
    set_device(s, "annex", "52F00001", "Cold room", "RTR501B");
    set_device(s, "museum", "5A000001", "Gallery", "TR-72nw");
    state_set_discovered(s, "lab", NOW - 8 * MIN);
    state_record_call(s, "tbzz9999", PLATFORM_CURRENT, NOW - 8 * MIN);
    poll_at(s, "lab", "5214000B", NOW - 17 * MIN, true);
    poll_at(s, "annex", "52F00001", NOW - 12 * MIN, true);
    poll_at(s, "lab", "5214000A", NOW - 7 * MIN, true);
    /* 5214000B again, so that the never-polled order is tested elsewhere */
    poll_at(s, "lab", "5214000B", NOW - 2 * MIN, true);
    poll_at(s, "museum", "5A000001", NOW - 3 * MIN, true);
    state_mark_seen(s, "5214000A", NOW - 3600, "ch1");
    state_mark_seen(s, "5214000A", NOW - 3000, "ch1");
    state_receiver_result(s, "hook", true, NULL, NOW - MIN);
    state_receiver_result(s, "log", true, NULL, NOW - MIN);
}

static struct event sample_event(long long at)
{
    struct event ev = {
        .account = (char *)"lab",
        .serial = (char *)"5214000A",
        .model = (char *)"TR-72A2",
        .name = (char *)"Freezer A",
        .base_serial = (char *)"5214000A",
        .base_model = (char *)"TR-72A2",
        .base_name = (char *)"Freezer A",
        .unixtime = at,
        .kind = (char *)"ch1",
        .text = (char *)"CH1 Upper Limit Exceeded",
        .channel_name = (char *)"",
        .channel_unit = (char *)"",
    };
    return ev;
}

/* --- running the report ------------------------------------------------- */

struct result {
    char *text;
    enum status_verdict verdict;
};

static struct result report(bool json)
{
    struct state *s = NULL;
    struct err e = {{0}};
    int rc = state_peek(&s, state_path, &e);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    struct result r;
    r.verdict = status_report(f, cfg, rc == 0 ? s : NULL, e.msg, NOW, json);
    cr_assert_eq(fclose(f), 0);
    r.text = text;
    state_close(s);
    if (!json)
        cr_assert(strstr(text, "\n\nwsrelay status at 2026-11-18 12:00 UTC; state file "), "%s",
                  text);
    cr_assert_null(strstr(text, API_KEY), "%s", text);
    cr_assert_null(strstr(text, PASSWORD), "%s", text);
    cr_assert_null(strstr(text, HOOK_PATH), "%s", text);
    cr_assert_null(strstr(text, "hooks.example.org"), "%s", text);
    cr_assert_null(strstr(text, HEADER_SECRET), "%s", text);
    return r;
}

static struct json_object *report_json(enum status_verdict *verdict)
{
    struct result r = report(true);
    struct json_object *o = json_tokener_parse(r.text);
    cr_assert_not_null(o, "not JSON: %s", r.text);
    cr_assert(json_object_is_type(o, json_type_object));
    free(r.text);
    if (verdict)
        *verdict = r.verdict;
    return o;
}

static void expect_int(struct json_object *o, const char *path, long long want)
{
    struct json_object *v = json_at(o, path);
    cr_expect(json_object_is_type(v, json_type_int), "%s is not an integer", path);
    cr_expect_eq(json_object_get_int64(v), want, "%s: %lld, want %lld", path,
                 (long long)json_object_get_int64(v), want);
}

static void expect_null(struct json_object *o, const char *path)
{
    cr_expect(json_object_is_type(json_at(o, path), json_type_null), "%s is not null: %s", path,
              json_object_to_json_string(json_at(o, path)));
}

static void expect_string(struct json_object *o, const char *path, const char *want)
{
    struct json_object *v = json_at(o, path);
    cr_expect(json_object_is_type(v, json_type_string), "%s is not a string", path);
    cr_expect_str_eq(json_object_get_string(v), want, "%s", path);
}

static void expect_line(const char *text, const char *line)
{
    const char *p = text;
    size_t len = strlen(line);
    while ((p = strstr(p, line))) {
        if ((p == text || p[-1] == '\n') && (p[len] == '\n' || p[len] == '\0'))
            return;
        p++;
    }
    cr_expect_fail("no line '%s' in:\n%s", line, text);
}

static char *first_line(const char *text)
{
    const char *end = strchr(text, '\n');
    return xstrndup(text, end ? (size_t)(end - text) : strlen(text));
}

/* --- the verdict -------------------------------------------------------- */

Test(status, a_missing_state_is_a_problem_no_run_has_completed)
{
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_PROBLEM);
    char *want =
        xasprintf("PROBLEM: no run has completed yet (%s records no platform call)", state_path);
    char *first = first_line(r.text);
    cr_expect_str_eq(first, want);
    free(first);
    free(want);
    expect_line(r.text, "login tbzz9999 (accounts lab, annex)");
    expect_line(r.text, "  last success: never");
    free(r.text);
    cr_expect_eq(access(state_path, F_OK), -1, "status wrote no state file");

    enum status_verdict v;
    struct json_object *o = report_json(&v);
    cr_expect_eq(v, STATUS_PROBLEM);
    expect_string(o, "verdict", "PROBLEM");
    cr_expect_eq(json_object_array_length(json_at(o, "problems")), 1);
    expect_null(o, "logins.0.last_ok");
    expect_null(o, "logins.0.last_call");
    expect_null(o, "logins.0.look_interval");
    expect_int(o, "logins.0.alert.next_call", NOW);
    json_object_put(o);
}

Test(status, a_healthy_site_is_ok)
{
    struct state *s = begin();
    healthy(s);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_OK, "%s", r.text);
    cr_expect_eq(strncmp(r.text, "OK\n\nwsrelay status", 18), 0, "%s", r.text);
    expect_line(r.text, "login tbzz9999 (accounts lab, annex)");
    /* 4 alert calls within the hour; the last 2 min ago: the next at the
     * grid's next boundary, 12:03:09. */
    expect_line(r.text, "  alert calls: 4 of 12 in the last hour (1 kept for an urgent look); "
                        "next allowed 12:03 (in 4 min)");
    expect_line(r.text, "  current-readings calls: 0 of 10 in the last 2 min");
    expect_line(r.text, "  last success: 11:58 (2 min ago)");
    expect_line(r.text, "  last error: none");
    /* The excluded device is listed but not counted in the look interval. */
    expect_line(r.text,
                "  4 devices, each looked at about every 17 min (next polls are estimates)");
    expect_line(r.text, "    5214000A  Freezer A (TR-72A2, account lab)");
    /* Least recently polled first: 52F00001 (12 min ago) next, then
     * 5214000A (7 min), then 5214000B (2 min). */
    expect_line(r.text, "      last poll 11:53 (7 min ago), ok; next about 12:08 (in 9 min); "
                        "2 keys seen");
    expect_line(r.text, "    52F00001  Cold room (RTR501B, account annex)");
    expect_line(r.text, "      last poll 11:48 (12 min ago), ok; next about 12:03 (in 4 min); "
                        "0 keys seen");
    expect_line(r.text, "    5214000B  冷蔵庫 2F (TR-75wb, account lab)");
    expect_line(r.text, "      last poll 11:58 (2 min ago), ok; next about 12:14 (in 15 min); "
                        "0 keys seen");
    expect_line(r.text, "    3F360001  Office (TR-72A, account lab)");
    expect_line(r.text, "      excluded by the account's include/exclude: not polled");
    expect_line(r.text, "login muse0001 (account museum)");
    expect_line(r.text, "  1 device, each looked at about every 6 min (next polls are estimates)");
    expect_line(r.text, "    5A000001  Gallery (TR-72nw)");
    expect_line(r.text, "  hook (webhook)");
    expect_line(r.text, "    outbox: empty");
    expect_line(r.text, "    last success: 11:59 (1 min ago)");
    expect_line(r.text, "  log (file)");
    expect_line(r.text, "routing: 0 dropped by a rule, 0 held back by a throttle, "
                        "0 matched no rule (unrouted)");
    free(r.text);
}

Test(status, json_of_a_healthy_site_field_by_field)
{
    struct state *s = begin();
    healthy(s);
    struct ratelimit rl = {.present = true, .limit = 12, .remaining = 8, .reset = 3600};
    state_set_ratelimit(s, "tbzz9999", PLATFORM_ALERT, &rl, NOW - 2 * MIN);
    state_count(s, "dropped", 2);
    state_count(s, "throttled", 7);
    commit(s);
    enum status_verdict v;
    struct json_object *o = report_json(&v);
    cr_expect_eq(v, STATUS_OK);
    expect_string(o, "verdict", "OK");
    cr_expect_eq(json_object_array_length(json_at(o, "problems")), 0);
    cr_expect_eq(json_object_array_length(json_at(o, "warnings")), 0);
    expect_int(o, "now", NOW);
    expect_string(o, "state_file", state_path);

    expect_string(o, "logins.0.login_id", "tbzz9999");
    expect_string(o, "logins.0.accounts.0", "lab");
    expect_string(o, "logins.0.accounts.1", "annex");
    expect_int(o, "logins.0.alert.used", 4);
    expect_int(o, "logins.0.alert.limit", 12);
    expect_int(o, "logins.0.alert.reserve", 1);
    expect_int(o, "logins.0.current.reserve", 0);
    expect_int(o, "logins.0.alert.span", 3600);
    expect_int(o, "logins.0.alert.next_call", next_slot(NOW - 2 * MIN));
    expect_null(o, "logins.0.alert.blocked_until");
    expect_int(o, "logins.0.current.used", 0);
    expect_int(o, "logins.0.current.limit", 10);
    expect_int(o, "logins.0.current.span", 120);
    expect_int(o, "logins.0.current.next_call", NOW);
    expect_int(o, "logins.0.last_call", NOW - 2 * MIN);
    expect_int(o, "logins.0.last_ok", NOW - 2 * MIN);
    expect_int(o, "logins.0.failures", 0);
    expect_null(o, "logins.0.last_error");
    expect_int(o, "logins.0.look_interval", 3 * SPACING);
    cr_assert_eq(json_object_array_length(json_at(o, "logins.0.devices")), 4);
    expect_string(o, "logins.0.devices.0.account", "lab");
    expect_string(o, "logins.0.devices.0.serial", "5214000A");
    expect_string(o, "logins.0.devices.0.name", "Freezer A");
    expect_string(o, "logins.0.devices.0.model", "TR-72A2");
    expect_string(o, "logins.0.devices.0.group", "");
    expect_string(o, "logins.0.devices.0.state", "polled");
    expect_int(o, "logins.0.devices.0.last_poll", NOW - 7 * MIN);
    expect_int(o, "logins.0.devices.0.last_ok", NOW - 7 * MIN);
    expect_int(o, "logins.0.devices.0.next_poll", next_slot(NOW - 2 * MIN) + SPACING);
    expect_null(o, "logins.0.devices.0.refused_until");
    expect_int(o, "logins.0.devices.0.seen_keys", 2);
    expect_string(o, "logins.0.devices.1.name", "冷蔵庫 2F");
    expect_int(o, "logins.0.devices.1.next_poll", next_slot(NOW - 2 * MIN) + 2 * SPACING);
    expect_string(o, "logins.0.devices.2.serial", "3F360001");
    expect_string(o, "logins.0.devices.2.state", "excluded");
    expect_null(o, "logins.0.devices.2.last_poll");
    expect_null(o, "logins.0.devices.2.next_poll");
    expect_string(o, "logins.0.devices.3.account", "annex");
    expect_int(o, "logins.0.devices.3.next_poll", next_slot(NOW - 2 * MIN));

    expect_string(o, "logins.1.login_id", "muse0001");
    expect_int(o, "logins.1.alert.used", 1);
    expect_int(o, "logins.1.alert.next_call", next_slot(NOW - 3 * MIN));
    expect_int(o, "logins.1.look_interval", SPACING);

    expect_string(o, "receivers.0.name", "hook");
    expect_string(o, "receivers.0.type", "webhook");
    cr_expect(json_object_get_boolean(json_at(o, "receivers.0.configured")));
    expect_int(o, "receivers.0.outbox.count", 0);
    expect_null(o, "receivers.0.outbox.oldest_queued");
    expect_null(o, "receivers.0.outbox.next_try");
    expect_int(o, "receivers.0.last_ok", NOW - MIN);
    expect_int(o, "receivers.0.failures", 0);
    expect_null(o, "receivers.0.last_error");
    expect_string(o, "receivers.1.name", "log");
    expect_string(o, "receivers.1.type", "file");
    cr_expect_eq(json_object_array_length(json_at(o, "receivers")), 2);

    expect_int(o, "counters.dropped", 2);
    expect_int(o, "counters.throttled", 7);
    expect_int(o, "counters.unrouted", 0);
    json_object_put(o);
}

Test(status, graph_data_budgets_show_once_used)
{
    struct state *s = begin();
    healthy(s);
    /* Two trend calls, one of them older than latest-data's minute. */
    state_record_call(s, "tbzz9999", PLATFORM_LATEST, NOW - 90);
    state_record_call(s, "tbzz9999", PLATFORM_LATEST, NOW - 30);
    commit(s);
    struct result r = report(false);
    expect_line(r.text, "  latest-data calls: 1 of 60 in the last 1 min");
    cr_expect_null(strstr(r.text, "data-rtr500 calls"), "unused: not shown\n%s", r.text);
    cr_expect_null(strstr(r.text, "  data calls"), "unused: not shown\n%s", r.text);
    free(r.text);

    enum status_verdict v;
    struct json_object *o = report_json(&v);
    expect_int(o, "logins.0.latest-data.used", 1);
    expect_int(o, "logins.0.latest-data.limit", 60);
    expect_int(o, "logins.0.latest-data.span", 60);
    expect_null(o, "logins.0.latest-data.blocked_until");
    expect_int(o, "logins.0.data-rtr500.used", 0);
    expect_int(o, "logins.0.data-rtr500.limit", 20);
    /* Not spaced out by polling: no reserve and no next routine call. */
    struct json_object *latest = json_at(o, "logins.0.latest-data");
    cr_expect_not(json_object_object_get_ex(latest, "reserve", NULL));
    cr_expect_not(json_object_object_get_ex(latest, "next_call", NULL));
    expect_int(o, "logins.1.latest-data.used", 0);
    json_object_put(o);
}

/* --- logins --------------------------------------------------------------- */

Test(status, a_login_whose_last_call_failed_is_a_problem)
{
    struct state *s = begin();
    healthy(s);
    state_login_result(s, "tbzz9999", false, 401,
                       "account lab, device 5214000A, alert logs: HTTP 401 (code 401: bad key) "
                       "(check api_key, login_id and login_pass)",
                       NOW - MIN);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_PROBLEM);
    char *first = first_line(r.text);
    cr_expect_str_eq(first, "PROBLEM: login tbzz9999: last call failed 1 min ago (account lab, "
                            "device 5214000A, alert logs: HTTP 401 (code 401: bad key) (check "
                            "api_key, login_id and login_pass))");
    free(first);
    expect_line(r.text, "  last success: 11:58 (2 min ago)");
    expect_line(r.text, "  last error: 11:59 (1 min ago), 1 failure in a row: account lab, device "
                        "5214000A, alert logs: HTTP 401 (code 401: bad key) (check api_key, "
                        "login_id and login_pass)");
    free(r.text);

    struct json_object *o = report_json(NULL);
    expect_int(o, "logins.0.failures", 1);
    expect_int(o, "logins.0.last_error.at", NOW - MIN);
    expect_int(o, "logins.0.last_error.status", 401);
    expect_string(o, "logins.0.last_error.message",
                  "account lab, device 5214000A, alert logs: HTTP 401 (code 401: bad key) "
                  "(check api_key, login_id and login_pass)");
    expect_string(o, "problems.0",
                  "login tbzz9999: last call failed 1 min ago (account lab, device 5214000A, "
                  "alert logs: HTTP 401 (code 401: bad key) (check api_key, login_id and "
                  "login_pass))");
    json_object_put(o);

    /* A success afterwards: OK again, the error stays for reading. */
    s = begin();
    state_login_result(s, "tbzz9999", true, 200, NULL, NOW - 30);
    commit(s);
    r = report(false);
    cr_expect_eq(r.verdict, STATUS_OK, "%s", r.text);
    expect_line(r.text, "  last error: 11:59 (1 min ago): account lab, device 5214000A, alert "
                        "logs: HTTP 401 (code 401: bad key) (check api_key, login_id and "
                        "login_pass)");
    free(r.text);
}

Test(status, a_login_that_never_succeeded_is_a_problem)
{
    struct state *s = begin();
    state_record_call(s, "muse0001", PLATFORM_CURRENT, NOW - 10 * MIN);
    state_login_result(s, "muse0001", false, 0,
                       "account museum, discovering devices: "
                       "Couldn't connect to server",
                       NOW - 10 * MIN);
    state_record_call(s, "muse0001", PLATFORM_CURRENT, NOW - MIN);
    state_login_result(s, "muse0001", false, 0,
                       "account museum, discovering devices: "
                       "Couldn't connect to server",
                       NOW - MIN);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_PROBLEM);
    char *first = first_line(r.text);
    cr_expect_str_eq(first, "PROBLEM: login muse0001: no call has succeeded yet; the last failed "
                            "1 min ago (account museum, discovering devices: Couldn't connect "
                            "to server)");
    free(first);
    /* The other login ID has not called yet: worth a look, not more. */
    expect_line(r.text, "WARNING: login tbzz9999: no platform call recorded yet");
    expect_line(r.text, "  last error: 11:59 (1 min ago), 2 failures in a row: account museum, "
                        "discovering devices: Couldn't connect to server");
    free(r.text);
    struct json_object *o = report_json(NULL);
    expect_null(o, "logins.1.last_ok");
    expect_int(o, "logins.1.failures", 2);
    expect_null(o, "logins.1.last_error.status");
    json_object_put(o);
}

Test(status, a_login_silent_for_too_long_is_a_problem_unless_blocked)
{
    struct state *s = begin();
    healthy(s);
    commit(s);
    /* The same state, 20 minutes later: no run has called since. */
    struct state *p = NULL;
    struct err e = {{0}};
    cr_assert_eq(state_peek(&p, state_path, &e), 0, "%s", e.msg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_expect_eq(status_report(f, cfg, p, NULL, NOW + 18 * MIN, false), STATUS_PROBLEM);
    fclose(f);
    char *first = first_line(text);
    cr_expect_str_eq(first, "PROBLEM: login tbzz9999: no platform call since 11:58 (20 min ago): "
                            "is wsrelay still running?; login muse0001: no platform call since "
                            "11:57 (21 min ago): is wsrelay still running?");
    free(first);
    free(text);
    state_close(p);

    /* Blocked by the platform until 5 minutes ago: silence was right. */
    s = begin();
    state_block(s, "tbzz9999", PLATFORM_ALERT, NOW + 13 * MIN);
    state_block(s, "muse0001", PLATFORM_ALERT, NOW + 60 * MIN);
    commit(s);
    cr_assert_eq(state_peek(&p, state_path, &e), 0, "%s", e.msg);
    text = NULL;
    f = open_memstream(&text, &len);
    cr_expect_eq(status_report(f, cfg, p, NULL, NOW + 18 * MIN, false), STATUS_OK);
    fclose(f);
    expect_line(text, "  alert calls blocked by the platform until 13:00 (in 42 min)");
    free(text);
    state_close(p);
}

Test(status, refused_devices_are_warnings_and_all_refused_a_problem)
{
    struct state *s = begin();
    healthy(s);
    state_device_refused(s, "lab", "5214000B", NOW + 23 * 3600, 3);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_OK, "%s", r.text);
    expect_line(r.text, "WARNING: device 5214000B (account lab): refused by the platform (3 in a "
                        "row) until 2026-11-19 11:00 (in 23 h)");
    expect_line(r.text, "      refused by the platform (3 in a row) until 2026-11-19 11:00 (in 23 "
                        "h); last "
                        "poll 11:58 (2 min ago), ok; 0 keys seen");
    expect_line(r.text,
                "  4 devices, each looked at about every 11 min (next polls are estimates)");
    free(r.text);
    struct json_object *o = report_json(NULL);
    expect_string(o, "logins.0.devices.1.state", "refused");
    expect_int(o, "logins.0.devices.1.refused_until", NOW + 23 * 3600);
    expect_int(o, "logins.0.devices.1.refusals", 3);
    expect_null(o, "logins.0.devices.1.next_poll");
    expect_int(o, "logins.0.look_interval", 2 * SPACING);
    json_object_put(o);

    s = begin();
    state_device_refused(s, "museum", "5A000001", NOW + 3600, 1);
    commit(s);
    r = report(false);
    cr_expect_eq(r.verdict, STATUS_PROBLEM);
    char *first = first_line(r.text);
    cr_expect_str_eq(first, "PROBLEM: login muse0001: no device can be polled: 1 refused by the "
                            "platform");
    free(first);
    expect_line(r.text, "  1 device, none polled");
    free(r.text);
}

Test(status, never_polled_devices_come_first_in_the_estimates)
{
    struct state *s = begin();
    healthy(s);
    set_device(s, "annex", "52F00002", "New room", "");
    commit(s);
    struct json_object *o = report_json(NULL);
    expect_string(o, "logins.0.devices.4.serial", "52F00002");
    expect_null(o, "logins.0.devices.4.last_poll");
    expect_int(o, "logins.0.devices.4.next_poll", next_slot(NOW - 2 * MIN));
    expect_int(o, "logins.0.devices.3.next_poll", next_slot(NOW - 2 * MIN) + SPACING);
    expect_int(o, "logins.0.look_interval", 4 * SPACING);
    json_object_put(o);
    struct result r = report(false);
    expect_line(r.text, "    52F00002  New room (account annex)");
    expect_line(r.text, "      never polled; next about 12:03 (in 4 min); 0 keys seen");
    free(r.text);
}

Test(status, a_late_run_polls_several_devices_at_once)
{
    struct state *s = begin();
    healthy(s);
    commit(s);
    /* 14 minutes after the last call: two slots of 327 s earned, due at
     * once; the third device a spacing later. */
    struct state *p = NULL;
    struct err e = {{0}};
    cr_assert_eq(state_peek(&p, state_path, &e), 0, "%s", e.msg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    status_report(f, cfg, p, NULL, NOW + 12 * MIN, true);
    fclose(f);
    struct json_object *o = json_tokener_parse(text);
    cr_assert_not_null(o);
    expect_int(o, "logins.0.alert.next_call", NOW + 12 * MIN);
    expect_int(o, "logins.0.devices.3.next_poll", NOW + 12 * MIN);           /* 52F00001 */
    expect_int(o, "logins.0.devices.0.next_poll", NOW + 12 * MIN);           /* 5214000A */
    expect_int(o, "logins.0.devices.1.next_poll", NOW + 12 * MIN + SPACING); /* 5214000B */
    json_object_put(o);
    free(text);
    state_close(p);
}

/* --- receivers ------------------------------------------------------------ */

Test(status, a_receiver_with_events_waiting_too_long_is_a_problem)
{
    struct state *s = begin();
    healthy(s);
    struct event ev = sample_event(NOW - 30 * MIN);
    state_enqueue(s, "hook", &ev, NOW - 20 * MIN); /* id 1 */
    state_enqueue(s, "hook", &ev, NOW - 10 * MIN); /* id 2 */
    state_receiver_result(s, "hook", false, "receiver 'hook' (webhook): HTTP 503", NOW - 2 * MIN);
    state_receiver_result(s, "hook", false, "receiver 'hook' (webhook): HTTP 503", NOW - MIN);
    state_outbox_failed(s, 1, "receiver 'hook' (webhook): HTTP 503", NOW - MIN);
    state_outbox_failed(s, 2, "receiver 'hook' (webhook): HTTP 503", NOW - MIN);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_PROBLEM);
    char *first = first_line(r.text);
    cr_expect_str_eq(first, "PROBLEM: receiver hook: 2 events waiting since 11:40 (20 min ago), "
                            "last error 1 min ago (receiver 'hook' (webhook): HTTP 503)");
    free(first);
    expect_line(r.text, "    outbox: 2 events, oldest queued 11:40 (20 min ago); next try now");
    expect_line(r.text, "    last success: 11:59 (1 min ago)");
    expect_line(r.text, "    last error: 11:59 (1 min ago), 2 failures in a row: receiver "
                        "'hook' (webhook): HTTP 503");
    free(r.text);
    struct json_object *o = report_json(NULL);
    expect_int(o, "receivers.0.outbox.count", 2);
    expect_int(o, "receivers.0.outbox.oldest_queued", NOW - 20 * MIN);
    expect_int(o, "receivers.0.outbox.next_try", NOW);
    expect_int(o, "receivers.0.failures", 2);
    expect_int(o, "receivers.0.last_error.at", NOW - MIN);
    expect_string(o, "receivers.0.last_error.message", "receiver 'hook' (webhook): HTTP 503");
    cr_expect_not(json_object_object_get_ex(json_at(o, "receivers.0.last_error"), "status", NULL),
                  "a receiver's error has no HTTP status member");
    json_object_put(o);
}

Test(status, a_receiver_failing_for_a_short_while_is_a_warning)
{
    struct state *s = begin();
    healthy(s);
    struct event ev = sample_event(NOW - 30 * MIN);
    state_enqueue(s, "log", &ev, NOW - 5 * MIN);
    state_receiver_result(s, "log", false, "receiver 'log' (file): out.txt: No space left",
                          NOW - 5 * MIN);
    state_receiver_result(s, "hook", false, "receiver 'hook' (webhook): refused for good",
                          NOW - 3 * MIN);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_OK, "%s", r.text);
    expect_line(r.text, "WARNING: receiver hook: last delivery refused 3 min ago and its events "
                        "given up (receiver 'hook' (webhook): refused for good)");
    expect_line(r.text, "WARNING: receiver log: last delivery failed 5 min ago (receiver 'log' "
                        "(file): out.txt: No space left); 1 event waiting");
    free(r.text);
}

Test(status, events_for_a_receiver_no_longer_configured)
{
    struct state *s = begin();
    healthy(s);
    struct event ev = sample_event(NOW - 30 * MIN);
    state_enqueue(s, "old-mail", &ev, NOW - 5 * MIN);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_OK, "%s", r.text);
    expect_line(r.text, "WARNING: receiver old-mail is no longer configured: 1 event wait for it");
    expect_line(r.text, "  old-mail (no longer configured)");
    free(r.text);
    struct json_object *o = report_json(NULL);
    expect_string(o, "receivers.2.name", "old-mail");
    expect_null(o, "receivers.2.type");
    cr_expect_not(json_object_get_boolean(json_at(o, "receivers.2.configured")));
    expect_int(o, "receivers.2.outbox.count", 1);
    json_object_put(o);

    s = begin();
    state_enqueue(s, "old-mail", &ev, NOW - 16 * MIN);
    commit(s);
    r = report(false);
    cr_expect_eq(r.verdict, STATUS_PROBLEM);
    char *first = first_line(r.text);
    cr_expect_str_eq(first, "PROBLEM: receiver old-mail (no longer configured): 2 events waiting "
                            "since 11:44 (16 min ago)");
    free(first);
    free(r.text);
}

/* --- the rest ------------------------------------------------------------- */

Test(status, unrouted_events_are_a_warning)
{
    struct state *s = begin();
    healthy(s);
    state_count(s, "unrouted", 5);
    state_count(s, "dropped", 1);
    commit(s);
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_OK);
    expect_line(r.text, "WARNING: 5 events matched no rule (unrouted)");
    expect_line(r.text, "routing: 1 dropped by a rule, 0 held back by a throttle, 5 matched no "
                        "rule (unrouted)");
    free(r.text);
    struct json_object *o = report_json(NULL);
    expect_string(o, "warnings.0", "5 events matched no rule (unrouted)");
    expect_int(o, "counters.unrouted", 5);
    json_object_put(o);
}

Test(status, an_unreadable_state_is_a_problem)
{
    write_text(state_path, "{\"version\":1,\"seen\":[]}");
    struct result r = report(false);
    cr_expect_eq(r.verdict, STATUS_PROBLEM);
    char *want = xasprintf("PROBLEM: the state file cannot be read: %s: corrupt state file: "
                           "seen: not an object",
                           state_path);
    char *first = first_line(r.text);
    cr_expect_str_eq(first, want);
    free(first);
    free(want);
    cr_expect_null(strstr(r.text, "login "), "nothing else is claimed:\n%s", r.text);
    free(r.text);
    enum status_verdict v;
    struct json_object *o = report_json(&v);
    cr_expect_eq(v, STATUS_PROBLEM);
    expect_string(o, "verdict", "PROBLEM");
    cr_expect_eq(json_object_array_length(json_at(o, "logins")), 0);
    expect_null(o, "counters");
    json_object_put(o);
}

Test(status, text_from_outside_cannot_move_the_terminal)
{
    struct state *s = begin();
    healthy(s);
    set_device(s, "lab", "5214000C", "Evil\x1b[2J\r\nname\xc2\x9b", "M\x07");
    state_receiver_result(s, "hook", false, "far end said \x1b]0;title\x07", NOW - MIN);
    commit(s);
    struct result r = report(false);
    for (const char *p = r.text; *p; p++)
        cr_expect((unsigned char)*p >= 0x20 || *p == '\n', "control character %#x in:\n%s",
                  (unsigned)(unsigned char)*p, r.text);
    cr_expect_null(strstr(r.text, "\xc2\x9b"), "a C1 control in:\n%s", r.text);
    expect_line(r.text, "    5214000C  Evil [2J  name  (M , account lab)");
    free(r.text);
}

Test(status, times_of_another_day_carry_the_date_and_long_spans_hours_or_days)
{
    struct state *s = begin();
    healthy(s);
    state_receiver_result(s, "log", false, "old trouble", NOW - 3 * 86400 - 30 * MIN);
    state_receiver_result(s, "log", true, NULL, NOW - 5 * 3600);
    commit(s);
    struct result r = report(false);
    expect_line(r.text, "    last success: 07:00 (5 h ago)");
    expect_line(r.text, "    last error: 2026-11-15 11:30 (3 d ago): old trouble");
    free(r.text);
}

/* With signals (the default; the other tests turn them off to check the
 * round robin's arithmetic alone): the round robin leaves free as many
 * calls as signals took in the last hour, the bound is shown, and each
 * device's last reading and signal. */
Test(status, signals_show_the_readings_the_bound_and_the_calls)
{
    cfg->accounts[0].signals = true;
    cfg->accounts[1].signals = true;
    struct state *s = begin();
    healthy(s);
    struct watch w = {.unixtime = NOW - 90,
                      .seen_at = NOW - 60,
                      .battery = 2,
                      .n_ch = 2,
                      .pending = WATCH_LIMIT | WATCH_BATTERY,
                      .pending_since = NOW - 60};
    w.ch[0] = (struct watch_channel){.num = 1, .value = 9.4, .zone = 1};
    w.ch[1] = (struct watch_channel){.num = 2, .error = true};
    state_set_watch(s, "5214000A", &w);
    state_record_signal_call(s, "tbzz9999", NOW - 500);
    state_set_signals_starved(s, "tbzz9999", NOW - 7200);
    state_set_silence_after(s, "tbzz9999", 1170);
    commit(s);
    struct result r = report(false);
    expect_line(r.text, "  of those, 1 for signals and 3 for the round robin");
    expect_line(r.text, "  the platform logs a communication error 20 min after a device's last "
                        "upload: a device whose uploads stop is looked at then");
    expect_line(r.text, "  signals have waited for alert calls since 10:00 (2 h ago) (a read-only "
                        "login ID adds 12 calls an hour)");
    /* 3 polled devices (one is excluded) at 360 s (one signal call in the
     * last hour: the round robin makes 10 calls an hour): 18 min; the
     * bound counts with the most headroom (6 calls an hour, 600 s): 1.5
     * rounds + 600 s. */
    expect_line(r.text, "  4 devices: a signal is looked at within minutes; without one, each "
                        "about every 18 min, and never more than 55 min apart (next polls are "
                        "estimates)");
    expect_line(r.text, "      reading 11:59 (1 min ago): ch1 9.4 (above its limit), ch2 error "
                        "value; battery 2");
    expect_line(r.text, "      signal since 11:59 (1 min ago) (limit, battery): its alert log is "
                        "read at the next call");
    cr_expect_not_null(strstr(r.text, "WARNING: login tbzz9999: devices with a signal have waited"),
                       "%s", r.text);
    free(r.text);
    enum status_verdict v;
    struct json_object *o = report_json(&v);
    expect_int(o, "logins.0.round_robin_bound", 3 * 600 + 900 + 600);
    expect_int(o, "logins.0.signal_calls_last_hour", 1);
    expect_int(o, "logins.0.silence_after", 1170);
    expect_int(o, "logins.0.devices.0.reading.battery", 2);
    expect_int(o, "logins.0.devices.0.reading.channels.0.zone", 1);
    expect_null(o, "logins.0.devices.0.reading.channels.1.value");
    expect_int(o, "logins.0.devices.0.reading.signal.since", NOW - 60);
    json_object_put(o);
}

/* A healthy state whose device 5214000A has the readings memory `w`, in
 * an account that watches readings. */
static void commit_watch(const struct watch *w)
{
    cfg->accounts[0].signals = true;
    struct state *s = begin();
    healthy(s);
    state_set_watch(s, "5214000A", w);
    commit(s);
}

/* A signal an early warning told of says that it waits. */
Test(status, an_announced_signal_says_it_waits)
{
    struct watch w = {.unixtime = NOW - 90,
                      .seen_at = NOW - 60,
                      .n_ch = 1,
                      .pending = WATCH_LIMIT,
                      .pending_since = NOW - 60,
                      .pending_told = true};
    w.ch[0] = (struct watch_channel){.num = 1, .value = 9.4, .zone = 1};
    commit_watch(&w);
    struct result r = report(false);
    expect_line(r.text, "      signal since 11:59 (1 min ago) (limit): its warning is out; its "
                        "alert log is read after the signals not announced yet");
    free(r.text);
    enum status_verdict v;
    struct json_object *o = report_json(&v);
    struct json_object *told = json_at(o, "logins.0.devices.0.reading.signal.told");
    cr_expect(json_object_is_type(told, json_type_boolean) && json_object_get_boolean(told));
    json_object_put(o);
}

/* An unusual reading's hint says that the round robin reads the device
 * early; the JSON has its time. */
Test(status, a_hint_says_the_round_robin_reads_the_device_early)
{
    struct watch w = {.unixtime = NOW - 90, .seen_at = NOW - 60, .n_ch = 1, .hint_at = NOW - 90};
    w.ch[0] = (struct watch_channel){.num = 1, .value = 36.0};
    commit_watch(&w);
    struct result r = report(false);
    expect_line(r.text, "      an unusual reading at 11:58 (1 min ago): the round robin reads "
                        "its alert log early");
    free(r.text);
    enum status_verdict v;
    struct json_object *o = report_json(&v);
    expect_int(o, "logins.0.devices.0.reading.hint_at", NOW - 90);
    json_object_put(o);
}

/* A look planned for later (a look once more, or a crossing foreseen
 * before the next upload) says when; the JSON has its time. */
Test(status, a_planned_look_says_when)
{
    struct watch w = {
        .unixtime = NOW - 90, .seen_at = NOW - 60, .n_ch = 1, .recheck_at = NOW + 240};
    w.ch[0] = (struct watch_channel){.num = 1, .value = -71.6};
    commit_watch(&w);
    struct result r = report(false);
    expect_line(r.text,
                "      its alert log is read once more at 12:04 (in 4 min) (a signal's look "
                "found nothing yet, or a limit will be crossed before its next upload)");
    free(r.text);
    enum status_verdict v;
    struct json_object *o = report_json(&v);
    expect_int(o, "logins.0.devices.0.reading.recheck_at", NOW + 240);
    json_object_put(o);
}
