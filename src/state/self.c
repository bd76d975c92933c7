/* Self-monitoring (selfcheck.h): each open condition of wsrelay's own
 * health, the time of the last relay event, and the heartbeat's health
 * (kept by health.c's helpers), in the "self" section. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- checking a loaded document ---------------------------------------- */

/* One open condition. */
static int check_condition(struct json_object *c, const char *where, struct err *e)
{
    static const char *const ints[] = {"since", "opened", "retry_at"};
    if (check_type(c, json_type_object, where, e) < 0 ||
        check_req(c, "since", json_type_int, where, e) < 0 ||
        check_opt(c, "creds", json_type_string, where, e) < 0)
        return -1;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (check_opt(c, ints[k], json_type_int, where, e) < 0)
            return -1;
    return 0;
}

/* The self-monitoring section: open conditions, the last relay event's
 * time, the heartbeat's health. */
static int check_self(struct json_object *self, struct err *e)
{
    if (check_type(self, json_type_object, "self", e) < 0 ||
        check_opt(self, "conditions", json_type_object, "self", e) < 0 ||
        check_opt(self, "last_relay", json_type_int, "self", e) < 0)
        return -1;
    struct json_object *hb = NULL;
    if (json_object_object_get_ex(self, "heartbeat", &hb) &&
        health_check(hb, "self.heartbeat", e) < 0)
        return -1;
    struct json_object *conds = member(self, "conditions", json_type_object);
    return conds ? check_members(conds, "self.conditions", check_condition, e) : 0;
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_self(struct json_object *self, const struct state_clamp *to)
{
    long long now = to->now;
    clamp_member(self, "last_relay", now);
    struct json_object *hb = member(self, "heartbeat", json_type_object);
    if (hb)
        health_clamp(hb, now);
    struct json_object *conds = member(self, "conditions", json_type_object);
    if (!conds)
        return;
    struct json_object_iterator it = json_object_iter_begin(conds);
    struct json_object_iterator end = json_object_iter_end(conds);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        clamp_member(json_object_iter_peek_value(&it), "since", now);
        clamp_member(json_object_iter_peek_value(&it), "opened", now);
        clamp_member(json_object_iter_peek_value(&it), "retry_at", now + 3600);
    }
}

/* --- self-monitoring --------------------------------------------------- */

static struct json_object *conditions(const struct state *s)
{
    return child_object(section(s, &state_section_self), "conditions");
}

bool state_condition(const struct state *s, const char *key, struct state_condition *out)
{
    memset(out, 0, sizeof *out);
    struct json_object *c =
        member(member(section(s, &state_section_self), "conditions", json_type_object), key,
               json_type_object);
    if (!c)
        return false;
    out->since = int_member(c, "since", 0);
    out->opened = int_member(c, "opened", 0);
    out->retry_at = int_member(c, "retry_at", 0);
    out->creds = xstrdup_or_null(str_member(c, "creds"));
    return true;
}

void state_set_condition(struct state *s, const char *key, const struct state_condition *c)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    jsonv_put_int(o, "since", c->since);
    jsonv_put_int(o, "opened", c->opened);
    if (c->retry_at)
        jsonv_put_int(o, "retry_at", c->retry_at);
    if (c->creds)
        jsonv_put(o, "creds", jsonv_need(json_object_new_string(c->creds)));
    jsonv_put(conditions(s), key, o);
}

void state_drop_condition(struct state *s, const char *key)
{
    json_object_object_del(conditions(s), key);
}

char **state_condition_keys(const struct state *s, size_t *n)
{
    struct json_object *conds =
        member(section(s, &state_section_self), "conditions", json_type_object);
    *n = 0;
    if (!conds || json_object_object_length(conds) == 0)
        return NULL;
    char **keys = xcalloc((size_t)json_object_object_length(conds), sizeof *keys);
    struct json_object_iterator it = json_object_iter_begin(conds);
    struct json_object_iterator end = json_object_iter_end(conds);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        keys[(*n)++] = xstrdup(json_object_iter_peek_name(&it));
    qsort(keys, *n, sizeof *keys, by_string);
    return keys;
}

void state_condition_clear(struct state_condition *c)
{
    if (!c)
        return;
    free(c->creds);
    memset(c, 0, sizeof *c);
}

long long state_relay_time(struct state *s, long long now)
{
    struct json_object *self = section(s, &state_section_self);
    long long last = int_member(self, "last_relay", 0);
    long long t = now > last ? now : last + 1;
    jsonv_put_int(self, "last_relay", t);
    return t;
}

void state_heartbeat_result(struct state *s, bool ok, long status, const char *error, long long now)
{
    health_record(child_object(section(s, &state_section_self), "heartbeat"), ok, status, error,
                  now);
}

bool state_heartbeat(const struct state *s, struct state_health *out)
{
    return health_get(member(section(s, &state_section_self), "heartbeat", json_type_object), out);
}

const struct state_section state_section_self = {
    .name = "self",
    .type = json_type_object,
    .check = check_self,
    .clamp = clamp_self,
};
