/* What each device serial's current readings were lately (watch.h), in
 * the "watch" section, and the limits of its channels that alert texts
 * taught, in "limits". Both are per serial and forgotten together. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- checking a loaded document ---------------------------------------- */

static int check_number(const struct json_object *obj, const char *key, const char *where,
                        struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || is_number(v))
        return 0;
    return err_set(e, "%s.%s: not a number", where, key);
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

/* One device's readings memory. */
static int check_watch(struct json_object *w, const char *where, struct err *e)
{
    static const char *const ints[] = {"t",          "seen",          "battery",
                                       "pending",    "pending_since", "pending_after",
                                       "pending_at", "recheck_at"};
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
        char cw[320];
        snprintf(cw, sizeof cw, "%s.ch[%zu]", where, i);
        if (check_watch_channel(json_object_array_get_idx(ch, i), cw, e) < 0)
            return -1;
    }
    return 0;
}

static int check_watches(struct json_object *watch, struct err *e)
{
    return check_members(watch, "watch", check_watch, e);
}

/* One channel's limits. */
static int check_limit(struct json_object *l, const char *where, struct err *e)
{
    if (check_type(l, json_type_object, where, e) < 0 || check_number(l, "upper", where, e) < 0 ||
        check_number(l, "lower", where, e) < 0)
        return -1;
    return 0;
}

/* One device's limits, by channel. */
static int check_device_limits(struct json_object *chans, const char *where, struct err *e)
{
    return check_members(chans, where, check_limit, e);
}

static int check_limits(struct json_object *limits, struct err *e)
{
    return check_members(limits, "limits", check_device_limits, e);
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_watches(struct json_object *watch, const struct state_clamp *to)
{
    long long now = to->now;
    struct json_object_iterator it = json_object_iter_begin(watch);
    struct json_object_iterator end = json_object_iter_end(watch);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *w = json_object_iter_peek_value(&it);
        clamp_member(w, "seen", now);
        clamp_member(w, "pending_since", now);
        clamp_member(w, "pending_at", now);
        clamp_member(w, "recheck_at", now + 3600);
    }
}

/* --- readings (watch.h) ------------------------------------------------ */

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
    struct json_object *w = member(section(s, &state_section_watch), serial, json_type_object);
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
    jsonv_put(section(s, &state_section_watch), serial, o);
}

size_t state_prune_watches(struct state *s, long long before)
{
    struct json_object *watch = section(s, &state_section_watch);
    size_t n = 0;
    char **drop = xcalloc((size_t)json_object_object_length(watch) + 1, sizeof *drop);
    struct json_object_iterator it = json_object_iter_begin(watch);
    struct json_object_iterator end = json_object_iter_end(watch);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (int_member(json_object_iter_peek_value(&it), "seen", 0) < before)
            drop[n++] = xstrdup(json_object_iter_peek_name(&it));
    for (size_t i = 0; i < n; i++) {
        json_object_object_del(watch, drop[i]);
        json_object_object_del(section(s, &state_section_limits), drop[i]);
        free(drop[i]);
    }
    free(drop);
    return n;
}

/* --- learnt limits ----------------------------------------------------- */

bool state_learnt_limit(const struct state *s, const char *serial, int channel,
                        struct watch_limit *out)
{
    char key[16];
    snprintf(key, sizeof key, "%d", channel);
    struct json_object *l = member(
        member(section(s, &state_section_limits), serial, json_type_object), key, json_type_object);
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
    struct json_object *l =
        child_object(child_object(section(s, &state_section_limits), serial), key);
    jsonv_put(l, upper ? "upper" : "lower", number_object(value));
    return true;
}

const struct state_section state_section_watch = {
    .name = "watch",
    .type = json_type_object,
    .check = check_watches,
    .clamp = clamp_watches,
};

const struct state_section state_section_limits = {
    .name = "limits",
    .type = json_type_object,
    .check = check_limits,
};
