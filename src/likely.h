/* Likely limits: what a fleet's known limits say of a channel that has none.
 *
 * With nothing configured, wsrelay learns a channel's limits from the texts
 * of its alert log (state.h: learnt limits); a device whose log holds no
 * alarm yet has none, and its readings can only say that a value left its
 * band. Devices of one kind are usually set alike (a lab's freezers alarm
 * at -70 °C, its refrigerators at 2 and 8 °C), so the limits known of the
 * others are a good guess: a reading beyond such a guess is worth a look at
 * the alert log (readings_memory.h: WATCH_LIKELY). Never an early warning: only a
 * known limit makes one.
 *
 * Pure: no I/O, no state. */
#ifndef WSRELAY_LIKELY_H
#define WSRELAY_LIKELY_H

#include "readings_memory.h"

#include <stdbool.h>
#include <stddef.h>

/* A channel whose limits are known, as the guess reads it. */
struct likely_row {
    const char *unit;     /* as the platform writes it ("°C", "%RH"); borrowed */
    double level;         /* its current value */
    struct watch_limit l; /* at least one bound known */
};

/* The likely limits of a channel of `unit` whose usual level is `level`
 * (watch_level) and whose own known limits are `known` (NULL: none). Each bound `known`
 * lacks is guessed on its own: the upper one from the row of the same unit
 * (compared byte for byte) with a known upper bound above `level` (and, if
 * it knows its lower bound too, that below `level`) whose level is nearest
 * to `level` (the first of equals); the lower one alike. A row may know one
 * bound only (an alert text teaches the limit it names). Bounds `known`
 * has are not set in *out. Returns whether *out got a bound. */
bool likely_limits(const struct likely_row *rows, size_t n, const char *unit, double level,
                   const struct watch_limit *known, struct watch_limit *out);

/* Whether a channel's value moving from `before` to `now` crossed a bound
 * of `likely` either way (beyond it is above an upper bound, below a lower
 * one). */
bool likely_crossed(const struct watch_limit *likely, double before, double now);

#endif
