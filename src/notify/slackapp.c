/* Slack as an app: a bot token and a channel instead of an incoming
 * webhook, so that an incident is one thread and people acknowledge it
 * from Slack.
 *
 * The first message of an incident is posted with chat.postMessage and its
 * `ts` kept with the incident ({"ts", "channel"}: notify_result.refs); its
 * reminders, escalations, acknowledgement and resolution are replies in
 * that thread (thread_ts, from notify_message.refs), and the resolution (or
 * the closing) also rewrites the first message with chat.update, its header
 * saying RESOLVED, so that the channel shows which alarms are over. After
 * delivery, collect reads each open incident's thread: a ✅
 * (white_check_mark) reaction on the first message (reactions.get) or a
 * reply whose first word starts with "ack" (conversations.replies)
 * acknowledges it as that Slack user, named as users.info gives them.
 *
 * Slack answers HTTP 200 with {"ok": false, "error": "..."} for its
 * errors: those that say the token, the channel or the message is wrong
 * (invalid_auth, channel_not_found, not_in_channel, …) cannot be fixed by
 * retrying and give the message up for this receiver only; the others
 * (internal_error, ratelimited, …) and 5xx keep it for a later run. A 429
 * carries Retry-After, which the run honours. chat.postMessage takes about
 * one message a second per channel: posts to one channel are paced so,
 * whichever receiver of the run makes them. */
#include "notify/chat.h"
#include "notify/http.h"
#include "notify/slack.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SLACK_API_DEFAULT "https://slack.com/api"
#define SLACK_REPLIES_MAX 200 /* replies read of one thread: conversations.replies' page */
#define SLACK_NAME_MAX 120    /* bytes of a user's name or id as wsrelay keeps it */
#define SLACK_NOTE_MAX 300    /* bytes of an acknowledgement's note */
#define SLACK_ACK_REACTION "white_check_mark"
#define SLACK_POST_GAP_MS 1000 /* chat.postMessage: about one message a second per channel */

/* Slack's errors that retrying cannot fix: the token, the app's rights,
 * the channel, or the message itself is wrong. */
static const char *const permanent_errors[] = {
    "invalid_auth",         "not_authed",
    "account_inactive",     "token_revoked",
    "token_expired",        "no_permission",
    "missing_scope",        "not_allowed_token_type",
    "channel_not_found",    "not_in_channel",
    "is_archived",          "restricted_action",
    "ekm_access_denied",    "team_access_not_granted",
    "msg_too_long",         "no_text",
    "invalid_blocks",       "invalid_blocks_format",
    "invalid_arguments",    "invalid_arg_name",
    "invalid_charset",      "invalid_form_data",
    "invalid_post_type",    "missing_post_type",
    "too_many_attachments", "message_not_found",
    "thread_not_found",     "user_not_found",
    "cant_update_message",  "edit_window_closed",
};

static bool permanent_error(const char *error)
{
    for (size_t i = 0; i < sizeof permanent_errors / sizeof permanent_errors[0]; i++)
        if (!strcmp(error, permanent_errors[i]))
            return true;
    return false;
}

/* The monotonic clock in seconds: what bounds a send or a collect. */
static long long mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec;
}

/* The last posts of this process, per channel: chat.postMessage takes
 * about one message a second per channel, whichever receiver posts and
 * whichever part of a run (its deliveries, the announcements after them)
 * it comes from. */
#define PACE_CHANNELS 8
static struct {
    char channel[32];
    long long at_ms; /* CLOCK_MONOTONIC */
} last_posts[PACE_CHANNELS];

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until a second has passed since this process last posted to
 * `channel`, and notes the post to come. */
