/* `wsrelay incidents`: the incidents the state keeps, open ones by default,
 * in words or JSON; with --since, every incident with a step in a span,
 * from the incident log, and with --csv that span's lines of the log for
 * the record; `wsrelay incidents show ID`: one incident and its whole
 * timeline. Nothing is locked (state_peek; the log's reader holds
 * nothing): a run may hold the lock as long as it likes. */
#include "cmd/cmd.h"
#include "incident.h"
#include "run/run.h"
#include "state.h"
#include "state/incidentlog.h"
#include "util/duration.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The span of --csv without --since: a month, what an auditor asks for
 * most often. */
#define CSV_SPAN_DEFAULT (30L * 86400)

/* The most of a text from the log shown in words or JSON (an alert text
 * or a note is a few hundred bytes; the CSV carries them whole). */
#define TEXT_MAX 1000

enum { OPT_ALL = 1, OPT_SINCE, OPT_CSV, OPT_JSON, OPT_NOW };

static const struct opt_spec opts[] = {
    {OPT_ALL, "all", 0, NULL, 0, "ended incidents the state still keeps too (a day after the end)"},
    {OPT_SINCE, "since", 0, "DURATION", OPT_OR,
     "the incidents with a step in the last DURATION (7d, 30d), from the incident log"},
    {OPT_CSV, "csv", 0, NULL, 0,
     "every line of the incident log in the span (--since, default 30d) as CSV"},
    {OPT_JSON, "json", 0, NULL, OPT_OR, "as JSON (show: the incident and its timeline's lines)"},
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "the time ages and the span are counted to (default: now)"},
    {0},
};

struct list_options {
    bool all, json, csv;
    long since; /* seconds of the span; 0: the incidents the state keeps */
    long long now;
};

/* Says "wsrelay: incidents: ..." on stderr. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wsrelay: incidents: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The machine's local time of `t`, "YYYY-MM-DD HH:MM" (with `seconds`,
 * ":SS" after). */
static void local_text(char *out, size_t size, long long t, bool seconds)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm) ||
        !strftime(out, size, seconds ? "%Y-%m-%d %H:%M:%S" : "%Y-%m-%d %H:%M", &tm))
        snprintf(out, size, "@%lld", t);
}

/* --- the incidents the state keeps ---------------------------------------- */

/* One incident as a line: "12  open  03:00  34 min  Freezer A (5214000A) ch1 ...", the
 * duration from its alarm to its recovery, or to now while it is open. */
static void print_line(const struct incident *inc, long long now)
{
    struct json_object *snap = incident_snapshot(inc, NOTICE_OPENED, now);
    /* from its alarm to its recovery, or to now while it is open */
    const char *age = json_object_get_string(jsonv_member(snap, "duration_text"));
    const char *name = inc->first.name && *inc->first.name ? inc->first.name : inc->first.serial;
    const char *state = json_object_get_string(jsonv_member(snap, "state"));
    printf("%-6lu %-12s %-11s %-10s %s (%s) %s", inc->id, state,
           json_object_get_string(jsonv_member(snap, "opened_time")), age, name, inc->first.serial,
           strchr(inc->key, '/') + 1);
    if (inc->acked_at)
        printf(", acknowledged by %s", inc->acked_by ? inc->acked_by : "?");
    else if (inc->state == INCIDENT_OPEN && inc->paged)
        printf(", not acknowledged (%d reminder%s, step %d)", inc->reminders,
               inc->reminders == 1 ? "" : "s", inc->step);
    else if (inc->state == INCIDENT_OPEN)
        printf(", under silence %lu: nobody paged", inc->silence);
    if (inc->has_live && inc->state == INCIDENT_OPEN)
        printf(", now %s", json_object_get_string(jsonv_member(snap, "live")));
    putchar('\n');
    json_object_put(snap);
}

