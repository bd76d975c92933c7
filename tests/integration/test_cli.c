/* The command line as an administrator meets it: help, version, exit
 * codes, `check` on working and broken configurations, and the key
 * reference that wsrelay.yaml(5) shows. */
#include "proc.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;

static void setup(void)
{
    dir = test_tmpdir();
}

static void teardown(void)
{
    test_rmtree(dir);
    free(dir);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);

/* `wsrelay A1 A2 A3 A4`, up to the first NULL. */
static struct cmd_result wsrelay(const char *a1, const char *a2, const char *a3, const char *a4)
{
    return wsrelay_cmd(30, a1, a2, a3, a4, NULL);
}

/* Writes `yaml` as DIR/wsrelay.yaml and runs `wsrelay -c it check`. */
static struct cmd_result check(const char *yaml)
{
    char *path = xasprintf("%s/wsrelay.yaml", dir);
    write_file(path, yaml);
    struct cmd_result r = wsrelay("-c", path, "check", NULL);
    free(path);
    return r;
}

static const char good[] = "state_file: state.json\n"
                           "accounts:\n"
                           "  - name: lab\n"
                           "    api_key: \"${CLI_TEST_KEY}\"\n"
                           "    login_id: tbzz9999\n"
                           "    login_pass: secret\n"
                           "receivers:\n"
                           "  - name: console\n"
                           "    file: {path: \"-\"}\n";

Test(cli, help_lists_every_command)
{
    struct cmd_result r = wsrelay("--help", NULL, NULL, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "\n  run [--now UNIXTIME] [--dry-run] [--look SERIAL]... "
                            "[--loop [--interval DURATION]]\n"),
              "%s", r.out);
    cr_assert(strstr(r.out, "\n  check\n"));
    cr_assert(strstr(r.out, "\n  keys [--rules]\n"));
    cr_assert(strstr(r.out, "\n  explain FILE.json [--account NAME]"));
    cr_assert(strstr(r.out, "\n  test-receiver NAME\n"));
    cr_assert(strstr(r.out, "\n  render --template FILE"));
    cr_assert(strstr(r.out, "\n  current [--account NAME] [--json] [--now UNIXTIME]\n"), "%s",
              r.out);
    cr_assert(strstr(r.out, "\n  readings SERIAL [--account NAME] [--since DURATION | --from "
                            "TIME --to TIME]"),
              "%s", r.out);
    cr_assert(strstr(r.out, "\n  alerts SERIAL [--account NAME] [--force] [--json]"), "%s", r.out);
    cr_assert(strstr(r.out, "Exit status"));
    cmd_result_free(&r);
}

Test(cli, every_command_has_help_that_exits_0)
{
    static const char *const names[] = {"run",    "check",   "status", "current",       "readings",
                                        "alerts", "explain", "keys",   "test-receiver", "render"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct cmd_result r = wsrelay("-c", "/nonexistent/wsrelay.yaml", names[i], "--help");
        cr_expect_eq(r.status, 0, "%s --help: %d: %s", names[i], r.status, r.err);
        char *want = xasprintf("usage: wsrelay [-c FILE] [-v | -q] %s", names[i]);
        cr_expect(strncmp(r.out, want, strlen(want)) == 0, "%s --help: %s", names[i], r.out);
        cr_expect_str_eq(r.err, "", "%s --help", names[i]);
        free(want);
        cmd_result_free(&r);
    }
    struct cmd_result r = wsrelay("check", "-h", NULL, NULL);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "validate the configuration"), "%s", r.out);
    cmd_result_free(&r);
}

/* Every command that `wsrelay --help` lists (read from that list, not
 * from a copy of it) answers `wsrelay CMD --help` with exit 0, its usage
 * line, and a line of its option list for each option its synopsis
 * names, and the global options. */
