/* The command line: global options, then one command from the table below.
 * Exit codes: 0 all went well, 1 a run-time failure that the next run
 * retries (state saved), 2 a usage or configuration error (nothing done). */
#include "config.h"
#include "event.h"
#include "explain.h"
#include "lookup.h"
#include "notify/notify.h"
#include "rules.h"
#include "run/run.h"
#include "schema.h"
#include "state.h"
#include "status.h"
#include "templates.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/xalloc.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct globals {
    const char *config_path;
};

struct command {
    const char *name;
    const char *usage; /* after "wsrelay [-c FILE] [-v | -q] NAME" */
    const char *help;
    int (*fn)(const struct globals *g, int argc, char **argv);
};

static int cmd_run(const struct globals *g, int argc, char **argv);
static int cmd_check(const struct globals *g, int argc, char **argv);
static int cmd_status(const struct globals *g, int argc, char **argv);
static int cmd_keys(const struct globals *g, int argc, char **argv);
static int cmd_test_receiver(const struct globals *g, int argc, char **argv);
static int cmd_render(const struct globals *g, int argc, char **argv);
static int cmd_explain(const struct globals *g, int argc, char **argv);
static int cmd_current(const struct globals *g, int argc, char **argv);
static int cmd_readings(const struct globals *g, int argc, char **argv);
static int cmd_alerts(const struct globals *g, int argc, char **argv);

static const struct command commands[] = {
    {"run", "[--now UNIXTIME] [--dry-run] [--look SERIAL]... [--loop [--interval DURATION]]",
     "poll the platform within its budget and deliver new alerts (--look: that device now, on "
     "the call kept in reserve if need be; --loop: every minute, until SIGTERM)",
     cmd_run},
    {"check", "",
     "validate the configuration, rules and templates, reporting problems with FILE:LINE:COL",
     cmd_check},
    {"status", "[--json] [--now UNIXTIME]",
     "say whether the relay covers every device and receiver (exit 1 when it does not)",
     cmd_status},
    {"current", "[--account NAME] [--json] [--now UNIXTIME]",
     "show every device's current readings (one current-readings call per account)", cmd_current},
    {"readings",
     "SERIAL [--account NAME] [--since DURATION | --from TIME --to TIME] [--csv | --json] "
     "[--unit C|F] [--now UNIXTIME]",
     "show a device's latest readings, or those of a period (one graph-data call)", cmd_readings},
    {"alerts", "SERIAL [--account NAME] [--force] [--json] [--now UNIXTIME]",
     "show a device's alert log as the platform keeps it (one of the login's 12 alert calls "
     "an hour; refused when none is left, unless --force)",
     cmd_alerts},
    {"explain", "FILE.json [--account NAME] [--serial SERIAL] [--group NAME] [--now UNIXTIME]",
     "show how the rules route the events of a saved alert log; sends nothing", cmd_explain},
    {"keys", "[--rules]",
     "list every configuration key (or rule-file key) with its type, default and meaning",
     cmd_keys},
    {"test-receiver", "NAME",
     "send a marked test notification to one receiver and show what it answered",
     cmd_test_receiver},
    {"render",
     "--template FILE --data FILE.json [--partials DIR] "
     "[--escape html|json|text|none|slack|teams]",
     "try a message template on JSON data", cmd_render},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: wsrelay [-c FILE] [-v | -q] COMMAND [ARGS]\n\n"
                 "Relays the alert logs of T&D WebStorage devices to the people on call.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %s%s%s\n      %s\n", commands[i].name, *commands[i].usage ? " " : "",
                commands[i].usage, commands[i].help);
    fprintf(out,
            "\nOptions:\n"
            "  -c FILE      configuration file (default $WSRELAY_CONFIG, else %s)\n"
            "  -v           show debug lines too\n"
            "  -q           show only warnings and errors\n"
            "  -h, --help   show this help\n"
            "  --version    show the version\n\n"
            "Exit status: 0 all went well; 1 a failure the next run retries;\n"
            "2 a usage or configuration error.\n",
            CONFIG_DEFAULT_PATH);
}

