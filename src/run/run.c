/* One tick of the relay: opening the state and the rules, the order of the
 * steps, delivery, self-monitoring and the saves between them. The
 * platform calls and what their replies change are poll.c's (tick.h).
 *
 * The order of the steps is what makes a crash harmless:
 *   1. every platform call is recorded in the budget ledger, stamped with
 *      the time it is sent, and saved before it is sent: a run killed
 *      during a call still counts it;
 *   2. each new event of a reply is routed by the rules (rules.h), queued
 *      in the outbox for each receiver they name, and its key marked seen;
 *      that is saved at the latest before the next call, and before any
 *      delivery;
 *   3. delivery of what is due; a receiver that accepted an item never sees
 *      it again, one that failed keeps it with a later next try;
 *   4. save again.
 * A crash between a delivery and the save after it can repeat that one
 * delivery; nothing can be lost.
 *
 * A dry run makes the same calls (the platform counts them, so the budget
 * ledger is saved, and only that) and prints the messages instead of
 * sending them. */
#include "run/run.h"
#include "run/tick.h"
#include "event.h"
#include "metrics.h"
#include "notify/notify.h"
#include "platform.h"
#include "quiet.h"
#include "rules.h"
#include "selfcheck.h"
#include "state.h"
#include "notify/http.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCH_KEEP (30 * 86400) /* a device's readings memory unused this long is forgotten */
#define MESSAGE_MAX_EVENTS 100  /* events in one message; more go in several */
/* Messages to one receiver in a run: at Slack's pace (one a second), about
 * what a run's time allows. */
#define RUN_MESSAGES_MAX 40
#define THROTTLE_KEEP (30 * 86400) /* throttle entries unused this long are forgotten */

/* --- the run's clock, its time limit and its saves (tick.h) ------------- */

long long tick_now(const struct tick *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)(ts.tv_sec - t->started.tv_sec) * 1000000000LL +
                   (ts.tv_nsec - t->started.tv_nsec);
    return t->opt->now + ns / 1000000000LL; /* whole seconds elapsed, not seconds crossed */
}

bool tick_stopping(const struct tick *t)
{
    return t->opt->stop && *t->opt->stop;
}

/* Whole seconds since the run started. */
static long long elapsed(const struct tick *t)
{
    return tick_now(t) - t->opt->now;
}

bool tick_out_of_time(struct tick *t, enum tick_phase phase)
{
    static const struct {
        int percent;
        const char *what;
    } phases[] = {[TICK_POLLING] = {50, "platform calls"}, [TICK_DELIVERY] = {100, "deliveries"}};
    long limit = t->cfg->run_time * phases[phase].percent / 100;
    if (elapsed(t) < limit)
        return false;
    if (!t->late[phase]) {
        log_warn("this run has used %ld s of run_time for %s: the rest waits for the next run",
                 limit, phases[phase].what);
        t->late[phase] = true;
    }
    return true;
}

/* A save gave up the oldest outbox items to keep the state file under its
 * size limit (state_save): that is reported like outbox.max_items, with an
 * error, a metric and a relay event to the other receivers, and saved. */
static void report_trimmed(struct tick *t)
{
    size_t n = 0;
    bool queued = false;
    struct err e;
    struct state_trim *trim = state_take_trimmed(t->st, &n);
    for (size_t i = 0; i < n; i++) {
        metrics_count_lost(t->st, trim[i].receiver, "dropped", trim[i].count);
        char *text = xasprintf("wsrelay dropped the %zu oldest event%s waiting for receiver "
                               "'%s': the state file reached its size limit. Look them up on "
                               "WebStorage, and lower outbox.max_items.",
                               trim[i].count, trim[i].count == 1 ? "" : "s", trim[i].receiver);
        log_error("%s", text);
        queued |= tick_relay_send(t, NULL, "state-full", text, trim[i].receiver);
        free(text);
    }
    state_trimmed_free(trim, n);
    if (queued && state_save(t->st, &e) != 0)
        log_error("%s (after a state-full event)", e.msg);
}

int tick_persist(struct tick *t, const char *why)
{
    struct err e;
    int rc = t->opt->dry_run ? state_save_budget(t->st, &e) : state_save(t->st, &e);
    if (rc >= 0 && !t->opt->dry_run)
        report_trimmed(t);
    if (rc == 0)
        return 0;
    log_error("%s (%s)", e.msg, why);
    t->failures++;
    if (rc == STATE_SAVED_BEHIND)
        return 0; /* the state file holds everything: the run goes on */
    t->unsaved = true;
    return -1;
}

