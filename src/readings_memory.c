/* A device's readings memory: which readings are a signal worth an alert-log
 * call, and which channels crossed a known limit.
 *
 * Why a band and not a difference: a test of "how far from the last value,
 * in units of the usual change" fires on ordinary wobble and spends the
 * budget on nothing. The band comes from the channel's own recent values,
 * by its quartiles (one spike does not drag them), checked by its deciles
 * (a small history whose middle half happens to be tight would make a
 * band that noise leaves), widened by six times their spread (never less
 * than a few steps of the value's writing), so that noise of any level
 * stays inside it and only a real excursion leaves it. The newest values
 * are left out of the band: the first readings of a slow ramp would
 * otherwise drag it along (a fridge falling from 5 to -1 °C over 20
 * minutes never left a band that included them, nor one widened by the
 * history's range). Leaving and coming back each need a margin
 * (hysteresis), as do the limits: a value that hovers at an edge makes one
 * signal, not one a minute. The exact rules are in readings_memory.h. */
#include "readings_memory.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define QUANTILE_LOW 0.25  /* the band's quartiles: a ramp of a few readings */
#define QUANTILE_HIGH 0.75 /* into an excursion must not drag them */
#define DECILE_LOW 0.10    /* the deciles check the spread of a history */
#define DECILE_HIGH 0.90   /* whose middle half happens to be tight */
#define BAND_LAG 12        /* newest values the band leaves out */
#define BAND_WIDEN 6.0     /* spreads added on each side to leave the band */
#define BAND_FLOOR_STEPS 5 /* the widening is never less than this many steps */
/* Readings in a row out of the band after which their level is the new
 * normal: a full history (WATCH_HISTORY) has faded to WATCH_BAND_MIN
 * values of the old normal by then. */
#define BAND_REBASE (WATCH_HISTORY - WATCH_BAND_MIN + 2)
#define ZONE_MARGIN_STEPS 3 /* leaving a zone needs at least this many steps */
/* The mean difference between two readings, times this, is the
 * interquartile range of noise that does not drift: 1.5 for uniform
 * noise, 1.2 for normal noise. */
#define JITTER_TO_SPREAD 1.5
#define FLANK_READINGS 2  /* readings out of the band that may be a fast excursion's flank */
#define HINT_WAIT_MAX 600 /* seconds a standalone device's hint waits at most */
#define UNUSUAL_FLOOR_QUANTA                                                                       \
    2                        /* an unusual value is at least this many quanta beyond the history */
#define SILENCE_INTERVALS 3  /* usual intervals without a reading make silence */
#define SILENCE_MIN 180      /* seconds; silence is never shorter */
#define SILENCE_LOGGED 60    /* seconds for the platform's communication error to be logged */
#define NUMBER_MAX 32        /* characters of a number, sign and point included */
#define GAP_MAX 2147483647LL /* seconds; a longer gap is kept as this */

const char *watch_reason_name(unsigned bit)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{WATCH_LIMIT, "limit"},   {WATCH_BAND, "band"},
                 {WATCH_ERROR, "error"},   {WATCH_BATTERY, "battery"},
                 {WATCH_SILENT, "silent"}, {WATCH_LIKELY, "likely limit"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].bit == bit)
            return names[i].name;
    return NULL;
}

