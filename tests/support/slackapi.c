/* A stand-in for Slack's Web API (slackapi.h): a workspace of one channel
 * the bot is in, its messages and threads kept as JSON objects, each method
 * checking its token and arguments and answering as Slack documents. */
#include "slackapi.h"
#include "upload.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define SLACK_BODY_MAX (1024u * 1024)

struct scripted {
    char *method;
    int status;
    char *error;
    int retry_after;
    bool used;
};

struct slackapi {
    struct MHD_Daemon *daemon;
    char *url;
    pthread_mutex_t lock; /* guards everything below */
    int delay_ms;
    struct slack_call *calls;
    size_t n_calls, cap_calls;
    struct scripted *script;
    size_t n_script;
    struct json_object *messages; /* every channel's, in the order posted */
    struct json_object *users;    /* id -> {"id", "name", "profile": {"display_name"}} */
    unsigned long next_ts;        /* the fraction of the next ts */
};

/* The decoded value of a percent-encoded form field. */
static char *form_decode(const char *s, size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            buf_append(&b, " ", 1);
        } else if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
                   isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            char c = (char)strtol(hex, NULL, 16);
            buf_append(&b, &c, 1);
            i += 2;
        } else {
            buf_append(&b, &s[i], 1);
        }
    }
    return buf_steal(&b);
}

/* A form body's fields as an object of strings. */
static struct json_object *form_parse(const char *body)
{
    struct json_object *args = json_object_new_object();
    for (const char *p = body; *p;) {
        size_t len = strcspn(p, "&");
        const char *eq = memchr(p, '=', len);
        if (eq) {
            char *name = form_decode(p, (size_t)(eq - p));
            char *value = form_decode(eq + 1, len - (size_t)(eq + 1 - p));
            json_object_object_add(args, name, json_object_new_string(value));
            free(name);
            free(value);
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return args;
}

static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    (void)kind;
    json_object_object_add(cls, key, json_object_new_string(value ? value : ""));
    return MHD_YES;
}

static const char *arg(struct json_object *args, const char *name)
{
    struct json_object *v;
    if (!json_object_object_get_ex(args, name, &v))
        return NULL;
    return json_object_get_string(v);
}

static struct json_object *error_answer(const char *error)
{
    struct json_object *a = json_object_new_object();
    json_object_object_add(a, "ok", json_object_new_boolean(0));
    json_object_object_add(a, "error", json_object_new_string(error));
    return a;
}

static struct json_object *ok_answer(void)
{
    struct json_object *a = json_object_new_object();
    json_object_object_add(a, "ok", json_object_new_boolean(1));
    return a;
}

/* The message `ts` of `channel`, borrowed; NULL when none. */
static struct json_object *find_message(struct slackapi *s, const char *channel, const char *ts)
{
    for (size_t i = 0; channel && ts && i < json_object_array_length(s->messages); i++) {
        struct json_object *m = json_object_array_get_idx(s->messages, i);
        if (!strcmp(arg(m, "channel"), channel) && !strcmp(arg(m, "ts"), ts))
            return m;
    }
    return NULL;
}

/* NULL when the bot may post in `channel`, else the error Slack gives. */
static const char *channel_error(const char *channel)
{
    if (!channel)
        return "channel_not_found";
    if (!strcmp(channel, SLACKAPI_OUTSIDE))
        return "not_in_channel";
    if (strcmp(channel, SLACKAPI_CHANNEL))
        return "channel_not_found";
    return NULL;
}

static struct json_object *copy(struct json_object *v)
{
    struct json_object *c = NULL;
    if (json_object_deep_copy(v, &c, NULL) < 0)
        xalloc_die();
    return c;
}

static struct json_object *post_message(struct slackapi *s, struct json_object *args)
{
    const char *channel = arg(args, "channel"), *thread = arg(args, "thread_ts");
    struct json_object *blocks = NULL, *text = NULL;
    if (channel_error(channel))
        return error_answer(channel_error(channel));
    json_object_object_get_ex(args, "blocks", &blocks);
    json_object_object_get_ex(args, "text", &text);
    if (!text && !blocks)
        return error_answer("no_text");
    if (blocks && !json_object_is_type(blocks, json_type_array))
        return error_answer("invalid_blocks_format");
    struct json_object *parent = thread ? find_message(s, channel, thread) : NULL;
    if (thread && !parent)
        return error_answer("thread_not_found"); /* a ts that is no message of the channel */
    char ts[32];
    snprintf(ts, sizeof ts, "1795000000.%06lu", ++s->next_ts);
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "type", json_object_new_string("message"));
    json_object_object_add(m, "channel", json_object_new_string(channel));
    json_object_object_add(m, "ts", json_object_new_string(ts));
    json_object_object_add(m, "bot_id", json_object_new_string(SLACKAPI_BOT));
    json_object_object_add(m, "text",
                           json_object_new_string(text ? json_object_get_string(text) : ""));
    if (blocks)
        json_object_object_add(m, "blocks", copy(blocks));
    if (thread)
        json_object_object_add(m, "thread_ts", json_object_new_string(thread));
    json_object_array_add(s->messages, m);
    struct json_object *a = ok_answer();
    json_object_object_add(a, "channel", json_object_new_string(channel));
    json_object_object_add(a, "ts", json_object_new_string(ts));
    json_object_object_add(a, "message", copy(m));
    return a;
}

