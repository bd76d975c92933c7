/* A raw HTTP server for tests: plain sockets, one thread to accept and one
 * per connection, every wait cut into short slices so that the server can
 * stop at any moment (rawhttp_stop, or its lifetime running out). */
#include "rawhttp.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64u * 1024) /* a request's line and headers */
#define CONN_MAX 1024         /* connections over the server's life; later ones are closed */
#define SLICE_MS 50           /* the longest wait without looking at the stop flag */
#define PIECE_MAX (64u * 1024)

struct conn {
    struct rawhttp *s;
    int fd;
};

struct rawhttp {
    int listen_fd;
    char *url;
    double deadline; /* CLOCK_MONOTONIC seconds */
    atomic_bool stopping;
    pthread_t acceptor;
    pthread_mutex_t lock;          /* guards everything below */
    struct rawhttp_reply *replies; /* heads owned */
    size_t n_replies;
    size_t next; /* index into the replies of the next request */
    struct rawhttp_request *reqs;
    size_t n, cap;
    pthread_t threads[CONN_MAX];
    size_t n_threads;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool should_stop(struct rawhttp *s)
{
    if (atomic_load(&s->stopping))
        return true;
    if (now_s() >= s->deadline) {
        atomic_store(&s->stopping, true);
        return true;
    }
    return false;
}

/* Sleeps `ms`, in slices; false when the server is stopping. */
static bool pause_ms(struct rawhttp *s, unsigned ms)
{
    double until = now_s() + ms / 1000.0;
    while (!should_stop(s)) {
        double left = until - now_s();
        if (left <= 0)
            return true;
        long slice = left * 1000 < SLICE_MS ? (long)(left * 1000) + 1 : SLICE_MS;
        struct timespec ts = {0, slice * 1000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Waits until `fd` is ready for `events`; false when the server stops or
 * the peer is gone. */
static bool wait_fd(struct rawhttp *s, int fd, short events)
{
    while (!should_stop(s)) {
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, SLICE_MS);
        if (r < 0 && errno != EINTR)
            return false;
        if (r > 0)
            return (p.revents & events) != 0 || (p.revents & POLLHUP && events == POLLIN);
    }
    return false;
}

/* Writes all of `data`; false when the client left or the server stops. */
static bool write_all(struct rawhttp *s, int fd, const char *data, size_t len)
{
    while (len > 0) {
        if (!wait_fd(s, fd, POLLOUT))
            return false;
        ssize_t w = send(fd, data, len < PIECE_MAX ? len : PIECE_MAX, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            return false;
        data += w;
        len -= (size_t)w;
    }
    return true;
}

/* Appends to `b` what the client sent next; false on end of stream, error,
 * a full buffer or stop. */
static bool read_more(struct rawhttp *s, int fd, struct buf *b)
{
    char chunk[16384];
    if (!wait_fd(s, fd, POLLIN))
        return false;
    ssize_t r = recv(fd, chunk, sizeof chunk, 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (r <= 0)
        return false;
    return buf_append(b, chunk, (size_t)r) == 0;
}

static char *header_in(const char *headers, const char *name)
{
    size_t nl = strlen(name);
    for (const char *line = headers; *line;) {
        const char *end = strstr(line, "\r\n");
        if (!end)
            end = line + strlen(line);
        if ((size_t)(end - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            const char *e = end;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            return xstrndup(v, (size_t)(e - v));
        }
        line = *end ? end + 2 : end;
    }
    return NULL;
}

/* Reads one request; fills *req (strings owned) and returns true, or false
 * when the client left, sent something that is not a request, or the
 * server stops. */
static bool read_request(struct rawhttp *s, int fd, struct rawhttp_request *req)
{
    bool ok = false;
    struct buf in;
    buf_init(&in, HEAD_MAX + RAWHTTP_BODY_MAX);
    const char *end_of_head = NULL;
    while (!(end_of_head = in.data ? strstr(in.data, "\r\n\r\n") : NULL)) {
        if (in.len > HEAD_MAX || !read_more(s, fd, &in))
            goto out;
    }
    size_t head_len = (size_t)(end_of_head - in.data) + 4;
    const char *line_end = strstr(in.data, "\r\n");
    const char *sp1 = memchr(in.data, ' ', (size_t)(line_end - in.data));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
    if (!sp2)
        goto out;
    req->method = xstrndup(in.data, (size_t)(sp1 - in.data));
    req->target = xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
    req->headers = xstrndup(line_end + 2, head_len - (size_t)(line_end + 2 - in.data) - 2);
    char *length = header_in(req->headers, "Content-Length");
    unsigned long long want = length ? strtoull(length, NULL, 10) : 0;
    free(length);
    char *expect = header_in(req->headers, "Expect");
    if (expect && strcasecmp(expect, "100-continue") == 0) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (!write_all(s, fd, cont, sizeof cont - 1)) {
            free(expect);
            goto out;
        }
    }
    free(expect);
    /* The body: the first RAWHTTP_BODY_MAX bytes kept, the rest counted. */
    struct buf body;
    buf_init(&body, RAWHTTP_BODY_MAX);
    size_t have = in.len - head_len;
    buf_append(&body, in.data + head_len, have < RAWHTTP_BODY_MAX ? have : RAWHTTP_BODY_MAX);
    unsigned long long got = have;
    while (got < want) {
        char chunk[16384];
        if (!wait_fd(s, fd, POLLIN))
            break;
        ssize_t r = recv(fd, chunk, sizeof chunk, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0)
            break;
        size_t room = RAWHTTP_BODY_MAX - body.len;
        buf_append(&body, chunk, (size_t)r < room ? (size_t)r : room);
        got += (unsigned long long)r;
    }
    req->body = xstrdup(buf_str(&body));
    req->body_len = (size_t)got;
    buf_free(&body);
    ok = got >= want;
out:
    buf_free(&in);
    return ok;
}

static void request_clear(struct rawhttp_request *r)
{
    free(r->method);
    free(r->target);
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Records `req` (taken over) and copies out its reply; returns its index. */
static size_t record(struct rawhttp *s, struct rawhttp_request *req, struct rawhttp_reply *reply)
{
    pthread_mutex_lock(&s->lock);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->reqs = xreallocarray(s->reqs, s->cap, sizeof *s->reqs);
    }
    req->at = now_s();
    size_t i = s->n;
    s->reqs[s->n++] = *req;
    size_t k = s->next < s->n_replies ? s->next : s->n_replies - 1;
    s->next++;
    *reply = s->replies[k];
    char *head = xmalloc(reply->head_len + 1);
    memcpy(head, reply->head, reply->head_len + 1);
    reply->head = head;
    pthread_mutex_unlock(&s->lock);
    return i;
}

/* Writes `reply` as its options say; true when all of it went out. */
static bool write_reply(struct rawhttp *s, int fd, const struct rawhttp_reply *reply)
{
    unsigned long long total = reply->head_len + reply->fill;
    if (reply->fill == RAWHTTP_FOREVER)
        total = RAWHTTP_FOREVER;
    unsigned long long limit =
        reply->close_after && reply->close_after < total ? reply->close_after : total;
    size_t piece = reply->chunk && reply->chunk < PIECE_MAX ? reply->chunk : PIECE_MAX;
    char *fill = xmalloc(piece);
    memset(fill, reply->fill_byte ? reply->fill_byte : 'x', piece);
    bool ok = false, paced = false;
    if (reply->delay_ms && !pause_ms(s, reply->delay_ms))
        goto out;
    for (unsigned long long sent = 0; sent < limit;) {
        unsigned long long n;
        if (sent < reply->head_len && !reply->pace_head) {
            n = reply->head_len - sent;
        } else {
            if (paced && reply->every_ms && !pause_ms(s, reply->every_ms))
                goto out;
            paced = true;
            n = piece;
        }
        if (n > limit - sent)
            n = limit - sent;
        /* A piece may straddle the head and the fill. */
        size_t from_head = sent < reply->head_len ? reply->head_len - (size_t)sent : 0;
        if (from_head > n)
            from_head = (size_t)n;
        if (from_head && !write_all(s, fd, reply->head + sent, from_head))
            goto out;
        if (n > from_head && !write_all(s, fd, fill, (size_t)(n - from_head)))
            goto out;
        sent += n;
    }
    ok = limit == total;
    if (reply->hold_ms)
        pause_ms(s, reply->hold_ms);
out:
    free(fill);
    return ok;
}

static void *serve(void *arg)
{
    struct conn *c = arg;
    struct rawhttp *s = c->s;
    struct rawhttp_request req = {0};
    if (read_request(s, c->fd, &req)) {
        struct rawhttp_reply reply;
        size_t i = record(s, &req, &reply);
        bool ended = write_reply(s, c->fd, &reply);
        free((char *)reply.head);
        pthread_mutex_lock(&s->lock);
        s->reqs[i].reply_ended = ended;
        pthread_mutex_unlock(&s->lock);
    } else {
        request_clear(&req);
    }
    /* Whatever the client still sends is dropped with the connection. */
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
    free(c);
    return NULL;
}

static void *accept_loop(void *arg)
{
    struct rawhttp *s = arg;
    while (wait_fd(s, s->listen_fd, POLLIN)) {
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        pthread_mutex_lock(&s->lock);
        bool room = s->n_threads < CONN_MAX;
        struct conn *c = NULL;
        if (room) {
            c = xmalloc(sizeof *c);
            *c = (struct conn){.s = s, .fd = fd};
            if (pthread_create(&s->threads[s->n_threads], NULL, serve, c) == 0)
                s->n_threads++;
            else
                room = false;
        }
        pthread_mutex_unlock(&s->lock);
        if (!room) {
            free(c);
            close(fd);
        }
    }
    return NULL;
}

/* Copies `replies` into s (the lock held or not yet shared). */
static void set_replies(struct rawhttp *s, const struct rawhttp_reply *replies, size_t n)
{
    for (size_t i = 0; i < s->n_replies; i++)
        free((char *)s->replies[i].head);
    free(s->replies);
    s->replies = xcalloc(n, sizeof *s->replies);
    for (size_t i = 0; i < n; i++) {
        s->replies[i] = replies[i];
        size_t len = replies[i].head_len ? replies[i].head_len : strlen(replies[i].head);
        char *head = xmalloc(len + 1);
        memcpy(head, replies[i].head, len);
        head[len] = '\0';
        s->replies[i].head = head;
        s->replies[i].head_len = len;
    }
    s->n_replies = n;
    s->next = 0;
}

struct rawhttp *rawhttp_start(const struct rawhttp_reply *replies, size_t n, int lifetime_s)
{
    cr_assert(n >= 1 && replies, "rawhttp: at least one reply");
    struct rawhttp *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    set_replies(s, replies, n);
    s->deadline = now_s() + lifetime_s;
    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        listen(s->listen_fd, 64) < 0 ||
        getsockname(s->listen_fd, (struct sockaddr *)&addr, &len) < 0) {
        int err = errno;
        rawhttp_stop(s);
        cr_assert_fail("rawhttp: cannot listen on 127.0.0.1: %s", strerror(err));
    }
    s->url = xasprintf("http://127.0.0.1:%u", (unsigned)ntohs(addr.sin_port));
    if (pthread_create(&s->acceptor, NULL, accept_loop, s) != 0) {
        close(s->listen_fd);
        s->listen_fd = -1;
        rawhttp_stop(s);
        cr_assert_fail("rawhttp: cannot start a thread");
    }
    return s;
}

void rawhttp_set_replies(struct rawhttp *s, const struct rawhttp_reply *replies, size_t n)
{
    cr_assert(n >= 1 && replies, "rawhttp: at least one reply");
    pthread_mutex_lock(&s->lock);
    set_replies(s, replies, n);
    pthread_mutex_unlock(&s->lock);
}

const char *rawhttp_url(const struct rawhttp *s)
{
    return s->url;
}

size_t rawhttp_count(struct rawhttp *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->n;
    pthread_mutex_unlock(&s->lock);
    return n;
}

size_t rawhttp_wait(struct rawhttp *s, size_t n, int timeout_ms)
{
    size_t have = rawhttp_count(s);
    for (int waited = 0; have < n && waited < timeout_ms; waited += 10) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        have = rawhttp_count(s);
    }
    return have;
}

struct rawhttp_request *rawhttp_request(struct rawhttp *s, size_t i)
{
    struct rawhttp_request *copy = NULL;
    pthread_mutex_lock(&s->lock);
    if (i < s->n) {
        const struct rawhttp_request *r = &s->reqs[i];
        copy = xcalloc(1, sizeof *copy);
        *copy = *r;
        copy->method = xstrdup(r->method);
        copy->target = xstrdup(r->target);
        copy->headers = xstrdup(r->headers);
        copy->body = xstrdup(r->body);
    }
    pthread_mutex_unlock(&s->lock);
    return copy;
}

void rawhttp_request_free(struct rawhttp_request *r)
{
    if (!r)
        return;
    request_clear(r);
    free(r);
}

char *rawhttp_header(const struct rawhttp_request *r, const char *name)
{
    return header_in(r->headers, name);
}

void rawhttp_stop(struct rawhttp *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, true);
    if (s->url)
        pthread_join(s->acceptor, NULL);
    /* The acceptor is gone: nobody adds threads any more. */
    for (size_t i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    for (size_t i = 0; i < s->n; i++)
        request_clear(&s->reqs[i]);
    free(s->reqs);
    for (size_t i = 0; i < s->n_replies; i++)
        free((char *)s->replies[i].head);
    free(s->replies);
    free(s->url);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
