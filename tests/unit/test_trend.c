/* trend: golden sparklines (ramps up and down, flat, empty buckets, one
 * reading, spikes alone and among others, buckets of unequal length), the
 * span's numbers with their times, the direction's threshold on both
 * sides, readings without a value and outside the span skipped, gaps in
 * the data-ids, and every refusal with its message. */
#include "trend.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define T0 1767225600LL /* 2026-01-01 00:00 UTC */

/* The series under test: channels 1 and 2, readings added by the tests. */
static struct series_point points[64];
static struct series s;

static void setup(void)
{
    memset(&s, 0, sizeof s);
    s.channels[0].num = 1;
    s.channels[1].num = 2;
    s.n_channels = 2;
    s.points = points;
}

TestSuite(trend, .init = setup);

/* Adds a reading: bit 0 of `valid` for v1 (channel 1), bit 1 for v2. */
static void pt(long long t, long data_id, unsigned valid, double v1, double v2)
{
    cr_assert_lt(s.n_points, sizeof points / sizeof points[0]);
    points[s.n_points++] = (struct series_point){t, data_id, valid, {v1, v2, 0, 0}};
}

/* Adds a reading of channel 1 alone, without a data-id (as csv gives). */
static void at(long long t, double v)
{
    pt(t, -1, 1, v, 0);
}

/* Adds n readings of channel 1, `step` seconds apart from t0. */
static void every(long long t0, long long step, size_t n, const double *v)
{
    for (size_t i = 0; i < n; i++)
        at(t0 + (long long)i * step, v[i]);
}

static struct trend trend_ch(int channel, long long since, long long until, size_t width)
{
    struct trend t;
    struct err e = {{0}};
    cr_assert_eq(trend_of(&t, &s, channel, since, until, width, &e), 0, "%s", e.msg);
    size_t chars = 0; /* bytes that start a UTF-8 character */
    for (const char *c = t.sparkline; *c; c++)
        chars += ((unsigned char)*c & 0xc0) != 0x80;
    cr_assert_eq(chars, width, "'%s' is not %zu characters", t.sparkline, width);
    return t;
}

static struct trend trend(long long since, long long until, size_t width)
{
    return trend_ch(1, since, until, width);
}

static void spark(long long since, long long until, size_t width, const char *expected)
{
    struct trend t = trend(since, until, width);
    cr_assert_str_eq(t.sparkline, expected);
}

/* The numbers of a trend, compared exactly (the values are binary-exact). */
static void numbers(const struct trend *t, size_t n, double first, long long first_at, double last,
                    long long last_at, double min, long long min_at, double max, long long max_at)
{
    cr_assert_eq(t->n, n);
    cr_assert(t->first == first && t->first_at == first_at, "first %g at %lld", t->first,
              t->first_at);
    cr_assert(t->last == last && t->last_at == last_at, "last %g at %lld", t->last, t->last_at);
    cr_assert(t->min == min && t->min_at == min_at, "min %g at %lld", t->min, t->min_at);
    cr_assert(t->max == max && t->max_at == max_at, "max %g at %lld", t->max, t->max_at);
    cr_assert(t->change == last - first, "change %g", t->change);
}

/* trend_of refuses with exactly `msg`, and leaves *out as it was. */
static void refused(int channel, long long since, long long until, size_t width, const char *msg)
{
    struct trend t, before;
    struct err e = {{0}};
    memset(&t, 0xa5, sizeof t);
    before = t;
    cr_assert_eq(trend_of(&t, &s, channel, since, until, width, &e), -1);
    cr_assert_str_eq(e.msg, msg);
    cr_assert_eq(memcmp(&t, &before, sizeof t), 0, "*out was written");
    cr_assert_eq(trend_of(&t, &s, channel, since, until, width, NULL), -1);
}

/* ---- sparklines ---- */

