/* Which devices to poll now, within a login ID's budget.
 *
 * The platform allows 12 alert calls per hour per login ID, shared by all
 * its devices, and keeps only the last 20 entries of each device. Spending
 * the budget in a burst would leave the rest of the hour blind, so calls
 * are spread evenly: one per spacing (span / the calls routine polling may
 * make, which is the limit less a reserve kept for urgent looks), with credit for time that passed
 * without a run, never more than the sliding window allows. Devices are taken least recently polled
 * first, never-polled devices before all others. Pure: `now` is an
 * argument. */
#ifndef WSRELAY_SCHEDULER_H
#define WSRELAY_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>

#define SCHED_CREDIT_SPAN 1800 /* seconds of missed slots a late run gets credit for */
#define SCHED_HINT_GAIN 3600   /* a hint counts unless the round robin comes within this */

struct sched_device {
    long long last_poll;    /* 0: never */
    unsigned priority;      /* the config's `priority:`; 0 counts as 1 */
    bool signal;            /* its readings moved (readings_memory.h): poll it first */
    long long signal_since; /* when that signal was raised */
    bool told;              /* an early warning told people its news already: it
                               waits behind the signals whose news is not out,
                               guesses included */
    long long known_since;  /* for a device never polled: since when it is in the
                               pool (its bound counts from then); 0: unknown */
    bool guess;             /* its signal is a look planned in advance (a look
                               once more, a crossing foreseen; not a silent
                               device's): a guess at when an entry is there. It
                               goes behind the signals that point at an entry,
                               before the `told` ones */
    bool looks_again;       /* a look once more is planned for later (a silence,
                               an excursion under way): the headroom is not
                               lent whole */
    long long hint;         /* an unusual reading asks the round robin to look
                               here early, since this time (readings_memory.h,
                               watch_hint_due; when it counts: scheduler_plan);
                               0: none */
};

struct sched_budget {
    int limit;               /* calls allowed per span (12) */
    int reserve;             /* of those, kept for urgent looks (0 to limit - 1) */
    int headroom;            /* of the others, left free by the round robin for
                                signals to use at once (0: none) */
    int headroom_max;        /* the most headroom may become: scheduler_bound counts
                                with it, so the bound holds whatever the headroom
                                does (0 or less than headroom: headroom) */
    long span;               /* seconds (3600) */
    size_t used;             /* calls recorded in [now - span, now] */
    long long oldest;        /* the oldest of those; 0: none or unknown */
    long long last_call;     /* 0: none */
    long long blocked_until; /* no call before this time */
};

/* The seconds between two routine calls: span / (limit - reserve -
 * headroom), at least 1. */
long scheduler_spacing(const struct sched_budget *b);

/* How many routine calls the budget allows now: one for each boundary of
 * a fixed grid of the clock (every spacing) crossed since the last call,
 * so that runs at any interval come to the same rate; never more than the
 * window has left once the reserve is set aside. Two calls are at least
 * 0.9 spacing apart (a call is stamped a few seconds into its run). The
 * credit reaches back SCHED_CREDIT_SPAN seconds at most: a run comes at
 * most that late, and slots further back passed while the window was full,
 * so they would come out as a burst when it frees. A first call gets one
 * slot; a last call stamped after `now` (the clock went back) is waited
 * for. */
size_t scheduler_allowance(const struct sched_budget *b, long long now);

/* Whether an urgent look may be made now: the window may still take a
 * call, the reserve included, and no block holds. The spacing does not
 * count: an urgent look is for the moment someone needs it. */
bool scheduler_urgent(const struct sched_budget *b, long long now);

/* Writes into `out` the indices of the devices to poll now, most urgent
 * first, at most `max_out` and at most the allowance; returns how many.
 * Hinted devices are the most urgent, the earliest hint first (a hint
 * spends no call, it only comes first), unless the device's own turn comes
 * within SCHED_HINT_GAIN (it comes soon anyway; a turn already past
 * counts: signals took the round robin's calls); then never-polled ones;
 * then the one most overdue,
 * where a device is due a round of the pool after its last poll, divided
 * by its priority: a device of priority 3 is looked at three times as
 * often as one of priority 1, and with equal priorities this is least
 * recently polled first. Ties go to the lower index. */