/* Loads the configuration, then, when run as root against a state that is
 * another user's (the service's), becomes that user (state_run_as_owner):
 * root reads what only root may, and writes nothing there as root. */
static int load_config(struct config **out, const struct globals *g)
{
    struct err e;
    if (config_load(out, g->config_path, &e) < 0) {
        log_plain(LOG_ERROR, "%s", e.msg);
        return -1;
    }
    if (state_run_as_owner((*out)->state_file, &e) < 0) {
        log_plain(LOG_ERROR, "%s", e.msg);
        config_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

static int parse_time(long long *out, const char *text)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* Set by SIGTERM or SIGINT during `run`, with or without --loop. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* SIGTERM (a systemd stop or timeout, a container stop) and SIGINT let the
 * step under way finish, then the run saves and ends: a stop repeats no
 * delivery and loses nothing. Without SA_RESTART, a signal ends a sleep or
 * a wait early. */
static void catch_stop_signals(struct run_options *ro)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ro->stop = &stop_requested;
}

/* Sleeps until `until` (CLOCK_MONOTONIC seconds) or a stop signal. */
static void sleep_until(long long until)
{
    struct timespec now;
    while (!stop_requested && clock_gettime(CLOCK_MONOTONIC, &now) == 0 && now.tv_sec < until) {
        struct timespec step = {.tv_sec = 1};
        nanosleep(&step, NULL); /* a signal cuts it short */
    }
}

/* `run --loop`: a tick every `interval` seconds until SIGTERM or SIGINT,
 * which let the current tick finish its step, save, and end with 0. The
 * configuration is read again before each tick, so an edit takes effect
 * without a restart; a broken edit is logged and the last good
 * configuration kept. Takes over `c`. */
static int run_loop(const struct globals *g, struct config *c, struct run_options *ro,
                    long interval)
{
    log_info("loop: a tick every %ld s; SIGTERM stops it after the current step", interval);
    while (!stop_requested) {
        struct timespec started;
        clock_gettime(CLOCK_MONOTONIC, &started);
        struct config *fresh = NULL;
        struct err e;
        if (config_load(&fresh, g->config_path, &e) == 0) {
            config_free(c);
            c = fresh;
        } else {
            log_error("%s (keeping the configuration read before)", e.msg);
        }
        ro->now = (long long)time(NULL);
        run_once(c, ro);
        sleep_until((long long)started.tv_sec + interval);
    }
    log_info("loop: stopped by a signal; the state is saved");
    config_free(c);
    return RUN_OK;
}

static int cmd_run(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"now", required_argument, NULL, 'n'},  {"dry-run", no_argument, NULL, 'd'},
        {"loop", no_argument, NULL, 'l'},       {"interval", required_argument, NULL, 'i'},
        {"look", required_argument, NULL, 'k'}, {NULL, 0, NULL, 0},
    };
    struct run_options ro = {.now = (long long)time(NULL), .lock_wait = 10};
    const char **looks = xcalloc((size_t)argc + 1, sizeof *looks);
    size_t n_looks = 0;
    struct config *c = NULL;
    bool loop = false, now_given = false, interval_given = false;
    long interval = 60;
    int rc = RUN_USAGE;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            if (parse_time(&ro.now, optarg) < 0) {
                fprintf(stderr, "wsrelay: run: --now expects a Unix time, got '%s'\n", optarg);
                goto out;
            }
            now_given = true;
            break;
        case 'd':
            ro.dry_run = true;
            break;
        case 'l':
            loop = true;
            break;
        case 'i':
            if (duration_parse(&interval, optarg) < 0 || interval < 1) {
                fprintf(stderr,
                        "wsrelay: run: --interval expects a duration such as 60s or "
                        "5m, got '%s'\n",
                        optarg);
                goto out;
            }
            interval_given = true;
            break;
        case 'k':
            if (!*optarg) {
                fprintf(stderr, "wsrelay: run: --look expects a device's serial\n");
                goto out;
            }
            looks[n_looks++] = optarg;
            break;
        default:
            fprintf(stderr, "usage: wsrelay run [--now UNIXTIME] [--dry-run] [--look SERIAL]... "
                            "[--loop [--interval DURATION]]\n");
            goto out;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "wsrelay: run: unexpected argument '%s'\n", argv[optind]);
        goto out;
    }
    if (loop && now_given) {
        fprintf(stderr, "wsrelay: run: --loop follows the clock; --now cannot be used with it\n");
        goto out;
    }
    if (interval_given && !loop) {
        fprintf(stderr, "wsrelay: run: --interval needs --loop\n");
        goto out;
    }
    if (loop && n_looks) {
        fprintf(stderr, "wsrelay: run: --look is for one run; it cannot be used with --loop\n");
        goto out;
    }
    ro.looks = looks;
    ro.n_looks = n_looks;
    if (load_config(&c, g) < 0)
        goto out;
    catch_stop_signals(&ro);
    if (loop) {
        rc = run_loop(g, c, &ro, interval);
        c = NULL; /* run_loop took it */
        goto out;
    }
    rc = run_once(c, &ro);
    if (stop_requested)
        log_info("run: stopped by a signal after the step under way; the state is saved");
