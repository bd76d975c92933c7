/* Delivery, a step of a run (steps.h): the due outbox items of each
 * receiver, ordered and cut into messages its service takes whole, sent
 * with each accepted message saved at once; and after delivery the
 * outbox's limits (outbox.max_age, outbox.max_items), given up never
 * silently. */
#include "run/steps.h"
#include "event.h"
#include "metrics.h"
#include "notify/notify.h"
#include "state.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MESSAGE_MAX_EVENTS 100 /* events in one message; more go in several */
/* Messages to one receiver in a run: at Slack's pace (one a second), about
 * what a run's time allows. */
#define RUN_MESSAGES_MAX 40

/* Queued events whose receiver left the config stay queued (renaming a
 * receiver back delivers them) but must not be forgotten silently. */
void warn_orphans(struct tick *t)
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

/* Keeps what the service gave back for a delivered message (`refs`,
 * taken over; NULL: nothing) with each incident among its events. */
static void keep_refs(struct tick *t, const struct receiver_conf *r, const struct notify_message *m,
                      struct json_object *refs)
{
    for (size_t i = 0; refs && i < m->n; i++) {
        struct json_object *v = NULL, *copy = NULL;
        const struct event *ev = &m->events[i];
        if (!ev->incident || !json_object_object_get_ex(ev->incident, "id", &v))
            continue;
        unsigned long id = strtoul(json_object_get_string(v), NULL, 10);
        if (json_object_deep_copy(refs, &copy, NULL) < 0 || !copy)
            xalloc_die();
        state_incident_set_refs(t->st, id, r->name, copy);
    }
    json_object_put(refs);
}

/* What receiver `r`'s service gave back for the incident of the first of
 * m's events that has one, in *kept (incident_clear) and as the returned
 * pointer into it; NULL: none. */
static const struct json_object *refs_for(const struct tick *t, const struct receiver_conf *r,
                                          const struct notify_message *m, struct incident *kept)
{
    struct json_object *v = NULL, *refs = NULL;
    for (size_t i = 0; i < m->n; i++) {
        const struct event *ev = &m->events[i];
        if (!ev->incident || !json_object_object_get_ex(ev->incident, "id", &v))
            continue;
        unsigned long id = strtoul(json_object_get_string(v), NULL, 10);
        if (state_incident_get(t->st, id, kept) && kept->refs)
            json_object_object_get_ex(kept->refs, r->name, &refs);
        break;
    }
    return refs;
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

void deliver_receiver(struct tick *t, const struct notify_env *env, const struct receiver_conf *r)
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
        struct incident inc = {0};
        struct err e;
        m.refs = refs_for(t, r, &m, &inc);
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
            keep_refs(t, r, &m, res.refs);
            /* Each accepted message is recorded at once, so that a kill
             * can repeat only the message in flight. */
            tick_persist(t, "after a delivery");
        } else {
            /* A receiver that failed or asked for a pause gets nothing
             * more in this run; its other messages wait untouched. */
            state_receiver_result(t->st, r->name, false, e.msg, now);
            delivery_failed(t, r, items, start, start + count, n, &res, e.msg);
            incident_clear(&inc);
            break;
        }
        incident_clear(&inc);
    }
    free(ends);
    free(all);
    state_outbox_free(items, n);
}

/* outbox.max_age and outbox.max_items, applied after delivery: they bound
 * what a receiver could not take, so a burst bigger than the cap still
 * reaches a receiver that works. What waits too long, or beyond the cap,
 * is given up, never silently: an error, a metric, a relay event. The
 * event goes to the other receivers, as a failing receiver's own condition
 * does: in the receiver's own outbox it would wait like the events it is
 * about. Returns true when an event was queued. */
bool outbox_limits(struct tick *t)
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
