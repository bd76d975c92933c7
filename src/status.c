/* `wsrelay status`: what the state file says about each login ID, device
 * and receiver of the configuration, judged as OK or PROBLEM and written in
 * words or as JSON. Both forms are written from one report gathered first,
 * so they never disagree.
 *
 * Why these are the problems (status.h lists them): each one means an
 * alert can be raised now without reaching anybody, and each clears by
 * itself once the cause is fixed (a successful call, a delivery, a run).
 * Fifteen minutes is three alert calls of a login ID, and four retries of
 * a receiver (back-offs of 1, 2, 4 and 8 minutes): long enough that a blip
 * does not wake anyone, short enough that an outage does not stay unseen
 * for an hour. */
#include "status.h"
#include "budget.h"
#include "incident.h"
#include "notify/notify.h"
#include "scheduler.h"
#include "util/buf.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SILENT_TOO_LONG 900 /* seconds without a call while one was allowed */
#define QUEUED_TOO_LONG 900 /* seconds an outbox item may wait */

enum device_kind { DEVICE_POLLED, DEVICE_REFUSED, DEVICE_EXCLUDED };

struct device_row {
    const char *account;   /* the config's name */
    struct state_device d; /* owned, text made printable */
    size_t seen;           /* seen keys kept */
    enum device_kind kind;
    long long next_poll; /* an estimate; 0 unless polled */
    bool has_watch;      /* a reading was seen (readings_memory.h) */
    struct watch w;
};

struct op_row {
    struct sched_budget b;
    long long next_call;
};

struct login_row {
    const char *login; /* the config's */
    const char **accounts;
    size_t n_accounts;
    struct op_row op[PLATFORM_N_OPS];
    struct state_health health; /* error made printable */
    long long last_call;        /* the latest call or outcome recorded; 0: none */
    struct device_row *devs;
    size_t n_devs, n_polled, n_refused;
    long look_every;         /* seconds between two polls of one device; 0: none polled */
    bool signals;            /* an account of the login watches readings */
    long long bound;         /* with signals: the longest a device waits for the round robin */
    size_t signal_calls;     /* alert calls of the last hour that signals asked for */
    long long starved_since; /* signals wait for the budget since then; 0: they do not */
    long long silence_after; /* the platform's delay of a communication error; 0: unknown */
};

struct receiver_row {
    char *name;       /* printable */
    const char *type; /* NULL: no longer configured */
    struct outbox_summary box;
    struct state_health health; /* error made printable */
};

struct notes {
    char **items;
    size_t n;
};

/* An open self-monitoring condition (selfcheck.h). */
struct condition_row {
    char *what;    /* "login-refused", ...; printable */
    char *subject; /* the login ID or receiver; printable */
    struct state_condition c;
};

struct report {
    long long now;
    const char *state_path;
    char *state_error; /* printable; NULL when the state was read */
    bool never_ran;
    struct login_row *logins;
    size_t n_logins;
    struct receiver_row *receivers;
    size_t n_receivers;
    long long dropped, throttled, unrouted;
    struct condition_row *conds; /* open ones only */
    size_t n_conds;
    bool has_heartbeat; /* self.heartbeat is configured */
    struct state_health heartbeat;
    long long expired, lost;        /* outbox events given up: too old, beyond the cap */
    struct state_silence *silences; /* the active ones, texts made printable */
    size_t n_silences;
    struct incident *incidents; /* the open ones */
    size_t n_incidents;
    struct notes problems, warnings;
};

/* --- text ------------------------------------------------------------- */

/* A copy of `s` fit for a terminal line: C0 and C1 control characters
 * (which could move the cursor or start an escape sequence) become spaces.
 * Names come from the platform, errors from far ends. */
