/* Devices, per account: the time of the last discovery, the device list
 * it returned, and a history per device serial of what wsrelay did with
 * each (the "accounts" section).
 *
 * Why a device's history is kept apart from its account's device list:
 * discovery replaces the list with whatever the platform returned, and a
 * reply that is empty or partial for a moment must not make wsrelay forget
 * that a device was already polled (catch_up would apply again and its
 * alerts would be recorded as seen without being sent). So the list holds
 * only what discovery says (serial, base, model, name) and the history,
 * keyed by serial, what wsrelay did (first known, last poll, last
 * successful poll, refused until); discovery never drops a history entry.
 * Only entries of serials that are neither listed nor named by an outbox
 * item, and that nothing has touched for 30 days, are dropped, to bound
 * the file.
 *
 * A native section (section.h): each account as C structures beside the
 * text the file had for it, written back as it was unless the account
 * changed. Members this version does not know, of an account, a device or
 * a history entry, are kept as their text and written after the known
 * ones. */
#include "state.h"
#include "state/native.h"
#include "state/section.h"
#include "util/strmap.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_KEEP (30LL * 86400) /* an unlisted, untouched device's history */
#define CLAMP_REFUSED 86400         /* furthest refused_until from now after a clock jump */

struct fleet_device {
    char *serial, *base, *model, *name, *group;
    char *extra; /* unknown members: ,"k":v... ; NULL when none */
};

struct fleet_history {
    char *serial;
    long long first_known, last_poll, last_ok, refused_until;
    long refusals;         /* 0: not written */
    bool has_poll, has_ok; /* read from the file: for an older file's migration */
    bool dirty;            /* changed since the fleet file last had it */
    char *extra;
};

/* What of an account changed since the fleet file last had it: a poll
 * changes one history entry, which a record of changes can carry alone
 * (the "history" section of a record, keyed by account and serial);
 * anything else needs the whole account. */
enum account_change { ACCOUNT_CLEAN, ACCOUNT_HISTORY, ACCOUNT_WHOLE };

struct fleet_account {
    char *name;
    bool has_discovered;
    long long discovered_at;
    struct fleet_device *devices;
    size_t n_devices, devices_cap;
    struct strmap listed; /* serial -> position in devices */
    struct fleet_history *history;
    size_t n_history, history_cap;
    struct strmap known; /* serial -> position in history */
    char *extra;
    struct entry_text text; /* the account's JSON (section.h) */
    enum account_change changed;
    /* Where the text has its one discovered_at number (bytes from its
     * start; disc_len 0: not once), and whether that number is stale:
     * every readings run sets the time of a list it finds unchanged, and
     * only those digits need writing again, not 2000 devices. */
    size_t disc_at, disc_len;
    bool disc_stale;
};

struct fleet {
    struct fleet_account *a;
    size_t n;
    struct strmap index; /* name -> position in a */
};

/* --- entries ---------------------------------------------------------- */

/* Room in *arr (of `size`-byte elements, *cap of them) for one more after
 * `n`: the capacity doubles, so that filling a list of 2000 devices does
 * not copy it 2000 times. */
static void *room_for_one(void *arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return arr;
    *cap = *cap ? *cap * 2 : 16;
    return xreallocarray(arr, *cap, size);
}

static void device_free(struct fleet_device *d)
{
    free(d->serial);
    free(d->base);
    free(d->model);
    free(d->name);
    free(d->group);
    free(d->extra);
}

static void account_free(struct fleet_account *a)
{
    for (size_t i = 0; i < a->n_devices; i++)
        device_free(&a->devices[i]);
    for (size_t i = 0; i < a->n_history; i++) {
        free(a->history[i].serial);
        free(a->history[i].extra);
    }
    free(a->devices);
    free(a->history);
    strmap_clear(&a->listed);
    strmap_clear(&a->known);
    free(a->name);
    free(a->extra);
    entry_text_drop(&a->text);
    memset(a, 0, sizeof *a);
}

static void free_fleet(struct state *s)
{
    struct fleet *f = s->fleet;
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        account_free(&f->a[i]);
    free(f->a);
    strmap_clear(&f->index);
    free(f);
    s->fleet = NULL;
}

static struct fleet_account *find_account(const struct state *s, const char *name)
{
    size_t i;
    return s->fleet && strmap_get(&s->fleet->index, name, &i) ? &s->fleet->a[i] : NULL;
}

/* The account `name`, made (discovered at 0, no devices) when absent, and
 * marked changed: the caller is about to change it. */
static struct fleet_account *change_account(struct state *s, const char *name)
{
    struct fleet_account *a = find_account(s, name);
    if (!a) {
        if (!s->fleet)
            s->fleet = xcalloc(1, sizeof *s->fleet);
        struct fleet *f = s->fleet;
        f->a = xreallocarray(f->a, f->n + 1, sizeof *f->a);
        a = &f->a[f->n];
        memset(a, 0, sizeof *a);
        a->name = xstrdup(name);
        a->has_discovered = true;
        strmap_put(&f->index, name, f->n++);
    }
    entry_text_drop(&a->text);
    a->disc_len = 0;
    a->disc_stale = false;
    a->changed = ACCOUNT_WHOLE;
    return a;
}

