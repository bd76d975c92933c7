/* The configuration file: every field and default of a valid file, and for
 * each kind of mistake the exact FILE:LINE:COL, key path and message. Each
 * test writes YAML into a fresh temporary directory and loads it. */
#include "config.h"
#include "proc.h"
#include "readings_memory.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/wsrelay-config-XXXXXX";
static char *conf_path;
static struct config *cfg;
static struct err err;

static void setup(void)
{
    cr_assert_not_null(mkdtemp(tmp));
    conf_path = xasprintf("%s/wsrelay.yaml", tmp);
}

static void teardown(void)
{
    config_free(cfg);
    cfg = NULL;
    free(conf_path);
    test_rmtree(tmp);
}

/* Runs after the suite's setup. */
static void capture_stderr(void)
{
    cr_redirect_stderr();
}

TestSuite(config, .init = setup, .fini = teardown);

/* `name` (relative to the temporary directory) now holds `text`. */
static char *put(const char *name, const char *text, mode_t mode)
{
    char *path = xasprintf("%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot create %s", path);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(chmod(path, mode), 0);
    return path;
}

static int load(const char *yaml)
{
    free(put("wsrelay.yaml", yaml, 0600));
    config_free(cfg);
    cfg = NULL;
    memset(&err, 0, sizeof err);
    return config_load(&cfg, conf_path, &err);
}

/* Loading `yaml` fails with exactly "CONF_PATH:" followed by `tail`. */
static void expect_error(const char *yaml, const char *tail)
{
    cr_assert_eq(load(yaml), -1, "loaded, but should have failed with %s", tail);
    cr_assert_null(cfg);
    char *want = xasprintf("%s:%s", conf_path, tail);
    cr_assert_str_eq(err.msg, want);
    free(want);
}

static void expect_ok(const char *yaml)
{
    int rc = load(yaml);
    cr_assert_eq(rc, 0, "failed: %s", err.msg);
    cr_assert_not_null(cfg);
}

/* Lines 1-5: one valid account. */
#define ACCOUNT                                                                                    \
    "accounts:\n"                                                                                  \
    "  - name: tokyo\n"                                                                            \
    "    api_key: k\n"                                                                             \
    "    login_id: tbzz9999\n"                                                                     \
    "    login_pass: p\n"

/* Three lines: one valid receiver. */
#define RECEIVER                                                                                   \
    "receivers:\n"                                                                                 \
    "  - name: console\n"                                                                          \
    "    file: {path: \"-\"}\n"

/* ---- valid files ---- */

Test(config, full_file_every_key)
{
    free(put("tokyo.key", "KEY-1\n", 0600));
    free(put("hook.url", "https://hooks.example.com/secret-path\n", 0600));
    char *pass = put("tokyo.pass", "PASS-1", 0600);
    cr_assert_eq(setenv("T_KEY", "KEY-2", 1), 0);
    cr_assert_eq(setenv("T_HOOK", "abc", 1), 0);
    cr_assert_eq(setenv("T_TOKEN", "tok", 1), 0);
    cr_assert_eq(setenv("T_EMPTY", "", 1), 0);
    char *yaml = xasprintf("state_file: state/relay.json\n"
                           "catch_up: 1h30m\n"
                           "accounts:\n"
                           "  - name: tokyo\n"
                           "    base_url: https://api.webstorage.jp:8443/v1//\n"
                           "    api_key_file: tokyo.key\n"
                           "    login_id: tbzz9999\n"
                           "    login_pass_file: %s\n"
                           "    devices:\n"
                           "      - serial: 5214ABCD\n"
                           "      - serial: 5214abce\n"
                           "        base: 3F360001\n"
                           "    include: \"52*\"\n"
                           "    exclude: [\"5214ABCE\", \"3F36*\"]\n"
                           "  - name: local.sim-1\n"
                           "    base_url: http://127.0.0.1:8080/\n"
                           "    api_key: \"${T_KEY}\"\n"
                           "    login_id: tbzz8888\n"
                           "    login_pass: \"p$${x}${T_EMPTY}\"\n"
                           "    devices: auto\n"
                           "receivers:\n"
                           "  - name: ops-hook\n"
                           "    webhook:\n"
                           "      url: \"https://hooks.example.com/${T_HOOK}\"\n"
                           "      headers:\n"
                           "        Authorization: \"Bearer ${T_TOKEN}\"\n"
                           "        X-Team: ops\n"
                           "  - name: hook2\n"
                           "    webhook: {url_file: hook.url, allow_http: true}\n"
                           "  - name: console\n"
                           "    file: {path: \"-\"}\n"
                           "  - name: archive\n"
                           "    file:\n"
                           "      path: alerts.log\n",
                           pass);
    expect_ok(yaml);
    free(yaml);

    char *state = xasprintf("%s/state/relay.json", tmp);
    cr_assert_str_eq(cfg->path, conf_path);
    cr_assert_str_eq(cfg->state_file, state);
    free(state);
    cr_assert_eq(cfg->catch_up, 5400);
    cr_assert_eq(cfg->n_accounts, 2);

    const struct account_conf *a = &cfg->accounts[0];
    cr_assert_str_eq(a->name, "tokyo");
    cr_assert_str_eq(a->base_url, "https://api.webstorage.jp:8443/v1");
    cr_assert_str_eq(a->api_key, "KEY-1");
    cr_assert_str_eq(a->login_id, "tbzz9999");
    cr_assert_str_eq(a->login_pass, "PASS-1");
    cr_assert_not(a->devices_auto);
    cr_assert_eq(a->n_devices, 2);
    cr_assert_str_eq(a->devices[0].serial, "5214ABCD");
    cr_assert_str_eq(a->devices[0].base, "5214ABCD");
    cr_assert_str_eq(a->devices[1].serial, "5214abce");
    cr_assert_str_eq(a->devices[1].base, "3F360001");
    cr_assert_eq(a->n_include, 1);
    cr_assert_str_eq(a->include[0], "52*");
    cr_assert_eq(a->n_exclude, 2);
    cr_assert_str_eq(a->exclude[0], "5214ABCE");
    cr_assert_str_eq(a->exclude[1], "3F36*");

    a = &cfg->accounts[1];
    cr_assert_str_eq(a->name, "local.sim-1");
    cr_assert_str_eq(a->base_url, "http://127.0.0.1:8080");
    cr_assert_str_eq(a->api_key, "KEY-2");
    cr_assert_str_eq(a->login_id, "tbzz8888");
    cr_assert_str_eq(a->login_pass, "p${x}");
    cr_assert(a->devices_auto);
    cr_assert_eq(a->n_devices, 0);
    cr_assert_eq(a->n_include, 0);
    cr_assert_eq(a->n_exclude, 0);

    cr_assert_eq(cfg->n_receivers, 4);
    const struct receiver_conf *r = &cfg->receivers[0];
    cr_assert_str_eq(r->name, "ops-hook");
    cr_assert_eq(r->type, RECEIVER_WEBHOOK);
    cr_assert_str_eq(r->webhook.url, "https://hooks.example.com/abc");
    cr_assert_eq(r->webhook.n_headers, 2);
    cr_assert_str_eq(r->webhook.headers[0].name, "Authorization");
    cr_assert_str_eq(r->webhook.headers[0].value, "Bearer tok");
    cr_assert_str_eq(r->webhook.headers[1].name, "X-Team");
    cr_assert_str_eq(r->webhook.headers[1].value, "ops");
    r = &cfg->receivers[1];
    cr_assert_eq(r->type, RECEIVER_WEBHOOK);
    cr_assert_str_eq(r->webhook.url, "https://hooks.example.com/secret-path");
    cr_assert_eq(r->webhook.n_headers, 0);
    cr_assert(r->webhook.allow_http);
    cr_assert_not(cfg->receivers[0].webhook.allow_http);
    r = &cfg->receivers[2];
    cr_assert_eq(r->type, RECEIVER_FILE);
    cr_assert_str_eq(r->file.path, "-");
    cr_assert_null(r->webhook.url);
    r = &cfg->receivers[3];
    char *log = xasprintf("%s/alerts.log", tmp);
    cr_assert_eq(r->type, RECEIVER_FILE);
    cr_assert_str_eq(r->file.path, log);
    free(log);
    free(pass);
}

Test(config, defaults)
{
    expect_ok(ACCOUNT RECEIVER);
    cr_assert_str_eq(cfg->state_file, CONFIG_DEFAULT_STATE);
    cr_assert_eq(cfg->catch_up, 3600);
    cr_assert_eq(cfg->n_accounts, 1);
    const struct account_conf *a = &cfg->accounts[0];
    cr_assert_str_eq(a->base_url, CONFIG_DEFAULT_BASE_URL);
    cr_assert_str_eq(a->api_key, "k");
    cr_assert_str_eq(a->login_pass, "p");
    cr_assert(a->devices_auto);
    cr_assert_eq(a->n_devices, 0);
    cr_assert_null(a->devices);
    cr_assert_eq(a->n_include, 0);
    cr_assert_eq(a->n_exclude, 0);
    cr_assert_eq(a->n_limits, 0);
    cr_assert_null(a->limits);
    cr_assert(a->early_warning);
    cr_assert(a->signals);
    cr_assert_eq(cfg->n_receivers, 1);
    cr_assert_eq(cfg->receivers[0].type, RECEIVER_FILE);
}

Test(config, plain_number_is_a_duration_and_flow_style_works)
{
    expect_ok("{catch_up: 3600, state_file: /x/s.json, accounts: [{name: a, api_key: k, "
              "login_id: l, login_pass: p, devices: [{serial: ABCDEFGH}]}], "
              "receivers: [{name: r, file: {path: /x/log}}]}\n");
    cr_assert_eq(cfg->catch_up, 3600);
    cr_assert_str_eq(cfg->state_file, "/x/s.json");
    cr_assert_str_eq(cfg->accounts[0].devices[0].base, "ABCDEFGH");
    cr_assert_str_eq(cfg->receivers[0].file.path, "/x/log");
}

Test(config, base_url_forms)
{
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"https://api.webstorage.jp", "https://api.webstorage.jp"},
        {"https://api.webstorage.jp/", "https://api.webstorage.jp"},
        {"https://h.example:443/prefix/v1///", "https://h.example:443/prefix/v1"},
        {"http://localhost:8080", "http://localhost:8080"},
        {"http://127.0.0.1/", "http://127.0.0.1"},
        {"http://[::1]:9000/sim/", "http://[::1]:9000/sim"},
        {"https://[2001:db8::1]", "https://[2001:db8::1]"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "    base_url: %s\n" RECEIVER, ok[i].in);
        expect_ok(yaml);
        cr_assert_str_eq(cfg->accounts[0].base_url, ok[i].out, "for %s", ok[i].in);
        free(yaml);
    }
    static const char *const bad[] = {"api.webstorage.jp", "ftp://x.example",   "https://",
                                      "https:///x",        "https://user@host", "https://h:0",
                                      "https://h:99999",   "https://h/a?b",     "https://h:x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "    base_url: %s\n" RECEIVER, bad[i]);
        cr_assert_eq(load(yaml), -1, "accepted %s", bad[i]);
        char *want = xasprintf("%s:6:15: accounts[0].base_url: ", conf_path);
        cr_assert(!strncmp(err.msg, want, strlen(want)), "for %s: %s", bad[i], err.msg);
        free(want);
        free(yaml);
    }
}

/* ---- mistakes: where, which key, what was expected ---- */

Test(config, misspelt_top_level_key)
{
    expect_error(ACCOUNT "recievers:\n"
                         "  - name: console\n"
                         "    file: {path: \"-\"}\n",
                 "6:1: unknown key 'recievers' (expected one of: state_file, catch_up, run_time, "
                 "templates, metrics_file, accounts, receivers, rules, default_receivers, "
                 "timezone, self, outbox, incidents)");
}

Test(config, misspelt_nested_keys)
{
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    logn_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "4:5: accounts[0]: unknown key 'logn_id' (expected one of: name, base_url, "
                 "api_key, api_key_file, login_id, login_pass, login_pass_file, devices, "
                 "include, exclude, priorities, limits, early_warning, signals, trend)");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook: {ulr: \"https://x.example\"}\n",
                 "8:15: receivers[0].webhook: unknown key 'ulr' (expected one of: url, "
                 "url_file, allow_http, headers, template)");
    expect_error(ACCOUNT "    devices:\n"
                         "      - serial: 5214ABCD\n"
                         "        bsae: 5214ABCD\n" RECEIVER,
                 "8:9: accounts[0].devices[0]: unknown key 'bsae' (expected one of: serial, "
                 "base, priority)");
}

Test(config, wrong_types)
{
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: {a: b}\n"
                 "    login_pass: p\n" RECEIVER,
                 "4:15: accounts[0].login_id: expected a string, got a mapping");
    expect_error("accounts: tokyo\n" RECEIVER, "1:11: accounts: expected a list, got a string");
    expect_error("accounts:\n" RECEIVER, "1:10: accounts: expected a list, got an empty value");
    expect_error(ACCOUNT "receivers:\n"
                         "  - console\n",
                 "7:5: receivers[0]: expected a mapping, got a string");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: console\n"
                         "    file: \"-\"\n",
                 "8:11: receivers[0].file: expected a mapping, got a string");
    expect_error("catch_up: [1h]\n" ACCOUNT RECEIVER,
                 "1:11: catch_up: expected a duration such as 90s, 30m, 1h, got a list");
    expect_error(ACCOUNT "    exclude: {a: b}\n" RECEIVER,
                 "6:14: accounts[0].exclude: expected a glob or a list of globs, got a mapping");
    expect_error(ACCOUNT "    exclude: [\"A*\", [B]]\n" RECEIVER,
                 "6:21: accounts[0].exclude[1]: expected a glob, got a list");
    expect_error(ACCOUNT "    devices: [5214ABCD]\n" RECEIVER,
                 "6:15: accounts[0].devices[0]: expected a mapping, got a string");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers: [a]\n",
                 "10:16: receivers[0].webhook.headers: expected a mapping of header names to "
                 "values, got a list");
    expect_error("- a\n", "1:1: expected a mapping with accounts and receivers, got a list");
    expect_error(ACCOUNT "    ? [a]\n    : b\n" RECEIVER,
                 "6:7: accounts[0]: expected a key name, got a list");
}

