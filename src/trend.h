/* A channel's recent trend, for the message that an alarm sends: is it a
 * blip or is it climbing? trend_of sums up the readings of one channel of
 * a series (series.h) within a span of time: how many, the first, last,
 * lowest and highest with their times, the change from first to last, a
 * direction word and a sparkline such as "▁▁▂▂▃▅▆█".
 *
 * The span [since, until] holds every second from `since` to `until`,
 * both included. A reading counts when its unixtime is in the span, its
 * channel's bit is set in `valid` and its value is finite; the others are
 * skipped as if absent.
 *
 * Sparkline: the span is split into `width` buckets of equal time: a
 * reading at t is in bucket (t - since) * width / L, in integers, L being
 * the span's until - since + 1 seconds (buckets differ by at most a
 * second when L is not a multiple of `width`).
 * Each bucket shows the mean of its readings, placed linearly between the
 * span's min and max on the eight blocks ▁▂▃▄▅▆▇█ (U+2581 to U+2588): the
 * range is cut into eight equal bands, min is ▁ and max is █. The mean
 * smooths a spike of one reading among several in its bucket; `max` still
 * names it. When every reading has the same value (min == max), each
 * bucket with readings is ▄. A bucket without a reading is · (U+00B7,
 * middle dot): visible where a space would be trimmed or collapsed by
 * Slack's and Teams's rendering, and unlike any block, so a gap does not
 * read as a level.
 *
 * Direction: where the channel is going now, which is what a person
 * paged at night asks. It compares the last reading with the first one of
 * the span's last eighth (45 minutes of 6 hours), or with the reading
 * before the last when that eighth holds no other: "steady" when that
 * recent change is at most a sixteenth of the span's range (half a
 * sparkline band), else "rising" or "falling" by its sign. So a spike that
 * is on its way back reads "falling", a climb that stopped an hour ago
 * "steady", and a steady climb over the whole span "rising" (its last
 * eighth climbs an eighth of the range), whatever the first reading was.
 * The threshold is
 * relative, so it holds for any unit; a caller that wants an absolute one
 * has `recent` and `change`. */
#ifndef WSRELAY_TREND_H
#define WSRELAY_TREND_H

#include "series.h"
#include "util/err.h"

#include <stddef.h>

#define TREND_WIDTH_DEFAULT 24
#define TREND_WIDTH_MAX 120

struct trend {
    size_t n; /* readings in the span */
    /* Places in the span where readings are missing: two points of the
     * span, next to each other in the series, whose data-ids do not follow
     * (series_follows), whatever their channels hold. */
    size_t gaps;
    double first, last, min, max;
    double change; /* last - first */
    double recent; /* last - the reading the direction compares it with */
    /* Unix times; min_at and max_at are those of the first reading with
     * that value. */
    long long first_at, last_at, min_at, max_at;
    const char *direction; /* "rising", "falling" or "steady"; static */
    /* `width` characters, UTF-8 (3 bytes a block, 2 for ·), NUL-terminated. */
    char sparkline[TREND_WIDTH_MAX * 3 + 1];
};

/* Fills *out with the trend of the channel numbered `channel_num` (1 to 4,
 * as series_channel_index takes it) of `s` in the span [since, until],
 * with a sparkline of `width` characters (1 to TREND_WIDTH_MAX). Nothing
 * is allocated; `s` is only read.
 *
 * Returns -1 with a message in `e` (which may be NULL) and *out untouched
 * when `width` is out of bounds, `since` is after `until`, the span is
 * longer than 2^56 seconds, the series has no such channel, or the channel
 * has no reading in the span ("channel 2: no reading from 1767225600 to
 * 1767229200"). */
int trend_of(struct trend *out, const struct series *s, int channel_num, long long since,
             long long until, size_t width, struct err *e);

#endif
