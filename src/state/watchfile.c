/* What each device serial's current readings were lately (readings_memory.h), in
 * the "watch" section, and the limits of its channels that alert texts
 * taught, in "limits". Both are per serial and forgotten together.
 *
 * Both are native sections (section.h): one entry per serial with its
 * memory as a struct watch and its limits as rows, each beside the text
 * the file had for it. A readings run takes every device's reading, and
 * most readings change nothing: their entries are written back as the
 * text that was read, without a number formatted again. */
#include "state.h"
#include "state/native.h"
#include "state/section.h"
#include "util/strmap.h"
#include "util/xalloc.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One channel's learnt limits, under its member name ("1", "2", ...). */
struct limit_row {
    char *key;
    struct watch_limit l;
};

/* One serial's entry, each half beside its text (section.h).
 *
 * The memory is kept with room for its channels only (watch_keep): a
 * struct watch has room for WATCH_CHANNELS of 32 values each, 2.7 KB,
 * where most devices have one or two channels; at 2000 devices the full
 * structures were 5.4 MB to allocate and touch every run. */
struct reading_entry {
    char *serial;
    struct watch *w; /* NULL: no memory */
    struct entry_text watch_text;
    bool has_limits;
    struct limit_row *limits;
    size_t n_limits;
    struct entry_text limits_text;
};

_Static_assert(offsetof(struct watch, ch) + sizeof((struct watch){0}.ch) == sizeof(struct watch),
               "ch[] is the last member of struct watch");

/* The bytes of a struct watch up to its n_ch channels. */
static size_t watch_size(const struct watch *w)
{
    int n = w->n_ch < 0 ? 0 : w->n_ch > WATCH_CHANNELS ? WATCH_CHANNELS : w->n_ch;
    return offsetof(struct watch, ch) + (size_t)n * sizeof w->ch[0];
}

/* A copy of `w` with room for its channels only. */
static struct watch *watch_keep(const struct watch *w)
{
    struct watch *kept = xmalloc(watch_size(w));
    memcpy(kept, w, watch_size(w));
    return kept;
}

struct readings {
    struct reading_entry *e; /* in the order serials first came */
    size_t n, cap;
    struct strmap index; /* serial -> position in e */
};

static struct reading_entry *find(const struct state *s, const char *serial)
{
    size_t i;
    return s->readings && strmap_get(&s->readings->index, serial, &i) ? &s->readings->e[i] : NULL;
}

static struct reading_entry *find_or_add(struct state *s, const char *serial)
{
    struct reading_entry *r = find(s, serial);
    if (r)
        return r;
    if (!s->readings)
        s->readings = xcalloc(1, sizeof *s->readings);
    struct readings *rs = s->readings;
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 64;
        rs->e = xreallocarray(rs->e, rs->cap, sizeof *rs->e);
    }
    r = &rs->e[rs->n];
    memset(r, 0, sizeof *r);
    r->serial = xstrdup(serial);
    strmap_put(&rs->index, serial, rs->n++);
    return r;
}

static void forget_watch(struct reading_entry *r)
{
    entry_text_drop(&r->watch_text);
    free(r->w);
    r->w = NULL;
}

static void forget_limits(struct reading_entry *r)
{
    for (size_t i = 0; i < r->n_limits; i++)
        free(r->limits[i].key);
    free(r->limits);
    entry_text_drop(&r->limits_text);
    r->limits = NULL;
    r->n_limits = 0;
    r->has_limits = false;
}

static void free_readings(struct state *s)
{
    struct readings *rs = s->readings;
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n; i++) {
        forget_watch(&rs->e[i]);
        forget_limits(&rs->e[i]);
        free(rs->e[i].serial);
    }
    free(rs->e);
    strmap_clear(&rs->index);
    free(rs);
    s->readings = NULL;
}

/* Drops the entries that hold neither a memory nor limits. */
static void compact(struct state *s)
{
    struct readings *rs = s->readings;
    size_t kept = 0;
    strmap_clear(&rs->index);
    for (size_t i = 0; i < rs->n; i++) {
        if (!rs->e[i].w && !rs->e[i].has_limits) {
            free(rs->e[i].serial);
            continue;
        }
        rs->e[kept] = rs->e[i];
        strmap_put(&rs->index, rs->e[kept].serial, kept);
        kept++;
    }
    rs->n = kept;
}

/* --- reading the file ---------------------------------------------------- */

