/* window: parse errors with their columns, windows checked on the wall clock
 * of Asia/Tokyo (UTC+9, no DST) and Europe/Berlin across both 2026 DST
 * changes, unknown zones, and TZ left as it was found. */
#include "window.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unix time of a UTC date and time (days_from_civil, proleptic Gregorian). */
static long long utc(int y, int mo, int d, int h, int mi)
{
    y -= mo <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    long long days = era * 146097 + doe - 719468;
    return days * 86400 + h * 3600 + mi * 60;
}

static struct window *parse_ok(const char *text)
{
    struct window *w = NULL;
    struct err e = {{0}};
    cr_assert_eq(window_parse(&w, text, &e), 0, "'%s': %s", text, e.msg);
    cr_assert_not_null(w);
    return w;
}

static int in(const struct window *w, const char *tz, long long t)
{
    int hit = -1;
    struct err e = {{0}};
    cr_assert_eq(window_contains(&hit, w, tz, t, &e), 0, "%s", e.msg);
    cr_assert(hit == 0 || hit == 1);
    return hit;
}

Test(window, utc_helper_matches_date)
{
    cr_assert_eq(utc(2026, 3, 2, 0, 0), 1772409600LL); /* date -u -d 2026-03-02 +%s */
    cr_assert_eq(utc(2026, 3, 29, 0, 0), 1774742400LL);
    cr_assert_eq(utc(2026, 10, 25, 0, 0), 1792886400LL);
    cr_assert_eq(utc(1970, 1, 1, 0, 0), 0);
}

/* ---- parsing ---- */

static void parse_fails(const char *text, const char *msg)
{
    struct window *w = (struct window *)&w; /* must stay untouched */
    struct window *before = w;
    struct err e = {{0}};
    cr_assert_eq(window_parse(&w, text, &e), -1, "'%s' parsed", text);
    cr_assert_eq(w, before);
    cr_assert_str_eq(e.msg, msg, "'%s'", text);
}

Test(window, parse_errors_name_the_column)
{
    parse_fails("Mon-Fri 8:00-18:00", "column 9: expected a time such as 08:00");
    parse_fails("", "column 1: expected a day such as Mon or a time such as 08:00");
    parse_fails("   ", "column 4: expected a day such as Mon or a time such as 08:00");
    parse_fails("Mon-Fry", "column 5: expected a day such as Mon");
    parse_fails("Monday", "column 1: expected a day such as Mon");
    parse_fails("Sat,Sun+", "column 9: expected a day such as Mon");
    parse_fails("Mon-Fri 08:00", "column 14: expected '-' after the start time");
    parse_fails("Mon 25:00-26:00", "column 5: time out of range (00:00 to 24:00)");
    parse_fails("Mon 08:00-08:60", "column 11: time out of range (00:00 to 24:00)");
    parse_fails("Mon 08:00-24:01", "column 11: time out of range (00:00 to 24:00)");
    parse_fails("Mon 24:00-06:00", "column 5: a window cannot start at 24:00");
    parse_fails("Mon 08:00-08:00", "column 5: empty window (start equals end)");
    parse_fails("Mon-Fri 08:00-18:000", "column 15: expected a time such as 08:00");
    parse_fails("Mon 08:00-18:00,",
                "column 17: expected a day such as Mon or a time such as 08:00");
    parse_fails("Mon 08:00-18:00 x", "column 17: expected ',' or the end of the text");
    parse_fails("Mon08:00-09:00", "column 4: expected a space, ',' or the end after the days");
    parse_fails("Mon Tue", "column 5: expected a time such as 08:00");
    parse_fails("Sat,Sun 8", "column 9: expected a time such as 08:00");
}

Test(window, at_most_32_windows)
{
    char text[33 * 5 + 1] = "";
    for (int i = 0; i < 32; i++)
        strcat(text, i ? ",Mon" : "Mon");
    window_free(parse_ok(text)); /* 32 is fine */
    strcat(text, ",Mon");
    parse_fails(text, "column 129: more than 32 windows");
}

