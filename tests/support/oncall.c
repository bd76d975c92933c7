/* A PagerDuty Events API v2 or Opsgenie Alert API server for the tests:
 * each request checked as the service checks it, answered with the
 * service's own bodies, recorded, and its alert kept. */
#include "oncall.h"
#include "upload.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define ONCALL_BODY_MAX (1024u * 1024)

struct scripted {
    int status;
    char *body;
    int retry_after;
};

struct alert {
    char *key;
    char *state;
};

struct oncall {
    enum oncall_service service;
    char *key;
    struct MHD_Daemon *daemon;
    char *url;
    pthread_mutex_t lock; /* guards everything below */
    struct oncall_request *reqs;
    size_t n, cap;
    struct scripted *script;
    size_t script_n, script_next, script_cap;
    struct alert *alerts;
    size_t n_alerts, alerts_cap;
    unsigned long requests; /* for Opsgenie's requestId */
};

/* Characters (code points) of UTF-8 `s`. */
static size_t chars_of(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The string member `name` of `obj`: NULL when absent or not a string. */
static const char *text_of(struct json_object *obj, const char *name)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* The alert of `key`; NULL. Called locked. */
static struct alert *alert_find(struct oncall *o, const char *key)
{
    for (size_t i = 0; key && i < o->n_alerts; i++)
        if (!strcmp(o->alerts[i].key, key))
            return &o->alerts[i];
    return NULL;
}

/* Sets the state of the alert of `key`, adding it when `create`. Called
 * locked. */
static void alert_set(struct oncall *o, const char *key, const char *state, bool create)
{
    struct alert *a = alert_find(o, key);
    if (!a && !create)
        return;
    if (!a) {
        if (o->n_alerts == o->alerts_cap) {
            o->alerts_cap = o->alerts_cap ? o->alerts_cap * 2 : 8;
            o->alerts = xreallocarray(o->alerts, o->alerts_cap, sizeof *o->alerts);
        }
        a = &o->alerts[o->n_alerts++];
        *a = (struct alert){xstrdup(key), NULL};
    }
    free(a->state);
    a->state = xstrdup(state);
}

/* ---- PagerDuty ---- */

static const char *const pd_severities[] = {"critical", "warning", "error", "info"};

/* Whether `s` is an ISO 8601 time as PagerDuty takes it:
 * YYYY-MM-DDTHH:MM:SS, optional fraction, then Z or +hh:mm. */
static bool iso8601(const char *s)
{
    const char *shape = "dddd-dd-ddTdd:dd:dd";
    for (size_t i = 0; shape[i]; i++, s++)
        if (shape[i] == 'd' ? !(*s >= '0' && *s <= '9') : *s != shape[i])
            return false;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            ;
    if (*s == 'Z')
        return s[1] == '\0';
    return (*s == '+' || *s == '-') && strlen(s) == 6 && s[3] == ':';
}

/* Adds PagerDuty's words for a field that is missing or too long. */
static void pd_field(struct json_object *errors, struct json_object *obj, const char *name,
                     const char *shown, size_t max, bool required)
{
    const char *v = text_of(obj, name);
    char *msg = NULL;
    if ((!v || !*v) && required)
        msg = xasprintf("'%s' is missing or blank", shown);
    else if (v && max && chars_of(v) > max)
        msg = xasprintf("'%s' is too long (must be at most %zu characters)", shown, max);
    if (msg)
        json_object_array_add(errors, json_object_new_string(msg));
    free(msg);
}

/* Checks and keeps one event; the answer's status and body. Locked. */
static int pd_answer(struct oncall *o, const char *method, const char *path, const char *body,
                     char **answer)
{
    if (strcmp(method, "POST") || strcmp(path, "/v2/enqueue")) {
        *answer = xstrdup("{\"status\":\"not found\",\"message\":\"Not Found\"}");
        return 404;
    }
    struct json_object *doc = json_tokener_parse(body);
    struct json_object *errors = json_object_new_array(), *payload = NULL;
    int status = 400;
    if (!doc || !json_object_is_type(doc, json_type_object)) {
        json_object_array_add(errors, json_object_new_string("Event object is not valid JSON"));
        goto out;
    }
    const char *rk = text_of(doc, "routing_key"), *action = text_of(doc, "event_action");
    const char *dedup = text_of(doc, "dedup_key");
    if (!rk || !*rk)
        json_object_array_add(errors, json_object_new_string("'routing_key' is missing or blank"));
    else if (strlen(rk) != 32)
        json_object_array_add(errors,
                              json_object_new_string("Length of 'routing_key' is "
                                                     "incorrect (should be 32 characters)"));
    else if (strcmp(rk, o->key))
        json_object_array_add(errors, json_object_new_string("Invalid routing key"));
    bool trigger = action && !strcmp(action, "trigger");
    if (!action || !*action)
        json_object_array_add(errors, json_object_new_string("'event_action' is missing or blank"));
    else if (!trigger && strcmp(action, "acknowledge") && strcmp(action, "resolve"))
        json_object_array_add(
            errors, json_object_new_string("'event_action' is invalid (must be one of the "
                                           "following: 'trigger', 'acknowledge' or 'resolve')"));
    pd_field(errors, doc, "dedup_key", "dedup_key", 255, action && !trigger);
    if (trigger) {
        if (!json_object_object_get_ex(doc, "payload", &payload) ||
            !json_object_is_type(payload, json_type_object)) {
            json_object_array_add(errors, json_object_new_string("'payload' is missing or blank"));
        } else {
            pd_field(errors, payload, "summary", "payload.summary", 1024, true);
            pd_field(errors, payload, "source", "payload.source", 0, true);
            const char *sev = text_of(payload, "severity"), *ts = text_of(payload, "timestamp");
            bool known = false;
            for (size_t i = 0; sev && i < 4; i++)
                known = known || !strcmp(sev, pd_severities[i]);
            if (!known)
                json_object_array_add(
                    errors, json_object_new_string("'payload.severity' is invalid (must be one of "
                                                   "the following: 'critical', 'warning', 'error' "
                                                   "or 'info')"));
            if (json_object_object_get_ex(payload, "timestamp", NULL) && (!ts || !iso8601(ts)))
                json_object_array_add(
                    errors, json_object_new_string("'payload.timestamp' is invalid (must be a "
                                                   "valid ISO 8601 timestamp)"));
            struct json_object *cd = NULL;
            if (json_object_object_get_ex(payload, "custom_details", &cd) && cd &&
                !json_object_is_type(cd, json_type_object))
                json_object_array_add(
                    errors, json_object_new_string("'payload.custom_details' must be an object"));
        }
    }
    if (json_object_array_length(errors) == 0) {
        char generated[40];
        snprintf(generated, sizeof generated, "generated%lu", o->requests);
        const char *key = dedup ? dedup : generated;
        struct alert *a = alert_find(o, key);
        if (trigger && (!a || !strcmp(a->state, "resolved")))
            alert_set(o, key, "triggered", true);
        else if (!strcmp(action, "acknowledge") && a && !strcmp(a->state, "triggered"))
            alert_set(o, key, "acknowledged", false);
        else if (!strcmp(action, "resolve") && a)
            alert_set(o, key, "resolved", false);
        struct json_object *ok = json_object_new_object();
        json_object_object_add(ok, "status", json_object_new_string("success"));
        json_object_object_add(ok, "message", json_object_new_string("Event processed"));
        json_object_object_add(ok, "dedup_key", json_object_new_string(key));
        *answer = xstrdup(json_object_to_json_string_ext(ok, JSON_C_TO_STRING_PLAIN));
        json_object_put(ok);
        status = 202;
    }
out:
    if (status == 400) {
        struct json_object *bad = json_object_new_object();
        json_object_object_add(bad, "status", json_object_new_string("invalid event"));
        json_object_object_add(bad, "message", json_object_new_string("Event object is invalid"));
        json_object_object_add(bad, "errors", json_object_get(errors));
        *answer = xstrdup(json_object_to_json_string_ext(bad, JSON_C_TO_STRING_PLAIN));
        json_object_put(bad);
    }
    json_object_put(errors);
    json_object_put(doc);
    return status;
}

/* ---- Opsgenie ---- */

/* Adds Opsgenie's words for a field that is missing or too long. */
static void og_field(struct json_object *errors, struct json_object *obj, const char *name,
                     const char *shown, size_t max, bool required)
{
    struct json_object *v = NULL;
    bool there = json_object_object_get_ex(obj, name, &v) && v;
    char *msg = NULL;
    if (there && !json_object_is_type(v, json_type_string))
        msg = xasprintf("%s should be a string.", shown);
    else if (required && (!there || !*json_object_get_string(v)))
        msg = xasprintf("%s can not be empty.", shown);
    else if (there && chars_of(json_object_get_string(v)) > max)
        msg = xasprintf("%s can not be longer than %zu characters.", shown, max);
    if (msg)
        json_object_object_add(errors, name, json_object_new_string(msg));
    free(msg);
}

/* Opsgenie's answer: `message` (with `errors` when not NULL), or its
 * result, with the time taken and a request id. */
static char *og_body(struct oncall *o, const char *result, const char *message,
                     struct json_object *errors)
{
    struct json_object *b = json_object_new_object();
    char id[48];
    snprintf(id, sizeof id, "6b4f2d1a-0000-4000-8000-%012lu", o->requests);
    if (result)
        json_object_object_add(b, "result", json_object_new_string(result));
    if (message)
        json_object_object_add(b, "message", json_object_new_string(message));
    if (errors)
        json_object_object_add(b, "errors", json_object_get(errors));
    json_object_object_add(b, "took", json_object_new_double(0.012));
    json_object_object_add(b, "requestId", json_object_new_string(id));
    char *text = xstrdup(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN));
    json_object_put(b);
    return text;
}