/* The readers below take the member's name from js->key and say where
 * they are with a chain of `struct where` (native.h), which costs
 * nothing until a message needs it. */

static bool fail(struct jscan *js, const struct where *up, const char *key, const char *what,
                 struct err *e)
{
    struct where at = {up, key, 0};
    native_fail(js, key ? &at : up, what, e);
    return false;
}

/* A number member: JSON's integers and doubles alike. */
static bool read_number(struct jscan *js, double *out, const struct where *up, struct err *e)
{
    return (jscan_peek(js) == JSCAN_NUMBER && jscan_number(js, out)) ||
           fail(js, up, js->key, "not a number", e);
}

static bool read_int(struct jscan *js, long long *out, const struct where *up, struct err *e)
{
    return (jscan_peek(js) == JSCAN_NUMBER && jscan_int(js, out)) ||
           fail(js, up, js->key, "not an integer", e);
}

static bool read_bool(struct jscan *js, bool *out, const struct where *up, struct err *e)
{
    enum jscan_type t = jscan_peek(js);
    return ((t == JSCAN_TRUE || t == JSCAN_FALSE) && jscan_bool(js, out)) ||
           fail(js, up, js->key, "not a boolean", e);
}

static int clamp_int(long long v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : (int)v;
}

/* An array of numbers, the last `max` kept: doubles in `out`, or (with
 * `lout`) integers in `lout`. */
static bool read_list(struct jscan *js, double *out, long *lout, int *n, int max,
                      const struct where *up, struct err *e)
{
    struct where list = {up, js->key, 0};
    if (jscan_peek(js) != JSCAN_ARRAY)
        return fail(js, &list, NULL, "not an array", e);
    jscan_array(js);
    *n = 0;
    for (size_t i = 0; jscan_item(js); i++) {
        double d = 0;
        long long v = 0;
        bool ok =
            jscan_peek(js) == JSCAN_NUMBER && (lout ? jscan_int(js, &v) : jscan_number(js, &d));
        if (!ok) {
            struct where item = {&list, NULL, i};
            return fail(js, &item, NULL, lout ? "not an integer" : "not a number", e);
        }
        if (*n == max) { /* keep the newest: drop the oldest */
            if (lout)
                memmove(lout, lout + 1, (size_t)(max - 1) * sizeof *lout);
            else
                memmove(out, out + 1, (size_t)(max - 1) * sizeof *out);
            (*n)--;
        }
        if (lout)
            lout[(*n)++] = (long)v;
        else
            out[(*n)++] = d;
    }
    return !js->failed;
}

static bool read_channel(struct jscan *js, struct watch_channel *c, const struct where *at,
                         struct err *e)
{
    bool has_num = false;
    long long v = 0;
    memset(c, 0, sizeof *c);
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, at, NULL, "not an object", e);
    jscan_object(js);
    while (jscan_member(js)) {
        const char *k = js->key;
        bool ok = true;
        if (jscan_key_is(js, "num")) {
            ok = read_int(js, &v, at, e);
            c->num = clamp_int(v, 0, 99);
            has_num = true;
        } else if (jscan_key_is(js, "error")) {
            ok = read_bool(js, &c->error, at, e);
        } else if (jscan_key_is(js, "back")) {
            ok = read_bool(js, &c->back, at, e);
        } else if (jscan_key_is(js, "alarmed")) {
            ok = read_bool(js, &c->alarmed, at, e);
        } else if (jscan_key_is(js, "value")) {
            ok = read_number(js, &c->value, at, e);
        } else if (jscan_key_is(js, "step")) {
            ok = read_number(js, &c->step, at, e);
        } else if (jscan_key_is(js, "history")) {
            ok = read_list(js, c->history, NULL, &c->n_history, WATCH_HISTORY, at, e);
        } else if (jscan_key_is(js, "band") || jscan_key_is(js, "zone") ||
                   jscan_key_is(js, "warned")) {
            int *field = k[0] == 'b' ? &c->band : k[0] == 'z' ? &c->zone : &c->warned;
            ok = read_int(js, &v, at, e);
            *field = clamp_int(v, -1, 1);
        } else if (jscan_key_is(js, "out")) {
            ok = read_int(js, &v, at, e);
            c->out = clamp_int(v, 0, WATCH_HISTORY);
        } else if (jscan_key_is(js, "warned_at")) {
            ok = read_int(js, &c->warned_at, at, e);
        } else if (jscan_key_is(js, "at_poll")) {
            c->has_at_poll = true;
            c->at_poll_error = jscan_null(js);
            c->at_poll = 0;
            ok = c->at_poll_error ||
                 (jscan_peek(js) == JSCAN_NUMBER && jscan_number(js, &c->at_poll)) ||
                 fail(js, at, "at_poll", "neither a number nor null", e);
        } else {
            ok = jscan_skip(js, NULL);
        }
        if (!ok)
            return false;
    }
    if (js->failed)
        return false;
    return has_num || fail(js, at, NULL, "no 'num'", e);
}