/* --- delivery ---------------------------------------------------------- */

/* Queued events whose receiver left the config stay queued (renaming a
 * receiver back delivers them) but must not be forgotten silently. */
static void warn_orphans(struct tick *t)
{
    size_t n = 0;
    char **names = state_outbox_receivers(t->st, &n);
    for (size_t i = 0; i < n; i++) {
        if (!config_receiver(t->cfg, names[i])) {
            size_t count = state_outbox_count(t->st, names[i]);
            log_warn("%zu queued event%s for receiver '%s', which is no longer configured: "
                     "configure it again to deliver them",
                     count, count == 1 ? "" : "s", names[i]);
        }
        free(names[i]);
    }
    free(names);
}

/* Sleeps `ms` milliseconds: the pace some services ask between posts. */
static void pause_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

/* Records the failed delivery of one message, items[from..to): each keeps
 * its outbox place with a later try, or, when the far end refused it for
 * good, is given up for this receiver only (the other receivers have items
 * of their own). The items after it, never tried, keep their place as they
 * were, waiting only as long as the far end asked (Retry-After). */
static void delivery_failed(struct tick *t, const struct receiver_conf *r,
                            const struct outbox_item *items, size_t from, size_t to, size_t n,
                            const struct notify_result *res, const char *error)
{
    long long now = t->opt->now;
    metrics_count_message(t->st, r->name, res->permanent ? "given_up" : "failed");
    for (size_t i = from; i < to; i++) {
        if (res->permanent) {
            state_outbox_done(t->st, items[i].id);
            continue;
        }
        state_outbox_failed(t->st, items[i].id, error, now);
        if (res->retry_after > 0)
            state_outbox_not_before(t->st, items[i].id, now + res->retry_after);
    }
    for (size_t i = to; i < n && res->retry_after > 0; i++)
        state_outbox_not_before(t->st, items[i].id, now + res->retry_after);
    if (res->permanent)
        log_error("%s; refused for good: %zu event%s given up for receiver %s (the other "
                  "receivers are not affected)",
                  error, to - from, to - from == 1 ? "" : "s", r->name);
    else
        log_error("%s; %zu event%s kept for a later run%s", error, to - from,
                  to - from == 1 ? "" : "s", res->retry_after > 0 ? " (as the far end asked)" : "");
    t->failures++;
}

/* Puts the due items in the order their messages show them
 * (notify_order), so that the first message holds what matters most. */
static void order_items(struct outbox_item *items, size_t n)
{
    if (n < 2)
        return; /* nothing to order, and no items at all is a NULL array */
    struct event *evs = xcalloc(n, sizeof *evs);
    size_t *order = xcalloc(n, sizeof *order);
    struct outbox_item *copy = xcalloc(n, sizeof *copy);
    for (size_t i = 0; i < n; i++)
        evs[i] = items[i].event; /* borrowed */
    notify_order(order, evs, n);
    for (size_t i = 0; i < n; i++)
        copy[i] = items[order[i]];
    memcpy(items, copy, n * sizeof *items);
    free(copy);
    free(order);
    free(evs);
}

#define LOG_TEXT_MAX 200 /* bytes of an alert text in the log line of its delivery */

/* One line per event of a delivered message: every alarm at the default
 * level, every other event with -v, so that the log names each event that
 * left, and which receiver took it. */
static void log_delivered(const struct receiver_conf *r, const struct notify_message *m)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct event *ev = &m->events[i];
        bool alarm = notify_rank_of(ev) == NOTIFY_RANK_ALARM;
        char *id = event_id(ev);
        char *text = utf8_clean_shown(ev->text, strlen(ev->text), LOG_TEXT_MAX, UTF8_CONTROLS_NONE);
        const char *who = ev->name && *ev->name ? ev->name : ev->serial;
        log_msg(alarm ? LOG_INFO : LOG_DEBUG, "receiver %s: delivered %s %s (%s): %s", r->name,
                ev->state ? ev->state : "alert", who, id, text);
        free(text);
        free(id);
    }
}