/* Checks and keeps one request; the answer's status and body. Locked. */
static int og_answer(struct oncall *o, const char *method, const char *path, const char *idtype,
                     const char *auth, const char *body, char **answer)
{
    static const char prefix[] = "/v2/alerts";
    char *want = xasprintf("GenieKey %s", o->key);
    bool authorized = auth && !strcmp(auth, want);
    free(want);
    if (!authorized) {
        *answer = og_body(o, NULL, "Could not authenticate", NULL);
        return 401;
    }
    const char *rest = strncmp(path, prefix, sizeof prefix - 1) ? NULL : path + sizeof prefix - 1;
    const char *verb = rest ? strrchr(rest, '/') : NULL;
    bool create = rest && !*rest;
    bool act = rest && *rest == '/' && verb && verb > rest &&
               (!strcmp(verb, "/acknowledge") || !strcmp(verb, "/close"));
    if (strcmp(method, "POST") || (!create && !act)) {
        *answer = og_body(o, NULL, "Resource not found", NULL);
        return 404;
    }
    struct json_object *doc = json_tokener_parse(body);
    struct json_object *errors = json_object_new_object();
    int status = 422;
    if (!doc || !json_object_is_type(doc, json_type_object)) {
        json_object_put(doc);
        json_object_put(errors);
        *answer = og_body(o, NULL, "Could not parse request body", NULL);
        return 400;
    }
    if (create) {
        og_field(errors, doc, "message", "Message", 130, true);
        og_field(errors, doc, "alias", "Alias", 512, false);
        og_field(errors, doc, "description", "Description", 15000, false);
        og_field(errors, doc, "entity", "Entity", 512, false);
        og_field(errors, doc, "source", "Source", 100, false);
        const char *p = text_of(doc, "priority");
        if (json_object_object_get_ex(doc, "priority", NULL) &&
            !(p && strlen(p) == 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '5'))
            json_object_object_add(errors, "priority",
                                   json_object_new_string("Priority should be one of [P1, P2, "
                                                          "P3, P4, P5]."));
        struct json_object *details = NULL;
        if (json_object_object_get_ex(doc, "details", &details)) {
            bool strings = json_object_is_type(details, json_type_object);
            if (strings) {
                json_object_object_foreach(details, k, v)
                {
                    strings = strings && chars_of(k) <= 50 && v &&
                              json_object_is_type(v, json_type_string) &&
                              chars_of(json_object_get_string(v)) <= 8000;
                }
            }
            if (!strings)
                json_object_object_add(errors, "details",
                                       json_object_new_string("Details should be a map of "
                                                              "strings, keys of at most 50 and "
                                                              "values of at most 8000 "
                                                              "characters."));
        }
    } else {
        if (idtype && strcmp(idtype, "id") && strcmp(idtype, "tiny") && strcmp(idtype, "alias"))
            json_object_object_add(errors, "identifierType",
                                   json_object_new_string("Identifier type should be one of "
                                                          "[id, tiny, alias]."));
        og_field(errors, doc, "user", "User", 100, false);
        og_field(errors, doc, "source", "Source", 100, false);
        og_field(errors, doc, "note", "Note", 25000, false);
    }
    if (json_object_object_length(errors) > 0) {
        *answer =
            og_body(o, NULL, "Request body is not processable. Please check the errors.", errors);
    } else {
        status = 202;
        if (create) {
            const char *alias = text_of(doc, "alias");
            struct alert *a = alert_find(o, alias);
            if (alias && (!a || !strcmp(a->state, "closed")))
                alert_set(o, alias, "open", true);
        } else if (idtype && !strcmp(idtype, "alias")) {
            /* Done afterwards, as Opsgenie does: an alias without an alert
             * is taken (202) and fails in the request's status only. */
            char *alias = xstrndup(rest + 1, (size_t)(verb - rest - 1));
            struct alert *a = alert_find(o, alias);
            if (a && !strcmp(verb, "/acknowledge") && !strcmp(a->state, "open"))
                alert_set(o, alias, "acknowledged", false);
            else if (a && !strcmp(verb, "/close"))
                alert_set(o, alias, "closed", false);
            free(alias);
        }
        *answer = og_body(o, "Request will be processed", NULL, NULL);
    }
    json_object_put(errors);
    json_object_put(doc);
    return status;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    struct oncall *o = cls;
    struct upload *up = upload_feed(con_cls, upload_data, upload_data_size, ONCALL_BODY_MAX);
    if (!up)
        return MHD_YES;
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *idtype = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "identifierType");
    const char *body = buf_str(&up->body);
    struct scripted reply = {0};
    char *answer = NULL;
    pthread_mutex_lock(&o->lock);
    o->requests++;
    if (o->script_next < o->script_n) {
        reply = o->script[o->script_next];
        o->script[o->script_next++].body = NULL; /* handed over */
        answer = reply.body ? reply.body : xstrdup("{}");
    } else {
        reply.status = o->service == ONCALL_PAGERDUTY
                           ? pd_answer(o, method, url, body, &answer)
                           : og_answer(o, method, url, idtype, auth, body, &answer);
    }
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 16;
        o->reqs = xreallocarray(o->reqs, o->cap, sizeof *o->reqs);
    }
    o->reqs[o->n++] = (struct oncall_request){
        .method = xstrdup(method),
        .path = xstrdup(url),
        .query = xstrdup_or_null(idtype),
        .authorization = xstrdup_or_null(auth),
        .body = xstrdup(body),
        .status = reply.status,
        .answer = xstrdup(answer),
    };
    pthread_mutex_unlock(&o->lock);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(answer), answer, MHD_RESPMEM_MUST_COPY);
    free(answer);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (reply.retry_after > 0) {
        char seconds[16];
        snprintf(seconds, sizeof seconds, "%d", reply.retry_after);
        MHD_add_response_header(resp, "Retry-After", seconds);
    }
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)reply.status, resp);
    MHD_destroy_response(resp);
    return ok;
}

