/* Parsing "1h30m"-style durations. */
#include "util/duration.h"

#include <ctype.h>
#include <stdio.h>

int duration_parse(long *out, const char *text)
{
    const long max = 10L * 366 * 86400;
    long total = 0;
    const char *p = text;
    if (!*p)
        return -1;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return -1;
        long n = 0;
        while (isdigit((unsigned char)*p)) {
            n = n * 10 + (*p++ - '0');
            if (n > max)
                return -1;
        }
        long unit;
        switch (*p) {
        case '\0':
            unit = 1;
            break;
        case 's':
            unit = 1;
            p++;
            break;
        case 'm':
            unit = 60;
            p++;
            break;
        case 'h':
            unit = 3600;
            p++;
            break;
        case 'd':
            unit = 86400;
            p++;
            break;
        default:
            return -1;
        }
        if (n > (max - total) / unit)
            return -1;
        total += n * unit;
        if (unit == 1 && *p)
            return -1; /* "10s5m": seconds must come last */
    }
    *out = total;
    return 0;
}

void duration_format(char *out, unsigned long size, long seconds)
{
    static const struct {
        long unit;
        char name;
    } units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
    size_t len = 0;
    if (size == 0)
        return;
    out[0] = '\0';
    if (seconds <= 0) {
        snprintf(out, size, "0s");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0] && len < size; i++) {
        long n = seconds / units[i].unit;
        seconds %= units[i].unit;
        if (n == 0)
            continue;
        int w = snprintf(out + len, size - len, "%ld%c", n, units[i].name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

void duration_format_age(char *out, unsigned long size, long long seconds)
{
    long long minutes = seconds > 0 ? seconds / 60 : 0;
    long long big, small;
    const char *big_unit, *small_unit;
    if (minutes < 120) {
        snprintf(out, size, "%lld min", minutes);
        return;
    }
    if (minutes < 2 * 24 * 60) {
        big = minutes / 60, small = minutes % 60;
        big_unit = "h", small_unit = "min";
    } else {
        big = minutes / (24 * 60), small = minutes % (24 * 60) / 60;
        big_unit = "d", small_unit = "h";
    }
    if (small)
        snprintf(out, size, "%lld %s %lld %s", big, big_unit, small, small_unit);
    else
        snprintf(out, size, "%lld %s", big, big_unit);
}