static int list(const struct config *c, const struct list_options *o)
{
    struct state *st = NULL;
    struct err e;
    size_t n = 0, shown = 0;
    unsigned long *ids = NULL;
    struct json_object *arr = jsonv_need(json_object_new_array());
    if (state_peek(&st, c->state_file, &e) < 0) {
        log_error("%s", e.msg);
        json_object_put(arr);
        return RUN_FAILED;
    }
    ids = state_incident_ids(st, &n);
    for (size_t i = 0; i < n; i++) {
        struct incident inc;
        if (!state_incident_get(st, ids[i], &inc))
            continue;
        if (o->all || inc.state == INCIDENT_OPEN) {
            if (o->json) {
                struct json_object *snap = incident_snapshot(&inc, NOTICE_OPENED, o->now);
                json_object_object_del(snap, "notice");
                for (int k = NOTICE_OPENED; k <= NOTICE_CLOSED; k++) {
                    char key[32];
                    snprintf(key, sizeof key, "is_%s", incident_notice_name(k));
                    json_object_object_del(snap, key);
                }
                jsonv_put(snap, "device", jsonv_need(event_to_json(&inc.first)));
                jsonv_append(arr, snap);
            } else {
                if (!shown)
                    printf("%-6s %-12s %-11s %-10s %s\n", "ID", "STATE", "OPENED", "DURATION",
                           "DEVICE AND WHAT");
                print_line(&inc, o->now);
            }
            shown++;
        }
        incident_clear(&inc);
    }
    if (o->json)
        printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    else if (!shown)
        printf("no %sincident\n", o->all ? "" : "open ");
    json_object_put(arr);
    free(ids);
    state_close(st);
    return RUN_OK;
}

/* --- the incident log ------------------------------------------------------ */

/* Each line of the log, then each of the state's journal that the log
 * does not hold yet (a save records a step before its line is appended,
 * and keeps it until the next save), once each. */
struct walk {
    long long since, until; /* the lines whose "at" is in [since, until] */
    bool (*fn)(const struct json_object *line, void *ctx);
    void *ctx;
    struct json_object *given; /* "INCIDENT SEQ" of each line given -> null */
};

/* The line's "INCIDENT SEQ" and its "at"; false for a line without them. */
static bool line_id(char *out, size_t size, long long *at, const struct json_object *line)
{
    long long seq;
    struct json_object *inc = jsonv_member(line, "incident");
    if (!json_object_is_type(inc, json_type_string) || !jsonv_int(jsonv_member(line, "at"), at) ||
        !jsonv_int(jsonv_member(line, "seq"), &seq))
        return false;
    snprintf(out, size, "%.64s %lld", json_object_get_string(inc), seq);
    return true;
}

static bool walk_line(const struct json_object *line, void *ctx)
{
    struct walk *w = ctx;
    char key[96];
    long long at;
    if (!line_id(key, sizeof key, &at, line) || at < w->since || at > w->until ||
        json_object_object_get_ex(w->given, key, NULL))
        return true;
    jsonv_put(w->given, key, NULL);
    return w->fn(line, w->ctx);
}

/* Calls `fn` for each line of the incident log beside `state_path` whose
 * "at" is in [since, until], oldest first, then for each line of the
 * journal of `st` (NULL: none) in that span that the log did not give. A
 * damaged line of the log is skipped with a warning. -1 with the reason
 * in `e` when the log cannot be read. */
static int walk_log(const char *state_path, const struct state *st, long long since,
                    long long until, bool (*fn)(const struct json_object *line, void *ctx),
                    void *ctx, struct err *e)
{
    struct walk w = {.since = since, .until = until, .fn = fn, .ctx = ctx};
    size_t damaged = 0, n = 0;
    int rc = -1;
    w.given = jsonv_need(json_object_new_object());
    if (incidentlog_read(&damaged, state_path, since, walk_line, &w, e) < 0)
        goto out;
    if (damaged)
        log_warn("%s.incidents: %zu damaged line%s skipped", state_path, damaged,
                 damaged == 1 ? "" : "s");
    const char **journal = st ? state_incident_journal(st, &n) : NULL;
    for (size_t i = 0; i < n; i++) {
        struct json_object *line = json_tokener_parse(journal[i]);
        bool go_on = !json_object_is_type(line, json_type_object) || walk_line(line, &w);
        json_object_put(line);
        if (!go_on)
            break;
    }
    free(journal);
    rc = 0;
out:
    json_object_put(w.given);
    return rc;
}

