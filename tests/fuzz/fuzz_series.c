/* Fuzzes the readers of graph-data replies (series.h): the input is read
 * as a JSON record when it parses as JSON, and as the CSV layout in any
 * case. Checks that every text they give out is valid UTF-8 within its
 * bound, the channels are numbered 1 to 4 without repeats, the points are
 * in time order with data-ids in range and values only where marked, and
 * that a trend of each channel (event.h) survives the outbox's JSON form. */
#include "event.h"
#include "fuzz.h"
#include "platform.h"
#include "series.h"
#include "util/utf8.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void check_text(const char *s)
{
    if (!s || strlen(s) > PLATFORM_NAME_MAX || !utf8_valid(s, strlen(s)))
        abort();
}

static void check_trend(const struct series *s, int num)
{
    if (s->n_points == 0)
        return;
    struct event_trend *t =
        event_trend_of(s, num, s->points[0].unixtime, s->points[s->n_points - 1].unixtime);
    if (!t)
        return;
    struct event ev = {.account = (char *)"fuzz",
                       .serial = (char *)"52C10001",
                       .kind = (char *)"ch1",
                       .text = (char *)"",
                       .trend = t};
    struct json_object *obj = event_to_json(&ev);
    struct event back;
    struct err e;
    if (event_from_json(&back, obj, &e) < 0 || !back.trend ||
        back.trend->series.n_points != t->series.n_points)
        abort();
    event_clear(&back);
    json_object_put(obj);
    event_trend_free(t);
}

static void check_series(const struct series *s)
{
    check_text(s->serial);
    check_text(s->model);
    check_text(s->name);
    check_text(s->base_serial);
    if (s->n_channels > SERIES_CHANNELS_MAX)
        abort();
    unsigned seen = 0;
    for (size_t c = 0; c < s->n_channels; c++) {
        int num = s->channels[c].num;
        if (num < 1 || num > SERIES_CHANNELS_MAX || (seen & (1u << (num - 1))))
            abort();
        seen |= 1u << (num - 1);
        check_text(s->channels[c].name);
        check_text(s->channels[c].unit);
    }
    for (size_t i = 0; i < s->n_points; i++) {
        const struct series_point *p = &s->points[i];
        if ((i > 0 && p->unixtime < s->points[i - 1].unixtime) || p->data_id < -1 ||
            p->data_id > 65535 || p->valid >= (1u << SERIES_CHANNELS_MAX))
            abort();
        for (int c = 0; c < SERIES_CHANNELS_MAX; c++)
            if (!(p->valid & (1u << c)) ? p->v[c] != 0 : !isfinite(p->v[c]))
                abort();
    }
    for (size_t c = 0; c < s->n_channels; c++)
        check_trend(s, s->channels[c].num);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct series s = {0};
    struct err e;
    struct json_tokener *tok = json_tokener_new();
    struct json_object *body = json_tokener_parse_ex(tok, (const char *)data, (int)size);
    json_tokener_free(tok);
    if (body && series_parse_json(&s, body, &e) == 0) {
        check_series(&s);
        series_free(&s);
    }
    json_object_put(body);
    if (series_parse_csv(&s, (const char *)data, size, &e) == 0) {
        check_series(&s);
        series_free(&s);
    }
    return 0;
}
