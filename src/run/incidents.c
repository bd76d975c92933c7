/* Incidents at work (run/incidents.h): joining, opening and resolving
 * them as events are routed, tending the open ones after polling, and the
 * one path of an acknowledgement. */
#include "run/incidents.h"
#include "incident.h"
#include "metrics.h"
#include "notify/notify.h"
#include "readings_memory.h"
#include "state/incidentlog.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPEN_DEFAULT (7 * 86400)

/* The receivers of a line of the timeline, as a JSON array. */
static struct json_object *names_json(char *const *names, size_t n)
{
    struct json_object *a = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < n; i++)
        jsonv_append(a, jsonv_need(json_object_new_string(names[i])));
    return a;
}

/* A line of the timeline about `ev`: its time, text, value and limit. */
static struct json_object *event_line(const struct event *ev)
{
    struct json_object *line = jsonv_need(json_object_new_object());
    jsonv_put_int(line, "event_time", ev->unixtime);
    if (ev->text)
        jsonv_put(line, "text", jsonv_need(json_object_new_string(ev->text)));
    if (ev->value)
        jsonv_put(line, "value", jsonv_need(json_object_new_string(ev->value)));
    if (ev->limit)
        jsonv_put(line, "limit", jsonv_need(json_object_new_string(ev->limit)));
    jsonv_put(line, "source",
              jsonv_need(json_object_new_string(strcmp(ev->kind, "reading") ? "log" : "reading")));
    return line;
}

/* Queues the notice of `inc` for each of receivers[0..n), recording it in
 * the timeline as `what`. */
static void queue_notice(struct state *st, struct incident *inc, enum incident_notice notice,
                         const struct event *cause, char *const *receivers, size_t n, long long now,
                         const char *what)
{
    struct event msg;
    if (n == 0)
        return;
    incident_message(&msg, inc, notice, cause, now);
    for (size_t i = 0; i < n; i++)
        state_enqueue(st, receivers[i], &msg, now);
    struct json_object *line = event_line(&msg);
    jsonv_put(line, "receivers", names_json(receivers, n));
    if (inc->has_peak) {
        struct json_object *snap = msg.incident, *v = NULL;
        if (json_object_object_get_ex(snap, "peak", &v))
            jsonv_put(line, "peak", json_object_get(v));
    }
    if (notice == NOTICE_RESOLVED || notice == NOTICE_CLOSED)
        jsonv_put_int(line, "duration", (inc->ended ? inc->ended : now) - inc->first.unixtime);
    state_incident_note(st, inc, now, what, line);
    event_clear(&msg);
}

/* --- as events are routed ------------------------------------------------ */

bool incidents_join(struct tick *t, const struct event *ev)
{
    enum incident_role role = incident_role_of(ev);
    char *key = t->cfg->incidents.enabled ? incident_key(ev) : NULL;
    struct incident inc;
    bool joins = false;
    if (!key || !state_incident_of_key(t->st, key, &inc))
        goto out;
    if (role == INCIDENT_OPENS)
        /* an alarm while it is open, or one the platform logged late, from
         * before the way back that resolved it */
        joins = inc.state == INCIDENT_OPEN ||
                (inc.state == INCIDENT_RESOLVED && ev->unixtime <= inc.ended);
    else if (role == INCIDENT_RESOLVES)
        /* the platform's recovery after the readings' way back, or the
         * readings' way back after the platform's recovery (after one
         * closed by max_open, a recovery is news) */
        joins = inc.state == INCIDENT_RESOLVED && ev->unixtime >= inc.first.unixtime;
    if (joins) {
        char *id = event_id(ev);
        log_info("event %s joins incident %lu: nobody is paged again", id, inc.id);
        free(id);
        state_incident_note(t->st, &inc, t->opt->now, "joined", event_line(ev));
        state_incident_put(t->st, &inc);
        state_count(t->st, METRICS_EVENTS_JOINED, 1);
    }
    incident_clear(&inc);
out:
    free(key);
    return joins;
}

/* Opens an incident for `ev`, routed to rt's receivers, and queues its
 * first notice to them; under a silence, to nobody until it ends. Takes
 * over `key`. */
