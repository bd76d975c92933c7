/* The state file: one locked JSON document holding what the relay has seen,
 * the devices it knows, what it has spent of the platform's budget and what
 * it still owes to receivers. In memory it stays a json-c tree (objects are
 * hash tables), checked once on load so that every accessor can trust it.
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
 * the platform serving an older page must not bring back. The budget ledger errs the same way, towards
 * caution: calls are recorded before they are sent, and calls stamped in
 * the future (the clock went back) still count; state_clamp_clock turns
 * them into calls made now, so they still count for a full span and then
 * expire instead of blocking polling until the real clock catches up.
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
 * Why throttles are kept per rule, device serial and kind: a routing rule
 * that lets one event of a device and kind through per period must
 * remember across runs when it last did and how many it has held back
 * since, so that the next notification can say "and 12 more since 02:14".
 * The state only stores the entries; the rules decide what they mean.
 * Entries nobody has touched for 30 days are pruned by the caller
 * (state_prune_throttles), which bounds the file.
 *
 * The file (one line; a new file has its keys in this order):
 *
 *   {"version":1,"next_id":7,
 *    "seen":{"5214000A":{"1795000000/ch1":1,...},...},
 *    "floors":{"5214000A":1794990000,...},
 *    "accounts":{"tokyo":{"discovered_at":N,
 *                "devices":[{"serial":S,"base":S,"model":S,"name":S,"group":S},...],
 *                "history":{"5214000A":{"first_known":N,"last_poll":N,"last_ok":N,
 *                                       "refused_until":N,"refusals":N},...}}},
 *    "logins":{"tbzz9999":{"alert":{"calls":[N,...],"blocked_until":N,
 *                                   "ratelimit":{"limit":12,"remaining":3,"reset":3600,"at":N}},
 *                          "current":{...},
 *                          "health":{"last_ok":N,"failures":N,"error_at":N,"status":401,
 *                                    "error":S}}},
 *    "outbox":[{"id":1,"receiver":"ops-hook","event":{...event_to_json...},"attempts":0,
 *               "queued_at":N,"next_try":N,"last_error":null},...],
 *    "throttles":[{"rule":"freezer-critical","serial":"5214000A","kind":"ch1",
 *                  "last_sent":N,"held":12,"held_since":N},...],
 *    "counters":{"dropped":N,"throttled":N,"unrouted":N},
 *    "receivers":{"ops-hook":{"last_ok":N,"failures":N,"error_at":N,"error":S},...},
 *    "self":{"conditions":{"login-refused/tbzz9999":{"since":N,"opened":N,"retry_at":N,
 *                                                    "creds":HEX},...},
 *            "last_relay":N,"heartbeat":{...health...}},
 *    "watch":{"5214000A":{"t":N,"seen":N,"gaps":[N,...],"battery":N,"silent":false,
 *                         "pending":N,"pending_since":N,"pending_after":N,"pending_at":N,
 *                         "recheck_at":N,"told":true,
 *                         "ch":[{"num":1,"error":false,"value":X,"step":X,"history":[X,...],
 *                                "band":N,"zone":N,"at_poll":X|null,"warned_at":N,
 *                                "warned":N,"back":true},...]},...},
 *    "limits":{"5214000A":{"1":{"upper":X,"lower":X},...},...},
 *    "signals":{"tbzz9999":{"calls":[N,...],"starved_since":N}}}
 *
 * (X: a number, written with at most 10 significant digits.)
 *
 * Every section may be missing (it is then empty). Members this version
 * does not know are kept as they are; members it knows must have the shape
 * above, or the file is reported corrupt rather than guessed at. Files
 * written before the history existed kept last_poll and last_ok in the
 * device list; loading moves them into the history; files written before
 * device groups, throttles or counters existed lack "group" (read as "")
 * and those sections; files written before the health of logins and
 * receivers lack "health" and "receivers" (nothing recorded yet),
 * files written before self-monitoring lack "self", and files of 0.1.0
 * lack "floors" and "refusals" (no floor, no refusal in a row yet), and
 * files of 0.2.0 lack "watch", "limits" and "signals" (no reading seen,
 * no limit learnt, no signal call made). A
 * login's health sits beside its ledger because a dry run, which saves
 * only the `logins` section, makes real calls; a receiver's does not,
 * since a dry run delivers nothing. The outbox stays sorted by id (ids only grow), which
 * makes lookups by id a binary search; the throttles stay sorted by rule,
 * serial and kind, for the same reason, and no triple appears twice. The
 * lock file PATH.lock is never removed: removing a lock file that others
 * may have opened would let two runs hold "the" lock at once. */
#include "state.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_VERSION 1
#define STATE_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define STATE_WRITE_MAX (STATE_MAX_BYTES / 2) /* what a save may write: half of what is read */
#define LEDGER_KEEP 7200            /* seconds of call times kept: two of the longest span */
#define BACKOFF_FIRST 60            /* first retry delay of the outbox */
#define BACKOFF_MAX 3600            /* longest retry delay */
#define HISTORY_KEEP (30LL * 86400) /* an unlisted, untouched device's history */
#define CLAMP_REFUSED 86400         /* furthest refused_until from now after a clock jump */
#define CLAMP_NEXT_TRY BACKOFF_MAX  /* furthest outbox next try from now */
#define LOCK_POLL_NS 100000000L
#define HEALTH_ERROR_MAX 300        /* bytes of a failure's message kept */

struct state {
    char *path;
    int lock_fd;
    bool read_only; /* from state_peek: never saved */
    struct json_object *root;
    char *aside;     /* state_open moved a corrupt file here; NULL when not */
    char *aside_why; /* what was wrong with it */
    size_t max_bytes;          /* the size a save keeps the file under */
    struct state_trim *trimmed; /* what saves gave up for it, not yet taken */
    size_t n_trimmed;
};

/* The name of `op` in the ledger; NULL for a value outside the enum. */
static const char *op_name(enum platform_op op)
{
    return (unsigned)op < PLATFORM_N_OPS ? platform_op_name(op) : NULL;
}

/* --- json-c helpers ---------------------------------------------------- */

/* The member `key` of `obj` when it has type `type`; else NULL. */
static struct json_object *member(const struct json_object *obj, const char *key,
                                  enum json_type type)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, type))
        return NULL;
    return v;
}

static long long int_member(const struct json_object *obj, const char *key, long long dflt)
{
    struct json_object *v = member(obj, key, json_type_int);
    return v ? (long long)json_object_get_int64(v) : dflt;
}

static const char *str_member(const struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_string);
    return v ? json_object_get_string(v) : NULL;
}

/* The object member `key` of `obj`, created (or replacing a member of
 * another type) when needed. */
static struct json_object *child_object(struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_object);
    if (!v) {
        v = jsonv_need(json_object_new_object());
        jsonv_put(obj, key, v);
    }
    return v;
}

static struct json_object *child_array(struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_array);
    if (!v) {
        v = jsonv_need(json_object_new_array());
        jsonv_put(obj, key, v);
    }
    return v;
}

/* A top-level section of the state; check_root made sure each exists. */
static struct json_object *section(const struct state *s, const char *key)
{
    bool list = strcmp(key, "outbox") == 0 || strcmp(key, "throttles") == 0;
    return member(s->root, key, list ? json_type_array : json_type_object);
}

/* --- checking a loaded document ---------------------------------------- */

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

/* Each check_* fails with a message naming the member, e.g.
 * "seen.5214000A: not an object". */

static const char *type_name(enum json_type type)
{
    switch (type) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return "a boolean";
    case json_type_double:
        return "a number";
    case json_type_int:
        return "an integer";
    case json_type_object:
        return "an object";
    case json_type_array:
        return "an array";
    case json_type_string:
        return "a string";
    }
    return "?";
}

static int check_type(const struct json_object *v, enum json_type type, const char *where,
                      struct err *e)
{
    if (json_object_is_type(v, type))
        return 0;
    return err_set(e, "%s: not %s", where, type_name(type));
}

/* A member that may be absent but, when present, has type `type`. */
static int check_opt(const struct json_object *obj, const char *key, enum json_type type,
                     const char *where, struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, type))
        return 0;
    return err_set(e, "%s.%s: not %s", where, key, type_name(type));
}

static int check_req(const struct json_object *obj, const char *key, enum json_type type,
                     const char *where, struct err *e)
{
    if (!json_object_object_get_ex(obj, key, NULL))
        return err_set(e, "%s: no '%s'", where, key);
    return check_opt(obj, key, type, where, e);
}

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

static const char *const history_times[] = {"first_known", "last_poll", "last_ok",
                                            "refused_until", "refusals"};

static struct json_object *history_object(long long first_known, long long last_poll,
                                          long long last_ok, long long refused_until)
{
    struct json_object *h = jsonv_need(json_object_new_object());
    jsonv_put_int(h, "first_known", first_known);
    jsonv_put_int(h, "last_poll", last_poll);
    jsonv_put_int(h, "last_ok", last_ok);
    jsonv_put_int(h, "refused_until", refused_until);
    return h;
}

/* Moves the last_poll and last_ok of an older file's device list into the
 * history. An entry the history already has wins; it only takes the times
 * it lacks. The first time the device was known is not in such a file: the
 * earliest poll is the best guess, else it stays 0 and the next
 * state_set_devices or state_device_polled sets it. */
