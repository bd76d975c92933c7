/* Incidents: what an event is to them, their record and their messages
 * (incident.h). */
#include "incident.h"
#include "util/buf.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum incident_role incident_role_of(const struct event *ev)
{
    if (!ev->kind || !ev->state || !strcmp(ev->kind, "relay") || !strcmp(ev->kind, "gap"))
        return INCIDENT_NONE;
    if (!strcmp(ev->state, "recovered"))
        return INCIDENT_RESOLVES;
    if (!strcmp(ev->state, "alarm") || !strcmp(ev->state, "sensor-error") ||
        !strcmp(ev->state, "battery") || !strcmp(ev->state, "communication"))
        return INCIDENT_OPENS;
    return INCIDENT_NONE;
}

char *incident_key(const struct event *ev)
{
    if (incident_role_of(ev) == INCIDENT_NONE)
        return NULL;
    int channel = event_channel(ev);
    if (channel > 0)
        return xasprintf("%s/ch%d", ev->serial, channel);
    if (!strcmp(ev->kind, "reading"))
        return NULL; /* an early warning always has its channel */
    return xasprintf("%s/%s", ev->serial, ev->kind);
}

const char *incident_state_name(enum incident_state s)
{
    switch (s) {
    case INCIDENT_OPEN:
        return "open";
    case INCIDENT_RESOLVED:
        return "resolved";
    case INCIDENT_CLOSED:
        return "closed";
    }
    return "open";
}

static const char *const notice_names[] = {"opened",       "reminder", "escalation",
                                           "acknowledged", "resolved", "closed"};

const char *incident_notice_name(enum incident_notice n)
{
    return (size_t)n < sizeof notice_names / sizeof notice_names[0] ? notice_names[n] : "opened";
}

void incident_clear(struct incident *inc)
{
    if (!inc)
        return;
    free(inc->key);
    event_clear(&inc->first);
    for (size_t i = 0; i < inc->n_told; i++)
        free(inc->told[i]);
    free(inc->told);
    free(inc->acked_by);
    free(inc->ack_note);
    json_object_put(inc->refs);
    memset(inc, 0, sizeof *inc);
}

void incident_copy(struct incident *out, const struct incident *inc)
{
    *out = *inc;
    out->key = xstrdup_or_null(inc->key);
    event_copy(&out->first, &inc->first);
    out->told = inc->n_told ? xcalloc(inc->n_told, sizeof *out->told) : NULL;
    for (size_t i = 0; i < inc->n_told; i++)
        out->told[i] = xstrdup(inc->told[i]);
    out->acked_by = xstrdup_or_null(inc->acked_by);
    out->ack_note = xstrdup_or_null(inc->ack_note);
    out->refs = NULL;
    if (inc->refs && (json_object_deep_copy(inc->refs, &out->refs, NULL) < 0 || !out->refs))
        xalloc_die();
}

bool incident_tell(struct incident *inc, const char *receiver)
{
    for (size_t i = 0; i < inc->n_told; i++)
        if (!strcmp(inc->told[i], receiver))
            return false;
    inc->told = xreallocarray(inc->told, inc->n_told + 1, sizeof *inc->told);
    inc->told[inc->n_told++] = xstrdup(receiver);
    return true;
}

/* --- the record in the state ---------------------------------------------- */

static void put_str(struct json_object *o, const char *key, const char *v)
{
    if (v)
        jsonv_put(o, key, jsonv_need(json_object_new_string(v)));
}

static void put_int(struct json_object *o, const char *key, long long v)
{
    jsonv_put_int(o, key, v);
}

static void put_double(struct json_object *o, const char *key, double v)
{
    jsonv_put(o, key, jsonv_need(json_object_new_double(v)));
}

