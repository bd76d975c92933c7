/* Routing rules: reading rule files (every mistake with FILE:LINE:COL) and
 * routing events through them: matching, order, continue, drop, windows,
 * throttles and where unmatched events go. Each test writes a config and
 * its rule files into a fresh temporary directory. */
#include "config.h"
#include "proc.h"
#include "rules.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/wsrelay-rules-XXXXXX";
static struct config *cfg;
static struct rules *rules;
static struct err err;

static void setup(void)
{
    cr_assert_not_null(mkdtemp(tmp));
}

static void teardown(void)
{
    rules_free(rules);
    rules = NULL;
    config_free(cfg);
    cfg = NULL;
    test_rmtree(tmp);
}

TestSuite(rules, .init = setup, .fini = teardown);

static void put(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot create %s", path);
    fputs(text, f);
    fclose(f);
    free(path);
}

/* A config with receivers mail, slack and hook, plus `extra` top-level
 * lines (rules:, timezone:, default_receivers:). */
static int load(const char *extra)
{
    char *yaml = xasprintf("accounts:\n"
                           "  - name: tokyo\n"
                           "    api_key: k\n"
                           "    login_id: tdlogin1\n"
                           "    login_pass: p\n"
                           "receivers:\n"
                           "  - name: mail\n"
                           "    file: {path: out-mail.txt}\n"
                           "  - name: slack\n"
                           "    file: {path: out-slack.txt}\n"
                           "  - name: hook\n"
                           "    file: {path: out-hook.txt}\n"
                           "%s",
                           extra);
    put("wsrelay.yaml", yaml);
    free(yaml);
    char *path = xasprintf("%s/wsrelay.yaml", tmp);
    config_free(cfg);
    cfg = NULL;
    memset(&err, 0, sizeof err);
    int rc = config_load(&cfg, path, &err);
    free(path);
    return rc;
}

/* Loads the config with rules.yaml holding `yaml` and compiles them. */
static void with_rules(const char *yaml, const char *extra)
{
    rules_free(rules); /* compiled from the config load() replaces */
    rules = NULL;
    put("rules.yaml", yaml);
    char *top = xasprintf("rules: rules.yaml\n%s", extra ? extra : "");
    int rc = load(top);
    free(top);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(rules_new(&rules, cfg, &err), 0, "%s", err.msg);
}

/* The rule file's mistake is reported as rules.yaml:TAIL, where "@F@" in
 * TAIL stands for the rule file's path. */
static void expect_rule_error(const char *yaml, const char *tail)
{
    put("rules.yaml", yaml);
    cr_assert_eq(load("rules: rules.yaml\n"), -1, "accepted:\n%s", yaml);
    char *file = xasprintf("%s/rules.yaml", tmp);
    char *want = xasprintf("%s:%s", file, tail);
    char *at = strstr(want, "@F@");
    if (at) {
        *at = '\0';
        char *whole = xasprintf("%s%s%s", want, file, at + 3);
        free(want);
        want = whole;
    }
    cr_assert_str_eq(err.msg, want);
    free(want);
    free(file);
}

static struct event ev_of(const char *serial, const char *kind, const char *state, const char *text,
                          long long t)
{
    struct event ev = {
        .account = (char *)"tokyo",
        .serial = (char *)serial,
        .model = (char *)"TR-72nw",
        .name = (char *)"Freezer A",
        .base_serial = (char *)serial,
        .base_model = (char *)"TR-72nw",
        .base_name = (char *)"Freezer A",
        .unixtime = t,
        .kind = (char *)kind,
        .text = (char *)text,
        .state = (char *)state,
    };
    return ev;
}

static struct event alarm_at(long long t)
{
    return ev_of("52140001", "ch1", "alarm", "CH1 Upper Limit Exceeded -70.2°C", t);
}

/* The receivers of a route, "a,b", for comparisons. */
static char *targets(const struct route *rt)
{
    char *out = xstrdup("");
    for (size_t i = 0; i < rt->n_targets; i++) {
        char *next = xasprintf("%s%s%s", out, i ? "," : "", rt->targets[i].receiver);
        free(out);
        out = next;
    }
    return out;
}

/* The receivers of `rt` are `want` ("a,b"). */
static void expect_targets(const struct route *rt, const char *want)
{
    char *got = targets(rt);
    cr_assert_str_eq(got, want);
    free(got);
}

/* Routes `ev` at `now` without throttles and checks the receivers. */
static void expect_route(const struct event *ev, long long now, const char *want,
                         enum route_outcome outcome)
{
    struct route rt;
    rules_route(&rt, rules, ev, now, NULL);
    char *got = targets(&rt);
    cr_assert_str_eq(got, want, "event %s/%s at %lld: got '%s', want '%s'", ev->serial, ev->kind,
                     now, got, want);
    cr_assert_eq(rt.outcome, outcome, "outcome %s", route_outcome_name(rt.outcome));
    free(got);
    route_free(&rt);
}

#define NOW 1763769600LL /* 2025-11-22 00:00:00 UTC, a Saturday; 09:00 in Tokyo */

/* --- where events go without rules, and when nothing matches ------------ */