static void migrate_devices(struct json_object *acc)
{
    struct json_object *devs = member(acc, "devices", json_type_array);
    size_t n = devs ? json_object_array_length(devs) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *d = json_object_array_get_idx(devs, i);
        const char *serial = str_member(d, "serial");
        bool has_poll = json_object_object_get_ex(d, "last_poll", NULL);
        bool has_ok = json_object_object_get_ex(d, "last_ok", NULL);
        if (!has_poll && !has_ok)
            continue;
        long long poll = int_member(d, "last_poll", 0);
        long long ok = int_member(d, "last_ok", 0);
        struct json_object *hist = child_object(acc, "history");
        struct json_object *h = member(hist, serial, json_type_object);
        if (!h) {
            long long first = poll;
            if (ok && (!first || ok < first))
                first = ok;
            jsonv_put(hist, serial, history_object(first, poll, ok, 0));
        } else {
            if (!json_object_object_get_ex(h, "last_poll", NULL))
                jsonv_put_int(h, "last_poll", poll);
            if (!json_object_object_get_ex(h, "last_ok", NULL))
                jsonv_put_int(h, "last_ok", ok);
        }
        json_object_object_del(d, "last_poll");
        json_object_object_del(d, "last_ok");
    }
}

static int check_history(struct json_object *hist, const char *account, struct err *e)
{
    char where[256];
    struct json_object_iterator it = json_object_iter_begin(hist);
    struct json_object_iterator end = json_object_iter_end(hist);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *h = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "accounts.%s.history.%s", account,
                 json_object_iter_peek_name(&it));
        if (check_type(h, json_type_object, where, e) < 0)
            return -1;
        for (size_t k = 0; k < sizeof history_times / sizeof history_times[0]; k++)
            if (check_opt(h, history_times[k], json_type_int, where, e) < 0)
                return -1;
    }
    return 0;
}

static int check_accounts(struct json_object *accounts, struct err *e)
{
    char where[256];
    if (check_type(accounts, json_type_object, "accounts", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(accounts);
    struct json_object_iterator end = json_object_iter_end(accounts);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *name = json_object_iter_peek_name(&it);
        struct json_object *acc = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "accounts.%s", name);
        if (check_type(acc, json_type_object, where, e) < 0 ||
            check_opt(acc, "discovered_at", json_type_int, where, e) < 0 ||
            check_opt(acc, "devices", json_type_array, where, e) < 0 ||
            check_opt(acc, "history", json_type_object, where, e) < 0)
            return -1;
        struct json_object *hist = member(acc, "history", json_type_object);
        if (hist && check_history(hist, name, e) < 0)
            return -1;
        struct json_object *devs = member(acc, "devices", json_type_array);
        size_t n = devs ? json_object_array_length(devs) : 0;
        for (size_t i = 0; i < n; i++) {
            struct json_object *d = json_object_array_get_idx(devs, i);
            snprintf(where, sizeof where, "accounts.%s.devices[%zu]", name, i);
            if (check_type(d, json_type_object, where, e) < 0 ||
                check_req(d, "serial", json_type_string, where, e) < 0 ||
                check_opt(d, "base", json_type_string, where, e) < 0 ||
                check_opt(d, "model", json_type_string, where, e) < 0 ||
                check_opt(d, "name", json_type_string, where, e) < 0 ||
                check_opt(d, "group", json_type_string, where, e) < 0 ||
                check_opt(d, "last_poll", json_type_int, where, e) < 0 ||
                check_opt(d, "last_ok", json_type_int, where, e) < 0)
                return -1;
        }
        migrate_devices(acc);
    }
    return 0;
}

/* The health of a login ID or a receiver (state_health). */
static int check_health(struct json_object *h, const char *where, struct err *e)
{
    static const char *const ints[] = {"last_ok", "failures", "error_at", "status"};
    struct json_object *v = NULL;
    if (check_type(h, json_type_object, where, e) < 0)
        return -1;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (check_opt(h, ints[k], json_type_int, where, e) < 0)
            return -1;
    if (int_member(h, "failures", 0) < 0 || int_member(h, "failures", 0) > LONG_MAX)
        return err_set(e, "%s.failures: out of range", where);
    if (int_member(h, "status", 0) < 0 || int_member(h, "status", 0) > LONG_MAX)
        return err_set(e, "%s.status: out of range", where);
    if (json_object_object_get_ex(h, "error", &v) && v && !json_object_is_type(v, json_type_string))
        return err_set(e, "%s.error: not a string or null", where);
    return 0;
}

static int check_logins(struct json_object *logins, struct err *e)
{
    char where[256];
    if (check_type(logins, json_type_object, "logins", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(logins);
    struct json_object_iterator end = json_object_iter_end(logins);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *login = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "logins.%s", json_object_iter_peek_name(&it));
        if (check_type(login, json_type_object, where, e) < 0)
            return -1;
        struct json_object *health = NULL;
        if (json_object_object_get_ex(login, "health", &health)) {
            size_t len = strlen(where);
            snprintf(where + len, sizeof where - len, ".health");
            if (check_health(health, where, e) < 0)
                return -1;
        }
        for (int op = 0; op < PLATFORM_N_OPS; op++) {
            struct json_object *led = NULL;
            if (!json_object_object_get_ex(login, op_name(op), &led))
                continue;
            snprintf(where, sizeof where, "logins.%s.%s", json_object_iter_peek_name(&it),
                     op_name(op));
            if (check_type(led, json_type_object, where, e) < 0 ||
                check_opt(led, "calls", json_type_array, where, e) < 0 ||
                check_opt(led, "blocked_until", json_type_int, where, e) < 0 ||
                check_opt(led, "ratelimit", json_type_object, where, e) < 0)
                return -1;
            struct json_object *calls = member(led, "calls", json_type_array);
            size_t n = calls ? json_object_array_length(calls) : 0;
            for (size_t i = 0; i < n; i++)
                if (!json_object_is_type(json_object_array_get_idx(calls, i), json_type_int))
                    return err_set(e, "%s.calls[%zu]: not an integer", where, i);
            struct json_object *rl = member(led, "ratelimit", json_type_object);
            if (rl) {
                static const char *const keys[] = {"limit", "remaining", "reset", "at"};
                size_t len = strlen(where);
                snprintf(where + len, sizeof where - len, ".ratelimit");
                for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                    if (check_opt(rl, keys[k], json_type_int, where, e) < 0)
                        return -1;
            }
        }
    }
    return 0;
}

static long long item_id(const struct json_object *item)
{
    return int_member(item, "id", 0);
}

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

/* An object whose every member is an integer. */
static int check_ints(struct json_object *obj, const char *where, struct err *e)
{
    if (check_type(obj, json_type_object, where, e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(obj);
    struct json_object_iterator end = json_object_iter_end(obj);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (!json_object_is_type(json_object_iter_peek_value(&it), json_type_int))
            return err_set(e, "%s.%s: not an integer", where, json_object_iter_peek_name(&it));
    return 0;
}

static int check_counters(struct json_object *counters, struct err *e)
{
    return check_ints(counters, "counters", e);
}

static int check_floors(struct json_object *floors, struct err *e)
{
    return check_ints(floors, "floors", e);
}

static int check_receivers(struct json_object *receivers, struct err *e)
{
    char where[256];
    if (check_type(receivers, json_type_object, "receivers", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(receivers);
    struct json_object_iterator end = json_object_iter_end(receivers);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        snprintf(where, sizeof where, "receivers.%s", json_object_iter_peek_name(&it));
        if (check_health(json_object_iter_peek_value(&it), where, e) < 0)
            return -1;
    }
    return 0;
}

/* The self-monitoring section: open conditions, the last relay event's
 * time, the heartbeat's health. */
static int check_self(struct json_object *self, struct err *e)
{
    static const char *const ints[] = {"since", "opened", "retry_at"};
    char where[256];
    if (check_type(self, json_type_object, "self", e) < 0 ||
        check_opt(self, "conditions", json_type_object, "self", e) < 0 ||
        check_opt(self, "last_relay", json_type_int, "self", e) < 0)
        return -1;
    struct json_object *hb = NULL;
    if (json_object_object_get_ex(self, "heartbeat", &hb) &&
        check_health(hb, "self.heartbeat", e) < 0)
        return -1;
    struct json_object *conds = member(self, "conditions", json_type_object);
    if (!conds)
        return 0;
    struct json_object_iterator it = json_object_iter_begin(conds);
    struct json_object_iterator end = json_object_iter_end(conds);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *c = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "self.conditions.%s", json_object_iter_peek_name(&it));
        if (check_type(c, json_type_object, where, e) < 0 ||
            check_req(c, "since", json_type_int, where, e) < 0 ||
            check_opt(c, "creds", json_type_string, where, e) < 0)
            return -1;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if (check_opt(c, ints[k], json_type_int, where, e) < 0)
                return -1;
    }
    return 0;
}

/* A number: JSON's integers and doubles alike. */
static bool is_number(const struct json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

static int check_number(const struct json_object *obj, const char *key, const char *where,
                        struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || is_number(v))
        return 0;
    return err_set(e, "%s.%s: not a number", where, key);
}

/* An array (when present) of numbers (`ints`: of integers). */
static int check_numbers(const struct json_object *obj, const char *key, bool ints,
                         const char *where, struct err *e)
{
    struct json_object *arr = NULL;
    if (!json_object_object_get_ex(obj, key, &arr))
        return 0;
    if (!json_object_is_type(arr, json_type_array))
        return err_set(e, "%s.%s: not an array", where, key);
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(arr, i);
        if (ints ? !json_object_is_type(v, json_type_int) : !is_number(v))
            return err_set(e, "%s.%s[%zu]: not %s", where, key, i, ints ? "an integer" : "a number");
    }
    return 0;
}