static char *printable(const char *s)
{
    char *out = xstrdup(s ? s : "");
    size_t j = 0;
    for (size_t i = 0; out[i]; i++) {
        unsigned char c = (unsigned char)out[i];
        unsigned char next = (unsigned char)out[i + 1];
        if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {
            out[j++] = ' ';
            i++;
        } else {
            out[j++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
        }
    }
    out[j] = '\0';
    return out;
}

static void note(struct notes *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct notes *n, const char *fmt, ...)
{
    struct buf b;
    va_list ap;
    buf_init(&b, 0);
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    n->items = xreallocarray(n->items, n->n + 1, sizeof *n->items);
    n->items[n->n++] = buf_steal(&b);
}

static const char *plural(long long n)
{
    return n == 1 ? "" : "s";
}

/* --- times ------------------------------------------------------------ */

struct when {
    char s[96];
};

/* "just now", "5 min ago", "in 3 min", "2 h ago", "in 1 d". */
static void relative(char *out, size_t size, long long t, long long now)
{
    long long d = now - t;
    if (d >= 0) {
        if (d < 60)
            snprintf(out, size, "just now");
        else if (d < 2 * 3600)
            snprintf(out, size, "%lld min ago", d / 60);
        else if (d < 2 * 86400)
            snprintf(out, size, "%lld h ago", d / 3600);
        else
            snprintf(out, size, "%lld d ago", d / 86400);
        return;
    }
    d = -d;
    if (d < 2 * 3600)
        snprintf(out, size, "in %lld min", (d + 59) / 60);
    else if (d < 2 * 86400)
        snprintf(out, size, "in %lld h", d / 3600);
    else
        snprintf(out, size, "in %lld d", d / 86400);
}

/* The local time of `t`: "HH:MM" on the day of `now`, else "YYYY-MM-DD
 * HH:MM". */
static void clock_text(char *out, size_t size, long long t, long long now)
{
    time_t tt = (time_t)t, tn = (time_t)now;
    struct tm at, today;
    if (!localtime_r(&tt, &at) || !localtime_r(&tn, &today)) {
        snprintf(out, size, "@%lld", t);
        return;
    }
    bool same_day = at.tm_year == today.tm_year && at.tm_yday == today.tm_yday;
    if (!strftime(out, size, same_day ? "%H:%M" : "%Y-%m-%d %H:%M", &at))
        snprintf(out, size, "@%lld", t);
}

/* "11:05 (2 min ago)", or "never" for 0; with `next`, "now" for a time
 * that has come. */
static struct when when(long long t, long long now, bool next)
{
    struct when w;
    char clock[48], rel[40];
    if (t == 0 || (next && t <= now)) {
        snprintf(w.s, sizeof w.s, t ? "now" : "never");
        return w;
    }
    clock_text(clock, sizeof clock, t, now);
    relative(rel, sizeof rel, t, now);
    snprintf(w.s, sizeof w.s, "%s (%s)", clock, rel);
    return w;
}

static struct when ago(long long t, long long now)
{
    struct when w;
    relative(w.s, sizeof w.s, t, now);
    return w;
}

/* "15 min", "2.5 h": how often each device is looked at. */
static struct when duration(long seconds)
{
    struct when w;
    if (seconds < 2 * 3600)
        snprintf(w.s, sizeof w.s, "%ld min", (seconds + 59) / 60);
    else if (seconds % 3600 == 0)
        snprintf(w.s, sizeof w.s, "%ld h", seconds / 3600);
    else
        snprintf(w.s, sizeof w.s, "%.1f h", (double)seconds / 3600);
    return w;
}

/* --- gathering -------------------------------------------------------- */

/* The health of a login ID or a receiver, its error made printable. */
static void read_health(struct state_health *out, const struct state *s, const char *name,
                        bool login)
{
    if (login)
        state_login_health(s, name, out);
    else
        state_receiver_health(s, name, out);
    if (out->error) {
        char *p = printable(out->error);
        free(out->error);
        out->error = p;
    }
}

struct urgency {
    long long last_poll;
    size_t index;
};

/* The order in which scheduler_plan takes devices: never polled first,
 * then the oldest poll, ties in pool order. */
static int cmp_urgency(const void *a, const void *b)
{
    const struct urgency *x = a, *y = b;
    if (x->last_poll != y->last_poll)
        return x->last_poll < y->last_poll ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The estimated next poll of each polled device: the allowance of now goes
 * to the most urgent ones at the next run, then one device per spacing
 * from the next call the budget allows. The hourly window is not modelled:
 * this is an estimate, and says so. */
static void estimate_polls(struct login_row *l, long long now)
{
    struct urgency *order = xcalloc(l->n_devs ? l->n_devs : 1, sizeof *order);
    size_t n = 0;
    for (size_t i = 0; i < l->n_devs; i++)
        if (l->devs[i].kind == DEVICE_POLLED)
            order[n++] = (struct urgency){l->devs[i].d.last_poll, i};
    qsort(order, n, sizeof *order, cmp_urgency);
    const struct op_row *op = &l->op[PLATFORM_ALERT];
    long spacing = scheduler_spacing(&op->b);
    size_t now_allowed = scheduler_allowance(&op->b, now);
    for (size_t k = 0; k < n; k++) {
        long long at;
        if (k < now_allowed)
            at = now;
        else if (now_allowed)
            at = now + (long long)(k - now_allowed + 1) * spacing;
        else
            at = op->next_call + (long long)k * spacing;
        l->devs[order[k].index].next_poll = at;
    }
    free(order);
}

static bool has_row(const struct login_row *l, const char *serial)
{
    for (size_t i = 0; i < l->n_devs; i++)
        if (strcmp(l->devs[i].d.serial, serial) == 0)
            return true;
    return false;
}

/* The devices of every account of the login ID, as run.c pools them: a
 * serial listed by two accounts belongs to the first. */
static void gather_devices(struct login_row *l, const struct config *c, const struct state *s,
                           long long now)
{
    for (size_t i = 0; i < c->n_accounts; i++) {
        const struct account_conf *a = &c->accounts[i];
        if (strcmp(a->login_id, l->login) != 0)
            continue;
        size_t n = 0;
        struct state_device *devs = state_devices(s, a->name, &n);
        for (size_t k = 0; k < n; k++) {
            struct state_device *d = &devs[k];
            if (has_row(l, d->serial))
                continue;
            l->devs = xreallocarray(l->devs, l->n_devs + 1, sizeof *l->devs);
            struct device_row *row = &l->devs[l->n_devs++];
            memset(row, 0, sizeof *row);
            row->account = a->name;
            row->d = *d;
            row->d.serial = printable(d->serial);
            row->d.base = printable(d->base);
            row->d.model = printable(d->model);
            row->d.name = printable(d->name);
            row->d.group = printable(d->group);
            row->seen = state_seen_count(s, d->serial);
            row->has_watch = state_watch(s, d->serial, &row->w) && row->w.unixtime;
            if (!account_wants_serial(a, d->serial)) {
                row->kind = DEVICE_EXCLUDED;
            } else if (d->refused_until > now) {
                row->kind = DEVICE_REFUSED;
                l->n_refused++;
            } else {
                row->kind = DEVICE_POLLED;
                l->n_polled++;
            }
        }
        state_devices_free(devs, n);
    }
    const struct sched_budget *b = &l->op[PLATFORM_ALERT].b;
    l->look_every = (long)l->n_polled * scheduler_spacing(b);
    if (l->signals) {
        l->bound = scheduler_bound(b, l->n_polled);
        l->signal_calls = state_signal_calls_since(s, l->login, now - b->span);
        l->starved_since = state_signals_starved(s, l->login);
        l->silence_after = state_silence_after(s, l->login);
    }
    estimate_polls(l, now);
}

static void gather_login(struct login_row *l, const struct config *c, const struct state *s,
                         long long now)
{
    for (size_t i = 0; i < c->n_accounts; i++)
        if (strcmp(c->accounts[i].login_id, l->login) == 0) {
            l->accounts = xreallocarray(l->accounts, l->n_accounts + 1, sizeof *l->accounts);
            l->accounts[l->n_accounts++] = c->accounts[i].name;
            l->signals |= c->accounts[i].signals;
        }
    for (int op = 0; op < PLATFORM_N_OPS; op++) {
        struct op_row *r = &l->op[op];
        r->b = budget_read(s, l->login, op, now);
        if (op == PLATFORM_ALERT && l->signals)
            r->b.headroom = budget_headroom(s, l->login, now);
        r->next_call = scheduler_next_call(&r->b, now);
        long long last = state_last_call(s, l->login, op);
        if (last > l->last_call)
            l->last_call = last;
    }
    read_health(&l->health, s, l->login, true);
    if (l->health.last_ok > l->last_call)
        l->last_call = l->health.last_ok;
    if (l->health.error_at > l->last_call)
        l->last_call = l->health.error_at;
    gather_devices(l, c, s, now);
}

static void gather_logins(struct report *r, const struct config *c, const struct state *s)
{
    r->logins = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *r->logins);
    for (size_t i = 0; i < c->n_accounts; i++) {
        if (!config_login_first(c, i))
            continue;
        struct login_row *l = &r->logins[r->n_logins++];
        l->login = c->accounts[i].login_id;
        gather_login(l, c, s, r->now);
    }
    r->never_ran = true;
    for (size_t k = 0; k < r->n_logins; k++)
        if (r->logins[k].last_call)
            r->never_ran = false;
}

static void add_receiver(struct report *r, const struct state *s, const char *name,
                         const char *type)
{
    r->receivers = xreallocarray(r->receivers, r->n_receivers + 1, sizeof *r->receivers);
    struct receiver_row *row = &r->receivers[r->n_receivers++];
    memset(row, 0, sizeof *row);
    row->name = printable(name);
    row->type = type;
    state_outbox_summary(s, name, &row->box);
    read_health(&row->health, s, name, false);
}

/* The config's receivers, then those the outbox still names. */
static void gather_receivers(struct report *r, const struct config *c, const struct state *s)
{
    for (size_t i = 0; i < c->n_receivers; i++)
        add_receiver(r, s, c->receivers[i].name, notify_type_name(c->receivers[i].type));
    size_t n = 0;
    char **names = state_outbox_receivers(s, &n);
    for (size_t i = 0; i < n; i++) {
        if (!config_receiver(c, names[i]))
            add_receiver(r, s, names[i], NULL);
        free(names[i]);
    }
    free(names);
}

/* The sum of the counters of wsrelay_notifications_total with `outcome`. */
static long long outbox_lost(const struct state *s, const char *outcome)
{
    size_t n = 0;
    long long sum = 0;
    char **names = state_counter_names(s, &n);
    char *tail = xasprintf("outcome=\"%s\"}", outcome);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]), tl = strlen(tail);
        if (!strncmp(names[i], "wsrelay_notifications_total{", 28) && len > tl &&
            !strcmp(names[i] + len - tl, tail))
            sum += state_counter(s, names[i]);
        free(names[i]);
    }
    free(names);
    free(tail);
    return sum;
}

