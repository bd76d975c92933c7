/* Leveled log lines on stderr, with syslog priorities when stderr is the
 * journal. */
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static enum log_level threshold = LOG_INFO;

void log_set_level(enum log_level level)
{
    threshold = level;
}

/* Reads a decimal number at *p up to `end` (a character that must follow
 * it); false for anything else: no digits, a sign, an overflow. */
static bool read_number(unsigned long long *out, const char **p, char end)
{
    const char *s = *p;
    char *stop;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &stop, 10);
    if (errno || *stop != end)
        return false;
    *out = v;
    *p = stop;
    return true;
}

/* Whether stderr is the stream systemd connected to the journal: it sets
 * $JOURNAL_STREAM to "DEV:INO" of that stream. Asked at each line, so a
 * stderr redirected elsewhere (a child, a shell) is never taken for it. */
static bool stderr_is_journal(void)
{
    const char *value = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (!value || !read_number(&dev, &value, ':'))
        return false;
    value++;
    if (!read_number(&ino, &value, '\0'))
        return false;
    if (fstat(STDERR_FILENO, &st) != 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* One line, written with one call so that lines of two processes sharing
 * stderr (an email session's child) never mix. */
static void write_line(enum log_level level, bool named, const char *fmt, va_list ap)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    static const int priorities[] = {7, 6, 4, 3};
    char prio[8] = "", small[1024];
    /* The journal names the program itself ("wsrelay[PID]: "): a name of
     * ours after it would read "wsrelay: wsrelay: …". */
    const char *name = "wsrelay: ";
    if (stderr_is_journal()) {
        snprintf(prio, sizeof prio, "<%d>", priorities[level]);
        name = "";
    }
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    char *text = small;
    if (len >= (int)sizeof small) {
        text = xmalloc((size_t)len + 1);
        vsnprintf(text, (size_t)len + 1, fmt, again);
    }
    va_end(again);
    fprintf(stderr, "%s%s%s%s%s\n", prio, name, named ? names[level] : "", named ? ": " : "",
            len < 0 ? "" : text);
    if (text != small)
        free(text);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level < threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    write_line(level, true, fmt, ap);
    va_end(ap);
}

void log_plain(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_line(level, false, fmt, ap);
    va_end(ap);
}
