/* chart: the PNG of a channel (signature, IHDR, decoding back with cairo,
 * size under 40 KB at the default size for six hours of one-minute
 * readings, the same bytes for the same spec), and pixels that show the
 * drawing: the limits' dashed lines on the rows of their values, the
 * alarm moment's line on its column, the readings' line broken where a
 * data-id is skipped, a value is missing or the time jumps (not at the
 * 65535 -> 0 wrap), time ticks on the device's local hours across its
 * midnight; the errors. With WSRELAY_CHART_OUT=FILE the six-hour chart is
 * written to FILE (docs/images/chart-example.png is one). */
#include "chart.h"
#include "util/xalloc.h"

#include <cairo.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each test's process lets go of the fonts before it exits, for the
 * sanitizer build's leak check. */
static void release_fonts(void)
{
    chart_release();
}

TestSuite(chart, .fini = release_fonts);

/* Unix time of a UTC date and time (days_from_civil, proleptic Gregorian). */
static long long utc(int y, int mo, int d, int h, int mi)
{
    y -= mo <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    long long days = era * 146097 + doe - 719468;
    return days * 86400 + h * 3600 + mi * 60;
}

/* ---- series made by hand ---- */

static void series_start(struct series *s, int utc_offset, const char *unit)
{
    memset(s, 0, sizeof *s);
    s->serial = xstrdup("52C00001");
    s->model = xstrdup("TR-72wb");
    s->name = xstrdup("Fridge 3");
    s->base_serial = xstrdup("52C00001");
    s->utc_offset = utc_offset;
    s->channels[0] = (struct series_channel){1, xstrdup("Temperature"), xstrdup(unit)};
    s->channels[1] = (struct series_channel){2, xstrdup("Humidity"), xstrdup("%")};
    s->n_channels = 2;
}

/* Appends a reading of ch1 (`valid` false: without a value). */
static void add(struct series *s, long long t, long id, bool valid, double v)
{
    s->points = xgrowarray(s->points, s->n_points, sizeof *s->points);
    struct series_point *p = &s->points[s->n_points++];
    memset(p, 0, sizeof *p);
    p->unixtime = t;
    p->data_id = id;
    p->valid = valid ? 1u : 0u;
    p->v[0] = v;
}

#define T0 utc(2026, 3, 15, 0, 0) /* 09:00 in Tokyo */

/* A fridge over six hours, one reading a minute: the compressor's cycle
 * around 4 °C, a little noise, then the door left open at 13:30 local
 * time and the upper limit of 8 °C passed some minutes later. Values have
 * one decimal, as the loggers send them; data-ids wrap from 65535 to 0 on
 * the way. */
static void fridge(struct series *s)
{
    series_start(s, 540, "°C");
    unsigned seed = 12345;
    for (int i = 0; i <= 360; i++) {
        seed = seed * 1103515245u + 12345u;
        double noise = ((int)((seed >> 16) % 7) - 3) * 0.05;
        double cycle = 0.9 * sin(i * 2 * M_PI / 38.0);
        double warm = i > 270 ? (i - 270) * 0.2 : 0;
        if (warm > 7)
            warm = 7 + (i - 270 - 35) * 0.01;
        double v = round((4.2 + cycle + noise + warm) * 10) / 10;
        add(s, T0 + i * 60LL, (65400 + i) % 65536, true, v);
    }
}

/* The alarm: the first reading above the upper limit. */
static long long alarm_at(const struct series *s)
{
    for (size_t i = 0; i < s->n_points; i++)
        if (s->points[i].v[0] > 8)
            return s->points[i].unixtime;
    cr_assert_fail("no reading above 8");
    return 0;
}

static struct chart_spec fridge_spec(const struct series *s)
{
    return (struct chart_spec){.series = s,
                               .channel = 1,
                               .since = T0,
                               .until = T0 + 6 * 3600,
                               .has_upper = true,
                               .upper = 8,
                               .has_lower = true,
                               .lower = 2,
                               .marked = alarm_at(s),
                               .title = "Fridge 3 · Temperature"};
}

/* ---- the PNG read back ---- */

struct reader {
    const unsigned char *data;
    size_t len, at;
};

