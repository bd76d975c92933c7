/* One channel of a series drawn as a PNG with cairo (chart.h). The layout
 * is planned first (the frame: where the plot goes, its value and time
 * ticks, measured with the fonts that will draw them), then drawn on an
 * RGB image and written out as a PNG into a capped buffer.
 *
 * The picture is meant to be read on a phone in an alarm mail, so the text
 * is large for the picture's size, the marks are two pixels wide and
 * aligned to whole pixels where they are straight, and there are only a
 * few flat colours, which keeps the PNG small. */
#include "chart.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEXT_MAX 512       /* bytes of a title that are kept */
#define UNIT_MAX 32        /* bytes of a unit that are kept */
#define GAP_FACTOR 3       /* a jump of more than this many typical intervals breaks the line */
#define VALUE_SPAN_MIN 1.0 /* the least range of values the axis shows */
#define VALUE_ABS_MAX 1e12 /* readings and limits beyond it are not drawn */
#define X_TICKS_MAX 400    /* a bound on the time axis's ticks, whatever the span */
#define FAMILY "sans-serif"

#define RGB_TEXT 0x333333u
#define RGB_TITLE 0x111111u
#define RGB_FRAME 0xA0A0A0u

/* Faces tried, in order, when the default one lacks a character of the
 * title or the unit: the Japanese faces Debian ships, by family name. A
 * name fontconfig does not know gives the default face back, which the
 * glyph check then turns down. */
static const char *const fallback_families[] = {
    "Noto Sans CJK JP", "IPAexGothic", "IPAGothic",
    "VL Gothic",        "TakaoGothic", "Droid Sans Fallback",
};

static const char *const month_names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* The time axis's tick spacings, in seconds: the first that leaves room
 * for the labels is taken. */
static const long long x_steps[] = {
    60,    120,   300,   600,   900,    1200,   1800,   3600,    7200,    10800,
    14400, 21600, 43200, 86400, 172800, 259200, 604800, 1209600, 2419200,
};

/* Everything chart_frame computes and the drawing needs besides. */
struct plan {
    struct chart_frame f;
    const struct series *s;
    int ch;                            /* index of the channel's value in a point's v[] */
    char *unit;                        /* cleaned; "" when the series names none */
    char *title;                       /* cleaned and cut to the width; NULL: no title line */
    const char *family, *title_family; /* of the labels (with the unit), of the title */
    double font, title_font;
    double title_base;  /* baseline of the title */
    double mark_base;   /* baseline of the alarm moment's label; 0: no mark */
    int decimals;       /* of the value axis's labels */
    bool dates;         /* a date under the first time label and where it changes */
    bool days;          /* the time ticks are days apart: their labels are dates */
    long long interval; /* the typical time between two readings; 0: unknown */
    size_t first, end;  /* the points within the span: [first, end) */
};

static void set_rgb(cairo_t *cr, unsigned rgb)
{
    cairo_set_source_rgb(cr, ((rgb >> 16) & 0xFF) / 255.0, ((rgb >> 8) & 0xFF) / 255.0,
                         (rgb & 0xFF) / 255.0);
}

static int cairo_failed(cairo_status_t st, struct err *e)
{
    return err_set(e, "chart: cairo: %s", cairo_status_to_string(st));
}

static long long floor_div(long long a, long long b)
{
    long long q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void format_utc(char *out, size_t size, long long t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, size, "%lld", t);
}

/* The local date and time of unix time `t` on a device `offset` minutes
 * east of UTC. */
static struct tm local_tm(long long t, int offset)
{
    time_t tt = (time_t)(t + (long long)offset * 60);
    struct tm tm;
    if (!gmtime_r(&tt, &tm))
        memset(&tm, 0, sizeof tm);
    return tm;
}

static bool has_value(const struct series_point *p, int ch)
{
    return (p->valid >> ch & 1u) && isfinite(p->v[ch]) && fabs(p->v[ch]) <= VALUE_ABS_MAX;
}

/* A value without trailing zeros, at most two decimals: "8", "-2.5". */
static void format_value(char *out, size_t size, double v)
{
    snprintf(out, size, "%.2f", v);
    char *dot = strchr(out, '.');
    if (dot) {
        char *end = out + strlen(out);
        while (end > dot && (end[-1] == '0' || end[-1] == '.'))
            *--end = '\0';
    }
    if (!strcmp(out, "-0"))
        snprintf(out, size, "0");
}