/* An incident as its timeline tells it (or as the state keeps it). */
struct summary {
    char id[24];
    bool kept;       /* the state still keeps it */
    bool from_state; /* the fields below are the state's, not the log's */
    bool in_span;
    size_t steps;          /* its lines seen */
    long long opened;      /* unixtime of the alarm that opened it */
    long long opened_at;   /* wsrelay's clock when it opened */
    long long ended;       /* unixtime of the recovery, or of the closing; 0: open */
    bool resolved, closed; /* how it ended */
    char *account, *serial, *device, *kind, *text, *rule, *severity;
    int channel;
    char **told;
    size_t n_told;
    long long acked_at; /* 0: nobody acknowledged it */
    char *acked_by, *note;
    char *peak;
    long long duration; /* from the alarm to its end, or to the span's end */
    int reminders, step;
    char *live; /* from the state only: the channel's latest reading */
};

static void summary_clear(struct summary *s)
{
    free(s->account);
    free(s->serial);
    free(s->device);
    free(s->kind);
    free(s->text);
    free(s->rule);
    free(s->severity);
    for (size_t i = 0; i < s->n_told; i++)
        free(s->told[i]);
    free(s->told);
    free(s->acked_by);
    free(s->note);
    free(s->peak);
    free(s->live);
}

/* A copy of text from outside, fit for one line of a terminal; NULL for
 * NULL. */
static char *clean(const char *text)
{
    return text ? utf8_clean_shown(text, strlen(text), TEXT_MAX, UTF8_CONTROLS_NONE) : NULL;
}

/* Sets *field to the cleaned string member `key` of `line` when it has
 * one and *field is not set yet (or, with `replace`, always). */
static void take_text(char **field, const struct json_object *line, const char *key, bool replace)
{
    struct json_object *v = jsonv_member(line, key);
    if (!v || (*field && !replace))
        return;
    char *text = jsonv_text_clean(v, TEXT_MAX, UTF8_CONTROLS_NONE);
    if (!text)
        return;
    free(*field);
    *field = text;
}

static void tell(struct summary *s, const char *name)
{
    for (size_t i = 0; i < s->n_told; i++)
        if (strcmp(s->told[i], name) == 0)
            return;
    s->told = xreallocarray(s->told, s->n_told + 1, sizeof *s->told);
    s->told[s->n_told++] = clean(name);
}

/* Adds one line of the incident's timeline to what `s` says of it. */
static void summary_add(struct summary *s, const struct json_object *line)
{
    long long at = 0, t = 0, v;
    const char *what = json_object_get_string(jsonv_member(line, "what"));
    bool has_event = jsonv_int(jsonv_member(line, "event_time"), &t);
    jsonv_int(jsonv_member(line, "at"), &at);
    what = what ? what : "";
    if (!s->steps || ((!strcmp(what, "opened") || !strcmp(what, "silenced")) && has_event)) {
        if (!s->steps)
            s->opened_at = at;
        s->opened = has_event ? t : at;
    }
    s->steps++;
    take_text(&s->account, line, "account", false);
    take_text(&s->serial, line, "serial", false);
    take_text(&s->device, line, "device", false);
    take_text(&s->kind, line, "kind", false);
    take_text(&s->rule, line, "rule", false);
    take_text(&s->severity, line, "severity", false);
    if (!s->text || !strcmp(what, "opened") || !strcmp(what, "silenced"))
        take_text(&s->text, line, "text", !strcmp(what, "opened") || !strcmp(what, "silenced"));
    if (!s->channel && jsonv_int(jsonv_member(line, "channel"), &v) && v > 0 && v < 100)
        s->channel = (int)v;
    struct json_object *to = jsonv_member(line, "receivers");
    for (size_t i = 0; json_object_is_type(to, json_type_array) && i < json_object_array_length(to);
         i++) {
        struct json_object *r = json_object_array_get_idx(to, i);
        if (json_object_is_type(r, json_type_string))
            tell(s, json_object_get_string(r));
    }
    take_text(&s->peak, line, "peak", true);
    if (!strcmp(what, "acknowledged")) {
        s->acked_at = at;
        take_text(&s->acked_by, line, "by", true);
        take_text(&s->note, line, "note", true);
    }
    if ((!strcmp(what, "resolved") || !strcmp(what, "closed")) && !s->ended) {
        s->resolved = !strcmp(what, "resolved");
        s->closed = !s->resolved;
        s->ended = s->resolved && has_event ? t : at;
        s->duration = jsonv_int(jsonv_member(line, "duration"), &v) ? v : s->ended - s->opened;
    }
}