static struct fleet_history *history_of(const struct fleet_account *a, const char *serial)
{
    size_t i;
    return a && strmap_get(&a->known, serial, &i) ? &a->history[i] : NULL;
}

/* The history entry of `serial`, made (all times 0) when absent. */
static struct fleet_history *history_entry(struct fleet_account *a, const char *serial)
{
    struct fleet_history *h = history_of(a, serial);
    if (h)
        return h;
    a->history = room_for_one(a->history, &a->history_cap, a->n_history, sizeof *a->history);
    h = &a->history[a->n_history];
    memset(h, 0, sizeof *h);
    h->serial = xstrdup(serial);
    strmap_put(&a->known, serial, a->n_history++);
    return h;
}

/* The history entry of `serial` in `account`, made when absent, and
 * marked changed alone (its account's text is gone, but a record of
 * changes needs only this entry). */
static struct fleet_history *change_history(struct state *s, const char *account,
                                            const char *serial)
{
    struct fleet_account *a = find_account(s, account);
    if (!a) {
        a = change_account(s, account);
    } else {
        entry_text_drop(&a->text);
        a->disc_len = 0;
        a->disc_stale = false;
        if (a->changed == ACCOUNT_CLEAN)
            a->changed = ACCOUNT_HISTORY;
    }
    struct fleet_history *h = history_entry(a, serial);
    h->dirty = true;
    return h;
}

static struct fleet_device *listed(const struct fleet_account *a, const char *serial)
{
    size_t i;
    return a && strmap_get(&a->listed, serial, &i) ? &a->devices[i] : NULL;
}

static void index_devices(struct fleet_account *a)
{
    strmap_clear(&a->listed);
    for (size_t i = 0; i < a->n_devices; i++)
        if (!listed(a, a->devices[i].serial)) /* the first of a serial listed twice */
            strmap_put(&a->listed, a->devices[i].serial, i);
}

/* --- reading the file ---------------------------------------------------- */

/* The readers take the member's name from js->key and say where they are
 * with a chain of `struct where` (native.h). */

static bool fail(struct jscan *js, const struct where *up, const char *key, const char *what,
                 struct err *e)
{
    struct where at = {up, key, 0};
    native_fail(js, key ? &at : up, what, e);
    return false;
}

/* Appends an unknown member (the scanner on its value) to *extra as
 * ,"KEY":VALUE. */
static bool keep_unknown(struct jscan *js, char **extra)
{
    struct jscan_raw raw;
    struct buf b;
    buf_init(&b, 0);
    if (*extra)
        buf_puts(&b, *extra);
    buf_append(&b, ",", 1);
    buf_json_string(&b, js->key, js->key_len);
    buf_append(&b, ":", 1);
    bool ok = jscan_skip(js, &raw);
    if (ok) {
        buf_append(&b, raw.text, raw.len);
        free(*extra);
        *extra = buf_steal(&b);
    }
    buf_free(&b);
    return ok;
}

static bool read_time(struct jscan *js, long long *out, const struct where *up, struct err *e)
{
    return (jscan_peek(js) == JSCAN_NUMBER && jscan_int(js, out)) ||
           fail(js, up, js->key, "not an integer", e);
}

/* A string member: UTF-8 text, cut at a NUL byte as the state always read
 * it. */
static bool read_text(struct jscan *js, char **out, const struct where *up, struct err *e)
{
    char *s = NULL;
    size_t len = 0;
    if (jscan_peek(js) != JSCAN_STRING)
        return fail(js, up, js->key, "not a string", e);
    if (!jscan_string_dup(js, &s, &len))
        return false;
    if (!utf8_valid(s, len)) {
        free(s);
        return fail(js, up, js->key, "not UTF-8", e);
    }
    free(*out);
    *out = s;
    return true;
}

static const char *const history_times[] = {"first_known", "last_poll", "last_ok", "refused_until",
                                            "refusals"};

static bool read_history_entry(struct jscan *js, struct fleet_history *h, const struct where *at,
                               struct err *e)
{
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, at, NULL, "not an object", e);
    jscan_object(js);
    while (jscan_member(js)) {
        long long *times[] = {&h->first_known, &h->last_poll, &h->last_ok, &h->refused_until};
        size_t k = 0;
        while (k < 5 && !jscan_key_is(js, history_times[k]))
            k++;
        long long v = 0;
        if (k == 5 ? !keep_unknown(js, &h->extra) : !read_time(js, &v, at, e))
            return false;
        if (k < 4)
            *times[k] = v;
        else if (k == 4)
            h->refusals = (long)v;
        h->has_poll = h->has_poll || k == 1;
        h->has_ok = h->has_ok || k == 2;
    }
    return !js->failed;
}

/* The poll times a device of an older file's list carried. */
struct old_times {
    char *serial;
    bool has_poll, has_ok;
    long long poll, ok;
};

