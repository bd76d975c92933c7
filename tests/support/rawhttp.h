/* A raw HTTP server for hostile-peer tests: it answers each request with
 * exactly the bytes a test gives, however wrong (a status line and headers
 * as written, invalid UTF-8, a Content-Length that lies, a body that comes
 * one byte a second forever, a connection closed mid-body, 100 MB of
 * body), and records what it was sent.
 *
 * It listens on 127.0.0.1 on a port the system chooses, on its own thread,
 * one more thread per connection. Request i (counting from 0 in the order
 * they were read whole, over every connection) gets reply
 * min(i, n - 1): a list of canned replies served in order, the last one
 * repeated. Every connection is closed after its reply, so a reply needs
 * neither Content-Length nor "Connection: close" to end. Request bodies
 * are read by Content-Length only (no chunked uploads); an "Expect:
 * 100-continue" is answered with "100 Continue" first.
 *
 * The server stops by itself `lifetime_s` after it started: it closes every
 * connection, so that no test can hang on it, and a client still reading
 * then sees the connection end. All functions here lock; a test may read
 * the requests while others arrive. Setup failures fail the test. */
#ifndef WSRELAY_TEST_RAWHTTP_H
#define WSRELAY_TEST_RAWHTTP_H

#include <stdbool.h>
#include <stddef.h>

/* `fill` value: bytes without end, until the client leaves or the server
 * stops. */
#define RAWHTTP_FOREVER ((unsigned long long)-1)

/* Bytes of a request body that are recorded; the rest is read and dropped. */
#define RAWHTTP_BODY_MAX (1024u * 1024)

/* One canned reply. Only `head` is required; zero means "not used" for the
 * rest. */
struct rawhttp_reply {
    const char *head;               /* written first, byte for byte: the status line, the
                                       headers, the blank line, and any body (copied) */
    size_t head_len;                /* bytes of `head`; 0: strlen(head) */
    unsigned long long fill;        /* then this many bytes of `fill_byte`: a large body
                                       without a large string; RAWHTTP_FOREVER: no end */
    char fill_byte;                 /* 0: 'x' */
    size_t chunk;                   /* write the fill in pieces of this many bytes (0: as
                                       fast as the client reads) ... */
    unsigned every_ms;              /* ... with this pause before each piece after the first */
    bool pace_head;                 /* pace the head that way too (headers that trickle in);
                                       false: the head goes out at once */
    unsigned delay_ms;              /* wait this long after reading the request, before the
                                       first byte */
    unsigned long long close_after; /* close the connection after this many bytes of
                                       the reply (head then fill); 0: after all of it */
    unsigned hold_ms;               /* after the last byte, keep the connection open, silent,
                                       this long before closing it (a reply that never ends) */
};

/* One request as it was read. Strings are owned by the struct. */
struct rawhttp_request {
    char *method;
    char *target;     /* the request target as sent: path and query */
    char *headers;    /* the header lines as sent, "Name: value\r\n" each */
    char *body;       /* the first RAWHTTP_BODY_MAX bytes, NUL-terminated */
    size_t body_len;  /* bytes of body received in all */
    double at;        /* when it was read whole, seconds on CLOCK_MONOTONIC */
    bool reply_ended; /* the whole reply was written (false: the client left first,
                         or the server stopped, or close_after cut it) */
};

struct rawhttp;

/* Starts a server answering with `replies` (n >= 1, copied) for at most
 * `lifetime_s` seconds. Stop it with rawhttp_stop. */
struct rawhttp *rawhttp_start(const struct rawhttp_reply *replies, size_t n, int lifetime_s);

/* Replaces the list of replies (copied); the next request gets the first
 * one. A reply being written goes on unchanged. */
void rawhttp_set_replies(struct rawhttp *s, const struct rawhttp_reply *replies, size_t n);

/* "http://127.0.0.1:PORT", without a trailing slash (a platform base_url);
 * owned by the server. */
const char *rawhttp_url(const struct rawhttp *s);

/* How many requests were read whole so far. */
size_t rawhttp_count(struct rawhttp *s);

/* Waits up to `timeout_ms` until at least `n` requests were read; returns
 * the count then (< n on timeout). */
size_t rawhttp_wait(struct rawhttp *s, size_t n, int timeout_ms);

/* A copy of request i (0 = the first), or NULL when i >= count; free it
 * with rawhttp_request_free. reply_ended is as of now. */
struct rawhttp_request *rawhttp_request(struct rawhttp *s, size_t i);

void rawhttp_request_free(struct rawhttp_request *r);

/* The value of the first header `name` (any case) of `r`, blanks trimmed,
 * as a new string (caller frees), or NULL when absent. */
char *rawhttp_header(const struct rawhttp_request *r, const char *name);

/* Closes every connection, waits for the threads and frees everything;
 * NULL is fine. Returns within about a second even while replies are
 * dribbling. */
void rawhttp_stop(struct rawhttp *s);

#endif
