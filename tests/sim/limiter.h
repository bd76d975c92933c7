/* A sliding-window rate limiter on a virtual clock, as the simulator applies
 * it per login ID and operation: a call at `now` is accepted when fewer than
 * `limit` accepted calls lie in (now - span, now]. Rejected calls leave no
 * trace, so a client that keeps knocking does not push its window forward. */
#ifndef WSRELAY_SIM_LIMITER_H
#define WSRELAY_SIM_LIMITER_H

#include <stdbool.h>
#include <stddef.h>

struct limiter;

/* What one call got, ready to become the X-RateLimit-* headers. */
struct limiter_verdict {
    bool accepted;
    int limit;       /* X-RateLimit-Limit */
    int remaining;   /* calls left in the window after this one; 0 when rejected */
    long long reset; /* seconds until the oldest call in the window leaves it;
                        the full span when the window is empty */
};

/* A limiter allowing `limit` (>= 1) calls per `span` (>= 1) seconds. The
 * caller frees it with limiter_free. */
struct limiter *limiter_new(int limit, long long span);

void limiter_free(struct limiter *l);

/* Decides on one call at `now` and, when it is accepted, records it. The
 * clock may move backwards (tests set it); calls recorded after `now` are
 * then outside the window. */
void limiter_take(struct limiter_verdict *out, struct limiter *l, long long now);

/* The largest number of accepted calls that ever lay together in one window
 * of `span` seconds: a check on the limiter that does not trust its own
 * verdicts. */
size_t limiter_max_in_window(const struct limiter *l);

/* How many calls were accepted in total. */
size_t limiter_accepted(const struct limiter *l);

#endif
