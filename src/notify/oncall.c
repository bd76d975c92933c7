/* The key, the words and the details that the PagerDuty and Opsgenie
 * receivers both give an incident's alert. */
#include "notify/oncall.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The snapshot member `member` of the event's incident; NULL. */
static struct json_object *snapshot_member(const struct event *ev, const char *member)
{
    struct json_object *v = NULL;
    if (!ev->incident || !json_object_object_get_ex(ev->incident, member, &v))
        return NULL;
    return v;
}

const char *oncall_incident_text(const struct event *ev, const char *member)
{
    struct json_object *v = snapshot_member(ev, member);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

unsigned long oncall_incident_id(const struct event *ev)
{
    struct json_object *v = snapshot_member(ev, "id");
    return v ? strtoul(json_object_get_string(v), NULL, 10) : 0;
}

enum oncall_action oncall_action_of(const struct event *ev)
{
    static const struct {
        const char *notice;
        enum oncall_action action;
    } notices[] = {
        {"opened", ONCALL_OPEN},      {"escalation", ONCALL_OPEN}, {"reminder", ONCALL_NOTHING},
        {"acknowledged", ONCALL_ACK}, {"resolved", ONCALL_CLOSE},  {"closed", ONCALL_CLOSE},
    };
    const char *notice = oncall_incident_text(ev, "notice");
    if (!ev->incident)
        return ONCALL_OPEN;
    for (size_t i = 0; notice && i < sizeof notices / sizeof notices[0]; i++)
        if (!strcmp(notice, notices[i].notice))
            return notices[i].action;
    return ONCALL_OPEN; /* a notice this build does not know: better an alert too many */
}

char *oncall_key(const struct event *ev)
{
    const char *key = oncall_incident_text(ev, "key");
    char *id = NULL;
    if (ev->incident && key)
        id = xasprintf("wsrelay:%s:%lu", key, oncall_incident_id(ev));
    else {
        char *event = event_id(ev);
        id = xasprintf("wsrelay:%s", event);
        free(event);
    }
    for (char *p = id; *p; p++)
        if (*p == '/')
            *p = ':';
    return id;
}

char *oncall_cut(const char *text, size_t max)
{
    /* each byte that is not UTF-8 may become U+FFFD, of three */
    char *line = utf8_clean(text, strlen(text), 3 * strlen(text) + 1, UTF8_CONTROLS_NONE);
    size_t len = strlen(line), at = 0, chars = 0, keep = 0;
    uint32_t cp;
    while (at < len) {
        if (chars == max - 1)
            keep = at; /* where "…" goes if the text is longer than max */
        size_t step = utf8_decode(&cp, line + at, len - at);
        at += step ? step : 1;
        chars++;
    }
    if (chars <= max)
        return line;
    char *cut = xasprintf("%.*s…", (int)keep, line);
    free(line);
    return cut;
}

/* The device's name, else its serial. */
static const char *device_of(const struct event *ev)
{
    return ev->name && *ev->name ? ev->name : ev->serial;
}

char *oncall_summary(const struct event *ev, size_t max)
{
    char *whole = xasprintf("%s: %s", device_of(ev), ev->text);
    char *cut = oncall_cut(whole, max);
    free(whole);
    return cut;
}

char *oncall_source(const struct event *ev)
{
    if (ev->name && *ev->name)
        return xasprintf("%s (%s)", ev->name, ev->serial);
    return xstrdup(ev->serial);
}

const char *oncall_rule_severity(const struct event *ev)
{
    static const char *const words[] = {"critical", "error", "warning", "info"};
    for (size_t i = 0; ev->severity && i < sizeof words / sizeof words[0]; i++)
        if (!strcasecmp(ev->severity, words[i]))
            return words[i];
    return NULL;
}

/* Adds `key`: `value` to `details` when `value` is a string that is not
 * empty. */
static void put_text(struct json_object *details, const char *key, const char *value)
{
    if (value && *value)
        json_object_object_add(details, key, json_object_new_string(value));
}

/* A member of the trend's summary as text; "" when absent. */
static const char *trend_text(struct json_object *trend, const char *member)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(trend, member, &v) || !v)
        return "";
    return json_object_get_string(v);
}

struct json_object *oncall_details(const struct event *ev)
{
    struct json_object *details = json_object_new_object();
    struct json_object *doc = event_to_json(ev), *trend = NULL;
    char when[32], *channel = NULL;
    put_text(details, "device", ev->name);
    put_text(details, "serial", ev->serial);
    put_text(details, "account", ev->account);
    put_text(details, "kind", ev->kind);
    if (event_channel(ev) > 0)
        channel = ev->channel_name && *ev->channel_name ? xstrdup(ev->channel_name)
                                                        : xasprintf("ch%d", event_channel(ev));
    put_text(details, "channel", channel);
    put_text(details, "value", ev->value);
    put_text(details, "limit", ev->limit);
    if (json_object_object_get_ex(doc, "trend", &trend) && trend &&
        *trend_text(trend, "sparkline")) {
        char *text = xasprintf("%s %s, %s to %s over %s", trend_text(trend, "sparkline"),
                               trend_text(trend, "direction"), trend_text(trend, "first"),
                               trend_text(trend, "last"), trend_text(trend, "span"));
        put_text(details, "trend", text);
        free(text);
    }
    put_text(details, "rule", ev->rule);
    if (ev->incident) {
        char id[24];
        snprintf(id, sizeof id, "%lu", oncall_incident_id(ev));
        put_text(details, "incident", id);
    }
    event_utc_time(when, sizeof when, ev);
    put_text(details, "time", when);
    free(channel);
    json_object_put(doc);
    return details;
}

size_t oncall_fit(const struct notify_env *env, const struct receiver_conf *r,
                  const struct notify_message *m)
{
    (void)env;
    (void)r;
    (void)m;
    return 1;
}
