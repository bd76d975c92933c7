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
 * the file. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_KEEP (30LL * 86400) /* an unlisted, untouched device's history */
#define CLAMP_REFUSED 86400         /* furthest refused_until from now after a clock jump */

/* A history entry with these times and no refusal in a row. */
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

/* --- checking a loaded document ---------------------------------------- */

static const char *const history_times[] = {"first_known", "last_poll", "last_ok", "refused_until",
                                            "refusals"};

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

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_accounts(struct json_object *accounts, const struct state_clamp *to)
{
    long long now = to->now;
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

/* --- devices ----------------------------------------------------------- */

long long state_discovered_at(const struct state *s, const char *account)
{
    return int_member(member(section(s, &state_section_accounts), account, json_type_object),
                      "discovered_at", 0);
}

static struct json_object *account_object(struct state *s, const char *account)
{
    struct json_object *accounts = section(s, &state_section_accounts);
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
    struct json_object *outbox = section(s, &state_section_outbox);
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
    struct json_object *acc =
        member(section(s, &state_section_accounts), account, json_type_object);
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

const struct state_section state_section_accounts = {
    .name = "accounts",
    .type = json_type_object,
    .check = check_accounts,
    .clamp = clamp_accounts,
};
