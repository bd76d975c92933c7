/* The readings memory: each signal, the limits' hysteresis, and noise that
 * never makes a signal. */
#include "readings_memory.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define T0 1795000000LL

/* A reading of channel 1 only. */
static unsigned take1(struct watch *w, long long t, const char *text,
                      const struct watch_limit *limit, struct watch_crossing *out, size_t *n_out)
{
    struct watch_value v = {1, text};
    struct watch_reading r = {.unixtime = t, .model = "TR-72A2", .values = &v, .n_values = 1};
    return watch_take(w, &r, limit, limit ? 1 : 0, t + 20, out, out ? 4 : 0, n_out);
}

static unsigned take_battery(struct watch *w, long long t, const char *model, int battery)
{
    struct watch_value v = {1, "5.0"};
    struct watch_reading r = {
        .unixtime = t, .model = model, .battery = battery, .values = &v, .n_values = 1};
    return watch_take(w, &r, NULL, 0, t, NULL, 0, NULL);
}

/* ---- parsing and texts ---- */

Test(watch, parse_table)
{
    static const struct {
        const char *text;
        bool ok;
        double value, step;
    } rows[] = {
        {"-79.8", true, -79.8, 0.1},
        {"12", true, 12, 1},
        {"+3.5", true, 3.5, 0.1},
        {"0.05", true, 0.05, 0.01},
        {"-0.125", true, -0.125, 0.001},
        {" 21.4 ", true, 21.4, 0.1},
        {"99999999999999999999", true, 99999999999999999999.0, 1},
        {"", false, 0, 0},
        {" ", false, 0, 0},
        {"E01", false, 0, 0},
        {"Sensor Error", false, 0, 0},
        {"----", false, 0, 0},
        {"nan", false, 0, 0},
        {"inf", false, 0, 0},
        {"1e5", false, 0, 0},
        {"12.3.4", false, 0, 0},
        {"12.", false, 0, 0},
        {".5", false, 0, 0},
        {"-", false, 0, 0},
        {"+-3", false, 0, 0},
        {"3 4", false, 0, 0},
        {"0x10", false, 0, 0},
        {"12,5", false, 0, 0},
        {"123456789012345678901234567890123", false, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double value = -1, step = -1;
        bool ok = watch_parse_value(rows[i].text, &value, &step);
        cr_assert_eq(ok, rows[i].ok, "'%s'", rows[i].text);
        if (!ok)
            continue;
        /* Exact up to 15 significant digits; beyond, within a few ulps. */
        cr_assert_float_eq(value, rows[i].value,
                           1e-15 * (rows[i].value < 0 ? -1 : 1) * rows[i].value, "'%s' gave %.17g",
                           rows[i].text, value);
        if (strlen(rows[i].text) < 16)
            cr_assert_eq(value, rows[i].value, "'%s' gave %.17g", rows[i].text, value);
        cr_assert_float_eq(step, rows[i].step, 1e-12, "'%s' step %g", rows[i].text, step);
    }
    cr_assert(watch_parse_value("7", NULL, NULL));
    cr_assert_not(watch_parse_value(NULL, NULL, NULL));
}

Test(watch, reason_text)
{
    char out[48];
    cr_assert_str_eq(watch_reason_text(out, sizeof out, 0), "");
    cr_assert_str_eq(watch_reason_text(out, sizeof out, WATCH_SILENT | WATCH_LIMIT),
                     "limit, silent");
    cr_assert_str_eq(
        watch_reason_text(out, sizeof out,
                          WATCH_LIMIT | WATCH_BAND | WATCH_ERROR | WATCH_BATTERY | WATCH_SILENT),
        "limit, band, error, battery, silent");
    cr_assert_str_eq(watch_reason_text(out, sizeof out, WATCH_BATTERY), "battery");
    char small[9];
    cr_assert_str_eq(watch_reason_text(small, sizeof small, WATCH_LIMIT | WATCH_BAND), "limit");
}

Test(watch, battery_families)
{
    cr_assert_eq(watch_battery_low("TR-72A2"), 2);
    cr_assert_eq(watch_battery_low("TR-71nw"), 2);
    cr_assert_eq(watch_battery_low("RTR501B"), 4);
    cr_assert_eq(watch_battery_low("RTR-574"), 4);
    cr_assert_eq(watch_battery_low("TR-41"), 4);
    cr_assert_eq(watch_battery_low("tr-42a"), 4);
    cr_assert_eq(watch_battery_low("XY-9"), 2);
    cr_assert_eq(watch_battery_low(""), 2);
    cr_assert_eq(watch_battery_low(NULL), 2);
}

/* ---- the first reading and readings that are not new ---- */

Test(watch, first_reading_sets_memory_without_signal)
{
    struct watch w = {0};
    struct watch_limit limits[2] = {{.has_upper = true, .upper = -75.0},
                                    {.has_lower = true, .lower = 10}};
    struct watch_value v[] = {{2, "5"}, {1, "-70.0"}, {3, "E01"}};
    struct watch_reading r = {
        .unixtime = T0, .model = "TR-72A2", .battery = 5, .values = v, .n_values = 3};
    struct watch_crossing out[4];
    size_t n = 99;

    cr_assert_eq(watch_take(&w, &r, limits, 2, T0 + 30, out, 4, &n), 0u);
    cr_assert_eq(n, 0);
    cr_assert_eq(w.unixtime, T0);
    cr_assert_eq(w.seen_at, T0 + 30);
    cr_assert_eq(w.battery, 5);
    cr_assert_eq(w.n_gaps, 0);
    cr_assert_eq(w.n_ch, 3);
    cr_assert_eq(w.ch[0].num, 1, "channels are kept sorted by num");
    cr_assert_eq(w.ch[1].num, 2);
    cr_assert_eq(w.ch[2].num, 3);
    cr_assert_eq(w.ch[0].value, -70.0);
    cr_assert_float_eq(w.ch[0].step, 0.1, 1e-12);
    cr_assert_eq(w.ch[0].n_history, 1);
    cr_assert_eq(w.ch[0].zone, 1, "an excursion under way: zone where the value is");
    cr_assert_eq(w.ch[0].warned, 1, "and taken as announced");
    cr_assert_eq(w.ch[0].warned_at, 0);
    cr_assert_eq(w.ch[1].zone, -1);
    cr_assert_eq(w.ch[1].warned, -1);
    cr_assert(w.ch[2].error);
    cr_assert_eq(w.ch[2].n_history, 0);
    cr_assert_eq(w.ch[2].zone, 0);

    /* The next reading, still out: no crossing. */
    v[0].text = "4";
    v[1].text = "-69.8";
    v[2].text = "E01";
    r.unixtime = T0 + 60;
    cr_assert_eq(watch_take(&w, &r, limits, 2, T0 + 90, out, 4, &n), 0u);
    cr_assert_eq(n, 0);
}

Test(watch, reading_not_newer_changes_nothing)
{
    struct watch w = {0}, before;
    take1(&w, T0, "5.0", NULL, NULL, NULL);
    take1(&w, T0 + 60, "5.1", NULL, NULL, NULL);
    before = w;
    size_t n = 99;
    cr_assert_eq(take1(&w, T0 + 60, "E01", NULL, NULL, &n), 0u);
    cr_assert_eq(n, 0);
    cr_assert_eq(take1(&w, T0 + 30, "E01", NULL, NULL, NULL), 0u);
    cr_assert_eq(memcmp(&w, &before, sizeof w), 0);

    struct watch z = {0}, zero = {0};
    cr_assert_eq(take1(&z, 0, "5.0", NULL, NULL, NULL), 0u);
    cr_assert_eq(memcmp(&z, &zero, sizeof z), 0, "unixtime 0 is no reading");
}

/* ---- channels ---- */

Test(watch, channels_matched_by_num_and_kept_when_missing)
{
    struct watch w = {0};
    struct watch_value v[WATCH_CHANNELS + 2];
    char texts[WATCH_CHANNELS + 2][8];
    for (int i = 0; i < WATCH_CHANNELS + 2; i++) {
        v[i].num = WATCH_CHANNELS + 2 - i; /* in reverse order */
        snprintf(texts[i], sizeof texts[i], "%d.0", i);
        v[i].text = texts[i];
    }
    struct watch_reading r = {.unixtime = T0, .values = v, .n_values = 2};
    watch_take(&w, &r, NULL, 0, T0, NULL, 0, NULL);
    cr_assert_eq(w.n_ch, 2);
    cr_assert_eq(w.ch[0].num, WATCH_CHANNELS + 1);
    cr_assert_eq(w.ch[1].num, WATCH_CHANNELS + 2);

    /* A later reading with only the first of them, then all of them. */
    r.unixtime = T0 + 60;
    r.n_values = 1;
    v[0].text = "7.0";
    cr_assert_eq(watch_take(&w, &r, NULL, 0, T0 + 60, NULL, 0, NULL), 0u);
    cr_assert_eq(watch_channel(&w, WATCH_CHANNELS + 1)->value, 1.0, "missing: memory kept");
    cr_assert_eq(watch_channel(&w, WATCH_CHANNELS + 2)->value, 7.0);

    r.unixtime = T0 + 120;
    r.n_values = WATCH_CHANNELS + 2;
    cr_assert_eq(watch_take(&w, &r, NULL, 0, T0 + 120, NULL, 0, NULL), 0u);
    cr_assert_eq(w.n_ch, WATCH_CHANNELS, "channels beyond WATCH_CHANNELS are ignored");
    for (int i = 1; i < w.n_ch; i++)
        cr_assert_lt(w.ch[i - 1].num, w.ch[i].num);
    cr_assert_eq(watch_channel(&w, 1), NULL, "the 9th and 10th channel met were dropped");
    cr_assert_neq(watch_channel(&w, 3), NULL);
    cr_assert_eq(watch_channel(&w, 3)->value, 7.0);
    cr_assert_eq(watch_channel(&w, 99), NULL);

    /* A duplicate num in one reading counts once; num 0 is no channel. */
    struct watch_value dup[] = {{3, "E01"}, {3, "8.0"}, {0, "1.0"}};
    struct watch_reading rd = {.unixtime = T0 + 180, .values = dup, .n_values = 3};
    cr_assert_eq(watch_take(&w, &rd, NULL, 0, T0 + 180, NULL, 0, NULL), (unsigned)WATCH_ERROR);
    cr_assert(watch_channel(&w, 3)->error);
    cr_assert_eq(watch_channel(&w, 0), NULL);
}

/* ---- error values ---- */

Test(watch, error_value_both_ways)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    struct watch_crossing out[4];
    size_t n;
    take1(&w, T0, "5.0", &limit, out, &n);
    cr_assert_eq(take1(&w, T0 + 60, "9.0", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(take1(&w, T0 + 120, "E01", &limit, out, &n), (unsigned)WATCH_ERROR);
    cr_assert_eq(n, 0);
    struct watch_channel *c = watch_channel(&w, 1);
    cr_assert(c->error);
    cr_assert_eq(c->value, 9.0, "the last number is kept");
    cr_assert_eq(c->zone, 1, "an error value does not change the zone");
    cr_assert_eq(c->n_history, 2);
    cr_assert_eq(take1(&w, T0 + 180, "Sensor Error", &limit, out, &n), 0u);
    cr_assert_eq(take1(&w, T0 + 240, "9.1", &limit, out, &n), (unsigned)WATCH_ERROR);
    cr_assert_eq(n, 0, "still above: no crossing");
    cr_assert_not(c->error);
    cr_assert_eq(c->value, 9.1);
}

Test(watch, channel_that_began_as_error_starts_at_its_first_number)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    struct watch_crossing out[4];
    size_t n;
    take1(&w, T0, "E02", &limit, out, &n);
    cr_assert_eq(take1(&w, T0 + 60, "9.0", &limit, out, &n), (unsigned)WATCH_ERROR);
    cr_assert_eq(n, 0);
    cr_assert_eq(watch_channel(&w, 1)->zone, 1);
    cr_assert_eq(watch_channel(&w, 1)->warned, 1);
    cr_assert_eq(take1(&w, T0 + 120, "5.0", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(n, 1);
}

/* ---- battery ---- */

Test(watch, battery_falls_to_the_low_level_of_its_family)
{
    static const struct {
        const char *model;
        int from, to;
        bool signal;
    } rows[] = {
        {"TR-72A2", 5, 3, false}, {"TR-72A2", 3, 2, true},  {"TR-72A2", 2, 1, true},
        {"TR-72A2", 5, 1, true},  {"TR-72A2", 1, 5, false}, {"TR-72A2", 2, 2, false},
        {"RTR501B", 5, 4, true},  {"RTR501B", 4, 3, true},  {"RTR501B", 3, 5, false},
        {"TR-41", 5, 4, true},    {"TR-41", 4, 1, true},    {"XY-9", 5, 4, false},
        {"XY-9", 3, 2, true},     {NULL, 5, 2, true},       {"TR-72A2", 0, 1, false},
        {"TR-72A2", 3, 0, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct watch w = {0};
        take_battery(&w, T0, rows[i].model, rows[i].from);
        unsigned got = take_battery(&w, T0 + 60, rows[i].model, rows[i].to);
        cr_assert_eq(got, rows[i].signal ? (unsigned)WATCH_BATTERY : 0u, "%s %d -> %d",
                     rows[i].model ? rows[i].model : "(null)", rows[i].from, rows[i].to);
        cr_assert_eq(w.battery, rows[i].to ? rows[i].to : rows[i].from);
    }
}

/* ---- silence ---- */

Test(watch, silence_and_resume)
{
    struct watch w = {0};
    take1(&w, T0, "5.0", NULL, NULL, NULL);
    cr_assert_eq(watch_idle(&w, T0 + 20 + 100000, 0), 0u, "no interval known yet");
    take1(&w, T0 + 60, "5.0", NULL, NULL, NULL);
    cr_assert_eq(watch_idle(&w, T0 + 80 + 100000, 0), 0u, "one gap is not a usual interval");
    take1(&w, T0 + 120, "5.0", NULL, NULL, NULL);
    cr_assert_eq(w.n_gaps, 2);
    cr_assert_eq(w.gaps[0], 60);
    cr_assert_eq(w.seen_at, T0 + 140);

    /* 3 x 60 s is below the 180 s floor: measured from seen_at. */
    cr_assert_eq(watch_idle(&w, T0 + 140 + 180, 0), 0u);
    cr_assert_not(w.silent);
    cr_assert_eq(watch_idle(&w, T0 + 140 + 181, 0), (unsigned)WATCH_SILENT);
    cr_assert(w.silent);
    cr_assert_eq(watch_idle(&w, T0 + 140 + 240, 0), 0u, "raised once");
    cr_assert_eq(watch_idle(&w, T0 + 140 + 9999, 0), 0u);

    cr_assert_eq(take1(&w, T0 + 900, "5.0", NULL, NULL, NULL), (unsigned)WATCH_SILENT,
                 "uploads resumed");
    cr_assert_not(w.silent);
    cr_assert_eq(w.gaps[2], 780);
    cr_assert_eq(take1(&w, T0 + 960, "5.0", NULL, NULL, NULL), 0u);
}

Test(watch, silence_waits_three_usual_intervals)
{
    struct watch w = {0};
    /* Gaps 300, 300, 600, 300, 300: the median is 300, the threshold 900. */
    static const long long at[] = {0, 300, 600, 1200, 1500, 1800};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        take1(&w, T0 + at[i], "5.0", NULL, NULL, NULL);
    cr_assert_eq(w.seen_at, T0 + 1800 + 20);
    cr_assert_eq(watch_idle(&w, T0 + 1820 + 900, 0), 0u);
    cr_assert_eq(watch_idle(&w, T0 + 1820 + 901, 0), (unsigned)WATCH_SILENT);

    /* Gaps are bounded: the oldest go. */
    for (int i = 1; i <= 20; i++)
        take1(&w, T0 + 100000 + 120 * i, "5.0", NULL, NULL, NULL);
    cr_assert_eq(w.n_gaps, WATCH_GAPS);
    cr_assert_eq(w.gaps[0], 120);
    cr_assert_eq(watch_idle(&w, w.seen_at + 360, 0), 0u);
    cr_assert_eq(watch_idle(&w, w.seen_at + 361, 0), (unsigned)WATCH_SILENT);
}

Test(watch, silence_waits_for_the_communication_error_once_its_delay_is_known)
{
    /* The login's alert logs showed a communication error 1200 s after a
     * device's last upload: silence comes when that error is logged (and
     * a minute more), sooner than three ten-minute intervals and later
     * than three one-minute ones. Never sooner than an interval and that
     * minute. */
    struct watch remote = {0}, standalone = {0};
    for (int i = 0; i < 6; i++) {
        take1(&remote, T0 + 600 * i, "5.0", NULL, NULL, NULL);
        take1(&standalone, T0 + 60 * i, "5.0", NULL, NULL, NULL);
    }
    struct watch r = remote, s = standalone, quick = remote;
    cr_assert_eq(watch_idle(&r, remote.seen_at + 1260, 1200), 0u);
    cr_assert_eq(watch_idle(&r, remote.seen_at + 1261, 1200), (unsigned)WATCH_SILENT);
    cr_assert_eq(watch_idle(&s, standalone.seen_at + 181, 1200), 0u, "not after 3 minutes");
    cr_assert_eq(watch_idle(&s, standalone.seen_at + 1260, 1200), 0u);
    cr_assert_eq(watch_idle(&s, standalone.seen_at + 1261, 1200), (unsigned)WATCH_SILENT);
    cr_assert_eq(watch_idle(&quick, remote.seen_at + 660, 200), 0u, "an interval at least");
    cr_assert_eq(watch_idle(&quick, remote.seen_at + 661, 200), (unsigned)WATCH_SILENT);
}

/* ---- limits ---- */

Test(watch, hovering_at_a_limit_crosses_once)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = -75.0};
    struct watch_crossing out[4];
    size_t n;
    int crossings = 0, signals = 0;
    unsigned all = 0;

    take1(&w, T0, "-75.1", &limit, out, &n);
    for (int i = 1; i <= 200; i++) {
        unsigned got = take1(&w, T0 + 60 * i, i % 2 ? "-74.9" : "-75.1", &limit, out, &n);
        all |= got;
        signals += got != 0;
        crossings += (int)n;
        if (i == 1) {
            cr_assert_eq(got, (unsigned)WATCH_LIMIT);
            cr_assert_eq(n, 1);
            cr_assert_eq(out[0].num, 1);
            cr_assert_eq(out[0].zone, 1);
            cr_assert_eq(out[0].from, 0);
            cr_assert_eq(out[0].value, -74.9);
            cr_assert_eq(out[0].limit, -75.0);
        }
    }
    cr_assert_eq(crossings, 1);
    cr_assert_eq(signals, 2, "above, then the first value inside the bare limit");
    cr_assert_eq(all, (unsigned)WATCH_LIMIT, "no band signal either");
    struct watch_channel *c = watch_channel(&w, 1);
    cr_assert_eq(c->zone, 1);
    cr_assert_eq(c->warned, 1);
    cr_assert_eq(c->warned_at, T0 + 60);

    /* Inside by less than the margin (3 steps here): still above. */
    cr_assert_eq(take1(&w, T0 + 60 * 201, "-75.2", &limit, out, &n), 0u);
    cr_assert_eq(c->zone, 1);
    cr_assert_eq(take1(&w, T0 + 60 * 202, "-75.4", &limit, out, &n), (unsigned)WATCH_LIMIT,
                 "the crossing back signals again: the platform may have logged more");
    cr_assert_eq(n, 1, "and is announced now");
    cr_assert_eq(out[0].zone, 0);
    cr_assert_eq(out[0].from, 1);
    cr_assert_eq(out[0].value, -75.4);
    cr_assert_eq(out[0].limit, -75.0);
    cr_assert_eq(c->warned, 0);
    cr_assert_eq(c->warned_at, T0 + 60, "the way back names the warning it ends");
}

Test(watch, margin_grows_with_the_band_spread)
{
    /* A fridge whose readings cycle over 4.0 .. 6.0: its band's spread is
     * 1.125 (quartiles 4.375 and 5.5 of the oldest 12), so the way back
     * from above 8.0 needs the value below 6.875, not merely 3 steps (0.3)
     * below 8.0. */
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    struct watch_crossing out[4];
    size_t n;
    static const char *const cycle[] = {"4.0", "4.5", "5.0", "5.5", "6.0"};
    long long t = T0;
    for (int i = 0; i < 20; i++, t += 60)
        take1(&w, t, cycle[i % 5], &limit, out, &n);
    /* 8.5 is inside the band (5.5 + 6 x 1.125) but above the limit. */
    cr_assert_eq(take1(&w, t, "8.5", &limit, out, &n), (unsigned)WATCH_LIMIT);
    t += 60;
    cr_assert_eq(take1(&w, t, "7.2", &limit, out, &n), (unsigned)WATCH_LIMIT,
                 "inside the bare limit: the platform's recovery is due");
    cr_assert_eq(n, 0, "inside by less than the spread: no warning yet");
    cr_assert_eq(watch_channel(&w, 1)->zone, 1);
    t += 60;
    cr_assert_eq(take1(&w, t, "6.9", &limit, out, &n), 0u);
    cr_assert_eq(n, 0);
    t += 60;
    cr_assert_eq(take1(&w, t, "6.8", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0].zone, 0);
}

Test(watch, a_channel_that_drifts_slowly_comes_back_by_its_jitter_not_its_spread)
{
    /* A room drifting from 4.0 to 6.0 over 30 readings: its band's spread
     * is about a degree, but it moves 0.07 a reading. The way back from
     * above 8.0 needs 3 steps (0.3), not the spread: a value hovering at
     * the limit moves by its jitter, and the spread would hold the
     * warning of its recovery for another reading or two. */
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    struct watch_crossing out[4];
    size_t n;
    long long t = T0;
    char text[16];
    for (int i = 0; i < 30; i++, t += 60) {
        snprintf(text, sizeof text, "%.1f", 4.0 + i * 0.07);
        take1(&w, t, text, &limit, out, &n);
    }
    cr_assert_eq(take1(&w, t, "8.5", &limit, out, &n), (unsigned)WATCH_LIMIT);
    t += 60;
    cr_assert_eq(take1(&w, t, "7.8", &limit, out, &n), (unsigned)WATCH_LIMIT,
                 "inside the bare limit: the platform's recovery is due");
    cr_assert_eq(n, 0, "inside by less than 3 steps");
    t += 60;
    cr_assert_eq(take1(&w, t, "7.6", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(n, 1, "inside by more than 3 steps and the jitter: back");
    cr_assert_eq(out[0].zone, 0);
}

/* A fridge uploading every 10 minutes at 5.0 +- 0.1 for four hours, upper
 * limit 8.0: the clock of its last reading. */
static long long fridge_every_ten_minutes(struct watch *w, const struct watch_limit *limit)
{
    static const char *const noise[] = {"4.9", "5.0", "5.1", "5.0"};
    long long t = T0;
    for (int i = 0; i < 24; i++, t += 600)
        take1(w, t, noise[i % 4], limit, NULL, NULL);
    return t - 600;
}

/* The next reading, 10 minutes later, and the crossing it foresees. */
static long long foresee_after(struct watch *w, long long t, const char *text,
                               const struct watch_limit *limit)
{
    struct watch was = *w;
    take1(w, t, text, limit, NULL, NULL);
    return watch_foresee(&was, w, limit, 1);
}

Test(watch, a_recovery_between_two_uploads_is_foreseen)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    long long t = fridge_every_ten_minutes(&w, &limit);
    cr_assert_eq(foresee_after(&w, t + 600, "9.6", &limit), 0, "going away from the limit");
    cr_assert_eq(watch_channel(&w, 1)->zone, 1);
    cr_assert_eq(foresee_after(&w, t + 1200, "9.2", &limit), 0,
                 "back at 8.0 in 24 minutes: the next upload comes first");
    cr_assert_eq(foresee_after(&w, t + 1800, "8.6", &limit), 0,
                 "back at 8.0 in 10 minutes: no sooner than the next upload");
    cr_assert_eq(foresee_after(&w, t + 2400, "8.3", &limit), 0, "0.3 a reading, 0.3 left");
    cr_assert_eq(foresee_after(&w, t + 3000, "8.1", &limit), t + 3000 + 300,
                 "0.2 a reading, 0.1 left: 5 minutes, before the next upload");
    cr_assert_eq(foresee_after(&w, t + 3600, "7.5", &limit), 0,
                 "back inside: the way back's own signal tells");
}

Test(watch, an_alarm_between_two_uploads_is_foreseen)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    long long t = fridge_every_ten_minutes(&w, &limit);
    cr_assert_eq(foresee_after(&w, t + 600, "5.6", &limit), 0, "inside the band");
    cr_assert_eq(watch_channel(&w, 1)->band, 0);
    cr_assert_eq(foresee_after(&w, t + 1200, "6.8", &limit), 0, "at 8.0 in 10 minutes");
    cr_assert_eq(watch_channel(&w, 1)->band, 1);
    cr_assert_eq(foresee_after(&w, t + 1800, "7.6", &limit), t + 1800 + 300,
                 "0.8 a reading, 0.4 from the limit: 5 minutes");
    cr_assert_eq(foresee_after(&w, t + 2400, "7.4", &limit), 0, "going back");

    /* No limit on that side: nothing to foresee. */
    struct watch v = {0};
    struct watch_limit lower = {.has_lower = true, .lower = 2.0};
    t = fridge_every_ten_minutes(&v, &lower);
    foresee_after(&v, t + 600, "6.8", &lower);
    cr_assert_eq(foresee_after(&v, t + 1200, "7.6", &lower), 0);
}

Test(watch, nothing_is_foreseen_for_uploads_every_minute)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    long long t = T0;
    for (int i = 0; i < 24; i++, t += 60)
        take1(&w, t, i % 2 ? "5.0" : "5.1", &limit, NULL, NULL);
    foresee_after(&w, t, "6.8", &limit);
    cr_assert_eq(foresee_after(&w, t + 60, "7.9", &limit), 0,
                 "the next upload comes as soon as any look");
}

Test(watch, lower_limit_and_a_jump_across_both)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0, .has_lower = true, .lower = 2.0};
    struct watch_crossing out[4];
    size_t n;
    take1(&w, T0, "5.0", &limit, out, &n);
    cr_assert_eq(take1(&w, T0 + 60, "1.9", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(out[0].zone, -1);
    cr_assert_eq(out[0].limit, 2.0);
    cr_assert_eq(take1(&w, T0 + 120, "2.1", &limit, out, &n), (unsigned)WATCH_LIMIT,
                 "inside the bare limit");
    cr_assert_eq(n, 0, "inside by less than 3 steps");
    cr_assert_eq(take1(&w, T0 + 180, "9.0", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0].zone, 1);
    cr_assert_eq(out[0].from, -1);
    cr_assert_eq(out[0].limit, 8.0);
    cr_assert_eq(take1(&w, T0 + 240, "1.0", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(out[0].zone, -1);
    cr_assert_eq(out[0].from, 1);
    cr_assert_eq(out[0].limit, 2.0);
}

Test(watch, crossings_beyond_max_are_not_reported)
{
    struct watch w = {0};
    struct watch_limit limits[2] = {{.has_upper = true, .upper = 8.0},
                                    {.has_upper = true, .upper = 8.0}};
    struct watch_value v[] = {{1, "5.0"}, {2, "5.0"}};
    struct watch_reading r = {.unixtime = T0, .values = v, .n_values = 2};
    struct watch_crossing out[1];
    size_t n;
    watch_take(&w, &r, limits, 2, T0, out, 1, &n);
    v[0].text = "9.0";
    v[1].text = "9.0";
    r.unixtime = T0 + 60;
    cr_assert_eq(watch_take(&w, &r, limits, 2, T0 + 60, out, 1, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0].num, 1);
    cr_assert_eq(w.ch[0].warned, 1);
    cr_assert_eq(w.ch[1].zone, 1, "the zone follows the value");
    cr_assert_eq(w.ch[1].warned, 0, "but only a reported crossing counts as announced");
    cr_assert_eq(w.ch[1].warned_at, 0);

    /* No room at all. */
    v[0].text = "5.0";
    r.unixtime = T0 + 120;
    cr_assert_eq(watch_take(&w, &r, limits, 2, T0 + 120, NULL, 0, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(n, 0);
}

Test(watch, relimit_is_silent)
{
    struct watch w = {0};
    struct watch_crossing out[4];
    size_t n;
    take1(&w, T0, "-80.0", NULL, out, &n);
    cr_assert_eq(take1(&w, T0 + 60, "-70.0", NULL, out, &n), 0u, "no limit, no band yet");

    /* The limit becomes known during the excursion. */
    struct watch_limit limit = {.has_upper = true, .upper = -75.0};
    watch_relimit(&w, &limit, 1);
    struct watch_channel *c = watch_channel(&w, 1);
    cr_assert_eq(c->zone, 1);
    cr_assert_eq(c->warned, 1);
    cr_assert_eq(take1(&w, T0 + 120, "-71.0", &limit, out, &n), 0u);
    cr_assert_eq(n, 0);
    cr_assert_eq(take1(&w, T0 + 180, "-80.0", &limit, out, &n), (unsigned)WATCH_LIMIT);
    cr_assert_eq(out[0].zone, 0);

    /* A relimit keeps the hysteresis: -75.1 is inside by less than 3 steps. */
    take1(&w, T0 + 240, "-74.0", &limit, out, &n);
    take1(&w, T0 + 300, "-75.1", &limit, out, &n);
    watch_relimit(&w, &limit, 1);
    cr_assert_eq(c->zone, 1);

    /* The limit is forgotten: back inside, silently. */
    watch_relimit(&w, NULL, 0);
    cr_assert_eq(c->zone, 0);
    cr_assert_eq(c->warned, 0);
    cr_assert_eq(take1(&w, T0 + 360, "-60.0", NULL, out, &n), 0u);

    /* A channel that never had a number has no zone. */
    struct watch e = {0};
    take1(&e, T0, "E01", NULL, out, &n);
    watch_relimit(&e, &limit, 1);
    cr_assert_eq(e.ch[0].zone, 0);
}

Test(watch, a_bound_that_is_no_longer_given_does_not_cross)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = 8.0};
    struct watch_crossing out[4];
    size_t n;
    take1(&w, T0, "9.0", &limit, out, &n);
    cr_assert_eq(watch_channel(&w, 1)->zone, 1);
    cr_assert_eq(take1(&w, T0 + 60, "9.0", NULL, out, &n), 0u);
    cr_assert_eq(n, 0);
    cr_assert_eq(watch_channel(&w, 1)->zone, 0);
}

Test(watch, polled_records_values_and_clears_pending)
{
    struct watch w = {0};
    struct watch_value v[] = {{1, "-79.5"}, {2, "E01"}};
    struct watch_reading r = {.unixtime = T0, .values = v, .n_values = 2};
    watch_take(&w, &r, NULL, 0, T0, NULL, 0, NULL);
    w.pending = WATCH_BAND | WATCH_ERROR;
    w.pending_since = T0;
    w.recheck_at = T0 + 300;
    watch_polled(&w);
    cr_assert_eq(w.pending, 0u);
    cr_assert_eq(w.pending_since, 0);
    cr_assert_eq(w.recheck_at, 0);
    cr_assert(w.ch[0].has_at_poll);
    cr_assert_not(w.ch[0].at_poll_error);
    cr_assert_eq(w.ch[0].at_poll, -79.5);
    cr_assert(w.ch[1].has_at_poll);
    cr_assert(w.ch[1].at_poll_error);
}

/* ---- the band: noise never signals, an excursion does ---- */

/* A small deterministic generator (64-bit LCG, Knuth's MMIX constants). */
static unsigned long long lcg_state;

static double uniform01(void)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / 9007199254740992.0;
}

/* Gaussian-like: the sum of 12 uniforms, centred (sd 1, bounded at 6). */
static double gaussish(void)
{
    double s = 0;
    for (int i = 0; i < 12; i++)
        s += uniform01();
    return s - 6;
}

struct profile {
    const char *name;
    double centre, noise; /* noise: half-range (uniform) or sd (gaussian) */
    int decimals;
    bool gaussian;
    double sawtooth; /* amplitude of a 10-reading compressor cycle, or 0 */
};

/* `v` written as the platform would, with `decimals` decimals. */
static const char *written(char *buf, size_t size, double v, int decimals)
{
    snprintf(buf, size, "%.*f", decimals, v);
    return buf;
}

static const struct profile profiles[] = {
    {"freezer -80 +-0.3 uniform", -80, 0.3, 1, false, 0},
    {"freezer -80 sd 0.15", -80, 0.15, 1, true, 0},
    {"freezer -80.0 flat, 1-step wobble", -80, 0.1, 1, false, 0},
    {"fridge 5 +-0.5 uniform", 5, 0.5, 1, false, 0},
    {"fridge 5 sd 0.25", 5, 0.25, 1, true, 0},
    {"fridge 5 compressor cycle +-1 and sd 0.1", 5, 0.1, 1, true, 1.0},
    {"humidity 45 +-3 uniform, integers", 45, 3, 0, false, 0},
    {"humidity 45 sd 1.5, integers", 45, 1.5, 0, true, 0},
    {"room 22 sd 0.02, finer than the step", 22, 0.02, 1, true, 0},
    {"incubator 37.00 sd 0.05, two decimals", 37, 0.05, 2, true, 0},
    {"cold room 4 +-0.04, two decimals", 4, 0.04, 2, false, 0},
};

static double noisy(const struct profile *p, int i)
{
    double v = p->centre;
    if (p->sawtooth != 0)
        v += p->sawtooth * (-1 + 2 * (i % 10) / 9.0);
    if (p->gaussian)
        v += p->noise * gaussish();
    else
        v += p->noise * (2 * uniform01() - 1);
    return v;
}

/* 11 profiles x 4 seeds x 5000 readings, none of which may signal. Over
 * 400 seeds of each (22 million readings) the band rules of readings_memory.h let
 * noise out 5 times: about once in 4 million readings, once in 8 years of
 * one-minute uploads of one channel. */
#define NOISE_READINGS 5000
#define NOISE_SEEDS 4

Test(watch, noise_never_signals)
{
    long total = 0;
    for (size_t k = 0; k < sizeof profiles / sizeof profiles[0]; k++) {
        for (unsigned long long seed = 1; seed <= NOISE_SEEDS; seed++) {
            const struct profile *p = &profiles[k];
            struct watch w = {0};
            lcg_state = seed * 0x9E3779B97F4A7C15ULL + k;
            int signals = 0;
            for (int i = 0; i < NOISE_READINGS; i++) {
                char buf[32];
                unsigned got =
                    take1(&w, T0 + 120LL * i, written(buf, sizeof buf, noisy(p, i), p->decimals),
                          NULL, NULL, NULL);
                if (got)
                    signals++;
                total++;
            }
            cr_assert_eq(signals, 0, "%s, seed %llu: %d signals", p->name, seed, signals);
            cr_assert_eq(w.ch[0].band, 0);
        }
    }
    cr_assert_eq(total,
                 (long)(sizeof profiles / sizeof profiles[0]) * NOISE_SEEDS * NOISE_READINGS);
}

/* A freezer at -80 +-0.3 whose door opens: up to -70 over a few readings,
 * held there, back after the door closes. Returns the indices of the band
 * signals (at most 8) and their count; crossings of `limit` (NULL: none
 * known) too. */
static int freezer_door(long interval, int held, const struct watch_limit *limit, int *band_at,
                        int *limit_at, int *n_limit)
{
    struct watch w = {0};
    struct watch_crossing out[4];
    size_t n;
    int n_band = 0;
    *n_limit = 0;
    lcg_state = 42;
    for (int i = 0; i < 200 + held + 100; i++) {
        double v;
        int j = i - 200;
        if (j < 0 || j >= held + 4)
            v = -80 + 0.3 * (2 * uniform01() - 1);
        else if (j < 3)
            v = -77 + 3 * j; /* -77, -74, -71 */
        else if (j < held + 2)
            v = -70 + 0.5 * (2 * uniform01() - 1);
        else
            v = j == held + 2 ? -74 : -78; /* closing */
        char buf[32];
        unsigned got = take1(&w, T0 + interval * i, written(buf, sizeof buf, v, 1), limit, out, &n);
        cr_assert_eq(got & ~(unsigned)(WATCH_BAND | WATCH_LIMIT), 0u);
        if ((got & WATCH_BAND) && n_band < 8)
            band_at[n_band++] = i;
        if ((got & WATCH_LIMIT) && *n_limit < 8)
            limit_at[(*n_limit)++] = i;
    }
    return n_band;
}

Test(watch, freezer_door_signals_leaving_and_coming_back)
{
    /* Uploads every 5 minutes, 30 minutes open: 6 readings at -70. No
     * limit known: the band tells. */
    int band_at[8], limit_at[8], n_limit;
    int n_band = freezer_door(300, 6, NULL, band_at, limit_at, &n_limit);
    cr_assert_eq(n_band, 2);
    cr_assert_eq(band_at[0], 200, "the first reading of the opening");
    cr_assert_eq(band_at[1], 200 + 6 + 4, "the first reading back to normal");
    cr_assert_eq(n_limit, 0);
}

Test(watch, a_known_limit_on_that_side_makes_the_band_quiet)
{
    /* The same door with the upper limit -75 known: its crossings tell,
     * the band's leaving and coming back above would only repeat them. */
    struct watch_limit upper = {.has_upper = true, .upper = -75.0};
    int band_at[8], limit_at[8], n_limit;
    int n_band = freezer_door(300, 6, &upper, band_at, limit_at, &n_limit);
    cr_assert_eq(n_band, 0);
    cr_assert_eq(n_limit, 2);
    cr_assert_eq(limit_at[0], 201, "-74.0 is above -75.0");
    cr_assert_eq(limit_at[1], 200 + 6 + 3, "-78.0 is inside by more than the margin");

    /* A lower limit alone does not watch the side the door went. */
    struct watch_limit lower = {.has_lower = true, .lower = -90.0};
    n_band = freezer_door(300, 6, &lower, band_at, limit_at, &n_limit);
    cr_assert_eq(n_band, 2);
    cr_assert_eq(n_limit, 0);
}

Test(watch, a_value_back_near_a_known_limit_is_a_signal)
{
    /* Humidity at 45 %RH with a known upper limit of 70. A short
     * excursion crossed 70 and came back between two uploads: the upload
     * shows 66, out of the band and nearer the limit than the band's edge
     * (about 53): a look, since no crossing will tell. 55, out of the band
     * but near its edge, is a ramp's start the limit's crossing will tell
     * of: nothing; a reading after it that comes near the limit is a look
     * again (once). */
    struct watch_limit upper = {.has_upper = true, .upper = 70.0};
    const char *normal[] = {"45", "46", "44", "45", "47", "45", "43", "45", "46", "44"};
    struct watch w = {0}, v;
    long long t = T0;
    for (int i = 0; i < 20; i++, t += 600)
        take1(&w, t, normal[i % 10], &upper, NULL, NULL);
    v = w;
    cr_assert_eq(take1(&w, t, "66", &upper, NULL, NULL), (unsigned)WATCH_BAND, "near the limit");
    cr_assert_eq(take1(&v, t, "55", &upper, NULL, NULL), 0u, "near the band's edge");
    cr_assert_eq(v.ch[0].band, 1, "out of the band all the same");
    struct watch x = v;
    cr_assert_eq(take1(&x, t + 600, "66", &upper, NULL, NULL), (unsigned)WATCH_BAND,
                 "already out, and now near the limit");
    cr_assert_eq(take1(&x, t + 1200, "67", &upper, NULL, NULL), 0u, "still near: once");
    cr_assert_eq(take1(&v, t + 600, "71", &upper, NULL, NULL), (unsigned)WATCH_LIMIT,
                 "beyond: the crossing tells");
}

Test(watch, an_open_alarm_asks_for_a_look_when_its_channel_is_back_in_its_band)
{
    /* A refrigerator with its upper limit 8 known. A short excursion that
     * no reading showed beyond 8: the look at 7.9 (near the limit) found
     * the alarm, and the alert log holds no recovery yet (`alarmed`). Back
     * in the band, the platform has logged the recovery: a look, though
     * the limit's side would keep the band quiet. Without the open alarm,
     * the same way back is quiet. */
    struct watch_limit upper = {.has_upper = true, .upper = 8.0};
    const char *normal[] = {"5.0", "5.1", "4.9", "5.0", "5.2", "4.8"};
    struct watch w = {0};
    long long t = T0;
    for (int i = 0; i < 20; i++, t += 600)
        take1(&w, t, normal[i % 6], &upper, NULL, NULL);
    cr_assert_eq(take1(&w, t, "7.9", &upper, NULL, NULL), (unsigned)WATCH_BAND);
    t += 600;
    struct watch quiet = w;
    w.ch[0].alarmed = true;
    cr_assert_eq(take1(&w, t, "5.3", &upper, NULL, NULL), (unsigned)WATCH_BAND, "the way back");
    cr_assert_eq(w.ch[0].band, 0);
    cr_assert_eq(take1(&quiet, t, "5.3", &upper, NULL, NULL), 0u, "no open alarm: quiet");
    cr_assert_eq(take1(&w, t + 600, "5.0", &upper, NULL, NULL), 0u, "once");
}

Test(watch, a_short_way_out_and_back_towards_a_known_limit_asks_for_a_look)
{
    /* A humidity channel with its upper limit 70 known, at 45. One reading
     * of 61 leaves the band towards the limit, not near enough it to ask
     * for a look (the limit's side keeps the band quiet), and the next is
     * back: the excursion may have crossed 70 between the two uploads, so
     * the way back asks for a look. Out for three readings and back, the
     * readings followed the excursion: quiet. */
    struct watch_limit upper = {.has_upper = true, .upper = 70.0};
    const char *normal[] = {"45", "46", "44", "45", "47", "43"};
    struct watch w = {0};
    long long t = T0;
    for (int i = 0; i < 20; i++, t += 600)
        take1(&w, t, normal[i % 6], &upper, NULL, NULL);
    struct watch longer = w;
    cr_assert_eq(take1(&w, t, "61", &upper, NULL, NULL), 0u, "out, towards a known limit");
    cr_assert_eq(w.ch[0].band, 1);
    cr_assert_eq(take1(&w, t + 600, "45", &upper, NULL, NULL), (unsigned)WATCH_BAND,
                 "the way back");
    cr_assert_eq(take1(&w, t + 1200, "46", &upper, NULL, NULL), 0u, "once");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(take1(&longer, t + 600 * i, "61", &upper, NULL, NULL), 0u);
    cr_assert_eq(take1(&longer, t + 1800, "45", &upper, NULL, NULL), 0u, "three readings out");
}

Test(watch, the_level_is_the_median)
{
    struct watch_channel c = {
        .num = 1, .value = 6.0, .n_history = 4, .history = {5.0, 4.0, 9.0, 4.5}};
    cr_assert_float_eq(watch_level(&c), 4.75, 1e-9);
    c.n_history = 3;
    cr_assert_float_eq(watch_level(&c), 5.0, 1e-9);
    c.n_history = 0;
    cr_assert_eq(watch_level(&c), 6.0, "no history: the last value");
    cr_assert_eq(c.history[0], 5.0, "the values are not sorted in place");
}

Test(watch, long_excursion_becomes_the_new_normal)
{
    /* Uploads every minute, 32 minutes open: 32 readings out. The level is
     * the new normal at the WATCH_HISTORY - WATCH_BAND_MIN + 2nd reading
     * out (silently), and has a band WATCH_BAND_MIN readings later; the
     * way back leaves that new band: still two signals. */
    int band_at[8], limit_at[8], n_limit;
    int n_band = freezer_door(60, 32, NULL, band_at, limit_at, &n_limit);
    cr_assert_eq(n_band, 2);
    cr_assert_eq(band_at[0], 200);
    cr_assert_eq(band_at[1], 200 + 32 + 2, "-74.0 leaves the band of -70");
}

Test(watch, a_young_history_holds_its_band_while_a_slow_ramp_develops)
{
    /* A remote unit uploading every ten minutes, watched for two hours:
     * thirteen values of -80.0. A ramp of 2.5 degrees an upload leaves the
     * band and stays out: the excursion lasts (poll.c keeps looking) until
     * it is over or 22 readings have passed, not two readings (the faded
     * history used to be the new normal at the second reading out). */
    struct watch w = {0};
    struct watch_limit none = {0};
    long long t = T0;
    for (int i = 0; i < WATCH_BAND_MIN + 1; i++, t += 600)
        take1(&w, t, "-80.0", NULL, NULL, NULL);
    const char *ramp[] = {"-77.0", "-74.5", "-72.5", "-70.0", "-68.0", "-68.0", "-69.0"};
    cr_assert_eq(take1(&w, t, ramp[0], NULL, NULL, NULL), (unsigned)WATCH_BAND);
    t += 600;
    for (size_t i = 1; i < sizeof ramp / sizeof ramp[0]; i++, t += 600) {
        cr_assert_eq(take1(&w, t, ramp[i], NULL, NULL, NULL), 0u, "%s", ramp[i]);
        cr_assert(watch_excursion(&w, &none, 1), "still out at %s", ramp[i]);
        cr_assert_eq(w.ch[0].out, (int)i + 1);
    }
    cr_assert_eq(w.ch[0].n_history, WATCH_BAND_MIN, "faded to WATCH_BAND_MIN values, no further");
    cr_assert_eq(take1(&w, t, "-80.0", NULL, NULL, NULL), (unsigned)WATCH_BAND, "the way back");
    cr_assert_eq(w.ch[0].out, 0);
}

/* A fridge at 5 with noise of up to 0.5 either way, falling from reading
 * 100 by `slope` per reading down to -1: the first band signal's reading
 * after the fall began, or -1 when there is none. */
static int fridge_falls(double slope, unsigned long long seed)
{
    struct watch w = {0};
    lcg_state = seed;
    for (int i = 0; i < 200; i++) {
        double fall = i < 100 ? 0 : (i - 99) * slope;
        double v = 5 - (fall > 6 ? 6 : fall) + 0.5 * (2 * uniform01() - 1);
        char buf[32];
        if (take1(&w, T0 + 60LL * i, written(buf, sizeof buf, v, 1), NULL, NULL, NULL) && i >= 100)
            return i - 100;
    }
    return -1;
}

Test(watch, a_slow_ramp_leaves_the_band)
{
    /* 0.3 degrees a minute: the band leaves out the newest values, so the
     * first ones of the fall do not drag it along. (A band of the whole
     * history never signalled: each value of the fall entered it and
     * widened it towards the next.) */
    for (unsigned long long seed = 1; seed <= 10; seed++) {
        int at = fridge_falls(0.3, seed);
        cr_assert(at >= 0 && at <= 16, "seed %llu: signal at %d", seed, at);
    }
}

/* An excursion lasts while a channel is out of its band on a side no
 * known limit watches, whatever a poll found: poll.c keeps such a device
 * hot. A known limit on that side, or an error value, ends it. */
Test(watch, an_excursion_lasts_while_a_value_is_out_of_its_band_without_a_limit)
{
    struct watch w = {0};
    struct watch_limit none = {0}, lower = {.has_lower = true, .lower = -90.0},
                       upper = {.has_upper = true, .upper = -60.0};
    long long t = T0;
    for (int i = 0; i < 16; i++, t += 60)
        take1(&w, t, i % 2 ? "-80.1" : "-79.9", NULL, NULL, NULL);
    cr_assert_not(watch_excursion(&w, &none, 1), "ordinary noise");
    take1(&w, t, "-75.0", NULL, NULL, NULL);
    t += 60;
    cr_assert(watch_excursion(&w, &none, 1), "out of the band");
    cr_assert(watch_excursion(&w, NULL, 0), "no limits at all");
    cr_assert(watch_excursion(&w, &lower, 1), "above, and only a lower limit known");
    cr_assert_not(watch_excursion(&w, &upper, 1), "its upper limit is known");
    watch_polled(&w);
    cr_assert(watch_excursion(&w, &none, 1), "a poll does not end it");
    take1(&w, t, "-74.0", NULL, NULL, NULL);
    t += 60;
    cr_assert(watch_excursion(&w, &none, 1), "still out");
    take1(&w, t, "E01", NULL, NULL, NULL);
    t += 60;
    cr_assert_not(watch_excursion(&w, &none, 1), "an error value is no excursion (its own signal)");
    take1(&w, t, "-80.0", NULL, NULL, NULL);
    cr_assert_not(watch_excursion(&w, &none, 1), "back in its band");
}

Test(watch, band_needs_band_min_values)
{
    struct watch w = {0};
    long long t = T0;
    for (int i = 0; i < WATCH_BAND_MIN - 1; i++, t += 60)
        take1(&w, t, "-80.0", NULL, NULL, NULL);
    cr_assert_eq(take1(&w, t, "-60.0", NULL, NULL, NULL), 0u, "11 values: no band yet");

    struct watch f = {0};
    t = T0;
    for (int i = 0; i < 16; i++, t += 60)
        take1(&f, t, "-80.0", NULL, NULL, NULL);
    /* A flat history: the band is 5 steps wide on each side. */
    cr_assert_eq(take1(&f, t, "-80.5", NULL, NULL, NULL), 0u);
    t += 60;
    cr_assert_eq(take1(&f, t, "-79.4", NULL, NULL, NULL), (unsigned)WATCH_BAND);
    cr_assert_eq(f.ch[0].band, 1);
    cr_assert_eq(f.ch[0].n_history, 17, "a value out of the band does not enter the history");
    t += 60;
    /* Back needs the value within half the widening (-79.75). */
    cr_assert_eq(take1(&f, t, "-79.7", NULL, NULL, NULL), 0u, "still out: no new signal");
    cr_assert_eq(f.ch[0].n_history, 16, "while out, the oldest value goes");
    t += 60;
    cr_assert_eq(take1(&f, t, "E01", NULL, NULL, NULL), (unsigned)WATCH_ERROR);
    cr_assert_eq(f.ch[0].band, 1, "an error value does not move the band position");
    t += 60;
    cr_assert_eq(take1(&f, t, "-80.6", NULL, NULL, NULL), (unsigned)(WATCH_BAND | WATCH_ERROR));
    cr_assert_eq(f.ch[0].band, -1, "from above to below in one reading");
    t += 60;
    cr_assert_eq(take1(&f, t, "-80.0", NULL, NULL, NULL), (unsigned)WATCH_BAND);
    cr_assert_eq(f.ch[0].band, 0);
}

Test(watch, summary_in_words)
{
    struct watch w = {0};
    struct watch_limit limit = {.has_upper = true, .upper = -70.0};
    struct watch_value v[2] = {{1, "-80.0"}, {2, "E01"}};
    struct watch_reading r = {.unixtime = T0, .battery = 4, .values = v, .n_values = 2};
    char out[128];
    watch_take(&w, &r, &limit, 1, T0, NULL, 0, NULL);
    cr_assert_str_eq(watch_summary(out, sizeof out, &w), "ch1 -80, ch2 error value; battery 4");
    v[0].text = "-65.5";
    r.unixtime += 60;
    watch_take(&w, &r, &limit, 1, T0 + 60, NULL, 0, NULL);
    w.silent = true;
    cr_assert_str_eq(watch_summary(out, sizeof out, &w),
                     "ch1 -65.5 (above its limit), ch2 error value; battery 4; uploads have "
                     "stopped");
    cr_assert_str_eq(watch_summary(out, 12, &w), "ch1 -65.5 (");
    struct watch empty = {.battery = 3};
    cr_assert_str_eq(watch_summary(out, sizeof out, &empty), "battery 3");
}

Test(watch, extremes_do_not_crash)
{
    static const char *const texts[] = {
        "99999999999999999999", "-99999999999999999999", "0.000001", "E", "1", "-0", "+0.0"};
    struct watch w = {0};
    struct watch_limit limit = {
        .has_upper = true, .upper = 1e19, .has_lower = true, .lower = -1e19};
    struct watch_crossing out[4];
    size_t n;
    lcg_state = 7;
    for (int i = 0; i < 2000; i++) {
        const char *text = texts[(int)(uniform01() * 7)];
        take1(&w, T0 + i, text, &limit, out, &n);
        cr_assert_leq(n, 1);
        watch_idle(&w, T0 + i + 500, 0);
    }
    cr_assert_eq(w.n_ch, 1);
    cr_assert_leq(w.ch[0].n_history, WATCH_HISTORY);
}

Test(watch, interval_is_the_median_gap)
{
    struct watch w = {0};
    cr_assert_eq(watch_interval(&w), 0);
    w.gaps[0] = 60;
    w.n_gaps = 1;
    cr_assert_eq(watch_interval(&w), 0, "one gap is no interval yet");
    w.gaps[1] = 120;
    w.n_gaps = 2;
    cr_assert_eq(watch_interval(&w), 90);
    w.gaps[2] = 3600;
    w.n_gaps = 3;
    cr_assert_eq(watch_interval(&w), 120);
}

Test(watch, a_remote_unit_is_looked_at_once_a_standalone_device_after_90_s)
{
    /* A remote unit's alarm is logged at its base unit's monitoring tick,
     * before the upload that shows it; a standalone device's a little after
     * the upload. */
    struct watch w = {.unixtime = 1000000, .pending = WATCH_LIMIT, .pending_at = 1000000};
    cr_assert_eq(watch_look_at(&w, true), 1000000, "a remote unit: at once");
    cr_assert_eq(watch_look_at(&w, false), 1000000 + WATCH_SETTLE_STANDALONE);
    cr_assert_eq(WATCH_SETTLE_STANDALONE, 90, "a standalone device: 90 s");
}

/* ---- unusual readings: hints for the round robin ---- */

Test(watch, a_reading_beyond_its_history_inside_the_band_is_a_hint_not_a_signal)
{
    /* Humidity at 45 with a uniform ±4 scatter: the band reaches about 70
     * below and 20 above. 36 is inside it, but lower than anything seen by
     * more than the spread: the first flank of a short excursion towards
     * the lower limit may look so. It spends nothing (no reason), sets
     * hint_at to the reading's time, keeps the first hint's time, and a
     * poll clears it. */
    const char *normal[] = {"45", "49", "41", "47", "43", "48", "42", "46"};
    struct watch w = {0};
    long long t = T0;
    for (int i = 0; i < 24; i++, t += 420)
        cr_assert_eq(take1(&w, t, normal[i % 8], NULL, NULL, NULL), 0u);
    cr_assert_eq(w.hint_at, 0, "ordinary scatter is no hint");
    cr_assert_eq(take1(&w, t, "36", NULL, NULL, NULL), 0u, "no signal");
    cr_assert_eq(w.ch[0].band, 0, "inside the band");
    cr_assert_eq(w.hint_at, t, "the reading's time");
    cr_assert_eq(take1(&w, t + 420, "33", NULL, NULL, NULL), 0u);
    cr_assert_eq(w.hint_at, t, "the first hint's time stays");
    watch_polled(&w);
    cr_assert_eq(w.hint_at, 0, "a poll answers it");
    cr_assert_eq(take1(&w, t + 840, "45", NULL, NULL, NULL), 0u);
    cr_assert_eq(w.hint_at, 0, "back among the others: nothing");
}

Test(watch, one_quantum_beyond_the_history_is_no_hint)
{
    /* A sensor reading in half degrees writes "-80.5" (a step of 0.1):
     * one half degree beyond what it showed is its noise, and the margin is
     * two of them; more is unusual. A history of one value again and again
     * has nothing to measure against. */
    const char *halves[] = {"-80.0", "-79.5", "-80.0", "-80.0", "-79.5", "-80.0"};
    struct watch w = {0};
    long long t = T0;
    for (int i = 0; i < 18; i++, t += 300)
        take1(&w, t, halves[i % 6], NULL, NULL, NULL);
    static const struct {
        const char *text;
        bool hint;
    } rows[] = {
        {"-80.5", false}, {"-81.0", false}, {"-81.5", true}, {"-78.5", false}, {"-78.0", true}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct watch next = w;
        take1(&next, t, rows[i].text, NULL, NULL, NULL);
        cr_assert_eq(next.hint_at != 0, rows[i].hint, "%s", rows[i].text);
    }

    struct watch flat = {0};
    for (int i = 0; i < 18; i++)
        take1(&flat, T0 + 300 * i, "5.0", NULL, NULL, NULL);
    take1(&flat, T0 + 300 * 18, "5.5", NULL, NULL, NULL);
    cr_assert_eq(flat.hint_at, 0, "one value again and again");
}

Test(watch, a_young_history_gives_hints_from_six_values)
{
    /* A remote unit seen for an hour (six ten-minute uploads) has no band
     * yet; a reading far beyond its six values is unusual all the same. */
    const char *six[] = {"44", "46", "43", "45", "47", "44"};
    struct watch w = {0}, five = {0};
    long long t = T0;
    for (int i = 0; i < 6; i++, t += 600) {
        take1(&w, t, six[i], NULL, NULL, NULL);
        if (i < 5)
            take1(&five, t, six[i], NULL, NULL, NULL);
    }
    take1(&five, t - 600, "57", NULL, NULL, NULL);
    cr_assert_eq(five.hint_at, 0, "five values are too few");
    take1(&w, t, "57", NULL, NULL, NULL);
    cr_assert_eq(w.hint_at, t);
}

Test(watch, a_hint_is_due_at_once_for_a_remote_unit_one_interval_later_for_a_standalone_one)
{
    struct watch w = {.hint_at = 1000000, .n_gaps = 3, .gaps = {420, 420, 420}};
    cr_assert_eq(watch_hint_due(&w, true), 1000000, "its base unit logged it already");
    cr_assert_eq(watch_hint_due(&w, false), 1000000 + 420, "the next reading");
    w.gaps[0] = w.gaps[1] = w.gaps[2] = 60;
    cr_assert_eq(watch_hint_due(&w, false), 1000000 + WATCH_SETTLE_STANDALONE, "at least");
    w.gaps[0] = w.gaps[1] = w.gaps[2] = 3600;
    cr_assert_eq(watch_hint_due(&w, false), 1000000 + 600, "at most ten minutes");
    w.hint_at = 0;
    cr_assert_eq(watch_hint_due(&w, false), 0, "no hint");
}

Test(watch, an_unusual_reading_halfway_to_a_known_limit_is_a_signal)
{
    /* Humidity at 45 (±4), its upper limit 70 known. 58 is still inside
     * the band (wide enough for the scatter), but unusual and nearer the
     * limit than the level: it may have crossed 70 between two uploads,
     * so it asks for a look. 36 is unusual on the side without a known
     * limit: a hint only. 55, short of the midpoint 57.5: a hint. */
    struct watch_limit upper = {.has_upper = true, .upper = 70.0};
    const char *normal[] = {"45", "49", "41", "47", "43", "48", "42", "46"};
    struct watch w = {0};
    long long t = T0;
    for (int i = 0; i < 24; i++, t += 420)
        take1(&w, t, normal[i % 8], &upper, NULL, NULL);
    struct watch low = w, short_of = w;
    cr_assert_eq(take1(&w, t, "58", &upper, NULL, NULL), (unsigned)WATCH_BAND);
    cr_assert_eq(w.ch[0].band, 0, "inside the band");
    cr_assert_eq(w.hint_at, 0, "a signal, not a hint");
    cr_assert_eq(take1(&low, t, "36", &upper, NULL, NULL), 0u);
    cr_assert_eq(low.hint_at, t);
    cr_assert_eq(take1(&short_of, t, "55", &upper, NULL, NULL), 0u);
    cr_assert_eq(short_of.hint_at, t);

    /* Its look found the alarm (the log's newest entry of ch1: `alarmed`):
     * the way back from halfway is the recovery's sign. Without an alarm
     * in the log, nothing. */
    struct watch quiet = w;
    w.ch[0].alarmed = true;
    cr_assert_eq(take1(&w, t + 420, "46", &upper, NULL, NULL), (unsigned)WATCH_BAND);
    cr_assert_eq(take1(&quiet, t + 420, "46", &upper, NULL, NULL), 0u);
}

/* ---- what a device's memory asks of the scheduler ---- */

Test(watch, a_signal_is_due_when_its_entry_is_logged_and_a_planned_look_is_a_guess_unless_silent)
{
    /* A standalone device's signal from a reading at T0 waits until the
     * reading is WATCH_SETTLE_STANDALONE old; a remote unit's is due at
     * once. Its news may be out (told); it is no guess. */
    struct watch w = {
        .pending = WATCH_LIMIT, .pending_since = T0 + 20, .pending_at = T0, .pending_told = true};
    struct watch_ask ask;
    watch_ask(&w, false, T0 + WATCH_SETTLE_STANDALONE - 1, &ask);
    cr_assert(!ask.look, "the platform has not logged it yet");
    cr_assert_eq(ask.since, T0 + 20);
    watch_ask(&w, false, T0 + WATCH_SETTLE_STANDALONE, &ask);
    cr_assert(ask.look && ask.told && !ask.guess);
    watch_ask(&w, true, T0, &ask);
    cr_assert(ask.look, "a remote unit's base unit logged it before the upload");

    /* A look planned for T0 + 300 (a look once more, a crossing foreseen):
     * later, looks_again; from its time, a look that is a guess, since its
     * time. A silent device's planned look waits for the communication
     * error, which the platform will log: it is no guess. */
    struct watch planned = {.recheck_at = T0 + 300};
    watch_ask(&planned, false, T0 + 299, &ask);
    cr_assert(!ask.look && ask.looks_again && ask.since == 0);
    watch_ask(&planned, false, T0 + 300, &ask);
    cr_assert(ask.look && ask.guess && !ask.looks_again);
    cr_assert_eq(ask.since, T0 + 300);
    planned.silent = true;
    watch_ask(&planned, false, T0 + 300, &ask);
    cr_assert(ask.look && !ask.guess, "silent: no guess");

    /* A signal pending beside a planned look: the signal's rules hold. */
    planned.silent = false;
    planned.pending = WATCH_BAND;
    planned.pending_since = planned.pending_at = T0 + 400;
    watch_ask(&planned, false, T0 + 400, &ask);
    cr_assert(!ask.look && !ask.guess);
    cr_assert_eq(ask.since, T0 + 400);

    /* A hint counts once it is due (watch_hint_due), and every field is
     * written whatever was in *out before. */
    struct watch hinted = {.hint_at = T0, .n_gaps = 3, .gaps = {600, 600, 600}};
    memset(&ask, 0xff, sizeof ask);
    watch_ask(&hinted, false, T0 + 599, &ask);
    cr_assert(!ask.look && !ask.told && !ask.guess && !ask.looks_again);
    cr_assert_eq(ask.since, 0);
    cr_assert_eq(ask.hint, 0, "a standalone device's hint waits for its next reading");
    watch_ask(&hinted, false, T0 + 600, &ask);
    cr_assert_eq(ask.hint, T0);
}
