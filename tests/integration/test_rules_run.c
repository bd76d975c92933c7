/* Routing rules end to end: `wsrelay run` against the simulator with rule
 * files, and three real receivers on this machine (the webhook sink and two
 * file receivers). Each test says which event ids must reach which receiver
 * and checks that exactly those, and nothing else, arrive.
 *
 * (Named test_rules_run.c, not test_rules.c: CMake names each test after its
 * file, and tests/unit/test_rules.c has that name.) */
#include "proc.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Wed 2026-11-18 11:06:40 UTC, 20:06:40 in Tokyo. */
#define T0 1795000000LL

static struct relay R;

static void teardown(void)
{
    if (R.dir)
        relay_stop(&R);
}

TestSuite(rules_run, .fini = teardown, .timeout = 240);

/* --- what the receivers got --------------------------------------------- */

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The non-empty lines of `text` (NULL: none), sorted, each ending in "\n";
 * caller frees. */
static char *sorted_lines(const char *text)
{
    char **lines = NULL;
    size_t n = 0;
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len) {
            lines = xreallocarray(lines, n + 1, sizeof *lines);
            lines[n++] = xasprintf("%.*s", (int)len, p);
        }
        p += len + (end ? 1 : 0);
    }
    qsort(lines, n, sizeof *lines, by_string);
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        buf_printf(&b, "%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    return buf_steal(&b);
}

/* A member that must be a string or null: its text, or "-" for null. */
static const char *string_or_null(struct json_object *ev, const char *key)
{
    struct json_object *v;
    cr_assert(json_object_object_get_ex(ev, key, &v), "event without '%s'", key);
    if (json_object_is_type(v, json_type_null))
        return "-";
    cr_assert(json_object_is_type(v, json_type_string), "'%s' is neither a string nor null", key);
    return json_object_get_string(v);
}

/* Every event of every webhook request so far, in arrival order (a new
 * reference). The documents' shape is checked by relay_hook_keys. */
static struct json_object *hook_events(void)
{
    size_t n;
    free(relay_hook_keys(&R, &n));
    struct json_object *all = json_object_new_array();
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        struct json_object *doc = json_tokener_parse(rq->body), *events;
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        for (size_t k = 0; k < json_object_array_length(events); k++)
            json_object_array_add(all, json_object_get(json_object_array_get_idx(events, k)));
        json_object_put(doc);
        hook_request_free(rq);
    }
    cr_assert_eq(json_object_array_length(all), n);
    return all;
}

/* The webhook's events as "ID RULE SEVERITY" lines ("-" for null), sorted. */
static char *hook_lines(void)
{
    struct json_object *all = hook_events();
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        struct json_object *ev = json_object_array_get_idx(all, i);
        buf_printf(&b, "%s %s %s\n", string_or_null(ev, "id"), string_or_null(ev, "rule"),
                   string_or_null(ev, "severity"));
    }
    json_object_put(all);
    char *text = buf_steal(&b);
    char *sorted = sorted_lines(text);
    free(text);
    return sorted;
}

/* The webhook event with `id` (a new reference); fails when there is not
 * exactly one. */
static struct json_object *hook_event(const char *id)
{
    struct json_object *all = hook_events(), *found = NULL, *v;
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        struct json_object *ev = json_object_array_get_idx(all, i);
        cr_assert(json_object_object_get_ex(ev, "id", &v));
        if (strcmp(json_object_get_string(v), id) == 0) {
            cr_assert_null(found, "event %s arrived twice", id);
            found = json_object_get(ev);
        }
    }
    json_object_put(all);
    cr_assert_not_null(found, "event %s did not arrive", id);
    return found;
}

/* What file receiver `name` wrote (DIR/NAME.txt through ids.txt), sorted. */
static char *file_lines(const char *name)
{
    char *path = xasprintf("%s/%s.txt", R.dir, name);
    char *text = read_file_str(path);
    char *sorted = sorted_lines(text);
    free(text);
    free(path);
    return sorted;
}

