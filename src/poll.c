/* Polling, the first half of a tick (tick.h): the platform calls of every
 * login ID, made in parallel, and what their replies change: device lists,
 * each device's readings memory and its early warnings, and the alert logs'
 * new entries, routed by the rules into the outbox.
 *
 * The alert budget belongs to a login ID, not to an account of the config:
 * accounts that share a login ID pool their devices and the scheduler plans
 * for the pool, least recently polled first. Login IDs are independent, so
 * the run advances them in rounds of one call each, and a round's calls
 * run in parallel (platform_multi_call); a round is recorded and saved
 * before any of its calls is sent, and its replies are taken one by one. */
#include "tick.h"
#include "alerttext.h"
#include "budget.h"
#include "event.h"
#include "likely.h"
#include "metrics.h"
#include "platform.h"
#include "rules.h"
#include "scheduler.h"
#include "state.h"
#include "watch.h"
#include "util/duration.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/strmap.h"
#include "util/xalloc.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DISCOVERY_INTERVAL 600 /* seconds between two device lists without signals */
#define READINGS_GAP 50        /* least seconds between two readings of a login (one a minute) */
#define QUIET_MAX 600          /* the longest quiet time a run leaves (quiet.h) */
#define RECHECK_AFTER 240      /* a signal poll that found nothing looks once more after this */
#define SILENT_LOOKS 21600     /* a silent device is looked at again for this long */
#define HOT_WAIT_MAX 900       /* the longest wait between two looks of an excursion */
#define SATURATED_AFTER 900    /* signals waiting this long for the budget make a relay event */
#define WARNING_FOLLOWS 3600   /* an alert-log alarm this close to an early warning follows it */
#define FULL_PAGE 20           /* the platform keeps a device's 20 newest entries */

/* How long a device whose alert log the platform refused (400) waits
 * before it is asked again, by the number of refusals in a row: a
 * transient refusal (a platform glitch answers 400 for every device) must
 * cost minutes of delay, not a day of lost alerts, while a device that is
 * really refused must not spend the login's 12 calls an hour. The third
 * refusal in a row (REFUSALS_TO_PARK) parks the device: it is asked every
 * 6 hours, and a relay event says so (self-monitoring, devices-refused). */
static const long REFUSAL_PAUSE[] = {15 * 60, 60 * 60, 6 * 60 * 60};

/* --- what a reply tells of its login ID ---------------------------------- */

/* What a reply tells about the budget: the rate-limit headers, a 429. */
static void note_reply(struct tick *t, const char *login, enum platform_op op,
                       const struct platform_reply *r)
{
    long long now = tick_now(t);
    long long until = budget_note_reply(t->st, login, op, r, now);
    if (until)
        log_info("login %s: the platform allows no %s call for %lld s", login, platform_op_name(op),
                 until - now);
}

/* Records how a call of `login` went, for `wsrelay status`: a failure
 * with "WHAT: WHY" (both free of secrets, like the log lines). */
static void note_result(struct tick *t, const char *login, long status, const char *what,
                        const char *why)
{
    char *msg = why ? xasprintf("%s: %s", what, why) : NULL;
    state_login_result(t->st, login, !why, status, msg, tick_now(t));
    free(msg);
}

/* The platform's 401 means the API key, login ID or password is wrong. */
static const char *hint_for(long status)
{
    return status == 401 ? " (check api_key, login_id and login_pass)" : "";
}

/* --- the pool of devices of one login ID -------------------------------- */

struct pooled {
    const struct account_conf *a;
    struct platform *p;
    struct state_device dev; /* owned */
};

struct pool {
    struct pooled *items;
    size_t n, cap;
    struct strmap serials; /* serial -> position in items, so that filling a
                              pool of thousands of devices stays linear */
};

static bool pool_has(const struct pool *pl, const char *serial)
{
    size_t i;
    return strmap_get(&pl->serials, serial, &i);
}

/* Adds the account's devices that pass its include/exclude globs, are not
 * refused now, and are not in the pool yet (through another account of
 * the same login ID). Hand-listed devices are written into the state's list
 * first, so they get a history like discovered ones. */
static void pool_add_account(struct tick *t, struct pool *pl, const struct account_conf *a,
                             struct platform *p)
{
    if (!a->devices_auto) {
        struct state_device *conf = xcalloc(a->n_devices ? a->n_devices : 1, sizeof *conf);
        for (size_t i = 0; i < a->n_devices; i++) {
            conf[i].serial = a->devices[i].serial;
            conf[i].base = a->devices[i].base;
            conf[i].model = (char *)"";
            conf[i].name = (char *)"";
            conf[i].group = (char *)"";
        }
        state_set_devices(t->st, a->name, conf, a->n_devices, t->opt->now);
        free(conf);
    }
    size_t n = 0;
    struct state_device *devs = state_devices(t->st, a->name, &n);
    for (size_t i = 0; i < n; i++) {
        struct state_device *d = &devs[i];
        if (!account_wants_serial(a, d->serial) || pool_has(pl, d->serial) ||
            d->refused_until > t->opt->now)
            continue;
        if (pl->n == pl->cap) {
            pl->cap = pl->cap ? pl->cap * 2 : 16;
            pl->items = xreallocarray(pl->items, pl->cap, sizeof *pl->items);
        }
        strmap_put(&pl->serials, d->serial, pl->n);
        pl->items[pl->n++] = (struct pooled){.a = a, .p = p, .dev = *d};
        memset(d, 0, sizeof *d); /* moved into the pool */
    }
    state_devices_free(devs, n);
}