static void pace_channel(const char *channel)
{
    size_t slot = 0;
    for (size_t i = 0; i < PACE_CHANNELS; i++) {
        if (!strcmp(last_posts[i].channel, channel)) {
            slot = i;
            break;
        }
        if (last_posts[i].at_ms < last_posts[slot].at_ms)
            slot = i; /* the oldest, or an unused one, is reused */
    }
    if (!strcmp(last_posts[slot].channel, channel)) {
        long long wait = last_posts[slot].at_ms + SLACK_POST_GAP_MS - mono_ms();
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000), .tv_nsec = (wait % 1000) * 1000000L};
        while (wait > 0 && nanosleep(&ts, &ts) < 0)
            ;
    }
    snprintf(last_posts[slot].channel, sizeof last_posts[slot].channel, "%s", channel);
    last_posts[slot].at_ms = mono_ms();
}

/* One call of Web API method `method` with `body` (`content_type`),
 * within `timeout_s`: the answer object when Slack said ok (a new
 * reference), else NULL with `e` ("METHOD: HTTP STATUS: ERROR") and `res`
 * filled: permanent for the errors above and a 4xx other than 429;
 * retry_after from a 429's Retry-After. */
static struct json_object *api_call(const struct receiver_conf *r, const char *method,
                                    const char *content_type, const char *body, long timeout_s,
                                    struct notify_result *res, struct err *e)
{
    struct json_object *answer = NULL, *ok = NULL, *error = NULL;
    struct http_post_reply reply = {0};
    char name[] = "Authorization";
    char *bearer = xasprintf("Bearer %s", r->slack.token);
    struct header_conf auth = {.name = name, .value = bearer};
    const char *base = r->slack.api_url ? r->slack.api_url : SLACK_API_DEFAULT;
    char *url = xasprintf("%s/%s", base, method);
    struct notify_result scratch = {0};
    if (!res)
        res = &scratch;
    if (http_post(&reply, url, &auth, 1, content_type, body, timeout_s, e) < 0) {
        err_prefix(e, "%s", method);
        goto out;
    }
    http_result(res, &reply, url, &auth, 1);
    if (reply.status == 429) {
        err_set(e, "%s: HTTP 429: rate limited, asked to wait %ld s", method, reply.retry_after);
        goto out;
    }
    if (reply.status != 200) {
        res->permanent = reply.status >= 400 && reply.status < 500;
        err_set(e, "%s: HTTP %ld%s%s", method, reply.status, *res->answer ? ": " : "", res->answer);
        goto out;
    }
    answer = json_tokener_parse(reply.body ? reply.body : "");
    if (!answer || !json_object_is_type(answer, json_type_object) ||
        !json_object_object_get_ex(answer, "ok", &ok)) {
        err_set(e, "%s: HTTP 200 but not Slack's answer: %s", method, res->answer);
        json_object_put(answer);
        answer = NULL;
        goto out;
    }
    if (!json_object_get_boolean(ok)) {
        const char *what = json_object_object_get_ex(answer, "error", &error)
                               ? json_object_get_string(error)
                               : "no error named";
        char shown[64];
        http_reply_excerpt(shown, sizeof shown, what, url, &auth, 1);
        res->permanent = permanent_error(shown);
        snprintf(res->answer, sizeof res->answer, "%s", shown);
        err_set(e, "%s: %s%s", method, shown,
                res->permanent ? "" : " (Slack may take it at a later try)");
        json_object_put(answer);
        answer = NULL;
        goto out;
    }
out:
    free(reply.body);
    free(url);
    free(bearer);
    return answer;
}

/* api_call with a JSON body. */
static struct json_object *api_json(const struct receiver_conf *r, const char *method,
                                    struct json_object *args, long timeout_s,
                                    struct notify_result *res, struct err *e)
{
    const char *body = json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    return api_call(r, method, "application/json; charset=utf-8", body, timeout_s, res, e);
}

/* Appends "NAME=VALUE" to a form, VALUE percent-encoded. */
static void form_add(struct buf *form, const char *name, const char *value)
{
    buf_printf(form, "%s%s=", form->len ? "&" : "", name);
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (isalnum(*p) || strchr("-._~", *p))
            buf_append(form, (const char *)p, 1);
        else
            buf_printf(form, "%%%02X", *p);
    }
}

