/* Google Chat, Chatwork and Pushover as the tests' one local server
 * (svcapi.h): each request checked as the service documents it, each
 * answer and error in the service's words. */
#include "svcapi.h"
#include "upload.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define BODY_MAX (1024u * 1024)
#define GCHAT_MESSAGE_MAX 32000 /* bytes of a message's text */
#define PUSHOVER_MESSAGE_MAX 1024
#define PUSHOVER_TITLE_MAX 250
#define PUSHOVER_URL_MAX 512
#define CHATWORK_RATE_LIMIT 300

struct receipt {
    char id[31];
    char *tags; /* as given, comma-separated */
    bool acknowledged, cancelled;
    char *device;
    long long acked_at, expires_at;
};

struct svcapi {
    struct MHD_Daemon *daemon;
    char *base;
    pthread_mutex_t lock; /* guards everything below */
    struct svc_message *msgs[SVC_SERVICES];
    size_t n[SVC_SERVICES], cap[SVC_SERVICES], requests[SVC_SERVICES];
    int *failures[SVC_SERVICES];
    size_t n_failures[SVC_SERVICES], next_failure[SVC_SERVICES];
    struct receipt *receipts;
    size_t n_receipts;
    size_t polls, cancels;
    unsigned long serial; /* ids of messages, threads, requests */
    char **thread_keys;   /* Google Chat's threads, by key: thread i */
    size_t n_threads;
    int chatwork_remaining;
    int receipt_delay_ms; /* held before answering a receipt's GET */
};

/* --- answers ------------------------------------------------------------- */

static enum MHD_Result answer(struct MHD_Connection *conn, int status, const char *body,
                              const char *const *headers)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json; charset=utf-8");
    for (size_t i = 0; headers && headers[i]; i += 2)
        MHD_add_response_header(resp, headers[i], headers[i + 1]);
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* Google's error document. */
static enum MHD_Result gchat_error(struct MHD_Connection *conn, int code, const char *status,
                                   const char *message)
{
    char *body = xasprintf("{\"error\": {\"code\": %d, \"message\": \"%s\", \"status\": \"%s\"}}",
                           code, message, status);
    const char *const retry[] = {"Retry-After", "1", NULL};
    enum MHD_Result ok = answer(conn, code, body, code == 429 ? retry : NULL);
    free(body);
    return ok;
}

/* Chatwork's: {"errors": [MESSAGE]}, with the rate limit's headers. */
static enum MHD_Result chatwork_answer(struct svcapi *s, struct MHD_Connection *conn, int status,
                                       const char *body)
{
    char remaining[16], reset[24];
    snprintf(remaining, sizeof remaining, "%d", s->chatwork_remaining);
    snprintf(reset, sizeof reset, "%lld", (long long)time(NULL) + 300);
    const char *const headers[] = {"X-RateLimit-Limit",
                                   "300",
                                   "X-RateLimit-Remaining",
                                   remaining,
                                   "X-RateLimit-Reset",
                                   reset,
                                   NULL};
    return answer(conn, status, body, headers);
}

static enum MHD_Result chatwork_error(struct svcapi *s, struct MHD_Connection *conn, int status,
                                      const char *message)
{
    char *body = xasprintf("{\"errors\": [\"%s\"]}", message);
    enum MHD_Result ok = chatwork_answer(s, conn, status, body);
    free(body);
    return ok;
}

/* Pushover's: {"FIELD": "invalid", "errors": [MESSAGE], "status": 0,
 * "request": ID}. */
static enum MHD_Result pushover_error(struct svcapi *s, struct MHD_Connection *conn, int status,
                                      const char *field, const char *message)
{
    char *body = xasprintf("{%s%s%s\"errors\": [\"%s\"], \"status\": 0, \"request\": "
                           "\"5042853c-402d-4a18-abcb-%012lu\"}",
                           field ? "\"" : "", field ? field : "", field ? "\": \"invalid\", " : "",
                           message, ++s->serial);
    enum MHD_Result ok = answer(conn, status, body, NULL);
    free(body);
    return ok;
}

