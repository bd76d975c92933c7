/* The state file: what the relay has seen, what it still owes, and what it
 * has spent of the platform's budget.
 *
 * It is one JSON document (mode 0600) holding
 *   - seen keys per device serial: "UNIXTIME/KIND" of every alert-log event
 *     already handled (sent, queued or deliberately skipped);
 *   - the device list of each account, with discovery time and last poll;
 *   - the budget ledger per login ID and operation: the times of recent
 *     calls, the last X-RateLimit-* values, and any "blocked until" time;
 *   - the outbox: (event, receiver) pairs not yet delivered, with attempts
 *     and the time of the next try.
 * No secret is ever written to it.
 *
 * state_open takes an exclusive lock (a `PATH.lock` file beside it) that it
 * keeps until state_close, so two overlapping runs never both poll or send.
 * state_save replaces the file atomically; after a crash the file is either
 * the old or the new one. */
#ifndef WSRELAY_STATE_H
#define WSRELAY_STATE_H

#include "event.h"
#include "platform.h"
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>

struct state;

/* Locks and loads `path`; a missing file is an empty state. Waits up to
 * `lock_wait` seconds for another run's lock, then fails naming the pid
 * that holds it. Fails on an unreadable or corrupt file, and when the
 * directory is not writable (checked now, before anything is sent). On
 * success *out belongs to the caller (state_close). */
int state_open(struct state **out, const char *path, int lock_wait, struct err *e);

/* Writes the state atomically (temp file, fsync, rename, fsync dir). On
 * failure the previous file is intact. */
int state_save(struct state *s, struct err *e);

/* Releases the lock and frees; NULL is fine. Does not save. */
void state_close(struct state *s);

/* --- seen keys -------------------------------------------------------- */

bool state_seen(const struct state *s, const char *serial, long long unixtime, const char *kind);
void state_mark_seen(struct state *s, const char *serial, long long unixtime, const char *kind);

/* Forgets the keys of `serial` older than `before`: entries that have left
 * the device's 20-entry log can never come back, so this bounds the file. */
void state_prune_seen(struct state *s, const char *serial, long long before);

/* Number of seen keys kept for `serial`. */
size_t state_seen_count(const struct state *s, const char *serial);

/* --- devices ---------------------------------------------------------- */

struct state_device {
    char *serial;
    char *base;
    char *model; /* "" when unknown */
    char *name;  /* "" when unknown */
    long long last_poll; /* last poll, successful or not; 0: never */
    long long last_ok;   /* last successful poll; 0: never (catch_up still applies) */
};

/* Time of the account's last successful discovery; 0 if never. */
long long state_discovered_at(const struct state *s, const char *account);

/* Replaces the account's device list with `devs`, keeping the last_poll of
 * devices already known, and records `now` as the discovery time. */
void state_set_devices(struct state *s, const char *account, const struct state_device *devs,
                       size_t n, long long now);

/* A copy of the account's device list (caller frees with
 * state_devices_free); *n is 0 for an unknown account. */
struct state_device *state_devices(const struct state *s, const char *account, size_t *n);
void state_devices_free(struct state_device *d, size_t n);

/* Records a poll of the device (creating the entry if needed); `ok` when
 * its alert log was received and processed. */
void state_device_polled(struct state *s, const char *account, const char *serial,
                         const char *base, long long now, bool ok);

/* --- budget ledger (per login ID and operation) ----------------------- */

/* Records one call at `now`. Call it before the request is sent: a call
 * counts from the moment it is sent, whatever becomes of it. Times older
 * than a day are dropped. */
void state_record_call(struct state *s, const char *login, enum platform_op op, long long now);

/* Calls recorded in [since, now]: pass now - span. Calls recorded in the
 * "future" (the clock went back) count as well. */
size_t state_calls_since(const struct state *s, const char *login, enum platform_op op,
                         long long since);

/* Time of the most recent recorded call; 0 if none. */
long long state_last_call(const struct state *s, const char *login, enum platform_op op);

/* The operation may not be called before `until` (after a 429 or
 * X-RateLimit-Remaining: 0). */
void state_block(struct state *s, const char *login, enum platform_op op, long long until);
long long state_blocked_until(const struct state *s, const char *login, enum platform_op op);

/* Remembers the last rate-limit headers seen, with their time. Values
 * without `present` (the headers were missing) are not stored. */
void state_set_ratelimit(struct state *s, const char *login, enum platform_op op,
                         const struct ratelimit *rl, long long now);

/* The last rate-limit headers stored by state_set_ratelimit, in *out, and
 * when they were seen, in *at (may be NULL). False (and *out zeroed, *at 0)
 * when none were stored. */
bool state_ratelimit(const struct state *s, const char *login, enum platform_op op,
                     struct ratelimit *out, long long *at);

/* --- outbox ----------------------------------------------------------- */

struct outbox_item {
    unsigned long long id; /* stable within the state file */
    char *receiver;
    struct event event;
    int attempts;          /* failed deliveries so far */
    long long queued_at;
    long long next_try;    /* not before this time */
    char *last_error;      /* NULL until a delivery fails */
};

/* Queues `ev` for `receiver`, due at once. The state keeps its own copy. */
void state_enqueue(struct state *s, const char *receiver, const struct event *ev, long long now);

/* A copy of the items of `receiver` due at `now` (next_try <= now), oldest
 * first; caller frees with state_outbox_free. */
struct outbox_item *state_outbox_due(const struct state *s, const char *receiver, long long now,
                                     size_t *n);

/* Number of items queued for `receiver` (NULL: for all receivers). */
size_t state_outbox_count(const struct state *s, const char *receiver);

void state_outbox_free(struct outbox_item *items, size_t n);

/* The item was delivered: removes it. */
void state_outbox_done(struct state *s, unsigned long long id);

/* The delivery failed: counts the attempt, keeps `error` (no secrets) and
 * sets the next try to now + backoff (1 min doubling, at most 1 h). */
void state_outbox_failed(struct state *s, unsigned long long id, const char *error, long long now);

#endif
