/* Events: one per alert kind present in an alert-log entry, identified by
 * serial + unixtime + kind. This file turns platform responses into events
 * (with what their texts say, and which alarm a recovery ends) and events
 * into (and back from) the JSON kept in the outbox. */
#include "event.h"
#include "alerttext.h"
#include "platform.h"
#include "serial.h"
#include "trend.h"
#include "util/log.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_UNIXTIME 253402300799LL /* 9999-12-31T23:59:59Z */

const char *const event_kinds[] = {"ch1", "ch2", "ch3",           "ch4",
                                   "ch5", "ch6", "battery-level", "communication-status"};
const size_t event_n_kinds = sizeof event_kinds / sizeof event_kinds[0];

void event_clear(struct event *ev)
{
    if (!ev)
        return;
    free(ev->account);
    free(ev->serial);
    free(ev->model);
    free(ev->name);
    free(ev->base_serial);
    free(ev->base_model);
    free(ev->base_name);
    free(ev->kind);
    free(ev->text);
    free(ev->state);
    free(ev->value);
    free(ev->limit);
    free(ev->channel_name);
    free(ev->channel_unit);
    free(ev->group);
    free(ev->rule);
    free(ev->severity);
    free(ev->condition);
    event_trend_free(ev->trend);
    json_object_put(ev->incident);
    memset(ev, 0, sizeof *ev);
}

void event_copy(struct event *out, const struct event *ev)
{
    out->account = xstrdup_or_null(ev->account);
    out->serial = xstrdup_or_null(ev->serial);
    out->model = xstrdup_or_null(ev->model);
    out->name = xstrdup_or_null(ev->name);
    out->base_serial = xstrdup_or_null(ev->base_serial);
    out->base_model = xstrdup_or_null(ev->base_model);
    out->base_name = xstrdup_or_null(ev->base_name);
    out->unixtime = ev->unixtime;
    out->kind = xstrdup_or_null(ev->kind);
    out->text = xstrdup_or_null(ev->text);
    out->state = xstrdup_or_null(ev->state);
    out->value = xstrdup_or_null(ev->value);
    out->limit = xstrdup_or_null(ev->limit);
    out->recovers = ev->recovers;
    out->channel = ev->channel;
    out->early_warning = ev->early_warning;
    out->channel_name = xstrdup_or_null(ev->channel_name);
    out->channel_unit = xstrdup_or_null(ev->channel_unit);
    out->utc_offset = ev->utc_offset;
    out->group = xstrdup_or_null(ev->group);
    out->rule = xstrdup_or_null(ev->rule);
    out->severity = xstrdup_or_null(ev->severity);
    out->condition = xstrdup_or_null(ev->condition);
    out->held = ev->held;
    out->held_since = ev->held_since;
    out->incident = json_object_get(ev->incident);
    out->trend = NULL;
    if (ev->trend && ev->trend->series.n_channels == 1)
        out->trend = event_trend_of(&ev->trend->series, ev->trend->series.channels[0].num,
                                    ev->trend->since, ev->trend->until);
    if (out->trend) {
        out->trend->has_upper = ev->trend->has_upper;
        out->trend->has_lower = ev->trend->has_lower;
        out->trend->upper = ev->trend->upper;
        out->trend->lower = ev->trend->lower;
    }
}

int event_channel(const struct event *ev)
{
    if (!ev->kind)
        return 0;
    if (!strcmp(ev->kind, "reading"))
        return ev->channel >= 1 && ev->channel <= SERIES_CHANNELS_MAX ? ev->channel : 0;
    if (strlen(ev->kind) == 3 && !strncmp(ev->kind, "ch", 2) && ev->kind[2] >= '1' &&
        ev->kind[2] <= '0' + SERIES_CHANNELS_MAX)
        return ev->kind[2] - '0';
    return 0;
}

/* A trend of more readings than a message can show keeps, in each of
 * EVENT_TREND_BUCKETS equal parts of its span, the lowest and the highest
 * reading of the channel and the first reading without a value (a break
 * in the line), in their order: a peak is never lost, and an outbox item
 * holds at most 3 points a part whatever the platform sent. The points
 * kept no longer follow one another by data-id, so they lose it (-1); a
 * chart still breaks its line at a missing value or a jump in time. */