/* counters.NAME of the state file (0 when absent). */
static long long counter(const char *name)
{
    char *text = read_file_str(R.state_path);
    cr_assert_not_null(text, "no state file");
    struct json_object *st = json_tokener_parse(text), *counters, *v;
    cr_assert_not_null(st, "the state is not JSON: %s", text);
    long long n = 0;
    cr_assert(json_object_object_get_ex(st, "counters", &counters), "no counters: %s", text);
    if (json_object_object_get_ex(counters, name, &v)) {
        cr_assert(json_object_is_type(v, json_type_int), "counters.%s: %s", name, text);
        n = json_object_get_int64(v);
    }
    json_object_put(st);
    free(text);
    return n;
}

/* The serials of the simulator's alert calls so far, one per line. */
static char *polled_serials(void)
{
    struct json_object *stats = sim_stats(&R.sim), *calls, *v;
    struct buf b;
    buf_init(&b, 0);
    cr_assert(json_object_object_get_ex(stats, "calls", &calls));
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        struct json_object *c = json_object_array_get_idx(calls, i);
        cr_assert(json_object_object_get_ex(c, "op", &v));
        if (strcmp(json_object_get_string(v), "alert") != 0)
            continue;
        cr_assert(json_object_object_get_ex(c, "serial", &v));
        buf_printf(&b, "%s\n", json_object_get_string(v));
    }
    json_object_put(stats);
    return buf_steal(&b);
}

static void put_file(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", R.dir, name);
    write_file(path, text);
    free(path);
}