/* One device's readings memory into *w. */
static bool read_watch(struct jscan *js, struct watch *w, const struct where *at, struct err *e)
{
    long long v = 0;
    memset(w, 0, sizeof *w);
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, at, NULL, "not an object", e);
    jscan_object(js);
    while (jscan_member(js)) {
        bool ok = true;
        if (jscan_key_is(js, "t")) {
            ok = read_int(js, &w->unixtime, at, e);
        } else if (jscan_key_is(js, "seen")) {
            ok = read_int(js, &w->seen_at, at, e);
        } else if (jscan_key_is(js, "battery")) {
            ok = read_int(js, &v, at, e);
            w->battery = clamp_int(v, 0, 99);
        } else if (jscan_key_is(js, "pending")) {
            ok = read_int(js, &v, at, e);
            w->pending = (unsigned)clamp_int(v, 0, 0xffff);
        } else if (jscan_key_is(js, "pending_since")) {
            ok = read_int(js, &w->pending_since, at, e);
        } else if (jscan_key_is(js, "pending_after")) {
            ok = read_int(js, &w->pending_after, at, e);
        } else if (jscan_key_is(js, "pending_at")) {
            ok = read_int(js, &w->pending_at, at, e);
        } else if (jscan_key_is(js, "recheck_at")) {
            ok = read_int(js, &w->recheck_at, at, e);
        } else if (jscan_key_is(js, "silent")) {
            ok = read_bool(js, &w->silent, at, e);
        } else if (jscan_key_is(js, "told")) {
            ok = read_bool(js, &w->pending_told, at, e);
        } else if (jscan_key_is(js, "hint")) {
            ok = read_int(js, &w->hint_at, at, e);
        } else if (jscan_key_is(js, "gaps")) {
            ok = read_list(js, NULL, w->gaps, &w->n_gaps, WATCH_GAPS, at, e);
        } else if (jscan_key_is(js, "ch")) {
            struct where list = {at, "ch", 0};
            if (jscan_peek(js) != JSCAN_ARRAY)
                return fail(js, &list, NULL, "not an array", e);
            jscan_array(js);
            w->n_ch = 0;
            for (size_t i = 0; ok && jscan_item(js); i++) {
                struct watch_channel c;
                struct where item = {&list, NULL, i};
                ok = read_channel(js, &c, &item, e);
                if (ok && w->n_ch < WATCH_CHANNELS)
                    w->ch[w->n_ch++] = c;
            }
        } else {
            ok = jscan_skip(js, NULL);
        }
        if (!ok)
            return false;
    }
    return !js->failed;
}

/* Reads every member of the section's object with `one`, which fills the
 * entry of the member's serial (a name without NUL bytes). */
static int read_section(struct state *s, struct jscan *js, const char *name,
                        bool (*one)(struct state *s, struct jscan *js, const char *serial,
                                    const struct where *at, struct err *e),
                        struct err *e)
{
    struct where top = {NULL, name, 0};
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, &top, NULL, "not an object", e), -1;
    jscan_object(js);
    while (jscan_member(js)) {
        if (strlen(js->key) != js->key_len)
            return fail(js, &top, NULL, "a serial with a NUL byte", e), -1;
        /* The name outlives js->key, which the entry's members reuse. */
        char room[64];
        char *serial =
            js->key_len < sizeof room ? memcpy(room, js->key, js->key_len + 1) : xstrdup(js->key);
        struct where at = {&top, serial, 0};
        bool ok = one(s, js, serial, &at, e);
        if (serial != room)
            free(serial);
        if (!ok)
            return -1;
    }
    if (js->failed)
        return fail(js, &top, NULL, "not JSON", e), -1;
    return 0;
}

/* --- the text a save writes, read in one pass --------------------------- */

