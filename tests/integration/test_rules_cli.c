/* Rules at the command line: `wsrelay check` on broken and working rule
 * sets, `wsrelay explain` on hand-written alert logs, and the example rule
 * files of rules/ with the configuration in tests/data/rules-example.yaml.
 * The messages themselves are the unit tests' business
 * (tests/unit/test_rules.c); here the real binary must show them with the
 * file, line and column, and exit with the right status. */
#include "proc.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Wed 2026-11-18 20:06:40 in Tokyo, and 10:06:40 the same morning. */
#define EVENING "1795000000"
#define MORNING "1794964000"

static char *dir;

static void setup(void)
{
    dir = test_tmpdir();
    char *rules = xasprintf("%s/rules.d", dir);
    cr_assert_eq(mkdir(rules, 0700), 0);
    free(rules);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(dir);
}

TestSuite(rules_cli, .init = setup, .fini = teardown, .timeout = 60);

/* DIR/NAME, written with `text` when that is not NULL; caller frees. */
static char *scratch(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", dir, name);
    if (text)
        write_file(path, text);
    return path;
}

/* Writes DIR/wsrelay.yaml: one account (two with `two_accounts`), the file
 * receivers mail, chat and audit, rules from DIR/rules.d, and `extra`
 * top-level lines. Returns its path; caller frees. Mode 0640, as its
 * secrets are written out in it (others would be warned about). */
static char *config(bool two_accounts, const char *extra)
{
    char *yaml = xasprintf("state_file: state.json\n"
                           "timezone: Asia/Tokyo\n"
                           "rules: rules.d\n"
                           "accounts:\n"
                           "  - name: tokyo\n"
                           "    api_key: k\n"
                           "    login_id: tbzz9999\n"
                           "    login_pass: secret\n"
                           "%s"
                           "receivers:\n"
                           "  - name: mail\n"
                           "    file: {path: mail.txt}\n"
                           "  - name: chat\n"
                           "    file: {path: chat.txt}\n"
                           "  - name: audit\n"
                           "    file: {path: audit.txt}\n"
                           "%s",
                           two_accounts ? "  - name: osaka\n"
                                          "    api_key: k2\n"
                                          "    login_id: tbzz8888\n"
                                          "    login_pass: secret\n"
                                        : "",
                           extra ? extra : "");
    char *path = scratch("wsrelay.yaml", yaml);
    cr_assert_eq(chmod(path, 0640), 0);
    free(yaml);
    return path;
}

/* Writes `rules` as DIR/rules.d/10-rules.yaml and runs `wsrelay check`. */
static struct cmd_result check(const char *rules, const char *extra)
{
    free(scratch("rules.d/10-rules.yaml", rules));
    char *cfg = config(false, extra);
    struct cmd_result r = wsrelay_cmd(30, "-c", cfg, "check", NULL);
    free(cfg);
    return r;
}

/* `wsrelay check` fails with "wsrelay: DIR/rules.d/10-rules.yaml:`where`" */
static void expect_check_error(const char *rules, const char *where)
{
    struct cmd_result r = check(rules, NULL);
    cr_assert_eq(r.status, 2, "exit %d for:\n%s\nstderr: %s", r.status, rules, r.err);
    char *want = xasprintf("wsrelay: %s/rules.d/10-rules.yaml:%s", dir, where);
    cr_assert(strstr(r.err, want), "expected '%s' in stderr:\n%s", want, r.err);
    cr_assert_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "one line: %s", r.err);
    free(want);
    cmd_result_free(&r);
}

static const char good_rules[] = "# The freezers page at once, batteries at night only.\n"
                                 "- name: freezer-critical\n"
                                 "  match: {device: \"Freezer*\", event: [alarm, sensor-error]}\n"
                                 "  receivers: [mail, chat]\n"
                                 "  severity: critical\n"
                                 "  throttle: 30m\n"
                                 "\n"
                                 "- name: night-batteries\n"
                                 "  match: {kind: battery-level}\n"
                                 "  when: \"Mon-Fri 18:00-08:00, Sat+Sun\"\n"
                                 "  receivers: [chat]\n"
                                 "\n"
                                 "- name: everything-else\n"
                                 "  receivers: [audit]\n";

/* --- check ---------------------------------------------------------------- */

