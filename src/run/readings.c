/* Current readings (readings.h): a login's Get Current Readings reply
 * replaces its accounts' device lists and goes into each device's
 * readings memory (readings_memory.h), where a change raises a signal for its alert
 * log and a crossing of a known limit an early warning, routed like any
 * event (intake.h). */
#include "run/readings.h"
#include "run/intake.h"
#include "budget.h"
#include "devicelist.h"
#include "likely.h"
#include "metrics.h"
#include "readings_memory.h"
#include "state.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READINGS_GAP 50 /* least seconds between two readings of a login (one a minute) */

/* Replaces the account's device list with the platform's, except that an
 * empty list never replaces a known one: a reply that lost the devices
 * must not stop the polling. */
static void take_devices(struct tick *t, const struct account_conf *a,
                         const struct device_info *infos, size_t n)
{
    size_t known = state_device_count(t->st, a->name);
    if (n == 0 && known > 0) {
        log_warn("account %s: the platform listed no devices; keeping the %zu known", a->name,
                 known);
        return;
    }
    struct state_device *devs = xcalloc(n ? n : 1, sizeof *devs);
    for (size_t i = 0; i < n; i++) {
        devs[i].serial = infos[i].serial;
        devs[i].base = infos[i].base_serial;
        devs[i].model = infos[i].model;
        devs[i].name = infos[i].name;
        devs[i].group = infos[i].group_name;
    }
    state_set_devices(t->st, a->name, devs, n, t->opt->now);
    free(devs);
    if (n < known)
        log_warn("account %s: %zu device%s no longer listed by the platform", a->name, known - n,
                 known - n == 1 ? "" : "s");
    if (n != known)
        log_info("account %s: %zu device%s found", a->name, n, n == 1 ? "" : "s");
}

/* Whether the account's device list is due: without signals, every
 * DISCOVERY_INTERVAL. */
static bool discovery_due(const struct tick *t, const struct account_conf *a)
{
    long long at = state_discovered_at(t->st, a->name);
    return a->devices_auto && (at == 0 || t->opt->now - at >= DISCOVERY_INTERVAL);
}

/* True when `login` is to call Get Current Readings now: every run (at
 * most one a minute) when one of its accounts watches readings, else when
 * one of its accounts' device list is due; and the budget of the
 * operation allows the call. */
bool readings_now(const struct tick *t, const char *login)
{
    bool due = false;
    for (size_t i = 0; i < t->cfg->n_accounts && !due; i++) {
        const struct account_conf *a = &t->cfg->accounts[i];
        if (strcmp(a->login_id, login) == 0)
            due = discovery_due(t, a) ||
                  (a->signals &&
                   t->opt->now - state_last_call(t->st, login, PLATFORM_CURRENT) >= READINGS_GAP);
    }
    if (!due)
        return false;
    struct sched_budget b = budget_read(t->st, login, PLATFORM_CURRENT, t->opt->now);
    if (b.used >= (size_t)b.limit || t->opt->now < b.blocked_until) {
        log_info("login %s: current readings wait for their budget", login);
        return false;
    }
    return true;
}

/* A number as readings and limits are shown: the shortest form that
 * reads back the same, with the unit after it. */
static char *shown(double v, const char *unit)
{
    char num[32];
    snprintf(num, sizeof num, "%.10g", v);
    return xasprintf("%s%s", num, unit ? unit : "");
}

/* An early warning: the reading of channel c->num crossed a known limit
 * (or came back inside). It goes through the rules like any event (kind
 * "reading"); the platform's alert log is still read and delivered.
 * Returns whether it goes to someone now. */