static void device_clear(struct state_device *d)
{
    free(d->serial);
    free(d->base);
    free(d->model);
    free(d->name);
    free(d->group);
}

static void pool_free(struct pool *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        device_clear(&pl->items[i].dev);
    free(pl->items);
    strmap_clear(&pl->serials);
}

/* --- polling one device ------------------------------------------------- */

/* True when `ev` was not sent because it predates what catch_up covers:
 * an entry older than catch_up before wsrelay first knew its device, so
 * that a new installation does not page anyone for last week. */
static bool before_catch_up(const struct tick *t, const struct state_device *dev,
                            const struct event *ev)
{
    long long known = dev->first_known ? dev->first_known : t->opt->now;
    return ev->unixtime < known - t->cfg->catch_up;
}

/* Replaces *field with a copy of `value` (NULL stays NULL). */
static void set_field(char **field, const char *value)
{
    free(*field);
    *field = value ? xstrdup(value) : NULL;
}

/* The limits of each channel of `serial` (index channel - 1): configured
 * ones win over those the alert texts taught. */
static void limits_of(const struct tick *t, const struct account_conf *a, const char *serial,
                      struct watch_limit *out)
{
    for (int ch = 1; ch <= WATCH_CHANNELS; ch++)
        if (!account_limit(a, serial, ch, &out[ch - 1]))
            state_learnt_limit(t->st, serial, ch, &out[ch - 1]);
}

/* The unixtime of the early warning that announced `ev`, an alert-log
 * alarm of a channel: the last warning of that channel beyond a limit
 * came within WARNING_FOLLOWS of the entry, whether it still stands or
 * the readings have come back since (the platform often logs the alarm
 * after its way back, and its mail belongs under the warning all the
 * same). 0 when none did. */
static long long warned_before(const struct tick *t, const struct event *ev)
{
    struct watch w;
    if (strncmp(ev->kind, "ch", 2) != 0 || !ev->state || strcmp(ev->state, "alarm") != 0 ||
        !state_watch(t->st, ev->serial, &w))
        return 0;
    const struct watch_channel *wc = watch_channel(&w, atoi(ev->kind + 2));
    if (!wc || !wc->warned_at)
        return 0;
    long long d = ev->unixtime - wc->warned_at;
    return d <= WARNING_FOLLOWS && d >= -WARNING_FOLLOWS ? wc->warned_at : 0;
}

/* Queues a new event for the receivers its rules name, each copy carrying
 * the rule's name, severity and what its throttle held back. The device's
 * list entry fills in what the alert log leaves out. Returns whether it
 * goes to someone now (not dropped, held back or sent nowhere). */
static bool route_event(struct tick *t, const struct pooled *pd, const struct event *parsed)
{
    const struct state_device *dev = &pd->dev;
    struct event ev;
    struct route rt;
    event_copy(&ev, parsed);
    if (!*ev.model && dev->model && *dev->model)
        set_field(&ev.model, dev->model);
    if (!*ev.name && dev->name && *dev->name)
        set_field(&ev.name, dev->name);
    if (dev->group && *dev->group)
        set_field(&ev.group, dev->group);
    ev.early_warning = ev.early_warning ? ev.early_warning : warned_before(t, &ev);
    rules_route(&rt, t->rules, &ev, t->opt->now, &t->throttles);
    for (size_t i = 0; i < rt.n_targets; i++) {
        const struct route_target *to = &rt.targets[i];
        set_field(&ev.rule, to->rule ? to->rule->name : NULL);
        set_field(&ev.severity, to->rule ? to->rule->severity : NULL);
        ev.held = to->held;
        ev.held_since = to->held_since;
        state_enqueue(t->st, to->receiver, &ev, t->opt->now);
    }
    char *id = event_id(&ev);
    switch (rt.outcome) {
    case ROUTE_SENT:
        state_count(t->st, METRICS_EVENTS_ROUTED, 1);
        break;
    case ROUTE_DROPPED:
        state_count(t->st, METRICS_EVENTS_DROPPED, 1);
        log_debug("event %s: dropped by a rule", id);
        break;
    case ROUTE_THROTTLED:
        state_count(t->st, METRICS_EVENTS_THROTTLED, 1);
        log_debug("event %s: held back by a throttle", id);
        break;
    case ROUTE_UNROUTED:
        state_count(t->st, METRICS_EVENTS_UNROUTED, 1);
        log_warn("account %s, device %s: event %s matched no rule and there are no "
                 "default_receivers: it is sent nowhere (add a catch-all rule or "
                 "default_receivers; see wsrelay explain)",
                 ev.account, ev.serial, id);
        break;
    }
    bool sent = rt.outcome == ROUTE_SENT;
    free(id);
    route_free(&rt);
    event_clear(&ev);
    return sent;
}

