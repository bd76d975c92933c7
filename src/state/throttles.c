/* The routing rules' throttles, per rule, device serial and kind: when an
 * event last went through, and how many were held back since.
 *
 * Why throttles are kept per rule, device serial and kind: a routing rule
 * that lets one event of a device and kind through per period must
 * remember across runs when it last did and how many it has held back
 * since, so that the next notification can say "and 12 more since 02:14".
 * The state only stores the entries; the rules decide what they mean.
 * Entries nobody has touched for 30 days are pruned by the caller
 * (state_prune_throttles), which bounds the file.
 * The throttles stay sorted by rule, serial and kind, which makes lookups
 * a binary search, and no triple appears twice. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Throttle entries by rule, then serial, then kind. */
static int cmp_throttle_key(const struct json_object *t, const char *rule, const char *serial,
                            const char *kind)
{
    int c = strcmp(str_member(t, "rule"), rule);
    if (!c)
        c = strcmp(str_member(t, "serial"), serial);
    if (!c)
        c = strcmp(str_member(t, "kind"), kind);
    return c;
}

static int cmp_throttle(const void *a, const void *b)
{
    const struct json_object *y = *(struct json_object *const *)b;
    return cmp_throttle_key(*(struct json_object *const *)a, str_member(y, "rule"),
                            str_member(y, "serial"), str_member(y, "kind"));
}

/* --- checking a loaded document ---------------------------------------- */

/* Checks the throttles and sorts them by rule, serial and kind. */
static int check_throttles(struct json_object *throttles, struct err *e)
{
    static const char *const keys[] = {"rule", "serial", "kind"};
    static const char *const numbers[] = {"last_sent", "held", "held_since"};
    char where[64];
    if (check_type(throttles, json_type_array, "throttles", e) < 0)
        return -1;
    size_t n = json_object_array_length(throttles);
    for (size_t i = 0; i < n; i++) {
        struct json_object *t = json_object_array_get_idx(throttles, i);
        snprintf(where, sizeof where, "throttles[%zu]", i);
        if (check_type(t, json_type_object, where, e) < 0)
            return -1;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (check_req(t, keys[k], json_type_string, where, e) < 0)
                return -1;
        for (size_t k = 0; k < sizeof numbers / sizeof numbers[0]; k++)
            if (check_opt(t, numbers[k], json_type_int, where, e) < 0)
                return -1;
        if (int_member(t, "held", 0) < 0 || int_member(t, "held", 0) > LONG_MAX)
            return err_set(e, "%s.held: out of range", where);
    }
    json_object_array_sort(throttles, cmp_throttle);
    for (size_t i = 1; i < n; i++) {
        struct json_object *t = json_object_array_get_idx(throttles, i);
        if (cmp_throttle_key(json_object_array_get_idx(throttles, i - 1), str_member(t, "rule"),
                             str_member(t, "serial"), str_member(t, "kind")) == 0)
            return err_set(e, "throttles: rule '%s', serial '%s', kind '%s' appears twice",
                           str_member(t, "rule"), str_member(t, "serial"), str_member(t, "kind"));
    }
    return 0;
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_throttles(struct json_object *throttles, const struct state_clamp *to)
{
    size_t len = json_object_array_length(throttles);
    for (size_t i = 0; i < len; i++) {
        struct json_object *t = json_object_array_get_idx(throttles, i);
        clamp_member(t, "last_sent", to->now);
        clamp_member(t, "held_since", to->now);
    }
}

/* --- throttles --------------------------------------------------------- */

/* The index of rule+serial+kind in the throttles (sorted); -1 when absent. */
static long find_throttle(const struct json_object *throttles, const char *rule, const char *serial,
                          const char *kind)
{
    size_t lo = 0, hi = json_object_array_length(throttles);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_throttle_key(json_object_array_get_idx(throttles, mid), rule, serial, kind);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

bool state_throttle(const struct state *s, const char *rule, const char *serial, const char *kind,
                    struct throttle_entry *out)
{
    struct json_object *throttles = section(s, &state_section_throttles);
    long i = find_throttle(throttles, rule, serial, kind);
    memset(out, 0, sizeof *out);
    if (i < 0)
        return false;
    struct json_object *t = json_object_array_get_idx(throttles, (size_t)i);
    out->last_sent = int_member(t, "last_sent", 0);
    out->held = (long)int_member(t, "held", 0); /* check_throttles bounded it */
    out->held_since = int_member(t, "held_since", 0);
    return true;
}

/* A new triple is appended and the array sorted again: new triples are
 * rare (a rule meeting a device and kind for the first time), lookups are
 * not. A negative count is stored as 0, which check_throttles accepts. */
void state_set_throttle(struct state *s, const char *rule, const char *serial, const char *kind,
                        const struct throttle_entry *t)
{
    struct json_object *throttles = section(s, &state_section_throttles);
    long i = find_throttle(throttles, rule, serial, kind);
    struct json_object *entry;
    if (i >= 0) {
        entry = json_object_array_get_idx(throttles, (size_t)i);
    } else {
        entry = jsonv_need(json_object_new_object());
        jsonv_put(entry, "rule", jsonv_need(json_object_new_string(rule)));
        jsonv_put(entry, "serial", jsonv_need(json_object_new_string(serial)));
        jsonv_put(entry, "kind", jsonv_need(json_object_new_string(kind)));
    }
    jsonv_put_int(entry, "last_sent", t->last_sent);
    jsonv_put_int(entry, "held", t->held > 0 ? t->held : 0);
    jsonv_put_int(entry, "held_since", t->held_since);
    if (i < 0) {
        jsonv_append(throttles, entry);
        json_object_array_sort(throttles, cmp_throttle);
    }
}

size_t state_prune_throttles(struct state *s, long long before)
{
    struct json_object *throttles = section(s, &state_section_throttles);
    struct json_object *kept = jsonv_need(json_object_new_array());
    size_t n = json_object_array_length(throttles);
    size_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *t = json_object_array_get_idx(throttles, i);
        if (int_member(t, "last_sent", 0) < before && int_member(t, "held_since", 0) < before)
            dropped++;
        else
            jsonv_append(kept, json_object_get(t));
    }
    jsonv_put(s->root, state_section_throttles.name, kept); /* still sorted: the order is kept */
    return dropped;
}

const struct state_section state_section_throttles = {
    .name = "throttles",
    .type = json_type_array,
    .check = check_throttles,
    .clamp = clamp_throttles,
};
