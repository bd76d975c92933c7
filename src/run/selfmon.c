/* Self-monitoring, steps of a run (selfcheck.h decides, this carries it
 * out): the conditions of the login IDs and the receivers, opened and
 * closed with relay events; conditions whose subject left the config;
 * relay events no longer true; the state file set aside; the heartbeat. */
#include "run/steps.h"
#include "event.h"
#include "metrics.h"
#include "notify/http.h"
#include "selfcheck.h"
#include "state.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Carries out selfcheck's verdict on one condition. Returns true when an
 * event was queued. */
static bool self_step(struct tick *t, const struct selfcheck_input *in, const char *subject,
                      const char *account, const char *accounts, const char *detail,
                      const char *not_to)
{
    struct state_condition prev, next;
    bool keep = false;
    char *key = tick_condition_key(in->what, subject);
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
void self_logins(struct tick *t)
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
        char *creds = failing && h.status == 401 ? tick_login_creds(c, login) : NULL;
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
bool self_receivers(struct tick *t)
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
void self_forget(struct tick *t)
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

/* A relay event that opened a condition of a login, still waiting in the
 * outbox (its receiver was failing) when that condition is over, is no
 * longer true: "paused until 15:23" must not arrive after the fix. It is
 * dropped with a log line; the condition's recovery event says the rest. */
void self_drop_stale(struct tick *t)
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
    tick_strings_free(receivers, n_receivers);
}

/* The state file was corrupt and state_open moved it aside. */
void self_state_corrupt(struct tick *t)
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
void self_heartbeat(struct tick *t)
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
