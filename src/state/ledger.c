/* The budget ledger, per login ID and operation (the "logins" section):
 * the times of recent calls, the last X-RateLimit-* values, and any
 * "blocked until" time. Each login's health sits beside its ledgers
 * (health.c); this file checks and clamps it with them.
 *
 * The ledger errs towards caution, as the seen keys do: calls are recorded
 * before they are sent, and calls stamped in the future (the clock went
 * back) still count; state_clamp_clock turns them into calls made now, so
 * they still count for a full span and then expire instead of blocking
 * polling until the real clock catches up. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The name of `op` in the ledger; NULL for a value outside the enum. */
static const char *op_name(enum platform_op op)
{
    return (unsigned)op < PLATFORM_N_OPS ? platform_op_name(op) : NULL;
}

/* --- checking a loaded document ---------------------------------------- */

/* One operation's ledger of a login ID. */
static int check_ledger(struct json_object *led, const char *where, struct err *e)
{
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
        char at[360]; /* room for check_login's where and the suffix */
        snprintf(at, sizeof at, "%s.ratelimit", where);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (check_opt(rl, keys[k], json_type_int, at, e) < 0)
                return -1;
    }
    return 0;
}

/* One login ID: its health and a ledger per operation. */
static int check_login(struct json_object *login, const char *where, struct err *e)
{
    char at[340];
    if (check_type(login, json_type_object, where, e) < 0)
        return -1;
    struct json_object *health = NULL;
    if (json_object_object_get_ex(login, "health", &health)) {
        snprintf(at, sizeof at, "%s.health", where);
        if (health_check(health, at, e) < 0)
            return -1;
    }
    for (int op = 0; op < PLATFORM_N_OPS; op++) {
        struct json_object *led = NULL;
        if (!json_object_object_get_ex(login, op_name(op), &led))
            continue;
        snprintf(at, sizeof at, "%s.%s", where, op_name(op));
        if (check_ledger(led, at, e) < 0)
            return -1;
    }
    return 0;
}

static int check_logins(struct json_object *logins, struct err *e)
{
    return check_members(logins, "logins", check_login, e);
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_ledgers(struct json_object *logins, const struct state_clamp *to)
{
    long long now = to->now;
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
            clamp_member(led, "blocked_until", now + to->max_block);
            clamp_member(member(led, "ratelimit", json_type_object), "at", now);
        }
        health_clamp(member(login, "health", json_type_object), now);
    }
}

/* --- budget ledger ----------------------------------------------------- */

/* The ledger object of `login` and `op`; NULL when absent (or, with
 * `create`, made). */
static struct json_object *ledger(const struct state *s, const char *login, enum platform_op op,
                                  bool create)
{
    const char *name = op_name(op);
    struct json_object *logins = section(s, &state_section_logins);
    if (!name)
        return NULL;
    if (!create)
        return member(member(logins, login, json_type_object), name, json_type_object);
    return child_object(child_object(logins, login), name);
}

void calls_record(struct json_object *obj, long long now)
{
    struct json_object *old = member(obj, "calls", json_type_array);
    struct json_object *calls = jsonv_need(json_object_new_array());
    size_t n = old ? json_object_array_length(old) : 0;
    for (size_t i = 0; i < n; i++) {
        long long t = (long long)json_object_get_int64(json_object_array_get_idx(old, i));
        if (t >= now - LEDGER_KEEP)
            jsonv_append(calls, jsonv_need(json_object_new_int64((int64_t)t)));
    }
    jsonv_append(calls, jsonv_need(json_object_new_int64((int64_t)now)));
    jsonv_put(obj, "calls", calls);
}

size_t calls_since(const struct json_object *obj, long long since)
{
    struct json_object *calls = member(obj, "calls", json_type_array);
    size_t n = calls ? json_object_array_length(calls) : 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if ((long long)json_object_get_int64(json_object_array_get_idx(calls, i)) >= since)
            count++;
    return count;
}

void state_record_call(struct state *s, const char *login, enum platform_op op, long long now)
{
    struct json_object *led = ledger(s, login, op, true);
    if (led)
        calls_record(led, now);
}

size_t state_calls_since(const struct state *s, const char *login, enum platform_op op,
                         long long since)
{
    return calls_since(ledger(s, login, op, false), since);
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

const struct state_section state_section_logins = {
    .name = "logins",
    .type = json_type_object,
    .check = check_logins,
    .clamp = clamp_ledgers,
};