static int check_watch_channel(const struct json_object *c, const char *where, struct err *e)
{
    static const char *const ints[] = {"band", "zone", "warned_at", "warned"};
    struct json_object *at = NULL;
    if (check_type(c, json_type_object, where, e) < 0 ||
        check_req(c, "num", json_type_int, where, e) < 0 ||
        check_opt(c, "error", json_type_boolean, where, e) < 0 ||
        check_opt(c, "back", json_type_boolean, where, e) < 0 ||
        check_number(c, "value", where, e) < 0 || check_number(c, "step", where, e) < 0 ||
        check_numbers(c, "history", false, where, e) < 0)
        return -1;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (check_opt(c, ints[k], json_type_int, where, e) < 0)
            return -1;
    if (json_object_object_get_ex(c, "at_poll", &at) && at && !is_number(at))
        return err_set(e, "%s.at_poll: neither a number nor null", where);
    return 0;
}

static int check_watches(struct json_object *watch, struct err *e)
{
    static const char *const ints[] = {"t",          "seen",          "battery",
                                       "pending",    "pending_since", "pending_after",
                                       "pending_at", "recheck_at"};
    char where[256];
    if (check_type(watch, json_type_object, "watch", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(watch);
    struct json_object_iterator end = json_object_iter_end(watch);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *w = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "watch.%s", json_object_iter_peek_name(&it));
        if (check_type(w, json_type_object, where, e) < 0 ||
            check_opt(w, "silent", json_type_boolean, where, e) < 0 ||
            check_opt(w, "told", json_type_boolean, where, e) < 0 ||
            check_numbers(w, "gaps", true, where, e) < 0 ||
            check_opt(w, "ch", json_type_array, where, e) < 0)
            return -1;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if (check_opt(w, ints[k], json_type_int, where, e) < 0)
                return -1;
        struct json_object *ch = member(w, "ch", json_type_array);
        size_t n = ch ? json_object_array_length(ch) : 0;
        for (size_t i = 0; i < n; i++) {
            char cw[300];
            snprintf(cw, sizeof cw, "%s.ch[%zu]", where, i);
            if (check_watch_channel(json_object_array_get_idx(ch, i), cw, e) < 0)
                return -1;
        }
    }
    return 0;
}

static int check_limits(struct json_object *limits, struct err *e)
{
    char where[300];
    if (check_type(limits, json_type_object, "limits", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(limits);
    struct json_object_iterator end = json_object_iter_end(limits);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *chans = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "limits.%s", json_object_iter_peek_name(&it));
        if (check_type(chans, json_type_object, where, e) < 0)
            return -1;
        struct json_object_iterator cit = json_object_iter_begin(chans);
        struct json_object_iterator cend = json_object_iter_end(chans);
        for (; !json_object_iter_equal(&cit, &cend); json_object_iter_next(&cit)) {
            struct json_object *l = json_object_iter_peek_value(&cit);
            snprintf(where, sizeof where, "limits.%s.%s", json_object_iter_peek_name(&it),
                     json_object_iter_peek_name(&cit));
            if (check_type(l, json_type_object, where, e) < 0 ||
                check_number(l, "upper", where, e) < 0 || check_number(l, "lower", where, e) < 0)
                return -1;
        }
    }
    return 0;
}

static int check_signals(struct json_object *signals, struct err *e)
{
    char where[256];
    if (check_type(signals, json_type_object, "signals", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(signals);
    struct json_object_iterator end = json_object_iter_end(signals);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *l = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "signals.%s", json_object_iter_peek_name(&it));
        if (check_type(l, json_type_object, where, e) < 0 ||
            check_numbers(l, "calls", true, where, e) < 0 ||
            check_opt(l, "starved_since", json_type_int, where, e) < 0)
            return -1;
    }
    return 0;
}

/* Checks a parsed document and adds the sections it lacks. */
static int check_root(struct json_object *root, struct err *e)
{
    static const struct {
        const char *key;
        int (*check)(struct json_object *, struct err *);
        struct json_object *(*make)(void);
    } sections[] = {
        {"seen", check_seen, json_object_new_object},
        {"floors", check_floors, json_object_new_object},
        {"accounts", check_accounts, json_object_new_object},
        {"logins", check_logins, json_object_new_object},
        {"outbox", check_outbox, json_object_new_array},
        {"throttles", check_throttles, json_object_new_array},
        {"counters", check_counters, json_object_new_object},
        {"receivers", check_receivers, json_object_new_object},
        {"self", check_self, json_object_new_object},
        {"watch", check_watches, json_object_new_object},
        {"limits", check_limits, json_object_new_object},
        {"signals", check_signals, json_object_new_object},
    };
    struct json_object *v = NULL;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        if (!json_object_object_get_ex(root, sections[i].key, &v)) {
            jsonv_put(root, sections[i].key, jsonv_need(sections[i].make()));
            continue;
        }
        if (sections[i].check(v, e) < 0)
            return -1;
    }
    if (check_opt(root, "next_id", json_type_int, "state", e) < 0)
        return -1;
    /* next_id must stay above every id in use, whatever a hand edit did. */
    struct json_object *outbox = member(root, "outbox", json_type_array);
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

static struct json_object *new_root(void)
{
    struct json_object *root = jsonv_need(json_object_new_object());
    jsonv_put_int(root, "version", STATE_VERSION);
    jsonv_put_int(root, "next_id", 1);
    jsonv_put(root, "seen", jsonv_need(json_object_new_object()));
    jsonv_put(root, "floors", jsonv_need(json_object_new_object()));
    jsonv_put(root, "accounts", jsonv_need(json_object_new_object()));
    jsonv_put(root, "logins", jsonv_need(json_object_new_object()));
    jsonv_put(root, "outbox", jsonv_need(json_object_new_array()));
    jsonv_put(root, "throttles", jsonv_need(json_object_new_array()));
    jsonv_put(root, "counters", jsonv_need(json_object_new_object()));
    jsonv_put(root, "receivers", jsonv_need(json_object_new_object()));
    jsonv_put(root, "self", jsonv_need(json_object_new_object()));
    jsonv_put(root, "watch", jsonv_need(json_object_new_object()));
    jsonv_put(root, "limits", jsonv_need(json_object_new_object()));
    jsonv_put(root, "signals", jsonv_need(json_object_new_object()));
    return root;
}

/* Reads and checks `path` into *out; a missing file is an empty state.
 * The file is opened without following a symlink and without blocking
 * (a FIFO or a device there is refused, never waited on or moved), and
 * with *fd (may be NULL) the caller keeps the descriptor of what was read,
 * -1 when nothing was: state_open moves a corrupt file aside through it.
 * *corrupt (may be NULL) tells a file that was read but is not a state
 * this version understands (including one over the size limit) from one
 * that could not be read at all. */
static int load(struct json_object **out, int *fd, const char *path, bool *corrupt,
                struct err *e)
{
    bool read = false;
    int rc = -1;
    int in = -1;
    struct buf text;
    struct json_tokener *tok = NULL;
    struct json_object *root = NULL;
    struct json_object *v = NULL;
    struct stat st;

    buf_init(&text, STATE_MAX_BYTES);
    in = file_open_regular(path, FILE_NOFOLLOW, &st, e);
    if (in < 0 && errno == ENOENT) {
        root = new_root();
        rc = 0;
        goto out;
    }
    if (in < 0)
        goto out;
    if ((size_t)st.st_size > STATE_MAX_BYTES) {
        read = true;
        err_set(e, "%s: corrupt state file: %lld bytes, more than the %zu MiB wsrelay reads",
                path, (long long)st.st_size, STATE_MAX_BYTES >> 20);
        goto out;
    }
    if (file_read_fd(&text, in, path, e) < 0)
        goto out;
    read = true;
    if (text.len == 0) {
        err_set(e, "%s: corrupt state file: empty", path);
        goto out;
    }
    tok = json_tokener_new();
    if (!tok)
        xalloc_die();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    /* The length includes the final NUL so that the tokener knows the text
     * ends there; it must then have consumed everything before it. */
    root = json_tokener_parse_ex(tok, text.data, (int)text.len + 1);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (jerr != json_tokener_success) {
        err_set(e, "%s: corrupt state file: %s at offset %zu", path,
                jerr == json_tokener_continue ? "unexpected end of data"
                                              : json_tokener_error_desc(jerr),
                json_tokener_get_parse_end(tok));
        goto out;
    }
    if (json_tokener_get_parse_end(tok) < text.len) {
        err_set(e, "%s: corrupt state file: unexpected data at offset %zu", path,
                json_tokener_get_parse_end(tok));
        goto out;
    }
    if (!json_object_is_type(root, json_type_object)) {
        err_set(e, "%s: corrupt state file: not a JSON object", path);
        goto out;
    }
    if (!json_object_object_get_ex(root, "version", &v) || !json_object_is_type(v, json_type_int)) {
        err_set(e, "%s: corrupt state file: no integer 'version'", path);
        goto out;
    }
    long long version = (long long)json_object_get_int64(v);
    if (version > STATE_VERSION) {
        err_set(e, "%s: written by a newer wsrelay (version %lld)", path, version);
        goto out;
    }
    if (version < 1) {
        err_set(e, "%s: corrupt state file: version %lld", path, version);
        goto out;
    }
    if (check_root(root, e) < 0) {
        err_prefix(e, "%s: corrupt state file", path);
        goto out;
    }
    rc = 0;
out:
    if (corrupt)
        *corrupt = rc < 0 && read;
    if (fd)
        *fd = in;
    else if (in >= 0)
        close(in);
    if (rc < 0) {
        json_object_put(root);
        root = NULL;
    }
    *out = root;
    if (tok)
        json_tokener_free(tok);
    buf_free(&text);
    return rc;
}