/* Reads one device of the list, and in *old what it says of its polls. */
static bool read_device(struct jscan *js, struct fleet_device *d, struct old_times *old,
                        const struct where *at, struct err *e)
{
    static const char *const texts[] = {"serial", "base", "model", "name", "group"};
    char **fields[] = {&d->serial, &d->base, &d->model, &d->name, &d->group};
    *old = (struct old_times){0};
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, at, NULL, "not an object", e);
    jscan_object(js);
    while (jscan_member(js)) {
        size_t k = 0;
        while (k < 5 && !jscan_key_is(js, texts[k]))
            k++;
        bool good;
        if (k < 5)
            good = read_text(js, fields[k], at, e);
        else if (jscan_key_is(js, "last_poll"))
            good = (old->has_poll = true) && read_time(js, &old->poll, at, e);
        else if (jscan_key_is(js, "last_ok"))
            good = (old->has_ok = true) && read_time(js, &old->ok, at, e);
        else
            good = keep_unknown(js, &d->extra);
        if (!good)
            return false;
    }
    if (js->failed)
        return false;
    if (!d->serial)
        return fail(js, at, NULL, "no 'serial'", e);
    for (size_t k = 1; k < 5; k++)
        if (!*fields[k])
            *fields[k] = xstrdup("");
    return true;
}

/* The poll times an older file kept in its device list move to the
 * history. An entry the history already has wins; it only takes the times
 * it lacks. The first time the device was known is not in such a file:
 * the earliest poll is the best guess, else it stays 0 and the next
 * state_set_devices or state_device_polled sets it. */
static void migrate_device(struct fleet_account *a, const struct old_times *old)
{
    struct fleet_history *h = history_of(a, old->serial);
    if (!h) {
        h = history_entry(a, old->serial);
        h->first_known = old->poll;
        if (old->ok && (!h->first_known || old->ok < h->first_known))
            h->first_known = old->ok;
        h->last_poll = old->poll;
        h->last_ok = old->ok;
        return;
    }
    if (!h->has_poll)
        h->last_poll = old->poll;
    if (!h->has_ok)
        h->last_ok = old->ok;
}

/* A device and a history entry as put_account writes them, read in one
 * pass (section.h); the generic readers read anything else. Builds with
 * assertions read every entry both ways too and abort when they differ. */
static bool fast_device(struct text *t, struct fleet_device *d)
{
    return TAKE(t, "{\"serial\":") && take_string(t, &d->serial) && TAKE(t, ",\"base\":") &&
           take_string(t, &d->base) && TAKE(t, ",\"model\":") && take_string(t, &d->model) &&
           TAKE(t, ",\"name\":") && take_string(t, &d->name) && TAKE(t, ",\"group\":") &&
           take_string(t, &d->group) && TAKE(t, "}");
}

static bool fast_history(struct text *t, struct fleet_history *h)
{
    long long refusals = 0;
    if (!TAKE(t, "{\"first_known\":") || !take_int(t, &h->first_known) ||
        !TAKE(t, ",\"last_poll\":") || !take_int(t, &h->last_poll) || !TAKE(t, ",\"last_ok\":") ||
        !take_int(t, &h->last_ok) || !TAKE(t, ",\"refused_until\":") ||
        !take_int(t, &h->refused_until) || (TAKE(t, ",\"refusals\":") && !take_int(t, &refusals)) ||
        !TAKE(t, "}"))
        return false;
    h->refusals = (long)refusals;
    h->has_poll = h->has_ok = true;
    return true;
}

#ifndef NDEBUG
static void differs(const char *what, const char *from, const char *to)
{
    fprintf(stderr, "state/devices.c: the fast reader differs on %s %.*s\n", what, (int)(to - from),
            from);
    abort();
}

static bool same_text(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}
#endif

/* One device of the list: the fast way when it can, else read_device's. */
static bool read_list_device(struct jscan *js, struct fleet_device *d, struct old_times *old,
                             const struct where *at, struct err *e)
{
    struct text t = {js->p, js->end};
    if (!fast_device(&t, d)) {
        device_free(d);
        *d = (struct fleet_device){0};
        return read_device(js, d, old, at, e);
    }
    *old = (struct old_times){0};
#ifndef NDEBUG
    struct fleet_device slow = {0};
    struct old_times o;
    struct jscan check = {0};
    struct err why;
    jscan_init(&check, js->p, (size_t)(t.p - js->p));
    if (!read_device(&check, &slow, &o, at, &why) || jscan_end(&check, &why) < 0 || o.has_poll ||
        o.has_ok || slow.extra || !same_text(slow.serial, d->serial) ||
        !same_text(slow.base, d->base) || !same_text(slow.model, d->model) ||
        !same_text(slow.name, d->name) || !same_text(slow.group, d->group))
        differs("the device", js->p, t.p);
    device_free(&slow);
    jscan_free(&check);
#endif
    js->p = t.p;
    return true;
}

