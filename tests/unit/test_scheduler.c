/* The scheduler: budget arithmetic and the order in which devices are polled. */
#include "scheduler.h"

#include <criterion/criterion.h>

static struct sched_budget alert_budget(size_t used, long long last_call)
{
    struct sched_budget b = {.limit = 12, .span = 3600, .used = used, .last_call = last_call};
    return b;
}

Test(scheduler, first_call_gets_one_slot)
{
    struct sched_budget b = alert_budget(0, 0);
    cr_assert_eq(scheduler_allowance(&b, 1000000), 1);
}

/* A boundary of the 300 s grid of the 12-an-hour budget. */
#define GRID 1000200LL

Test(scheduler, calls_are_earned_on_a_grid_of_the_clock)
{
    /* The last call stamped 10 s after a boundary: the next slot comes
     * with the next boundary, two with the one after. */
    struct sched_budget b = alert_budget(1, GRID + 10);
    cr_assert_eq(scheduler_allowance(&b, GRID + 60), 0);
    cr_assert_eq(scheduler_allowance(&b, GRID + 299), 0);
    cr_assert_eq(scheduler_allowance(&b, GRID + 300), 1);
    cr_assert_eq(scheduler_allowance(&b, GRID + 599), 1);
    cr_assert_eq(scheduler_allowance(&b, GRID + 600), 2);
}

Test(scheduler, two_calls_are_never_much_closer_than_a_spacing)
{
    /* A call stamped just before a boundary (its run started earlier):
     * the boundary alone does not let the next run call at once. */
    struct sched_budget b = alert_budget(1, GRID - 5);
    cr_assert_eq(scheduler_allowance(&b, GRID + 55), 0);
    cr_assert_eq(scheduler_allowance(&b, GRID + 264), 0);
    cr_assert_eq(scheduler_allowance(&b, GRID + 265), 1, "0.9 spacing after it");
}

/* Runs every 10 minutes with a spacing that does not divide 10 minutes:
 * the grid keeps the part of a spacing that one run cannot use, so the
 * rate is the budget's, not one call a run. */
Test(scheduler, runs_at_any_interval_come_to_the_same_rate)
{
    static const long steps[] = {60, 420, 600, 900};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        long long last = 0, start = 1795000000, made = 0;
        for (long long now = start; now < start + 86400; now += steps[k]) {
            struct sched_budget b = alert_budget(0, last);
            b.reserve = 1;
            size_t allow = scheduler_allowance(&b, now);
            made += (long long)allow;
            if (allow)
                last = now;
        }
        /* 86400 / 327 = 264 slots; the window is not modelled here. */
        cr_assert(made >= 262 && made <= 265, "runs every %ld s made %lld calls", steps[k], made);
    }
}

Test(scheduler, late_run_gets_credit_but_not_past_the_window)
{
    struct sched_budget b = alert_budget(10, 1000000);
    cr_assert_eq(scheduler_allowance(&b, 1000000 + 900), 2, "3 slots earned, 2 left in window");
    b.used = 0;
    cr_assert_eq(scheduler_allowance(&b, 1000000 + 900), 3);
}

Test(scheduler, full_window_allows_nothing)
{
    struct sched_budget b = alert_budget(12, 1000000);
    cr_assert_eq(scheduler_allowance(&b, 1000000 + 3000), 0);
}

Test(scheduler, blocked_allows_nothing_until_the_time)
{
    struct sched_budget b = alert_budget(0, 0);
    b.blocked_until = 2000;
    cr_assert_eq(scheduler_allowance(&b, 1999), 0);
    cr_assert_eq(scheduler_allowance(&b, 2000), 1);
}

Test(scheduler, a_last_call_in_the_future_counts_as_made_now)
{
    struct sched_budget b = alert_budget(1, 1000000);
    cr_assert_eq(scheduler_allowance(&b, 999000), 0, "not in this run");
    b.used = 0;
    cr_assert_eq(scheduler_allowance(&b, 999000), 0);
}

Test(scheduler, exhaustion_explained_by_the_ledger_ends_with_its_oldest_call)
{
    /* Twelve calls of ours, the oldest at 1000: free again at 4600, not
     * at now + the 3600 s that X-RateLimit-Reset announces. */
    struct sched_budget b = alert_budget(12, 4300);
    b.oldest = 1000;
    cr_assert_eq(scheduler_block_until(&b, 3600, 4300), 4600);
}

Test(scheduler, exhaustion_by_another_client_waits_the_reset_at_most_a_span)
{
    struct sched_budget b = alert_budget(3, 4300);
    b.oldest = 1000;
    cr_assert_eq(scheduler_block_until(&b, 600, 4300), 4900);
    cr_assert_eq(scheduler_block_until(&b, 0, 4300), 4300 + 3600, "no header: a span");
    cr_assert_eq(scheduler_block_until(&b, 99999999, 4300), 4300 + 3600, "capped");
    cr_assert_eq(scheduler_block_until(&b, -5, 4300), 4300 + 3600);
}