static void gather_self(struct report *r, const struct config *c, const struct state *s)
{
    size_t n = 0;
    char **keys = state_condition_keys(s, &n);
    r->conds = xcalloc(n ? n : 1, sizeof *r->conds);
    for (size_t i = 0; i < n; i++) {
        struct state_condition cond;
        const char *slash = strchr(keys[i], '/');
        if (slash && state_condition(s, keys[i], &cond) && cond.opened) {
            struct condition_row *row = &r->conds[r->n_conds++];
            char *what = xasprintf("%.*s", (int)(slash - keys[i]), keys[i]);
            row->what = printable(what);
            row->subject = printable(slash + 1);
            row->c = cond;
            free(what);
        } else if (slash) {
            state_condition_clear(&cond);
        }
        free(keys[i]);
    }
    free(keys);
    r->has_heartbeat = c->self.heartbeat != NULL;
    struct state_health hb;
    if (state_heartbeat(s, &hb)) {
        r->heartbeat = hb;
        if (hb.error) {
            r->heartbeat.error = printable(hb.error);
            free(hb.error);
        }
    }
    r->expired = outbox_lost(s, "expired");
    r->lost = outbox_lost(s, "dropped");
}

/* The silences active at r->now: planned work, not a problem (alarms
 * are still recorded), but who reads the status must know that a device
 * pages nobody. */
static void gather_silences(struct report *r, const struct state *s)
{
    size_t n = 0;
    struct state_silence *all = state_silences(s, &n);
    r->silences = xcalloc(n ? n : 1, sizeof *r->silences);
    for (size_t i = 0; i < n; i++) {
        struct state_silence *v = &all[i];
        if (v->from > r->now || r->now >= v->until)
            continue;
        struct state_silence *row = &r->silences[r->n_silences++];
        *row = *v;
        row->glob = printable(v->glob);
        row->reason = printable(v->reason);
        row->by = printable(v->by);
    }
    state_silences_free(all, n);
}

/* The open incidents: what people have to do, not a problem of the
 * relay's (it told them), but who reads the status wants to see them. */
static void gather_incidents(struct report *r, const struct state *s)
{
    size_t n = 0;
    unsigned long *ids = state_incident_ids(s, &n);
    r->incidents = xcalloc(n ? n : 1, sizeof *r->incidents);
    for (size_t i = 0; i < n; i++) {
        struct incident *inc = &r->incidents[r->n_incidents];
        if (!state_incident_get(s, ids[i], inc))
            continue;
        if (inc->state == INCIDENT_OPEN)
            r->n_incidents++;
        else
            incident_clear(inc);
    }
    free(ids);
}

/* "Freezer A ch1": the device's name (else its serial) and what of it the
 * incident is about; a new string, printable. */
static char *incident_subject(const struct incident *inc)
{
    const struct event *ev = &inc->first;
    const char *slash = inc->key ? strchr(inc->key, '/') : NULL;
    char *text = xasprintf("%s %s", ev->name && *ev->name ? ev->name : ev->serial,
                           slash ? slash + 1 : ev->kind);
    char *out = printable(text);
    free(text);
    return out;
}

/* --- judging ---------------------------------------------------------- */