struct json_object *incident_to_json(const struct incident *inc)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    put_int(o, "id", (long long)inc->id);
    put_str(o, "key", inc->key);
    put_str(o, "state", incident_state_name(inc->state));
    jsonv_put(o, "first", jsonv_need(event_to_json(&inc->first)));
    put_int(o, "opened_at", inc->opened_at);
    put_int(o, "ended", inc->ended);
    put_int(o, "ended_at", inc->ended_at);
    struct json_object *told = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < inc->n_told; i++)
        jsonv_append(told, jsonv_need(json_object_new_string(inc->told[i])));
    jsonv_put(o, "told", told);
    jsonv_put(o, "paged", jsonv_need(json_object_new_boolean(inc->paged)));
    put_int(o, "silence", (long long)inc->silence);
    put_int(o, "step", inc->step);
    put_int(o, "reminders", inc->reminders);
    put_int(o, "last_page", inc->last_page);
    put_int(o, "acked_at", inc->acked_at);
    put_str(o, "acked_by", inc->acked_by);
    put_str(o, "ack_note", inc->ack_note);
    put_int(o, "direction", inc->direction);
    if (inc->has_peak) {
        put_double(o, "peak", inc->peak);
        put_int(o, "peak_at", inc->peak_at);
    }
    if (inc->has_live) {
        put_double(o, "live", inc->live);
        put_int(o, "live_at", inc->live_at);
    }
    put_int(o, "seq", (long long)inc->seq);
    if (inc->refs) {
        struct json_object *copy = NULL;
        if (json_object_deep_copy(inc->refs, &copy, NULL) < 0 || !copy)
            xalloc_die();
        jsonv_put(o, "refs", copy);
    }
    return o;
}

/* An integer member, or `dflt` when absent; -1 when of another type. */
static int get_int(long long *out, const struct json_object *o, const char *key, long long dflt)
{
    struct json_object *v = NULL;
    *out = dflt;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return 0;
    if (!json_object_is_type(v, json_type_int))
        return -1;
    *out = json_object_get_int64(v);
    return 0;
}

static int get_number(double *out, bool *has, const struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    *has = false;
    if (!json_object_object_get_ex(o, key, &v))
        return 0;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return -1;
    *out = json_object_get_double(v);
    *has = isfinite(*out);
    return 0;
}

static int get_str(char **out, const struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -1;
    *out = xstrdup(json_object_get_string(v));
    return 0;
}

