/* A channel's recent trend (trend.h): one pass over the series gathers the
 * span's numbers and each bucket's sum, and the sparkline is drawn from
 * them. */
#include "trend.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* The span's seconds times TREND_WIDTH_MAX must fit an unsigned long long. */
#define SPAN_MAX (1ULL << 56)

static const char *const blocks[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
static const char empty[] = "·";

/* The block of a bucket's mean `m` in [min, max]: the band of eight it
 * falls in, max in the top one. */
static const char *block_of(double m, double min, double max)
{
    if (max <= min)
        return blocks[3];
    double level = (m - min) / (max - min) * 8;
    if (!(level >= 0)) /* NaN too, from values whose range overflows */
        return blocks[0];
    if (level >= 7)
        return blocks[7];
    return blocks[(int)level];
}

int trend_of(struct trend *out, const struct series *s, int channel_num, long long since,
             long long until, size_t width, struct err *e)
{
    if (width < 1 || width > TREND_WIDTH_MAX)
        return err_set(e, "sparkline width %zu: must be 1 to %d", width, TREND_WIDTH_MAX);
    if (since > until)
        return err_set(e, "span from %lld to %lld: starts after it ends", since, until);
    unsigned long long len = (unsigned long long)until - (unsigned long long)since + 1;
    if (len - 1 > SPAN_MAX)
        return err_set(e, "span from %lld to %lld: longer than 2^56 seconds", since, until);
    if (channel_num < 1 || channel_num > SERIES_CHANNELS_MAX ||
        series_channel_index(s, channel_num) < 0)
        return err_set(e, "channel %d: no such channel in the readings", channel_num);

    unsigned bit = 1u << (channel_num - 1);
    struct trend t = {0};
    double sum[TREND_WIDTH_MAX] = {0};
    size_t count[TREND_WIDTH_MAX] = {0};
    const struct series_point *prev = NULL;
    /* The direction's reference: the first reading of the last eighth,
     * and the reading before the last, for when that is the last itself. */
    unsigned long long eighth = (len - 1) / 8;
    bool have_ref = false;
    long long ref_at = 0;
    double ref = 0, before_last = 0;
    for (size_t i = 0; i < s->n_points; i++) {
        const struct series_point *p = &s->points[i];
        if (p->unixtime < since || p->unixtime > until)
            continue;
        if (prev && !series_follows(prev, p))
            t.gaps++;
        prev = p;
        double v = p->v[channel_num - 1];
        if (!(p->valid & bit) || !isfinite(v))
            continue;
        if (t.n == 0) {
            t.first = t.min = t.max = v;
            t.first_at = t.min_at = t.max_at = p->unixtime;
        }
        if (v < t.min) {
            t.min = v;
            t.min_at = p->unixtime;
        }
        if (v > t.max) {
            t.max = v;
            t.max_at = p->unixtime;
        }
        if (!have_ref &&
            (unsigned long long)p->unixtime - (unsigned long long)since >= len - 1 - eighth) {
            have_ref = true;
            ref = v;
            ref_at = p->unixtime;
        }
        before_last = t.n > 0 ? t.last : v;
        t.last = v;
        t.last_at = p->unixtime;
        t.n++;
        size_t b = ((unsigned long long)p->unixtime - (unsigned long long)since) * width / len;
        sum[b] += v;
        count[b]++;
    }
    if (t.n == 0)
        return err_set(e, "channel %d: no reading from %lld to %lld", channel_num, since, until);

    t.change = t.last - t.first;
    /* The last reading alone in the last eighth: compare it with the one
     * before it. */
    t.recent = t.last - (have_ref && ref_at != t.last_at ? ref : before_last);
    if ((t.recent < 0 ? -t.recent : t.recent) * 16 <= t.max - t.min)
        t.direction = "steady";
    else
        t.direction = t.recent > 0 ? "rising" : "falling";
    char *w = t.sparkline;
    for (size_t b = 0; b < width; b++) {
        const char *c = count[b] ? block_of(sum[b] / count[b], t.min, t.max) : empty;
        size_t n = strlen(c);
        memcpy(w, c, n);
        w += n;
    }
    *w = '\0';
    *out = t;
    return 0;
}