/* A poll returned a full page none of which had been seen, and its oldest
 * entry is newer than `from`, the time since which wsrelay answers for
 * the device's alerts (its last successful poll, or on a first poll the
 * catch_up horizon): entries between `from` and that oldest one may have
 * left the 20-entry log unseen. Nobody must believe they saw everything,
 * so this is an event of its own, kind "gap", routed by the rules like any
 * other. Its key is the device, the oldest entry of the page and "gap":
 * the same page found again (a save that failed) gives the same event. */
static void send_gap(struct tick *t, const struct pooled *pd, const struct event_list *list,
                     long long from)
{
    const struct state_device *dev = &pd->dev;
    struct event gap;
    char since[32], until[32];
    event_copy(&gap, &list->items[0]); /* the device's names and offset */
    gap.unixtime = from;
    event_local_time(since, sizeof since, &gap);
    gap.unixtime = list->oldest;
    event_local_time(until, sizeof until, &gap);
    set_field(&gap.kind, "gap");
    set_field(&gap.state, "other");
    set_field(&gap.value, NULL);
    set_field(&gap.limit, NULL);
    set_field(&gap.channel_name, NULL);
    set_field(&gap.channel_unit, NULL);
    gap.recovers = 0;
    free(gap.text);
    gap.text = xasprintf("Alerts may be missing between %s and %s: the device's log held %d "
                         "entries, all new %s, and the platform keeps only the newest %d. Check "
                         "the device's history on WebStorage, and poll it more often (see the "
                         "budget in wsrelay's README).",
                         since, until, FULL_PAGE,
                         dev->last_ok ? "since the last look" : "on the first look", FULL_PAGE);
    log_warn("account %s, device %s: %d new entries %s; older ones since %s may have been "
             "lost: a gap event is sent",
             pd->a->name, dev->serial, FULL_PAGE,
             dev->last_ok ? "since the last poll" : "on the first poll", since);
    state_count(t->st, METRICS_EVENTS_GAP, 1);
    route_event(t, pd, &gap);
    event_clear(&gap);
}

/* A limit as an alert text writes it ("-75.0°C", "8℃"): its number, when
 * it starts with one in ASCII. */
