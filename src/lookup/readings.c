/* `wsrelay readings SERIAL` (lookup.h): a device's latest readings, or
 * those of a period, with every value as the platform sent it. */
#include "lookup/session.h"
#include "run/run.h"
#include "series.h"
#include "util/jsonv.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define DATA_COUNT_HOUR 160000 /* readings the period operations serve of a device an hour */
#define DATA_COUNT_LOW (DATA_COUNT_HOUR / 10)

/* One reading as the platform sent it. */
struct row {
    long long unixtime;
    long data_id;                 /* -1 when absent */
    char *v[SERIES_CHANNELS_MAX]; /* member ch<num> of channel i, made safe; NULL: absent */
};

/* What a graph-data reply holds: the record (names, clock, channels) and
 * its readings with their values as text, oldest first. */
struct readings {
    struct series head;           /* its points are not used */
    int num[SERIES_CHANNELS_MAX]; /* the channels shown, by number */
    size_t n_chans;
    struct row *rows;
    size_t n_rows;
};

static void readings_free(struct readings *rd)
{
    for (size_t i = 0; i < rd->n_rows; i++)
        for (size_t c = 0; c < SERIES_CHANNELS_MAX; c++)
            free(rd->rows[i].v[c]);
    free(rd->rows);
    series_free(&rd->head);
}

static void channel_member(char *key, size_t size, int num)
{
    snprintf(key, size, "ch%d", num);
}

/* The channels to show: those the record lists, else those its readings
 * carry (the record may list none when a device has little data). */
static void readings_channels(struct readings *rd, struct json_object *data)
{
    for (size_t c = 0; c < rd->head.n_channels; c++)
        rd->num[rd->n_chans++] = rd->head.channels[c].num;
    for (int num = 1; rd->head.n_channels == 0 && num <= SERIES_CHANNELS_MAX; num++) {
        char key[8];
        channel_member(key, sizeof key, num);
        for (size_t i = 0; i < json_object_array_length(data); i++)
            if (jsonv_member(json_object_array_get_idx(data, i), key)) {
                rd->num[rd->n_chans++] = num;
                break;
            }
    }
}

/* Reads a graph-data JSON record into *rd (release with readings_free);
 * fails as series_parse_json does. */
