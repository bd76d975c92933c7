/* Watching a device's current readings: what they say about its alert log.
 *
 * Get Current Readings is cheap (10 calls per 2 minutes, every device of a
 * login in one reply) while an alert-log call is one of 12 an hour shared by
 * every device of the login. wsrelay reads the readings every run, keeps a
 * short memory per device (struct watch, saved in the state), and spends
 * the alert budget first on the devices whose readings moved: a signal.
 * A normal reading never makes a signal; noise must not spend the budget.
 *
 * The same memory decides the early warnings: a reading beyond a known
 * limit is announced once per crossing, without waiting for the alert
 * log, and the way back inside needs a margin (hysteresis) so that a value
 * hovering at the limit pages nobody every minute.
 *
 * Pure: no I/O, no clock (times are arguments), no JSON. */
#ifndef WSRELAY_READINGS_MEMORY_H
#define WSRELAY_READINGS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#define WATCH_HISTORY 32      /* recent values kept per channel */
#define WATCH_FORESEE_GAIN 60 /* seconds a foreseen crossing must come before the next reading */
/* Seconds after a foreseen crossing its look waits: the platform logs a
 * remote unit's at its base unit's next monitoring tick (1 to 5 minutes). */
#define WATCH_FORESEE_LAG 120
#define WATCH_CHANNELS 8    /* channels kept per device (the platform has up to 6) */
#define WATCH_GAPS 8        /* recent gaps between uploads kept */
#define WATCH_BAND_MIN 12   /* values a channel needs before its band is used */
#define WATCH_UNUSUAL_MIN 6 /* values a channel needs before a value is unusual */
/* Seconds a standalone device's reading is old before its signal's first
 * look (watch_look_at). */
#define WATCH_SETTLE_STANDALONE 90