static void open_incident(struct tick *t, const struct event *ev, const struct route *rt, char *key)
{
    struct incident inc = {.key = key, .state = INCIDENT_OPEN, .opened_at = t->opt->now};
    event_copy(&inc.first, ev);
    const struct route_target *first = &rt->targets[0];
    free(inc.first.rule);
    free(inc.first.severity);
    inc.first.rule = first->rule ? xstrdup(first->rule->name) : NULL;
    inc.first.severity =
        first->rule && first->rule->severity ? xstrdup(first->rule->severity) : NULL;
    for (size_t i = 0; i < rt->n_targets; i++)
        incident_tell(&inc, rt->targets[i].receiver);
    double v;
    if (incident_number(ev->value, &v))
        incident_note_reading(&inc, v, ev->unixtime);
    inc.silence =
        state_silence_covering(t->st, ev->serial, ev->name, event_channel(ev), t->opt->now);
    inc.paged = inc.silence == 0;
    inc.last_page = t->opt->now;
    state_incident_add(t->st, &inc);
    if (inc.paged) {
        /* each receiver gets the rule's name, severity and held count of
         * the rule that named it, as a lone event would */
        struct event msg;
        incident_message(&msg, &inc, NOTICE_OPENED, NULL, t->opt->now);
        for (size_t i = 0; i < rt->n_targets; i++) {
            const struct route_target *to = &rt->targets[i];
            free(msg.rule);
            free(msg.severity);
            msg.rule = to->rule ? xstrdup(to->rule->name) : NULL;
            msg.severity = to->rule && to->rule->severity ? xstrdup(to->rule->severity) : NULL;
            msg.held = to->held;
            msg.held_since = to->held_since;
            state_enqueue(t->st, to->receiver, &msg, t->opt->now);
        }
        struct json_object *line = event_line(ev);
        jsonv_put(line, "receivers", names_json(inc.told, inc.n_told));
        if (inc.first.rule)
            jsonv_put(line, "rule", jsonv_need(json_object_new_string(inc.first.rule)));
        if (inc.first.severity)
            jsonv_put(line, "severity", jsonv_need(json_object_new_string(inc.first.severity)));
        state_incident_note(t->st, &inc, t->opt->now, "opened", line);
        event_clear(&msg);
    } else {
        struct json_object *line = event_line(ev);
        jsonv_put_int(line, "silence", (long long)inc.silence);
        state_incident_note(t->st, &inc, t->opt->now, "silenced", line);
        log_info("incident %lu (%s) opens under silence %lu: nobody is paged", inc.id, key,
                 inc.silence);
    }
    state_incident_put(t->st, &inc);
    log_info("incident %lu opens: %s", inc.id, key);
    incident_clear(&inc); /* frees `key` too */
}

/* Resolves the open incident `inc` with the recovery `ev`: the resolution
 * goes to every receiver told and to those rt names, once each. */
static void resolve_incident(struct tick *t, struct incident *inc, const struct event *ev,
                             const struct route *rt)
{
    inc->state = INCIDENT_RESOLVED;
    inc->ended = ev->unixtime;
    inc->ended_at = t->opt->now;
    char **to = NULL;
    size_t n = 0;
    if (inc->paged) {
        struct incident all;
        incident_copy(&all, inc);
        for (size_t i = 0; rt && i < rt->n_targets; i++)
            incident_tell(&all, rt->targets[i].receiver);
        to = all.told;
        n = all.n_told;
        all.told = NULL;
        all.n_told = 0;
        incident_clear(&all);
    }
    queue_notice(t->st, inc, NOTICE_RESOLVED, ev, to, n, t->opt->now, "resolved");
    if (!n)
        state_incident_note(t->st, inc, t->opt->now, "resolved", event_line(ev));
    state_incident_put(t->st, inc);
    log_info("incident %lu resolved%s", inc->id, n ? "" : " (it had paged nobody)");
    for (size_t i = 0; i < n; i++)
        free(to[i]);
    free(to);
}

