/* wsrelay-chart: draws the chart of one event's trend for wsrelay-net
 * (chartproc.h). Reads the event as event_to_json writes it on standard
 * input; writes the PNG on standard output and exits 0, or writes one
 * line saying why not and exits 1. */
#include "chart.h"
#include "chartproc.h"
#include "event.h"
#include "util/buf.h"
#include "util/fileio.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define INPUT_MAX (16u << 20) /* a trend of 65535 readings is under 4 MB */

int main(void)
{
    int rc = 1;
    struct buf in;
    struct err e = {{0}};
    struct event ev = {0};
    struct json_object *doc = NULL;
    unsigned char *png = NULL;
    size_t len = 0;
    buf_init(&in, INPUT_MAX);
    if (file_read_fd(&in, 0, "standard input", &e) < 0)
        goto out;
    doc = json_tokener_parse(buf_str(&in));
    if (!doc) {
        err_set(&e, "the event is not JSON");
        goto out;
    }
    if (event_from_json(&ev, doc, &e) < 0)
        goto out;
    if (!ev.trend || ev.trend->series.n_channels < 1) {
        err_set(&e, "the event has no trend");
        goto out;
    }
    const struct event_trend *t = ev.trend;
    char *title = chartproc_title(&ev);
    struct chart_spec spec = {
        .series = &t->series,
        .channel = t->series.channels[0].num,
        .since = t->since,
        .until = t->until > t->since ? t->until : t->since + 60,
        .has_upper = t->has_upper,
        .has_lower = t->has_lower,
        .upper = t->upper,
        .lower = t->lower,
        .marked = ev.unixtime,
        .mark = chart_mark_for(ev.kind, ev.state),
        .title = title,
    };
    int drawn = chart_png(&png, &len, &spec, &e);
    free(title);
    if (drawn < 0)
        goto out;
    if (file_write_all(1, png, len) < 0) {
        rc = 2; /* nobody to tell */
        goto out;
    }
    rc = 0;
out:
    if (rc == 1) {
        fputs(e.msg, stdout);
        putchar('\n');
    }
    free(png);
    event_clear(&ev);
    json_object_put(doc);
    buf_free(&in);
    chart_release();
    return rc;
}
