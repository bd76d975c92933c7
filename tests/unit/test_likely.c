/* Likely limits: the fleet's known limits as a guess for a channel that has
 * none. */
#include "likely.h"

#include <criterion/criterion.h>

static const struct likely_row fleet[] = {
    {"°C", -80.2, {.has_upper = true, .upper = -70, .has_lower = true, .lower = -90}},
    {"°C", 5.1, {.has_upper = true, .upper = 8, .has_lower = true, .lower = 2}},
    {"°C", 22.0, {.has_upper = true, .upper = 28, .has_lower = true, .lower = 15}},
    {"%RH", 45.0, {.has_upper = true, .upper = 70, .has_lower = true, .lower = 25}},
    {"°C", -20.0, {.has_upper = true, .upper = -15}}, /* one bound known */
};
#define N_FLEET (sizeof fleet / sizeof fleet[0])

Test(likely, the_nearest_row_of_the_same_unit_whose_limits_hold_the_level)
{
    struct watch_limit l;
    cr_assert(likely_limits(fleet, N_FLEET, "°C", -79.0, NULL, &l));
    cr_assert(l.has_upper && l.upper == -70 && l.has_lower && l.lower == -90);
    cr_assert(likely_limits(fleet, N_FLEET, "°C", 4.6, NULL, &l));
    cr_assert(l.upper == 8 && l.lower == 2, "the refrigerator, not the room (15 < 4.6 fails)");
    cr_assert(likely_limits(fleet, N_FLEET, "%RH", 50, NULL, &l));
    cr_assert(l.upper == 70 && l.lower == 25);
}

Test(likely, no_guess_without_a_row_of_that_unit_around_the_level)
{
    struct watch_limit l;
    cr_assert_not(likely_limits(fleet, N_FLEET, "°F", 40, NULL, &l), "another unit");
    cr_assert_not(likely_limits(fleet, N_FLEET, "°C", 40, NULL, &l), "no limit above 40");
    cr_assert_not(l.has_upper || l.has_lower);
    cr_assert_not(likely_limits(fleet, 0, "°C", 5, NULL, &l), "no fleet");
    cr_assert_not(likely_limits(fleet, N_FLEET, "°C", 8, NULL, &l),
                  "on the refrigerator's bound, below the room's lower one");
}

Test(likely, a_row_that_knows_one_bound_guesses_that_side_only)
{
    struct watch_limit l;
    cr_assert(likely_limits(fleet, N_FLEET, "°C", -21.0, NULL, &l));
    cr_assert(l.has_upper && l.upper == -15, "the freezer of -20 is the nearest above");
    cr_assert_not(l.has_lower, "-21 is not within the -80 freezer's limits: no lower guess");
}

Test(likely, a_known_bound_is_not_guessed)
{
    struct watch_limit known = {.has_upper = true, .upper = 7.5}, l;
    cr_assert(likely_limits(fleet, N_FLEET, "°C", 5, &known, &l));
    cr_assert_not(l.has_upper, "the channel's own upper limit stands");
    cr_assert(l.has_lower && l.lower == 2);
    struct watch_limit both = {.has_upper = true, .upper = 7.5, .has_lower = true, .lower = 1};
    cr_assert_not(likely_limits(fleet, N_FLEET, "°C", 5, &both, &l), "nothing left to guess");
}

Test(likely, a_crossing_either_way)
{
    struct watch_limit l = {.has_upper = true, .upper = 8, .has_lower = true, .lower = 2};
    cr_assert(likely_crossed(&l, 7.9, 8.1));
    cr_assert(likely_crossed(&l, 8.1, 7.9), "the way back");
    cr_assert(likely_crossed(&l, 2.1, 1.9));
    cr_assert(likely_crossed(&l, 1.9, 8.5), "from below one to beyond the other");
    cr_assert_not(likely_crossed(&l, 8.0, 7.0), "at the bound is not beyond it");
    cr_assert_not(likely_crossed(&l, 8.1, 9.5), "still beyond");
    cr_assert_not(likely_crossed(&l, 3, 7));
    struct watch_limit up = {.has_upper = true, .upper = 8};
    cr_assert_not(likely_crossed(&up, 2.5, 1.5), "no lower bound guessed");
}