static void make_rules_dir(void)
{
    char *path = xasprintf("%s/rules.d", R.dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    free(path);
}

static void assert_lines(const char *got, const char *want, const char *receiver)
{
    cr_assert_str_eq(got, want, "receiver %s got:\n%s\nexpected:\n%s", receiver, got, want);
}

/* --- a day at the lab: every kind of match --------------------------------- */

/* The webhook sink, and two file receivers that write one line per event
 * with what routed it. */
static const char three_receivers[] =
    "  - name: hook\n"
    "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: \"Bearer t0ken\"}}\n"
    "  - name: oncall\n"
    "    file: {path: \"@DIR@/oncall.txt\", template: \"@DIR@/ids.txt\"}\n"
    "  - name: facilities\n"
    "    file: {path: \"@DIR@/facilities.txt\", template: \"@DIR@/ids.txt\"}\n";

static const char ids_template[] =
    "{{#events}}\n"
    "{{id}} {{#rule}}{{rule}}{{/rule}}{{^rule}}-{{/rule}} "
    "{{#severity}}{{severity}}{{/severity}}{{^severity}}-{{/severity}}\n"
    "{{/events}}\n";

static const char lab_rules_10[] =
    "# Freezers: the person on call and the hook at once, the lab as well.\n"
    "- name: freezer-critical\n"
    "  match:\n"
    "    device: [\"Freezer*\", \"冷凍庫?号\"]\n"
    "    event: [alarm, sensor-error]\n"
    "  receivers: [oncall, hook]\n"
    "  severity: critical\n"
    "  continue: true\n"
    "\n"
    "- name: freezer-recovered\n"
    "  match:\n"
    "    device: [\"freezer*\", \"冷凍庫?号\"]\n"
    "    event: recovered\n"
    "  receivers: [oncall]\n"
    "\n"
    "- name: cold-rooms-evening\n"
    "  match: {serial: \"5820D1??\", kind: ch1}\n"
    "  when: \"Mon-Fri 20:25-20:30\"\n"
    "  receivers: [facilities]\n"
    "  severity: high\n"
    "\n"
    "- name: lab-a\n"
    "  match: {group: \"Lab A\", kind: [ch1, ch2]}\n"
    "  receivers: [facilities, oncall]\n"
    "  severity: info\n";

static const char lab_rules_20[] = "- name: doors\n"
                                   "  match: {group: Office, text: \"(?i)door|扉\"}\n"
                                   "  receivers: [facilities]\n"
                                   "  severity: low\n"
                                   "\n"
                                   "- name: office-radio\n"
                                   "  match: {group: \"Off*\", event: communication}\n"
                                   "  drop: true\n"
                                   "\n"
                                   "- name: radio\n"
                                   "  match: {kind: communication-status}\n"
                                   "  receivers: [facilities]\n"
                                   "\n"
                                   "- name: batteries\n"
                                   "  match: {kind: battery-level}\n"
                                   "  receivers: [facilities]\n"
                                   "  severity: low\n"
                                   "  continue: true\n";

static void start_lab(void)
{
    relay_start_world(&R, "lab-groups");
    make_rules_dir();
    put_file("rules.d/10-lab.yaml", lab_rules_10);
    put_file("rules.d/20-office.yaml", lab_rules_20);
    put_file("rules.d/README.txt", "- name: not-a-rule-file\n  receivers: [hook]\n");
    put_file("ids.txt", ids_template);
    relay_config_extra(&R, NULL, three_receivers,
                       "rules: @DIR@/rules.d\n"
                       "timezone: Asia/Tokyo\n"
                       "default_receivers: [hook]\n");
    /* The window is read on Tokyo's clock, whatever the machine's zone. */
    setenv("TZ", "UTC", 1);
}

/*   freezer alarms     freezer-critical (continue) -> oncall, hook; lab-a -> facilities
 *                      (oncall named twice: once, marked freezer-critical)
 *   freezer recovery   freezer-recovered (stops)   -> oncall only
 *   freezer battery    batteries                   -> facilities
 *   warehouse          nothing matches but radio   -> hook (default) / facilities
 *   door texts         doors (regex, EN and JA)    -> facilities
 *   office radio       office-radio drops it       -> nobody, counted
 *   cold room 1        polled at 20:26:40 Tokyo: inside 20:25-20:30 -> facilities
 *   cold room 2        polled at 20:31:40 Tokyo: outside            -> hook (default) */
Test(rules_run, each_event_reaches_exactly_the_receivers_its_rules_name)
{
    start_lab();
    for (int k = 0; k < 6; k++)
        cr_assert_eq(relay_run_at(&R, T0 + k * 300, NULL), 0, "run %d", k);
    char *polled = polled_serials();
    cr_assert_str_eq(polled, "5214000A\n5214000B\n5279B002\n52F00001\n5820D101\n5820D102\n",
                     "the test assumes one device per run in this order: %s", polled);
    free(polled);

    char *got = file_lines("oncall");
    assert_lines(got,
                 "5214000A/1794998800/ch1 freezer-critical critical\n"
                 "5214000A/1794999400/ch1 freezer-recovered -\n"
                 "5214000B/1794998900/ch1 freezer-critical critical\n",
                 "oncall");
    free(got);
    got = file_lines("facilities");
    assert_lines(got,
                 "5214000A/1794998800/ch1 lab-a info\n"
                 "5214000B/1794998900/battery-level batteries low\n"
                 "5214000B/1794998900/ch1 lab-a info\n"
                 "5279B002/1794999000/communication-status radio -\n"
                 "52F00001/1794999200/ch1 doors low\n"
                 "52F00001/1794999200/ch2 doors low\n"
                 "5820D101/1794999500/ch1 cold-rooms-evening high\n",
                 "facilities");
    free(got);
    got = hook_lines();
    assert_lines(got,
                 "5214000A/1794998800/ch1 freezer-critical critical\n"
                 "5214000B/1794998900/ch1 freezer-critical critical\n"
                 "5279B002/1794999000/ch2 - -\n"
                 "5279B002/1794999100/ch1 - -\n"
                 "5820D102/1794999600/ch1 - -\n",
                 "hook");
    free(got);

    cr_assert_eq(counter("dropped"), 1, "the office radio error");
    cr_assert_eq(counter("unrouted"), 0);
    cr_assert_eq(counter("throttled"), 0);

    /* What the rules matched on reaches the webhook as the platform said it. */
    struct json_object *ev = hook_event("5279B002/1794999100/ch1"), *v;
    cr_assert_str_eq(string_or_null(ev, "state"), "other", "an unknown text is 'other'");
    cr_assert_str_eq(string_or_null(ev, "group"), "Warehouse");
    cr_assert_str_eq(string_or_null(ev, "text"), "CH1 Something unexpected happened");
    cr_assert(json_object_object_get_ex(ev, "held", &v));
    cr_assert_eq(json_object_get_int(v), 0);
    json_object_put(ev);
    ev = hook_event("5214000B/1794998900/ch1");
    cr_assert_str_eq(string_or_null(ev, "name"), "冷凍庫二号");
    cr_assert_str_eq(string_or_null(ev, "group"), "Lab A");
    cr_assert_str_eq(string_or_null(ev, "state"), "alarm");
    json_object_put(ev);

    /* Six more runs poll every device again: nothing is routed twice. */
    size_t hook_requests = hooksink_count(R.hook);
    char *before_oncall = file_lines("oncall"), *before_fac = file_lines("facilities");
    for (int k = 6; k < 12; k++)
        cr_assert_eq(relay_run_at(&R, T0 + k * 300, NULL), 0, "run %d", k);
    cr_assert_eq(hooksink_count(R.hook), hook_requests);
    char *after_oncall = file_lines("oncall"), *after_fac = file_lines("facilities");
    cr_assert_str_eq(after_oncall, before_oncall);
    cr_assert_str_eq(after_fac, before_fac);
    cr_assert_eq(counter("dropped"), 1, "a seen event is not dropped again");
    free(before_oncall);
    free(before_fac);
    free(after_oncall);
    free(after_fac);
}

/* --- throttle -------------------------------------------------------------- */

/* One freezer whose door was left ajar: an alarm every 30 s from T0 to
 * T0+720 (25 entries), then one more at T0+1800. */
static char *flapping_scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"now\": 1795000000, \"accounts\": [{"
                 "  \"api_key\": \"@API_KEY@\", \"login_id\": \"@LOGIN@\","
                 "  \"login_pass\": \"@PASSWORD@\","
                 "  \"devices\": ["
                 "   {\"serial\": \"5214000A\", \"model\": \"TR-72A2\", \"name\": \"Freezer A\","
                 "    \"time_diff\": 540, \"alerts\": [");
    for (int i = 0; i < 25; i++)
        buf_printf(&b, "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded -7%d.0°C\"},",
                   T0 + 30 * i, i % 10);
    buf_printf(&b, "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded -71.5°C\"}",
               T0 + 1800);
    buf_puts(&b, "]}]}]}");
    return buf_steal(&b);
}