out:
    free(looks);
    config_free(c);
    return rc;
}

/* Reads the state without its lock, so that a run never makes it wait.
 * Exit status: 0 OK, 1 a problem (an unreadable state file too), 2 a
 * usage or configuration error. */
static int cmd_status(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"now", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    long long now = (long long)time(NULL);
    bool json = false;
    struct config *c = NULL;
    struct state *s = NULL;
    struct err e = {{0}};
    int rc = RUN_USAGE;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'j':
            json = true;
            break;
        case 'n':
            if (parse_time(&now, optarg) < 0) {
                fprintf(stderr, "wsrelay: status: --now expects a Unix time, got '%s'\n", optarg);
                goto out;
            }
            break;
        default:
            fprintf(stderr, "usage: wsrelay status [--json] [--now UNIXTIME]\n");
            goto out;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "wsrelay: status: unexpected argument '%s'\n", argv[optind]);
        goto out;
    }
    if (load_config(&c, g) < 0)
        goto out;
    if (state_peek(&s, c->state_file, &e) < 0)
        s = NULL;
    rc = status_report(stdout, c, s, e.msg, now, json) == STATUS_OK ? RUN_OK : RUN_FAILED;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "wsrelay: status: standard output: %s\n", strerror(errno));
        rc = RUN_FAILED;
    }
out:
    state_close(s);
    config_free(c);
    return rc;
}

static void warn_rules(const struct config *c);

