/* Graph data as the platform serves it (graph.h): the request's options
 * read and checked, the readings picked by time and count, and the record
 * written as JSON or in the CSV layout. A reply is built from a `view`:
 * what was asked, the channels as the reply shows them, and the readings
 * picked, oldest first. */
#include "graph.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LATEST_COUNT 300      /* readings of latest-data and latest-data-rtr500 */
#define NUMBER_DEFAULT 16000  /* readings of a period call without number */
#define NUMBER_MAX 65535      /* a larger number counts as this */
#define STANDALONE_CHANNELS 2 /* ch1, ch2 */
#define RTR500_CHANNELS 4     /* ch1 to ch4 */
#define DST_BIAS 60           /* minutes; the spec's dst_bias is always 60 */
#define SERIAL_1970 25569     /* the spreadsheet date serial of 1970-01-01 */
#define SECONDS_PER_DAY 86400LL

/* The data members of the channels, and the names of a remote unit's. */
static const char *const channel_keys[RTR500_CHANNELS] = {"ch1", "ch2", "ch3", "ch4"};

enum format {
    FORMAT_JSON,     /* the record, application/json */
    FORMAT_CSV_JSON, /* the record, text/csv (type csv of the -rtr500 operations) */
    FORMAT_CSV,      /* the CSV layout, text/csv */
};

/* A temperature scale; the order is that of temperature-unit's values. */
enum scale {
    SCALE_NONE, /* not a temperature, or temperature-unit device */
    SCALE_C,
    SCALE_F,
};

/* What the request asks for, once checked. */
struct ask {
    enum format format;
    enum scale scale;
    bool has_from, has_to;
    long long from, to; /* unixtime-from, unixtime-to: both bounds exclusive */
    size_t number;      /* readings at most */
};

/* One channel as the reply shows it. */
struct column {
    long long num;       /* 0-based for standalone records, 1-based for -rtr500 ones */
    const char *name;    /* the scenario's name, or "ch1" ... for -rtr500 records */
    const char *unit;    /* the scenario's unit */
    enum scale from, to; /* the unit's scale and the one to send; SCALE_NONE: as it is */
};

struct view {
    const struct graph_call *call;
    struct ask ask;
    struct column cols[RTR500_CHANNELS];
    size_t n_cols;
    const struct reading *const *rows; /* the readings sent, oldest first */
    size_t n_rows;
};

/* ---- the request ---------------------------------------------------------- */

static bool is_standalone(const struct device *d)
{
    return strcmp(d->base_serial, d->serial) == 0;
}

/* 400 unless the operation's family is the device's and it offers graph
 * data. */
static int check_device(struct reply *out, const struct graph_call *call)
{
    const struct device *d = call->d;
    if (call->rtr500 && is_standalone(d)) {
        reply_error(out, 400, "'%s' is a standalone device: use %s", d->serial,
                    call->period ? "data" : "latest-data");
        return -1;
    }
    if (!call->rtr500 && !is_standalone(d)) {
        reply_error(out, 400, "'%s' is a remote unit of base unit '%s': use %s", d->serial,
                    d->base_serial, call->period ? "data-rtr500" : "latest-data-rtr500");
        return -1;
    }
    if (!d->graph_supported) {
        reply_error(out, 400, "graph data is not available for this device (%s)", d->model);
        return -1;
    }
    return 0;
}

/* An optional string member that must be one of `names` (NULL-terminated):
 * *index is its position, 0 when absent. */
