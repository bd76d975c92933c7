/* Choosing which devices to poll now, within a login ID's budget.
 *
 * Why spread the calls: the alert operation allows 12 calls per hour per
 * login ID and each device keeps only its 20 newest entries. Twelve calls in
 * the first minute would leave the next 59 minutes blind; one call every
 * few minutes bounds how late any alert is seen. The routine calls leave
 * a reserve (one alert call an hour) so that an urgent look is possible at
 * any moment without breaking the limit. Calls are earned on a fixed grid
 * of the clock, one per spacing, so runs every minute, every 10 minutes or
 * at odd times all come to the same rate. A run that comes late (cron
 * skipped a minute, the machine slept) gets credit for the slots it
 * missed, but never more than the sliding window still allows, so the
 * platform's limit is never passed however runs are timed. */
#include "scheduler.h"
#include "util/xalloc.h"

#include <stdlib.h>

/* The calls of a window that routine polling may make. */
static int routine_limit(const struct sched_budget *b)
{
    int routine =
        b->limit - (b->reserve > 0 ? b->reserve : 0) - (b->headroom > 0 ? b->headroom : 0);
    return routine > 0 ? routine : 0;
}

/* The calls of a window that signals may make without the reserve. */
static size_t room_limit(const struct sched_budget *b)
{
    int room = b->limit - (b->reserve > 0 ? b->reserve : 0);
    return room > 0 ? (size_t)room : 0;
}

long scheduler_spacing(const struct sched_budget *b)
{
    int routine = routine_limit(b);
    long spacing = routine > 0 ? b->span / routine : b->span;
    return spacing > 0 ? spacing : 1;
}

bool scheduler_urgent(const struct sched_budget *b, long long now)
{
    return b->limit > 0 && b->span > 0 && now >= b->blocked_until && b->used < (size_t)b->limit;
}

/* The grid of slots: slot k is [k * spacing, (k + 1) * spacing) of the
 * Unix clock. */
static long long slot_of(long long t, long spacing)
{
    return t >= 0 ? t / spacing : -((-t + spacing - 1) / spacing);
}

/* The routine calls earned by `now`, before the window's count. One is
 * earned each time the clock crosses a boundary of the grid, so a part of
 * a spacing that a run does not use is not lost: runs every 10 minutes
 * with a spacing of 327 s earn 1 or 2 calls, 1.83 on average, not 1. Two
 * calls are never less than 0.9 spacing apart: a call is stamped when it
 * is sent, a few seconds into its run, and a stamp just past a boundary
 * must not let the next run call again at once; the tenth of the spacing
 * forgives those seconds. A first call earns one slot; a last call stamped
 * in the future (the clock went back) is waited for. */
static long long earned(const struct sched_budget *b, long long now)
{
    long spacing = scheduler_spacing(b);
    if (b->last_call == 0)
        return 1;
    if (now - b->last_call < spacing - spacing / 10)
        return 0;
    long long from =
        b->last_call > now - SCHED_CREDIT_SPAN ? b->last_call : now - SCHED_CREDIT_SPAN;
    long long slots = slot_of(now, spacing) - slot_of(from, spacing);
    return slots > 0 ? slots : 0;
}

size_t scheduler_allowance(const struct sched_budget *b, long long now)
{
    size_t routine = (size_t)routine_limit(b);
    if (routine == 0 || b->span <= 0 || now < b->blocked_until)
        return 0;
    if (b->used >= routine)
        return 0;
    size_t left = routine - b->used;
    long long slots = earned(b, now);
    return slots < (long long)left ? (size_t)slots : left;
}

/* Mirrors scheduler_allowance condition by condition, so that the time it
 * returns is the first at which the allowance becomes positive. */
long long scheduler_next_call(const struct sched_budget *b, long long now)
{
    long long at = now;
    if (routine_limit(b) <= 0 || b->span <= 0)
        return at;
    long spacing = scheduler_spacing(b);
    if (b->blocked_until > at)
        at = b->blocked_until;
    if (b->last_call) {
        /* The next boundary of the grid, and the least gap after the
         * last call; a last call in the future is waited for the same. */
        long long boundary = (slot_of(b->last_call, spacing) + 1) * spacing;
        long long gap = b->last_call + spacing - spacing / 10;
        if (boundary > at)
            at = boundary;
        if (gap > at)
            at = gap;
    }
    if (b->used >= (size_t)routine_limit(b)) {
        /* A call counts while it is at most a span old. */
        long long freed = b->oldest > 0 ? b->oldest + b->span + 1 : now + b->span;
        if (freed > at)
            at = freed;
    }
    return at;
}

/* The device's hint, when it counts now; 0 otherwise. A hint does not
 * count when the round robin's turn of the device (its due time: last
 * poll + `period` / priority) comes within SCHED_HINT_GAIN: it comes soon
 * anyway, and most hints are noise, each look they take moving every
 * other device one spacing later. A turn further away, or one past
 * already (signals took the round robin's calls), is worth the hint. */
