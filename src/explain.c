/* `wsrelay explain`: the rules' verdicts on a saved alert log, in words. */
#include "explain.h"
#include "event.h"
#include "rules.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Throttle entries for the length of one explanation. */
struct scratch {
    struct {
        char *key; /* "RULE\nSERIAL\nKIND" */
        struct throttle_entry t;
    } * items;
    size_t n;
};

static char *scratch_key(const char *rule, const char *serial, const char *kind)
{
    return xasprintf("%s\n%s\n%s", rule, serial, kind);
}

static bool scratch_get(void *ctx, const char *rule, const char *serial, const char *kind,
                        struct throttle_entry *out)
{
    struct scratch *s = ctx;
    char *key = scratch_key(rule, serial, kind);
    bool found = false;
    for (size_t i = 0; i < s->n && !found; i++)
        if (!strcmp(s->items[i].key, key)) {
            *out = s->items[i].t;
            found = true;
        }
    free(key);
    return found;
}

static void scratch_set(void *ctx, const char *rule, const char *serial, const char *kind,
                        const struct throttle_entry *t)
{
    struct scratch *s = ctx;
    char *key = scratch_key(rule, serial, kind);
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->items[i].key, key)) {
            s->items[i].t = *t;
            free(key);
            return;
        }
    s->items = xreallocarray(s->items, s->n + 1, sizeof *s->items);
    s->items[s->n].key = key;
    s->items[s->n].t = *t;
    s->n++;
}

static void scratch_free(struct scratch *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->items[i].key);
    free(s->items);
}

/* The account named `name`, or the only one when `name` is NULL. */
static const struct account_conf *pick_account(const struct config *c, const char *name,
                                               struct err *e)
{
    const struct account_conf *a = config_account(c, name);
    if (a)
        return a;
    if (name) {
        err_set(e, "no account named '%s' in %s", name, c->path);
        return NULL;
    }
    if (c->n_accounts == 1)
        return &c->accounts[0];
    err_set(e, "%s has %zu accounts: say which one the log is from with --account", c->path,
            c->n_accounts);
    return NULL;
}

/* Puts o->serial into the body when it names no device; refuses one that
 * contradicts it. */
static int take_serial(struct json_object *body, const char *serial, struct err *e)
{
    if (!json_object_is_type(body, json_type_object))
        return err_set(e, "not an alert log: expected a JSON object");
    char *given = jsonv_text(jsonv_member(body, "remote-serial"));
    int rc = 0;
    if ((!given || !*given) && !serial)
        rc = err_set(e, "the log does not name its device (remote-serial): give --serial");
    else if (!given || !*given)
        json_object_object_add(body, "remote-serial", json_object_new_string(serial));
    else if (serial && strcmp(given, serial))
        rc = err_set(e, "--serial %s, but the log is of device %s", serial, given);
    free(given);
    return rc;
}

static void print_event(FILE *out, const struct event *ev)
{
    char when[32];
    char *id = event_id(ev);
    event_local_time(when, sizeof when, ev);
    fprintf(out, "%s  %s\n", id, when);
    fprintf(out, "  device %s (%s%s%s), account %s, group %s\n", *ev->name ? ev->name : ev->serial,
            ev->model, *ev->model ? ", " : "", ev->serial, ev->account,
            ev->group && *ev->group ? ev->group : "(none)");
    fprintf(out, "  %s", ev->state);
    if (ev->value)
        fprintf(out, ", value %s", ev->value);
    if (ev->limit)
        fprintf(out, ", limit %s", ev->limit);
    fprintf(out, ": %s\n", ev->text);
    free(id);
}

static void print_trials(FILE *out, const struct route *rt)
{
    size_t width = 4;
    for (size_t i = 0; i < rt->n_trials; i++)
        if (strlen(rt->trials[i].rule->name) > width)
            width = strlen(rt->trials[i].rule->name);
    for (size_t i = 0; i < rt->n_trials; i++) {
        const struct rule_trial *t = &rt->trials[i];
        const char *base = strrchr(t->rule->file, '/');
        fprintf(out, "  %2zu. %-*s  %s%s%s  (%s:%ld)\n", i + 1, (int)width, t->rule->name,
                rule_verdict_name(t->verdict), *t->why ? ": " : "", t->why,
                base ? base + 1 : t->rule->file, t->rule->line);
    }
}