struct oncall *oncall_start(enum oncall_service service, const char *key)
{
    struct oncall *o = xcalloc(1, sizeof *o);
    pthread_mutex_init(&o->lock, NULL);
    o->service = service;
    o->key = xstrdup(key);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    o->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
                                 on_request, o, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, upload_completed, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!o->daemon) {
        oncall_stop(o);
        cr_assert_fail("oncall: cannot listen on 127.0.0.1");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(o->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port) {
        oncall_stop(o);
        cr_assert_fail("oncall: no port bound");
    }
    o->url = xasprintf("http://127.0.0.1:%u", (unsigned)info->port);
    return o;
}

const char *oncall_url(const struct oncall *o)
{
    return o->url;
}

void oncall_push_reply(struct oncall *o, int status, const char *body, int retry_after)
{
    pthread_mutex_lock(&o->lock);
    if (o->script_n == o->script_cap) {
        o->script_cap = o->script_cap ? o->script_cap * 2 : 8;
        o->script = xreallocarray(o->script, o->script_cap, sizeof *o->script);
    }
    o->script[o->script_n++] = (struct scripted){status, xstrdup_or_null(body), retry_after};
    pthread_mutex_unlock(&o->lock);
}

size_t oncall_count(struct oncall *o)
{
    pthread_mutex_lock(&o->lock);
    size_t n = o->n;
    pthread_mutex_unlock(&o->lock);
    return n;
}