/* --- locking ----------------------------------------------------------- */

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The pid written in the lock file by its holder; 0 when unreadable. */
static long lock_holder(int fd)
{
    char text[32];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    return end != text && pid > 0 ? pid : 0;
}

/* Opens and locks PATH.lock, waiting up to `wait` seconds, and writes our
 * pid into it. Creating the file also proves that the directory is
 * writable, which is checked again for a lock file that already existed. */
static int lock(int *out, const char *path, int wait, struct err *e)
{
    int rc = -1;
    char *lockpath = xasprintf("%s.lock", path);
    char *dir = file_dirname(path);
    /* Not blocking, not following a link: a FIFO or a symlink planted as
     * the lock file must make the run fail, not wait or write elsewhere. */
    int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                  0600);
    struct stat lst;
    if (fd >= 0 && (fstat(fd, &lst) < 0 || !S_ISREG(lst.st_mode))) {
        err_set(e, "%s: lock file %s is not a regular file", path, lockpath);
        goto out;
    }
    if (fd < 0) {
        int err = errno;
        struct stat st;
        if (err == ENOENT || err == ENOTDIR || err == EROFS ||
            ((err == EACCES || err == EPERM) && lstat(lockpath, &st) < 0))
            err_set(e, "%s: state directory %s is not writable: %s", path, dir, strerror(err));
        else
            err_set(e, "%s: cannot open lock file %s: %s", path, lockpath, strerror(err));
        goto out;
    }
    long long deadline = monotonic_ms() + (wait > 0 ? (long long)wait * 1000 : 0);
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            err_set(e, "%s: cannot lock %s: %s", path, lockpath, strerror(errno));
            goto out;
        }
        if (monotonic_ms() >= deadline) {
            long pid = lock_holder(fd);
            if (pid)
                err_set(e, "%s: locked by another wsrelay run (pid %ld)", path, pid);
            else
                err_set(e, "%s: locked by another wsrelay run (pid unknown)", path);
            goto out;
        }
        struct timespec pause = {0, LOCK_POLL_NS};
        nanosleep(&pause, NULL);
    }
    if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
        err_set(e, "%s: state directory %s is not writable: %s", path, dir, strerror(errno));
        goto out;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        err_set(e, "%s: cannot write lock file %s: %s", path, lockpath, strerror(errno));
        goto out;
    }
    *out = fd;
    fd = -1;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(lockpath);
    free(dir);
    return rc;
}

/* --- open, save, close ------------------------------------------------- */

/* Whether `path` names the very file open as `fd`, without following a
 * symlink: the name may have been replaced since it was opened. */
static bool same_file(const char *path, int fd)
{
    struct stat a, b;
    return lstat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Moves the corrupt file open as `fd` (the one load read at s->path)
 * aside, to PATH.corrupt-YYYYmmddTHHMMSSZ (with "-N" added when that name
 * is taken), mode 0600, so that a person can look at it while the relay
 * starts over. link() + unlink() rather than rename(): rename would replace
 * an earlier file of the same name. Everything is done to what was opened:
 * the mode is set through `fd`, and each name is checked to still be that
 * file before it is linked or removed, so a file swapped in meanwhile (a
 * symlink to something else, say) is never touched. `why` is copied
 * first: it may be e->msg itself. */
static int set_aside(struct state *s, int fd, const char *why, struct err *e)
{
    int rc = -1;
    char stamp[32];
    char *reason = xstrdup(why);
    char *aside = NULL;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    if (fchmod(fd, 0600) < 0) {
        err_set(e, "%s: cannot move the corrupt state file aside: %s (%s)", s->path,
                strerror(errno), reason);
        goto out;
    }
    bool linked = false;
    for (int n = 1; n < 100 && !linked; n++) {
        free(aside);
        aside = n == 1 ? xasprintf("%s.corrupt-%s", s->path, stamp)
                       : xasprintf("%s.corrupt-%s-%d", s->path, stamp, n);
        if (!same_file(s->path, fd)) {
            err_set(e, "%s: the corrupt state file was replaced while being read; not moved "
                       "(%s)",
                    s->path, reason);
            goto out;
        }
        linked = link(s->path, aside) == 0;
        if (!linked && errno != EEXIST) {
            err_set(e, "%s: cannot move the corrupt state file aside to %s: %s (%s)", s->path,
                    aside, strerror(errno), reason);
            goto out;
        }
    }
    if (!linked) {
        err_set(e, "%s: cannot move the corrupt state file aside: %s and 98 more names are taken "
                   "(%s)",
                s->path, aside, reason);
        goto out;
    }
    if (!same_file(aside, fd) || !same_file(s->path, fd)) {
        if (!same_file(aside, fd))
            unlink(aside); /* our own new link, to whatever was swapped in */
        err_set(e, "%s: the corrupt state file was replaced while being moved; not moved (%s)",
                s->path, reason);
        goto out;
    }
    if (unlink(s->path) < 0) {
        err_set(e, "%s: cannot move the corrupt state file aside to %s: %s (%s)", s->path, aside,
                strerror(errno), reason);
        goto out;
    }
    char *dir = file_dirname(s->path);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd >= 0) {
        fsync(dirfd);
        close(dirfd);
    }
    free(dir);
    log_error("%s; moved aside to %s: starting over with an empty state (catch_up applies)",
              reason, aside);
    s->aside = aside;
    s->aside_why = reason;
    aside = reason = NULL;
    rc = 0;
out:
    free(aside);
    free(reason);
    return rc;
}

const char *state_set_aside(const struct state *s, const char **why)
{
    if (why)
        *why = s->aside_why;
    return s->aside;
}

int state_open(struct state **out, const char *path, int lock_wait, struct err *e)
{
    int rc = -1;
    int fd = -1;
    struct state *s = xcalloc(1, sizeof *s);
    s->lock_fd = -1;
    s->max_bytes = STATE_WRITE_MAX;
    *out = NULL;
    if (!path || !*path) {
        err_set(e, "no state file given");
        goto out;
    }
    s->path = xstrdup(path);
    if (lock(&s->lock_fd, path, lock_wait, e) < 0)
        goto out;
    bool corrupt = false;
    if (load(&s->root, &fd, path, &corrupt, e) < 0) {
        if (!corrupt || set_aside(s, fd, e->msg, e) < 0)
            goto out;
        s->root = new_root();
    }
    *out = s;
    s = NULL;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    state_close(s);
    return rc;
}

/* No lock: a run holding it must not make `wsrelay status` wait, and
 * status must not make a run wait either. Saves are renames, so the file
 * read is a whole save, old or new. */
int state_peek(struct state **out, const char *path, struct err *e)
{
    int rc = -1;
    struct state *s = xcalloc(1, sizeof *s);
    s->lock_fd = -1;
    s->read_only = true;
    *out = NULL;
    if (!path || !*path) {
        err_set(e, "no state file given");
        goto out;
    }
    s->path = xstrdup(path);
    if (load(&s->root, NULL, path, NULL, e) < 0)
        goto out;
    *out = s;
    s = NULL;
    rc = 0;
out:
    state_close(s);
    return rc;
}

/* Writes `root` to `path` atomically; on failure the old file is intact. */
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Writes `json` (the text of a root, `len` bytes) and a newline to `path`
 * atomically. */
static int write_text(const char *path, const char *json, size_t len, struct err *e)
{
    int rc = -1;
    struct buf text;
    buf_init(&text, 0);
    if (!json) {
        err_set(e, "cannot serialise the state");
        goto out;
    }
    buf_append(&text, json, len);
    buf_puts(&text, "\n");
    if (file_write_atomic(path, text.data, text.len, 0600, e) < 0)
        goto out;
    rc = 0;
out:
    buf_free(&text);
    return rc;
}

static int write_root(const char *path, struct json_object *root, struct err *e)
{
    size_t len = 0;
    const char *json = json_object_to_json_string_length(root, JSON_FLAGS, &len);
    return write_text(path, json, len, e);
}

/* A state read without the lock must never overwrite what a run that
 * holds it saves. */
static int refuse_read_only(const struct state *s, struct err *e)
{
    return err_set(e, "%s: read without the lock (state_peek): never saved", s->path);
}

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
static bool trim_outbox(struct state *s, size_t excess)
{
    struct json_object *outbox = section(s, "outbox");
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

/* The state must stay small enough to be read again: a file over the
 * loader's limit would stop every later run. Only the outbox can grow
 * without bound (receivers that fail for days), so a save that would
 * write more than max_bytes gives up its oldest items first, and tells
 * (state_take_trimmed): the caller reports them like outbox.max_items
 * does. Seen keys, devices and the ledger are bounded by the fleet. */
int state_save(struct state *s, struct err *e)
{
    if (s->read_only)
        return refuse_read_only(s, e);
    size_t size = 0;
    const char *json = json_object_to_json_string_length(s->root, JSON_FLAGS, &size);
    /* Down to 15/16 of the limit: the relay event that reports it, and
     * the next events, must not make every following save trim again. */
    for (int tries = 0; json && size + 1 > s->max_bytes && tries < 3; tries++) {
        if (!trim_outbox(s, size + 1 - s->max_bytes / 16 * 15))
            break;
        json = json_object_to_json_string_length(s->root, JSON_FLAGS, &size);
    }
    if (json && size + 1 > s->max_bytes)
        log_error("%s: the state holds %zu bytes, more than the %zu it should, with an empty "
                  "outbox",
                  s->path, size + 1, s->max_bytes);
    if (write_text(s->path, json, size, e) < 0)
        return err_prefix(e, "%s: cannot save state", s->path);
    return 0;
}

void state_set_max_bytes(struct state *s, size_t max)
{
    s->max_bytes = max;
}

struct state_trim *state_take_trimmed(struct state *s, size_t *n)
{
    struct state_trim *t = s->trimmed;
    *n = s->n_trimmed;
    s->trimmed = NULL;
    s->n_trimmed = 0;
    return t;
}

void state_trimmed_free(struct state_trim *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++)
        free(t[i].receiver);
    free(t);
}

