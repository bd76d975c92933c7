/* Google Chat through a space's incoming webhook: a text message
 * (googlechat-en.txt or googlechat-ja.txt) POSTed as JSON to the webhook's
 * URL, which carries the space, its key and its token.
 *
 * The messages of one incident share a thread: each names the thread key
 * "wsrelay:KEY:ID" (the incident's key and id) and the URL asks for
 * messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD, so that the
 * first opens the thread and its reminders, escalations, acknowledgement
 * and resolution reply in it; a message without an incident (a gap, a
 * relay event, incidents off) names no thread and starts its own. One
 * message is one incident (googlechat_fit). Google Chat reads its markup
 * in the text: the role's escaping (TEMPLATE_ESCAPE_GCHAT) makes the
 * values' inert. A text is at most GCHAT_TEXT_MAX characters: wsrelay
 * sends what does not fit in more messages, and cuts one event that is
 * longer alone.
 *
 * Success is 200 with the message created, as JSON with its "name". A
 * 400 (INVALID_ARGUMENT), 401, 403 and 404 say the message or the webhook
 * is wrong: given up for this receiver; 429 (quota) and 5xx are retried
 * on a later run. */
#include "notify/chat.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define GCHAT_TEXT_MAX 4000 /* characters of a message's text */
#define GCHAT_REPLY_OPTION "messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"

static const char *template_name(const struct receiver_conf *r)
{
    return r->googlechat.language == CHAT_LANG_JA ? "googlechat-ja.txt" : "googlechat-en.txt";
}

static size_t googlechat_fit(const struct notify_env *env, const struct receiver_conf *r,
                             const struct notify_message *m)
{
    /* An incident's message goes alone into its thread; the events
     * without one go together, up to the first that has one. */
    size_t plain = 0;
    while (plain < m->n && !chat_incident(&m->events[plain], NULL, NULL))
        plain++;
    if (plain == 0)
        return 1;
    return chat_fit_text(env, r, r->googlechat.template, template_name(r), m, plain,
                         GCHAT_TEXT_MAX);
}

/* Google Chat answers 200 with the message it made. */
static bool accepted(long status, const char *body)
{
    struct json_object *msg = status == 200 && body ? json_tokener_parse(body) : NULL, *name;
    bool ok = msg && json_object_is_type(msg, json_type_object) &&
              json_object_object_get_ex(msg, "name", &name) &&
              json_object_is_type(name, json_type_string);
    json_object_put(msg);
    return ok;
}

/* "wsrelay:KEY:ID" for an incident's event; NULL outside one. */
static char *thread_key(const struct event *ev)
{
    unsigned long id = 0;
    const char *key = NULL;
    if (!chat_incident(ev, &id, &key))
        return NULL;
    return xasprintf("wsrelay:%s:%lu", key, id);
}

/* The message: {"text": TEXT, "thread": {"threadKey": KEY}}, the thread
 * when `first` is about an incident. A new reference. */
static struct json_object *payload(const char *text, const struct event *first)
{
    struct json_object *msg = json_object_new_object();
    char *cut = chat_cut(text, GCHAT_TEXT_MAX);
    json_object_object_add(msg, "text", json_object_new_string(cut));
    free(cut);
    char *key = thread_key(first);
    if (key) {
        struct json_object *thread = json_object_new_object();
        json_object_object_add(thread, "threadKey", json_object_new_string(key));
        json_object_object_add(msg, "thread", thread);
        free(key);
    }
    return msg;
}

static int googlechat_send(const struct notify_env *env, const struct receiver_conf *r,
                           const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    struct json_object *msg = NULL;
    struct buf text;
    buf_init(&text, 4 * 1024 * 1024);
    if (chat_render_text(&text, env, r, r->googlechat.template, template_name(r), m, m->n, res, e) <
        0)
        goto out;
    msg = payload(buf_str(&text), &m->events[0]);
    /* The webhook's URL as Google gives it has a query (key, token): the
     * reply option joins it, unless the URL names one already. */
    const char *url = r->googlechat.url;
    struct chat_conf to = {
        .url = strstr(url, "messageReplyOption=")
                   ? xstrdup(url)
                   : xasprintf("%s%s" GCHAT_REPLY_OPTION, url, strchr(url, '?') ? "&" : "?")};
    rc = chat_send(&to, msg, accepted, r->timeout, res, e);
    free(to.url);
out:
    json_object_put(msg);
    buf_free(&text);
    return rc;
}

const struct notifier notifier_googlechat = {
    .type = RECEIVER_GOOGLECHAT,
    .name = "googlechat",
    .pace_ms = 1000,
    .fit = googlechat_fit,
    .send = googlechat_send,
};
