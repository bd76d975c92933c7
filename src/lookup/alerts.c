/* `wsrelay alerts SERIAL` (lookup.h): a device's alert log as the
 * platform keeps it, on one of the login ID's alert calls. */
#include "lookup/session.h"
#include "budget.h"
#include "event.h"
#include "run/run.h"
#include "util/jsonv.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Says what the call costs, before it is made. */
static void alert_cost(const struct session *s, const struct account_conf *a)
{
    struct sched_budget b = budget_read(s->st, a->login_id, PLATFORM_ALERT, s->o->now);
    if (b.used >= (size_t)b.limit)
        session_say(s,
                    "--force: the ledger counts %zu of the %d alert calls of login %s this hour; "
                    "calling anyway (the platform may refuse it)",
                    b.used, b.limit, a->login_id);
    else
        session_say(s, "this spends 1 of the %d alert calls of login %s this hour (%zu left)",
                    b.limit, a->login_id, (size_t)b.limit - b.used - 1);
}

/* What the alert log says of its device: its name and model. */
struct log_head {
    char *name, *model; /* "" when not given */
};

static char *member_text(const struct json_object *body, const char *key)
{
    char *s = jsonv_text_clean(jsonv_member(body, key), PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
    return s ? s : xstrdup("");
}

static void alerts_table(struct buf *b, const struct target *t, const struct log_head *h,
                         const struct event_list *l)
{
    struct table *tab = table_new(4);
    char zone[16];
    lookup_device_title(b, t->serial, h->name, h->model);
    buf_printf(b, ", account %s: %zu alert-log entr%s", t->a->name, l->entries,
               l->entries == 1 ? "y" : "ies");
    if (l->n) {
        lookup_offset_name(zone, sizeof zone, l->items[0].utc_offset);
        buf_printf(b, ", times %s", zone);
    }
    buf_puts(b, "\n");
    table_add(tab, (const char *const[]){"TIME", "KIND", "STATE", "TEXT"});
    for (size_t i = l->n; i-- > 0;) {
        const struct event *ev = &l->items[i];
        char when[40];
        /* One line each: an alert text may hold line breaks. */
        char *text =
            utf8_clean_shown(ev->text, strlen(ev->text), PLATFORM_TEXT_MAX, UTF8_CONTROLS_NONE);
        lookup_local_time(when, sizeof when, ev->unixtime, ev->utc_offset);
        table_add(tab, (const char *const[]){when, ev->kind, ev->state, text});
        free(text);
    }
    if (l->n)
        table_render(b, tab);
    table_free(tab);
}

static void alerts_json(struct buf *b, const struct target *t, const struct log_head *h,
                        const struct event_list *l)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    struct json_object *entries = jsonv_need(json_object_new_array());
    jsonv_put(o, "account", lookup_jstr(t->a->name));
    jsonv_put(o, "serial", lookup_jstr(t->serial));
    jsonv_put(o, "name", lookup_jstr(h->name));
    jsonv_put(o, "model", lookup_jstr(h->model));
    jsonv_put(o, "base_serial", lookup_jstr(t->base));
    jsonv_put(o, "utc_offset",
              l->n ? jsonv_need(json_object_new_int(l->items[0].utc_offset)) : NULL);
    for (size_t i = l->n; i-- > 0;) {
        const struct event *ev = &l->items[i];
        struct json_object *eo = jsonv_need(json_object_new_object());
        char when[40];
        lookup_local_time(when, sizeof when, ev->unixtime, ev->utc_offset);
        jsonv_put_int(eo, "unixtime", ev->unixtime);
        jsonv_put(eo, "local_time", lookup_jstr(when));
        jsonv_put(eo, "kind", lookup_jstr(ev->kind));
        jsonv_put(eo, "state", lookup_jstr(ev->state));
        jsonv_put(eo, "value", ev->value ? lookup_jstr(ev->value) : NULL);
        jsonv_put(eo, "limit", ev->limit ? lookup_jstr(ev->limit) : NULL);
        jsonv_put(eo, "text", lookup_jstr(ev->text));
        jsonv_append(entries, eo);
    }
    jsonv_put(o, "entries", entries);
    lookup_put_json(b, o);
    json_object_put(o);
}

int lookup_alerts(FILE *out, const struct config *c, const char *serial,
                  const struct lookup_options *o)
{
    struct session s;
    struct target t = {0};
    struct platform_reply r = {0};
    struct event_list l = {0};
    struct log_head h = {0};
    struct buf b;
    struct err e;
    int rc = RUN_FAILED;
    buf_init(&b, 0);
    if (session_open(&s, c, o, "alerts") < 0)
        goto out;
    if ((rc = session_find(&s, serial, false, &t)) != RUN_OK)
        goto out;
    rc = RUN_FAILED;
    if (!session_may_call(&s, t.a, PLATFORM_ALERT, o->force))
        goto out;
    alert_cost(&s, t.a);
    struct platform_query q = {.serial = t.serial, .base = t.base};
    if (session_call(&s, t.a, PLATFORM_ALERT, &q, &r) < 0)
        goto out;
    if (event_parse_alert_log(&l, r.body, t.a->name, &e) < 0) {
        session_say(&s, "account %s: %s", t.a->name, e.msg);
        goto out;
    }
    h.name = member_text(r.body, "remote-name");
    h.model = member_text(r.body, "remote-model");
    if (o->format == LOOKUP_JSON)
        alerts_json(&b, &t, &h, &l);
    else
        alerts_table(&b, &t, &h, &l);
    rc = lookup_emit(&s, out, &b);
out:
    free(h.name);
    free(h.model);
    event_list_free(&l);
    platform_reply_free(&r);
    target_clear(&t);
    session_close(&s);
    buf_free(&b);
    return rc;
}
