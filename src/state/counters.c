/* Counters kept across runs for `wsrelay status` and metrics: events that
 * no receiver got on purpose (dropped by a rule, held back by a throttle,
 * taken by no rule), and values that are not sums, such as the time of the
 * last good run. A clock that jumps leaves them as they are. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>

/* --- checking a loaded document ---------------------------------------- */

static int check_counters(struct json_object *counters, struct err *e)
{
    return check_ints(counters, "counters", e);
}

/* --- counters ---------------------------------------------------------- */

void state_count(struct state *s, const char *name, long long n)
{
    long long v = int_member(section(s, &state_section_counters), name, 0);
    if (n > 0 && v > LLONG_MAX - n)
        v = LLONG_MAX;
    else if (n < 0 && v < LLONG_MIN - n)
        v = LLONG_MIN;
    else
        v += n;
    jsonv_put_int(section(s, &state_section_counters), name, v);
}

long long state_counter(const struct state *s, const char *name)
{
    return int_member(section(s, &state_section_counters), name, 0);
}

void state_set_counter(struct state *s, const char *name, long long value)
{
    jsonv_put_int(section(s, &state_section_counters), name, value);
}

char **state_counter_names(const struct state *s, size_t *n)
{
    struct json_object *counters = section(s, &state_section_counters);
    char **names = NULL;
    *n = 0;
    json_object_object_foreach(counters, name, value)
    {
        (void)value;
        names = xreallocarray(names, *n + 1, sizeof *names);
        names[(*n)++] = xstrdup(name);
    }
    if (*n)
        qsort(names, *n, sizeof *names, by_string);
    return names;
}

const struct state_section state_section_counters = {
    .name = "counters",
    .type = json_type_object,
    .check = check_counters,
};