static bool limit_number(const char *text, double *out)
{
    char *end = NULL;
    if (!text)
        return false;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* Learns the limits that the alarms of a reply state ("CH1 Upper Limit
 * Exceeded -70.2°C (limit -75.0°C)"), old entries included: a device's
 * first poll usually finds some. When that changes what was known, the
 * device's readings memory takes the new limits silently (watch_relimit). */
static void learn_limits(struct tick *t, const struct pooled *pd, const struct event_list *list)
{
    bool changed = false;
    for (size_t i = 0; i < list->n; i++) {
        const struct event *ev = &list->items[i];
        struct alert_reading ar;
        double v;
        if (strncmp(ev->kind, "ch", 2) != 0 || !ev->state || strcmp(ev->state, "alarm") != 0)
            continue;
        alert_classify(&ar, ev->kind, ev->text);
        if (ar.direction && limit_number(ar.limit, &v) &&
            state_learn_limit(t->st, ev->serial, atoi(ev->kind + 2), ar.direction > 0, v)) {
            log_info("account %s, device %s: learnt the %s limit %s of %s from its alert log",
                     pd->a->name, ev->serial, ar.direction > 0 ? "upper" : "lower", ar.limit,
                     ev->kind);
            changed = true;
        }
        alert_reading_clear(&ar);
    }
    struct watch w;
    if (changed && state_watch(t->st, pd->dev.serial, &w)) {
        struct watch_limit limits[WATCH_CHANNELS];
        limits_of(t, pd->a, pd->dev.serial, limits);
        watch_relimit(&w, limits, WATCH_CHANNELS);
        state_set_watch(t->st, pd->dev.serial, &w);
    }
}

/* Queues the events of one alert-log reply that were not seen before;
 * *newest gets the unixtime of the newest of them (0: none). Returns -1
 * when the reply could not be used. */
static int take_events(struct tick *t, const struct pooled *pd, const struct json_object *body,
                       long long *newest)
{
    const struct state_device *dev = &pd->dev;
    const char *account = pd->a->name;
    struct event_list list = {0};
    struct err e;
    size_t fresh = 0, old = 0, known = 0, stale = 0;
    long long floor = state_seen_floor(t->st, dev->serial);
    int rc = -1;
    *newest = 0;
    if (event_parse_alert_log(&list, body, account, &e) < 0) {
        log_error("account %s, device %s: %s", account, dev->serial, e.msg);
        goto out;
    }
    for (size_t i = 0; i < list.n; i++) {
        if (strcmp(list.items[i].serial, dev->serial) != 0) {
            log_error("account %s, device %s: the reply is about device %s; ignored", account,
                      dev->serial, list.items[i].serial);
            goto out;
        }
    }
    for (size_t i = 0; i < list.n; i++) {
        const struct event *ev = &list.items[i];
        if (state_seen(t->st, ev->serial, ev->unixtime, ev->kind)) {
            known++;
            continue;
        }
        if (ev->unixtime < floor) { /* handled before its key was pruned */
            known++;
            stale++;
            /* Still in the log (a floor from a lost file's mark): a key
             * keeps it from counting as stale at every poll until it
             * leaves. */
            state_mark_seen(t->st, ev->serial, ev->unixtime, ev->kind);
            continue;
        }
        if (before_catch_up(t, dev, ev)) {
            state_count(t->st, METRICS_EVENTS_OLD, 1);
            old++;
        } else {
            route_event(t, pd, ev);
            fresh++;
        }
        if (ev->unixtime > *newest)
            *newest = ev->unixtime;
        state_mark_seen(t->st, ev->serial, ev->unixtime, ev->kind);
    }
    if (list.entries >= FULL_PAGE) {
        /* A full page that overlaps nothing seen before: entries may have
         * left the log between the two polls, or, on a first poll, since
         * the catch_up horizon (whatever is older was never to be sent). */
        long long horizon = (dev->first_known ? dev->first_known : t->opt->now) - t->cfg->catch_up;
        if (known == 0 && list.n > 0 && dev->last_ok != 0)
            send_gap(t, pd, &list, dev->last_ok);
        else if (known == 0 && list.n > 0 && list.oldest > horizon)
            send_gap(t, pd, &list, horizon);
        /* Entries older than the oldest of a full page have left the
         * device's log for good, so their keys can go. */
        state_prune_seen(t->st, dev->serial, list.oldest);
    }
    learn_limits(t, pd, &list);
    if (stale)
        log_warn("account %s, device %s: the reply holds %zu event%s older than entries already "
                 "handled (an older copy of the log?); not sent again",
                 account, dev->serial, stale, stale == 1 ? "" : "s");
    log_info("account %s, device %s: %zu entr%s, %zu new event%s%s", account, dev->serial,
             list.entries, list.entries == 1 ? "y" : "ies", fresh, fresh == 1 ? "" : "s",
             old ? " (older ones recorded as seen)" : "");
    rc = 0;
out:
    event_list_free(&list);
    return rc;
}

/* A poll of the device answered whatever signal it had. A new entry
 * newer than the reading before the signal explains it (an older one, say
 * the communication error of an outage that just ended, does not). A poll
 * that found none may have come before the platform logged the alarm (it
 * can take up to a monitoring interval after the reading), so it looks
 * once more RECHECK_AFTER later. Then:
 *   - a device whose uploads stopped is looked at again and again, each
 *     wait half as long as the silence so far (RECHECK_AFTER to an hour),
 *     until the platform's communication error is found or the silence
 *     has lasted SILENT_LOOKS: the platform logs that error only after the
 *     device missed its own interval, which wsrelay does not know;
 *   - a device whose excursion goes on (watch_excursion: a channel still
 *     out of its band on a side without a known limit) stays hot: looked
 *     at again as the excursion develops, each wait half as long as the
 *     excursion so far (RECHECK_AFTER to HOT_WAIT_MAX), until a look finds
 *     what explains it or the value is back (which is a signal of its
 *     own). A slow ramp leaves its band long before the platform alarms at
 *     its limit, and a device whose limits are not known may have no way
 *     but this look to tell. Whatever else signals take: the scheduler
 *     keeps the bound (overdue devices go first);
 *   - any other waits until the readings move again. */
static void answer_signal(struct tick *t, const struct pooled *pd, long long newest)
{
    struct watch w;
    if (!state_watch(t->st, pd->dev.serial, &w))
        return;
    bool first_look = w.pending != 0, rechecking = w.recheck_at != 0;
    bool explained = newest > w.pending_after, told = w.pending_told;
    watch_polled(&w);
    bool silent_looks = w.silent && t->opt->now - w.seen_at < SILENT_LOOKS;
    struct watch_limit limits[WATCH_CHANNELS];
    limits_of(t, pd->a, pd->dev.serial, limits);
    bool hot = !w.silent && watch_excursion(&w, limits, WATCH_CHANNELS);
    if (!explained && (first_look || (rechecking && (silent_looks || hot)))) {
        long long wait = RECHECK_AFTER;
        if (w.silent)
            wait = (t->opt->now - w.seen_at) / 2;
        else if (hot && !first_look && w.pending_after)
            wait = (t->opt->now - w.pending_after) / 2;
        long long most = w.silent ? 3600 : HOT_WAIT_MAX;
        wait = wait < RECHECK_AFTER ? RECHECK_AFTER : wait > most ? most : wait;
        w.recheck_at = t->opt->now + wait;
        w.pending_told = told; /* the look once more waits as its signal did */
        log_debug("account %s, device %s: nothing that explains its signal yet; looking once "
                  "more at %lld",
                  pd->a->name, pd->dev.serial, w.recheck_at);
    }
    state_set_watch(t->st, pd->dev.serial, &w);
}

/* Takes the reply of an alert-log call of one device. Returns false when
 * no further call of this login can succeed now (bad credentials, budget
 * exhausted). */
static bool take_poll(struct tick *t, const struct pooled *pd, const struct platform_request *rq)
{
    const struct account_conf *a = pd->a;
    const struct state_device *dev = &pd->dev;
    const struct platform_reply *r = &rq->reply;
    bool ok = false, more = true;
    char *what = xasprintf("account %s, device %s, alert logs", a->name, dev->serial);
    metrics_count_call(t->st, a->login_id, PLATFORM_ALERT, rq->rc == 0, r->http_status);
    long long newest = 0;
    if (rq->rc == 0) {
        ok = take_events(t, pd, r->body, &newest) == 0;
        if (!ok)
            t->failures++;
        note_result(t, a->login_id, r->http_status, what,
                    ok ? NULL : "the reply could not be used (the log says why)");
    } else if (r->http_status == 400) {
        /* The platform refuses some devices (models the alert operation
         * does not serve, a wrong base serial): after a few refusals in a
         * row, stop spending budget on them (REFUSAL_PAUSE). `wsrelay
         * status` shows that with the device; it is not held against the
         * login ID. */
        long n = dev->refusals + 1;
        size_t step = (size_t)(n < REFUSALS_TO_PARK ? n : REFUSALS_TO_PARK) - 1;
        char pause[24];
        duration_format(pause, sizeof pause, REFUSAL_PAUSE[step]);
        state_device_refused(t->st, a->name, dev->serial, t->opt->now + REFUSAL_PAUSE[step], n);
        if (n < REFUSALS_TO_PARK)
            log_error("account %s, device %s: alert logs refused (%ld in a row): %s; asked "
                      "again in %s",
                      a->name, dev->serial, n, r->message, pause);
        else
            log_error("account %s, device %s: alert logs refused %ld times in a row: %s; asked "
                      "again every %s (add the serial to exclude: if this is expected)",
                      a->name, dev->serial, n, r->message, pause);
        t->failures++;
    } else {
        log_error("account %s, device %s: alert logs: %s%s", a->name, dev->serial, r->message,
                  hint_for(r->http_status));
        t->failures++;
        char *why = xasprintf("%s%s", r->message, hint_for(r->http_status));
        note_result(t, a->login_id, r->http_status, what, why);
        free(why);
        more = r->http_status != 401 && r->http_status != 429;
    }
    /* Polled, successfully or not: the device goes to the back of the line. */
    state_device_polled(t->st, a->name, dev->serial, dev->base, t->opt->now, ok);
    if (ok)
        answer_signal(t, pd, newest);
    note_reply(t, a->login_id, PLATFORM_ALERT, r);
    free(what);
    return more;
}

/* --- current readings --------------------------------------------------- */

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
static bool readings_now(const struct tick *t, const char *login)
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
 * (watch.h: `back`) since `was`. */
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
        double level = c->n_history ? likely_level(c->history, c->n_history) : p->value;
        struct watch_limit likely;
        if (likely_limits(f->rows, f->n_rows, unit_of(d, c->num), level, known, &likely) &&
            likely_crossed(&likely, p->value, c->value))
            return WATCH_LIKELY;
    }
    return 0;
}