Test(rules, without_rules_every_event_goes_to_every_receiver)
{
    cr_assert_eq(load("rules: rules.d\n"), -1);
    char *dir = xasprintf("%s/rules.d", tmp);
    mkdir(dir, 0700);
    free(dir);
    cr_assert_eq(load("rules: rules.d\n"), 0, "%s", err.msg);
    cr_assert_eq(cfg->n_rules, 0);
    cr_assert_eq(rules_new(&rules, cfg, &err), 0);
    struct event ev = alarm_at(NOW);
    expect_route(&ev, NOW, "mail,slack,hook", ROUTE_SENT);
}

Test(rules, without_rules_default_receivers_take_everything)
{
    cr_assert_eq(load("default_receivers: [hook]\n"), 0, "%s", err.msg);
    cr_assert_eq(rules_new(&rules, cfg, &err), 0);
    struct event ev = alarm_at(NOW);
    expect_route(&ev, NOW, "hook", ROUTE_SENT);
}

Test(rules, unmatched_events_go_to_default_receivers_or_are_unrouted)
{
    with_rules("- name: batteries\n  match: {kind: battery-level}\n  receivers: [mail]\n", NULL);
    struct event ev = alarm_at(NOW);
    struct route rt;
    rules_route(&rt, rules, &ev, NOW, NULL);
    cr_assert_eq(rt.outcome, ROUTE_UNROUTED);
    cr_assert_eq(rt.n_targets, 0);
    cr_assert_eq(rt.trials[0].verdict, RULE_NO_MATCH);
    cr_assert_str_eq(rt.trials[0].why, "kind 'ch1' is not battery-level");
    route_free(&rt);
    rules_free(rules);
    rules = NULL;
    with_rules("- name: batteries\n  match: {kind: battery-level}\n  receivers: [mail]\n",
               "default_receivers: [slack, hook]\n");
    rules_route(&rt, rules, &ev, NOW, NULL);
    cr_assert_eq(rt.outcome, ROUTE_SENT);
    cr_assert(rt.by_default);
    cr_assert_null(rt.targets[0].rule);
    route_free(&rt);
    expect_route(&ev, NOW, "slack,hook", ROUTE_SENT);
}

/* --- matching ------------------------------------------------------------ */

Test(rules, every_match_field)
{
    with_rules("- name: acct\n  match: {account: tok*, kind: ch2}\n  receivers: [mail]\n"
               "- name: serial\n  match: {serial: [\"9999*\", \"5214*\"], kind: ch3}\n"
               "  receivers: [mail]\n"
               "- name: device\n  match: {device: \"冷凍庫?\", kind: ch4}\n  receivers: [mail]\n"
               "- name: model\n  match: {model: \"tr-7*\", kind: ch5}\n  receivers: [mail]\n"
               "- name: group\n  match: {group: \"Lab A\", kind: ch6}\n  receivers: [mail]\n"
               "- name: state\n  match: {event: [sensor-error, battery]}\n  receivers: [slack]\n"
               "- name: text\n  match: {text: \"(?i)upper\"}\n  receivers: [hook]\n",
               NULL);
    struct event ev = alarm_at(NOW);
    ev.kind = (char *)"ch2";
    expect_route(&ev, NOW, "mail", ROUTE_SENT);
    ev.account = (char *)"osaka";
    expect_route(&ev, NOW, "hook", ROUTE_SENT); /* falls through to the text rule */
    ev.account = (char *)"tokyo";
    ev.kind = (char *)"ch3";
    expect_route(&ev, NOW, "mail", ROUTE_SENT);
    ev.serial = (char *)"52150001";
    expect_route(&ev, NOW, "hook", ROUTE_SENT);
    ev.kind = (char *)"ch4";
    ev.name = (char *)"冷凍庫Ｂ";
    expect_route(&ev, NOW, "mail", ROUTE_SENT);
    ev.name = (char *)"冷凍庫BB";
    expect_route(&ev, NOW, "hook", ROUTE_SENT);
    ev.kind = (char *)"ch5"; /* globs ignore ASCII case: tr-7* matches TR-72nw */
    expect_route(&ev, NOW, "mail", ROUTE_SENT);
    ev.kind = (char *)"ch6";
    expect_route(&ev, NOW, "hook", ROUTE_SENT); /* no group known */
    ev.group = (char *)"Lab A";
    expect_route(&ev, NOW, "mail", ROUTE_SENT);
    ev.kind = (char *)"ch1";
    ev.state = (char *)"sensor-error";
    expect_route(&ev, NOW, "slack", ROUTE_SENT);
    ev.state = (char *)"recovered";
    ev.text = (char *)"CH1 Measurement Recovery";
    expect_route(&ev, NOW, "", ROUTE_UNROUTED);
}

Test(rules, all_fields_must_match_and_the_reason_names_the_first_that_does_not)
{
    with_rules("- name: strict\n"
               "  match: {serial: \"5214*\", kind: [ch1, ch2], event: alarm, text: \"上限\"}\n"
               "  receivers: [mail]\n",
               "default_receivers: [hook]\n");
    struct event ev = ev_of("52140001", "ch1", "alarm", "CH1 上限値警報 12.3℃", NOW);
    expect_route(&ev, NOW, "mail", ROUTE_SENT);
    ev.text = (char *)"CH1 下限値警報 -1.0℃";
    struct route rt;
    rules_route(&rt, rules, &ev, NOW, NULL);
    cr_assert_str_eq(rt.trials[0].why, "text does not match /上限/");
    route_free(&rt);
    ev.kind = (char *)"ch3";
    rules_route(&rt, rules, &ev, NOW, NULL);
    cr_assert_str_eq(rt.trials[0].why, "kind 'ch3' is not ch1, ch2");
    expect_targets(&rt, "hook");
    route_free(&rt);
}