static struct json_object *update(struct slackapi *s, struct json_object *args)
{
    const char *channel = arg(args, "channel"), *ts = arg(args, "ts");
    struct json_object *blocks = NULL, *text = NULL;
    if (channel_error(channel))
        return error_answer(channel_error(channel));
    struct json_object *m = find_message(s, channel, ts);
    if (!m)
        return error_answer("message_not_found");
    if (json_object_object_get_ex(args, "text", &text))
        json_object_object_add(m, "text", json_object_new_string(json_object_get_string(text)));
    if (json_object_object_get_ex(args, "blocks", &blocks))
        json_object_object_add(m, "blocks", copy(blocks));
    json_object_object_add(m, "edited", json_object_new_boolean(1));
    struct json_object *a = ok_answer();
    json_object_object_add(a, "channel", json_object_new_string(channel));
    json_object_object_add(a, "ts", json_object_new_string(ts));
    json_object_object_add(a, "text", json_object_new_string(arg(m, "text")));
    return a;
}

static struct json_object *reactions_get(struct slackapi *s, struct json_object *args)
{
    const char *channel = arg(args, "channel"), *ts = arg(args, "timestamp");
    if (channel_error(channel))
        return error_answer(channel_error(channel));
    struct json_object *m = find_message(s, channel, ts);
    if (!m)
        return error_answer("message_not_found");
    struct json_object *a = ok_answer();
    json_object_object_add(a, "type", json_object_new_string("message"));
    json_object_object_add(a, "channel", json_object_new_string(channel));
    json_object_object_add(a, "message", copy(m));
    return a;
}

static struct json_object *replies(struct slackapi *s, struct json_object *args)
{
    const char *channel = arg(args, "channel"), *ts = arg(args, "ts");
    if (channel_error(channel))
        return error_answer(channel_error(channel));
    struct json_object *parent = find_message(s, channel, ts);
    if (!parent)
        return error_answer("thread_not_found");
    struct json_object *list = json_object_new_array();
    json_object_array_add(list, copy(parent));
    for (size_t i = 0; i < json_object_array_length(s->messages); i++) {
        struct json_object *m = json_object_array_get_idx(s->messages, i);
        const char *thread = arg(m, "thread_ts");
        if (thread && !strcmp(thread, ts) && !strcmp(arg(m, "channel"), channel))
            json_object_array_add(list, copy(m));
    }
    struct json_object *a = ok_answer(), *meta = json_object_new_object();
    json_object_object_add(a, "messages", list);
    json_object_object_add(a, "has_more", json_object_new_boolean(0));
    json_object_object_add(meta, "next_cursor", json_object_new_string(""));
    json_object_object_add(a, "response_metadata", meta);
    return a;
}

static struct json_object *users_info(struct slackapi *s, struct json_object *args)
{
    struct json_object *u;
    const char *id = arg(args, "user");
    if (!id || !json_object_object_get_ex(s->users, id, &u))
        return error_answer("user_not_found");
    struct json_object *a = ok_answer();
    json_object_object_add(a, "user", copy(u));
    return a;
}