static bool send_early_warning(struct tick *t, const struct account_conf *a,
                               const struct device_info *d, const struct watch_crossing *c,
                               const struct watch_channel *wc)
{
    const struct channel_info *ci = NULL;
    for (size_t i = 0; i < d->n_channels; i++)
        if (d->channels[i].num == c->num)
            ci = &d->channels[i];
    const char *unit = ci ? ci->unit : "";
    const char *side = c->zone > 0 || (c->zone == 0 && c->from > 0) ? "upper" : "lower";
    char tag[64];
    if (ci && *ci->name)
        snprintf(tag, sizeof tag, "CH%d %.40s", c->num, ci->name);
    else
        snprintf(tag, sizeof tag, "CH%d", c->num);
    struct event ev = {
        .account = xstrdup(a->name),
        .serial = xstrdup(d->serial),
        .model = xstrdup(d->model),
        .name = xstrdup(d->name),
        .base_serial = xstrdup(d->base_serial),
        .base_model = xstrdup(d->base_model),
        .base_name = xstrdup(d->base_name),
        .unixtime = d->unixtime,
        .kind = xstrdup("reading"),
        .state = xstrdup(c->zone ? "alarm" : "recovered"),
        .value = ci && *ci->value ? xasprintf("%s%s", ci->value, unit) : shown(c->value, unit),
        .limit = shown(c->limit, unit),
        .recovers = c->zone ? 0 : wc->warned_at,
        .channel = c->num,
        .channel_name = ci ? xstrdup(ci->name) : NULL,
        .channel_unit = ci ? xstrdup(ci->unit) : NULL,
        .utc_offset = d->utc_offset,
    };
    if (c->zone)
        ev.text = xasprintf("%s %s is %s the %s limit %s in the current readings; the "
                            "platform's alarm should follow in its alert log.",
                            tag, ev.value, c->zone > 0 ? "above" : "below", side, ev.limit);
    else
        ev.text = xasprintf("%s %s is back within the %s limit %s in the current readings; "
                            "the platform's recovery should follow in its alert log.",
                            tag, ev.value, side, ev.limit);
    struct pooled pd = {.a = a,
                        .dev = {.serial = d->serial,
                                .base = d->base_serial,
                                .model = d->model,
                                .name = d->name,
                                .group = d->group_name}};
    log_info("account %s, device %s: early warning: %s", a->name, d->serial, ev.text);
    state_count(t->st, METRICS_EVENTS_EARLY, 1);
    bool sent = route_event(t, &pd, &ev);
    event_clear(&ev);
    return sent;
}

/* Whether a channel of `now` raised the way back inside its bare limit
 * (readings_memory.h: `back`) since `was`. */
static bool came_back(const struct watch *was, const struct watch *now)
{
    for (int i = 0; i < now->n_ch; i++) {
        if (!now->ch[i].back)
            continue;
        bool before = false;
        for (int k = 0; k < was->n_ch; k++)
            if (was->ch[k].num == now->ch[i].num)
                before = was->ch[k].back;
        if (!before)
            return true;
    }
    return false;
}

static const struct account_conf *account_for(const struct tick *t, const char *login,
                                              const char *serial);

/* The devices of one readings reply and, once a channel without a known
 * limit asks, the limits known of them (likely.h). */
struct fleet {
    const char *login;
    const struct device_info *infos;
    size_t n;
    bool built;
    struct likely_row *rows;
    size_t n_rows, cap;
};

static void fleet_build(const struct tick *t, struct fleet *f)
{
    f->built = true;
    for (size_t i = 0; i < f->n; i++) {
        const struct device_info *d = &f->infos[i];
        const struct account_conf *a = account_for(t, f->login, d->serial);
        struct watch_limit lim[WATCH_CHANNELS] = {{0}};
        if (!a)
            continue;
        limits_of(t, a, d->serial, lim);
        for (size_t c = 0; c < d->n_channels; c++) {
            int num = d->channels[c].num;
            double v;
            if (num < 1 || num > WATCH_CHANNELS ||
                !(lim[num - 1].has_upper || lim[num - 1].has_lower) ||
                !watch_parse_value(d->channels[c].value, &v, NULL))
                continue;
            if (f->n_rows == f->cap)
                f->rows =
                    xreallocarray(f->rows, f->cap = f->cap ? 2 * f->cap : 16, sizeof *f->rows);
            f->rows[f->n_rows++] =
                (struct likely_row){.unit = d->channels[c].unit, .level = v, .l = lim[num - 1]};
        }
    }
}

/* The platform's unit of channel `num` of `d`; "" when not given. */
static const char *unit_of(const struct device_info *d, int num)
{
    for (size_t c = 0; c < d->n_channels; c++)
        if (d->channels[c].num == num)
            return d->channels[c].unit;
    return "";
}

