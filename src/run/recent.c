/* Recent readings for the messages of fresh channel events: before the
 * first delivery of an alarm, a recovery or an early warning on a channel,
 * one Get Latest Data call per device reads the device's last readings,
 * and every outbox item of such an event keeps its channel's part of them
 * (event.h, struct event_trend), from which messages show a sparkline and
 * email a chart. A trend is an extra: a call that fails, a device the
 * operation does not serve, a budget spent or a run out of time leaves
 * the message as it was, and nothing here fails the run.
 *
 * The calls go out in rounds, as polling's do: each round, every account
 * with a device left to read makes one call, and the round's calls run in
 * parallel (platform_multi_call), so the alerts of many accounts wait
 * about as long as those of one. */
#include "budget.h"
#include "metrics.h"
#include "platform.h"
#include "series.h"
#include "run/steps.h"
#include "readings_memory.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#define RECENT_SPAN (6 * 3600) /* the trend shows at most this much before the last reading */
#define RESOLUTION_LEAD 600    /* a resolution's trend starts this long before its alarm */
/* Rounds of calls in one run, so devices read per account: a round may take
 * its timeout. */
#define RECENT_ROUNDS_MAX 10
#define RECENT_TIME_MAX 20 /* seconds of a run spent reading: no round starts after */
#define RECENT_CONNECT_TIMEOUT 5
#define RECENT_TOTAL_TIMEOUT 10

/* One outbox item that wants its channel's readings. */
struct wanting {
    unsigned long long id;
    struct event ev; /* owned */
};

/* One device to read, and the items that wait for it. */
struct wanted {
    const struct account_conf *a;
    const char *serial, *base; /* borrowed from the first item's event */
    struct wanting *items;
    size_t n;
    bool tried; /* called, or given up on (budget spent, no client) */
};

static bool wants_trend(const struct outbox_item *it, long long fresh_since)
{
    const struct event *ev = &it->event;
    bool alarmish = ev->state && (!strcmp(ev->state, "alarm") || !strcmp(ev->state, "recovered"));
    return it->attempts == 0 && it->queued_at >= fresh_since && !ev->trend &&
           event_channel(ev) > 0 && (alarmish || !strcmp(ev->kind, "reading"));
}

/* Adds item `it` to the device it wants in *list (of *n). */
static void add_wanting(struct wanted **list, size_t *n, const struct account_conf *a,
                        const struct outbox_item *it)
{
    struct wanted *w = NULL;
    for (size_t i = 0; i < *n && !w; i++)
        if ((*list)[i].a == a && !strcmp((*list)[i].items[0].ev.serial, it->event.serial))
            w = &(*list)[i];
    if (!w) {
        *list = xreallocarray(*list, *n + 1, sizeof **list);
        w = &(*list)[(*n)++];
        *w = (struct wanted){.a = a};
    }
    w->items = xreallocarray(w->items, w->n + 1, sizeof *w->items);
    struct wanting *x = &w->items[w->n++];
    x->id = it->id;
    event_copy(&x->ev, &it->event);
    w->serial = w->items[0].ev.serial;
    w->base = w->items[0].ev.base_serial;
}

/* The fresh items of every receiver that want a trend, by device. */
static struct wanted *gather(const struct tick *t, size_t *n)
{
    const struct config *c = t->cfg;
    struct wanted *list = NULL;
    *n = 0;
    for (size_t r = 0; r < c->n_receivers; r++) {
        size_t k = 0;
        struct outbox_item *items = state_outbox_due(t->st, c->receivers[r].name, t->opt->now, &k);
        for (size_t i = 0; i < k; i++) {
            const struct account_conf *a = config_account(c, items[i].event.account);
            if (a && a->trend && wants_trend(&items[i], t->opt->now))
                add_wanting(&list, n, a, &items[i]);
        }
        state_outbox_free(items, k);
    }
    return list;
}

static void wanted_free(struct wanted *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < list[i].n; k++)
            event_clear(&list[i].items[k].ev);
        free(list[i].items);
    }
    free(list);
}

/* Whether the login's budget for `op` takes one more call now, beside
 * `planned` calls of it in this round that are not recorded yet. */
static bool budget_allows(const struct tick *t, const char *login, enum platform_op op,
                          size_t planned)
{
    long long now = tick_now(t);
    struct sched_budget b = budget_read(t->st, login, op, now);
    return b.blocked_until <= now && b.used + planned < (size_t)b.limit;
}