bool incidents_route(struct tick *t, const struct event *ev, const struct route *rt)
{
    enum incident_role role = incident_role_of(ev);
    char *key = t->cfg->incidents.enabled ? incident_key(ev) : NULL;
    struct incident inc = {0};
    bool done = false;
    if (!key)
        goto out;
    if (role == INCIDENT_OPENS && rt->outcome == ROUTE_SENT) {
        open_incident(t, ev, rt, key);
        key = NULL;
        done = true;
    } else if (role == INCIDENT_RESOLVES && state_incident_of_key(t->st, key, &inc) &&
               inc.state == INCIDENT_OPEN) {
        resolve_incident(t, &inc, ev, rt->outcome == ROUTE_SENT ? rt : NULL);
        done = true;
    }
out:
    incident_clear(&inc);
    free(key);
    return done;
}

/* --- tending the open ones ----------------------------------------------- */

/* The channel's latest reading, from the readings memory. */
static void take_reading(struct tick *t, struct incident *inc)
{
    struct watch w;
    int channel = event_channel(&inc->first);
    if (channel <= 0 || !state_watch(t->st, inc->first.serial, &w) || w.unixtime <= inc->live_at ||
        w.unixtime < inc->first.unixtime) /* a reading from before it is not how it is now */
        return;
    const struct watch_channel *wc = watch_channel(&w, channel);
    if (wc && !wc->error && wc->n_history > 0)
        incident_note_reading(inc, wc->value, w.unixtime);
}

/* Escalations due and the reminder due of a paged incident nobody
 * acknowledged. */
static void page_again(struct tick *t, struct incident *inc)
{
    bool inside = false;
    long long now = t->opt->now;
    const struct rule_conf *r = rules_find(t->rules, inc->first.rule, &inside, now);
    size_t before = inc->n_told; /* those told before an escalation of this run */
    if (!r || !inside)
        return;
    while ((size_t)inc->step < r->n_escalate &&
           now - inc->opened_at >= r->escalate[inc->step].after) {
        const struct rule_escalation *esc = &r->escalate[inc->step++];
        char **added = NULL;
        size_t n = 0;
        for (size_t i = 0; i < esc->n_receivers; i++)
            if (incident_tell(inc, esc->receivers[i])) {
                added = xreallocarray(added, n + 1, sizeof *added);
                added[n++] = esc->receivers[i];
            }
        log_info("incident %lu escalates (step %d): %zu receiver%s more", inc->id, inc->step, n,
                 n == 1 ? "" : "s");
        queue_notice(t->st, inc, NOTICE_ESCALATION, NULL, added, n, now, "escalated");
        free(added);
    }
    if (r->repeat > 0 && now - inc->last_page >= r->repeat) {
        inc->reminders++;
        inc->last_page = now;
        log_info("incident %lu: reminder %d", inc->id, inc->reminders);
        /* a receiver the escalation just told has its message already */
        queue_notice(t->st, inc, NOTICE_REMINDER, NULL, inc->told, before, now, "reminder");
    }
}

/* Tends one open incident; returns whether it changed. */
static void tend_one(struct tick *t, struct incident *inc)
{
    long long now = t->opt->now;
    long max_open = t->cfg->incidents.max_open ? t->cfg->incidents.max_open : MAX_OPEN_DEFAULT;
    take_reading(t, inc);
    if (now - inc->opened_at >= max_open) {
        inc->state = INCIDENT_CLOSED;
        inc->ended = now;
        inc->ended_at = now;
        log_warn("incident %lu (%s) closes: open longer than incidents.max_open", inc->id,
                 inc->key);
        if (inc->paged)
            queue_notice(t->st, inc, NOTICE_CLOSED, NULL, inc->told, inc->n_told, now, "closed");
        else
            state_incident_note(t->st, inc, now, "closed", NULL);
        return;
    }
    if (!inc->paged && !state_silence_active(t->st, inc->silence, now)) {
        /* its silence is over, or was ended: another may cover it still */
        unsigned long other = state_silence_covering(t->st, inc->first.serial, inc->first.name,
                                                     event_channel(&inc->first), now);
        if (other) {
            inc->silence = other;
            return;
        }
        /* still open and nobody was told: it pages now, as if it had
         * just opened */
        inc->paged = true;
        inc->last_page = now;
        log_info("incident %lu: its silence is over; it pages now", inc->id);
        queue_notice(t->st, inc, NOTICE_OPENED, NULL, inc->told, inc->n_told, now, "notice");
        return;
    }
    if (inc->paged && !inc->acked_at)
        page_again(t, inc);
}

