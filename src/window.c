/* Time windows ("Mon-Fri 08:00-18:00") parsed once and checked against the
 * wall clock of an IANA zone, which the C library computes from the system's
 * zone files by way of a temporarily set TZ. */
#include "window.h"

#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define WINDOW_MAX 32
#define MINUTES_PER_DAY (24 * 60)
#define ZONE_NAME_MAX 255

/* One window: the days it starts on (bit 0 = Monday) and the minutes of the
 * day [start, end); end < start crosses midnight into the next day. */
struct span {
    unsigned days;
    int start;
    int end;
};

struct window {
    struct span *spans;
    size_t count;
};

static const char *const day_names[7] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

struct parser {
    const char *text;
    const char *p;
    struct err *e;
};

static int fail(struct parser *ps, const char *at, const char *what)
{
    return err_set(ps->e, "column %zu: %s", (size_t)(at - ps->text) + 1, what);
}

static void skip_spaces(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t')
        ps->p++;
}

/* A three-letter day name; *out is 0 (Mon) .. 6 (Sun). */
static int parse_day(int *out, struct parser *ps)
{
    const char *at = ps->p;
    size_t n = 0;
    while (isalpha((unsigned char)at[n]))
        n++;
    if (n == 3) {
        for (int d = 0; d < 7; d++) {
            if (tolower((unsigned char)at[0]) == day_names[d][0] &&
                tolower((unsigned char)at[1]) == day_names[d][1] &&
                tolower((unsigned char)at[2]) == day_names[d][2]) {
                *out = d;
                ps->p += 3;
                return 0;
            }
        }
    }
    return fail(ps, at, "expected a day such as Mon");
}

/* DAY or DAY-DAY, joined by '+'. */
static int parse_days(unsigned *out, struct parser *ps)
{
    unsigned days = 0;
    for (;;) {
        int first, last;
        if (parse_day(&first, ps) < 0)
            return -1;
        last = first;
        if (*ps->p == '-') {
            ps->p++;
            if (parse_day(&last, ps) < 0)
                return -1;
        }
        for (int d = first;; d = (d + 1) % 7) {
            days |= 1u << d;
            if (d == last)
                break;
        }
        if (*ps->p != '+')
            break;
        ps->p++;
    }
    *out = days;
    return 0;
}

/* HH:MM, 00:00..24:00, as minutes of the day. */
static int parse_time(int *out, struct parser *ps)
{
    const char *s = ps->p;
    if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]) || s[2] != ':' ||
        !isdigit((unsigned char)s[3]) || !isdigit((unsigned char)s[4]) ||
        isdigit((unsigned char)s[5]))
        return fail(ps, s, "expected a time such as 08:00");
    int h = (s[0] - '0') * 10 + (s[1] - '0');
    int m = (s[3] - '0') * 10 + (s[4] - '0');
    if (h > 24 || m > 59 || (h == 24 && m != 0))
        return fail(ps, s, "time out of range (00:00 to 24:00)");
    *out = h * 60 + m;
    ps->p += 5;
    return 0;
}

static int parse_span(struct span *out, struct parser *ps)
{
    struct span sp = {0x7f, 0, MINUTES_PER_DAY};
    const char *at;
    if (isalpha((unsigned char)*ps->p)) {
        const char *after;
        if (parse_days(&sp.days, ps) < 0)
            return -1;
        after = ps->p;
        skip_spaces(ps);
        if (*ps->p == '\0' || *ps->p == ',')
            goto done;
        if (ps->p == after)
            return fail(ps, ps->p, "expected a space, ',' or the end after the days");
    } else if (!isdigit((unsigned char)*ps->p)) {
        return fail(ps, ps->p, "expected a day such as Mon or a time such as 08:00");
    }
    at = ps->p;
    if (parse_time(&sp.start, ps) < 0)
        return -1;
    if (sp.start == MINUTES_PER_DAY)
        return fail(ps, at, "a window cannot start at 24:00");
    if (*ps->p != '-')
        return fail(ps, ps->p, "expected '-' after the start time");
    ps->p++;
    if (parse_time(&sp.end, ps) < 0)
        return -1;
    if (sp.end == sp.start)
        return fail(ps, at, "empty window (start equals end)");
done:
    *out = sp;
    return 0;
}