/* The next scripted failure of `service`, 0 when none (called locked). */
static int next_failure(struct svcapi *s, enum svc_service service)
{
    if (s->next_failure[service] < s->n_failures[service])
        return s->failures[service][s->next_failure[service]++];
    return 0;
}

static void keep(struct svcapi *s, enum svc_service service, struct svc_message m)
{
    if (s->n[service] == s->cap[service]) {
        s->cap[service] = s->cap[service] ? 2 * s->cap[service] : 8;
        s->msgs[service] = xreallocarray(s->msgs[service], s->cap[service], sizeof m);
    }
    s->msgs[service][s->n[service]++] = m;
}

/* --- forms --------------------------------------------------------------- */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The value of field `name` of an application/x-www-form-urlencoded body,
 * decoded; NULL when absent. Caller frees. */
static char *form_get(const char *body, const char *name)
{
    size_t nlen = strlen(name);
    for (const char *p = body; p && *p;) {
        const char *end = p + strcspn(p, "&");
        if ((size_t)(end - p) > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
            struct buf v;
            buf_init(&v, 0);
            for (const char *q = p + nlen + 1; q < end; q++) {
                if (*q == '+') {
                    buf_append(&v, " ", 1);
                } else if (*q == '%' && end - q >= 3 && hexval(q[1]) >= 0 && hexval(q[2]) >= 0) {
                    char c = (char)(hexval(q[1]) * 16 + hexval(q[2]));
                    buf_append(&v, &c, 1);
                    q += 2;
                } else {
                    buf_append(&v, q, 1);
                }
            }
            return buf_steal(&v);
        }
        p = *end ? end + 1 : NULL;
    }
    return NULL;
}

static size_t chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static bool content_type_is(struct MHD_Connection *conn, const char *type)
{
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    return ct && strncasecmp(ct, type, strlen(type)) == 0;
}

/* --- Google Chat --------------------------------------------------------- */

static const char *gchat_thread(struct svcapi *s, const char *key, char *name, size_t size)
{
    size_t i = 0;
    for (; key && i < s->n_threads; i++)
        if (s->thread_keys[i] && strcmp(s->thread_keys[i], key) == 0)
            break;
    if (!key || i == s->n_threads) {
        s->thread_keys = xreallocarray(s->thread_keys, s->n_threads + 1, sizeof *s->thread_keys);
        /* A thread without a key is never found again. */
        s->thread_keys[s->n_threads] = key ? xstrdup(key) : NULL;
        i = s->n_threads++;
    }
    snprintf(name, size, "spaces/" SVC_GCHAT_SPACE "/threads/T%04zu", i);
    return name;
}

