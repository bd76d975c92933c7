/* A webhook receiver inside the test process: an HTTP server on 127.0.0.1
 * (a free port) that records every request and answers with a status the
 * test chooses. It runs on its own thread; all functions here lock, so a
 * test may read while requests arrive. Setup failures fail the test. */
#ifndef WSRELAY_TEST_HOOKSINK_H
#define WSRELAY_TEST_HOOKSINK_H

#include <stddef.h>

/* One recorded request. Strings are owned by the struct. */
struct hook_request {
    char *method;
    char *path;          /* the URL path, without the query string */
    char *content_type;  /* NULL when the header was absent */
    char *body;          /* "" when empty; cut at 1 MiB (the request then got 413) */
    char *authorization; /* NULL when the header was absent */
    double at;           /* arrival, seconds on CLOCK_MONOTONIC */
};

struct hooksink;

/* Starts a sink; stop it with hooksink_stop. Any path is accepted. */
struct hooksink *hooksink_start(void);

/* "http://127.0.0.1:PORT/hook"; owned by the sink. */
const char *hooksink_url(const struct hooksink *h);

/* The status of the replies to the following requests: 200 (the default)
 * answers the body "ok", any other status the body "error". */
void hooksink_set_status(struct hooksink *h, int status);

/* Makes the sink wait `ms` milliseconds (0: none, the default) after
 * recording each following request and before answering it: a slow far
 * end, so that a test can catch a sender in the middle of a delivery. The
 * sink answers one request at a time, so a wait also holds up the next. */
void hooksink_set_delay_ms(struct hooksink *h, int ms);

/* Queues one scripted reply for the next request that finds the queue
 * non-empty: `status`, `body` (copied; NULL: "ok"/"error" as above) and,
 * when `retry_after` > 0, a `Retry-After: SECONDS` header. Scripted replies
 * are used in order, then hooksink_set_status's status applies again. This
 * is how a test plays Slack ("invalid_payload", 429 with Retry-After) or
 * Teams (202). */
void hooksink_push_reply(struct hooksink *h, int status, const char *body, int retry_after);

/* How many requests have been recorded so far. */
size_t hooksink_count(struct hooksink *h);

/* Waits up to `timeout_ms` until at least `n` requests are recorded;
 * returns the count then (which may be < n on timeout). */
size_t hooksink_wait(struct hooksink *h, size_t n, int timeout_ms);

/* A copy of the i-th request (0 = the first); NULL when i >= count. Free
 * it with hook_request_free. */
struct hook_request *hooksink_request(struct hooksink *h, size_t i);

void hook_request_free(struct hook_request *r);

/* Forgets the recorded requests (the status stays). */
void hooksink_clear(struct hooksink *h);

/* Stops the server and frees everything; NULL is fine. */
void hooksink_stop(struct hooksink *h);

#endif
