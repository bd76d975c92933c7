/* Intake of alert-log replies, for polling (poll.c) and the current
 * readings (readings.c): what a reply tells of its login ID, and the new
 * entries of a device's alert log: routed by the rules into the outbox,
 * gaps reported, limits learnt, signals answered. Part of the run's wing
 * (tick.h); no file outside src/run/ includes this. */
#ifndef WSRELAY_RUN_INTAKE_H
#define WSRELAY_RUN_INTAKE_H

#include "config.h"
#include "event.h"
#include "platform.h"
#include "readings_memory.h"
#include "run/tick.h"
#include "state.h"

#include <stdbool.h>

/* One device of a login ID's pool (poll.c): its account, the client its
 * calls go through (borrowed) and its entry of the state's device list
 * (owned by the pool; borrowed by whoever takes its replies). */
struct pooled {
    const struct account_conf *a;
    struct platform *p;
    struct state_device dev; /* owned */
};

/* Notes what a reply tells about the budget of `login` for `op` (the
 * rate-limit headers, a 429) in the state's ledger, and logs a block the
 * platform asked for. Cannot fail. */
void note_reply(struct tick *t, const char *login, enum platform_op op,
                const struct platform_reply *r);

/* Records how a call of `login` went, for `wsrelay status`: `why` NULL
 * for a success, else a failure shown as "WHAT: WHY" (both free of
 * secrets, like the log lines). Copies what it keeps. */
void note_result(struct tick *t, const char *login, long status, const char *what, const char *why);

/* The hint a log line adds to the platform's HTTP `status`: for a 401,
 * which settings to check; else "". A static string. */
const char *hint_for(long status);

/* Fills out[0..WATCH_CHANNELS) with the limits of each channel of
 * `serial` (index channel - 1): those of the account's configuration win
 * over those the alert texts taught. Cannot fail. */
void limits_of(const struct tick *t, const struct account_conf *a, const char *serial,
               struct watch_limit *out);

/* Queues a copy of the event `parsed` (borrowed) for the receivers its
 * rules name, each copy carrying the rule's name, severity and what its
 * throttle held back; the device's list entry (pd->dev) fills in what the
 * alert log leaves out, and an early warning that announced it is named.
 * An event that joins an incident (run/incidents.h) is routed nowhere and
 * counts as told; one that opens or resolves an incident is queued as the
 * incident's message. Counts the outcome in the metrics and logs an event
 * sent nowhere. Returns whether it goes to someone now (not dropped, held
 * back or sent nowhere), or joined an incident. */
bool route_event(struct tick *t, const struct pooled *pd, const struct event *parsed);

/* Takes the reply of an alert-log call of the device pd (borrowed): new
 * entries routed and marked seen, a gap reported, limits learnt, the
 * device's signal answered, its refusal (400) counted with a pause, and
 * the login's health and ledger noted. Every problem is logged and counted
 * in t->failures. Returns false when no further call of this login can
 * succeed now (bad credentials, budget exhausted). */
bool take_poll(struct tick *t, const struct pooled *pd, const struct platform_request *rq);

#endif