static enum MHD_Result googlechat(struct svcapi *s, struct MHD_Connection *conn, const char *method,
                                  const char *path, const char *body)
{
    const char *key = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "key");
    const char *token = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
    const char *option =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "messageReplyOption");
    if (strcmp(method, "POST") != 0)
        return gchat_error(conn, 404, "NOT_FOUND", "Method not found.");
    if (strcmp(path, "/v1/spaces/" SVC_GCHAT_SPACE "/messages") != 0)
        return gchat_error(conn, 404, "NOT_FOUND", "Requested entity was not found.");
    if (!key || strcmp(key, SVC_GCHAT_KEY) != 0)
        return gchat_error(conn, 400, "INVALID_ARGUMENT",
                           "API key not valid. Please pass a valid API key.");
    if (!token || strcmp(token, SVC_GCHAT_TOKEN) != 0)
        return gchat_error(conn, 401, "UNAUTHENTICATED",
                           "Request had invalid authentication credentials.");
    if (option && strcmp(option, "MESSAGE_REPLY_OPTION_UNSPECIFIED") != 0 &&
        strcmp(option, "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD") != 0 &&
        strcmp(option, "REPLY_MESSAGE_OR_FAIL") != 0)
        return gchat_error(conn, 400, "INVALID_ARGUMENT",
                           "Invalid value at 'message_reply_option'");
    if (!content_type_is(conn, "application/json"))
        return gchat_error(conn, 400, "INVALID_ARGUMENT", "Invalid JSON payload received.");
    struct json_object *doc = json_tokener_parse(body), *text = NULL, *cards = NULL, *thread,
                       *tk = NULL;
    if (!doc || !json_object_is_type(doc, json_type_object)) {
        json_object_put(doc);
        return gchat_error(conn, 400, "INVALID_ARGUMENT", "Invalid JSON payload received.");
    }
    bool has_text = json_object_object_get_ex(doc, "text", &text) &&
                    json_object_is_type(text, json_type_string) &&
                    json_object_get_string_len(text) > 0;
    bool has_cards = json_object_object_get_ex(doc, "cardsV2", &cards);
    bool bad_thread = json_object_object_get_ex(doc, "thread", &thread) &&
                      (!json_object_is_type(thread, json_type_object) ||
                       (json_object_object_get_ex(thread, "threadKey", &tk) &&
                        !json_object_is_type(tk, json_type_string)));
    const char *problem = !has_text && !has_cards ? "Message cannot be empty."
                          : has_text && json_object_get_string_len(text) > GCHAT_MESSAGE_MAX
                              ? "Message text is too long."
                          : bad_thread ? "Invalid value at 'message.thread'"
                                       : NULL;
    if (problem) {
        json_object_put(doc);
        return gchat_error(conn, 400, "INVALID_ARGUMENT", problem);
    }
    int failure = next_failure(s, SVC_GOOGLECHAT);
    if (failure) {
        json_object_put(doc);
        return gchat_error(conn, failure, failure == 429 ? "RESOURCE_EXHAUSTED" : "INTERNAL",
                           failure == 429 ? "Resource has been exhausted (e.g. check quota)."
                                          : "Internal error encountered.");
    }
    /* A thread key names a thread only with a reply option that says to
     * reply: without one Google Chat starts a new thread. */
    const char *want = tk && option && strcmp(option, "MESSAGE_REPLY_OPTION_UNSPECIFIED") != 0
                           ? json_object_get_string(tk)
                           : NULL;
    char thread_name[96];
    gchat_thread(s, want, thread_name, sizeof thread_name);
    unsigned long id = ++s->serial;
    struct svc_message m = {
        .text = has_text ? xstrdup(json_object_get_string(text)) : NULL,
        .thread_key = tk ? xstrdup(json_object_get_string(tk)) : NULL,
        .thread_name = xstrdup(thread_name),
        .reply_option = option ? xstrdup(option) : NULL,
    };
    keep(s, SVC_GOOGLECHAT, m);
    struct json_object *out = json_object_new_object(), *th = json_object_new_object(),
                       *sender = json_object_new_object(), *space = json_object_new_object();
    char name[96];
    snprintf(name, sizeof name, "spaces/" SVC_GCHAT_SPACE "/messages/M%lu.M%lu", id, id);
    json_object_object_add(out, "name", json_object_new_string(name));
    json_object_object_add(sender, "name", json_object_new_string("users/114022495153014004089"));
    json_object_object_add(sender, "type", json_object_new_string("BOT"));
    json_object_object_add(out, "sender", sender);
    json_object_object_add(out, "createTime", json_object_new_string("2026-11-27T22:00:00.000Z"));
    if (has_text)
        json_object_object_add(out, "text", json_object_get(text));
    json_object_object_add(th, "name", json_object_new_string(thread_name));
    if (tk)
        json_object_object_add(th, "threadKey", json_object_get(tk));
    json_object_object_add(out, "thread", th);
    json_object_object_add(space, "name", json_object_new_string("spaces/" SVC_GCHAT_SPACE));
    json_object_object_add(out, "space", space);
    enum MHD_Result ok = answer(conn, 200, json_object_to_json_string(out), NULL);
    json_object_put(out);
    json_object_put(doc);
    return ok;
}

/* --- Chatwork ------------------------------------------------------------ */