Test(scheduler, never_polled_first_then_oldest)
{
    struct sched_device devs[] = {{.last_poll = 500},
                                  {.last_poll = 100},
                                  {.last_poll = 0},
                                  {.last_poll = 300},
                                  {.last_poll = 0}};
    struct sched_budget b = alert_budget(0, 1000);
    size_t out[8];
    size_t n = scheduler_plan(out, 8, devs, 5, &b, 1000 + 3 * 300);
    cr_assert_eq(n, 3);
    cr_assert_eq(out[0], 2);
    cr_assert_eq(out[1], 4);
    cr_assert_eq(out[2], 1);
}

Test(scheduler, plan_is_capped_by_max_out_and_devices)
{
    struct sched_device devs[] = {{.last_poll = 5}, {.last_poll = 1}};
    struct sched_budget b = alert_budget(0, 1000);
    size_t out[1];
    cr_assert_eq(scheduler_plan(out, 1, devs, 2, &b, 1000 + 3600), 1);
    cr_assert_eq(out[0], 1);
    size_t out2[8];
    cr_assert_eq(scheduler_plan(out2, 8, devs, 2, &b, 1000 + 3600), 2);
    cr_assert_eq(scheduler_plan(out2, 8, devs, 0, &b, 1000 + 3600), 0);
}

/* A day of runs every minute: whatever the timing, no window of an hour
 * ever holds more than 12 calls. */
Test(scheduler, a_day_of_minutely_runs_never_exceeds_twelve_per_hour)
{
    long long calls[400];
    size_t n_calls = 0;
    long long start = 1795000000;
    for (long long now = start; now < start + 86400; now += 60) {
        struct sched_budget b = {.limit = 12, .span = 3600};
        for (size_t i = 0; i < n_calls; i++) {
            if (calls[i] > now - 3600)
                b.used++;
            if (calls[i] > b.last_call)
                b.last_call = calls[i];
        }
        size_t allow = scheduler_allowance(&b, now);
        for (size_t k = 0; k < allow; k++) {
            cr_assert_lt(n_calls, 400);
            calls[n_calls++] = now;
        }
    }
    for (size_t i = 0; i < n_calls; i++) {
        size_t in_hour = 0;
        for (size_t j = 0; j < n_calls; j++)
            if (calls[j] >= calls[i] && calls[j] < calls[i] + 3600)
                in_hour++;
        cr_assert_leq(in_hour, 12);
    }
    cr_assert_geq(n_calls, 280, "a day should use nearly all of its 288 calls, used %zu", n_calls);
}

/* --- the reserve for urgent looks ---------------------------------------- */

static struct sched_budget reserved_budget(size_t used, long long last_call)
{
    struct sched_budget b = alert_budget(used, last_call);
    b.reserve = 1;
    return b;
}

Test(scheduler, a_reserve_widens_the_spacing)
{
    struct sched_budget b = reserved_budget(1, 1000000);
    cr_assert_eq(scheduler_spacing(&b), 327, "3600 s over 11 routine calls");
    cr_assert_eq(scheduler_allowance(&b, 1000000 + 294), 0);
    cr_assert_eq(scheduler_allowance(&b, 1000000 + 295), 1, "a tenth of the spacing early");
    cr_assert_eq(scheduler_next_call(&b, 1000000), 1000000 + 295);
    b.reserve = 0;
    cr_assert_eq(scheduler_spacing(&b), 300);
}

Test(scheduler, routine_polling_leaves_the_reserve)
{
    struct sched_budget b = reserved_budget(10, 1000000);
    cr_assert_eq(scheduler_allowance(&b, 1000000 + 3000), 1, "the eleventh call");
    b.used = 11;
    cr_assert_eq(scheduler_allowance(&b, 1000000 + 3000), 0, "the twelfth is kept");
    cr_assert(scheduler_urgent(&b, 1000000 + 3000), "for an urgent look");
    /* With the routine slots spent, the next routine call waits for the
     * window's oldest call to leave it. */
    b.oldest = 1000000 - 500;
    cr_assert_eq(scheduler_next_call(&b, 1000000 + 3000), 1000000 - 500 + 3601);
}

Test(scheduler, an_urgent_look_needs_only_room_in_the_window)
{
    struct sched_budget b = reserved_budget(3, 1000000);
    cr_assert(scheduler_urgent(&b, 1000000 + 1), "the spacing does not count");
    b.used = 12;
    cr_assert_not(scheduler_urgent(&b, 1000000 + 1), "the reserve is spent too");
    b.used = 0;
    b.blocked_until = 1000000 + 60;
    cr_assert_not(scheduler_urgent(&b, 1000000 + 59), "a block holds looks too");
    cr_assert(scheduler_urgent(&b, 1000000 + 60));
}

/* A day of runs every minute with a reserve: no hour holds more than the
 * 11 routine calls, so an urgent look is possible at every moment. */
