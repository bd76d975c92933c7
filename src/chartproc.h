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

#include <stddef.h>

#define CHARTPROC_NAME "wsrelay-chart"
#define CHARTPROC_TIMEOUT_MS 30000 /* the longest a chart may take */

/* The chart of `ev`'s trend, as chart_main.c draws it (chart.h), in *png
 * (*len bytes; the caller frees it). Fails, with *png NULL, when the event
 * has no trend, when the helper is missing or cannot be started, when it
 * says why it could not draw the chart (its line in `e`), when it takes
 * longer than CHARTPROC_TIMEOUT_MS (it is killed) and when its answer is
 * not a PNG of at most CHART_PNG_MAX bytes. */
int chartproc_png(unsigned char **png, size_t *len, const struct event *ev, struct err *e);

/* The title chart_main.c gives the chart of `ev`: "NAME · CHANNEL"
 * (NAME the device's name, else its serial; CHANNEL the channel's name,
 * else "chN"). The caller frees it. */
char *chartproc_title(const struct event *ev);

#endif
