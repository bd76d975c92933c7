/* `wsrelay explain FILE.json`: the events of a saved alert log routed
 * through the rules, each rule's verdict told (explain.h). Nothing is
 * sent; the state is not read. */
#include "cmd/cmd.h"
#include "explain.h"
#include "run/run.h"
#include "util/jsonfile.h"

#include <stdio.h>
#include <time.h>

#define EXPLAIN_MAX_LOG (16 * 1024 * 1024)

enum { OPT_ACCOUNT = 1, OPT_SERIAL, OPT_GROUP, OPT_NOW };

static const struct opt_spec opts[] = {
    {OPT_ACCOUNT, "account", 0, "NAME", 0,
     "the account the log is from (needed when the configuration has several)"},
    {OPT_SERIAL, "serial", 0, "SERIAL", 0, "the device, when the log does not name it"},
    {OPT_GROUP, "group", 0, "NAME", 0, "the device's group (an alert log does not say it)"},
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "route as if the clock said so (for when: windows)"},
    {0},
};

/* Routes the events of a saved alert log and says what each rule made of
 * them. Nothing is sent; the state is not read. */
static int cmd_explain(const struct cmd_globals *g, const struct opt_args *a)
{
    struct explain_options eo = {.now = (long long)time(NULL)};
    struct config *c = NULL;
    struct json_object *body = NULL;
    struct err e;
    int rc = RUN_USAGE;
    for (size_t i = 0; i < a->n_found; i++) {
        const char *arg = a->found[i].value;
        switch (a->found[i].spec->id) {
        case OPT_ACCOUNT:
            eo.account = arg;
            break;
        case OPT_SERIAL:
            eo.serial = arg;
            break;
        case OPT_GROUP:
            eo.group = arg;
            break;
        case OPT_NOW:
            if (cmd_parse_time(&eo.now, arg) < 0) {
                fprintf(stderr, "wsrelay: explain: --now expects a Unix time, got '%s'\n", arg);
                goto out;
            }
            break;
        }
    }
    if (a->n_operands != 1)
        goto usage;
    if (cmd_load_config(&c, g) < 0)
        goto out;
    if (!(body = jsonfile_read(a->operands[0], EXPLAIN_MAX_LOG, &e)) ||
        explain_alert_log(stdout, c, body, &eo, &e) < 0) {
        fprintf(stderr, "wsrelay: explain: %s\n", e.msg);
        goto out;
    }
    rc = RUN_OK;
    goto out;
usage:
    cmd_usage(stderr, &cmd_explain_entry);
out:
    json_object_put(body);
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_explain_entry = {
    "explain",
    "FILE.json",
    "show how the rules route the events of a saved alert log; sends nothing",
    opts,
    cmd_explain,
};