/* A readings run reads 2000 memories of some 30 members each, and nearly
 * every one is exactly as put_watch wrote it: its members in that order,
 * no white space, plain numbers. `fast_watch` reads only that form, from
 * left to right with no scanner (half the generic reader's cost);
 * anything else (another order, a member it does not know, an escape, a
 * long number, too many values, an error) makes it give up, and the
 * generic reader reads the entry from its start, errors and all. So what
 * it accepts, the generic reader accepts alike: builds with assertions
 * read every entry both ways and abort when they differ. */

/* [X,...] of at most `max` values: doubles, or integers into `lout`. */
static bool take_list(struct text *t, double *out, long *lout, int *n, int max)
{
    *n = 0;
    if (!TAKE(t, "["))
        return false;
    if (TAKE(t, "]"))
        return true;
    do {
        long long v;
        if (*n == max || (lout ? !take_int(t, &v) : !take_double(t, &out[*n])))
            return false;
        if (lout)
            lout[*n] = (long)v;
        (*n)++;
    } while (TAKE(t, ","));
    return TAKE(t, "]");
}

static bool take_channel(struct text *t, struct watch_channel *c)
{
    long long num, band, zone, warned, out = 0;
    memset(c, 0, sizeof *c);
    if (!TAKE(t, "{\"num\":") || !take_int(t, &num) || !TAKE(t, ",\"error\":") ||
        !take_bool(t, &c->error) || !TAKE(t, ",\"value\":") || !take_double(t, &c->value) ||
        !TAKE(t, ",\"step\":") || !take_double(t, &c->step) || !TAKE(t, ",\"history\":") ||
        !take_list(t, c->history, NULL, &c->n_history, WATCH_HISTORY) || !TAKE(t, ",\"band\":") ||
        !take_int(t, &band) || !TAKE(t, ",\"zone\":") || !take_int(t, &zone))
        return false;
    if (TAKE(t, ",\"at_poll\":")) {
        c->has_at_poll = true;
        c->at_poll_error = TAKE(t, "null");
        if (!c->at_poll_error && !take_double(t, &c->at_poll))
            return false;
    }
    if (!TAKE(t, ",\"warned_at\":") || !take_int(t, &c->warned_at) || !TAKE(t, ",\"warned\":") ||
        !take_int(t, &warned) || (TAKE(t, ",\"back\":") && !take_bool(t, &c->back)) ||
        (TAKE(t, ",\"out\":") && !take_int(t, &out)) ||
        (TAKE(t, ",\"alarmed\":") && !take_bool(t, &c->alarmed)) || !TAKE(t, "}"))
        return false;
    c->out = clamp_int(out, 0, WATCH_HISTORY);
    c->num = clamp_int(num, 0, 99);
    c->band = clamp_int(band, -1, 1);
    c->zone = clamp_int(zone, -1, 1);
    c->warned = clamp_int(warned, -1, 1);
    return true;
}

static bool fast_watch(struct text *t, struct watch *w)
{
    long long battery, pending;
    memset(w, 0, sizeof *w);
    if (!TAKE(t, "{\"t\":") || !take_int(t, &w->unixtime) || !TAKE(t, ",\"seen\":") ||
        !take_int(t, &w->seen_at) || !TAKE(t, ",\"gaps\":") ||
        !take_list(t, NULL, w->gaps, &w->n_gaps, WATCH_GAPS) || !TAKE(t, ",\"battery\":") ||
        !take_int(t, &battery) || !TAKE(t, ",\"silent\":") || !take_bool(t, &w->silent) ||
        !TAKE(t, ",\"pending\":") || !take_int(t, &pending) || !TAKE(t, ",\"pending_since\":") ||
        !take_int(t, &w->pending_since) || !TAKE(t, ",\"pending_after\":") ||
        !take_int(t, &w->pending_after) || !TAKE(t, ",\"pending_at\":") ||
        !take_int(t, &w->pending_at) || !TAKE(t, ",\"recheck_at\":") ||
        !take_int(t, &w->recheck_at) ||
        (TAKE(t, ",\"told\":") && !take_bool(t, &w->pending_told)) ||
        (TAKE(t, ",\"hint\":") && !take_int(t, &w->hint_at)) || !TAKE(t, ",\"ch\":["))
        return false;
    w->battery = clamp_int(battery, 0, 99);
    w->pending = (unsigned)clamp_int(pending, 0, 0xffff);
    if (TAKE(t, "]}"))
        return true;
    do {
        if (w->n_ch == WATCH_CHANNELS || !take_channel(t, &w->ch[w->n_ch]))
            return false;
        w->n_ch++;
    } while (TAKE(t, ","));
    return TAKE(t, "]}");
}

