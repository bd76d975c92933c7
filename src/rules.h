/* Routing: which rules an event matches and where it goes.
 *
 * The rules are those of the configuration (config.h reads and checks the
 * rule files), tried in order. A rule matches an event when every field of
 * its `match:` matches (a list: any of its items) and, when it has `when:`
 * windows, the routing time falls in one of them, on the wall clock of the
 * config's `timezone:`. The first rule that matches decides, unless it says
 * `continue: true`: then later rules are tried as well and their receivers
 * are added. A `drop: true` rule stops the search: the event goes to no
 * receiver that an earlier rule has not already named.
 *
 * `kind: chN` covers the early warnings of channel N as well (kind
 * "reading" with that channel), so that the warning and the platform's
 * alarm it announces take one route; `source:` tells them apart (reading:
 * the early warnings; log: the alert-log entries, every kind but reading
 * and wsrelay's own gap and relay). A rule's `repeat:` and `escalate:`
 * play no part in routing: they are read by the incidents.
 *
 * Nothing vanishes silently. An event that no rule matches goes to
 * `default_receivers`; with no rules at all and no default receivers, it
 * goes to every receiver (the behaviour before rules existed); with rules
 * but no default receivers it is "unrouted", which the caller logs and
 * counts. A rule that cannot be evaluated (its pattern search gave up, the
 * zone data went missing) is taken as matching, unless it drops, and the
 * reason is in its trial.
 *
 * A rule's `throttle:` lets one event per device and kind through per
 * throttle time, counted in event time: an event goes out when it is at
 * least `throttle` seconds after the last one let through; the others are
 * held back and counted, and the next one let through carries that count
 * and the time of the first held one ("and 12 more since 02:14"). The
 * entries live where the caller keeps them (struct throttle_store). */
#ifndef WSRELAY_RULES_H
#define WSRELAY_RULES_H

#include "config.h"
#include "event.h"
#include "state.h"
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>

/* The rules of a configuration, compiled (opaque). */
struct rules;

/* Compiles the rules of `c`, which must outlive the result (rules_free).
 * Fails (-1, `e` naming the rule's file and line) only when a pattern or a
 * window the configuration accepted does not compile now. */
int rules_new(struct rules **out, const struct config *c, struct err *e);

void rules_free(struct rules *r);

enum rule_verdict {
    RULE_NOT_TRIED, /* an earlier rule decided */
    RULE_NO_MATCH,  /* a field of `match:` did not match: `why` says which */
    RULE_OUTSIDE,   /* it matched, but outside its `when:` windows */
    RULE_MATCHED,   /* its receivers get the event */
    RULE_THROTTLED, /* it matched, and its throttle held the event back */
    RULE_DROPPED,   /* a drop rule matched */
};

/* What became of one rule for one event. */
struct rule_trial {
    const struct rule_conf *rule; /* borrowed from the configuration */
    enum rule_verdict verdict;
    char why[256]; /* for NO_MATCH, OUTSIDE (the windows and zone), THROTTLED,
                      and a rule that could not be evaluated: in words; ""
                      otherwise */
};

/* One receiver the event goes to. */
struct route_target {
    const char *receiver;         /* borrowed from the configuration */
    const struct rule_conf *rule; /* the rule that named it; NULL: a default receiver */
    long held;                    /* events that rule's throttle held back before this one */
    long long held_since;         /* the time of the first of them; 0 when held is 0 */
};

enum route_outcome {
    ROUTE_SENT,      /* n_targets > 0 */
    ROUTE_DROPPED,   /* a drop rule matched and no earlier rule named a receiver */
    ROUTE_THROTTLED, /* every rule that matched held it back */
    ROUTE_UNROUTED,  /* no rule matched and there are no default receivers */
};

struct route {
    struct rule_trial *trials; /* one per rule, in order */
    size_t n_trials;
    struct route_target *targets; /* distinct receivers, in the order first named */
    size_t n_targets;
    enum route_outcome outcome;
    bool by_default; /* no rule matched: the targets are the default receivers */
};

/* Where throttle entries are kept: the state in a run, a scratch table for
 * `wsrelay explain`. `get` fills *out and returns true, or returns false
 * when there is no entry (*out is then zeroed by the caller). */
struct throttle_store {
    bool (*get)(void *ctx, const char *rule, const char *serial, const char *kind,
                struct throttle_entry *out);
    void (*set)(void *ctx, const char *rule, const char *serial, const char *kind,
                const struct throttle_entry *t);
    void *ctx;
};

/* Routes `ev` at the time `now` (when: windows are checked against it),
 * updating the throttle entries of the rules that match. `out` is filled
 * and owned by the caller (route_free). Cannot fail. */
void rules_route(struct route *out, const struct rules *r, const struct event *ev, long long now,
                 const struct throttle_store *ts);

void route_free(struct route *r);

/* The throttle step for one event at `at` with a throttle of `window`
 * seconds: returns true when the event goes out, after putting in *held and
 * *since what the entry had held back and resetting it; false when it is
 * held back (the entry counts it). Pure. */
bool throttle_pass(struct throttle_entry *t, long long at, long window, long *held,
                   long long *since);

/* The rule that matches every event at every hour (no match fields, no
 * when:), or NULL: `wsrelay check` warns when there is none and no
 * default receivers either. */
const struct rule_conf *rules_catch_all(const struct config *c);

/* The rule named `name` (NULL: none, or a NULL name), with in *inside
 * whether `now` falls in its `when:` windows (true without windows; an
 * error of the zone data counts as inside, logged): for what follows a
 * routed event, an incident's reminders and escalations. */
const struct rule_conf *rules_find(const struct rules *r, const char *name, bool *inside,
                                   long long now);

/* "sent", "dropped", "throttled", "unrouted"; "matched", "no match", ... */
const char *route_outcome_name(enum route_outcome o);
const char *rule_verdict_name(enum rule_verdict v);

#endif
