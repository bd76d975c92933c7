/* Pushover: a notification to a user's (or a group's) phones through the
 * Messages API, POST /1/messages.json with a form (token, user, title,
 * message, priority); the text from pushover.txt, its first line the
 * title (at most 250 characters), the rest the message (at most 1,024;
 * a message is fitted to that, and cut only when one event is longer).
 *
 * An incident's opened notice is an emergency (priority 2): the phones
 * repeat it every `retry` seconds for `expire` seconds until someone
 * acknowledges it there. Pushover answers with a receipt, kept with the
 * incident ({"receipt": "…"} in res->refs), and the emergency carries the
 * tag "wsrelay-ID-KEY" (KEY's '/' as '-'). The incident's other notices
 * are normal (priority 0); its acknowledgement, resolution and closing
 * also cancel the emergency by its tag (POST
 * /1/receipts/cancel_by_tag/TAG.json), so that the phones stop. An alarm
 * outside an incident is high priority (1), anything else normal. One
 * message is one incident (pushover_fit).
 *
 * collect asks for each open incident's receipt (GET
 * /1/receipts/RECEIPT.json?token=…), all within r->timeout: one with
 * "acknowledged": 1 acknowledges the incident as the device it was
 * acknowledged on (acknowledged_by_device), or "Pushover user" when
 * Pushover names none; never as the user key it gives in acknowledged_by,
 * which is a secret.
 *
 * Success is 200 with {"status": 1, "request": …}; a 4xx with
 * {"status": 0, "errors": […]} (a wrong token or user key, a field out of
 * bounds) is given up for this receiver only, with the errors reported;
 * 429 (the application is over its monthly limit) and 5xx are retried. */
#include "notify/chat.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PUSHOVER_MESSAGE_MAX 1024 /* characters */
#define PUSHOVER_TITLE_MAX 250    /* characters */
#define PUSHOVER_MAX_EVENTS 10
#define PUSHOVER_DEVICE_MAX 64 /* bytes of a device name taken as who acknowledged */

static size_t pushover_fit(const struct notify_env *env, const struct receiver_conf *r,
                           const struct notify_message *m)
{
    /* An incident's message goes alone (its receipt is its own); the
     * events without one go together, up to the first that has one. */
    size_t plain = 0;
    while (plain < m->n && !chat_incident(&m->events[plain], NULL, NULL))
        plain++;
    if (plain == 0)
        return 1;
    return chat_fit_text(env, r, r->pushover.template, "pushover.txt", m, plain,
                         PUSHOVER_MESSAGE_MAX);
}

/* The notice of the incident `ev` is about ("opened", ...), or NULL. */
static const char *notice_of(const struct event *ev)
{
    struct json_object *v;
    const struct json_object *inc = chat_incident(ev, NULL, NULL);
    return inc && json_object_object_get_ex(inc, "notice", &v) ? json_object_get_string(v) : NULL;
}

/* "wsrelay-ID-KEY" with every character but letters and digits of KEY as
 * '-': the tag of an incident's emergency. */