Test(scheduler, a_day_of_minutely_runs_keeps_the_reserve_free)
{
    long long calls[400];
    size_t n_calls = 0;
    long long start = 1795000000;
    for (long long now = start; now < start + 86400; now += 60) {
        struct sched_budget b = reserved_budget(0, 0);
        for (size_t i = 0; i < n_calls; i++) {
            if (calls[i] > now - 3600)
                b.used++;
            if (calls[i] > b.last_call)
                b.last_call = calls[i];
        }
        cr_assert(scheduler_urgent(&b, now), "no room for a look at %lld", now - start);
        size_t allow = scheduler_allowance(&b, now);
        for (size_t k = 0; k < allow; k++) {
            cr_assert_lt(n_calls, 400);
            calls[n_calls++] = now;
        }
    }
    cr_assert_geq(n_calls, 260, "a day should use nearly all of its 264 routine calls, used %zu",
                  n_calls);
}

/* --- the next call allowed ------------------------------------------------ */

Test(scheduler, next_call_is_now_when_a_call_is_allowed)
{
    struct sched_budget b = alert_budget(0, 0);
    cr_assert_eq(scheduler_next_call(&b, 1000000), 1000000);
    b = alert_budget(3, 1000000 - 300);
    b.oldest = 1000000 - 900;
    cr_assert_eq(scheduler_next_call(&b, 1000000), 1000000);
}

Test(scheduler, next_call_waits_one_spacing_after_the_last)
{
    struct sched_budget b = alert_budget(1, 1000000);
    /* The grid's next boundary is at 1000200; 0.9 spacing after the call
     * is later. */
    cr_assert_eq(scheduler_next_call(&b, 1000000 + 60), 1000000 + 270);
    /* A last call stamped in the future is waited for the same way. */
    cr_assert_eq(scheduler_next_call(&b, 999000), 1000000 + 270);
    /* A call stamped early in its slot waits for the next boundary. */
    b.last_call = GRID + 10;
    cr_assert_eq(scheduler_next_call(&b, GRID + 60), GRID + 300);
}

Test(scheduler, next_call_waits_for_a_block)
{
    struct sched_budget b = alert_budget(1, 1000000);
    b.blocked_until = 1000000 + 1800;
    cr_assert_eq(scheduler_next_call(&b, 1000000 + 60), 1000000 + 1800);
}

Test(scheduler, next_call_of_a_full_window_waits_for_its_oldest_call_to_leave)
{
    struct sched_budget b = alert_budget(12, 1003300);
    b.oldest = 1000000;
    cr_assert_eq(scheduler_next_call(&b, 1003400), 1000000 + 3600 + 1);
    b.oldest = 0;
    cr_assert_eq(scheduler_next_call(&b, 1003400), 1003400 + 3600, "oldest unknown: a span");
}

/* The number of calls in `calls` that a budget at `now` counts, and the
 * budget itself, as run.c builds it from the ledger. */
static int budget_reserve_now; /* the reserve budget_from sets */

static struct sched_budget budget_from(const long long *calls, size_t n, long long now)
{
    struct sched_budget b = {.limit = 12, .reserve = budget_reserve_now, .span = 3600};
    for (size_t i = 0; i < n; i++) {
        if (calls[i] >= now - 3600) {
            b.used++;
            if (!b.oldest || calls[i] < b.oldest)
                b.oldest = calls[i];
        }
        if (calls[i] > b.last_call)
            b.last_call = calls[i];
    }
    return b;
}

/* Whatever the history, the time scheduler_next_call names is the first
 * second at which scheduler_allowance allows a call. Runs come at uneven
 * times (every 1 to 17 minutes) and spend what they are allowed, so the
 * window is sometimes full. A quiet run (quiet.h) relies on the time
 * never being late. */
static void check_next_call(int reserve)
{
    budget_reserve_now = reserve;
    long long calls[600];
    size_t n_calls = 0;
    long long start = 1795000000;
    unsigned step = 1;
    int full = 0;
    for (long long now = start; now < start + 2 * 86400; now += 60 * (step % 17 + 1)) {
        step = step * 1103515245u + 12345u;
        struct sched_budget b = budget_from(calls, n_calls, now);
        if (step % 5 == 0)
            b.blocked_until = now + (long long)(step % 2000);
        long long next = scheduler_next_call(&b, now);
        cr_assert_geq(next, now);
        full += b.used >= (size_t)(12 - reserve);
        for (long long t = now; t < next; t += 7) {
            struct sched_budget bt = budget_from(calls, n_calls, t);
            bt.blocked_until = b.blocked_until;
            cr_assert_eq(scheduler_allowance(&bt, t), 0, "allowed at %lld, before %lld", t - start,
                         next - start);
        }
        struct sched_budget bn = budget_from(calls, n_calls, next);
        bn.blocked_until = b.blocked_until;
        cr_assert_gt(scheduler_allowance(&bn, next), 0, "not allowed at %lld", next - start);
        size_t allow = scheduler_allowance(&b, now);
        cr_assert_eq(allow > 0, next == now);
        /* A burst now and then, so that the window fills up. */
        size_t spend = step % 3 == 0 ? allow : (allow > 0);
        for (size_t k = 0; k < spend; k++) {
            cr_assert_lt(n_calls, 600);
            calls[n_calls++] = now;
        }
    }
    cr_assert_gt(full, 0, "the window was never full");
}