Test(cli, every_listed_command_has_help_naming_its_options)
{
    struct cmd_result list = wsrelay("--help", NULL, NULL, NULL);
    cr_assert_eq(list.status, 0);
    const char *p = strstr(list.out, "\nCommands:\n");
    const char *end = strstr(list.out, "\nOptions:\n");
    cr_assert(p && end, "%s", list.out);
    size_t n_commands = 0;
    for (p = strchr(p + 1, '\n') + 1; p < end; p = strchr(p, '\n') + 1) {
        if (p[0] != ' ' || p[1] != ' ' || p[2] == ' ')
            continue; /* a summary line, indented further */
        char *line = xstrndup(p + 2, (size_t)(strchr(p, '\n') - p - 2));
        char *name = xstrndup(line, strcspn(line, " "));
        n_commands++;
        struct cmd_result r = wsrelay(name, "--help", NULL, NULL);
        cr_expect_eq(r.status, 0, "%s --help: %d: %s", name, r.status, r.err);
        cr_expect_str_eq(r.err, "", "%s --help", name);
        char *want = xasprintf("usage: wsrelay [-c FILE] [-v | -q] %s\n", line);
        cr_expect(strncmp(r.out, want, strlen(want)) == 0, "%s --help:\n%s", name, r.out);
        free(want);
        /* Each "--option" of the synopsis starts a line of the list. */
        for (const char *o = strstr(line, "--"); o; o = strstr(o + 2, "--")) {
            char *opt = xstrndup(o, strspn(o, "-abcdefghijklmnopqrstuvwxyz"));
            char *row = xasprintf("\n  %s", opt);
            const char *at = strstr(r.out, row);
            cr_expect(at && (at[strlen(row)] == ' ' || at[strlen(row)] == '\n'),
                      "%s --help does not list %s:\n%s", name, opt, r.out);
            free(row);
            free(opt);
        }
        cr_expect(strstr(r.out, "\nGlobal options, before or after the command:\n  -c FILE "),
                  "%s --help:\n%s", name, r.out);
        cmd_result_free(&r);
        free(name);
        free(line);
    }
    cr_expect_geq(n_commands, 10, "%s", list.out);
    cmd_result_free(&list);
}

/* -c, -v and -q after the command do what they do before it. */
Test(cli, global_options_after_the_command_work_as_before_it)
{
    setenv("CLI_TEST_KEY", "k", 1);
    char *path = xasprintf("%s/wsrelay.yaml", dir);
    write_file(path, good);
    struct cmd_result before = wsrelay("-q", "-c", path, "check");
    struct cmd_result after = wsrelay("check", "-c", path, "-q");
    cr_expect_eq(before.status, 0, "%s", before.err);
    cr_expect_eq(after.status, before.status, "%s", after.err);
    cr_expect_str_eq(after.out, before.out);
    cr_expect_str_eq(after.err, before.err);
    cmd_result_free(&before);
    cmd_result_free(&after);
    /* The last -c wins, wherever it is. */
    after = wsrelay("-c", "/nonexistent/wsrelay.yaml", "check", "-c");
    cr_expect_eq(after.status, 2, "-c without its file is a usage error");
    cmd_result_free(&after);
    char *argv[] = {(char *)WSRELAY_BIN,
                    (char *)"-c",
                    (char *)"/nonexistent/wsrelay.yaml",
                    (char *)"check",
                    (char *)"-c",
                    path,
                    NULL};
    char *out = NULL, *err = NULL;
    cr_expect_eq(run_cmd(&out, &err, 30, argv, NULL), 0, "%s", err);
    cr_expect(strncmp(out, path, strlen(path)) == 0, "%s", out);
    free(out);
    free(err);
    /* Beside the command's own options. */
    before = wsrelay("-c", "/nonexistent/wsrelay.yaml", "status", "--json");
    after = wsrelay("status", "--json", "-c", "/nonexistent/wsrelay.yaml");
    cr_expect_eq(before.status, 2);
    cr_expect_eq(after.status, before.status);
    cr_expect(strstr(after.err, "/nonexistent/wsrelay.yaml"), "%s", after.err);
    cr_expect_str_eq(after.err, before.err);
    cmd_result_free(&before);
    cmd_result_free(&after);
    free(path);
}