Test(rules, first_match_wins_unless_continue)
{
    with_rules("- name: one\n  match: {kind: ch1}\n  receivers: [mail]\n  continue: true\n"
               "- name: two\n  match: {event: alarm}\n  receivers: [mail, slack]\n"
               "  severity: critical\n"
               "- name: three\n  receivers: [hook]\n",
               NULL);
    struct event ev = alarm_at(NOW);
    struct route rt;
    rules_route(&rt, rules, &ev, NOW, NULL);
    expect_targets(&rt, "mail,slack");
    cr_assert_eq(rt.trials[0].verdict, RULE_MATCHED);
    cr_assert_eq(rt.trials[1].verdict, RULE_MATCHED);
    cr_assert_eq(rt.trials[2].verdict, RULE_NOT_TRIED);
    cr_assert_str_eq(rt.targets[0].rule->name, "one"); /* the first rule to name it */
    cr_assert_str_eq(rt.targets[1].rule->name, "two");
    cr_assert_str_eq(rt.targets[1].rule->severity, "critical");
    route_free(&rt);
    ev.kind = (char *)"ch2";
    ev.state = (char *)"other";
    expect_route(&ev, NOW, "hook", ROUTE_SENT);
    cr_assert_not_null(rules_catch_all(cfg));
    cr_assert_str_eq(rules_catch_all(cfg)->name, "three");
}

Test(rules, drop_stops_the_search_but_keeps_earlier_receivers)
{
    with_rules("- name: audit\n  match: {kind: battery-level}\n  receivers: [hook]\n"
               "  continue: true\n"
               "- name: quiet-battery\n  match: {kind: battery-level}\n  drop: true\n"
               "- name: quiet-other\n  match: {event: other}\n  drop: true\n"
               "- name: rest\n  receivers: [mail]\n",
               NULL);
    struct event ev = ev_of("52140001", "battery-level", "battery", "Low Battery Warning", NOW);
    expect_route(&ev, NOW, "hook", ROUTE_SENT);
    ev = ev_of("52140001", "ch2", "other", "something new", NOW);
    struct route rt;
    rules_route(&rt, rules, &ev, NOW, NULL);
    cr_assert_eq(rt.outcome, ROUTE_DROPPED);
    cr_assert_eq(rt.trials[2].verdict, RULE_DROPPED);
    cr_assert_eq(rt.trials[3].verdict, RULE_NOT_TRIED);
    route_free(&rt);
}

/* --- time windows -------------------------------------------------------- */

Test(rules, outside_its_windows_a_rule_lets_later_rules_match)
{
    with_rules("- name: day\n  when: [\"Mon-Fri 08:00-18:00\"]\n  receivers: [mail]\n"
               "- name: night\n  when: \"Mon-Fri 18:00-08:00, Sat+Sun\"\n  receivers: [slack]\n",
               "timezone: Asia/Tokyo\n");
    struct event ev = alarm_at(NOW);
    /* 2025-11-24 is a Monday: 00:00 UTC is 09:00 in Tokyo. */
    long long monday = NOW + 2 * 86400;
    expect_route(&ev, monday, "mail", ROUTE_SENT);
    expect_route(&ev, monday + 9 * 3600, "slack", ROUTE_SENT);     /* 18:00 Tokyo */
    expect_route(&ev, monday + 9 * 3600 - 60, "mail", ROUTE_SENT); /* 17:59 */
    /* "Mon-Fri 18:00-08:00" is the nights that start Monday to Friday:
     * Monday 07:00 belongs to Sunday's night, which Sat+Sun ends at 24:00. */
    expect_route(&ev, monday - 2 * 3600, "", ROUTE_UNROUTED);          /* Monday 07:00 */
    expect_route(&ev, monday + 86400 - 2 * 3600, "slack", ROUTE_SENT); /* Tuesday 07:00 */
    expect_route(&ev, NOW, "slack", ROUTE_SENT);                       /* Saturday */
    struct route rt;
    rules_route(&rt, rules, &ev, NOW, NULL);
    cr_assert_eq(rt.trials[0].verdict, RULE_OUTSIDE);
    cr_assert_str_eq(rt.trials[0].why, "Mon-Fri 08:00-18:00 (Asia/Tokyo)");
    route_free(&rt);
}

Test(rules, windows_follow_daylight_saving_in_the_configured_zone)
{
    with_rules("- name: office\n  when: \"Mon-Fri 08:00-18:00\"\n  receivers: [mail]\n",
               "timezone: Europe/Berlin\ndefault_receivers: [hook]\n");
    struct event ev = alarm_at(NOW);
    /* Friday 2025-03-28: 07:30 UTC is 08:30 CET. Monday 2025-03-31, after
     * the change: 06:30 UTC is 08:30 CEST, 16:30 UTC is 18:30 CEST. */
    expect_route(&ev, 1743147000LL, "mail", ROUTE_SENT);
    expect_route(&ev, 1743402600LL, "mail", ROUTE_SENT);
    expect_route(&ev, 1743438600LL, "hook", ROUTE_SENT);
}