static void with_unit(char *out, size_t size, const char *number, const char *unit)
{
    snprintf(out, size, *unit ? "%s %s" : "%s", number, unit);
}

static void value_label(char *out, size_t size, const struct plan *p, double v)
{
    char number[64];
    if (fabs(v) < p->f.y_step * 1e-6)
        v = 0;
    snprintf(number, sizeof number, "%.*f", p->decimals, v);
    with_unit(out, size, number, p->unit);
}

static double text_width(cairo_t *cr, const char *s)
{
    cairo_text_extents_t x;
    cairo_text_extents(cr, s, &x);
    return x.x_advance;
}

/* Draws `s` with its baseline at y, its anchor at x (align 0: left end,
 * 0.5: middle, 1: right end), moved in as needed to stay within lo..hi. */
static void show_text(cairo_t *cr, const char *s, double x, double y, double align, double lo,
                      double hi)
{
    double w = text_width(cr, s);
    double x0 = x - w * align;
    if (x0 + w > hi)
        x0 = hi - w;
    if (x0 < lo)
        x0 = lo;
    cairo_move_to(cr, round(x0), round(y));
    cairo_show_text(cr, s);
}

static void select_font(cairo_t *cr, const char *family, double size, bool bold)
{
    cairo_select_font_face(cr, family, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

/* Whether the face of `family` has a glyph for every character of `s`. */
static bool family_covers(cairo_t *cr, const char *family, const char *s)
{
    select_font(cr, family, 12, false);
    cairo_glyph_t *glyphs = NULL;
    int n = 0;
    cairo_status_t st = cairo_scaled_font_text_to_glyphs(cairo_get_scaled_font(cr), 0, 0, s, -1,
                                                         &glyphs, &n, NULL, NULL, NULL);
    bool ok = st == CAIRO_STATUS_SUCCESS;
    for (int i = 0; ok && i < n; i++)
        ok = glyphs[i].index != 0;
    cairo_glyph_free(glyphs);
    return ok;
}

/* The default family when it has every character of `s`, else the first
 * fallback that has, else the default (its boxes for what it lacks). */
static const char *choose_family(cairo_t *cr, const char *s)
{
    if (family_covers(cr, FAMILY, s))
        return FAMILY;
    for (size_t i = 0; i < sizeof fallback_families / sizeof *fallback_families; i++)
        if (family_covers(cr, fallback_families[i], s))
            return fallback_families[i];
    return FAMILY;
}

/* The font settings, fixed so that the picture does not depend on the
 * user's fontconfig preferences. */
static void set_font_options(cairo_t *cr)
{
    cairo_font_options_t *o = cairo_font_options_create();
    cairo_font_options_set_antialias(o, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(o, CAIRO_HINT_STYLE_SLIGHT);
    cairo_font_options_set_hint_metrics(o, CAIRO_HINT_METRICS_ON);
    cairo_set_font_options(cr, o);
    cairo_font_options_destroy(o);
}

static int check_spec(const struct chart_spec *spec, int *w, int *h, struct err *e)
{
    *w = spec->width ? spec->width : CHART_WIDTH_DEFAULT;
    *h = spec->height ? spec->height : CHART_HEIGHT_DEFAULT;
    if (!spec->series)
        return err_set(e, "chart: no series");
    if (spec->channel < 1 || spec->channel > SERIES_CHANNELS_MAX)
        return err_set(e, "chart: channel %d is not 1 to %d", spec->channel, SERIES_CHANNELS_MAX);
    if (spec->since >= spec->until)
        return err_set(e, "chart: empty span (since %lld, until %lld)", spec->since, spec->until);
    if (spec->since < 0 || spec->until > CHART_TIME_MAX)
        return err_set(e, "chart: span %lld to %lld is not within the years 1970 to 9999",
                       spec->since, spec->until);
    if (spec->until - spec->since > CHART_SPAN_MAX)
        return err_set(e, "chart: span of %lld s is longer than %lld days",
                       spec->until - spec->since, CHART_SPAN_MAX / 86400);
    if (*w < CHART_WIDTH_MIN || *w > CHART_WIDTH_MAX)
        return err_set(e, "chart: width %d is not %d to %d", *w, CHART_WIDTH_MIN, CHART_WIDTH_MAX);
    if (*h < CHART_HEIGHT_MIN || *h > CHART_HEIGHT_MAX)
        return err_set(e, "chart: height %d is not %d to %d", *h, CHART_HEIGHT_MIN,
                       CHART_HEIGHT_MAX);
    if (spec->has_upper && !(isfinite(spec->upper) && fabs(spec->upper) <= VALUE_ABS_MAX))
        return err_set(e, "chart: upper limit %g is out of range", spec->upper);
    if (spec->has_lower && !(isfinite(spec->lower) && fabs(spec->lower) <= VALUE_ABS_MAX))
        return err_set(e, "chart: lower limit %g is out of range", spec->lower);
    return 0;
}

static int compare_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Finds the points of the span, the range of their values and their
 * typical interval: the median time between consecutive readings that
 * follow each other by data-id. */
static int scan_points(struct plan *p, const struct chart_spec *spec, double *lo, double *hi,
                       struct err *e)
{
    const struct series *s = spec->series;
    size_t first = 0;
    while (first < s->n_points && s->points[first].unixtime < spec->since)
        first++;
    size_t end = first;
    while (end < s->n_points && s->points[end].unixtime <= spec->until)
        end++;
    p->first = first;
    p->end = end;

    long long *gaps = xmalloc((end - first + 1) * sizeof *gaps);
    size_t n_gaps = 0, n = 0;
    for (size_t i = first; i < end; i++) {
        const struct series_point *pt = &s->points[i];
        if (!has_value(pt, p->ch))
            continue;
        double v = pt->v[p->ch];
        *lo = n ? fmin(*lo, v) : v;
        *hi = n ? fmax(*hi, v) : v;
        n++;
        const struct series_point *prev = i > first ? &s->points[i - 1] : NULL;
        if (prev && has_value(prev, p->ch) && series_follows(prev, pt) &&
            pt->unixtime > prev->unixtime)
            gaps[n_gaps++] = pt->unixtime - prev->unixtime;
    }
    if (n_gaps) {
        qsort(gaps, n_gaps, sizeof *gaps, compare_ll);
        p->interval = gaps[n_gaps / 2];
    }
    free(gaps);
    p->f.n_points = n;
    if (!n) {
        char a[32], b[32];
        format_utc(a, sizeof a, spec->since);
        format_utc(b, sizeof b, spec->until);
        return err_set(e, "%s%sch%d: no reading between %s and %s", s->serial ? s->serial : "",
                       s->serial && *s->serial ? " " : "", spec->channel, a, b);
    }
    return 0;
}

/* Cuts the title with "…" until it fits `avail` pixels. */
static void fit_title(cairo_t *cr, char **title, double avail)
{
    size_t n = strlen(*title);
    if (text_width(cr, *title) <= avail)
        return;
    while (n > 0) {
        n = utf8_cut(*title, n, n - 1);
        char *cut = xasprintf("%.*s…", (int)n, *title);
        if (text_width(cr, cut) <= avail || n == 0) {
            free(*title);
            *title = cut;
            return;
        }
        free(cut);
    }
}

/* The value axis: the "nice" step (1, 2 or 5 times a power of ten) that
 * comes nearest to `target` intervals over lo..hi without passing `most`,
 * and ends that are multiples of it. */
static void value_axis(struct plan *p, double lo, double hi, double target, double most)
{
    double raw = (hi - lo) / target;
    double power = pow(10, floor(log10(raw)) - 1);
    static const double nices[] = {1, 2, 5};
    double step = 0, best = INFINITY;
    /* Candidates from a tenth of `raw` to ten times it, smallest first. */
    for (int decade = 0; decade < 3; decade++, power *= 10)
        for (size_t i = 0; i < sizeof nices / sizeof *nices; i++) {
            double c = nices[i] * power;
            double miss = fabs(log(c / raw));
            if ((hi - lo) / c <= most && miss < best) {
                best = miss;
                step = c;
            }
        }
    if (step == 0) /* no candidate is few enough: the largest */
        step = 5 * power / 10;
    int exponent = (int)floor(log10(step) + 1e-9);
    p->decimals = exponent < 0 ? -exponent : 0;
    p->f.y_step = step;
    p->f.y_min = floor(lo / step + 1e-9) * step;
    p->f.y_max = ceil(hi / step - 1e-9) * step;
}

static void date_label(char *out, size_t size, const struct tm *tm)
{
    snprintf(out, size, "%s %d", month_names[tm->tm_mon % 12], tm->tm_mday);
}

static long long local_day(long long t, int offset)
{
    return floor_div(t + (long long)offset * 60, 86400);
}

/* The first tick of the time axis: local times that are multiples of the
 * step (days counted from the epoch's for steps of days). */
static long long first_tick(const struct plan *p)
{
    long long off = (long long)p->s->utc_offset * 60;
    long long local = p->f.since + off;
    long long step = p->f.x_step;
    return (floor_div(local - 1, step) + 1) * step - off;
}

static void plan_free(struct plan *p)
{
    free(p->unit);
    free(p->title);
    memset(p, 0, sizeof *p);
}

/* The plot's bottom, the value axis, the left margin and the time axis,
 * with `lines` lines of time labels below the plot; lo..hi are the values
 * to show. */
static void lay_out_axes(struct plan *p, cairo_t *cr, const struct chart_spec *spec, double lo,
                         double hi, int lines)
{
    cairo_font_extents_t fe;
    select_font(cr, p->family, p->font, false);
    cairo_font_extents(cr, &fe);
    double pad = round(p->font * 0.6);
    p->f.bottom =
        (int)floor(p->f.height - pad * 0.5 - lines * (fe.ascent + fe.descent) - p->font * 0.3);

    /* Values: a margin around lo..hi, and room above the upper limit's
     * line and below the lower one's for their labels. */
    double margin = (hi - lo) * 0.05;
    double plot_h = p->f.bottom - p->f.top;
    value_axis(p, lo - margin, hi + margin, fmax(2, plot_h / (p->font * 2.6)),
               fmax(2, floor(plot_h / (p->font * 1.5))));
    double room = fe.ascent + fe.descent + 4;
    for (int i = 0; i < 8 && spec->has_upper; i++) {
        if ((p->f.y_max - spec->upper) / (p->f.y_max - p->f.y_min) * plot_h >= room)
            break;
        p->f.y_max += p->f.y_step;
    }
    for (int i = 0; i < 8 && spec->has_lower; i++) {
        if ((spec->lower - p->f.y_min) / (p->f.y_max - p->f.y_min) * plot_h >= room)
            break;
        p->f.y_min -= p->f.y_step;
    }

    /* The left margin fits the widest value label. */
    double label_w = 0;
    char text[TEXT_MAX + 64];
    long long k_lo = llround(p->f.y_min / p->f.y_step), k_hi = llround(p->f.y_max / p->f.y_step);
    for (long long k = k_lo; k <= k_hi; k++) {
        value_label(text, sizeof text, p, (double)k * p->f.y_step);
        label_w = fmax(label_w, text_width(cr, text));
    }
    p->f.left = (int)fmin(ceil(pad + label_w + p->font * 0.4), p->f.width / 2);
    p->f.right = (int)floor(p->f.width - pad * 1.5);

    /* Times: the smallest step that leaves room for the labels. */
    long long span = spec->until - spec->since;
    double time_w = text_width(cr, "00:00");
    if (p->dates)
        time_w = fmax(time_w, text_width(cr, "May 30"));
    double spacing = time_w + p->font * 1.2;
    double plot_w = p->f.right - p->f.left;
    size_t i = 0;
    while (i + 1 < sizeof x_steps / sizeof *x_steps && x_steps[i] * plot_w / span < spacing)
        i++;
    p->f.x_step = x_steps[i];
    while (p->f.x_step < span &&
           (span / p->f.x_step > X_TICKS_MAX || p->f.x_step * plot_w / span < spacing))
        p->f.x_step *= 2;
    p->f.x_first = first_tick(p);
    p->days = p->f.x_step >= 86400;
}

/* Plans the chart of `spec`, measuring text with `cr`; on failure *p owns
 * nothing. */
static int plan_chart(struct plan *p, cairo_t *cr, const struct chart_spec *spec, struct err *e)
{
    int w, h;
    memset(p, 0, sizeof *p);
    if (check_spec(spec, &w, &h, e))
        return -1;
    p->s = spec->series;
    p->ch = spec->channel - 1;
    p->f.width = w;
    p->f.height = h;
    p->f.since = spec->since;
    p->f.until = spec->until;
    double lo = 0, hi = 0;
    if (scan_points(p, spec, &lo, &hi, e))
        return -1;

    int ci = series_channel_index(p->s, spec->channel);
    const char *unit = ci >= 0 && p->s->channels[ci].unit ? p->s->channels[ci].unit : "";
    p->unit = utf8_clean(unit, strlen(unit), UNIT_MAX, UTF8_CONTROLS_NONE);
    if (spec->title && *spec->title)
        p->title = utf8_clean(spec->title, strlen(spec->title), TEXT_MAX, UTF8_CONTROLS_NONE);
    p->family = choose_family(cr, p->unit);
    p->title_family = p->title ? choose_family(cr, p->title) : FAMILY;

    /* Sizes follow the picture's: at 600 x 300 the labels are 16 pixels. */
    p->font = fmin(fmax(round(fmin(w / 38.0, h / 19.0)), 10), 40);
    p->title_font = round(p->font * 1.2);
    double pad = round(p->font * 0.6);

    double y = pad;
    cairo_font_extents_t fe;
    if (p->title) {
        select_font(cr, p->title_family, p->title_font, true);
        cairo_font_extents(cr, &fe);
        fit_title(cr, &p->title, w - 2 * pad);
        p->title_base = round(y + fe.ascent);
        y = p->title_base + fe.descent + pad * 0.5;
    }
    select_font(cr, p->family, p->font, false);
    cairo_font_extents(cr, &fe);
    bool marked = spec->marked && spec->marked >= spec->since && spec->marked <= spec->until;
    if (marked) {
        p->mark_base = round(y + fe.ascent);
        y = p->mark_base + fe.descent + 2;
    }
    p->f.top = (int)ceil(y + (marked ? 0 : pad * 0.5));

    if (spec->has_upper) {
        lo = fmin(lo, spec->upper);
        hi = fmax(hi, spec->upper);
    }
    if (spec->has_lower) {
        lo = fmin(lo, spec->lower);
        hi = fmax(hi, spec->lower);
    }
    if (hi - lo < VALUE_SPAN_MIN) {
        double mid = (hi + lo) / 2;
        lo = mid - VALUE_SPAN_MIN / 2;
        hi = mid + VALUE_SPAN_MIN / 2;
    }

    /* Dates go under the times when the span crosses a local midnight.
     * Ticks a day or more apart are dates themselves: one line of labels
     * then, and the plot laid out again with the room of the other (kept
     * as it was if its ticks would no longer be days). */
    p->dates = spec->until - spec->since > 86400 ||
               local_day(spec->since, p->s->utc_offset) != local_day(spec->until, p->s->utc_offset);
    lay_out_axes(p, cr, spec, lo, hi, p->dates ? 2 : 1);
    if (p->days && p->dates) {
        struct plan two_lines = *p;
        p->dates = false;
        lay_out_axes(p, cr, spec, lo, hi, 1);
        if (!p->days)
            *p = two_lines;
        p->dates = false;
    }
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        cairo_failed(cairo_status(cr), e);
        plan_free(p);
        return -1;
    }
    return 0;
}

static double point_x(const struct chart_frame *f, long long t)
{
    return f->left + (double)(t - f->since) * (f->right - f->left) / (double)(f->until - f->since);
}

static double point_y(const struct chart_frame *f, double v)
{
    return f->top + (f->y_max - v) * (f->bottom - f->top) / (f->y_max - f->y_min);
}

int chart_row(const struct chart_frame *f, double v)
{
    return (int)lround(fmin(fmax(point_y(f, v), -1e6), 1e6));
}

int chart_column(const struct chart_frame *f, long long t)
{
    return (int)lround(fmin(fmax(point_x(f, t), -1e6), 1e6));
}

static void draw_grid(cairo_t *cr, const struct plan *p)
{
    const struct chart_frame *f = &p->f;
    cairo_set_line_width(cr, 1);
    set_rgb(cr, CHART_RGB_GRID);
    long long k_lo = llround(f->y_min / f->y_step), k_hi = llround(f->y_max / f->y_step);
    for (long long k = k_lo + 1; k < k_hi; k++) {
        double y = chart_row(f, (double)k * f->y_step) - 0.5;
        cairo_move_to(cr, f->left, y);
        cairo_line_to(cr, f->right, y);
    }
    for (long long t = f->x_first; t <= f->until; t += f->x_step) {
        int x = chart_column(f, t);
        if (x <= f->left || x >= f->right)
            continue;
        cairo_move_to(cr, x - 0.5, f->top);
        cairo_line_to(cr, x - 0.5, f->bottom);
    }
    cairo_stroke(cr);
    set_rgb(cr, RGB_FRAME);
    cairo_rectangle(cr, f->left - 0.5, f->top - 0.5, f->right - f->left + 1,
                    f->bottom - f->top + 1);
    cairo_stroke(cr);
}

static void draw_axes_labels(cairo_t *cr, const struct plan *p)
{
    const struct chart_frame *f = &p->f;
    char text[TEXT_MAX + 64];
    select_font(cr, p->family, p->font, false);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    set_rgb(cr, RGB_TEXT);

    long long k_lo = llround(f->y_min / f->y_step), k_hi = llround(f->y_max / f->y_step);
    for (long long k = k_lo; k <= k_hi; k++) {
        double v = (double)k * f->y_step;
        value_label(text, sizeof text, p, v);
        double base = chart_row(f, v) + (fe.ascent - fe.descent) / 2;
        show_text(cr, text, f->left - p->font * 0.4, base, 1, 0, f->left);
    }

    double base1 = f->bottom + p->font * 0.3 + fe.ascent;
    double base2 = base1 + fe.ascent + fe.descent;
    int prev_mday = -1;
    for (long long t = f->x_first; t <= f->until; t += f->x_step) {
        struct tm tm = local_tm(t, p->s->utc_offset);
        int x = chart_column(f, t);
        if (p->days) {
            date_label(text, sizeof text, &tm);
        } else {
            snprintf(text, sizeof text, "%02d:%02d", tm.tm_hour, tm.tm_min);
        }
        show_text(cr, text, x, base1, 0.5, 1, f->width - 1);
        if (p->dates && tm.tm_mday != prev_mday) {
            date_label(text, sizeof text, &tm);
            show_text(cr, text, x, base2, 0.5, 1, f->width - 1);
        }
        prev_mday = tm.tm_mday;
    }
}

static void draw_limit(cairo_t *cr, const struct plan *p, double v, bool upper)
{
    const struct chart_frame *f = &p->f;
    int row = chart_row(f, v);
    double dash[] = {round(p->font * 0.7), round(p->font * 0.4)};
    set_rgb(cr, CHART_RGB_LIMIT);
    cairo_set_line_width(cr, 2);
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, f->left, row);
    cairo_line_to(cr, f->right, row);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);

    char number[64], text[TEXT_MAX + 96];
    format_value(number, sizeof number, v);
    snprintf(text, sizeof text, "%s limit ", upper ? "upper" : "lower");
    with_unit(text + strlen(text), sizeof text - strlen(text), number, p->unit);
    select_font(cr, p->family, p->font, false);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double base = upper ? row - 1 - 3 - fe.descent : row + 3 + fe.ascent;
    show_text(cr, text, f->left + p->font * 0.4, base, 0, f->left, f->right);
}