static void trend_reduce(struct series *out, int num, long long since, long long until)
{
    size_t n = out->n_points;
    unsigned bit = 1u << (num - 1);
    size_t lo[EVENT_TREND_BUCKETS], hi[EVENT_TREND_BUCKETS], hole[EVENT_TREND_BUCKETS];
    if (n <= EVENT_TREND_POINTS_MAX)
        return;
    for (size_t b = 0; b < EVENT_TREND_BUCKETS; b++)
        lo[b] = hi[b] = hole[b] = SIZE_MAX;
    double span = (double)until - (double)since + 1;
    struct series_point *pts = out->points;
    for (size_t i = 0; i < n; i++) {
        double at = ((double)pts[i].unixtime - (double)since) / span * EVENT_TREND_BUCKETS;
        size_t b = at <= 0                         ? 0
                   : at >= EVENT_TREND_BUCKETS - 1 ? EVENT_TREND_BUCKETS - 1
                                                   : (size_t)at;
        if (!(pts[i].valid & bit)) {
            if (hole[b] == SIZE_MAX)
                hole[b] = i;
            continue;
        }
        if (lo[b] == SIZE_MAX || pts[i].v[num - 1] < pts[lo[b]].v[num - 1])
            lo[b] = i;
        if (hi[b] == SIZE_MAX || pts[i].v[num - 1] > pts[hi[b]].v[num - 1])
            hi[b] = i;
    }
    bool *keep = xcalloc(n, sizeof *keep);
    for (size_t b = 0; b < EVENT_TREND_BUCKETS; b++) {
        if (lo[b] != SIZE_MAX)
            keep[lo[b]] = keep[hi[b]] = true;
        if (hole[b] != SIZE_MAX)
            keep[hole[b]] = true;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        pts[kept] = pts[i];
        pts[kept++].data_id = -1;
    }
    out->n_points = kept;
    free(keep);
}

struct event_trend *event_trend_of(const struct series *s, int num, long long since,
                                   long long until)
{
    int c = series_channel_index(s, num);
    unsigned bit = 1u << (num - 1);
    size_t n = 0;
    if (c < 0 || since > until)
        return NULL;
    for (size_t i = 0; i < s->n_points; i++)
        n += s->points[i].unixtime >= since && s->points[i].unixtime <= until &&
             (s->points[i].valid & bit);
    if (n == 0)
        return NULL;
    struct event_trend *t = xcalloc(1, sizeof *t);
    struct series *out = &t->series;
    t->since = since;
    t->until = until;
    out->serial = xstrdup_or_null(s->serial);
    out->model = xstrdup_or_null(s->model);
    out->name = xstrdup_or_null(s->name);
    out->base_serial = xstrdup_or_null(s->base_serial);
    out->utc_offset = s->utc_offset;
    out->channels[0].num = num;
    out->channels[0].name = xstrdup_or_null(s->channels[c].name);
    out->channels[0].unit = xstrdup_or_null(s->channels[c].unit);
    out->n_channels = 1;
    out->points = xreallocarray(NULL, s->n_points, sizeof *out->points);
    for (size_t i = 0; i < s->n_points; i++) {
        const struct series_point *p = &s->points[i];
        if (p->unixtime < since || p->unixtime > until)
            continue;
        struct series_point *q = &out->points[out->n_points++];
        *q = (struct series_point){.unixtime = p->unixtime, .data_id = p->data_id};
        q->valid = p->valid & bit;
        q->v[num - 1] = q->valid ? p->v[num - 1] : 0;
    }
    trend_reduce(out, num, since, until);
    return t;
}

void event_trend_free(struct event_trend *t)
{
    if (!t)
        return;
    series_free(&t->series);
    free(t);
}