static char *incident_tag(const struct event *ev)
{
    unsigned long id = 0;
    const char *key = NULL;
    if (!chat_incident(ev, &id, &key))
        return NULL;
    char *tag = xasprintf("wsrelay-%lu-%s", id, key);
    for (char *p = tag; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '-';
    return tag;
}

/* The API's URL of `path` (which starts with '/'). */
static char *api_url(const struct receiver_conf *r, const char *path)
{
    const char *base = r->pushover.base_url;
    int len = (int)strlen(base);
    while (len > 0 && base[len - 1] == '/')
        len--;
    return xasprintf("%.*s%s", len, base, path);
}

/* Pushover's answer: {"status": 1, ...}; *doc (a new reference) when it is
 * JSON. */
static bool accepted(long status, const char *body, struct json_object **doc)
{
    struct json_object *v;
    *doc = body ? json_tokener_parse(body) : NULL;
    return status == 200 && *doc && json_object_is_type(*doc, json_type_object) &&
           json_object_object_get_ex(*doc, "status", &v) && json_object_get_int(v) == 1;
}

/* Cancels the emergency of the incident `ev` is about, by its tag; a
 * failure is logged only (the emergency ends by itself at expire). */
static void cancel_emergency(const struct receiver_conf *r, const struct event *ev)
{
    struct http_post_reply reply = {0};
    struct err e;
    struct buf form;
    char *tag = incident_tag(ev);
    char *path = xasprintf("/1/receipts/cancel_by_tag/%s.json", tag);
    char *url = api_url(r, path);
    buf_init(&form, 0);
    chat_form_add(&form, "token", r->pushover.token);
    if (http_post(&reply, url, NULL, 0, "application/x-www-form-urlencoded", buf_str(&form),
                  r->timeout, &e) < 0)
        log_warn("receiver %s: cancelling the emergency of %s: %s (it stops by itself at "
                 "expire)",
                 r->name, tag, e.msg);
    else if (reply.status != 200)
        log_warn("receiver %s: cancelling the emergency of %s: HTTP %ld (it stops by itself at "
                 "expire)",
                 r->name, tag, reply.status);
    free(reply.body);
    buf_free(&form);
    free(url);
    free(path);
    free(tag);
}

static int pushover_send(const struct notify_env *env, const struct receiver_conf *r,
                         const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    struct http_post_reply reply = {0};
    struct json_object *doc = NULL, *v;
    struct buf text, form;
    char *title = NULL, *message = NULL, *url = api_url(r, "/1/messages.json"), *tag = NULL;
    buf_init(&text, 4 * 1024 * 1024);
    buf_init(&form, 0);
    if (chat_render_text(&text, env, r, r->pushover.template, "pushover.txt", m, m->n, res, e) < 0)
        goto out;
    /* The first line is the title, the rest the message (the title
     * again when there is no rest: Pushover needs a message). */
    const char *all = buf_str(&text), *nl = strchr(all, '\n');
    char *first = xstrndup(all, nl ? (size_t)(nl - all) : strlen(all));
    const char *rest = nl ? nl + 1 : "";
    rest += strspn(rest, "\n");
    title = chat_cut(first, PUSHOVER_TITLE_MAX);
    message = chat_cut(*rest ? rest : first, PUSHOVER_MESSAGE_MAX);
    free(first);
    const struct event *ev = &m->events[0];
    const char *notice = notice_of(ev);
    bool emergency = notice && strcmp(notice, "opened") == 0 && !m->test;
    int priority = emergency ? 2 : !notice && notify_rank_of(ev) == NOTIFY_RANK_ALARM ? 1 : 0;
    char number[24];
    chat_form_add(&form, "token", r->pushover.token);
    chat_form_add(&form, "user", r->pushover.user);
    chat_form_add(&form, "title", title);
    chat_form_add(&form, "message", message);
    snprintf(number, sizeof number, "%d", priority);
    chat_form_add(&form, "priority", number);
    if (emergency) {
        snprintf(number, sizeof number, "%ld", r->pushover.retry);
        chat_form_add(&form, "retry", number);
        snprintf(number, sizeof number, "%ld", r->pushover.expire);
        chat_form_add(&form, "expire", number);
        tag = incident_tag(ev);
        chat_form_add(&form, "tags", tag);
    }
    snprintf(number, sizeof number, "%lld", ev->unixtime);
    chat_form_add(&form, "timestamp", number);
    if (http_post(&reply, url, NULL, 0, "application/x-www-form-urlencoded", buf_str(&form),
                  r->timeout, e) < 0)
        goto out;
    http_result(res, &reply, url, NULL, 0);
    if (!accepted(reply.status, reply.body, &doc)) {
        res->permanent = reply.status >= 400 && reply.status < 500 && reply.status != 429;
        char *shown = http_redact_url(url);
        err_set(e, "POST %s: HTTP %ld%s%s", shown, reply.status, *res->answer ? ": " : "",
                res->answer);
        free(shown);
        goto out;
    }
    rc = 0;
    if (emergency && json_object_object_get_ex(doc, "receipt", &v) &&
        json_object_is_type(v, json_type_string)) {
        res->refs = json_object_new_object();
        json_object_object_add(res->refs, "receipt",
                               json_object_new_string(json_object_get_string(v)));
    }
    if (notice && (!strcmp(notice, "acknowledged") || !strcmp(notice, "resolved") ||
                   !strcmp(notice, "closed")))
        cancel_emergency(r, ev);
out:
    json_object_put(doc);
    free(reply.body);
    free(tag);
    free(title);
    free(message);
    free(url);
    buf_free(&form);
    buf_free(&text);
    return rc;
}

/* Who acknowledged, as one printable line: the device's name, or
 * "Pushover user". */
static char *acknowledger(struct json_object *receipt)
{
    struct json_object *v;
    const char *device = json_object_object_get_ex(receipt, "acknowledged_by_device", &v) &&
                                 json_object_is_type(v, json_type_string)
                             ? json_object_get_string(v)
                             : "";
    size_t len = strnlen(device, PUSHOVER_DEVICE_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)device[i] < 0x20 || device[i] == 0x7f)
            len = 0;
    return len ? xasprintf("%.*s (Pushover)", (int)len, device) : xstrdup("Pushover user");
}