/* Whether reading i continues the line from reading i - 1: both have a
 * value, their data-ids follow, and the time between them is not a jump. */
static bool continues(const struct plan *p, size_t i)
{
    if (i <= p->first)
        return false;
    const struct series_point *a = &p->s->points[i - 1], *b = &p->s->points[i];
    return has_value(a, p->ch) && has_value(b, p->ch) && series_follows(a, b) &&
           !(p->interval && b->unixtime - a->unixtime > GAP_FACTOR * p->interval);
}

static void end_piece(cairo_t *cr, size_t run, double x, double y)
{
    if (run == 1) {
        cairo_new_path(cr);
        cairo_arc(cr, x, y, 2.5, 0, 2 * M_PI);
        cairo_fill(cr);
    } else if (run > 1) {
        cairo_stroke(cr);
    }
}

/* The readings as a line through each, broken where readings are missing. */
static void draw_line(cairo_t *cr, const struct plan *p)
{
    cairo_set_line_width(cr, 2);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    size_t run = 0; /* readings in the current piece of line */
    double x = 0, y = 0;
    for (size_t i = p->first; i < p->end; i++) {
        const struct series_point *pt = &p->s->points[i];
        if (!has_value(pt, p->ch))
            continue;
        if (run && !continues(p, i)) {
            end_piece(cr, run, x, y);
            run = 0;
        }
        x = point_x(&p->f, pt->unixtime);
        y = point_y(&p->f, pt->v[p->ch]);
        if (run++)
            cairo_line_to(cr, x, y);
        else
            cairo_move_to(cr, x, y);
    }
    end_piece(cr, run, x, y);
}

