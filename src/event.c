/* Events: one per alert kind present in an alert-log entry, identified by
 * serial + unixtime + kind. This file turns platform responses into events
 * and events into (and back from) the JSON kept in the outbox. */
#include "event.h"
#include "util/xalloc.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const event_kinds[] = {"ch1", "ch2", "ch3", "ch4", "ch5", "ch6",
                                   "battery-level", "communication-status"};
const size_t event_n_kinds = sizeof event_kinds / sizeof event_kinds[0];

void event_clear(struct event *ev)
{
    if (!ev)
        return;
    free(ev->account);
    free(ev->serial);
    free(ev->model);
    free(ev->name);
    free(ev->base_serial);
    free(ev->base_model);
    free(ev->base_name);
    free(ev->kind);
    free(ev->text);
    free(ev->channel_name);
    free(ev->channel_unit);
    memset(ev, 0, sizeof *ev);
}

void event_copy(struct event *out, const struct event *ev)
{
    out->account = xstrdup_or_null(ev->account);
    out->serial = xstrdup_or_null(ev->serial);
    out->model = xstrdup_or_null(ev->model);
    out->name = xstrdup_or_null(ev->name);
    out->base_serial = xstrdup_or_null(ev->base_serial);
    out->base_model = xstrdup_or_null(ev->base_model);
    out->base_name = xstrdup_or_null(ev->base_name);
    out->unixtime = ev->unixtime;
    out->kind = xstrdup_or_null(ev->kind);
    out->text = xstrdup_or_null(ev->text);
    out->channel_name = xstrdup_or_null(ev->channel_name);
    out->channel_unit = xstrdup_or_null(ev->channel_unit);
    out->utc_offset = ev->utc_offset;
}

void event_list_free(struct event_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        event_clear(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

void event_local_time(const struct event *ev, char *out, size_t size)
{
    time_t t = (time_t)(ev->unixtime + (long long)ev->utc_offset * 60);
    struct tm tm;
    gmtime_r(&t, &tm);
    int off = ev->utc_offset < 0 ? -ev->utc_offset : ev->utc_offset;
    char date[24];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out, size, "%s %c%02d:%02d", date, ev->utc_offset < 0 ? '-' : '+', off / 60,
             off % 60);
}

void event_utc_time(const struct event *ev, char *out, size_t size)
{
    time_t t = (time_t)ev->unixtime;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void put_string(struct json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, value ? json_object_new_string(value) : NULL);
}

struct json_object *event_to_json(const struct event *ev)
{
    char local[40], utc[32];
    struct json_object *obj = json_object_new_object();
    put_string(obj, "account", ev->account);
    put_string(obj, "serial", ev->serial);
    put_string(obj, "model", ev->model);
    put_string(obj, "name", ev->name);
    put_string(obj, "base_serial", ev->base_serial);
    put_string(obj, "base_model", ev->base_model);
    put_string(obj, "base_name", ev->base_name);
    json_object_object_add(obj, "unixtime", json_object_new_int64(ev->unixtime));
    put_string(obj, "kind", ev->kind);
    put_string(obj, "text", ev->text);
    put_string(obj, "channel_name", ev->channel_name);
    put_string(obj, "channel_unit", ev->channel_unit);
    json_object_object_add(obj, "utc_offset", json_object_new_int(ev->utc_offset));
    event_local_time(ev, local, sizeof local);
    event_utc_time(ev, utc, sizeof utc);
    put_string(obj, "local_time", local);
    put_string(obj, "utc_time", utc);
    return obj;
}

/* A string member copied, or NULL when absent or null; -1 when present with
 * another type. */
static int get_string(char **out, const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -1;
    *out = xstrdup(json_object_get_string(v));
    return 0;
}

int event_from_json(struct event *out, const struct json_object *obj, struct err *e)
{
    static const struct {
        const char *key;
        size_t offset;
        int required;
    } fields[] = {
        {"account", offsetof(struct event, account), 1},
        {"serial", offsetof(struct event, serial), 1},
        {"model", offsetof(struct event, model), 0},
        {"name", offsetof(struct event, name), 0},
        {"base_serial", offsetof(struct event, base_serial), 0},
        {"base_model", offsetof(struct event, base_model), 0},
        {"base_name", offsetof(struct event, base_name), 0},
        {"kind", offsetof(struct event, kind), 1},
        {"text", offsetof(struct event, text), 1},
        {"channel_name", offsetof(struct event, channel_name), 0},
        {"channel_unit", offsetof(struct event, channel_unit), 0},
    };
    struct json_object *v = NULL;
    memset(out, 0, sizeof *out);
    if (!json_object_is_type(obj, json_type_object))
        return err_set(e, "event is not an object");
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char **slot = (char **)((char *)out + fields[i].offset);
        if (get_string(slot, obj, fields[i].key) < 0) {
            event_clear(out);
            return err_set(e, "event member '%s' is not a string", fields[i].key);
        }
        if (!*slot && fields[i].required) {
            event_clear(out);
            return err_set(e, "event has no '%s'", fields[i].key);
        }
    }
    if (!json_object_object_get_ex(obj, "unixtime", &v) || !json_object_is_type(v, json_type_int)) {
        event_clear(out);
        return err_set(e, "event has no integer 'unixtime'");
    }
    out->unixtime = json_object_get_int64(v);
    if (json_object_object_get_ex(obj, "utc_offset", &v) && json_object_is_type(v, json_type_int))
        out->utc_offset = json_object_get_int(v);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char **slot = (char **)((char *)out + fields[i].offset);
        if (!*slot && (fields[i].offset == offsetof(struct event, model) ||
                       fields[i].offset == offsetof(struct event, name)))
            *slot = xstrdup("");
    }
    return 0;
}