/* "open", "acknowledged" (open, and someone has it), "resolved", "closed". */
static const char *summary_state(const struct summary *s)
{
    return s->resolved ? "resolved" : s->closed ? "closed" : s->acked_at ? "acknowledged" : "open";
}

/* What the state keeps of `inc`, at `now`. */
static void summary_of_incident(struct summary *s, const struct incident *inc, long long now)
{
    const struct event *ev = &inc->first;
    struct json_object *snap = incident_snapshot(inc, NOTICE_OPENED, now);
    *s = (struct summary){.kept = true, .from_state = true, .steps = inc->seq};
    snprintf(s->id, sizeof s->id, "%lu", inc->id);
    s->opened = ev->unixtime;
    s->opened_at = inc->opened_at;
    s->ended = inc->ended;
    s->resolved = inc->state == INCIDENT_RESOLVED;
    s->closed = inc->state == INCIDENT_CLOSED;
    s->account = clean(ev->account);
    s->serial = clean(ev->serial);
    s->device = ev->name && *ev->name ? clean(ev->name) : NULL;
    s->kind = clean(ev->kind);
    s->text = clean(ev->text);
    s->rule = clean(ev->rule);
    s->severity = clean(ev->severity);
    s->channel = event_channel(ev);
    for (size_t i = 0; i < inc->n_told; i++)
        tell(s, inc->told[i]);
    s->acked_at = inc->acked_at;
    s->acked_by = inc->acked_at ? clean(inc->acked_by ? inc->acked_by : "?") : NULL;
    s->note = clean(inc->ack_note);
    s->peak = clean(json_object_get_string(jsonv_member(snap, "peak")));
    s->live = clean(json_object_get_string(jsonv_member(snap, "live")));
    jsonv_int(jsonv_member(snap, "duration"), &s->duration);
    s->reminders = inc->reminders;
    s->step = inc->step;
    json_object_put(snap);
}

/* "ch1", or the kind for an incident without a channel. */
static const char *what_of(const struct summary *s, char *buf, size_t size)
{
    if (s->channel > 0) {
        snprintf(buf, size, "ch%d", s->channel);
        return buf;
    }
    return s->kind ? s->kind : "?";
}

static void put_text(struct json_object *o, const char *key, const char *text)
{
    jsonv_put(o, key, text ? jsonv_need(json_object_new_string(text)) : NULL);
}

static void put_time(struct json_object *o, const char *key, long long t)
{
    jsonv_put(o, key, t ? jsonv_need(json_object_new_int64((int64_t)t)) : NULL);
}