Test(window, accepted_forms)
{
    const char *ok[] = {"Mon-Fri 08:00-18:00",
                        "mon-FRI 08:00-18:00",
                        "08:00-18:00",
                        "Sat+Sun",
                        "Sat,Sun",
                        " Mon 08:00-09:00 , Tue ",
                        "Fri-Mon 22:00-06:00",
                        "Mon+Wed-Thu+Sat 00:00-24:00",
                        "Mon  08:00-09:00"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        window_free(parse_ok(ok[i]));
    window_free(NULL);
}

/* ---- Asia/Tokyo: UTC+9, no DST. 2026-03-02 is a Monday. ---- */

Test(window, weekdays_in_tokyo)
{
    struct window *w = parse_ok("Mon-Fri 08:00-18:00");
    const char *tz = "Asia/Tokyo";
    cr_assert_eq(in(w, tz, utc(2026, 3, 1, 23, 0)), 1);  /* Mon 08:00 JST (Sun in UTC) */
    cr_assert_eq(in(w, tz, utc(2026, 3, 1, 22, 59)), 0); /* Mon 07:59 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 2, 8, 59)), 1);  /* Mon 17:59 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 2, 9, 0)), 0);   /* Mon 18:00 JST: end excluded */
    cr_assert_eq(in(w, tz, utc(2026, 3, 6, 8, 0)), 1);   /* Fri 17:00 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 7, 1, 0)), 0);   /* Sat 10:00 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 6, 23, 30)), 0); /* Sat 08:30 JST (Fri in UTC) */
    /* The same instant in UTC is Sunday 23:00: outside there. */
    cr_assert_eq(in(w, "Etc/UTC", utc(2026, 3, 1, 23, 0)), 0);
    window_free(w);
}

Test(window, crossing_midnight)
{
    struct window *w = parse_ok("Fri 22:00-06:00");
    const char *tz = "Asia/Tokyo";
    cr_assert_eq(in(w, tz, utc(2026, 3, 6, 18, 0)), 1);  /* Sat 03:00 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 5, 18, 0)), 0);  /* Fri 03:00 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 6, 13, 0)), 1);  /* Fri 22:00 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 6, 12, 59)), 0); /* Fri 21:59 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 6, 20, 59)), 1); /* Sat 05:59 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 6, 21, 0)), 0);  /* Sat 06:00 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 7, 13, 0)), 0);  /* Sat 22:00 JST */
    window_free(w);
}

Test(window, wrapping_day_range)
{
    struct window *w = parse_ok("Fri-Mon");
    const char *tz = "Asia/Tokyo";
    /* 12:00 JST = 03:00 UTC, Mon 2026-03-02 .. Sun 2026-03-08 */
    int expect[7] = {1, 0, 0, 0, 1, 1, 1};
    for (int d = 0; d < 7; d++)
        cr_assert_eq(in(w, tz, utc(2026, 3, 2 + d, 3, 0)), expect[d], "day %d", d);
    cr_assert_eq(in(w, tz, utc(2026, 3, 2, 14, 59)), 1); /* Mon 23:59 JST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 2, 15, 0)), 0);  /* Tue 00:00 JST */
    window_free(w);
}

Test(window, several_windows)
{
    struct window *w = parse_ok("Mon-Fri 08:00-18:00, Sat+Sun 10:00-14:00");
    const char *tz = "Asia/Tokyo";
    cr_assert_eq(in(w, tz, utc(2026, 3, 7, 3, 0)), 1);  /* Sat 12:00 */
    cr_assert_eq(in(w, tz, utc(2026, 3, 7, 0, 0)), 0);  /* Sat 09:00 */
    cr_assert_eq(in(w, tz, utc(2026, 3, 8, 4, 59)), 1); /* Sun 13:59 */
    cr_assert_eq(in(w, tz, utc(2026, 3, 4, 0, 0)), 1);  /* Wed 09:00 */
    cr_assert_eq(in(w, tz, utc(2026, 3, 4, 10, 0)), 0); /* Wed 19:00 */
    window_free(w);
}

Test(window, end_at_24_00)
{
    struct window *w = parse_ok("Sun 20:00-24:00");
    struct window *all = parse_ok("00:00-24:00");
    const char *tz = "Asia/Tokyo";
    cr_assert_eq(in(w, tz, utc(2026, 3, 8, 14, 59)), 1); /* Sun 23:59 */
    cr_assert_eq(in(w, tz, utc(2026, 3, 8, 15, 0)), 0);  /* Mon 00:00 */
    cr_assert_eq(in(w, tz, utc(2026, 3, 8, 10, 59)), 0); /* Sun 19:59 */
    cr_assert_eq(in(w, tz, utc(2026, 3, 8, 11, 0)), 1);  /* Sun 20:00 */
    for (int h = 0; h < 24 * 7; h += 5)
        cr_assert_eq(in(all, tz, utc(2026, 3, 2, 0, 0) + h * 3600LL), 1);
    window_free(all);
    window_free(w);
}

/* ---- Europe/Berlin: CET (UTC+1) / CEST (UTC+2) ---- */

Test(window, berlin_offset_follows_the_season)
{
    struct window *w = parse_ok("Mon-Fri 08:00-18:00");
    cr_assert_eq(in(w, "Europe/Berlin", utc(2026, 7, 1, 6, 0)), 1);  /* Wed 08:00 CEST */
    cr_assert_eq(in(w, "Europe/Berlin", utc(2026, 7, 1, 5, 59)), 0); /* Wed 07:59 CEST */
    cr_assert_eq(in(w, "Europe/Berlin", utc(2026, 1, 7, 7, 0)), 1);  /* Wed 08:00 CET */
    cr_assert_eq(in(w, "Europe/Berlin", utc(2026, 1, 7, 6, 59)), 0); /* Wed 07:59 CET */
    window_free(w);
}

/* 2026-03-29 (Sun) 01:00 UTC: 02:00 CET becomes 03:00 CEST; 02:00-02:59 never
 * happens, so the window 01:30-02:30 lasts 30 minutes. */
Test(window, berlin_spring_forward)
{
    struct window *w = parse_ok("Sun 01:30-02:30");
    const char *tz = "Europe/Berlin";
    cr_assert_eq(in(w, tz, utc(2026, 3, 29, 0, 29)), 0); /* 01:29 CET */
    cr_assert_eq(in(w, tz, utc(2026, 3, 29, 0, 30)), 1); /* 01:30 CET */
    cr_assert_eq(in(w, tz, utc(2026, 3, 29, 0, 59)), 1); /* 01:59 CET */
    cr_assert_eq(in(w, tz, utc(2026, 3, 29, 1, 0)), 0);  /* 03:00 CEST */
    cr_assert_eq(in(w, tz, utc(2026, 3, 29, 1, 29)), 0); /* 03:29 CEST */
    window_free(w);
}

/* 2026-10-25 (Sun) 01:00 UTC: 03:00 CEST becomes 02:00 CET; 02:00-02:59
 * happens twice and the window 02:00-02:30 matches both times. */
Test(window, berlin_fall_back)
{
    struct window *w = parse_ok("Sun 02:00-02:30");
    const char *tz = "Europe/Berlin";
    cr_assert_eq(in(w, tz, utc(2026, 10, 24, 23, 59)), 0); /* 01:59 CEST */
    cr_assert_eq(in(w, tz, utc(2026, 10, 25, 0, 0)), 1);   /* 02:00 CEST */
    cr_assert_eq(in(w, tz, utc(2026, 10, 25, 0, 29)), 1);  /* 02:29 CEST */
    cr_assert_eq(in(w, tz, utc(2026, 10, 25, 0, 30)), 0);  /* 02:30 CEST */
    cr_assert_eq(in(w, tz, utc(2026, 10, 25, 1, 0)), 1);   /* 02:00 CET */
    cr_assert_eq(in(w, tz, utc(2026, 10, 25, 1, 29)), 1);  /* 02:29 CET */
    cr_assert_eq(in(w, tz, utc(2026, 10, 25, 1, 30)), 0);  /* 02:30 CET */
    window_free(w);
}

/* ---- zones ---- */

Test(window, unknown_zone_is_an_error)
{
    struct window *w = parse_ok("00:00-24:00");
    const char *bad[] = {"Mars/Olympus",  "Europe", "../etc/passwd", "/usr/share/zoneinfo/UTC",
                         "Europe/../UTC", "JST-9",  "Asia/Tokyo ",   "Europe\\Berlin",
                         "Europe/Berlin/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int hit = 7;
        struct err e = {{0}};
        cr_assert_not(window_zone_known(bad[i]), "%s", bad[i]);
        cr_assert_eq(window_contains(&hit, w, bad[i], 0, &e), -1, "%s", bad[i]);
        cr_assert_eq(hit, 7);
        cr_assert(strstr(e.msg, "unknown timezone") != NULL, "%s", e.msg);
    }
    cr_assert(window_zone_known("Asia/Tokyo"));
    cr_assert(window_zone_known("Europe/Berlin"));
    cr_assert(window_zone_known("Etc/GMT+5"));
    cr_assert(window_zone_known(NULL));
    cr_assert(window_zone_known(""));
    window_free(w);
}

Test(window, null_zone_uses_the_process_local_time)
{
    struct window *w = parse_ok("Mon 08:00-09:00");
    cr_assert_eq(setenv("TZ", ":Asia/Tokyo", 1), 0);
    tzset();
    cr_assert_eq(in(w, NULL, utc(2026, 3, 1, 23, 30)), 1); /* Mon 08:30 JST */
    cr_assert_eq(in(w, "", utc(2026, 3, 1, 23, 30)), 1);
    cr_assert_eq(setenv("TZ", ":Etc/UTC", 1), 0);
    tzset();
    cr_assert_eq(in(w, NULL, utc(2026, 3, 1, 23, 30)), 0); /* Sun 23:30 UTC */
    window_free(w);
}

/* ---- TZ restored ---- */

static void call_both(const struct window *w)
{
    int hit;
    struct err e = {{0}};
    cr_assert_eq(window_contains(&hit, w, "Asia/Tokyo", 0, &e), 0, "%s", e.msg);
    cr_assert_eq(window_contains(&hit, w, "Mars/Olympus", 0, &e), -1);
}

Test(window, tz_restored_when_unset)
{
    struct window *w = parse_ok("Mon");
    struct tm before, after;
    time_t t = 1772409600;
    cr_assert_eq(unsetenv("TZ"), 0);
    tzset();
    localtime_r(&t, &before);
    call_both(w);
    cr_assert_null(getenv("TZ"));
    localtime_r(&t, &after);
    cr_assert_eq(before.tm_hour, after.tm_hour);
    cr_assert_eq(before.tm_gmtoff, after.tm_gmtoff);
    window_free(w);
}

Test(window, tz_restored_when_set)
{
    struct window *w = parse_ok("Mon");
    struct tm tm;
    time_t t = 0;
    cr_assert_eq(setenv("TZ", "America/New_York", 1), 0);
    tzset();
    call_both(w);
    cr_assert_str_eq(getenv("TZ"), "America/New_York");
    localtime_r(&t, &tm);
    cr_assert_eq(tm.tm_hour, 19); /* 1970-01-01 00:00 UTC = 19:00 EST */
    cr_assert_eq(setenv("TZ", "", 1), 0);
    call_both(w);
    cr_assert_str_eq(getenv("TZ"), "");
    window_free(w);
}