static long long hint_counts(const struct sched_device *d, long long period, long long now)
{
    long long p = d->priority ? d->priority : 1;
    long long due_p = d->last_poll * p + period; /* due * p */
    if (!d->hint || (d->last_poll && due_p > now * p && due_p <= (now + SCHED_HINT_GAIN) * p))
        return 0;
    return d->hint;
}

/* Hinted devices first, the earliest hint first (an excursion may be
 * under way: it goes before teaching a device its limits); then
 * never-polled devices; then the earliest "due" time, a device's
 * last poll plus `period` / its priority, where `period` is how long one
 * round of the whole pool takes (the spacing times the sum of the
 * priorities). That is earliest-deadline-first with deadlines set so that
 * the rates come out proportional to the priorities; equal priorities make
 * it plain least-recently-polled. Ties keep configuration order so the
 * choice is stable. Cross-multiplied to stay in integers. */
static int more_urgent(const struct sched_device *a, size_t ia, const struct sched_device *b,
                       size_t ib, long long period, long long now)
{
    long long ha = hint_counts(a, period, now), hb = hint_counts(b, period, now);
    if ((ha != 0) != (hb != 0))
        return ha != 0;
    if (ha != hb)
        return ha < hb;
    if ((a->last_poll == 0) != (b->last_poll == 0))
        return a->last_poll == 0;
    long long pa = a->priority ? a->priority : 1, pb = b->priority ? b->priority : 1;
    long long da = (a->last_poll * pa + period) * pb; /* due_a * pa * pb */
    long long db = (b->last_poll * pb + period) * pa;
    if (da != db)
        return da < db;
    return ia < ib;
}

static bool taken(const size_t *out, size_t count, size_t i)
{
    for (size_t j = 0; j < count; j++)
        if (out[j] == i)
            return true;
    return false;
}

/* How long one round of the whole pool takes: the spacing times the sum
 * of the priorities. */
static long long round_period(const struct sched_device *devs, size_t n, long spacing)
{
    long long total = 0;
    for (size_t i = 0; i < n; i++)
        total += devs[i].priority ? devs[i].priority : 1;
    return spacing * total;
}

/* The first `want` devices in the round robin's order (more_urgent). */
static size_t plan_order(size_t *out, size_t want, const struct sched_device *devs, size_t n,
                         long spacing, long long now)
{
    if (want > n)
        want = n;
    long long period = round_period(devs, n, spacing);
    /* Selection by repeated minimum: n is a few dozen devices at most and
     * `want` at most the allowance, so this stays tiny and allocation-free. */
    size_t count = 0;
    while (count < want) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (!taken(out, count, i) &&
                (best == n || more_urgent(&devs[i], i, &devs[best], best, period, now)))
                best = i;
        out[count++] = best;
    }
    return count;
}

size_t scheduler_plan(size_t *out, size_t max_out, const struct sched_device *devs, size_t n,
                      const struct sched_budget *b, long long now)
{
    size_t want = scheduler_allowance(b, now);
    return plan_order(out, want < max_out ? want : max_out, devs, n, scheduler_spacing(b), now);
}

/* The platform documents X-RateLimit-Reset as the length of the span, not
 * the time left in it, so waiting `reset` seconds after every exhausted
 * window would leave polling blind for most of an hour in every two. When
 * the ledger alone explains the exhaustion (it holds `limit` calls), the
 * wait ends when the oldest of them leaves the window. Otherwise another
 * client shares the login ID and its calls are unknown: wait the reset,
 * but never more than one span, whatever a header says. */
long long scheduler_block_until(const struct sched_budget *b, long reset, long long now)
{
    long wait = reset > 0 && reset < b->span ? reset : b->span;
    long long until = now + wait;
    if (b->limit > 0 && b->used >= (size_t)b->limit && b->oldest > 0 && b->oldest + b->span < until)
        until = b->oldest + b->span;
    return until > now ? until : now;
}

/* One round of a pool of `n` devices at the spacing the most headroom
 * leaves: how long a device waits before it goes ahead of signals. */
static long long worst_round(const struct sched_budget *b, size_t n)
{
    struct sched_budget worst = *b;
    if (worst.headroom_max > worst.headroom)
        worst.headroom = worst.headroom_max;
    return scheduler_spacing(&worst) * (long long)(n ? n : 1);
}

long long scheduler_bound(const struct sched_budget *b, size_t n)
{
    long long round = worst_round(b, n);
    return round + round / 2 + round / (long long)(n ? n : 1);
}

/* The device not yet taken that `better` ranks first among those `want`
 * accepts; n when none. */