Test(config, missing_required_keys_point_at_the_mapping)
{
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_pass: p\n" RECEIVER,
                 "2:5: accounts[0]: missing required key 'login_id'");
    expect_error(RECEIVER, "1:1: missing required key 'accounts'");
    expect_error("# a comment\n" ACCOUNT, "2:1: missing required key 'receivers'");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: console\n"
                         "    file: {}\n",
                 "8:11: receivers[0].file: missing required key 'path'");
    expect_error(ACCOUNT "receivers:\n"
                         "  - file: {path: x}\n",
                 "7:5: receivers[0]: missing required key 'name'");
    expect_error(ACCOUNT "    devices:\n"
                         "      - base: 5214ABCD\n" RECEIVER,
                 "7:9: accounts[0].devices[0]: missing required key 'serial'");
}

Test(config, empty_lists)
{
    expect_error("accounts: []\n" RECEIVER,
                 "1:11: accounts: the list is empty; give at least one account");
    expect_error(ACCOUNT "receivers: []\n",
                 "6:12: receivers: the list is empty; give at least one receiver");
    expect_error(ACCOUNT "    devices: []\n" RECEIVER,
                 "6:14: accounts[0].devices: the list is empty; give at least one device");
}

Test(config, empty_file)
{
    expect_error("", "1:1: the file is empty; it needs at least accounts and receivers");
    expect_error("# nothing\n\n",
                 "1:1: the file is empty; it needs at least accounts and receivers");
}

Test(config, missing_config_file)
{
    char *path = xasprintf("%s/nope.yaml", tmp);
    cr_assert_eq(config_load(&cfg, path, &err), -1);
    cr_assert_null(cfg);
    char *want = xasprintf("%s: No such file or directory", path);
    cr_assert_str_eq(err.msg, want);
    free(want);
    free(path);
}

Test(config, duplicate_keys)
{
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n"
                 "    login_id: tbzz9998\n" RECEIVER,
                 "6:5: accounts[0]: duplicate key 'login_id' (first at line 4)");
    expect_error(ACCOUNT RECEIVER "accounts: []\n",
                 "9:1: duplicate key 'accounts' (first at line 1)");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers: {X-A: 1, x-a: 2}\n",
                 "10:25: receivers[0].webhook.headers.x-a: duplicate header 'x-a' (header names "
                 "ignore case)");
}

Test(config, duplicate_names_point_at_the_second)
{
    expect_error(ACCOUNT RECEIVER "  - name: console\n"
                                  "    file: {path: x}\n",
                 "9:11: receivers[1].name: duplicate receiver name 'console' (first at line 7)");
    expect_error(ACCOUNT "  - name: tokyo\n"
                         "    api_key: k\n"
                         "    login_id: x\n"
                         "    login_pass: p\n" RECEIVER,
                 "6:11: accounts[1].name: duplicate account name 'tokyo' (first at line 2)");
    expect_error(ACCOUNT "    devices:\n"
                         "      - serial: 5214ABCD\n"
                         "      - serial: 5214ABCE\n"
                         "      - serial: 5214ABCD\n" RECEIVER,
                 "9:17: accounts[0].devices[2].serial: duplicate device serial '5214ABCD' "
                 "(first at line 7)");
}

Test(config, exactly_one_of_a_secret_and_its_file)
{
    free(put("k", "KEY\n", 0600));
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n"
                 "    api_key_file: k\n" RECEIVER,
                 "6:5: accounts[0]: give api_key or api_key_file, not both");
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "2:5: accounts[0]: missing required key 'api_key' or 'api_key_file'");
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_pass_file: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "6:5: accounts[0]: give login_pass or login_pass_file, not both");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook: {url: \"https://a.example\", url_file: k}\n",
                 "8:41: receivers[0].webhook: give url or url_file, not both");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook: {headers: {}}\n",
                 "8:14: receivers[0].webhook: missing required key 'url' or 'url_file'");
}

Test(config, receiver_needs_exactly_one_type)
{
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: both\n"
                         "    webhook: {url: \"https://a.example\"}\n"
                         "    file: {path: x}\n",
                 "9:5: receivers[0]: give webhook, file, email, slack, teams, pagerduty, "
                 "opsgenie, googlechat, chatwork or pushover, not both");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: none\n",
                 "7:5: receivers[0]: missing required key 'webhook', 'file', 'email', 'slack', "
                 "'teams', 'pagerduty', 'opsgenie', 'googlechat', 'chatwork' or 'pushover'");
}

Test(config, secret_files)
{
    char *big = xmalloc(70000);
    memset(big, 'x', 69999);
    big[69999] = '\0';
    free(put("big", big, 0600));
    free(big);
    free(put("empty", "\n", 0600));
    free(put("blank", " \t\r\n\n", 0600));
    free(put("two", "line1\nline2\n", 0600));
    free(put("cr", "abc\rdef\r\n", 0600));
    free(put("tab", "abc\t# the key of tokyo\n", 0600));
    free(put("esc", "abc\033[2Jdef\n", 0600));
    char *nul = xasprintf("%s/nul", tmp);
    FILE *f = fopen(nul, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite("abc\0def\n", 1, 8, f), 8);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(chmod(nul, 0600), 0);
    free(nul);
    char *sub = xasprintf("%s/dir", tmp);
    cr_assert_eq(mkdir(sub, 0700), 0);
    free(sub);

#define CONTROL                                                                                    \
    " contains a line break, tab, NUL or other control character before its end; a secret is "     \
    "one line (whitespace at its end is removed)"
    struct {
        const char *file, *message;
    } cases[] = {
        {"nokey", "cannot read secret file: %s/nokey: No such file or directory"},
        {"dir", "cannot read secret file: %s/dir: not a regular file (a directory)"},
        {"big", "cannot read secret file: %s/big: larger than 65536 bytes"},
        {"empty", "secret file %s/empty is empty"},
        {"blank", "secret file %s/blank is empty"},
        {"two", "secret file %s/two" CONTROL},
        {"cr", "secret file %s/cr" CONTROL},
        {"tab", "secret file %s/tab" CONTROL},
        {"esc", "secret file %s/esc" CONTROL},
        {"nul", "secret file %s/nul" CONTROL},
    };
#undef CONTROL
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *yaml = xasprintf("accounts:\n"
                               "  - name: tokyo\n"
                               "    api_key_file: %s\n"
                               "    login_id: tbzz9999\n"
                               "    login_pass: p\n" RECEIVER,
                               cases[i].file);
        char *message = xasprintf(cases[i].message, tmp);
        char *tail = xasprintf("3:19: accounts[0].api_key_file: %s", message);
        expect_error(yaml, tail);
        free(tail);
        free(message);
        free(yaml);
    }
}

/* A secret never ends in whitespace: the newline an editor adds, a CRLF
 * from Windows (which the platform would refuse as part of the key) and
 * stray spaces go; spaces inside stay. */
Test(config, secret_file_trailing_whitespace_removed)
{
    static const struct {
        const char *content, *secret;
    } cases[] = {{"abc\n", "abc"},  {"abc\r\n", "abc"},          {"abc", "abc"},
                 {" a b ", " a b"}, {"abc \t\r\n\r\n\n", "abc"}, {"abc\r", "abc"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        free(put("pass", cases[i].content, 0600));
        free(put("key", cases[i].content, 0600));
        expect_ok("accounts:\n"
                  "  - name: tokyo\n"
                  "    api_key_file: key\n"
                  "    login_id: tbzz9999\n"
                  "    login_pass_file: pass\n" RECEIVER);
        cr_assert_str_eq(cfg->accounts[0].login_pass, cases[i].secret);
        cr_assert_str_eq(cfg->accounts[0].api_key, cases[i].secret);
    }
}

/* A secret from ${VAR} follows the same rule as one from a file: an
 * EnvironmentFile written on Windows leaves a CR at the end, which goes;
 * a line break inside would split a header, and is refused without naming
 * the variable. A value that is not a secret may take no control
 * character from a variable either. */
Test(config, secrets_from_variables_follow_the_same_rule)
{
    cr_assert_eq(setenv("T_KEY", "abc\r", 1), 0);
    cr_assert_eq(setenv("T_TOKEN", "Bearer xyz\r\n", 1), 0);
    cr_assert_eq(setenv("T_HOOK", "https://hooks.example.org/T0/B0/x \n", 1), 0);
    expect_ok("accounts:\n"
              "  - name: tokyo\n"
              "    api_key: \"${T_KEY}\"\n"
              "    login_id: tbzz9999\n"
              "    login_pass: \"pass ${T_KEY}\"\n"
              "receivers:\n"
              "  - name: hook\n"
              "    webhook:\n"
              "      url: \"${T_HOOK}\"\n"
              "      headers: {Authorization: \"${T_TOKEN}\"}\n");
    cr_assert_str_eq(cfg->accounts[0].api_key, "abc");
    cr_assert_str_eq(cfg->accounts[0].login_pass, "pass abc");
    cr_assert_str_eq(cfg->receivers[0].webhook.url, "https://hooks.example.org/T0/B0/x");
    cr_assert_str_eq(cfg->receivers[0].webhook.headers[0].value, "Bearer xyz");

    static const char *const inside[] = {"ab\rc", "ab\nc", "ab\tc", "ab\033c", "ab\177c"};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        cr_assert_eq(setenv("T_KEY", inside[i], 1), 0);
        expect_error("accounts:\n"
                     "  - name: tokyo\n"
                     "    api_key: k\n"
                     "    login_id: tbzz9999\n"
                     "    login_pass: \"${T_KEY}\"\n" RECEIVER,
                     "5:17: accounts[0].login_pass: the value must not contain a line break or "
                     "other control character (it comes from an environment variable)");
        cr_assert_null(strstr(err.msg, "T_KEY"));
    }
    /* Written in the file (a YAML escape), the same. */
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: \"ab\\nc\"\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "3:14: accounts[0].api_key: the value must not contain a line break or other "
                 "control character");
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: \"  \\r\\n\"\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "3:14: accounts[0].api_key: expected a non-empty string");
    /* Not a secret: state_file from a variable with a line break. */
    cr_assert_eq(setenv("T_DIR", "/var/lib\n/x", 1), 0);
    expect_error("state_file: \"${T_DIR}/state.json\"\n" ACCOUNT RECEIVER,
                 "1:13: state_file: the value must not contain a line break or other control "
                 "character (it comes from an environment variable)");
}

