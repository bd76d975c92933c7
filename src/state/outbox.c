/* The outbox: (event, receiver) pairs not yet delivered, with their
 * attempts and the time of the next try, numbered by the root's "next_id".
 * It stays sorted by id (ids only grow), which makes lookups by id a binary
 * search and puts the oldest items first. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_FIRST 60           /* first retry delay of the outbox */
#define BACKOFF_MAX 3600           /* longest retry delay */
#define CLAMP_NEXT_TRY BACKOFF_MAX /* furthest outbox next try from now */
#define OUTBOX_ERROR_MAX 1024      /* bytes of a failed delivery's message kept */

static long long item_id(const struct json_object *item)
{
    return int_member(item, "id", 0);
}

/* --- checking a loaded document ---------------------------------------- */

static int cmp_item_id(const void *a, const void *b)
{
    long long x = item_id(*(struct json_object *const *)a);
    long long y = item_id(*(struct json_object *const *)b);
    return (x > y) - (x < y);
}

/* Checks the outbox and sorts it by id; the event itself is not checked
 * here: an unreadable one is skipped (and reported) by state_outbox_due
 * while the rest of the state stays usable. */
static int check_outbox(struct json_object *outbox, struct err *e)
{
    char where[64];
    if (check_type(outbox, json_type_array, "outbox", e) < 0)
        return -1;
    size_t n = json_object_array_length(outbox);
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        struct json_object *v = NULL;
        snprintf(where, sizeof where, "outbox[%zu]", i);
        if (check_type(item, json_type_object, where, e) < 0 ||
            check_req(item, "id", json_type_int, where, e) < 0 ||
            check_req(item, "receiver", json_type_string, where, e) < 0 ||
            check_opt(item, "attempts", json_type_int, where, e) < 0 ||
            check_opt(item, "queued_at", json_type_int, where, e) < 0 ||
            check_opt(item, "next_try", json_type_int, where, e) < 0)
            return -1;
        if (item_id(item) < 1)
            return err_set(e, "%s.id: not a positive integer", where);
        if (int_member(item, "attempts", 0) < 0 || int_member(item, "attempts", 0) > INT_MAX)
            return err_set(e, "%s.attempts: out of range", where);
        if (json_object_object_get_ex(item, "last_error", &v) && v &&
            !json_object_is_type(v, json_type_string))
            return err_set(e, "%s.last_error: not a string or null", where);
    }
    json_object_array_sort(outbox, cmp_item_id);
    for (size_t i = 1; i < n; i++) {
        long long id = item_id(json_object_array_get_idx(outbox, i));
        if (id == item_id(json_object_array_get_idx(outbox, i - 1)))
            return err_set(e, "outbox: id %lld appears twice", id);
    }
    return 0;
}

int outbox_check_next_id(struct json_object *root, struct err *e)
{
    if (check_opt(root, "next_id", json_type_int, "state", e) < 0)
        return -1;
    /* next_id must stay above every id in use, whatever a hand edit did. */
    struct json_object *outbox = member(root, state_section_outbox.name, json_type_array);
    size_t n = json_object_array_length(outbox);
    long long max = n ? item_id(json_object_array_get_idx(outbox, n - 1)) : 0;
    long long next = int_member(root, "next_id", 1);
    if (next <= max)
        next = max + 1;
    if (next < 1)
        next = 1;
    jsonv_put_int(root, "next_id", next);
    return 0;
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_outbox(struct json_object *outbox, const struct state_clamp *to)
{
    size_t n = json_object_array_length(outbox);
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        clamp_member(item, "queued_at", to->now);
        clamp_member(item, "next_try", to->now + CLAMP_NEXT_TRY);
    }
}

/* --- outbox ------------------------------------------------------------ */

void state_enqueue(struct state *s, const char *receiver, const struct event *ev, long long now)
{
    long long id = int_member(s->root, "next_id", 1);
    struct json_object *item = jsonv_need(json_object_new_object());
    jsonv_put_int(item, "id", id);
    jsonv_put(item, "receiver", jsonv_need(json_object_new_string(receiver)));
    jsonv_put(item, "event", jsonv_need(event_to_json(ev)));
    jsonv_put_int(item, "attempts", 0);
    jsonv_put_int(item, "queued_at", now);
    jsonv_put_int(item, "next_try", now);
    jsonv_put(item, "last_error", NULL);
    jsonv_append(section(s, &state_section_outbox), item);
    jsonv_put_int(s->root, "next_id", id + 1);
}