/* Takes one device's reading into its memory (watch.h): a signal makes
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
        reasons |= watch_idle(&w, t->opt->now);
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
static bool take_readings(struct tick *t, const char *login, const struct account_conf *first,
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
    } else if (platform_parse_devices(&infos, &n, r->text, r->text_len, first->name, &e) < 0) {
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

/* --- the login IDs, in rounds ------------------------------------------- */

/* A login ID's part of the run. Its calls are made one after another:
 * first Get Current Readings (every run with signals, else when a device
 * list is due), then the alert calls the scheduler plans for its pool.
 * Login IDs are independent, so the run advances them in rounds: each
 * round, every login ID with a call left makes one, and those calls run
 * in parallel. */
struct login_run {
    const char *login;
    bool *looked;              /* per opt->looks, shared by every login: found in a pool */
    struct platform **clients; /* by account index; NULL for other logins */
    bool read;                 /* the readings call was considered */
    bool planned;              /* the pool is complete and planned */
    bool over;                 /* no further call in this run */
    bool signals;              /* an account of the login watches readings */
    struct pool pool;
    size_t *order;    /* the pool's indices, in the scheduler's order */
    bool *for_signal; /* by position in `order`: a call a signal asked for */
    size_t n_planned, next;
    /* the call of the current round */
    bool reading;                 /* Get Current Readings, or */
    const struct pooled *polling; /* an alert call of this device */
    bool polling_signal;
};

static void login_start(struct tick *t, struct login_run *lr, const char *login, bool *looked)
{
    const struct config *c = t->cfg;
    struct err e;
    *lr = (struct login_run){.login = login, .looked = looked};
    lr->clients = xcalloc(c->n_accounts, sizeof *lr->clients);
    for (size_t i = 0; i < c->n_accounts; i++) {
        const struct account_conf *a = &c->accounts[i];
        if (strcmp(a->login_id, login) != 0)
            continue;
        lr->signals |= a->signals;
        if (platform_new(&lr->clients[i], a, &e) < 0) {
            log_error("account %s: %s", a->name, e.msg);
            t->failures++;
        }
    }
}

static void login_end(struct tick *t, struct login_run *lr)
{
    free(lr->order);
    free(lr->for_signal);
    pool_free(&lr->pool);
    for (size_t i = 0; i < t->cfg->n_accounts; i++)
        platform_free(lr->clients[i]);
    free(lr->clients);
}