Test(rules_cli, check_names_the_place_of_each_kind_of_mistake)
{
    expect_check_error("- name: a\n  receivers: [mail, pager]\n",
                       "2:21: rule 'a'.receivers[1]: unknown receiver 'pager' (the receivers "
                       "are: mail, chat, audit)");
    expect_check_error("- name: a\n  match: {text: \"(upper\"}\n  receivers: [mail]\n",
                       "2:17: match.text: invalid regular expression at offset 6: missing "
                       "closing parenthesis");
    expect_check_error("- name: a\n  when: \"Mon-Fri 08:00-25:00\"\n  receivers: [mail]\n",
                       "2:9: when: column 15: time out of range (00:00 to 24:00)");
    expect_check_error("- name: a\n  recievers: [mail]\n", "2:3: unknown key 'recievers'");
}

Test(rules_cli, check_lists_a_working_rule_set)
{
    struct cmd_result r = check(good_rules, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, "", "no warning for a set with a catch-all at its end");
    cr_assert(strstr(r.out, "OK: 1 account, 3 receivers, 3 rules\n"), "%s", r.out);
    char *file = xasprintf("%s/rules.d/10-rules.yaml", dir);
    const char *names[] = {"freezer-critical", "night-batteries", "everything-else"};
    const int lines[] = {2, 8, 13};
    for (size_t i = 0; i < 3; i++) {
        char *want = xasprintf("  rule %s (%s:%d)\n", names[i], file, lines[i]);
        cr_assert(strstr(r.out, want), "expected '%s' in:\n%s", want, r.out);
        free(want);
    }
    free(file);
    cmd_result_free(&r);
}

Test(rules_cli, check_warns_when_events_could_go_nowhere)
{
    const char *rules = "- name: alarms\n  match: {event: alarm}\n  receivers: [mail]\n";
    struct cmd_result r = check(rules, NULL);
    cr_assert_eq(r.status, 0, "a warning is not an error: %s", r.err);
    cr_assert(strstr(r.err, "wsrelay: warning: no rule matches every event and there are no "
                            "default_receivers"),
              "%s", r.err);
    cmd_result_free(&r);
    r = check(rules, "default_receivers: [audit]\n");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, "", "default_receivers take the rest");
    cmd_result_free(&r);
}

