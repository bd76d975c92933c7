/* Choosing which devices to poll now, within a login ID's budget.
 *
 * Why spread the calls: the alert operation allows 12 calls per hour per
 * login ID and each device keeps only its 20 newest entries. Twelve calls in
 * the first minute would leave the next 59 minutes blind; one call every
 * five minutes bounds how late any alert is seen. A run that comes late
 * (cron skipped a minute, the machine slept) gets credit for the slots it
 * missed, but never more than the sliding window still allows, so the
 * platform's limit is never passed however runs are timed. */
#include "scheduler.h"

size_t scheduler_allowance(const struct sched_budget *b, long long now)
{
    if (b->limit <= 0 || b->span <= 0 || now < b->blocked_until)
        return 0;
    if (b->used >= (size_t)b->limit)
        return 0;
    size_t left = (size_t)b->limit - b->used;
    long spacing = b->span / b->limit;
    if (spacing < 1)
        spacing = 1;
    /* A first call earns one slot; a last call stamped in the future (the
     * clock went back) counts as made now. The slack forgives a call
     * stamped a few seconds into its run: without it, every such call
     * would cost the next run's slot, a minute at a time. The window's
     * count above is what keeps the platform's limit, and it has none. */
    long slack = spacing / 10;
    long long since = b->last_call ? now - b->last_call + slack : spacing;
    if (since < slack)
        since = slack;
    long long slots = since / spacing;
    if (b->last_call == 0 && slots > 1)
        slots = 1;
    return slots < (long long)left ? (size_t)slots : left;
}

/* Mirrors scheduler_allowance condition by condition, so that the time it
 * returns is the first at which the allowance becomes positive. */
long long scheduler_next_call(const struct sched_budget *b, long long oldest, long long now)
{
    long long at = now;
    if (b->limit <= 0 || b->span <= 0)
        return at;
    long spacing = b->span / b->limit;
    if (spacing < 1)
        spacing = 1;
    if (b->blocked_until > at)
        at = b->blocked_until;
    /* A last call in the future counts as made now: allowed a spacing
     * after it, like any other. */
    long slack = spacing / 10; /* as in scheduler_allowance */
    if (b->last_call && b->last_call + spacing - slack > at)
        at = b->last_call + spacing - slack;
    if (b->used >= (size_t)b->limit) {
        /* A call counts while it is at most a span old. */
        long long freed = oldest > 0 ? oldest + b->span + 1 : now + b->span;
        if (freed > at)
            at = freed;
    }
    return at;
}

/* Never-polled devices first; then the earliest "due" time, a device's
 * last poll plus `period` / its priority, where `period` is how long one
 * round of the whole pool takes (the spacing times the sum of the
 * priorities). That is earliest-deadline-first with deadlines set so that
 * the rates come out proportional to the priorities; equal priorities make
 * it plain least-recently-polled. Ties keep configuration order so the
 * choice is stable. Cross-multiplied to stay in integers. */
static int more_urgent(const struct sched_device *a, size_t ia, const struct sched_device *b,
                       size_t ib, long long period)
{
    if ((a->last_poll == 0) != (b->last_poll == 0))
        return a->last_poll == 0;
    long long pa = a->priority ? a->priority : 1, pb = b->priority ? b->priority : 1;
    long long da = (a->last_poll * pa + period) * pb; /* due_a * pa * pb */
    long long db = (b->last_poll * pb + period) * pa;
    if (da != db)
        return da < db;
    return ia < ib;
}

size_t scheduler_plan(size_t *out, size_t max_out, const struct sched_device *devs, size_t n,
                      const struct sched_budget *b, long long now)
{
    size_t want = scheduler_allowance(b, now);
    if (want > max_out)
        want = max_out;
    if (want > n)
        want = n;
    long long spacing = b->limit > 0 && b->span / b->limit > 0 ? b->span / b->limit : 1;
    long long total = 0;
    for (size_t i = 0; i < n; i++)
        total += devs[i].priority ? devs[i].priority : 1;
    long long period = spacing * total;
    /* Selection by repeated minimum: n is a few dozen devices at most and
     * `want` at most the allowance, so this stays tiny and allocation-free. */
    size_t count = 0;
    while (count < want) {
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            int taken = 0;
            for (size_t j = 0; j < count; j++)
                if (out[j] == i)
                    taken = 1;
            if (!taken && (best == n || more_urgent(&devs[i], i, &devs[best], best, period)))
                best = i;
        }
        out[count++] = best;
    }
    return count;
}

/* The platform documents X-RateLimit-Reset as the length of the span, not
 * the time left in it, so waiting `reset` seconds after every exhausted
 * window would leave polling blind for most of an hour in every two. When
 * the ledger alone explains the exhaustion (it holds `limit` calls), the
 * wait ends when the oldest of them leaves the window. Otherwise another
 * client shares the login ID and its calls are unknown: wait the reset,
 * but never more than one span, whatever a header says. */
long long scheduler_block_until(const struct sched_budget *b, long long oldest, long reset,
                                long long now)
{
    long wait = reset > 0 && reset < b->span ? reset : b->span;
    long long until = now + wait;
    if (b->limit > 0 && b->used >= (size_t)b->limit && oldest > 0 && oldest + b->span < until)
        until = oldest + b->span;
    return until > now ? until : now;
}
