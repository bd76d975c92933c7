/* Leveled log lines on stderr. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

static enum log_level threshold = LOG_INFO;

void log_set_level(enum log_level level)
{
    threshold = level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if (level < threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wsrelay: %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