/* Index of `serial` in opt->looks, or n_looks. */
static size_t look_index(const struct tick *t, const char *serial)
{
    size_t i = 0;
    while (i < t->opt->n_looks && strcmp(t->opt->looks[i], serial) != 0)
        i++;
    return i;
}

/* Puts the devices of `run --look` first in lr->order, as far as the
 * budget allows an urgent look (a free routine slot or the reserve), and
 * charges each to `b`. Returns how many. */
static size_t plan_looks(struct tick *t, struct login_run *lr, struct sched_budget *b)
{
    size_t n = 0;
    for (size_t i = 0; i < lr->pool.n; i++) {
        const struct pooled *pd = &lr->pool.items[i];
        size_t k = look_index(t, pd->dev.serial);
        if (k == t->opt->n_looks)
            continue;
        lr->looked[k] = true;
        if (!scheduler_urgent(b, t->opt->now)) {
            log_error("account %s, device %s: no urgent look possible now: %s", pd->a->name,
                      pd->dev.serial,
                      b->used >= (size_t)b->limit
                          ? "this hour's alert calls are spent, the reserve included"
                          : "the platform asked for a pause");
            t->failures++;
            continue;
        }
        struct watch w;
        char what[512], why[64];
        if (state_watch(t->st, pd->dev.serial, &w) && w.unixtime)
            log_info("account %s, device %s: an urgent look; its last reading: %s%s%s%s",
                     pd->a->name, pd->dev.serial, watch_summary(what, sizeof what, &w),
                     w.pending ? "; a signal (" : "",
                     w.pending ? watch_reason_text(why, sizeof why, w.pending) : "",
                     w.pending ? ")" : "");
        else
            log_info("account %s, device %s: an urgent look", pd->a->name, pd->dev.serial);
        lr->order[n++] = i;
        b->used++;
        b->last_call = t->opt->now; /* routine polling waits a spacing after it */
    }
    return n;
}

/* Whether the device's readings ask for a look at its alert log now: a
 * signal since its last poll, or the second look a signal poll that found
 * nothing asked for. When so, *since is when that began and *told whether
 * its news is out already (watch.h). */
static bool signal_of(const struct tick *t, const struct state_device *dev, long long *since,
                      bool *told)
{
    struct watch w;
    if (!state_watch(t->st, dev->serial, &w))
        return false;
    if (w.pending) {
        /* The platform logs what a reading shows a little after the
         * measurement, a remote unit's before the upload: a look made
         * earlier finds nothing and costs a second one. */
        bool remote = dev->base && *dev->base && strcmp(dev->base, dev->serial) != 0;
        long long due = watch_look_at(&w, remote);
        *since = w.pending_since;
        *told = w.pending_told;
        return t->opt->now >= due;
    }
    if (w.recheck_at && w.recheck_at <= t->opt->now) {
        *since = w.recheck_at;
        *told = w.pending_told;
        return true;
    }
    return false;
}

/* Signals that waited for the budget since SATURATED_AFTER make one relay
 * event that names the fix; the login's signals_starved time says since
 * when (`wsrelay status` shows it). */
static void note_starved(struct tick *t, struct login_run *lr, size_t waiting)
{
    long long since = state_signals_starved(t->st, lr->login);
    char *key = xasprintf("signals-saturated/%s", lr->login);
    struct state_condition c;
    bool open = state_condition(t->st, key, &c);
    state_condition_clear(&c);
    if (!waiting) {
        if (since)
            log_info("login %s: no signal waits for the budget any more", lr->login);
        state_set_signals_starved(t->st, lr->login, 0);
        if (open)
            state_drop_condition(t->st, key);
        free(key);
        return;
    }
    if (!since)
        state_set_signals_starved(t->st, lr->login, since = t->opt->now);
    log_info("login %s: %zu device%s with a signal wait for the alert budget", lr->login, waiting,
             waiting == 1 ? "" : "s");
    if (!open && t->opt->now - since >= SATURATED_AFTER) {
        char *text = xasprintf(
            "Signals of login %s have needed more alert-log calls than its budget of 12 an "
            "hour for %lld min: alarms may reach you late. Add a read-only login ID for some "
            "of its devices (each login ID has 12 calls an hour of its own), or set limits: "
            "so that early warnings come from the readings.",
            lr->login, (t->opt->now - since) / 60);
        struct state_condition opened = {.since = since, .opened = t->opt->now};
        state_set_condition(t->st, key, &opened);
        tick_relay_send(t, NULL, "signals-saturated", text, NULL);
        free(text);
    }
    free(key);
}

/* Plans the pool's alert calls once: lr->order and lr->for_signal (which
 * it allocates) and lr->n_planned; returns how many devices with a signal
 * wait unplanned. */
