/* The files a configuration names, as `check` and `run` meet them: a FIFO
 * where a file is expected (the configuration, a secret, a rule file, a
 * template) is refused at once by name instead of waiting forever for a
 * writer, and a configuration open to other users that holds secrets is
 * warned about. Every child runs under a time limit, so that a regression
 * fails the test instead of hanging it. */
#include "proc.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Seconds a child may take: refusing a FIFO takes milliseconds. */
#define LIMIT 10

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

TestSuite(config_files, .init = setup, .fini = teardown, .timeout = 120);

/* DIR/NAME (caller frees). */
static char *in_dir(const char *name)
{
    return xasprintf("%s/%s", dir, name);
}

/* Writes DIR/NAME with `mode`. */
static void put(const char *name, const char *text, mode_t mode)
{
    char *path = in_dir(name);
    write_file(path, text);
    cr_assert_eq(chmod(path, mode), 0, "chmod %s", path);
    free(path);
}

/* Makes DIR/NAME a FIFO that nobody writes to. */
static void fifo(const char *name)
{
    char *path = in_dir(name);
    cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo %s", path);
    free(path);
}

static void subdir(const char *name)
{
    char *path = in_dir(name);
    cr_assert_eq(mkdir(path, 0700), 0, "mkdir %s", path);
    free(path);
}

/* `wsrelay -c DIR/CONFIG COMMAND [ARG]` within LIMIT seconds. */
static struct cmd_result wsrelay(const char *config, const char *command, const char *arg)
{
    char *path = in_dir(config);
    struct cmd_result r = wsrelay_cmd(LIMIT, "-c", path, command, arg, NULL);
    free(path);
    return r;
}

/* The stderr of `r` contains "DIR/NAME: not a regular file (a FIFO)",
 * after `before` when that is not NULL. */
static void assert_fifo_refused(const struct cmd_result *r, const char *before, const char *name)
{
    char *want = xasprintf("%s%s/%s: not a regular file (a FIFO)", before ? before : "", dir, name);
    cr_assert_eq(r->status, 2, "exit status %d: %s", r->status, r->err);
    cr_assert(strstr(r->err, want), "expected '%s' in: %s", want, r->err);
    free(want);
}

/* A configuration whose secrets come from files, with `extra` after it. */
static void config_with(const char *api_key_file, const char *extra)
{
    char *yaml = xasprintf("state_file: state.json\n"
                           "accounts:\n"
                           "  - name: lab\n"
                           "    base_url: http://127.0.0.1:9\n"
                           "    api_key_file: %s\n"
                           "    login_id: tbzz9999\n"
                           "    login_pass_file: pass\n"
                           "receivers:\n"
                           "  - name: console\n"
                           "    file: {path: \"-\"}\n"
                           "%s",
                           api_key_file, extra);
    put("key", "KEY\n", 0600);
    put("pass", "PASS\n", 0600);
    put("wsrelay.yaml", yaml, 0640);
    free(yaml);
}

/* ---- FIFOs ---- */

Test(config_files, a_fifo_as_secret_file_is_refused_by_check_and_run)
{
    fifo("key.fifo");
    config_with("key.fifo", "");
    const char *where = "wsrelay.yaml:5:19: accounts[0].api_key_file: cannot read secret file: ";
    struct cmd_result r = wsrelay("wsrelay.yaml", "check", NULL);
    assert_fifo_refused(&r, where, "key.fifo");
    cmd_result_free(&r);
    r = wsrelay("wsrelay.yaml", "run", NULL);
    assert_fifo_refused(&r, where, "key.fifo");
    cmd_result_free(&r);
}

Test(config_files, a_fifo_as_the_configuration_is_refused)
{
    fifo("wsrelay.fifo");
    struct cmd_result r = wsrelay("wsrelay.fifo", "check", NULL);
    assert_fifo_refused(&r, "wsrelay: ", "wsrelay.fifo");
    cmd_result_free(&r);
    r = wsrelay("wsrelay.fifo", "run", NULL);
    assert_fifo_refused(&r, "wsrelay: ", "wsrelay.fifo");
    cmd_result_free(&r);
}

Test(config_files, a_fifo_as_the_rule_file_is_refused)
{
    fifo("rules.fifo");
    config_with("key", "rules: rules.fifo\n");
    struct cmd_result r = wsrelay("wsrelay.yaml", "check", NULL);
    assert_fifo_refused(&r, "wsrelay: ", "rules.fifo");
    cmd_result_free(&r);
}