/* What the reply tells of the budget, as for the other operations. */
static void note_budget(struct tick *t, const char *login, enum platform_op op,
                        const struct platform_reply *r)
{
    metrics_count_call(t->st, login, op, r->http_status == 200, r->http_status);
    budget_note_reply(t->st, login, op, r, tick_now(t));
}

/* The alarm limits of the event's channel, to draw: configured ones win
 * over those the alert texts taught, as for early warnings. */
static void trend_limits(const struct tick *t, const struct account_conf *a, const struct event *ev,
                         struct event_trend *trend)
{
    struct watch_limit l;
    int ch = event_channel(ev);
    if (!account_limit(a, ev->serial, ch, &l))
        state_learnt_limit(t->st, ev->serial, ch, &l);
    trend->has_upper = l.has_upper;
    trend->has_lower = l.has_lower;
    trend->upper = l.upper;
    trend->lower = l.lower;
}

/* For an incident's resolution, the unixtime of the event that opened
 * it; else 0. */
static long long resolution_opened(const struct event *ev)
{
    struct json_object *v = NULL;
    if (!ev->incident || !json_object_object_get_ex(ev->incident, "notice", &v) ||
        strcmp(json_object_get_string(v), "resolved") != 0 ||
        !json_object_object_get_ex(ev->incident, "opened", &v))
        return 0;
    return json_object_get_int64(v);
}

/* Gives each waiting item its channel's part of `s`: the readings of the
 * RECENT_SPAN before the newest one (or the event, when later), or of
 * less when the readings cover less; an incident's resolution from
 * RESOLUTION_LEAD before its alarm, so that its chart shows the whole
 * excursion, when the readings reach that far. */
static void attach(struct tick *t, const struct wanted *w, const struct series *s)
{
    long long first = s->n_points ? s->points[0].unixtime : 0;
    long long last = s->n_points ? s->points[s->n_points - 1].unixtime : 0;
    for (size_t i = 0; i < w->n; i++) {
        struct event ev = w->items[i].ev;
        long long until = last > ev.unixtime ? last : ev.unixtime;
        long long since = until - RECENT_SPAN > first ? until - RECENT_SPAN : first;
        /* a resolution's chart is the whole excursion, as far as the
         * readings reach back */
        long long opened = resolution_opened(&ev);
        if (opened && opened - RESOLUTION_LEAD < since)
            since = opened - RESOLUTION_LEAD > first ? opened - RESOLUTION_LEAD : first;
        struct event_trend *trend = event_trend_of(s, event_channel(&ev), since, until);
        if (!trend) {
            log_debug("account %s: %s: no reading of channel %d to show", w->a->name, w->serial,
                      event_channel(&ev));
            continue;
        }
        trend_limits(t, w->a, &ev, trend);
        ev.trend = trend;
        state_outbox_set_event(t->st, w->items[i].id, &ev);
        event_trend_free(trend);
    }
}

/* The account's client, made with the trend's timeouts on first use; NULL
 * (logged once, and kept in `broken`) when it cannot be made. */
static struct platform *client_of(struct platform **clients, bool *broken, size_t i,
                                  const struct account_conf *a)
{
    struct err e;
    if (!clients[i] && !broken[i]) {
        struct platform_login as = {.name = a->name,
                                    .base_url = a->base_url,
                                    .api_key = a->api_key,
                                    .login_id = a->login_id,
                                    .login_pass = a->login_pass};
        if (platform_new(&clients[i], &as, &e) < 0) {
            log_info("account %s: no trend: %s", a->name, e.msg);
            broken[i] = true;
        } else {
            platform_set_timeouts(clients[i], RECENT_CONNECT_TIMEOUT, RECENT_TOTAL_TIMEOUT);
        }
    }
    return clients[i];
}

/* The calls of one round: in list order, the first device not yet tried of
 * each account whose budget takes the call, counting the calls of the
 * same login ID planned before it in the round (tick_call records them
 * all). Returns how many requests it wrote to reqs (and whose to read
 * them for). */
