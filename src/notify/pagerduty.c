/* PagerDuty's Events API v2: one alert per incident, keyed by its
 * dedup_key (oncall_key). An incident's first notice triggers it (so does
 * an escalation, the first this receiver hears of it: a trigger of a key
 * already open only adds to that alert), its acknowledgement in wsrelay
 * acknowledges it, its resolution or closing resolves it; reminders send
 * nothing, since PagerDuty repeats and escalates by its own rules. An
 * event outside any incident (a gap, wsrelay's own reports) triggers an
 * alert of its own that nothing resolves.
 *
 * PagerDuty's rules shape this file: events are POSTed as JSON to
 * BASE_URL/v2/enqueue with the integration's routing key in the body; a
 * summary holds at most 1,024 characters and a dedup_key 255; severity is
 * one of critical, error, warning, info. It answers 202 when it took the
 * event; 400 with {"status", "message", "errors"} for an event it will
 * never take (given up for this receiver, with PagerDuty's words); 429
 * when the integration sends too fast and 5xx when it is in trouble, both
 * tried again at a later run (after Retry-After when it gives one). */
#include "notify/http.h"
#include "notify/notify.h"
#include "notify/oncall.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGERDUTY_SUMMARY_MAX 1024 /* characters of payload.summary */
#define PAGERDUTY_SOURCE_MAX 255   /* characters of payload.source we send */
#define PAGERDUTY_DEDUP_MAX 255    /* characters of dedup_key */
#define PAGERDUTY_ERROR_MAX 200    /* bytes of PagerDuty's own words in an error */

static const char *const severity_words[] = {
    [PAGERDUTY_CRITICAL] = "critical",
    [PAGERDUTY_ERROR] = "error",
    [PAGERDUTY_WARNING] = "warning",
    [PAGERDUTY_INFO] = "info",
};

/* The event to enqueue for `ev`, of `action` (not ONCALL_NOTHING): a new
 * object. */
static struct json_object *pagerduty_event(const struct receiver_conf *r, const struct event *ev,
                                           enum oncall_action action)
{
    static const char *const actions[] = {
        [ONCALL_OPEN] = "trigger", [ONCALL_ACK] = "acknowledge", [ONCALL_CLOSE] = "resolve"};
    struct json_object *doc = json_object_new_object();
    char *key = oncall_key(ev), *dedup = oncall_cut(key, PAGERDUTY_DEDUP_MAX);
    json_object_object_add(doc, "routing_key", json_object_new_string(r->pagerduty.routing_key));
    json_object_object_add(doc, "event_action", json_object_new_string(actions[action]));
    json_object_object_add(doc, "dedup_key", json_object_new_string(dedup));
    if (action == ONCALL_OPEN) {
        struct json_object *payload = json_object_new_object();
        char *summary = oncall_summary(ev, PAGERDUTY_SUMMARY_MAX);
        char *source = oncall_source(ev), *source_cut = oncall_cut(source, PAGERDUTY_SOURCE_MAX);
        const char *severity = oncall_rule_severity(ev);
        char when[32];
        event_utc_time(when, sizeof when, ev);
        json_object_object_add(payload, "summary", json_object_new_string(summary));
        json_object_object_add(payload, "source", json_object_new_string(source_cut));
        json_object_object_add(
            payload, "severity",
            json_object_new_string(severity ? severity : severity_words[r->pagerduty.severity]));
        json_object_object_add(payload, "timestamp", json_object_new_string(when));
        json_object_object_add(payload, "component", json_object_new_string(ev->kind));
        json_object_object_add(payload, "custom_details", oncall_details(ev));
        json_object_object_add(doc, "payload", payload);
        json_object_object_add(doc, "client", json_object_new_string("wsrelay"));
        free(summary);
        free(source);
        free(source_cut);
    }
    free(key);
    free(dedup);
    return doc;
}

/* PagerDuty's words about a refused event, from its JSON answer: its
 * message and errors ("Event object is invalid: 'payload.summary' is
 * missing"), on one printable line of at most `size` - 1 bytes; "" when
 * the answer says none. */
static void refusal_words(char *out, size_t size, const char *body)
{
    struct json_object *doc = body ? json_tokener_parse(body) : NULL, *v = NULL;
    struct buf words;
    buf_init(&words, 0);
    if (json_object_object_get_ex(doc, "message", &v) && json_object_is_type(v, json_type_string))
        buf_puts(&words, json_object_get_string(v));
    if (json_object_object_get_ex(doc, "errors", &v) && json_object_is_type(v, json_type_array))
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            struct json_object *item = json_object_array_get_idx(v, i);
            if (json_object_is_type(item, json_type_string))
                buf_printf(&words, "%s%s", words.len ? (i ? "; " : ": ") : "",
                           json_object_get_string(item));
        }
    char *line = utf8_clean_shown(buf_str(&words), words.len, size - 1, UTF8_CONTROLS_NONE);
    snprintf(out, size, "%s", line);
    free(line);
    buf_free(&words);
    json_object_put(doc);
}

static int pagerduty_send(const struct notify_env *env, const struct receiver_conf *r,
                          const struct notify_message *m, struct notify_result *res, struct err *e)
{
    (void)env;
    int rc = -1;
    const struct event *ev = &m->events[0]; /* one a message: pagerduty_fit */
    enum oncall_action action = oncall_action_of(ev);
    struct http_post_reply reply = {0};
    struct json_object *doc = NULL;
    char *url = xasprintf("%s/v2/enqueue", r->pagerduty.base_url);
    if (action == ONCALL_NOTHING) {
        rc = 0; /* a reminder: PagerDuty pages again by its own rules */
        goto out;
    }
    doc = pagerduty_event(r, ev, action);
    const char *body = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE);
    if (http_post(&reply, url, NULL, 0, "application/json", body, r->timeout, e) < 0)
        goto out;
    http_result(res, &reply, url, NULL, 0);
    if (reply.status >= 200 && reply.status <= 299) {
        rc = 0;
        goto out;
    }
    /* 400: an event PagerDuty will never take; other 4xx (a wrong
     * base_url, a payload too large) will not change by waiting either.
     * 408 and 429 pass, and so do PagerDuty's troubles (5xx). */
    res->permanent =
        reply.status >= 400 && reply.status < 500 && reply.status != 408 && reply.status != 429;
    char words[PAGERDUTY_ERROR_MAX] = "";
    if (reply.status == 400)
        refusal_words(words, sizeof words, reply.body);
    char *redacted = http_redact_url(url);
    if (*words)
        err_set(e, "POST %s: HTTP 400: invalid event: %s", redacted, words);
    else
        err_set(e, "POST %s: HTTP %ld%s%s", redacted, reply.status, *res->answer ? ": " : "",
                res->answer);
    free(redacted);
out:
    free(reply.body);
    free(url);
    json_object_put(doc);
    return rc;
}

const struct notifier notifier_pagerduty = {
    .type = RECEIVER_PAGERDUTY,
    .name = "pagerduty",
    .pace_ms = 500, /* PagerDuty takes about 120 events a minute from one integration */
    .fit = oncall_fit,
    .send = pagerduty_send,
};