/* The summary as JSON: what --since lists and what show says first. */
static struct json_object *summary_json(const struct summary *s)
{
    char buf[48], key[160];
    struct json_object *o = jsonv_need(json_object_new_object());
    snprintf(key, sizeof key, "%s/%s", s->serial ? s->serial : "?", what_of(s, buf, sizeof buf));
    put_text(o, "id", s->id);
    put_text(o, "key", key);
    put_text(o, "state", summary_state(s));
    put_time(o, "opened", s->opened);
    put_time(o, "opened_at", s->opened_at);
    put_time(o, "ended", s->ended);
    put_text(o, "account", s->account);
    put_text(o, "serial", s->serial);
    put_text(o, "device", s->device);
    jsonv_put(o, "channel", s->channel ? jsonv_need(json_object_new_int(s->channel)) : NULL);
    put_text(o, "kind", s->kind);
    put_text(o, "text", s->text);
    put_text(o, "rule", s->rule);
    put_text(o, "severity", s->severity);
    struct json_object *told = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < s->n_told; i++)
        jsonv_append(told, jsonv_need(json_object_new_string(s->told[i])));
    jsonv_put(o, "receivers", told);
    put_text(o, "acknowledged_by", s->acked_by);
    put_time(o, "acknowledged_at", s->acked_at);
    put_text(o, "acknowledged_note", s->note);
    put_text(o, "peak", s->peak);
    jsonv_put_int(o, "duration", s->duration);
    jsonv_put_int(o, "steps", (long long)s->steps);
    jsonv_put(o, "kept", jsonv_need(json_object_new_boolean(s->kept)));
    if (s->from_state) {
        jsonv_put_int(o, "reminders", s->reminders);
        jsonv_put_int(o, "step", s->step);
        put_text(o, "live", s->live);
    }
    return o;
}

/* "Freezer A (5214000A) ch1". */
static void device_text(char *out, size_t size, const struct summary *s)
{
    char buf[48];
    const char *serial = s->serial ? s->serial : "?";
    snprintf(out, size, "%s (%s) %s", s->device && *s->device ? s->device : serial, serial,
             what_of(s, buf, sizeof buf));
}

static void print_json(struct json_object *o)
{
    printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Writes the standard output's state: RUN_OK, or RUN_FAILED (said). */
static int flushed(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        say("cannot write the output: %s", strerror(errno));
        return RUN_FAILED;
    }
    return RUN_OK;
}

/* --- --since: the incidents of a span ------------------------------------ */

struct span {
    long long since;
    struct summary *rows; /* in the order their first line came */
    size_t n;
    struct json_object *index; /* id -> its row's index */
};

static bool span_line(const struct json_object *line, void *ctx)
{
    struct span *sp = ctx;
    long long at = 0;
    const char *id = json_object_get_string(jsonv_member(line, "incident"));
    struct json_object *i = NULL;
    size_t k;
    jsonv_int(jsonv_member(line, "at"), &at);
    if (json_object_object_get_ex(sp->index, id, &i)) {
        k = (size_t)json_object_get_int64(i);
    } else {
        k = sp->n++;
        sp->rows = xreallocarray(sp->rows, sp->n, sizeof *sp->rows);
        sp->rows[k] = (struct summary){0};
        snprintf(sp->rows[k].id, sizeof sp->rows[k].id, "%.20s", id);
        jsonv_put_int(sp->index, id, (long long)k);
    }
    summary_add(&sp->rows[k], line);
    if (at >= sp->since)
        sp->rows[k].in_span = true;
    return true;
}

/* The incidents with a line at or after now - o->since, each as its whole
 * timeline up to now tells it (its opening may be older than the span). */