/* Cuts events[0..n) into messages that each fit the receiver's service
 * whole (notify_fit), of at most MESSAGE_MAX_EVENTS events: the first
 * events of message i are events[ends[i - 1]] (0 for the first), its last
 * events[ends[i] - 1]. As many messages as filling each in turn takes,
 * and about as full as each other (162 events to Slack: 8 of 20 or 21,
 * not 7 of 23 and one of a single recovery). At most RUN_MESSAGES_MAX
 * messages: the events after them wait for the next run, so that a
 * receiver holding thousands of items costs a run a bounded number of
 * measurements (each renders the message) however long it was down.
 * Returns the number of messages; the caller frees *ends. */
static size_t cut_messages(size_t **ends, const struct notify_env *env,
                           const struct receiver_conf *r, const struct event *events, size_t n,
                           long long now)
{
    size_t parts = 0, filled = 0;
    *ends = xcalloc(n ? n : 1, sizeof **ends);
    for (int pass = 0; pass < 2; pass++) {
        filled = parts; /* the first pass: each message as full as it can be */
        parts = 0;
        for (size_t start = 0; start < n;) {
            if (pass == 0 && parts == RUN_MESSAGES_MAX) {
                n = start; /* the second pass evens out what this run sends */
                break;
            }
            size_t left = n - start, count = left < MESSAGE_MAX_EVENTS ? left : MESSAGE_MAX_EVENTS;
            if (pass == 1 && filled > parts) {
                size_t even = (left + (filled - parts) - 1) / (filled - parts);
                count = even < count ? even : count;
            }
            /* n events take at most n messages: measured as "n of n" */
            struct notify_message m = {
                .events = events + start, .n = count, .now = now, .part = n, .parts = n};
            start += notify_fit(env, r, &m);
            (*ends)[parts++] = start;
        }
    }
    return parts;
}

static void deliver_receiver(struct tick *t, const struct notify_env *env,
                             const struct receiver_conf *r)
{
    size_t n = 0, *ends = NULL;
    long long now = t->opt->now;
    struct outbox_item *items = state_outbox_due(t->st, r->name, now, &n);
    order_items(items, n);
    struct event *all = xcalloc(n ? n : 1, sizeof *all);
    for (size_t i = 0; i < n; i++)
        all[i] = items[i].event; /* borrowed, freed with items */
    /* Every event is shown whole in a message of its own receiver: what
     * one message cannot hold goes in the next, never as "…and N more". */
    size_t parts = cut_messages(&ends, env, r, all, n, now);
    for (size_t part = 0, start = 0;
         part < parts && !tick_stopping(t) && !t->unsaved && !tick_out_of_time(t, TICK_DELIVERY);
         start = ends[part++]) {
        size_t count = ends[part] - start;
        struct notify_message m = {
            .events = all + start, .n = count, .now = now, .part = part + 1, .parts = parts};
        struct notify_result res;
        struct err e;
        if (start > 0 && notify_pace_ms(r->type))
            pause_ms(notify_pace_ms(r->type));
        if (t->opt->dry_run) {
            struct buf text;
            buf_init(&text, 0);
            if (notify_render_text(&text, env, NULL, r->name, &m, &e) < 0)
                buf_printf(&text, "(cannot show it: %s)\n", e.msg);
            printf("[dry run: not sent to %s receiver '%s']\n%s\n", notify_type_name(r->type),
                   r->name, buf_str(&text));
            buf_free(&text);
        } else if (notify_send(env, r, &m, &res, &e) == 0) {
            for (size_t i = 0; i < count; i++)
                state_outbox_done(t->st, items[start + i].id);
            metrics_count_message(t->st, r->name, "sent");
            state_receiver_result(t->st, r->name, true, NULL, now);
            char which[64] = "";
            if (parts > 1)
                snprintf(which, sizeof which, " (message %zu of %zu)", part + 1, parts);
            log_info("receiver %s: %zu event%s delivered%s", r->name, count, count == 1 ? "" : "s",
                     which);
            log_delivered(r, &m);
            /* Each accepted message is recorded at once, so that a kill
             * can repeat only the message in flight. */
            tick_persist(t, "after a delivery");
        } else {
            /* A receiver that failed or asked for a pause gets nothing
             * more in this run; its other messages wait untouched. */
            state_receiver_result(t->st, r->name, false, e.msg, now);
            delivery_failed(t, r, items, start, start + count, n, &res, e.msg);
            break;
        }
    }
    free(ends);
    free(all);
    state_outbox_free(items, n);
}

/* --- self-monitoring (selfcheck.h) ------------------------------------- */

/* The accounts of the config that use `login`, as "tokyo, osaka"; caller
 * frees. */
