/* A small PNG picture of one channel of a device's readings, for an alarm
 * mail to carry inline: the readings of a span of time as a line, the
 * limits as dashed lines with their values, the event's moment as a
 * vertical line with what it is and its time ("alarm 11:26" in red,
 * "recovered 11:36" in green), the title at the top, the values on the
 * left in the channel's unit, the times below in the device's local time.
 * It is drawn with cairo for a phone's screen (large text, a few flat
 * colours) and stays small: under 30 KB for six hours of one-minute
 * readings at the default size, less when there are more readings than
 * pixels (they are drawn as a band then).
 *
 * The same spec gives the same bytes on the same machine (tests compare
 * two renders). Text is drawn with cairo's own text calls in a sans-serif
 * face chosen by fontconfig; when that face lacks a character of the
 * title or the unit (Japanese, say), a few well-known Japanese faces are
 * tried (Debian's fonts-ipaexfont-gothic, fonts-noto-cjk, ...), and when
 * none is installed the characters are drawn as boxes: a missing font
 * never fails a chart. */
#ifndef WSRELAY_CHART_H
#define WSRELAY_CHART_H

#include "series.h"
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>

#define CHART_WIDTH_DEFAULT 600
#define CHART_HEIGHT_DEFAULT 300
#define CHART_WIDTH_MIN 240
#define CHART_WIDTH_MAX 2400
#define CHART_HEIGHT_MIN 160
#define CHART_HEIGHT_MAX 1600
#define CHART_SPAN_MAX (400LL * 86400) /* the longest span, in seconds */
#define CHART_TIME_MAX 253402300799LL  /* 9999-12-31T23:59:59Z */
#define CHART_PNG_MAX (4u << 20)       /* the most bytes a chart's PNG may take */

/* The colours, as 0xRRGGBB: every pixel of the plot that nothing is drawn
 * on has the background colour, and each mark below is drawn with its
 * colour at full strength where it covers whole pixels. */
#define CHART_RGB_BACKGROUND 0xFFFFFFu
#define CHART_RGB_LINE 0x1F5FBFu  /* the readings */
#define CHART_RGB_LIMIT 0xE07000u /* the limits' dashed lines and their labels */
#define CHART_RGB_MARK 0xD0103Au  /* the alarm moment's line and its label */
#define CHART_RGB_GOOD 0x2E7D32u  /* a recovery's (or a way back's) line and label */
#define CHART_RGB_OTHER 0x7B1FA2u /* the line and label of any other moment */
#define CHART_RGB_GRID 0xE4E4E4u  /* one-pixel lines at the ticks of both axes */

/* What the marked moment is, which its label says and its colour shows:
 * an alarm in red, a recovery in green, as a reader of the mail expects. */
enum chart_mark {
    CHART_MARK_ALARM,    /* "alarm 11:26", CHART_RGB_MARK */
    CHART_MARK_RECOVERY, /* "recovered 11:36", CHART_RGB_GOOD */
    CHART_MARK_WARNING,  /* an early warning from the readings: "warning 11:20", CHART_RGB_MARK */
    CHART_MARK_BACK,     /* the readings back within the limit: "back 11:36", CHART_RGB_GOOD */
    CHART_MARK_ALERT,    /* any other alert (a sensor error, ...): "alert 11:26", CHART_RGB_OTHER */
};

/* The mark of an event of kind `kind` ("ch1", "reading") whose text says
 * `state` ("alarm", "recovered", ...; NULL: not known). */
enum chart_mark chart_mark_for(const char *kind, const char *state);

/* The label of a moment `t` of kind `mark` in the local time of
 * `utc_offset` (minutes east of UTC): "recovered 11:36". */
void chart_mark_label(char *out, size_t size, enum chart_mark mark, long long t, int utc_offset);

/* The colour of a mark's line and label (0xRRGGBB). */
unsigned chart_mark_rgb(enum chart_mark mark);