static cairo_status_t read_png(void *closure, unsigned char *data, unsigned int len)
{
    struct reader *r = closure;
    if (r->len - r->at < len)
        return CAIRO_STATUS_READ_ERROR;
    memcpy(data, r->data + r->at, len);
    r->at += len;
    return CAIRO_STATUS_SUCCESS;
}

struct image {
    unsigned char *png;
    size_t len;
    cairo_surface_t *surface;
    int width, height;
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Renders `spec`, checks the PNG's signature, IHDR and that it decodes to
 * the frame's size, and keeps the decoded picture. */
static struct image render(const struct chart_spec *spec)
{
    struct image im = {0};
    struct err e = {{0}};
    cr_assert_eq(chart_png(&im.png, &im.len, spec, &e), 0, "%s", e.msg);
    struct chart_frame f;
    cr_assert_eq(chart_frame(&f, spec, &e), 0, "%s", e.msg);

    cr_assert_gt(im.len, 33);
    cr_assert_eq(memcmp(im.png, "\x89PNG\r\n\x1a\n", 8), 0, "not a PNG signature");
    cr_assert_eq(memcmp(im.png + 12, "IHDR", 4), 0);
    cr_assert_eq(be32(im.png + 16), (uint32_t)f.width);
    cr_assert_eq(be32(im.png + 20), (uint32_t)f.height);

    struct reader r = {im.png, im.len, 0};
    im.surface = cairo_image_surface_create_from_png_stream(read_png, &r);
    cr_assert_eq(cairo_surface_status(im.surface), CAIRO_STATUS_SUCCESS, "%s",
                 cairo_status_to_string(cairo_surface_status(im.surface)));
    im.width = cairo_image_surface_get_width(im.surface);
    im.height = cairo_image_surface_get_height(im.surface);
    cr_assert_eq(im.width, f.width);
    cr_assert_eq(im.height, f.height);
    cr_assert_eq(r.at, r.len, "bytes after the PNG's end");
    return im;
}

static void image_free(struct image *im)
{
    cairo_surface_destroy(im->surface);
    free(im->png);
}

static unsigned pixel(const struct image *im, int x, int y)
{
    cr_assert(x >= 0 && x < im->width && y >= 0 && y < im->height, "pixel %d,%d outside", x, y);
    const unsigned char *row = cairo_image_surface_get_data(im->surface) +
                               (size_t)y * (size_t)cairo_image_surface_get_stride(im->surface);
    uint32_t argb;
    memcpy(&argb, row + 4 * (size_t)x, 4);
    return argb & 0xFFFFFFu;
}

/* Pixels of colour `rgb` on row y from x0 to x1 (excluded). */
static int count_row(const struct image *im, int y, int x0, int x1, unsigned rgb)
{
    int n = 0;
    for (int x = x0; x < x1; x++)
        n += pixel(im, x, y) == rgb;
    return n;
}

static int count_column(const struct image *im, int x, int y0, int y1, unsigned rgb)
{
    int n = 0;
    for (int y = y0; y < y1; y++)
        n += pixel(im, x, y) == rgb;
    return n;
}

/* Whether a pixel near (x, y), within `r` pixels, is close to `rgb`. */
static bool near(const struct image *im, double x, double y, int r, unsigned rgb)
{
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            int px = (int)floor(x) + dx, py = (int)floor(y) + dy;
            if (px < 0 || py < 0 || px >= im->width || py >= im->height)
                continue;
            unsigned c = pixel(im, px, py);
            int d = 0;
            for (int s = 0; s < 24; s += 8)
                d += abs((int)(c >> s & 0xFF) - (int)(rgb >> s & 0xFF));
            if (d <= 60)
                return true;
        }
    return false;
}

static double x_of(const struct chart_frame *f, long long t)
{
    return f->left + (double)(t - f->since) * (f->right - f->left) / (double)(f->until - f->since);
}

static double y_of(const struct chart_frame *f, double v)
{
    return f->top + (f->y_max - v) * (f->bottom - f->top) / (f->y_max - f->y_min);
}

static struct chart_frame frame_of(const struct chart_spec *spec)
{
    struct chart_frame f;
    struct err e = {{0}};
    cr_assert_eq(chart_frame(&f, spec, &e), 0, "%s", e.msg);
    return f;
}