void event_list_free(struct event_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        event_clear(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

void event_local_time(char *out, size_t size, const struct event *ev)
{
    time_t t = (time_t)(ev->unixtime + (long long)ev->utc_offset * 60);
    struct tm tm;
    gmtime_r(&t, &tm);
    int off = ev->utc_offset < 0 ? -ev->utc_offset : ev->utc_offset;
    char date[24];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out, size, "%s %c%02d:%02d", date, ev->utc_offset < 0 ? '-' : '+', off / 60, off % 60);
}

void event_utc_time(char *out, size_t size, const struct event *ev)
{
    time_t t = (time_t)ev->unixtime;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *event_id(const struct event *ev)
{
    if (ev->channel > 0 && !strcmp(ev->kind, "reading"))
        return xasprintf("%s/%lld/reading-ch%d", ev->serial, ev->unixtime, ev->channel);
    return xasprintf("%s/%lld/%s", ev->serial, ev->unixtime, ev->kind);
}

static void put_string(struct json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, value ? json_object_new_string(value) : NULL);
}

/* One boolean per state, for templates: is_alarm and so on. */
static const struct {
    const char *key;
    enum alert_state state;
} state_flags[] = {
    {"is_alarm", ALERT_ALARM},
    {"is_recovered", ALERT_RECOVERED},
    {"is_sensor_error", ALERT_SENSOR_ERROR},
    {"is_battery", ALERT_BATTERY},
    {"is_communication", ALERT_COMMUNICATION},
    {"is_other", ALERT_OTHER},
};

/* Fills state, value and limit from the text, where they are still NULL. */
static void classify(struct event *ev)
{
    struct alert_reading r;
    alert_classify(&r, ev->kind, ev->text);
    if (!ev->state)
        ev->state = xstrdup(alert_state_name(r.state));
    if (!ev->value) {
        ev->value = r.value;
        r.value = NULL;
    }
    if (!ev->limit) {
        ev->limit = r.limit;
        r.limit = NULL;
    }
    alert_reading_clear(&r);
}

/* state, value, limit, recovers and the is_* flags. An event built
 * without a state is classified into `tmp`, which borrows its kind and
 * text and owns only what classify adds. */
static void put_reading(struct json_object *obj, const struct event *ev)
{
    enum alert_state s = ALERT_OTHER;
    struct event tmp;
    const struct event *src = ev;
    memset(&tmp, 0, sizeof tmp);
    if (!ev->state) {
        tmp.kind = ev->kind;
        tmp.text = ev->text;
        classify(&tmp);
        src = &tmp;
    }
    put_string(obj, "state", src->state);
    put_string(obj, "value", src->value);
    put_string(obj, "limit", src->limit);
    json_object_object_add(obj, "recovers", json_object_new_int64(ev->recovers));
    alert_state_from_name(&s, src->state);
    for (size_t i = 0; i < sizeof state_flags / sizeof state_flags[0]; i++)
        json_object_object_add(obj, state_flags[i].key,
                               json_object_new_boolean(state_flags[i].state == s));
    free(tmp.state);
    free(tmp.value);
    free(tmp.limit);
}

/* `t` in the local time of an offset of `utc_offset` minutes; false for a
 * time outside year 1970 to 9999, which no device reports. */
static bool local_tm(struct tm *out, long long t, int utc_offset)
{
    if (t < 0 || t > MAX_UNIXTIME)
        return false;
    time_t local = (time_t)(t + (long long)utc_offset * 60);
    return gmtime_r(&local, out) != NULL;
}

/* held_since in the device's local time: "HH:MM" on the event's own local
 * date, else "MM-DD HH:MM" (a throttle holds events back for hours, not
 * years, so the month and day tell enough); NULL when nothing was held. */
static void put_held_since_time(struct json_object *obj, const struct event *ev)
{
    struct tm since, at;
    char text[32];
    if (ev->held <= 0 || ev->held_since <= 0 || !local_tm(&since, ev->held_since, ev->utc_offset)) {
        json_object_object_add(obj, "held_since_time", NULL);
        return;
    }
    if (local_tm(&at, ev->unixtime, ev->utc_offset) && at.tm_year == since.tm_year &&
        at.tm_yday == since.tm_yday)
        strftime(text, sizeof text, "%H:%M", &since);
    else
        strftime(text, sizeof text, "%m-%d %H:%M", &since);
    put_string(obj, "held_since_time", text);
}

/* A reading's value for people: at most two decimals, none that are 0. */
static struct json_object *value_text(double v)
{
    char text[40];
    snprintf(text, sizeof text, "%.2f", v);
    char *end = text + strlen(text);
    while (end > text && end[-1] == '0')
        *--end = '\0';
    if (end > text && end[-1] == '.')
        *--end = '\0';
    if (!strcmp(text, "-0"))
        strcpy(text, "0");
    return json_object_new_string(text);
}

/* What templates show of a trend (trend.h): the sparkline (at most
 * TREND_WIDTH_DEFAULT characters), the first,
 * last, lowest and highest values with their local times, the direction
 * and the span in hours, and as words ("20 min" below an hour and a half,
 * else "6 h"). */
static void put_trend_summary(struct json_object *obj, const struct event_trend *t)
{
    struct trend sum;
    struct tm tm;
    char text[32];
    /* A bucket per reading when they are fewer than the sparkline's
     * default width: ten-minute readings over an hour would otherwise show
     * more gaps than levels. */
    size_t width =
        t->series.n_points < TREND_WIDTH_DEFAULT ? t->series.n_points : TREND_WIDTH_DEFAULT;
    if (trend_of(&sum, &t->series, t->series.channels[0].num, t->since, t->until, width ? width : 1,
                 NULL) < 0)
        return;
    put_string(obj, "sparkline", sum.sparkline);
    put_string(obj, "direction", sum.direction);
    json_object_object_add(obj, "count", json_object_new_int64((long long)sum.n));
    json_object_object_add(obj, "first", value_text(sum.first));
    json_object_object_add(obj, "last", value_text(sum.last));
    json_object_object_add(obj, "min", value_text(sum.min));
    json_object_object_add(obj, "max", value_text(sum.max));
    json_object_object_add(obj, "change", value_text(sum.change));
    const struct {
        const char *key;
        long long at;
    } times[] = {{"since_time", t->since},
                 {"until_time", t->until},
                 {"min_time", sum.min_at},
                 {"max_time", sum.max_at},
                 {"last_time", sum.last_at}};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if (local_tm(&tm, times[i].at, t->series.utc_offset) &&
            strftime(text, sizeof text, "%H:%M", &tm))
            put_string(obj, times[i].key, text);
    if (t->has_upper)
        json_object_object_add(obj, "upper_limit", value_text(t->upper));
    if (t->has_lower)
        json_object_object_add(obj, "lower_limit", value_text(t->lower));
    long long span = t->until - t->since;
    json_object_object_add(obj, "hours", json_object_new_int64((span + 1800) / 3600));
    if (span < 90 * 60)
        snprintf(text, sizeof text, "%lld min", (span + 30) / 60);
    else
        snprintf(text, sizeof text, "%lld h", (span + 1800) / 3600);
    put_string(obj, "span", text);
}

/* The trend as the outbox keeps it and templates see it: the span, the
 * channel, its points as [unixtime, data-id or null, value or null], and
 * the summary of put_trend_summary (which event_from_json does not read:
 * it follows from the points). */
static struct json_object *trend_to_json(const struct event_trend *t)
{
    const struct series *s = &t->series;
    int c = s->channels[0].num - 1;
    struct json_object *obj = json_object_new_object();
    struct json_object *points = json_object_new_array_ext((int)s->n_points);
    json_object_object_add(obj, "since", json_object_new_int64(t->since));
    json_object_object_add(obj, "until", json_object_new_int64(t->until));
    json_object_object_add(obj, "channel", json_object_new_int(s->channels[0].num));
    put_string(obj, "channel_name", s->channels[0].name);
    put_string(obj, "unit", s->channels[0].unit);
    json_object_object_add(obj, "utc_offset", json_object_new_int(s->utc_offset));
    if (t->has_upper)
        json_object_object_add(obj, "upper", json_object_new_double(t->upper));
    if (t->has_lower)
        json_object_object_add(obj, "lower", json_object_new_double(t->lower));
    for (size_t i = 0; i < s->n_points; i++) {
        const struct series_point *p = &s->points[i];
        struct json_object *pt = json_object_new_array_ext(3);
        json_object_array_add(pt, json_object_new_int64(p->unixtime));
        json_object_array_add(pt, p->data_id >= 0 ? json_object_new_int64(p->data_id) : NULL);
        json_object_array_add(pt, (p->valid & (1u << c)) ? json_object_new_double(p->v[c]) : NULL);
        json_object_array_add(points, pt);
    }
    json_object_object_add(obj, "points", points);
    put_trend_summary(obj, t);
    return obj;
}

struct json_object *event_to_json(const struct event *ev)
{
    char local[40], utc[32];
    struct json_object *obj = json_object_new_object();
    char *id = event_id(ev);
    put_string(obj, "id", id);
    free(id);
    put_string(obj, "account", ev->account);
    put_string(obj, "serial", ev->serial);
    put_string(obj, "model", ev->model);
    put_string(obj, "name", ev->name);
    put_string(obj, "base_serial", ev->base_serial);
    put_string(obj, "base_model", ev->base_model);
    put_string(obj, "base_name", ev->base_name);
    put_string(obj, "group", ev->group ? ev->group : "");
    json_object_object_add(obj, "unixtime", json_object_new_int64(ev->unixtime));
    put_string(obj, "kind", ev->kind);
    put_string(obj, "text", ev->text);
    put_reading(obj, ev);
    put_string(obj, "channel_name", ev->channel_name);
    put_string(obj, "channel_unit", ev->channel_unit);
    json_object_object_add(obj, "channel", json_object_new_int(ev->channel));
    json_object_object_add(obj, "is_reading",
                           json_object_new_boolean(!strcmp(ev->kind, "reading")));
    json_object_object_add(obj, "early_warning", json_object_new_int64(ev->early_warning));
    json_object_object_add(obj, "utc_offset", json_object_new_int(ev->utc_offset));
    event_local_time(local, sizeof local, ev);
    event_utc_time(utc, sizeof utc, ev);
    put_string(obj, "local_time", local);
    put_string(obj, "utc_time", utc);
    put_string(obj, "rule", ev->rule);
    put_string(obj, "severity", ev->severity);
    json_object_object_add(obj, "held", json_object_new_int64(ev->held));
    json_object_object_add(obj, "held_since", json_object_new_int64(ev->held_since));
    put_held_since_time(obj, ev);
    put_string(obj, "condition", ev->condition);
    json_object_object_add(obj, "is_relay", json_object_new_boolean(!strcmp(ev->kind, "relay")));
    json_object_object_add(obj, "trend", ev->trend ? trend_to_json(ev->trend) : NULL);
    if (ev->incident)
        json_object_object_add(obj, "incident", json_object_get(ev->incident));
    return obj;
}

/* A string member copied, or NULL when absent or null; -1 when present with
 * another type. */
static int get_string(char **out, const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -1;
    *out = xstrdup(json_object_get_string(v));
    return 0;
}

/* state, value and limit as event_to_json writes them. These came after
 * the first outbox format, so they never fail: a missing or unusable state
 * is read again from the text, and so are value and limit then, where
 * missing. A member of another type counts as missing. */
static void read_reading(struct event *out, const struct json_object *obj)
{
    enum alert_state s;
    get_string(&out->state, obj, "state");
    get_string(&out->value, obj, "value");
    get_string(&out->limit, obj, "limit");
    if (out->state && !alert_state_from_name(&s, out->state)) {
        free(out->state);
        out->state = NULL;
    }
    if (!out->state)
        classify(out);
}

/* A non-negative integer member; 0 when missing, of another type or
 * negative. */
static long long get_count(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    long long n;
    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
        return 0;
    n = (long long)json_object_get_int64(v);
    return n > 0 ? n : 0;
}

/* group and what a rule decided, as event_to_json writes them. All came
 * after the first outbox format: a missing member, or one of another type,
 * is taken as absent rather than failing the item. */
static void read_routing(struct event *out, const struct json_object *obj)
{
    long long held = get_count(obj, "held");
    get_string(&out->group, obj, "group");
    get_string(&out->rule, obj, "rule");
    get_string(&out->severity, obj, "severity");
    get_string(&out->condition, obj, "condition");
    out->held = held > LONG_MAX ? LONG_MAX : (long)held;
    out->held_since = get_count(obj, "held_since");
}

static bool get_int(long long *out, const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
        return false;
    *out = json_object_get_int64(v);
    return true;
}

static bool get_finite(double *out, const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) ||
        !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) ||
        !isfinite(json_object_get_double(v)))
        return false;
    *out = json_object_get_double(v);
    return true;
}