Test(scheduler, next_call_is_the_first_second_the_allowance_is_positive)
{
    check_next_call(0);
}

Test(scheduler, next_call_is_the_first_second_the_allowance_is_positive_with_a_reserve)
{
    check_next_call(1);
}

/* Three devices, one of priority 3, one call every five minutes for a
 * week: the priority-3 device is looked at about three times as often as
 * each of the others, and none of them waits without end. */
Test(scheduler, priority_weights_how_often_a_device_is_looked_at)
{
    struct sched_device devs[3] = {{.last_poll = 0, .priority = 1},
                                   {.last_poll = 0, .priority = 3},
                                   {.last_poll = 0, .priority = 0}}; /* 0 counts as 1 */
    size_t polls[3] = {0};
    long long longest_wait[3] = {0};
    long long t0 = 1795000000;
    for (long long now = t0; now < t0 + 7 * 86400; now += 300) {
        struct sched_budget b = {
            .limit = 12, .span = 3600, .used = 0, .last_call = now == t0 ? 0 : now - 300};
        size_t pick;
        cr_assert_eq(scheduler_plan(&pick, 1, devs, 3, &b, now), 1);
        if (devs[pick].last_poll && now - devs[pick].last_poll > longest_wait[pick])
            longest_wait[pick] = now - devs[pick].last_poll;
        devs[pick].last_poll = now;
        polls[pick]++;
    }
    double ratio0 = (double)polls[1] / (double)polls[0];
    double ratio2 = (double)polls[1] / (double)polls[2];
    cr_assert(ratio0 > 2.5 && ratio0 < 3.5, "%zu vs %zu", polls[1], polls[0]);
    cr_assert(ratio2 > 2.5 && ratio2 < 3.5, "%zu vs %zu", polls[1], polls[2]);
    for (int i = 0; i < 3; i++)
        cr_assert_lt(longest_wait[i], 3600, "device %d waited %lld s", i, longest_wait[i]);
}

/* --- signals (scheduler_plan_signals) ------------------------------------ */

static struct sched_budget signal_budget(size_t used, long long last_call)
{
    struct sched_budget b = {.limit = 12,
                             .reserve = 1,
                             .headroom = 2,
                             .span = 3600,
                             .used = used,
                             .last_call = last_call};
    return b;
}

Test(scheduler, headroom_slows_the_round_robin_to_nine_an_hour)
{
    struct sched_budget b = signal_budget(0, 0);
    cr_assert_eq(scheduler_spacing(&b), 400);
    cr_assert_eq(scheduler_bound(&b, 12), 12 * 400 + 6 * 400 + 400);
}

Test(scheduler, a_signal_goes_first_and_uses_the_room_at_once)
{
    /* Nothing earned by the grid (a call 100 s ago), 9 calls in the hour:
     * the round robin waits, the signal does not. */
    struct sched_device devs[48];
    for (size_t i = 0; i < 48; i++)
        devs[i] = (struct sched_device){.last_poll = 1000000 - (long long)i};
    devs[30].signal = true;
    devs[30].signal_since = 1000050;
    struct sched_budget b = signal_budget(9, 1000000);
    size_t out[48], signals = 9;
    size_t n = scheduler_plan_signals(out, 48, devs, 48, &b, 1000100, &signals);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 30);
    cr_assert_eq(signals, 1);
}

Test(scheduler, signals_go_oldest_first_and_one_may_use_the_reserve)
{
    struct sched_device devs[5] = {
        {.last_poll = 10, .signal = true, .signal_since = 300},
        {.last_poll = 10},
        {.last_poll = 10, .signal = true, .signal_since = 100},
        {.last_poll = 10, .signal = true, .signal_since = 200},
        {.last_poll = 10, .signal = true, .signal_since = 400},
    };
    /* 10 used: one call of room beyond the reserve, then the reserve. */
    struct sched_budget b = signal_budget(10, 1000);
    size_t out[5], signals = 0;
    size_t n = scheduler_plan_signals(out, 5, devs, 5, &b, 1100, &signals);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[0], 2);
    cr_assert_eq(out[1], 3);
    cr_assert_eq(signals, 2);
    /* The reserve spent too: nothing. */
    b.used = 12;
    cr_assert_eq(scheduler_plan_signals(out, 5, devs, 5, &b, 1100, &signals), 0);
    cr_assert_eq(signals, 0);
    /* Blocked: nothing either. */
    b.used = 0;
    b.blocked_until = 2000;
    cr_assert_eq(scheduler_plan_signals(out, 5, devs, 5, &b, 1100, NULL), 0);
}

Test(scheduler, without_signals_the_plan_is_the_round_robin)
{
    struct sched_device devs[4] = {
        {.last_poll = 40}, {.last_poll = 10}, {.last_poll = 20}, {.last_poll = 30}};
    struct sched_budget b = signal_budget(3, 500), lent = b;
    lent.headroom = 0;
    size_t a[4], c[4];
    size_t n = scheduler_plan_signals(a, 4, devs, 4, &b, 1000, NULL);
    size_t m = scheduler_plan(c, 4, devs, 4, &lent, 1000);
    cr_assert_eq(n, 2, "two slots of the lent budget's grid (327 s) since 500");
    cr_assert_eq(m, n);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(a[k], c[k]);
    cr_assert_eq(a[0], 1);
    cr_assert_eq(a[1], 2);
}