/* The rules, exactly:
 *
 * Band. A channel's band is known once its history holds WATCH_BAND_MIN
 * values; the new value is judged against the history without it, and
 * without its 12 newest values as long as WATCH_BAND_MIN older ones remain
 * (the oldest WATCH_BAND_MIN otherwise), so that the first readings of a
 * slow ramp do not drag the band along with them. With q10, q25, q75 and
 * q90 the quantiles of those values (linear between ranks), step the
 * channel's step, and
 *     spread = max(q75 - q25, (q90 - q10) / 2)
 *     widen = max(6 * spread, 5 * step)
 * a value leaves the band above q75 + widen or below q25 - widen, and
 * comes back (hysteresis) only within q25 - widen / 2 .. q75 + widen / 2.
 * (The quartiles alone, from a small history whose middle half happens
 * to be tight, make a band that ordinary noise leaves; the deciles check
 * them. No term for the history's range: a band that followed its
 * extremes moved along with a ramp.)
 * WATCH_BAND is raised when the position (-1, 0, +1) changes, unless
 * known limits watch that side: a change to or from +1 with a known upper
 * limit, or -1 with a known lower one, raises nothing (the limit's own
 * crossing will tell, and the platform alarms only at its limits). But a
 * value that comes near a known limit without crossing it raises
 * WATCH_BAND too: out of the band, inside the limit (zone 0 before and
 * now), nearer the limit than the band's edge (beyond the midpoint of the
 * two), where the value before was not (both judged against the same
 * band). A short excursion may have crossed the limit between two
 * readings and come back, and no crossing would tell. And a channel
 * whose alarm the alert log holds without its recovery (`alarmed`) raises
 * WATCH_BAND when it comes back into its band, whatever the limits: the
 * platform has logged its recovery then, though no reading may have been
 * beyond the limit to cross back. A value in
 * the band enters the history (the oldest goes when it is full); a value
 * out of it does not (it would widen the band towards itself and bring an
 * excursion "back" while it lasts). Instead each further reading out drops
 * the oldest value, so the old normal fades, down to WATCH_BAND_MIN values;
 * the 22nd reading in a row out of the band (`out` counts them) is the new
 * normal: the history restarts from that value, position 0, no signal.
 * (A full history has faded to WATCH_BAND_MIN values by then; a young one,
 * such as a remote unit's after two hours of ten-minute uploads, holds its
 * band as long, so that a slow ramp stays out until it is over.) A
 * return within the next WATCH_BAND_MIN - 1 readings makes no band signal
 * (no band yet); one after that leaves the new band and does.
 *
 * Zones. Zone +1 when value > upper, -1 when value < lower (a bound that
 * is not known makes no zone; a zone whose bound is no longer given falls
 * back to 0 without a crossing). Leaving a zone towards 0 needs the value
 * inside by margin = max(3 * step, min(spread, jitter)) (spread as above,
 * 0 while the band is not known; jitter 1.5 times the mean difference
 * between two consecutive values of the history, which for noise that
 * does not drift is about its spread, and for a channel that drifts
 * slowly is far less): back below upper - margin, above lower + margin.
 * A jump from one side to the other is one crossing. WATCH_LIMIT is raised
 * by every crossing, and once more per zone by the first value inside the
 * bare limit while the zone holds (the platform logs its recovery then;
 * `back` is set). The crossing to 0 still raises it: while the value
 * hovered near the limit the platform may have logged more alarms and
 * recoveries than the uploads showed. So a value hovering at a limit
 * raises at most three signals per excursion.
 *
 * Errors, battery, silence: see enum watch_reason; a value is judged by
 * watch_parse_value. An error value changes neither the history, nor the
 * band position, nor the zone. A channel's first number (first reading, or
 * a channel that showed only error values) sets its zone and takes it as
 * announced, as the first reading does.
 *
 * Channels are matched by num (>= 1; a later duplicate in one reading is
 * ignored) and ch[] is kept sorted by num; a channel missing from a
 * reading keeps its memory; channels met after WATCH_CHANNELS are ignored.
 * A channel's step is the finest step its values were written in.
 *
 * Unusual. A value that raises no band signal, is inside the band (or
 * the channel has no band yet) and in zone 0, yet lies beyond everything
 * the history holds (its lowest and highest value) by more than the
 * spread (the band's, or the same quantiles of a history too young for a
 * band; never less than two quanta, the least difference between two of
 * the history's values and at least the step; a history of one value
 * again and again has none), with at least WATCH_UNUSUAL_MIN values in
 * the history, sets the device's hint_at (when 0) to the reading's
 * time, never later than seen_at. It is no signal and spends nothing: the
 * round robin looks at a hinted device before the others (scheduler.h,
 * watch_hint_due). The band is wide so that noise never leaves it, and a
 * short excursion between two uploads may show only as one reading
 * nearer its limit than any before, still inside it. An unusual value
 * nearer a known limit on its side than the channel's level (beyond the
 * midpoint of the two) raises WATCH_BAND instead, as a value out of the
 * band near a limit does: it may have crossed it between two uploads; and
 * while the channel is `alarmed`, the first value back from beyond that
 * midpoint raises WATCH_BAND (the way back of an excursion the band never
 * saw: the platform has logged its recovery). */

/* Why a device has a signal: bits, several at once. */
enum watch_reason {
    WATCH_LIMIT = 1 << 0,   /* a channel crossed a known limit, either way */
    WATCH_BAND = 1 << 1,    /* a channel left, or came back into, the band of its
                               own recent readings */
    WATCH_ERROR = 1 << 2,   /* a value became an error value ("E…", "Sensor Error"),
                               or stopped being one */
    WATCH_BATTERY = 1 << 3, /* the battery fell to a low level of its family */
    WATCH_SILENT = 1 << 4,  /* uploads stopped (nothing new for more than three
                               usual intervals), or started again */
    WATCH_LIKELY = 1 << 5,  /* a channel without a known limit crossed, either way,
                               a limit the fleet's known ones make likely
                               (likely.h); raised by the caller, not watch_take */
    WATCH_REASON_LAST = WATCH_LIKELY,
};

/* The name of one reason bit ("limit", "band", "error", "battery",
 * "silent", "likely limit"); NULL for anything else. */
const char *watch_reason_name(unsigned bit);

/* "limit, band, error, battery, silent, likely limit" for the bits set in
 * `reasons`, in that order, joined by ", " into `out` (at least 64 bytes);
 * "" for 0.
 * Returns `out`. */
const char *watch_reason_text(char *out, size_t size, unsigned reasons);

/* A channel's known limits; a bound that is not known is absent. */
struct watch_limit {
    bool has_upper, has_lower;
    double upper, lower;
};

