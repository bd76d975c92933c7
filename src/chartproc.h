/* Drawing an event's chart in a process of its own, `wsrelay-chart`, so
 * that wsrelay-net never loads cairo, fontconfig and the twenty libraries
 * they bring: loading them cost every run several milliseconds, while a
 * chart is drawn only for an alarm mail (as git keeps libcurl out of its
 * main program and loads it only in git-remote-http).
 *
 * The helper is the program `wsrelay-chart` beside the running one (the
 * build directory, or the install's libexec directory where wsrelay-net
 * lives). It reads the event as the outbox keeps it (event_to_json, with
 * its trend) on its standard input and answers on its standard output
 * with the PNG (exit status 0) or one line saying why not (exit status
 * 1). chart_main.c is that program. */
#ifndef WSRELAY_CHARTPROC_H
#define WSRELAY_CHARTPROC_H

#include "event.h"
#include "util/err.h"

#include <signal.h>
#include <stddef.h>

#define CHARTPROC_NAME "wsrelay-chart"
/* The longest a chart may take: one is drawn in well under a second, and
 * a mail waits for its charts, so a helper that hangs must cost little. */
#define CHARTPROC_TIMEOUT_MS 10000

/* What bounds a chart besides CHARTPROC_TIMEOUT_MS: the run it is drawn
 * for. */
struct chartproc_limits {
    long long deadline_ms; /* CLOCK_MONOTONIC milliseconds: no chart after it; 0: none */
    const volatile sig_atomic_t *stop; /* NULL, or set by SIGTERM or SIGINT: stop at once */
};

/* The chart of `ev`'s trend, as chart_main.c draws it (chart.h), in *png
 * (*len bytes; the caller frees it), within CHARTPROC_TIMEOUT_MS and
 * `lim` (NULL: none). Fails, with *png NULL and the reason in `e`:
 *   -1 when this event's chart cannot be drawn: it has no trend, or the
 *      helper says why (its line);
 *   -2 when the helper itself fails, which the next chart would too: it
 *      is missing or cannot be started, it takes longer than its limit or
 *      the deadline, a stop signal came (it is killed in these two cases),
 *      it dies, or its answer is not a PNG of at most CHART_PNG_MAX bytes.
 * The helper runs in a process group of its own, killed when it ends or
 * fails, so nothing it starts outlives it; the limit and a stop signal
 * hold until it has ended, not only until it closes its output. */
int chartproc_png(unsigned char **png, size_t *len, const struct event *ev,
                  const struct chartproc_limits *lim, struct err *e);

/* The title chart_main.c gives the chart of `ev`: "NAME · CHANNEL"
 * (NAME the device's name, else its serial; CHANNEL the channel's name,
 * else "chN"). The caller frees it. */
char *chartproc_title(const struct event *ev);

#endif