Test(cli, version)
{
    struct cmd_result r = wsrelay("--version", NULL, NULL, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strncmp(r.out, "wsrelay ", 8) == 0, "%s", r.out);
    cmd_result_free(&r);
}

Test(cli, usage_errors_exit_2)
{
    struct cmd_result r = wsrelay("frobnicate", NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown command 'frobnicate'"), "%s", r.err);
    cmd_result_free(&r);
    r = wsrelay(NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cmd_result_free(&r);
    r = wsrelay("run", "--now", "yesterday", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--now expects a Unix time"), "%s", r.err);
    cmd_result_free(&r);
}

Test(cli, check_accepts_a_good_config)
{
    setenv("CLI_TEST_KEY", "k", 1);
    struct cmd_result r = check(good);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "OK: 1 account, 1 receiver"), "%s", r.out);
    cmd_result_free(&r);
}

Test(cli, check_names_a_misspelt_key)
{
    setenv("CLI_TEST_KEY", "k", 1);
    char *yaml = xasprintf("%s", good);
    memcpy(strstr(yaml, "login_id"), "lgoin_id", 8);
    struct cmd_result r = check(yaml);
    free(yaml);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "wsrelay.yaml:5:5: accounts[0]: unknown key 'lgoin_id'"), "%s", r.err);
    cmd_result_free(&r);
}

Test(cli, check_names_a_wrong_type)
{
    setenv("CLI_TEST_KEY", "k", 1);
    char *yaml = xasprintf("catch_up: [1h]\n%s", good);
    struct cmd_result r = check(yaml);
    free(yaml);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "wsrelay.yaml:1:11: catch_up: expected"), "%s", r.err);
    cmd_result_free(&r);
}

/* How many lines `text` has. */
static size_t lines_of(const char *text)
{
    size_t n = 0;
    for (const char *p = text; (p = strchr(p, '\n')); p++)
        n++;
    return n;
}

/* `check` reports every mistake in one pass, each where it is, as
 * wsrelay.yaml(5) says, not one a round. */
Test(cli, check_reports_every_mistake_of_a_file_at_once)
{
    struct cmd_result r = check("state_file: state.json\n"
                                "catch_up: [1h]\n"
                                "accounts:\n"
                                "  - name: lab\n"
                                "    api_key: k\n"
                                "    login_id: tbzz9999\n"
                                "    login_pass: secret\n"
                                "    colour: blue\n"
                                "receivers:\n"
                                "  - name: console\n"
                                "    file: {path: \"-\"}\n"
                                "    timeout: 1s\n");
    cr_assert_eq(r.status, 2);
    const char *want[] = {
        "wsrelay.yaml:2:11: catch_up: expected a duration",
        "wsrelay.yaml:8:5: accounts[0]: unknown key 'colour'",
        "wsrelay.yaml:12:14: receivers[0].timeout: expected a duration from 5s to 2m",
    };
    const char *at = r.err;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *hit = strstr(at, want[i]);
        cr_assert(hit, "want '%s', in order, in:\n%s", want[i], r.err);
        at = hit;
    }
    cr_assert_eq(lines_of(r.err), 3, "%s", r.err);
    cmd_result_free(&r);
}

Test(cli, check_reports_every_unknown_receiver_of_a_rule)
{
    char *rules = xasprintf("%s/rules.yaml", dir);
    write_file(rules, "- name: cold\n"
                      "  receivers: [pager, console, phone]\n");
    free(rules);
    setenv("CLI_TEST_KEY", "k", 1);
    char *yaml = xasprintf("rules: rules.yaml\n%s", good);
    struct cmd_result r = check(yaml);
    free(yaml);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "rules.yaml:2:15: rule 'cold'.receivers[0]: unknown receiver 'pager' "
                            "(the receivers are: console)\n"),
              "%s", r.err);
    cr_assert(strstr(r.err, "rules.yaml:2:31: rule 'cold'.receivers[2]: unknown receiver 'phone' "
                            "(the receivers are: console)\n"),
              "%s", r.err);
    size_t n = 0;
    for (const char *p = r.err; (p = strstr(p, "unknown receiver")); p++)
        n++;
    cr_assert_eq(n, 2, "%s", r.err);
    cmd_result_free(&r);
}