static int cmd_check(const struct globals *g, int argc, char **argv)
{
    struct config *c = NULL;
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: wsrelay check\n");
        return RUN_USAGE;
    }
    /* Every mistake at once, not one a round (config_load_all). */
    struct err e;
    char *errors = NULL;
    bool more;
    if (config_load_all(&c, &errors, &more, g->config_path, &e) < 0) {
        for (char *line = errors, *nl; line && *line; line = nl + 1) {
            nl = strchr(line, '\n');
            *nl = '\0';
            log_plain(LOG_ERROR, "%s", line);
        }
        if (more)
            log_plain(LOG_ERROR, "%s: stopped after %d mistakes; fix these and check again",
                      g->config_path, SCHEMA_ERRORS_MAX);
        free(errors);
        return RUN_USAGE;
    }
    struct notify_env env = {.templates_dir = c->templates_dir};
    bool templates_ok = true;
    for (size_t i = 0; i < c->n_receivers; i++) {
        if (notify_check_templates(&env, &c->receivers[i], &e) < 0) {
            fprintf(stderr, "wsrelay: %s\n", e.msg);
            templates_ok = false;
        }
    }
    if (!templates_ok) {
        config_free(c);
        return RUN_USAGE;
    }
    printf("%s: OK: %zu account%s, %zu receiver%s, %zu rule%s\n", c->path, c->n_accounts,
           c->n_accounts == 1 ? "" : "s", c->n_receivers, c->n_receivers == 1 ? "" : "s",
           c->n_rules, c->n_rules == 1 ? "" : "s");
    for (size_t i = 0; i < c->n_receivers; i++)
        printf("  receiver %s (%s)\n", c->receivers[i].name,
               notify_type_name(c->receivers[i].type));
    for (size_t i = 0; i < c->n_rules; i++)
        printf("  rule %s (%s:%ld)\n", c->rules[i].name, c->rules[i].file, c->rules[i].line);
    warn_rules(c);
    config_free(c);
    return RUN_OK;
}

/* What is valid but probably not meant: events that could go nowhere,
 * rules that can never be reached. */
static void warn_rules(const struct config *c)
{
    const struct rule_conf *all = rules_catch_all(c);
    if (!c->n_rules) {
        printf("  no rules: every event goes to %s\n",
               c->n_default_receivers ? "the default receivers" : "every receiver");
        return;
    }
    if (!all && !c->n_default_receivers)
        fprintf(stderr, "wsrelay: warning: no rule matches every event and there are no "
                        "default_receivers: an event that no rule matches is sent nowhere "
                        "(add a last rule without match: and when:, or default_receivers)\n");
    for (size_t i = 0; all && !all->cont && i + 1 < c->n_rules; i++)
        if (&c->rules[i] == all)
            fprintf(stderr,
                    "wsrelay: warning: %s:%ld: rule '%s' matches every event, so the "
                    "%zu rule%s after it %s never tried\n",
                    all->file, all->line, all->name, c->n_rules - i - 1,
                    c->n_rules - i - 1 == 1 ? "" : "s", c->n_rules - i - 1 == 1 ? "is" : "are");
}

static int cmd_keys(const struct globals *g, int argc, char **argv)
{
    (void)g;
    bool rules = argc == 2 && !strcmp(argv[1], "--rules");
    if (argc > 2 || (argc == 2 && !rules)) {
        fprintf(stderr, "usage: wsrelay keys [--rules]\n");
        return RUN_USAGE;
    }
    char *text = rules ? config_rules_reference() : config_reference();
    fputs(text, stdout);
    free(text);
    return RUN_OK;
}

/* The event of a test notification: plainly a test, from no real device. */
static struct event test_event(long long now)
{
    struct event ev = {
        .account = (char *)"test",
        .serial = (char *)"TEST0000",
        .model = (char *)"wsrelay",
        .name = (char *)"wsrelay test",
        .base_serial = (char *)"TEST0000",
        .base_model = (char *)"wsrelay",
        .base_name = (char *)"wsrelay test",
        .unixtime = now,
        .kind = (char *)"ch1",
        .text = (char *)"TEST: this is a test notification from wsrelay; no device raised an alert",
    };
    return ev;
}