/* ---- the six-hour chart ---- */

Test(chart, six_hours_make_a_small_png_of_the_default_size)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    struct image im = render(&spec);
    cr_assert_eq(im.width, CHART_WIDTH_DEFAULT);
    cr_assert_eq(im.height, CHART_HEIGHT_DEFAULT);
    cr_assert_lt(im.len, 40 * 1024, "%zu bytes", im.len);
    cr_log_info("six hours at the default size: %zu bytes", im.len);

    const char *path = getenv("WSRELAY_CHART_OUT");
    if (path && *path) {
        FILE *fp = fopen(path, "wb");
        cr_assert_not_null(fp, "%s", path);
        cr_assert_eq(fwrite(im.png, 1, im.len, fp), im.len);
        cr_assert_eq(fclose(fp), 0);
    }
    image_free(&im);
    series_free(&s);
}

Test(chart, the_same_spec_gives_the_same_bytes)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    struct image a = render(&spec), b = render(&spec);
    cr_assert_eq(a.len, b.len);
    cr_assert_eq(memcmp(a.png, b.png, a.len), 0);
    image_free(&a);
    image_free(&b);
    series_free(&s);
}

Test(chart, the_value_axis_holds_the_readings_and_the_limits)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    struct chart_frame f = frame_of(&spec);
    cr_assert_eq(f.n_points, 361);
    cr_assert_leq(f.y_min, 2 - f.y_step / 2, "y_min %g", f.y_min);
    cr_assert_geq(f.y_max, 11.5, "y_max %g", f.y_max);
    cr_assert_lt(f.y_max - f.y_min, 20, "%g to %g", f.y_min, f.y_max);
    for (size_t i = 0; i < 5; i++) /* ends are whole steps */
        cr_assert_float_eq(fmod(fabs((i < 2 ? f.y_min : f.y_max) / f.y_step) + 1e-9, 1), 0, 1e-6,
                           "%g / %g", i < 2 ? f.y_min : f.y_max, f.y_step);
    double m = f.y_step / pow(10, floor(log10(f.y_step) + 1e-9));
    cr_assert(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 2.5) < 1e-9 ||
                  fabs(m - 5) < 1e-9,
              "step %g", f.y_step);
    cr_assert_eq(chart_row(&f, f.y_max), f.top);
    cr_assert_eq(chart_row(&f, f.y_min), f.bottom);
    cr_assert_eq(chart_column(&f, f.since), f.left);
    cr_assert_eq(chart_column(&f, f.until), f.right);
    cr_assert_lt(chart_row(&f, 8), chart_row(&f, 2));
    cr_assert_eq(f.x_step, 3600, "x_step %lld", f.x_step);
    cr_assert_eq(f.x_first, T0);
    series_free(&s);
}

Test(chart, limits_are_dashed_lines_on_the_rows_of_their_values)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    struct chart_frame f = frame_of(&spec);
    struct image im = render(&spec);
    int w = f.right - f.left;
    int upper = chart_row(&f, 8), lower = chart_row(&f, 2);
    for (int y = upper - 1; y <= upper; y++) {
        int n = count_row(&im, y, f.left, f.right, CHART_RGB_LIMIT);
        cr_assert_gt(n, w * 45 / 100, "row %d: %d of %d pixels", y, n, w);
        cr_assert_lt(n, w * 80 / 100, "row %d is not dashed: %d of %d pixels", y, n, w);
    }
    for (int y = lower - 1; y <= lower; y++)
        cr_assert_gt(count_row(&im, y, f.left, f.right, CHART_RGB_LIMIT), w * 45 / 100);

    /* Between the lines, left of the alarm, there is only the background,
     * the grid and the readings: no limit colour, mostly background. */
    int mid = chart_row(&f, 5.5);
    int until_alarm = chart_column(&f, spec.marked) - 20;
    for (int y = upper + 4; y < lower - 4; y += 3) {
        cr_assert_eq(count_row(&im, y, f.left, until_alarm, CHART_RGB_LIMIT), 0, "row %d", y);
        cr_assert_eq(count_row(&im, y, f.left, until_alarm, CHART_RGB_MARK), 0, "row %d", y);
    }
    int bg = count_row(&im, mid, f.left, until_alarm, CHART_RGB_BACKGROUND);
    cr_assert_gt(bg, (until_alarm - f.left) * 80 / 100, "%d", bg);
    cr_assert_eq(pixel(&im, f.left + 3, chart_row(&f, 6.2)), CHART_RGB_BACKGROUND);
    image_free(&im);
    series_free(&s);
}

