/* Parsing "1h30m"-style durations. */
#include "util/duration.h"

#include <ctype.h>

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
        case '\0': unit = 1; break;
        case 's': unit = 1; p++; break;
        case 'm': unit = 60; p++; break;
        case 'h': unit = 3600; p++; break;
        case 'd': unit = 86400; p++; break;
        default: return -1;
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