static char *login_accounts(const struct config *c, const char *login)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < c->n_accounts; i++)
        if (strcmp(c->accounts[i].login_id, login) == 0)
            buf_printf(&b, "%s%s", b.len ? ", " : "", c->accounts[i].name);
    return buf_steal(&b);
}

/* The SHA-256 of the credentials of every account of `login`: a change to
 * any of them ends a pause. Caller frees. */
static char *login_creds(const struct config *c, const char *login)
{
    size_t n = 0;
    const char **parts = xcalloc(3 * c->n_accounts + 1, sizeof *parts);
    for (size_t i = 0; i < c->n_accounts; i++) {
        const struct account_conf *a = &c->accounts[i];
        if (strcmp(a->login_id, login) != 0)
            continue;
        parts[n++] = a->api_key;
        parts[n++] = a->login_id;
        parts[n++] = a->login_pass;
    }
    char *hex = selfcheck_creds(parts, n);
    free(parts);
    return hex;
}

/* The devices of `login` parked after refusals in a row, as "5214000A
 * (tokyo), 5214000B (osaka)"; "" when none. Caller frees. */
static char *login_parked(struct tick *t, const char *login)
{
    const struct config *c = t->cfg;
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < c->n_accounts; i++) {
        if (strcmp(c->accounts[i].login_id, login) != 0)
            continue;
        struct state_device d;
        for (size_t k = 0; state_device_at(t->st, c->accounts[i].name, k, &d); k++)
            if (d.refusals >= REFUSALS_TO_PARK)
                buf_printf(&b, "%s%s (%s)", b.len ? ", " : "", d.serial, c->accounts[i].name);
    }
    return buf_steal(&b);
}

static char *condition_key(enum selfcheck_what what, const char *subject)
{
    return xasprintf("%s/%s", selfcheck_name(what), subject);
}

bool tick_login_paused(struct tick *t, const char *login)
{
    struct state_condition cond;
    char *key = condition_key(SELFCHECK_LOGIN_REFUSED, login);
    bool known = state_condition(t->st, key, &cond);
    /* The fingerprint only when a refusal is on record: its digest's
     * first use sets up OpenSSL's providers, a millisecond every run. */
    char *creds = known ? login_creds(t->cfg, login) : NULL;
    bool paused = known && selfcheck_paused(&cond, creds, t->opt->now);
    if (paused) {
        log_warn("login %s: the platform refused its credentials (401); no call until the "
                 "configuration changes or %lld s have passed",
                 login, cond.retry_at - t->opt->now);
        t->failures++;
    } else if (known && cond.opened) {
        log_info("login %s: trying the refused credentials again", login);
    }
    state_condition_clear(&cond);
    free(creds);
    free(key);
    return paused;
}

bool tick_relay_send(struct tick *t, const char *account, const char *condition, const char *text,
                     const char *not_to)
{
    const struct config *c = t->cfg;
    size_t sent = 0, full = 0;
    log_warn("relay event (%s): %s", condition, text);
    if (t->opt->dry_run)
        return false;
    struct event ev = {
        .account = xstrdup(account ? account : ""),
        .serial = xstrdup("wsrelay"),
        .model = xstrdup(""),
        .name = xstrdup("wsrelay"),
        .base_serial = xstrdup("wsrelay"),
        .base_model = xstrdup(""),
        .base_name = xstrdup("wsrelay"),
        .unixtime = state_relay_time(t->st, t->opt->now),
        .kind = xstrdup("relay"),
        .text = xstrdup(text),
        .state = xstrdup("other"),
        .condition = xstrdup(condition),
    };
    size_t n = c->self.n_receivers ? c->self.n_receivers : c->n_receivers;
    for (size_t i = 0; i < n; i++) {
        const char *name = c->self.n_receivers ? c->self.receivers[i] : c->receivers[i].name;
        if (not_to && strcmp(name, not_to) == 0)
            continue;
        if (state_outbox_count(t->st, name) >= (size_t)c->outbox.max_items) {
            full++;
            continue;
        }
        state_enqueue(t->st, name, &ev, t->opt->now);
        sent++;
    }
    if (!sent && full)
        log_error("relay event (%s) has no receiver to go to: the outbox of every other "
                  "receiver is full (outbox.max_items)",
                  condition);
    else if (!sent)
        log_error("relay event (%s) has no receiver to go to: add another receiver to "
                  "self.receivers",
                  condition);
    event_clear(&ev);
    return sent > 0;
}