Test(config, relative_secret_file_is_taken_from_the_config_directory)
{
    char *etc = xasprintf("%s/etc", tmp);
    cr_assert_eq(mkdir(etc, 0700), 0);
    free(put("etc/tokyo.key", "FROM-ETC\n", 0600));
    free(put("etc/hook.url", "https://h.example/t\n", 0600));
    free(put("etc/wsrelay.yaml",
             "accounts:\n"
             "  - name: tokyo\n"
             "    api_key_file: tokyo.key\n"
             "    login_id: tbzz9999\n"
             "    login_pass: p\n"
             "receivers:\n"
             "  - name: hook\n"
             "    webhook: {url_file: ./hook.url}\n",
             0600));
    cr_assert_eq(chdir("/"), 0);
    char *path = xasprintf("%s/wsrelay.yaml", etc);
    cr_assert_eq(config_load(&cfg, path, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg->accounts[0].api_key, "FROM-ETC");
    cr_assert_str_eq(cfg->receivers[0].webhook.url, "https://h.example/t");
    free(path);
    free(etc);
}

Test(config, variable_in_a_secret_file_path)
{
    free(put("tokyo.key", "CRED\n", 0600));
    cr_assert_eq(setenv("CREDENTIALS_DIRECTORY", tmp, 1), 0);
    expect_ok("accounts:\n"
              "  - name: tokyo\n"
              "    api_key_file: ${CREDENTIALS_DIRECTORY}/tokyo.key\n"
              "    login_id: tbzz9999\n"
              "    login_pass: p\n" RECEIVER);
    cr_assert_str_eq(cfg->accounts[0].api_key, "CRED");
}

Test(config, readable_secret_file_warns_once_without_the_secret, .init = capture_stderr)
{
    char *path = put("shared.secret", "SUPER-SECRET-VALUE\n", 0644);
    free(put("private.secret", "PRIVATE-VALUE\n", 0600));
    expect_ok("accounts:\n"
              "  - name: tokyo\n"
              "    api_key_file: shared.secret\n"
              "    login_id: tbzz9999\n"
              "    login_pass_file: shared.secret\n"
              "  - name: osaka\n"
              "    api_key_file: private.secret\n"
              "    login_id: tbzz9998\n"
              "    login_pass: p\n" RECEIVER);
    fflush(stderr);
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    text[n] = '\0';
    char *line = xasprintf("wsrelay: warning: secret file %s is readable by group or others; "
                           "make it mode 0600 (chmod 600 %s)\n",
                           path, path);
    cr_assert_str_eq(text, line);
    cr_assert_null(strstr(text, "SECRET-VALUE"));
    free(line);
    free(path);
}

/* What the tests below printed on the redirected stderr. */
static char *stderr_text(void)
{
    fflush(stderr);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    text[n] = '\0';
    return xstrdup(text);
}

/* Loads `yaml` written with `mode` and returns what was logged. */
static char *load_logged(const char *yaml, mode_t mode)
{
    free(put("wsrelay.yaml", yaml, mode));
    config_free(cfg);
    cfg = NULL;
    cr_assert_eq(config_load(&cfg, conf_path, &err), 0, "%s", err.msg);
    return stderr_text();
}

/* A configuration open to other users must not hold secrets: one warning,
 * naming the file, its mode, the first such key and the ways out. */
Test(config, secrets_in_a_file_others_can_read_warn_once, .init = capture_stderr)
{
    char *log = load_logged(ACCOUNT "  - name: osaka\n"
                                    "    api_key: k2\n"
                                    "    login_id: tbzz9998\n"
                                    "    login_pass: p2\n"
                                    "receivers:\n"
                                    "  - name: hook\n"
                                    "    webhook:\n"
                                    "      url: \"https://hooks.example.org/TOPSECRET\"\n"
                                    "      headers: {Authorization: \"Bearer TOPSECRET\"}\n",
                            0644);
    char *want = xasprintf("wsrelay: warning: %s is mode 0644, open to other users, and holds "
                           "secrets written out in it (accounts[0].api_key and 5 more); chmod "
                           "0640 %s (or 0600), or move the secrets to *_file keys, ${VAR} or "
                           "systemd credentials\n",
                           conf_path, conf_path);
    cr_assert_str_eq(log, want);
    cr_assert_null(strstr(log, "TOPSECRET"));
    free(want);
    free(log);
}

Test(config, any_permission_for_others_is_enough_to_warn, .init = capture_stderr)
{
    cr_assert_eq(setenv("T_ANY", "from-env", 1), 0);
    char *log = load_logged("receivers:\n"
                            "  - name: hook\n"
                            "    webhook:\n"
                            "      url: \"https://hooks.example.org/x\"\n"
                            "      headers: {Authorization: \"Bearer ${T_ANY}\"}\n"
                            "accounts:\n"
                            "  - name: tokyo\n"
                            "    api_key: \"${T_ANY}\"\n"
                            "    login_id: tbzz9999\n"
                            "    login_pass: p\n",
                            0601);
    cr_assert(strstr(log, " is mode 0601, open to other users, and holds secrets written out in "
                          "it (receivers[0].webhook.url and 1 more); "),
              "%s", log);
    free(log);
}

/* No warning when the file is closed to others, or when every secret
 * comes from a file or the environment (the file holds none). */
Test(config, no_warning_without_secrets_or_for_a_closed_file, .init = capture_stderr)
{
    cr_assert_eq(setenv("T_ANY", "from-env", 1), 0);
    free(put("hook.url", "https://hooks.example.org/TOPSECRET\n", 0600));
    free(put("tokyo.pass", "from-file\n", 0600));
    char *log = load_logged(ACCOUNT RECEIVER, 0640);
    cr_assert_str_eq(log, "");
    free(log);
    log = load_logged(ACCOUNT RECEIVER, 0600);
    cr_assert_str_eq(log, "");
    free(log);
    log =
        load_logged("accounts:\n"
                    "  - name: tokyo\n"
                    "    api_key: \"${T_ANY}\"\n"
                    "    login_id: tbzz9999\n"
                    "    login_pass_file: tokyo.pass\n"
                    "receivers:\n"
                    "  - name: hook\n"
                    "    webhook:\n"
                    "      url_file: hook.url\n"
                    "      headers: {Authorization: \"Bearer ${T_ANY}\"}\n"
                    "  - name: mail\n"
                    "    email: {host: smtp.example.org, username: relay, password: \"${T_ANY}\",\n"
                    "            from: a@example.org, to: b@example.org}\n",
                    0644);
    cr_assert_str_eq(log, "");
    free(log);
}

Test(config, environment_variables)
{
    cr_assert_eq(unsetenv("WS_NOPE"), 0);
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: \"${WS_NOPE}\"\n" RECEIVER,
                 "5:17: accounts[0].login_pass: environment variable 'WS_NOPE' is not set");
    expect_error("state_file: ${WS_NOPE}/s.json\n" ACCOUNT RECEIVER,
                 "1:13: state_file: environment variable 'WS_NOPE' is not set");

    static const char *const malformed[] = {"${1X}", "${X", "${}", "a${X-Y}", "${ X}"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        char *yaml = xasprintf(ACCOUNT RECEIVER "state_file: \"%s\"\n", malformed[i]);
        expect_error(yaml, "9:13: state_file: malformed ${...}: expected ${NAME}, NAME made of "
                           "letters, digits and '_' (write $${ for a literal ${)");
        free(yaml);
    }

    cr_assert_eq(setenv("WS_DIR", "/srv/x", 1), 0);
    cr_assert_eq(setenv("WS_EMPTY", "", 1), 0);
    cr_assert_eq(setenv("_v1", "one", 1), 0);
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"${WS_DIR}/s.json", "/srv/x/s.json"},
        {"/a$${WS_DIR}", "/a${WS_DIR}"},
        {"/a$$b$c$", "/a$$b$c$"},
        {"/a$$${WS_EMPTY}", "/a$${WS_EMPTY}"}, /* only "$${" is special */
        {"/${WS_EMPTY}x${_v1}", "/xone"},
        {"/$${${_v1}}", "/${one}"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char *yaml = xasprintf(ACCOUNT RECEIVER "state_file: \"%s\"\n", ok[i].in);
        expect_ok(yaml);
        cr_assert_str_eq(cfg->state_file, ok[i].out, "for %s", ok[i].in);
        free(yaml);
    }
}

/* A secret that happens to contain "${" must not show up, even in part, in
 * the message; other keys, and a secret that is "${NAME}" alone, name the
 * variable. */
Test(config, unset_variable_in_a_secret_is_not_named)
{
    static const char unset[] = "the value refers to an environment variable that is not set "
                                "(write $${ for a literal ${)";
    cr_assert_eq(unsetenv("pW_f7Qz"), 0);
    char *want = xasprintf("3:14: accounts[0].api_key: %s", unset);
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: \"Xk9${pW_f7Qz}m2\"\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 want);
    free(want);
    want = xasprintf("5:17: accounts[0].login_pass: %s", unset);
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: \"hunter${pW_f7Qz}2\"\n" RECEIVER,
                 want);
    free(want);
    want = xasprintf("8:20: receivers[0].webhook.url: %s", unset);
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook: {url: \"https://h.example/${pW_f7Qz}\"}\n",
                 want);
    free(want);
    want = xasprintf("11:18: receivers[0].webhook.headers.X-Token: %s", unset);
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers:\n"
                         "        X-Token: \"t0k${pW_f7Qz}en\"\n",
                 want);
    free(want);

    /* Not secrets: the name helps, and gives nothing away. */
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key_file: ${pW_f7Qz}/tokyo.key\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "3:19: accounts[0].api_key_file: environment variable 'pW_f7Qz' is not set");
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: \"${pW_f7Qz}\"\n"
                 "    login_pass: p\n" RECEIVER,
                 "4:15: accounts[0].login_id: environment variable 'pW_f7Qz' is not set");
    expect_error(ACCOUNT "    include: \"${pW_f7Qz}*\"\n" RECEIVER,
                 "6:14: accounts[0].include: environment variable 'pW_f7Qz' is not set");
}

/* The message past the config's own path: the temporary directory's random
 * name may contain any short string a test looks for. */
static const char *past_path(const char *msg)
{
    size_t n = strlen(conf_path);
    return strncmp(msg, conf_path, n) == 0 ? msg + n : msg;
}

Test(config, malformed_variable_in_a_secret_shows_nothing_of_it)
{
    static const char *const secrets[] = {"Zq${1v9}", "Zq${v9", "Zq${}", "Zq${v9-w8}", "Zq${ v9}"};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
        char *yaml = xasprintf("accounts:\n"
                               "  - name: tokyo\n"
                               "    api_key: k\n"
                               "    login_id: tbzz9999\n"
                               "    login_pass: \"%s\"\n" RECEIVER,
                               secrets[i]);
        expect_error(yaml, "5:17: accounts[0].login_pass: malformed ${...}: expected ${NAME}, "
                           "NAME made of letters, digits and '_' (write $${ for a literal ${)");
        cr_assert_null(strstr(past_path(err.msg), "Zq"), "%s", err.msg);
        cr_assert_null(strstr(past_path(err.msg), "v9"), "%s", err.msg);
        free(yaml);
        yaml = xasprintf(ACCOUNT "receivers:\n"
                                 "  - name: hook\n"
                                 "    webhook:\n"
                                 "      url: https://x.example\n"
                                 "      headers: {X-Token: \"%s\"}\n",
                         secrets[i]);
        cr_assert_eq(load(yaml), -1);
        cr_assert_null(strstr(past_path(err.msg), "Zq"), "%s", err.msg);
        cr_assert_null(strstr(past_path(err.msg), "v9"), "%s", err.msg);
        cr_assert_not_null(strstr(err.msg, "malformed ${...}"), "%s", err.msg);
        free(yaml);
    }
}

Test(config, empty_values)
{
    cr_assert_eq(setenv("WS_EMPTY", "", 1), 0);
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: \"${WS_EMPTY}\"\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "3:14: accounts[0].api_key: expected a non-empty string");
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id:\n"
                 "    login_pass: p\n" RECEIVER,
                 "4:14: accounts[0].login_id: expected a string, got an empty value");
    expect_error(ACCOUNT "    exclude: [\"\"]\n" RECEIVER,
                 "6:15: accounts[0].exclude[0]: expected a non-empty glob");
}

Test(config, durations_are_written_as_they_are_read)
{
    static const struct {
        long seconds;
        const char *text;
    } cases[] = {{0, "0s"},     {-5, "0s"},      {45, "45s"},   {90, "1m30s"},
                 {1800, "30m"}, {5400, "1h30m"}, {86400, "1d"}, {90061, "1d1h1m1s"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[24];
        long back = -1;
        duration_format(out, sizeof out, cases[i].seconds);
        cr_assert_str_eq(out, cases[i].text);
        cr_assert_eq(duration_parse(&back, out), 0);
        cr_assert_eq(back, cases[i].seconds < 0 ? 0 : cases[i].seconds);
    }
}

Test(config, ages_are_written_in_the_largest_unit_that_reads_well)
{
    static const struct {
        long long seconds;
        const char *text;
    } cases[] = {{-5, "0 min"},
                 {59, "0 min"},
                 {120, "2 min"},
                 {4500, "75 min"},
                 {7199, "119 min"},
                 {7200, "2 h"},
                 {18720, "5 h 12 min"},
                 {172799, "47 h 59 min"},
                 {172800, "2 d"},
                 {13157 * 60, "9 d 3 h"},
                 {400LL * 86400 + 3600, "400 d 1 h"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[32];
        duration_format_age(out, sizeof out, cases[i].seconds);
        cr_expect_str_eq(out, cases[i].text, "%lld s", cases[i].seconds);
    }
}

Test(config, bad_duration)
{
    expect_error("catch_up: 1hour\n" ACCOUNT RECEIVER,
                 "1:11: catch_up: expected a duration such as 90s, 30m, 1h");
    expect_error("catch_up: -5\n" ACCOUNT RECEIVER,
                 "1:11: catch_up: expected a duration such as 90s, 30m, 1h");
}

/* A receiver's `timeout:` is a duration within its bounds, 60 s when left
 * out; the bounds are named in the message. */
Test(config, receiver_timeout_has_a_default_and_bounds)
{
    expect_ok(ACCOUNT RECEIVER);
    cr_assert_eq(cfg->receivers[0].timeout, 60);
    expect_ok(ACCOUNT RECEIVER "    timeout: 5s\n"
                               "  - name: hook\n"
                               "    webhook: {url: \"https://example.org/h\"}\n"
                               "    timeout: 2m\n");
    cr_assert_eq(cfg->receivers[0].timeout, 5);
    cr_assert_eq(cfg->receivers[1].timeout, 120);
    expect_error(ACCOUNT RECEIVER "    timeout: 4s\n",
                 "9:14: receivers[0].timeout: expected a duration from 5s to 2m");
    expect_error(ACCOUNT RECEIVER "    timeout: 121\n",
                 "9:14: receivers[0].timeout: expected a duration from 5s to 2m");
    expect_error(ACCOUNT RECEIVER "    timeout: soon\n",
                 "9:14: receivers[0].timeout: expected a duration such as 90s, 30m, 1h");
}

Test(config, http_only_to_loopback)
{
    static const char *const remote[] = {
        "http://api.webstorage.jp",
        "http://localhost.example.com",
        "http://127.0.0.1.example.com",
        "http://10.0.0.1:8080",
        "http://[::2]",
        "http://[2001:db8::1]/x",
    };
    for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "    base_url: %s\n" RECEIVER, remote[i]);
        expect_error(yaml, "6:15: accounts[0].base_url: http:// is only allowed to this machine "
                           "(localhost, 127.0.0.0/8 or [::1]); use https://");
        free(yaml);
    }
    static const char *const local[] = {"http://127.0.0.2:9000", "http://LOCALHOST",
                                        "http://[0:0:0:0:0:0:0:1]/sim"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "    base_url: %s\n" RECEIVER, local[i]);
        expect_ok(yaml);
        free(yaml);
    }
}

/* base_url is judged by util/url's URL_BASE, the rule platform_new applies. */
Test(config, base_url_refusals_say_why_without_the_url)
{
    static const struct {
        const char *url, *why;
    } bad[] = {
        {"https://u:pw@h.example", "the URL must not carry a user name or password"},
        {"https://h.example/v1?k=pw", "the URL must not have a query ('?')"},
        {"https://h.example/v1#pw", "the URL must not have a fragment ('#')"},
        {"ftp://h.example", "expected a URL starting with https:// (or http:// to this machine)"},
        {"https://h.example:0", "expected a port number from 1 to 65535 after the host"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "    base_url: \"%s\"\n" RECEIVER, bad[i].url);
        char *want = xasprintf("6:15: accounts[0].base_url: %s", bad[i].why);
        expect_error(yaml, want);
        cr_assert_null(strstr(err.msg, "h.example"), "%s", err.msg);
        free(want);
        free(yaml);
    }
}

Test(config, bad_serials_names_and_login_ids)
{
    expect_error(ACCOUNT "    devices:\n"
                         "      - serial: 5214ABC\n" RECEIVER,
                 "7:17: accounts[0].devices[0].serial: expected a device serial: exactly 8 "
                 "letters or digits");
    expect_error(ACCOUNT "    devices:\n"
                         "      - {serial: 5214ABCD, base: 5214-ABC}\n" RECEIVER,
                 "7:34: accounts[0].devices[0].base: expected a device serial: exactly 8 "
                 "letters or digits");
    expect_error(ACCOUNT "    devices: all\n" RECEIVER,
                 "6:14: accounts[0].devices: expected 'auto' or a list of {serial, base}");
    expect_error("accounts:\n"
                 "  - name: tokyo office\n"
                 "    api_key: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n" RECEIVER,
                 "2:11: accounts[0].name: expected a name made of letters, digits, '_', '.' "
                 "and '-'");
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: \"tbzz 9999\"\n"
                 "    login_pass: p\n" RECEIVER,
                 "4:15: accounts[0].login_id: expected a login ID without spaces or control "
                 "characters");
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: \"tbzz\\09999\"\n"
                 "    login_pass: p\n" RECEIVER,
                 "4:15: accounts[0].login_id: the value contains a NUL character");
}