struct oncall_request *oncall_request(struct oncall *o, size_t i)
{
    struct oncall_request *copy = NULL;
    pthread_mutex_lock(&o->lock);
    if (i < o->n) {
        const struct oncall_request *r = &o->reqs[i];
        copy = xcalloc(1, sizeof *copy);
        *copy = (struct oncall_request){
            .method = xstrdup(r->method),
            .path = xstrdup(r->path),
            .query = xstrdup_or_null(r->query),
            .authorization = xstrdup_or_null(r->authorization),
            .body = xstrdup(r->body),
            .status = r->status,
            .answer = xstrdup(r->answer),
        };
    }
    pthread_mutex_unlock(&o->lock);
    return copy;
}

static void request_clear(struct oncall_request *r)
{
    free(r->method);
    free(r->path);
    free(r->query);
    free(r->authorization);
    free(r->body);
    free(r->answer);
}

void oncall_request_free(struct oncall_request *r)
{
    if (!r)
        return;
    request_clear(r);
    free(r);
}

char *oncall_alert_state(struct oncall *o, const char *key)
{
    pthread_mutex_lock(&o->lock);
    struct alert *a = alert_find(o, key);
    char *state = a ? xstrdup(a->state) : NULL;
    pthread_mutex_unlock(&o->lock);
    return state;
}

size_t oncall_alerts(struct oncall *o)
{
    pthread_mutex_lock(&o->lock);
    size_t n = o->n_alerts;
    pthread_mutex_unlock(&o->lock);
    return n;
}

void oncall_stop(struct oncall *o)
{
    if (!o)
        return;
    if (o->daemon)
        MHD_stop_daemon(o->daemon);
    for (size_t i = 0; i < o->n; i++)
        request_clear(&o->reqs[i]);
    free(o->reqs);
    for (size_t i = o->script_next; i < o->script_n; i++)
        free(o->script[i].body);
    free(o->script);
    for (size_t i = 0; i < o->n_alerts; i++) {
        free(o->alerts[i].key);
        free(o->alerts[i].state);
    }
    free(o->alerts);
    free(o->url);
    free(o->key);
    pthread_mutex_destroy(&o->lock);
    free(o);
}