int incident_from_json(struct incident *out, const struct json_object *obj, struct err *e)
{
    static const struct {
        const char *key;
        size_t off;
    } ints[] = {
        {"opened_at", offsetof(struct incident, opened_at)},
        {"ended", offsetof(struct incident, ended)},
        {"ended_at", offsetof(struct incident, ended_at)},
        {"last_page", offsetof(struct incident, last_page)},
        {"acked_at", offsetof(struct incident, acked_at)},
        {"peak_at", offsetof(struct incident, peak_at)},
        {"live_at", offsetof(struct incident, live_at)},
    };
    struct json_object *v = NULL;
    const char *bad = NULL;
    long long n;
    memset(out, 0, sizeof *out);
    if (!json_object_is_type(obj, json_type_object))
        return err_set(e, "not an object");
    if (get_int(&n, obj, "id", 0) < 0 || n <= 0) {
        bad = "id";
        goto fail;
    }
    out->id = (unsigned long)n;
    if (get_str(&out->key, obj, "key") < 0 || !out->key) {
        bad = "key";
        goto fail;
    }
    const char *state =
        json_object_object_get_ex(obj, "state", &v) && json_object_is_type(v, json_type_string)
            ? json_object_get_string(v)
            : "";
    if (!strcmp(state, "open"))
        out->state = INCIDENT_OPEN;
    else if (!strcmp(state, "resolved"))
        out->state = INCIDENT_RESOLVED;
    else if (!strcmp(state, "closed"))
        out->state = INCIDENT_CLOSED;
    else {
        bad = "state";
        goto fail;
    }
    struct err fe;
    if (!json_object_object_get_ex(obj, "first", &v) || event_from_json(&out->first, v, &fe) < 0) {
        bad = "first";
        goto fail;
    }
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (get_int((long long *)((char *)out + ints[i].off), obj, ints[i].key, 0) < 0) {
            bad = ints[i].key;
            goto fail;
        }
    struct json_object *told = NULL;
    if (json_object_object_get_ex(obj, "told", &told)) {
        if (!json_object_is_type(told, json_type_array)) {
            bad = "told";
            goto fail;
        }
        for (size_t i = 0; i < json_object_array_length(told); i++) {
            struct json_object *r = json_object_array_get_idx(told, i);
            if (!json_object_is_type(r, json_type_string)) {
                bad = "told";
                goto fail;
            }
            incident_tell(out, json_object_get_string(r));
        }
    }
    out->paged = json_object_object_get_ex(obj, "paged", &v) && json_object_get_boolean(v);
    if (get_int(&n, obj, "silence", 0) < 0 || n < 0) {
        bad = "silence";
        goto fail;
    }
    out->silence = (unsigned long)n;
    if (get_int(&n, obj, "step", 0) < 0 || n < 0 || n > 1000) {
        bad = "step";
        goto fail;
    }
    out->step = (int)n;
    if (get_int(&n, obj, "reminders", 0) < 0 || n < 0 || n > 1000000) {
        bad = "reminders";
        goto fail;
    }
    out->reminders = (int)n;
    if (get_int(&n, obj, "direction", 0) < 0 || n < -1 || n > 1) {
        bad = "direction";
        goto fail;
    }
    out->direction = (int)n;
    if (get_int(&n, obj, "seq", 0) < 0 || n < 0) {
        bad = "seq";
        goto fail;
    }
    out->seq = (unsigned long)n;
    if (get_str(&out->acked_by, obj, "acked_by") < 0) {
        bad = "acked_by";
        goto fail;
    }
    if (get_str(&out->ack_note, obj, "ack_note") < 0) {
        bad = "ack_note";
        goto fail;
    }
    if (get_number(&out->peak, &out->has_peak, obj, "peak") < 0) {
        bad = "peak";
        goto fail;
    }
    if (get_number(&out->live, &out->has_live, obj, "live") < 0) {
        bad = "live";
        goto fail;
    }
    if (json_object_object_get_ex(obj, "refs", &v)) {
        if (!json_object_is_type(v, json_type_object) ||
            json_object_deep_copy(v, &out->refs, NULL) < 0) {
            bad = "refs";
            goto fail;
        }
    }
    return 0;
fail:
    incident_clear(out);
    return err_set(e, "%s: missing or not valid", bad);
}

/* --- readings ------------------------------------------------------------- */

bool incident_number(const char *text, double *out)
{
    char *end = NULL;
    if (!text)
        return false;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v))
        return false;
    *out = v;
    return true;
}

void incident_note_reading(struct incident *inc, double v, long long at)
{
    double limit;
    if (!isfinite(v))
        return;
    inc->has_live = true;
    inc->live = v;
    inc->live_at = at;
    if (!inc->direction && incident_number(inc->first.limit, &limit) &&
        incident_number(inc->first.value, &inc->peak))
        inc->direction = inc->peak > limit ? 1 : inc->peak < limit ? -1 : 0;
    if (!inc->direction)
        return;
    if (!inc->has_peak || (inc->direction > 0 ? v > inc->peak : v < inc->peak)) {
        inc->has_peak = true;
        inc->peak = v;
        inc->peak_at = at;
    }
}

/* --- messages ------------------------------------------------------------- */

void incident_duration_text(char *out, size_t size, long long s)
{
    if (s < 0)
        s = 0;
    long long m = s / 60, h = m / 60, d = h / 24;
    if (d > 0)
        snprintf(out, size, "%lld d %lld h", d, h % 24);
    else if (h > 0)
        snprintf(out, size, "%lld h %02lld min", h, m % 60);
    else
        snprintf(out, size, "%lld min", m);
}

/* "HH:MM" of `t` in the device's local time (`offset` minutes east), or
 * "MM-DD HH:MM" when it falls on another local date than `ref`. */
static void local_hm(char *out, size_t size, long long t, long long ref, int offset)
{
    time_t a = (time_t)(t + offset * 60LL), b = (time_t)(ref + offset * 60LL);
    struct tm ta, tb;
    if (!gmtime_r(&a, &ta) || !gmtime_r(&b, &tb)) {
        snprintf(out, size, "?");
        return;
    }
    if (ta.tm_yday == tb.tm_yday && ta.tm_year == tb.tm_year)
        strftime(out, size, "%H:%M", &ta);
    else
        strftime(out, size, "%m-%d %H:%M", &ta);
}