/* WATCH_LIKELY when a channel of `now` whose limits are not both known
 * crossed, either way, a limit that the fleet's known ones make likely
 * (likely.h) since its value in `was`; 0 otherwise. */
static unsigned likely_signal(const struct tick *t, struct fleet *f, const struct device_info *d,
                              const struct watch *was, const struct watch *now,
                              const struct watch_limit *limits)
{
    for (int i = 0; i < now->n_ch; i++) {
        const struct watch_channel *c = &now->ch[i], *p = NULL;
        if (c->num < 1 || c->num > WATCH_CHANNELS || c->error || c->step == 0)
            continue;
        const struct watch_limit *known = &limits[c->num - 1];
        for (int k = 0; k < was->n_ch && !p; k++)
            if (was->ch[k].num == c->num)
                p = &was->ch[k];
        if ((known->has_upper && known->has_lower) || !p || p->error || p->step == 0 ||
            p->value == c->value)
            continue;
        if (!f->built)
            fleet_build(t, f);
        struct watch_limit likely;
        if (likely_limits(f->rows, f->n_rows, unit_of(d, c->num), watch_level(c), known, &likely) &&
            likely_crossed(&likely, p->value, c->value))
            return WATCH_LIKELY;
    }
    return 0;
}

/* Takes one device's reading into its memory (readings_memory.h): a signal makes
 * its alert log the next to be read, a crossing an early warning. A
 * signal that is only crossings beyond a limit whose warnings went out is
 * "told": people know, and its look may wait behind signals they do not
 * know of yet (scheduler.h). A device whose reading is not newer may have
 * gone silent. */
static void watch_device(struct tick *t, const struct account_conf *a, const struct device_info *d,
                         struct fleet *f)
{
    struct watch w;
    struct watch_limit limits[WATCH_CHANNELS] = {{0}};
    struct watch_value values[PLATFORM_CHANNELS_MAX];
    struct watch_crossing cross[WATCH_CHANNELS];
    size_t n_cross = 0;
    char why[64];
    bool known = state_watch(t->st, d->serial, &w);
    long long before = w.unixtime;
    /* Only a newer reading is judged against the limits (most of a run's
     * readings at a large fleet are the ones it saw a minute ago). */
    if (d->unixtime > w.unixtime)
        limits_of(t, a, d->serial, limits);
    for (size_t i = 0; i < d->n_channels; i++)
        values[i] = (struct watch_value){.num = d->channels[i].num, .text = d->channels[i].value};
    struct watch_reading r = {.unixtime = d->unixtime,
                              .model = d->model,
                              .battery = d->battery,
                              .values = values,
                              .n_values = d->n_channels};
    struct watch was = w;
    unsigned reasons =
        watch_take(&w, &r, limits, WATCH_CHANNELS, t->opt->now, cross, WATCH_CHANNELS, &n_cross);
    if (w.unixtime == before)
        reasons |= watch_idle(&w, t->opt->now, state_silence_after(t->st, a->login_id));
    else if (known)
        reasons |= likely_signal(t, f, d, &was, &w, limits);
    /* Told: only crossings beyond a limit, each announced; not a way back
     * inside the bare limit (its warning waits for the margin). */
    bool told = reasons == WATCH_LIMIT && n_cross > 0 && !came_back(&was, &w);
    for (size_t i = 0; i < n_cross; i++) {
        struct watch_channel *wc = watch_channel(&w, cross[i].num);
        bool sent = wc && a->early_warning && send_early_warning(t, a, d, &cross[i], wc);
        told = told && sent && cross[i].zone != 0;
    }
    if (reasons) {
        /* A look once more that news nobody has asked for stays untold. */
        if (!w.pending && w.recheck_at && !w.pending_told)
            told = false;
        /* A told signal that news nobody has joins starts again, as that
         * news: its look must wait for this reading and find it explained,
         * or a look due since long would be made before the platform can
         * have logged it. (Once per signal: an untold one stays untold, so
         * a device raising reasons every minute is still looked at. Other
         * reasons that join keep the signal as it was: its look may come
         * before the platform logged the newest, which then waits for the
         * round robin.) */
        if (!w.pending || (w.pending_told && !told)) {
            w.pending_since = t->opt->now;
            w.pending_after = before;
            w.pending_at = w.unixtime < t->opt->now ? w.unixtime : t->opt->now;
            w.pending_told = told;
        }
        w.pending |= reasons;
        log_info("account %s, device %s: signal (%s): %s", a->name, d->serial,
                 watch_reason_text(why, sizeof why, reasons),
                 told ? "its warning is out; its alert log is read after the signals "
                        "not announced yet"
                      : "its alert log is read next");
    }
    /* A crossing foreseen before the next upload: a look just after it
     * finds the platform's entry an upload sooner. A signal's look may
     * come first; the foreseen one stays planned (run/intake.c). */
    long long foreseen =
        known && w.unixtime != before ? watch_foresee(&was, &w, limits, WATCH_CHANNELS) : 0;
    if (foreseen) {
        long long at = t->opt->now + (foreseen - w.unixtime) + WATCH_FORESEE_LAG;
        if (!w.recheck_at || at < w.recheck_at) {
            w.recheck_at = at;
            log_info("account %s, device %s: a limit will be crossed before its next upload: "
                     "its alert log is read just after",
                     a->name, d->serial);
        }
    }
    if (w.hint_at && !was.hint_at && !w.pending)
        log_info("account %s, device %s: an unusual reading, unlike its recent ones: the "
                 "round robin reads its alert log early",
                 a->name, d->serial);
    if (known || w.unixtime)
        state_set_watch(t->st, d->serial, &w);
}