/* A list item with a mistake still takes part in the check of unique names. */
Test(cli, check_reports_a_repeated_name_beside_the_mistake_of_its_item)
{
    struct cmd_result r = check("accounts:\n"
                                "  - name: lab\n"
                                "    api_key: k\n"
                                "    login_id: tbzz9999\n"
                                "    login_pass: secret\n"
                                "receivers:\n"
                                "  - name: console\n"
                                "    file: {path: \"-\"}\n"
                                "  - name: console\n"
                                "    webhook: {url: \"ftp://x\"}\n");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "wsrelay.yaml:10:20: receivers[1].webhook.url: expected a URL"), "%s",
              r.err);
    cr_assert(strstr(r.err, "wsrelay.yaml:9:11: receivers[1].name: duplicate receiver name "
                            "'console' (first at line 7)\n"),
              "%s", r.err);
    cmd_result_free(&r);
}

/* A file that is nothing but mistakes: the first 50 are listed, then
 * where it stopped. */
/* `wsrelay check` of an account with `n` unknown keys, n mistakes. */
static struct cmd_result check_wrong_keys(int n)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "accounts:\n"
                 "  - name: lab\n"
                 "    api_key: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: secret\n");
    for (int i = 0; i < n; i++)
        buf_printf(&b, "    wrong_%d: x\n", i);
    buf_puts(&b, "receivers:\n"
                 "  - name: console\n"
                 "    file: {path: \"-\"}\n");
    struct cmd_result r = check(buf_str(&b));
    buf_free(&b);
    return r;
}

Test(cli, check_stops_after_fifty_mistakes)
{
    struct cmd_result r = check_wrong_keys(80);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(lines_of(r.err), 51, "%s", r.err);
    cr_assert(strstr(r.err, "wsrelay.yaml:55:5: accounts[0]: unknown key 'wrong_49'"), "%s", r.err);
    cr_assert_null(strstr(r.err, "wrong_50"), "%s", r.err);
    cr_assert(strstr(r.err, "stopped after 50 mistakes"), "%s", r.err);
    cmd_result_free(&r);
}

/* Exactly 50 mistakes are all listed, with no word of stopping; 51 show
 * the first 50 and where it stopped. */
Test(cli, check_says_it_stopped_only_past_fifty_mistakes)
{
    struct cmd_result r = check_wrong_keys(50);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(lines_of(r.err), 50, "%s", r.err);
    cr_assert(strstr(r.err, "unknown key 'wrong_49'"), "%s", r.err);
    cr_assert_null(strstr(r.err, "stopped after"), "%s", r.err);
    cmd_result_free(&r);

    r = check_wrong_keys(51);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(lines_of(r.err), 51, "%s", r.err);
    cr_assert(strstr(r.err, "unknown key 'wrong_49'"), "%s", r.err);
    cr_assert_null(strstr(r.err, "wrong_50"), "%s", r.err);
    cr_assert(strstr(r.err, "stopped after 50 mistakes"), "%s", r.err);
    cmd_result_free(&r);
}

Test(cli, check_names_a_missing_secret_file)
{
    setenv("CLI_TEST_KEY", "k", 1);
    char *yaml = xasprintf("%s", good);
    char *p = strstr(yaml, "    login_pass: secret\n");
    char *fixed = xasprintf("%.*s    login_pass_file: nowhere.pass\n%s", (int)(p - yaml), yaml,
                            p + strlen("    login_pass: secret\n"));
    struct cmd_result r = check(fixed);
    free(yaml);
    free(fixed);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "wsrelay.yaml:6:22: accounts[0].login_pass_file: cannot read secret "
                            "file:"),
              "%s", r.err);
    cr_assert(strstr(r.err, "nowhere.pass"), "%s", r.err);
    cmd_result_free(&r);
}