const char *watch_reason_text(char *out, size_t size, unsigned reasons)
{
    size_t len = 0;

    if (size == 0)
        return out;
    out[0] = '\0';
    for (unsigned bit = 1; bit <= WATCH_REASON_LAST; bit <<= 1) {
        if (!(reasons & bit))
            continue;
        int n = snprintf(out + len, size - len, "%s%s", len ? ", " : "", watch_reason_name(bit));
        if (n < 0 || (size_t)n >= size - len) {
            out[len] = '\0'; /* no name cut in half */
            break;
        }
        len += (size_t)n;
    }
    return out;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

bool watch_parse_value(const char *text, double *value, double *step)
{
    if (!text)
        return false;
    const char *p = text;
    while (is_blank(*p))
        p++;
    const char *start = p;
    bool negative = *p == '-';
    if (*p == '-' || *p == '+')
        p++;

    double mantissa = 0, scale = 1;
    size_t digits = 0, decimals = 0;
    for (; is_digit(*p); p++, digits++)
        mantissa = mantissa * 10 + (*p - '0');
    if (digits == 0)
        return false;
    if (*p == '.') {
        p++;
        for (; is_digit(*p); p++, decimals++) {
            mantissa = mantissa * 10 + (*p - '0');
            scale *= 10;
        }
        if (decimals == 0)
            return false;
    }
    if ((size_t)(p - start) > NUMBER_MAX)
        return false;
    while (is_blank(*p))
        p++;
    if (*p != '\0')
        return false;

    if (value)
        *value = (negative ? -mantissa : mantissa) / scale;
    if (step)
        *step = 1 / scale;
    return true;
}

/* Whether `model` begins with `prefix`, letters in either case. */
static bool model_is(const char *model, const char *prefix)
{
    for (; *prefix; model++, prefix++) {
        char c = *model;
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        if (c != *prefix)
            return false;
    }
    return true;
}

int watch_battery_low(const char *model)
{
    if (!model)
        return 2;
    if (model_is(model, "TR-7"))
        return 2;
    if (model_is(model, "RTR") || model_is(model, "TR-4"))
        return 4;
    return 2;
}

/* Appends to out[*len] like snprintf, never past `size`. */
static void append(char *out, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *out, size_t size, size_t *len, const char *fmt, ...)
{
    va_list ap;
    if (*len + 1 >= size)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = (size_t)n < size - *len ? *len + (size_t)n : size - 1;
}

const char *watch_summary(char *out, size_t size, const struct watch *w)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < w->n_ch; i++) {
        const struct watch_channel *c = &w->ch[i];
        if (c->error)
            append(out, size, &len, "%sch%d error value", i ? ", " : "", c->num);
        else
            append(out, size, &len, "%sch%d %.10g%s", i ? ", " : "", c->num, c->value,
                   c->zone > 0   ? " (above its limit)"
                   : c->zone < 0 ? " (below its limit)"
                                 : "");
    }
    if (w->battery)
        append(out, size, &len, "%sbattery %d", len ? "; " : "", w->battery);
    if (w->silent)
        append(out, size, &len, "%suploads have stopped", len ? "; " : "");
    return out;
}

static const struct watch_channel *channel_in(const struct watch *w, int num)
{
    for (int i = 0; i < w->n_ch; i++) {
        if (w->ch[i].num == num)
            return &w->ch[i];
    }
    return NULL;
}

/* The one lookup, for callers that change what it finds: `w` is theirs. */
struct watch_channel *watch_channel(struct watch *w, int num)
{
    return (struct watch_channel *)channel_in(w, num);
}

/* A new channel `num` in its place (ch[] is sorted by num), or NULL when
 * the device has WATCH_CHANNELS already. */
static struct watch_channel *channel_add(struct watch *w, int num)
{
    if (w->n_ch >= WATCH_CHANNELS)
        return NULL;
    int at = w->n_ch;
    while (at > 0 && w->ch[at - 1].num > num)
        at--;
    memmove(&w->ch[at + 1], &w->ch[at], (size_t)(w->n_ch - at) * sizeof w->ch[0]);
    w->n_ch++;
    memset(&w->ch[at], 0, sizeof w->ch[at]);
    w->ch[at].num = num;
    return &w->ch[at];
}

static const struct watch_limit *limit_of(const struct watch_limit *limits, size_t n_limits,
                                          int num)
{
    if (!limits || num < 1 || (size_t)num > n_limits)
        return NULL;
    return &limits[num - 1];
}

/* The channel's band: its quantiles and their spread, from the history. */
struct band {
    bool known;
    double low, high, spread;
};

static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int i = (int)pos;
    if (i >= n - 1)
        return sorted[n - 1];
    double frac = pos - i;
    return sorted[i] + (sorted[i + 1] - sorted[i]) * frac;
}

/* The first `n` values of `v` (at most WATCH_HISTORY), sorted, into `out`. */
static void sort_values(const double *v, int n, double *out)
{
    for (int i = 0; i < n && i < WATCH_HISTORY; i++) {
        int j = i;
        for (; j > 0 && out[j - 1] > v[i]; j--)
            out[j] = out[j - 1];
        out[j] = v[i];
    }
}