/* The file on disk is the one state_open loaded or the last save wrote:
 * the lock keeps every other run away from it. Loading it again with the
 * full check (rather than only parsing it) means a file this version
 * would refuse is not rewritten either. */
int state_save_budget(struct state *s, struct err *e)
{
    int rc = -1;
    struct json_object *disk = NULL;
    struct json_object *copy = NULL;
    if (s->read_only)
        return refuse_read_only(s, e);
    if (load(&disk, NULL, s->path, NULL, e) < 0)
        goto out;
    if (json_object_deep_copy(section(s, "logins"), &copy, NULL) < 0 || !copy)
        xalloc_die();
    jsonv_put(disk, "logins", copy);
    if (write_root(s->path, disk, e) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        err_prefix(e, "%s: cannot save the budget", s->path);
    json_object_put(disk);
    return rc;
}

void state_close(struct state *s)
{
    if (!s)
        return;
    if (s->lock_fd >= 0) {
        /* An empty lock file says nobody holds it; a failure here is
         * harmless, the pid is only shown to a run that waits. */
        if (ftruncate(s->lock_fd, 0) < 0)
            log_debug("%s.lock: %s", s->path, strerror(errno));
        flock(s->lock_fd, LOCK_UN);
        close(s->lock_fd);
    }
    json_object_put(s->root);
    state_trimmed_free(s->trimmed, s->n_trimmed);
    free(s->path);
    free(s->aside);
    free(s->aside_why);
    free(s);
}

/* --- seen keys --------------------------------------------------------- */

static void seen_key(char *out, size_t size, long long unixtime, const char *kind)
{
    snprintf(out, size, "%lld/%s", unixtime, kind);
}

bool state_seen(const struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    struct json_object *keys = member(section(s, "seen"), serial, json_type_object);
    seen_key(key, sizeof key, unixtime, kind);
    return keys && json_object_object_get_ex(keys, key, NULL);
}

void state_mark_seen(struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    seen_key(key, sizeof key, unixtime, kind);
    jsonv_put(child_object(section(s, "seen"), serial), key, jsonv_need(json_object_new_int(1)));
}

void state_prune_seen(struct state *s, const char *serial, long long before)
{
    struct json_object *floors = section(s, "floors");
    if (int_member(floors, serial, LLONG_MIN) < before)
        jsonv_put_int(floors, serial, before);
    struct json_object *seen = section(s, "seen");
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
    return int_member(section(s, "floors"), serial, 0);
}

size_t state_seen_count(const struct state *s, const char *serial)
{
    struct json_object *keys = member(section(s, "seen"), serial, json_type_object);
    return keys ? (size_t)json_object_object_length(keys) : 0;
}

/* --- devices ----------------------------------------------------------- */

long long state_discovered_at(const struct state *s, const char *account)
{
    return int_member(member(section(s, "accounts"), account, json_type_object), "discovered_at",
                      0);
}

static struct json_object *account_object(struct state *s, const char *account)
{
    struct json_object *accounts = section(s, "accounts");
    struct json_object *acc = member(accounts, account, json_type_object);
    if (!acc) {
        acc = jsonv_need(json_object_new_object());
        jsonv_put_int(acc, "discovered_at", 0);
        jsonv_put(acc, "devices", jsonv_need(json_object_new_array()));
        jsonv_put(acc, "history", jsonv_need(json_object_new_object()));
        jsonv_put(accounts, account, acc);
    }
    return acc;
}

void state_set_discovered(struct state *s, const char *account, long long now)
{
    jsonv_put_int(account_object(s, account), "discovered_at", now);
}

static struct json_object *device_object(const char *serial, const char *base, const char *model,
                                         const char *name, const char *group)
{
    struct json_object *d = jsonv_need(json_object_new_object());
    jsonv_put(d, "serial", jsonv_need(json_object_new_string(serial)));
    jsonv_put(d, "base", jsonv_need(json_object_new_string(base ? base : "")));
    jsonv_put(d, "model", jsonv_need(json_object_new_string(model ? model : "")));
    jsonv_put(d, "name", jsonv_need(json_object_new_string(name ? name : "")));
    jsonv_put(d, "group", jsonv_need(json_object_new_string(group ? group : "")));
    return d;
}

/* The history entry of `serial` in the account `acc`, made (all times 0)
 * when absent. */
static struct json_object *history_entry(struct json_object *acc, const char *serial)
{
    struct json_object *hist = child_object(acc, "history");
    struct json_object *h = member(hist, serial, json_type_object);
    if (!h) {
        h = history_object(0, 0, 0, 0);
        jsonv_put(hist, serial, h);
    }
    return h;
}

/* Whether the account's device list names `serial`. */
static bool listed(const struct json_object *acc, const char *serial)
{
    struct json_object *list = member(acc, "devices", json_type_array);
    size_t n = list ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *have = str_member(json_object_array_get_idx(list, i), "serial");
        if (have && strcmp(have, serial) == 0)
            return true;
    }
    return false;
}

/* Whether an outbox item (of any account) is about `serial`. */
static bool in_outbox(const struct state *s, const char *serial)
{
    struct json_object *outbox = section(s, "outbox");
    size_t n = json_object_array_length(outbox);
    for (size_t i = 0; i < n; i++) {
        struct json_object *ev =
            member(json_object_array_get_idx(outbox, i), "event", json_type_object);
        const char *have = str_member(ev, "serial");
        if (have && strcmp(have, serial) == 0)
            return true;
    }
    return false;
}

/* Drops the history of devices that are neither listed nor in the outbox
 * and that were neither first known nor polled in the 30 days before
 * `now`. Such a device that comes back is new again (first_known = now). */
static void prune_history(struct state *s, struct json_object *acc, long long now)
{
    struct json_object *hist = member(acc, "history", json_type_object);
    if (!hist)
        return;
    size_t n = 0;
    char **drop = xcalloc((size_t)json_object_object_length(hist) + 1, sizeof *drop);
    struct json_object_iterator it = json_object_iter_begin(hist);
    struct json_object_iterator end = json_object_iter_end(hist);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *serial = json_object_iter_peek_name(&it);
        struct json_object *h = json_object_iter_peek_value(&it);
        long long latest = int_member(h, "first_known", 0);
        long long poll = int_member(h, "last_poll", 0);
        long long ok = int_member(h, "last_ok", 0);
        if (poll > latest)
            latest = poll;
        if (ok > latest)
            latest = ok;
        if (latest < now - HISTORY_KEEP && !listed(acc, serial) && !in_outbox(s, serial))
            drop[n++] = xstrdup(serial);
    }
    for (size_t i = 0; i < n; i++) {
        json_object_object_del(hist, drop[i]);
        free(drop[i]);
    }
    free(drop);
}

/* A new device takes its poll times and refused_until from the caller (a
 * device list from elsewhere may know them); a known one keeps the
 * history's, whatever the caller says. */
void state_set_devices(struct state *s, const char *account, const struct state_device *devs,
                       size_t n, long long now)
{
    struct json_object *acc = account_object(s, account);
    struct json_object *hist = child_object(acc, "history");
    struct json_object *list = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < n; i++) {
        const struct state_device *d = &devs[i];
        if (!d->serial)
            continue;
        jsonv_append(list, device_object(d->serial, d->base, d->model, d->name, d->group));
        struct json_object *h = member(hist, d->serial, json_type_object);
        if (!h)
            jsonv_put(hist, d->serial,
                      history_object(now, d->last_poll, d->last_ok, d->refused_until));
        else if (int_member(h, "first_known", 0) == 0)
            jsonv_put_int(h, "first_known", now);
    }
    jsonv_put(acc, "devices", list);
    prune_history(s, acc, now);
}

struct state_device *state_devices(const struct state *s, const char *account, size_t *n)
{
    struct json_object *acc = member(section(s, "accounts"), account, json_type_object);
    struct json_object *list = member(acc, "devices", json_type_array);
    struct json_object *hist = member(acc, "history", json_type_object);
    size_t len = list ? json_object_array_length(list) : 0;
    struct state_device *out = NULL;
    *n = 0;
    if (len == 0)
        return NULL;
    out = xcalloc(len, sizeof *out);
    for (size_t i = 0; i < len; i++) {
        struct json_object *d = json_object_array_get_idx(list, i);
        const char *serial = str_member(d, "serial");
        const char *base = str_member(d, "base");
        const char *model = str_member(d, "model");
        const char *name = str_member(d, "name");
        const char *group = str_member(d, "group");
        if (!serial)
            continue;
        struct json_object *h = member(hist, serial, json_type_object);
        struct state_device *o = &out[(*n)++];
        o->serial = xstrdup(serial);
        o->base = xstrdup(base ? base : "");
        o->model = xstrdup(model ? model : "");
        o->name = xstrdup(name ? name : "");
        o->group = xstrdup(group ? group : "");
        o->first_known = int_member(h, "first_known", 0);
        o->last_poll = int_member(h, "last_poll", 0);
        o->last_ok = int_member(h, "last_ok", 0);
        o->refused_until = int_member(h, "refused_until", 0);
        o->refusals = (long)int_member(h, "refusals", 0);
    }
    return out;
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
    struct json_object *acc = account_object(s, account);
    struct json_object *list = child_array(acc, "devices");
    size_t n = json_object_array_length(list);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++) {
        struct json_object *d = json_object_array_get_idx(list, i);
        const char *have = str_member(d, "serial");
        if (have && strcmp(have, serial) == 0) {
            found = true;
            if (base)
                jsonv_put(d, "base", jsonv_need(json_object_new_string(base)));
        }
    }
    if (!found)
        jsonv_append(list, device_object(serial, base, "", "", ""));
    struct json_object *h = history_entry(acc, serial);
    if (int_member(h, "first_known", 0) == 0)
        jsonv_put_int(h, "first_known", now);
    jsonv_put_int(h, "last_poll", now);
    if (ok) {
        jsonv_put_int(h, "last_ok", now);
        json_object_object_del(h, "refusals");
    }
}