Test(rules_run, a_throttle_lets_one_through_and_the_next_says_how_many_it_held)
{
    char *scenario = flapping_scenario();
    relay_start(&R, scenario);
    free(scenario);
    put_file("rules.yaml", "- name: freezer-flap\n"
                           "  match: {serial: \"5214*\", event: alarm}\n"
                           "  receivers: [hook]\n"
                           "  severity: critical\n"
                           "  throttle: 30m\n");
    relay_config_extra(&R, NULL, NULL, "rules: @DIR@/rules.yaml\n");
    /* One poll per five minutes sees at most ten new entries. */
    for (long long now = T0; now <= T0 + 1800; now += 300)
        cr_assert_eq(relay_run_at(&R, now, NULL), 0, "run at %lld", now);

    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_str_eq(keys, "5214000A/1795000000/ch1\n5214000A/1795001800/ch1\n", "%s", keys);
    free(keys);
    struct json_object *first = hook_event("5214000A/1795000000/ch1"), *v;
    cr_assert(json_object_object_get_ex(first, "held", &v));
    cr_assert_eq(json_object_get_int(v), 0);
    cr_assert(json_object_object_get_ex(first, "held_since", &v));
    cr_assert_eq(json_object_get_int64(v), 0);
    cr_assert_str_eq(string_or_null(first, "held_since_time"), "-");
    cr_assert_str_eq(string_or_null(first, "rule"), "freezer-flap");
    json_object_put(first);

    struct json_object *next = hook_event("5214000A/1795001800/ch1");
    cr_assert(json_object_object_get_ex(next, "held", &v));
    cr_assert_eq(json_object_get_int(v), 24, "T0+30 ... T0+720 were held back");
    cr_assert(json_object_object_get_ex(next, "held_since", &v));
    cr_assert_eq(json_object_get_int64(v), T0 + 30);
    /* T0+30 is 20:07:10 in Tokyo, the same local date as the event. */
    cr_assert_str_eq(string_or_null(next, "held_since_time"), "20:07");
    cr_assert_str_eq(string_or_null(next, "rule"), "freezer-flap");
    cr_assert_str_eq(string_or_null(next, "severity"), "critical");
    json_object_put(next);

    char *text = read_file_str(R.out_path);
    cr_assert_null(text, "the file receiver is named by no rule: %s", text);
    cr_assert_eq(counter("throttled"), 24);
    cr_assert_eq(counter("unrouted"), 0);
}

