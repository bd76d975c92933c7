/* Rendering and posting for the chat services (Slack, Teams). */
#include "notify/chat.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct json_object *chat_render(const struct notify_env *env, const struct receiver_conf *r,
                                const struct chat_conf *chat, const char *name,
                                const struct notify_message *m, size_t k, struct notify_result *res,
                                struct err *e)
{
    /* wsrelay fits every message first (notify_fit): one that shows
     * "…and N more" would hide events nobody sees, so it is an error. */
    if (k < m->n)
        log_error("receiver %s: %zu of a message's %zu events do not fit and show only as "
                  "\"…and %zu more\" (a message not fitted first)",
                  r->name, m->n - k, m->n, m->n - k);
    struct json_object *ctx = notify_context_first(r->name, m, k);
    struct json_object *payload = NULL;
    struct buf text;
    buf_init(&text, 4 * 1024 * 1024);
    int rendered = notify_render(&text, env, chat->template, name, ctx, e);
    if (rendered < 0) {
        res->permanent = rendered == -2;
        goto out;
    }
    payload = notify_parse_json(buf_str(&text), e);
    if (!payload) {
        res->permanent = true;
        err_prefix(e, "the %s template made a message that cannot be sent", name);
    }
out:
    buf_free(&text);
    json_object_put(ctx);
    return payload;
}

/* Whether the first `k` events of `m` make a message that fits. */
static int fits_with(const struct notify_env *env, const struct receiver_conf *r,
                     const struct chat_conf *chat, const char *name, const struct notify_message *m,
                     size_t k, bool (*fits)(struct json_object *payload))
{
    struct notify_result res = {0};
    struct err e;
    struct notify_message part = *m;
    part.n = k;
    /* Measured as the last messages of the longest delivery it can be
     * part of: m->parts bounds it (notify_fit), else its own events. */
    part.part = part.parts = m->parts > m->n ? m->parts : m->n;
    struct json_object *payload = chat_render(env, r, chat, name, &part, k, &res, &e);
    if (!payload)
        return -1;
    int ok = fits(payload);
    json_object_put(payload);
    return ok;
}

size_t chat_fit(const struct notify_env *env, const struct receiver_conf *r,
                const struct chat_conf *chat, const char *name, const struct notify_message *m,
                size_t max, bool (*fits)(struct json_object *payload))
{
    size_t hi = m->n < max ? m->n : max;
    int ok = fits_with(env, r, chat, name, m, hi, fits);
    if (ok != 0)
        return hi; /* it fits, or it cannot be rendered: the send says why */
    /* The largest k that fits lies in [1, hi): halve the range. */
    size_t lo = 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (fits_with(env, r, chat, name, m, mid, fits) == 1)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int chat_send(const struct chat_conf *chat, struct json_object *payload,
              bool (*accepted)(long status, const char *body), long timeout_s,
              struct notify_result *res, struct err *e)
{
    int rc = -1;
    struct http_post_reply reply = {0};
    const char *body = json_object_to_json_string_ext(payload, JSON_C_TO_STRING_PLAIN |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
    if (http_post(&reply, chat->url, NULL, 0, "application/json", body, timeout_s, e) < 0)
        goto out;
    http_result(res, &reply, chat->url, NULL, 0);
    if (accepted(reply.status, reply.body)) {
        rc = 0;
        goto out;
    }
    res->permanent = reply.status >= 400 && reply.status < 500 && reply.status != 429;
    char *redacted = http_redact_url(chat->url);
    err_set(e, "POST %s: HTTP %ld%s%s", redacted, reply.status, *res->answer ? ": " : "",
            res->answer);
    free(redacted);
out:
    free(reply.body);
    return rc;
}

int chat_render_text(struct buf *out, const struct notify_env *env, const struct receiver_conf *r,
                     const char *explicit_path, const char *name, const struct notify_message *m,
                     size_t k, struct notify_result *res, struct err *e)
{
    if (k < m->n)
        log_error("receiver %s: %zu of a message's %zu events do not fit and are left out "
                  "(a message not fitted first)",
                  r->name, m->n - k, m->n);
    struct json_object *ctx = notify_context_first(r->name, m, k);
    size_t from = out->len;
    int rendered = notify_render(out, env, explicit_path, name, ctx, e);
    json_object_put(ctx);
    if (rendered < 0)
        res->permanent = rendered == -2;
    /* The line ends a template leaves after its last line show as blank
     * lines in a chat. */
    while (rendered == 0 && out->len > from &&
           (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == ' '))
        out->data[--out->len] = '\0';
    return rendered < 0 ? -1 : 0;
}

/* Whether the first `k` events of `m` make a text of at most `max_chars`
 * characters: 1, 0, or -1 when it cannot be rendered. */
static int text_fits(const struct notify_env *env, const struct receiver_conf *r,
                     const char *explicit_path, const char *name, const struct notify_message *m,
                     size_t k, size_t max_chars)
{
    struct notify_result res = {0};
    struct err e;
    struct buf text;
    struct notify_message part = *m;
    part.n = k;
    part.part = part.parts = m->parts > m->n ? m->parts : m->n;
    buf_init(&text, 4 * 1024 * 1024);
    int rc = chat_render_text(&text, env, r, explicit_path, name, &part, k, &res, &e);
    if (rc == 0)
        rc = chat_chars(buf_str(&text)) <= max_chars;
    buf_free(&text);
    return rc;
}

size_t chat_fit_text(const struct notify_env *env, const struct receiver_conf *r,
                     const char *explicit_path, const char *name, const struct notify_message *m,
                     size_t max, size_t max_chars)
{
    size_t hi = m->n < max ? m->n : max;
    if (text_fits(env, r, explicit_path, name, m, hi, max_chars) != 0)
        return hi;
    size_t lo = 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (text_fits(env, r, explicit_path, name, m, mid, max_chars) == 1)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

size_t chat_chars(const char *s)
{
    size_t n = 0, len = strlen(s);
    uint32_t cp;
    for (size_t i = 0; i < len; n++) {
        size_t step = utf8_decode(&cp, s + i, len - i);
        i += step ? step : 1;
    }
    return n;
}

char *chat_cut(const char *s, size_t max)
{
    if (chat_chars(s) <= max)
        return xstrdup(s);
    size_t len = strlen(s), i = 0;
    uint32_t cp;
    for (size_t n = 0; i < len && n + 1 < max; n++) {
        size_t step = utf8_decode(&cp, s + i, len - i);
        i += step ? step : 1;
    }
    return xasprintf("%.*s…", (int)i, s);
}

void chat_form_add(struct buf *form, const char *name, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    if (form->len)
        buf_puts(form, "&");
    buf_puts(form, name);
    buf_puts(form, "=");
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p)) {
            buf_append(form, p, 1);
        } else {
            char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            buf_append(form, enc, 3);
        }
    }
}

const struct json_object *chat_incident(const struct event *ev, unsigned long *id, const char **key)
{
    struct json_object *v;
    if (!ev->incident)
        return NULL;
    if (id)
        *id = json_object_object_get_ex(ev->incident, "id", &v)
                  ? strtoul(json_object_get_string(v), NULL, 10)
                  : 0;
    if (key)
        *key = json_object_object_get_ex(ev->incident, "key", &v) ? json_object_get_string(v) : "";
    return ev->incident;
}