static void judge_login(struct report *r, const struct login_row *l)
{
    long long now = r->now;
    const struct state_health *h = &l->health;
    if (h->failures > 0 && h->last_ok == 0) {
        note(&r->problems, "login %s: no call has succeeded yet; the last failed %s (%s)", l->login,
             ago(h->error_at, now).s, h->error ? h->error : "");
    } else if (h->failures > 0) {
        note(&r->problems, "login %s: last call failed %s (%s)", l->login, ago(h->error_at, now).s,
             h->error ? h->error : "");
    }
    if (l->last_call == 0) {
        if (!r->never_ran)
            note(&r->warnings, "login %s: no platform call recorded yet", l->login);
        return;
    }
    /* Silent while allowed to call: nothing runs wsrelay any more. (A
     * login ID whose devices are all refused may rightly be silent: that
     * is its problem, below.) */
    long long quiet_from = l->last_call;
    for (int op = 0; op < PLATFORM_N_OPS; op++)
        if (l->op[op].b.blocked_until > quiet_from)
            quiet_from = l->op[op].b.blocked_until;
    if (now - quiet_from > SILENT_TOO_LONG && (l->n_polled > 0 || l->n_refused == 0))
        note(&r->problems, "login %s: no platform call since %s: is wsrelay still running?",
             l->login, when(l->last_call, now, false).s);
    if (l->n_polled == 0 && l->n_refused > 0)
        note(&r->problems, "login %s: no device can be polled: %zu refused by the platform",
             l->login, l->n_refused);
    else if (l->n_devs == 0)
        note(&r->warnings, "login %s: no devices known yet", l->login);
    if (l->starved_since && now - l->starved_since >= 3600)
        note(&r->warnings,
             "login %s: devices with a signal have waited for alert calls since %s: "
             "alarms may reach you late (a read-only login ID adds 12 calls an "
             "hour; limits: make early warnings come from the readings)",
             l->login, when(l->starved_since, now, false).s);
    for (size_t i = 0; i < l->n_devs; i++)
        if (l->devs[i].kind == DEVICE_REFUSED && l->n_polled > 0)
            note(&r->warnings,
                 "device %s (account %s): refused by the platform (%ld in a row) "
                 "until %s",
                 l->devs[i].d.serial, l->devs[i].account, l->devs[i].d.refusals,
                 when(l->devs[i].d.refused_until, now, false).s);
}

static void judge_receiver(struct report *r, const struct receiver_row *row)
{
    long long now = r->now;
    const struct state_health *h = &row->health;
    const char *gone = row->type ? "" : " (no longer configured)";
    if (row->box.count && row->box.oldest < now - QUEUED_TOO_LONG) {
        if (h->failures > 0)
            note(&r->problems, "receiver %s%s: %zu event%s waiting since %s, last error %s (%s)",
                 row->name, gone, row->box.count, plural((long long)row->box.count),
                 when(row->box.oldest, now, false).s, ago(h->error_at, now).s,
                 h->error ? h->error : "");
        else
            note(&r->problems, "receiver %s%s: %zu event%s waiting since %s", row->name, gone,
                 row->box.count, plural((long long)row->box.count),
                 when(row->box.oldest, now, false).s);
        return;
    }
    if (!row->type && row->box.count)
        note(&r->warnings, "receiver %s is no longer configured: %zu event%s wait for it",
             row->name, row->box.count, plural((long long)row->box.count));
    else if (h->failures > 0 && row->box.count)
        note(&r->warnings, "receiver %s: last delivery failed %s (%s); %zu event%s waiting",
             row->name, ago(h->error_at, now).s, h->error ? h->error : "", row->box.count,
             plural((long long)row->box.count));
    else if (h->failures > 0)
        /* Nothing kept: the far end refused the events for good. */
        note(&r->warnings, "receiver %s: last delivery refused %s and its events given up (%s)",
             row->name, ago(h->error_at, now).s, h->error ? h->error : "");
}

static void judge(struct report *r)
{
    if (r->state_error) {
        note(&r->problems, "the state file cannot be read: %s", r->state_error);
        return;
    }
    if (r->never_ran)
        note(&r->problems, "no run has completed yet (%s records no platform call)", r->state_path);
    for (size_t i = 0; i < r->n_logins; i++)
        judge_login(r, &r->logins[i]);
    for (size_t i = 0; i < r->n_receivers; i++)
        judge_receiver(r, &r->receivers[i]);
    if (r->unrouted > 0)
        note(&r->warnings, "%lld event%s matched no rule (unrouted)", r->unrouted,
             plural(r->unrouted));
    for (size_t i = 0; i < r->n_conds; i++) {
        const struct condition_row *row = &r->conds[i];
        if (strcmp(row->what, "login-refused") == 0)
            note(&r->problems,
                 "login %s: credentials refused %s; polling paused until the "
                 "configuration changes or %s",
                 row->subject, ago(row->c.opened, r->now).s, when(row->c.retry_at, r->now, true).s);
    }
    if (r->has_heartbeat && r->heartbeat.failures > 0)
        note(&r->warnings, "heartbeat: the last GET failed %s (%s)",
             ago(r->heartbeat.error_at, r->now).s, r->heartbeat.error ? r->heartbeat.error : "");
    if (r->expired + r->lost > 0)
        note(&r->warnings,
             "%lld event%s given up from the outbox (%lld too old, %lld beyond "
             "max_items)",
             r->expired + r->lost, plural(r->expired + r->lost), r->expired, r->lost);
}

/* --- words -------------------------------------------------------------- */

static void write_verdict(struct buf *b, const struct report *r)
{
    if (r->problems.n == 0) {
        buf_puts(b, "OK\n");
    } else {
        buf_puts(b, "PROBLEM: ");
        for (size_t i = 0; i < r->problems.n; i++)
            buf_printf(b, "%s%s", i ? "; " : "", r->problems.items[i]);
        buf_puts(b, "\n");
    }
    for (size_t i = 0; i < r->warnings.n; i++)
        buf_printf(b, "WARNING: %s\n", r->warnings.items[i]);
}

/* The device's last reading and its signal or hint, if any:
 *   reading 2 min ago: ch1 -79.8, ch2 E01 (error); battery 4
 *   signal since 10:02 (limit): its alert log is read at the next call */
