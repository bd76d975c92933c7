/* `wsrelay ack ID`: someone has the incident. Its reminders and
 * escalations stop, and every receiver told of it hears who has it at the
 * next run (run/incidents.h: incident_ack, the one path of every
 * acknowledgement). */
#include "cmd/cmd.h"
#include "run/incidents.h"
#include "run/run.h"
#include "state.h"
#include "util/log.h"
#include "util/utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOTE_MAX 500 /* bytes of a note kept */

enum { OPT_BY = 1, OPT_NOTE, OPT_NOW };

static const struct opt_spec opts[] = {
    {OPT_BY, "by", 0, "NAME", 0, "who acknowledges (default: the user running the command)"},
    {OPT_NOTE, "note", 0, "TEXT", 0, "what is being done, for the receivers and the record"},
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "the time of the acknowledgement (default: now)"},
    {0},
};

/* An incident id: digits, not 0. */
static bool parse_id(unsigned long *out, const char *text)
{
    char *end = NULL;
    if (!text || *text < '0' || *text > '9')
        return false;
    errno = 0;
    *out = strtoul(text, &end, 10);
    return !errno && *end == '\0' && *out > 0;
}

static int cmd_ack(const struct cmd_globals *g, const struct opt_args *a)
{
    struct config *c = NULL;
    struct state *st = NULL;
    struct err e;
    char *by = NULL, *note = NULL;
    long long now = (long long)time(NULL);
    unsigned long id = 0;
    int rc = RUN_USAGE;
    for (size_t i = 0; i < a->n_found; i++) {
        const char *v = a->found[i].value;
        switch (a->found[i].spec->id) {
        case OPT_BY:
            free(by);
            by = utf8_clean(v, strlen(v), 64, UTF8_CONTROLS_NONE);
            break;
        case OPT_NOTE:
            free(note);
            note = utf8_clean(v, strlen(v), NOTE_MAX, UTF8_CONTROLS_NONE);
            break;
        case OPT_NOW:
            if (cmd_parse_time(&now, v) < 0) {
                log_error("--now: not a Unix time: %s", v);
                goto out;
            }
            break;
        }
    }
    if (a->n_operands != 1 || !parse_id(&id, a->operands[0])) {
        cmd_usage(stderr, &cmd_ack_entry);
        goto out;
    }
    if (!by)
        by = cmd_user_name();
    if (cmd_load_config(&c, g) < 0)
        goto out;
    rc = RUN_FAILED;
    if (cmd_open_state(&st, c, &e) < 0) {
        log_error("%s", e.msg);
        goto out;
    }
    if (incident_ack(st, id, by, note, now, &e) < 0) {
        log_error("%s", e.msg);
        goto out;
    }
    if (state_save(st, &e) < 0) {
        log_error("%s", e.msg);
        goto out;
    }
    printf("incident %lu acknowledged by %s; its receivers hear of it at the next run\n", id, by);
    rc = RUN_OK;
out:
    state_close(st);
    config_free(c);
    free(by);
    free(note);
    return rc;
}

const struct cmd_entry cmd_ack_entry = {
    "ack",
    "ID",
    "acknowledge an incident: its reminders and escalations stop, its receivers hear who has it",
    opts,
    cmd_ack,
};