Test(cli, check_names_an_unset_variable)
{
    unsetenv("CLI_TEST_KEY");
    struct cmd_result r = check(good);
    cr_assert_eq(r.status, 2);
    /* api_key is a secret, but "${CLI_TEST_KEY}" alone is a reference, not a
     * password: the message names the variable to set. */
    cr_assert(strstr(r.err, "wsrelay.yaml:4:14: accounts[0].api_key: environment variable "
                            "'CLI_TEST_KEY' is not set\n"),
              "%s", r.err);
    cmd_result_free(&r);
}

/* DIR/bin/wsrelay, a copy of the front, and DIR/bin/wsrelay-net made by
 * `how` ("cp": a copy of the front too; "ln": a hard link to it): an
 * installation mistake. The front refuses with the path named, at once. */
static void front_as_helper(const char *how, const char *want)
{
    char *bin = xasprintf("%s/bin", dir);
    char *front = xasprintf("%s/wsrelay", bin);
    char *net = xasprintf("%s/wsrelay-net", bin);
    cr_assert_eq(mkdir(bin, 0755), 0);
    char *cp[] = {(char *)"/bin/cp", (char *)WSRELAY_BIN, front, NULL};
    cr_assert_eq(run_cmd(NULL, NULL, 30, cp, NULL), 0);
    char *make[] = {strcmp(how, "cp") == 0 ? (char *)"/bin/cp" : (char *)"/bin/ln", front, net,
                    NULL};
    cr_assert_eq(run_cmd(NULL, NULL, 30, make, NULL), 0);
    const char *const commands[] = {"status", "run", "check", NULL};
    for (const char *const *c = commands; *c; c++) {
        char *argv[] = {front, (char *)"-c", (char *)"/nonexistent.yaml", (char *)*c, NULL};
        char *err = NULL;
        /* A loop would spin until run_cmd's hang guard fails the test. */
        int status = run_cmd(NULL, &err, 20, argv, NULL);
        char *line = xasprintf("wsrelay: %s %s", net, want);
        cr_assert_eq(status, 2, "%s: %s", *c, err);
        cr_assert(strstr(err, line), "%s: want '%s' in:\n%s", *c, line, err);
        free(line);
        free(err);
    }
    free(net);
    free(front);
    free(bin);
}

Test(cli, a_wsrelay_net_that_is_a_copy_of_the_front_is_refused)
{
    front_as_helper("cp", "is a copy of wsrelay, not the wsrelay-net helper (it answered as "
                          "the front); reinstall wsrelay so that it holds wsrelay-net");
}

Test(cli, a_wsrelay_net_that_is_the_front_itself_is_refused)
{
    front_as_helper("ln", "is this program (wsrelay) itself, not the wsrelay-net helper; "
                          "reinstall wsrelay so that it holds wsrelay-net");
}

Test(cli, a_missing_config_file_is_named)
{
    struct cmd_result r = wsrelay("-c", "/nonexistent/wsrelay.yaml", "check", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "/nonexistent/wsrelay.yaml: No such file"), "%s", r.err);
    cmd_result_free(&r);
}

/* Appends `c`, a backslash as roff's "\e". */
static void mdoc_char(struct buf *b, char c)
{
    if (c == '\\')
        buf_puts(b, "\\e");
    else
        buf_append(b, &c, 1);
}

/* Text of `wsrelay keys` as an mdoc text line, as scripts/man-keys.sh
 * writes it: '\' as "\e", each `word` as \(lqword\(rq, and a line that
 * would start with '.' or '\'' guarded by "\&". */
