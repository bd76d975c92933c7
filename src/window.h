/* Time windows for routing rules: "Mon-Fri 08:00-18:00, Sat+Sun 10:00-14:00",
 * evaluated on the wall clock of an IANA timezone (daylight saving comes from
 * the system's zone files).
 *
 * Grammar: windows separated by ','; each is "DAYS HH:MM-HH:MM", "HH:MM-HH:MM"
 * (every day) or "DAYS" (all day). DAYS is one or more items joined by '+',
 * each a day (Mon Tue Wed Thu Fri Sat Sun, case-insensitive) or a range
 * "Mon-Fri" that may wrap ("Fri-Mon" = Fri Sat Sun Mon). Times are two-digit
 * HH:MM from 00:00 to 24:00 (24:00 only as an end). The start is inclusive,
 * the end exclusive. An end before the start crosses midnight: "Fri
 * 22:00-06:00" runs from Friday 22:00 to Saturday 06:00. Equal start and end
 * is an error. Spaces are allowed around ',' and at both ends.
 *
 * Wall-clock semantics across DST: a window holds the instants whose local
 * time falls inside it. A local time skipped by spring-forward never occurs,
 * so that part of a window is simply shorter; a local time repeated by
 * fall-back occurs twice and both instants match. */
#ifndef WSRELAY_WINDOW_H
#define WSRELAY_WINDOW_H

#include "util/err.h"

#include <stdbool.h>

/* A parsed set of windows (opaque). */
struct window;

/* Parses `text` into a new set of windows that the caller frees with
 * window_free. On error returns -1, leaves *out untouched and writes a message
 * naming the 1-based column of `text` into `e`, e.g. "column 9: expected a
 * time such as 08:00". At most 32 windows. */
int window_parse(struct window **out, const char *text, struct err *e);

/* Frees `w`; NULL is fine. */
void window_free(struct window *w);

/* Sets *out to 1 when the Unix time `t` falls in one of the windows of `w`
 * on the wall clock of zone `tz` (an IANA name such as "Europe/Berlin"; NULL
 * or "" = the process's local time: TZ if set, else the system's), else 0.
 * Returns -1 with a message in `e` (and *out untouched) when `tz` is not a
 * zone window_zone_known accepts, or `t` cannot be converted.
 *
 * Not thread-safe: it sets the TZ environment variable and calls tzset()
 * for the duration of the call, then restores TZ (including "unset") and
 * calls tzset() again. */
int window_contains(int *out, const struct window *w, const char *tz, long long t, struct err *e);

/* Whether `tz` names a zone file the system has: a name made of
 * [A-Za-z0-9_+/-], without "..", not starting with '/', that is a TZif file
 * under $TZDIR (when set and not empty) or /usr/share/zoneinfo. NULL and ""
 * (the local time) are known. Needed because glibc quietly treats an unknown
 * zone as UTC. */
bool window_zone_known(const char *tz);

#endif
