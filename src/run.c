/* One tick of the relay.
 *
 * The order of the steps is what makes a crash harmless:
 *   1. plan the platform calls and record them in the budget ledger, then
 *      save: a call counts from the moment it is sent, even if the run dies
 *      during it;
 *   2. make the calls; each new event is queued in the outbox for every
 *      receiver and its key marked seen, in memory;
 *   3. save: from here on nothing polled can be lost;
 *   4. deliver what is due; a receiver that accepted an item never sees it
 *      again, one that failed keeps it with a later next try;
 *   5. save again.
 * A crash between 4 and 5 can repeat a delivery; nothing can be lost.
 *
 * A dry run makes the same calls (the platform counts them, so the ledger
 * and device list are saved in step 1) but saves nothing after them and
 * prints the messages instead of sending them. */
#include "run.h"
#include "event.h"
#include "notify/notify.h"
#include "platform.h"
#include "scheduler.h"
#include "state.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DISCOVERY_INTERVAL 600 /* seconds between two Get Current Readings */
#define MESSAGE_MAX_EVENTS 100 /* events in one message; more go in several */

/* The platform's published limits, per login ID and operation. */
static const struct {
    int limit;
    long span;
} op_limits[PLATFORM_N_OPS] = {
    [PLATFORM_CURRENT] = {10, 120},
    [PLATFORM_ALERT] = {12, 3600},
};

struct tick {
    const struct config *cfg;
    const struct run_options *opt;
    struct state *st;
    int failures;
};

static struct sched_budget budget_of(const struct tick *t, const char *login, enum platform_op op)
{
    struct sched_budget b = {
        .limit = op_limits[op].limit,
        .span = op_limits[op].span,
        .used = state_calls_since(t->st, login, op, t->opt->now - op_limits[op].span),
        .last_call = state_last_call(t->st, login, op),
        .blocked_until = state_blocked_until(t->st, login, op),
    };
    return b;
}

/* What a reply tells about the budget: the rate-limit headers, a 429. */
static void note_reply(struct tick *t, const char *login, enum platform_op op,
                       const struct platform_reply *r)
{
    long long now = t->opt->now;
    if (r->rl.present) {
        state_set_ratelimit(t->st, login, op, &r->rl, now);
        if (r->rl.remaining <= 0)
            state_block(t->st, login, op, now + (r->rl.reset > 0 ? r->rl.reset : op_limits[op].span));
    }
    if (r->http_status == 429 && !(r->rl.present && r->rl.remaining <= 0))
        state_block(t->st, login, op, now + op_limits[op].span);
}

static int save(struct tick *t, const char *why)
{
    struct err e;
    if (state_save(t->st, &e) == 0)
        return 0;
    log_error("%s (%s)", e.msg, why);
    return -1;
}

/* --- discovery --------------------------------------------------------- */

static bool discovery_due(const struct tick *t, const struct account_conf *a)
{
    long long at = state_discovered_at(t->st, a->name);
    return a->devices_auto && (at == 0 || at > t->opt->now || t->opt->now - at >= DISCOVERY_INTERVAL);
}

static void discover(struct tick *t, const struct account_conf *a, struct platform *p)
{
    struct platform_reply r = {0};
    struct device_info *infos = NULL;
    size_t n = 0;
    struct err e;
    if (platform_call(p, PLATFORM_CURRENT, NULL, NULL, &r) < 0) {
        log_error("account %s: discovering devices: %s", a->name, r.message);
        t->failures++;
        goto out;
    }
    if (platform_parse_devices(&infos, &n, r.body, &e) < 0) {
        log_error("account %s: discovering devices: %s", a->name, e.msg);
        t->failures++;
        goto out;
    }
    struct state_device *devs = xcalloc(n, sizeof *devs);
    for (size_t i = 0; i < n; i++) {
        devs[i].serial = infos[i].serial;
        devs[i].base = infos[i].base_serial;
        devs[i].model = infos[i].model;
        devs[i].name = infos[i].name;
    }
    state_set_devices(t->st, a->name, devs, n, t->opt->now);
    state_set_discovered(t->st, a->name, t->opt->now);
    free(devs);
    log_info("account %s: %zu device%s found", a->name, n, n == 1 ? "" : "s");
out:
    note_reply(t, a->login_id, PLATFORM_CURRENT, &r);
    device_info_free(infos, n);
    platform_reply_free(&r);
}

/* --- the devices an account polls -------------------------------------- */

/* The account's devices after include/exclude: discovered ones, or those of
 * the config with their last poll taken from the state. */
