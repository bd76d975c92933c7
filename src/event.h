/* Alert-log entries turned into events.
 *
 * One alert-log entry can carry several kinds at the same unixtime (ch1 and
 * battery-level, say); each present member becomes its own event. An event
 * is identified by serial + unixtime + kind: that triple is the dedup key.
 * The alert text is kept as the platform wrote it, only made safe (see
 * event_parse_alert_log); what it says (state, value, limit) is read by
 * alerttext.h and kept beside it. */
#ifndef WSRELAY_EVENT_H
#define WSRELAY_EVENT_H

#include "series.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* The alert-log members that carry events, in the order they are emitted. */
extern const char *const event_kinds[];
extern const size_t event_n_kinds;

/* The recent readings of an event's channel, for the trend in its
 * messages (recent.c fetches them once, before the first delivery): one
 * channel of the device's graph data over [since, until]. */
struct event_trend {
    long long since, until;
    struct series series; /* one channel, channels[0]; its points lie in the span */
    bool has_upper, has_lower;
    double upper, lower; /* the channel's alarm limits when known (configured or learnt) */
};

struct event {
    char *account; /* the config account's name */
    char *serial;  /* remote unit (or standalone device) */
    char *model;   /* may be "" when the platform leaves it out */
    char *name;    /* device name, UTF-8, may be "" */
    char *base_serial;
    char *base_model;
    char *base_name;
    long long unixtime;
    char *kind;              /* one of event_kinds */
    char *text;              /* the alert text as the platform wrote it, made safe */
    char *state;             /* what the text says, an alert_state_name ("alarm", "recovered",
                                ...); never NULL in events parsed or read back from JSON */
    char *value;             /* the measured value as the text writes it ("-70.2°C"), or NULL */
    char *limit;             /* the limit as the text writes it ("-75.0°C"), or NULL */
    long long recovers;      /* for a recovered event, the unixtime of the alarm it ends; else 0 */
    int channel;             /* for kind "reading" (an early warning from the current
                                readings, see readings_memory.h), its channel number; else 0 */
    long long early_warning; /* for an alert-log alarm that an early warning of the same
                                channel announced: that warning's unixtime; else 0 */
    char *channel_name;      /* for chN, the channel's name when the log lists it; else NULL */
    char *channel_unit;      /* likewise */
    int utc_offset;          /* minutes east of UTC of the device's local time */
    char *group;             /* the device's group from discovery; NULL when unknown */
    /* What a routing rule decided for this event (one outbox item). */
    char *rule;           /* the name of the rule that routed it; NULL: no rule (no rules, or
                             default_receivers) */
    char *severity;       /* that rule's severity label; NULL when none */
    long held;            /* events of this device+kind that the rule's throttle held back
                             since the last notification; 0: none */
    long long held_since; /* unixtime of the first of those; 0 when held is 0 */
    /* For an event of kind "relay" (wsrelay about its own health, see
     * selfcheck.h): the condition it reports, e.g. "login-refused",
     * "login-refused-cleared", "state-corrupt"; NULL for any other event. */
    char *condition;
    struct event_trend *trend; /* owned; NULL when no readings were fetched */
    /* For a message about an incident (incident.h): what templates and
     * webhooks see of it as the message was queued (incident_snapshot),
     * an object; NULL for an event outside an incident. A reference the
     * event holds: never changed once set, so copies share it. */
    struct json_object *incident;
};

struct event_list {
    struct event *items;
    size_t n;
    size_t entries;   /* alert-log entries in the response (up to 20), usable or not */
    size_t skipped;   /* entries skipped for want of a usable unixtime (logged) */
    long long oldest; /* smallest unixtime among them; 0 when there are none */
};

/* Turns a Get Alert Logs body into events of `account`. Accepts values as
 * JSON strings or numbers and member names in kebab-case or snake_case;
 * ignores unknown members; a missing optional member is not an error.
 * Events come sorted by unixtime, then in event_kinds order, whatever the
 * order of the entries. An entry without a usable unixtime is skipped with
 * a warning and counted in `skipped`.
 *
 * Each event's text is classified (alert_classify) into state, value and
 * limit. A recovered event's `recovers` is the unixtime of the latest
 * earlier event of the same serial and kind in this body whose state is
 * alarm, sensor-error, battery or communication (what a recovery can end),
 * looking back past "other" events; it stays 0 when there is none, when an
 * earlier recovery of that kind comes first (that alarm has already ended)
 * or when the alarm has left the device's 20-entry log. Events at the same
 * unixtime never link.
 *
 * Nothing of the body reaches an event as it came. The remote serial must
 * pass serial.h's rule; a base serial that does not is logged and the
 * device taken as its own base unit. Every string is made valid UTF-8 (a
 * byte that is not UTF-8 becomes U+FFFD) and bounded (platform.h):
 * names, models, channel names and units to one line of
 * PLATFORM_NAME_MAX bytes (control characters become spaces); an alert
 * text to PLATFORM_TEXT_MAX bytes, keeping its tabs and line feeds, every
 * other control character becoming a space. A "\u0000" is read as the
 * character it is, not as the end of the text, and becomes a space too.
 *
 * Fails only when the body is not an
 * object, has no remote serial or one that is not a serial, or has an
 * `alert-logs` that is not an array. On success `out` (zeroed by the caller) is filled; free it
 * with event_list_free. */