/* One history entry: the fast way when it can, else read_history_entry's. */
static bool read_entry_history(struct jscan *js, struct fleet_history *h, const struct where *at,
                               struct err *e)
{
    struct text t = {js->p, js->end};
    if (!fast_history(&t, h)) {
        *h = (struct fleet_history){.serial = h->serial};
        return read_history_entry(js, h, at, e);
    }
#ifndef NDEBUG
    struct fleet_history slow = {0};
    struct jscan check = {0};
    struct err why;
    jscan_init(&check, js->p, (size_t)(t.p - js->p));
    if (!read_history_entry(&check, &slow, at, &why) || jscan_end(&check, &why) < 0 || slow.extra ||
        slow.first_known != h->first_known || slow.last_poll != h->last_poll ||
        slow.last_ok != h->last_ok || slow.refused_until != h->refused_until ||
        slow.refusals != h->refusals || slow.has_poll != h->has_poll || slow.has_ok != h->has_ok)
        differs("the history entry", js->p, t.p);
    free(slow.extra);
    jscan_free(&check);
#endif
    js->p = t.p;
    return true;
}

static bool read_devices(struct jscan *js, struct fleet_account *a, struct old_times **old,
                         size_t *n_old, const struct where *at, struct err *e)
{
    struct where list = {at, "devices", 0};
    if (jscan_peek(js) != JSCAN_ARRAY)
        return fail(js, &list, NULL, "not an array", e);
    for (size_t i = 0; i < a->n_devices; i++)
        device_free(&a->devices[i]);
    a->n_devices = 0;
    jscan_array(js);
    for (size_t i = 0; jscan_item(js); i++) {
        struct fleet_device d = {0};
        struct old_times o;
        struct where item = {&list, NULL, i};
        if (!read_list_device(js, &d, &o, &item, e)) {
            device_free(&d);
            return false;
        }
        if (o.has_poll || o.has_ok) {
            o.serial = xstrdup(d.serial);
            *old = xreallocarray(*old, *n_old + 1, sizeof **old);
            (*old)[(*n_old)++] = o;
        }
        a->devices = room_for_one(a->devices, &a->devices_cap, a->n_devices, sizeof *a->devices);
        a->devices[a->n_devices++] = d;
    }
    return !js->failed;
}

static bool read_history(struct jscan *js, struct fleet_account *a, const struct where *at,
                         struct err *e)
{
    struct where hist = {at, "history", 0};
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, &hist, NULL, "not an object", e);
    jscan_object(js);
    while (jscan_member(js)) {
        if (strlen(js->key) != js->key_len)
            return fail(js, &hist, NULL, "a serial with a NUL byte", e);
        struct fleet_history *h = history_entry(a, js->key);
        struct where entry = {&hist, h->serial, 0};
        free(h->extra); /* a serial given twice: the last one wins */
        *h = (struct fleet_history){.serial = h->serial};
        if (!read_entry_history(js, h, &entry, e))
            return false;
    }
    return !js->failed;
}

/* Reads one account, whose text starts at `start`; *migrated when an
 * older file's device list had poll times to move (the account then
 * differs from its text). */
static bool read_account(struct jscan *js, struct fleet_account *a, const char *start,
                         bool *migrated, const struct where *at, struct err *e)
{
    struct old_times *old = NULL;
    size_t n_old = 0, n_disc = 0;
    bool good = false;
    if (jscan_peek(js) != JSCAN_OBJECT) {
        fail(js, at, NULL, "not an object", e);
        goto out;
    }
    jscan_object(js);
    while (jscan_member(js)) {
        bool ok;
        if (jscan_key_is(js, "discovered_at")) {
            jscan_peek(js); /* past white space: where the number starts */
            a->disc_at = (size_t)(js->p - start);
            ok = (a->has_discovered = true) && read_time(js, &a->discovered_at, at, e);
            a->disc_len = (size_t)(js->p - start) - a->disc_at;
            n_disc++;
        } else if (jscan_key_is(js, "devices")) {
            ok = read_devices(js, a, &old, &n_old, at, e);
        } else if (jscan_key_is(js, "history"))
            ok = read_history(js, a, at, e);
        else
            ok = keep_unknown(js, &a->extra);
        if (!ok)
            goto out;
    }
    if (js->failed)
        goto out;
    if (n_disc != 1)
        a->disc_len = 0;
    index_devices(a);
    for (size_t i = 0; i < n_old; i++)
        migrate_device(a, &old[i]);
    *migrated = n_old > 0;
    good = true;
out:
    for (size_t i = 0; i < n_old; i++)
        free(old[i].serial);
    free(old);
    return good;
}

static int read_accounts(struct state *s, struct jscan *js, bool merge, struct err *e)
{
    struct where top = {NULL, "accounts", 0};
    if (!merge)
        free_fleet(s); /* a second "accounts" replaces the first */
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, &top, NULL, "not an object", e), -1;
    jscan_object(js);
    while (jscan_member(js)) {
        if (strlen(js->key) != js->key_len || !utf8_valid(js->key, js->key_len))
            return fail(js, &top, NULL, "a name that is not UTF-8 text", e), -1;
        struct fleet_account *a = find_account(s, js->key);
        if (a) { /* a name given twice: the last one wins */
            char *name = xstrdup(a->name);
            account_free(a);
            a->name = name;
        } else {
            a = change_account(s, js->key);
            a->has_discovered = false;
        }
        struct where at = {&top, a->name, 0};
        jscan_peek(js); /* past white space: where the account's text starts */
        const char *start = js->p;
        bool migrated = false;
        if (!read_account(js, a, start, &migrated, &at, e))
            return -1;
        if (!migrated)
            a->text = entry_text_span(start, js);
        a->changed = migrated ? ACCOUNT_WHOLE : ACCOUNT_CLEAN;
    }
    if (js->failed)
        return fail(js, &top, NULL, "not JSON", e), -1;
    return 0;
}