/* New devices get their first polls one a run (and the round robin's
 * slot), never a burst: 12 new devices and an empty window make 2 calls
 * in the first run, then one or two a minute, as far as the room beyond
 * the headroom goes (9 calls), and leave 2 (and the reserve) for
 * signals. */
Test(scheduler, new_devices_are_polled_first_one_a_run_and_leave_the_headroom)
{
    struct sched_device devs[12] = {{0}};
    devs[11].last_poll = 900;
    struct sched_budget b = signal_budget(0, 0);
    size_t out[12];
    size_t n = scheduler_plan_signals(out, 12, devs, 12, &b, 1000, NULL);
    cr_assert_eq(n, 2);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(out[k], k, "never-polled in pool order");
    long long now = 1000;
    size_t made = 0;
    for (; made < 20 && now < 1000 + 3600; now += 60) {
        b.last_call = made ? b.last_call : 0;
        n = scheduler_plan_signals(out, 12, devs, 12, &b, now, NULL);
        cr_assert_leq(n, 2, "%zu calls in one run", n);
        for (size_t k = 0; k < n; k++) {
            cr_assert_eq(devs[out[k]].last_poll, 0, "a new device first");
            devs[out[k]].last_poll = now;
            b.last_call = now;
            b.used++;
            made++;
        }
        if (b.used == 9)
            break;
    }
    cr_assert_eq(b.used, 9, "the room beyond the headroom is used");
    cr_assert_lt(now, 1000 + 9 * 60, "within %lld s", now - 1000);
    /* A signal still finds its room in the same window. */
    devs[11].signal = true;
    devs[11].signal_since = now - 10;
    n = scheduler_plan_signals(out, 12, devs, 12, &b, now + 10, NULL);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 11);
}

/* A device never polled counts towards the bound from when it joined
 * the pool: when signals hold every call, it is still polled within the
 * bound of that time (the round robin's first-poll step uses only the room
 * beyond the headroom, which the signals take). */
Test(scheduler, a_device_never_polled_is_overdue_from_when_it_joined)
{
    /* 9 calls in the hour: room for signals only, not for a first poll. */
    struct sched_budget b = signal_budget(9, 0);
    /* Overdue after one round (3 devices at the spacing). */
    long long joined = 100000, late = joined + 3 * scheduler_spacing(&b) + 1;
    b.last_call = late - 200;
    struct sched_device devs[3] = {
        {.last_poll = 0, .known_since = joined},
        {.last_poll = late - 200, .signal = true, .signal_since = late - 200},
        {.last_poll = late - 200, .signal = true, .signal_since = late - 200},
    };
    size_t out[3];
    size_t n = scheduler_plan_signals(out, 3, devs, 3, &b, late - 100, NULL);
    cr_assert_eq(n, 2, "signals only before the bound");
    cr_assert_neq(out[0], 0);
    cr_assert_neq(out[1], 0);
    n = scheduler_plan_signals(out, 3, devs, 3, &b, late, NULL);
    cr_assert_geq(n, 1);
    cr_assert_eq(out[0], 0, "the never-polled device goes first once overdue");
}

/* Calls kept for signals are lent to the round robin when no signal took
 * them, and the bound counts with the most headroom, so it holds however
 * the headroom moves. */
Test(scheduler, headroom_lent_back_makes_eleven_calls_an_hour_and_keeps_the_bound)
{
    struct sched_budget b = signal_budget(0, 0);
    b.headroom_max = 5;
    long long bound = scheduler_bound(&b, 12);
    b.headroom = 0;
    cr_assert_eq(scheduler_spacing(&b), 327, "11 routine calls an hour");
    cr_assert_eq(scheduler_bound(&b, 12), bound);
    cr_assert_eq(bound, 12 * 600 + 6 * 600 + 600);
}

/* A run after a full window does not spend an hour of missed slots at
 * once: the credit reaches back SCHED_CREDIT_SPAN at most. */
Test(scheduler, credit_after_a_long_stretch_is_capped)
{
    struct sched_budget b = alert_budget(0, 1000000);
    b.reserve = 1;
    size_t allow = scheduler_allowance(&b, 1000000 + 3660);
    cr_assert_leq(allow, (size_t)(SCHED_CREDIT_SPAN / 327 + 1), "%zu at once", allow);
    cr_assert_geq(allow, 1);
}

/* Forty-eight devices, half of them always with a signal, the other half
 * polled together at the start: the quiet ones fall overdue together and
 * come back one a run with room, yet each is looked at within the bound
 * (they go ahead of signals half a round before it). */