Test(trend, rising_ramp_climbs_one_band_a_bucket)
{
    every(T0, 10, 8, (double[]){4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5});
    struct trend t = trend(T0, T0 + 79, 8);
    cr_assert_str_eq(t.sparkline, "▁▂▃▄▅▆▇█");
    cr_assert_eq(strlen(t.sparkline), 8 * 3);
    numbers(&t, 8, 4.0, T0, 7.5, T0 + 70, 4.0, T0, 7.5, T0 + 70);
    cr_assert_str_eq(t.direction, "rising");
    cr_assert_eq(t.gaps, 0);
}

Test(trend, falling_ramp_descends_one_band_a_bucket)
{
    every(T0, 10, 8, (double[]){7.5, 7.0, 6.5, 6.0, 5.5, 5.0, 4.5, 4.0});
    struct trend t = trend(T0, T0 + 79, 8);
    cr_assert_str_eq(t.sparkline, "█▇▆▅▄▃▂▁");
    numbers(&t, 8, 7.5, T0, 4.0, T0 + 70, 4.0, T0 + 70, 7.5, T0);
    cr_assert_str_eq(t.direction, "falling");
}

Test(trend, default_width_ramp_of_24_readings)
{
    double v[24];
    for (int i = 0; i < 24; i++)
        v[i] = i;
    every(0, 10, 24, v);
    spark(0, 239, TREND_WIDTH_DEFAULT, "▁▁▁▂▂▂▃▃▃▄▄▄▅▅▅▆▆▆▇▇▇███");
}

Test(trend, flat_series_is_all_middle_blocks_and_steady)
{
    every(T0, 60, 8, (double[]){5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0});
    struct trend t = trend(T0, T0 + 479, 8);
    cr_assert_str_eq(t.sparkline, "▄▄▄▄▄▄▄▄");
    numbers(&t, 8, 5.0, T0, 5.0, T0 + 420, 5.0, T0, 5.0, T0);
    cr_assert_str_eq(t.direction, "steady");
}

Test(trend, bucket_without_reading_is_a_middle_dot)
{
    /* No reading at 30 (bucket 3), none after 70 (buckets 8 to 11). */
    every(0, 10, 3, (double[]){4.0, 4.5, 5.0});
    every(40, 10, 4, (double[]){6.0, 6.5, 7.0, 7.5});
    struct trend t = trend(0, 119, 12);
    cr_assert_str_eq(t.sparkline, "▁▂▃·▅▆▇█····");
    cr_assert_eq(strlen(t.sparkline), 7 * 3 + 5 * 2);
    cr_assert_eq(t.n, 7);
}

Test(trend, single_reading_is_one_middle_block)
{
    at(25, 3.0);
    struct trend t = trend(0, 39, 4);
    cr_assert_str_eq(t.sparkline, "··▄·");
    numbers(&t, 1, 3.0, 25, 3.0, 25, 3.0, 25, 3.0, 25);
    cr_assert_str_eq(t.direction, "steady");
}

Test(trend, spike_alone_in_its_bucket_reaches_the_top)
{
    every(T0, 10, 8, (double[]){5.0, 5.0, 5.0, 5.0, 9.0, 5.0, 5.0, 5.0});
    struct trend t = trend(T0, T0 + 79, 8);
    cr_assert_str_eq(t.sparkline, "▁▁▁▁█▁▁▁");
    numbers(&t, 8, 5.0, T0, 5.0, T0 + 70, 5.0, T0, 9.0, T0 + 40);
    cr_assert_str_eq(t.direction, "steady");
}

Test(trend, spike_among_others_shows_its_bucket_mean)
{
    /* Two readings a bucket: 9 and 5 in bucket 4, a mean of 7, halfway up. */
    double v[16];
    for (int i = 0; i < 16; i++)
        v[i] = i == 8 ? 9.0 : 5.0;
    every(0, 5, 16, v);
    struct trend t = trend(0, 79, 8);
    cr_assert_str_eq(t.sparkline, "▁▁▁▁▅▁▁▁");
    cr_assert(t.max == 9.0 && t.max_at == 40);
}