static bool same_watch(const struct watch *a, const struct watch *b);

/* One entry's memory into *w: the fast way when it can, else the
 * generic reader's. */
static bool read_entry_watch(struct jscan *js, struct watch *w, const struct where *at,
                             struct err *e)
{
    struct text t = {js->p, js->end};
    if (!fast_watch(&t, w))
        return read_watch(js, w, at, e);
#ifndef NDEBUG
    struct watch slow;
    struct jscan check = {0};
    struct err why;
    jscan_init(&check, js->p, (size_t)(t.p - js->p));
    bool agree =
        read_watch(&check, &slow, at, &why) && jscan_end(&check, &why) == 0 && same_watch(&slow, w);
    jscan_free(&check);
    if (!agree) {
        fprintf(stderr, "state/watchfile.c: the fast reader differs on %.*s\n", (int)(t.p - js->p),
                js->p);
        abort();
    }
#endif
    js->p = t.p;
    return true;
}

static bool read_watch_member(struct state *s, struct jscan *js, const char *serial,
                              const struct where *at, struct err *e)
{
    struct watch w;
    jscan_peek(js); /* past white space: where the member's text starts */
    const char *start = js->p;
    if (!read_entry_watch(js, &w, at, e))
        return false;

    struct reading_entry *r = find_or_add(s, serial);
    forget_watch(r);
    r->w = watch_keep(&w);
    r->watch_text = entry_text_span(start, js);
    return true;
}

/* The state's own sections are replaced, not merged, by a later member of
 * the same name (json-c's rule); so is each serial's entry. A record of
 * the fleet file (`merge`) replaces only the entries it has. */
static int read_watches(struct state *s, struct jscan *js, bool merge, struct err *e)
{
    for (size_t i = 0; !merge && s->readings && i < s->readings->n; i++)
        forget_watch(&s->readings->e[i]);
    return read_section(s, js, "watch", read_watch_member, e);
}

/* One channel's limits (a member "upper" or "lower" that is not a number
 * is an error; others are skipped). */
static bool read_limit(struct jscan *js, struct watch_limit *l, const struct where *at,
                       struct err *e)
{
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, at, NULL, "not an object", e);
    jscan_object(js);
    while (jscan_member(js)) {
        bool upper = jscan_key_is(js, "upper");
        bool ok = true;
        if (upper || jscan_key_is(js, "lower")) {
            ok = read_number(js, upper ? &l->upper : &l->lower, at, e);
            *(upper ? &l->has_upper : &l->has_lower) = true;
        } else {
            ok = jscan_skip(js, NULL);
        }
        if (!ok)
            return false;
    }
    return !js->failed;
}

static bool read_limits_member(struct state *s, struct jscan *js, const char *serial,
                               const struct where *at, struct err *e)
{
    struct limit_row *rows = NULL;
    size_t n = 0;
    bool ok = false;
    jscan_peek(js); /* past white space: where the member's text starts */
    const char *start = js->p;
    if (jscan_peek(js) != JSCAN_OBJECT) {
        fail(js, at, NULL, "not an object", e);
        goto out;
    }
    jscan_object(js);
    while (jscan_member(js)) {
        if (strlen(js->key) != js->key_len) {
            fail(js, at, NULL, "a channel with a NUL byte", e);
            goto out;
        }
        rows = xreallocarray(rows, n + 1, sizeof *rows);
        rows[n] = (struct limit_row){.key = xstrdup(js->key)};
        struct where chan = {at, rows[n].key, 0};
        if (!read_limit(js, &rows[n++].l, &chan, e))
            goto out;
    }
    ok = !js->failed || fail(js, at, NULL, "not JSON", e);
out:
    if (ok) {
        struct reading_entry *r = find_or_add(s, serial);
        forget_limits(r);
        r->has_limits = true;
        r->limits = rows;
        r->n_limits = n;
        r->limits_text = entry_text_span(start, js);
        rows = NULL;
        n = 0;
    }
    for (size_t i = 0; i < n; i++)
        free(rows[i].key);
    free(rows);
    return ok;
}

static int read_all_limits(struct state *s, struct jscan *js, bool merge, struct err *e)
{
    for (size_t i = 0; !merge && s->readings && i < s->readings->n; i++)
        forget_limits(&s->readings->e[i]);
    return read_section(s, js, "limits", read_limits_member, e);
}