int event_parse_alert_log(struct event_list *out, const struct json_object *body,
                          const char *account, struct err *e);

void event_list_free(struct event_list *l);
void event_clear(struct event *ev);
void event_copy(struct event *out, const struct event *ev);

/* The channel of an event that has one: N for kind chN (1 to 4), the
 * early warning's channel for kind "reading"; else 0. */
int event_channel(const struct event *ev);

/* A trend keeps what a message shows: the chart is 600 pixels wide and
 * the sparkline 24 characters, so more than EVENT_TREND_POINTS_MAX
 * readings are reduced to the lowest and highest of each of
 * EVENT_TREND_BUCKETS parts of the span (and its first reading without a
 * value), which keeps every peak. One reply of 100,000 readings would
 * otherwise be copied into the outbox item of every event and receiver. */
#define EVENT_TREND_BUCKETS 150
#define EVENT_TREND_POINTS_MAX (3 * EVENT_TREND_BUCKETS)

/* The readings of channel `num` of `s` that lie in [since, until], as a
 * new trend (the caller frees it with event_trend_free), reduced as above
 * when they are more than EVENT_TREND_POINTS_MAX (the points kept then
 * have no data-id); NULL when the series has no such channel or no
 * reading of it in the span. */
struct event_trend *event_trend_of(const struct series *s, int num, long long since,
                                   long long until);

void event_trend_free(struct event_trend *t);

/* "YYYY-MM-DD HH:MM:SS +HH:MM" in the device's local time; `out` of at least
 * 32 bytes. */
void event_local_time(char *out, size_t size, const struct event *ev);

/* "YYYY-MM-DDTHH:MM:SSZ"; `out` of at least 24 bytes. */
void event_utc_time(char *out, size_t size, const struct event *ev);

/* "SERIAL/UNIXTIME/KIND": the dedup key, unique per event; for an early
 * warning (kind "reading") "SERIAL/UNIXTIME/reading-chN", since channels
 * can cross at the same reading. Caller frees. */
char *event_id(const struct event *ev);

/* The event as a JSON object (a new reference, the caller puts it): id,
 * account, serial, model, name, base_serial, base_model, base_name, group,
 * unixtime, kind, text, state, value, limit, recovers, is_alarm,
 * is_recovered, is_sensor_error, is_battery, is_communication, is_other,
 * channel_name, channel_unit, utc_offset, local_time, utc_time, rule,
 * severity, held, held_since, held_since_time. `value` and `limit` are
 * null when the text shows none; exactly one is_* member is true, the one
 * of `state`, for templates that have sections but no comparisons. An
 * event without a state (built by hand) is classified from its text here.
 * `group` is "" when unknown. `rule` and `severity` are null when no rule
 * (or no severity) applies; `held` is a number (0: nothing held back) and
 * `held_since` one too (0 when held is 0). `held_since_time` is null when
 * held is 0 (or held_since is not a usable time), else held_since in the
 * device's local time (utc_offset, as local_time): "HH:MM" when it falls
 * on the local date of the event itself, else "MM-DD HH:MM". This is the
 * form kept in the state's outbox and sent in webhook documents.
 * `condition` is null except for relay events, and `is_relay` is true
 * exactly for them (kind "relay"). `channel` is the early warning's
 * channel (0 for other kinds), `is_reading` true exactly for early
 * warnings (kind "reading"), and `early_warning` the unixtime of the early
 * warning an alert-log alarm follows (0: none). `incident` is there only
 * for a message about an incident (the object incident_snapshot built);
 * an event without one writes no such member. */
struct json_object *event_to_json(const struct event *ev);

/* The reverse of event_to_json; `out` is filled and owned by the caller
 * (event_clear). Fails when a required member (account, serial, kind,
 * text, unixtime) is missing or one of the original string members has
 * another type. The members added later never fail: when `state` is
 * missing (an outbox entry written by an older wsrelay), not a string or
 * not a known state, the text is classified again, and a missing `value`
 * or `limit` is then taken from that too; a missing `recovers` is 0; a
 * missing `group`, `rule` or `severity`, or one that is not a string, is
 * NULL; a missing `held` or `held_since`, or one that is not an integer
 * (or is negative), is 0. The is_* members and held_since_time are not
 * read: they follow from `state` and held_since. A missing `condition`, or
 * one that is not a string, is NULL; a missing `channel` or
 * `early_warning` (an outbox entry of 0.2.0), or one that is not an
 * integer, is 0. An `incident` that is an object is kept as it is (it
 * was built by this program and is only shown); anything else is NULL. */
int event_from_json(struct event *out, const struct json_object *obj, struct err *e);

#endif