/* --- writing ------------------------------------------------------------- */

static void put_text(struct buf *out, const char *key, const char *value)
{
    buf_append(out, ",\"", 2);
    buf_puts(out, key);
    buf_append(out, "\":", 2);
    buf_json_string(out, value, strlen(value));
}

static void put_time(struct buf *out, const char *key, long long v, bool comma)
{
    buf_append(out, comma ? ",\"" : "\"", comma ? 2 : 1);
    buf_puts(out, key);
    buf_append(out, "\":", 2);
    buf_put_ll(out, v);
}

/* "SERIAL":{...} */
static void put_history(struct buf *out, const struct fleet_history *h)
{
    buf_json_string(out, h->serial, strlen(h->serial));
    buf_append(out, ":{", 2);
    put_time(out, "first_known", h->first_known, false);
    put_time(out, "last_poll", h->last_poll, true);
    put_time(out, "last_ok", h->last_ok, true);
    put_time(out, "refused_until", h->refused_until, true);
    if (h->refusals)
        put_time(out, "refusals", h->refusals, true);
    if (h->extra)
        buf_puts(out, h->extra);
    buf_append(out, "}", 1);
}

/* The fleet file has all of `a` now. */
static void account_written(struct fleet_account *a)
{
    a->changed = ACCOUNT_CLEAN;
    for (size_t i = 0; i < a->n_history; i++)
        a->history[i].dirty = false;
}

static void put_account(struct buf *out, const struct fleet_account *a)
{
    buf_append(out, "{", 1);
    if (a->has_discovered)
        put_time(out, "discovered_at", a->discovered_at, false);
    buf_puts(out, a->has_discovered ? ",\"devices\":[" : "\"devices\":[");
    for (size_t i = 0; i < a->n_devices; i++) {
        const struct fleet_device *d = &a->devices[i];
        buf_puts(out, i ? ",{\"serial\":" : "{\"serial\":");
        buf_json_string(out, d->serial, strlen(d->serial));
        put_text(out, "base", d->base);
        put_text(out, "model", d->model);
        put_text(out, "name", d->name);
        put_text(out, "group", d->group);
        if (d->extra)
            buf_puts(out, d->extra);
        buf_append(out, "}", 1);
    }
    buf_puts(out, "],\"history\":{");
    for (size_t i = 0; i < a->n_history; i++) {
        if (i)
            buf_append(out, ",", 1);
        put_history(out, &a->history[i]);
    }
    buf_append(out, "}", 1);
    if (a->extra)
        buf_puts(out, a->extra);
    buf_append(out, "}", 1);
}

/* Each account (with `changed`, each whose change needs it whole) under
 * its name, separated by commas; returns how many. An account without
 * its text is written from its structures, and keeps that text for the
 * next save; one whose discovery time alone changed is its text with
 * that number written anew (and not "changed": the state file's
 * "discovered" section has the time). */
static size_t write_account_list(const struct state *s, struct buf *out, bool changed)
{
    size_t n = 0;
    for (size_t i = 0; s->fleet && i < s->fleet->n; i++) {
        struct fleet_account *a = &s->fleet->a[i];
        const struct entry_text *t = &a->text;
        if (changed && a->changed != ACCOUNT_WHOLE)
            continue;
        account_written(a);
        if (n++)
            buf_append(out, ",", 1);
        buf_json_string(out, a->name, strlen(a->name));
        buf_append(out, ":", 1);
        if (t->p && a->disc_stale) {
            size_t after = a->disc_at + a->disc_len;
            buf_append(out, t->p, a->disc_at);
            buf_put_ll(out, a->discovered_at);
            buf_append(out, t->p + after, t->len - after);
        } else if (t->p) {
            buf_append(out, t->p, t->len);
        } else {
            struct buf one;
            buf_init(&one, 0);
            put_account(&one, a);
            entry_text_keep(&a->text, &one, out);
            if (a->has_discovered) { /* put_account writes it first */
                a->disc_at = sizeof "{\"discovered_at\":" - 1;
                a->disc_len = strcspn(a->text.p + a->disc_at, ",}");
            }
        }
    }
    return n;
}

static void write_accounts(const struct state *s, struct buf *out)
{
    buf_append(out, "{", 1);
    write_account_list(s, out, false);
    buf_append(out, "}", 1);
}

static size_t changed_accounts(const struct state *s, struct buf *out)
{
    return write_account_list(s, out, true);
}