/* Carries out selfcheck's verdict on one condition. Returns true when an
 * event was queued. */
static bool self_step(struct tick *t, const struct selfcheck_input *in, const char *subject,
                      const char *account, const char *accounts, const char *detail,
                      const char *not_to)
{
    struct state_condition prev, next;
    bool keep = false;
    char *key = condition_key(in->what, subject);
    bool had = state_condition(t->st, key, &prev);
    enum selfcheck_action act =
        selfcheck_step(&next, &keep, had ? &prev : NULL, in, t->opt->now, t->cfg->self.after);
    if (keep)
        state_set_condition(t->st, key, &next);
    else if (had)
        state_drop_condition(t->st, key);
    if (act != SELFCHECK_NONE) {
        const struct state_condition *c = act == SELFCHECK_OPEN ? &next : &prev;
        char *text = selfcheck_text(in->what, act, subject, accounts, c, detail, t->opt->now);
        char *cond = act == SELFCHECK_OPEN ? xstrdup(selfcheck_name(in->what))
                                           : xasprintf("%s-cleared", selfcheck_name(in->what));
        tick_relay_send(t, account, cond, text, not_to);
        free(cond);
        free(text);
    }
    state_condition_clear(&prev);
    state_condition_clear(&next);
    free(key);
    return act != SELFCHECK_NONE;
}

/* The login IDs' conditions, from the health this run recorded. */
static void self_logins(struct tick *t)
{
    const struct config *c = t->cfg;
    for (size_t i = 0; i < c->n_accounts; i++) {
        const char *login = c->accounts[i].login_id;
        struct state_health h;
        if (!config_login_first(c, i) || !state_login_health(t->st, login, &h))
            continue;
        char *accounts = login_accounts(c, login);
        bool failing = h.failures > 0;
        /* selfcheck_step keeps the fingerprint only of a refusal. */
        char *creds = failing && h.status == 401 ? login_creds(c, login) : NULL;
        bool tried = h.error_at >= t->opt->now || h.last_ok >= t->opt->now;
        struct selfcheck_input refused = {.what = SELFCHECK_LOGIN_REFUSED,
                                          .bad = failing && h.status == 401,
                                          .good = !failing && h.last_ok > 0,
                                          .tried = tried,
                                          .creds = creds};
        struct selfcheck_input down = {.what = SELFCHECK_PLATFORM_FAILING,
                                       .bad = failing && h.status != 401,
                                       .good = !failing && h.last_ok > 0};
        self_step(t, &refused, login, c->accounts[i].name, accounts, h.error, NULL);
        self_step(t, &down, login, c->accounts[i].name, accounts, h.error, NULL);
        char *parked = login_parked(t, login);
        struct selfcheck_input devices = {
            .what = SELFCHECK_DEVICES_REFUSED, .bad = *parked != '\0', .good = *parked == '\0'};
        self_step(t, &devices, login, c->accounts[i].name, accounts, parked, NULL);
        free(parked);
        free(creds);
        free(accounts);
        state_health_clear(&h);
    }
}

/* The receivers' conditions, after delivery. One condition per receiver
 * covers both "its deliveries fail" and "its outbox holds events longer
 * than self.after": a receiver that fails keeps its events, so the two
 * are one thing to the people on call, and one event says it. The event
 * goes to the other self receivers: a receiver that fails cannot tell
 * about itself. Returns true when an event was queued. */
static bool self_receivers(struct tick *t)
{
    const struct config *c = t->cfg;
    bool queued = false;
    for (size_t i = 0; i < c->n_receivers; i++) {
        const char *name = c->receivers[i].name;
        struct state_health h;
        struct outbox_summary sum;
        state_receiver_health(t->st, name, &h);
        state_outbox_summary(t->st, name, &sum);
        bool bad = h.failures > 0 || sum.count > 0;
        struct selfcheck_input in = {.what = SELFCHECK_RECEIVER_FAILING,
                                     .bad = bad,
                                     .good = !bad,
                                     .since = sum.count ? sum.oldest : 0};
        queued |= self_step(t, &in, name, NULL, "", h.error, name);
        state_health_clear(&h);
    }
    return queued;
}

/* Conditions whose login or receiver left the config are forgotten; one
 * that was reported gets its recovery event, since nothing else will ever
 * close it (a mistyped login ID, fixed, is a new login). */