static enum MHD_Result chatwork(struct svcapi *s, struct MHD_Connection *conn, const char *method,
                                const char *path, const char *body)
{
    const char *token = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-ChatWorkToken");
    if (!token || strcmp(token, SVC_CHATWORK_TOKEN) != 0)
        return chatwork_error(s, conn, 401, "Invalid API token");
    if (s->chatwork_remaining <= 0)
        return chatwork_error(s, conn, 429, "Rate limit exceeded");
    s->chatwork_remaining--;
    const char *rest = path + strlen("/v2/rooms/");
    size_t digits = strspn(rest, "0123456789");
    if (digits == 0 || strcmp(rest + digits, "/messages") != 0)
        return chatwork_error(s, conn, 404, "Resource not found");
    if (strcmp(method, "POST") != 0)
        return chatwork_error(s, conn, 405, "Method not allowed");
    if (strncmp(rest, SVC_CHATWORK_ROOM, digits) != 0 || digits != strlen(SVC_CHATWORK_ROOM))
        return chatwork_error(s, conn, 403,
                              "You don't have permission to send messages in this room");
    if (!content_type_is(conn, "application/x-www-form-urlencoded"))
        return chatwork_error(s, conn, 400, "Parameter [body] is required");
    char *text = form_get(body, "body"), *unread = form_get(body, "self_unread");
    const char *problem = !text || !*text ? "Parameter [body] is required"
                          : unread && strcmp(unread, "0") != 0 && strcmp(unread, "1") != 0
                              ? "Invalid parameter value: self_unread"
                              : NULL;
    int failure = problem ? 0 : next_failure(s, SVC_CHATWORK);
    enum MHD_Result ok;
    if (problem) {
        ok = chatwork_error(s, conn, 400, problem);
    } else if (failure) {
        ok = chatwork_error(s, conn, failure,
                            failure == 429 ? "Rate limit exceeded" : "Internal Server Error");
    } else {
        keep(s, SVC_CHATWORK,
             (struct svc_message){.text = xstrdup(text), .self_unread = xstrdup_or_null(unread)});
        char *reply = xasprintf("{\"message_id\": \"%lu\"}", 1500000000UL + ++s->serial);
        ok = chatwork_answer(s, conn, 200, reply);
        free(reply);
    }
    free(text);
    free(unread);
    return ok;
}

/* --- Pushover ------------------------------------------------------------ */

static struct receipt *find_receipt(struct svcapi *s, const char *id, size_t len)
{
    for (size_t i = 0; i < s->n_receipts; i++)
        if (strlen(s->receipts[i].id) == len && strncmp(s->receipts[i].id, id, len) == 0)
            return &s->receipts[i];
    return NULL;
}

