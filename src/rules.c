/* Routing rules at work: match an event, apply windows and throttles, and
 * say where it goes and why. */
#include "rules.h"
#include "glob.h"
#include "regexp.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "window.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

struct compiled {
    pcre2_code *text;    /* NULL: no match.text */
    struct window *when; /* NULL: always */
};

struct rules {
    const struct config *cfg;
    struct compiled *items; /* one per rule */
};

/* "a, b, c", cut short for a message. */
static void join(char *out, size_t size, char **items, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < size; i++) {
        int w = snprintf(out + len, size - len, "%s%s", i ? ", " : "", items[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

int rules_new(struct rules **out, const struct config *c, struct err *e)
{
    int rc = -1;
    struct rules *r = xcalloc(1, sizeof *r);
    r->cfg = c;
    r->items = xcalloc(c->n_rules ? c->n_rules : 1, sizeof *r->items);
    for (size_t i = 0; i < c->n_rules; i++) {
        const struct rule_conf *rule = &c->rules[i];
        struct compiled *k = &r->items[i];
        struct err why;
        if (rule->match.text && regexp_compile(&k->text, rule->match.text, &why) < 0) {
            err_set(e, "%s:%ld: rule '%s': match.text: %s", rule->file, rule->line, rule->name,
                    why.msg);
            goto out;
        }
        if (rule->n_when) {
            struct buf all;
            buf_init(&all, 0);
            for (size_t w = 0; w < rule->n_when; w++)
                buf_printf(&all, "%s%s", w ? ", " : "", rule->when[w]);
            int bad = window_parse(&k->when, buf_str(&all), &why);
            buf_free(&all);
            if (bad < 0) {
                err_set(e, "%s:%ld: rule '%s': when: %s", rule->file, rule->line, rule->name,
                        why.msg);
                goto out;
            }
        }
    }
    *out = r;
    r = NULL;
    rc = 0;
out:
    rules_free(r);
    return rc;
}

void rules_free(struct rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->cfg->n_rules; i++) {
        pcre2_code_free(r->items[i].text);
        window_free(r->items[i].when);
    }
    free(r->items);
    free(r);
}

/* --- one rule, one event ------------------------------------------------ */

static bool any_glob(char **globs, size_t n, const char *value)
{
    for (size_t i = 0; i < n; i++)
        if (glob_match(globs[i], value ? value : ""))
            return true;
    return false;
}

static bool any_word(char **words, size_t n, const char *value)
{
    for (size_t i = 0; i < n; i++)
        if (value && !strcmp(words[i], value))
            return true;
    return false;
}

/* Whether `kind`, a word of a rule's `kind:`, covers the event: its own
 * kind, or for an early warning (kind "reading") of channel N, chN too, so
 * that a rule for a channel sees the warning that announces its alarm. */
static bool kind_covers(const char *kind, const struct event *ev)
{
    char channel[16];
    if (!ev->kind)
        return false;
    if (!strcmp(kind, ev->kind))
        return true;
    if (strcmp(ev->kind, "reading") || ev->channel <= 0)
        return false;
    snprintf(channel, sizeof channel, "ch%d", ev->channel);
    return !strcmp(kind, channel);
}

/* Where an event comes from, as a RULE_SOURCE_* bit: an early warning, an
 * alert-log entry, or 0 for wsrelay's own (gap, relay). */
static unsigned source_of(const struct event *ev)
{
    if (!ev->kind || !strcmp(ev->kind, "gap") || !strcmp(ev->kind, "relay"))
        return 0;
    return strcmp(ev->kind, "reading") ? RULE_SOURCE_LOG : RULE_SOURCE_READING;
}

/* Sets t->why when the rule's `kind:` or `source:` leaves out `ev`. */
static bool kind_and_source_match(struct rule_trial *t, const struct event *ev)
{
    const struct rule_match *m = &t->rule->match;
    char list[160], what[64] = "";
    bool hit = !m->n_kind;
    for (size_t i = 0; i < m->n_kind && !hit; i++)
        hit = kind_covers(m->kind[i], ev);
    if (ev->kind && !strcmp(ev->kind, "reading") && ev->channel > 0)
        snprintf(what, sizeof what, " (an early warning of ch%d)", ev->channel);
    if (!hit) {
        join(list, sizeof list, m->kind, m->n_kind);
        snprintf(t->why, sizeof t->why, "kind '%s'%s is not %s", ev->kind ? ev->kind : "(none)",
                 what, list);
        return false;
    }
    unsigned from = source_of(ev);
    if (!m->source || (m->source & from))
        return true;
    const char *want = m->source == RULE_SOURCE_READING ? "reading (an early warning)"
                       : m->source == RULE_SOURCE_LOG   ? "log (the alert log)"
                                                        : "reading or log";
    if (from == RULE_SOURCE_READING)
        snprintf(t->why, sizeof t->why, "source is reading%s, not %s", what, want);
    else if (from == RULE_SOURCE_LOG)
        snprintf(t->why, sizeof t->why, "source is log (kind '%s' of the alert log), not %s",
                 ev->kind, want);
    else
        snprintf(t->why, sizeof t->why, "source: kind '%s' is wsrelay's own, not %s",
                 ev->kind ? ev->kind : "(none)", want);
    return false;
}

/* Sets t->why and returns false when a field of the rule's match does not
 * match `ev`. */
static bool fields_match(struct rule_trial *t, const struct compiled *k, const struct event *ev)
{
    const struct rule_match *m = &t->rule->match;
    char list[160];
    /* In the order of the rule keys; the row without a field is kind and
     * source, which kind_and_source_match checks. */
    const struct {
        const char *field;
        char **items;
        size_t n;
        const char *value;
        bool glob;
    } checks[] = {
        {"account", m->account, m->n_account, ev->account, true},
        {"serial", m->serial, m->n_serial, ev->serial, true},
        {"device", m->device, m->n_device, ev->name, true},
        {"model", m->model, m->n_model, ev->model, true},
        {"group", m->group, m->n_group, ev->group, true},
        {NULL, NULL, 0, NULL, false},
        {"event", m->event, m->n_event, ev->state, false},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (!checks[i].field && !kind_and_source_match(t, ev))
            return false;
        if (!checks[i].n)
            continue;
        bool hit = checks[i].glob ? any_glob(checks[i].items, checks[i].n, checks[i].value)
                                  : any_word(checks[i].items, checks[i].n, checks[i].value);
        if (hit)
            continue;
        join(list, sizeof list, checks[i].items, checks[i].n);
        const char *v = checks[i].value && *checks[i].value ? checks[i].value : NULL;
        snprintf(t->why, sizeof t->why, "%s %s%s%s is not %s", checks[i].field, v ? "'" : "",
                 v ? v : "(none)", v ? "'" : "", list);
        return false;
    }
    if (!k->text)
        return true;
    struct err e;
    int found = regexp_search(k->text, ev->text ? ev->text : "", &e);
    if (found < 0) {
        /* Better a message too many than an alarm lost to a pattern. */
        snprintf(t->why, sizeof t->why, "text: %.160s; taken as %s", e.msg,
                 t->rule->drop ? "no match (the rule drops)" : "a match");
        log_warn("rule '%s' (%s:%ld): %s", t->rule->name, t->rule->file, t->rule->line, t->why);
        return !t->rule->drop;
    }
    if (!found)
        snprintf(t->why, sizeof t->why, "text does not match /%s/", m->text);
    return found == 1;
}

/* Whether the routing time falls in the rule's windows; an error (the zone
 * data went missing) counts as inside, with the reason in t->why. */
static bool in_windows(struct rule_trial *t, const struct compiled *k, const char *tz,
                       long long now)
{
    int inside = 0;
    struct err e;
    char when[160];
    if (!k->when)
        return true;
    if (window_contains(&inside, k->when, tz, now, &e) < 0) {
        snprintf(t->why, sizeof t->why, "when: %.200s; taken as inside", e.msg);
        log_warn("rule '%s' (%s:%ld): %s", t->rule->name, t->rule->file, t->rule->line, t->why);
        return true;
    }
    if (!inside) {
        join(when, sizeof when, t->rule->when, t->rule->n_when);
        snprintf(t->why, sizeof t->why, "%s (%s)", when, tz && *tz ? tz : "local time");
    }
    return inside != 0;
}

/* --- throttles ----------------------------------------------------------- */

bool throttle_pass(struct throttle_entry *t, long long at, long window, long *held,
                   long long *since)
{
    if (t->last_sent == 0 || at >= t->last_sent + window) {
        *held = t->held;
        *since = t->held_since;
        t->last_sent = at;
        t->held = 0;
        t->held_since = 0;
        return true;
    }
    if (t->held++ == 0)
        t->held_since = at;
    return false;
}

/* Applies the rule's throttle to `ev`; true when it goes out. When it is
 * held back, t->why says so. */
static bool throttle(struct rule_trial *tr, const struct event *ev, const struct throttle_store *ts,
                     long *held, long long *since)
{
    const struct rule_conf *rule = tr->rule;
    struct throttle_entry t;
    *held = 0;
    *since = 0;
    if (!rule->throttle || !ts)
        return true;
    memset(&t, 0, sizeof t);
    if (!ts->get(ts->ctx, rule->name, ev->serial, ev->kind, &t))
        memset(&t, 0, sizeof t);
    bool pass = throttle_pass(&t, ev->unixtime, rule->throttle, held, since);
    ts->set(ts->ctx, rule->name, ev->serial, ev->kind, &t);
    if (!pass) {
        char span[24];
        duration_format(span, sizeof span, rule->throttle);
        snprintf(tr->why, sizeof tr->why,
                 "one message per %s for this device and kind; %ld held back so far", span, t.held);
    }
    return pass;
}

/* --- routing --------------------------------------------------------------- */

static void add_target(struct route *out, const char *receiver, const struct rule_conf *rule,
                       long held, long long since)
{
    for (size_t i = 0; i < out->n_targets; i++)
        if (!strcmp(out->targets[i].receiver, receiver))
            return;
    out->targets = xreallocarray(out->targets, out->n_targets + 1, sizeof *out->targets);
    out->targets[out->n_targets++] = (struct route_target){
        .receiver = receiver, .rule = rule, .held = held, .held_since = since};
}

void rules_route(struct route *out, const struct rules *r, const struct event *ev, long long now,
                 const struct throttle_store *ts)
{
    const struct config *c = r->cfg;
    bool matched = false, stop = false, dropped = false;
    memset(out, 0, sizeof *out);
    out->n_trials = c->n_rules;
    out->trials = xcalloc(c->n_rules ? c->n_rules : 1, sizeof *out->trials);
    for (size_t i = 0; i < c->n_rules; i++) {
        struct rule_trial *t = &out->trials[i];
        const struct rule_conf *rule = &c->rules[i];
        t->rule = rule;
        if (stop)
            continue; /* RULE_NOT_TRIED */
        if (!fields_match(t, &r->items[i], ev)) {
            t->verdict = RULE_NO_MATCH;
            continue;
        }
        if (!in_windows(t, &r->items[i], c->timezone, now)) {
            t->verdict = RULE_OUTSIDE;
            continue;
        }
        matched = true;
        stop = !rule->cont;
        if (rule->drop) {
            t->verdict = RULE_DROPPED;
            dropped = stop = true;
            continue;
        }
        long held;
        long long since;
        if (!throttle(t, ev, ts, &held, &since)) {
            t->verdict = RULE_THROTTLED;
            continue;
        }
        t->verdict = RULE_MATCHED;
        for (size_t k = 0; k < rule->n_receivers; k++)
            add_target(out, rule->receivers[k], rule, held, since);
    }
    if (!matched) {
        out->by_default = true;
        if (c->n_default_receivers)
            for (size_t k = 0; k < c->n_default_receivers; k++)
                add_target(out, c->default_receivers[k], NULL, 0, 0);
        else if (c->n_rules == 0)
            for (size_t k = 0; k < c->n_receivers; k++)
                add_target(out, c->receivers[k].name, NULL, 0, 0);
    }
    if (out->n_targets)
        out->outcome = ROUTE_SENT;
    else if (!matched)
        out->outcome = ROUTE_UNROUTED;
    else
        out->outcome = dropped ? ROUTE_DROPPED : ROUTE_THROTTLED;
}

void route_free(struct route *r)
{
    if (!r)
        return;
    free(r->trials);
    free(r->targets);
    memset(r, 0, sizeof *r);
}

const struct rule_conf *rules_catch_all(const struct config *c)
{
    for (size_t i = 0; i < c->n_rules; i++) {
        const struct rule_conf *r = &c->rules[i];
        const struct rule_match *m = &r->match;
        if (!m->n_account && !m->n_serial && !m->n_device && !m->n_model && !m->n_group &&
            !m->n_kind && !m->n_event && !m->text && !m->source && !r->n_when)
            return r;
    }
    return NULL;
}

const char *route_outcome_name(enum route_outcome o)
{
    switch (o) {
    case ROUTE_SENT:
        return "sent";
    case ROUTE_DROPPED:
        return "dropped";
    case ROUTE_THROTTLED:
        return "throttled";
    case ROUTE_UNROUTED:
        return "unrouted";
    }
    return "?";
}

const char *rule_verdict_name(enum rule_verdict v)
{
    switch (v) {
    case RULE_NOT_TRIED:
        return "not tried";
    case RULE_NO_MATCH:
        return "no match";
    case RULE_OUTSIDE:
        return "outside its hours";
    case RULE_MATCHED:
        return "matched";
    case RULE_THROTTLED:
        return "throttled";
    case RULE_DROPPED:
        return "dropped";
    }
    return "?";
}

/* --- rules after routing --------------------------------------------------- */

const struct rule_conf *rules_find(const struct rules *r, const char *name, bool *inside,
                                   long long now)
{
    for (size_t i = 0; name && i < r->cfg->n_rules; i++) {
        const struct rule_conf *rc = &r->cfg->rules[i];
        if (strcmp(rc->name, name) != 0)
            continue;
        struct rule_trial t = {.rule = rc};
        *inside = in_windows(&t, &r->items[i], r->cfg->timezone, now);
        return rc;
    }
    *inside = false;
    return NULL;
}