/* The first account of `login` (in the file's order) that wants `serial`:
 * hand-listed accounts want their devices, discovering ones what their
 * include/exclude allow. */
static const struct account_conf *account_for(const struct tick *t, const char *login,
                                              const char *serial)
{
    for (size_t i = 0; i < t->cfg->n_accounts; i++) {
        const struct account_conf *a = &t->cfg->accounts[i];
        if (strcmp(a->login_id, login) != 0 || !a->signals || !account_wants_serial(a, serial))
            continue;
        if (a->devices_auto)
            return a;
        for (size_t k = 0; k < a->n_devices; k++)
            if (!strcmp(a->devices[k].serial, serial))
                return a;
    }
    return NULL;
}

/* Takes the reply of a login's Get Current Readings: the device list of
 * each of its accounts that discovers devices, and each device's reading.
 * Returns false when the login's credentials were refused. */
bool take_readings(struct tick *t, const char *login, const struct account_conf *first,
                   const struct platform_request *rq)
{
    const struct platform_reply *r = &rq->reply;
    struct device_info *infos = NULL;
    size_t n = 0;
    struct err e;
    char *what = xasprintf("login %s, current readings", login);
    metrics_count_call(t->st, login, PLATFORM_CURRENT, rq->rc == 0, r->http_status);
    if (rq->rc < 0) {
        log_error("login %s: current readings: %s%s", login, r->message, hint_for(r->http_status));
        t->failures++;
        char *why = xasprintf("%s%s", r->message, hint_for(r->http_status));
        note_result(t, login, r->http_status, what, why);
        free(why);
    } else if (devicelist_parse(&infos, &n, r->text, r->text_len, first->name, &e) < 0) {
        log_error("login %s: current readings: %s", login, e.msg);
        t->failures++;
        note_result(t, login, r->http_status, what, e.msg);
    } else {
        for (size_t i = 0; i < t->cfg->n_accounts; i++) {
            const struct account_conf *a = &t->cfg->accounts[i];
            if (strcmp(a->login_id, login) != 0 || !a->devices_auto)
                continue;
            take_devices(t, a, infos, n);
            state_set_discovered(t->st, a->name, t->opt->now);
        }
        struct fleet f = {.login = login, .infos = infos, .n = n};
        for (size_t i = 0; i < n; i++) {
            const struct account_conf *a = account_for(t, login, infos[i].serial);
            if (a)
                watch_device(t, a, &infos[i], &f);
        }
        free(f.rows);
        note_result(t, login, r->http_status, what, NULL);
    }
    free(what);
    note_reply(t, login, PLATFORM_CURRENT, r);
    device_info_free(infos, n);
    return r->http_status != 401;
}