/* Fills column x and the one after it (the band is as wide as a line)
 * from lo to hi, a pixel more each way. */
static void fill_column(cairo_t *cr, int x, double lo, double hi)
{
    double y0 = floor(lo - 1), y1 = ceil(hi + 1);
    cairo_rectangle(cr, x, y0, 2, y1 - y0);
    cairo_fill(cr);
}

/* The readings when there are more of them than columns of pixels: each
 * column filled from its lowest reading to its highest (and to the last
 * one of the column before, when the line goes on), in whole pixels. A
 * line through every reading would show the same band with many more
 * shades of its edges, which a PNG pays for. */
static void draw_band(cairo_t *cr, const struct plan *p)
{
    bool open = false; /* a column is being gathered */
    int col = 0;
    double lo = 0, hi = 0, last = 0;
    for (size_t i = p->first; i < p->end; i++) {
        const struct series_point *pt = &p->s->points[i];
        if (!has_value(pt, p->ch))
            continue;
        bool cont = open && continues(p, i);
        int c = (int)floor(point_x(&p->f, pt->unixtime));
        c = c < p->f.left ? p->f.left : c >= p->f.right ? p->f.right - 1 : c;
        double y = point_y(&p->f, pt->v[p->ch]);
        if (open && c == col && cont) {
            lo = fmin(lo, y);
            hi = fmax(hi, y);
        } else {
            if (open)
                fill_column(cr, col, lo, hi);
            lo = cont ? fmin(last, y) : y;
            hi = cont ? fmax(last, y) : y;
            col = c;
            open = true;
        }
        last = y;
    }
    if (open)
        fill_column(cr, col, lo, hi);
}