/* What is remembered of one channel. */
struct watch_channel {
    int num;                       /* channel number, 1-based */
    bool error;                    /* the last value was an error value */
    double value;                  /* the last numeric value (kept while
                                      the channel shows an error value) */
    double step;                   /* the finest step the values are written in
                                      (0.1 for "-79.8"); 0: not known yet */
    double history[WATCH_HISTORY]; /* recent numeric values, oldest first */
    int n_history;
    int band;         /* the last value against the band: -1 below,
                         +1 above, 0 inside or no band yet */
    int out;          /* readings in a row out of the band, the
                         first included; 0 inside */
    int zone;         /* against the known limits, with hysteresis:
                         -1 below lower, +1 above upper, 0 inside */
    bool has_at_poll; /* a value was recorded at the last alert-log poll */
    bool at_poll_error;
    double at_poll;      /* that value (when !at_poll_error) */
    long long warned_at; /* unixtime of the reading of the last early
                            warning of this channel beyond a limit
                            (a way back keeps it); 0: none */
    int warned;          /* the zone that warning announced; the
                            zone the first number or watch_relimit
                            set. warned != zone: a crossing that did
                            not fit in watch_take's `out` */
    bool back;           /* beyond a limit (zone != 0), a value came
                            back inside the bare limit: the way
                            back's signal was raised */
    bool alarmed;        /* the alert log's newest entry of this
                            channel is an alarm: its recovery is
                            still to come (kept by the caller,
                            run/intake.c, at each poll) */
};

/* What is remembered of one device between runs. */
struct watch {
    long long unixtime;    /* the last reading's time (the device's clock); 0: none yet */
    long long seen_at;     /* when wsrelay first saw that reading (its own clock) */
    long gaps[WATCH_GAPS]; /* seconds between recent readings, oldest first */
    int n_gaps;
    int battery; /* the last battery level; 0: unknown */
    bool silent; /* WATCH_SILENT was raised and uploads have not resumed */
    int n_ch;    /* channels in ch[] */
    /* Kept by the caller (run.c) for the scheduler: */
    unsigned pending;        /* reasons raised since the last alert-log poll */
    long long pending_since; /* when the first of them was raised; 0: none */
    long long pending_after; /* the device's time after which what the signal
                                is about lies: its reading before the one that
                                raised it (for silence, its last reading) */
    long long pending_at;    /* the device's time of the reading that raised it
                                (for silence, its last reading), never later than
                                wsrelay's clock then: the first look waits for
                                watch_look_at */
    long long recheck_at;    /* look once more at this time (a poll found nothing
                                that explains the signal); 0: no */
    long long hint_at;       /* set by watch_take: the device's time of the first
                                unusual reading since the last poll (see
                                Unusual above); 0: none */
    bool pending_told;       /* every reason of the signal was a limit crossing
                                (into a zone) that an early warning announced to
                                someone: the news is out, so its look waits behind
                                signals whose news is not. A reason that is not
                                told, joining, starts the signal again (since,
                                after, at) as that reason */
    /* Last, so that a copy of the first n_ch is a whole memory (the state
     * keeps each device's memory so, state/watchfile.c). */
    struct watch_channel ch[WATCH_CHANNELS];
};

/* One channel of a reading, as the platform gives it. */
struct watch_value {
    int num;          /* 1-based */
    const char *text; /* the value as written: a number, or an error value */
};

struct watch_reading {
    long long unixtime; /* the reading's time */
    const char *model;  /* the device's model, for its battery family */
    int battery;        /* 0: not given */
    const struct watch_value *values;
    size_t n_values;
};

/* One channel that crossed a limit (its zone changed), for an early warning. */
struct watch_crossing {
    int num;      /* the channel */
    int zone;     /* where it is now: +1 above upper, -1 below lower, 0 back inside */
    int from;     /* where it was */
    double value; /* the reading's value */
    double limit; /* the bound crossed (for zone 0: the one it came back from) */
};

/* A channel's usual level: the median of its history (the values inside
 * its band); its last value when the history is empty. */
double watch_level(const struct watch_channel *c);