static void mdoc_text(struct buf *b, const char *s, size_t len)
{
    if (len && (s[0] == '.' || s[0] == '\''))
        buf_puts(b, "\\&");
    const char *end = s + len;
    for (const char *p = s; p < end; p++) {
        const char *close = *p == '`' ? memchr(p + 1, '`', (size_t)(end - p - 1)) : NULL;
        if (close) {
            buf_puts(b, "\\(lq");
            for (p++; p < close; p++)
                mdoc_char(b, *p);
            buf_puts(b, "\\(rq");
        } else {
            mdoc_char(b, *p);
        }
    }
}

/* The output of `wsrelay keys` (or `keys --rules`) as man/wsrelay.yaml.5
 * lists it (scripts/man-keys.sh): each key as ".It Cm KEY Pq \"TYPE\"",
 * with '\' as "\e" and '"' as "\(dq" in TYPE, each help line as text,
 * in one tag list. The caller frees the string. */
static char *keys_as_mdoc(const char *out)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, ".Bl -tag -width Ds\n");
    for (const char *line = out; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len >= 4 && strncmp(line, "    ", 4) == 0) {
            mdoc_text(&b, line + 4, len - 4);
        } else {
            const char *space = memchr(line, ' ', len);
            size_t key_len = space ? (size_t)(space - line) : len;
            const char *what = space ? space + 1 : line + len;
            size_t what_len = (size_t)(line + len - what);
            if (what_len && *what == '(') {
                what++;
                what_len--;
            }
            if (what_len && what[what_len - 1] == ')')
                what_len--;
            buf_puts(&b, ".It Cm ");
            buf_append(&b, line, key_len);
            buf_puts(&b, " Pq \"");
            for (size_t i = 0; i < what_len; i++) {
                if (what[i] == '"')
                    buf_puts(&b, "\\(dq");
                else
                    mdoc_char(&b, what[i]);
            }
            buf_puts(&b, "\"");
        }
        buf_puts(&b, "\n");
        line += len + (nl != NULL);
    }
    buf_puts(&b, ".El\n");
    return buf_steal(&b);
}

/* The key reference of wsrelay.yaml(5) is the output of `wsrelay keys`,
 * word for word. */
Test(cli, the_man_page_shows_the_key_reference_of_this_build)
{
    struct cmd_result r = wsrelay("keys", NULL, NULL, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "accounts[].login_id"), "%s", r.out);
    char *page = read_file_str(WSRELAY_SOURCE_DIR "/man/wsrelay.yaml.5");
    cr_assert_not_null(page);
    char *list = keys_as_mdoc(r.out);
    cr_assert(strstr(list, ".It Cm accounts[].login_id Pq \"string; required\"\n"), "%s", list);
    cr_assert(strstr(page, list), "man/wsrelay.yaml.5 is out of date: run scripts/man-keys.sh "
                                  "--update with this build's wsrelay");
    free(list);
    free(page);
    cmd_result_free(&r);
}

/* And its rule-file key reference is the output of `wsrelay keys --rules`. */
Test(cli, the_man_page_shows_the_rule_key_reference_of_this_build)
{
    struct cmd_result r = wsrelay("keys", "--rules", NULL, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "match.serial (glob or list of globs)"), "%s", r.out);
    char *page = read_file_str(WSRELAY_SOURCE_DIR "/man/wsrelay.yaml.5");
    cr_assert_not_null(page);
    char *list = keys_as_mdoc(r.out);
    cr_assert(strstr(list, ".It Cm match.serial Pq \"glob or list of globs\"\n"), "%s", list);
    cr_assert(strstr(page, list), "man/wsrelay.yaml.5 is out of date: run scripts/man-keys.sh "
                                  "--update with this build's wsrelay");
    free(list);
    free(page);
    cmd_result_free(&r);
}

/* wsrelay render: for template authors. */

static struct cmd_result render(const char *a1, const char *a2, const char *a3, const char *a4,
                                const char *a5, const char *a6, const char *a7)
{
    return wsrelay_cmd(30, "render", a1, a2, a3, a4, a5, a6, a7, NULL);
}

/* Writes DIR/NAME and returns its path (caller frees). */
static char *scratch(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", dir, name);
    write_file(path, text);
    return path;
}