static void write_reading(struct buf *b, const struct watch *w, long long now)
{
    char why[64], what[512];
    buf_printf(b, "      reading %s: %s\n", when(w->seen_at, now, false).s,
               watch_summary(what, sizeof what, w));
    if (w->pending)
        buf_printf(b, "      signal since %s (%s): %s\n", when(w->pending_since, now, false).s,
                   watch_reason_text(why, sizeof why, w->pending),
                   w->pending_told ? "its warning is out; its alert log is read after the "
                                     "signals not announced yet"
                                   : "its alert log is read at the next call");
    else if (w->recheck_at)
        buf_printf(b,
                   "      its alert log is read once more at %s (a signal's look found nothing "
                   "yet, or a limit will be crossed before its next upload)\n",
                   when(w->recheck_at, now, true).s);
    if (w->hint_at && !w->pending)
        buf_printf(b,
                   "      an unusual reading at %s: the round robin reads its alert log "
                   "early\n",
                   when(w->hint_at, now, false).s);
}

static void write_device(struct buf *b, const struct login_row *l, const struct device_row *row,
                         long long now)
{
    const struct state_device *d = &row->d;
    buf_printf(b, "    %s  %s", d->serial, *d->name ? d->name : "(no name)");
    const char *sep = " (";
    if (*d->model) {
        buf_printf(b, "%s%s", sep, d->model);
        sep = ", ";
    }
    if (*d->group) {
        buf_printf(b, "%sgroup %s", sep, d->group);
        sep = ", ";
    }
    if (l->n_accounts > 1) {
        buf_printf(b, "%saccount %s", sep, row->account);
        sep = ", ";
    }
    buf_puts(b, *sep == ',' ? ")\n" : "\n");
    buf_puts(b, "      ");
    if (row->kind == DEVICE_EXCLUDED) {
        buf_puts(b, "excluded by the account's include/exclude: not polled\n");
        return;
    }
    if (row->kind == DEVICE_REFUSED)
        buf_printf(b, "refused by the platform (%ld in a row) until %s; ", d->refusals,
                   when(d->refused_until, now, false).s);
    if (!d->last_poll)
        buf_puts(b, "never polled");
    else if (d->last_ok == d->last_poll)
        buf_printf(b, "last poll %s, ok", when(d->last_poll, now, false).s);
    else
        buf_printf(b, "last poll %s, failed; last ok %s", when(d->last_poll, now, false).s,
                   when(d->last_ok, now, false).s);
    if (row->kind == DEVICE_POLLED && row->next_poll <= now)
        buf_puts(b, "; next at the next run");
    else if (row->kind == DEVICE_POLLED)
        buf_printf(b, "; next about %s", when(row->next_poll, now, true).s);
    buf_printf(b, "; %zu key%s seen\n", row->seen, plural((long long)row->seen));
    if (row->has_watch)
        write_reading(b, &row->w, now);
}

static void write_login(struct buf *b, const struct login_row *l, long long now)
{
    const struct op_row *alert = &l->op[PLATFORM_ALERT], *cur = &l->op[PLATFORM_CURRENT];
    buf_printf(b, "\nlogin %s (account%s ", l->login, plural((long long)l->n_accounts));
    for (size_t i = 0; i < l->n_accounts; i++)
        buf_printf(b, "%s%s", i ? ", " : "", l->accounts[i]);
    buf_puts(b, ")\n");
    buf_printf(b,
               "  alert calls: %zu of %d in the last hour (%d kept for an urgent look); next "
               "allowed %s\n",
               alert->b.used, alert->b.limit, alert->b.reserve,
               when(alert->next_call, now, true).s);
    if (l->signals)
        buf_printf(b, "  of those, %zu for signals and %zu for the round robin\n", l->signal_calls,
                   alert->b.used > l->signal_calls ? alert->b.used - l->signal_calls : 0);
    buf_printf(b, "  current-readings calls: %zu of %d in the last 2 min\n", cur->b.used,
               cur->b.limit);
    /* The graph-data operations (trends, `wsrelay readings`), when used. */
    for (int op = PLATFORM_LATEST; op < PLATFORM_N_OPS; op++)
        if (l->op[op].b.used > 0)
            buf_printf(b, "  %s calls: %zu of %d in the last %s\n", platform_op_name(op),
                       l->op[op].b.used, l->op[op].b.limit, duration(l->op[op].b.span).s);
    if (l->starved_since)
        buf_printf(b,
                   "  signals have waited for alert calls since %s (a read-only login ID "
                   "adds 12 calls an hour)\n",
                   when(l->starved_since, now, false).s);
    if (l->silence_after)
        buf_printf(b,
                   "  the platform logs a communication error %s after a device's last "
                   "upload: a device whose uploads stop is looked at then\n",
                   duration((long)l->silence_after).s);
    for (int op = 0; op < PLATFORM_N_OPS; op++)
        if (l->op[op].b.blocked_until > now)
            buf_printf(b, "  %s calls blocked by the platform until %s\n",
                       op == PLATFORM_CURRENT ? "current-readings" : platform_op_name(op),
                       when(l->op[op].b.blocked_until, now, false).s);
    buf_printf(b, "  last success: %s\n", when(l->health.last_ok, now, false).s);
    if (!l->health.error_at)
        buf_puts(b, "  last error: none\n");
    else if (l->health.failures > 0)
        buf_printf(b, "  last error: %s, %ld failure%s in a row: %s\n",
                   when(l->health.error_at, now, false).s, l->health.failures,
                   plural(l->health.failures), l->health.error);
    else
        buf_printf(b, "  last error: %s: %s\n", when(l->health.error_at, now, false).s,
                   l->health.error);
    if (l->n_polled && l->signals)
        buf_printf(b,
                   "  %zu device%s: a signal is looked at within minutes; without one, "
                   "each about every %s, and never more than %s apart (next polls are "
                   "estimates)\n",
                   l->n_devs, plural((long long)l->n_devs), duration(l->look_every).s,
                   duration((long)l->bound).s);
    else if (l->n_polled)
        buf_printf(b, "  %zu device%s, each looked at about every %s (next polls are estimates)\n",
                   l->n_devs, plural((long long)l->n_devs), duration(l->look_every).s);
    else
        buf_printf(b, "  %zu device%s, none polled\n", l->n_devs, plural((long long)l->n_devs));
    for (size_t i = 0; i < l->n_devs; i++)
        write_device(b, l, &l->devs[i], now);
}