/* Whether `text` is a number as the platform writes readings ("-79.8",
 * "12", "+3.5"); if so *value (may be NULL) holds it and *step (may be
 * NULL) the step it is written in (0.1 for one decimal, 1 for none).
 * Accepted: spaces or tabs around, an optional sign, digits, and an
 * optional '.' followed by digits, at most 32 characters without the
 * spaces. Anything else is an error value: "", "E01", "Sensor Error",
 * "----", "nan", "1e5", "12.", ".5", "12.3.4", "12,5". Locale-free; exact
 * (as the nearest double) up to 15 significant digits. */
bool watch_parse_value(const char *text, double *value, double *step);

/* The battery level at or below which a device of `model` counts as low:
 * 2 for the 7-series standalone devices (TR-7…: 1 very low, 2 low), 4 for
 * base-attached series and the 4-series (RTR…, TR-4…: 1 to 3 very low, 4
 * low), 2 when the model is unknown. By the model's prefix, letters in
 * either case: "TR-7" gives 2; "RTR" and "TR-4" give 4. WATCH_BATTERY is
 * raised when a reading's level (> 0) is below the last known one (> 0)
 * and at or below this; a rise or a first level never is. */
int watch_battery_low(const char *model);

/* Takes a reading into `w`. A reading no newer than w->unixtime changes
 * nothing and returns 0. The first reading (w->unixtime 0) sets the memory
 * and returns 0: there is nothing to compare it with, and zones start where
 * the values are, so an excursion under way at installation warns nobody
 * (its alert-log entries will tell). Otherwise returns the reasons this
 * reading raises (watch_reason bits; 0 for a normal reading) and writes
 * into `out` (at most `max` of them; `out` may be NULL when max is 0) the
 * channels whose zone changed; *n_out (may be NULL) gets their count.
 * `limits[i]` are the limits of channel i + 1, for i < n_limits (missing
 * ones are unknown). `seen_at` is wsrelay's clock now. Clears `silent`
 * (returning WATCH_SILENT) when uploads resume. Channels beyond
 * WATCH_CHANNELS are ignored. A crossing that does not fit in `out` still
 * moves the zone (and raises WATCH_LIMIT) but is not counted and leaves
 * `warned` as it was; a written one sets warned, and warned_at when it
 * goes beyond a limit. Each newer
 * reading adds its gap (capped at 2^31 - 1 s) to gaps[], dropping the
 * oldest beyond WATCH_GAPS. */
unsigned watch_take(struct watch *w, const struct watch_reading *r,
                    const struct watch_limit *limits, size_t n_limits, long long seen_at,
                    struct watch_crossing *out, size_t max, size_t *n_out);

/* The device's usual interval between readings, in seconds: the median
 * of the recent gaps (the mean of the middle two for an even count); 0
 * while fewer than 2 gaps are known. */
long long watch_interval(const struct watch *w);

/* When the first alert-log look at the signal of `w` is due (a time on
 * the device's clock, from pending_at): when the platform has logged what
 * the reading shows. A remote unit (`remote`: it has a base unit) has its
 * alarm logged at its base unit's monitoring tick, which as a rule comes
 * before the upload that shows the reading (a base unit checks its remote
 * units every few minutes and uploads them together every 10): its look is
 * due at once, pending_at. A standalone device's alarm is logged a little
 * after the upload that shows it: its look waits until the reading is
 * WATCH_SETTLE_STANDALONE old (a minute measured worse: with the budget
 * tight, more of its looks came back empty). Either way a look that finds nothing looks
 * once more a few minutes later (recheck_at). */
long long watch_look_at(const struct watch *w, bool remote);

/* When the round robin should look at a device with an unusual reading
 * (hint_at) before the others, on the device's clock; 0 when there is no
 * hint. A remote unit's at once: its base unit logged what the reading
 * shows before the upload. A standalone device's one usual interval after
 * the reading (watch_interval; at least WATCH_SETTLE_STANDALONE, at most
 * 10 minutes): the reading may be the first flank of a short excursion,
 * whose alarm the platform logs after it, and the next reading shows
 * whether it went on (a signal then) or came back. */
long long watch_hint_due(const struct watch *w, bool remote);

/* What a device's memory asks of the scheduler at `now` (scheduler.h,
 * struct sched_device): watch_ask. */