Test(cli, help_lists_render)
{
    struct cmd_result r = wsrelay("--help", NULL, NULL, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "  render --template FILE --data FILE.json [--partials DIR] "
                            "[--escape html|json|text|none|slack|teams|googlechat|chatwork]"),
              "%s", r.out);
    cmd_result_free(&r);
}

Test(cli, render_prints_the_template_html_escaped_by_default)
{
    char *tpl = scratch("t.html", "{{#events}}<p>{{name}}: {{{text}}}</p>\n{{/events}}");
    char *data = scratch("d.json", "{\"events\": [{\"name\": \"冷凍庫 <A>\", \"text\": \"<b>\"}, "
                                   "{\"name\": \"B & C\", \"text\": \"x\"}]}\n");
    struct cmd_result r = render("--template", tpl, "--data", data, NULL, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "<p>冷凍庫 &lt;A&gt;: <b></p>\n<p>B &amp; C: x</p>\n");
    cr_assert_str_eq(r.err, "");
    cmd_result_free(&r);
    free(tpl);
    free(data);
}

Test(cli, render_escapes_json_and_finds_partials)
{
    char *tpl = scratch("t.json", "{\"text\": \"{{> head}}{{text}}\"}\n");
    char *data = scratch("d.json", "{\"who\": \"ops\", \"text\": \"line \\\"1\\\"\\nline 2\"}");
    char *parts = xasprintf("%s/partials", dir);
    cr_assert_eq(mkdir(parts, 0700), 0);
    char *head = scratch("partials/head", "[{{who}}] ");
    struct cmd_result r =
        render("--template", tpl, "--data", data, "--escape", "json", "--partials");
    cr_assert_eq(r.status, 2, "--partials without its directory is a usage error");
    cmd_result_free(&r);
    const char *argv[] = {WSRELAY_BIN, "render", "--template", tpl,   "--data", data,
                          "--escape",  "json",   "--partials", parts, NULL};
    r = cmd_run(30, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "{\"text\": \"[ops] line \\\"1\\\"\\nline 2\"}\n");
    cmd_result_free(&r);
    free(tpl);
    free(data);
    free(parts);
    free(head);
}

Test(cli, render_shows_a_builtin_template)
{
    struct cmd_result r =
        render("--template", "builtin:file.txt", "--data",
               WSRELAY_SOURCE_DIR "/tests/data/templates/context.json", "--escape", "text", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *head = "== wsrelay: 2 new alerts for on-call ==\n\n"
                       "[ALARM] 冷凍庫 A (RTR501B, 52C10001) - ch1 温度 [℃]\n"
                       "  2026-11-18 20:06:40 +09:00  account tokyo, base unit 本社1F\n";
    cr_assert(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
    cmd_result_free(&r);
}

Test(cli, render_names_the_place_of_a_template_error)
{
    char *tpl = scratch("slack.json", "{\n  \"blocks\": [\n{{#events}}\n    {}\n  ]\n}\n");
    char *data = scratch("d.json", "{}");
    struct cmd_result r = render("--template", tpl, "--data", data, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    char *want = xasprintf("wsrelay: %s:3:1: unclosed section 'events'\n", tpl);
    cr_assert_str_eq(r.err, want);
    cr_assert_str_eq(r.out, "");
    free(want);
    cmd_result_free(&r);
    free(tpl);
    free(data);
}

Test(cli, render_refuses_data_that_is_not_json)
{
    char *tpl = scratch("t.txt", "{{x}}");
    char *data = scratch("d.json", "{\"x\": 1,}");
    struct cmd_result r = render("--template", tpl, "--data", data, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, data) && strstr(r.err, "not JSON"), "%s", r.err);
    cmd_result_free(&r);
    free(data);
    data = scratch("d2.json", "{\"x\": 1} trailing");
    r = render("--template", tpl, "--data", data, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, data), "%s", r.err);
    cr_assert(strstr(r.err, "not JSON: unexpected character at offset 9"), "%s", r.err);
    cmd_result_free(&r);
    r = render("--template", tpl, "--data", "/nonexistent/d.json", NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "/nonexistent/d.json: No such file"), "%s", r.err);
    cmd_result_free(&r);
    free(tpl);
    free(data);
}