/* The unit the first event's value is written with ("°C"): what follows
 * its number; the channel's unit when the value has none. */
static const char *unit_of(const struct incident *inc)
{
    const char *v = inc->first.value;
    char *end = NULL;
    if (v) {
        strtod(v, &end);
        if (end && end != v && *end)
            return end;
    }
    return inc->first.channel_unit ? inc->first.channel_unit : "";
}

/* A reading written as the platform writes values: "-68.1°C". */
static char *reading_text(const struct incident *inc, double v)
{
    return xasprintf("%.1f%s", v, unit_of(inc));
}

/* What a channel's incident looks like now, for a reminder or an
 * escalation: " Now -68.1°C at 03:34 (limit -75.0°C, peak -66.0°C at
 * 03:20)."; "" when no reading was seen while it was open. */
static char *now_text(const struct incident *inc, long long now)
{
    char at[24];
    struct buf b;
    const char *sep = " (";
    if (!inc->has_live)
        return xstrdup("");
    buf_init(&b, 0);
    char *live = reading_text(inc, inc->live);
    local_hm(at, sizeof at, inc->live_at, now, inc->first.utc_offset);
    buf_printf(&b, " Now %s at %s", live, at);
    free(live);
    if (inc->first.limit) {
        buf_printf(&b, "%slimit %s", sep, inc->first.limit);
        sep = ", ";
    }
    if (inc->has_peak) {
        char *peak = reading_text(inc, inc->peak);
        local_hm(at, sizeof at, inc->peak_at, now, inc->first.utc_offset);
        buf_printf(&b, "%speak %s at %s", sep, peak, at);
        free(peak);
        sep = ", ";
    }
    buf_puts(&b, strcmp(sep, ", ") ? "." : ").");
    return buf_steal(&b);
}

/* The record of a resolved or closed incident: "Beyond its limit for 47
 * min, peak -66.0°C at 03:20; acknowledged by night shift at 03:25." */
static char *record_text(const struct incident *inc, long long now)
{
    char dur[INCIDENT_DURATION_MAX], at[24], peak_at[24];
    long long end = inc->ended ? inc->ended : now;
    incident_duration_text(dur, sizeof dur, end - inc->first.unixtime);
    char *peak = NULL, *ack = NULL;
    if (inc->has_peak) {
        char *p = reading_text(inc, inc->peak);
        local_hm(peak_at, sizeof peak_at, inc->peak_at, inc->first.unixtime, inc->first.utc_offset);
        peak = xasprintf(", peak %s at %s", p, peak_at);
        free(p);
    }
    if (inc->acked_at) {
        local_hm(at, sizeof at, inc->acked_at, inc->first.unixtime, inc->first.utc_offset);
        ack = xasprintf("acknowledged by %s at %s", inc->acked_by ? inc->acked_by : "?", at);
    }
    char *out = xasprintf("Incident %lu: %s for %s%s; %s.", inc->id,
                          inc->first.limit ? "beyond its limit" : "open", dur, peak ? peak : "",
                          ack ? ack : "nobody acknowledged it");
    free(peak);
    free(ack);
    return out;
}