double watch_level(const struct watch_channel *c)
{
    double sorted[WATCH_HISTORY];
    int n = c->n_history > WATCH_HISTORY ? WATCH_HISTORY : c->n_history;
    if (n <= 0)
        return c->value;
    sort_values(c->history, n, sorted);
    return quantile(sorted, n, 0.5);
}

/* The quartiles and spread of the first `n` values of the history. */
static struct band quartiles_of(const struct watch_channel *c, int n)
{
    struct band b = {.known = true};
    double sorted[WATCH_HISTORY];
    sort_values(c->history, n, sorted);
    b.low = quantile(sorted, n, QUANTILE_LOW);
    b.high = quantile(sorted, n, QUANTILE_HIGH);
    b.spread = b.high - b.low;
    double deciles = (quantile(sorted, n, DECILE_HIGH) - quantile(sorted, n, DECILE_LOW)) / 2;
    if (deciles > b.spread)
        b.spread = deciles;
    return b;
}

static struct band band_of(const struct watch_channel *c)
{
    struct band b = {0};
    if (c->n_history < WATCH_BAND_MIN)
        return b;
    int n = c->n_history - BAND_LAG;
    return quartiles_of(c, n < WATCH_BAND_MIN ? WATCH_BAND_MIN : n);
}

/* Whether `v` lies beyond everything the history holds by more than its
 * spread (the band's, or that of a history too young for a band), and by
 * at least two of its quanta: the least difference between two of its
 * values, never less than the step (readings_memory.h, Unusual). A sensor
 * that reads in half degrees writes "-80.5" with a step of 0.1, and one
 * quantum beyond the history is its noise. */
static bool unusual(const struct watch_channel *c, const struct band *b, double v)
{
    int n = c->n_history > WATCH_HISTORY ? WATCH_HISTORY : c->n_history;
    if (n < WATCH_UNUSUAL_MIN)
        return false;
    double sorted[WATCH_HISTORY];
    sort_values(c->history, n, sorted);
    double quantum = 0;
    for (int i = 1; i < n; i++) {
        double gap = sorted[i] - sorted[i - 1];
        if (gap > c->step / 2 && (quantum == 0 || gap < quantum))
            quantum = gap;
    }
    if (quantum == 0)
        return false; /* one value again and again: nothing to measure against */
    if (quantum < c->step)
        quantum = c->step;
    double margin = b->known ? b->spread : quartiles_of(c, n).spread;
    if (margin < UNUSUAL_FLOOR_QUANTA * quantum)
        margin = UNUSUAL_FLOOR_QUANTA * quantum;
    return v > sorted[n - 1] + margin || v < sorted[0] - margin;
}

/* Whether `v` lies nearer a known limit on its side than the channel's
 * level (beyond the midpoint of the two): the middle of the band's
 * quartiles, which leave the newest values out (a value that came halfway
 * does not move it), or the median of a history too young for a band. */
static bool halfway_to_limit(const struct watch_channel *c, const struct band *b,
                             const struct watch_limit *l, double v)
{
    double level = b->known ? (b->low + b->high) / 2 : watch_level(c);
    if (!l)
        return false;
    if (l->has_upper && v > level && v > (level + l->upper) / 2)
        return true;
    return l->has_lower && v < level && v < (level + l->lower) / 2;
}

/* How far beyond its quartiles a value leaves the band. */
static double band_widen(const struct band *b, double step)
{
    double widen = BAND_WIDEN * b->spread;
    return widen < BAND_FLOOR_STEPS * step ? BAND_FLOOR_STEPS * step : widen;
}

/* Where `v` stands against the band, coming from position `from`. */
static int band_position(const struct band *b, double step, int from, double v)
{
    if (!b->known)
        return 0;
    double widen = band_widen(b, step);
    double out_low = b->low - widen, out_high = b->high + widen;
    double in_low = b->low - widen / 2, in_high = b->high + widen / 2;

    if (v > out_high)
        return 1;
    if (v < out_low)
        return -1;
    if (from == 1 && v > in_high)
        return 1;
    if (from == -1 && v < in_low)
        return -1;
    return 0;
}