Test(chart, the_alarm_moment_is_a_line_on_its_column)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    struct chart_frame f = frame_of(&spec);
    struct image im = render(&spec);
    int col = chart_column(&f, spec.marked), h = f.bottom - f.top;
    for (int x = col - 1; x <= col; x++) {
        int n = count_column(&im, x, f.top, f.bottom, CHART_RGB_MARK);
        cr_assert_gt(n, h * 90 / 100, "column %d: %d of %d pixels", x, n, h);
    }
    cr_assert_eq(count_column(&im, col - 8, f.top, f.bottom, CHART_RGB_MARK), 0);
    cr_assert_eq(count_column(&im, col + 8, f.top, f.bottom, CHART_RGB_MARK), 0);
    /* Its label is above the plot. */
    int label = 0;
    for (int y = 0; y < f.top; y++)
        label += count_row(&im, y, col - 40, col + 40, CHART_RGB_MARK);
    cr_assert_gt(label, 20);

    /* Without a moment, or with one outside the span, there is no mark. */
    spec.marked = 0;
    struct image none = render(&spec);
    spec.marked = T0 - 60;
    struct image outside = render(&spec);
    for (int y = 0; y < im.height; y++) {
        cr_assert_eq(count_row(&none, y, 0, none.width, CHART_RGB_MARK), 0);
        cr_assert_eq(count_row(&outside, y, 0, none.width, CHART_RGB_MARK), 0);
    }
    cr_assert_eq(none.len, outside.len);
    image_free(&none);
    image_free(&outside);
    image_free(&im);
    series_free(&s);
}

/* Each kind of moment says what it is, in its own colour: a recovery is
 * never drawn as an alarm. */
Test(chart, each_kind_of_moment_is_labelled_as_what_it_is)
{
    static const struct {
        const char *kind, *state;
        enum chart_mark mark;
        const char *label;
        unsigned rgb;
    } cases[] = {
        {"ch1", "alarm", CHART_MARK_ALARM, "alarm 20:06", CHART_RGB_MARK},
        {"ch1", "recovered", CHART_MARK_RECOVERY, "recovered 20:06", CHART_RGB_GOOD},
        {"reading", "alarm", CHART_MARK_WARNING, "warning 20:06", CHART_RGB_MARK},
        {"reading", "recovered", CHART_MARK_BACK, "back 20:06", CHART_RGB_GOOD},
        {"ch2", "sensor-error", CHART_MARK_ALERT, "alert 20:06", CHART_RGB_OTHER},
        {"ch1", NULL, CHART_MARK_ALARM, "alarm 20:06", CHART_RGB_MARK},
    };
    unsigned all[] = {CHART_RGB_MARK, CHART_RGB_GOOD, CHART_RGB_OTHER};
    struct series s;
    fridge(&s);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[64];
        cr_assert_eq(chart_mark_for(cases[i].kind, cases[i].state), cases[i].mark, "case %zu", i);
        chart_mark_label(label, sizeof label, cases[i].mark, 1795000000, 540);
        cr_assert_str_eq(label, cases[i].label);
        cr_assert_eq(chart_mark_rgb(cases[i].mark), cases[i].rgb, "case %zu", i);
        struct chart_spec spec = fridge_spec(&s);
        spec.mark = cases[i].mark;
        struct chart_frame f = frame_of(&spec);
        struct image im = render(&spec);
        int col = chart_column(&f, spec.marked), h = f.bottom - f.top;
        cr_assert_gt(count_column(&im, col, f.top, f.bottom, cases[i].rgb), h * 90 / 100,
                     "case %zu: its line", i);
        int text = 0;
        for (int y = 0; y < f.top; y++)
            text += count_row(&im, y, col - 60, col + 60, cases[i].rgb);
        cr_assert_gt(text, 20, "case %zu: its label", i);
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            for (int y = 0; y < im.height && all[k] != cases[i].rgb; y++)
                cr_assert_eq(count_row(&im, y, 0, im.width, all[k]), 0, "case %zu: %06x in row %d",
                             i, all[k], y);
        image_free(&im);
    }
    series_free(&s);
}