/* "02:14" in the device's local time when on the event's local date, else
 * "MM-DD HH:MM". */
static void short_time(char *out, size_t size, const struct event *ev, long long t)
{
    time_t a = (time_t)(t + ev->utc_offset * 60LL),
           b = (time_t)(ev->unixtime + ev->utc_offset * 60LL);
    struct tm ta, tb;
    gmtime_r(&a, &ta);
    gmtime_r(&b, &tb);
    if (ta.tm_year == tb.tm_year && ta.tm_yday == tb.tm_yday)
        strftime(out, size, "%H:%M", &ta);
    else
        strftime(out, size, "%m-%d %H:%M", &ta);
}

static void print_outcome(FILE *out, const struct config *c, const struct route *rt,
                          const struct event *ev)
{
    switch (rt->outcome) {
    case ROUTE_SENT:
        if (rt->by_default)
            fprintf(out, "  -> %s:",
                    c->n_rules               ? "no rule matched; the default receivers"
                    : c->n_default_receivers ? "no rules; the default receivers"
                                             : "no rules; every receiver");
        else
            fprintf(out, "  -> sent to");
        for (size_t i = 0; i < rt->n_targets; i++) {
            const struct route_target *to = &rt->targets[i];
            fprintf(out, "%s %s", i ? "," : "", to->receiver);
            if (to->rule && (to->rule->severity || to->held))
                fprintf(out, " (");
            if (to->rule && to->rule->severity)
                fprintf(out, "severity %s%s", to->rule->severity, to->held ? ", " : ")");
            if (to->rule && to->held) {
                char since[16];
                short_time(since, sizeof since, ev, to->held_since);
                fprintf(out, "and %ld more since %s)", to->held, since);
            }
        }
        fputc('\n', out);
        break;
    case ROUTE_DROPPED:
        fprintf(out, "  -> dropped: recorded as seen and counted, sent nowhere\n");
        break;
    case ROUTE_THROTTLED:
        fprintf(out, "  -> held back by a throttle: counted, and the next message of this "
                     "device and kind says so\n");
        break;
    case ROUTE_UNROUTED:
        fprintf(out, "  -> UNROUTED: no rule matched and there are no default_receivers; it "
                     "would be sent nowhere (a warning in the log)\n");
        break;
    }
}

int explain_alert_log(FILE *out, const struct config *c, struct json_object *body,
                      const struct explain_options *o, struct err *e)
{
    int rc = -1;
    struct rules *rules = NULL;
    struct event_list list = {0};
    struct scratch scratch = {0};
    struct throttle_store ts = {.get = scratch_get, .set = scratch_set, .ctx = &scratch};
    size_t counts[ROUTE_UNROUTED + 1] = {0};
    const struct account_conf *a = pick_account(c, o->account, e);
    if (!a || take_serial(body, o->serial, e) < 0)
        goto out;
    if (rules_new(&rules, c, e) < 0)
        goto out;
    if (event_parse_alert_log(&list, body, a->name, e) < 0)
        goto out;
    char at[32];
    time_t now = (time_t)o->now;
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(out, "%zu rule%s, timezone %s; routing at %s (--now %lld); %zu event%s\n", c->n_rules,
            c->n_rules == 1 ? "" : "s", c->timezone ? c->timezone : "local", at, o->now, list.n,
            list.n == 1 ? "" : "s");
    for (size_t i = 0; i < list.n; i++) {
        struct event *ev = &list.items[i];
        struct route rt;
        if (o->group) {
            free(ev->group);
            ev->group = xstrdup(o->group);
        }
        rules_route(&rt, rules, ev, o->now, &ts);
        fputc('\n', out);
        print_event(out, ev);
        print_trials(out, &rt);
        print_outcome(out, c, &rt, ev);
        counts[rt.outcome]++;
        route_free(&rt);
    }
    fprintf(out, "\n%zu sent, %zu dropped, %zu throttled, %zu unrouted\n", counts[ROUTE_SENT],
            counts[ROUTE_DROPPED], counts[ROUTE_THROTTLED], counts[ROUTE_UNROUTED]);
    rc = 0;
out:
    scratch_free(&scratch);
    event_list_free(&list);
    rules_free(rules);
    return rc;
}