size_t scheduler_plan(size_t *out, size_t max_out, const struct sched_device *devs, size_t n,
                      const struct sched_budget *b, long long now);

/* How long a device may wait for the round robin when signals take
 * calls: one and a half rounds of a pool of `n` devices at the routine
 * spacing the most headroom leaves (headroom_max), plus a spacing for the
 * window to free a call. A device polled longer ago than one round is
 * overdue; overdue devices go before signals, as far as the window has
 * room, once the bound of one of them presses: when no more remains of it
 * than a span (the window may free its first call only an hour later) and
 * a spacing for each overdue device that goes before it and itself. */
long long scheduler_bound(const struct sched_budget *b, size_t n);

/* Like scheduler_plan, for a pool where some devices have a signal. The
 * calls come from two sources: the window's room beyond the reserve (what
 * the headroom keeps free, and any routine call not yet made) and, for one
 * signal, the reserve. While no device has a signal, the headroom is lent
 * to the round robin whole, or but one call while a device `looks_again`:
 * the reserve (and that one) are what an arriving signal (and the next
 * look) need at once, and a call kept free for a signal that does not come
 * is lost with its hour. In order:
 *   1. the devices polled longer ago than one round (scheduler_bound),
 *      the longest waiting first, while the window has room beyond the
 *      reserve (the first may take the reserve when there is no other)
 *      and the bound of one of those left presses; a device never polled
 *      counts from its known_since (when known);
 *   2. devices with a signal: first those that point at an entry and
 *      are not `told` (a device never polled counts as not told), then the
 *      guesses, then the told ones, the oldest signal first among equals,
 *      while the window has room beyond the reserve, then one more (not
 *      told) from the reserve if step 1 did not take it;
 *   3. one hinted device whose hint counts (scheduler_plan; the earliest
 *      hint first), else one device never polled (known longest first),
 *      if the room beyond the headroom allows: a hint may be an excursion
 *      between two uploads, a first poll teaches a device's limits, and
 *      one a run keeps the calls evenly spaced;
 *   4. scheduler_allowance's calls, as far as the room left goes, in
 *      scheduler_plan's order over the devices not taken yet.
 * Nothing while the budget is blocked. Returns how many indices were
 * written into `out` (at most max_out); *n_signal (may be NULL) gets how
 * many of them step 2 took. With no signal, nothing overdue and no device
 * new or hinted, this is scheduler_plan with the headroom lent. */
size_t scheduler_plan_signals(size_t *out, size_t max_out, const struct sched_device *devs,
                              size_t n, const struct sched_budget *b, long long now,
                              size_t *n_signal);

/* The earliest time at or after `now` at which scheduler_allowance will
 * allow a call, if no call is made before: not before blocked_until, the
 * next boundary of the grid and 0.9 spacing after the last call, and,
 * while `used` leaves nothing beyond the reserve, one second after the
 * window's oldest call has left it (when that is unknown, a span after
 * `now`; when the reserve was spent too, a second call must leave, so the
 * time is then an early guess). Returns `now` when a call is allowed now
 * (and for a budget without a limit or span). For `wsrelay status`: with
 * N devices waiting, the k-th in scheduler_plan's order is polled about k
 * spacings after that time. */
long long scheduler_next_call(const struct sched_budget *b, long long now);

/* Until when the operation must wait after a reply said no call is left
 * (X-RateLimit-Remaining: 0, or a 429). `b` counts the call just made;
 * `reset` is the reply's X-RateLimit-Reset (0: absent). Never later than
 * one span. */
long long scheduler_block_until(const struct sched_budget *b, long reset, long long now);

#endif