Test(chart, the_readings_are_a_line_through_their_values)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    struct chart_frame f = frame_of(&spec);
    struct image im = render(&spec);
    double mark = x_of(&f, spec.marked);
    for (size_t i = 0; i < s.n_points; i += 17) {
        const struct series_point *p = &s.points[i];
        double x = x_of(&f, p->unixtime), y = y_of(&f, p->v[0]);
        if (fabs(x - mark) < 8)
            continue; /* under the alarm moment's line and dot */
        cr_assert(near(&im, x, y, 1, CHART_RGB_LINE), "reading %zu (%g) not drawn at %g,%g", i,
                  p->v[0], x, y);
        cr_assert(!near(&im, x, y - 25, 2, CHART_RGB_LINE) || i > 260, "reading %zu", i);
    }
    image_free(&im);
    series_free(&s);
}

Test(chart, more_readings_than_pixels_are_a_band_with_its_gaps)
{
    /* A day of one-minute readings, an hour of them lost at noon. */
    struct series s;
    series_start(&s, 540, "°C");
    for (int i = 0; i < 1440; i++)
        if (i < 720 || i >= 780)
            add(&s, T0 + 60LL * i, i, true, round((4 + 1.5 * sin(i / 30.0)) * 10) / 10);
    struct chart_spec spec = {.series = &s,
                              .channel = 1,
                              .since = T0,
                              .until = T0 + 86400,
                              .has_upper = true,
                              .upper = 8,
                              .title = "Fridge 3 · Temperature"};
    struct chart_frame f = frame_of(&spec);
    cr_assert_gt(f.n_points, (size_t)(f.right - f.left));
    struct image im = render(&spec);
    cr_assert_lt(im.len, 40 * 1024, "%zu bytes", im.len);
    for (size_t i = 0; i < s.n_points; i += 37) {
        const struct series_point *p = &s.points[i];
        int x = (int)floor(x_of(&f, p->unixtime));
        cr_assert_eq(pixel(&im, x, chart_row(&f, p->v[0])), CHART_RGB_LINE, "reading %zu", i);
    }
    int gap = (int)x_of(&f, T0 + 750 * 60);
    for (int x = gap - 5; x <= gap + 5; x++)
        cr_assert_eq(count_column(&im, x, f.top, f.bottom, CHART_RGB_LINE), 0, "column %d", x);
    image_free(&im);
    series_free(&s);
}

/* ---- breaks in the line ---- */

/* Thirty readings of 5.0 a minute apart over half an hour, so that the
 * line is flat and a minute is about 17 pixels wide. */
#define FLAT_T0 utc(2026, 3, 15, 2, 0)

static struct chart_spec flat_spec(const struct series *s)
{
    return (struct chart_spec){
        .series = s, .channel = 1, .since = FLAT_T0, .until = FLAT_T0 + 1800};
}

/* Whether the line is drawn halfway between readings i and i + 1. */
static bool joined(const struct image *im, const struct chart_frame *f, const struct series *s,
                   size_t i)
{
    double x = (x_of(f, s->points[i].unixtime) + x_of(f, s->points[i + 1].unixtime)) / 2;
    int row = chart_row(f, 5.0), n = 0;
    for (int y = row - 3; y <= row + 3; y++)
        n += pixel(im, (int)x, y) == CHART_RGB_LINE;
    return n > 0;
}

