/* A login ID's budget, from the platform's limits and the state's ledger. */
#include "budget.h"

#define ALERT_RESERVE 1

int budget_reserve(enum platform_op op)
{
    return op == PLATFORM_ALERT ? ALERT_RESERVE : 0;
}

int budget_headroom(const struct state *s, const char *login, long long now)
{
    struct platform_limit l = platform_op_limit(PLATFORM_ALERT);
    size_t recent = state_signal_calls_since(s, login, now - l.span);
    return recent < BUDGET_HEADROOM_MAX ? (int)recent : BUDGET_HEADROOM_MAX;
}

long budget_spacing(enum platform_op op)
{
    struct platform_limit l = platform_op_limit(op);
    struct sched_budget b = {.limit = l.limit, .reserve = budget_reserve(op), .span = l.span};
    return scheduler_spacing(&b);
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
        .last_call = state_last_call(s, login, op),
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