/* --- throttles ----------------------------------------------------------- */

Test(rules, throttle_pass_counts_what_it_holds)
{
    struct throttle_entry t = {0};
    long held = -1;
    long long since = -1;
    cr_assert(throttle_pass(&t, 1000, 1800, &held, &since));
    cr_assert_eq(held, 0);
    cr_assert_eq(since, 0);
    cr_assert_not(throttle_pass(&t, 1030, 1800, &held, &since));
    cr_assert_not(throttle_pass(&t, 2799, 1800, &held, &since));
    cr_assert_eq(t.held, 2);
    cr_assert_eq(t.held_since, 1030);
    cr_assert_not(throttle_pass(&t, 900, 1800, &held, &since)); /* older than the last sent */
    cr_assert(throttle_pass(&t, 2800, 1800, &held, &since));
    cr_assert_eq(held, 3);
    cr_assert_eq(since, 1030);
    cr_assert_eq(t.last_sent, 2800);
    cr_assert_eq(t.held, 0);
    cr_assert_eq(t.held_since, 0);
}

/* A table of throttle entries for the tests. */
struct table {
    char key[16][64];
    struct throttle_entry t[16];
    size_t n;
};

static int table_find(struct table *tb, const char *rule, const char *serial, const char *kind)
{
    char key[64];
    snprintf(key, sizeof key, "%s/%s/%s", rule, serial, kind);
    for (size_t i = 0; i < tb->n; i++)
        if (!strcmp(tb->key[i], key))
            return (int)i;
    cr_assert_lt(tb->n, 16);
    snprintf(tb->key[tb->n], sizeof tb->key[0], "%s", key);
    memset(&tb->t[tb->n], 0, sizeof tb->t[0]);
    return (int)tb->n++;
}

static bool table_get(void *ctx, const char *rule, const char *serial, const char *kind,
                      struct throttle_entry *out)
{
    struct table *tb = ctx;
    *out = tb->t[table_find(tb, rule, serial, kind)];
    return out->last_sent != 0;
}

static void table_set(void *ctx, const char *rule, const char *serial, const char *kind,
                      const struct throttle_entry *t)
{
    struct table *tb = ctx;
    tb->t[table_find(tb, rule, serial, kind)] = *t;
}

Test(rules, a_flapping_door_pages_once_per_throttle_and_says_how_many_it_held)
{
    with_rules("- name: door\n  match: {serial: \"5214*\"}\n  receivers: [mail]\n"
               "  throttle: 30m\n",
               NULL);
    struct table tb = {.n = 0};
    struct throttle_store ts = {.get = table_get, .set = table_set, .ctx = &tb};
    size_t sent = 0, held = 0;
    struct route rt;
    /* An alarm every 30 seconds for an hour, on ch1. */
    for (long long t = NOW; t < NOW + 3600; t += 30) {
        struct event ev = alarm_at(t);
        rules_route(&rt, rules, &ev, t, &ts);
        if (rt.outcome == ROUTE_SENT) {
            sent++;
            if (sent == 2) {
                cr_assert_eq(rt.targets[0].held, 59);
                cr_assert_eq(rt.targets[0].held_since, NOW + 30);
            }
        } else {
            cr_assert_eq(rt.outcome, ROUTE_THROTTLED);
            cr_assert_eq(rt.trials[0].verdict, RULE_THROTTLED);
            held++;
            char want[128];
            snprintf(want, sizeof want,
                     "one message per 30m for this device and kind; %zu held back so far",
                     sent == 1 ? held : held - 59);
            cr_assert_str_eq(rt.trials[0].why, want);
        }
        route_free(&rt);
    }
    cr_assert_eq(sent, 2);
    cr_assert_eq(held, 118);
    /* Another kind of the same device has a throttle of its own. */
    struct event other = ev_of("52140001", "ch2", "alarm", "CH2 Upper Limit Exceeded", NOW + 60);
    rules_route(&rt, rules, &other, NOW + 60, &ts);
    cr_assert_eq(rt.outcome, ROUTE_SENT);
    route_free(&rt);
}

Test(rules, a_throttled_rule_with_continue_does_not_stop_later_rules)
{
    with_rules("- name: chat\n  receivers: [slack]\n  throttle: 1h\n  continue: true\n"
               "- name: log\n  receivers: [hook]\n",
               NULL);
    struct table tb = {.n = 0};
    struct throttle_store ts = {.get = table_get, .set = table_set, .ctx = &tb};
    struct route rt;
    struct event a = alarm_at(NOW), b = alarm_at(NOW + 60);
    rules_route(&rt, rules, &a, NOW, &ts);
    expect_targets(&rt, "slack,hook");
    route_free(&rt);
    rules_route(&rt, rules, &b, NOW + 60, &ts);
    expect_targets(&rt, "hook");
    cr_assert_eq(rt.trials[0].verdict, RULE_THROTTLED);
    cr_assert_eq(rt.outcome, ROUTE_SENT);
    route_free(&rt);
}