static int pushover_collect(const struct notify_env *env, const struct receiver_conf *r,
                            const struct notify_open *open, size_t n, long long now,
                            struct notify_ack **acks, size_t *n_acks, struct err *e)
{
    (void)env;
    (void)now;
    int failed = 0;
    struct err first = {{0}};
    time_t deadline = time(NULL) + r->timeout;
    *acks = NULL;
    *n_acks = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = NULL, *doc = NULL;
        if (!open[i].refs ||
            !json_object_object_get_ex((struct json_object *)open[i].refs, "receipt", &v) ||
            !json_object_is_type(v, json_type_string))
            continue;
        long left = (long)(deadline - time(NULL));
        if (left < 1) {
            if (!failed++)
                err_set(&first,
                        "no time left within the receiver's timeout (%ld s) for the "
                        "receipts of %zu incidents",
                        r->timeout, n - i);
            break;
        }
        const char *receipt = json_object_get_string(v);
        if (strspn(receipt, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") !=
            strlen(receipt))
            continue; /* not a receipt Pushover gave */
        struct buf query;
        buf_init(&query, 0);
        chat_form_add(&query, "token", r->pushover.token);
        char *path = xasprintf("/1/receipts/%s.json?%s", receipt, buf_str(&query));
        char *url = api_url(r, path);
        struct http_post_reply reply = {0};
        struct err one;
        if (http_get_reply(&reply, url, NULL, 0, left, &one) < 0) {
            if (!failed++)
                first = one;
        } else if (!accepted(reply.status, reply.body, &doc)) {
            if (!failed++)
                err_set(&first, "GET receipt of incident %lu: HTTP %ld", open[i].id, reply.status);
        } else if (json_object_object_get_ex(doc, "acknowledged", &v) &&
                   json_object_get_int(v) == 1) {
            *acks = xreallocarray(*acks, *n_acks + 1, sizeof **acks);
            (*acks)[(*n_acks)++] =
                (struct notify_ack){.id = open[i].id, .by = acknowledger(doc), .note = NULL};
        }
        json_object_put(doc);
        free(reply.body);
        free(url);
        free(path);
        buf_free(&query);
    }
    if (failed && *n_acks == 0) {
        *e = first;
        return -1;
    }
    if (failed)
        log_warn("receiver %s: %d receipt%s not read: %s (asked again next run)", r->name, failed,
                 failed == 1 ? "" : "s", first.msg);
    return 0;
}

const struct notifier notifier_pushover = {
    .type = RECEIVER_PUSHOVER,
    .name = "pushover",
    .fit = pushover_fit,
    .send = pushover_send,
    .collect = pushover_collect,
};