static struct state_device *account_devices(const struct tick *t, const struct account_conf *a,
                                            size_t *n)
{
    size_t known_n = 0, count = 0;
    struct state_device *known = state_devices(t->st, a->name, &known_n);
    size_t cap = a->devices_auto ? known_n : a->n_devices;
    struct state_device *out = xcalloc(cap ? cap : 1, sizeof *out);
    if (a->devices_auto) {
        for (size_t i = 0; i < known_n; i++) {
            if (!account_wants_serial(a, known[i].serial))
                continue;
            out[count++] = known[i];
            memset(&known[i], 0, sizeof known[i]);
        }
    } else {
        for (size_t i = 0; i < a->n_devices; i++) {
            const struct device_conf *d = &a->devices[i];
            if (!account_wants_serial(a, d->serial))
                continue;
            struct state_device *dev = &out[count++];
            dev->serial = xstrdup(d->serial);
            dev->base = xstrdup(d->base);
            dev->model = xstrdup("");
            dev->name = xstrdup("");
            for (size_t k = 0; k < known_n; k++)
                if (strcmp(known[k].serial, d->serial) == 0) {
                    dev->last_poll = known[k].last_poll;
                    dev->last_ok = known[k].last_ok;
                }
        }
    }
    state_devices_free(known, known_n);
    *n = count;
    return out;
}

/* --- polling ----------------------------------------------------------- */

/* Queues the events of one alert-log reply that were not seen before. On a
 * device's first successful poll, entries older than catch_up are only
 * marked seen: a new installation must not page anyone for last week.
 * Returns -1 when the reply could not be read. */
static int take_events(struct tick *t, const struct account_conf *a,
                        const struct state_device *dev, const struct json_object *body)
{
    struct event_list list = {0};
    struct err e;
    size_t fresh = 0, caught_up = 0;
    long long now = t->opt->now;
    int rc = -1;
    if (event_parse_alert_log(&list, body, a->name, &e) < 0) {
        log_error("account %s, device %s: %s", a->name, dev->serial, e.msg);
        t->failures++;
        goto out;
    }
    for (size_t i = 0; i < list.n; i++) {
        const struct event *ev = &list.items[i];
        if (state_seen(t->st, ev->serial, ev->unixtime, ev->kind))
            continue;
        if (dev->last_ok == 0 && ev->unixtime < now - t->cfg->catch_up) {
            caught_up++;
        } else {
            for (size_t r = 0; r < t->cfg->n_receivers; r++)
                state_enqueue(t->st, t->cfg->receivers[r].name, ev, now);
            fresh++;
        }
        state_mark_seen(t->st, ev->serial, ev->unixtime, ev->kind);
    }
    /* Entries older than the oldest one returned have left the device's log
     * for good, so their keys can go. */
    if (list.oldest > 0)
        state_prune_seen(t->st, dev->serial, list.oldest);
    log_info("account %s, device %s: %zu entr%s, %zu new event%s%s", a->name, dev->serial,
             list.entries, list.entries == 1 ? "y" : "ies", fresh, fresh == 1 ? "" : "s",
             caught_up ? " (older ones recorded as seen)" : "");
    rc = 0;
out:
    event_list_free(&list);
    return rc;
}

static void poll_device(struct tick *t, const struct account_conf *a, struct platform *p,
                        const struct state_device *dev, bool *stop)
{
    struct platform_reply r = {0};
    bool ok = false;
    if (platform_call(p, PLATFORM_ALERT, dev->serial, dev->base, &r) < 0) {
        log_error("account %s, device %s: alert logs: %s", a->name, dev->serial, r.message);
        t->failures++;
        /* Bad credentials or an exhausted budget fail every further call. */
        if (r.http_status == 401 || r.http_status == 429)
            *stop = true;
    } else {
        ok = take_events(t, a, dev, r.body) == 0;
    }
    /* Polled, successfully or not: the device goes to the back of the line. */
    state_device_polled(t->st, a->name, dev->serial, dev->base, t->opt->now, ok);
    note_reply(t, a->login_id, PLATFORM_ALERT, &r);
    platform_reply_free(&r);
}

/* Plans the account's alert calls and records them before they are made. */
static size_t plan_alert_calls(struct tick *t, const struct account_conf *a,
                               const struct state_device *devs, size_t n, size_t *order)
{
    struct sched_device *sd = xcalloc(n ? n : 1, sizeof *sd);
    for (size_t i = 0; i < n; i++)
        sd[i].last_poll = devs[i].last_poll;
    struct sched_budget b = budget_of(t, a->login_id, PLATFORM_ALERT);
    size_t planned = scheduler_plan(order, n, sd, n, &b, t->opt->now);
    for (size_t i = 0; i < planned; i++)
        state_record_call(t->st, a->login_id, PLATFORM_ALERT, t->opt->now);
    free(sd);
    return planned;
}

/* What one account does in this tick. */
struct account_tick {
    const struct account_conf *a;
    struct platform *p;       /* NULL when the account cannot be used */
    bool discover;            /* a Get Current Readings call was recorded */
    struct state_device *devs;
    size_t n_devs;
    size_t *order;            /* indices into devs, most urgent first */
    size_t planned;           /* alert calls recorded */
};

static void account_tick_free(struct account_tick *at)
{
    platform_free(at->p);
    state_devices_free(at->devs, at->n_devs);
    free(at->order);
}