/* api_call of a reading method, whose arguments Slack takes as a form. */
static struct json_object *api_form(const struct receiver_conf *r, const char *method,
                                    struct buf *form, long timeout_s, struct err *e)
{
    return api_call(r, method, "application/x-www-form-urlencoded", buf_str(form), timeout_s, NULL,
                    e);
}

/* The string member `key` of `obj`, or NULL. */
static const char *str_of(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* The notice of the message's first event ("opened", "resolved", ...),
 * or NULL when it is no incident's. */
static const char *notice_of(const struct notify_message *m)
{
    return m->events[0].incident ? str_of(m->events[0].incident, "notice") : NULL;
}

/* The first message of an incident as its end shows it: the payload of
 * the resolution (or closing) with "RESOLVED" (or "CLOSED") before its
 * fallback text and its first header's text. */
static void mark_ended(struct json_object *payload, const char *notice)
{
    const char *word = !strcmp(notice, "closed") ? "CLOSED" : "RESOLVED";
    struct json_object *blocks, *text;
    const char *fallback = str_of(payload, "text");
    char *marked = xasprintf("%s: %s", word, fallback ? fallback : "");
    json_object_object_add(payload, "text", json_object_new_string(marked));
    free(marked);
    if (!json_object_object_get_ex(payload, "blocks", &blocks) ||
        !json_object_is_type(blocks, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(blocks); i++) {
        struct json_object *b = json_object_array_get_idx(blocks, i);
        const char *type = str_of(b, "type");
        if (!type || strcmp(type, "header") || !json_object_object_get_ex(b, "text", &text))
            continue;
        const char *was = str_of(text, "text");
        marked = xasprintf("%s · %s", word, was ? was : "");
        json_object_object_add(text, "text", json_object_new_string(marked));
        free(marked);
        break;
    }
    slack_hold_limits(payload); /* the header may now be too long */
}

/* An incident's first message fits alone, so that its ts is that
 * incident's; the events before the first incident's share messages as
 * the webhook's do. */
static size_t slackapp_fit(const struct notify_env *env, const struct receiver_conf *r,
                           const struct notify_message *m)
{
    if (m->events[0].incident)
        return 1;
    size_t k = slack_fit(env, r, m);
    for (size_t i = 1; i < k; i++)
        if (m->events[i].incident)
            return i;
    return k;
}

static int slackapp_send(const struct notify_env *env, const struct receiver_conf *r,
                         const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    long long deadline = mono_now() + r->timeout;
    size_t k = m->n < SLACK_MAX_EVENTS ? m->n : SLACK_MAX_EVENTS;
    struct json_object *answer = NULL, *updated = NULL;
    struct json_object *payload = chat_render(env, r, &r->slack, "slack.json", m, k, res, e);
    if (!payload)
        return -1;
    slack_hold_limits(payload);
    const char *thread = str_of(m->refs, "ts");
    const char *channel =
        thread && str_of(m->refs, "channel") ? str_of(m->refs, "channel") : r->slack.channel;
    const char *notice = notice_of(m);
    json_object_object_add(payload, "channel", json_object_new_string(channel));
    if (thread)
        json_object_object_add(payload, "thread_ts", json_object_new_string(thread));
    pace_channel(channel);
    answer = api_json(r, "chat.postMessage", payload, r->timeout, res, e);
    if (!answer)
        goto out;
    rc = 0;
    if (!thread && m->events[0].incident && str_of(answer, "ts")) {
        /* the thread of the incident's later messages */
        res->refs = json_object_new_object();
        json_object_object_add(res->refs, "ts", json_object_new_string(str_of(answer, "ts")));
        json_object_object_add(res->refs, "channel",
                               json_object_new_string(str_of(answer, "channel")
                                                          ? str_of(answer, "channel")
                                                          : r->slack.channel));
    }
    if (thread && notice && (!strcmp(notice, "resolved") || !strcmp(notice, "closed"))) {
        /* The reply is the delivery; the first message's new header is an
         * extra, which never costs it. */
        struct err ue;
        long left = (long)(deadline - mono_now());
        json_object_object_del(payload, "thread_ts");
        json_object_object_add(payload, "ts", json_object_new_string(thread));
        mark_ended(payload, notice);
        updated = api_json(r, "chat.update", payload, left > 1 ? left : 1, NULL, &ue);
        if (!updated)
            log_warn("receiver %s: the thread's first message still shows the alarm: %s", r->name,
                     ue.msg);
    }
out:
    json_object_put(updated);
    json_object_put(answer);
    json_object_put(payload);
    return rc;
}

/* Who a Slack user is, for the timeline: "Display Name (U0123)" as
 * users.info names them, or the id alone when it cannot say in time. A
 * new string. */
static char *user_name(const struct receiver_conf *r, const char *user, long timeout_s)
{
    struct buf form;
    struct err e;
    buf_init(&form, 0);
    form_add(&form, "user", user);
    struct json_object *answer = api_form(r, "users.info", &form, timeout_s, &e), *who = NULL;
    buf_free(&form);
    const char *name = NULL;
    if (answer && json_object_object_get_ex(answer, "user", &who)) {
        struct json_object *profile = NULL;
        if (json_object_object_get_ex(who, "profile", &profile))
            name = str_of(profile, "display_name");
        if (!name || !*name)
            name = str_of(who, "real_name");
        if (!name || !*name)
            name = str_of(who, "name");
    } else {
        log_info("receiver %s: %s (the acknowledgement names the user by id)", r->name, e.msg);
    }
    char *raw = name && *name ? xasprintf("%s (%s)", name, user) : xstrdup(user);
    char *clean = utf8_clean_shown(raw, strlen(raw), SLACK_NAME_MAX, UTF8_CONTROLS_NONE);
    free(raw);
    json_object_put(answer);
    return clean;
}

/* The user of the first ✅ on the thread's first message, or NULL; -1
 * when Slack did not answer. */
static int reaction_ack(const char **user, struct json_object **answer,
                        const struct receiver_conf *r, const char *channel, const char *ts,
                        long timeout_s, struct err *e)
{
    struct buf form;
    struct json_object *message = NULL, *reactions = NULL;
    *user = NULL;
    buf_init(&form, 0);
    form_add(&form, "channel", channel);
    form_add(&form, "timestamp", ts);
    form_add(&form, "full", "true");
    *answer = api_form(r, "reactions.get", &form, timeout_s, e);
    buf_free(&form);
    if (!*answer)
        return -1;
    if (!json_object_object_get_ex(*answer, "message", &message) ||
        !json_object_object_get_ex(message, "reactions", &reactions) ||
        !json_object_is_type(reactions, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(reactions) && !*user; i++) {
        struct json_object *rx = json_object_array_get_idx(reactions, i), *users = NULL;
        const char *name = str_of(rx, "name");
        if (!name || strcmp(name, SLACK_ACK_REACTION) ||
            !json_object_object_get_ex(rx, "users", &users) ||
            !json_object_is_type(users, json_type_array) || !json_object_array_length(users))
            continue;
        struct json_object *u = json_object_array_get_idx(users, 0);
        if (json_object_is_type(u, json_type_string))
            *user = json_object_get_string(u);
    }
    return 0;
}

/* When `text` starts with a word that starts with "ack" (ack, ACK,
 * acked, acknowledged), what follows that word, blanks and a ':' or '-'
 * after it skipped; NULL otherwise. */
static const char *ack_words(const char *text)
{
    while (*text == ' ' || *text == '\t' || *text == '\n')
        text++;
    if (strncasecmp(text, "ack", 3) != 0)
        return NULL;
    text += 3;
    while (isalpha((unsigned char)*text))
        text++;
    while (*text && strchr(" \t\r\n:-,.!", *text))
        text++;
    return text;
}

/* The first reply in the thread from a person (not a bot) that starts
 * with "ack": its user and the rest of its text; -1 when Slack did not
 * answer. */
static int reply_ack(const char **user, const char **note, struct json_object **answer,
                     const struct receiver_conf *r, const char *channel, const char *ts,
                     long timeout_s, struct err *e)
{
    struct buf form;
    struct json_object *messages = NULL, *v = NULL;
    char limit[16];
    *user = *note = NULL;
    snprintf(limit, sizeof limit, "%d", SLACK_REPLIES_MAX);
    buf_init(&form, 0);
    form_add(&form, "channel", channel);
    form_add(&form, "ts", ts);
    form_add(&form, "limit", limit);
    *answer = api_form(r, "conversations.replies", &form, timeout_s, e);
    buf_free(&form);
    if (!*answer)
        return -1;
    if (!json_object_object_get_ex(*answer, "messages", &messages) ||
        !json_object_is_type(messages, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(messages) && !*user; i++) {
        struct json_object *msg = json_object_array_get_idx(messages, i);
        const char *who = str_of(msg, "user"), *text = str_of(msg, "text");
        const char *mts = str_of(msg, "ts");
        if (!who || !text || (mts && !strcmp(mts, ts)) ||
            json_object_object_get_ex(msg, "bot_id", &v))
            continue; /* the first message, or wsrelay's own replies */
        const char *rest = ack_words(text);
        if (rest) {
            *user = who;
            *note = rest;
        }
    }
    return 0;
}

static int slackapp_collect(const struct notify_env *env, const struct receiver_conf *r,
                            const struct notify_open *open, size_t n, long long now,
                            struct notify_ack **acks, size_t *n_acks, struct err *e)
{
    (void)env;
    (void)now;
    int rc = 0;
    long long deadline = mono_now() + r->timeout;
    *acks = NULL;
    *n_acks = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *ts = str_of(open[i].refs, "ts");
        const char *channel = str_of(open[i].refs, "channel");
        struct json_object *reactions = NULL, *replies = NULL;
        const char *user = NULL, *note = NULL;
        long left = (long)(deadline - mono_now());
        if (!ts)
            continue; /* never posted here: nothing to read */
        if (left < 1) {
            rc = err_set(e,
                         "out of time (the receiver's timeout, %ld s): incidents from %lu on "
                         "are read at the next run",
                         r->timeout, open[i].id);
            break;
        }
        channel = channel ? channel : r->slack.channel;
        if (reaction_ack(&user, &reactions, r, channel, ts, left, e) < 0) {
            rc = -1;
        } else if (!user) {
            left = (long)(deadline - mono_now());
            if (reply_ack(&user, &note, &replies, r, channel, ts, left > 1 ? left : 1, e) < 0)
                rc = -1;
        }
        if (user) {
            left = (long)(deadline - mono_now());
            *acks = xreallocarray(*acks, *n_acks + 1, sizeof **acks);
            struct notify_ack *a = &(*acks)[(*n_acks)++];
            a->id = open[i].id;
            a->by = user_name(r, user, left > 1 ? left : 1);
            a->note = note && *note
                          ? utf8_clean_shown(note, strlen(note), SLACK_NOTE_MAX, UTF8_CONTROLS_NONE)
                          : NULL;
        }
        json_object_put(reactions);
        json_object_put(replies);
    }
    if (rc < 0 && *n_acks > 0) {
        /* what was read stands; the rest is asked again at the next run */
        log_warn("receiver %s: acknowledgements: %s", r->name, e->msg);
        rc = 0;
    }
    return rc;
}

const struct notifier notifier_slack_app = {
    .type = RECEIVER_SLACK_APP,
    .name = "slack",
    .pace_ms = 0, /* paced per channel (pace_channel), across receivers and deliveries */
    .fit = slackapp_fit,
    .send = slackapp_send,
    .collect = slackapp_collect,
};
