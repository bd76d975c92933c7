/* chartproc: a chart drawn by the real wsrelay-chart beside the test
 * binary (the build directory), and what comes back when it cannot be. */
#include "chart.h"
#include "chartproc.h"
#include "event.h"
#include "series.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* A fridge's channel 1, a reading every 10 minutes from `t0`. */
static void fridge(struct series *s, long long t0, size_t n)
{
    memset(s, 0, sizeof *s);
    s->serial = xstrdup("52C10001");
    s->utc_offset = 540;
    s->n_channels = 1;
    s->channels[0] = (struct series_channel){1, xstrdup("温度"), xstrdup("C")};
    s->points = xcalloc(n, sizeof *s->points);
    for (size_t i = 0; i < n; i++) {
        struct series_point *p = &s->points[s->n_points++];
        p->unixtime = t0 + 600 * (long long)i;
        p->data_id = (long)i;
        p->valid = 1;
        p->v[0] = 4.0 + 0.5 * (double)i;
    }
}

static struct event alarm(void)
{
    struct event ev = {0};
    ev.account = xstrdup("tokyo");
    ev.serial = xstrdup("52C10001");
    ev.model = xstrdup("");
    ev.name = xstrdup("冷蔵庫");
    ev.kind = xstrdup("ch1");
    ev.text = xstrdup("CH1 Upper Limit Exceeded 8.5C (limit 8.0C)");
    ev.unixtime = 1795003000;
    ev.utc_offset = 540;
    return ev;
}

Test(chartproc, the_helper_draws_the_chart_of_a_trend)
{
    struct series s;
    struct event ev = alarm();
    unsigned char *png = NULL;
    size_t len = 0;
    struct err e = {{0}};
    fridge(&s, 1795000000, 12);
    ev.trend = event_trend_of(&s, 1, 1795000000, 1795006600);
    cr_assert_not_null(ev.trend);
    cr_assert_eq(chartproc_png(&png, &len, &ev, NULL, &e), 0, "%s", e.msg);
    cr_assert_gt(len, 1000);
    cr_assert_lt(len, CHART_PNG_MAX);
    cr_expect(memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
    /* The same picture as drawn here. */
    unsigned char *here = NULL;
    size_t here_len = 0;
    char *title = chartproc_title(&ev);
    cr_expect_str_eq(title, "冷蔵庫 · 温度");
    struct chart_spec spec = {.series = &ev.trend->series,
                              .channel = 1,
                              .since = ev.trend->since,
                              .until = ev.trend->until,
                              .marked = ev.unixtime,
                              .title = title};
    cr_assert_eq(chart_png(&here, &here_len, &spec, &e), 0, "%s", e.msg);
    cr_expect(here_len == len && memcmp(here, png, len) == 0, "the helper drew another picture");
    free(here);
    free(title);
    free(png);
    series_free(&s);
    event_clear(&ev);
    chart_release();
}

Test(chartproc, the_helpers_reason_comes_back)
{
    struct series s;
    struct event ev = alarm();
    unsigned char *png = (unsigned char *)"x";
    size_t len = 7;
    struct err e = {{0}};
    fridge(&s, 1795000000, 12);
    ev.trend = event_trend_of(&s, 1, 1795000000, 1795006600);
    cr_assert_not_null(ev.trend);
    /* A channel the event's JSON cannot carry: the helper reads no trend. */
    ev.trend->series.channels[0].num = 9;
    cr_assert_eq(chartproc_png(&png, &len, &ev, NULL, &e), -1);
    cr_expect_null(png);
    cr_expect_eq(len, 0);
    cr_expect_str_eq(e.msg, "the event has no trend", "the helper's own line");
    series_free(&s);
    event_clear(&ev);
}

Test(chartproc, an_event_without_a_trend_has_no_chart)
{
    struct event ev = alarm();
    unsigned char *png = NULL;
    size_t len = 0;
    struct err e = {{0}};
    cr_assert_eq(chartproc_png(&png, &len, &ev, NULL, &e), -1);
    cr_expect_null(png);
    cr_expect_str_eq(e.msg, "no trend to draw");
    event_clear(&ev);
}