static size_t pick(const size_t *out, size_t count, const struct sched_device *devs, size_t n,
                   bool (*want)(const struct sched_device *, long long), long long arg,
                   bool (*better)(const struct sched_device *, const struct sched_device *))
{
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (!taken(out, count, i) && want(&devs[i], arg) &&
            (best == n || better(&devs[i], &devs[best])))
            best = i;
    return best;
}

/* Since when a device waits for the round robin: its last poll, or for
 * one never polled the time it joined the pool (0: unknown). */
static long long waiting_since(const struct sched_device *d)
{
    return d->last_poll ? d->last_poll : d->known_since;
}

static bool is_overdue(const struct sched_device *d, long long before)
{
    return waiting_since(d) != 0 && waiting_since(d) < before;
}

/* An overdue device and since when it waits, for sorting. */
struct waiting {
    long long since;
    size_t i;
};

static int by_waiting(const void *pa, const void *pb)
{
    const struct waiting *a = pa, *b = pb;
    if (a->since != b->since)
        return a->since < b->since ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Writes into `ranked` (n entries) the devices waiting since before
 * `before`, the longest waiting first (ties: the lower index); returns how
 * many. */
static size_t rank_overdue(size_t *ranked, const struct sched_device *devs, size_t n,
                           long long before)
{
    struct waiting *w = xcalloc(n ? n : 1, sizeof *w);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (is_overdue(&devs[i], before))
            w[m++] = (struct waiting){waiting_since(&devs[i]), i};
    qsort(w, m, sizeof *w, by_waiting);
    for (size_t k = 0; k < m; k++)
        ranked[k] = w[k].i;
    free(w);
    return m;
}

/* Whether the overdue device ranked `first` in `ranked` (m devices, the
 * longest waiting first; those before `first` are taken) must go now so
 * that every one left keeps its bound. The k-th left needs k + 1 calls:
 * those of the devices before it and its own. The window gives at least
 * its limit less the reserve an hour, but the first of them perhaps only
 * when its oldest call leaves it, an hour from now. So each may wait until
 * a span and k + 1 spacings (at the most headroom: fewer calls an hour
 * than the window gives) remain of its bound; once one may not, the
 * longest waiting goes. Until then signals go first, and overdue devices
 * take the round robin's turns, the longest waiting first. */
static bool bound_presses(const size_t *ranked, size_t m, size_t first,
                          const struct sched_device *devs, const struct sched_budget *b, size_t n,
                          long long now)
{
    long long bound = scheduler_bound(b, n);
    long long spacing = worst_round(b, n) / (long long)(n ? n : 1);
    for (size_t k = first; k < m; k++) {
        long long calls = (long long)(k - first + 1);
        if (waiting_since(&devs[ranked[k]]) + bound - b->span - calls * spacing <= now)
            return true;
    }
    return false;
}

static bool never_polled(const struct sched_device *d, long long unused)
{
    (void)unused;
    return d->last_poll == 0;
}

/* The device not yet taken whose hint counts (hint_counts) and came
 * first; n when none. */
static size_t first_hinted(const size_t *out, size_t count, const struct sched_device *devs,
                           size_t n, long long period, long long now)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        long long h = hint_counts(&devs[i], period, now);
        if (h && !taken(out, count, i) && (best == n || h < hint_counts(&devs[best], period, now)))
            best = i;
    }
    return best;
}

static int headroom_of(const struct sched_budget *b)
{
    return b->headroom > 0 ? b->headroom : 0;
}

static bool has_signal(const struct sched_device *d, long long unused)
{
    (void)unused;
    return d->signal;
}

static bool waiting_longer(const struct sched_device *a, const struct sched_device *b)
{
    return waiting_since(a) < waiting_since(b);
}

/* Whether a signal waits behind the others: its news is out, and the
 * device was polled before (a first poll is worth more: it teaches the
 * device's limits, and the round robin's bound does not hold a device
 * never polled). */
static bool waits(const struct sched_device *d)
{
    return d->told && d->last_poll != 0;
}

/* Where a signal stands: 0 when it points at an entry whose news is not
 * out (a sensor error, a low battery, silence, a crossing, the alarms a
 * value on its way back may have set off between two uploads: they reach
 * people only by a look), 1 for a guess (a look planned in advance: a
 * look once more finds nothing most of the time, and a guess that took
 * the window's one call left the signals behind it waiting for their
 * entries), 2 when an early warning announced its news (the alarm can
 * wait for its log entry). */
static int standing(const struct sched_device *d)
{
    if (waits(d))
        return 2;
    return d->guess ? 1 : 0;
}

static bool signalled_earlier(const struct sched_device *a, const struct sched_device *b)
{
    if (standing(a) != standing(b))
        return standing(a) < standing(b);
    return a->signal_since < b->signal_since;
}

