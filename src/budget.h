/* A login ID's budget for one operation, as the scheduler (scheduler.h)
 * sees it: the platform's limit (platform.h), the calls of the current
 * window as the state's ledger holds them, the last call, a block a reply
 * asked for, and the calls wsrelay keeps back from routine polling.
 *
 * The reserve: routine polling spreads 11 of the alert operation's 12
 * hourly calls evenly and leaves the 12th for an urgent look (`wsrelay run
 * --look SERIAL`), which may then be made at any moment however the
 * routine calls fell. The current-readings operation keeps none. */
#ifndef WSRELAY_BUDGET_H
#define WSRELAY_BUDGET_H

#include "platform.h"
#include "scheduler.h"
#include "state.h"

/* Calls of each window of `op` kept for urgent looks. */
int budget_reserve(enum platform_op op);

/* Seconds between two routine calls of `op`: the span divided by the
 * calls routine polling may make in it (5 min 27 s for the alert
 * operation). */
long budget_spacing(enum platform_op op);

/* Alert calls of each hour that the round robin leaves free for signals
 * (scheduler.h, `headroom`) when signals are on: what a signal that comes
 * needs at once, from the rate of the last hour: none after an hour
 * without a signal (the reserve takes one that comes), one for up to 6
 * signal calls, one more for each 6 beyond, at most BUDGET_HEADROOM_MAX.
 * The round robin spends the rest: 11 calls an hour on a quiet hour (one
 * every 5 min 27 s), 10 with one kept free. Signals take calls beyond the
 * headroom too (the round robin stops while the window holds its share),
 * so a busy hour still spends 11, and a quiet one keeps nothing free for
 * nothing; while no device has a signal, the scheduler lends all but
 * SCHED_HEADROOM_LENT of it to the round robin. (A fixed 5 kept free left
 * half the budget unspent on quiet days: a call not spent within its hour
 * never comes back.) */
#define BUDGET_HEADROOM_MAX 5
int budget_headroom(const struct state *s, const char *login, long long now);

/* The budget of `login` for `op` at `now` (headroom 0, headroom_max
 * BUDGET_HEADROOM_MAX for the alert operation: its bound holds whatever
 * the headroom becomes). For the alert operation `last_call` is the last
 * call no signal asked for (the round robin's spacing counts from it; a
 * signal's look does not delay the next routine call). */
struct sched_budget budget_read(const struct state *s, const char *login, enum platform_op op,
                                long long now);

/* Records what a reply of `op` tells about the budget of `login` at
 * `now`: its rate-limit headers, and after a 429 or X-RateLimit-Remaining
 * 0 a block of the operation until the platform's window frees a call.
 * Returns that block's end, or 0 when the reply set none. */
long long budget_note_reply(struct state *s, const char *login, enum platform_op op,
                            const struct platform_reply *r, long long now);

#endif
