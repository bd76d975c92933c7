/* A device's readings over time (series.h): the graph-data records of the
 * platform, JSON or CSV, read into plain arrays, and the small questions
 * asked of them. */
#include "series.h"
#include "platform.h"
#include "util/jsonv.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---- */

/* A reading's value: a finite number written as a JSON number or as a
 * string of one. False for an error value ("E-001", "Sensor Error"), an
 * empty string or anything else. */
static bool number_of(double *out, const char *text, size_t len)
{
    char tmp[64];
    char *end = NULL;
    while (len > 0 && (*text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    if (len == 0 || len >= sizeof tmp)
        return false;
    memcpy(tmp, text, len);
    tmp[len] = '\0';
    if (!strchr("+-.0123456789", tmp[0]))
        return false; /* strtod would also take "nan", "inf" and hex */
    errno = 0;
    double v = strtod(tmp, &end);
    if (errno || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool json_number_of(double *out, struct json_object *v)
{
    size_t len = 0;
    const char *text = NULL;
    if (!v)
        return false;
    if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d))
            return false;
        *out = d;
        return true;
    }
    text = jsonv_text_raw(v, &len);
    return text && number_of(out, text, len);
}

/* A name, model, unit or serial: repaired, one line, bounded. */
static char *clean(struct json_object *v)
{
    char *s = jsonv_text_clean(v, PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
    return s ? s : xstrdup("");
}

static char *clean_bytes(const char *text, size_t len)
{
    return utf8_clean_shown(text, len, PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
}

/* Minutes east of UTC from a time difference, daylight saving flag and
 * bias; 0 when the difference is beyond a day. */
static int offset_of(long long diff, bool dst, long long bias)
{
    if (diff <= -1440 || diff >= 1440)
        return 0;
    if (bias < 0 || bias > 120)
        bias = 60;
    return (int)(diff + (dst ? bias : 0));
}

/* Puts the points in time order, keeping the order of equal times (the
 * platform lists them oldest first already; this makes it so whatever
 * came). An insertion sort: it costs one pass on a sorted list. */
static void sort_points(struct series *s)
{
    for (size_t i = 1; i < s->n_points; i++) {
        struct series_point p = s->points[i];
        size_t j = i;
        while (j > 0 && s->points[j - 1].unixtime > p.unixtime) {
            s->points[j] = s->points[j - 1];
            j--;
        }
        s->points[j] = p;
    }
}

/* ---- JSON ---- */

/* The channels of a record. The spec numbers a standalone record's
 * channels from 0, yet real replies number them from 1 as base-attached
 * ones do: a record that has a channel numbered 0 counts from 0. */
static void read_json_channels(struct series *out, struct json_object *chans)
{
    size_t len =
        chans && json_object_is_type(chans, json_type_array) ? json_object_array_length(chans) : 0;
    long long num = 0;
    bool from_zero = false;
    for (size_t i = 0; i < len; i++)
        from_zero |=
            jsonv_int(jsonv_member(json_object_array_get_idx(chans, i), "num"), &num) && num == 0;
    for (size_t i = 0; i < len && out->n_channels < SERIES_CHANNELS_MAX; i++) {
        struct json_object *c = json_object_array_get_idx(chans, i);
        if (!c || !json_object_is_type(c, json_type_object))
            continue;
        if (!jsonv_int(jsonv_member(c, "num"), &num))
            num = (long long)i + !from_zero;
        num += from_zero;
        if (num < 1 || num > SERIES_CHANNELS_MAX || series_channel_index(out, (int)num) >= 0)
            continue;
        struct series_channel *ch = &out->channels[out->n_channels++];
        ch->num = (int)num;
        ch->name = clean(jsonv_member(c, "name"));
        ch->unit = clean(jsonv_member(c, "unit"));
    }
}

/* One element of `data`; false when it has no usable unixtime. */
static bool read_json_point(struct series_point *p, struct json_object *d)
{
    long long v = 0;
    memset(p, 0, sizeof *p);
    if (!d || !json_object_is_type(d, json_type_object) ||
        !jsonv_int(jsonv_member(d, "unixtime"), &v) || v <= 0)
        return false;
    p->unixtime = v;
    p->data_id = jsonv_int(jsonv_member(d, "data-id"), &v) && v >= 0 && v <= 65535 ? (long)v : -1;
    for (int c = 0; c < SERIES_CHANNELS_MAX; c++) {
        char key[8];
        snprintf(key, sizeof key, "ch%d", c + 1);
        if (json_number_of(&p->v[c], jsonv_member(d, key)))
            p->valid |= 1u << c;
        else
            p->v[c] = 0;
    }
    return true;
}

int series_parse_json(struct series *out, const struct json_object *body, struct err *e)
{
    int rc = -1;
    long long diff = 0, flag = 0, bias = 60;
    struct json_object *data = jsonv_member(body, "data");
    struct json_object *serial = jsonv_member(body, "remote-serial");
    bool attached = serial != NULL;
    memset(out, 0, sizeof *out);
    if (!body || !json_object_is_type(body, json_type_object) || !data ||
        !json_object_is_type(data, json_type_array)) {
        err_set(e, "the graph-data reply has no 'data' array");
        goto out;
    }
    const char *prefix = attached ? "remote-" : "";
    char key[32];
    snprintf(key, sizeof key, "%sserial", prefix);
    out->serial = clean(jsonv_member(body, key));
    snprintf(key, sizeof key, "%smodel", prefix);
    out->model = clean(jsonv_member(body, key));
    snprintf(key, sizeof key, "%sname", prefix);
    out->name = clean(jsonv_member(body, key));
    out->base_serial = attached ? clean(jsonv_member(body, "base-serial")) : xstrdup(out->serial);
    if (jsonv_int(jsonv_member(body, "time-diff"), &diff)) {
        bool dst = jsonv_int(jsonv_member(body, "dst-flg"), &flag) && flag == 1;
        if (!jsonv_int(jsonv_member(body, "dst-bias"), &bias))
            bias = 60;
        out->utc_offset = offset_of(diff, dst, bias);
    }
    read_json_channels(out, jsonv_member(body, "channel"));
    size_t len = json_object_array_length(data);
    out->points = xreallocarray(NULL, len ? len : 1, sizeof *out->points);
    for (size_t i = 0; i < len; i++)
        if (read_json_point(&out->points[out->n_points], json_object_array_get_idx(data, i)))
            out->n_points++;
    sort_points(out);
    rc = 0;
out:
    if (rc < 0)
        series_free(out);
    return rc;
}

/* ---- CSV ---- */

#define CSV_CELLS_MAX (2 + SERIES_CHANNELS_MAX)
#define CSV_CELL_MAX 256 /* bytes kept of a cell; longer ones are cut */

/* One line of the CSV layout, split into cells (at most CSV_CELLS_MAX;
 * more are ignored). */
struct csv_line {
    char cell[CSV_CELLS_MAX][CSV_CELL_MAX];
    size_t len[CSV_CELLS_MAX];
    size_t n;
};

/* Reads the line that starts at text[*pos] into *line and moves *pos past
 * its end (LF or CRLF; a quoted cell may hold line breaks). Cells are
 * quoted ("a ""b""") or bare; the bytes of a cell past CSV_CELL_MAX - 1,
 * and the cells past CSV_CELLS_MAX, are dropped. False at the end of the
 * text. */
static bool csv_next_line(struct csv_line *line, const char *text, size_t len, size_t *pos)
{
    size_t i = *pos, c = 0;
    bool quoted = false, dropping = false;
    if (i >= len)
        return false;
    memset(line, 0, sizeof *line);
    for (; i < len; i++) {
        char ch = text[i];
        if (quoted && ch == '"' && i + 1 < len && text[i + 1] == '"') {
            i++; /* "" is one quote, kept below */
        } else if (ch == '"') {
            quoted = !quoted;
            continue;
        } else if (!quoted && ch == ',') {
            dropping = c + 1 == CSV_CELLS_MAX;
            c += !dropping;
            continue;
        } else if (!quoted && ch == '\n') {
            i++;
            break;
        } else if (!quoted && ch == '\r' && (i + 1 == len || text[i + 1] == '\n')) {
            continue;
        }
        if (!dropping && line->len[c] < CSV_CELL_MAX - 1)
            line->cell[c][line->len[c]++] = ch;
    }
    line->n = c + 1;
    *pos = i;
    return true;
}

/* The time difference and daylight saving of line 2's first cell, of the
 * form "time difference:GMT+09:00/daylight savings time:off". */
static bool csv_offset(int *out, const char *cell)
{
    const char *gmt = strstr(cell, "GMT");
    int hh = 0, mm = 0;
    char sign = 0;
    if (!gmt || sscanf(gmt + 3, "%c%2d:%2d", &sign, &hh, &mm) != 3 ||
        (sign != '+' && sign != '-') || hh > 23 || mm > 59)
        return false;
    const char *dst = strrchr(cell, ':');
    bool on = dst && strncmp(dst + 1, "on", 2) == 0;
    int diff = (hh * 60 + mm) * (sign == '-' ? -1 : 1);
    *out = offset_of(diff, on, 60);
    return true;
}

/* Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

/* "yyyy-mm-dd HH:mm:ss" (or with '/' between the date's parts) as seconds
 * since the epoch of that local clock. */
static bool csv_local_time(long long *out, const char *cell)
{
    int y, mo, d, h, mi, sec, used = 0;
    char s1, s2;
    if (sscanf(cell, "%4d%c%2d%c%2d %2d:%2d:%2d%n", &y, &s1, &mo, &s2, &d, &h, &mi, &sec, &used) !=
            8 ||
        cell[used] != '\0' || s1 != s2 || (s1 != '-' && s1 != '/') || y < 1970 || mo < 1 ||
        mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    *out = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec;
    return true;
}

int series_parse_csv(struct series *out, const char *text, size_t len, struct err *e)
{
    int rc = -1;
    size_t pos = 0, cap = 0, lineno = 3;
    struct csv_line *line = xcalloc(1, sizeof *line);
    memset(out, 0, sizeof *out);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        pos = 3; /* a byte-order mark */
    if (!csv_next_line(line, text, len, &pos) || line->n < 2 ||
        strcmp(line->cell[0], "Date/Time")) {
        err_set(e, "CSV line 1: not the graph-data layout (\"Date/Time\",\"Date/Time\",...)");
        goto out;
    }
    size_t n_channels = line->n - 2;
    if (!csv_next_line(line, text, len, &pos) || !csv_offset(&out->utc_offset, line->cell[0])) {
        err_set(e, "CSV line 2: no time difference of the form "
                   "\"time difference:GMT+09:00/daylight savings time:off\"");
        goto out;
    }
    out->n_channels = n_channels;
    for (size_t c = 0; c < n_channels; c++) {
        out->channels[c].num = (int)c + 1;
        out->channels[c].name = clean_bytes(line->cell[c + 2], line->len[c + 2]);
    }
    if (!csv_next_line(line, text, len, &pos)) {
        err_set(e, "CSV line 3: missing (the channels' units)");
        goto out;
    }
    for (size_t c = 0; c < n_channels; c++)
        out->channels[c].unit = clean_bytes(line->cell[c + 2], line->len[c + 2]);
    out->serial = xstrdup("");
    out->model = xstrdup("");
    out->name = xstrdup("");
    out->base_serial = xstrdup("");
    while (csv_next_line(line, text, len, &pos)) {
        long long local = 0;
        lineno++;
        if (line->n == 1 && line->len[0] == 0)
            continue; /* an empty line, such as the one after the last */
        if (!csv_local_time(&local, line->cell[0])) {
            err_set(e, "CSV line %zu: \"%.40s\" is not a time of the form yyyy-mm-dd HH:mm:ss",
                    lineno, line->cell[0]);
            goto out;
        }
        if (out->n_points == cap) {
            cap = cap ? 2 * cap : 64;
            out->points = xreallocarray(out->points, cap, sizeof *out->points);
        }
        struct series_point *p = &out->points[out->n_points++];
        memset(p, 0, sizeof *p);
        p->unixtime = local - (long long)out->utc_offset * 60;
        p->data_id = -1;
        for (size_t c = 0; c < n_channels && c + 2 < line->n; c++)
            if (number_of(&p->v[c], line->cell[c + 2], line->len[c + 2]))
                p->valid |= 1u << c;
            else
                p->v[c] = 0;
    }
    sort_points(out);
    rc = 0;
out:
    free(line);
    if (rc < 0)
        series_free(out);
    return rc;
}

int series_channel_index(const struct series *s, int num)
{
    for (size_t i = 0; i < s->n_channels; i++)
        if (s->channels[i].num == num)
            return (int)i;
    return -1;
}

bool series_follows(const struct series_point *a, const struct series_point *b)
{
    if (a->data_id < 0 || b->data_id < 0)
        return true;
    return b->data_id == (a->data_id + 1) % 65536;
}

void series_free(struct series *s)
{
    if (!s)
        return;
    free(s->serial);
    free(s->model);
    free(s->name);
    free(s->base_serial);
    for (size_t i = 0; i < s->n_channels; i++) {
        free(s->channels[i].name);
        free(s->channels[i].unit);
    }
    free(s->points);
    memset(s, 0, sizeof *s);
}
