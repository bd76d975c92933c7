/* One HTTP exchange as the simulator's handlers see it, free of any server
 * library: the request's few relevant parts in, a status and a body out.
 * sim.c turns these into libmicrohttpd calls. */
#ifndef WSRELAY_SIM_REPLY_H
#define WSRELAY_SIM_REPLY_H

#include "limiter.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Borrowed views into the server's request; valid while a handler runs. */
struct request {
    const char *method;
    const char *path;            /* without the query string */
    const char *content_type;    /* NULL when the header is absent */
    const char *method_override; /* X-HTTP-Method-Override; NULL when absent */
    const char *body;            /* NUL-terminated; "" when there is none */
    size_t body_len;
};

#define REPLY_JSON_TYPE "application/json; charset=utf-8"
#define REPLY_CSV_TYPE "text/csv; charset=utf-8"

/* A reply is sent with `Content-Type: content_type`, REPLY_JSON_TYPE when
 * that is NULL. `body` is owned by the reply (reply_clear frees it). */
struct reply {
    int status;
    char *body;
    const char *content_type; /* NULL or a string constant */
    bool rate_headers;        /* send X-RateLimit-* from `rate` */
    struct limiter_verdict rate;
    bool data_count_header; /* send X-RateLimit-Remaining-DataCount: data_count */
    long long data_count;
};

/* Sets status and body to the serialised `obj` (as JSON), and releases
 * `obj`. */
void reply_json(struct reply *out, int status, struct json_object *obj);

/* The platform's error shape: {"error":{"code":STATUS,"message":"..."}}. */
void reply_error(struct reply *out, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A body sent exactly as given (copied), as JSON. */
void reply_raw(struct reply *out, int status, const char *body);

/* Sets status, `content_type` (a string constant) and body, taking over
 * `body` (which the reply frees). */
void reply_take(struct reply *out, int status, const char *content_type, char *body);

/* Frees the body; the reply may be reused. */
void reply_clear(struct reply *r);

/* The body parsed as one JSON object (new reference), or NULL when it is
 * not exactly one JSON object (trailing whitespace allowed). */
struct json_object *request_json_object(const struct request *rq);

#endif