static int readings_parse(struct readings *rd, const struct json_object *body, struct err *e)
{
    int rc = -1;
    memset(rd, 0, sizeof *rd);
    if (series_parse_json(&rd->head, body, e) < 0)
        goto out;
    struct json_object *data = jsonv_member(body, "data");
    size_t len = json_object_array_length(data);
    readings_channels(rd, data);
    rd->rows = xcalloc(len ? len : 1, sizeof *rd->rows);
    for (size_t i = 0; i < len; i++) {
        struct json_object *d = json_object_array_get_idx(data, i);
        struct row *r = &rd->rows[rd->n_rows];
        long long v;
        if (!jsonv_int(jsonv_member(d, "unixtime"), &v) || v <= 0)
            continue;
        r->unixtime = v;
        r->data_id =
            jsonv_int(jsonv_member(d, "data-id"), &v) && v >= 0 && v <= 65535 ? (long)v : -1;
        for (size_t c = 0; c < rd->n_chans; c++) {
            char key[8];
            channel_member(key, sizeof key, rd->num[c]);
            r->v[c] = jsonv_text_clean(jsonv_member(d, key), PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
        }
        /* In time order, equal times as they came (the platform sends
         * them so already; this holds whatever came). */
        for (size_t j = rd->n_rows; j > 0 && rd->rows[j - 1].unixtime > rd->rows[j].unixtime; j--) {
            struct row tmp = rd->rows[j];
            rd->rows[j] = rd->rows[j - 1];
            rd->rows[j - 1] = tmp;
        }
        rd->n_rows++;
    }
    rc = 0;
out:
    return rc;
}

/* The channel of `rd` shown in column c. */
static const struct series_channel *shown_channel(const struct readings *rd, size_t c)
{
    int i = series_channel_index(&rd->head, rd->num[c]);
    return i < 0 ? NULL : &rd->head.channels[i];
}

/* A channel's heading: its name, else "chN". */
static char *channel_heading(const struct readings *rd, size_t c)
{
    const struct series_channel *ch = shown_channel(rd, c);
    return ch && *ch->name ? xstrdup(ch->name) : xasprintf("ch%d", rd->num[c]);
}

static void readings_table(struct buf *b, const struct target *t, enum platform_op op,
                           const struct readings *rd)
{
    size_t cols = 1 + rd->n_chans;
    struct table *tab = table_new(cols);
    char **row = xcalloc(cols, sizeof *row);
    char zone[16];
    lookup_offset_name(zone, sizeof zone, rd->head.utc_offset);
    lookup_device_title(b, t->serial, rd->head.name, rd->head.model);
    buf_printf(b, ", account %s: %zu reading%s (%s), times %s\n", t->a->name, rd->n_rows,
               rd->n_rows == 1 ? "" : "s", platform_op_name(op), zone);
    row[0] = xstrdup("TIME");
    for (size_t c = 0; c < rd->n_chans; c++) {
        row[1 + c] = channel_heading(rd, c);
        table_align_right(tab, 1 + c);
    }
    lookup_add_row(tab, row, cols);
    for (size_t i = 0; i < rd->n_rows; i++) {
        char when[40];
        lookup_local_time(when, sizeof when, rd->rows[i].unixtime, rd->head.utc_offset);
        row[0] = xstrdup(when);
        for (size_t c = 0; c < rd->n_chans; c++) {
            const struct series_channel *ch = shown_channel(rd, c);
            row[1 + c] =
                rd->rows[i].v[c] ? lookup_with_unit(rd->rows[i].v[c], ch ? ch->unit : "") : NULL;
        }
        lookup_add_row(tab, row, cols);
    }
    if (rd->n_rows)
        table_render(b, tab);
    free(row);
    table_free(tab);
}

/* One CSV field (RFC 4180): quoted when it holds a comma, a quote or a
 * line break, a quote inside doubled. */
static void csv_field(struct buf *b, const char *s, bool last)
{
    if (strpbrk(s, ",\"\r\n")) {
        buf_puts(b, "\"");
        for (const char *p = s; *p; p++) {
            if (*p == '"')
                buf_puts(b, "\"");
            buf_append(b, p, 1);
        }
        buf_puts(b, "\"");
    } else {
        buf_puts(b, s);
    }
    buf_puts(b, last ? "\r\n" : ",");
}

static void readings_csv(struct buf *b, const struct readings *rd)
{
    char zone[16], head[48];
    lookup_offset_name(zone, sizeof zone, rd->head.utc_offset);
    snprintf(head, sizeof head, "time (%s)", zone);
    csv_field(b, head, false);
    csv_field(b, "unixtime", false);
    csv_field(b, "data_id", rd->n_chans == 0);
    for (size_t c = 0; c < rd->n_chans; c++) {
        const struct series_channel *ch = shown_channel(rd, c);
        char *name = channel_heading(rd, c);
        char *text = ch && *ch->unit ? xasprintf("%s (%s)", name, ch->unit) : xstrdup(name);
        csv_field(b, text, c + 1 == rd->n_chans);
        free(text);
        free(name);
    }
    for (size_t i = 0; i < rd->n_rows; i++) {
        const struct row *r = &rd->rows[i];
        char when[40], num[24];
        lookup_local_time(when, sizeof when, r->unixtime, rd->head.utc_offset);
        csv_field(b, when, false);
        snprintf(num, sizeof num, "%lld", r->unixtime);
        csv_field(b, num, false);
        snprintf(num, sizeof num, "%ld", r->data_id);
        csv_field(b, r->data_id < 0 ? "" : num, rd->n_chans == 0);
        for (size_t c = 0; c < rd->n_chans; c++)
            csv_field(b, r->v[c] ? r->v[c] : "", c + 1 == rd->n_chans);
    }
}

static void readings_json(struct buf *b, const struct target *t, enum platform_op op,
                          const struct readings *rd)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    struct json_object *chans = jsonv_need(json_object_new_array());
    struct json_object *rows = jsonv_need(json_object_new_array());
    jsonv_put(o, "account", lookup_jstr(t->a->name));
    jsonv_put(o, "serial", lookup_jstr(t->serial));
    jsonv_put(o, "name", lookup_jstr(rd->head.name));
    jsonv_put(o, "model", lookup_jstr(rd->head.model));
    jsonv_put(o, "base_serial", lookup_jstr(t->base));
    jsonv_put(o, "operation", lookup_jstr(platform_op_name(op)));
    jsonv_put_int(o, "utc_offset", rd->head.utc_offset);
    for (size_t c = 0; c < rd->n_chans; c++) {
        const struct series_channel *ch = shown_channel(rd, c);
        struct json_object *co = jsonv_need(json_object_new_object());
        jsonv_put_int(co, "num", rd->num[c]);
        jsonv_put(co, "name", lookup_jstr(ch ? ch->name : ""));
        jsonv_put(co, "unit", lookup_jstr(ch ? ch->unit : ""));
        jsonv_append(chans, co);
    }
    jsonv_put(o, "channels", chans);
    for (size_t i = 0; i < rd->n_rows; i++) {
        const struct row *r = &rd->rows[i];
        struct json_object *ro = jsonv_need(json_object_new_object());
        struct json_object *values = jsonv_need(json_object_new_array());
        char when[40];
        lookup_local_time(when, sizeof when, r->unixtime, rd->head.utc_offset);
        jsonv_put_int(ro, "unixtime", r->unixtime);
        jsonv_put(ro, "local_time", lookup_jstr(when));
        jsonv_put(ro, "data_id",
                  r->data_id < 0 ? NULL : jsonv_need(json_object_new_int((int32_t)r->data_id)));
        for (size_t c = 0; c < rd->n_chans; c++)
            jsonv_append(values, r->v[c] ? lookup_jstr(r->v[c]) : NULL);
        jsonv_put(ro, "values", values);
        jsonv_append(rows, ro);
    }
    jsonv_put(o, "readings", rows);
    lookup_put_json(b, o);
    json_object_put(o);
}