/* Records the discovery call if one is due and the budget allows it. */
static void plan_discovery(struct tick *t, struct account_tick *at)
{
    struct err e;
    if (platform_new(&at->p, at->a, &e) < 0) {
        log_error("account %s: %s", at->a->name, e.msg);
        t->failures++;
        return;
    }
    if (!discovery_due(t, at->a))
        return;
    struct sched_budget b = budget_of(t, at->a->login_id, PLATFORM_CURRENT);
    if (b.used >= (size_t)b.limit || t->opt->now < b.blocked_until) {
        log_info("account %s: discovery waits for the current-readings budget", at->a->name);
        return;
    }
    state_record_call(t->st, at->a->login_id, PLATFORM_CURRENT, t->opt->now);
    at->discover = true;
}

static void plan_polls(struct tick *t, struct account_tick *at)
{
    if (!at->p)
        return;
    at->devs = account_devices(t, at->a, &at->n_devs);
    if (at->n_devs == 0) {
        log_info("account %s: no devices to poll yet", at->a->name);
        return;
    }
    at->order = xcalloc(at->n_devs, sizeof *at->order);
    at->planned = plan_alert_calls(t, at->a, at->devs, at->n_devs, at->order);
    if (at->planned == 0)
        log_debug("account %s: no alert call allowed now", at->a->name);
}

static void poll_planned(struct tick *t, struct account_tick *at)
{
    bool stop = false;
    for (size_t i = 0; i < at->planned && !stop; i++)
        poll_device(t, at->a, at->p, &at->devs[at->order[i]], &stop);
}

/* Steps 1 and 2 for every account. Each batch of calls is recorded and
 * saved before the first of them is sent. */
static void poll_accounts(struct tick *t)
{
    size_t n = t->cfg->n_accounts;
    struct account_tick *ats = xcalloc(n, sizeof *ats);
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        ats[i].a = &t->cfg->accounts[i];
        plan_discovery(t, &ats[i]);
        any = any || ats[i].discover;
    }
    if (any && save(t, "before discovery") < 0) {
        t->failures++;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (ats[i].discover)
            discover(t, ats[i].a, ats[i].p);
    any = false;
    for (size_t i = 0; i < n; i++) {
        plan_polls(t, &ats[i]);
        any = any || ats[i].planned;
    }
    if (any && save(t, "before polling") < 0) {
        t->failures++;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        poll_planned(t, &ats[i]);
out:
    for (size_t i = 0; i < n; i++)
        account_tick_free(&ats[i]);
    free(ats);
}

/* --- delivery ---------------------------------------------------------- */

static void deliver_receiver(struct tick *t, const struct receiver_conf *r)
{
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(t->st, r->name, t->opt->now, &n);
    for (size_t start = 0; start < n; start += MESSAGE_MAX_EVENTS) {
        size_t count = n - start < MESSAGE_MAX_EVENTS ? n - start : MESSAGE_MAX_EVENTS;
        struct event *evs = xcalloc(count, sizeof *evs);
        struct err e;
        for (size_t i = 0; i < count; i++)
            evs[i] = items[start + i].event; /* borrowed, freed with items */
        if (t->opt->dry_run) {
            struct buf text;
            buf_init(&text, 0);
            notify_render_text(&text, r->name, evs, count);
            printf("[dry run: not sent to %s receiver '%s']\n%s\n", notify_type_name(r->type),
                   r->name, buf_str(&text));
            buf_free(&text);
        } else if (notify_send(r, evs, count, &e) == 0) {
            for (size_t i = 0; i < count; i++)
                state_outbox_done(t->st, items[start + i].id);
            log_info("receiver %s: %zu event%s delivered", r->name, count, count == 1 ? "" : "s");
        } else {
            for (size_t i = 0; i < count; i++)
                state_outbox_failed(t->st, items[start + i].id, e.msg, t->opt->now);
            log_error("%s; %zu event%s kept for a later run", e.msg, count,
                      count == 1 ? "" : "s");
            t->failures++;
        }
        free(evs);
    }
    state_outbox_free(items, n);
}

int run_once(const struct config *c, const struct run_options *o)
{
    struct tick t = {.cfg = c, .opt = o};
    struct err e;
    if (state_open(&t.st, c->state_file, o->lock_wait, &e) < 0) {
        log_error("%s", e.msg);
        return RUN_FAILED;
    }
    poll_accounts(&t);
    if (!o->dry_run && save(&t, "after polling") < 0) {
        /* Nothing is delivered that could not be recorded as delivered. */
        t.failures++;
        goto out;
    }
    for (size_t i = 0; i < c->n_receivers; i++)
        deliver_receiver(&t, &c->receivers[i]);
    if (!o->dry_run && save(&t, "after delivery") < 0)
        t.failures++;
out:
    state_close(t.st);
    return t.failures ? RUN_FAILED : RUN_OK;
}
