/* Error messages that name their input. */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(struct err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int err_prefix(struct err *e, const char *fmt, ...)
{
    if (e) {
        char old[ERR_MAX];
        memcpy(old, e->msg, sizeof old);
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        /* Append ": OLD", cutting what does not fit. */
        size_t len = n < 0 ? 0 : strlen(e->msg);
        const char *parts[] = {": ", old};
        for (size_t i = 0; i < 2; i++) {
            size_t add = strlen(parts[i]);
            if (add > sizeof e->msg - 1 - len)
                add = sizeof e->msg - 1 - len;
            memcpy(e->msg + len, parts[i], add);
            len += add;
        }
        e->msg[len] = '\0';
    }
    return -1;
}

void err_clear(struct err *e)
{
    if (e)
        e->msg[0] = '\0';
}
