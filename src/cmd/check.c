/* `wsrelay check`: the configuration, its rule files and every template a
 * receiver uses, validated with every mistake reported at once as
 * FILE:LINE:COL, and warnings for what is valid but probably not meant. */
#include "cmd/cmd.h"
#include "notify/notify.h"
#include "rules.h"
#include "run/run.h"
#include "schema.h"
#include "util/log.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const struct opt_spec opts[] = {{0}};

static void warn_rules(const struct config *c);

static int cmd_check(const struct cmd_globals *g, const struct opt_args *a)
{
    struct config *c = NULL;
    if (a->n_operands > 0) {
        cmd_usage(stderr, &cmd_check_entry);
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

const struct cmd_entry cmd_check_entry = {
    "check",
    "",
    "validate the configuration, rules and templates, reporting problems with FILE:LINE:COL",
    opts,
    cmd_check,
};