static void write_receiver(struct buf *b, const struct receiver_row *row, long long now)
{
    const struct state_health *h = &row->health;
    buf_printf(b, "  %s (%s)\n", row->name, row->type ? row->type : "no longer configured");
    if (!row->box.count)
        buf_puts(b, "    outbox: empty\n");
    else
        buf_printf(b, "    outbox: %zu event%s, oldest queued %s; next try %s\n", row->box.count,
                   plural((long long)row->box.count), when(row->box.oldest, now, false).s,
                   when(row->box.next_try, now, true).s);
    buf_printf(b, "    last success: %s\n", when(h->last_ok, now, false).s);
    if (!h->error_at)
        buf_puts(b, "    last error: none\n");
    else if (h->failures > 0)
        buf_printf(b, "    last error: %s, %ld failure%s in a row: %s\n",
                   when(h->error_at, now, false).s, h->failures, plural(h->failures), h->error);
    else
        buf_printf(b, "    last error: %s: %s\n", when(h->error_at, now, false).s, h->error);
}

static void write_words(struct buf *b, const struct report *r)
{
    char clock[64] = "";
    time_t t = (time_t)r->now;
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(clock, sizeof clock, "%Y-%m-%d %H:%M %Z", &tm);
    write_verdict(b, r);
    buf_printf(b, "\nwsrelay status at %s; state file %s\n", clock, r->state_path);
    if (r->state_error)
        return;
    for (size_t i = 0; i < r->n_logins; i++)
        write_login(b, &r->logins[i], r->now);
    buf_puts(b, "\nreceivers\n");
    for (size_t i = 0; i < r->n_receivers; i++)
        write_receiver(b, &r->receivers[i], r->now);
    buf_printf(b,
               "\nrouting: %lld dropped by a rule, %lld held back by a throttle, "
               "%lld matched no rule (unrouted)\n",
               r->dropped, r->throttled, r->unrouted);
    buf_puts(b, "\nsilences\n");
    if (r->n_silences == 0)
        buf_puts(b, "  no active silence\n");
    for (size_t i = 0; i < r->n_silences; i++) {
        const struct state_silence *v = &r->silences[i];
        char until[48], ch[16] = "";
        clock_text(until, sizeof until, v->until, r->now);
        if (v->channel)
            snprintf(ch, sizeof ch, " ch%d", v->channel);
        buf_printf(b, "  silenced: %s%s until %s (%s, by %s)\n", v->glob, ch, until, v->reason,
                   v->by);
    }
    buf_puts(b, "\nincidents\n");
    if (r->n_incidents == 0)
        buf_puts(b, "  no open incident\n");
    for (size_t i = 0; i < r->n_incidents; i++) {
        const struct incident *inc = &r->incidents[i];
        char age[INCIDENT_DURATION_MAX], *subject = incident_subject(inc), *by = NULL;
        incident_duration_text(age, sizeof age, r->now - inc->opened_at);
        buf_printf(b, "  incident %lu: %s open %s, ", inc->id, subject, age);
        if (inc->acked_at) {
            by = printable(inc->acked_by ? inc->acked_by : "?");
            buf_printf(b, "acknowledged by %s\n", by);
        } else if (!inc->paged) {
            buf_printf(b, "under silence %lu: nobody paged yet\n", inc->silence);
        } else {
            buf_puts(b, "not acknowledged\n");
        }
        free(subject);
        free(by);
    }
    buf_puts(b, "\nself-monitoring\n");
    if (r->n_conds == 0)
        buf_puts(b, "  no open condition\n");
    for (size_t i = 0; i < r->n_conds; i++) {
        const struct condition_row *row = &r->conds[i];
        if (strcmp(row->what, "login-refused") == 0)
            buf_printf(b,
                       "  login %s: credentials refused at %s; polling paused until the "
                       "configuration changes or %s\n",
                       row->subject, when(row->c.opened, r->now, false).s,
                       when(row->c.retry_at, r->now, true).s);
        else
            buf_printf(b, "  %s %s: since %s, reported %s\n", row->what, row->subject,
                       when(row->c.since, r->now, false).s, when(row->c.opened, r->now, false).s);
    }
    if (!r->has_heartbeat)
        buf_puts(b, "  heartbeat: not configured\n");
    else if (r->heartbeat.failures > 0)
        buf_printf(b, "  heartbeat: last GET failed %s: %s\n",
                   when(r->heartbeat.error_at, r->now, false).s,
                   r->heartbeat.error ? r->heartbeat.error : "");
    else if (r->heartbeat.last_ok)
        buf_printf(b, "  heartbeat: last GET ok %s\n", when(r->heartbeat.last_ok, r->now, false).s);
    else
        buf_puts(b, "  heartbeat: not sent yet\n");
    buf_printf(b, "  outbox: %lld event%s given up as too old (max_age), %lld beyond max_items\n",
               r->expired, plural(r->expired), r->lost);
}

/* --- JSON --------------------------------------------------------------- */

/* A time, or null for 0 (never). */
static void put_time(struct json_object *obj, const char *key, long long t)
{
    jsonv_put(obj, key, t ? jsonv_need(json_object_new_int64((int64_t)t)) : NULL);
}

static void put_str(struct json_object *obj, const char *key, const char *s)
{
    jsonv_put(obj, key, s ? jsonv_need(json_object_new_string(s)) : NULL);
}

static struct json_object *notes_json(const struct notes *n)
{
    struct json_object *arr = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < n->n; i++)
        jsonv_append(arr, jsonv_need(json_object_new_string(n->items[i])));
    return arr;
}

/* last_ok, failures and last_error ({at, status, message} or null). */
static void put_health(struct json_object *obj, const struct state_health *h, bool with_status)
{
    put_time(obj, "last_ok", h->last_ok);
    jsonv_put_int(obj, "failures", h->failures);
    struct json_object *err = NULL;
    if (h->error_at) {
        err = jsonv_need(json_object_new_object());
        jsonv_put_int(err, "at", h->error_at);
        if (with_status)
            jsonv_put(err, "status",
                      h->status ? jsonv_need(json_object_new_int64(h->status)) : NULL);
        put_str(err, "message", h->error ? h->error : "");
    }
    jsonv_put(obj, "last_error", err);
}