int window_parse(struct window **out, const char *text, struct err *e)
{
    int rc = -1;
    struct parser ps = {text, text, e};
    struct window *w = xcalloc(1, sizeof *w);
    for (;;) {
        struct span sp;
        skip_spaces(&ps);
        if (w->count == WINDOW_MAX) {
            fail(&ps, ps.p, "more than 32 windows");
            goto out;
        }
        if (parse_span(&sp, &ps) < 0)
            goto out;
        w->spans = xreallocarray(w->spans, w->count + 1, sizeof *w->spans);
        w->spans[w->count++] = sp;
        skip_spaces(&ps);
        if (*ps.p == '\0')
            break;
        if (*ps.p != ',') {
            fail(&ps, ps.p, "expected ',' or the end of the text");
            goto out;
        }
        ps.p++;
    }
    *out = w;
    w = NULL;
    rc = 0;
out:
    window_free(w);
    return rc;
}

void window_free(struct window *w)
{
    if (!w)
        return;
    free(w->spans);
    free(w);
}

static bool zone_name_ok(const char *tz)
{
    size_t n = strlen(tz);
    if (n > ZONE_NAME_MAX || tz[0] == '/' || strstr(tz, ".."))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = tz[i];
        if (!isalnum((unsigned char)c) && c != '_' && c != '+' && c != '/' && c != '-')
            return false;
    }
    return true;
}

bool window_zone_known(const char *tz)
{
    bool known = false;
    const char *dir = getenv("TZDIR");
    char *path = NULL;
    char magic[4];
    struct stat st;
    FILE *f = NULL;
    if (!tz || !*tz)
        return true;
    if (!zone_name_ok(tz))
        goto out;
    path = xasprintf("%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        goto out;
    f = fopen(path, "rb");
    if (!f || fread(magic, 1, sizeof magic, f) != sizeof magic)
        goto out;
    known = memcmp(magic, "TZif", sizeof magic) == 0;
out:
    if (f)
        fclose(f);
    free(path);
    return known;
}

static bool span_contains(const struct span *sp, int wday, int minute)
{
    int yesterday = (wday + 6) % 7;
    if (sp->start < sp->end)
        return (sp->days >> wday & 1u) && minute >= sp->start && minute < sp->end;
    return ((sp->days >> wday & 1u) && minute >= sp->start) ||
           ((sp->days >> yesterday & 1u) && minute < sp->end);
}

/* localtime_r of `t` with TZ set to `tz` (NULL: as it is), TZ restored after. */
static int local_time(struct tm *out, const char *tz, time_t t, struct err *e)
{
    int rc = -1;
    char *saved = NULL, *value = NULL;
    bool switched = false;
    if (tz) {
        saved = xstrdup_or_null(getenv("TZ"));
        value = xasprintf(":%s", tz);
        if (setenv("TZ", value, 1) != 0) {
            err_set(e, "cannot set TZ");
            goto out;
        }
        switched = true;
    }
    tzset();
    if (!localtime_r(&t, out)) {
        err_set(e, "time %lld out of range", (long long)t);
        goto out;
    }
    rc = 0;
out:
    if (switched) {
        if (saved ? setenv("TZ", saved, 1) != 0 : unsetenv("TZ") != 0)
            rc = err_set(e, "cannot restore TZ");
        tzset();
    }
    free(value);
    free(saved);
    return rc;
}

int window_contains(int *out, const struct window *w, const char *tz, long long t, struct err *e)
{
    int rc = -1;
    struct tm tm;
    time_t tt = (time_t)t;
    int wday, minute, hit = 0;
    if ((long long)tt != t) {
        err_set(e, "time %lld out of range", t);
        goto out;
    }
    if (!window_zone_known(tz)) {
        err_set(e, "unknown timezone '%s'", tz);
        goto out;
    }
    if (local_time(&tm, tz && *tz ? tz : NULL, tt, e) < 0)
        goto out;
    wday = (tm.tm_wday + 6) % 7;
    minute = tm.tm_hour * 60 + tm.tm_min;
    for (size_t i = 0; i < w->count && !hit; i++)
        hit = span_contains(&w->spans[i], wday, minute);
    *out = hit;
    rc = 0;
out:
    return rc;
}