/* Records the call and makes its answer (*status, *retry_after). */
static struct json_object *answer(struct slackapi *s, struct MHD_Connection *conn, const char *url,
                                  const char *body, int *status, int *retry_after, int *delay_ms)
{
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *method = strncmp(url, "/api/", 5) == 0 ? url + 5 : url;
    struct json_object *args = NULL;
    if (ct && strncmp(ct, "application/json", 16) == 0)
        args = json_tokener_parse(body);
    else
        args = form_parse(body);
    if (!args || !json_object_is_type(args, json_type_object)) {
        json_object_put(args);
        args = json_object_new_object(); /* Slack reads nothing from it */
    }
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_query, args);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct slack_call c = {.at = (double)now.tv_sec + (double)now.tv_nsec / 1e9,
                           .method = xstrdup(method),
                           .authorization = xstrdup_or_null(auth),
                           .content_type = xstrdup_or_null(ct),
                           .args = args};
    struct json_object *a = NULL;
    *status = 200;
    *retry_after = 0;
    pthread_mutex_lock(&s->lock);
    *delay_ms = s->delay_ms;
    if (s->n_calls == s->cap_calls) {
        s->cap_calls = s->cap_calls ? s->cap_calls * 2 : 16;
        s->calls = xreallocarray(s->calls, s->cap_calls, sizeof *s->calls);
    }
    s->calls[s->n_calls++] = c;
    for (size_t i = 0; i < s->n_script && !a; i++) {
        struct scripted *sc = &s->script[i];
        if (sc->used || strcmp(sc->method, method))
            continue;
        sc->used = true;
        *status = sc->status;
        *retry_after = sc->retry_after;
        a = error_answer(sc->error);
    }
    char *bearer = xasprintf("Bearer %s", SLACKAPI_TOKEN);
    if (!a && !auth)
        a = error_answer("not_authed");
    else if (!a && strcmp(auth, bearer))
        a = error_answer("invalid_auth");
    else if (!a && !strcmp(method, "chat.postMessage"))
        a = post_message(s, args);
    else if (!a && !strcmp(method, "chat.update"))
        a = update(s, args);
    else if (!a && !strcmp(method, "reactions.get"))
        a = reactions_get(s, args);
    else if (!a && !strcmp(method, "conversations.replies"))
        a = replies(s, args);
    else if (!a && !strcmp(method, "users.info"))
        a = users_info(s, args);
    else if (!a)
        a = error_answer("unknown_method");
    free(bearer);
    pthread_mutex_unlock(&s->lock);
    return a;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)method;
    struct slackapi *s = cls;
    struct upload *up = upload_feed(con_cls, upload_data, upload_data_size, SLACK_BODY_MAX);
    if (!up)
        return MHD_YES;
    int status, retry_after, delay_ms;
    struct json_object *a =
        answer(s, conn, url, buf_str(&up->body), &status, &retry_after, &delay_ms);
    if (delay_ms > 0) {
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    const char *text = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN);
    if (status != 200 && status != 429)
        text = arg(a, "error");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    json_object_put(a);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type",
                            status == 200 || status == 429 ? "application/json; charset=utf-8"
                                                           : "text/plain");
    if (retry_after > 0) {
        char seconds[16];
        snprintf(seconds, sizeof seconds, "%d", retry_after);
        MHD_add_response_header(resp, "Retry-After", seconds);
    }
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ok;
}

struct slackapi *slackapi_start(void)
{
    struct slackapi *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    s->messages = json_object_new_array();
    s->users = json_object_new_object();
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
                                 on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, upload_completed, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!s->daemon) {
        slackapi_stop(s);
        cr_assert_fail("slackapi: cannot listen on 127.0.0.1");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port) {
        slackapi_stop(s);
        cr_assert_fail("slackapi: no port bound");
    }
    s->url = xasprintf("http://127.0.0.1:%u/api", (unsigned)info->port);
    return s;
}

const char *slackapi_url(const struct slackapi *s)
{
    return s->url;
}

void slackapi_push_error(struct slackapi *s, const char *method, int status, const char *error,
                         int retry_after)
{
    pthread_mutex_lock(&s->lock);
    s->script = xreallocarray(s->script, s->n_script + 1, sizeof *s->script);
    s->script[s->n_script++] = (struct scripted){.method = xstrdup(method),
                                                 .status = status,
                                                 .error = xstrdup(error),
                                                 .retry_after = retry_after};
    pthread_mutex_unlock(&s->lock);
}

void slackapi_set_delay_ms(struct slackapi *s, int ms)
{
    pthread_mutex_lock(&s->lock);
    s->delay_ms = ms > 0 ? ms : 0;
    pthread_mutex_unlock(&s->lock);
}