Test(scheduler, many_devices_overdue_together_all_keep_the_bound)
{
    enum { N = 48 };
    struct sched_device devs[N];
    static long long calls[4000];
    size_t n_calls = 0;
    long long start = 1795000000, worst = 0;
    long long last[N];
    for (size_t i = 0; i < N; i++) {
        devs[i] = (struct sched_device){.last_poll = start - (long long)i};
        last[i] = devs[i].last_poll;
    }
    for (long long now = start; now < start + 2 * 86400; now += 60) {
        struct sched_budget b = signal_budget(0, 0);
        b.headroom = 1;
        b.headroom_max = 5;
        for (size_t k = 0; k < n_calls; k++)
            if (calls[k] >= now - 3600)
                b.used++;
        for (size_t i = N / 2; i < N; i++) {
            devs[i].signal = true;
            if (!devs[i].signal_since)
                devs[i].signal_since = now;
        }
        size_t out[N];
        size_t n = scheduler_plan_signals(out, N, devs, N, &b, now, NULL);
        for (size_t k = 0; k < n; k++) {
            size_t i = out[k];
            if (i < N / 2 && now - last[i] > worst)
                worst = now - last[i];
            last[i] = devs[i].last_poll = now;
            devs[i].signal_since = 0;
            cr_assert(n_calls < 4000);
            calls[n_calls++] = now;
        }
    }
    struct sched_budget b = signal_budget(0, 0);
    b.headroom_max = 5;
    cr_assert(worst > 0);
    cr_assert_leq(worst, scheduler_bound(&b, N), "a quiet device waited %lld min (bound %lld)",
                  worst / 60, scheduler_bound(&b, N) / 60);
}

/* A day of runs every minute where every device but one always has a
 * signal: the signals take every call they can, yet the quiet device is
 * still looked at within the bound, and no sliding hour holds more than
 * the platform's 12 calls. */
Test(scheduler, the_bound_holds_when_signals_saturate_the_budget)
{
    enum { N = 12 };
    struct sched_device devs[N];
    long long calls[2000];
    size_t n_calls = 0;
    long long start = 1795000000, worst_gap = 0, last_quiet = start;
    for (size_t i = 0; i < N; i++)
        devs[i] = (struct sched_device){.last_poll = start - 60 * (long long)(N - i)};
    for (long long now = start; now < start + 86400; now += 60) {
        struct sched_budget b = signal_budget(0, n_calls ? calls[n_calls - 1] : 0);
        for (size_t k = 0; k < n_calls; k++)
            if (calls[k] >= now - 3600)
                b.used++;
        for (size_t i = 1; i < N; i++) {
            devs[i].signal = true;
            if (!devs[i].signal_since)
                devs[i].signal_since = now;
        }
        size_t out[N];
        size_t n = scheduler_plan_signals(out, N, devs, N, &b, now, NULL);
        for (size_t k = 0; k < n; k++) {
            devs[out[k]].last_poll = now;
            devs[out[k]].signal_since = 0;
            calls[n_calls++] = now;
            cr_assert(n_calls < 2000);
            if (out[k] == 0) {
                if (now - last_quiet > worst_gap)
                    worst_gap = now - last_quiet;
                last_quiet = now;
            }
        }
        size_t in_hour = 0;
        for (size_t k = 0; k < n_calls; k++)
            in_hour += calls[k] > now - 3600;
        cr_assert(in_hour <= 12, "%zu calls in the hour before %lld", in_hour, now);
    }
    struct sched_budget b = signal_budget(0, 0);
    cr_assert(worst_gap > 0, "the quiet device was never polled");
    cr_assert(worst_gap <= scheduler_bound(&b, N), "the quiet device waited %lld s (bound %lld)",
              worst_gap, scheduler_bound(&b, N));
}

/* Signals whose news is out (an early warning told people of the alarm)
 * wait behind those whose news is not, whatever their age, and never take
 * the reserve. */
Test(scheduler, announced_signals_wait_behind_the_others_and_leave_the_reserve)
{
    struct sched_device devs[4] = {
        {.last_poll = 10, .signal = true, .signal_since = 100, .told = true},
        {.last_poll = 10, .signal = true, .signal_since = 300},
        {.last_poll = 10, .signal = true, .signal_since = 200, .told = true},
        {.last_poll = 10, .signal = true, .signal_since = 400},
    };
    struct sched_budget b = signal_budget(0, 1000);
    size_t out[4], signals = 0;
    size_t n = scheduler_plan_signals(out, 4, devs, 4, &b, 1100, &signals);
    cr_assert_eq(n, 4);
    cr_assert_eq(out[0], 1);
    cr_assert_eq(out[1], 3);
    cr_assert_eq(out[2], 0);
    cr_assert_eq(out[3], 2);
    /* One call of room beyond the reserve: the oldest signal not told
     * takes it, and the reserve goes to the other one not told. */
    b.used = 10;
    n = scheduler_plan_signals(out, 4, devs, 4, &b, 1100, &signals);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[0], 1);
    cr_assert_eq(out[1], 3);
    /* Only told signals left: the room, not the reserve. */
    devs[1].told = devs[3].told = true;
    n = scheduler_plan_signals(out, 4, devs, 4, &b, 1100, &signals);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 0);
}

/* Guesses (a look planned in advance: a look once more, a crossing
 * foreseen) go behind the signals that point at an entry and before the
 * told ones, the oldest first; one may take the reserve, as a signal that
 * points at an entry may. */