/* The budget the round robin plans with: while no device has a signal,
 * the headroom is lent to it whole (the reserve is what an arriving signal
 * needs at once), or but one call while a device will look again (a
 * silent device's looks come every few minutes, and each needs a call
 * when it is due); a call kept free for a signal that does not come is
 * lost when its hour ends. */
static struct sched_budget lent_budget(const struct sched_budget *b,
                                       const struct sched_device *devs, size_t n)
{
    struct sched_budget lent = *b;
    int keep = 0;
    for (size_t i = 0; i < n; i++) {
        if (devs[i].signal)
            return lent;
        if (devs[i].looks_again)
            keep = 1;
    }
    if (lent.headroom > keep)
        lent.headroom = keep;
    return lent;
}

/* Why step 2 may use the reserve for one signal only: it is there for
 * `run --look`, and one urgent call an hour is all it holds. */
size_t scheduler_plan_signals(size_t *out, size_t max_out, const struct sched_device *devs,
                              size_t n, const struct sched_budget *given, long long now,
                              size_t *n_signal)
{
    struct sched_budget lent = lent_budget(given, devs, n);
    const struct sched_budget *b = &lent;
    size_t count = 0, signals = 0;
    size_t room = room_limit(b) > b->used ? room_limit(b) - b->used : 0;
    long long before = now - worst_round(given, n); /* the bound's, not lent */
    bool reserve = b->used < (size_t)b->limit;
    if (n_signal)
        *n_signal = 0;
    if (b->limit <= 0 || b->span <= 0 || now < b->blocked_until)
        return 0;
    /* Overdue devices, the longest waiting first, as far as the window has
     * room and their bound presses (bound_presses): a device is overdue
     * after one round, half a round and a spacing before its bound.
     * Several fall due together when signals held the window for long,
     * and a window that signals fill in one run frees its calls together
     * an hour later: taking one a run let the last of two dozen wait a
     * day. Taking every one as soon as it was overdue made the signals of
     * a first day at 48 devices wait half an hour behind them. The first
     * may use the reserve when the window has no other room, as one
     * signal may. */
    size_t *ranked = xcalloc(n ? n : 1, sizeof *ranked);
    size_t m = rank_overdue(ranked, devs, n, before);
    for (size_t k = 0;
         k < m && count < max_out && (count < room || (reserve && count == 0 && room == 0)) &&
         bound_presses(ranked, m, k, devs, given, n, now);
         k++)
        out[count++] = ranked[k];
    free(ranked);
    while (count < max_out) {
        size_t i = pick(out, count, devs, n, has_signal, 0, signalled_earlier);
        if (i == n)
            break;
        if (count >= room && !(reserve && count == room && !waits(&devs[i])))
            break;
        out[count++] = i;
        signals++;
    }
    if (n_signal)
        *n_signal = signals;
    /* A hinted device (an unusual reading: an excursion may be under
     * way), else a device never polled yet: its first poll teaches its
     * limits (its log usually holds old alarms). Either is worth more than
     * a round of the others; it may use the room, as long as the headroom
     * stays free for signals. One a run: a dozen new devices polled in the
     * same minute would leave the window full for the hour, and come back
     * as a burst when it frees. */
    size_t first_room = room > (size_t)headroom_of(b) ? room - (size_t)headroom_of(b) : 0;
    if (count < max_out && count < first_room) {
        size_t i =
            first_hinted(out, count, devs, n, round_period(devs, n, scheduler_spacing(b)), now);
        if (i == n)
            i = pick(out, count, devs, n, never_polled, 0, waiting_longer);
        if (i < n)
            out[count++] = i;
    }
    /* The round robin: its allowance, within the room the others left
     * (its allowance already stops short of the headroom). */
    size_t rr = room > count ? room - count : 0;
    size_t routine = (size_t)routine_limit(b);
    size_t allowance = scheduler_allowance(b, now);
    if (rr > allowance)
        rr = allowance;
    if (b->used + count + rr > routine) /* the calls planned above count too */
        rr = routine > b->used + count ? routine - b->used - count : 0;
    if (rr == 0 || count >= max_out)
        return count;
    size_t *rest = xcalloc(n ? n : 1, sizeof *rest);
    struct sched_device *left = xcalloc(n ? n : 1, sizeof *left);
    size_t n_left = 0;
    for (size_t i = 0; i < n; i++)
        if (!taken(out, count, i)) {
            rest[n_left] = i;
            left[n_left++] = devs[i];
        }
    size_t *order = xcalloc(n_left ? n_left : 1, sizeof *order);
    size_t k = plan_order(order, rr < max_out - count ? rr : max_out - count, left, n_left,
                          scheduler_spacing(b), now);
    for (size_t j = 0; j < k; j++)
        out[count++] = rest[order[j]];
    free(order);
    free(left);
    free(rest);
    return count;
}