static int cmp_due(const void *a, const void *b)
{
    const struct outbox_item *x = a, *y = b;
    if (x->queued_at != y->queued_at)
        return (x->queued_at > y->queued_at) - (x->queued_at < y->queued_at);
    return (x->id > y->id) - (x->id < y->id);
}

struct outbox_item *state_outbox_due(const struct state *s, const char *receiver, long long now,
                                     size_t *n)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    size_t len = json_object_array_length(outbox);
    struct outbox_item *out = NULL;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        const char *rcpt = str_member(item, "receiver");
        struct err e;
        if (!rcpt || strcmp(rcpt, receiver) != 0 || int_member(item, "next_try", 0) > now)
            continue;
        if (!out)
            out = xcalloc(len, sizeof *out);
        struct outbox_item *o = &out[*n];
        struct json_object *ev = NULL;
        json_object_object_get_ex(item, "event", &ev);
        if (event_from_json(&o->event, ev, &e) < 0) {
            log_warn("%s: outbox item %lld for %s skipped: %s", s->path, item_id(item), rcpt,
                     e.msg);
            continue;
        }
        o->id = (unsigned long long)item_id(item);
        o->receiver = xstrdup(rcpt);
        o->attempts = (int)int_member(item, "attempts", 0);
        o->queued_at = int_member(item, "queued_at", 0);
        o->next_try = int_member(item, "next_try", 0);
        o->last_error = xstrdup_or_null(str_member(item, "last_error"));
        (*n)++;
    }
    if (*n > 1)
        qsort(out, *n, sizeof *out, cmp_due);
    if (out && *n == 0) {
        free(out);
        out = NULL;
    }
    return out;
}

size_t state_outbox_count(const struct state *s, const char *receiver)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    size_t len = json_object_array_length(outbox);
    if (!receiver)
        return len;
    size_t count = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rcpt = str_member(json_object_array_get_idx(outbox, i), "receiver");
        if (rcpt && strcmp(rcpt, receiver) == 0)
            count++;
    }
    return count;
}

void state_outbox_summary(const struct state *s, const char *receiver, struct outbox_summary *out)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    size_t len = json_object_array_length(outbox);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < len; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        const char *rcpt = str_member(item, "receiver");
        if (receiver && (!rcpt || strcmp(rcpt, receiver) != 0))
            continue;
        long long queued = int_member(item, "queued_at", 0);
        long long next = int_member(item, "next_try", 0);
        if (!out->count || queued < out->oldest)
            out->oldest = queued;
        if (!out->count || next < out->next_try)
            out->next_try = next;
        out->count++;
    }
}

char **state_outbox_receivers(const struct state *s, size_t *n)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    size_t len = json_object_array_length(outbox);
    char **out = NULL;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rcpt = str_member(json_object_array_get_idx(outbox, i), "receiver");
        bool known = !rcpt;
        for (size_t k = 0; k < *n && !known; k++)
            known = strcmp(out[k], rcpt) == 0;
        if (known)
            continue;
        if (!out)
            out = xcalloc(len, sizeof *out);
        out[(*n)++] = xstrdup(rcpt);
    }
    if (*n > 1)
        qsort(out, *n, sizeof *out, by_string);
    return out;
}

void state_outbox_free(struct outbox_item *items, size_t n)
{
    if (!items)
        return;
    for (size_t i = 0; i < n; i++) {
        free(items[i].receiver);
        event_clear(&items[i].event);
        free(items[i].last_error);
    }
    free(items);
}

/* The index of item `id` in the outbox (sorted by id); -1 when absent. */
static long find_item(struct json_object *outbox, unsigned long long id)
{
    size_t lo = 0, hi = json_object_array_length(outbox);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        unsigned long long have =
            (unsigned long long)item_id(json_object_array_get_idx(outbox, mid));
        if (have == id)
            return (long)mid;
        if (have < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

void state_outbox_done(struct state *s, unsigned long long id)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    long i = find_item(outbox, id);
    if (i >= 0)
        json_object_array_del_idx(outbox, (size_t)i, 1);
}

void state_outbox_set_event(struct state *s, unsigned long long id, const struct event *ev)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    long i = find_item(outbox, id);
    if (i < 0)
        return;
    jsonv_put(json_object_array_get_idx(outbox, (size_t)i), "event", jsonv_need(event_to_json(ev)));
}

