/* One HTTP POST to a receiver (webhooks, chat services), with TLS
 * verification on, no redirects, bounded time and a capped reply. */
#ifndef WSRELAY_NOTIFY_HTTP_H
#define WSRELAY_NOTIFY_HTTP_H

#include "config.h"
#include "notify/notify.h"
#include "util/err.h"

#include <stddef.h>

/* The longest wait a far end's Retry-After can impose: a day. A longer one
 * is cut to this (and logged), never ignored. */
#define HTTP_RETRY_AFTER_MAX 86400L

/* `retry_after` is the reply's Retry-After in seconds, at most
 * HTTP_RETRY_AFTER_MAX; 0 when absent, unreadable or in the past. It is
 * delta-seconds, or an HTTP-date counted from the reply's Date header (the
 * far end's clock; this machine's without one). */
struct http_post_reply {
    long status;                 /* 0 when no HTTP reply came */
    char *body;                  /* at most 64 KiB of the reply; caller frees */
    long retry_after;            /* capped */
    long long retry_after_asked; /* what the far end asked, before the cap */
    long long ratelimit_reset;   /* X-RateLimit-Reset: when a rate limit's window ends,
                                    seconds since 1970 (Chatwork's); 0 when absent */
};

/* POSTs `body` (of `content_type`) to `url` with the extra `headers`, the
 * whole exchange within `timeout_s` seconds (a receiver's `timeout`; at
 * most 10 s of it to connect). Returns 0 when a reply came (whatever its
 * status), -1 on a transport failure with the reason in `e`, which says
 * when the time ran out. A 2xx whose headers came whole counts as a
 * reply even when its body is then cut or runs out of time (with a
 * warning, and the body as far as it came): the far end has taken the
 * message. The URL in messages is redacted. */
int http_post(struct http_post_reply *out, const char *url, const struct header_conf *headers,
              size_t n_headers, const char *content_type, const char *body, long timeout_s,
              struct err *e);

/* GETs `url` as http_post POSTs (the same limits, reply and errors, which
 * say GET): for a service's API that answers a GET with what is asked
 * (a Pushover receipt). */
int http_get_reply(struct http_post_reply *out, const char *url, const struct header_conf *headers,
                   size_t n_headers, long timeout_s, struct err *e);

/* GETs `url` (a heartbeat): TLS verified, no redirects, 10 s to connect
 * and 10 s in all, the reply body read and dropped. Returns 0 when a reply
 * came, with its status in *status, -1 on a transport failure (*status 0)
 * with the reason in `e`. Messages show the URL redacted. */
int http_get(long *status, const char *url, struct err *e);

/* The first line of a reply body, printable (at most `size` - 1 bytes,
 * non-printable bytes as '?'), for error messages and the state. Servers
 * echo requests: the URL and every header value, in every form util/redact.h
 * knows, are replaced by "[redacted]" first. */
void http_reply_excerpt(char *out, size_t size, const char *body, const char *url,
                        const struct header_conf *headers, size_t n_headers);

/* Fills a notifier's result from a reply: status, retry_after and the
 * redacted excerpt as the answer (permanent stays false). Logs a warning
 * when Retry-After was cut to a day. */
void http_result(struct notify_result *res, const struct http_post_reply *reply, const char *url,
                 const struct header_conf *headers, size_t n_headers);

/* "scheme://host[:port]/…": the URL without path, query or credentials, for
 * logs. Webhook URLs carry their secret in the path. Caller frees. */
char *http_redact_url(const char *url);

#endif