struct watch_ask {
    bool look;        /* a look is due now: a signal (pending) from
                         watch_look_at on, or a look planned in advance
                         (recheck_at) from its time */
    long long since;  /* when the signal was raised (pending_since; a
                         planned look: recheck_at); 0: none */
    bool told;        /* pending_told: the signal's news is out */
    bool guess;       /* the look is a planned one and the device is not
                         silent: a guess at when an entry is there (a
                         silent device's looks wait for its communication
                         error, which comes) */
    bool looks_again; /* a look once more is planned for later */
    long long hint;   /* hint_at once watch_hint_due has come; 0: none */
};

/* Fills *out (all of it) with what `w` asks at `now`, for a device that
 * is `remote` (it has a base unit) or not. A signal goes before a planned
 * look: while one is pending, the planned look waits with it. */
void watch_ask(const struct watch *w, bool remote, long long now, struct watch_ask *out);

/* At `now`, with no new reading: returns WATCH_SILENT (and sets `silent`)
 * the first time nothing new has come for longer than the platform takes
 * to log its communication error, counted from seen_at: `after` seconds
 * (the delay the login's alert logs showed, state.h: state_silence_after)
 * and a minute for the entry to be logged, never less than a usual
 * interval and that minute; while `after` is 0 (not seen yet), three
 * usual intervals. The usual interval is the median of the recent gaps
 * (the mean of the middle two for an even count; unknown before 2 gaps),
 * and silence is never shorter than 3 minutes. A silence raised before
 * the platform logged its error costs looks that find nothing (a
 * standalone device uploading every minute was looked at after 3, 7, 11
 * and 16 minutes for an error logged after 20); one raised long after it
 * makes the error late (a remote unit's ten-minute uploads: 30 minutes
 * for an error logged after 20). Once silent, 0 until a new reading
 * (which returns WATCH_SILENT from watch_take). */
unsigned watch_idle(struct watch *w, long long now, long long after);

/* The limits changed (learnt from an alert text, or configured anew):
 * recomputes each channel's zone from its last value without a signal or a
 * crossing, and takes that zone as announced (no early warning for an
 * excursion already under way when its limit became known). The zone's
 * margin applies as in watch_take (a value inside by less than the margin
 * stays where it was); a channel that never had a number gets zone 0. */
void watch_relimit(struct watch *w, const struct watch_limit *limits, size_t n_limits);

/* An alert-log poll of the device was made: records each channel's value
 * as at_poll (at_poll_error for an error value; has_at_poll for every
 * channel that has shown a value) and clears `pending`, `pending_since`,
 * `pending_told`, `recheck_at` and `hint_at` (`pending_after` stays: a look
 * once more still needs it). */
void watch_polled(struct watch *w);

/* Whether an excursion is under way on a channel of `w` that no known
 * limit watches: its last value (not an error value) is out of its band
 * (band != 0) on a side without a known limit (`limits[i]` are channel i +
 * 1's, as for watch_take). While it lasts the platform may alarm at any
 * reading at a limit wsrelay does not know (a slow ramp leaves its band
 * long before it gets there), so a look that found nothing is not the end
 * of it. A side with a known limit needs no such looks: its crossing is a
 * signal of its own. */
bool watch_excursion(const struct watch *w, const struct watch_limit *limits, size_t n_limits);

/* A crossing foreseen between two readings: the device's time at which a
 * channel, going on as from `was`'s reading to `now`'s, crosses a known
 * limit before its next reading is due (watch_interval) by at least
 * WATCH_FORESEE_GAIN; 0: none. Two kinds count: a channel beyond a
 * limit coming back towards it (its recovery: the platform logs it at
 * the crossing, the next upload shows it up to an interval later), and a
 * channel out of its band on the side of a limit, going towards it (its
 * alarm). The earliest of the channels' is given. Nothing is changed. */
long long watch_foresee(const struct watch *was, const struct watch *now,
                        const struct watch_limit *limits, size_t n_limits);

/* The last reading in words, into `out` (cut to `size`, at least 1):
 * "ch1 -65 (above its limit), ch2 error value; battery 4; uploads have
 * stopped". Returns `out`. */
const char *watch_summary(char *out, size_t size, const struct watch *w);

/* The channel `num` of `w`, or NULL. */
struct watch_channel *watch_channel(struct watch *w, int num);

#endif