void state_device_refused(struct state *s, const char *account, const char *serial, long long until,
                          long refusals)
{
    struct json_object *h = history_entry(account_object(s, account), serial);
    jsonv_put_int(h, "refused_until", until);
    if (refusals > 0)
        jsonv_put_int(h, "refusals", refusals);
    else
        json_object_object_del(h, "refusals");
}

/* --- budget ledger ----------------------------------------------------- */

/* The ledger object of `login` and `op`; NULL when absent (or, with
 * `create`, made). */
static struct json_object *ledger(const struct state *s, const char *login, enum platform_op op,
                                  bool create)
{
    const char *name = op_name(op);
    struct json_object *logins = section(s, "logins");
    if (!name)
        return NULL;
    if (!create)
        return member(member(logins, login, json_type_object), name, json_type_object);
    return child_object(child_object(logins, login), name);
}

void state_record_call(struct state *s, const char *login, enum platform_op op, long long now)
{
    struct json_object *led = ledger(s, login, op, true);
    if (!led)
        return;
    struct json_object *old = member(led, "calls", json_type_array);
    struct json_object *calls = jsonv_need(json_object_new_array());
    size_t n = old ? json_object_array_length(old) : 0;
    for (size_t i = 0; i < n; i++) {
        long long t = (long long)json_object_get_int64(json_object_array_get_idx(old, i));
        if (t >= now - LEDGER_KEEP)
            jsonv_append(calls, jsonv_need(json_object_new_int64((int64_t)t)));
    }
    jsonv_append(calls, jsonv_need(json_object_new_int64((int64_t)now)));
    jsonv_put(led, "calls", calls);
}

size_t state_calls_since(const struct state *s, const char *login, enum platform_op op,
                         long long since)
{
    struct json_object *calls = member(ledger(s, login, op, false), "calls", json_type_array);
    size_t n = calls ? json_object_array_length(calls) : 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if ((long long)json_object_get_int64(json_object_array_get_idx(calls, i)) >= since)
            count++;
    return count;
}

long long state_last_call(const struct state *s, const char *login, enum platform_op op)
{
    struct json_object *calls = member(ledger(s, login, op, false), "calls", json_type_array);
    size_t n = calls ? json_object_array_length(calls) : 0;
    long long last = 0;
    for (size_t i = 0; i < n; i++) {
        long long t = (long long)json_object_get_int64(json_object_array_get_idx(calls, i));
        if (t > last)
            last = t;
    }
    return last;
}

long long state_oldest_call_since(const struct state *s, const char *login, enum platform_op op,
                                  long long since)
{
    struct json_object *calls = member(ledger(s, login, op, false), "calls", json_type_array);
    size_t n = calls ? json_object_array_length(calls) : 0;
    long long oldest = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        long long t = (long long)json_object_get_int64(json_object_array_get_idx(calls, i));
        if (t >= since && (!any || t < oldest)) {
            oldest = t;
            any = true;
        }
    }
    return oldest;
}

void state_block(struct state *s, const char *login, enum platform_op op, long long until)
{
    struct json_object *led = ledger(s, login, op, true);
    if (led)
        jsonv_put_int(led, "blocked_until", until);
}

long long state_blocked_until(const struct state *s, const char *login, enum platform_op op)
{
    return int_member(ledger(s, login, op, false), "blocked_until", 0);
}

void state_set_ratelimit(struct state *s, const char *login, enum platform_op op,
                         const struct ratelimit *rl, long long now)
{
    struct json_object *led = ledger(s, login, op, true);
    if (!led || !rl->present)
        return;
    struct json_object *o = jsonv_need(json_object_new_object());
    jsonv_put_int(o, "limit", rl->limit);
    jsonv_put_int(o, "remaining", rl->remaining);
    jsonv_put_int(o, "reset", rl->reset);
    jsonv_put_int(o, "at", now);
    jsonv_put(led, "ratelimit", o);
}

bool state_ratelimit(const struct state *s, const char *login, enum platform_op op,
                     struct ratelimit *out, long long *at)
{
    struct json_object *rl = member(ledger(s, login, op, false), "ratelimit", json_type_object);
    memset(out, 0, sizeof *out);
    if (at)
        *at = 0;
    if (!rl)
        return false;
    out->present = true;
    out->limit = (long)int_member(rl, "limit", 0);
    out->remaining = (long)int_member(rl, "remaining", 0);
    out->reset = (long)int_member(rl, "reset", 0);
    if (at)
        *at = int_member(rl, "at", 0);
    return true;
}

/* --- a clock that jumped ----------------------------------------------- */

/* Lowers the integer member `key` of `obj` to `max` when it is above. */
static void clamp_member(struct json_object *obj, const char *key, long long max)
{
    struct json_object *v = member(obj, key, json_type_int);
    if (v && (long long)json_object_get_int64(v) > max)
        jsonv_put_int(obj, key, max);
}

static void clamp_ledgers(struct state *s, long long now, long long max_block)
{
    struct json_object *logins = section(s, "logins");
    struct json_object_iterator it = json_object_iter_begin(logins);
    struct json_object_iterator end = json_object_iter_end(logins);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *login = json_object_iter_peek_value(&it);
        for (int op = 0; op < PLATFORM_N_OPS; op++) {
            struct json_object *led = member(login, op_name(op), json_type_object);
            struct json_object *calls = member(led, "calls", json_type_array);
            size_t n = calls ? json_object_array_length(calls) : 0;
            for (size_t i = 0; i < n; i++) {
                struct json_object *c = json_object_array_get_idx(calls, i);
                if ((long long)json_object_get_int64(c) > now &&
                    !json_object_set_int64(c, (int64_t)now))
                    xalloc_die(); /* not reached: check_logins made it an integer */
            }
            clamp_member(led, "blocked_until", now + max_block);
            clamp_member(member(led, "ratelimit", json_type_object), "at", now);
        }
        struct json_object *health = member(login, "health", json_type_object);
        clamp_member(health, "last_ok", now);
        clamp_member(health, "error_at", now);
    }
}

static void clamp_accounts(struct state *s, long long now)
{
    struct json_object *accounts = section(s, "accounts");
    struct json_object_iterator it = json_object_iter_begin(accounts);
    struct json_object_iterator end = json_object_iter_end(accounts);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *acc = json_object_iter_peek_value(&it);
        clamp_member(acc, "discovered_at", now);
        struct json_object *hist = member(acc, "history", json_type_object);
        if (!hist)
            continue;
        struct json_object_iterator hit = json_object_iter_begin(hist);
        struct json_object_iterator hend = json_object_iter_end(hist);
        for (; !json_object_iter_equal(&hit, &hend); json_object_iter_next(&hit)) {
            struct json_object *h = json_object_iter_peek_value(&hit);
            clamp_member(h, "first_known", now);
            clamp_member(h, "last_poll", now);
            clamp_member(h, "last_ok", now);
            clamp_member(h, "refused_until", now + CLAMP_REFUSED);
        }
    }
}

static void clamp_watches(struct state *s, long long now)
{
    struct json_object *watch = section(s, "watch");
    struct json_object_iterator it = json_object_iter_begin(watch);
    struct json_object_iterator end = json_object_iter_end(watch);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *w = json_object_iter_peek_value(&it);
        clamp_member(w, "seen", now);
        clamp_member(w, "pending_since", now);
        clamp_member(w, "pending_at", now);
        clamp_member(w, "recheck_at", now + 3600);
    }
    struct json_object *signals = section(s, "signals");
    it = json_object_iter_begin(signals);
    end = json_object_iter_end(signals);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        clamp_member(json_object_iter_peek_value(&it), "starved_since", now);
}