Test(trend, span_not_a_multiple_of_the_width_makes_unequal_buckets)
{
    /* 10 seconds in 4 buckets: 0-2, 3-4, 5-7, 8-9, whose means are 1, 3.5,
     * 6 and 8.5 on a range of 0 to 9. */
    every(0, 1, 10, (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    spark(0, 9, 4, "▁▄▆█");
}

Test(trend, span_of_one_second)
{
    at(100, 2.0);
    spark(100, 100, 3, "▄··");
}

Test(trend, negative_times)
{
    at(-40, 0.0);
    at(-1, 1.0);
    spark(-40, -1, 4, "▁··█");
}

Test(trend, longest_span_and_widest_sparkline)
{
    long long end = 1LL << 56;
    at(0, 0.0);
    at(end, 1.0);
    spark(0, end, 2, "▁█");

    char expected[TREND_WIDTH_MAX * 3 + 1] = "▁";
    for (int i = 1; i < TREND_WIDTH_MAX - 1; i++)
        strcat(expected, "·");
    strcat(expected, "█");
    spark(0, end, TREND_WIDTH_MAX, expected);
}

/* ---- which readings count ---- */

Test(trend, readings_outside_the_span_are_ignored_and_its_ends_count)
{
    at(19, 100.0);
    every(20, 10, 4, (double[]){1.0, 2.0, 3.0, 4.0});
    at(51, -100.0);
    struct trend t = trend(20, 50, 4);
    cr_assert_str_eq(t.sparkline, "▁▃▆█");
    numbers(&t, 4, 1.0, 20, 4.0, 50, 1.0, 20, 4.0, 50);
}

Test(trend, readings_without_a_value_are_skipped)
{
    pt(0, -1, 1, 10.0, 0);      /* channel 1 */
    pt(10, -1, 2, 0, 50.0);     /* channel 2 only: its v[0] of 0 is no reading */
    pt(20, -1, 3, NAN, 51.0);   /* channel 1 not a number */
    pt(30, -1, 1, INFINITY, 0); /* nor infinite */
    pt(40, -1, 1, 12.0, 0);     /* channel 1 */
    struct trend t = trend(0, 49, 5);
    cr_assert_str_eq(t.sparkline, "▁···█");
    numbers(&t, 2, 10.0, 0, 12.0, 40, 10.0, 0, 12.0, 40);

    t = trend_ch(2, 0, 49, 5);
    cr_assert_str_eq(t.sparkline, "·▁█··");
    numbers(&t, 2, 50.0, 10, 51.0, 20, 50.0, 10, 51.0, 20);
}

Test(trend, min_and_max_are_their_first_readings)
{
    every(0, 1, 5, (double[]){3.0, 1.0, 5.0, 1.0, 5.0});
    struct trend t = trend(0, 4, 5);
    cr_assert_str_eq(t.sparkline, "▅▁█▁█");
    numbers(&t, 5, 3.0, 0, 5.0, 4, 1.0, 1, 5.0, 2);
}

Test(trend, gaps_count_missing_data_ids_within_the_span)
{
    pt(0, 5, 1, 1.0, 0); /* outside: its gap to 7 does not count */
    pt(10, 7, 1, 1.0, 0);
    pt(20, 8, 1, 1.0, 0);
    pt(30, 9, 2, 0, 1.0);     /* no value on channel 1, still a reading */
    pt(40, 11, 1, 1.0, 0);    /* 10 missing */
    pt(50, 65535, 1, 1.0, 0); /* 12 to 65534 missing */
    pt(60, 0, 1, 1.0, 0);     /* follows 65535 */
    pt(70, 1, 1, 1.0, 0);
    pt(200, 9, 1, 1.0, 0); /* outside */
    cr_assert_eq(trend(10, 100, 9).gaps, 2);
    cr_assert_eq(trend(0, 200, 9).gaps, 4);
    cr_assert_eq(trend(20, 30, 9).gaps, 0);
}

Test(trend, readings_without_data_ids_have_no_gaps)
{
    every(0, 10, 4, (double[]){1.0, 2.0, 3.0, 4.0});
    cr_assert_eq(trend(0, 39, 4).gaps, 0);
}

/* ---- direction ---- */

static const char *direction(size_t n, const double *v)
{
    s.n_points = 0;
    every(0, 10, n, v);
    return trend(0, 10 * (long long)n - 1, 8).direction;
}

Test(trend, direction_is_the_last_readings_way)
{
    /* Three readings 10 s apart: the last eighth holds only the last, so
     * it is compared with the one before it. */
    cr_assert_str_eq(direction(3, (double[]){0.0, 1.0, 8.0}), "rising");
    cr_assert_str_eq(direction(3, (double[]){8.0, 7.0, 0.0}), "falling");
    /* A spike on its way back falls, whatever the first reading was. */
    cr_assert_str_eq(direction(3, (double[]){0.0, 8.0, 1.5}), "falling");
    cr_assert_str_eq(direction(3, (double[]){8.0, 0.0, 6.5}), "rising");
    /* Up to a sixteenth of the range is steady. */
    cr_assert_str_eq(direction(3, (double[]){0.0, 8.0, 7.5}), "steady");
    cr_assert_str_eq(direction(3, (double[]){8.0, 0.0, 0.5}), "steady");
    cr_assert_str_eq(direction(3, (double[]){0.0, 8.0, 7.4}), "falling");
}

Test(trend, direction_compares_with_the_start_of_the_last_eighth)
{
    /* 17 readings over 160 s; the last eighth starts at 140 s. A climb
     * that stopped at 120 s is steady, though the first reading was far
     * below; a climb all the way is rising. */
    double v[17];
    for (int i = 0; i < 17; i++)
        v[i] = i < 12 ? i : 12.0;
    every(0, 10, 17, v);
    struct trend t = trend(0, 160, 8);
    cr_assert_str_eq(t.direction, "steady");
    cr_assert_float_eq(t.change, 12.0, 1e-9);
    cr_assert_float_eq(t.recent, 0.0, 1e-9);
    for (int i = 0; i < 17; i++)
        v[i] = i;
    s.n_points = 0;
    every(0, 10, 17, v);
    t = trend(0, 160, 8);
    cr_assert_str_eq(t.direction, "rising");
    cr_assert_float_eq(t.recent, 2.0, 1e-9, "recent %g", t.recent);
}

Test(trend, threshold_is_relative_so_a_small_change_alone_is_a_direction)
{
    cr_assert_str_eq(direction(2, (double[]){20.0, 20.125}), "rising");
    cr_assert_str_eq(direction(2, (double[]){-20.0, -20.125}), "falling");
    cr_assert_str_eq(direction(1, (double[]){-20.0}), "steady");
}

/* ---- refusals ---- */

Test(trend, refuses_a_channel_the_series_has_not)
{
    at(0, 1.0);
    refused(3, 0, 10, 8, "channel 3: no such channel in the readings");
    refused(0, 0, 10, 8, "channel 0: no such channel in the readings");
    refused(5, 0, 10, 8, "channel 5: no such channel in the readings");
    refused(-1, 0, 10, 8, "channel -1: no such channel in the readings");
    s.n_channels = 0;
    refused(1, 0, 10, 8, "channel 1: no such channel in the readings");
}

Test(trend, refuses_a_span_without_a_reading)
{
    refused(1, 0, 10, 8, "channel 1: no reading from 0 to 10");
    at(100, 1.0);
    pt(150, -1, 2, 0, 1.0);
    refused(1, T0, T0 + 3600, 8, "channel 1: no reading from 1767225600 to 1767229200");
    refused(1, 101, 200, 8, "channel 1: no reading from 101 to 200");
    refused(2, 0, 149, 8, "channel 2: no reading from 0 to 149");
}

Test(trend, refuses_bad_widths_and_spans)
{
    at(0, 1.0);
    refused(1, 0, 10, 0, "sparkline width 0: must be 1 to 120");
    refused(1, 0, 10, TREND_WIDTH_MAX + 1, "sparkline width 121: must be 1 to 120");
    refused(1, 10, 9, 8, "span from 10 to 9: starts after it ends");
    refused(1, 0, (1LL << 56) + 1, 8, "span from 0 to 72057594037927937: longer than 2^56 seconds");
    refused(1, -9223372036854775807LL - 1, 9223372036854775807LL, 8,
            "span from -9223372036854775808 to 9223372036854775807: longer than 2^56 seconds");
}