/* --- writing ------------------------------------------------------------- */

static void put_key(struct buf *out, const char *key)
{
    buf_json_string(out, key, strlen(key));
    buf_append(out, ":", 1);
}

/* `v` in decimal at the end of `end`'s buffer; returns where it starts. */
static char *decimal(char *end, unsigned long long v)
{
    do
        *--end = (char)('0' + v % 10);
    while (v /= 10);
    return end;
}

/* A number as the state writes it: at most 10 significant digits, so that
 * -79.8 stays "-79.8" in the file ("%.10g"). Readings have few decimals:
 * a value that is exactly a decimal of at most 9 digits with at most 4
 * after the point is written as that decimal, which is what "%.10g" gives,
 * without printf's cost (a save writes tens of thousands of them). */
static void put_number(struct buf *out, double d)
{
    static const double scale[] = {1, 10, 100, 1000, 10000};
    char text[32];
    if (!isfinite(d)) /* not reached: readings are parsed finite; JSON has no inf */
        d = 0;
    for (int k = 0; k < 5; k++) {
        double v = d * scale[k];
        if (!(fabs(v) < 1e9))
            break;
        long long n = llround(v);
        if ((double)n / scale[k] != d)
            continue;
        char *end = text + sizeof text;
        unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
        char *p = end;
        for (int i = 0; i < k; i++, u /= 10)
            *--p = (char)('0' + u % 10);
        if (k)
            *--p = '.';
        p = decimal(p, u);
        if (n < 0 || (n == 0 && signbit(d)))
            *--p = '-';
        buf_append(out, p, (size_t)(end - p));
        return;
    }
    int n = snprintf(text, sizeof text, "%.10g", d);
    buf_append(out, text, (size_t)n);
}

static void put_int(struct buf *out, const char *key, long long v)
{
    buf_append(out, ",\"", 2);
    buf_puts(out, key);
    buf_append(out, "\":", 2);
    buf_put_ll(out, v);
}

static void put_bool(struct buf *out, const char *key, bool v)
{
    buf_append(out, ",", 1);
    put_key(out, key);
    buf_puts(out, v ? "true" : "false");
}

static void put_channel(struct buf *out, const struct watch_channel *c)
{
    buf_puts(out, "{\"num\":");
    buf_put_ll(out, c->num);
    put_bool(out, "error", c->error);
    buf_puts(out, ",\"value\":");
    put_number(out, c->value);
    buf_puts(out, ",\"step\":");
    put_number(out, c->step);
    buf_puts(out, ",\"history\":[");
    for (int i = 0; i < c->n_history && i < WATCH_HISTORY; i++) {
        if (i)
            buf_append(out, ",", 1);
        put_number(out, c->history[i]);
    }
    buf_append(out, "]", 1);
    put_int(out, "band", c->band);
    put_int(out, "zone", c->zone);
    if (c->has_at_poll) {
        buf_puts(out, ",\"at_poll\":");
        if (c->at_poll_error)
            buf_puts(out, "null");
        else
            put_number(out, c->at_poll);
    }
    put_int(out, "warned_at", c->warned_at);
    put_int(out, "warned", c->warned);
    if (c->back)
        put_bool(out, "back", true);
    if (c->out)
        put_int(out, "out", c->out);
    if (c->alarmed)
        put_bool(out, "alarmed", true);
    buf_append(out, "}", 1);
}

/* The memory as JSON, in the order a new entry has always been written. */
static void put_watch(struct buf *out, const struct watch *w)
{
    buf_puts(out, "{\"t\":");
    buf_put_ll(out, w->unixtime);
    put_int(out, "seen", w->seen_at);
    buf_puts(out, ",\"gaps\":[");
    for (int i = 0; i < w->n_gaps && i < WATCH_GAPS; i++) {
        if (i)
            buf_append(out, ",", 1);
        buf_put_ll(out, w->gaps[i]);
    }
    buf_append(out, "]", 1);
    put_int(out, "battery", w->battery);
    put_bool(out, "silent", w->silent);
    put_int(out, "pending", w->pending);
    put_int(out, "pending_since", w->pending_since);
    put_int(out, "pending_after", w->pending_after);
    put_int(out, "pending_at", w->pending_at);
    put_int(out, "recheck_at", w->recheck_at);
    if (w->pending_told)
        put_bool(out, "told", true);
    if (w->hint_at)
        put_int(out, "hint", w->hint_at);
    buf_puts(out, ",\"ch\":[");
    for (int i = 0; i < w->n_ch && i < WATCH_CHANNELS; i++) {
        if (i)
            buf_append(out, ",", 1);
        put_channel(out, &w->ch[i]);
    }
    buf_puts(out, "]}");
}