static int list_span(const struct config *c, const struct list_options *o)
{
    struct state *st = NULL;
    struct span sp = {.since = o->now - o->since};
    struct err e;
    int rc = RUN_FAILED;
    size_t shown = 0;
    sp.index = jsonv_need(json_object_new_object());
    if (state_peek(&st, c->state_file, &e) < 0)
        log_warn("%s (the incident log alone is read)", e.msg);
    /* from the start of the log: an incident of the span may have opened
     * before it */
    if (walk_log(c->state_file, st, 0, o->now, span_line, &sp, &e) < 0) {
        log_error("%s", e.msg);
        goto out;
    }
    struct json_object *arr = o->json ? jsonv_need(json_object_new_array()) : NULL;
    for (size_t i = 0; i < sp.n; i++) {
        struct summary *s = &sp.rows[i];
        char opened[48], dur[INCIDENT_DURATION_MAX], device[400];
        if (!s->in_span)
            continue;
        if (!s->ended)
            s->duration = o->now - s->opened;
        struct incident inc;
        unsigned long id = strtoul(s->id, NULL, 10);
        s->kept = st && id && state_incident_get(st, id, &inc);
        if (s->kept)
            incident_clear(&inc);
        shown++;
        if (arr) {
            jsonv_append(arr, summary_json(s));
            continue;
        }
        if (shown == 1)
            printf("%-6s %-12s %-16s %-10s %s\n", "ID", "STATE", "OPENED", "DURATION",
                   "DEVICE AND WHAT");
        local_text(opened, sizeof opened, s->opened, false);
        incident_duration_text(dur, sizeof dur, s->duration);
        device_text(device, sizeof device, s);
        printf("%-6s %-12s %-16s %-10s %s", s->id, summary_state(s), opened, dur, device);
        if (s->text)
            printf(": %s", s->text);
        if (s->acked_by)
            printf(", acknowledged by %s", s->acked_by);
        else if (!s->ended)
            printf(", not acknowledged");
        putchar('\n');
    }
    if (arr) {
        print_json(arr);
        json_object_put(arr);
    } else if (!shown) {
        char span[24];
        duration_format(span, sizeof span, o->since);
        printf("no incident in the last %s\n", span);
    }
    rc = flushed();
out:
    for (size_t i = 0; i < sp.n; i++)
        summary_clear(&sp.rows[i]);
    free(sp.rows);
    json_object_put(sp.index);
    state_close(st);
    return rc;
}

/* --- --csv: the log's lines of a span ------------------------------------ */

static bool csv_line(const struct json_object *line, void *ctx)
{
    (void)ctx;
    incidentlog_csv_line(stdout, line);
    return !ferror(stdout);
}

static int export_csv(const struct config *c, const struct list_options *o)
{
    struct state *st = NULL;
    struct err e;
    int rc = RUN_FAILED;
    if (state_peek(&st, c->state_file, &e) < 0)
        log_warn("%s (the incident log alone is read)", e.msg);
    incidentlog_csv_header(stdout);
    if (walk_log(c->state_file, st, o->now - o->since, o->now, csv_line, NULL, &e) < 0) {
        log_error("%s", e.msg);
        goto out;
    }
    rc = flushed();
out:
    state_close(st);
    return rc;
}

/* --- show ID: one incident and its timeline ------------------------------ */

struct timeline {
    const char *id;
    struct json_object *lines; /* an array, oldest first */
};

static bool timeline_line(const struct json_object *line, void *ctx)
{
    struct timeline *tl = ctx;
    const char *id = json_object_get_string(jsonv_member(line, "incident"));
    if (id && strcmp(id, tl->id) == 0)
        jsonv_append(tl->lines, json_object_get((struct json_object *)line));
    return true;
}

/* One step in words: "2026-11-18 03:00:30  opened        to oncall, mail;
 * value -65.0°C". */
static void print_step(const struct json_object *line)
{
    char when[48], *what = NULL, *text = NULL;
    long long at = 0, v;
    const char *sep = "";
    jsonv_int(jsonv_member(line, "at"), &at);
    local_text(when, sizeof when, at, true);
    take_text(&what, line, "what", true);
    printf("  %s  %-12s  ", when, what ? what : "?");
    struct json_object *to = jsonv_member(line, "receivers");
    if (json_object_is_type(to, json_type_array) && json_object_array_length(to)) {
        printf("to ");
        for (size_t i = 0; i < json_object_array_length(to); i++) {
            char *name =
                jsonv_text_clean(json_object_array_get_idx(to, i), TEXT_MAX, UTF8_CONTROLS_NONE);
            printf("%s%s", i ? ", " : "", name ? name : "?");
            free(name);
        }
        sep = "; ";
    }
    static const char *const parts[][2] = {
        {"by", "by "}, {"note", "note: "}, {"value", "value "}, {"peak", "peak "}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        take_text(&text, line, parts[i][0], true);
        if (text) {
            printf("%s%s%s", sep, parts[i][1], text);
            sep = "; ";
        }
        free(text);
        text = NULL;
    }
    if (jsonv_int(jsonv_member(line, "duration"), &v)) {
        char dur[INCIDENT_DURATION_MAX];
        incident_duration_text(dur, sizeof dur, v);
        printf("%sduration %s", sep, dur);
    }
    putchar('\n');
    free(what);
}