static enum MHD_Result pushover_message(struct svcapi *s, struct MHD_Connection *conn,
                                        const char *body)
{
    static const char *const names[] = {"token",  "user", "message",   "title", "priority", "retry",
                                        "expire", "url",  "url_title", "tags",  "timestamp"};
    char *f[11];
    for (size_t i = 0; i < 11; i++)
        f[i] = form_get(body, names[i]);
    long priority = f[4] ? strtol(f[4], NULL, 10) : 0;
    long retry = f[5] ? strtol(f[5], NULL, 10) : 0, expire = f[6] ? strtol(f[6], NULL, 10) : 0;
    const char *field = NULL, *problem = NULL;
    int status = 400;
    if (!content_type_is(conn, "application/x-www-form-urlencoded") &&
        !content_type_is(conn, "multipart/form-data"))
        field = "token", problem = "application token is invalid";
    else if (!f[0] || strcmp(f[0], SVC_PUSHOVER_TOKEN) != 0)
        field = "token", problem = "application token is invalid";
    else if (!f[1] || strcmp(f[1], SVC_PUSHOVER_USER) != 0)
        field = "user",
        problem = "user identifier is not a valid user, group, or subscribed user key";
    else if (!f[2] || !*f[2])
        field = "message", problem = "message cannot be blank";
    else if (chars(f[2]) > PUSHOVER_MESSAGE_MAX)
        field = "message", problem = "message is too long, maximum is 1024 characters";
    else if (f[3] && chars(f[3]) > PUSHOVER_TITLE_MAX)
        field = "title", problem = "title is too long, maximum is 250 characters";
    else if (f[4] && (priority < -2 || priority > 2 || strspn(f[4], "-0123456789") != strlen(f[4])))
        field = "priority", problem = "priority is invalid";
    else if (priority == 2 && (!f[5] || retry < 30))
        field = "retry", problem = "retry is invalid, must be at least 30 seconds";
    else if (priority == 2 && (!f[6] || expire < 1 || expire > 10800))
        field = "expire", problem = "expire is invalid, must be at most 10800 seconds";
    else if (f[7] && chars(f[7]) > PUSHOVER_URL_MAX)
        field = "url", problem = "url is too long, maximum is 512 characters";
    else if (f[10] && (!*f[10] || strspn(f[10], "0123456789") != strlen(f[10])))
        field = "timestamp", problem = "timestamp is invalid";
    int failure = problem ? 0 : next_failure(s, SVC_PUSHOVER);
    enum MHD_Result ok;
    if (problem) {
        ok = pushover_error(s, conn, status, field, problem);
    } else if (failure) {
        ok = pushover_error(s, conn, failure, NULL,
                            failure == 429 ? "application is over its message limit"
                                           : "internal error");
    } else {
        struct svc_message m = {.text = xstrdup(f[2]),
                                .title = xstrdup_or_null(f[3]),
                                .url = xstrdup_or_null(f[7]),
                                .tags = xstrdup_or_null(f[9]),
                                .priority = (int)priority,
                                .retry = retry,
                                .expire = expire};
        char receipt[64] = "";
        if (priority == 2) {
            s->receipts = xreallocarray(s->receipts, s->n_receipts + 1, sizeof *s->receipts);
            struct receipt *r = &s->receipts[s->n_receipts++];
            *r = (struct receipt){.expires_at = (long long)time(NULL) + expire,
                                  .tags = xstrdup_or_null(f[9])};
            snprintf(r->id, sizeof r->id, "rX%028lu", ++s->serial);
            snprintf(receipt, sizeof receipt, ", \"receipt\": \"%s\"", r->id);
            m.receipt = xstrdup(r->id);
        }
        keep(s, SVC_PUSHOVER, m);
        char *reply =
            xasprintf("{\"status\": 1, \"request\": \"647d2300-702c-4b38-8b2f-%012lu\"%s}",
                      ++s->serial, receipt);
        const char *const limits[] = {
            "X-Limit-App-Limit", "10000", "X-Limit-App-Remaining", "9999", "X-Limit-App-Reset",
            "1893456000",        NULL};
        ok = answer(conn, 200, reply, limits);
        free(reply);
    }
    for (size_t i = 0; i < 11; i++)
        free(f[i]);
    return ok;
}

/* Whether comma-separated `tags` holds `tag` (`len` bytes). */
static bool has_tag(const char *tags, const char *tag, size_t len)
{
    for (const char *p = tags; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, tag, len) == 0)
            return true;
        p = p[n] ? p + n + 1 : NULL;
    }
    return false;
}

/* POST /1/receipts/cancel_by_tag/TAG.json: cancels every emergency with
 * that tag that still repeats. */
static enum MHD_Result pushover_cancel_by_tag(struct svcapi *s, struct MHD_Connection *conn,
                                              const char *method, const char *rest,
                                              const char *body)
{
    size_t len = strlen(rest);
    if (strcmp(method, "POST") != 0 || len <= 5 || strcmp(rest + len - 5, ".json") != 0)
        return pushover_error(s, conn, 404, NULL, "not found");
    char *token = form_get(body, "token");
    bool good = token && strcmp(token, SVC_PUSHOVER_TOKEN) == 0;
    free(token);
    if (!good)
        return pushover_error(s, conn, 400, "token", "application token is invalid");
    int canceled = 0;
    for (size_t i = 0; i < s->n_receipts; i++)
        if (!s->receipts[i].cancelled && has_tag(s->receipts[i].tags, rest, len - 5)) {
            s->receipts[i].cancelled = true;
            canceled++;
        }
    s->cancels++;
    char *reply = xasprintf("{\"status\": 1, \"canceled\": %d, \"request\": "
                            "\"d6a1c2e3-0000-4000-8000-%012lu\"}",
                            canceled, ++s->serial);
    enum MHD_Result ok = answer(conn, 200, reply, NULL);
    free(reply);
    return ok;
}

