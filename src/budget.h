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

/* Alert calls of each hour that the round robin leaves free, so that a
 * device whose readings moved (a signal) can be looked at at once, when
 * signals are on (scheduler.h, `headroom`): 5, so the round robin makes 6
 * calls an hour, one every 10 minutes. With 2, the communication error of
 * a silent device among 12 arrived 20 minutes after the platform logged
 * it: the looks for it waited for calls the round robin had taken
 * (tests/integration/test_signals.c); with 5, within 10. */
int budget_headroom(void);

/* The budget of `login` for `op` at `now`. */
struct sched_budget budget_read(const struct state *s, const char *login, enum platform_op op,
                                long long now);

/* Records what a reply of `op` tells about the budget of `login` at
 * `now`: its rate-limit headers, and after a 429 or X-RateLimit-Remaining
 * 0 a block of the operation until the platform's window frees a call.
 * Returns that block's end, or 0 when the reply set none. */
long long budget_note_reply(struct state *s, const char *login, enum platform_op op,
                            const struct platform_reply *r, long long now);

#endif