static int cmd_test_receiver(const struct globals *g, int argc, char **argv)
{
    struct config *c = NULL;
    int rc = RUN_USAGE;
    if (argc != 2) {
        fprintf(stderr, "usage: wsrelay test-receiver NAME\n");
        return RUN_USAGE;
    }
    if (load_config(&c, g) < 0)
        return RUN_USAGE;
    const struct receiver_conf *r = config_receiver(c, argv[1]);
    if (!r) {
        fprintf(stderr, "wsrelay: test-receiver: no receiver named '%s' in %s\n", argv[1], c->path);
        goto out;
    }
    struct event ev = test_event((long long)time(NULL));
    struct notify_env env = {.templates_dir = c->templates_dir};
    struct notify_message m = {.events = &ev, .n = 1, .now = ev.unixtime, .test = true};
    struct notify_result res;
    struct err e;
    int sent = notify_send(&env, r, &m, &res, &e);
    /* The far end may quote another receiver's secret, or an account's. */
    struct redact *secrets = notify_secrets(c);
    char *answer = redact_text(secrets, res.answer);
    char *why = redact_text(secrets, sent < 0 ? e.msg : "");
    redact_free(secrets);
    printf("receiver %s (%s): %s\n", r->name, notify_type_name(r->type),
           sent == 0 ? "test notification accepted" : "test notification NOT accepted");
    if (res.status)
        printf("  the far end answered %ld%s%s\n", res.status, *answer ? ": " : "", answer);
    if (sent < 0)
        printf("  %s%s\n", why, res.permanent ? " (retrying would not help)" : "");
    free(answer);
    free(why);
    rc = sent == 0 ? RUN_OK : RUN_FAILED;
out:
    config_free(c);
    return rc;
}

#define RENDER_MAX_DATA (16 * 1024 * 1024)
#define RENDER_MAX_OUTPUT (16 * 1024 * 1024)

/* The JSON value in file `path`, which must hold that and nothing else. */
static struct json_object *read_json(const char *path, struct err *e)
{
    struct buf text;
    struct json_object *v = NULL;
    struct json_tokener *tok = NULL;
    buf_init(&text, RENDER_MAX_DATA);
    if (file_read(&text, path, e) < 0)
        goto out;
    tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH * 2);
    if (!tok)
        xalloc_die();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    /* The final NUL tells the tokener that the text ends there. */
    v = json_tokener_parse_ex(tok, buf_str(&text), (int)text.len + 1);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (jerr != json_tokener_success) {
        err_set(e, "%s: not JSON: %s at offset %zu", path,
                jerr == json_tokener_continue ? "unexpected end of data"
                                              : json_tokener_error_desc(jerr),
                end);
        goto out;
    }
    while (end < text.len && strchr(" \t\r\n", text.data[end]))
        end++;
    if (end < text.len) {
        err_set(e, "%s: not JSON: unexpected data at offset %zu", path, end);
        json_object_put(v);
        v = NULL;
    }
out:
    if (tok)
        json_tokener_free(tok);
    buf_free(&text);
    return v;
}

static int parse_escape(enum template_escape *out, const char *name)
{
    static const struct {
        const char *name;
        enum template_escape esc;
    } table[] = {
        {"html", TEMPLATE_ESCAPE_HTML},   {"json", TEMPLATE_ESCAPE_JSON},
        {"text", TEMPLATE_ESCAPE_TEXT},   {"none", TEMPLATE_ESCAPE_NONE},
        {"slack", TEMPLATE_ESCAPE_SLACK}, {"teams", TEMPLATE_ESCAPE_TEAMS},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) {
            *out = table[i].esc;
            return 0;
        }
    return -1;
}

/* Prints the rendering of a template: FILE, or "builtin:NAME" for a
 * template built into wsrelay. Everything that goes wrong is the
 * template's or the data's: exit 2. */
