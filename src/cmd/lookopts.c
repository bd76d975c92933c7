/* The options of the look-ups `current`, `readings` and `alerts` read into
 * a struct lookup_options (lookup.h): each command's table holds the rows
 * it takes, with the ids of cmd.h, and this file reads them alike. */
#include "cmd/cmd.h"
#include "lookup.h"
#include "util/duration.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define LOOKUP_LOCK_WAIT 30 /* seconds a look-up waits for a run's lock */

int cmd_lookup_options(struct lookup_options *o, const char **serial, const struct cmd_entry *c,
                       const struct opt_args *a)
{
    const char *cmd = c->name;
    bool seen[LK_FORCE + 1] = {false};
    int rc = -1;
    *o = (struct lookup_options){.now = (long long)time(NULL), .lock_wait = LOOKUP_LOCK_WAIT};
    for (size_t i = 0; i < a->n_found; i++) {
        const struct opt_spec *spec = a->found[i].spec;
        const char *arg = a->found[i].value;
        int ch = spec->id;
        seen[ch] = true;
        bool bad = false;
        switch (ch) {
        case LK_ACCOUNT:
            o->account = arg;
            break;
        case LK_JSON:
            o->format = LOOKUP_JSON;
            break;
        case LK_CSV:
            o->format = LOOKUP_CSV;
            break;
        case LK_NOW:
            bad = cmd_parse_time(&o->now, arg) < 0;
            break;
        case LK_UNIT:
            bad = strcmp(arg, "C") && strcmp(arg, "F");
            o->unit = arg[0];
            break;
        case LK_SINCE:
            bad = duration_parse(&o->since, arg) < 0 || o->since < 1;
            break;
        case LK_FROM:
            bad = lookup_parse_time(&o->from, arg) < 0;
            break;
        case LK_TO:
            bad = lookup_parse_time(&o->to, arg) < 0;
            break;
        case LK_FORCE:
            o->force = true;
            break;
        }
        if (bad) {
            fprintf(stderr, "wsrelay: %s: --%s: cannot use '%s' (%s)\n", cmd, spec->name, arg,
                    ch == LK_UNIT    ? "C or F"
                    : ch == LK_SINCE ? "a duration such as 2h or 30m"
                    : ch == LK_NOW   ? "a Unix time"
                                     : "a Unix time or YYYY-MM-DD HH:MM on the device's clock");
            goto out;
        }
    }
    if (seen[LK_CSV] && seen[LK_JSON]) {
        fprintf(stderr, "wsrelay: %s: --csv and --json cannot be used together\n", cmd);
        goto out;
    }
    if (seen[LK_SINCE] && (seen[LK_FROM] || seen[LK_TO])) {
        fprintf(stderr, "wsrelay: %s: --since cannot be used with --from or --to\n", cmd);
        goto out;
    }
    if (a->n_operands != (serial ? 1 : 0))
        goto usage;
    if (serial)
        *serial = a->operands[0];
    rc = 0;
    goto out;
usage:
    cmd_usage(stderr, c);
out:
    return rc;
}