static size_t plan_pool(struct tick *t, struct login_run *lr)
{
    struct pool *pl = &lr->pool;
    size_t signals = 0, waiting = 0;
    struct sched_device *sd = xcalloc(pl->n, sizeof *sd);
    lr->order = xcalloc(pl->n, sizeof *lr->order);
    lr->for_signal = xcalloc(pl->n, sizeof *lr->for_signal);
    for (size_t i = 0; i < pl->n; i++) {
        sd[i].last_poll = pl->items[i].dev.last_poll;
        sd[i].known_since = pl->items[i].dev.first_known;
        sd[i].priority = (unsigned)account_device_priority(pl->items[i].a, pl->items[i].dev.serial);
        sd[i].signal = pl->items[i].a->signals &&
                       signal_of(t, &pl->items[i].dev, &sd[i].signal_since, &sd[i].told);
    }
    struct sched_budget b = budget_read(t->st, lr->login, PLATFORM_ALERT, t->opt->now);
    b.headroom = lr->signals ? budget_headroom(t->st, lr->login, t->opt->now) : 0;
    size_t looks = plan_looks(t, lr, &b);
    /* After a look the routine has no slot left in this run (its spacing
     * starts again), so the two lists cannot name one device twice.
     * Without signals the round robin is all there is. */
    if (looks || !lr->signals)
        lr->n_planned =
            looks + scheduler_plan(lr->order + looks, pl->n - looks, sd, pl->n, &b, t->opt->now);
    else
        lr->n_planned =
            scheduler_plan_signals(lr->order, pl->n, sd, pl->n, &b, t->opt->now, &signals);
    for (size_t k = looks; k < lr->n_planned; k++)
        lr->for_signal[k] = sd[lr->order[k]].signal;
    for (size_t i = 0; i < pl->n; i++) {
        bool planned = false;
        for (size_t k = 0; k < lr->n_planned && !planned; k++)
            planned = lr->order[k] == i;
        waiting += sd[i].signal && !planned;
    }
    free(sd);
    return waiting;
}

/* Takes out of the pool the planned devices whose seen keys cannot be read
 * (state_seen_known): every entry of their logs would look new. Each fails
 * the run until its file can be read again, and the others are polled
 * meanwhile. Returns how many were taken out. */
static size_t drop_unknown(struct tick *t, struct login_run *lr)
{
    struct pool *pl = &lr->pool;
    bool *drop = xcalloc(pl->n, sizeof *drop);
    size_t n_drop = 0, kept = 0;
    for (size_t k = 0; k < lr->n_planned; k++) {
        struct state_device *d = &pl->items[lr->order[k]].dev;
        if (!state_seen_known(t->st, d->serial)) {
            log_error("login %s, device %s: not polled: its seen keys cannot be read", lr->login,
                      d->serial);
            t->failures++;
            drop[lr->order[k]] = true;
            n_drop++;
        }
    }
    strmap_clear(&pl->serials);
    for (size_t i = 0; i < pl->n; i++) {
        if (!drop[i]) {
            strmap_put(&pl->serials, pl->items[i].dev.serial, kept);
            pl->items[kept++] = pl->items[i];
            continue;
        }
        device_clear(&pl->items[i].dev);
    }
    pl->n = kept;
    free(drop);
    return n_drop;
}

/* Plans the alert calls of the complete pool: urgent looks first, then
 * what signals and the routine allow; planned again without any device
 * whose seen keys turn out unreadable. */
static void login_plan(struct tick *t, struct login_run *lr)
{
    size_t waiting = 0;
    lr->planned = true;
    do {
        free(lr->order);
        free(lr->for_signal);
        lr->order = NULL;
        lr->for_signal = NULL;
        lr->n_planned = 0;
        if (lr->pool.n == 0) {
            log_info("login %s: no devices to poll yet", lr->login);
            return;
        }
        waiting = plan_pool(t, lr);
    } while (drop_unknown(t, lr) > 0);
    if (lr->signals && !t->opt->dry_run)
        note_starved(t, lr, waiting);
    if (lr->n_planned == 0)
        log_debug("login %s: no alert call allowed now", lr->login);
}

/* The index of the first account of the login that has a client; n_accounts
 * when none. */
static size_t login_reader(const struct tick *t, const struct login_run *lr)
{
    size_t i = 0;
    while (i < t->cfg->n_accounts && !lr->clients[i])
        i++;
    return i;
}

/* Fills `rq` with the login's next call; false when it has none left. */
static bool login_next(struct tick *t, struct login_run *lr, struct platform_request *rq)
{
    const struct config *c = t->cfg;
    lr->reading = false;
    lr->polling = NULL;
    if (!lr->over && !lr->read) {
        lr->read = true;
        size_t i = login_reader(t, lr);
        if (i < c->n_accounts && readings_now(t, lr->login)) {
            lr->reading = true;
            *rq = (struct platform_request){.p = lr->clients[i], .op = PLATFORM_CURRENT};
            return true;
        }
    }
    if (!lr->over && !lr->planned) {
        for (size_t i = 0; i < c->n_accounts; i++)
            if (lr->clients[i])
                pool_add_account(t, &lr->pool, &c->accounts[i], lr->clients[i]);
        login_plan(t, lr);
    }
    if (lr->over || lr->next >= lr->n_planned) {
        lr->over = true;
        return false;
    }
    lr->polling_signal = lr->for_signal[lr->next];
    lr->polling = &lr->pool.items[lr->order[lr->next++]];
    *rq = (struct platform_request){
        .p = lr->polling->p,
        .op = PLATFORM_ALERT,
        .query = {.serial = lr->polling->dev.serial, .base = lr->polling->dev.base}};
    return true;
}

