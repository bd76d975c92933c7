/* The outbox: (event, receiver) pairs not yet delivered, with their
 * attempts and the time of the next try, numbered by the root's "next_id".
 * It stays sorted by id (ids only grow), which makes lookups by id a binary
 * search and puts the oldest items first.
 *
 * A loaded file's outbox is checked as json-c objects, like every other
 * section of the state file, and then kept in C (outbox_take): each item's
 * values beside the item as loaded, or its text once a save wrote it, and
 * its event as a struct event once it is known. An alert is queued as a copy of its
 * struct, handed out as a copy by state_outbox_due, and replaced as one by
 * state_outbox_set_event; it becomes JSON once, when a save first writes
 * its item, rather than at each of those steps (three trips between a
 * struct and json-c per alert). The root keeps a stand-in in the
 * outbox's place whose serializer writes the items' texts, so the file is
 * byte for byte what it was when the items were json-c objects: an item
 * that changes is the loaded object, or its text read again with json-c,
 * with the members that changed put in it in the order they first
 * changed (where json-c puts them), written again. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <json-c/printbuf.h>
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

/* --- the items in C --------------------------------------------------- */

/* The members a call may change, in the order a new item has them after
 * "id" and "receiver". */
enum member { M_EVENT, M_ATTEMPTS, M_QUEUED_AT, M_NEXT_TRY, M_LAST_ERROR, M_COUNT };

/* One item. */
struct entry {
    long long id;
    char *receiver;
    long long attempts, queued_at, next_try; /* 0 when the item has none */
    bool has_queued_at, has_next_try;        /* the item has the member (the clamp's rule) */
    char *last_error;                        /* NULL: null, or none */
    char *serial;             /* the event's serial (outbox_names_serial); NULL when it has none */
    struct event *event;      /* given (state_enqueue, state_outbox_set_event) or read from the
                                 item (state_outbox_due); NULL until then */
    struct json_object *item; /* the item as loaded (the outbox's `loaded` owns it),
                                 until its text is first written; then NULL */
    char *text;               /* the item's JSON as a save writes it; NULL: not
                                 written yet (a loaded or a new item) */
    size_t len;
    unsigned char changed[M_COUNT]; /* members the text lacks, in the order they first
                                       changed */
    int n_changed;
};

struct outbox {
    struct entry *e; /* by id */
    size_t n, cap;
    struct json_object *loaded; /* the checked items of the file (outbox_take) */
};

static void entry_clear(struct entry *en)
{
    free(en->receiver);
    free(en->last_error);
    free(en->serial);
    if (en->event)
        event_clear(en->event);
    free(en->event);
    free(en->text);
}

static void changed(struct entry *en, enum member m)
{
    for (int i = 0; i < en->n_changed; i++)
        if (en->changed[i] == m)
            return;
    if (en->n_changed < M_COUNT) /* always: each member once; the compiler cannot know */
        en->changed[en->n_changed++] = (unsigned char)m;
}

static void put_member(struct json_object *item, const struct entry *en, enum member m)
{
    switch (m) {
    case M_EVENT:
        jsonv_put(item, "event", jsonv_need(event_to_json(en->event)));
        break;
    case M_ATTEMPTS:
        jsonv_put_int(item, "attempts", en->attempts);
        break;
    case M_QUEUED_AT:
        jsonv_put_int(item, "queued_at", en->queued_at);
        break;
    case M_NEXT_TRY:
        jsonv_put_int(item, "next_try", en->next_try);
        break;
    case M_LAST_ERROR:
        jsonv_put(item, "last_error",
                  en->last_error ? jsonv_need(json_object_new_string(en->last_error)) : NULL);
        break;
    case M_COUNT:
        break;
    }
}

/* The item as a json-c object (a new reference): as loaded, or its text
 * read again (json-c's own); NULL for a new item. */
static struct json_object *entry_item(const struct entry *en)
{
    if (en->item)
        return json_object_get(en->item);
    return en->text ? jsonv_need(json_tokener_parse(en->text)) : NULL;
}