/* --- rule files ----------------------------------------------------------- */

Test(rules, a_directory_is_read_in_name_order_skipping_other_files)
{
    char *dir = xasprintf("%s/rules.d", tmp);
    mkdir(dir, 0700);
    put("rules.d/20-late.yaml", "- name: late\n  receivers: [hook]\n");
    put("rules.d/10-early.yaml", "- name: early\n  match: {kind: ch1}\n  receivers: [mail]\n");
    put("rules.d/README.txt", "not rules");
    put("rules.d/.hidden.yaml", "- this is not read\n");
    put("rules.d/15-empty.yaml", "");
    cr_assert_eq(load("rules: rules.d\n"), 0, "%s", err.msg);
    cr_assert_eq(cfg->n_rules, 2);
    cr_assert_str_eq(cfg->rules[0].name, "early");
    cr_assert_str_eq(cfg->rules[1].name, "late");
    char *where = xasprintf("%s/10-early.yaml", dir);
    cr_assert_str_eq(cfg->rules[0].file, where);
    cr_assert_eq(cfg->rules[0].line, 1);
    free(where);
    free(dir);
}

Test(rules, rule_files_do_not_expand_variables)
{
    with_rules("- name: dollars\n  match: {text: \"^${HOME}$\"}\n  receivers: [mail]\n", NULL);
    cr_assert_str_eq(cfg->rules[0].match.text, "^${HOME}$");
}

Test(rules, every_mistake_names_file_line_and_column)
{
    expect_rule_error("- name: a\n  recievers: [mail]\n",
                      "2:3: unknown key 'recievers' (expected one of: name, match, when, "
                      "receivers, severity, throttle, continue, drop, repeat, escalate)");
    expect_rule_error("- name: a\n  match: {serail: x}\n  receivers: [mail]\n",
                      "2:11: match: unknown key 'serail' (expected one of: account, serial, "
                      "device, model, group, kind, source, event, text)");
    expect_rule_error("- name: a\n  match: {serial: \"52[14\"}\n  receivers: [mail]\n",
                      "2:19: match.serial: column 3: '[' is not closed");
    expect_rule_error("- name: a\n  match: {text: \"(upper\"}\n  receivers: [mail]\n",
                      "2:17: match.text: invalid regular expression at offset 6: missing "
                      "closing parenthesis");
    expect_rule_error("- name: a\n  when: \"Mon-Fry 08:00-18:00\"\n  receivers: [mail]\n",
                      "2:9: when: column 5: expected a day such as Mon");
    expect_rule_error("- name: a\n  throttle: 30 minutes\n  receivers: [mail]\n",
                      "2:13: throttle: expected a duration such as 90s, 30m, 1h");
    expect_rule_error("- name: a\n  receivers: [mail, pager]\n",
                      "2:21: rule 'a'.receivers[1]: unknown receiver 'pager' (the receivers "
                      "are: mail, slack, hook)");
    expect_rule_error("- name: a\n  receivers: mail\n- name: a\n  receivers: hook\n",
                      "3:9: rule 'a': duplicate rule name (first at @F@:1:3)");
    expect_rule_error("- name: a\n  receivers: [mail]\n  drop: true\n",
                      "2:14: receivers: give receivers or drop: true, not both");
    expect_rule_error("- name: a\n  match: {kind: ch1}\n",
                      "1:3: missing required key 'receivers' (or drop: true to send nowhere)");
    expect_rule_error("- name: a\n  drop: true\n  throttle: 5m\n",
                      "3:13: throttle: throttle does nothing with drop: true");
    expect_rule_error("- name: a\n  match: {kind: [ch1, ch7]}\n  receivers: [mail]\n",
                      "2:23: match.kind[1]: unknown kind 'ch7' (expected ch1 to ch6, "
                      "battery-level, communication-status, gap, reading or relay)");
    expect_rule_error("- name: a\n  match: {event: alarms}\n  receivers: [mail]\n",
                      "2:18: match.event: unknown event 'alarms' (expected alarm, recovered, "
                      "sensor-error, battery, communication or other)");
    expect_rule_error("name: a\nreceivers: [mail]\n",
                      "1:1: expected a list of rules (each starting with '- name:'), got a "
                      "mapping");
    expect_rule_error("- name: a\n  match: {serial: []}\n  receivers: [mail]\n",
                      "2:19: match.serial: the list is empty; give at least one");
    expect_rule_error("- name: a\n  receivers: [mail\n",
                      "3:1: did not find expected ',' or ']' while parsing a flow sequence "
                      "at 2:14");
}

Test(rules, duplicate_names_across_files_name_the_first)
{
    char *dir = xasprintf("%s/rules.d", tmp);
    mkdir(dir, 0700);
    put("rules.d/a.yaml", "- name: same\n  receivers: [hook]\n");
    put("rules.d/b.yaml", "# second\n- name: same\n  receivers: [mail]\n");
    cr_assert_eq(load("rules: rules.d\n"), -1);
    char *want = xasprintf("%s/b.yaml:2:9: rule 'same': duplicate rule name (first at "
                           "%s/a.yaml:1:3)",
                           dir, dir);
    cr_assert_str_eq(err.msg, want);
    free(want);
    free(dir);
}