Test(config, webhook_urls)
{
    expect_ok(ACCOUNT
              "receivers:\n"
              "  - name: internal\n"
              "    webhook: {url: \"http://alerts.internal:8080/hook\", allow_http: true}\n");
    cr_assert_str_eq(cfg->receivers[0].webhook.url, "http://alerts.internal:8080/hook");
    cr_assert(cfg->receivers[0].webhook.allow_http);
    static const char *const good[] = {
        "https://hooks.example.com/T0/B0/x?token=1#f", "https://user:pw@10.0.0.1:8443/hook",
        "http://127.0.0.1:9000/hook", "http://localhost/hook", "http://[::1]:9000/hook"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "receivers:\n"
                                       "  - name: hook\n"
                                       "    webhook: {url: \"%s\"}\n",
                               good[i]);
        expect_ok(yaml);
        cr_assert_str_eq(cfg->receivers[0].webhook.url, good[i]);
        cr_assert_not(cfg->receivers[0].webhook.allow_http);
        free(yaml);
    }
    static const char *const bad[] = {"ftp://x",        "hooks.example.com", "https://",
                                      "https:///p",     "https://a b",       "https://h:99999/",
                                      "https://a@b@c/", "https://[::1/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "receivers:\n"
                                       "  - name: hook\n"
                                       "    webhook: {url: \"%s\"}\n",
                               bad[i]);
        cr_assert_eq(load(yaml), -1, "accepted %s", bad[i]);
        char *want = xasprintf("%s:8:20: receivers[0].webhook.url: ", conf_path);
        cr_assert(!strncmp(err.msg, want, strlen(want)), "for %s: %s", bad[i], err.msg);
        free(want);
        free(yaml);
    }
}

Test(config, plain_http_webhook_to_another_host_needs_allow_http)
{
    static const char why[] = "http:// sends the URL and headers unencrypted; use https://, or "
                              "set allow_http: true for a trusted network";
    char *want = xasprintf("8:20: receivers[0].webhook.url: %s", why);
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook: {url: \"http://alerts.internal:8080/T0ken\"}\n",
                 want);
    free(want);
    cr_assert_null(strstr(err.msg, "alerts.internal"), "%s", err.msg);
    cr_assert_null(strstr(err.msg, "T0ken"), "%s", err.msg);

    want = xasprintf("9:12: receivers[0].webhook.url: %s", why);
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: http://10.1.2.3/T0ken\n"
                         "      allow_http: false\n",
                 want);
    free(want);

    /* From a file: the message points at url_file. */
    free(put("hook.url", "http://alerts.internal/T0ken\n", 0600));
    want = xasprintf("10:17: receivers[0].webhook.url_file: %s", why);
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      allow_http: false\n"
                         "      url_file: hook.url\n",
                 want);
    free(want);
    cr_assert_null(strstr(err.msg, "T0ken"), "%s", err.msg);
    expect_ok(ACCOUNT "receivers:\n"
                      "  - name: hook\n"
                      "    webhook:\n"
                      "      url_file: hook.url\n"
                      "      allow_http: true\n");
    cr_assert_str_eq(cfg->receivers[0].webhook.url, "http://alerts.internal/T0ken");
    cr_assert(cfg->receivers[0].webhook.allow_http);
}

Test(config, booleans_are_true_or_false)
{
    static const struct {
        const char *value, *tail;
    } bad[] = {
        {"yes", "10:19: receivers[0].webhook.allow_http: expected true or false"},
        {"True", "10:19: receivers[0].webhook.allow_http: expected true or false"},
        {"1", "10:19: receivers[0].webhook.allow_http: expected true or false"},
        {"\"true\"", "10:19: receivers[0].webhook.allow_http: expected true or false, without "
                     "quotes"},
        {"", "10:18: receivers[0].webhook.allow_http: expected true or false, got an empty "
             "value"},
        {"[true]", "10:19: receivers[0].webhook.allow_http: expected true or false, got a list"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "receivers:\n"
                                       "  - name: hook\n"
                                       "    webhook:\n"
                                       "      url: https://x.example\n"
                                       "      allow_http: %s\n",
                               bad[i].value);
        expect_error(yaml, bad[i].tail);
        free(yaml);
    }
    expect_ok(ACCOUNT "receivers:\n"
                      "  - name: hook\n"
                      "    webhook: {url: \"https://x.example\", allow_http: false}\n");
    cr_assert_not(cfg->receivers[0].webhook.allow_http);
}

Test(config, header_values_cannot_inject_headers)
{
    cr_assert_eq(setenv("T_HDR", "ok\r\nX-Evil: 1", 1), 0);
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers:\n"
                         "        X-Token: \"${T_HDR}\"\n",
                 "11:18: receivers[0].webhook.headers.X-Token: the value must not contain a "
                 "line break or other control character (it comes from an environment "
                 "variable)");
    cr_assert_null(strstr(err.msg, "Evil"));
    cr_assert_eq(setenv("T_HDR", "ok\nX-Evil: 1", 1), 0);
    cr_assert_eq(load(ACCOUNT "receivers:\n"
                              "  - name: hook\n"
                              "    webhook:\n"
                              "      url: https://x.example\n"
                              "      headers: {X-Token: \"${T_HDR}\"}\n"),
                 -1);
    cr_assert_null(strstr(err.msg, "Evil"));
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers: {\"X-A: b\": c}\n",
                 "10:17: receivers[0].webhook.headers.X-A: b: expected a header name made of "
                 "letters, digits and !#$%&'*+.^_`|~-");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers: {X-A: \"\"}\n",
                 "10:22: receivers[0].webhook.headers.X-A: expected a non-empty string");
}

Test(config, content_headers_cannot_be_overridden)
{
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers:\n"
                         "        content-type: text/plain\n",
                 "11:9: receivers[0].webhook.headers.content-type: Content-Type is set by "
                 "wsrelay and cannot be overridden");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers: {Content-Length: 5}\n",
                 "10:17: receivers[0].webhook.headers.Content-Length: Content-Length is set by "
                 "wsrelay and cannot be overridden");
}

Test(config, secrets_never_appear_in_messages)
{
    cr_assert_eq(setenv("SECRET", "TOPSECRET\r\n${oops} \"'%s%n", 1), 0);
    cr_assert_eq(setenv("SECRET_URL", "ftp://TOPSECRET@x", 1), 0);
    free(put("two-lines", "TOPSECRET\nTOPSECRET\n", 0600));
    free(put("bad-url", "mailto:TOPSECRET\n", 0600));
    static const char *const cases[] = {
        ACCOUNT "    api_key: x\n" RECEIVER,
        "accounts:\n  - name: t\n    api_key: \"${SECRET}\"\n    login_id: l\n"
        "    login_pass: p\n" RECEIVER,
        "accounts:\n  - name: t\n    api_key: k\n    login_id: l\n"
        "    login_pass: \"${SECRET}\"\n" RECEIVER,
        "accounts:\n  - name: t\n    api_key: \"TOPSECRET${\"\n    login_id: l\n"
        "    login_pass: p\n" RECEIVER,
        "accounts:\n  - name: t\n    api_key: \"TOPSECRET${NOT_SET_ANYWHERE\"\n"
        "    login_id: l\n    login_pass: p\n" RECEIVER,
        "accounts:\n  - name: t\n    api_key_file: two-lines\n    login_id: l\n"
        "    login_pass: p\n" RECEIVER,
        ACCOUNT "receivers:\n  - name: h\n    webhook: {url: \"${SECRET_URL}\"}\n",
        ACCOUNT "receivers:\n  - name: h\n    webhook: {url: \"ftp://TOPSECRET\"}\n",
        ACCOUNT "receivers:\n  - name: h\n    webhook: {url: \"https://h/TOP SECRET\"}\n",
        ACCOUNT "receivers:\n  - name: h\n    webhook: {url: \"https://h/${SECRET}\"}\n",
        ACCOUNT "receivers:\n  - name: h\n    webhook: {url_file: bad-url}\n",
        ACCOUNT "receivers:\n  - name: h\n    webhook: {url: \"https://h\", "
                "headers: {Authorization: \"${SECRET}\"}}\n",
        ACCOUNT "receivers:\n  - name: h\n    webhook: {url: \"https://h\", "
                "headers: {Authorization: \"TOPSECRET\\rTOPSECRET\"}}\n",
    };
    cr_assert_eq(unsetenv("NOT_SET_ANYWHERE"), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(load(cases[i]), -1, "case %zu loaded", i);
        cr_assert(strlen(err.msg) > strlen(conf_path), "case %zu: no message", i);
        cr_assert_null(strstr(err.msg, "TOPSECRET"), "case %zu: %s", i, err.msg);
    }
}

Test(config, yaml_syntax_errors)
{
    expect_error("catch_up: [1h, 2h\nstate_file: x\n" ACCOUNT RECEIVER,
                 "2:11: did not find expected ',' or ']' while parsing a flow sequence at 1:11");
    expect_error("accounts:\n"
                 "  - name: t\n"
                 "   api_key: k\n",
                 "3:4: did not find expected '-' indicator while parsing a block collection at "
                 "2:3");
    expect_error("a: 1\nb:\tc\n  d: 2\n", "3:4: mapping values are not allowed in this context");
    expect_error("state_file: \"x\xff\"\n", "1:15: invalid leading UTF-8 octet");
}

Test(config, multiple_documents_rejected)
{
    expect_error(ACCOUNT RECEIVER "---\n" ACCOUNT RECEIVER,
                 "9:1: a second YAML document; the file must hold exactly one");
    expect_error(ACCOUNT RECEIVER "---\n" ACCOUNT "receivers: [\n",
                 "16:1: did not find expected node content while parsing a flow node at 16:1");
}

Test(config, aliases_are_followed)
{
    expect_ok("accounts:\n"
              "  - name: tokyo\n"
              "    api_key: &k shared\n"
              "    login_id: tbzz9999\n"
              "    login_pass: *k\n" RECEIVER);
    cr_assert_str_eq(cfg->accounts[0].login_pass, "shared");
    expect_error("accounts: &a [*a]\n" RECEIVER,
                 "1:15: the alias *a is part of the list or mapping it names");
}

/* libyaml's scanner costs the square of the nesting depth (100,000 '['
 * took 50 s), so the reading stops at the first level past 64, where that
 * level starts. */
Test(config, nesting_deeper_than_64_levels_is_refused_where_it_starts)
{
    size_t n = 100000;
    char *deep = xmalloc(n + 1);
    memset(deep, '[', n);
    deep[n] = '\0';
    expect_error(deep, "1:65: lists and mappings nested more than 64 levels deep");
    free(deep);

    /* 64 levels are read, and judged by what the key expects. */
    char *yaml =
        xasprintf("catch_up: %.*s%.*s\n" ACCOUNT RECEIVER, 63,
                  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
                  63, "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
    expect_error(yaml, "1:11: catch_up: expected a duration such as 90s, 30m, 1h, got a list");
    free(yaml);

    /* Block mappings: the 65th level starts on line 65, column 65. */
    struct buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 100; i++)
        buf_printf(&b, "%*sk%d:\n", i, "", i);
    expect_error(buf_str(&b), "65:65: lists and mappings nested more than 64 levels deep");
    buf_free(&b);
}

/* Anchors are bounded: libyaml looks every alias up among all of them. */
Test(config, more_than_256_anchors_are_refused)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "catch_up: [");
    for (int i = 0; i < 257; i++)
        buf_printf(&b, "%s&a%d %d", i ? ", " : "", i, i);
    buf_puts(&b, "]\n");
    char *tail = xasprintf("1:%zu: more than 256 anchors (&name) in the document",
                           (size_t)(strstr(buf_str(&b), "&a256") - buf_str(&b)) + 1);
    expect_error(buf_str(&b), tail);
    free(tail);
    buf_free(&b);
}

/* An account with 1000 devices, aliased 100 times: the copies would come to
 * some 1.7 MB of the document (without the bound, 20,000 aliases of 20,000
 * devices each would ask for tens of gigabytes). */
Test(config, what_aliases_repeat_is_bounded)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, RECEIVER "accounts:\n"
                          "  - &a\n"
                          "    name: a\n"
                          "    api_key: k\n"
                          "    login_id: l\n"
                          "    login_pass: p\n"
                          "    devices:\n");
    for (int i = 0; i < 1000; i++)
        buf_printf(&b, "      - serial: %08d\n", i);
    int line = 3 + 6 + 1000;
    for (int i = 0; i < 100; i++)
        buf_puts(&b, "  - *a\n");
    cr_assert_eq(load(buf_str(&b)), -1);
    buf_free(&b);
    char *want = xasprintf("%s:", conf_path);
    cr_assert(!strncmp(err.msg, want, strlen(want)), "%s", err.msg);
    cr_assert(strstr(err.msg, ":5: the aliases repeat more than 1048576 bytes of the document; "
                              "write the repeated parts out, or use fewer aliases"),
              "%s", err.msg);
    long at = strtol(err.msg + strlen(want), NULL, 10);
    cr_assert(at > line && at <= line + 100, "%s", err.msg);
    free(want);
}

/* Duplicates are found by sorting, and still reported at the first list
 * position whose value came before. */