/* --- history entries alone, in records of the fleet file -----------------
 *
 * A record's "history" section: {ACCOUNT: {SERIAL: {...history...}}}, the
 * entries a poll changed in an account whose list did not change; each
 * replaces that serial's entry of the account, which the base or an
 * earlier record has. Never in a base, which has every account whole. */

static int read_history_patch(struct state *s, struct jscan *js, bool merge, struct err *e)
{
    struct where top = {NULL, "history", 0};
    (void)merge;
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, &top, NULL, "not an object", e), -1;
    jscan_object(js);
    while (jscan_member(js)) {
        struct fleet_account *a = find_account(s, js->key);
        if (!a)
            return fail(js, &top, NULL, "an account the fleet file has not had", e), -1;
        entry_text_drop(&a->text); /* its text no longer says it all */
        a->disc_len = 0;
        a->disc_stale = false;
        struct where at = {&(struct where){NULL, "accounts", 0}, a->name, 0};
        if (!read_history(js, a, &at, e))
            return -1;
    }
    if (js->failed)
        return fail(js, &top, NULL, "not JSON", e), -1;
    return 0;
}

static size_t changed_history(const struct state *s, struct buf *out)
{
    size_t n = 0;
    for (size_t i = 0; s->fleet && i < s->fleet->n; i++) {
        struct fleet_account *a = &s->fleet->a[i];
        if (a->changed != ACCOUNT_HISTORY)
            continue;
        if (n++)
            buf_append(out, ",", 1);
        buf_json_string(out, a->name, strlen(a->name));
        buf_append(out, ":{", 2);
        bool first = true;
        for (size_t k = 0; k < a->n_history; k++) {
            if (!a->history[k].dirty)
                continue;
            if (!first)
                buf_append(out, ",", 1);
            first = false;
            put_history(out, &a->history[k]);
        }
        buf_append(out, "}", 1);
        account_written(a);
    }
    return n;
}

/* --- discovery times, in the state file -----------------------------------
 *
 * A readings run that finds every list as it was sets each account's
 * discovery time and nothing else of the fleet. The times are therefore
 * written in the state file too ("discovered": {NAME: TIME}), which wins
 * over the time an account's entry in the fleet file may still have: a
 * run that changed nothing else writes no record of changes. */

struct discovery_times {
    char **name;
    long long *at;
    size_t n;
};

static void free_discovered(struct state *s)
{
    struct discovery_times *d = s->discovered;
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->name[i]);
    free(d->name);
    free(d->at);
    free(d);
    s->discovered = NULL;
}

static int read_discovered(struct state *s, struct jscan *js, bool merge, struct err *e)
{
    struct where top = {NULL, "discovered", 0};
    (void)merge;
    free_discovered(s);
    struct discovery_times *d = s->discovered = xcalloc(1, sizeof *d);
    if (jscan_peek(js) != JSCAN_OBJECT)
        return fail(js, &top, NULL, "not an object", e), -1;
    jscan_object(js);
    while (jscan_member(js)) {
        if (strlen(js->key) != js->key_len || !utf8_valid(js->key, js->key_len))
            return fail(js, &top, NULL, "a name that is not UTF-8 text", e), -1;
        d->name = xreallocarray(d->name, d->n + 1, sizeof *d->name);
        d->at = xreallocarray(d->at, d->n + 1, sizeof *d->at);
        d->name[d->n] = xstrdup(js->key);
        struct where at = {&top, d->name[d->n], 0};
        if (!jscan_int(js, &d->at[d->n++]))
            return fail(js, &at, NULL, "not an integer", e), -1;
    }
    if (js->failed)
        return fail(js, &top, NULL, "not JSON", e), -1;
    return 0;
}

void fleet_loaded(struct state *s)
{
    struct discovery_times *d = s->discovered;
    for (size_t i = 0; d && i < d->n; i++) {
        struct fleet_account *a = find_account(s, d->name[i]);
        if (!a || (a->has_discovered && a->discovered_at == d->at[i]))
            continue; /* an account the fleet lacks has nothing to take it */
        a->has_discovered = true;
        a->discovered_at = d->at[i];
        a->disc_stale = a->disc_len > 0;
    }
    free_discovered(s);
}

static void write_discovered(const struct state *s, struct buf *out)
{
    size_t n = 0;
    buf_append(out, "{", 1);
    for (size_t i = 0; s->fleet && i < s->fleet->n; i++) {
        const struct fleet_account *a = &s->fleet->a[i];
        if (!a->has_discovered)
            continue;
        if (n++)
            buf_append(out, ",", 1);
        buf_json_string(out, a->name, strlen(a->name));
        buf_append(out, ":", 1);
        buf_put_ll(out, a->discovered_at);
    }
    buf_append(out, "}", 1);
}

static void no_clamp(struct state *s, const struct state_clamp *to)
{
    (void)s;
    (void)to; /* the accounts' clamp lowers the times */
}

static void no_free(struct state *s)
{
    (void)s; /* the accounts own what the section read */
}

/* --- a clock that jumped ----------------------------------------------- */

static bool lower(long long *t, long long max)
{
    if (*t <= max)
        return false;
    *t = max;
    return true;
}