Test(rules, config_keys_of_routing_are_checked)
{
    cr_assert_eq(load("rules: nowhere.d\n"), -1);
    cr_assert(strstr(err.msg, "nowhere.d: rules: No such file or directory"), "%s", err.msg);
    cr_assert_eq(load("timezone: Asia/Tokio\n"), -1);
    cr_assert(strstr(err.msg, "wsrelay.yaml:13:11: timezone: unknown time zone 'Asia/Tokio'"), "%s",
              err.msg);
    cr_assert_eq(load("default_receivers: [mail, pager]\n"), -1);
    cr_assert(strstr(err.msg, "wsrelay.yaml:13:27: default_receivers[1]: unknown receiver "
                              "'pager'"),
              "%s", err.msg);
}

Test(rules, catch_all_is_a_rule_without_match_or_when)
{
    with_rules("- name: a\n  match: {kind: ch1}\n  receivers: [mail]\n"
               "- name: b\n  when: \"Mon-Fri\"\n  receivers: [mail]\n"
               "- name: c\n  match: {}\n  drop: true\n",
               NULL);
    cr_assert_str_eq(rules_catch_all(cfg)->name, "c");
}

/* --- early warnings, source:, repeat: and escalate: ---------------------- */

/* An early warning of channel `channel` (kind "reading"). */
static struct event warning_at(int channel, long long t)
{
    struct event ev = ev_of("52140001", "reading", "alarm", "CH1 -70.2°C, above its limit", t);
    ev.channel = channel;
    return ev;
}

Test(rules, repeat_escalate_and_source_are_read)
{
    with_rules("- name: freezers\n"
               "  match: {device: \"Freezer*\", source: [reading, log]}\n"
               "  receivers: [mail]\n"
               "  repeat: 15m\n"
               "  escalate:\n"
               "    - {after: 20m, receivers: [slack]}\n"
               "    - after: 1h\n"
               "      receivers: [hook, mail]\n"
               "- name: warnings\n"
               "  match: {source: reading}\n"
               "  receivers: hook\n"
               "- name: log\n"
               "  match: {source: [log]}\n"
               "  receivers: hook\n",
               NULL);
    cr_assert_eq(cfg->n_rules, 3);
    const struct rule_conf *r = &cfg->rules[0];
    cr_expect_eq(r->match.source, RULE_SOURCE_READING | RULE_SOURCE_LOG);
    cr_expect_eq(r->repeat, 900);
    cr_assert_eq(r->n_escalate, 2);
    cr_expect_eq(r->escalate[0].after, 1200);
    cr_assert_eq(r->escalate[0].n_receivers, 1);
    cr_expect_str_eq(r->escalate[0].receivers[0], "slack");
    cr_expect_eq(r->escalate[0].line, 6);
    cr_expect_eq(r->escalate[0].col, 7);
    cr_expect_eq(r->escalate[1].after, 3600);
    cr_assert_eq(r->escalate[1].n_receivers, 2);
    cr_expect_str_eq(r->escalate[1].receivers[0], "hook");
    cr_expect_str_eq(r->escalate[1].receivers[1], "mail");
    cr_expect_eq(r->escalate[1].line, 7);
    cr_expect_eq(r->escalate[1].col, 7);
    cr_expect_eq(cfg->rules[1].match.source, RULE_SOURCE_READING);
    cr_expect_eq(cfg->rules[2].match.source, RULE_SOURCE_LOG);
    /* Left out: no reminders, no escalation, any source. */
    cr_expect_eq(cfg->rules[1].repeat, 0);
    cr_expect_eq(cfg->rules[1].n_escalate, 0);
    cr_expect_null(cfg->rules[1].escalate);
    with_rules("- name: a\n  receivers: mail\n", NULL);
    cr_expect_eq(cfg->rules[0].match.source, 0);
}