static int cmd_render(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"template", required_argument, NULL, 't'},
        {"data", required_argument, NULL, 'd'},
        {"partials", required_argument, NULL, 'p'},
        {"escape", required_argument, NULL, 'e'},
        {NULL, 0, NULL, 0},
    };
    const char *template_path = NULL, *data_path = NULL, *partials = NULL;
    enum template_escape esc = TEMPLATE_ESCAPE_HTML;
    struct template *t = NULL;
    struct json_object *data = NULL;
    struct buf out;
    struct err e;
    int rc = RUN_USAGE;
    int ch;
    (void)g;
    buf_init(&out, RENDER_MAX_OUTPUT);
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 't':
            template_path = optarg;
            break;
        case 'd':
            data_path = optarg;
            break;
        case 'p':
            partials = optarg;
            break;
        case 'e':
            if (parse_escape(&esc, optarg) < 0) {
                fprintf(stderr,
                        "wsrelay: render: --escape expects html, json, text, none, "
                        "slack or teams, got '%s'\n",
                        optarg);
                goto out;
            }
            break;
        default:
            goto usage;
        }
    }
    if (optind != argc || !template_path || !data_path)
        goto usage;
    if (strncmp(template_path, "builtin:", 8) == 0
            ? templates_load(&t, NULL, NULL, template_path + 8, &e) < 0
            : templates_load(&t, template_path, NULL, NULL, &e) < 0) {
        fprintf(stderr, "wsrelay: %s\n", e.msg);
        goto out;
    }
    /* A missing partial renders as nothing; say so, as `check` would. */
    if (templates_check(t, partials, &e) < 0)
        fprintf(stderr, "wsrelay: warning: %s\n", e.msg);
    if (!(data = read_json(data_path, &e))) {
        fprintf(stderr, "wsrelay: %s\n", e.msg);
        goto out;
    }
    if (template_render(&out, t, data, esc, templates_partial, (void *)partials, &e) < 0) {
        fprintf(stderr, "wsrelay: %s\n", e.msg);
        goto out;
    }
    fflush(stdout);
    if (file_write_all(STDOUT_FILENO, buf_str(&out), out.len) < 0) {
        fprintf(stderr, "wsrelay: standard output: %s\n", strerror(errno));
        rc = RUN_FAILED;
        goto out;
    }
    rc = RUN_OK;
    goto out;
usage:
    fprintf(stderr, "usage: wsrelay render --template FILE --data FILE.json [--partials DIR] "
                    "[--escape html|json|text|none|slack|teams]\n");
out:
    template_free(t);
    json_object_put(data);
    buf_free(&out);
    return rc;
}

/* Routes the events of a saved alert log and says what each rule made of
 * them. Nothing is sent; the state is not read. */
static int cmd_explain(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"account", required_argument, NULL, 'a'},
        {"serial", required_argument, NULL, 's'},
        {"group", required_argument, NULL, 'g'},
        {"now", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    struct explain_options eo = {.now = (long long)time(NULL)};
    struct config *c = NULL;
    struct json_object *body = NULL;
    struct err e;
    int rc = RUN_USAGE;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'a':
            eo.account = optarg;
            break;
        case 's':
            eo.serial = optarg;
            break;
        case 'g':
            eo.group = optarg;
            break;
        case 'n':
            if (parse_time(&eo.now, optarg) < 0) {
                fprintf(stderr, "wsrelay: explain: --now expects a Unix time, got '%s'\n", optarg);
                goto out;
            }
            break;
        default:
            goto usage;
        }
    }
    if (optind + 1 != argc)
        goto usage;
    if (load_config(&c, g) < 0)
        goto out;
    if (!(body = read_json(argv[optind], &e)) || explain_alert_log(stdout, c, body, &eo, &e) < 0) {
        fprintf(stderr, "wsrelay: explain: %s\n", e.msg);
        goto out;
    }
    rc = RUN_OK;
    goto out;
usage:
    fprintf(stderr, "usage: wsrelay explain FILE.json [--account NAME] [--serial SERIAL] "
                    "[--group NAME] [--now UNIXTIME]\n");
out:
    json_object_put(body);
    config_free(c);
    return rc;
}

/* --- look-ups (lookup.h) --------------------------------------------- */

#define LOOKUP_LOCK_WAIT 30 /* seconds a look-up waits for a run's lock */