static void draw_readings(cairo_t *cr, const struct plan *p)
{
    set_rgb(cr, CHART_RGB_LINE);
    if (p->f.n_points > (size_t)(p->f.right - p->f.left))
        draw_band(cr, p);
    else
        draw_line(cr, p);
}

enum chart_mark chart_mark_for(const char *kind, const char *state)
{
    bool reading = kind && !strcmp(kind, "reading");
    bool recovered = state && !strcmp(state, "recovered");
    if (recovered)
        return reading ? CHART_MARK_BACK : CHART_MARK_RECOVERY;
    if (reading)
        return CHART_MARK_WARNING;
    return !state || !strcmp(state, "alarm") ? CHART_MARK_ALARM : CHART_MARK_ALERT;
}

void chart_mark_label(char *out, size_t size, enum chart_mark mark, long long t, int utc_offset)
{
    static const char *const words[] = {
        [CHART_MARK_ALARM] = "alarm",     [CHART_MARK_RECOVERY] = "recovered",
        [CHART_MARK_WARNING] = "warning", [CHART_MARK_BACK] = "back",
        [CHART_MARK_ALERT] = "alert",
    };
    struct tm tm = local_tm(t, utc_offset);
    const char *word = (unsigned)mark < sizeof words / sizeof words[0] ? words[mark] : "alert";
    snprintf(out, size, "%s %02d:%02d", word, tm.tm_hour, tm.tm_min);
}

