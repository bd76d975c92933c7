/* `wsrelay incidents`: the incidents, open ones by default, in words, as
 * JSON or as CSV; `wsrelay incidents show ID`: one incident and its
 * timeline. The state is read without its lock (state_peek), as status
 * reads it: a run may hold the lock as long as it likes. */
#include "cmd/cmd.h"
#include "incident.h"
#include "run/run.h"
#include "state.h"
#include "util/duration.h"
#include "util/jsonv.h"
#include "util/log.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OPT_ALL = 1, OPT_JSON, OPT_NOW };

static const struct opt_spec opts[] = {
    {OPT_ALL, "all", 0, NULL, 0, "ended incidents the state still keeps too (a day after the end)"},
    {OPT_JSON, "json", 0, NULL, 0, "as JSON"},
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "the time ages are counted to (default: now)"},
    {0},
};

struct list_options {
    bool all, json;
    long long now;
};

/* One incident as a line: "12  open  03:00  34 min  Freezer A (5214000A) ch1  ALARM ...". */
static void print_line(const struct incident *inc, long long now)
{
    char age[24];
    struct json_object *snap = incident_snapshot(inc, NOTICE_OPENED, now);
    incident_duration_text(age, sizeof age, now - inc->opened_at);
    const char *name = inc->first.name && *inc->first.name ? inc->first.name : inc->first.serial;
    const char *state = json_object_get_string(jsonv_member(snap, "state"));
    printf("%-6lu %-12s %-11s %-10s %s (%s) %s", inc->id, state,
           json_object_get_string(jsonv_member(snap, "opened_time")), age, name, inc->first.serial,
           strchr(inc->key, '/') + 1);
    if (inc->acked_at)
        printf(", acknowledged by %s", inc->acked_by ? inc->acked_by : "?");
    else if (inc->state == INCIDENT_OPEN && inc->paged)
        printf(", not acknowledged (%d reminder%s, step %d)", inc->reminders,
               inc->reminders == 1 ? "" : "s", inc->step);
    else if (inc->state == INCIDENT_OPEN)
        printf(", under silence %lu: nobody paged", inc->silence);
    if (inc->has_live && inc->state == INCIDENT_OPEN)
        printf(", now %s", json_object_get_string(jsonv_member(snap, "live")));
    putchar('\n');
    json_object_put(snap);
}

static int list(const struct config *c, const struct list_options *o)
{
    struct state *st = NULL;
    struct err e;
    size_t n = 0, shown = 0;
    unsigned long *ids = NULL;
    struct json_object *arr = jsonv_need(json_object_new_array());
    if (state_peek(&st, c->state_file, &e) < 0) {
        log_error("%s", e.msg);
        json_object_put(arr);
        return RUN_FAILED;
    }
    ids = state_incident_ids(st, &n);
    for (size_t i = 0; i < n; i++) {
        struct incident inc;
        if (!state_incident_get(st, ids[i], &inc))
            continue;
        if (o->all || inc.state == INCIDENT_OPEN) {
            if (o->json) {
                struct json_object *snap = incident_snapshot(&inc, NOTICE_OPENED, o->now);
                json_object_object_del(snap, "notice");
                for (int k = NOTICE_OPENED; k <= NOTICE_CLOSED; k++) {
                    char key[32];
                    snprintf(key, sizeof key, "is_%s", incident_notice_name(k));
                    json_object_object_del(snap, key);
                }
                jsonv_put(snap, "device", jsonv_need(event_to_json(&inc.first)));
                jsonv_append(arr, snap);
            } else {
                if (!shown)
                    printf("%-6s %-12s %-11s %-10s %s\n", "ID", "STATE", "OPENED", "AGE",
                           "DEVICE AND WHAT");
                print_line(&inc, o->now);
            }
            shown++;
        }
        incident_clear(&inc);
    }
    if (o->json)
        printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    else if (!shown)
        printf("no %sincident\n", o->all ? "" : "open ");
    json_object_put(arr);
    free(ids);
    state_close(st);
    return RUN_OK;
}

static int cmd_incidents(const struct cmd_globals *g, const struct opt_args *a)
{
    struct config *c = NULL;
    struct list_options o = {.now = (long long)time(NULL)};
    int rc = RUN_USAGE;
    for (size_t i = 0; i < a->n_found; i++) {
        const char *v = a->found[i].value;
        switch (a->found[i].spec->id) {
        case OPT_ALL:
            o.all = true;
            break;
        case OPT_JSON:
            o.json = true;
            break;
        case OPT_NOW:
            if (cmd_parse_time(&o.now, v) < 0) {
                log_error("--now: not a Unix time: %s", v);
                goto out;
            }
            break;
        }
    }
    if (a->n_operands > 0) {
        cmd_usage(stderr, &cmd_incidents_entry);
        goto out;
    }
    if (cmd_load_config(&c, g) < 0)
        goto out;
    rc = list(c, &o);
out:
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_incidents_entry = {
    "incidents",   "", "list the incidents: open ones, with --all those ended lately too", opts,
    cmd_incidents,
};