static void self_forget(struct tick *t)
{
    size_t n = 0;
    char **keys = state_condition_keys(t->st, &n);
    for (size_t i = 0; i < n; i++) {
        const char *subject = strchr(keys[i], '/');
        bool known = false;
        if (subject) {
            subject++;
            known = config_receiver(t->cfg, subject) != NULL;
            for (size_t k = 0; k < t->cfg->n_accounts && !known; k++)
                known = strcmp(t->cfg->accounts[k].login_id, subject) == 0;
        }
        struct state_condition c;
        if (!known && subject && state_condition(t->st, keys[i], &c)) {
            for (int w = SELFCHECK_LOGIN_REFUSED; c.opened && w <= SELFCHECK_DEVICES_REFUSED; w++) {
                const char *name = selfcheck_name((enum selfcheck_what)w);
                size_t len = strlen(name);
                if (strncmp(keys[i], name, len) != 0 || keys[i][len] != '/')
                    continue;
                char *text = selfcheck_text((enum selfcheck_what)w, SELFCHECK_GONE, subject, "", &c,
                                            NULL, t->opt->now);
                char *cond = xasprintf("%s-cleared", name);
                tick_relay_send(t, NULL, cond, text,
                                w == SELFCHECK_RECEIVER_FAILING ? subject : NULL);
                free(cond);
                free(text);
            }
            state_condition_clear(&c);
        }
        if (!known)
            state_drop_condition(t->st, keys[i]);
        free(keys[i]);
    }
    free(keys);
}

static void free_strings(char **v, size_t n);

/* A relay event that opened a condition of a login, still waiting in the
 * outbox (its receiver was failing) when that condition is over, is no
 * longer true: "paused until 15:23" must not arrive after the fix. It is
 * dropped with a log line; the condition's recovery event says the rest. */
static void self_drop_stale(struct tick *t)
{
    size_t n_receivers = 0;
    char **receivers = state_outbox_receivers(t->st, &n_receivers);
    for (size_t r = 0; r < n_receivers; r++) {
        size_t n = 0;
        struct outbox_item *items = state_outbox_due(t->st, receivers[r], LLONG_MAX, &n);
        for (size_t i = 0; i < n; i++) {
            const struct event *ev = &items[i].event;
            if (!ev->condition || strcmp(ev->kind, "relay") != 0)
                continue;
            const struct account_conf *a = config_account(t->cfg, ev->account);
            const char *login = a ? a->login_id : NULL;
            struct state_condition c;
            char *key = xasprintf("%s/%s", ev->condition, login ? login : "");
            bool have = login && state_condition(t->st, key, &c);
            if (selfcheck_stale(ev->condition, login, have ? &c : NULL)) {
                log_info("receiver %s: dropped a relay event (%s) queued %lld s ago that is no "
                         "longer true: %s",
                         receivers[r], ev->condition, t->opt->now - items[i].queued_at, ev->text);
                state_outbox_done(t->st, items[i].id);
            }
            if (have)
                state_condition_clear(&c);
            free(key);
        }
        state_outbox_free(items, n);
    }
    free_strings(receivers, n_receivers);
}

/* outbox.max_age and outbox.max_items, applied after delivery: they bound
 * what a receiver could not take, so a burst bigger than the cap still
 * reaches a receiver that works. What waits too long, or beyond the cap,
 * is given up, never silently: an error, a metric, a relay event. The
 * event goes to the other receivers, as a failing receiver's own condition
 * does: in the receiver's own outbox it would wait like the events it is
 * about. Returns true when an event was queued. */
static bool outbox_limits(struct tick *t)
{
    bool queued = false;
    const struct config *c = t->cfg;
    size_t n = 0;
    char **names = state_outbox_receivers(t->st, &n);
    char age[24];
    duration_format(age, sizeof age, c->outbox.max_age);
    for (size_t i = 0; i < n; i++) {
        size_t expired = state_outbox_expire(t->st, names[i], t->opt->now - c->outbox.max_age);
        if (expired) {
            metrics_count_lost(t->st, names[i], "expired", expired);
            char *text = xasprintf("wsrelay gave up %zu event%s for receiver '%s': they could "
                                   "not be delivered for %s (outbox.max_age). Look them up on "
                                   "WebStorage.",
                                   expired, expired == 1 ? "" : "s", names[i], age);
            log_error("%s", text);
            queued |= tick_relay_send(t, NULL, "outbox-expired", text, names[i]);
            free(text);
        }
        size_t dropped = state_outbox_trim(t->st, names[i], (size_t)c->outbox.max_items);
        if (dropped) {
            metrics_count_lost(t->st, names[i], "dropped", dropped);
            char *text = xasprintf("wsrelay dropped the %zu oldest event%s waiting for receiver "
                                   "'%s': its outbox holds at most %ld (outbox.max_items). Look "
                                   "them up on WebStorage.",
                                   dropped, dropped == 1 ? "" : "s", names[i], c->outbox.max_items);
            log_error("%s", text);
            queued |= tick_relay_send(t, NULL, "outbox-full", text, names[i]);
            free(text);
        }
        free(names[i]);
    }
    free(names);
    return queued;
}