static void put_limits(struct buf *out, const struct reading_entry *r)
{
    buf_append(out, "{", 1);
    for (size_t i = 0; i < r->n_limits; i++) {
        const struct watch_limit *l = &r->limits[i].l;
        if (i)
            buf_append(out, ",", 1);
        put_key(out, r->limits[i].key);
        buf_append(out, "{", 1);
        if (l->has_upper) {
            buf_puts(out, "\"upper\":");
            put_number(out, l->upper);
        }
        if (l->has_lower) {
            buf_puts(out, l->has_upper ? ",\"lower\":" : "\"lower\":");
            put_number(out, l->lower);
        }
        buf_append(out, "}", 1);
    }
    buf_append(out, "}", 1);
}

/* Each entry that has one (its memory, or with `limits` its limits) under
 * its serial, as its text, separated by commas; with `changed` only those
 * changed since they were read or last written. Such an entry is written
 * from its structure, and keeps that text for the next save. Returns how
 * many entries it wrote. */
static size_t write_entries(const struct state *s, struct buf *out, bool limits, bool changed)
{
    size_t n = 0;
    for (size_t i = 0; s->readings && i < s->readings->n; i++) {
        struct reading_entry *r = &s->readings->e[i];
        struct entry_text *text = limits ? &r->limits_text : &r->watch_text;
        if ((limits ? !r->has_limits : !r->w) || (changed && text->p))
            continue;
        if (n++)
            buf_append(out, ",", 1);
        put_key(out, r->serial);
        if (text->p) {
            buf_append(out, text->p, text->len);
            continue;
        }
        struct buf one;
        buf_init(&one, 0);
        if (limits)
            put_limits(&one, r);
        else
            put_watch(&one, r->w);
        entry_text_keep(text, &one, out);
    }
    return n;
}

static void write_watches(const struct state *s, struct buf *out)
{
    buf_append(out, "{", 1);
    write_entries(s, out, false, false);
    buf_append(out, "}", 1);
}

static void write_limits(const struct state *s, struct buf *out)
{
    buf_append(out, "{", 1);
    write_entries(s, out, true, false);
    buf_append(out, "}", 1);
}

static size_t changed_watches(const struct state *s, struct buf *out)
{
    return write_entries(s, out, false, true);
}

static size_t changed_limits(const struct state *s, struct buf *out)
{
    return write_entries(s, out, true, true);
}

/* --- a clock that jumped ----------------------------------------------- */

static bool lower(long long *t, long long max)
{
    if (*t <= max)
        return false;
    *t = max;
    return true;
}

static void clamp_watches(struct state *s, const struct state_clamp *to)
{
    for (size_t i = 0; s->readings && i < s->readings->n; i++) {
        struct reading_entry *r = &s->readings->e[i];
        if (!r->w)
            continue;
        bool changed = lower(&r->w->seen_at, to->now);
        changed = lower(&r->w->pending_since, to->now) || changed;
        changed = lower(&r->w->pending_at, to->now) || changed;
        changed = lower(&r->w->hint_at, to->now) || changed;
        changed = lower(&r->w->recheck_at, to->now + 3600) || changed;
        if (changed)
            entry_text_drop(&r->watch_text);
    }
}

static void no_clamp(struct state *s, const struct state_clamp *to)
{
    (void)s;
    (void)to;
}

static void no_free(struct state *s)
{
    (void)s;
}

/* --- readings (readings_memory.h) -------------------------------------- */

bool state_watch(const struct state *s, const char *serial, struct watch *out)
{
    const struct reading_entry *r = find(s, serial);
    memset(out, 0, sizeof *out);
    if (!r || !r->w)
        return false;
    memcpy(out, r->w, watch_size(r->w));
    return true;
}

static bool same_channel(const struct watch_channel *a, const struct watch_channel *b)
{
    if (a->n_history != b->n_history ||
        memcmp(a->history, b->history, (size_t)a->n_history * sizeof *a->history) != 0)
        return false;
    return a->num == b->num && a->error == b->error && a->value == b->value && a->step == b->step &&
           a->band == b->band && a->zone == b->zone && a->has_at_poll == b->has_at_poll &&
           a->at_poll_error == b->at_poll_error && a->at_poll == b->at_poll &&
           a->warned_at == b->warned_at && a->warned == b->warned && a->back == b->back &&
           a->out == b->out && a->alarmed == b->alarmed;
}