/* Fills the period of `q` from the options, now that the device's clock
 * is known; -1 (said) when it is empty. */
static int period_of(struct platform_query *q, const struct session *s, const struct target *t)
{
    const struct lookup_options *o = s->o;
    long long shift = (long long)t->utc_offset * 60;
    int rc = -1;
    if (o->since)
        q->from = o->now - o->since;
    /* The platform's bounds leave their own second out; ours keep it. */
    if (o->from.given)
        q->from = o->from.t - (o->from.local ? shift : 0) - 1;
    if (o->to.given)
        q->to = o->to.t - (o->to.local ? shift : 0) + 1;
    if (q->from < 0)
        q->from = 0;
    if (q->to && q->from >= q->to - 1) {
        session_say(s, "--from must come before --to");
        goto out;
    }
    rc = 0;
out:
    return rc;
}

int lookup_readings(FILE *out, const struct config *c, const char *serial,
                    const struct lookup_options *o)
{
    struct session s;
    struct target t = {0};
    struct platform_reply r = {0};
    struct readings rd = {0};
    struct buf b;
    struct err e;
    bool period = o->since || o->from.given || o->to.given;
    bool need_clock = (o->from.given && o->from.local) || (o->to.given && o->to.local);
    int rc = RUN_FAILED;
    buf_init(&b, 0);
    memset(&s, 0, sizeof s);
    s.cmd = "readings";
    if (o->from.given && o->to.given && o->from.local == o->to.local && o->from.t > o->to.t) {
        session_say(&s, "--from must come before --to");
        rc = RUN_USAGE;
        goto out;
    }
    if (session_open(&s, c, o, "readings") < 0)
        goto out;
    if ((rc = session_find(&s, serial, need_clock, &t)) != RUN_OK)
        goto out;
    enum platform_op op = platform_graph_op(t.serial, t.base, period);
    struct platform_query q = {.serial = t.serial, .base = t.base, .temperature_unit = o->unit};
    rc = RUN_USAGE;
    if (period && period_of(&q, &s, &t) < 0)
        goto out;
    rc = RUN_FAILED;
    if (!session_may_call(&s, t.a, op, false) || session_call(&s, t.a, op, &q, &r) < 0)
        goto out;
    if (r.rl.has_data_count && r.rl.data_count < DATA_COUNT_LOW)
        session_say(&s,
                    "login %s: only %ld of the %d readings an hour that the platform serves of "
                    "%s are left (X-RateLimit-Remaining-DataCount)",
                    t.a->login_id, r.rl.data_count, DATA_COUNT_HOUR, t.serial);
    if (readings_parse(&rd, r.body, &e) < 0) {
        session_say(&s, "account %s: %s", t.a->name, e.msg);
        goto out;
    }
    if (o->format == LOOKUP_JSON)
        readings_json(&b, &t, op, &rd);
    else if (o->format == LOOKUP_CSV)
        readings_csv(&b, &rd);
    else
        readings_table(&b, &t, op, &rd);
    rc = lookup_emit(&s, out, &b);
out:
    readings_free(&rd);
    platform_reply_free(&r);
    target_clear(&t);
    session_close(&s);
    buf_free(&b);
    return rc;
}