/* The options of the look-up commands, each allowed where its bit is. */
enum {
    LK_ACCOUNT = 1 << 0,
    LK_JSON = 1 << 1,
    LK_NOW = 1 << 2,
    LK_CSV = 1 << 3,
    LK_UNIT = 1 << 4,
    LK_SINCE = 1 << 5,
    LK_FROM = 1 << 6,
    LK_TO = 1 << 7,
    LK_FORCE = 1 << 8,
};

static const char *command_usage(const char *name)
{
    const char *usage = "";
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            usage = commands[i].usage;
    return usage;
}

/* Reads the options of look-up `cmd` (those in `allowed`) into *o and,
 * when `serial` is not NULL, the one operand into *serial. -1 (said) for
 * a usage error. */
static int lookup_args(struct lookup_options *o, const char **serial, const char *cmd,
                       unsigned allowed, int argc, char **argv)
{
    static const struct option opts[] = {
        {"account", required_argument, NULL, LK_ACCOUNT},
        {"json", no_argument, NULL, LK_JSON},
        {"now", required_argument, NULL, LK_NOW},
        {"csv", no_argument, NULL, LK_CSV},
        {"unit", required_argument, NULL, LK_UNIT},
        {"since", required_argument, NULL, LK_SINCE},
        {"from", required_argument, NULL, LK_FROM},
        {"to", required_argument, NULL, LK_TO},
        {"force", no_argument, NULL, LK_FORCE},
        {NULL, 0, NULL, 0},
    };
    unsigned seen = 0;
    int ch, rc = -1;
    *o = (struct lookup_options){.now = (long long)time(NULL), .lock_wait = LOOKUP_LOCK_WAIT};
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == '?' || !(ch & allowed))
            goto usage;
        seen |= (unsigned)ch;
        bool bad = false;
        switch (ch) {
        case LK_ACCOUNT:
            o->account = optarg;
            break;
        case LK_JSON:
            o->format = LOOKUP_JSON;
            break;
        case LK_CSV:
            o->format = LOOKUP_CSV;
            break;
        case LK_NOW:
            bad = parse_time(&o->now, optarg) < 0;
            break;
        case LK_UNIT:
            bad = strcmp(optarg, "C") && strcmp(optarg, "F");
            o->unit = optarg[0];
            break;
        case LK_SINCE:
            bad = duration_parse(&o->since, optarg) < 0 || o->since < 1;
            break;
        case LK_FROM:
            bad = lookup_parse_time(&o->from, optarg) < 0;
            break;
        case LK_TO:
            bad = lookup_parse_time(&o->to, optarg) < 0;
            break;
        case LK_FORCE:
            o->force = true;
            break;
        }
        if (bad) {
            size_t k = 0;
            while (opts[k].val != ch)
                k++;
            fprintf(stderr, "wsrelay: %s: --%s: cannot use '%s' (%s)\n", cmd, opts[k].name, optarg,
                    ch == LK_UNIT    ? "C or F"
                    : ch == LK_SINCE ? "a duration such as 2h or 30m"
                    : ch == LK_NOW   ? "a Unix time"
                                     : "a Unix time or YYYY-MM-DD HH:MM on the device's clock");
            goto out;
        }
    }
    if ((seen & LK_CSV) && (seen & LK_JSON)) {
        fprintf(stderr, "wsrelay: %s: --csv and --json cannot be used together\n", cmd);
        goto out;
    }
    if ((seen & LK_SINCE) && (seen & (LK_FROM | LK_TO))) {
        fprintf(stderr, "wsrelay: %s: --since cannot be used with --from or --to\n", cmd);
        goto out;
    }
    if (serial ? optind + 1 != argc : optind != argc)
        goto usage;
    if (serial)
        *serial = argv[optind];
    rc = 0;
    goto out;
usage:
    fprintf(stderr, "usage: wsrelay %s %s\n", cmd, command_usage(cmd));
out:
    return rc;
}