void state_clamp_clock(struct state *s, long long now, long max_block)
{
    clamp_ledgers(s, now, max_block > 0 ? max_block : 0);
    clamp_accounts(s, now);
    clamp_watches(s, now);
    struct json_object *throttles = section(s, "throttles");
    size_t len = json_object_array_length(throttles);
    for (size_t i = 0; i < len; i++) {
        struct json_object *t = json_object_array_get_idx(throttles, i);
        clamp_member(t, "last_sent", now);
        clamp_member(t, "held_since", now);
    }
    struct json_object *outbox = section(s, "outbox");
    size_t n = json_object_array_length(outbox);
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        clamp_member(item, "queued_at", now);
        clamp_member(item, "next_try", now + CLAMP_NEXT_TRY);
    }
    struct json_object *receivers = section(s, "receivers");
    struct json_object_iterator it = json_object_iter_begin(receivers);
    struct json_object_iterator end = json_object_iter_end(receivers);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        clamp_member(json_object_iter_peek_value(&it), "last_ok", now);
        clamp_member(json_object_iter_peek_value(&it), "error_at", now);
    }
    struct json_object *self = section(s, "self");
    clamp_member(self, "last_relay", now);
    struct json_object *conds = member(self, "conditions", json_type_object);
    if (conds) {
        it = json_object_iter_begin(conds);
        end = json_object_iter_end(conds);
        for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
            clamp_member(json_object_iter_peek_value(&it), "since", now);
            clamp_member(json_object_iter_peek_value(&it), "opened", now);
            clamp_member(json_object_iter_peek_value(&it), "retry_at", now + 3600);
        }
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
    jsonv_append(section(s, "outbox"), item);
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
    struct json_object *outbox = section(s, "outbox");
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
    struct json_object *outbox = section(s, "outbox");
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
    struct json_object *outbox = section(s, "outbox");
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **state_outbox_receivers(const struct state *s, size_t *n)
{
    struct json_object *outbox = section(s, "outbox");
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
        qsort(out, *n, sizeof *out, cmp_str);
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
    struct json_object *outbox = section(s, "outbox");
    long i = find_item(outbox, id);
    if (i >= 0)
        json_object_array_del_idx(outbox, (size_t)i, 1);
}

void state_outbox_not_before(struct state *s, unsigned long long id, long long until)
{
    struct json_object *outbox = section(s, "outbox");
    long i = find_item(outbox, id);
    if (i < 0)
        return;
    struct json_object *item = json_object_array_get_idx(outbox, (size_t)i);
    if (int_member(item, "next_try", 0) < until)
        jsonv_put_int(item, "next_try", until);
}

void state_outbox_failed(struct state *s, unsigned long long id, const char *error, long long now)
{
    struct json_object *outbox = section(s, "outbox");
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
    jsonv_put(item, "last_error", error ? jsonv_need(json_object_new_string(error)) : NULL);
    jsonv_put_int(item, "next_try", now + delay);
}

/* --- throttles ---------------------------------------------------------- */

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
    struct json_object *throttles = section(s, "throttles");
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
    struct json_object *throttles = section(s, "throttles");
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
    struct json_object *throttles = section(s, "throttles");
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
    jsonv_put(s->root, "throttles", kept); /* still sorted: the order is kept */
    return dropped;
}

/* --- health of logins and receivers ------------------------------------ */

/* The length of the valid UTF-8 sequence at `p` (at most `n` bytes
 * available), or 0 when there is none: overlong forms, surrogates and
 * code points above U+10FFFF are not valid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned min;
    unsigned cp;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xE0) == 0xC0)
        len = 2, min = 0x80, cp = p[0] & 0x1Fu;
    else if ((p[0] & 0xF0) == 0xE0)
        len = 3, min = 0x800, cp = p[0] & 0x0Fu;
    else if ((p[0] & 0xF8) == 0xF0)
        len = 4, min = 0x10000, cp = p[0] & 0x07u;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* `text` fit for the state and for one line of `wsrelay status`: at most
 * `max` bytes, never cutting a character; control characters become
 * spaces and bytes that are not UTF-8 '?' (the file must stay valid UTF-8,
 * and an error message may have been cut anywhere). */
static struct json_object *fit_text(const char *text, size_t max)
{
    struct buf b;
    const unsigned char *p = (const unsigned char *)text;
    size_t n = strlen(text);
    buf_init(&b, 0);
    while (n > 0) {
        size_t len = utf8_seq(p, n);
        const char *piece = (const char *)p;
        if (len == 0) {
            piece = "?";
            len = 1;
        } else if (p[0] < 0x20 || p[0] == 0x7f) {
            piece = " ";
        }
        if (b.len + len > max)
            break;
        buf_append(&b, piece, len);
        p += len;
        n -= len;
    }
    struct json_object *v = jsonv_need(json_object_new_string_len(buf_str(&b), (int)b.len));
    buf_free(&b);
    return v;
}

/* Records one attempt in the health object `h`. */
static void health_record(struct json_object *h, bool ok, long status, const char *error,
                          long long now)
{
    if (ok) {
        jsonv_put_int(h, "last_ok", now);
        jsonv_put_int(h, "failures", 0);
        return;
    }
    long long failures = int_member(h, "failures", 0);
    jsonv_put_int(h, "failures", failures < LONG_MAX ? failures + 1 : failures);
    jsonv_put_int(h, "error_at", now);
    jsonv_put_int(h, "status", status > 0 ? status : 0);
    jsonv_put(h, "error", fit_text(error ? error : "", HEALTH_ERROR_MAX));
}

static bool health_get(const struct json_object *h, struct state_health *out)
{
    memset(out, 0, sizeof *out);
    if (!h)
        return false;
    out->last_ok = int_member(h, "last_ok", 0);
    out->failures = (long)int_member(h, "failures", 0); /* check_health bounded it */
    out->error_at = int_member(h, "error_at", 0);
    out->status = (long)int_member(h, "status", 0);
    out->error = xstrdup_or_null(str_member(h, "error"));
    return true;
}

void state_login_result(struct state *s, const char *login, bool ok, long status,
                        const char *message, long long now)
{
    struct json_object *health = child_object(child_object(section(s, "logins"), login), "health");
    health_record(health, ok, status, message, now);
}

bool state_login_health(const struct state *s, const char *login, struct state_health *out)
{
    struct json_object *l = member(section(s, "logins"), login, json_type_object);
    return health_get(member(l, "health", json_type_object), out);
}

void state_receiver_result(struct state *s, const char *receiver, bool ok, const char *error,
                           long long now)
{
    health_record(child_object(section(s, "receivers"), receiver), ok, 0, error, now);
}

bool state_receiver_health(const struct state *s, const char *receiver, struct state_health *out)
{
    return health_get(member(section(s, "receivers"), receiver, json_type_object), out);
}

void state_health_clear(struct state_health *h)
{
    if (!h)
        return;
    free(h->error);
    memset(h, 0, sizeof *h);
}

/* --- counters ----------------------------------------------------------- */

void state_count(struct state *s, const char *name, long long n)
{
    long long v = int_member(section(s, "counters"), name, 0);
    if (n > 0 && v > LLONG_MAX - n)
        v = LLONG_MAX;
    else if (n < 0 && v < LLONG_MIN - n)
        v = LLONG_MIN;
    else
        v += n;
    jsonv_put_int(section(s, "counters"), name, v);
}

long long state_counter(const struct state *s, const char *name)
{
    return int_member(section(s, "counters"), name, 0);
}

void state_set_counter(struct state *s, const char *name, long long value)
{
    jsonv_put_int(section(s, "counters"), name, value);
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **state_counter_names(const struct state *s, size_t *n)
{
    struct json_object *counters = section(s, "counters");
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

/* --- self-monitoring ------------------------------------------------------ */

static struct json_object *conditions(const struct state *s)
{
    return child_object(section(s, "self"), "conditions");
}

bool state_condition(const struct state *s, const char *key, struct state_condition *out)
{
    memset(out, 0, sizeof *out);
    struct json_object *c = member(member(section(s, "self"), "conditions", json_type_object), key,
                                   json_type_object);
    if (!c)
        return false;
    out->since = int_member(c, "since", 0);
    out->opened = int_member(c, "opened", 0);
    out->retry_at = int_member(c, "retry_at", 0);
    out->creds = xstrdup_or_null(str_member(c, "creds"));
    return true;
}

void state_set_condition(struct state *s, const char *key, const struct state_condition *c)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    jsonv_put_int(o, "since", c->since);
    jsonv_put_int(o, "opened", c->opened);
    if (c->retry_at)
        jsonv_put_int(o, "retry_at", c->retry_at);
    if (c->creds)
        jsonv_put(o, "creds", jsonv_need(json_object_new_string(c->creds)));
    jsonv_put(conditions(s), key, o);
}

void state_drop_condition(struct state *s, const char *key)
{
    json_object_object_del(conditions(s), key);
}

char **state_condition_keys(const struct state *s, size_t *n)
{
    struct json_object *conds = member(section(s, "self"), "conditions", json_type_object);
    *n = 0;
    if (!conds || json_object_object_length(conds) == 0)
        return NULL;
    char **keys = xcalloc((size_t)json_object_object_length(conds), sizeof *keys);
    struct json_object_iterator it = json_object_iter_begin(conds);
    struct json_object_iterator end = json_object_iter_end(conds);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        keys[(*n)++] = xstrdup(json_object_iter_peek_name(&it));
    qsort(keys, *n, sizeof *keys, by_string);
    return keys;
}

void state_condition_clear(struct state_condition *c)
{
    if (!c)
        return;
    free(c->creds);
    memset(c, 0, sizeof *c);
}

long long state_relay_time(struct state *s, long long now)
{
    struct json_object *self = section(s, "self");
    long long last = int_member(self, "last_relay", 0);
    long long t = now > last ? now : last + 1;
    jsonv_put_int(self, "last_relay", t);
    return t;
}

void state_heartbeat_result(struct state *s, bool ok, long status, const char *error,
                            long long now)
{
    health_record(child_object(section(s, "self"), "heartbeat"), ok, status, error, now);
}

bool state_heartbeat(const struct state *s, struct state_health *out)
{
    return health_get(member(section(s, "self"), "heartbeat", json_type_object), out);
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
    struct json_object *outbox = section(s, "outbox");
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
        jsonv_put(s->root, "outbox", kept);
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

/* --- readings (watch.h) ------------------------------------------------- */

/* A number as the state writes it: at most 10 significant digits, so that
 * -79.8 stays "-79.8" in the file. */
static struct json_object *number_object(double d)
{
    char text[32];
    if (!isfinite(d)) /* not reached: readings are parsed finite; JSON has no inf */
        d = 0;
    snprintf(text, sizeof text, "%.10g", d);
    return jsonv_need(json_object_new_double_s(d, text));
}

static double number_member(const struct json_object *obj, const char *key, double dflt)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) || !is_number(v))
        return dflt;
    return json_object_get_double(v);
}