/* Takes the reply to the call login_next asked for. */
static void login_take(struct tick *t, struct login_run *lr, const struct platform_request *rq)
{
    if (lr->reading) {
        const struct account_conf *first = &t->cfg->accounts[login_reader(t, lr)];
        if (!take_readings(t, lr->login, first, rq))
            lr->over = true; /* every call of this login would fail alike */
    } else if (lr->polling && !take_poll(t, lr->polling, rq)) {
        lr->over = true;
    }
}

/* --- the quiet time (tick.h) ---------------------------------------------- */

static long long earlier(long long a, long long b)
{
    return a < b ? a : b;
}

/* Whether the account has a device the alert calls could take: one in its
 * list, not refused until later (a refused one counts: its pause may end
 * before the quiet time). Its list, not the pool: no client is needed. */
static bool account_has_devices(const struct tick *t, const struct account_conf *a)
{
    if (!a->devices_auto)
        return a->n_devices > 0;
    struct state_device d;
    for (size_t i = 0; state_device_at(t->st, a->name, i, &d); i++)
        if (account_wants_serial(a, d.serial))
            return true;
    return false;
}

/* The first time the login's calls could be due, from `now`: its device
 * lists' next reading, and the first call its alert budget allows. Early
 * rather than late wherever the plan has more to it (a block or a paused
 * login only delays a call; a budget that takes no call now still may
 * after scheduler_next_call). */
static long long login_quiet_until(const struct tick *t, const char *login)
{
    long long now = t->opt->now, until = LLONG_MAX;
    bool devices = false;
    for (size_t i = 0; i < t->cfg->n_accounts; i++) {
        const struct account_conf *a = &t->cfg->accounts[i];
        if (strcmp(a->login_id, login) != 0)
            continue;
        if (a->signals)
            return now; /* readings every run */
        if (a->devices_auto) {
            long long at = state_discovered_at(t->st, a->name);
            until = earlier(until, at == 0 ? now : at + DISCOVERY_INTERVAL);
        }
        devices |= account_has_devices(t, a);
    }
    if (devices) {
        struct sched_budget b = budget_read(t->st, login, PLATFORM_ALERT, now);
        /* An unknown oldest call makes scheduler_next_call guess late. */
        if (b.used > 0 && b.oldest == 0)
            return now;
        until = earlier(until, scheduler_next_call(&b, now));
    }
    return until;
}

long long poll_quiet_until(const struct tick *t)
{
    long long until = t->opt->now + QUIET_MAX;
    if (t->opt->n_looks)
        return t->opt->now;
    for (size_t i = 0; i < t->cfg->n_accounts; i++)
        if (config_login_first(t->cfg, i))
            until = earlier(until, login_quiet_until(t, t->cfg->accounts[i].login_id));
    return until;
}

/* --- the run's polling (tick.h) ----------------------------------------- */

void poll_all(struct tick *t)
{
    const struct config *c = t->cfg;
    bool *looked = xcalloc(t->opt->n_looks ? t->opt->n_looks : 1, sizeof *looked);
    struct login_run *runs = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *runs);
    struct platform_request *reqs = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *reqs);
    struct login_run **whose = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *whose);
    struct platform_multi *multi = NULL;
    size_t n = 0;
    struct err e;
    for (size_t i = 0; i < c->n_accounts; i++) {
        if (config_login_first(c, i) && !tick_login_paused(t, c->accounts[i].login_id))
            login_start(t, &runs[n++], c->accounts[i].login_id, looked);
    }
    if (platform_multi_new(&multi, &e) < 0) {
        log_error("%s", e.msg);
        t->failures++;
        goto out;
    }
    while (!tick_stopping(t) && !tick_out_of_time(t, TICK_POLLING)) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (login_next(t, &runs[i], &reqs[k]))
                whose[k++] = &runs[i];
        if (k == 0)
            break;
        for (size_t j = 0; j < k; j++) {
            state_record_call(t->st, whose[j]->login, reqs[j].op, tick_now(t));
            if (whose[j]->polling && whose[j]->polling_signal)
                state_record_signal_call(t->st, whose[j]->login, tick_now(t));
        }
        if (tick_persist(t, "before platform calls") < 0)
            break;
        platform_multi_call(multi, reqs, k);
        for (size_t j = 0; j < k; j++) {
            login_take(t, whose[j], &reqs[j]);
            platform_reply_free(&reqs[j].reply);
        }
    }
out:
    platform_multi_free(multi);
    for (size_t i = 0; i < n; i++)
        login_end(t, &runs[i]);
    free(whose);
    free(reqs);
    free(runs);
    for (size_t i = 0; i < t->opt->n_looks && !tick_stopping(t); i++) {
        if (!looked[i]) {
            log_error("--look %s: no device with that serial is polled (not listed, excluded, "
                      "refused by the platform, or its login ID paused)",
                      t->opt->looks[i]);
            t->failures++;
        }
    }
    free(looked);
}