/* {"unixtime", "seen_at", "battery", "silent", "channels": [{"num",
 * "value" (null for an error value), "zone"}], "signal": null or
 * {"since", "reasons": [...]}, "recheck_at", "hint_at"} */
static struct json_object *reading_json(const struct watch *w)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    struct json_object *chans = jsonv_need(json_object_new_array());
    put_time(o, "unixtime", w->unixtime);
    put_time(o, "seen_at", w->seen_at);
    jsonv_put_int(o, "battery", w->battery);
    jsonv_put(o, "silent", jsonv_need(json_object_new_boolean(w->silent)));
    for (int i = 0; i < w->n_ch; i++) {
        struct json_object *c = jsonv_need(json_object_new_object());
        jsonv_put_int(c, "num", w->ch[i].num);
        jsonv_put(c, "value",
                  w->ch[i].error ? NULL : jsonv_need(json_object_new_double(w->ch[i].value)));
        jsonv_put_int(c, "zone", w->ch[i].zone);
        jsonv_append(chans, c);
    }
    jsonv_put(o, "channels", chans);
    struct json_object *sig = NULL;
    if (w->pending) {
        struct json_object *why = jsonv_need(json_object_new_array());
        sig = jsonv_need(json_object_new_object());
        put_time(sig, "since", w->pending_since);
        for (unsigned bit = 1; bit <= WATCH_REASON_LAST; bit <<= 1)
            if (w->pending & bit)
                jsonv_append(why, jsonv_need(json_object_new_string(watch_reason_name(bit))));
        jsonv_put(sig, "reasons", why);
        jsonv_put(sig, "told", jsonv_need(json_object_new_boolean(w->pending_told)));
    }
    jsonv_put(o, "signal", sig);
    put_time(o, "recheck_at", w->recheck_at);
    put_time(o, "hint_at", w->hint_at);
    return o;
}

static struct json_object *device_json(const struct device_row *row)
{
    static const char *const kinds[] = {
        [DEVICE_POLLED] = "polled", [DEVICE_REFUSED] = "refused", [DEVICE_EXCLUDED] = "excluded"};
    struct json_object *o = jsonv_need(json_object_new_object());
    put_str(o, "account", row->account);
    put_str(o, "serial", row->d.serial);
    put_str(o, "name", row->d.name);
    put_str(o, "model", row->d.model);
    put_str(o, "group", row->d.group);
    put_str(o, "state", kinds[row->kind]);
    put_time(o, "last_poll", row->d.last_poll);
    put_time(o, "last_ok", row->d.last_ok);
    put_time(o, "next_poll", row->next_poll);
    put_time(o, "refused_until", row->kind == DEVICE_REFUSED ? row->d.refused_until : 0);
    jsonv_put_int(o, "refusals", row->d.refusals);
    jsonv_put_int(o, "seen_keys", (long long)row->seen);
    jsonv_put(o, "reading", row->has_watch ? reading_json(&row->w) : NULL);
    return o;
}

static struct json_object *login_json(const struct login_row *l, long long now)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    put_str(o, "login_id", l->login);
    struct json_object *accounts = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < l->n_accounts; i++)
        jsonv_append(accounts, jsonv_need(json_object_new_string(l->accounts[i])));
    jsonv_put(o, "accounts", accounts);
    /* Every operation's budget; the reserve and the next routine call only
     * of the two that polling spaces out. */
    for (int op = 0; op < PLATFORM_N_OPS; op++) {
        const struct op_row *r = &l->op[op];
        bool routine = op == PLATFORM_ALERT || op == PLATFORM_CURRENT;
        struct json_object *b = jsonv_need(json_object_new_object());
        jsonv_put_int(b, "used", (long long)r->b.used);
        jsonv_put_int(b, "limit", r->b.limit);
        if (routine)
            jsonv_put_int(b, "reserve", r->b.reserve);
        jsonv_put_int(b, "span", r->b.span);
        if (routine)
            jsonv_put_int(b, "next_call", r->next_call);
        put_time(b, "blocked_until", r->b.blocked_until > now ? r->b.blocked_until : 0);
        jsonv_put(o, platform_op_name(op), b);
    }
    put_time(o, "last_call", l->last_call);
    put_health(o, &l->health, true);
    jsonv_put(o, "look_interval",
              l->look_every ? jsonv_need(json_object_new_int64(l->look_every)) : NULL);
    jsonv_put(o, "signals", jsonv_need(json_object_new_boolean(l->signals)));
    jsonv_put(o, "round_robin_bound",
              l->bound ? jsonv_need(json_object_new_int64(l->bound)) : NULL);
    jsonv_put_int(o, "signal_calls_last_hour", (long long)l->signal_calls);
    put_time(o, "signals_starved_since", l->starved_since);
    jsonv_put(o, "silence_after",
              l->silence_after ? jsonv_need(json_object_new_int64(l->silence_after)) : NULL);
    struct json_object *devs = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < l->n_devs; i++)
        jsonv_append(devs, device_json(&l->devs[i]));
    jsonv_put(o, "devices", devs);
    return o;
}

static struct json_object *receiver_json(const struct receiver_row *row)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    put_str(o, "name", row->name);
    put_str(o, "type", row->type);
    jsonv_put(o, "configured", jsonv_need(json_object_new_boolean(row->type != NULL)));
    struct json_object *box = jsonv_need(json_object_new_object());
    jsonv_put_int(box, "count", (long long)row->box.count);
    put_time(box, "oldest_queued", row->box.oldest);
    put_time(box, "next_try", row->box.next_try);
    jsonv_put(o, "outbox", box);
    put_health(o, &row->health, false);
    return o;
}