Test(chart, a_skipped_data_id_breaks_the_line_the_wrap_does_not)
{
    struct series s;
    series_start(&s, 540, "°C");
    long id = 65530;
    for (int i = 0; i < 30; i++) {
        if (i == 15)
            id += 4; /* three readings lost, the time goes on regularly */
        add(&s, FLAT_T0 + 60LL * i, id % 65536, true, 5.0);
        id++;
    }
    cr_assert_eq(s.points[5].data_id, 65535);
    cr_assert_eq(s.points[6].data_id, 0);
    struct chart_spec spec = flat_spec(&s);
    struct chart_frame f = frame_of(&spec);
    struct image im = render(&spec);
    for (size_t i = 0; i + 1 < s.n_points; i++)
        cr_assert_eq(joined(&im, &f, &s, i), i != 14, "between readings %zu and %zu", i, i + 1);
    image_free(&im);
    series_free(&s);
}

Test(chart, a_reading_without_value_breaks_the_line_and_one_alone_is_a_dot)
{
    struct series s;
    series_start(&s, 0, "°C");
    for (int i = 0; i < 30; i++)
        add(&s, FLAT_T0 + 60LL * i, 100 + i, i != 10 && i != 20 && i != 22, 5.0);
    s.points[3].valid = 2; /* a value of ch2 only */
    s.points[25].v[0] = NAN;
    s.points[25].valid = 1;
    struct chart_spec spec = flat_spec(&s);
    struct chart_frame f = frame_of(&spec);
    cr_assert_eq(f.n_points, 25);
    struct image im = render(&spec);
    for (size_t i = 0; i + 1 < s.n_points; i++) {
        bool gap = i == 2 || i == 3 || i == 9 || i == 10 || i == 19 || i == 20 || i == 21 ||
                   i == 22 || i == 24 || i == 25;
        cr_assert_eq(joined(&im, &f, &s, i), !gap, "between readings %zu and %zu", i, i + 1);
    }
    /* Reading 21, alone between two without values, is a dot. */
    double x = x_of(&f, s.points[21].unixtime);
    cr_assert_eq(pixel(&im, (int)x, chart_row(&f, 5.0)), CHART_RGB_LINE);
    image_free(&im);
    series_free(&s);
}

Test(chart, a_jump_in_time_breaks_the_line_when_there_are_no_data_ids)
{
    struct series s;
    series_start(&s, 0, "°C");
    long long t = FLAT_T0;
    for (int i = 0; i < 24; i++) {
        add(&s, t, -1, true, 5.0);
        t += i == 8 ? 180 : i == 16 ? 240 : 60; /* three intervals go, four break */
    }
    struct chart_spec spec = flat_spec(&s);
    struct chart_frame f = frame_of(&spec);
    struct image im = render(&spec);
    for (size_t i = 0; i + 1 < s.n_points; i++)
        cr_assert_eq(joined(&im, &f, &s, i), i != 16, "between readings %zu and %zu", i, i + 1);
    image_free(&im);
    series_free(&s);
}

Test(chart, points_outside_the_span_are_left_out)
{
    struct series s;
    series_start(&s, 0, "°C");
    add(&s, FLAT_T0 - 600, 1, true, 40.0);
    for (int i = 0; i < 30; i++)
        add(&s, FLAT_T0 + 60LL * i, 2 + i, true, 5.0);
    add(&s, FLAT_T0 + 2400, 32, true, -30.0);
    struct chart_spec spec = flat_spec(&s);
    struct chart_frame f = frame_of(&spec);
    cr_assert_eq(f.n_points, 30);
    cr_assert_lt(f.y_max, 10);
    cr_assert_gt(f.y_min, 0);
    series_free(&s);
}

/* ---- the time axis ---- */