void state_outbox_not_before(struct state *s, unsigned long long id, long long until)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    long i = find_item(outbox, id);
    if (i < 0)
        return;
    struct json_object *item = json_object_array_get_idx(outbox, (size_t)i);
    if (int_member(item, "next_try", 0) < until)
        jsonv_put_int(item, "next_try", until);
}

void state_outbox_failed(struct state *s, unsigned long long id, const char *error, long long now)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    long i = find_item(outbox, id);
    if (i < 0)
        return;
    struct json_object *item = json_object_array_get_idx(outbox, (size_t)i);
    long long attempts = int_member(item, "attempts", 0);
    if (attempts < INT_MAX)
        attempts++;
    long long delay = BACKOFF_MAX;
    if (attempts - 1 < 16) {
        delay = (long long)BACKOFF_FIRST << (attempts - 1);
        if (delay > BACKOFF_MAX)
            delay = BACKOFF_MAX;
    }
    jsonv_put_int(item, "attempts", attempts);
    jsonv_put(item, "last_error", error ? text_fit(error, OUTBOX_ERROR_MAX) : NULL);
    jsonv_put_int(item, "next_try", now + delay);
}

/* Removes from the outbox, in one pass, the items of `receiver` that
 * `drop` picks (given each item's queued_at and the count dropped so
 * far); returns how many. One pass because deleting items one by one
 * moves the rest of the array each time, which a full outbox of 10000
 * items turns into seconds. */
static size_t outbox_filter(struct state *s, const char *receiver,
                            bool (*drop)(long long queued_at, size_t dropped, long long arg),
                            long long arg)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    size_t len = json_object_array_length(outbox), dropped = 0;
    struct json_object *kept = jsonv_need(json_object_new_array_ext((int)(len ? len : 1)));
    for (size_t i = 0; i < len; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        const char *rcpt = str_member(item, "receiver");
        if (rcpt && strcmp(rcpt, receiver) == 0 &&
            drop(int_member(item, "queued_at", 0), dropped, arg)) {
            dropped++;
            continue;
        }
        jsonv_append(kept, json_object_get(item));
    }
    if (dropped)
        jsonv_put(s->root, state_section_outbox.name, kept);
    else
        json_object_put(kept);
    return dropped;
}

static bool queued_before(long long queued_at, size_t dropped, long long before)
{
    (void)dropped;
    return queued_at < before;
}

static bool among_first(long long queued_at, size_t dropped, long long n)
{
    (void)queued_at;
    return (long long)dropped < n;
}

size_t state_outbox_expire(struct state *s, const char *receiver, long long before)
{
    return outbox_filter(s, receiver, queued_before, before);
}

size_t state_outbox_trim(struct state *s, const char *receiver, size_t max)
{
    size_t count = state_outbox_count(s, receiver);
    if (count <= max)
        return 0;
    /* by id: oldest first */
    return outbox_filter(s, receiver, among_first, (long long)(count - max));
}

/* --- the save's size limit --------------------------------------------- */

/* Counts one outbox item of `receiver` given up for the size limit. */
static void note_trimmed(struct state *s, const char *receiver)
{
    for (size_t i = 0; i < s->n_trimmed; i++) {
        if (strcmp(s->trimmed[i].receiver, receiver) == 0) {
            s->trimmed[i].count++;
            return;
        }
    }
    s->trimmed = xreallocarray(s->trimmed, s->n_trimmed + 1, sizeof *s->trimmed);
    s->trimmed[s->n_trimmed++] = (struct state_trim){.receiver = xstrdup(receiver), .count = 1};
}

/* Gives up the oldest outbox items (ids only grow: the front of the array)
 * until about `excess` bytes of the serialised file are gone. An item's
 * own text, as json-c prints it, is what it adds to the file, give or take
 * a comma. Returns false when the outbox was empty. */
bool outbox_shed(struct state *s, size_t excess)
{
    struct json_object *outbox = section(s, &state_section_outbox);
    size_t gone = 0, n = 0, len = json_object_array_length(outbox);
    while (n < len && gone <= excess) {
        struct json_object *item = json_object_array_get_idx(outbox, n);
        size_t size = 0;
        json_object_to_json_string_length(item, JSON_FLAGS, &size);
        gone += size + 1;
        const char *rcpt = str_member(item, "receiver");
        note_trimmed(s, rcpt ? rcpt : "?");
        n++;
    }
    if (n)
        json_object_array_del_idx(outbox, 0, n);
    return n > 0;
}

const struct state_section state_section_outbox = {
    .name = "outbox",
    .type = json_type_array,
    .check = check_outbox,
    .clamp = clamp_outbox,
};