static void history_push(struct watch_channel *c, double v)
{
    if (c->n_history == WATCH_HISTORY) {
        memmove(&c->history[0], &c->history[1], (WATCH_HISTORY - 1) * sizeof c->history[0]);
        c->n_history--;
    }
    c->history[c->n_history++] = v;
}

static void history_drop_oldest(struct watch_channel *c)
{
    memmove(&c->history[0], &c->history[1], (size_t)(c->n_history - 1) * sizeof c->history[0]);
    c->n_history--;
}

/* How far the channel moves from one reading to the next: the mean of the
 * history's differences, oldest first, widened by JITTER_TO_SPREAD; 0 with
 * fewer than two values. */
static double jitter(const struct watch_channel *c)
{
    int n = c->n_history > WATCH_HISTORY ? WATCH_HISTORY : c->n_history;
    double sum = 0;
    for (int i = 1; i < n; i++) {
        double d = c->history[i] - c->history[i - 1];
        sum += d < 0 ? -d : d;
    }
    return n > 1 ? JITTER_TO_SPREAD * sum / (n - 1) : 0;
}

/* The margin by which a value must be back inside a limit to leave its
 * zone: the band's spread, as far as the channel's jitter reaches it. A
 * channel that drifts slowly has a wide spread but little jitter, and a
 * value hovering at its limit moves by its jitter: a margin of its whole
 * spread held the way back's warning for an upload or two. */
static double zone_margin(const struct watch_channel *c, const struct band *b)
{
    double margin = ZONE_MARGIN_STEPS * c->step;
    double wobble = b->known ? b->spread : 0;
    double moves = jitter(c);
    if (moves < wobble)
        wobble = moves;
    return wobble > margin ? wobble : margin;
}

/* The zone of `v` coming from zone `from`, against limit `l` (NULL: none). */
static int zone_of(const struct watch_limit *l, int from, double v, double margin)
{
    bool upper = l && l->has_upper, lower = l && l->has_lower;
    if (upper && v > l->upper)
        return 1;
    if (lower && v < l->lower)
        return -1;
    if (from == 1 && upper && v > l->upper - margin)
        return 1;
    if (from == -1 && lower && v < l->lower + margin)
        return -1;
    return 0;
}

/* Whether `v`, out of the band, is nearer a known limit on its side than
 * the band's edge, without being beyond it: a short excursion may have
 * crossed the limit between two readings and come back, and no crossing
 * would tell. */
static bool near_limit(const struct band *b, double step, const struct watch_limit *l, double v)
{
    if (!b->known || !l)
        return false;
    double widen = band_widen(b, step);
    if (l->has_upper && v > b->high + widen)
        return v <= l->upper && v > (b->high + widen + l->upper) / 2;
    if (l->has_lower && v < b->low - widen)
        return v >= l->lower && v < (b->low - widen + l->lower) / 2;
    return false;
}

/* Whether the known limits watch the side(s) of a band change already:
 * the platform alarms at its limits, so leaving the band towards a known
 * limit (or coming back from that side) tells nothing the limit will not,
 * and a poll for it would only spend the budget. */
static bool limits_cover(const struct watch_limit *l, int from, int to)
{
    bool up = from == 1 || to == 1, down = from == -1 || to == -1;
    return (!up || (l && l->has_upper)) && (!down || (l && l->has_lower));
}

/* A channel's first value: its memory starts here, its zone where the value
 * is, taken as announced. */
static void channel_start(struct watch_channel *c, const char *text, const struct watch_limit *l)
{
    double v, step;
    if (!watch_parse_value(text, &v, &step)) {
        c->error = true;
        return;
    }
    c->error = false;
    c->value = v;
    c->step = step;
    history_push(c, v);
    c->zone = zone_of(l, 0, v, 0);
    c->warned = c->zone;
}

/* A channel's next value: the reasons it raises; a crossing goes to *cross
 * (its zone changed) when `crossed` is set; *odd is set when the value is
 * unusual (readings_memory.h), left alone otherwise. */