/* The trend as trend_to_json wrote it; NULL when absent or not usable in
 * any part (a trend is an extra: a message goes out without one). */
static struct event_trend *trend_from_json(struct json_object *obj)
{
    struct series s = {0};
    struct event_trend *t = NULL;
    long long since = 0, until = 0, num = 0, offset = 0;
    struct json_object *points = jsonv_member(obj, "points");
    if (!obj || !get_int(&since, obj, "since") || !get_int(&until, obj, "until") ||
        !get_int(&num, obj, "channel") || num < 1 || num > SERIES_CHANNELS_MAX ||
        !get_int(&offset, obj, "utc_offset") || offset <= -1440 - 120 || offset >= 1440 + 120 ||
        !points || !json_object_is_type(points, json_type_array))
        goto out;
    s.utc_offset = (int)offset;
    s.channels[0].num = (int)num;
    get_string(&s.channels[0].name, obj, "channel_name");
    get_string(&s.channels[0].unit, obj, "unit");
    s.n_channels = 1;
    size_t n = json_object_array_length(points);
    s.points = xreallocarray(NULL, n ? n : 1, sizeof *s.points);
    for (size_t i = 0; i < n; i++) {
        struct json_object *pt = json_object_array_get_idx(points, i);
        struct json_object *id = json_object_array_get_idx(pt, 1);
        struct json_object *v = json_object_array_get_idx(pt, 2);
        struct series_point *p = &s.points[s.n_points];
        if (!json_object_is_type(pt, json_type_array) || json_object_array_length(pt) != 3 ||
            !json_object_is_type(json_object_array_get_idx(pt, 0), json_type_int))
            goto out;
        *p = (struct series_point){
            .unixtime = json_object_get_int64(json_object_array_get_idx(pt, 0)), .data_id = -1};
        if (id && json_object_is_type(id, json_type_int) && json_object_get_int64(id) >= 0 &&
            json_object_get_int64(id) <= 65535)
            p->data_id = (long)json_object_get_int64(id);
        if (v &&
            (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) &&
            isfinite(json_object_get_double(v))) {
            p->v[num - 1] = json_object_get_double(v);
            p->valid = 1u << (num - 1);
        }
        s.n_points++;
    }
    t = event_trend_of(&s, (int)num, since, until);
    if (t) {
        t->has_upper = get_finite(&t->upper, obj, "upper");
        t->has_lower = get_finite(&t->lower, obj, "lower");
    }
out:
    series_free(&s);
    return t;
}

