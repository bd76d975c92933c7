/* Opsgenie's Alert API: one alert per incident, known by its alias
 * (oncall_key). An incident's first notice creates it (so does an
 * escalation, the first this receiver hears of it: Opsgenie takes a
 * second create of an open alias as a repeat of it), its acknowledgement
 * in wsrelay acknowledges it as the one who gave it, its resolution or
 * closing closes it; reminders send nothing, since Opsgenie notifies and
 * escalates by its own policies. An event outside any incident creates
 * an alert of its own that nothing closes.
 *
 * Atlassian sells Opsgenie no more and ends it on 2027-04-05; Jira
 * Service Management's operations take the same requests of the same
 * integrations, so `base_url` points a receiver there without a change
 * here.
 *
 * Opsgenie's rules shape this file: requests go to BASE_URL/v2/alerts
 * (api.opsgenie.com, api.eu.opsgenie.com for an EU account) with the
 * header "Authorization: GenieKey KEY"; an alert's message holds at most
 * 130 characters, its alias 512, description 15,000, entity 512, source
 * and user 100, note 25,000, a detail's key 50 and value 8,000; priority
 * is P1 to P5. Acknowledging and closing name the alert by alias in the
 * path (identifierType=alias). It answers 202 when it took a request (it
 * does the work afterwards); 400 and 422 for a request it will never take
 * and 401 or 403 for a key that is wrong (given up for this receiver,
 * with Opsgenie's words); 429 when the account sends too fast and 5xx
 * when it is in trouble, both tried again at a later run (after
 * Retry-After when it gives one). */
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

#define OPSGENIE_US_API "https://api.opsgenie.com"
#define OPSGENIE_EU_API "https://api.eu.opsgenie.com"
#define OPSGENIE_MESSAGE_MAX 130       /* characters of an alert's message */
#define OPSGENIE_ALIAS_MAX 512         /* characters of its alias */
#define OPSGENIE_DESCRIPTION_MAX 15000 /* characters of its description */
#define OPSGENIE_ENTITY_MAX 512        /* characters of its entity */
#define OPSGENIE_USER_MAX 100          /* characters of the user of an action */
#define OPSGENIE_NOTE_MAX 25000        /* characters of an action's note */
#define OPSGENIE_DETAIL_MAX 8000       /* characters of a detail's value */
#define OPSGENIE_ERROR_MAX 200         /* bytes of Opsgenie's own words in an error */

/* The priority of a severity: critical P1, error P2, warning P3, info P5;
 * any other, or none, P3 (Opsgenie's own default). */
static const char *priority_of(const struct event *ev)
{
    const char *severity = oncall_rule_severity(ev);
    if (!severity)
        return "P3";
    return !strcmp(severity, "critical") ? "P1"
           : !strcmp(severity, "error")  ? "P2"
           : !strcmp(severity, "info")   ? "P5"
                                         : "P3";
}

/* Adds `key`: `text` cut to `max` characters. */
static void put_cut(struct json_object *obj, const char *key, const char *text, size_t max)
{
    char *cut = oncall_cut(text, max);
    json_object_object_add(obj, key, json_object_new_string(cut));
    free(cut);
}

/* The body of the request for `ev` and `action` (not ONCALL_NOTHING): a
 * new object. */
static struct json_object *opsgenie_body(const struct event *ev, enum oncall_action action,
                                         const char *alias)
{
    struct json_object *doc = json_object_new_object();
    if (action == ONCALL_OPEN) {
        struct json_object *details = oncall_details(ev);
        char *source = oncall_source(ev);
        json_object_object_foreach(details, name, value)
        {
            char *cut = oncall_cut(json_object_get_string(value), OPSGENIE_DETAIL_MAX);
            json_object_object_add(details, name, json_object_new_string(cut));
            free(cut);
        }
        char *message = oncall_summary(ev, OPSGENIE_MESSAGE_MAX);
        json_object_object_add(doc, "message", json_object_new_string(message));
        free(message);
        json_object_object_add(doc, "alias", json_object_new_string(alias));
        put_cut(doc, "description", ev->text, OPSGENIE_DESCRIPTION_MAX);
        put_cut(doc, "entity", source, OPSGENIE_ENTITY_MAX);
        json_object_object_add(doc, "source", json_object_new_string("wsrelay"));
        json_object_object_add(doc, "priority", json_object_new_string(priority_of(ev)));
        json_object_object_add(doc, "details", details);
        free(source);
        return doc;
    }
    const char *by = action == ONCALL_ACK ? oncall_incident_text(ev, "acknowledged_by") : NULL;
    const char *note =
        action == ONCALL_ACK ? oncall_incident_text(ev, "acknowledged_note") : ev->text;
    put_cut(doc, "user", by && *by ? by : "wsrelay", OPSGENIE_USER_MAX);
    json_object_object_add(doc, "source", json_object_new_string("wsrelay"));
    if (note && *note)
        put_cut(doc, "note", note, OPSGENIE_NOTE_MAX);
    return doc;
}