void slackapi_add_user(struct slackapi *s, const char *id, const char *display_name)
{
    struct json_object *u = json_object_new_object(), *profile = json_object_new_object();
    json_object_object_add(u, "id", json_object_new_string(id));
    json_object_object_add(u, "name", json_object_new_string(id));
    json_object_object_add(profile, "display_name", json_object_new_string(display_name));
    json_object_object_add(u, "profile", profile);
    pthread_mutex_lock(&s->lock);
    json_object_object_add(s->users, id, u);
    pthread_mutex_unlock(&s->lock);
}

void slackapi_add_reaction(struct slackapi *s, const char *channel, const char *ts,
                           const char *name, const char *user)
{
    pthread_mutex_lock(&s->lock);
    struct json_object *m = find_message(s, channel, ts), *reactions = NULL;
    cr_assert(m, "slackapi: no message %s in %s to react to", ts, channel);
    if (!json_object_object_get_ex(m, "reactions", &reactions)) {
        reactions = json_object_new_array();
        json_object_object_add(m, "reactions", reactions);
    }
    struct json_object *r = json_object_new_object(), *users = json_object_new_array();
    json_object_object_add(r, "name", json_object_new_string(name));
    json_object_array_add(users, json_object_new_string(user));
    json_object_object_add(r, "users", users);
    json_object_object_add(r, "count", json_object_new_int(1));
    json_object_array_add(reactions, r);
    pthread_mutex_unlock(&s->lock);
}

void slackapi_add_reply(struct slackapi *s, const char *channel, const char *thread_ts,
                        const char *user, const char *text)
{
    pthread_mutex_lock(&s->lock);
    cr_assert(find_message(s, channel, thread_ts), "slackapi: no thread %s in %s", thread_ts,
              channel);
    char ts[32];
    snprintf(ts, sizeof ts, "1795000000.%06lu", ++s->next_ts);
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "type", json_object_new_string("message"));
    json_object_object_add(m, "channel", json_object_new_string(channel));
    json_object_object_add(m, "ts", json_object_new_string(ts));
    json_object_object_add(m, "user", json_object_new_string(user));
    json_object_object_add(m, "text", json_object_new_string(text));
    json_object_object_add(m, "thread_ts", json_object_new_string(thread_ts));
    json_object_array_add(s->messages, m);
    pthread_mutex_unlock(&s->lock);
}

size_t slackapi_count(struct slackapi *s, const char *method)
{
    size_t n = 0;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n_calls; i++)
        n += !method || !strcmp(s->calls[i].method, method);
    pthread_mutex_unlock(&s->lock);
    return n;
}

struct slack_call *slackapi_call(struct slackapi *s, const char *method, size_t i)
{
    struct slack_call *c = NULL;
    pthread_mutex_lock(&s->lock);
    for (size_t k = 0; k < s->n_calls && !c; k++) {
        const struct slack_call *at = &s->calls[k];
        if (method && strcmp(at->method, method))
            continue;
        if (i-- > 0)
            continue;
        c = xcalloc(1, sizeof *c);
        c->method = xstrdup(at->method);
        c->authorization = xstrdup_or_null(at->authorization);
        c->content_type = xstrdup_or_null(at->content_type);
        c->args = copy(at->args);
        c->at = at->at;
    }
    pthread_mutex_unlock(&s->lock);
    return c;
}

static void call_clear(struct slack_call *c)
{
    free(c->method);
    free(c->authorization);
    free(c->content_type);
    json_object_put(c->args);
}

void slack_call_free(struct slack_call *c)
{
    if (!c)
        return;
    call_clear(c);
    free(c);
}

struct json_object *slackapi_messages(struct slackapi *s, const char *channel)
{
    struct json_object *list = json_object_new_array();
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < json_object_array_length(s->messages); i++) {
        struct json_object *m = json_object_array_get_idx(s->messages, i);
        if (!strcmp(arg(m, "channel"), channel))
            json_object_array_add(list, copy(m));
    }
    pthread_mutex_unlock(&s->lock);
    return list;
}

void slackapi_stop(struct slackapi *s)
{
    if (!s)
        return;
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    for (size_t i = 0; i < s->n_calls; i++)
        call_clear(&s->calls[i]);
    free(s->calls);
    for (size_t i = 0; i < s->n_script; i++) {
        free(s->script[i].method);
        free(s->script[i].error);
    }
    free(s->script);
    json_object_put(s->messages);
    json_object_put(s->users);
    free(s->url);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
