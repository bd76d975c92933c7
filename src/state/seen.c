/* Seen keys: which alert-log entries of each device serial were already
 * handled ("seen"), and per serial the floor below which every entry was
 * ("floors"). Neither holds a time a clock jump could leave in the future.
 *
 * Why the dedup and pruning rules are safe: an event is identified by
 * serial + unixtime + kind, and the caller marks it seen only once it has
 * been delivered or queued in the outbox, which is saved in the same atomic
 * write; after a crash the file has both the key and the queued item or
 * neither, so an event is never lost. (The one way to send twice is a crash
 * between a delivery and the save that records it; no file can close that
 * window, only make it short.) The platform keeps only the newest 20 alert
 * entries of a device, so an entry that has left that window can never be
 * returned again: forgetting the keys older than the oldest entry of the
 * latest response (state_prune_seen) cannot let a duplicate through, and it
 * keeps the file bounded. The pruning point is kept as the serial's floor:
 * an entry older than it is one already handled, which a lagging copy of
 * the platform serving an older page must not bring back. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* Splits a seen key "UNIXTIME/KIND"; -1 when it has another form. */
static int parse_seen_key(const char *key, long long *unixtime)
{
    char *end = NULL;
    errno = 0;
    long long t = strtoll(key, &end, 10);
    if (end == key || errno || *end != '/' || end[1] == '\0')
        return -1;
    *unixtime = t;
    return 0;
}

/* --- checking a loaded document ---------------------------------------- */

static int check_seen(struct json_object *seen, struct err *e)
{
    if (check_type(seen, json_type_object, "seen", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(seen);
    struct json_object_iterator end = json_object_iter_end(seen);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *serial = json_object_iter_peek_name(&it);
        struct json_object *keys = json_object_iter_peek_value(&it);
        if (!json_object_is_type(keys, json_type_object))
            return err_set(e, "seen.%s: not an object", serial);
        struct json_object_iterator kit = json_object_iter_begin(keys);
        struct json_object_iterator kend = json_object_iter_end(keys);
        for (; !json_object_iter_equal(&kit, &kend); json_object_iter_next(&kit)) {
            long long t;
            if (parse_seen_key(json_object_iter_peek_name(&kit), &t) < 0)
                return err_set(e, "seen.%s: key '%s' is not UNIXTIME/KIND", serial,
                               json_object_iter_peek_name(&kit));
        }
    }
    return 0;
}

static int check_floors(struct json_object *floors, struct err *e)
{
    return check_ints(floors, "floors", e);
}

/* --- seen keys --------------------------------------------------------- */

static void seen_key(char *out, size_t size, long long unixtime, const char *kind)
{
    snprintf(out, size, "%lld/%s", unixtime, kind);
}

bool state_seen(const struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    struct json_object *keys = member(section(s, &state_section_seen), serial, json_type_object);
    seen_key(key, sizeof key, unixtime, kind);
    return keys && json_object_object_get_ex(keys, key, NULL);
}

void state_mark_seen(struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    seen_key(key, sizeof key, unixtime, kind);
    jsonv_put(child_object(section(s, &state_section_seen), serial), key,
              jsonv_need(json_object_new_int(1)));
}

void state_prune_seen(struct state *s, const char *serial, long long before)
{
    struct json_object *floors = section(s, &state_section_floors);
    if (int_member(floors, serial, LLONG_MIN) < before)
        jsonv_put_int(floors, serial, before);
    struct json_object *seen = section(s, &state_section_seen);
    struct json_object *keys = member(seen, serial, json_type_object);
    if (!keys)
        return;
    size_t n = 0;
    char **drop = xcalloc((size_t)json_object_object_length(keys) + 1, sizeof *drop);
    struct json_object_iterator it = json_object_iter_begin(keys);
    struct json_object_iterator end = json_object_iter_end(keys);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        long long t;
        const char *key = json_object_iter_peek_name(&it);
        if (parse_seen_key(key, &t) == 0 && t < before)
            drop[n++] = xstrdup(key);
    }
    for (size_t i = 0; i < n; i++) {
        json_object_object_del(keys, drop[i]);
        free(drop[i]);
    }
    free(drop);
    if (json_object_object_length(keys) == 0)
        json_object_object_del(seen, serial);
}

long long state_seen_floor(const struct state *s, const char *serial)
{
    return int_member(section(s, &state_section_floors), serial, 0);
}

size_t state_seen_count(const struct state *s, const char *serial)
{
    struct json_object *keys = member(section(s, &state_section_seen), serial, json_type_object);
    return keys ? (size_t)json_object_object_length(keys) : 0;
}

const struct state_section state_section_seen = {
    .name = "seen",
    .type = json_type_object,
    .check = check_seen,
};

const struct state_section state_section_floors = {
    .name = "floors",
    .type = json_type_object,
    .check = check_floors,
};