Test(rules_cli, check_warns_when_a_catch_all_hides_later_rules)
{
    struct cmd_result r = check("- name: everything\n  receivers: [audit]\n"
                                "- name: alarms\n  match: {event: alarm}\n  receivers: [mail]\n",
                                NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *want = xasprintf("wsrelay: warning: %s/rules.d/10-rules.yaml:1: rule 'everything' "
                           "matches every event, so the 1 rule after it is never tried",
                           dir);
    cr_assert(strstr(r.err, want), "expected '%s' in:\n%s", want, r.err);
    free(want);
    cmd_result_free(&r);
    /* With continue: true the rules after it are tried: nothing hidden. */
    r = check("- name: everything\n  receivers: [audit]\n  continue: true\n"
              "- name: alarms\n  match: {event: alarm}\n  receivers: [mail]\n",
              NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, "");
    cmd_result_free(&r);
}

/* --- explain -------------------------------------------------------------- */

/* A freezer's log as the platform sends it, but without remote-serial (as
 * when a person copies the entries by hand): an alarm, a second one ten
 * minutes later with a battery warning. */
static const char freezer_log[] =
    "{\n"
    "  \"remote-name\": \"Freezer -80 A\", \"remote-model\": \"TR-72A2\",\n"
    "  \"time-diff\": \"540\", \"std-bias\": \"0\", \"dst-flg\": \"0\", \"dst-bias\": \"60\",\n"
    "  \"channel\": [{\"name\": \"Temperature\", \"num\": \"1\", \"unit\": \"°C\"}],\n"
    "  \"alert-logs\": [\n"
    "    {\"unixtime\": \"1795000600\",\n"
    "     \"ch1\": \"CH1 Upper Limit Exceeded -69.8°C (limit -75.0°C)\",\n"
    "     \"battery-level\": \"Low Battery Warning\"},\n"
    "    {\"unixtime\": \"1795000000\",\n"
    "     \"ch1\": \"CH1 Upper Limit Exceeded -70.2°C (limit -75.0°C)\"}\n"
    "  ]\n"
    "}\n";

/* The lines of `out` from the one starting with `id` to the next empty
 * line; caller frees. */
static char *event_block(const char *out, const char *id)
{
    char *head = xasprintf("\n%s  ", id);
    const char *p = strstr(out, head);
    cr_assert_not_null(p, "no block for %s in:\n%s", id, out);
    cr_assert_null(strstr(p + 1, head), "two blocks for %s", id);
    free(head);
    p++;
    const char *end = strstr(p, "\n\n");
    return xasprintf("%.*s", (int)(end ? end - p + 1 : (long)strlen(p)), p);
}

/* The verdict that `block` shows for rule `name`: the text after the name
 * up to the rule's place in parentheses; caller frees. */
static char *verdict(const char *block, const char *name)
{
    char *key = xasprintf(". %s ", name);
    const char *p = strstr(block, key);
    cr_assert_not_null(p, "rule %s not shown in:\n%s", name, block);
    p += strlen(key);
    free(key);
    while (*p == ' ')
        p++;
    const char *end = strstr(p, "  (");
    cr_assert_not_null(end);
    return xasprintf("%.*s", (int)(end - p), p);
}

static void expect_verdict(const char *block, const char *name, const char *want)
{
    char *got = verdict(block, name);
    cr_assert_str_eq(got, want, "rule %s in:\n%s", name, block);
    free(got);
}

/* The routing line ("  -> ...") of `block`; caller frees. */
static char *outcome(const char *block)
{
    const char *p = strstr(block, "\n  -> ");
    cr_assert_not_null(p, "no outcome in:\n%s", block);
    p += 6;
    return xasprintf("%.*s", (int)strcspn(p, "\n"), p);
}

static void expect_outcome(const char *block, const char *want)
{
    char *got = outcome(block);
    cr_assert_str_eq(got, want, "in:\n%s", block);
    free(got);
}

static struct cmd_result explain(const char *cfg, const char *log, const char *a1, const char *a2,
                                 const char *a3, const char *a4)
{
    return wsrelay_cmd(30, "-c", cfg, "explain", log, a1, a2, a3, a4, NULL);
}

Test(rules_cli, explain_shows_each_event_each_verdict_and_the_receivers)
{
    free(scratch("rules.d/10-rules.yaml", good_rules));
    char *cfg = config(false, NULL);
    char *log = scratch("freezer.json", freezer_log);
    char *state = scratch("state.json", NULL);
    struct cmd_result r = explain(cfg, log, "--serial", "5214000A", "--now", EVENING);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "3 rules, timezone Asia/Tokyo; routing at 2026-11-18T11:06:40Z "
                            "(--now " EVENING "); 3 events\n"),
              "%s", r.out);

    char *b = event_block(r.out, "5214000A/1795000000/ch1");
    cr_assert(strstr(b, "device Freezer -80 A (TR-72A2, 5214000A), account tokyo"), "%s", b);
    cr_assert(strstr(b, "alarm, value -70.2°C, limit -75.0°C: CH1 Upper Limit Exceeded"), "%s", b);
    expect_verdict(b, "freezer-critical", "matched");
    expect_verdict(b, "night-batteries", "not tried");
    expect_verdict(b, "everything-else", "not tried");
    expect_outcome(b, "sent to mail (severity critical), chat (severity critical)");
    free(b);

    /* Ten minutes later, within the 30 minutes of the throttle. */
    b = event_block(r.out, "5214000A/1795000600/ch1");
    expect_verdict(b, "freezer-critical",
                   "throttled: one message per 30m for this device and kind; 1 held back so far");
    expect_verdict(b, "everything-else", "not tried");
    expect_outcome(b, "held back by a throttle: counted, and the next message of this device "
                      "and kind says so");
    free(b);

    /* 20:16 on a Wednesday in Tokyo: night-batteries' hours. */
    b = event_block(r.out, "5214000A/1795000600/battery-level");
    expect_verdict(b, "freezer-critical", "no match: event 'battery' is not alarm, sensor-error");
    expect_verdict(b, "night-batteries", "matched");
    expect_outcome(b, "sent to chat");
    free(b);
    cr_assert(strstr(r.out, "\n2 sent, 0 dropped, 1 throttled, 0 unrouted\n"), "%s", r.out);
    cmd_result_free(&r);

    /* The same log routed at 10:06 that morning: outside the window, the
     * catch-all takes the battery warning. */
    r = explain(cfg, log, "--serial", "5214000A", "--now", MORNING);
    cr_assert_eq(r.status, 0, "%s", r.err);
    b = event_block(r.out, "5214000A/1795000600/battery-level");
    expect_verdict(b, "night-batteries",
                   "outside its hours: Mon-Fri 18:00-08:00, Sat+Sun (Asia/Tokyo)");
    expect_verdict(b, "everything-else", "matched");
    expect_outcome(b, "sent to audit");
    free(b);
    cmd_result_free(&r);

    /* Nothing was sent and no state was made. */
    struct stat st;
    cr_assert_neq(stat(state, &st), 0, "explain created the state file");
    const char *outputs[] = {"mail.txt", "chat.txt", "audit.txt"};
    for (size_t i = 0; i < 3; i++) {
        char *p = scratch(outputs[i], NULL);
        cr_assert_neq(stat(p, &st), 0, "explain wrote %s", p);
        free(p);
    }
    free(state);
    free(log);
    free(cfg);
}

