/* Intake of alert-log replies (intake.h): what a reply tells of its login
 * ID, and each device's new entries: routed by the rules into the outbox
 * and marked seen, a full page that may hide lost entries reported as a
 * gap, the limits alarms state learnt, and the signal that asked for the
 * call answered or looked at once more. */
#include "run/intake.h"
#include "run/incidents.h"
#include "alerttext.h"
#include "budget.h"
#include "metrics.h"
#include "rules.h"
#include "util/duration.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECHECK_AFTER 240    /* a signal poll that found nothing looks once more after this */
#define SILENT_LOOKS 21600   /* a silent device is looked at again for this long */
#define HOT_WAIT_MAX 900     /* the longest wait between two looks of an excursion */
#define WARNING_FOLLOWS 3600 /* an alert-log alarm this close to an early warning follows it */
#define FULL_PAGE 20         /* the platform keeps a device's 20 newest entries */

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
void note_reply(struct tick *t, const char *login, enum platform_op op,
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
void note_result(struct tick *t, const char *login, long status, const char *what, const char *why)
{
    char *msg = why ? xasprintf("%s: %s", what, why) : NULL;
    state_login_result(t->st, login, !why, status, msg, tick_now(t));
    free(msg);
}

/* The platform's 401 means the API key, login ID or password is wrong. */
const char *hint_for(long status)
{
    return status == 401 ? " (check api_key, login_id and login_pass)" : "";
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
void limits_of(const struct tick *t, const struct account_conf *a, const char *serial,
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
 * list entry fills in what the alert log leaves out. An event that joins
 * an incident is routed nowhere; one that opens or resolves one is queued
 * by the incident (run/incidents.h). Returns whether it goes to someone
 * now (not dropped, held back or sent nowhere), or joined an incident. */
bool route_event(struct tick *t, const struct pooled *pd, const struct event *parsed)
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
    if (incidents_join(t, &ev)) {
        event_clear(&ev);
        return true; /* its incident has told whoever it tells */
    }
    rules_route(&rt, t->rules, &ev, t->opt->now, &t->throttles);
    bool queued = incidents_route(t, &ev, &rt);
    for (size_t i = 0; i < rt.n_targets && !queued; i++) {
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
                         "the device's history on WebStorage, and poll it more often (see \"The "
                         "budget\" in wsrelay's docs/HOW-IT-WORKS.md).",
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

/* Tells the device's readings memory which of its channels have an alarm
 * as their newest entry in `list`, the whole log just read (readings_memory.h:
 * `alarmed`): such a channel's way back into its band asks for a look, to
 * read the platform's recovery. A channel the log does not name keeps what
 * it had. */
static void note_open_alarms(struct tick *t, const char *serial, const struct event_list *list)
{
    struct watch w;
    bool changed = false;
    if (!state_watch(t->st, serial, &w))
        return;
    for (int i = 0; i < w.n_ch; i++) {
        struct watch_channel *c = &w.ch[i];
        const struct event *newest = NULL;
        char kind[16];
        snprintf(kind, sizeof kind, "ch%d", c->num);
        for (size_t k = 0; k < list->n; k++) {
            const struct event *ev = &list->items[k];
            if (strcmp(ev->kind, kind) == 0 && ev->state &&
                (!newest || ev->unixtime >= newest->unixtime))
                newest = ev;
        }
        bool open = newest && strcmp(newest->state, "alarm") == 0;
        if (newest && open != c->alarmed) {
            c->alarmed = open;
            changed = true;
        }
    }
    if (changed)
        state_set_watch(t->st, serial, &w);
}

/* Queues the events of one alert-log reply that were not seen before;
 * *newest gets the unixtime of the newest of them, *comm_error that of the
 * newest communication error among them (0: none). Returns -1 when the
 * reply could not be used. */
static int take_events(struct tick *t, const struct pooled *pd, const struct json_object *body,
                       long long *newest, long long *comm_error)
{
    const struct state_device *dev = &pd->dev;
    const char *account = pd->a->name;
    struct event_list list = {0};
    struct err e;
    size_t fresh = 0, old = 0, known = 0, stale = 0;
    long long floor = state_seen_floor(t->st, dev->serial);
    int rc = -1;
    *newest = *comm_error = 0;
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
        if (strcmp(ev->state, "communication") == 0 && ev->unixtime > *comm_error)
            *comm_error = ev->unixtime;
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
    note_open_alarms(t, dev->serial, &list);
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

/* A communication error (logged at `error_at`; 0: none) that a poll found
 * of a device whose uploads stopped: how long after its last upload the
 * platform logged it is how long the next silence of the login waits
 * before it is looked at (state_silence_after; readings_memory.h,
 * watch_idle). An error logged before the last upload, or after
 * SILENT_LOOKS, teaches nothing. */
static void learn_silence(struct tick *t, const struct pooled *pd, long long error_at)
{
    struct watch w;
    if (!error_at || !state_watch(t->st, pd->dev.serial, &w) || !w.silent ||
        error_at <= w.seen_at || error_at - w.seen_at > SILENT_LOOKS)
        return;
    long long after = error_at - w.seen_at;
    const char *login = pd->a->login_id;
    if (after == state_silence_after(t->st, login))
        return;
    state_set_silence_after(t->st, login, after);
    log_info("login %s: the platform logged the communication error of device %s %lld s after "
             "its last upload: a silence is looked at after as long",
             login, pd->dev.serial, after);
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
 *     keeps the bound (overdue devices go first once it presses);
 *   - any other waits until the readings move again.
 * A look planned for later when this one came (a look once more, or a
 * crossing foreseen between two uploads: run/readings.c) stays planned,
 * and goes before the look once more this one would plan. */
static void answer_signal(struct tick *t, const struct pooled *pd, long long newest)
{
    struct watch w;
    if (!state_watch(t->st, pd->dev.serial, &w))
        return;
    bool first_look = w.pending != 0, rechecking = w.recheck_at != 0;
    bool explained = newest > w.pending_after, told = w.pending_told;
    /* A look made before a hint's is due (a turn of the round robin, or a
     * signal's) leaves the hint: the platform may not have logged its
     * excursion yet. */
    long long hint = w.hint_at;
    bool hint_waits = hint && t->opt->now < watch_hint_due(&w, state_device_remote(&pd->dev));
    /* A look planned for later (a crossing foreseen between two uploads, a
     * look once more) stays planned: this one came before it was due. */
    long long planned = w.recheck_at > t->opt->now ? w.recheck_at : 0;
    watch_polled(&w);
    if (hint_waits)
        w.hint_at = hint;
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
    if (planned)
        w.recheck_at = planned;
    state_set_watch(t->st, pd->dev.serial, &w);
}

/* Takes the reply of an alert-log call of one device. Returns false when
 * no further call of this login can succeed now (bad credentials, budget
 * exhausted). */
bool take_poll(struct tick *t, const struct pooled *pd, const struct platform_request *rq)
{
    const struct account_conf *a = pd->a;
    const struct state_device *dev = &pd->dev;
    const struct platform_reply *r = &rq->reply;
    bool ok = false, more = true;
    char *what = xasprintf("account %s, device %s, alert logs", a->name, dev->serial);
    metrics_count_call(t->st, a->login_id, PLATFORM_ALERT, rq->rc == 0, r->http_status);
    long long newest = 0, comm_error = 0;
    if (rq->rc == 0) {
        ok = take_events(t, pd, r->body, &newest, &comm_error) == 0;
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
    if (ok) {
        learn_silence(t, pd, comm_error);
        answer_signal(t, pd, newest);
    }
    note_reply(t, a->login_id, PLATFORM_ALERT, r);
    free(what);
    return more;
}