static enum MHD_Result pushover(struct svcapi *s, struct MHD_Connection *conn, const char *method,
                                const char *path, const char *body)
{
    if (strcmp(path, "/1/messages.json") == 0 && strcmp(method, "POST") == 0)
        return pushover_message(s, conn, body);
    if (strncmp(path, "/1/receipts/cancel_by_tag/", 26) == 0)
        return pushover_cancel_by_tag(s, conn, method, path + 26, body);
    const char *rest = path + strlen("/1/receipts/");
    size_t len = strcspn(rest, "./");
    struct receipt *r = find_receipt(s, rest, len);
    bool poll = strcmp(rest + len, ".json") == 0 && strcmp(method, "GET") == 0;
    bool cancel = strcmp(rest + len, "/cancel.json") == 0 && strcmp(method, "POST") == 0;
    char *token = NULL;
    if (poll)
        token = xstrdup_or_null(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token"));
    else if (cancel)
        token = form_get(body, "token");
    enum MHD_Result ok;
    if (!poll && !cancel) {
        ok = pushover_error(s, conn, 404, NULL, "not found");
    } else if (!token || strcmp(token, SVC_PUSHOVER_TOKEN) != 0) {
        ok = pushover_error(s, conn, 400, "token", "application token is invalid");
    } else if (!r) {
        ok =
            pushover_error(s, conn, 404, "receipt", "receipt not found; may be invalid or expired");
    } else if (cancel) {
        s->cancels++;
        r->cancelled = true;
        ok = answer(conn, 200,
                    "{\"status\": 1, \"request\": \"c4a7e1b2-0000-4000-8000-000000000001\"}", NULL);
    } else {
        s->polls++;
        char *reply = xasprintf(
            "{\"status\": 1, \"acknowledged\": %d, \"acknowledged_at\": %lld, "
            "\"acknowledged_by\": \"%s\", \"acknowledged_by_device\": \"%s\", "
            "\"last_delivered_at\": %lld, \"expired\": %d, \"expires_at\": %lld, "
            "\"called_back\": 0, \"called_back_at\": 0, "
            "\"request\": \"b3d0f7c1-0000-4000-8000-%012lu\"}",
            r->acknowledged, r->acked_at, r->acknowledged ? SVC_PUSHOVER_USER : "",
            r->acknowledged && r->device ? r->device : "", (long long)time(NULL),
            (long long)time(NULL) >= r->expires_at || r->cancelled, r->expires_at, ++s->serial);
        ok = answer(conn, 200, reply, NULL);
        free(reply);
    }
    free(token);
    return ok;
}

/* --- the server ---------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    struct svcapi *s = cls;
    struct upload *up = upload_feed(con_cls, upload_data, upload_data_size, BODY_MAX);
    if (!up)
        return MHD_YES;
    const char *body = buf_str(&up->body);
    enum MHD_Result ok;
    pthread_mutex_lock(&s->lock);
    int delay_ms = strncmp(url, "/1/receipts/", 12) == 0 && strcmp(method, "GET") == 0
                       ? s->receipt_delay_ms
                       : 0;
    pthread_mutex_unlock(&s->lock);
    if (delay_ms > 0) {
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&s->lock);
    if (strncmp(url, "/v1/", 4) == 0) {
        s->requests[SVC_GOOGLECHAT]++;
        ok = googlechat(s, conn, method, url, body);
    } else if (strncmp(url, "/v2/rooms/", 10) == 0) {
        s->requests[SVC_CHATWORK]++;
        ok = chatwork(s, conn, method, url, body);
    } else if (strncmp(url, "/1/", 3) == 0) {
        s->requests[SVC_PUSHOVER]++;
        ok = pushover(s, conn, method, url, body);
    } else {
        ok = answer(conn, 404, "{}", NULL);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

struct svcapi *svcapi_start(void)
{
    struct svcapi *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    s->chatwork_remaining = CHATWORK_RATE_LIMIT;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
                                 on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, upload_completed, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!s->daemon) {
        svcapi_stop(s);
        cr_assert_fail("svcapi: cannot listen on 127.0.0.1");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port) {
        svcapi_stop(s);
        cr_assert_fail("svcapi: no port bound");
    }
    s->base = xasprintf("http://127.0.0.1:%u", (unsigned)info->port);
    return s;
}

const char *svcapi_base(const struct svcapi *s)
{
    return s->base;
}

char *svcapi_gchat_url(const struct svcapi *s)
{
    return xasprintf("%s/v1/spaces/" SVC_GCHAT_SPACE "/messages?key=" SVC_GCHAT_KEY
                     "&token=" SVC_GCHAT_TOKEN,
                     s->base);
}

void svcapi_push_failure(struct svcapi *s, enum svc_service service, int status)
{
    pthread_mutex_lock(&s->lock);
    s->failures[service] =
        xreallocarray(s->failures[service], s->n_failures[service] + 1, sizeof(int));
    s->failures[service][s->n_failures[service]++] = status;
    pthread_mutex_unlock(&s->lock);
}

size_t svcapi_requests(struct svcapi *s, enum svc_service service)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->requests[service];
    pthread_mutex_unlock(&s->lock);
    return n;
}

size_t svcapi_count(struct svcapi *s, enum svc_service service)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->n[service];
    pthread_mutex_unlock(&s->lock);
    return n;
}

struct svc_message *svcapi_message(struct svcapi *s, enum svc_service service, size_t i)
{
    struct svc_message *copy = NULL;
    pthread_mutex_lock(&s->lock);
    if (i < s->n[service]) {
        const struct svc_message *m = &s->msgs[service][i];
        copy = xcalloc(1, sizeof *copy);
        *copy = *m;
        copy->text = xstrdup_or_null(m->text);
        copy->thread_key = xstrdup_or_null(m->thread_key);
        copy->thread_name = xstrdup_or_null(m->thread_name);
        copy->reply_option = xstrdup_or_null(m->reply_option);
        copy->title = xstrdup_or_null(m->title);
        copy->url = xstrdup_or_null(m->url);
        copy->self_unread = xstrdup_or_null(m->self_unread);
        copy->receipt = xstrdup_or_null(m->receipt);
        copy->tags = xstrdup_or_null(m->tags);
    }
    pthread_mutex_unlock(&s->lock);
    return copy;
}

static void message_clear(struct svc_message *m)
{
    free(m->text);
    free(m->thread_key);
    free(m->thread_name);
    free(m->reply_option);
    free(m->title);
    free(m->url);
    free(m->self_unread);
    free(m->receipt);
    free(m->tags);
}

void svc_message_free(struct svc_message *m)
{
    if (m)
        message_clear(m);
    free(m);
}

bool svcapi_pushover_ack(struct svcapi *s, const char *receipt, const char *device)
{
    pthread_mutex_lock(&s->lock);
    struct receipt *r = find_receipt(s, receipt, strlen(receipt));
    if (r) {
        r->acknowledged = true;
        r->acked_at = (long long)time(NULL);
        free(r->device);
        r->device = xstrdup_or_null(device);
    }
    pthread_mutex_unlock(&s->lock);
    return r != NULL;
}

size_t svcapi_receipt_polls(struct svcapi *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->polls;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void svcapi_set_receipt_delay_ms(struct svcapi *s, int ms)
{
    pthread_mutex_lock(&s->lock);
    s->receipt_delay_ms = ms > 0 ? ms : 0;
    pthread_mutex_unlock(&s->lock);
}

bool svcapi_receipt_cancelled(struct svcapi *s, const char *receipt)
{
    pthread_mutex_lock(&s->lock);
    struct receipt *r = find_receipt(s, receipt, strlen(receipt));
    bool cancelled = r && r->cancelled;
    pthread_mutex_unlock(&s->lock);
    return cancelled;
}

size_t svcapi_receipt_cancels(struct svcapi *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->cancels;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void svcapi_stop(struct svcapi *s)
{
    if (!s)
        return;
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    for (int k = 0; k < SVC_SERVICES; k++) {
        for (size_t i = 0; i < s->n[k]; i++)
            message_clear(&s->msgs[k][i]);
        free(s->msgs[k]);
        free(s->failures[k]);
    }
    for (size_t i = 0; i < s->n_receipts; i++) {
        free(s->receipts[i].device);
        free(s->receipts[i].tags);
    }
    free(s->receipts);
    for (size_t i = 0; i < s->n_threads; i++)
        free(s->thread_keys[i]);
    free(s->thread_keys);
    free(s->base);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