/* An alert log holds no early warning: a rule for early warnings alone
 * says so in words, and repeat: and escalate: change no route. */
Test(rules_cli, explain_says_in_words_when_the_source_does_not_match)
{
    free(scratch("rules.d/10-rules.yaml", "- name: early-ch1\n"
                                          "  match: {kind: ch1, source: reading}\n"
                                          "  receivers: [chat]\n"
                                          "- name: freezer-log\n"
                                          "  match: {kind: ch1, source: log}\n"
                                          "  receivers: [mail]\n"
                                          "  repeat: 15m\n"
                                          "  escalate: [{after: 20m, receivers: [audit]}]\n"
                                          "- name: everything-else\n"
                                          "  receivers: [audit]\n"));
    char *cfg = config(false, NULL);
    char *log = scratch("freezer.json", freezer_log);
    struct cmd_result r = explain(cfg, log, "--serial", "5214000A", "--now", EVENING);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *b = event_block(r.out, "5214000A/1795000000/ch1");
    expect_verdict(b, "early-ch1",
                   "no match: source is log (kind 'ch1' of the alert log), not reading (an "
                   "early warning)");
    expect_verdict(b, "freezer-log", "matched");
    expect_outcome(b, "sent to mail");
    free(b);
    b = event_block(r.out, "5214000A/1795000600/battery-level");
    expect_verdict(b, "early-ch1", "no match: kind 'battery-level' is not ch1");
    expect_outcome(b, "sent to audit");
    free(b);
    cmd_result_free(&r);
    free(log);
    free(cfg);
}

/* `wsrelay check` lists every mistake of repeat:, escalate: and source:
 * at once, each where it is written. */
Test(rules_cli, check_lists_every_mistake_of_reminders_escalation_and_source)
{
    struct cmd_result r = check("- name: a\n"
                                "  match: {source: [reading, logs]}\n"
                                "  receivers: [mail]\n"
                                "  repeat: 0s\n"
                                "  escalate:\n"
                                "    - {after: 1h, receivers: [pager]}\n"
                                "    - {after: 1h, receivers: chat}\n",
                                NULL);
    cr_assert_eq(r.status, 2, "%s", r.err);
    char *f = xasprintf("%s/rules.d/10-rules.yaml", dir);
    char *want = xasprintf("wsrelay: %s:2:29: match.source[1]: expected reading or log\n"
                           "wsrelay: %s:4:11: repeat: expected a duration from 1m to 1d\n",
                           f, f);
    cr_assert_str_eq(r.err, want);
    free(want);
    cmd_result_free(&r);
    /* With those right, the steps are checked against each other and the
     * receivers. */
    r = check("- name: a\n"
              "  match: {source: [reading, log]}\n"
              "  receivers: [mail]\n"
              "  repeat: 1m\n"
              "  escalate:\n"
              "    - {after: 1h, receivers: [pager]}\n"
              "    - {after: 1h, receivers: chat}\n",
              NULL);
    cr_assert_eq(r.status, 2, "%s", r.err);
    want = xasprintf("wsrelay: %s:6:31: rule 'a'.escalate[0].receivers[0]: unknown receiver "
                     "'pager' (the receivers are: mail, chat, audit)\n"
                     "wsrelay: %s:7:15: rule 'a'.escalate[1].after: expected more than 1h, the "
                     "step before's (the steps are listed in the order they are taken)\n",
                     f, f);
    cr_assert_str_eq(r.err, want);
    free(want);
    free(f);
    cmd_result_free(&r);
}