/* `text` with every byte but letters, digits and "-._~" as %XX: one
 * segment of a URL's path. A new string. */
static char *path_segment(const char *text)
{
    struct buf b;
    buf_init(&b, 0);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            buf_append(&b, (const char *)p, 1);
        else
            buf_printf(&b, "%%%02X", *p);
    }
    return buf_steal(&b);
}

/* Opsgenie's words about a refused request, from its JSON answer: its
 * message and each of its errors ("Request body is not processable.
 * Please check the errors.: message: Message can not be empty."), on one
 * printable line of at most `size` - 1 bytes; "" when it says none. */
static void refusal_words(char *out, size_t size, const char *body)
{
    struct json_object *doc = body ? json_tokener_parse(body) : NULL, *v = NULL;
    struct buf words;
    buf_init(&words, 0);
    if (json_object_object_get_ex(doc, "message", &v) && json_object_is_type(v, json_type_string))
        buf_puts(&words, json_object_get_string(v));
    if (json_object_object_get_ex(doc, "errors", &v) && json_object_is_type(v, json_type_object)) {
        const char *sep = words.len ? ": " : "";
        json_object_object_foreach(v, name, value)
        {
            buf_printf(&words, "%s%s: %s", sep, name, json_object_get_string(value));
            sep = "; ";
        }
    }
    char *line = utf8_clean_shown(buf_str(&words), words.len, size - 1, UTF8_CONTROLS_NONE);
    snprintf(out, size, "%s", line);
    free(line);
    buf_free(&words);
    json_object_put(doc);
}

static int opsgenie_send(const struct notify_env *env, const struct receiver_conf *r,
                         const struct notify_message *m, struct notify_result *res, struct err *e)
{
    (void)env;
    int rc = -1;
    const struct event *ev = &m->events[0]; /* one a message: opsgenie_fit */
    enum oncall_action action = oncall_action_of(ev);
    const char *base = r->opsgenie.base_url                ? r->opsgenie.base_url
                       : r->opsgenie.region == OPSGENIE_EU ? OPSGENIE_EU_API
                                                           : OPSGENIE_US_API;
    struct http_post_reply reply = {0};
    struct json_object *doc = NULL;
    char *key = oncall_key(ev), *alias = oncall_cut(key, OPSGENIE_ALIAS_MAX);
    char *segment = path_segment(alias), *url = NULL;
    char *auth = xasprintf("GenieKey %s", r->opsgenie.api_key);
    char header_name[] = "Authorization";
    struct header_conf headers[] = {{.name = header_name, .value = auth}};
    if (action == ONCALL_NOTHING) {
        rc = 0; /* a reminder: Opsgenie notifies again by its own policies */
        goto out;
    }
    if (action == ONCALL_OPEN)
        url = xasprintf("%s/v2/alerts", base);
    else
        url = xasprintf("%s/v2/alerts/%s/%s?identifierType=alias", base, segment,
                        action == ONCALL_ACK ? "acknowledge" : "close");
    doc = opsgenie_body(ev, action, alias);
    const char *body = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE);
    if (http_post(&reply, url, headers, 1, "application/json", body, r->timeout, e) < 0)
        goto out;
    http_result(res, &reply, url, headers, 1);
    if (reply.status >= 200 && reply.status <= 299) {
        rc = 0;
        goto out;
    }
    /* 400 and 422: a request Opsgenie will never take; 401 and 403: the
     * key is wrong or may not do this; 404: no alert of that alias (its
     * creation was given up). 408 and 429 pass, and so do Opsgenie's
     * troubles (5xx). */
    res->permanent =
        reply.status >= 400 && reply.status < 500 && reply.status != 408 && reply.status != 429;
    char words[OPSGENIE_ERROR_MAX] = "";
    if (reply.status >= 400 && reply.status < 500)
        refusal_words(words, sizeof words, reply.body);
    char *redacted = http_redact_url(url);
    err_set(e, "POST %s: HTTP %ld%s%s", redacted, reply.status, *words || *res->answer ? ": " : "",
            *words ? words : res->answer);
    free(redacted);
out:
    free(reply.body);
    free(url);
    free(auth);
    free(segment);
    free(alias);
    free(key);
    json_object_put(doc);
    return rc;
}

const struct notifier notifier_opsgenie = {
    .type = RECEIVER_OPSGENIE,
    .name = "opsgenie",
    .pace_ms = 500, /* Opsgenie limits requests a minute per account */
    .fit = oncall_fit,
    .send = opsgenie_send,
};