static unsigned channel_take(struct watch_channel *c, const char *text, const struct watch_limit *l,
                             struct watch_crossing *cross, bool *crossed, bool *odd)
{
    unsigned reasons = 0;
    double v, step;
    *crossed = false;

    if (!watch_parse_value(text, &v, &step)) {
        if (!c->error)
            reasons |= WATCH_ERROR;
        c->error = true;
        return reasons;
    }
    if (c->error)
        reasons |= WATCH_ERROR;
    if (c->step == 0) {
        /* The channel's first number (it showed only errors so far). */
        channel_start(c, text, l);
        return reasons;
    }
    double before = c->value;
    c->error = false;
    c->value = v;
    if (step < c->step)
        c->step = step;

    struct band b = band_of(c);
    int from = c->band;
    int pos = band_position(&b, c->step, from, v);
    bool nearer =
        c->zone == 0 && near_limit(&b, c->step, l, v) && !near_limit(&b, c->step, l, before);
    bool recovered = c->alarmed && pos == 0 && from != 0;
    /* Out of the band towards a known limit for a reading or two, never
     * near enough the limit to ask for a look, and back: those readings
     * may be the flanks of a fast excursion that crossed the limit between
     * two uploads (a humidity spike on a remote unit's ten-minute uploads).
     * No crossing tells of it, and the way back is its only sign. */
    bool flank = pos == 0 && from != 0 && c->zone == 0 && c->out <= FLANK_READINGS &&
                 limits_cover(l, from, pos) && !near_limit(&b, c->step, l, before);
    /* An alarm the log holds, of an excursion the band never saw (its
     * readings came halfway to the limit, not out of the band): the way
     * back from halfway is its recovery's sign. */
    bool back_from_halfway = c->alarmed && pos == 0 && from == 0 && c->zone == 0 &&
                             halfway_to_limit(c, &b, l, before) && !halfway_to_limit(c, &b, l, v);
    if ((pos != from && !limits_cover(l, from, pos)) || nearer || recovered || flank ||
        back_from_halfway)
        reasons |= WATCH_BAND;
    else if (pos == 0 && from == 0 && c->zone == 0 && zone_of(l, 0, v, 0) == 0 &&
             unusual(c, &b, v)) {
        if (halfway_to_limit(c, &b, l, v))
            reasons |= WATCH_BAND;
        else
            *odd = true;
    }
    if (pos == 0) {
        history_push(c, v);
        c->out = 0;
    } else if (++c->out < BAND_REBASE) {
        /* Still out: the old normal fades, down to WATCH_BAND_MIN values
         * (a young history, of a remote unit's ten-minute uploads, has no
         * more: it holds the band while the excursion develops). */
        if (from != 0 && c->n_history > WATCH_BAND_MIN)
            history_drop_oldest(c);
    } else {
        /* Out BAND_REBASE readings in a row: this level is the new normal. */
        c->n_history = 0;
        history_push(c, v);
        c->out = 0;
        pos = 0;
    }
    c->band = pos;

    /* A bound no longer known cannot hold the channel in its zone. */
    if ((c->zone == 1 && !(l && l->has_upper)) || (c->zone == -1 && !(l && l->has_lower))) {
        c->zone = 0;
        c->back = false;
    }
    int zone = zone_of(l, c->zone, v, zone_margin(c, &b));
    if (zone == c->zone && zone != 0 && !c->back && zone_of(l, 0, v, 0) != zone) {
        /* Inside the bare limit, not yet by the margin: the platform logs
         * its recovery now, so the way back signals now; the warning waits
         * for the margin. */
        reasons |= WATCH_LIMIT;
        c->back = true;
    }
    if (zone != c->zone) {
        reasons |= WATCH_LIMIT;
        c->back = false;
        cross->num = c->num;
        cross->zone = zone;
        cross->from = c->zone;
        cross->value = v;
        cross->limit = (zone == 1 || (zone == 0 && c->zone == 1)) ? l->upper : l->lower;
        *crossed = true;
        c->zone = zone;
    }
    return reasons;
}

/* Whether `num` appears before index `i` of the reading's values. */
static bool seen_before(const struct watch_reading *r, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (r->values[j].num == r->values[i].num)
            return true;
    }
    return false;
}