static int read_choice(size_t *index, struct reply *out, const struct json_object *body,
                       const char *key, const char *const names[], const char *listed)
{
    struct json_object *v;
    *index = 0;
    if (!json_object_object_get_ex(body, key, &v))
        return 0;
    if (json_object_is_type(v, json_type_string)) {
        const char *text = json_object_get_string(v);
        for (size_t i = 0; names[i]; i++) {
            if (strcmp(names[i], text) == 0) {
                *index = i;
                return 0;
            }
        }
    }
    reply_error(out, 400, "%s must be %s, not %s", key, listed,
                json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    return -1;
}

/* An optional integer member; *given tells whether it was there. */
static int read_int(long long *value, bool *given, struct reply *out,
                    const struct json_object *body, const char *key)
{
    struct json_object *v;
    *given = json_object_object_get_ex(body, key, &v);
    if (!*given)
        return 0;
    if (!json_object_is_type(v, json_type_int)) {
        reply_error(out, 400, "%s must be an integer, not %s", key,
                    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        return -1;
    }
    *value = (long long)json_object_get_int64(v);
    return 0;
}

/* unixtime-from, unixtime-to and number of the period operations. */
static int read_period(struct ask *ask, struct reply *out, const struct json_object *body)
{
    long long number = NUMBER_DEFAULT;
    bool has_number;
    if (read_int(&ask->from, &ask->has_from, out, body, "unixtime-from") < 0 ||
        read_int(&ask->to, &ask->has_to, out, body, "unixtime-to") < 0 ||
        read_int(&number, &has_number, out, body, "number") < 0)
        return -1;
    if (number < 1) {
        reply_error(out, 400, "number must be 1 or more, not %lld", number);
        return -1;
    }
    ask->number = (size_t)(number > NUMBER_MAX ? NUMBER_MAX : number);
    return 0;
}

static int read_ask(struct ask *ask, struct reply *out, const struct graph_call *call)
{
    static const char *const types[] = {"json", "csv", "csv2", NULL};
    static const char *const units[] = {"device", "C", "F", NULL};
    size_t type, unit;
    memset(ask, 0, sizeof *ask);
    ask->number = LATEST_COUNT;
    if (read_choice(&type, out, call->body, "type", types, "\"json\", \"csv\" or \"csv2\"") < 0 ||
        read_choice(&unit, out, call->body, "temperature-unit", units,
                    "\"device\", \"C\" or \"F\"") < 0)
        return -1;
    if (call->period && read_period(ask, out, call->body) < 0)
        return -1;
    if (type == 0)
        ask->format = FORMAT_JSON;
    else if (type == 1 && call->rtr500)
        ask->format = FORMAT_CSV_JSON;
    else
        ask->format = FORMAT_CSV;
    ask->scale = (enum scale)unit;
    return 0;
}

/* ---- channels and values ---------------------------------------------------- */

/* The scale of a unit: "°C", "℃" and "C" are Celsius, "°F", "℉" and "F"
 * Fahrenheit; anything else is no temperature. */
static enum scale unit_scale(const char *unit)
{
    static const char *const celsius[] = {"°C", "℃", "C"};
    static const char *const fahrenheit[] = {"°F", "℉", "F"};
    for (size_t i = 0; i < sizeof celsius / sizeof celsius[0]; i++) {
        if (strcmp(unit, celsius[i]) == 0)
            return SCALE_C;
        if (strcmp(unit, fahrenheit[i]) == 0)
            return SCALE_F;
    }
    return SCALE_NONE;
}

/* The first channels of the device, as many as the record has room for. */
static void set_columns(struct view *v)
{
    const struct graph_call *call = v->call;
    const struct device *d = call->d;
    size_t room = call->rtr500 ? RTR500_CHANNELS : STANDALONE_CHANNELS;
    v->n_cols = d->n_channels < room ? d->n_channels : room;
    for (size_t i = 0; i < v->n_cols; i++) {
        struct column *c = &v->cols[i];
        c->num = call->rtr500 ? (long long)i + 1 : (long long)i;
        c->name = call->rtr500 ? channel_keys[i] : d->channels[i].name;
        c->unit = d->channels[i].unit;
        c->from = unit_scale(c->unit);
        c->to = c->from == SCALE_NONE ? SCALE_NONE : v->ask.scale;
    }
}

/* The unit as sent: "°C" or "°F" in JSON, "C" or "F" in the CSV layout,
 * when a scale was asked for; else the scenario's unit. */
static const char *unit_text(const struct column *c, bool csv)
{
    if (c->to == SCALE_C)
        return csv ? "C" : "°C";
    if (c->to == SCALE_F)
        return csv ? "F" : "°F";
    return c->unit;
}

/* The text of `value` in column c: a number converted to the scale asked
 * for, with one decimal, written into `buf`; anything else as it is. */
static const char *value_text(char *buf, size_t size, const struct column *c, const char *value)
{
    if (c->to == SCALE_NONE || !scenario_is_number(value))
        return value;
    double x = strtod(value, NULL);
    if (c->from == SCALE_C && c->to == SCALE_F)
        x = x * 9.0 / 5.0 + 32.0;
    else if (c->from == SCALE_F && c->to == SCALE_C)
        x = (x - 32.0) * 5.0 / 9.0;
    snprintf(buf, size, "%.1f", x);
    if (strcmp(buf, "-0.0") == 0)
        snprintf(buf, size, "0.0");
    return buf;
}

/* ---- picking the readings ------------------------------------------------------ */

/* Oldest first; of two readings at the same time, the one uploaded first. */
static int cmp_by_time(const void *x, const void *y)
{
    const struct reading *a = *(const struct reading *const *)x;
    const struct reading *b = *(const struct reading *const *)y;
    if (a->unixtime != b->unixtime)
        return a->unixtime < b->unixtime ? -1 : 1;
    return (a > b) - (a < b); /* one array, in upload order */
}

/* The device's uploaded readings by unixtime, oldest first. Caller frees. */
static const struct reading **uploaded_by_time(const struct device *d, long long now, size_t *n)
{
    size_t due = scenario_readings_due(d, now);
    const struct reading **rows = xcalloc(due ? due : 1, sizeof *rows);
    bool sorted = true;
    for (size_t i = 0; i < due; i++) {
        rows[i] = &d->readings[i];
        if (i && rows[i]->unixtime < rows[i - 1]->unixtime)
            sorted = false;
    }
    if (!sorted)
        qsort(rows, due, sizeof *rows, cmp_by_time);
    *n = due;
    return rows;
}

/* The index of the first of rows[0..n) whose unixtime is above `t`
 * (`above`) or at least `t`; n when there is none. */
static size_t first_past(const struct reading *const *rows, size_t n, long long t, bool above)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        long long u = rows[mid]->unixtime;
        if (above ? u > t : u >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The newest readings of the range asked for, at most ask.number (and, in
 * a period call, the budget), kept oldest first. */
static void pick_rows(struct view *v, const struct reading *const *rows, size_t n)
{
    const struct ask *ask = &v->ask;
    size_t lo = ask->has_from ? first_past(rows, n, ask->from, true) : 0;
    size_t hi = ask->has_to ? first_past(rows, n, ask->to, false) : n;
    size_t most = ask->number;
    if (v->call->period && v->call->budget < most)
        most = v->call->budget;
    if (hi < lo)
        hi = lo;
    v->n_rows = hi - lo < most ? hi - lo : most;
    v->rows = rows + (hi - v->n_rows);
}

/* ---- the JSON record ------------------------------------------------------------ */

/* Member names of the two record families, in the order they are sent. */
static const struct names {
    const char *serial, *model, *name, *time_diff, *std_bias, *dst_flg, *dst_bias;
} standalone_names = {"serial", "model", "name", "time_diff", "std_bias", "dst_flg", "dst_bias"},
  rtr500_names = {"remote-serial", "remote-model", "remote-name", "time-diff",
                  "std-bias",      "dst-flg",      "dst-bias"};

static void add_str(struct json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, json_object_new_string(value));
}

static struct json_object *json_channels(const struct view *v)
{
    enum dialect dl = v->call->a->dialect;
    struct json_object *channels = json_object_new_array();
    for (size_t i = 0; i < v->n_cols; i++) {
        struct json_object *ch = json_object_new_object();
        add_str(ch, "name", v->cols[i].name);
        json_object_object_add(ch, "num", scenario_numeric_ll(dl, v->cols[i].num));
        add_str(ch, "unit", unit_text(&v->cols[i], false));
        json_object_array_add(channels, ch);
    }
    return channels;
}

/* One element of `data`: unixtime, data-id, ch1 ... */
static struct json_object *json_row(const struct view *v, const struct reading *r)
{
    enum dialect dl = v->call->a->dialect;
    struct json_object *row = json_object_new_object();
    json_object_object_add(row, "unixtime", scenario_numeric_ll(dl, r->unixtime));
    json_object_object_add(row, "data-id", scenario_numeric_ll(dl, r->data_id));
    for (size_t i = 0; i < v->n_cols; i++) {
        char buf[64];
        const char *value = value_text(buf, sizeof buf, &v->cols[i], r->values[i]);
        json_object_object_add(row, channel_keys[i], scenario_numeric(dl, value));
    }
    return row;
}

static struct json_object *json_record(const struct view *v)
{
    const struct device *d = v->call->d;
    enum dialect dl = v->call->a->dialect;
    const struct names *n = v->call->rtr500 ? &rtr500_names : &standalone_names;
    struct json_object *rec = json_object_new_object();
    add_str(rec, n->serial, d->serial);
    add_str(rec, n->model, d->model);
    add_str(rec, n->name, d->name);
    if (v->call->rtr500) {
        add_str(rec, "base-serial", d->base_serial);
        add_str(rec, "base-model", d->base_model);
        add_str(rec, "base-name", d->base_name);
    }
    json_object_object_add(rec, n->time_diff, scenario_numeric(dl, d->time_diff));
    json_object_object_add(rec, n->std_bias, scenario_numeric(dl, d->std_bias));
    if (d->dst_flg)
        json_object_object_add(rec, n->dst_flg, scenario_numeric(dl, d->dst_flg));
    json_object_object_add(rec, n->dst_bias, scenario_numeric_ll(dl, DST_BIAS));
    json_object_object_add(rec, "channel", json_channels(v));
    struct json_object *data = json_object_new_array_ext((int)v->n_rows);
    for (size_t i = 0; i < v->n_rows; i++)
        json_object_array_add(data, json_row(v, v->rows[i]));
    json_object_object_add(rec, "data", data);
    return rec;
}

/* ---- the CSV layout ---------------------------------------------------------------- */

/* One cell in double quotes (a quote inside doubled), after a comma unless
 * it opens the line. */
static void csv_cell(struct buf *b, const char *text, bool first)
{
    buf_puts(b, first ? "\"" : ",\"");
    for (const char *q; (q = strchr(text, '"')); text = q + 1) {
        buf_append(b, text, (size_t)(q - text));
        buf_puts(b, "\"\"");
    }
    buf_puts(b, text);
    buf_puts(b, "\"");
}

static void csv_end_line(struct buf *b)
{
    buf_puts(b, "\r\n");
}

/* Whole minutes from the scenario's text; 0 when it is not an integer. */
static long long minutes(const char *text)
{
    char *end;
    long long m = strtoll(text, &end, 10);
    return *text && !*end ? m : 0;
}

static bool dst_on(const struct device *d)
{
    return d->dst_flg && strcmp(d->dst_flg, "1") == 0;
}

/* Lines 1 to 3: the column titles, the time difference and the channel
 * names, the units. */
static void csv_head(struct buf *b, const struct view *v)
{
    const struct device *d = v->call->d;
    csv_cell(b, "Date/Time", true);
    csv_cell(b, "Date/Time", false);
    for (size_t i = 0; i < v->n_cols; i++) {
        char title[32];
        snprintf(title, sizeof title, "No.%zu", i + 1);
        csv_cell(b, title, false);
    }
    csv_end_line(b);

    long long diff = minutes(d->time_diff);
    long long size = diff < 0 ? -diff : diff;
    char zone[96];
    snprintf(zone, sizeof zone, "time difference:GMT%c%02lld:%02lld/daylight savings time:%s",
             diff < 0 ? '-' : '+', size / 60, size % 60, dst_on(d) ? "on" : "off");
    csv_cell(b, zone, true);
    csv_cell(b, "Date serial value(Excel)", false);
    for (size_t i = 0; i < v->n_cols; i++)
        csv_cell(b, v->cols[i].name, false);
    csv_end_line(b);

    csv_cell(b, "", true);
    csv_cell(b, "", false);
    for (size_t i = 0; i < v->n_cols; i++)
        csv_cell(b, unit_text(&v->cols[i], true), false);
    csv_end_line(b);
}

/* One reading: local date and time, its date serial, the values. */
static void csv_row(struct buf *b, const struct view *v, const struct reading *r,
                    long long offset_s)
{
    long long local = r->unixtime + offset_s;
    long long days = local / SECONDS_PER_DAY, secs = local % SECONDS_PER_DAY;
    if (secs < 0) {
        days--;
        secs += SECONDS_PER_DAY;
    }
    time_t t = (time_t)local;
    struct tm tm;
    char text[64];
    if (!gmtime_r(&t, &tm) || strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf(text, sizeof text, "%lld", local); /* beyond what a calendar shows */
    csv_cell(b, text, true);
    snprintf(text, sizeof text, "%.8f",
             (double)(days + SERIAL_1970) + (double)secs / (double)SECONDS_PER_DAY);
    csv_cell(b, text, false);
    for (size_t i = 0; i < v->n_cols; i++) {
        char buf[64];
        csv_cell(b, value_text(buf, sizeof buf, &v->cols[i], r->values[i]), false);
    }
    csv_end_line(b);
}

/* The whole CSV text. Caller frees. */
static char *csv_text(const struct view *v)
{
    const struct device *d = v->call->d;
    long long offset_s = (minutes(d->time_diff) + (dst_on(d) ? DST_BIAS : 0)) * 60;
    struct buf b;
    buf_init(&b, 0);
    csv_head(&b, v);
    for (size_t i = 0; i < v->n_rows; i++)
        csv_row(&b, v, v->rows[i], offset_s);
    return buf_steal(&b);
}

/* ---- the operation ------------------------------------------------------------------- */

size_t graph_answer(struct reply *out, const struct graph_call *call)
{
    struct view v = {.call = call};
    const struct reading **rows = NULL;
    size_t n = 0, served = 0;
    if (check_device(out, call) < 0 || read_ask(&v.ask, out, call) < 0)
        goto out;
    if (call->period && call->budget == 0) {
        reply_error(out, 429, "data count exceeded: %d readings of '%s' per %d s",
                    GRAPH_DATA_COUNT_LIMIT, call->d->serial, GRAPH_DATA_COUNT_SPAN);
        goto out;
    }
    set_columns(&v);
    rows = uploaded_by_time(call->d, call->now, &n);
    pick_rows(&v, rows, n);
    if (v.ask.format == FORMAT_CSV) {
        reply_take(out, 200, REPLY_CSV_TYPE, csv_text(&v));
    } else {
        reply_json(out, 200, json_record(&v));
        if (v.ask.format == FORMAT_CSV_JSON)
            out->content_type = REPLY_CSV_TYPE;
    }
    served = v.n_rows;
out:
    free(rows);
    return served;
}