/* The state file was corrupt and state_open moved it aside. */
static void state_corrupt_event(struct tick *t)
{
    const char *why = NULL;
    const char *aside = state_set_aside(t->st, &why);
    if (!aside)
        return;
    char span[24];
    duration_format(span, sizeof span, t->cfg->catch_up);
    char *text = xasprintf("wsrelay's state file was unusable (%s) and was moved aside to %s. "
                           "wsrelay started over: alerts older than catch_up (%s) were recorded "
                           "as seen without being sent, and alerts of the last %s may be sent "
                           "again.",
                           why, aside, span, span);
    tick_relay_send(t, NULL, "state-corrupt", text, NULL);
    free(text);
}

/* After a run without failure: GET self.heartbeat. Its failure is logged
 * and counted, never a failure of the run. */
static void heartbeat(struct tick *t)
{
    struct err e;
    long status = 0;
    char *shown = http_redact_url(t->cfg->self.heartbeat);
    bool ok = http_get(&status, t->cfg->self.heartbeat, &e) == 0 && status >= 200 && status < 300;
    char *why = NULL;
    if (!ok)
        why = status ? xasprintf("GET %s: HTTP %ld", shown, status) : xstrdup(e.msg);
    if (ok)
        log_debug("heartbeat: GET %s: HTTP %ld", shown, status);
    else
        log_warn("heartbeat: %s (the run itself went well)", why);
    metrics_count_heartbeat(t->st, ok);
    state_heartbeat_result(t->st, ok, status, why, t->opt->now);
    free(why);
    free(shown);
}

static bool throttle_get(void *ctx, const char *rule, const char *serial, const char *kind,
                         struct throttle_entry *out)
{
    return state_throttle(ctx, rule, serial, kind, out);
}

static void throttle_set(void *ctx, const char *rule, const char *serial, const char *kind,
                         const struct throttle_entry *te)
{
    state_set_throttle(ctx, rule, serial, kind, te);
}

/* Whether a login's or a receiver's last attempt failed: self-monitoring
 * may open a condition on that with time alone (self.after). */