/* What to draw. Everything is borrowed for the call only. */
struct chart_spec {
    const struct series *series;
    int channel;            /* the channel's num, 1 to 4: v[channel - 1] of the points */
    long long since, until; /* the span drawn, unix time: 0 <= since < until <=
                               CHART_TIME_MAX, at most CHART_SPAN_MAX long; points
                               outside it are left out */
    bool has_upper, has_lower;
    double upper, lower;  /* the limits, drawn when has_upper / has_lower (finite) */
    long long marked;     /* the alarm moment, unix time; 0 (or a moment outside the
                             span): none */
    enum chart_mark mark; /* what that moment is (zero: an alarm) */
    const char *title;    /* UTF-8 (bytes that are not are shown as U+FFFD), cut with
                             "…" to the width; NULL or "": no title line */
    int width, height;    /* pixels; 0: CHART_WIDTH_DEFAULT, CHART_HEIGHT_DEFAULT */
};

/* Where chart_png draws, in pixels from the picture's top left corner, so
 * that a reader of the picture (a test, an HTML image map) can find its
 * parts. The plot is the rectangle from (left, top) to (right, bottom):
 * time `since` is at x = left and `until` at x = right; value `y_max` is at
 * y = top and `y_min` at y = bottom. */
struct chart_frame {
    int width, height;            /* the picture's size, defaults applied */
    int left, top, right, bottom; /* the plot area */
    double y_min, y_max, y_step;  /* the value axis: its ends are multiples of its
                                     step, a "nice" 1, 2 or 5 times a power of ten */
    long long since, until;       /* the time axis, as in the spec */
    long long x_first, x_step;    /* the time axis's first tick (unix time) and the
                                     seconds between ticks; the ticks are whole
                                     multiples of the step in the device's local time */
    size_t n_points;              /* the readings drawn (in the span, with a value) */
};

/* Renders the chart that `spec` describes as a PNG (8-bit RGB, no alpha).
 * On success *out holds *out_len bytes that belong to the caller (free
 * them), and returns 0.
 *
 * The readings' line is broken where a reading is missing: between two
 * points whose data-ids do not follow (series_follows; 65535 then 0
 * follow), at a point without a value for the channel (or with one that
 * is not finite or beyond 1e12; it is left out), and where the time
 * between two points is more than three times the typical (median)
 * interval of the span. A reading alone between breaks is a dot. When the
 * readings outnumber the plot's columns of pixels, each column is filled
 * from its lowest reading to its highest instead, in whole pixels.
 *
 * The value axis spans the readings and the limits with a margin; its
 * labels carry the channel's unit ("-18 °C"). The time axis's labels are
 * the device's local time (the series' utc_offset): "14:00", with the
 * date ("Mar 15") under the first label and under each one where the
 * date changes when the span crosses a local midnight, and dates alone
 * when the ticks are days apart.
 *
 * Fails, with *out and *out_len untouched, when the series has no value
 * of the channel in the span ("52C00001 ch2: no reading between
 * 2026-03-15T02:00:00Z and 2026-03-15T08:00:00Z"), when the spec is out of
 * range (no series, a channel not 1 to 4, an empty or too long span, a
 * limit not finite or beyond 1e12, a size outside CHART_WIDTH_MIN..MAX by
 * CHART_HEIGHT_MIN..MAX: "chart: width 100 is not 240 to 2400"), when the
 * PNG would pass CHART_PNG_MAX bytes, and when cairo reports an error. */
int chart_png(unsigned char **out, size_t *out_len, const struct chart_spec *spec, struct err *e);

/* Fills *out with the frame chart_png draws `spec` in, and returns 0;
 * fails as chart_png does, with *out untouched. */
int chart_frame(struct chart_frame *out, const struct chart_spec *spec, struct err *e);

/* The pixel row (y) of value `v` and the pixel column (x) of time `t` in
 * `f`, rounded to whole pixels. A limit's line at value v covers pixel
 * rows chart_row(f, v) - 1 and chart_row(f, v); the alarm moment's line
 * at time t covers pixel columns chart_column(f, t) - 1 and
 * chart_column(f, t). The grid line of a tick covers the row (column)
 * before the tick's. */
int chart_row(const struct chart_frame *f, double v);
int chart_column(const struct chart_frame *f, long long t);

/* Releases what cairo and fontconfig keep for the life of the process
 * once a chart has been drawn (fonts, their configuration), so that a
 * leak checker sees nothing left at exit. For the end of a program (or of
 * a test), when no chart is being drawn: the next chart loads them again. */
void chart_release(void);

#endif