int event_from_json(struct event *out, const struct json_object *obj, struct err *e)
{
    static const struct {
        const char *key;
        size_t offset;
        int required;
    } fields[] = {
        {"account", offsetof(struct event, account), 1},
        {"serial", offsetof(struct event, serial), 1},
        {"model", offsetof(struct event, model), 0},
        {"name", offsetof(struct event, name), 0},
        {"base_serial", offsetof(struct event, base_serial), 0},
        {"base_model", offsetof(struct event, base_model), 0},
        {"base_name", offsetof(struct event, base_name), 0},
        {"kind", offsetof(struct event, kind), 1},
        {"text", offsetof(struct event, text), 1},
        {"channel_name", offsetof(struct event, channel_name), 0},
        {"channel_unit", offsetof(struct event, channel_unit), 0},
    };
    struct json_object *v = NULL;
    memset(out, 0, sizeof *out);
    if (!json_object_is_type(obj, json_type_object))
        return err_set(e, "event is not an object");
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char **slot = (char **)((char *)out + fields[i].offset);
        if (get_string(slot, obj, fields[i].key) < 0) {
            event_clear(out);
            return err_set(e, "event member '%s' is not a string", fields[i].key);
        }
        if (!*slot && fields[i].required) {
            event_clear(out);
            return err_set(e, "event has no '%s'", fields[i].key);
        }
    }
    if (!json_object_object_get_ex(obj, "unixtime", &v) || !json_object_is_type(v, json_type_int)) {
        event_clear(out);
        return err_set(e, "event has no integer 'unixtime'");
    }
    out->unixtime = json_object_get_int64(v);
    if (json_object_object_get_ex(obj, "utc_offset", &v) && json_object_is_type(v, json_type_int))
        out->utc_offset = json_object_get_int(v);
    if (json_object_object_get_ex(obj, "recovers", &v) && json_object_is_type(v, json_type_int))
        out->recovers = json_object_get_int64(v);
    if (json_object_object_get_ex(obj, "channel", &v) && json_object_is_type(v, json_type_int))
        out->channel = json_object_get_int(v);
    if (json_object_object_get_ex(obj, "early_warning", &v) &&
        json_object_is_type(v, json_type_int))
        out->early_warning = json_object_get_int64(v);
    read_reading(out, obj);
    read_routing(out, obj);
    out->trend = trend_from_json(jsonv_member(obj, "trend"));
    if (json_object_object_get_ex(obj, "incident", &v) && json_object_is_type(v, json_type_object))
        out->incident = json_object_get(v);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char **slot = (char **)((char *)out + fields[i].offset);
        if (!*slot && (fields[i].offset == offsetof(struct event, model) ||
                       fields[i].offset == offsetof(struct event, name)))
            *slot = xstrdup("");
    }
    return 0;
}