Test(config, the_first_repeated_name_is_reported)
{
    expect_error(ACCOUNT "receivers:\n"
                         "  - {name: x, file: {path: x}}\n"
                         "  - {name: y, file: {path: y}}\n"
                         "  - {name: y, file: {path: z}}\n"
                         "  - {name: x, file: {path: w}}\n",
                 "9:12: receivers[2].name: duplicate receiver name 'y' (first at line 8)");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: hook\n"
                         "    webhook:\n"
                         "      url: https://x.example\n"
                         "      headers: {X-B: 1, X-A: 1, x-b: 2, x-a: 2}\n",
                 "10:33: receivers[0].webhook.headers.x-b: duplicate header 'x-b' (header names "
                 "ignore case)");
}

Test(config, account_wants_serial)
{
    expect_ok("accounts:\n"
              "  - {name: all, api_key: k, login_id: a, login_pass: p}\n"
              "  - {name: inc, api_key: k, login_id: b, login_pass: p, include: [\"52*\", X]}\n"
              "  - {name: exc, api_key: k, login_id: c, login_pass: p, exclude: \"3F36*\"}\n"
              "  - {name: both, api_key: k, login_id: d, login_pass: p, include: \"52??????\",\n"
              "     exclude: [\"5214*\"]}\n" RECEIVER);
    const struct account_conf *all = &cfg->accounts[0], *inc = &cfg->accounts[1],
                              *exc = &cfg->accounts[2], *both = &cfg->accounts[3];
    cr_assert(account_wants_serial(all, "5214ABCD"));
    cr_assert(account_wants_serial(all, "3F360001"));
    cr_assert(account_wants_serial(inc, "5214ABCD"));
    cr_assert(account_wants_serial(inc, "X"));
    cr_assert_not(account_wants_serial(inc, "3F360001"));
    cr_assert(account_wants_serial(exc, "5214ABCD"));
    cr_assert_not(account_wants_serial(exc, "3F360001"));
    cr_assert(account_wants_serial(both, "5299ABCD"));
    cr_assert_not(account_wants_serial(both, "5214ABCD"));
    cr_assert_not(account_wants_serial(both, "5299ABC"));
    cr_assert_not(account_wants_serial(both, "3F360001"));
}

/* include, exclude and priorities speak the rules' glob dialect: ASCII
 * letters in either case, UTF-8 characters, and a bad glob refused where
 * it is written. */
Test(config, serial_globs_are_the_rules_globs)
{
    expect_ok("accounts:\n"
              "  - {name: a, api_key: k, login_id: a, login_pass: p, include: [\"5214ab*\"],\n"
              "     exclude: \"*[ef]\", priorities: [{serial: \"*cd\", priority: 4}]}\n" RECEIVER);
    const struct account_conf *a = &cfg->accounts[0];
    cr_assert(account_wants_serial(a, "5214ABCD"));
    cr_assert(account_wants_serial(a, "5214abcd"));
    cr_assert_not(account_wants_serial(a, "5214ABCE"), "excluded whatever the case");
    cr_assert_not(account_wants_serial(a, "5215ABCD"));
    cr_assert_eq(account_device_priority(a, "5214ABCD"), 4);
    cr_assert_eq(account_device_priority(a, "5214ABCC"), 1);
    expect_error(
        "accounts:\n"
        "  - {name: a, api_key: k, login_id: a, login_pass: p, include: [\"52[14\"]}\n" RECEIVER,
        "2:65: accounts[0].include[0]: column 3: '[' is not closed");
    expect_error(
        "accounts:\n"
        "  - {name: a, api_key: k, login_id: a, login_pass: p, exclude: \"[z-a]*\"}\n" RECEIVER,
        "2:64: accounts[0].exclude: column 2: range 'z-a' ends before it starts");
}

Test(config, receiver_lookup_and_free_null)
{
    expect_ok(ACCOUNT RECEIVER "  - name: hook\n"
                               "    webhook: {url: \"https://h.example\"}\n");
    const struct receiver_conf *r = config_receiver(cfg, "hook");
    cr_assert_not_null(r);
    cr_assert_eq(r, &cfg->receivers[1]);
    cr_assert_eq(config_receiver(cfg, "console"), &cfg->receivers[0]);
    cr_assert_null(config_receiver(cfg, "Hook"));
    cr_assert_null(config_receiver(cfg, "nope"));
    config_free(NULL);
}

Test(config, reference_names_every_key)
{
    char *ref = config_reference();
    static const char *const lines[] = {
        "state_file (path; default " CONFIG_DEFAULT_STATE ")\n",
        "catch_up (duration; default 1h)\n",
        "accounts (list; required)\n",
        "accounts[].name (string; required; unique)\n",
        "accounts[].base_url (string; default " CONFIG_DEFAULT_BASE_URL ")\n",
        "accounts[].api_key (string; give exactly one of api_key or api_key_file; secret)\n",
        "accounts[].api_key_file (path of a secret file; give exactly one of api_key or "
        "api_key_file; secret)\n",
        "accounts[].login_id (string; required)\n",
        "accounts[].login_pass (string; give exactly one of login_pass or login_pass_file; "
        "secret)\n",
        "accounts[].login_pass_file (",
        "accounts[].devices (auto or list; default auto)\n",
        "accounts[].devices[].serial (string; required; unique)\n",
        "accounts[].devices[].base (string)\n",
        "accounts[].devices[].priority (whole number from 1 to 10)\n",
        "accounts[].include (glob or list of globs)\n",
        "accounts[].exclude (glob or list of globs)\n",
        "accounts[].priorities (list)\n",
        "accounts[].priorities[].serial (glob; required; unique)\n",
        "accounts[].priorities[].priority (whole number from 1 to 10; required)\n",
        "accounts[].limits (list)\n",
        "accounts[].limits[].serial (glob; required)\n",
        "accounts[].limits[].channel (whole number from 1 to 8; required)\n",
        "accounts[].limits[].upper (number)\n",
        "accounts[].limits[].lower (number)\n",
        "accounts[].early_warning (boolean; default true)\n",
        "accounts[].signals (boolean; default true)\n",
        "receivers (list; required)\n",
        "receivers[].name (string; required; unique)\n",
        "receivers[].webhook (mapping; give exactly one of webhook, file, email, slack, teams, "
        "pagerduty, opsgenie, googlechat, chatwork or pushover)\n",
        "receivers[].webhook.url (string; give exactly one of url or url_file; secret)\n",
        "receivers[].webhook.url_file (",
        "receivers[].webhook.allow_http (boolean; default false)\n"
        "    Allow a plain http:// URL to a host other than this machine; the URL and headers "
        "then cross the network unencrypted.\n",
        "receivers[].webhook.headers (mapping of header names to values)\n",
        "receivers[].file (mapping; give exactly one of webhook, file, email, slack, teams, "
        "pagerduty, opsgenie, googlechat, chatwork or pushover)\n",
        "receivers[].file.path (path; required)\n",
        "receivers[].email.port (whole number from 1 to 65535; default 587)\n",
        "receivers[].email.starttls (required, opportunistic or off; default required)\n",
        "receivers[].email.password (string; give at most one of password or password_file; "
        "secret)\n",
        "receivers[].email.to (string or list of strings; required)\n",
        "receivers[].slack.url_file (path of a secret file; give exactly one of url, url_file or "
        "token_file; "
        "secret)\n",
        "receivers[].teams.template (path)\n",
        "receivers[].pagerduty.routing_key_file (path of a secret file; required; secret)\n",
        "receivers[].pagerduty.severity (critical, error, warning or info; default error)\n",
        "receivers[].opsgenie.region (us or eu; default us)\n",
        "templates (path)\n",
        "incidents (mapping)\n",
        "incidents.max_open (duration from 1h to 365d; default 7d)\n",
        "incidents.keep (duration from 1d to 3650d; default 400d)\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert_not_null(strstr(ref, lines[i]), "missing %s in:\n%s", lines[i], ref);
    cr_assert_not_null(strstr(ref, "api.webstorage.jp"));
    free(ref);
}

/* The example an administrator copies must stay a real, valid file. */
Test(config, packaged_example_loads)
{
    char *src = xasprintf("%s/packaging/wsrelay.yaml", WSRELAY_SOURCE_DIR);
    FILE *in = fopen(src, "r");
    cr_assert_not_null(in, "cannot open %s", src);
    char *text = xcalloc(1, 65536);
    size_t n = fread(text, 1, 65535, in);
    fclose(in);
    cr_assert(n > 0 && n < 65535);
    free(put("wsrelay.yaml", text, 0644));
    free(text);
    free(put("tokyo.key", "tokyo-api-key\n", 0600));
    free(put("tokyo.pass", "tokyo-pass\n", 0600));
    free(put("ops-hook.url", "https://hooks.example.com/T0/B0/x\n", 0600));
    free(put("smtp.pass", "smtp-pass\n", 0600));
    cr_assert_eq(setenv("OSAKA_API_KEY", "osaka-api-key", 1), 0);
    cr_assert_eq(setenv("OSAKA_LOGIN_PASS", "osaka-pass", 1), 0);
    cr_assert_eq(setenv("OPS_HOOK_TOKEN", "hook-token", 1), 0);

    cr_assert_eq(config_load(&cfg, conf_path, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg->state_file, "/var/lib/wsrelay/state.json");
    cr_assert_eq(cfg->catch_up, 3600);
    cr_assert_eq(cfg->n_accounts, 2);
    cr_assert_str_eq(cfg->accounts[0].api_key, "tokyo-api-key");
    cr_assert_str_eq(cfg->accounts[0].login_pass, "tokyo-pass");
    cr_assert(cfg->accounts[0].devices_auto);
    cr_assert_eq(cfg->accounts[0].n_priorities, 1);
    cr_assert_eq(account_device_priority(&cfg->accounts[0], "5214000A"), 3);
    cr_assert_str_eq(cfg->accounts[1].base_url, "https://api.webstorage.jp");
    cr_assert_str_eq(cfg->accounts[1].api_key, "osaka-api-key");
    cr_assert_eq(cfg->accounts[1].n_devices, 2);
    cr_assert_eq(cfg->n_receivers, 3);
    cr_assert_eq(cfg->receivers[0].type, RECEIVER_WEBHOOK);
    cr_assert_str_eq(cfg->receivers[0].webhook.url, "https://hooks.example.com/T0/B0/x");
    cr_assert_str_eq(cfg->receivers[0].webhook.headers[0].value, "Bearer hook-token");
    cr_assert_eq(cfg->receivers[1].type, RECEIVER_FILE);
    const struct receiver_conf *mail = &cfg->receivers[2];
    cr_assert_eq(mail->type, RECEIVER_EMAIL);
    cr_assert_str_eq(mail->email.password, "smtp-pass");
    cr_assert_eq(mail->email.starttls, STARTTLS_REQUIRED);
    cr_assert_eq(mail->email.port, 587);
    cr_assert_geq(mail->email.n_to, 1);
    free(src);
}

/* ---- email, Slack and Teams receivers ---- */

/* Lines 6-7 open an email receiver; its keys follow, indented six spaces. */
#define EMAIL                                                                                      \
    "receivers:\n"                                                                                 \
    "  - name: mail\n"                                                                             \
    "    email:\n"

Test(config, email_slack_teams_every_key)
{
    free(put("smtp.pass", "smtp-secret\n", 0600));
    free(put("ca.pem", "-----BEGIN CERTIFICATE-----\n", 0644));
    free(put("mail.txt", "{{subject}}\n", 0644));
    free(put("mail.html", "<p></p>\n", 0644));
    free(put("slack.url", "https://hooks.slack.com/services/T0/B0/x\n", 0600));
    free(put("chat.txt", "x\n", 0644));
    char *tdir = xasprintf("%s/templates", tmp);
    cr_assert_eq(mkdir(tdir, 0700), 0);
    cr_assert_eq(setenv("T_TEAMS_URL", "https://example.webhook.office.com/x", 1), 0);
    expect_ok("templates: templates\n" ACCOUNT EMAIL "      host: SMTP.Example.org\n"
              "      port: 465\n"
              "      starttls: opportunistic\n"
              "      username: relay@example.org\n"
              "      password_file: smtp.pass\n"
              "      ca_file: ca.pem\n"
              "      from: \"wsrelay <relay@example.org>\"\n"
              "      to: [oncall@example.org, \"当番 <duty@example.org>\"]\n"
              "      cc: lab@example.org\n"
              "      template: mail.txt\n"
              "      html_template: mail.html\n"
              "  - name: minimal\n"
              "    email: {host: 127.0.0.1, from: a@example.org, to: b@example.org}\n"
              "  - name: lab-slack\n"
              "    slack: {url_file: slack.url, template: chat.txt}\n"
              "  - name: teams\n"
              "    teams: {url: \"${T_TEAMS_URL}\"}\n");
    cr_assert_str_eq(cfg->templates_dir, tdir);
    free(tdir);
    cr_assert_eq(cfg->n_receivers, 4);
    const struct receiver_conf *r = &cfg->receivers[0];
    cr_assert_eq(r->type, RECEIVER_EMAIL);
    cr_assert_str_eq(r->email.host, "smtp.example.org");
    cr_assert_eq(r->email.port, 465);
    cr_assert_eq(r->email.starttls, STARTTLS_OPPORTUNISTIC);
    cr_assert_str_eq(r->email.username, "relay@example.org");
    cr_assert_str_eq(r->email.password, "smtp-secret");
    char *path = xasprintf("%s/ca.pem", tmp);
    cr_assert_str_eq(r->email.ca_file, path);
    free(path);
    cr_assert_str_eq(r->email.from, "wsrelay <relay@example.org>");
    cr_assert_eq(r->email.n_to, 2);
    cr_assert_str_eq(r->email.to[0], "oncall@example.org");
    cr_assert_str_eq(r->email.to[1], "当番 <duty@example.org>");
    cr_assert_eq(r->email.n_cc, 1);
    cr_assert_str_eq(r->email.cc[0], "lab@example.org");
    path = xasprintf("%s/mail.txt", tmp);
    cr_assert_str_eq(r->email.template, path);
    free(path);
    path = xasprintf("%s/mail.html", tmp);
    cr_assert_str_eq(r->email.html_template, path);
    free(path);

    r = &cfg->receivers[1];
    cr_assert_eq(r->type, RECEIVER_EMAIL);
    cr_assert_eq(r->email.port, 587);
    cr_assert_eq(r->email.starttls, STARTTLS_REQUIRED);
    cr_assert_null(r->email.username);
    cr_assert_null(r->email.password);
    cr_assert_null(r->email.ca_file);
    cr_assert_null(r->email.template);
    cr_assert_null(r->email.html_template);
    cr_assert_eq(r->email.n_to, 1);
    cr_assert_str_eq(r->email.to[0], "b@example.org");
    cr_assert_eq(r->email.n_cc, 0);

    r = &cfg->receivers[2];
    cr_assert_eq(r->type, RECEIVER_SLACK);
    cr_assert_str_eq(r->slack.url, "https://hooks.slack.com/services/T0/B0/x");
    path = xasprintf("%s/chat.txt", tmp);
    cr_assert_str_eq(r->slack.template, path);
    free(path);
    r = &cfg->receivers[3];
    cr_assert_eq(r->type, RECEIVER_TEAMS);
    cr_assert_str_eq(r->teams.url, "https://example.webhook.office.com/x");
    cr_assert_null(r->teams.template);
    cr_assert_null(cfg->receivers[0].slack.url);
}

/* Google Chat, Chatwork and Pushover: their keys, defaults and checks. */
Test(config, googlechat_chatwork_and_pushover_receivers)
{
    free(put("cw.token", "f3c1a9e7b5d2c8a4e6f0b1d3c5a7e9f2\n", 0600));
    expect_ok(ACCOUNT "receivers:\n"
                      "  - name: chat\n"
                      "    googlechat: {url: \"https://chat.googleapis.com/v1/spaces/A/messages?"
                      "key=k&token=t\"}\n"
                      "  - name: chat-ja\n"
                      "    googlechat: {url: \"https://chat.googleapis.com/v1/spaces/B/messages\", "
                      "language: ja}\n"
                      "  - name: cw\n"
                      "    chatwork: {token_file: cw.token, room_id: \"314159\"}\n"
                      "  - name: phone\n"
                      "    pushover: {token: azGDORePK8gMaC0QOYAMyEEuzJnyUi, user: "
                      "uQiRzpo4DXghDmr9QzzfQu27cmVRsG, retry: 2m, expire: 2h}\n");
    const struct receiver_conf *r = &cfg->receivers[0];
    cr_assert_eq(r->type, RECEIVER_GOOGLECHAT);
    cr_assert_eq(r->googlechat.language, CHAT_LANG_EN);
    cr_assert_null(r->googlechat.template);
    cr_assert_eq(cfg->receivers[1].googlechat.language, CHAT_LANG_JA);
    r = &cfg->receivers[2];
    cr_assert_eq(r->type, RECEIVER_CHATWORK);
    cr_assert_str_eq(r->chatwork.token, "f3c1a9e7b5d2c8a4e6f0b1d3c5a7e9f2");
    cr_assert_str_eq(r->chatwork.room_id, "314159");
    cr_assert_str_eq(r->chatwork.base_url, "https://api.chatwork.com");
    cr_assert_eq(r->chatwork.language, CHAT_LANG_JA);
    r = &cfg->receivers[3];
    cr_assert_eq(r->type, RECEIVER_PUSHOVER);
    cr_assert_eq(r->pushover.retry, 120);
    cr_assert_eq(r->pushover.expire, 7200);
    cr_assert_str_eq(r->pushover.base_url, "https://api.pushover.net");

    expect_error(ACCOUNT "receivers:\n"
                         "  - name: cw\n"
                         "    chatwork: {token: t0k3nT0K3Nt0k3n, room_id: \"rid314\"}\n",
                 "8:49: receivers[0].chatwork.room_id: expected a number (digits only)");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: phone\n"
                         "    pushover: {token: a, user: b, retry: 10s}\n",
                 "8:42: receivers[0].pushover.retry: expected a duration from 30s to 3h");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: phone\n"
                         "    pushover: {token: a, user: b, retry: 10m, expire: 5m}\n",
                 "8:55: receivers[0].pushover.expire: expire (300s) must not be shorter than "
                 "retry (600s)");
    expect_error(ACCOUNT "receivers:\n"
                         "  - name: cw\n"
                         "    chatwork: {token: t, room_id: \"1\", base_url: "
                         "\"http://chatwork.example\"}\n",
                 "8:50: receivers[0].chatwork.base_url: http:// is only allowed to this machine "
                 "(localhost, 127.0.0.0/8 or [::1]); use https://");
}