Test(chart, time_ticks_are_local_hours_across_the_devices_midnight)
{
    /* 12:00 to 18:00 UTC is 21:00 to 03:00 in Tokyo. */
    struct series s;
    series_start(&s, 540, "°C");
    long long since = utc(2026, 3, 15, 12, 0);
    for (int i = 0; i <= 360; i++)
        add(&s, since + 60LL * i, i, true, 20 + 3 * sin(i / 40.0));
    struct chart_spec spec = {.series = &s, .channel = 1, .since = since, .until = since + 21600};
    struct chart_frame f = frame_of(&spec);
    cr_assert_eq(f.x_step, 3600);
    cr_assert_eq((f.x_first + 540 * 60) % 3600, 0);
    struct image im = render(&spec);
    int midnight = chart_column(&f, utc(2026, 3, 15, 15, 0));
    cr_assert_gt(count_column(&im, midnight - 1, f.top, f.bottom, CHART_RGB_GRID),
                 (f.bottom - f.top) * 80 / 100);
    cr_assert_lt(count_column(&im, midnight - 20, f.top, f.bottom, CHART_RGB_GRID),
                 (f.bottom - f.top) * 20 / 100); /* the horizontal grid lines only */

    /* The dates take a second line of labels: the plot ends higher than
     * the same span's in UTC, which does not cross a midnight. */
    s.utc_offset = 0;
    struct chart_frame same_day = frame_of(&spec);
    cr_assert_lt(f.bottom, same_day.bottom - 10, "%d, %d", f.bottom, same_day.bottom);
    /* ... and the date is under the midnight's time. */
    int ink = 0;
    for (int y = same_day.bottom + 4; y < im.height; y++)
        ink += 60 - count_row(&im, y, midnight - 30, midnight + 30, CHART_RGB_BACKGROUND);
    cr_assert_gt(ink, 40);

    /* A local time with half an hour: ticks on its whole hours. */
    s.utc_offset = 330;
    f = frame_of(&spec);
    cr_assert_eq((f.x_first + 330 * 60) % f.x_step, 0);
    cr_assert_eq(f.x_first, since + 1800);
    image_free(&im);
    series_free(&s);
}

Test(chart, long_spans_take_days_as_ticks)
{
    struct series s;
    series_start(&s, 540, "%");
    long long since = utc(2026, 3, 1, 15, 0);
    for (int i = 0; i <= 14 * 24; i++)
        add(&s, since + 3600LL * i, i, true, 50 + 10 * sin(i / 9.0));
    struct chart_spec spec = {
        .series = &s, .channel = 1, .since = since, .until = since + 14 * 86400};
    struct chart_frame f = frame_of(&spec);
    cr_assert_geq(f.x_step, 86400);
    cr_assert_eq((f.x_first + 540 * 60) % 86400, 0);
    struct image im = render(&spec);
    image_free(&im);
    series_free(&s);
}

/* ---- text ---- */

Test(chart, japanese_long_and_broken_titles_never_fail)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    const char *titles[] = {
        "冷蔵庫3 · 温度 (TR-72wb 52C00001)",
        "\xff\xfe broken \xe3\x81",
        "A very long device name that goes on and on, far beyond what the picture's width can "
        "hold, and then some more words, and more",
        "",
        NULL,
    };
    for (size_t i = 0; i < sizeof titles / sizeof *titles; i++) {
        spec.title = titles[i];
        struct image im = render(&spec);
        cr_assert_lt(im.len, 40 * 1024);
        image_free(&im);
    }
    /* A unit made of letters the faces may lack. */
    free(s.channels[0].unit);
    s.channels[0].unit = xstrdup("℃");
    spec.title = "温度";
    struct image im = render(&spec);
    image_free(&im);
    series_free(&s);
}

Test(chart, sizes_follow_the_spec)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    int sizes[][2] = {{CHART_WIDTH_MIN, CHART_HEIGHT_MIN}, {800, 400}, {1200, 300}};
    for (size_t i = 0; i < 3; i++) {
        spec.width = sizes[i][0];
        spec.height = sizes[i][1];
        struct image im = render(&spec);
        cr_assert_eq(im.width, sizes[i][0]);
        cr_assert_eq(im.height, sizes[i][1]);
        image_free(&im);
    }
    series_free(&s);
}

Test(chart, extreme_values_and_a_long_unit_still_draw)
{
    struct series s;
    series_start(&s, -720, "a unit far longer than any a logger has");
    for (int i = 0; i < 60; i++)
        add(&s, FLAT_T0 + 60LL * i, i, true, i % 2 ? 1e12 : -1e12);
    add(&s, FLAT_T0 + 3600, 60, true, 2e12); /* beyond: without a value */
    struct chart_spec spec = {.series = &s,
                              .channel = 1,
                              .since = FLAT_T0,
                              .until = FLAT_T0 + 3600,
                              .has_upper = true,
                              .upper = 1e12,
                              .width = CHART_WIDTH_MIN,
                              .height = CHART_HEIGHT_MIN};
    struct chart_frame f = frame_of(&spec);
    cr_assert_eq(f.n_points, 60);
    cr_assert_lt(f.left, f.right);
    struct image im = render(&spec);
    image_free(&im);
    series_free(&s);
}