/* ---- Get Alert Logs bodies ---- */

#define MAX_OFFSET (24 * 60) /* minutes; any real offset is well inside */
#define DEFAULT_DST_BIAS 60

/* The device that a Get Alert Logs body is about. */
struct alert_device {
    char *serial, *model, *name;
    char *base_serial, *base_model, *base_name;
    int utc_offset;
    struct json_object *channels; /* the `channel` array, or NULL */
};

static void alert_device_clear(struct alert_device *d)
{
    free(d->serial);
    free(d->model);
    free(d->name);
    free(d->base_serial);
    free(d->base_model);
    free(d->base_name);
    memset(d, 0, sizeof *d);
}

/* An offset in minutes from `key`; `fallback` when it is missing or not
 * believable. */
static int offset_member(const struct json_object *body, const char *key, int fallback,
                         const char *serial)
{
    long long v = 0;
    struct json_object *m = jsonv_member(body, key);
    if (!m)
        return fallback;
    if (!jsonv_int(m, &v) || v < -MAX_OFFSET || v > MAX_OFFSET) {
        log_warn("alert log of %s: '%s' is not a number of minutes; taken as %d", serial, key,
                 fallback);
        return fallback;
    }
    return (int)v;
}

/* The device's local time offset in minutes east of UTC.
 *
 * The spec calls time-diff "the time difference" set in the (base) unit,
 * std-bias "the time difference from standard time", dst-flg 1 when
 * daylight saving is on and dst-bias the daylight saving offset, "always
 * 60". We read time-diff as the device's offset from UTC, dst-flg as
 * whether daylight saving is on, and add dst-bias (60 when missing) only
 * then. std-bias is not added: the spec does not say what it would add to,
 * and the platform's own CSV header ("time difference:GMT+09:00/daylight
 * savings time:on") is described from the time difference and the
 * daylight-saving switch alone. */