Test(config, email_needs_host_from_and_recipients)
{
    expect_error(ACCOUNT EMAIL "      from: a@example.org\n"
                               "      to: b@example.org\n",
                 "9:7: receivers[0].email: missing required key 'host'");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      to: b@example.org\n",
                 "9:7: receivers[0].email: missing required key 'from'");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      from: a@example.org\n",
                 "9:7: receivers[0].email: missing required key 'to'");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      from: a@example.org\n"
                               "      to: []\n",
                 "11:11: receivers[0].email.to: the list is empty; give at least one");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      from: a@example.org\n"
                               "      to: {a: b}\n",
                 "11:11: receivers[0].email.to: expected a string or a list of strings, got a "
                 "mapping");
}

Test(config, email_addresses_are_checked_where_they_are_written)
{
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      from: a@example.org\n"
                               "      to: [b@example.org, \"c@d@example.org\"]\n",
                 "11:27: receivers[0].email.to[1]: expected exactly one '@' (a display name "
                 "must not contain one)");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      from: \"Lab\\r\\nBcc: evil@example.net <a@example.org>\"\n"
                               "      to: b@example.org\n",
                 "10:13: receivers[0].email.from: an address must not contain a line break or "
                 "other control character");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      from: a@example.org\n"
                               "      to: b@example.org\n"
                               "      cc:\n"
                               "        - ok@example.org\n"
                               "        - nobody\n",
                 "14:11: receivers[0].email.cc[1]: expected an address such as "
                 "name@example.org or Display Name <name@example.org>");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      from: \"wsrelay relay@example.org\"\n"
                               "      to: b@example.org\n",
                 "10:13: receivers[0].email.from: expected name@example.org or Display Name "
                 "<name@example.org>");
}

Test(config, email_port_starttls_and_host)
{
    static const char *const ports[] = {"0", "65536", "-1", "587x", "\"\"", "5 87", "0x24b"};
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        char *yaml = xasprintf(ACCOUNT EMAIL "      host: smtp.example.org\n"
                                             "      port: %s\n"
                                             "      from: a@example.org\n"
                                             "      to: b@example.org\n",
                               ports[i]);
        cr_assert_eq(load(yaml), -1, "accepted port %s", ports[i]);
        char *want = xasprintf("%s:10:13: receivers[0].email.port: expected a", conf_path);
        cr_assert(!strncmp(err.msg, want, strlen(want)), "port %s: %s", ports[i], err.msg);
        free(want);
        free(yaml);
    }
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      port: 70000\n"
                               "      from: a@example.org\n"
                               "      to: b@example.org\n",
                 "10:13: receivers[0].email.port: expected a whole number from 1 to 65535");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      starttls: yes\n"
                               "      from: a@example.org\n"
                               "      to: b@example.org\n",
                 "10:17: receivers[0].email.starttls: expected required, opportunistic or off");
    static const char *const hosts[] = {
        "smtp.example.org:587", "\"[::1]\"",      "\"::1\"",           "\"a b\"",
        "-x.example.org",       "x..example.org", "smtp.example.org.", "smtp_relay.example.org"};
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
        char *yaml = xasprintf(ACCOUNT EMAIL "      host: %s\n"
                                             "      from: a@example.org\n"
                                             "      to: b@example.org\n",
                               hosts[i]);
        cr_assert_eq(load(yaml), -1, "accepted host %s", hosts[i]);
        char *want = xasprintf("%s:9:13: receivers[0].email.host: expected a host name or IPv4 "
                               "address (no port: see port; no IPv6 address: use a name)",
                               conf_path);
        cr_assert_str_eq(err.msg, want, "host %s", hosts[i]);
        free(want);
        free(yaml);
    }
}

Test(config, email_password_goes_with_a_username)
{
    free(put("smtp.pass", "from-file\n", 0600));
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      username: relay\n"
                               "      from: a@example.org\n"
                               "      to: b@example.org\n",
                 "10:17: receivers[0].email.username: a username needs password or "
                 "password_file");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      password: pw\n"
                               "      from: a@example.org\n"
                               "      to: b@example.org\n",
                 "10:17: receivers[0].email.password: a password is only used with a username");
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      username: relay\n"
                               "      password: pw\n"
                               "      password_file: smtp.pass\n"
                               "      from: a@example.org\n"
                               "      to: b@example.org\n",
                 "12:7: receivers[0].email: give password or password_file, not both");
    /* Never in the clear to another machine; to this one it may. */
    expect_error(ACCOUNT EMAIL "      host: smtp.example.org\n"
                               "      starttls: \"off\"\n"
                               "      username: relay\n"
                               "      password_file: smtp.pass\n"
                               "      from: a@example.org\n"
                               "      to: b@example.org\n",
                 "10:17: receivers[0].email.starttls: with starttls: off the password would "
                 "cross the network unencrypted; use required (or opportunistic)");
    expect_ok(ACCOUNT EMAIL "      host: localhost\n"
                            "      starttls: \"off\"\n"
                            "      username: relay\n"
                            "      password_file: smtp.pass\n"
                            "      from: a@example.org\n"
                            "      to: b@example.org\n");
    cr_assert_eq(cfg->receivers[0].email.starttls, STARTTLS_OFF);
    cr_assert_str_eq(cfg->receivers[0].email.password, "from-file");
    /* The password is a secret like any other. */
    cr_assert_eq(setenv("T_SMTP_PW", "TOPSECRET\r\nTOPSECRET", 1), 0);
    cr_assert_eq(load(ACCOUNT EMAIL "      host: smtp.example.org\n"
                                    "      username: relay\n"
                                    "      password: \"${T_SMTP_PW}\"\n"
                                    "      from: a@example.org\n"
                                    "      to: b@example.org\n"),
                 -1);
    cr_assert_null(strstr(err.msg, "TOPSECRET"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "receivers[0].email.password"), "%s", err.msg);
}

/* Loading `yaml` fails with "CONF_PATH:" `where` and the message, in which
 * "@TMP@" stands for the temporary directory. */
static void expect_error_in_tmp(const char *yaml, const char *where, const char *msg)
{
    const char *at = strstr(msg, "@TMP@");
    char *full = at ? xasprintf("%s%.*s%s%s", where, (int)(at - msg), msg, tmp, at + 5)
                    : xasprintf("%s%s", where, msg);
    expect_error(yaml, full);
    free(full);
}

Test(config, template_paths_must_be_readable_now)
{
    char *sub = xasprintf("%s/adir", tmp);
    cr_assert_eq(mkdir(sub, 0700), 0);
    free(sub);
    free(put("afile", "x\n", 0644));
    expect_error_in_tmp(
        ACCOUNT EMAIL "      host: smtp.example.org\n"
                      "      from: a@example.org\n"
                      "      to: b@example.org\n"
                      "      template: nope.txt\n",
        "12:17: receivers[0].email.template: ", "@TMP@/nope.txt: No such file or directory");
    expect_error_in_tmp(ACCOUNT EMAIL "      host: smtp.example.org\n"
                                      "      from: a@example.org\n"
                                      "      to: b@example.org\n"
                                      "      html_template: adir\n",
                        "12:22: receivers[0].email.html_template: ",
                        "@TMP@/adir: not a regular file (a directory)");
    expect_error_in_tmp(
        ACCOUNT EMAIL "      host: smtp.example.org\n"
                      "      from: a@example.org\n"
                      "      to: b@example.org\n"
                      "      ca_file: /nonexistent/ca.pem\n",
        "12:16: receivers[0].email.ca_file: ", "/nonexistent/ca.pem: No such file or directory");
    expect_error_in_tmp(
        ACCOUNT "receivers:\n"
                "  - name: s\n"
                "    slack: {url: \"https://hooks.slack.com/x\", template: t}\n",
        "8:57: receivers[0].slack.template: ", "@TMP@/t: No such file or directory");
    expect_error_in_tmp("templates: nodir\n" ACCOUNT RECEIVER, "1:12: templates: ",
                        "cannot read the directory @TMP@/nodir: No such file or directory");
    expect_error_in_tmp("templates: afile\n" ACCOUNT RECEIVER, "1:12: templates: ",
                        "cannot read the directory @TMP@/afile: Not a directory");
}

