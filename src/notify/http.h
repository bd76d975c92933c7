/* One HTTP POST to a receiver (webhooks, chat services), with TLS
 * verification on, no redirects, bounded time and a capped reply. */
#ifndef WSRELAY_NOTIFY_HTTP_H
#define WSRELAY_NOTIFY_HTTP_H

#include "config.h"
#include "notify/notify.h"
#include "util/err.h"

#include <stddef.h>

struct http_post_reply {
    long status;      /* 0 when no HTTP reply came */
    char *body;       /* at most 64 KiB of the reply; caller frees */
    long retry_after; /* a Retry-After header in seconds; 0 when absent or a date */
};

/* POSTs `body` (of `content_type`) to `url` with the extra `headers`.
 * Returns 0 when a reply came (whatever its status), -1 on a transport
 * failure with the reason in `e`. The URL in messages is redacted. */
int http_post(struct http_post_reply *out, const char *url, const struct header_conf *headers,
              size_t n_headers, const char *content_type, const char *body, struct err *e);

/* GETs `url` (a heartbeat): TLS verified, no redirects, 10 s to connect
 * and 10 s in all, the reply body read and dropped. Returns 0 when a reply
 * came, with its status in *status, -1 on a transport failure (*status 0)
 * with the reason in `e`. Messages show the URL redacted. */
int http_get(long *status, const char *url, struct err *e);

/* The start of a reply body as one printable line (at most `size` - 1
 * bytes, non-printable bytes as '?'), for error messages and the state.
 * Servers echo requests: the URL, its path and query, and every header value
 * are replaced by "[redacted]" first. */
void http_reply_excerpt(char *out, size_t size, const char *body, const char *url,
                        const struct header_conf *headers, size_t n_headers);

/* Fills a notifier's result from a reply: status, retry_after and the
 * redacted excerpt as the answer (permanent stays false). */
void http_result(struct notify_result *res, const struct http_post_reply *reply, const char *url,
                 const struct header_conf *headers, size_t n_headers);

/* "scheme://host[:port]/…": the URL without path, query or credentials, for
 * logs. Webhook URLs carry their secret in the path. Caller frees. */
char *http_redact_url(const char *url);

#endif