/* A FIFO named like a rule file in the rules directory, after a good one. */
Test(config_files, a_fifo_in_the_rules_directory_is_refused)
{
    subdir("rules.d");
    put("rules.d/00-all.yaml", "- {name: all, receivers: console}\n", 0644);
    fifo("rules.d/10-x.yaml");
    config_with("key", "rules: rules.d\n");
    struct cmd_result r = wsrelay("wsrelay.yaml", "check", NULL);
    assert_fifo_refused(&r, "wsrelay: ", "rules.d/10-x.yaml");
    cmd_result_free(&r);
}

Test(config_files, a_fifo_as_a_receivers_template_is_refused)
{
    fifo("t.fifo");
    config_with("key", "  - name: log\n"
                       "    file: {path: \"-\", template: t.fifo}\n");
    struct cmd_result r = wsrelay("wsrelay.yaml", "check", NULL);
    assert_fifo_refused(&r, "wsrelay.yaml:12:33: receivers[1].file.template: ", "t.fifo");
    cmd_result_free(&r);
}

/* The templates directory: a FIFO in place of file.txt, which the file
 * receiver uses, and one in place of a partial that a template includes. */
Test(config_files, a_fifo_in_the_templates_directory_is_refused)
{
    subdir("templates");
    fifo("templates/file.txt");
    config_with("key", "templates: templates\n");
    struct cmd_result r = wsrelay("wsrelay.yaml", "check", NULL);
    assert_fifo_refused(&r, NULL, "templates/file.txt");
    cmd_result_free(&r);

    char *path = in_dir("templates/file.txt");
    cr_assert_eq(unlink(path), 0);
    free(path);
    put("templates/file.txt", "{{#events}}{{> part.txt}}{{/events}}\n", 0644);
    fifo("templates/part.txt");
    r = wsrelay("wsrelay.yaml", "check", NULL);
    assert_fifo_refused(&r, NULL, "templates/part.txt");
    cmd_result_free(&r);
}

/* ---- secrets in a configuration others can read ---- */

static const char inline_secrets[] = "state_file: state.json\n"
                                     "accounts:\n"
                                     "  - name: lab\n"
                                     "    base_url: http://127.0.0.1:9\n"
                                     "    api_key: TOPSECRET\n"
                                     "    login_id: tbzz9999\n"
                                     "    login_pass: TOPSECRET\n"
                                     "receivers:\n"
                                     "  - name: console\n"
                                     "    file: {path: \"-\"}\n";

/* How many times `needle` occurs in `text`. */
static size_t count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The warning, once, naming the file, its mode and the fixes; never the secret. */
static void assert_warned_once(const struct cmd_result *r, const char *mode)
{
    char *path = in_dir("wsrelay.yaml");
    char *want = xasprintf("wsrelay: warning: %s is mode %s, open to other users, and holds "
                           "secrets written out in it (accounts[0].api_key and 1 more); chmod "
                           "0640 %s (or 0600), or move the secrets to *_file keys, ${VAR} or "
                           "systemd credentials\n",
                           path, mode, path);
    cr_assert_eq(count(r->err, want), 1, "expected once '%s' in: %s", want, r->err);
    cr_assert_eq(count(r->err, "open to other users"), 1, "%s", r->err);
    cr_assert_null(strstr(r->err, "TOPSECRET"), "%s", r->err);
    cr_assert_null(strstr(r->out, "TOPSECRET"), "%s", r->out);
    free(want);
    free(path);
}

Test(config_files, check_and_run_warn_of_secrets_others_can_read)
{
    put("wsrelay.yaml", inline_secrets, 0644);
    struct cmd_result r = wsrelay("wsrelay.yaml", "check", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    assert_warned_once(&r, "0644");
    cmd_result_free(&r);
    /* The platform at 127.0.0.1:9 does not answer: the run fails (1), after the warning. */
    r = wsrelay("wsrelay.yaml", "run", NULL);
    cr_assert_eq(r.status, 1, "%s", r.err);
    assert_warned_once(&r, "0644");
    cmd_result_free(&r);
}

Test(config_files, no_warning_once_the_file_is_closed_or_holds_no_secret)
{
    put("wsrelay.yaml", inline_secrets, 0640);
    struct cmd_result r = wsrelay("wsrelay.yaml", "check", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, "");
    cmd_result_free(&r);

    config_with("key", "");
    char *path = in_dir("wsrelay.yaml");
    cr_assert_eq(chmod(path, 0644), 0);
    free(path);
    r = wsrelay("wsrelay.yaml", "check", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, "");
    cmd_result_free(&r);
}