Test(rules_cli, explain_leaves_an_existing_state_alone)
{
    free(scratch("rules.d/10-rules.yaml", good_rules));
    char *cfg = config(false, NULL);
    char *log = scratch("freezer.json", freezer_log);
    /* Not even a valid state: explain must not read it, let alone write. */
    const char junk[] = "{\"this is\": \"not read\"}\n";
    char *state = scratch("state.json", junk);
    struct cmd_result r = explain(cfg, log, "--serial", "5214000A", "--now", EVENING);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cmd_result_free(&r);
    char *after = read_file_str(state);
    cr_assert_str_eq(after, junk);
    free(after);
    free(state);
    free(log);
    free(cfg);
}

Test(rules_cli, explain_needs_the_serial_when_the_log_lacks_it)
{
    free(scratch("rules.d/10-rules.yaml", good_rules));
    char *cfg = config(false, NULL);
    char *log = scratch("freezer.json", freezer_log);
    struct cmd_result r = explain(cfg, log, "--now", EVENING, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "remote-serial"), "%s", r.err);
    cr_assert_str_eq(r.out, "");
    cmd_result_free(&r);
    /* A log that names its device: --serial may repeat it, not contradict it. */
    char *named = xasprintf("{\"remote-serial\": \"5214000A\",%s", freezer_log + 1);
    free(scratch("named.json", named));
    free(named);
    char *named_log = scratch("named.json", NULL);
    r = explain(cfg, named_log, "--now", EVENING, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\n5214000A/1795000000/ch1  "), "%s", r.out);
    cmd_result_free(&r);
    r = explain(cfg, named_log, "--serial", "5214000B", "--now", EVENING);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--serial 5214000B, but the log is of device 5214000A"), "%s", r.err);
    cmd_result_free(&r);
    free(named_log);
    free(log);
    free(cfg);
}

Test(rules_cli, explain_needs_the_account_when_there_are_two)
{
    free(scratch("rules.d/10-rules.yaml",
                 "- name: osaka-only\n  match: {account: osaka}\n  receivers: [chat]\n"
                 "- name: everything-else\n  receivers: [audit]\n"));
    char *cfg = config(true, NULL);
    char *log = scratch("freezer.json", freezer_log);
    struct cmd_result r = explain(cfg, log, "--serial", "5214000A", NULL, NULL);
    cr_assert_eq(r.status, 2);
    char *want = xasprintf("wsrelay: explain: %s has 2 accounts: say which one the log is from "
                           "with --account\n",
                           cfg);
    cr_assert_str_eq(r.err, want);
    free(want);
    cmd_result_free(&r);
    r = explain(cfg, log, "--serial", "5214000A", "--account", "kyoto");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "no account named 'kyoto'"), "%s", r.err);
    cmd_result_free(&r);
    r = explain(cfg, log, "--serial", "5214000A", "--account", "osaka");
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *b = event_block(r.out, "5214000A/1795000000/ch1");
    cr_assert(strstr(b, "account osaka"), "%s", b);
    expect_verdict(b, "osaka-only", "matched");
    expect_outcome(b, "sent to chat");
    free(b);
    cmd_result_free(&r);
    free(log);
    free(cfg);
}

Test(rules_cli, explain_refuses_a_file_that_is_not_json)
{
    free(scratch("rules.d/10-rules.yaml", good_rules));
    char *cfg = config(false, NULL);
    char *log = scratch("broken.json", "{\"alert-logs\": [}\n");
    struct cmd_result r = explain(cfg, log, "--serial", "5214000A", NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, log) && strstr(r.err, "not JSON"), "%s", r.err);
    cr_assert_str_eq(r.out, "");
    cmd_result_free(&r);
    free(log);
    log = scratch("missing.json", NULL);
    r = explain(cfg, log, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "No such file"), "%s", r.err);
    cmd_result_free(&r);
    free(log);
    free(cfg);
}

