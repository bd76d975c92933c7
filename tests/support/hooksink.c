/* An in-process HTTP sink for webhook deliveries: records each request
 * (method, path, content type, body, authorization) under a mutex and
 * answers with the configured status. */
#include "hooksink.h"
#include "upload.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define HOOK_BODY_MAX (1024u * 1024)

struct scripted {
    int status;
    char *body; /* NULL: the default text */
    int retry_after;
};

struct hooksink {
    struct MHD_Daemon *daemon;
    char *url;
    pthread_mutex_t lock; /* guards everything below */
    int status;
    int delay_ms;
    struct hook_request *reqs;
    size_t n, cap;
    struct scripted *script; /* replies to use first, in order */
    size_t script_n, script_next, script_cap;
};

/* Records the request and chooses its reply (*out: body owned by the
 * caller, NULL for the default text). */
static void record(struct hooksink *h, struct MHD_Connection *conn, const char *method,
                   const char *url, struct upload *up, struct scripted *out, int *out_delay_ms)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    struct hook_request r = {
        .method = xstrdup(method),
        .path = xstrdup(url),
        .content_type = xstrdup_or_null(ct),
        .body = xstrdup(buf_str(&up->body)),
        .authorization = xstrdup_or_null(auth),
        .at = (double)now.tv_sec + (double)now.tv_nsec / 1e9,
    };
    pthread_mutex_lock(&h->lock);
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->reqs = xreallocarray(h->reqs, h->cap, sizeof *h->reqs);
    }
    h->reqs[h->n++] = r;
    if (h->script_next < h->script_n) {
        *out = h->script[h->script_next];
        h->script[h->script_next++].body = NULL; /* handed over */
    } else {
        *out = (struct scripted){.status = h->status};
    }
    *out_delay_ms = h->delay_ms;
    pthread_mutex_unlock(&h->lock);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    struct hooksink *h = cls;
    struct upload *up = upload_feed(con_cls, upload_data, upload_data_size, HOOK_BODY_MAX);
    if (!up)
        return MHD_YES;
    struct scripted reply;
    int delay_ms = 0;
    record(h, conn, method, url, up, &reply, &delay_ms);
    if (delay_ms > 0) {
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (up->too_big)
        reply.status = MHD_HTTP_CONTENT_TOO_LARGE;
    const char *text = reply.body ? reply.body : reply.status == 200 ? "ok" : "error";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    free(reply.body);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/plain");
    if (reply.retry_after > 0) {
        char seconds[16];
        snprintf(seconds, sizeof seconds, "%d", reply.retry_after);
        MHD_add_response_header(resp, "Retry-After", seconds);
    }
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)reply.status, resp);
    MHD_destroy_response(resp);
    return ok;
}

struct hooksink *hooksink_start(void)
{
    struct hooksink *h = xcalloc(1, sizeof *h);
    pthread_mutex_init(&h->lock, NULL);
    h->status = 200;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
                                 on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, upload_completed, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!h->daemon) {
        hooksink_stop(h);
        cr_assert_fail("hooksink: cannot listen on 127.0.0.1");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port) {
        hooksink_stop(h);
        cr_assert_fail("hooksink: no port bound");
    }
    h->url = xasprintf("http://127.0.0.1:%u/hook", (unsigned)info->port);
    return h;
}

const char *hooksink_url(const struct hooksink *h)
{
    return h->url;
}

void hooksink_set_status(struct hooksink *h, int status)
{
    pthread_mutex_lock(&h->lock);
    h->status = status;
    pthread_mutex_unlock(&h->lock);
}

void hooksink_push_reply(struct hooksink *h, int status, const char *body, int retry_after)
{
    pthread_mutex_lock(&h->lock);
    if (h->script_n == h->script_cap) {
        h->script_cap = h->script_cap ? h->script_cap * 2 : 8;
        h->script = xreallocarray(h->script, h->script_cap, sizeof *h->script);
    }
    h->script[h->script_n++] = (struct scripted){
        .status = status, .body = xstrdup_or_null(body), .retry_after = retry_after};
    pthread_mutex_unlock(&h->lock);
}

void hooksink_set_delay_ms(struct hooksink *h, int ms)
{
    pthread_mutex_lock(&h->lock);
    h->delay_ms = ms > 0 ? ms : 0;
    pthread_mutex_unlock(&h->lock);
}

size_t hooksink_count(struct hooksink *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->n;
    pthread_mutex_unlock(&h->lock);
    return n;
}

size_t hooksink_wait(struct hooksink *h, size_t n, int timeout_ms)
{
    size_t have = hooksink_count(h);
    for (int waited = 0; have < n && waited < timeout_ms; waited += 10) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        have = hooksink_count(h);
    }
    return have;
}

struct hook_request *hooksink_request(struct hooksink *h, size_t i)
{
    struct hook_request *copy = NULL;
    pthread_mutex_lock(&h->lock);
    if (i < h->n) {
        const struct hook_request *r = &h->reqs[i];
        copy = xcalloc(1, sizeof *copy);
        copy->method = xstrdup(r->method);
        copy->path = xstrdup(r->path);
        copy->content_type = xstrdup_or_null(r->content_type);
        copy->body = xstrdup(r->body);
        copy->authorization = xstrdup_or_null(r->authorization);
        copy->at = r->at;
    }
    pthread_mutex_unlock(&h->lock);
    return copy;
}

static void request_clear(struct hook_request *r)
{
    free(r->method);
    free(r->path);
    free(r->content_type);
    free(r->body);
    free(r->authorization);
}

void hook_request_free(struct hook_request *r)
{
    if (!r)
        return;
    request_clear(r);
    free(r);
}

void hooksink_clear(struct hooksink *h)
{
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->n; i++)
        request_clear(&h->reqs[i]);
    h->n = 0;
    pthread_mutex_unlock(&h->lock);
}

void hooksink_stop(struct hooksink *h)
{
    if (!h)
        return;
    if (h->daemon)
        MHD_stop_daemon(h->daemon);
    hooksink_clear(h);
    free(h->reqs);
    for (size_t i = h->script_next; i < h->script_n; i++)
        free(h->script[i].body);
    free(h->script);
    free(h->url);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