static bool any_failing(const struct tick *t)
{
    const struct config *c = t->cfg;
    bool failing = false;
    struct state_health h;
    for (size_t i = 0; i < c->n_accounts && !failing; i++) {
        if (config_login_first(c, i) && state_login_health(t->st, c->accounts[i].login_id, &h)) {
            failing = h.failures > 0;
            state_health_clear(&h);
        }
    }
    for (size_t i = 0; i < c->n_receivers && !failing; i++) {
        if (state_receiver_health(t->st, c->receivers[i].name, &h)) {
            failing = h.failures > 0;
            state_health_clear(&h);
        }
    }
    return failing;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Whether the outbox holds an item for any receiver. */
static bool outbox_waits(const struct tick *t)
{
    size_t n = 0;
    char **receivers = state_outbox_receivers(t->st, &n);
    free_strings(receivers, n);
    return n > 0;
}

/* Whether anything is waiting that only a full run looks after: an item
 * in the outbox (its next try, its max_age), an open self-monitoring
 * condition (it may close, or grow into a relay event, with time alone),
 * or a failure that may open one. */
static bool anything_waiting(const struct tick *t)
{
    size_t n = 0;
    char **keys = state_condition_keys(t->st, &n);
    free_strings(keys, n);
    return n > 0 || outbox_waits(t) || any_failing(t);
}

/* Leaves the quiet file (quiet.h) for the runs until the next call is due,
 * when this run ended well and nothing else asks for a full run: no
 * heartbeat or metrics_file (both want every run), nothing waiting, and
 * the configuration unchanged since it was read. Called last in a run
 * that is not a dry one, with the state saved and still locked. */
static void leave_quiet(struct tick *t)
{
    const struct config *c = t->cfg;
    struct quiet q = {.written_at = t->opt->now};
    struct file_id now_config;
    struct err e;
    if (t->failures || t->unsaved || tick_stopping(t) || c->self.heartbeat || c->metrics_file ||
        anything_waiting(t))
        return;
    q.until = poll_quiet_until(t);
    if (q.until <= t->opt->now || file_id_of(&q.state, c->state_file) < 0 ||
        file_id_of(&now_config, c->path) < 0 || !file_id_same(&now_config, &c->file) ||
        quiet_env_digest(&q.env, c->path) < 0)
        return;
    q.config = c->file;
    if (quiet_write(&q, c->state_file, &e) < 0)
        log_warn("%s (the next runs will be full ones)", e.msg);
    else
        log_debug("quiet until %lld: runs before then have nothing to do", q.until);
}

int run_once(const struct config *c, const struct run_options *o)
{
    struct tick t = {.cfg = c, .opt = o};
    struct err e;
    clock_gettime(CLOCK_MONOTONIC, &t.started);
    /* A run that fails or ends halfway, whatever the step, leaves no quiet
     * time behind: so that the next one tries again, and says so. */
    if (quiet_forget(c->state_file, &e) < 0) {
        log_error("%s", e.msg);
        t.failures++;
        goto out;
    }
    if (rules_new(&t.rules, c, &e) < 0 || state_open(&t.st, c->state_file, o->lock_wait, &e) < 0) {
        log_error("%s", e.msg);
        t.failures++;
        goto out;
    }
    t.throttles = (struct throttle_store){.get = throttle_get, .set = throttle_set, .ctx = t.st};
    state_clamp_clock(t.st, o->now, platform_op_limit(PLATFORM_ALERT).span);
    state_prune_throttles(t.st, o->now - THROTTLE_KEEP);
    state_prune_watches(t.st, o->now - WATCH_KEEP);
    state_corrupt_event(&t);
    warn_orphans(&t);
    poll_all(&t);
    if (!o->dry_run) {
        self_forget(&t);
        self_logins(&t);
        self_drop_stale(&t);
    }
    recent_attach(&t);
    /* Nothing is delivered that could not be recorded as delivered. With
     * nothing to deliver, the save after delivery keeps what polling
     * found: one save fewer in most runs (a whole serialisation and
     * write), and nothing that a crash in between could lose is an
     * alert (early warnings and relay events are in the outbox). */
    if (!o->dry_run && outbox_waits(&t) && tick_persist(&t, "after polling") < 0)
        goto out;
    /* Charts are drawn within the time deliveries may start in, and stop
     * with the run. */
    struct notify_extras extras = {.charts = {.deadline_ms = (long long)t.started.tv_sec * 1000 +
                                                             t.started.tv_nsec / 1000000 +
                                                             (long long)c->run_time * 1000,
                                              .stop = o->stop}};
    struct notify_env env = {.templates_dir = c->templates_dir, .extras = &extras};
    for (size_t i = 0; i < c->n_receivers && !tick_stopping(&t); i++)
        deliver_receiver(&t, &env, &c->receivers[i]);
    if (!o->dry_run) {
        /* What a receiver could not take, and its condition, are known
         * after delivery; their relay events go out in this run to the
         * receivers that work. A tick stopped before it delivered
         * everything leaves the outbox's limits to the next one. */
        bool queued = !tick_stopping(&t) && !t.late[TICK_DELIVERY] && outbox_limits(&t);
        queued |= self_receivers(&t);
        if (queued && tick_persist(&t, "after a relay event") == 0)
            for (size_t i = 0; i < c->n_receivers && !tick_stopping(&t); i++)
                deliver_receiver(&t, &env, &c->receivers[i]);
        if (!t.failures)
            state_set_counter(t.st, METRICS_LAST_SUCCESS, o->now);
        tick_persist(&t, "after delivery");
        if (!t.failures && c->self.heartbeat) {
            heartbeat(&t);
            tick_persist(&t, "after the heartbeat");
        }
        if (c->metrics_file && metrics_write(c->metrics_file, c, t.st, o->now, !t.failures, &e) < 0)
            log_warn("metrics: %s", e.msg);
        leave_quiet(&t);
    }
out:
    state_close(t.st);
    rules_free(t.rules);
    return t.failures ? RUN_FAILED : RUN_OK;
}