/* Brings the entry's text up to date: a loaded item is written as json-c
 * writes it, a new one is built whole, as state_enqueue built it as a
 * json-c object; the members that changed are put in either. */
static void entry_write(struct entry *en)
{
    size_t len = 0;
    if (en->text && !en->n_changed)
        return;
    struct json_object *item = entry_item(en);
    if (item) {
        for (int i = 0; i < en->n_changed; i++)
            put_member(item, en, (enum member)en->changed[i]);
    } else {
        item = jsonv_need(json_object_new_object());
        jsonv_put_int(item, "id", en->id);
        jsonv_put(item, "receiver", jsonv_need(json_object_new_string(en->receiver)));
        for (int m = 0; m < M_COUNT; m++)
            put_member(item, en, (enum member)m);
    }
    const char *text = json_object_to_json_string_length(item, JSON_FLAGS, &len);
    if (!text)
        xalloc_die(); /* json-c fails only when out of memory */
    free(en->text);
    en->text = xstrndup(text, len);
    en->len = len;
    en->n_changed = 0;
    en->item = NULL;
    json_object_put(item);
}

/* The outbox's member as the file has it: the stand-in's serializer. */
static int write_outbox(struct json_object *place, struct printbuf *pb, int level, int flags)
{
    struct outbox *box = json_object_get_userdata(place);
    (void)level;
    (void)flags; /* the items' texts are written with JSON_FLAGS */
    bool ok = printbuf_strappend(pb, "[") >= 0;
    for (size_t i = 0; ok && i < box->n; i++) {
        entry_write(&box->e[i]);
        ok = (i == 0 || printbuf_strappend(pb, ",") >= 0) &&
             printbuf_memappend(pb, box->e[i].text, (int)box->e[i].len) >= 0;
    }
    if (!ok || printbuf_strappend(pb, "]") < 0)
        xalloc_die();
    return 0;
}

void outbox_take(struct state *s)
{
    struct json_object *items = section(s, &state_section_outbox);
    size_t n = json_object_array_length(items);
    struct outbox *box = xcalloc(1, sizeof *box);
    box->cap = n;
    box->e = n ? xcalloc(n, sizeof *box->e) : NULL;
    box->loaded = json_object_get(items);
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(items, i);
        struct entry *en = &box->e[box->n++];
        en->item = item;
        en->id = item_id(item);
        en->receiver = xstrdup(str_member(item, "receiver"));
        en->attempts = int_member(item, "attempts", 0);
        en->queued_at = int_member(item, "queued_at", 0);
        en->next_try = int_member(item, "next_try", 0);
        en->has_queued_at = member(item, "queued_at", json_type_int) != NULL;
        en->has_next_try = member(item, "next_try", json_type_int) != NULL;
        en->last_error = xstrdup_or_null(str_member(item, "last_error"));
        en->serial = xstrdup_or_null(str_member(member(item, "event", json_type_object), "serial"));
    }
    struct json_object *place = jsonv_need(json_object_new_array());
    json_object_set_serializer(place, write_outbox, box, NULL);
    jsonv_put(s->root, state_section_outbox.name, place); /* in the member's place */
    s->outbox = box;
}

