/* What the on-call services (PagerDuty, Opsgenie) share: each keeps one
 * alert per incident, which wsrelay opens, acknowledges and ends by one
 * key, and shows the same fields of the event that opened it. */
#ifndef WSRELAY_NOTIFY_ONCALL_H
#define WSRELAY_NOTIFY_ONCALL_H

#include "event.h"
#include "notify/notify.h"

#include <json-c/json.h>
#include <stddef.h>

/* What a message asks of the service's alert. */
enum oncall_action {
    ONCALL_NOTHING, /* a reminder: the service repeats and escalates by itself */
    ONCALL_OPEN,    /* an incident's first notice, an escalation (the first this receiver
                       hears of it), or an event outside any incident */
    ONCALL_ACK,     /* acknowledged in wsrelay */
    ONCALL_CLOSE,   /* resolved, or closed for being open too long */
};

/* The fit of both receivers: each event is an alert of its own (or a
 * step of one), so one event a message. */
size_t oncall_fit(const struct notify_env *env, const struct receiver_conf *r,
                  const struct notify_message *m);

/* The action of `ev`, from its incident's notice (event.h: `incident`). */
enum oncall_action oncall_action_of(const struct event *ev);

/* The alert's key, the same for every message of one incident and unique
 * among incidents: "wsrelay:KEY:ID" with the '/' of the incident key as
 * ':' ("wsrelay:5214000A:ch1:12"); for an event outside any incident
 * "wsrelay:" and its event id likewise ("wsrelay:5214000A:1795000300:gap").
 * It holds no '/', so it can stand as one segment of a URL's path. A new
 * string the caller frees. */
char *oncall_key(const struct event *ev);

/* The incident's id as its snapshot gives it, or 0 outside any incident. */
unsigned long oncall_incident_id(const struct event *ev);

/* A string member of the incident's snapshot ("acknowledged_by"); NULL
 * when absent, null or not a string. Borrowed from the event. */
const char *oncall_incident_text(const struct event *ev, const char *member);

/* `text` on one line (every control character a space), cut to at most
 * `max` characters (`max` >= 1, characters as the services count them:
 * Unicode code points), the last of them "…" when it was cut, never
 * inside a character. A new string. */
char *oncall_cut(const char *text, size_t max);

/* One line about the event for an alert's title: "DEVICE: TEXT" (the
 * device's name, else its serial; its text on one line), cut to `max`
 * characters with oncall_cut. A new string. */
char *oncall_summary(const struct event *ev, size_t max);

/* Where the alert comes from: "NAME (SERIAL)", or the serial alone for a
 * device without a name. A new string. */
char *oncall_source(const struct event *ev);

/* The severity word of the rule that routed `ev` when it is one of
 * "critical", "error", "warning", "info" (in any case); else NULL. */
const char *oncall_rule_severity(const struct event *ev);

/* The details of the alert, every value a string (Opsgenie takes no
 * other): device, serial, account, kind, channel (its name, else "chN"),
 * value, limit, trend (the sparkline, its direction and span: "▁▂▅█
 * rising, -80.0 to -65.0 over 30 min"), rule, incident (its id) and the
 * time of the event (UTC); a member without a value is left out. A new
 * object. */
struct json_object *oncall_details(const struct event *ev);

#endif