static int small_int(const struct json_object *obj, const char *key, int lo, int hi)
{
    long long v = int_member(obj, key, 0);
    return v < lo ? lo : v > hi ? hi : (int)v;
}

static void read_watch_channel(struct watch_channel *c, const struct json_object *o)
{
    struct json_object *v = NULL;
    memset(c, 0, sizeof *c);
    c->num = small_int(o, "num", 0, 99);
    c->error = json_object_get_boolean(member(o, "error", json_type_boolean));
    c->value = number_member(o, "value", 0);
    c->step = number_member(o, "step", 0);
    struct json_object *h = member(o, "history", json_type_array);
    size_t n = h ? json_object_array_length(h) : 0;
    size_t from = n > WATCH_HISTORY ? n - WATCH_HISTORY : 0;
    for (size_t i = from; i < n; i++)
        c->history[c->n_history++] = json_object_get_double(json_object_array_get_idx(h, i));
    c->band = small_int(o, "band", -1, 1);
    c->zone = small_int(o, "zone", -1, 1);
    if (json_object_object_get_ex(o, "at_poll", &v)) {
        c->has_at_poll = true;
        c->at_poll_error = !v;
        c->at_poll = v ? json_object_get_double(v) : 0;
    }
    c->warned_at = int_member(o, "warned_at", 0);
    c->warned = small_int(o, "warned", -1, 1);
    c->back = json_object_get_boolean(member(o, "back", json_type_boolean));
}

bool state_watch(const struct state *s, const char *serial, struct watch *out)
{
    struct json_object *w = member(section(s, "watch"), serial, json_type_object);
    memset(out, 0, sizeof *out);
    if (!w)
        return false;
    out->unixtime = int_member(w, "t", 0);
    out->seen_at = int_member(w, "seen", 0);
    struct json_object *gaps = member(w, "gaps", json_type_array);
    size_t n = gaps ? json_object_array_length(gaps) : 0;
    for (size_t i = n > WATCH_GAPS ? n - WATCH_GAPS : 0; i < n; i++)
        out->gaps[out->n_gaps++] = (long)json_object_get_int64(json_object_array_get_idx(gaps, i));
    out->battery = small_int(w, "battery", 0, 99);
    out->silent = json_object_get_boolean(member(w, "silent", json_type_boolean));
    out->pending = (unsigned)small_int(w, "pending", 0, 0xffff);
    out->pending_since = int_member(w, "pending_since", 0);
    out->pending_after = int_member(w, "pending_after", 0);
    out->pending_at = int_member(w, "pending_at", 0);
    out->recheck_at = int_member(w, "recheck_at", 0);
    out->pending_told = json_object_get_boolean(member(w, "told", json_type_boolean));
    struct json_object *ch = member(w, "ch", json_type_array);
    n = ch ? json_object_array_length(ch) : 0;
    for (size_t i = 0; i < n && out->n_ch < WATCH_CHANNELS; i++)
        read_watch_channel(&out->ch[out->n_ch++], json_object_array_get_idx(ch, i));
    return true;
}

static struct json_object *watch_channel_object(const struct watch_channel *c)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    struct json_object *h = jsonv_need(json_object_new_array());
    jsonv_put_int(o, "num", c->num);
    jsonv_put(o, "error", jsonv_need(json_object_new_boolean(c->error)));
    jsonv_put(o, "value", number_object(c->value));
    jsonv_put(o, "step", number_object(c->step));
    for (int i = 0; i < c->n_history && i < WATCH_HISTORY; i++)
        jsonv_append(h, number_object(c->history[i]));
    jsonv_put(o, "history", h);
    jsonv_put_int(o, "band", c->band);
    jsonv_put_int(o, "zone", c->zone);
    if (c->has_at_poll)
        jsonv_put(o, "at_poll", c->at_poll_error ? NULL : number_object(c->at_poll));
    jsonv_put_int(o, "warned_at", c->warned_at);
    jsonv_put_int(o, "warned", c->warned);
    if (c->back)
        jsonv_put(o, "back", jsonv_need(json_object_new_boolean(true)));
    return o;
}

void state_set_watch(struct state *s, const char *serial, const struct watch *w)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    struct json_object *gaps = jsonv_need(json_object_new_array());
    struct json_object *ch = jsonv_need(json_object_new_array());
    jsonv_put_int(o, "t", w->unixtime);
    jsonv_put_int(o, "seen", w->seen_at);
    for (int i = 0; i < w->n_gaps && i < WATCH_GAPS; i++)
        jsonv_append(gaps, jsonv_need(json_object_new_int64(w->gaps[i])));
    jsonv_put(o, "gaps", gaps);
    jsonv_put_int(o, "battery", w->battery);
    jsonv_put(o, "silent", jsonv_need(json_object_new_boolean(w->silent)));
    jsonv_put_int(o, "pending", w->pending);
    jsonv_put_int(o, "pending_since", w->pending_since);
    jsonv_put_int(o, "pending_after", w->pending_after);
    jsonv_put_int(o, "pending_at", w->pending_at);
    jsonv_put_int(o, "recheck_at", w->recheck_at);
    if (w->pending_told)
        jsonv_put(o, "told", jsonv_need(json_object_new_boolean(true)));
    for (int i = 0; i < w->n_ch && i < WATCH_CHANNELS; i++)
        jsonv_append(ch, watch_channel_object(&w->ch[i]));
    jsonv_put(o, "ch", ch);
    jsonv_put(section(s, "watch"), serial, o);
}

size_t state_prune_watches(struct state *s, long long before)
{
    struct json_object *watch = section(s, "watch");
    size_t n = 0;
    char **drop = xcalloc((size_t)json_object_object_length(watch) + 1, sizeof *drop);
    struct json_object_iterator it = json_object_iter_begin(watch);
    struct json_object_iterator end = json_object_iter_end(watch);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (int_member(json_object_iter_peek_value(&it), "seen", 0) < before)
            drop[n++] = xstrdup(json_object_iter_peek_name(&it));
    for (size_t i = 0; i < n; i++) {
        json_object_object_del(watch, drop[i]);
        json_object_object_del(section(s, "limits"), drop[i]);
        free(drop[i]);
    }
    free(drop);
    return n;
}

bool state_learnt_limit(const struct state *s, const char *serial, int channel,
                        struct watch_limit *out)
{
    char key[16];
    snprintf(key, sizeof key, "%d", channel);
    struct json_object *l =
        member(member(section(s, "limits"), serial, json_type_object), key, json_type_object);
    struct json_object *v = NULL;
    memset(out, 0, sizeof *out);
    if (!l)
        return false;
    if (json_object_object_get_ex(l, "upper", &v) && is_number(v)) {
        out->has_upper = true;
        out->upper = json_object_get_double(v);
    }
    if (json_object_object_get_ex(l, "lower", &v) && is_number(v)) {
        out->has_lower = true;
        out->lower = json_object_get_double(v);
    }
    return out->has_upper || out->has_lower;
}

bool state_learn_limit(struct state *s, const char *serial, int channel, bool upper, double value)
{
    char key[16];
    struct watch_limit old;
    snprintf(key, sizeof key, "%d", channel);
    state_learnt_limit(s, serial, channel, &old);
    if (upper ? old.has_upper && old.upper == value : old.has_lower && old.lower == value)
        return false;
    struct json_object *l = child_object(child_object(section(s, "limits"), serial), key);
    jsonv_put(l, upper ? "upper" : "lower", number_object(value));
    return true;
}

void state_record_signal_call(struct state *s, const char *login, long long now)
{
    struct json_object *l = child_object(section(s, "signals"), login);
    struct json_object *old = member(l, "calls", json_type_array);
    struct json_object *calls = jsonv_need(json_object_new_array());
    size_t n = old ? json_object_array_length(old) : 0;
    for (size_t i = 0; i < n; i++) {
        long long t = (long long)json_object_get_int64(json_object_array_get_idx(old, i));
        if (t >= now - LEDGER_KEEP)
            jsonv_append(calls, jsonv_need(json_object_new_int64((int64_t)t)));
    }
    jsonv_append(calls, jsonv_need(json_object_new_int64((int64_t)now)));
    jsonv_put(l, "calls", calls);
}

size_t state_signal_calls_since(const struct state *s, const char *login, long long since)
{
    struct json_object *calls =
        member(member(section(s, "signals"), login, json_type_object), "calls", json_type_array);
    size_t n = calls ? json_object_array_length(calls) : 0, count = 0;
    for (size_t i = 0; i < n; i++)
        if ((long long)json_object_get_int64(json_object_array_get_idx(calls, i)) >= since)
            count++;
    return count;
}

long long state_signals_starved(const struct state *s, const char *login)
{
    return int_member(member(section(s, "signals"), login, json_type_object), "starved_since", 0);
}

void state_set_signals_starved(struct state *s, const char *login, long long since)
{
    jsonv_put_int(child_object(section(s, "signals"), login), "starved_since", since);
}