void outbox_free(struct state *s)
{
    struct outbox *box = s->outbox;
    if (!box)
        return;
    for (size_t i = 0; i < box->n; i++)
        entry_clear(&box->e[i]);
    free(box->e);
    json_object_put(box->loaded);
    free(box);
    s->outbox = NULL;
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_outbox(struct json_object *place, const struct state_clamp *to)
{
    struct outbox *box = json_object_get_userdata(place);
    for (size_t i = 0; box && i < box->n; i++) {
        struct entry *en = &box->e[i];
        if (en->has_queued_at && en->queued_at > to->now) {
            en->queued_at = to->now;
            changed(en, M_QUEUED_AT);
        }
        if (en->has_next_try && en->next_try > to->now + CLAMP_NEXT_TRY) {
            en->next_try = to->now + CLAMP_NEXT_TRY;
            changed(en, M_NEXT_TRY);
        }
    }
}

/* --- outbox ------------------------------------------------------------ */

void state_enqueue(struct state *s, const char *receiver, const struct event *ev, long long now)
{
    struct outbox *box = s->outbox;
    long long id = int_member(s->root, "next_id", 1);
    if (box->n == box->cap) {
        box->cap = box->cap ? box->cap * 2 : 16;
        box->e = xreallocarray(box->e, box->cap, sizeof *box->e);
    }
    struct entry *en = &box->e[box->n++];
    *en = (struct entry){
        .id = id,
        .receiver = xstrdup(receiver),
        .queued_at = now,
        .next_try = now,
        .has_queued_at = true,
        .has_next_try = true,
        .event = xcalloc(1, sizeof *en->event),
        .serial = xstrdup_or_null(ev->serial),
    };
    event_copy(en->event, ev);
    jsonv_put_int(s->root, "next_id", id + 1);
}

static int cmp_due(const void *a, const void *b)
{
    const struct outbox_item *x = a, *y = b;
    if (x->queued_at != y->queued_at)
        return (x->queued_at > y->queued_at) - (x->queued_at < y->queued_at);
    return (x->id > y->id) - (x->id < y->id);
}

/* The entry's event, read from its text on first use; NULL (with a
 * warning) when the text's is not one. */
static const struct event *entry_event(const struct state *s, struct entry *en)
{
    struct err e;
    struct json_object *ev = NULL;
    if (en->event)
        return en->event;
    struct json_object *item = entry_item(en);
    json_object_object_get_ex(item, "event", &ev);
    struct event *got = xcalloc(1, sizeof *got);
    if (event_from_json(got, ev, &e) < 0) {
        log_warn("%s: outbox item %lld for %s skipped: %s", s->path, en->id, en->receiver, e.msg);
        free(got);
        got = NULL;
    }
    json_object_put(item);
    en->event = got;
    return got;
}

struct outbox_item *state_outbox_due(const struct state *s, const char *receiver, long long now,
                                     size_t *n)
{
    struct outbox *box = s->outbox;
    struct outbox_item *out = NULL;
    *n = 0;
    for (size_t i = 0; i < box->n; i++) {
        struct entry *en = &box->e[i];
        if (strcmp(en->receiver, receiver) != 0 || en->next_try > now)
            continue;
        const struct event *ev = entry_event(s, en);
        if (!ev)
            continue;
        if (!out)
            out = xcalloc(box->n, sizeof *out);
        struct outbox_item *o = &out[*n];
        event_copy(&o->event, ev);
        o->id = (unsigned long long)en->id;
        o->receiver = xstrdup(en->receiver);
        o->attempts = (int)en->attempts;
        o->queued_at = en->queued_at;
        o->next_try = en->next_try;
        o->last_error = xstrdup_or_null(en->last_error);
        (*n)++;
    }
    if (*n > 1)
        qsort(out, *n, sizeof *out, cmp_due);
    return out;
}

size_t state_outbox_count(const struct state *s, const char *receiver)
{
    const struct outbox *box = s->outbox;
    if (!receiver)
        return box->n;
    size_t count = 0;
    for (size_t i = 0; i < box->n; i++)
        if (strcmp(box->e[i].receiver, receiver) == 0)
            count++;
    return count;
}

void state_outbox_summary(const struct state *s, const char *receiver, struct outbox_summary *out)
{
    const struct outbox *box = s->outbox;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < box->n; i++) {
        const struct entry *en = &box->e[i];
        if (receiver && strcmp(en->receiver, receiver) != 0)
            continue;
        if (!out->count || en->queued_at < out->oldest)
            out->oldest = en->queued_at;
        if (!out->count || en->next_try < out->next_try)
            out->next_try = en->next_try;
        out->count++;
    }
}

