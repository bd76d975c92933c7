/* Incidents: an alarm handled from its first notice to its end.
 *
 * An alarm of a device (a limit crossed, a sensor error, a low battery, a
 * lost link) opens an incident for its device and channel (a kind without
 * a channel: its device and kind), the incident's key. What follows for
 * the same excursion joins it and pages nobody: the platform's alarm after
 * wsrelay's early warning, further alarms of the channel before it
 * recovers, the platform's recovery after the readings' way back already
 * resolved it. The first recovery, of the alert log or of the readings,
 * resolves it; an incident open longer than `incidents: max_open` closes
 * with a note. While it is open and nobody acknowledged it, the rule that
 * opened it repeats it (`repeat:`) and escalates it (`escalate:`).
 *
 * This module is pure: what an event is to incidents, the record of one
 * incident and its JSON (kept in the state, state/incidents.c), and the
 * messages an incident sends (a copy of its first event with the
 * incident's snapshot and words). Deciding and queueing is the run's
 * (run/incidents.c). */
#ifndef WSRELAY_INCIDENT_H
#define WSRELAY_INCIDENT_H

#include "event.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum incident_role {
    INCIDENT_NONE,    /* a one-shot message: no recovery ends it (gap, relay, other) */
    INCIDENT_OPENS,   /* alarm, sensor-error, battery, communication */
    INCIDENT_RESOLVES /* recovered */
};

/* What `ev` is to incidents, from its kind and state. */
enum incident_role incident_role_of(const struct event *ev);

/* The incident key of `ev`: "SERIAL/chN" for channel N's alert-log
 * entries and early warnings alike, "SERIAL/KIND" for battery-level and
 * communication-status; a new string the caller frees. NULL for a role of
 * INCIDENT_NONE. */
char *incident_key(const struct event *ev);

enum incident_state {
    INCIDENT_OPEN,     /* not yet over */
    INCIDENT_RESOLVED, /* a recovery ended it */
    INCIDENT_CLOSED,   /* open longer than max_open: closed with a note */
};

/* "open", "resolved", "closed". */
const char *incident_state_name(enum incident_state s);

/* The messages of an incident, as `incident.notice` names them. */
enum incident_notice {
    NOTICE_OPENED,       /* its first notice */
    NOTICE_REMINDER,     /* still open, nobody acknowledged */
    NOTICE_ESCALATION,   /* told to more receivers */
    NOTICE_ACKNOWLEDGED, /* someone has it */
    NOTICE_RESOLVED,     /* recovered, with its record */
    NOTICE_CLOSED,       /* open too long, closed with a note */
};

/* "opened", "reminder", "escalation", "acknowledged", "resolved", "closed". */
const char *incident_notice_name(enum incident_notice n);

struct incident {
    unsigned long id; /* short, stable: a counter of the state from 1 */
    char *key;        /* incident_key of its first event */
    enum incident_state state;
    struct event first;  /* the event that opened it, as routed (its rule and severity) */
    long long opened_at; /* wsrelay's clock when it opened */
    long long ended;     /* unixtime of the recovery (or the clock, when closed); 0 while open */
    long long ended_at;  /* wsrelay's clock when it ended; 0 while open */
    char **told;         /* receivers told of it, first notice then escalations */
    size_t n_told;
    bool paged;            /* its first notice was queued (false: opened under a silence) */
    unsigned long silence; /* the silence it opened under; 0: none */
    int step;              /* escalation steps taken */
    int reminders;         /* reminders queued */
    long long last_page;   /* wsrelay's clock of its last page (first notice or reminder) */
    long long acked_at;    /* 0: not acknowledged */
    char *acked_by, *ack_note;
    int direction; /* +1 above an upper limit, -1 below a lower one, 0 not known */
    bool has_peak; /* the farthest reading beyond the limit seen while open */
    double peak;
    long long peak_at; /* its unixtime */
    bool has_live;     /* the latest reading of its channel */
    double live;
    long long live_at;
    unsigned long seq;        /* lines of its timeline written so far (incident log) */
    struct json_object *refs; /* per receiver, what its service gave back for the incident
                                 (Slack's ts, Pushover's receipt): {"NAME": {...}}; owned,
                                 NULL: none */
};

void incident_clear(struct incident *inc);
void incident_copy(struct incident *out, const struct incident *inc);

/* Adds `receiver` to the receivers told, unless it is there; returns
 * whether it was added. */
bool incident_tell(struct incident *inc, const char *receiver);

/* The incident as the state keeps it: a new object. */
struct json_object *incident_to_json(const struct incident *inc);

/* The reverse; `out` is filled and owned by the caller (incident_clear).
 * Fails naming the member that is missing or of another type. */
int incident_from_json(struct incident *out, const struct json_object *obj, struct err *e);

/* A number as an alert text or a reading writes it, with its unit after
 * it ("-68.1°C"): its value. False when it does not start with one. */
bool incident_number(const char *text, double *out);

/* The reading `v` at `at` of its channel while `inc` is open: keeps it as
 * the live reading, and as the peak when it lies farther beyond the limit
 * than the peak so far. */
void incident_note_reading(struct incident *inc, double v, long long at);

/* The message `notice` of `inc` at `now`, for receivers: a copy of its
 * first event (for NOTICE_RESOLVED: of `cause`, the recovery, when not
 * NULL) whose `incident` member is the snapshot (incident_snapshot) and
 * whose text says what the notice is in words, for every template, a
 * user's own included: the first notice keeps the platform's text; a
 * reminder or an escalation says how long it is open and how it is now
 * ("Reminder 2: incident 12 open for 34 min, not acknowledged. Now
 * -68.1°C at 03:34 (limit -75.0°C, peak -66.0°C at 03:20). …"); an
 * acknowledgement who has it; a resolution adds the excursion's record to
 * the recovery's text. An acknowledgement and a closing are of state
 * "other". The caller owns it (event_clear). */
void incident_message(struct event *out, const struct incident *inc, enum incident_notice notice,
                      const struct event *cause, long long now);

/* What templates and webhooks see of `inc` for a notice at `now`: id,
 * key, state, notice and one is_NOTICE true, opened (unixtime) and
 * opened_time (the device's local time), age (seconds) and age_text,
 * reminder (its number), step, acknowledged (bool), acknowledged_by,
 * acknowledged_time, acknowledged_note, peak (with the unit) and
 * peak_time, live (with the unit) and live_time, duration (seconds from
 * the alarm to the recovery, or to now) and duration_text, receivers
 * (told). A new object. */
struct json_object *incident_snapshot(const struct incident *inc, enum incident_notice notice,
                                      long long now);

/* "34 min", "2 h 05 min", "3 d 4 h": a duration for people, in `out` of
 * INCIDENT_DURATION_MAX bytes (room for any long long). */
#define INCIDENT_DURATION_MAX 48
void incident_duration_text(char *out, size_t size, long long seconds);

#endif