/* The earliest of `a` and `b`, 0 standing for none. */
static long long earliest(long long a, long long b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

/* When the silence `id` ends; 0 when it is not kept. */
static long long silence_end(const struct state *st, unsigned long id)
{
    size_t n = 0;
    long long until = 0;
    struct state_silence *v = state_silences(st, &n);
    for (size_t i = 0; i < n; i++)
        if (v[i].id == id)
            until = v[i].until;
    state_silences_free(v, n);
    return until;
}

/* When `inc`, open, next has something due with time alone. */
static long long due_of(const struct tick *t, const struct incident *inc)
{
    long max_open = t->cfg->incidents.max_open ? t->cfg->incidents.max_open : MAX_OPEN_DEFAULT;
    long long due = inc->opened_at + max_open;
    bool inside;
    if (!inc->paged)
        return earliest(due, silence_end(t->st, inc->silence));
    if (inc->acked_at)
        return due;
    const struct rule_conf *r = rules_find(t->rules, inc->first.rule, &inside, t->opt->now);
    if (r && (size_t)inc->step < r->n_escalate)
        due = earliest(due, inc->opened_at + r->escalate[inc->step].after);
    if (r && r->repeat > 0)
        due = earliest(due, inc->last_page + r->repeat);
    return due;
}

long long incidents_due(const struct tick *t)
{
    size_t n = 0;
    long long due = 0;
    unsigned long *ids = state_incident_ids(t->st, &n);
    for (size_t i = 0; i < n; i++) {
        struct incident inc;
        if (!state_incident_get(t->st, ids[i], &inc))
            continue;
        if (inc.state == INCIDENT_OPEN)
            due = earliest(due, due_of(t, &inc));
        incident_clear(&inc);
    }
    free(ids);
    return due;
}

/* Bounds the incident log by age: the month files whose every line is
 * older than incidents.keep go, once a run (the run holds the state's
 * lock, which covers the log). A failure costs nothing but the bound: the
 * next run tries again. */
static void prune_log(struct tick *t)
{
    struct err e;
    long keep = t->cfg->incidents.keep;
    if (keep > 0 && incidentlog_prune(t->cfg->state_file, t->opt->now - keep, &e) < 0)
        log_warn("incident log: %s (the next run tries again)", e.msg);
}

void incidents_tend(struct tick *t)
{
    size_t n = 0;
    unsigned long *ids = state_incident_ids(t->st, &n);
    for (size_t i = 0; i < n; i++) {
        struct incident inc;
        if (!state_incident_get(t->st, ids[i], &inc))
            continue;
        if (inc.state == INCIDENT_OPEN) {
            tend_one(t, &inc);
            state_incident_put(t->st, &inc);
        }
        incident_clear(&inc);
    }
    free(ids);
    state_prune_incidents(t->st, t->opt->now - INCIDENT_KEEP);
    prune_log(t);
}

/* --- acknowledgements from the receivers' services ----------------------- */

/* The open, paged incidents nobody acknowledged that receiver `name` was
 * told of, in *out (the caller clears each and frees the array). */
static size_t told_open(const struct tick *t, const char *name, struct incident **out)
{
    size_t n = 0, kept = 0;
    unsigned long *ids = state_incident_ids(t->st, &n);
    *out = n ? xcalloc(n, sizeof **out) : NULL;
    for (size_t i = 0; i < n; i++) {
        struct incident *inc = &(*out)[kept];
        if (!state_incident_get(t->st, ids[i], inc))
            continue;
        bool told = false;
        for (size_t k = 0; k < inc->n_told && !told; k++)
            told = !strcmp(inc->told[k], name);
        if (told && inc->state == INCIDENT_OPEN && inc->paged && !inc->acked_at)
            kept++;
        else
            incident_clear(inc);
    }
    free(ids);
    return kept;
}

/* What receiver `name`'s service gave back for `inc`; NULL: nothing. */
static const struct json_object *refs_of(const struct incident *inc, const char *name)
{
    struct json_object *v = NULL;
    return inc->refs && json_object_object_get_ex(inc->refs, name, &v) ? v : NULL;
}

bool incidents_awaiting_acks(const struct tick *t)
{
    bool waiting = false;
    for (size_t i = 0; i < t->cfg->n_receivers && !waiting; i++) {
        const struct receiver_conf *r = &t->cfg->receivers[i];
        struct incident *incs = NULL;
        size_t n = notify_collects(r) ? told_open(t, r->name, &incs) : 0;
        waiting = n > 0;
        for (size_t k = 0; k < n; k++)
            incident_clear(&incs[k]);
        free(incs);
    }
    return waiting;
}

/* Asks receiver `r`'s service for the acknowledgements of its open
 * incidents and applies each through incident_ack; returns how many. */
static size_t collect_from(struct tick *t, const struct notify_env *env,
                           const struct receiver_conf *r)
{
    struct incident *incs = NULL;
    struct notify_ack *acks = NULL;
    size_t n_acks = 0, applied = 0;
    struct err e;
    size_t n = told_open(t, r->name, &incs);
    struct notify_open *open = n ? xcalloc(n, sizeof *open) : NULL;
    for (size_t i = 0; i < n; i++)
        open[i] = (struct notify_open){.id = incs[i].id,
                                       .key = incs[i].key,
                                       .first = &incs[i].first,
                                       .refs = refs_of(&incs[i], r->name)};
    if (n && notify_collect(env, r, open, n, tick_now(t), &acks, &n_acks, &e) < 0)
        log_warn("%s (nothing is lost: the next run asks again)", e.msg);
    for (size_t i = 0; i < n_acks; i++) {
        if (incident_ack(t->st, acks[i].id, acks[i].by, acks[i].note, t->opt->now, &e) < 0) {
            log_info("receiver %s: %s", r->name, e.msg);
            continue;
        }
        log_info("incident %lu acknowledged by %s through receiver %s", acks[i].id, acks[i].by,
                 r->name);
        applied++;
    }
    notify_acks_free(acks, n_acks);
    for (size_t i = 0; i < n; i++)
        incident_clear(&incs[i]);
    free(incs);
    free(open);
    return applied;
}

bool incidents_collect(struct tick *t, const struct notify_env *env)
{
    size_t applied = 0;
    if (t->opt->dry_run)
        return false;
    for (size_t i = 0; i < t->cfg->n_receivers && !tick_stopping(t); i++)
        if (notify_collects(&t->cfg->receivers[i]) && !tick_out_of_time(t, TICK_DELIVERY))
            applied += collect_from(t, env, &t->cfg->receivers[i]);
    return applied > 0;
}

/* --- acknowledgement ------------------------------------------------------ */

int incident_ack(struct state *st, unsigned long id, const char *by, const char *note,
                 long long now, struct err *e)
{
    struct incident inc;
    int rc = -1;
    if (!state_incident_get(st, id, &inc))
        return err_set(e, "no incident %lu is kept (wsrelay incidents lists them)", id);
    if (inc.state != INCIDENT_OPEN) {
        err_set(e, "incident %lu is %s already", id, incident_state_name(inc.state));
        goto out;
    }
    if (inc.acked_at) {
        err_set(e, "incident %lu was acknowledged already, by %s", id,
                inc.acked_by ? inc.acked_by : "?");
        goto out;
    }
    inc.acked_at = now;
    inc.acked_by = xstrdup(by && *by ? by : "?");
    inc.ack_note = note && *note ? xstrdup(note) : NULL;
    struct json_object *line = jsonv_need(json_object_new_object());
    jsonv_put(line, "by", jsonv_need(json_object_new_string(inc.acked_by)));
    if (inc.ack_note)
        jsonv_put(line, "note", jsonv_need(json_object_new_string(inc.ack_note)));
    state_incident_note(st, &inc, now, "acknowledged", line);
    if (inc.paged)
        queue_notice(st, &inc, NOTICE_ACKNOWLEDGED, NULL, inc.told, inc.n_told, now, "notice");
    state_incident_put(st, &inc);
    rc = 0;
out:
    incident_clear(&inc);
    return rc;
}