char **state_outbox_receivers(const struct state *s, size_t *n)
{
    const struct outbox *box = s->outbox;
    char **out = NULL;
    *n = 0;
    for (size_t i = 0; i < box->n; i++) {
        const char *rcpt = box->e[i].receiver;
        bool known = false;
        for (size_t k = 0; k < *n && !known; k++)
            known = strcmp(out[k], rcpt) == 0;
        if (known)
            continue;
        if (!out)
            out = xcalloc(box->n, sizeof *out);
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

/* The entry of item `id` (the entries are sorted by id); NULL when absent. */
static struct entry *find_entry(const struct state *s, unsigned long long id)
{
    struct outbox *box = s->outbox;
    size_t lo = 0, hi = box->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        unsigned long long have = (unsigned long long)box->e[mid].id;
        if (have == id)
            return &box->e[mid];
        if (have < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void state_outbox_done(struct state *s, unsigned long long id)
{
    struct outbox *box = s->outbox;
    struct entry *en = find_entry(s, id);
    if (!en)
        return;
    size_t i = (size_t)(en - box->e);
    entry_clear(en);
    memmove(en, en + 1, (box->n - i - 1) * sizeof *en);
    box->n--;
}

void state_outbox_set_event(struct state *s, unsigned long long id, const struct event *ev)
{
    struct entry *en = find_entry(s, id);
    if (!en)
        return;
    if (en->event)
        event_clear(en->event);
    else
        en->event = xcalloc(1, sizeof *en->event);
    event_copy(en->event, ev);
    free(en->serial);
    en->serial = xstrdup_or_null(ev->serial);
    changed(en, M_EVENT);
}

void state_outbox_not_before(struct state *s, unsigned long long id, long long until)
{
    struct entry *en = find_entry(s, id);
    if (!en || en->next_try >= until)
        return;
    en->next_try = until;
    en->has_next_try = true;
    changed(en, M_NEXT_TRY);
}

void state_outbox_failed(struct state *s, unsigned long long id, const char *error, long long now)
{
    struct entry *en = find_entry(s, id);
    if (!en)
        return;
    long long attempts = en->attempts;
    if (attempts < INT_MAX)
        attempts++;
    long long delay = BACKOFF_MAX;
    if (attempts - 1 < 16) {
        delay = (long long)BACKOFF_FIRST << (attempts - 1);
        if (delay > BACKOFF_MAX)
            delay = BACKOFF_MAX;
    }
    en->attempts = attempts;
    free(en->last_error);
    en->last_error = NULL;
    if (error) {
        struct json_object *fit = health_fit_text(error, OUTBOX_ERROR_MAX);
        en->last_error = xstrdup(json_object_get_string(fit));
        json_object_put(fit);
    }
    en->next_try = now + delay;
    en->has_next_try = true;
    changed(en, M_ATTEMPTS);
    changed(en, M_LAST_ERROR);
    changed(en, M_NEXT_TRY);
}

bool outbox_names_serial(const struct state *s, const char *serial)
{
    const struct outbox *box = s->outbox;
    for (size_t i = 0; i < box->n; i++)
        if (box->e[i].serial && strcmp(box->e[i].serial, serial) == 0)
            return true;
    return false;
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
    struct outbox *box = s->outbox;
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < box->n; i++) {
        struct entry *en = &box->e[i];
        if (strcmp(en->receiver, receiver) == 0 && drop(en->queued_at, dropped, arg)) {
            entry_clear(en);
            dropped++;
            continue;
        }
        box->e[kept++] = *en;
    }
    box->n = kept;
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
    struct outbox *box = s->outbox;
    size_t gone = 0, n = 0;
    while (n < box->n && gone <= excess) {
        struct entry *en = &box->e[n];
        entry_write(en);
        gone += en->len + 1;
        note_trimmed(s, en->receiver);
        n++;
    }
    for (size_t i = 0; i < n; i++)
        entry_clear(&box->e[i]);
    memmove(box->e, box->e + n, (box->n - n) * sizeof *box->e);
    box->n -= n;
    return n > 0;
}

const struct state_section state_section_outbox = {
    .name = "outbox",
    .type = json_type_array,
    .check = check_outbox,
    .clamp = clamp_outbox,
};
