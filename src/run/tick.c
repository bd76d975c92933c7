/* The services every step of a run uses (tick.h): the run's clock and its
 * time limit, the saves between steps, the one way a platform call is
 * made (recorded, saved, then sent), relay events, and the check that
 * keeps a login whose credentials were refused from being called. */
#include "run/tick.h"
#include "event.h"
#include "metrics.h"
#include "selfcheck.h"
#include "state.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- the run's clock, its time limit and its saves ---------------------- */

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

/* --- platform calls: recorded, saved, then sent ------------------------- */

int tick_save(void *t, const char *why)
{
    return tick_persist(t, why);
}

int tick_call(struct state *st, long long now, const char *const *logins,
              struct platform_request *reqs, size_t n, struct platform_multi *m,
              const struct tick_saver *saver, const char *why)
{
    int rc = -1;
    for (size_t i = 0; i < n; i++)
        state_record_call(st, logins[i], reqs[i].op, now);
    if (saver->save(saver->ctx, why) < 0)
        goto out;
    platform_multi_call(m, reqs, n);
    rc = 0;
out:
    return rc;
}

/* --- paused logins and relay events ------------------------------------ */

/* The SHA-256 of the credentials of every account of `login`: a change to
 * any of them ends a pause. Caller frees. */
char *tick_login_creds(const struct config *c, const char *login)
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

char *tick_condition_key(enum selfcheck_what what, const char *subject)
{
    return xasprintf("%s/%s", selfcheck_name(what), subject);
}

bool tick_login_paused(struct tick *t, const char *login)
{
    struct state_condition cond;
    char *key = tick_condition_key(SELFCHECK_LOGIN_REFUSED, login);
    bool known = state_condition(t->st, key, &cond);
    /* The fingerprint only when a refusal is on record: its digest's
     * first use sets up OpenSSL's providers, a millisecond every run. */
    char *creds = known ? tick_login_creds(t->cfg, login) : NULL;
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

void tick_strings_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}
