/* `wsrelay status`: whether the relay covers every device and receiver
 * (status.h), in words or JSON. The state is read without its lock, so
 * that a run never makes it wait. Exit status: 0 OK, 1 a problem (an
 * unreadable state file too), 2 a usage or configuration error. */
#include "cmd/cmd.h"
#include "run/run.h"
#include "state.h"
#include "status.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

enum { OPT_JSON = 1, OPT_NOW };

static const struct opt_spec opts[] = {
    {OPT_JSON, "json", 0, NULL, 0, "the same report as one JSON object"},
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "judge as if the clock said so"},
    {0},
};

static int cmd_status(const struct cmd_globals *g, const struct opt_args *a)
{
    long long now = (long long)time(NULL);
    bool json = false;
    struct config *c = NULL;
    struct state *s = NULL;
    struct err e = {{0}};
    int rc = RUN_USAGE;
    for (size_t i = 0; i < a->n_found; i++) {
        const char *arg = a->found[i].value;
        switch (a->found[i].spec->id) {
        case OPT_JSON:
            json = true;
            break;
        case OPT_NOW:
            if (cmd_parse_time(&now, arg) < 0) {
                fprintf(stderr, "wsrelay: status: --now expects a Unix time, got '%s'\n", arg);
                goto out;
            }
            break;
        }
    }
    if (a->n_operands) {
        fprintf(stderr, "wsrelay: status: unexpected argument '%s'\n", a->operands[0]);
        goto out;
    }
    if (cmd_load_config(&c, g) < 0)
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

const struct cmd_entry cmd_status_entry = {
    "status",
    "",
    "say whether the relay covers every device and receiver (exit 1 when it does not)",
    opts,
    cmd_status,
};