static int cmd_current(const struct globals *g, int argc, char **argv)
{
    struct lookup_options o;
    struct config *c = NULL;
    int rc = RUN_USAGE;
    if (lookup_args(&o, NULL, "current", LK_ACCOUNT | LK_JSON | LK_NOW, argc, argv) < 0 ||
        load_config(&c, g) < 0)
        goto out;
    rc = lookup_current(stdout, c, &o);
out:
    config_free(c);
    return rc;
}

static int cmd_readings(const struct globals *g, int argc, char **argv)
{
    struct lookup_options o;
    struct config *c = NULL;
    const char *serial = NULL;
    int rc = RUN_USAGE;
    unsigned allowed =
        LK_ACCOUNT | LK_JSON | LK_NOW | LK_CSV | LK_UNIT | LK_SINCE | LK_FROM | LK_TO;
    if (lookup_args(&o, &serial, "readings", allowed, argc, argv) < 0 || load_config(&c, g) < 0)
        goto out;
    rc = lookup_readings(stdout, c, serial, &o);
out:
    config_free(c);
    return rc;
}

static int cmd_alerts(const struct globals *g, int argc, char **argv)
{
    struct lookup_options o;
    struct config *c = NULL;
    const char *serial = NULL;
    int rc = RUN_USAGE;
    unsigned allowed = LK_ACCOUNT | LK_JSON | LK_NOW | LK_FORCE;
    if (lookup_args(&o, &serial, "alerts", allowed, argc, argv) < 0 || load_config(&c, g) < 0)
        goto out;
    rc = lookup_alerts(stdout, c, serial, &o);
out:
    config_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    struct globals g = {.config_path = getenv("WSRELAY_CONFIG")};
    int rc = RUN_USAGE;
    int ch;
    /* A file size limit (ulimit -f, LimitFSIZE=) below what a save writes
     * must fail that write (EFBIG), which is reported and loses nothing,
     * rather than kill the run by SIGXFSZ with nothing said. */
    signal(SIGXFSZ, SIG_IGN);
    /* The front's mark that it exec'd this program (front.c): a front that
     * finds it knows it was exec'd as wsrelay-net, and nothing run from
     * here inherits it. */
    unsetenv("WSRELAY_FRONT_EXECED");
    if (!g.config_path || !*g.config_path)
        g.config_path = CONFIG_DEFAULT_PATH;
    /* "+": stop at the command; its own options follow it. */
    while ((ch = getopt_long(argc, argv, "+c:vqh", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            g.config_path = optarg;
            break;
        case 'v':
            log_set_level(LOG_DEBUG);
            break;
        case 'q':
            log_set_level(LOG_WARN);
            break;
        case 'h':
            usage(stdout);
            return RUN_OK;
        case 'V':
            printf("wsrelay %s\n", WSRELAY_VERSION);
            return RUN_OK;
        default:
            usage(stderr);
            return RUN_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return RUN_USAGE;
    }
    const struct command *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[optind], commands[i].name) == 0)
            cmd = &commands[i];
    if (!cmd) {
        fprintf(stderr, "wsrelay: unknown command '%s' (try wsrelay --help)\n", argv[optind]);
        return RUN_USAGE;
    }
    /* `wsrelay COMMAND --help` (or -h, before any "--"): the command's row
     * of the table on stdout, exit 0, nothing read or done. */
    for (int i = optind + 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: wsrelay [-c FILE] [-v | -q] %s%s%s\n  %s\n", cmd->name,
                   *cmd->usage ? " " : "", cmd->usage, cmd->help);
            return RUN_OK;
        }
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_plain(LOG_ERROR, "cannot initialise libcurl");
        return RUN_FAILED;
    }
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    /* Restart getopt for the command's own options. 0, not 1: glibc then
     * forgets the "+" of the global options too, so that a command's
     * options may follow its operands (`explain FILE.json --now N`). */
    optind = 0;
    rc = cmd->fn(&g, sub_argc, sub_argv);
    curl_global_cleanup();
    fflush(stdout);
    return rc;
}