Test(rules, repeat_escalate_and_source_mistakes_name_file_line_and_column)
{
    expect_rule_error("- name: a\n  receivers: [mail]\n  repeat: 30s\n",
                      "3:11: repeat: expected a duration from 1m to 1d");
    expect_rule_error("- name: a\n  receivers: [mail]\n  repeat: 2d\n",
                      "3:11: repeat: expected a duration from 1m to 1d");
    expect_rule_error("- name: a\n  drop: true\n  repeat: 15m\n",
                      "3:11: repeat: repeat does nothing with drop: true");
    expect_rule_error("- name: a\n  drop: true\n  escalate: [{after: 5m, receivers: mail}]\n",
                      "3:13: escalate: escalate does nothing with drop: true");
    expect_rule_error(
        "- name: a\n  receivers: [mail]\n  escalate: [{after: 0s, receivers: mail}]\n",
        "3:22: escalate[0].after: expected a duration of more than 0s (after the "
        "incident opened)");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate:\n"
                      "    - {after: 30m, receivers: slack}\n"
                      "    - {after: 20m, receivers: hook}\n",
                      "5:15: rule 'a'.escalate[1].after: expected more than 30m, the step "
                      "before's (the steps are listed in the order they are taken)");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate:\n"
                      "    - {after: 30m, receivers: slack}\n"
                      "    - {after: 30m, receivers: hook}\n",
                      "5:15: rule 'a'.escalate[1].after: expected more than 30m, the step "
                      "before's (the steps are listed in the order they are taken)");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate:\n"
                      "    - {after: 20m, receivers: [hook, pager]}\n",
                      "4:38: rule 'a'.escalate[0].receivers[1]: unknown receiver 'pager' (the "
                      "receivers are: mail, slack, hook)");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate:\n    - {after: 20m}\n",
                      "4:7: escalate[0]: missing required key 'receivers'");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate:\n    - {receivers: hook}\n",
                      "4:7: escalate[0]: missing required key 'after'");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate:\n"
                      "    - {after: 20m, receivers: []}\n",
                      "4:31: escalate[0].receivers: the list is empty; give at least one");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate: 20m\n",
                      "3:13: escalate: expected a list, got a string");
    expect_rule_error("- name: a\n  receivers: [mail]\n  escalate:\n"
                      "    - {after: 20m, receivers: hook, to: mail}\n",
                      "4:37: escalate[0]: unknown key 'to' (expected one of: after, receivers)");
    expect_rule_error("- name: a\n  match: {source: logs}\n  receivers: [mail]\n",
                      "2:19: match.source: expected reading or log");
    expect_rule_error("- name: a\n  match: {source: [reading, reading]}\n  receivers: [mail]\n",
                      "2:29: match.source[1]: 'reading' is given twice");
    expect_rule_error("- name: a\n  match: {source: []}\n  receivers: [mail]\n",
                      "2:19: match.source: the list is empty; give at least one of reading or "
                      "log");
    expect_rule_error("- name: a\n  match: {source: {reading: true}}\n  receivers: [mail]\n",
                      "2:19: match.source: expected reading or log, or a list of them, got a "
                      "mapping");
}

/* `wsrelay check` (config_load_all) lists every mistake of the new keys
 * in one pass, across rules and steps, each where it is written. */
Test(rules, every_mistake_of_repeat_escalate_and_source_in_one_pass)
{
    put("rules.yaml", "- name: a\n"                                    /* 1 */
                      "  match: {source: logs}\n"                      /* 2 */
                      "  receivers: [mail]\n"                          /* 3 */
                      "  repeat: 10s\n"                                /* 4 */
                      "- name: b\n"                                    /* 5 */
                      "  receivers: [mail]\n"                          /* 6 */
                      "  escalate:\n"                                  /* 7 */
                      "    - {after: 1h, receivers: [pager]}\n"        /* 8 */
                      "    - {after: 30m, receivers: [hook, phone]}\n" /* 9 */
                      "- name: c\n"                                    /* 10 */
                      "  drop: true\n"                                 /* 11 */
                      "  repeat: 5m\n");                               /* 12 */
    put("wsrelay.yaml", "accounts:\n"
                        "  - name: tokyo\n"
                        "    api_key: k\n"
                        "    login_id: tdlogin1\n"
                        "    login_pass: p\n"
                        "receivers:\n"
                        "  - name: mail\n"
                        "    file: {path: out-mail.txt}\n"
                        "  - name: hook\n"
                        "    file: {path: out-hook.txt}\n"
                        "rules: rules.yaml\n"
                        "incidents: {keep: 1h}\n");
    char *path = xasprintf("%s/wsrelay.yaml", tmp);
    char *errors = NULL;
    bool more = true;
    cr_assert_eq(config_load_all(&cfg, &errors, &more, path, &err), -1);
    free(path);
    cr_assert_null(cfg);
    cr_assert_not(more);
    /* The configuration's own mistake stops the check before the rules. */
    char *want = xasprintf("%s/wsrelay.yaml:12:19: incidents.keep: expected a duration from 1d "
                           "to 3650d\n",
                           tmp);
    cr_assert_str_eq(errors, want);
    free(want);
    free(errors);
    put("wsrelay.yaml", "accounts:\n"
                        "  - name: tokyo\n"
                        "    api_key: k\n"
                        "    login_id: tdlogin1\n"
                        "    login_pass: p\n"
                        "receivers:\n"
                        "  - name: mail\n"
                        "    file: {path: out-mail.txt}\n"
                        "  - name: hook\n"
                        "    file: {path: out-hook.txt}\n"
                        "rules: rules.yaml\n");
    path = xasprintf("%s/wsrelay.yaml", tmp);
    cr_assert_eq(config_load_all(&cfg, &errors, &more, path, &err), -1);
    free(path);
    cr_assert_not(more);
    char *f = xasprintf("%s/rules.yaml", tmp);
    want = xasprintf("%s:2:19: match.source: expected reading or log\n"
                     "%s:4:11: repeat: expected a duration from 1m to 1d\n"
                     "%s:8:31: rule 'b'.escalate[0].receivers[0]: unknown receiver 'pager' (the "
                     "receivers are: mail, hook)\n"
                     "%s:9:15: rule 'b'.escalate[1].after: expected more than 1h, the step "
                     "before's (the steps are listed in the order they are taken)\n"
                     "%s:9:38: rule 'b'.escalate[1].receivers[1]: unknown receiver 'phone' (the "
                     "receivers are: mail, hook)\n"
                     "%s:12:11: repeat: repeat does nothing with drop: true\n",
                     f, f, f, f, f, f);
    cr_assert_str_eq(errors, want);
    /* `e` holds the first. */
    cr_assert_eq(strncmp(err.msg, want, strcspn(want, "\n")), 0, "%s", err.msg);
    free(want);
    free(f);
    free(errors);
}

