/* Fuzzes the time-window parser. Checks that an error names a column inside
 * the text (or just past it), and that a parsed set answers the same for the
 * same instant in UTC twice and never changes TZ. */
#include "fuzz.h"
#include "util/xalloc.h"
#include "window.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct window *w = NULL;
    struct err e = {{0}};
    char *text = xstrndup((const char *)data, size);
    if (window_parse(&w, text, &e) < 0) {
        unsigned long col = 0;
        if (strncmp(e.msg, "column ", 7) != 0)
            abort();
        col = strtoul(e.msg + 7, NULL, 10);
        if (col < 1 || col > strlen(text) + 1)
            abort();
    } else {
        const char *tz_before = getenv("TZ");
        for (long long t = 1772409600LL; t < 1772409600LL + 8 * 86400; t += 3 * 3600 + 7 * 60) {
            int a = -1, b = -1;
            if (window_contains(&a, w, "Etc/UTC", t, &e) < 0 ||
                window_contains(&b, w, "Etc/UTC", t, &e) < 0 || a != b || (a != 0 && a != 1))
                abort();
        }
        if (getenv("TZ") != tz_before &&
            (!tz_before || !getenv("TZ") || strcmp(tz_before, getenv("TZ")) != 0))
            abort();
    }
    window_free(w);
    free(text);
    return 0;
}
