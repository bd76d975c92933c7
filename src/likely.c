/* Likely limits from the fleet's known ones (likely.h). */
#include "likely.h"

#include <math.h>
#include <string.h>

/* The row of `unit` nearest to `level` whose bound on one side (`upper`)
 * is known and lies beyond `level`, with `level` inside its other bound
 * where that is known too; NULL when none. */
static const struct likely_row *nearest(const struct likely_row *rows, size_t n, const char *unit,
                                        double level, bool upper)
{
    const struct likely_row *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct likely_row *r = &rows[i];
        bool beyond =
            upper ? r->l.has_upper && level < r->l.upper : r->l.has_lower && level > r->l.lower;
        bool inside =
            upper ? !r->l.has_lower || level > r->l.lower : !r->l.has_upper || level < r->l.upper;
        if (!beyond || !inside || strcmp(r->unit, unit) != 0)
            continue;
        if (!best || fabs(r->level - level) < fabs(best->level - level))
            best = r;
    }
    return best;
}

bool likely_limits(const struct likely_row *rows, size_t n, const char *unit, double level,
                   const struct watch_limit *known, struct watch_limit *out)
{
    const struct likely_row *r;
    *out = (struct watch_limit){0};
    if (!(known && known->has_upper) && (r = nearest(rows, n, unit, level, true))) {
        out->has_upper = true;
        out->upper = r->l.upper;
    }
    if (!(known && known->has_lower) && (r = nearest(rows, n, unit, level, false))) {
        out->has_lower = true;
        out->lower = r->l.lower;
    }
    return out->has_upper || out->has_lower;
}

bool likely_crossed(const struct watch_limit *likely, double before, double now)
{
    bool up = likely->has_upper && (before > likely->upper) != (now > likely->upper);
    bool down = likely->has_lower && (before < likely->lower) != (now < likely->lower);
    return up || down;
}