static void clamp_accounts(struct state *s, const struct state_clamp *to)
{
    long long now = to->now;
    for (size_t i = 0; s->fleet && i < s->fleet->n; i++) {
        struct fleet_account *a = &s->fleet->a[i];
        bool changed = lower(&a->discovered_at, now);
        for (size_t k = 0; k < a->n_history; k++) {
            struct fleet_history *h = &a->history[k];
            changed = lower(&h->first_known, now) || changed;
            changed = lower(&h->last_poll, now) || changed;
            changed = lower(&h->last_ok, now) || changed;
            changed = lower(&h->refused_until, now + CLAMP_REFUSED) || changed;
        }
        if (changed)
            change_account(s, a->name);
    }
}

/* --- devices ----------------------------------------------------------- */

long long state_discovered_at(const struct state *s, const char *account)
{
    const struct fleet_account *a = find_account(s, account);
    return a ? a->discovered_at : 0;
}

/* The time goes to the state file's "discovered"; the account's entry in
 * the fleet file is written anew only when it is new, or when its text has
 * no one place for the number (an edited file: two of them, or none). A
 * text that has it gets the number with the next base (disc_stale), and
 * an account whose text is already gone is written from its structures. */
void state_set_discovered(struct state *s, const char *account, long long now)
{
    struct fleet_account *a = find_account(s, account);
    if (a && a->has_discovered && a->discovered_at == now)
        return;
    if (!a || (a->text.p && !a->disc_len))
        a = change_account(s, account);
    a->has_discovered = true;
    a->discovered_at = now;
    a->disc_stale = a->text.p && a->disc_len;
}

/* Whether an account of `s` other than `a` has a history of `serial`. */
static bool known_elsewhere(const struct state *s, const struct fleet_account *a,
                            const char *serial)
{
    for (size_t i = 0; s->fleet && i < s->fleet->n; i++)
        if (&s->fleet->a[i] != a && history_of(&s->fleet->a[i], serial))
            return true;
    return false;
}

/* Drops the history of devices that are neither listed nor in the outbox
 * and that were neither first known nor polled in the 30 days before
 * `now`, and the seen mark of such a device that no other account knows
 * (seen_forget_mark). Such a device that comes back is new again
 * (first_known = now). Returns whether it dropped any. */
static bool prune_history(struct state *s, struct fleet_account *a, long long now)
{
    size_t kept = 0;
    for (size_t i = 0; i < a->n_history; i++) {
        struct fleet_history *h = &a->history[i];
        long long latest = h->first_known;
        if (h->last_poll > latest)
            latest = h->last_poll;
        if (h->last_ok > latest)
            latest = h->last_ok;
        if (latest < now - HISTORY_KEEP && !listed(a, h->serial) &&
            !outbox_names_serial(s, h->serial)) {
            if (!known_elsewhere(s, a, h->serial))
                seen_forget_mark(s, h->serial);
            free(h->serial);
            free(h->extra);
            continue;
        }
        a->history[kept++] = *h;
    }
    if (kept == a->n_history)
        return false;
    a->n_history = kept;
    strmap_clear(&a->known);
    for (size_t i = 0; i < kept; i++)
        strmap_put(&a->known, a->history[i].serial, i);
    return true;
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* Whether the account's list is `devs` (those with a serial) already. */
static bool same_list(const struct fleet_account *a, const struct state_device *devs, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct state_device *d = &devs[i];
        if (!d->serial)
            continue;
        const struct fleet_device *have = k < a->n_devices ? &a->devices[k] : NULL;
        if (!have || have->extra || strcmp(have->serial, d->serial) != 0 ||
            strcmp(have->base, or_empty(d->base)) != 0 ||
            strcmp(have->model, or_empty(d->model)) != 0 ||
            strcmp(have->name, or_empty(d->name)) != 0 ||
            strcmp(have->group, or_empty(d->group)) != 0)
            return false;
        k++;
    }
    return k == a->n_devices;
}

/* A new device takes its poll times and refused_until from the caller (a
 * device list from elsewhere may know them); a known one keeps the
 * history's, whatever the caller says. */
void state_set_devices(struct state *s, const char *account, const struct state_device *devs,
                       size_t n, long long now)
{
    struct fleet_account *a = find_account(s, account);
    bool changed = !a || !same_list(a, devs, n);
    for (size_t i = 0; a && !changed && i < n; i++) {
        const struct fleet_history *h = devs[i].serial ? history_of(a, devs[i].serial) : NULL;
        changed = devs[i].serial && (!h || h->first_known == 0);
    }
    if (!changed) {
        /* prune_history changes nothing it does not drop */
        if (prune_history(s, a, now))
            change_account(s, account);
        return;
    }
    a = change_account(s, account);
    for (size_t i = 0; i < a->n_devices; i++)
        device_free(&a->devices[i]);
    a->n_devices = 0;
    if (n > a->devices_cap) {
        a->devices = xreallocarray(a->devices, n, sizeof *a->devices);
        a->devices_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        const struct state_device *d = &devs[i];
        if (!d->serial)
            continue;
        a->devices[a->n_devices++] = (struct fleet_device){
            .serial = xstrdup(d->serial),
            .base = xstrdup(or_empty(d->base)),
            .model = xstrdup(or_empty(d->model)),
            .name = xstrdup(or_empty(d->name)),
            .group = xstrdup(or_empty(d->group)),
        };
        struct fleet_history *h = history_of(a, d->serial);
        if (!h) {
            h = history_entry(a, d->serial);
            h->first_known = now;
            h->last_poll = d->last_poll;
            h->last_ok = d->last_ok;
            h->refused_until = d->refused_until;
        } else if (h->first_known == 0) {
            h->first_known = now;
        }
    }
    index_devices(a);
    prune_history(s, a, now);
}