static int utc_offset_of(const struct json_object *body, const char *serial)
{
    long long flag = 0;
    int offset = offset_member(body, "time-diff", 0, serial);
    if (jsonv_int(jsonv_member(body, "dst-flg"), &flag) && flag == 1)
        offset += offset_member(body, "dst-bias", DEFAULT_DST_BIAS, serial);
    return offset;
}

/* A name or a model: repaired, one line, bounded (platform.h). */
static char *name_text(struct json_object *v)
{
    char *s = jsonv_text_clean(v, PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
    return s ? s : xstrdup("");
}

/* The serial member `key` of `body` into *out (a copy) when it is a serial
 * (serial.h); *out NULL when absent or empty. -1 with the value shown
 * escaped in `e` when it is not a serial. */
static int read_serial(char **out, const struct json_object *body, const char *key, struct err *e)
{
    size_t len = 0;
    const char *s = jsonv_text_raw(jsonv_member(body, key), &len);
    *out = NULL;
    return s && len > 0 ? serial_copy(out, s, len, key, e) : 0;
}

/* Reads the top-level members; fails without a remote serial, or with one
 * that is not a serial (it cannot be the device that was asked about). A
 * base serial that is not one is only shown: it is logged and the device
 * taken as its own base unit, because the alerts matter more than the
 * base unit they came through. */
static int read_alert_device(struct alert_device *d, const struct json_object *body, struct err *e)
{
    struct json_object *channels;
    struct err why;
    memset(d, 0, sizeof *d);
    if (read_serial(&d->serial, body, "remote-serial", e) < 0)
        return err_prefix(e, "alert log");
    if (!d->serial)
        return err_set(e, "alert log has no remote-serial");
    d->model = name_text(jsonv_member(body, "remote-model"));
    d->name = name_text(jsonv_member(body, "remote-name"));
    if (read_serial(&d->base_serial, body, "base-serial", &why) < 0)
        log_warn("alert log of %s: %s; the device is taken as its own base unit", d->serial,
                 why.msg);
    if (!d->base_serial)
        d->base_serial = xstrdup(d->serial);
    d->base_model = name_text(jsonv_member(body, "base-model"));
    d->base_name = name_text(jsonv_member(body, "base-name"));
    d->utc_offset = utc_offset_of(body, d->serial);
    channels = jsonv_member(body, "channel");
    d->channels = channels && json_object_is_type(channels, json_type_array) ? channels : NULL;
    return 0;
}

/* The `channel` element whose num is `num`, or NULL. */
static struct json_object *find_channel(const struct json_object *channels, long long num)
{
    size_t n = channels ? json_object_array_length(channels) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *ch = json_object_array_get_idx(channels, i);
        long long v = 0;
        if (jsonv_int(jsonv_member(ch, "num"), &v) && v == num)
            return ch;
    }
    return NULL;
}

/* The text of one kind in an entry: a non-empty string or a number's text;
 * NULL when the kind is absent, null or "". */
static char *kind_text(struct json_object *entry, const char *kind, const char *serial,
                       long long unixtime)
{
    struct json_object *v = jsonv_member(entry, kind);
    char *text = jsonv_text_clean(v, PLATFORM_TEXT_MAX, UTF8_CONTROLS_LINES);
    if (v && !text)
        log_warn("alert log of %s at %lld: '%s' is neither text nor a number; ignored", serial,
                 unixtime, kind);
    if (text && !*text) {
        free(text);
        text = NULL;
    }
    return text;
}

