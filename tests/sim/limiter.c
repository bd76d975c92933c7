/* Sliding-window rate limiting for the simulator. Every accepted call's time
 * is kept (a test run makes a few hundred at most), which makes both the
 * verdict and the after-the-fact "most calls in any window" check exact. */
#include "limiter.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct limiter {
    int limit;
    long long span;
    long long *times; /* accepted calls, in the order they were accepted */
    size_t n, cap;
};

struct limiter *limiter_new(int limit, long long span)
{
    struct limiter *l = xcalloc(1, sizeof *l);
    l->limit = limit < 1 ? 1 : limit;
    l->span = span < 1 ? 1 : span;
    return l;
}

void limiter_free(struct limiter *l)
{
    if (!l)
        return;
    free(l->times);
    free(l);
}

/* Counts the calls in (now - span, now] and finds the oldest of them. */
static size_t window_count(const struct limiter *l, long long now, long long *oldest)
{
    size_t count = 0;
    for (size_t i = 0; i < l->n; i++) {
        long long t = l->times[i];
        if (t > now - l->span && t <= now) {
            if (count == 0 || t < *oldest)
                *oldest = t;
            count++;
        }
    }
    return count;
}

void limiter_take(struct limiter_verdict *out, struct limiter *l, long long now)
{
    long long oldest = now;
    size_t count = window_count(l, now, &oldest);
    memset(out, 0, sizeof *out);
    out->limit = l->limit;
    if (count >= (size_t)l->limit) {
        out->accepted = false;
        out->remaining = 0;
        out->reset = oldest + l->span - now;
        return;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->times = xreallocarray(l->times, l->cap, sizeof *l->times);
    }
    l->times[l->n++] = now;
    if (count == 0)
        oldest = now;
    out->accepted = true;
    out->remaining = l->limit - (int)count - 1;
    out->reset = oldest + l->span - now;
}

static int cmp_time(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

size_t limiter_max_in_window(const struct limiter *l)
{
    size_t best = 0;
    if (l->n == 0)
        return 0;
    long long *sorted = xreallocarray(NULL, l->n, sizeof *sorted);
    memcpy(sorted, l->times, l->n * sizeof *sorted);
    qsort(sorted, l->n, sizeof *sorted, cmp_time);
    /* Every window worth looking at ends on a call: (t_i - span, t_i]. */
    size_t first = 0;
    for (size_t i = 0; i < l->n; i++) {
        while (sorted[first] <= sorted[i] - l->span)
            first++;
        if (i - first + 1 > best)
            best = i - first + 1;
    }
    free(sorted);
    return best;
}

size_t limiter_accepted(const struct limiter *l)
{
    return l->n;
}
