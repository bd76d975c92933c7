/* PagerDuty's Events API v2 and Opsgenie's Alert API inside the test
 * process: an HTTP server on 127.0.0.1 (a free port) that checks each
 * request as the service does (its path, its key, its required fields,
 * their words and lengths), answers as the service documents it (202 with
 * its JSON; 400, 401, 404 or 422 with the service's error body) and
 * records every request with the answer it got. It keeps the alerts: by
 * dedup_key (PagerDuty) or alias (Opsgenie), each "triggered"/"open",
 * "acknowledged" or "resolved"/"closed", so that a test sees what the
 * service would show. It runs on its own thread; every function locks.
 * Setup failures fail the test. */
#ifndef WSRELAY_TEST_ONCALL_H
#define WSRELAY_TEST_ONCALL_H

#include <stddef.h>

enum oncall_service { ONCALL_PAGERDUTY, ONCALL_OPSGENIE };

/* One recorded request. Strings are owned by the struct. */
struct oncall_request {
    char *method;
    char *path;          /* decoded, without the query */
    char *query;         /* identifierType's value, or NULL */
    char *authorization; /* NULL when absent */
    char *body;
    int status;   /* what the server answered */
    char *answer; /* the body it answered */
};

struct oncall;

/* Starts a server of `service` whose integration key is `key` (PagerDuty:
 * the routing key, 32 characters as PagerDuty's are; Opsgenie: the API
 * key of "Authorization: GenieKey KEY"). Stop it with oncall_stop. */
struct oncall *oncall_start(enum oncall_service service, const char *key);

/* "http://127.0.0.1:PORT": a receiver's base_url. Owned by the server. */
const char *oncall_url(const struct oncall *o);

/* Queues one reply for the next request instead of the service's own
 * (checked and kept as it would be only when `status` is 2xx): `status`,
 * `body` (copied; NULL: "{}") and, when `retry_after` > 0, a Retry-After
 * header. Used in order. */
void oncall_push_reply(struct oncall *o, int status, const char *body, int retry_after);

size_t oncall_count(struct oncall *o);

/* A copy of the i-th request; NULL when i >= count. Free with
 * oncall_request_free. */
struct oncall_request *oncall_request(struct oncall *o, size_t i);

void oncall_request_free(struct oncall_request *r);

/* The state of the alert of `key` (dedup_key or alias): "triggered",
 * "acknowledged", "resolved" (PagerDuty), "open", "acknowledged",
 * "closed" (Opsgenie); NULL when none (a copy; caller frees). */
char *oncall_alert_state(struct oncall *o, const char *key);

/* How many alerts the service holds. */
size_t oncall_alerts(struct oncall *o);

/* Stops the server and frees everything; NULL is fine. */
void oncall_stop(struct oncall *o);

#endif
