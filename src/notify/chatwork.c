/* Chatwork through its API v2: POST /v2/rooms/{room_id}/messages with the
 * token in the X-ChatWorkToken header and a form body (body=…,
 * self_unread=0: the message is not left unread for the token's own
 * account), the text from chatwork-ja.txt (the default) or
 * chatwork-en.txt.
 *
 * Chatwork's notation ([info], [title], [To:123], [toall], [code], …) is
 * the template's own: the role's escaping (TEMPLATE_ESCAPE_CHATWORK) keeps
 * a value from making a tag, a mention or an emoticon. Chatwork has no
 * threads: each message says which notice of its incident it is. A
 * message is at most CHATWORK_BODY_MAX characters: wsrelay sends what
 * does not fit in more messages.
 *
 * Success is 200 with {"message_id": "…"}. Chatwork allows 300 requests
 * in 5 minutes per token and says so in X-RateLimit-Limit, -Remaining and
 * -Reset (when the window ends, seconds since 1970); a 429 waits for that
 * reset, a 5xx is retried on a later run; a 401 (a wrong token), 403 (a
 * room the account may not post in), 404 and other 4xx are given up for
 * this receiver only, with Chatwork's {"errors": […]} reported. */
#include "notify/chat.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHATWORK_BODY_MAX 10000 /* characters of a message */
#define CHATWORK_MAX_EVENTS 50  /* events of a message */
#define CHATWORK_WINDOW 300     /* seconds of Chatwork's rate limit window */

static const char *template_name(const struct receiver_conf *r)
{
    return r->chatwork.language == CHAT_LANG_EN ? "chatwork-en.txt" : "chatwork-ja.txt";
}

static size_t chatwork_fit(const struct notify_env *env, const struct receiver_conf *r,
                           const struct notify_message *m)
{
    return chat_fit_text(env, r, r->chatwork.template, template_name(r), m, CHATWORK_MAX_EVENTS,
                         CHATWORK_BODY_MAX);
}

/* Chatwork answers 200 with the new message's id. */
static bool accepted(long status, const char *body)
{
    struct json_object *doc = status == 200 && body ? json_tokener_parse(body) : NULL, *id;
    bool ok = doc && json_object_is_type(doc, json_type_object) &&
              json_object_object_get_ex(doc, "message_id", &id);
    json_object_put(doc);
    return ok;
}

static int chatwork_send(const struct notify_env *env, const struct receiver_conf *r,
                         const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    struct http_post_reply reply = {0};
    struct buf text, form;
    buf_init(&text, 4 * 1024 * 1024);
    buf_init(&form, 0);
    /* The base URL without a trailing '/'. */
    const char *base = r->chatwork.base_url;
    int base_len = (int)strlen(base);
    while (base_len > 0 && base[base_len - 1] == '/')
        base_len--;
    char *url = xasprintf("%.*s/v2/rooms/%s/messages", base_len, base, r->chatwork.room_id);
    char header[] = "X-ChatWorkToken";
    struct header_conf token = {.name = header, .value = r->chatwork.token};
    if (chat_render_text(&text, env, r, r->chatwork.template, template_name(r), m, m->n, res, e) <
        0)
        goto out;
    char *body = chat_cut(buf_str(&text), CHATWORK_BODY_MAX);
    chat_form_add(&form, "body", body);
    chat_form_add(&form, "self_unread", "0");
    free(body);
    if (http_post(&reply, url, &token, 1, "application/x-www-form-urlencoded", buf_str(&form),
                  r->timeout, e) < 0)
        goto out;
    http_result(res, &reply, url, &token, 1);
    if (accepted(reply.status, reply.body)) {
        rc = 0;
        goto out;
    }
    if (reply.status == 429 && !res->retry_after) {
        /* No Retry-After: the window's end, as Chatwork gives it. */
        long long wait = reply.ratelimit_reset - (long long)time(NULL);
        res->retry_after = wait < 1 ? 1 : wait > CHATWORK_WINDOW ? CHATWORK_WINDOW : (long)wait;
    }
    res->permanent = reply.status >= 400 && reply.status < 500 && reply.status != 429;
    err_set(e, "POST %s: HTTP %ld%s%s", url, reply.status, *res->answer ? ": " : "", res->answer);
out:
    free(reply.body);
    free(url);
    buf_free(&form);
    buf_free(&text);
    return rc;
}

const struct notifier notifier_chatwork = {
    .type = RECEIVER_CHATWORK,
    .name = "chatwork",
    .fit = chatwork_fit,
    .send = chatwork_send,
};