/* The i-th device of `a` joined with its history, its strings borrowed. */
static void device_view(const struct fleet_account *a, size_t i, struct state_device *out)
{
    const struct fleet_device *d = &a->devices[i];
    const struct fleet_history *h = history_of(a, d->serial);
    *out = (struct state_device){.serial = d->serial,
                                 .base = d->base,
                                 .model = d->model,
                                 .name = d->name,
                                 .group = d->group};
    if (h) {
        out->first_known = h->first_known;
        out->last_poll = h->last_poll;
        out->last_ok = h->last_ok;
        out->refused_until = h->refused_until;
        out->refusals = h->refusals;
    }
}

struct state_device *state_devices(const struct state *s, const char *account, size_t *n)
{
    const struct fleet_account *a = find_account(s, account);
    struct state_device *out = NULL;
    *n = 0;
    if (!a || a->n_devices == 0)
        return NULL;
    out = xcalloc(a->n_devices, sizeof *out);
    for (size_t i = 0; i < a->n_devices; i++) {
        struct state_device *o = &out[(*n)++];
        device_view(a, i, o);
        o->serial = xstrdup(o->serial);
        o->base = xstrdup(o->base);
        o->model = xstrdup(o->model);
        o->name = xstrdup(o->name);
        o->group = xstrdup(o->group);
    }
    return out;
}

bool state_device_at(const struct state *s, const char *account, size_t i, struct state_device *out)
{
    const struct fleet_account *a = find_account(s, account);
    memset(out, 0, sizeof *out);
    if (!a || i >= a->n_devices)
        return false;
    device_view(a, i, out);
    return true;
}

size_t state_device_count(const struct state *s, const char *account)
{
    const struct fleet_account *a = find_account(s, account);
    return a ? a->n_devices : 0;
}

bool state_device_remote(const struct state_device *d)
{
    return d->base && *d->base && strcmp(d->base, d->serial) != 0;
}

void state_devices_free(struct state_device *d, size_t n)
{
    if (!d)
        return;
    for (size_t i = 0; i < n; i++) {
        free(d[i].serial);
        free(d[i].base);
        free(d[i].model);
        free(d[i].name);
        free(d[i].group);
    }
    free(d);
}

/* A listed device also takes the base it was polled through (NULL leaves
 * it as it was). */
void state_device_polled(struct state *s, const char *account, const char *serial, const char *base,
                         long long now, bool ok)
{
    struct fleet_account *a = find_account(s, account);
    struct fleet_device *d = listed(a, serial);
    if (!d || (base && strcmp(d->base, base) != 0))
        a = change_account(s, account); /* the list changes */
    if (d && base && strcmp(d->base, base) != 0) {
        free(d->base);
        d->base = xstrdup(base);
    } else if (!d) {
        a->devices = room_for_one(a->devices, &a->devices_cap, a->n_devices, sizeof *a->devices);
        a->devices[a->n_devices] = (struct fleet_device){
            .serial = xstrdup(serial),
            .base = xstrdup(or_empty(base)),
            .model = xstrdup(""),
            .name = xstrdup(""),
            .group = xstrdup(""),
        };
        strmap_put(&a->listed, serial, a->n_devices++);
    }
    struct fleet_history *h = change_history(s, account, serial);
    if (h->first_known == 0)
        h->first_known = now;
    h->last_poll = now;
    if (ok) {
        h->last_ok = now;
        h->refusals = 0;
    }
}

void state_device_refused(struct state *s, const char *account, const char *serial, long long until,
                          long refusals)
{
    struct fleet_history *h = change_history(s, account, serial);
    h->refused_until = until;
    h->refusals = refusals > 0 ? refusals : 0;
}

const struct state_native state_native_accounts = {
    .name = "accounts",
    .read = read_accounts,
    .write = write_accounts,
    .write_changed = changed_accounts,
    .clamp = clamp_accounts,
    .free = free_fleet,
};

const struct state_native state_native_history = {
    .name = "history",
    .read = read_history_patch,
    .write = NULL, /* only in records */
    .write_changed = changed_history,
    .clamp = no_clamp,
    .free = no_free,
};

const struct state_native state_native_discovered = {
    .name = "discovered",
    .read = read_discovered,
    .write = write_discovered,
    .clamp = no_clamp,
    .free = free_discovered,
};