/* Whether `a` and `b` would be written alike. */
static bool same_watch(const struct watch *a, const struct watch *b)
{
    if (a->unixtime != b->unixtime || a->seen_at != b->seen_at || a->n_gaps != b->n_gaps ||
        memcmp(a->gaps, b->gaps, (size_t)a->n_gaps * sizeof *a->gaps) != 0 ||
        a->battery != b->battery || a->silent != b->silent || a->pending != b->pending ||
        a->pending_since != b->pending_since || a->pending_after != b->pending_after ||
        a->pending_at != b->pending_at || a->recheck_at != b->recheck_at ||
        a->pending_told != b->pending_told || a->hint_at != b->hint_at || a->n_ch != b->n_ch)
        return false;
    for (int i = 0; i < a->n_ch; i++)
        if (!same_channel(&a->ch[i], &b->ch[i]))
            return false;
    return true;
}

void state_set_watch(struct state *s, const char *serial, const struct watch *w)
{
    struct reading_entry *r = find_or_add(s, serial);
    if (r->w && same_watch(r->w, w))
        return;
    forget_watch(r);
    r->w = watch_keep(w);
}

size_t state_prune_watches(struct state *s, long long before)
{
    size_t n = 0;
    for (size_t i = 0; s->readings && i < s->readings->n; i++) {
        struct reading_entry *r = &s->readings->e[i];
        if (r->w && r->w->seen_at < before) {
            forget_watch(r);
            forget_limits(r);
            n++;
        }
    }
    if (n) {
        compact(s);
        s->rebase = true; /* a record of changes cannot say "gone" */
    }
    return n;
}

/* --- learnt limits ----------------------------------------------------- */

static struct limit_row *limit_row(const struct reading_entry *r, const char *key)
{
    for (size_t i = 0; r && i < r->n_limits; i++)
        if (!strcmp(r->limits[i].key, key))
            return &r->limits[i];
    return NULL;
}

/* A channel's member name: its number in decimal. */
static const char *channel_key(char *out, size_t size, int channel)
{
    char *end = out + size - 1;
    *end = '\0';
    char *p = decimal(end, channel < 0 ? 0 : (unsigned long long)channel);
    if (channel < 0)
        *--p = '-';
    return p;
}

bool state_learnt_limit(const struct state *s, const char *serial, int channel,
                        struct watch_limit *out)
{
    char key[16];
    const struct reading_entry *r = find(s, serial);
    const struct limit_row *row =
        r && r->n_limits ? limit_row(r, channel_key(key, sizeof key, channel)) : NULL;
    memset(out, 0, sizeof *out);
    if (!row)
        return false;
    *out = row->l;
    return out->has_upper || out->has_lower;
}

bool state_learn_limit(struct state *s, const char *serial, int channel, bool upper, double value)
{
    char text[16];
    struct watch_limit old;
    const char *key = channel_key(text, sizeof text, channel);
    state_learnt_limit(s, serial, channel, &old);
    if (upper ? old.has_upper && old.upper == value : old.has_lower && old.lower == value)
        return false;
    struct reading_entry *r = find_or_add(s, serial);
    struct limit_row *row = limit_row(r, key);
    if (!row) {
        r->limits = xreallocarray(r->limits, r->n_limits + 1, sizeof *r->limits);
        row = &r->limits[r->n_limits++];
        *row = (struct limit_row){.key = xstrdup(key)};
    }
    *(upper ? &row->l.has_upper : &row->l.has_lower) = true;
    *(upper ? &row->l.upper : &row->l.lower) = value;
    r->has_limits = true;
    entry_text_drop(&r->limits_text);
    return true;
}

const struct state_native state_native_watch = {
    .name = "watch",
    .read = read_watches,
    .write = write_watches,
    .write_changed = changed_watches,
    .clamp = clamp_watches,
    .free = free_readings,
};

/* Shares the entries of the watch section, which frees them. */
const struct state_native state_native_limits = {
    .name = "limits",
    .read = read_all_limits,
    .write = write_limits,
    .write_changed = changed_limits,
    .clamp = no_clamp,
    .free = no_free,
};