Test(rules, a_channel_rule_sees_the_early_warnings_of_its_channel)
{
    with_rules("- name: ch1\n  match: {kind: ch1}\n  receivers: [mail]\n"
               "- name: battery\n  match: {kind: [battery-level, ch3]}\n  receivers: [slack]\n",
               "default_receivers: [hook]\n");
    struct event one = warning_at(1, NOW), two = warning_at(2, NOW);
    expect_route(&one, NOW, "mail", ROUTE_SENT);
    struct route rt;
    rules_route(&rt, rules, &two, NOW, NULL);
    expect_targets(&rt, "hook");
    cr_assert_str_eq(rt.trials[0].why, "kind 'reading' (an early warning of ch2) is not ch1");
    cr_assert_str_eq(rt.trials[1].why,
                     "kind 'reading' (an early warning of ch2) is not battery-level, ch3");
    route_free(&rt);
    /* The alert log's ch1 still matches, and its ch2 does not. */
    struct event alarm = alarm_at(NOW);
    expect_route(&alarm, NOW, "mail", ROUTE_SENT);
    alarm.kind = (char *)"ch2";
    expect_route(&alarm, NOW, "hook", ROUTE_SENT);
    /* A reading without a channel is no channel's. */
    struct event none = warning_at(0, NOW);
    expect_route(&none, NOW, "hook", ROUTE_SENT);
    /* kind: reading still names the early warnings of every channel. */
    with_rules("- name: warnings\n  match: {kind: reading}\n  receivers: [slack]\n", NULL);
    expect_route(&two, NOW, "slack", ROUTE_SENT);
    expect_route(&alarm, NOW, "", ROUTE_UNROUTED);
}

Test(rules, source_tells_early_warnings_from_the_alert_log)
{
    with_rules("- name: early\n  match: {kind: ch1, source: reading}\n  receivers: [slack]\n"
               "- name: logged\n  match: {kind: ch1, source: log}\n  receivers: [mail]\n",
               "default_receivers: [hook]\n");
    struct event warning = warning_at(1, NOW), alarm = alarm_at(NOW);
    struct route rt;
    rules_route(&rt, rules, &warning, NOW, NULL);
    expect_targets(&rt, "slack");
    route_free(&rt);
    rules_route(&rt, rules, &alarm, NOW, NULL);
    expect_targets(&rt, "mail");
    cr_assert_str_eq(rt.trials[0].why,
                     "source is log (kind 'ch1' of the alert log), not reading (an early warning)");
    route_free(&rt);
    with_rules("- name: logged\n  match: {source: log}\n  receivers: [mail]\n"
               "- name: both\n  match: {source: [reading, log]}\n  receivers: [slack]\n",
               "default_receivers: [hook]\n");
    rules_route(&rt, rules, &warning, NOW, NULL);
    expect_targets(&rt, "slack");
    cr_assert_str_eq(rt.trials[0].why,
                     "source is reading (an early warning of ch1), not log (the alert log)");
    route_free(&rt);
    struct event battery = ev_of("52140001", "battery-level", "battery", "Low Battery", NOW);
    expect_route(&battery, NOW, "mail", ROUTE_SENT);
    /* wsrelay's own gap events are neither. */
    struct event gap = ev_of("52140001", "gap", "other", "the log may have overflowed", NOW);
    rules_route(&rt, rules, &gap, NOW, NULL);
    expect_targets(&rt, "hook");
    cr_assert_str_eq(rt.trials[0].why, "source: kind 'gap' is wsrelay's own, not log (the alert "
                                       "log)");
    cr_assert_str_eq(rt.trials[1].why, "source: kind 'gap' is wsrelay's own, not reading or log");
    route_free(&rt);
    /* A rule with source: is not a catch-all. */
    cr_assert_null(rules_catch_all(cfg));
}

Test(rules, repeat_and_escalate_do_not_change_where_an_event_goes)
{
    with_rules("- name: freezers\n  match: {kind: ch1}\n  receivers: [mail]\n  repeat: 15m\n"
               "  escalate: [{after: 20m, receivers: [slack]}, {after: 1h, receivers: hook}]\n",
               NULL);
    struct event alarm = alarm_at(NOW), warning = warning_at(1, NOW);
    expect_route(&alarm, NOW, "mail", ROUTE_SENT);
    expect_route(&warning, NOW, "mail", ROUTE_SENT);
}

Test(rules, the_rule_key_reference_names_the_new_keys)
{
    char *ref = config_rules_reference();
    static const char *const lines[] = {
        "match.kind (string or list of strings)\n",
        "match.source (reading or log, or a list of them)\n",
        "repeat (duration from 1m to 1d)\n",
        "escalate (list)\n",
        "escalate[].after (duration; required)\n",
        "escalate[].receivers (string or list of strings; required)\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert_not_null(strstr(ref, lines[i]), "missing %s in:\n%s", lines[i], ref);
    free(ref);
}
