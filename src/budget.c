/* A login ID's budget, from the platform's limits and the state's ledger. */
#include "budget.h"

#define ALERT_RESERVE 1
#define HEADROOM_PER 6 /* signal calls of the last hour per call kept free */

int budget_reserve(enum platform_op op)
{
    return op == PLATFORM_ALERT ? ALERT_RESERVE : 0;
}

int budget_headroom(const struct state *s, const char *login, long long now)
{
    struct platform_limit l = platform_op_limit(PLATFORM_ALERT);
    size_t recent = state_signal_calls_since(s, login, now - l.span);
    size_t keep = (recent + HEADROOM_PER - 1) / HEADROOM_PER;
    return keep < BUDGET_HEADROOM_MAX ? (int)keep : BUDGET_HEADROOM_MAX;
}

long budget_spacing(enum platform_op op)
{
    struct platform_limit l = platform_op_limit(op);
    struct sched_budget b = {.limit = l.limit, .reserve = budget_reserve(op), .span = l.span};
    return scheduler_spacing(&b);
}

/* The alert operation's last call that no signal asked for: the round
 * robin's spacing counts from it, so that a signal's look does not push
 * the next routine call a spacing later (a routine slot lost to every
 * signal). A time holds as many signal calls as the signal ledger has at
 * that second; the others at it were routine. 0 when every call of the
 * ledger was a signal's. */
static long long last_routine_call(const struct state *s, const char *login)
{
    long long last = state_last_call(s, login, PLATFORM_ALERT);
    for (int guard = 0; last > 0 && guard < 64; guard++) {
        size_t all = state_calls_since(s, login, PLATFORM_ALERT, last) -
                     state_calls_since(s, login, PLATFORM_ALERT, last + 1);
        size_t signal =
            state_signal_calls_since(s, login, last) - state_signal_calls_since(s, login, last + 1);
        if (all > signal)
            return last;
        /* The latest call before `last`. */
        long long before = 0;
        for (long long lo = last - 7200, hi = last - 1; lo <= hi;) {
            long long mid = lo + (hi - lo) / 2;
            if (state_calls_since(s, login, PLATFORM_ALERT, mid) >
                state_calls_since(s, login, PLATFORM_ALERT, last)) {
                before = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        last = before;
    }
    return last;
}

struct sched_budget budget_read(const struct state *s, const char *login, enum platform_op op,
                                long long now)
{
    struct platform_limit l = platform_op_limit(op);
    return (struct sched_budget){
        .limit = l.limit,
        .reserve = budget_reserve(op),
        .span = l.span,
        .used = state_calls_since(s, login, op, now - l.span),
        .oldest = state_oldest_call_since(s, login, op, now - l.span),
        .last_call =
            op == PLATFORM_ALERT ? last_routine_call(s, login) : state_last_call(s, login, op),
        .blocked_until = state_blocked_until(s, login, op),
        .headroom_max = op == PLATFORM_ALERT ? BUDGET_HEADROOM_MAX : 0,
    };
}

long long budget_note_reply(struct state *s, const char *login, enum platform_op op,
                            const struct platform_reply *r, long long now)
{
    if (r->rl.present)
        state_set_ratelimit(s, login, op, &r->rl, now);
    if (r->http_status != 429 && !(r->rl.present && r->rl.remaining <= 0))
        return 0;
    struct sched_budget b = budget_read(s, login, op, now);
    long long until = scheduler_block_until(&b, r->rl.present ? r->rl.reset : 0, now);
    state_block(s, login, op, until);
    return until;
}
