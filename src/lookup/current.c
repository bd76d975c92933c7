/* `wsrelay current` (lookup.h): the current readings of every device of
 * an account, one Get Current Readings call per account. */
#include "lookup/session.h"
#include "devicelist.h"
#include "run/run.h"
#include "readings_memory.h"
#include "util/duration.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define STALE_UNKNOWN (30 * 60) /* a reading this old is stale when the interval is unknown */
#define STALE_MIN (10 * 60)     /* never stale sooner */

/* Seconds after which a reading of `serial` is stale (lookup.h). */
static long long stale_after(const struct session *s, const char *serial)
{
    struct watch w;
    long long interval = state_watch(s->st, serial, &w) ? watch_interval(&w) : 0;
    long long after = interval ? 2 * interval : STALE_UNKNOWN;
    return after > STALE_MIN ? after : STALE_MIN;
}

/* "12 min ago", "9 d 3 h ago" (duration_format_age), marked stale as
 * lookup.h says. */
static char *age_text(const struct session *s, const struct device_info *d)
{
    long long age = s->o->now > d->unixtime ? s->o->now - d->unixtime : 0;
    char text[32];
    duration_format_age(text, sizeof text, age);
    return d->unixtime
               ? xasprintf("%s ago%s", text, age > stale_after(s, d->serial) ? " (stale)" : "")
               : xstrdup("unknown");
}

static void current_table(struct buf *b, const struct session *s, const struct account_conf *a,
                          const struct device_info *d, size_t n)
{
    size_t chans = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i].n_channels > chans)
            chans = d[i].n_channels;
    size_t cols = 3 + chans + 3, battery = cols - 3, signal = cols - 2, last = cols - 1;
    struct table *t = table_new(cols);
    char **row = xcalloc(cols, sizeof *row);
    buf_printf(b, "account %s, login %s: %zu device%s\n", a->name, a->login_id, n,
               n == 1 ? "" : "s");
    row[0] = xstrdup("SERIAL");
    row[1] = xstrdup("NAME");
    row[2] = xstrdup("MODEL");
    for (size_t c = 0; c < chans; c++)
        row[3 + c] = xasprintf("CH%zu", c + 1);
    row[battery] = xstrdup("BATTERY");
    row[signal] = xstrdup("SIGNAL");
    row[last] = xstrdup("LAST READING");
    table_align_right(t, battery);
    table_align_right(t, signal);
    lookup_add_row(t, row, cols);
    for (size_t i = 0; i < n; i++) {
        row[0] = xstrdup(d[i].serial);
        row[1] = xstrdup(d[i].name);
        row[2] = xstrdup(d[i].model);
        for (size_t c = 0; c < d[i].n_channels; c++)
            row[3 + c] = lookup_with_unit(d[i].channels[c].value, d[i].channels[c].unit);
        row[battery] = d[i].battery ? xasprintf("%d", d[i].battery) : NULL;
        row[signal] = xstrdup(d[i].rssi);
        row[last] = age_text(s, &d[i]);
        lookup_add_row(t, row, cols);
    }
    table_render(b, t);
    free(row);
    table_free(t);
}

static void current_json(struct json_object *arr, const struct session *s,
                         const struct account_conf *a, const struct device_info *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = jsonv_need(json_object_new_object());
        struct json_object *chans = jsonv_need(json_object_new_array());
        char when[40];
        jsonv_put(o, "account", lookup_jstr(a->name));
        jsonv_put(o, "serial", lookup_jstr(d[i].serial));
        jsonv_put(o, "name", lookup_jstr(d[i].name));
        jsonv_put(o, "model", lookup_jstr(d[i].model));
        jsonv_put(o, "base_serial", lookup_jstr(d[i].base_serial));
        jsonv_put(o, "base_name", lookup_jstr(d[i].base_name));
        jsonv_put(o, "group", lookup_jstr(d[i].group_name));
        for (size_t c = 0; c < d[i].n_channels; c++) {
            const struct channel_info *ch = &d[i].channels[c];
            struct json_object *co = jsonv_need(json_object_new_object());
            jsonv_put_int(co, "num", ch->num);
            jsonv_put(co, "name", lookup_jstr(ch->name));
            jsonv_put(co, "value", lookup_jstr(ch->value));
            jsonv_put(co, "unit", lookup_jstr(ch->unit));
            jsonv_append(chans, co);
        }
        jsonv_put(o, "channels", chans);
        jsonv_put(o, "battery",
                  d[i].battery ? jsonv_need(json_object_new_int(d[i].battery)) : NULL);
        jsonv_put(o, "rssi", lookup_jstr(d[i].rssi));
        jsonv_put_int(o, "utc_offset", d[i].utc_offset);
        if (d[i].unixtime) {
            long long age = s->o->now - d[i].unixtime;
            lookup_local_time(when, sizeof when, d[i].unixtime, d[i].utc_offset);
            jsonv_put_int(o, "unixtime", d[i].unixtime);
            jsonv_put(o, "local_time", lookup_jstr(when));
            jsonv_put_int(o, "age", age < 0 ? 0 : age);
            jsonv_put(o, "stale",
                      jsonv_need(json_object_new_boolean(age > stale_after(s, d[i].serial))));
        } else {
            jsonv_put(o, "unixtime", NULL);
            jsonv_put(o, "local_time", NULL);
            jsonv_put(o, "age", NULL);
            jsonv_put(o, "stale", NULL);
        }
        jsonv_append(arr, o);
    }
}

int lookup_current(FILE *out, const struct config *c, const struct lookup_options *o)
{
    struct session s;
    struct buf b;
    struct json_object *arr = jsonv_need(json_object_new_array());
    size_t n = 0;
    int rc = RUN_USAGE;
    buf_init(&b, 0);
    const struct account_conf *list = NULL;
    if (session_open(&s, c, o, "current") < 0) {
        rc = RUN_FAILED;
        goto out;
    }
    if (!(list = session_accounts(&s, &n)))
        goto out;
    rc = RUN_OK;
    for (size_t i = 0; i < n; i++) {
        struct platform_reply r = {0};
        struct platform_query q = {0};
        struct device_info *d = NULL;
        size_t nd = 0;
        struct err e;
        if (!session_may_call(&s, &list[i], PLATFORM_CURRENT, false) ||
            session_call(&s, &list[i], PLATFORM_CURRENT, &q, &r) < 0) {
            rc = RUN_FAILED;
        } else if (devicelist_parse(&d, &nd, r.text, r.text_len, list[i].name, &e) < 0) {
            session_say(&s, "account %s: %s", list[i].name, e.msg);
            rc = RUN_FAILED;
        } else if (o->format == LOOKUP_JSON) {
            current_json(arr, &s, &list[i], d, nd);
        } else {
            if (b.len)
                buf_puts(&b, "\n");
            current_table(&b, &s, &list[i], d, nd);
        }
        device_info_free(d, nd);
        platform_reply_free(&r);
    }
    if (o->format == LOOKUP_JSON)
        lookup_put_json(&b, arr);
    if (lookup_emit(&s, out, &b) != RUN_OK)
        rc = RUN_FAILED;
out:
    session_close(&s);
    json_object_put(arr);
    buf_free(&b);
    return rc;
}