/* The incident in words, then its timeline. */
static void print_show(const struct summary *s, const struct json_object *lines)
{
    char device[400], when[48], dur[INCIDENT_DURATION_MAX];
    device_text(device, sizeof device, s);
    printf("incident %s: %s, %s\n", s->id, device, summary_state(s));
    local_text(when, sizeof when, s->opened, false);
    printf("  alarm:         %s%s%s%s\n", s->text ? s->text : "", s->text ? " (" : "", when,
           s->text ? ")" : "");
    local_text(when, sizeof when, s->opened_at, false);
    printf("  opened:        %s", when);
    if (s->rule)
        printf(", rule %s%s%s%s", s->rule, s->severity ? " (" : "", s->severity ? s->severity : "",
               s->severity ? ")" : "");
    putchar('\n');
    printf("  told:          ");
    for (size_t i = 0; i < s->n_told; i++)
        printf("%s%s", i ? ", " : "", s->told[i]);
    printf("%s\n", s->n_told ? "" : "nobody");
    if (s->acked_at) {
        local_text(when, sizeof when, s->acked_at, false);
        printf("  acknowledged:  by %s at %s%s%s\n", s->acked_by ? s->acked_by : "?", when,
               s->note ? ": " : "", s->note ? s->note : "");
    } else if (!s->ended) {
        printf("  acknowledged:  not yet");
        if (s->from_state)
            printf(" (%d reminder%s, escalation step %d)", s->reminders,
                   s->reminders == 1 ? "" : "s", s->step);
        putchar('\n');
    }
    if (s->peak)
        printf("  peak:          %s\n", s->peak);
    if (s->live && !s->ended)
        printf("  now:           %s\n", s->live);
    incident_duration_text(dur, sizeof dur, s->duration);
    if (s->ended) {
        local_text(when, sizeof when, s->ended, false);
        printf("  %-14s %s at %s, after %s\n", s->resolved ? "resolved:" : "closed:",
               s->resolved ? "recovered" : "open too long, closed", when, dur);
    } else {
        printf("  open for:      %s\n", dur);
    }
    if (!s->kept)
        printf("  (from the incident log: the state no longer keeps it)\n");
    printf("\ntimeline (local time):\n");
    for (size_t i = 0; i < json_object_array_length(lines); i++)
        print_step(json_object_array_get_idx(lines, i));
    if (!json_object_array_length(lines))
        printf("  nothing in the incident log yet\n");
}

/* An incident id: digits, not 0. */
static bool parse_id(unsigned long *out, const char *text)
{
    char *end = NULL;
    if (!text || *text < '0' || *text > '9')
        return false;
    errno = 0;
    *out = strtoul(text, &end, 10);
    return !errno && *end == '\0' && *out > 0;
}