static void write_json(struct buf *b, const struct report *r)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    put_str(o, "verdict", r->problems.n ? "PROBLEM" : "OK");
    jsonv_put(o, "problems", notes_json(&r->problems));
    jsonv_put(o, "warnings", notes_json(&r->warnings));
    jsonv_put_int(o, "now", r->now);
    put_str(o, "state_file", r->state_path);
    struct json_object *logins = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < r->n_logins; i++)
        jsonv_append(logins, login_json(&r->logins[i], r->now));
    jsonv_put(o, "logins", logins);
    struct json_object *receivers = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < r->n_receivers; i++)
        jsonv_append(receivers, receiver_json(&r->receivers[i]));
    jsonv_put(o, "receivers", receivers);
    struct json_object *counters = NULL;
    if (!r->state_error) {
        counters = jsonv_need(json_object_new_object());
        jsonv_put_int(counters, "dropped", r->dropped);
        jsonv_put_int(counters, "throttled", r->throttled);
        jsonv_put_int(counters, "unrouted", r->unrouted);
    }
    jsonv_put(o, "counters", counters);
    struct json_object *silences = NULL;
    if (!r->state_error) {
        silences = jsonv_need(json_object_new_array());
        for (size_t i = 0; i < r->n_silences; i++) {
            const struct state_silence *v = &r->silences[i];
            struct json_object *one = jsonv_need(json_object_new_object());
            jsonv_put_int(one, "id", (long long)v->id);
            put_str(one, "glob", v->glob);
            jsonv_put_int(one, "channel", v->channel);
            jsonv_put_int(one, "from", v->from);
            jsonv_put_int(one, "until", v->until);
            put_str(one, "reason", v->reason);
            put_str(one, "by", v->by);
            jsonv_append(silences, one);
        }
    }
    jsonv_put(o, "silences", silences);
    struct json_object *incidents = NULL;
    if (!r->state_error) {
        incidents = jsonv_need(json_object_new_array());
        for (size_t i = 0; i < r->n_incidents; i++) {
            const struct incident *inc = &r->incidents[i];
            struct json_object *one = jsonv_need(json_object_new_object());
            char id[24], *key = printable(inc->key), *by = NULL;
            snprintf(id, sizeof id, "%lu", inc->id);
            put_str(one, "id", id);
            put_str(one, "key", key);
            put_str(one, "state", inc->acked_at ? "acknowledged" : "open");
            jsonv_put_int(one, "opened", inc->first.unixtime);
            jsonv_put_int(one, "age", r->now - inc->opened_at);
            if (inc->acked_at)
                by = printable(inc->acked_by ? inc->acked_by : "?");
            put_str(one, "acknowledged_by", by);
            jsonv_put_int(one, "reminders", inc->reminders);
            jsonv_put_int(one, "step", inc->step);
            jsonv_append(incidents, one);
            free(key);
            free(by);
        }
    }
    jsonv_put(o, "incidents", incidents);
    struct json_object *self = NULL;
    if (!r->state_error) {
        self = jsonv_need(json_object_new_object());
        struct json_object *conds = jsonv_need(json_object_new_array());
        for (size_t i = 0; i < r->n_conds; i++) {
            const struct condition_row *row = &r->conds[i];
            struct json_object *c = jsonv_need(json_object_new_object());
            put_str(c, "condition", row->what);
            put_str(c, "subject", row->subject);
            put_time(c, "since", row->c.since);
            put_time(c, "opened", row->c.opened);
            put_time(c, "retry_at", row->c.retry_at);
            jsonv_append(conds, c);
        }
        jsonv_put(self, "conditions", conds);
        struct json_object *hb = NULL;
        if (r->has_heartbeat) {
            hb = jsonv_need(json_object_new_object());
            put_health(hb, &r->heartbeat, true);
        }
        jsonv_put(self, "heartbeat", hb);
        jsonv_put_int(self, "expired", r->expired);
        jsonv_put_int(self, "dropped", r->lost);
    }
    jsonv_put(o, "self", self);
    const char *text = json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!text)
        xalloc_die();
    buf_puts(b, text);
    buf_puts(b, "\n");
    json_object_put(o);
}

/* --- the report --------------------------------------------------------- */

static void report_free(struct report *r)
{
    for (size_t i = 0; i < r->n_logins; i++) {
        struct login_row *l = &r->logins[i];
        for (size_t k = 0; k < l->n_devs; k++) {
            struct state_device *d = &l->devs[k].d;
            free(d->serial);
            free(d->base);
            free(d->model);
            free(d->name);
            free(d->group);
        }
        free(l->devs);
        free((void *)l->accounts);
        state_health_clear(&l->health);
    }
    free(r->logins);
    for (size_t i = 0; i < r->n_receivers; i++) {
        free(r->receivers[i].name);
        state_health_clear(&r->receivers[i].health);
    }
    free(r->receivers);
    for (size_t i = 0; i < r->n_conds; i++) {
        free(r->conds[i].what);
        free(r->conds[i].subject);
        state_condition_clear(&r->conds[i].c);
    }
    free(r->conds);
    state_silences_free(r->silences, r->n_silences);
    for (size_t i = 0; i < r->n_incidents; i++)
        incident_clear(&r->incidents[i]);
    free(r->incidents);
    state_health_clear(&r->heartbeat);
    for (size_t i = 0; i < r->problems.n; i++)
        free(r->problems.items[i]);
    free(r->problems.items);
    for (size_t i = 0; i < r->warnings.n; i++)
        free(r->warnings.items[i]);
    free(r->warnings.items);
    free(r->state_error);
}

enum status_verdict status_report(FILE *out, const struct config *c, const struct state *s,
                                  const char *state_error, long long now, bool json)
{
    struct report r = {.now = now, .state_path = c->state_file};
    struct buf b;
    buf_init(&b, 0);
    if (!s) {
        r.state_error = printable(state_error ? state_error : "unknown error");
    } else {
        gather_logins(&r, c, s);
        gather_receivers(&r, c, s);
        gather_self(&r, c, s);
        gather_silences(&r, s);
        gather_incidents(&r, s);
        r.dropped = state_counter(s, "dropped");
        r.throttled = state_counter(s, "throttled");
        r.unrouted = state_counter(s, "unrouted");
    }
    judge(&r);
    if (json)
        write_json(&b, &r);
    else
        write_words(&b, &r);
    fwrite(b.data ? b.data : "", 1, b.len, out);
    enum status_verdict v = r.problems.n ? STATUS_PROBLEM : STATUS_OK;
    buf_free(&b);
    report_free(&r);
    return v;
}