static size_t plan_round(struct tick *t, struct wanted *list, size_t n, struct platform **clients,
                         bool *broken, struct platform_request *reqs, struct wanted **whose)
{
    const struct config *c = t->cfg;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct wanted *w = &list[i];
        size_t ai = (size_t)(w->a - c->accounts);
        bool busy = false;
        for (size_t j = 0; j < k; j++)
            busy |= whose[j]->a == w->a;
        if (w->tried || busy)
            continue;
        struct platform *p = client_of(clients, broken, ai, w->a);
        enum platform_op op = platform_graph_op(w->serial, w->base, false);
        const char *login = w->a->login_id;
        w->tried = true;
        if (!p)
            continue;
        size_t planned = 0;
        for (size_t j = 0; j < k; j++)
            planned += reqs[j].op == op && !strcmp(whose[j]->a->login_id, login);
        if (!budget_allows(t, login, op, planned)) {
            log_debug("login %s: no %s call left for %s's trend", login, platform_op_name(op),
                      w->serial);
            continue;
        }
        reqs[k] = (struct platform_request){
            .p = p, .op = op, .query = {.serial = w->serial, .base = w->base}};
        whose[k++] = w;
    }
    return k;
}

/* Takes the reply to one call of a round: the budget it tells of, and the
 * readings for the device's items. */
static void take_reply(struct tick *t, const struct wanted *w, const struct platform_request *rq)
{
    const struct platform_reply *r = &rq->reply;
    struct series s = {0};
    struct err e;
    note_budget(t, w->a->login_id, rq->op, r);
    if (rq->rc < 0) {
        /* A device the operation does not serve answers 400: quietly. */
        if (r->http_status == 400)
            log_debug("account %s: %s: no trend: %s", w->a->name, w->serial, r->message);
        else
            log_info("account %s: %s: no trend: %s", w->a->name, w->serial, r->message);
    } else if (series_parse_json(&s, r->body, &e) < 0) {
        log_info("account %s: %s: no trend: %s", w->a->name, w->serial, e.msg);
    } else if (strcmp(s.serial, w->serial) != 0) {
        /* As the alert-log reader refuses a reply about another device:
         * its readings would be shown as this one's. */
        log_warn("account %s, device %s: the readings reply is about device %s; no trend",
                 w->a->name, w->serial, *s.serial ? s.serial : "(none named)");
    } else {
        attach(t, w, &s);
    }
    series_free(&s);
}

/* Whether another round may start: the alerts wait for these calls, so
 * none starts at or after `deadline` (tick_now), nor after polling's share
 * of run_time. */
static bool may_read(struct tick *t, long long deadline)
{
    return !t->unsaved && !tick_stopping(t) && tick_now(t) < deadline &&
           !tick_out_of_time(t, TICK_POLLING);
}

void recent_attach(struct tick *t)
{
    const struct config *c = t->cfg;
    size_t n = 0, n_accounts = c->n_accounts ? c->n_accounts : 1;
    struct wanted *list = NULL;
    struct platform **clients = NULL;
    bool *broken = NULL;
    struct platform_request *reqs = NULL;
    struct wanted **whose = NULL;
    const char **logins = NULL;
    struct platform_multi *multi = NULL;
    struct tick_saver saver = {.save = tick_save, .ctx = t};
    struct err e;
    if (t->opt->dry_run || t->unsaved || tick_stopping(t))
        return;
    list = gather(t, &n);
    if (n == 0)
        goto out;
    if (platform_multi_new(&multi, &e) < 0) {
        log_info("no trend: %s", e.msg);
        goto out;
    }
    long long deadline = tick_now(t) + RECENT_TIME_MAX;
    clients = xcalloc(n_accounts, sizeof *clients);
    broken = xcalloc(n_accounts, sizeof *broken);
    reqs = xcalloc(n_accounts, sizeof *reqs);
    whose = xcalloc(n_accounts, sizeof *whose);
    logins = xcalloc(n_accounts, sizeof *logins);
    for (int round = 0; round < RECENT_ROUNDS_MAX && may_read(t, deadline); round++) {
        size_t k = plan_round(t, list, n, clients, broken, reqs, whose);
        if (k == 0)
            break;
        for (size_t j = 0; j < k; j++)
            logins[j] = whose[j]->a->login_id;
        /* Recorded and saved before they are sent, as every platform call is. */
        if (tick_call(t->st, tick_now(t), logins, reqs, k, multi, &saver,
                      "before latest-data calls") < 0)
            break;
        for (size_t j = 0; j < k; j++) {
            take_reply(t, whose[j], &reqs[j]);
            platform_reply_free(&reqs[j].reply);
        }
    }
out:
    platform_multi_free(multi);
    for (size_t i = 0; clients && i < c->n_accounts; i++)
        platform_free(clients[i]);
    free(clients);
    free(broken);
    free(reqs);
    free(whose);
    free(logins);
    wanted_free(list, n);
}
