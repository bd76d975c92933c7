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
 * (scheduler.h, `headroom`) when signals are on: as many as signals asked
 * for in the last hour (state_signal_calls_since), at most
 * BUDGET_HEADROOM_MAX. So on a quiet day the round robin spends the 11
 * routine calls itself (one every 5 min 27 s) and a signal that comes
 * takes the reserve at once; on a busy one it makes 6 (one every 10
 * minutes) and leaves the others to the signals, which would otherwise
 * wait for calls the round robin had taken (with 2 kept free, the
 * communication error of a silent device among 12 arrived 20 minutes after
 * the platform logged it, tests/integration/test_signals.c; with 5, within
 * 10). A call kept free and not used is lent back as soon as the hour
 * without signals shows it. */
#define BUDGET_HEADROOM_MAX 5
int budget_headroom(const struct state *s, const char *login, long long now);

/* The budget of `login` for `op` at `now` (headroom 0, headroom_max
 * BUDGET_HEADROOM_MAX for the alert operation: its bound holds whatever
 * the headroom becomes). */
struct sched_budget budget_read(const struct state *s, const char *login, enum platform_op op,
                                long long now);

/* Records what a reply of `op` tells about the budget of `login` at
 * `now`: its rate-limit headers, and after a 429 or X-RateLimit-Remaining
 * 0 a block of the operation until the platform's window frees a call.
 * Returns that block's end, or 0 when the reply set none. */
long long budget_note_reply(struct state *s, const char *login, enum platform_op op,
                            const struct platform_reply *r, long long now);

#endif