Test(config, chat_urls_are_https_or_to_this_machine)
{
    free(put("http.url", "http://hooks.slack.com/services/TOPSECRET\n", 0600));
    expect_ok(ACCOUNT "receivers:\n"
                      "  - name: s\n"
                      "    slack: {url: \"http://127.0.0.1:8080/TOPSECRET\"}\n"
                      "  - name: t\n"
                      "    teams: {url: \"https://example.webhook.office.com/TOPSECRET\"}\n");
    cr_assert_str_eq(cfg->receivers[0].slack.url, "http://127.0.0.1:8080/TOPSECRET");
    static const struct {
        const char *yaml, *tail;
    } bad[] = {
        {"    slack: {url: \"http://hooks.slack.com/TOPSECRET\"}\n",
         "8:18: receivers[0].slack.url: http:// is only allowed to this machine (localhost, "
         "127.0.0.0/8 or [::1]); use https://"},
        {"    teams: {url: \"ftp://TOPSECRET.example\"}\n",
         "8:18: receivers[0].teams.url: expected a URL starting with https:// (or http:// to "
         "this machine)"},
        {"    slack: {url_file: http.url}\n",
         "8:23: receivers[0].slack.url_file: http:// is only allowed to this machine "
         "(localhost, 127.0.0.0/8 or [::1]); use https://"},
        {"    teams: {template: x}\n",
         "8:12: receivers[0].teams: missing required key 'url' or 'url_file'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "receivers:\n  - name: c\n%s", bad[i].yaml);
        expect_error(yaml, bad[i].tail);
        cr_assert_null(strstr(err.msg, "TOPSECRET"), "%s", err.msg);
        free(yaml);
    }
}

/* Slack as an app: a bot token from a file and a channel id, the Web API
 * at https://slack.com/api unless api_url says otherwise; the token and the
 * channel go together, and neither is ever shown. */
Test(config, slack_app_takes_a_token_file_and_a_channel)
{
    free(put("bot.token", "xoxb-1234-5678-T0PSECRETT0KEN\n", 0600));
    free(put("bad.token", "T0PSECRET token\n", 0600));
    expect_ok(ACCOUNT "receivers:\n"
                      "  - name: ops\n"
                      "    slack: {token_file: bot.token, channel: C0ALERTS01}\n"
                      "  - name: local\n"
                      "    slack: {token_file: bot.token, channel: G0PRIVATE1,\n"
                      "            api_url: \"http://127.0.0.1:8080/api/\"}\n"
                      "  - name: hook\n"
                      "    slack: {url: \"https://hooks.slack.com/services/T0/B0/x\"}\n");
    const struct receiver_conf *r = &cfg->receivers[0];
    cr_assert_eq(r->type, RECEIVER_SLACK_APP);
    cr_assert_str_eq(r->slack.token, "xoxb-1234-5678-T0PSECRETT0KEN");
    cr_assert_str_eq(r->slack.channel, "C0ALERTS01");
    cr_assert_null(r->slack.api_url);
    cr_assert_null(r->slack.url);
    cr_assert_eq(cfg->receivers[1].type, RECEIVER_SLACK_APP);
    cr_assert_str_eq(cfg->receivers[1].slack.api_url, "http://127.0.0.1:8080/api");
    cr_assert_eq(cfg->receivers[2].type, RECEIVER_SLACK);
    static const struct {
        const char *yaml, *tail;
    } bad[] = {
        {"    slack: {token_file: bot.token}\n",
         "8:25: receivers[0].slack.token_file: token_file needs channel (the id of the channel "
         "to post in)"},
        {"    slack: {url: \"https://hooks.slack.com/x\", channel: C0ALERTS01}\n",
         "8:56: receivers[0].slack.channel: channel is for a Slack app (token_file), not an "
         "incoming webhook, which posts to its own channel"},
        {"    slack: {url: \"https://hooks.slack.com/x\", api_url: \"https://a.example\"}\n",
         "8:56: receivers[0].slack.api_url: api_url is for a Slack app (token_file)"},
        {"    slack: {token_file: bot.token, channel: \"#alerts\"}\n",
         "8:45: receivers[0].slack.channel: expected a channel id such as C0123456789 (a "
         "channel's details in Slack show it), not its name"},
        {"    slack: {token_file: bad.token, channel: C0ALERTS01}\n",
         "8:25: receivers[0].slack.token_file: expected a Slack bot token (xoxb-…)"},
        {"    slack: {token_file: bot.token, url: \"https://hooks.slack.com/x\", channel: C1}\n",
         "8:36: receivers[0].slack: give url, url_file or token_file, not both"},
        {"    slack: {token_file: bot.token, channel: C0ALERTS01, api_url: \"http://a.example\"}\n",
         "8:66: receivers[0].slack.api_url: http:// is only allowed to this machine (localhost, "
         "127.0.0.0/8 or [::1]); use https://"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "receivers:\n  - name: c\n%s", bad[i].yaml);
        expect_error(yaml, bad[i].tail);
        cr_assert_null(strstr(err.msg, "T0PSECRET"), "%s", err.msg);
        free(yaml);
    }
}

Test(config, device_priority)
{
    expect_ok("accounts:\n"
              "  - name: tokyo\n"
              "    api_key: k\n"
              "    login_id: tbzz9999\n"
              "    login_pass: p\n"
              "    devices:\n"
              "      - serial: 5214ABCD\n"
              "      - {serial: 5214ABCE, priority: 3}\n"
              "receivers:\n"
              "  - name: console\n"
              "    file: {path: \"-\"}\n");
    cr_assert_eq(cfg->accounts[0].devices[0].priority, 0); /* not given */
    cr_assert_eq(cfg->accounts[0].devices[1].priority, 3);
    cr_assert_eq(account_device_priority(&cfg->accounts[0], "5214ABCD"), 1);
    cr_assert_eq(account_device_priority(&cfg->accounts[0], "5214ABCE"), 3);
    cr_assert_eq(account_device_priority(&cfg->accounts[0], "5214FFFF"), 1);
    expect_error("accounts:\n"
                 "  - name: tokyo\n"
                 "    api_key: k\n"
                 "    login_id: tbzz9999\n"
                 "    login_pass: p\n"
                 "    devices: [{serial: 5214ABCD, priority: 11}]\n"
                 "receivers:\n"
                 "  - name: console\n"
                 "    file: {path: \"-\"}\n",
                 "6:44: accounts[0].devices[0].priority: expected a whole number from 1 to 10");
}

/* A device's own priority: comes first, then the first item of
 * priorities: whose glob matches its serial (globs as in rules, include:
 * and exclude:, ASCII letters in either case), then 1; for listed and
 * discovered devices alike. */
Test(config, priorities_by_serial_glob)
{
    expect_ok(ACCOUNT "    devices:\n"
                      "      - {serial: 5214ABCD, priority: 5}\n"
                      "      - serial: 5214ABCE\n"
                      "    priorities:\n"
                      "      - {serial: \"5214*\", priority: 3}\n"
                      "      - serial: \"52*\"\n"
                      "        priority: 2\n"
                      "      - {serial: \"5214ABC?\", priority: 9}\n"
                      "  - name: osaka\n"
                      "    api_key: k\n"
                      "    login_id: tbzz8888\n"
                      "    login_pass: p\n"
                      "    priorities: [{serial: \"X*\", priority: 10}]\n" RECEIVER);
    const struct account_conf *tokyo = &cfg->accounts[0], *osaka = &cfg->accounts[1];
    cr_assert_eq(tokyo->n_priorities, 3);
    cr_assert_str_eq(tokyo->priorities[0].serial, "5214*");
    cr_assert_eq(tokyo->priorities[0].priority, 3);
    cr_assert_str_eq(tokyo->priorities[1].serial, "52*");
    cr_assert_eq(tokyo->priorities[1].priority, 2);
    cr_assert_str_eq(tokyo->priorities[2].serial, "5214ABC?");
    cr_assert_eq(tokyo->priorities[2].priority, 9);
    cr_assert_eq(account_device_priority(tokyo, "5214ABCD"), 5); /* its own */
    cr_assert_eq(account_device_priority(tokyo, "5214ABCE"), 3); /* listed without one */
    cr_assert_eq(account_device_priority(tokyo, "5214ABCF"), 3); /* the first match, not 9 */
    cr_assert_eq(account_device_priority(tokyo, "52F00001"), 2);
    cr_assert_eq(account_device_priority(tokyo, "3F360001"), 1);
    cr_assert(osaka->devices_auto);
    cr_assert_eq(osaka->n_priorities, 1);
    cr_assert_eq(account_device_priority(osaka, "X0000001"), 10);
    cr_assert_eq(account_device_priority(osaka, "x0000001"), 10);
    cr_assert_eq(account_device_priority(osaka, "5214ABCD"), 1);
    expect_ok(ACCOUNT RECEIVER);
    cr_assert_eq(cfg->accounts[0].n_priorities, 0);
    cr_assert_null(cfg->accounts[0].priorities);
    cr_assert_eq(account_device_priority(&cfg->accounts[0], "5214ABCD"), 1);
}

Test(config, priorities_mistakes_name_file_line_and_column)
{
    static const struct {
        const char *yaml, *tail;
    } bad[] = {
        {"    priorities: [{serial: \"52[14*\", priority: 3}]\n",
         "6:27: accounts[0].priorities[0].serial: column 3: '[' is not closed"},
        {"    priorities: [{serial: \"52*\\\\\", priority: 3}]\n",
         "6:27: accounts[0].priorities[0].serial: column 4: '\\' at the end escapes nothing"},
        {"    priorities: [{serial: \"\", priority: 3}]\n",
         "6:27: accounts[0].priorities[0].serial: expected a non-empty glob"},
        {"    priorities: [{serial: [\"52*\"], priority: 3}]\n",
         "6:27: accounts[0].priorities[0].serial: expected a glob, got a list"},
        {"    priorities: [{serial: \"52*\", priority: 11}]\n",
         "6:44: accounts[0].priorities[0].priority: expected a whole number from 1 to 10"},
        {"    priorities: [{serial: \"52*\", priority: 0}]\n",
         "6:44: accounts[0].priorities[0].priority: expected a whole number from 1 to 10"},
        {"    priorities: [{serial: \"52*\", priority: high}]\n",
         "6:44: accounts[0].priorities[0].priority: expected a whole number from 1 to 10"},
        {"    priorities: [{serial: \"52*\", priority: 2, base: 5214ABCD}]\n",
         "6:47: accounts[0].priorities[0]: unknown key 'base' (expected one of: serial, "
         "priority)"},
        {"    priorities: [{serial: \"52*\"}]\n",
         "6:18: accounts[0].priorities[0]: missing required key 'priority'"},
        {"    priorities: [{priority: 2}]\n",
         "6:18: accounts[0].priorities[0]: missing required key 'serial'"},
        {"    priorities: [\"52*\"]\n",
         "6:18: accounts[0].priorities[0]: expected a mapping, got a string"},
        {"    priorities: {serial: \"52*\", priority: 2}\n",
         "6:17: accounts[0].priorities: expected a list, got a mapping"},
        {"    priorities: []\n",
         "6:17: accounts[0].priorities: the list is empty; give at least one priority"},
        {"    priorities:\n"
         "      - serial: \"5214*\"\n"
         "        priority: 3\n"
         "      - serial: \"52*\"\n"
         "        prio: 2\n",
         "10:9: accounts[0].priorities[1]: unknown key 'prio' (expected one of: serial, "
         "priority)"},
        {"    priorities:\n"
         "      - {serial: \"52*\", priority: 3}\n"
         "      - {serial: \"5214*\", priority: 2}\n"
         "      - {serial: \"52*\", priority: 4}\n",
         "9:18: accounts[0].priorities[2].serial: duplicate priority serial '52*' (first at "
         "line 7)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "%s" RECEIVER, bad[i].yaml);
        expect_error(yaml, bad[i].tail);
        free(yaml);
    }
}

/* ---- limits:, early_warning: and signals: ---- */

/* Every item in the file's order, each bound as written (ints, floats,
 * signs, an exponent, a quoted number), and which bounds were given. */
Test(config, limits_are_read_in_file_order)
{
    expect_ok(ACCOUNT "    limits:\n"
                      "      - {serial: \"5214*\", channel: 1, upper: -75}\n"
                      "      - {serial: \"5214*\", channel: 1, lower: -90.5}\n"
                      "      - serial: \"52??????\"\n"
                      "        channel: 2\n"
                      "        lower: -75.0\n"
                      "        upper: 8.5\n"
                      "      - {serial: \"*\", channel: 8, upper: \"1e2\", lower: +.5}\n" RECEIVER);
    const struct account_conf *a = &cfg->accounts[0];
    cr_assert_eq(a->n_limits, 4);
    cr_assert_str_eq(a->limits[0].serial, "5214*");
    cr_assert_eq(a->limits[0].channel, 1);
    cr_assert(a->limits[0].has_upper);
    cr_assert_not(a->limits[0].has_lower);
    cr_assert_eq(a->limits[0].upper, -75.0);
    cr_assert_eq(a->limits[0].lower, 0.0);
    cr_assert_not(a->limits[1].has_upper);
    cr_assert(a->limits[1].has_lower);
    cr_assert_eq(a->limits[1].lower, -90.5);
    cr_assert_str_eq(a->limits[2].serial, "52??????");
    cr_assert_eq(a->limits[2].channel, 2);
    cr_assert(a->limits[2].has_upper && a->limits[2].has_lower);
    cr_assert_eq(a->limits[2].lower, -75.0);
    cr_assert_eq(a->limits[2].upper, 8.5);
    cr_assert_str_eq(a->limits[3].serial, "*");
    cr_assert_eq(a->limits[3].channel, 8);
    cr_assert_eq(a->limits[3].upper, 100.0);
    cr_assert_eq(a->limits[3].lower, 0.5);
    cr_assert(a->early_warning);
    cr_assert(a->signals);
}

/* The first item whose glob matches the serial (glob.h: ASCII letters in
 * either case) and whose channel is the one asked for; nothing else. */
Test(config, account_limit_takes_the_first_match)
{
    expect_ok(ACCOUNT "    limits:\n"
                      "      - {serial: \"5214AB*\", channel: 1, upper: -75}\n"
                      "      - {serial: \"5214AB*\", channel: 1, lower: -90.5}\n"
                      "      - {serial: \"52??????\", channel: 2, lower: -75.0, upper: 8.5}\n"
                      "      - {serial: \"*\", channel: 3, lower: 2, upper: 8}\n" RECEIVER);
    const struct account_conf *a = &cfg->accounts[0];
    struct watch_limit l;
    cr_assert(account_limit(a, "5214ABCD", 1, &l));
    cr_assert(l.has_upper);
    cr_assert_not(l.has_lower); /* the first item, not the second */
    cr_assert_eq(l.upper, -75.0);
    cr_assert_eq(l.lower, 0.0);
    cr_assert(account_limit(a, "5214abcd", 1, &l)); /* "5214AB*": letters in either case */
    cr_assert_eq(l.upper, -75.0);
    cr_assert(account_limit(a, "5214ABCD", 2, &l));
    cr_assert(l.has_upper && l.has_lower);
    cr_assert_eq(l.lower, -75.0);
    cr_assert_eq(l.upper, 8.5);
    cr_assert(account_limit(a, "3F360001", 3, &l));
    cr_assert_eq(l.lower, 2.0);
    cr_assert_eq(l.upper, 8.0);
    cr_assert(account_limit(a, "5214ABCD", 3, &l)); /* only "*" has channel 3 */
    cr_assert_eq(l.upper, 8.0);
    /* No match: a channel no item names, a serial no glob of the channel
     * matches, a serial one character too long for "52??????". */
    static const struct {
        const char *serial;
        int channel;
    } none[] = {{"5214ABCD", 4}, {"3F360001", 1}, {"3F360001", 2}, {"5214ABCDE", 2}};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        memset(&l, 0xff, sizeof l);
        cr_assert_not(account_limit(a, none[i].serial, none[i].channel, &l), "%s ch%d",
                      none[i].serial, none[i].channel);
        cr_assert_not(l.has_upper);
        cr_assert_not(l.has_lower);
        cr_assert_eq(l.upper, 0.0);
        cr_assert_eq(l.lower, 0.0);
    }
    expect_ok(ACCOUNT RECEIVER);
    memset(&l, 0xff, sizeof l);
    cr_assert_not(account_limit(&cfg->accounts[0], "5214ABCD", 1, &l));
    cr_assert_not(l.has_upper || l.has_lower);
}

Test(config, limits_mistakes_name_file_line_and_column)
{
    static const struct {
        const char *yaml, *tail;
    } bad[] = {
        {"    limits: [{serial: \"52[14*\", channel: 1, upper: 3}]\n",
         "6:23: accounts[0].limits[0].serial: column 3: '[' is not closed"},
        {"    limits: [{serial: \"[z-a]*\", channel: 1, upper: 3}]\n",
         "6:23: accounts[0].limits[0].serial: column 2: range 'z-a' ends before it starts"},
        {"    limits: [{serial: \"\", channel: 1, upper: 3}]\n",
         "6:23: accounts[0].limits[0].serial: expected a non-empty glob"},
        {"    limits: [{serial: \"52*\", channel: 0, upper: 3}]\n",
         "6:39: accounts[0].limits[0].channel: expected a whole number from 1 to 8"},
        {"    limits: [{serial: \"52*\", channel: 9, upper: 3}]\n",
         "6:39: accounts[0].limits[0].channel: expected a whole number from 1 to 8"},
        {"    limits: [{serial: \"52*\", channel: x, upper: 3}]\n",
         "6:39: accounts[0].limits[0].channel: expected a whole number from 1 to 8"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: warm}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: .inf}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: .nan}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: nan}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: inf}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: 1e999}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: 0x10}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: 1.2.3}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: 1e}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: -.}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: \" 5\"}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: [5]}]\n",
         "6:49: accounts[0].limits[0].upper: expected a number, got a list"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: }]\n",
         "6:49: accounts[0].limits[0].upper: expected a number, got an empty value"},
        {"    limits: [{serial: \"52*\", channel: 1, lower: -5 C}]\n",
         "6:49: accounts[0].limits[0].lower: expected a number such as -75, -75.0 or 8.5"},
        {"    limits: [{serial: \"52*\", channel: 1}]\n",
         "6:14: accounts[0].limits[0]: give upper, lower or both"},
        {"    limits:\n"
         "      - {serial: \"52*\", channel: 1, upper: 8}\n"
         "      - {serial: \"52*\", channel: 2, lower: 8, upper: 8}\n",
         "8:44: accounts[0].limits[1].lower: lower (8) must be below upper (8)"},
        {"    limits:\n"
         "      - {serial: \"52*\", channel: 1, upper: 8}\n"
         "      - {serial: \"52*\", channel: 2, lower: 9, upper: -1.5}\n",
         "8:44: accounts[0].limits[1].lower: lower (9) must be below upper (-1.5)"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: 3, priority: 2}]\n",
         "6:52: accounts[0].limits[0]: unknown key 'priority' (expected one of: serial, "
         "channel, upper, lower)"},
        {"    limits: [{channel: 1, upper: 3}]\n",
         "6:14: accounts[0].limits[0]: missing required key 'serial'"},
        {"    limits: [{serial: \"52*\", upper: 3}]\n",
         "6:14: accounts[0].limits[0]: missing required key 'channel'"},
        {"    limits: [{serial: \"52*\", channel: 1, upper: 3, upper: 4}]\n",
         "6:52: accounts[0].limits[0]: duplicate key 'upper' (first at line 6)"},
        {"    limits: []\n",
         "6:13: accounts[0].limits: the list is empty; give at least one limit"},
        {"    limits: {serial: \"52*\", channel: 1, upper: 3}\n",
         "6:13: accounts[0].limits: expected a list, got a mapping"},
        {"    early_warning: yes\n", "6:20: accounts[0].early_warning: expected true or false"},
        {"    signals: 1\n", "6:14: accounts[0].signals: expected true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT "%s" RECEIVER, bad[i].yaml);
        expect_error(yaml, bad[i].tail);
        free(yaml);
    }
}