/* ---- errors ---- */

static void fails(const struct chart_spec *spec, const char *msg)
{
    unsigned char *out = (unsigned char *)"untouched";
    size_t len = 42;
    struct err e = {{0}};
    cr_assert_eq(chart_png(&out, &len, spec, &e), -1);
    cr_assert_str_eq((char *)out, "untouched");
    cr_assert_eq(len, 42);
    cr_assert_str_eq(e.msg, msg);
    struct chart_frame f = {.width = 7};
    memset(&e, 0, sizeof e);
    cr_assert_eq(chart_frame(&f, spec, &e), -1);
    cr_assert_eq(f.width, 7);
    cr_assert_str_eq(e.msg, msg);
}

Test(chart, a_span_without_a_value_fails)
{
    struct series s;
    series_start(&s, 540, "°C");
    for (int i = 0; i < 30; i++)
        add(&s, FLAT_T0 + 60LL * i, i, i < 5, 5.0);
    struct chart_spec spec = flat_spec(&s);
    spec.since = FLAT_T0 + 600;
    fails(&spec, "52C00001 ch1: no reading between 2026-03-15T02:10:00Z and "
                 "2026-03-15T02:30:00Z");
    spec.since = FLAT_T0 + 3600;
    spec.until = FLAT_T0 + 7200;
    fails(&spec, "52C00001 ch1: no reading between 2026-03-15T03:00:00Z and "
                 "2026-03-15T04:00:00Z");
    spec = flat_spec(&s);
    spec.channel = 2; /* the points have no value of ch2 */
    fails(&spec, "52C00001 ch2: no reading between 2026-03-15T02:00:00Z and "
                 "2026-03-15T02:30:00Z");
    struct series empty = {0};
    spec.series = &empty;
    fails(&spec, "ch2: no reading between 2026-03-15T02:00:00Z and 2026-03-15T02:30:00Z");
    series_free(&s);
}

Test(chart, bad_specs_fail)
{
    struct series s;
    fridge(&s);
    struct chart_spec spec = fridge_spec(&s);
    spec.width = CHART_WIDTH_MIN - 1;
    fails(&spec, "chart: width 239 is not 240 to 2400");
    spec.width = CHART_WIDTH_MAX + 1;
    fails(&spec, "chart: width 2401 is not 240 to 2400");
    spec.width = -600;
    fails(&spec, "chart: width -600 is not 240 to 2400");
    spec.width = 0;
    spec.height = CHART_HEIGHT_MIN - 1;
    fails(&spec, "chart: height 159 is not 160 to 1600");
    spec.height = 100000;
    fails(&spec, "chart: height 100000 is not 160 to 1600");
    spec.height = 0;
    spec.channel = 0;
    fails(&spec, "chart: channel 0 is not 1 to 4");
    spec.channel = 5;
    fails(&spec, "chart: channel 5 is not 1 to 4");
    spec.channel = 1;
    spec.until = spec.since;
    fails(&spec, "chart: empty span (since 1773532800, until 1773532800)");
    spec.since = -1;
    spec.until = T0;
    fails(&spec, "chart: span -1 to 1773532800 is not within the years 1970 to 9999");
    spec.since = T0;
    spec.until = CHART_TIME_MAX + 1;
    fails(&spec, "chart: span 1773532800 to 253402300800 is not within the years 1970 to 9999");
    spec.until = T0 + 400 * 86400 + 1;
    fails(&spec, "chart: span of 34560001 s is longer than 400 days");
    spec.until = T0 + 400 * 86400; /* the longest */
    struct image longest = render(&spec);
    image_free(&longest);
    spec = fridge_spec(&s);
    spec.upper = NAN;
    fails(&spec, "chart: upper limit nan is out of range");
    spec = fridge_spec(&s);
    spec.lower = -INFINITY;
    fails(&spec, "chart: lower limit -inf is out of range");
    spec.series = NULL;
    fails(&spec, "chart: no series");
    series_free(&s);
}
