/* One tick of the relay: opening the state and the rules, and the order of
 * the steps and the saves between them. The steps live beside it in
 * src/run/ (steps.h): polling (poll.c, with intake.c and readings.c for
 * what the replies change), trends (recent.c), delivery (deliver.c) and
 * self-monitoring (selfmon.c); the services they all use are tick.c's.
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
#include "run/incidents.h"
#include "run/steps.h"
#include "metrics.h"
#include "notify/notify.h"
#include "platform.h"
#include "quiet.h"
#include "rules.h"
#include "state.h"
#include "util/fileio.h"
#include "util/log.h"

#include <time.h>

#define WATCH_KEEP (30 * 86400)    /* a device's readings memory unused this long is forgotten */
#define THROTTLE_KEEP (30 * 86400) /* throttle entries unused this long are forgotten */

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

/* Whether the outbox holds an item for any receiver. */
static bool outbox_waits(const struct tick *t)
{
    size_t n = 0;
    char **receivers = state_outbox_receivers(t->st, &n);
    tick_strings_free(receivers, n);
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
    tick_strings_free(keys, n);
    return n > 0 || outbox_waits(t) || any_failing(t);
}

/* Leaves the quiet file (quiet.h) for the runs until the next call is due
 * (or, sooner, what an open incident has due),
 * when this run ended well and nothing else asks for a full run: no
 * heartbeat or metrics_file (both want every run), nothing waiting, no
 * service to ask for an acknowledgement (incidents_awaiting_acks), and
 * the configuration unchanged since it was read. Called last in a run
 * that is not a dry one, with the state saved and still locked. */
static void leave_quiet(struct tick *t)
{
    const struct config *c = t->cfg;
    struct quiet q = {.written_at = t->opt->now};
    struct file_id now_config;
    struct err e;
    if (t->failures || t->unsaved || tick_stopping(t) || c->self.heartbeat || c->metrics_file ||
        anything_waiting(t) || incidents_awaiting_acks(t))
        return;
    q.until = poll_quiet_until(t);
    long long due = incidents_due(t); /* a reminder, an escalation, a bound */
    if (due && due < q.until)
        q.until = due;
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
    state_prune_silences(t.st, o->now - STATE_SILENCE_KEEP);
    self_state_corrupt(&t);
    warn_orphans(&t);
    poll_all(&t);
    if (!o->dry_run) {
        self_forget(&t);
        self_logins(&t);
        self_drop_stale(&t);
        incidents_tend(&t);
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
         * after delivery, and so are the acknowledgements the receivers'
         * services took; their relay events and announcements go out in
         * this run to the receivers that work. A tick stopped before it delivered
         * everything leaves the outbox's limits to the next one. */
        bool queued = !tick_stopping(&t) && !t.late[TICK_DELIVERY] && outbox_limits(&t);
        queued |= self_receivers(&t);
        queued |= incidents_collect(&t, &env);
        if (queued && tick_persist(&t, "after a relay event") == 0)
            for (size_t i = 0; i < c->n_receivers && !tick_stopping(&t); i++)
                deliver_receiver(&t, &env, &c->receivers[i]);
        if (!t.failures)
            state_set_counter(t.st, METRICS_LAST_SUCCESS, o->now);
        tick_persist(&t, "after delivery");
        if (!t.failures && c->self.heartbeat) {
            self_heartbeat(&t);
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