unsigned chart_mark_rgb(enum chart_mark mark)
{
    switch (mark) {
    case CHART_MARK_ALARM:
    case CHART_MARK_WARNING:
        return CHART_RGB_MARK;
    case CHART_MARK_RECOVERY:
    case CHART_MARK_BACK:
        return CHART_RGB_GOOD;
    case CHART_MARK_ALERT:
        break;
    }
    return CHART_RGB_OTHER;
}

/* The marked moment: a vertical line, its label (what it is, its local
 * time) above the plot, and a dot on the reading nearest to it (within
 * one interval), in the mark's colour. */
static void draw_mark(cairo_t *cr, const struct plan *p, long long t, enum chart_mark mark)
{
    const struct chart_frame *f = &p->f;
    int col = chart_column(f, t);
    set_rgb(cr, chart_mark_rgb(mark));
    cairo_set_line_width(cr, 2);
    cairo_move_to(cr, col, p->mark_base + 3);
    cairo_line_to(cr, col, f->bottom);
    cairo_stroke(cr);

    const struct series_point *best = NULL;
    for (size_t i = p->first; i < p->end; i++) {
        const struct series_point *pt = &p->s->points[i];
        if (has_value(pt, p->ch) && (!best || llabs(pt->unixtime - t) < llabs(best->unixtime - t)))
            best = pt;
    }
    if (best && llabs(best->unixtime - t) <= p->interval) {
        cairo_arc(cr, point_x(f, best->unixtime), point_y(f, best->v[p->ch]), 4.5, 0, 2 * M_PI);
        cairo_fill(cr);
    }

    char text[64];
    chart_mark_label(text, sizeof text, mark, t, p->s->utc_offset);
    select_font(cr, p->family, p->font, true);
    show_text(cr, text, col, p->mark_base, 0.5, 1, f->width - 1);
}

