/* Incidents at work (incident.h): the run's part. An event routed by
 * intake.c first meets the incidents of its device and channel (it joins
 * one, opens one or resolves one), and after polling each open incident is
 * tended: its live reading and peak, its reminders and escalations, the
 * end of the silence it opened under, the bound of max_open. An
 * acknowledgement, whatever its source, goes through incident_ack. With
 * `incidents: {enabled: false}` no event opens or joins one: every entry
 * is relayed as it comes; incidents opened before are still tended.
 *
 * Every message an incident sends is queued in the outbox and its line
 * noted in the incident's timeline in the same change of the state, so
 * that the save that keeps one keeps the other: a message is recorded
 * before it is sent, and a crash repeats at most the one in flight. */
#ifndef WSRELAY_RUN_INCIDENTS_H
#define WSRELAY_RUN_INCIDENTS_H

#include "event.h"
#include "notify/notify.h"
#include "rules.h"
#include "run/tick.h"
#include "state.h"
#include "util/err.h"

#include <stdbool.h>

/* How long an ended incident stays in the state: what the platform logs
 * late about its excursion (the alarm after the readings' way back, the
 * recovery after it) joins it for this long. */
#define INCIDENT_KEEP (24 * 3600)

/* `ev` (complete: the device's names filled in) joins an incident of its
 * key: an alarm while one is open, or that happened before the recovery
 * that resolved one; a recovery of one that a recovery already resolved.
 * Notes the line in its timeline and returns true: the event pages nobody
 * (the caller marks it seen and routes nothing). False: the caller routes
 * it (incidents_route). */
bool incidents_join(struct tick *t, const struct event *ev);

/* After `ev` was routed into `rt`: an alarm routed to someone opens an
 * incident and queues its first notice to the route's receivers (or, under
 * a silence, to nobody yet); a recovery of an open incident resolves it and
 * queues the resolution, with its record, to every receiver told and to
 * those its own route names. Returns true when it queued (or held back on
 * purpose) what the route names; false for an event that is no incident's
 * (the caller queues it as before). */
bool incidents_route(struct tick *t, const struct event *ev, const struct route *rt);

/* The step after polling (not in a dry run): each open incident takes its
 * channel's latest reading (live and peak), closes when open longer than
 * incidents.max_open, pages when the silence it opened under has ended,
 * and, paged and not acknowledged, escalates to the receivers of each
 * `escalate:` step that is due and repeats to all told every `repeat:`,
 * inside its rule's `when:` windows. Ended incidents older than
 * INCIDENT_KEEP are forgotten, and the incident log's month files older
 * than incidents.keep removed (a failure to is a warning, not a failed
 * run). Never makes a platform call. */
void incidents_tend(struct tick *t);

/* The earliest time at which an open incident has something due with
 * time alone (its escalation, its reminder, its bound; paging once its
 * silence ends), which a quiet run must not skip; 0 when none is. An
 * incident that a receiver whose service gives acknowledgements was told
 * of, and that nobody acknowledged, is due now: each run asks that
 * service (incidents_collect). */
long long incidents_due(const struct tick *t);

/* After delivery (not in a dry run): each receiver whose service gives
 * acknowledgements (notify.h: collect; a mailbox, a chat thread, a
 * receipt) is asked, within its timeout and the run's time, about the
 * open incidents it was told of, and each acknowledgement it holds goes
 * through incident_ack. A service that fails or hangs is logged and asked
 * again at the next run: it costs no alert. Returns true when an
 * acknowledgement was queued (the caller saves and delivers it in this
 * run). */
bool incidents_collect(struct tick *t, const struct notify_env *env);

/* The one path of an acknowledgement: incident `id`, open and not yet
 * acknowledged, is acknowledged by `by` (a name, a mail address, a Slack
 * user) at `now` with `note` (NULL: none); the acknowledgement is queued
 * to every receiver told and noted in its timeline. Its reminders and
 * escalations stop. -1 with the reason in `e` (no such incident, ended,
 * already acknowledged: by whom and when). The caller saves. */
int incident_ack(struct state *st, unsigned long id, const char *by, const char *note,
                 long long now, struct err *e);

#endif