/* The documented order, options after the file, works as well as before it. */
Test(rules_cli, explain_takes_its_options_before_or_after_the_file)
{
    free(scratch("rules.d/10-rules.yaml", good_rules));
    char *cfg = config(false, NULL);
    char *log = scratch("freezer.json", freezer_log);
    struct cmd_result after = explain(cfg, log, "--serial", "5214000A", "--now", EVENING);
    cr_assert_eq(after.status, 0, "%s", after.err);
    struct cmd_result before =
        wsrelay_cmd(30, "-c", cfg, "explain", "--serial", "5214000A", "--now", EVENING, log, NULL);
    cr_assert_eq(before.status, 0, "%s", before.err);
    cr_assert_str_eq(before.out, after.out);
    cmd_result_free(&after);
    cmd_result_free(&before);
    free(log);
    free(cfg);
}

/* --- the examples of rules/ ------------------------------------------------- */

#define EXAMPLE_CONFIG WSRELAY_SOURCE_DIR "/tests/data/rules-example.yaml"
#define EXAMPLE_LOG WSRELAY_SOURCE_DIR "/tests/data/rules-example-log.json"

/* The only warning: the example's made-up secrets are written out in a
 * file that git checks out readable by all (mode 0644, or 0664 with a
 * umask of 002). */
Test(rules_cli, the_example_rules_pass_check_without_warnings)
{
    struct cmd_result r = wsrelay_cmd(30, "-c", EXAMPLE_CONFIG, "check", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct stat st;
    cr_assert_eq(stat(EXAMPLE_CONFIG, &st), 0);
    if (st.st_mode & S_IRWXO) {
        char *want = xasprintf("wsrelay: warning: %s is mode %04o, open to other users, and "
                               "holds secrets written out in it (accounts[0].api_key and 3 "
                               "more); chmod 0640 %s (or 0600), or move the secrets to *_file "
                               "keys, ${VAR} or systemd credentials\n",
                               EXAMPLE_CONFIG, (unsigned)(st.st_mode & 07777), EXAMPLE_CONFIG);
        cr_assert_str_eq(r.err, want);
        free(want);
    } else {
        cr_assert_str_eq(r.err, "");
    }
    cr_assert(strstr(r.out, "OK: 1 account, 4 receivers, 6 rules\n"), "%s", r.out);
    cr_assert(strstr(r.out, "/rules/10-freezers.yaml:"), "%s", r.out);
    cr_assert(strstr(r.out, "/rules/90-audit.yaml:"), "%s", r.out);
    cmd_result_free(&r);
}

Test(rules_cli, the_example_rules_page_the_lab_for_a_freezer_alarm)
{
    /* Sunday 2026-11-22 10:00 in Tokyo. */
    struct cmd_result r = wsrelay_cmd(30, "-c", EXAMPLE_CONFIG, "explain", EXAMPLE_LOG, "--group",
                                      "Lab A", "--now", "1795309200", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *b = event_block(r.out, "5214000A/1795305240/ch1");
    expect_verdict(b, "freezer-critical", "matched");
    expect_verdict(b, "audit", "matched");
    expect_outcome(b, "sent to oncall-mail (severity critical), lab-slack (severity critical), "
                      "audit-hook");
    free(b);
    /* The second alarm within 30 minutes: held back from the people, not
     * from the audit log. */
    b = event_block(r.out, "5214000A/1795305300/ch1");
    expect_verdict(b, "freezer-critical",
                   "throttled: one message per 30m for this device and kind; 1 held back so far");
    expect_outcome(b, "sent to audit-hook");
    free(b);
    /* Batteries go to facilities on weekdays only. */
    b = event_block(r.out, "5214000A/1795305240/battery-level");
    expect_verdict(b, "batteries-office-hours",
                   "outside its hours: Mon-Fri 08:00-18:00 (Asia/Tokyo)");
    expect_outcome(b, "sent to audit-hook");
    free(b);
    /* The all-clear always arrives: its rule has no throttle. */
    b = event_block(r.out, "5214000A/1795305600/ch1");
    expect_verdict(b, "freezer-recovered", "matched");
    expect_outcome(b, "sent to oncall-mail, lab-slack, audit-hook");
    free(b);
    cmd_result_free(&r);
    struct stat st;
    cr_assert_neq(stat(WSRELAY_SOURCE_DIR "/tests/data/rules-example-state.json", &st), 0,
                  "explain created the example's state file");
}