static void draw(cairo_t *cr, const struct plan *p, const struct chart_spec *spec)
{
    const struct chart_frame *f = &p->f;
    set_rgb(cr, CHART_RGB_BACKGROUND);
    cairo_paint(cr);
    draw_grid(cr, p);
    draw_axes_labels(cr, p);

    cairo_save(cr);
    cairo_rectangle(cr, f->left, f->top, f->right - f->left, f->bottom - f->top);
    cairo_clip(cr);
    if (spec->has_upper)
        draw_limit(cr, p, spec->upper, true);
    if (spec->has_lower)
        draw_limit(cr, p, spec->lower, false);
    draw_readings(cr, p);
    cairo_restore(cr);

    if (p->mark_base)
        draw_mark(cr, p, spec->marked, spec->mark);
    if (p->title) {
        select_font(cr, p->title_family, p->title_font, true);
        set_rgb(cr, RGB_TITLE);
        show_text(cr, p->title, round(p->font * 0.6), p->title_base, 0, 0, f->width);
    }
}

struct png_sink {
    struct buf b;
    bool full;
};

static cairo_status_t png_write(void *closure, const unsigned char *data, unsigned int len)
{
    struct png_sink *sink = closure;
    if (buf_append(&sink->b, data, len)) {
        sink->full = true;
        return CAIRO_STATUS_WRITE_ERROR;
    }
    return CAIRO_STATUS_SUCCESS;
}