Test(scheduler, guesses_go_between_the_signals_that_point_at_an_entry_and_the_told_ones)
{
    long long now = 100000;
    struct sched_device devs[4] = {
        {.last_poll = now - 600, .signal = true, .signal_since = now - 700},
        {.last_poll = now - 600, .signal = true, .signal_since = now - 900, .guess = true},
        {.last_poll = now - 600, .signal = true, .signal_since = now - 1000, .told = true},
        {.last_poll = now - 600, .signal = true, .signal_since = now - 800, .guess = true},
    };
    struct sched_budget b = signal_budget(0, now - 60);
    size_t out[4], signals = 0;
    size_t n = scheduler_plan_signals(out, 4, devs, 4, &b, now, &signals);
    cr_assert_eq(n, 4);
    cr_assert_eq(signals, 4);
    cr_assert_eq(out[0], 0, "the signal that points at an entry first");
    cr_assert_eq(out[1], 1, "then the older guess");
    cr_assert_eq(out[2], 3);
    cr_assert_eq(out[3], 2, "the told signal last");
    /* One call of room: the signal that points at an entry takes it, and
     * the reserve goes to the older guess. */
    b.used = 10;
    n = scheduler_plan_signals(out, 4, devs, 4, &b, now, &signals);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[0], 0);
    cr_assert_eq(out[1], 1);
    /* No room at all but the reserve: the signal that points at an entry,
     * younger than both guesses, takes it. */
    b.used = 11;
    n = scheduler_plan_signals(out, 4, devs, 4, &b, now, &signals);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 0);
}

/* At 48 devices a round is hours long, and a device overdue by minutes
 * has hours before its bound: a signal takes the one call the window has
 * room for, and the overdue device goes first only once its bound presses
 * (a span and a spacing before it, at the most headroom). */
Test(scheduler, an_overdue_device_lets_signals_go_first_until_its_bound_presses)
{
    enum { N = 48 };
    struct sched_budget b = signal_budget(10, 0);
    long long now = 2000000, bound = scheduler_bound(&b, N);
    long long spacing = 400; /* 3600 / (12 - 1 - 2) */
    long long round = N * spacing;
    cr_assert_eq(bound, round + round / 2 + spacing);
    struct sched_device devs[N];
    for (size_t i = 0; i < N; i++)
        devs[i] = (struct sched_device){.last_poll = now - 600 - (long long)i};
    devs[0].last_poll = now - round - 60;
    devs[1].signal = true;
    devs[1].signal_since = now - 60;
    b.last_call = now - 300;
    size_t out[N], signals = 0;
    size_t n = scheduler_plan_signals(out, N, devs, N, &b, now, &signals);
    cr_assert_eq(n, 1, "one call of room: the signal's");
    cr_assert_eq(out[0], 1);
    cr_assert_eq(signals, 1);
    /* A span and a spacing before its bound, it goes first, and the
     * signal takes the reserve. */
    long long presses = devs[0].last_poll + bound - 3600 - spacing;
    n = scheduler_plan_signals(out, N, devs, N, &b, presses - 60, &signals);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 1, "not yet");
    n = scheduler_plan_signals(out, N, devs, N, &b, presses, &signals);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[0], 0, "its bound presses");
    cr_assert_eq(out[1], 1);
}

/* Devices that fell overdue together (signals held the window) come back
 * one a run, least recently polled first, and leave the rest of the room
 * to the signals. */
Test(scheduler, overdue_devices_go_first_longest_waiting_first)
{
    struct sched_budget b = signal_budget(0, 0);
    long long now = 1000000, bound = scheduler_bound(&b, 6);
    struct sched_device devs[6];
    for (size_t i = 0; i < 6; i++)
        devs[i] = (struct sched_device){.last_poll = now - 1000 + (long long)i};
    devs[1].last_poll = devs[3].last_poll = now - bound - 200;
    devs[4].last_poll = now - bound - 300;
    devs[5].signal = true;
    devs[5].signal_since = now - 120;
    b.last_call = now - 30;
    size_t out[6], signals = 0;
    size_t n = scheduler_plan_signals(out, 6, devs, 6, &b, now, &signals);
    cr_assert_eq(n, 4);
    cr_assert_eq(out[0], 4);
    cr_assert_eq(out[1], 1);
    cr_assert_eq(out[2], 3);
    cr_assert_eq(out[3], 5);
    cr_assert_eq(signals, 1);
    /* Room for one call beyond the reserve: the longest waiting. */
    b.used = 10;
    n = scheduler_plan_signals(out, 6, devs, 6, &b, now, &signals);
    cr_assert_geq(n, 1);
    cr_assert_eq(out[0], 4);
}

/* A device never polled counts as not told: its first poll teaches its
 * limits, and no round-robin bound holds it. */