unsigned watch_take(struct watch *w, const struct watch_reading *r,
                    const struct watch_limit *limits, size_t n_limits, long long seen_at,
                    struct watch_crossing *out, size_t max, size_t *n_out)
{
    unsigned reasons = 0;
    size_t n = 0;
    bool first = w->unixtime == 0;

    if (r->unixtime <= w->unixtime)
        goto out;

    if (!first) {
        long long gap = r->unixtime - w->unixtime;
        if (gap > GAP_MAX)
            gap = GAP_MAX;
        if (w->n_gaps == WATCH_GAPS) {
            memmove(&w->gaps[0], &w->gaps[1], (WATCH_GAPS - 1) * sizeof w->gaps[0]);
            w->n_gaps--;
        }
        w->gaps[w->n_gaps++] = (long)gap;
        if (w->silent)
            reasons |= WATCH_SILENT;
        if (r->battery > 0 && w->battery > 0 && r->battery < w->battery &&
            r->battery <= watch_battery_low(r->model))
            reasons |= WATCH_BATTERY;
    }
    w->silent = false;
    w->unixtime = r->unixtime;
    w->seen_at = seen_at;
    if (r->battery > 0)
        w->battery = r->battery;

    for (size_t i = 0; i < r->n_values; i++) {
        const struct watch_value *val = &r->values[i];
        if (val->num < 1 || seen_before(r, i))
            continue;
        const struct watch_limit *l = limit_of(limits, n_limits, val->num);
        const char *text = val->text ? val->text : "";
        struct watch_channel *c = watch_channel(w, val->num);
        if (!c) {
            c = channel_add(w, val->num);
            if (c)
                channel_start(c, text, l);
            continue;
        }
        struct watch_crossing cross;
        bool crossed, odd = false;
        reasons |= channel_take(c, text, l, &cross, &crossed, &odd);
        if (odd && !w->hint_at)
            w->hint_at = r->unixtime < seen_at ? r->unixtime : seen_at;
        if (crossed && n < max) {
            out[n++] = cross;
            c->warned = cross.zone;
            if (cross.zone != 0) /* a way back keeps the time of the warning it ends */
                c->warned_at = r->unixtime;
        }
    }

out:
    if (n_out)
        *n_out = n;
    return reasons;
}