/* A context to measure text with, before the picture is made. */
static cairo_t *measuring_context(void)
{
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(surface);
    cairo_surface_destroy(surface);
    set_font_options(cr);
    return cr;
}

int chart_frame(struct chart_frame *out, const struct chart_spec *spec, struct err *e)
{
    struct plan p;
    cairo_t *cr = measuring_context();
    int rc = plan_chart(&p, cr, spec, e);
    if (rc == 0) {
        *out = p.f;
        plan_free(&p);
    }
    cairo_destroy(cr);
    return rc;
}

int chart_png(unsigned char **out, size_t *out_len, const struct chart_spec *spec, struct err *e)
{
    int rc = -1;
    struct plan p;
    struct png_sink sink = {.full = false};
    buf_init(&sink.b, CHART_PNG_MAX);
    cairo_surface_t *surface = NULL;
    cairo_t *cr = measuring_context();
    if (plan_chart(&p, cr, spec, e)) {
        cairo_destroy(cr);
        return -1;
    }
    cairo_destroy(cr);

    surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, p.f.width, p.f.height);
    cr = cairo_create(surface);
    set_font_options(cr);
    draw(cr, &p, spec);
    cairo_status_t st = cairo_status(cr);
    if (st != CAIRO_STATUS_SUCCESS) {
        cairo_failed(st, e);
        goto out;
    }
    cairo_surface_flush(surface);
    st = cairo_surface_write_to_png_stream(surface, png_write, &sink);
    if (sink.full) {
        err_set(e, "chart: the PNG is larger than %u bytes", CHART_PNG_MAX);
        goto out;
    }
    if (st != CAIRO_STATUS_SUCCESS) {
        cairo_failed(st, e);
        goto out;
    }
    *out_len = sink.b.len;
    *out = (unsigned char *)buf_steal(&sink.b);
    rc = 0;
out:
    buf_free(&sink.b);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    plan_free(&p);
    return rc;
}

void chart_release(void)
{
    cairo_debug_reset_static_data();
    FcFini();
}
