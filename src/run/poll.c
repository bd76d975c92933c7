/* Polling, the first step of a tick (steps.h): the platform calls of every
 * login ID, made in parallel, in rounds. What their replies change is
 * taken elsewhere in the wing: current readings by readings.c (device
 * lists, readings memory, early warnings), alert logs by intake.c (new
 * entries routed by the rules into the outbox).
 *
 * The alert budget belongs to a login ID, not to an account of the config:
 * accounts that share a login ID pool their devices and the scheduler plans
 * for the pool, least recently polled first. Login IDs are independent, so
 * the run advances them in rounds of one call each, and a round's calls
 * run in parallel (platform_multi_call); a round is recorded and saved
 * before any of its calls is sent, and its replies are taken one by one. */
#include "run/steps.h"
#include "run/intake.h"
#include "run/readings.h"
#include "budget.h"
#include "platform.h"
#include "readings_memory.h"
#include "scheduler.h"
#include "state.h"
#include "util/log.h"
#include "util/strmap.h"
#include "util/xalloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUIET_MAX 600       /* the longest quiet time a run leaves (quiet.h) */
#define SATURATED_AFTER 900 /* signals waiting this long for the budget make a relay event */

/* --- the pool of devices of one login ID -------------------------------- */

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
        struct platform_login as = {.name = a->name,
                                    .base_url = a->base_url,
                                    .api_key = a->api_key,
                                    .login_id = a->login_id,
                                    .login_pass = a->login_pass};
        if (platform_new(&lr->clients[i], &as, &e) < 0) {
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

/* Whether the device's readings ask for a look at its alert log now
 * (readings_memory.h, watch_ask), and the rest of what they ask of the
 * scheduler into *sd: since when, whether its news is out, whether the look
 * is a guess, a look planned for later, a hint. Every one of those fields is
 * set, whatever the answer. */
static bool signal_of(const struct tick *t, const struct state_device *dev, struct sched_device *sd)
{
    struct watch w;
    struct watch_ask ask = {0};
    if (state_watch(t->st, dev->serial, &w))
        watch_ask(&w, state_device_remote(dev), t->opt->now, &ask);
    sd->signal_since = ask.since;
    sd->told = ask.told;
    sd->guess = ask.guess;
    sd->looks_again = ask.looks_again;
    sd->hint = ask.hint;
    return ask.look;
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
        sd[i].signal = pl->items[i].a->signals && signal_of(t, &pl->items[i].dev, &sd[i]);
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

/* --- the quiet time (steps.h) --------------------------------------------- */

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

/* --- the run's polling (steps.h) ---------------------------------------- */

void poll_all(struct tick *t)
{
    const struct config *c = t->cfg;
    bool *looked = xcalloc(t->opt->n_looks ? t->opt->n_looks : 1, sizeof *looked);
    struct login_run *runs = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *runs);
    struct platform_request *reqs = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *reqs);
    struct login_run **whose = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *whose);
    const char **logins = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *logins);
    struct tick_saver saver = {.save = tick_save, .ctx = t};
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
        long long now = tick_now(t);
        for (size_t j = 0; j < k; j++) {
            logins[j] = whose[j]->login;
            if (whose[j]->polling && whose[j]->polling_signal)
                state_record_signal_call(t->st, whose[j]->login, now);
        }
        if (tick_call(t->st, now, logins, reqs, k, multi, &saver, "before platform calls") < 0)
            break;
        for (size_t j = 0; j < k; j++) {
            login_take(t, whose[j], &reqs[j]);
            platform_reply_free(&reqs[j].reply);
        }
    }
out:
    platform_multi_free(multi);
    for (size_t i = 0; i < n; i++)
        login_end(t, &runs[i]);
    free(logins);
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