long long watch_interval(const struct watch *w)
{
    long sorted[WATCH_GAPS];
    int n = w->n_gaps;
    if (n < 2)
        return 0;
    for (int i = 0; i < n; i++) {
        long g = w->gaps[i];
        int j = i;
        for (; j > 0 && sorted[j - 1] > g; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = g;
    }
    if (n % 2)
        return sorted[n / 2];
    return ((long long)sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

long long watch_look_at(const struct watch *w, bool remote)
{
    return remote ? w->pending_at : w->pending_at + WATCH_SETTLE_STANDALONE;
}

void watch_ask(const struct watch *w, bool remote, long long now, struct watch_ask *out)
{
    *out = (struct watch_ask){.looks_again = w->recheck_at > now};
    if (w->hint_at && now >= watch_hint_due(w, remote))
        out->hint = w->hint_at;
    if (w->pending) {
        /* The platform logs what a reading shows a little after the
         * measurement, a remote unit's before the upload: a look made
         * earlier finds nothing and costs a second one. */
        out->since = w->pending_since;
        out->told = w->pending_told;
        out->look = now >= watch_look_at(w, remote);
    } else if (w->recheck_at && w->recheck_at <= now) {
        out->since = w->recheck_at;
        out->told = w->pending_told;
        out->guess = !w->silent;
        out->look = true;
    }
}

unsigned watch_idle(struct watch *w, long long now, long long after)
{
    if (w->unixtime == 0 || w->silent)
        return 0;
    long long interval = watch_interval(w);
    if (interval == 0)
        return 0;
    long long threshold = SILENCE_INTERVALS * interval;
    if (after > 0) {
        threshold = after + SILENCE_LOGGED;
        if (threshold < interval + SILENCE_LOGGED)
            threshold = interval + SILENCE_LOGGED;
    }
    if (threshold < SILENCE_MIN)
        threshold = SILENCE_MIN;
    if (now - w->seen_at <= threshold)
        return 0;
    w->silent = true;
    return WATCH_SILENT;
}

void watch_relimit(struct watch *w, const struct watch_limit *limits, size_t n_limits)
{
    for (int i = 0; i < w->n_ch; i++) {
        struct watch_channel *c = &w->ch[i];
        const struct watch_limit *l = limit_of(limits, n_limits, c->num);
        if (c->step == 0) {
            c->zone = 0; /* never a number: nowhere yet */
        } else {
            struct band b = band_of(c);
            c->zone = zone_of(l, c->zone, c->value, zone_margin(c, &b));
        }
        c->warned = c->zone;
        c->back = false;
    }
}

bool watch_excursion(const struct watch *w, const struct watch_limit *limits, size_t n_limits)
{
    bool out = false;
    for (int i = 0; i < w->n_ch && !out; i++) {
        const struct watch_channel *c = &w->ch[i];
        const struct watch_limit *l =
            c->num >= 1 && (size_t)c->num <= n_limits ? &limits[c->num - 1] : NULL;
        bool known = c->band > 0 ? l && l->has_upper : l && l->has_lower;
        out = !c->error && c->band != 0 && !known;
    }
    return out;
}

/* When a value at `v` at `now`, and at `before` `dt` seconds earlier,
 * meets `limit` going on as it went; 0: it does not go towards it. */
static long long meets(double before, double v, long long dt, double limit, long long now)
{
    bool towards = (v < limit && v > before) || (v > limit && v < before);
    if (!towards || dt <= 0)
        return 0;
    double speed = (v - before) / (double)dt;
    return now + (long long)((limit - v) / speed + 0.5); /* positive: rounded */
}

long long watch_foresee(const struct watch *was, const struct watch *now,
                        const struct watch_limit *limits, size_t n_limits)
{
    long long interval = watch_interval(now), dt = now->unixtime - was->unixtime, first = 0;
    if (interval <= WATCH_FORESEE_GAIN || was->unixtime == 0 || dt <= 0)
        return 0;
    for (int i = 0; i < now->n_ch; i++) {
        const struct watch_channel *c = &now->ch[i], *p = channel_in(was, c->num);
        const struct watch_limit *l =
            c->num >= 1 && (size_t)c->num <= n_limits ? &limits[c->num - 1] : NULL;
        if (!p || !l || c->error || p->error || c->step == 0 || p->step == 0)
            continue;
        /* Beyond a limit (its recovery), or out of the band on its side
         * without reaching it yet (its alarm). */
        bool up =
            l->has_upper && (c->zone == 1 ? c->value > l->upper
                                          : c->zone == 0 && c->band == 1 && c->value < l->upper);
        bool down =
            l->has_lower && (c->zone == -1 ? c->value < l->lower
                                           : c->zone == 0 && c->band == -1 && c->value > l->lower);
        long long at = up     ? meets(p->value, c->value, dt, l->upper, now->unixtime)
                       : down ? meets(p->value, c->value, dt, l->lower, now->unixtime)
                              : 0;
        if (at && at + WATCH_FORESEE_GAIN <= now->unixtime + interval && (!first || at < first))
            first = at;
    }
    return first;
}

void watch_polled(struct watch *w)
{
    for (int i = 0; i < w->n_ch; i++) {
        struct watch_channel *c = &w->ch[i];
        c->has_at_poll = c->error || c->step != 0;
        c->at_poll_error = c->error;
        c->at_poll = c->error ? 0 : c->value;
    }
    w->pending = 0;
    w->pending_since = 0;
    w->pending_told = false;
    w->recheck_at = 0;
    w->hint_at = 0;
}

long long watch_hint_due(const struct watch *w, bool remote)
{
    if (!w->hint_at || remote)
        return w->hint_at;
    long long wait = watch_interval(w);
    if (wait < WATCH_SETTLE_STANDALONE)
        wait = WATCH_SETTLE_STANDALONE;
    if (wait > HINT_WAIT_MAX)
        wait = HINT_WAIT_MAX;
    return w->hint_at + wait;
}