void incident_message(struct event *out, const struct incident *inc, enum incident_notice notice,
                      const struct event *cause, long long now)
{
    char age[INCIDENT_DURATION_MAX], at[24];
    const struct event *from = notice == NOTICE_RESOLVED && cause ? cause : &inc->first;
    event_copy(out, from);
    json_object_put(out->incident);
    out->incident = incident_snapshot(inc, notice, now);
    incident_duration_text(age, sizeof age, now - inc->opened_at);
    char *text = NULL, *live = now_text(inc, now), *record = NULL;
    switch (notice) {
    case NOTICE_OPENED:
        text = xstrdup(from->text); /* the alarm as the platform said it */
        break;
    case NOTICE_REMINDER:
        text = xasprintf("Reminder %d: incident %lu open for %s, not acknowledged.%s %s "
                         "Acknowledge: wsrelay ack %lu",
                         inc->reminders, inc->id, age, live, inc->first.text, inc->id);
        break;
    case NOTICE_ESCALATION:
        text = xasprintf("Escalated: incident %lu open for %s, nobody acknowledged it.%s %s "
                         "Acknowledge: wsrelay ack %lu",
                         inc->id, age, live, inc->first.text, inc->id);
        break;
    case NOTICE_ACKNOWLEDGED:
        local_hm(at, sizeof at, inc->acked_at, now, inc->first.utc_offset);
        text = xasprintf("Incident %lu acknowledged by %s at %s%s%s", inc->id,
                         inc->acked_by ? inc->acked_by : "?", at, inc->ack_note ? ": " : ".",
                         inc->ack_note ? inc->ack_note : "");
        free(out->state);
        out->state = xstrdup("other");
        break;
    case NOTICE_RESOLVED:
        record = record_text(inc, now);
        text = xasprintf("%s %s", from->text, record);
        break;
    case NOTICE_CLOSED:
        record = record_text(inc, now);
        text = xasprintf("Incident %lu closed after %s without a recovery: check the device. %s",
                         inc->id, age, record);
        free(out->state);
        out->state = xstrdup("other");
        break;
    }
    free(out->text);
    out->text = text;
    free(live);
    free(record);
}

struct json_object *incident_snapshot(const struct incident *inc, enum incident_notice notice,
                                      long long now)
{
    char buf[48], dur[INCIDENT_DURATION_MAX];
    struct json_object *o = jsonv_need(json_object_new_object());
    snprintf(buf, sizeof buf, "%lu", inc->id);
    put_str(o, "id", buf);
    put_str(o, "key", inc->key);
    put_str(o, "state",
            inc->acked_at && inc->state == INCIDENT_OPEN ? "acknowledged"
                                                         : incident_state_name(inc->state));
    put_str(o, "notice", incident_notice_name(notice));
    for (size_t i = 0; i < sizeof notice_names / sizeof notice_names[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "is_%s", notice_names[i]);
        jsonv_put(o, key, jsonv_need(json_object_new_boolean((size_t)notice == i)));
    }
    put_int(o, "opened", inc->first.unixtime);
    local_hm(buf, sizeof buf, inc->first.unixtime, now, inc->first.utc_offset);
    put_str(o, "opened_time", buf);
    put_int(o, "age", now - inc->opened_at);
    incident_duration_text(dur, sizeof dur, now - inc->opened_at);
    put_str(o, "age_text", dur);
    put_int(o, "reminder", inc->reminders);
    put_int(o, "step", inc->step);
    jsonv_put(o, "acknowledged", jsonv_need(json_object_new_boolean(inc->acked_at != 0)));
    if (inc->acked_at) {
        put_str(o, "acknowledged_by", inc->acked_by);
        local_hm(buf, sizeof buf, inc->acked_at, now, inc->first.utc_offset);
        put_str(o, "acknowledged_time", buf);
        put_str(o, "acknowledged_note", inc->ack_note);
    }
    if (inc->has_peak) {
        char *p = reading_text(inc, inc->peak);
        put_str(o, "peak", p);
        free(p);
        local_hm(buf, sizeof buf, inc->peak_at, now, inc->first.utc_offset);
        put_str(o, "peak_time", buf);
    }
    if (inc->has_live) {
        char *p = reading_text(inc, inc->live);
        put_str(o, "live", p);
        free(p);
        local_hm(buf, sizeof buf, inc->live_at, now, inc->first.utc_offset);
        put_str(o, "live_time", buf);
    }
    long long end = inc->ended ? inc->ended : now;
    put_int(o, "duration", end - inc->first.unixtime);
    incident_duration_text(dur, sizeof dur, end - inc->first.unixtime);
    put_str(o, "duration_text", dur);
    struct json_object *told = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < inc->n_told; i++)
        jsonv_append(told, jsonv_need(json_object_new_string(inc->told[i])));
    jsonv_put(o, "receivers", told);
    return o;
}