static int show(const struct config *c, unsigned long id, const struct list_options *o)
{
    struct state *st = NULL;
    struct err e;
    struct incident inc = {0};
    struct summary s = {0};
    char text[24];
    int rc = RUN_FAILED;
    snprintf(text, sizeof text, "%lu", id);
    struct timeline tl = {.id = text, .lines = jsonv_need(json_object_new_array())};
    if (state_peek(&st, c->state_file, &e) < 0)
        log_warn("%s (the incident log alone is read)", e.msg);
    if (walk_log(c->state_file, st, 0, o->now, timeline_line, &tl, &e) < 0) {
        log_error("%s", e.msg);
        goto out;
    }
    if (st && state_incident_get(st, id, &inc)) {
        summary_of_incident(&s, &inc, o->now);
    } else if (json_object_array_length(tl.lines)) {
        snprintf(s.id, sizeof s.id, "%s", text);
        for (size_t i = 0; i < json_object_array_length(tl.lines); i++)
            summary_add(&s, json_object_array_get_idx(tl.lines, i));
        if (!s.ended)
            s.duration = o->now - s.opened;
    } else {
        say("no incident %lu: neither the state nor the incident log knows it "
            "(wsrelay incidents --since lists those of a span)",
            id);
        goto out;
    }
    if (o->json) {
        struct json_object *top = jsonv_need(json_object_new_object());
        jsonv_put(top, "incident", summary_json(&s));
        jsonv_put(top, "timeline", json_object_get(tl.lines));
        print_json(top);
        json_object_put(top);
    } else {
        print_show(&s, tl.lines);
    }
    rc = flushed();
out:
    summary_clear(&s);
    incident_clear(&inc);
    json_object_put(tl.lines);
    state_close(st);
    return rc;
}

/* --- the command ---------------------------------------------------------- */

/* Reads the options into *o; RUN_OK, or RUN_USAGE (said) for a value or a
 * combination that is wrong. */
static int read_options(struct list_options *o, const struct opt_args *a, bool showing)
{
    bool since = false;
    for (size_t i = 0; i < a->n_found; i++) {
        const char *v = a->found[i].value;
        switch (a->found[i].spec->id) {
        case OPT_ALL:
            o->all = true;
            break;
        case OPT_SINCE:
            if (duration_parse(&o->since, v) < 0 || o->since < 1) {
                say("--since: '%s' is not a duration (such as 7d or 30d)", v);
                return RUN_USAGE;
            }
            since = true;
            break;
        case OPT_CSV:
            o->csv = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_NOW:
            if (cmd_parse_time(&o->now, v) < 0) {
                say("--now: '%s' is not a Unix time", v);
                return RUN_USAGE;
            }
            break;
        }
    }
    const char *wrong = NULL;
    if (showing && (o->all || since || o->csv))
        wrong = "show takes --json and --now only";
    else if (o->all && since)
        wrong = "--all lists what the state keeps, --since what the incident log holds: one or "
                "the other";
    else if (o->all && o->csv)
        wrong = "--csv exports the incident log: use --since, not --all";
    else if (o->csv && o->json)
        wrong = "--csv or --json, not both";
    if (wrong) {
        say("%s", wrong);
        return RUN_USAGE;
    }
    if (o->csv && !since)
        o->since = CSV_SPAN_DEFAULT;
    return RUN_OK;
}

static int cmd_incidents(const struct cmd_globals *g, const struct opt_args *a)
{
    struct config *c = NULL;
    struct list_options o = {.now = (long long)time(NULL)};
    unsigned long id = 0;
    bool showing = a->n_operands > 0 && strcmp(a->operands[0], "show") == 0;
    int rc = RUN_USAGE;
    if (a->n_operands > 0 && (!showing || a->n_operands != 2)) {
        if (!showing)
            say("unknown operand '%s' (show ID shows one incident)", a->operands[0]);
        cmd_usage(stderr, &cmd_incidents_entry);
        goto out;
    }
    if (showing && !parse_id(&id, a->operands[1])) {
        say("'%s' is not an incident id (a number that wsrelay incidents shows)", a->operands[1]);
        goto out;
    }
    if ((rc = read_options(&o, a, showing)) != RUN_OK)
        goto out;
    rc = RUN_USAGE;
    if (cmd_load_config(&c, g) < 0)
        goto out;
    rc = showing   ? show(c, id, &o)
         : o.csv   ? export_csv(c, &o)
         : o.since ? list_span(c, &o)
                   : list(c, &o);
out:
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_incidents_entry = {
    "incidents",
    "[show ID]",
    "list the open incidents, those of a span (--since) or its steps as CSV, or show one and its "
    "timeline",
    opts,
    cmd_incidents,
};