Test(cli, render_warns_of_a_missing_partial)
{
    char *tpl = scratch("t.txt", "a\n{{> nowhere}}\nb\n");
    char *data = scratch("d.json", "{}");
    struct cmd_result r = render("--template", tpl, "--data", data, NULL, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "a\nb\n");
    char *want = xasprintf("wsrelay: warning: %s:2:1: partial 'nowhere' not found (looked in the "
                           "built-in templates)\n",
                           tpl);
    cr_assert_str_eq(r.err, want);
    free(want);
    cmd_result_free(&r);
    free(tpl);
    free(data);
}

Test(cli, render_usage_errors_exit_2)
{
    struct cmd_result r = render("--template", "x.txt", NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "usage: wsrelay render --template FILE --data FILE.json"), "%s", r.err);
    cmd_result_free(&r);
    r = render("--template", "x.txt", "--data", "d.json", "--escape", "xml", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--escape expects html, json, text, none, slack, teams, googlechat or "
                            "chatwork, got 'xml'"),
              "%s", r.err);
    cmd_result_free(&r);
    r = render("--template", "builtin:nothing.txt", "--data", "d.json", NULL, NULL, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "no template 'nothing.txt' built in"), "%s", r.err);
    cmd_result_free(&r);
}

/* A template mistake is found by check, with its place, not at 3 a.m. */
Test(cli, check_compiles_every_template_a_receiver_uses)
{
    setenv("CLI_TEST_KEY", "k", 1);
    char *tdir = xasprintf("%s/templates", dir);
    char *cmd = xasprintf("mkdir -p '%s'", tdir);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    char *slack = xasprintf("%s/slack.json", tdir);
    write_file(slack, "{\"text\": \"{{#events}}{{name}}\"}\n");
    char *yaml = xasprintf("templates: templates\n%s"
                           "  - name: chat\n"
                           "    slack: {url: \"https://hooks.example.org/x\"}\n",
                           good);
    struct cmd_result r = check(yaml);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "receiver 'chat': "), "%s", r.err);
    cr_assert(strstr(r.err, "templates/slack.json:1:"), "the file and its place: %s", r.err);
    cmd_result_free(&r);

    /* A receiver's own template, with a partial that does not exist. */
    char *own = xasprintf("%s/mine.txt", dir);
    write_file(own, "{{#events}}\n  {{> missing.txt}}\n{{/events}}\n");
    free(yaml);
    yaml = xasprintf("%s"
                     "  - name: log\n"
                     "    file: {path: \"-\", template: mine.txt}\n",
                     good);
    r = check(yaml);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "mine.txt:2:3: partial 'missing.txt' not found"), "%s", r.err);
    cmd_result_free(&r);

    /* Fixed: the built-in templates of every receiver type compile. */
    write_file(slack, "{\"text\": \"{{#events}}{{name}}{{/events}}\"}\n");
    write_file(own, "{{#events}}{{name}}{{/events}}\n");
    free(yaml);
    yaml = xasprintf("templates: templates\n%s"
                     "  - name: chat\n"
                     "    slack: {url: \"https://hooks.example.org/x\"}\n"
                     "  - name: cards\n"
                     "    teams: {url: \"https://example.org/workflows/x\"}\n"
                     "  - name: mail\n"
                     "    email: {host: smtp.example.org, from: a@example.org, to: b@example.org}\n"
                     "  - name: hook\n"
                     "    webhook: {url: \"https://example.org/hook\"}\n"
                     "  - name: log\n"
                     "    file: {path: \"-\", template: mine.txt}\n",
                     good);
    r = check(yaml);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cmd_result_free(&r);
    free(yaml);
    free(own);
    free(slack);
    free(tdir);
}
