/* The table of transports, the one entry point that dispatches to them,
 * and the template context every transport renders. */
#include "notify/notify.h"

#include <stdint.h>
#include <time.h>

static const struct notifier *const notifiers[] = {
    &notifier_webhook,
    &notifier_file,
};

static const struct notifier *notify_find(enum receiver_type type)
{
    for (size_t i = 0; i < sizeof notifiers / sizeof notifiers[0]; i++)
        if (notifiers[i]->type == type)
            return notifiers[i];
    return NULL;
}

const char *notify_type_name(enum receiver_type type)
{
    const struct notifier *n = notify_find(type);
    return n ? n->name : "unknown";
}

unsigned notify_pace_ms(enum receiver_type type)
{
    const struct notifier *n = notify_find(type);
    return n ? n->pace_ms : 0;
}

int notify_send(const struct notify_env *env, const struct receiver_conf *r,
                const struct notify_message *m, struct notify_result *res, struct err *e)
{
    const struct notifier *nt = notify_find(r->type);
    *res = (struct notify_result){0};
    if (!nt) {
        res->permanent = true;
        return err_set(e, "receiver '%s': no transport for its type", r->name);
    }
    if (nt->send(env, r, m, res, e) < 0)
        return err_prefix(e, "receiver '%s' (%s)", r->name, nt->name);
    return 0;
}

struct json_object *notify_context(const char *receiver, const struct notify_message *m)
{
    char now[32];
    time_t t = (time_t)m->now;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    struct json_object *ctx = json_object_new_object();
    struct json_object *list = json_object_new_array();
    json_object_object_add(ctx, "receiver", json_object_new_string(receiver));
    json_object_object_add(ctx, "count", json_object_new_int64((int64_t)m->n));
    for (size_t i = 0; i < m->n; i++)
        json_object_array_add(list, event_to_json(&m->events[i]));
    json_object_object_add(ctx, "events", list);
    json_object_object_add(ctx, "now_utc", json_object_new_string(now));
    json_object_object_add(ctx, "test", json_object_new_boolean(m->test));
    return ctx;
}