Test(config, early_warning_and_signals_can_be_turned_off)
{
    expect_ok(ACCOUNT "    early_warning: false\n"
                      "  - name: osaka\n"
                      "    api_key: k\n"
                      "    login_id: tbzz8888\n"
                      "    login_pass: p\n"
                      "    signals: false\n" RECEIVER);
    cr_assert_not(cfg->accounts[0].early_warning);
    cr_assert(cfg->accounts[0].signals);
    cr_assert(cfg->accounts[1].early_warning);
    cr_assert_not(cfg->accounts[1].signals);
}

/* ---- self: and outbox: ---- */

Test(config, self_and_outbox_default_when_absent)
{
    expect_ok(ACCOUNT RECEIVER);
    cr_expect_eq(cfg->self.after, 900);
    cr_expect_eq(cfg->self.n_receivers, 0);
    cr_expect_null(cfg->self.heartbeat);
    cr_expect_eq(cfg->outbox.max_age, 7 * 86400);
    cr_expect_eq(cfg->outbox.max_items, 10000);
}

Test(config, self_and_outbox_keys)
{
    expect_ok(ACCOUNT RECEIVER "self:\n"
                               "  receivers: [console]\n"
                               "  after: 5m\n"
                               "  heartbeat: https://hc-ping.com/0b5e-secret\n"
                               "outbox: {max_age: 2d, max_items: 50}\n");
    cr_expect_eq(cfg->self.after, 300);
    cr_assert_eq(cfg->self.n_receivers, 1);
    cr_expect_str_eq(cfg->self.receivers[0], "console");
    cr_expect_str_eq(cfg->self.heartbeat, "https://hc-ping.com/0b5e-secret");
    cr_expect_eq(cfg->outbox.max_age, 2 * 86400);
    cr_expect_eq(cfg->outbox.max_items, 50);
    /* A mapping given without after: still gets the default. */
    expect_ok(ACCOUNT RECEIVER "self: {receivers: console}\n");
    cr_expect_eq(cfg->self.after, 900);
}

Test(config, self_mistakes_name_file_line_and_column)
{
    expect_error(ACCOUNT RECEIVER "self:\n"
                                  "  receivers: [console, pager]\n",
                 "10:24: self.receivers[1]: unknown receiver 'pager' (the receivers are: "
                 "console)");
    expect_error(ACCOUNT RECEIVER "self:\n"
                                  "  heartbeat: hc-ping.com/abc\n",
                 "10:14: self.heartbeat: expected an absolute URL such as "
                 "https://host[:port][/path]");
    expect_error(ACCOUNT RECEIVER "self:\n"
                                  "  heartbeat: http://hc-ping.example/secret-token\n",
                 "10:14: self.heartbeat: http:// is only allowed to this machine (localhost, "
                 "127.0.0.0/8 or [::1]); use https://");
    cr_expect_null(strstr(err.msg, "secret-token"));
    expect_ok(ACCOUNT RECEIVER "self: {heartbeat: \"http://127.0.0.1:8000/ping\"}\n");
    expect_error(ACCOUNT RECEIVER "self: {after: soon}\n",
                 "9:15: self.after: expected a duration such as 90s, 30m, 1h");
    expect_error(ACCOUNT RECEIVER "outbox: {max_items: 5}\n",
                 "9:21: outbox.max_items: expected a whole number from 10 to 1000000");
}

/* ---- incidents: ---- */

Test(config, incidents_default_when_absent)
{
    expect_ok(ACCOUNT RECEIVER);
    cr_expect(cfg->incidents.enabled, "incidents are on unless a user turns them off");
    cr_expect_eq(cfg->incidents.max_open, 7 * 86400);
    cr_expect_eq(cfg->incidents.keep, 400 * 86400);
    /* A mapping that gives one key still gets the other's default. */
    expect_ok(ACCOUNT RECEIVER "incidents: {max_open: 2d}\n");
    cr_expect_eq(cfg->incidents.max_open, 2 * 86400);
    cr_expect_eq(cfg->incidents.keep, 400 * 86400);
    expect_ok(ACCOUNT RECEIVER "incidents: {}\n");
    cr_expect(cfg->incidents.enabled);
    cr_expect_eq(cfg->incidents.max_open, 7 * 86400);
    cr_expect_eq(cfg->incidents.keep, 400 * 86400);
}

Test(config, incidents_keys)
{
    expect_ok(ACCOUNT RECEIVER "incidents:\n"
                               "  max_open: 36h\n"
                               "  keep: 730d\n");
    cr_expect_eq(cfg->incidents.max_open, 36 * 3600);
    cr_expect_eq(cfg->incidents.keep, 730 * 86400);
    /* The least of each. */
    expect_ok(ACCOUNT RECEIVER "incidents: {max_open: 1h, keep: 1d}\n");
    cr_expect_eq(cfg->incidents.max_open, 3600);
    cr_expect_eq(cfg->incidents.keep, 86400);
    expect_ok(ACCOUNT RECEIVER "incidents: {enabled: false}\n");
    cr_expect_not(cfg->incidents.enabled);
}

Test(config, incidents_mistakes_name_file_line_and_column)
{
    expect_error(ACCOUNT RECEIVER "incidents: {max_open: 59m}\n",
                 "9:23: incidents.max_open: expected a duration from 1h to 365d");
    expect_error(ACCOUNT RECEIVER "incidents: {keep: 23h}\n",
                 "9:19: incidents.keep: expected a duration from 1d to 3650d");
    expect_error(ACCOUNT RECEIVER "incidents: {max_open: 30d, keep: 10d}\n",
                 "9:34: incidents.keep: keep (10d) must be at least max_open (30d): the record "
                 "of an incident would go while it is still open");
    expect_error(ACCOUNT RECEIVER "incidents: {max_open: forever}\n",
                 "9:23: incidents.max_open: expected a duration such as 90s, 30m, 1h");
    expect_error(
        ACCOUNT RECEIVER "incidents:\n  max_opne: 2d\n",
        "10:3: incidents: unknown key 'max_opne' (expected one of: enabled, max_open, keep)");
    expect_error(ACCOUNT RECEIVER "incidents: 7d\n",
                 "9:12: incidents: expected a mapping, got a string");
}

/* Lines 6-12: an email receiver whose ack: block follows, its keys
 * indented eight spaces. */
#define EMAIL_ACK                                                                                  \
    EMAIL "      host: smtp.example.org\n"                                                         \
          "      from: a@example.org\n"                                                            \
          "      to: b@example.org\n"                                                              \
          "      ack:\n"

Test(config, an_email_receiver_reads_its_ack_mailbox)
{
    free(put("imap.pass", "imap-secret\n", 0600));
    free(put("ack.pin", "4711\n", 0600));
    free(put("ca.pem", "-----BEGIN CERTIFICATE-----\n", 0644));
    expect_ok(ACCOUNT EMAIL_ACK "        imap: imaps://imap.example.org:9993/INBOX\n"
                                "        username: relay\n"
                                "        password_file: imap.pass\n"
                                "        pin_file: ack.pin\n"
                                "        from: [\"Lead <lead@example.org>\", c@example.org]\n"
                                "        ca_file: ca.pem\n");
    const struct email_ack_conf *a = &cfg->receivers[0].email.ack;
    cr_assert_str_eq(a->imap, "imaps://imap.example.org:9993/INBOX");
    cr_assert_str_eq(a->username, "relay");
    cr_assert_str_eq(a->password, "imap-secret");
    cr_assert_str_eq(a->pin, "4711");
    cr_assert_eq(a->n_from, 2);
    cr_assert_str_eq(a->from[1], "c@example.org");
    cr_assert_not_null(a->ca_file);
    /* without ack: nothing is read */
    expect_ok(ACCOUNT EMAIL "      host: smtp.example.org\n"
                            "      from: a@example.org\n"
                            "      to: b@example.org\n");
    cr_assert_null(cfg->receivers[0].email.ack.imap);
}

Test(config, an_ack_mailbox_is_imaps_with_a_mailbox_and_nothing_else)
{
    free(put("imap.pass", "imap-secret\n", 0600));
    free(put("empty.pin", "\n", 0600));
    static const char *const bad[] = {"imap://imap.example.org/INBOX",
                                      "https://imap.example.org/INBOX",
                                      "imaps://imap.example.org",
                                      "imaps://imap.example.org/",
                                      "imaps://relay:pw@imap.example.org/INBOX",
                                      "imaps://imap.example.org/INBOX;UID=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *yaml = xasprintf(ACCOUNT EMAIL_ACK "        imap: \"%s\"\n"
                                                 "        username: relay\n"
                                                 "        password_file: imap.pass\n",
                               bad[i]);
        cr_assert_eq(load(yaml), -1, "%s loaded", bad[i]);
        cr_assert(strstr(err.msg, ":13:15: receivers[0].email.ack.imap: expected imaps://"),
                  "%s: %s", bad[i], err.msg);
        cr_assert_null(strstr(err.msg, "pw@"), "%s", err.msg);
        free(yaml);
    }
    expect_error(ACCOUNT EMAIL_ACK "        imap: imaps://imap.example.org/INBOX\n"
                                   "        password_file: imap.pass\n",
                 "13:9: receivers[0].email.ack: missing required key 'username'");
    /* an empty PIN would let every reply through: refused as every empty secret is */
    cr_assert_eq(load(ACCOUNT EMAIL_ACK "        imap: imaps://imap.example.org/INBOX\n"
                                        "        username: relay\n"
                                        "        password_file: imap.pass\n"
                                        "        pin_file: empty.pin\n"),
                 -1);
    cr_assert(strstr(err.msg, ":16:19: receivers[0].email.ack.pin_file: secret file ") &&
                  strstr(err.msg, "empty.pin is empty"),
              "%s", err.msg);
}