/* --- unrouted ------------------------------------------------------------- */

static const char one_freezer[] =
    "{\"now\": 1795000000, \"accounts\": [{"
    "  \"api_key\": \"@API_KEY@\", \"login_id\": \"@LOGIN@\","
    "  \"login_pass\": \"@PASSWORD@\","
    "  \"devices\": ["
    "   {\"serial\": \"5214000A\", \"model\": \"TR-72A2\", \"name\": \"Freezer A\","
    "    \"time_diff\": 540, \"alerts\": ["
    "      {\"unixtime\": 1794999000, \"ch1\": \"CH1 Upper Limit Exceeded -70.2°C\","
    "       \"battery-level\": \"Low Battery Warning\"}]}]}]}";

Test(rules_run, an_event_no_rule_matches_is_warned_about_and_counted_once)
{
    relay_start(&R, one_freezer);
    put_file("rules.yaml", "- name: alarms\n"
                           "  match: {event: alarm}\n"
                           "  receivers: [hook]\n");
    relay_config_extra(&R, NULL, NULL, "rules: @DIR@/rules.yaml\n");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 0, "%s", err);
    cr_assert(strstr(err, "event 5214000A/1794999000/battery-level matched no rule"), "%s", err);
    cr_assert_null(strstr(err, "1794999000/ch1 matched"), "%s", err);
    free(err);
    size_t n;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_str_eq(keys, "5214000A/1794999000/ch1\n");
    free(keys);
    cr_assert_null(read_file_str(R.out_path), "the file receiver gets nothing");
    cr_assert_eq(counter("unrouted"), 1);

    /* The next poll of the same log: seen, so neither sent nor warned again. */
    cr_assert_eq(relay_run_at(&R, T0 + 300, &err), 0, "%s", err);
    cr_assert_null(strstr(err, "matched no rule"), "%s", err);
    free(err);
    struct json_object *stats = sim_stats(&R.sim), *v;
    cr_assert(json_object_object_get_ex(stats, "calls", &v));
    size_t alert_calls = 0;
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        struct json_object *op;
        json_object_object_get_ex(json_object_array_get_idx(v, i), "op", &op);
        alert_calls += strcmp(json_object_get_string(op), "alert") == 0;
    }
    json_object_put(stats);
    cr_assert_eq(alert_calls, 2, "the second run polled the device again");
    cr_assert_eq(hooksink_count(R.hook), 1);
    cr_assert_null(read_file_str(R.out_path));
    cr_assert_eq(counter("unrouted"), 1);
}

/* --- no rules ----------------------------------------------------------- */

Test(rules_run, without_rules_every_receiver_gets_every_event)
{
    relay_start(&R, one_freezer);
    make_rules_dir();
    relay_config_extra(&R, NULL, NULL, "rules: @DIR@/rules.d\n");
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    char *got = hook_lines();
    assert_lines(got,
                 "5214000A/1794999000/battery-level - -\n"
                 "5214000A/1794999000/ch1 - -\n",
                 "hook");
    free(got);
    char *text = read_file_str(R.out_path);
    cr_assert_not_null(text, "the file receiver got nothing");
    cr_assert_eq(occurrences(text, "CH1 Upper Limit Exceeded -70.2°C"), 1, "%s", text);
    cr_assert_eq(occurrences(text, "Low Battery Warning"), 1, "%s", text);
    cr_assert_eq(occurrences(text, "account lab"), 2, "%s", text);
    free(text);
    cr_assert_eq(counter("unrouted"), 0);
}