static void add_event(struct event_list *l, size_t *cap, const struct alert_device *d,
                      const char *account, long long unixtime, const char *kind, char *text)
{
    struct event *ev;
    if (l->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        l->items = xreallocarray(l->items, *cap, sizeof *l->items);
    }
    ev = &l->items[l->n++];
    memset(ev, 0, sizeof *ev);
    ev->account = xstrdup(account ? account : "");
    ev->serial = xstrdup(d->serial);
    ev->model = xstrdup(d->model);
    ev->name = xstrdup(d->name);
    ev->base_serial = xstrdup(d->base_serial);
    ev->base_model = xstrdup(d->base_model);
    ev->base_name = xstrdup(d->base_name);
    ev->unixtime = unixtime;
    ev->kind = xstrdup(kind);
    ev->text = text;
    classify(ev);
    ev->utc_offset = d->utc_offset;
    if (kind[0] == 'c' && kind[1] == 'h' && kind[2] >= '1' && kind[2] <= '9' && !kind[3]) {
        struct json_object *ch = find_channel(d->channels, kind[2] - '0');
        ev->channel_name =
            jsonv_text_clean(jsonv_member(ch, "name"), PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
        ev->channel_unit =
            jsonv_text_clean(jsonv_member(ch, "unit"), PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
    }
}

static size_t kind_index(const char *kind)
{
    size_t i = 0;
    while (i < event_n_kinds && strcmp(event_kinds[i], kind))
        i++;
    return i;
}

/* Oldest first; at one unixtime, in event_kinds order. */
static int compare_events(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    size_t kx, ky;
    if (x->unixtime != y->unixtime)
        return x->unixtime < y->unixtime ? -1 : 1;
    kx = kind_index(x->kind);
    ky = kind_index(y->kind);
    if (kx != ky)
        return kx < ky ? -1 : 1;
    return strcmp(x->text, y->text);
}

/* True for the states that a recovery ends. */
static bool is_recoverable(const char *state)
{
    enum alert_state s = ALERT_OTHER;
    alert_state_from_name(&s, state);
    return s != ALERT_OTHER && s != ALERT_RECOVERED;
}

/* Points each recovered event of the sorted list at the alarm it ends: the
 * latest strictly earlier event of its serial and kind that is not
 * "other", when that event is not itself a recovery. "Other" events are
 * looked past: unknown wording between an alarm and its recovery says
 * nothing about either. A recovery after a recovery ends nothing, which is
 * why the search stops there rather than reaching an older alarm. A log
 * holds at most 20 entries, so looking back is cheap. */
static void link_recoveries(struct event_list *l)
{
    enum alert_state s = ALERT_OTHER;
    for (size_t i = 0; i < l->n; i++) {
        struct event *ev = &l->items[i];
        if (!alert_state_from_name(&s, ev->state) || s != ALERT_RECOVERED)
            continue;
        for (size_t j = i; j-- > 0;) {
            const struct event *prior = &l->items[j];
            if (prior->unixtime >= ev->unixtime || strcmp(prior->kind, ev->kind) != 0 ||
                strcmp(prior->serial, ev->serial) != 0 || strcmp(prior->state, "other") == 0)
                continue;
            if (is_recoverable(prior->state))
                ev->recovers = prior->unixtime;
            break;
        }
    }
}

int event_parse_alert_log(struct event_list *out, const struct json_object *body,
                          const char *account, struct err *e)
{
    int rc = -1;
    struct event_list l;
    struct alert_device d;
    struct json_object *logs;
    size_t cap = 0;
    memset(&l, 0, sizeof l);
    memset(&d, 0, sizeof d);
    if (!body || !json_object_is_type(body, json_type_object)) {
        err_set(e, "alert log is not a JSON object");
        goto out;
    }
    if (read_alert_device(&d, body, e) < 0)
        goto out;
    logs = jsonv_member(body, "alert-logs");
    if (logs && !json_object_is_type(logs, json_type_array)) {
        err_set(e, "alert log of %s: 'alert-logs' is not an array", d.serial);
        goto out;
    }
    l.entries = logs ? json_object_array_length(logs) : 0;
    for (size_t i = 0; i < l.entries; i++) {
        struct json_object *entry = json_object_array_get_idx(logs, i);
        long long t = 0;
        if (!jsonv_int(jsonv_member(entry, "unixtime"), &t) || t <= 0 || t > MAX_UNIXTIME) {
            log_warn("alert log of %s: entry %zu of %zu has no usable unixtime; skipped", d.serial,
                     i + 1, l.entries);
            l.skipped++;
            continue;
        }
        if (!l.oldest || t < l.oldest)
            l.oldest = t;
        for (size_t k = 0; k < event_n_kinds; k++) {
            char *text = kind_text(entry, event_kinds[k], d.serial, t);
            if (text)
                add_event(&l, &cap, &d, account, t, event_kinds[k], text);
        }
    }
    if (l.n > 1)
        qsort(l.items, l.n, sizeof *l.items, compare_events);
    link_recoveries(&l);
    rc = 0;
out:
    alert_device_clear(&d);
    if (rc == 0)
        *out = l;
    else
        event_list_free(&l);
    return rc;
}