Test(scheduler, a_told_signal_of_a_device_never_polled_does_not_wait)
{
    struct sched_device devs[2] = {
        {.last_poll = 10, .signal = true, .signal_since = 300},
        {.last_poll = 0, .signal = true, .signal_since = 400, .told = true},
    };
    struct sched_budget b = signal_budget(10, 1000);
    size_t out[2], signals = 0;
    size_t n = scheduler_plan_signals(out, 2, devs, 2, &b, 1100, &signals);
    cr_assert_eq(n, 2, "the room, then the reserve");
    cr_assert_eq(out[0], 0);
    cr_assert_eq(out[1], 1);
}

/* While no device has a signal, the headroom is lent to the round robin
 * but for one call: with 9 calls in the hour and 2 kept free, the round
 * robin makes the tenth; a device with a signal makes it keep both. */
Test(scheduler, headroom_is_lent_while_no_signal_waits)
{
    struct sched_device devs[12];
    for (size_t i = 0; i < 12; i++)
        devs[i] = (struct sched_device){.last_poll = 1000000 + (long long)i};
    struct sched_budget b = signal_budget(10, 1000000 + 11);
    long long now = 1000000 + 11 + 400;
    size_t out[12], signals = 0;
    size_t n = scheduler_plan_signals(out, 12, devs, 12, &b, now, &signals);
    cr_assert_eq(n, 1, "the eleventh call of the hour: the headroom is lent whole");
    cr_assert_eq(out[0], 0);
    cr_assert_eq(signals, 0);
    /* A device that will look again (a silence) keeps one call free for
     * its next look: the round robin stops at 10. */
    devs[7].looks_again = true;
    cr_assert_eq(scheduler_plan_signals(out, 12, devs, 12, &b, now, &signals), 0);
    devs[7].looks_again = false;
    /* A signal waits: it takes the room the headroom keeps, and the round
     * robin keeps to its 9. */
    devs[5].signal = true;
    devs[5].signal_since = now - 60;
    n = scheduler_plan_signals(out, 12, devs, 12, &b, now, &signals);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 5, "the signal only");
    b.used = 11;
    n = scheduler_plan_signals(out, 12, devs, 12, &b, now, &signals);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 5, "the signal takes the reserve");
    devs[5].signal = false;
    cr_assert_eq(scheduler_plan_signals(out, 12, devs, 12, &b, now, &signals), 0,
                 "without it, the reserve is kept");
}

/* A hint (an unusual reading, readings_memory.h) spends nothing: it puts
 * its device first in the round robin's order, before devices never
 * polled, the earliest hint first; the calls stay the allowance's. Only
 * where the round robin would come to the device more than an hour later
 * (SCHED_HINT_GAIN): 48 devices at one call every 300 s make a round of
 * 4 h, and a device polled a round ago is due within the hour anyway. */
Test(scheduler, a_hinted_device_goes_first_in_the_round_robin)
{
    const long long t = 1000200; /* on the grid of 300 s */
    struct sched_device devs[48];
    for (size_t i = 0; i < 48; i++)
        devs[i] = (struct sched_device){.last_poll = t + 300 * (long long)i};
    long long now = t + 48 * 300;
    devs[20].last_poll = 0;
    devs[47].hint = now - 100;
    devs[40].hint = now - 200;
    devs[1].hint = now - 300; /* due at t + 300 + 4 h: within the hour */
    struct sched_budget b = alert_budget(0, now - 1200);
    size_t out[8];
    size_t n = scheduler_plan(out, 8, devs, 48, &b, now);
    cr_assert_eq(n, 4, "the allowance, as without hints");
    cr_assert_eq(out[0], 40, "the earliest hint that counts");
    cr_assert_eq(out[1], 47);
    cr_assert_eq(out[2], 20, "then a device never polled");
    cr_assert_eq(out[3], 0, "then the least recently polled");
    devs[40].hint = devs[47].hint = 0;
    n = scheduler_plan(out, 8, devs, 48, &b, now);
    cr_assert_eq(out[0], 20);
    cr_assert_eq(out[1], 0);
    cr_assert_eq(out[2], 1, "a hint that does not count: its own place");
}

/* With signals in the pool, a hinted device takes the one call a run that
 * a device never polled would take (step 3), within the room beyond the
 * headroom; signals and overdue devices still come first. */
Test(scheduler, a_hinted_device_goes_before_a_first_poll_when_signals_plan)
{
    const long long t = 1000000;
    struct sched_device devs[48];
    for (size_t i = 0; i < 48; i++)
        devs[i] = (struct sched_device){.last_poll = t + 100 + 400 * (long long)i};
    long long now = t + 48 * 400 + 60;
    devs[2].last_poll = 0;
    devs[2].known_since = t + 1000;
    devs[45].hint = now - 30;
    devs[1].signal = true;
    devs[1].signal_since = now - 40;
    struct sched_budget b = signal_budget(3, now - 55);
    size_t out[8], signals = 0;
    size_t n = scheduler_plan_signals(out, 8, devs, 48, &b, now, &signals);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[0], 1, "the signal");
    cr_assert_eq(signals, 1);
    cr_assert_eq(out[1], 45, "the hint, before the first poll");
    devs[45].hint = 0;
    n = scheduler_plan_signals(out, 8, devs, 48, &b, now, &signals);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[1], 2, "without it, the first poll");
}
