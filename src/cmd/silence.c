/* `wsrelay silence add|list|expire`: silences for planned work (state.h),
 * kept in the state file, which each subcommand opens with its lock as the
 * look-ups do (waiting for a run to finish with it). An alarm a silence
 * covers opens its incident, which pages nobody while the silence lasts. */
#include "cmd/cmd.h"
#include "glob.h"
#include "run/run.h"
#include "state.h"
#include "util/duration.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SILENCE_REASON_MAX 300 /* bytes; the state keeps no more (state.h) */

enum { OPT_CHANNEL = 1, OPT_FOR, OPT_REASON, OPT_BY, OPT_ALL, OPT_JSON, OPT_NOW };

static const struct opt_spec add_opts[] = {
    {OPT_CHANNEL, "channel", 0, "N", 0, "only channel N (1 to 6); default every channel and kind"},
    {OPT_FOR, "for", 0, "DURATION", OPT_MUST, "how long, from now (2h, 90m, 1h30m)"},
    {OPT_REASON, "reason", 0, "TEXT", OPT_MUST, "why (defrost, cleaning, calibration)"},
    {OPT_BY, "by", 0, "NAME", 0, "on whose word; default $SUDO_USER, else the user running it"},
    {OPT_JSON, "json", 0, NULL, 0, "the new silence as one JSON object"},
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "act as if the clock said so"},
    {0},
};

static const struct opt_spec list_opts[] = {
    {OPT_ALL, "all", 0, NULL, 0, "also those to come and those ended in the last 7 days"},
    {OPT_JSON, "json", 0, NULL, 0, "the same list as one JSON object"},
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "list as if the clock said so"},
    {0},
};

static const struct opt_spec expire_opts[] = {
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "end it as if the clock said so"},
    {0},
};

/* The subcommands' rows, defined at the end. */
static const struct cmd_entry cmd_silence_add_entry;
static const struct cmd_entry cmd_silence_list_entry;
static const struct cmd_entry cmd_silence_expire_entry;

/* What the options of a subcommand said. */
struct silence_args {
    long long now;
    int channel;
    long seconds; /* --for */
    const char *reason, *by;
    bool all, json;
};

/* Says "wsrelay: silence add: ..." on stderr. */
static void say(const struct cmd_entry *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void say(const struct cmd_entry *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wsrelay: %s: ", c->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Reads the options found into *o; -1 (said) for a value that is wrong. */
static int read_args(struct silence_args *o, const struct cmd_entry *c, const struct opt_args *a)
{
    *o = (struct silence_args){.now = (long long)time(NULL)};
    for (size_t i = 0; i < a->n_found; i++) {
        const char *arg = a->found[i].value;
        char *end = NULL;
        switch (a->found[i].spec->id) {
        case OPT_CHANNEL: {
            errno = 0;
            long ch = strtol(arg, &end, 10);
            if (errno || end == arg || *end || ch < 1 || ch > 6) {
                say(c, "--channel: '%s' is not a channel (1 to 6)", arg);
                return -1;
            }
            o->channel = (int)ch;
            break;
        }
        case OPT_FOR:
            if (duration_parse(&o->seconds, arg) < 0 || o->seconds < 1) {
                say(c, "--for: '%s' is not a duration (such as 2h, 90m or 1h30m)", arg);
                return -1;
            }
            break;
        case OPT_REASON:
            o->reason = arg;
            break;
        case OPT_BY:
            o->by = arg;
            break;
        case OPT_ALL:
            o->all = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_NOW:
            if (cmd_parse_time(&o->now, arg) < 0) {
                say(c, "--now: '%s' is not a Unix time", arg);
                return -1;
            }
            break;
        }
    }
    return 0;
}

/* Whether `text` holds something besides blanks. */
static bool has_text(const char *text)
{
    for (; text && *text; text++)
        if (*text != ' ' && *text != '\t' && *text != '\n' && *text != '\r')
            return true;
    return false;
}

/* Loads the configuration and opens its state with the lock. A state that
 * cannot be read as it is (a corrupt one included) fails without being
 * touched: setting it aside and reporting it is a run's job. RUN_OK, or
 * the exit status after saying why; *c and *s are the caller's to free
 * either way. */
static int open_state(struct config **c, struct state **s, const struct cmd_entry *cmd,
                      const struct cmd_globals *g)
{
    struct err e;
    int rc = RUN_USAGE;
    if (cmd_load_config(c, g) < 0)
        goto out;
    rc = RUN_FAILED;
    if (cmd_open_state(s, *c, &e) < 0) {
        say(cmd, "%s", e.msg);
        goto out;
    }
    rc = RUN_OK;
out:
    return rc;
}

/* Forgets what ended over a week ago and saves. RUN_OK or RUN_FAILED
 * (said). */
static int save(struct state *s, const struct cmd_entry *cmd, long long now)
{
    struct err e;
    state_prune_silences(s, now - STATE_SILENCE_KEEP);
    if (state_save(s, &e) < 0) {
        say(cmd, "%s (nothing was changed)", e.msg);
        return RUN_FAILED;
    }
    return RUN_OK;
}

/* The local time of `t`: "HH:MM" on the day of `now`, else "YYYY-MM-DD
 * HH:MM". */
static void clock_text(char *out, size_t size, long long t, long long now)
{
    time_t tt = (time_t)t, tn = (time_t)now;
    struct tm at, today;
    if (!localtime_r(&tt, &at) || !localtime_r(&tn, &today) ||
        !strftime(out, size,
                  at.tm_year == today.tm_year && at.tm_yday == today.tm_yday ? "%H:%M"
                                                                             : "%Y-%m-%d %H:%M",
                  &at))
        snprintf(out, size, "@%lld", t);
}

/* One silence in words: "3 Freezer* ch1 until 14:30 (defrost, by alice)",
 * "ended" for one that has, "from ... until" for one to come. */
static void put_words(struct buf *b, const struct state_silence *v, long long now)
{
    char from[48], until[48], ch[16] = "";
    clock_text(from, sizeof from, v->from, now);
    clock_text(until, sizeof until, v->until, now);
    if (v->channel)
        snprintf(ch, sizeof ch, " ch%d", v->channel);
    buf_printf(b, "%lu %s%s ", v->id, v->glob, ch);
    if (v->until <= now)
        buf_printf(b, "ended %s", until);
    else if (v->from > now)
        buf_printf(b, "from %s until %s", from, until);
    else
        buf_printf(b, "until %s", until);
    buf_printf(b, " (%s, by %s)\n", v->reason, v->by);
}

static struct json_object *silence_json(const struct state_silence *v, long long now)
{
    struct json_object *o = jsonv_need(json_object_new_object());
    jsonv_put_int(o, "id", (long long)v->id);
    jsonv_put(o, "glob", jsonv_need(json_object_new_string(v->glob)));
    jsonv_put_int(o, "channel", v->channel);
    jsonv_put_int(o, "from", v->from);
    jsonv_put_int(o, "until", v->until);
    jsonv_put(o, "reason", jsonv_need(json_object_new_string(v->reason)));
    jsonv_put(o, "by", jsonv_need(json_object_new_string(v->by)));
    jsonv_put(o, "active", jsonv_need(json_object_new_boolean(v->from <= now && now < v->until)));
    return o;
}

static void put_json(struct buf *b, struct json_object *o)
{
    const char *text = json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!text)
        xalloc_die();
    buf_puts(b, text);
    buf_puts(b, "\n");
    json_object_put(o);
}

/* Writes `b` to stdout: RUN_OK, or RUN_FAILED (said). */
static int emit(const struct cmd_entry *cmd, const struct buf *b)
{
    if (fputs(buf_str(b), stdout) == EOF || fflush(stdout) != 0) {
        say(cmd, "cannot write the output: %s", strerror(errno));
        return RUN_FAILED;
    }
    return RUN_OK;
}

/* Whether a device the state lists (in an account of `c`) has a serial or
 * name that `glob` matches. */
static bool matches_a_device(const struct config *c, const struct state *s, const char *glob)
{
    bool found = false;
    for (size_t i = 0; i < c->n_accounts && !found; i++) {
        size_t n = 0;
        struct state_device *d = state_devices(s, c->accounts[i].name, &n);
        for (size_t k = 0; k < n && !found; k++)
            found = glob_match(glob, d[k].serial) || (*d[k].name && glob_match(glob, d[k].name));
        state_devices_free(d, n);
    }
    for (size_t i = 0; i < c->n_accounts && !found; i++)
        for (size_t k = 0; k < c->accounts[i].n_devices && !found; k++)
            found = glob_match(glob, c->accounts[i].devices[k].serial);
    return found;
}

/* --- silence add -------------------------------------------------------- */

static int cmd_silence_add(const struct cmd_globals *g, const struct opt_args *a)
{
    const struct cmd_entry *cmd = &cmd_silence_add_entry;
    struct silence_args o;
    struct config *c = NULL;
    struct state *s = NULL;
    struct state_silence *list = NULL;
    size_t n = 0;
    struct err e;
    struct buf b;
    char *by = NULL;
    int rc = RUN_USAGE;
    buf_init(&b, 0);
    if (read_args(&o, cmd, a) < 0)
        goto out;
    if (a->n_operands != 1 || !o.seconds || !o.reason) {
        if (a->n_operands == 1)
            say(cmd, "%s", !o.seconds ? "--for DURATION is required" : "--reason TEXT is required");
        cmd_usage(stderr, cmd);
        goto out;
    }
    const char *glob = a->operands[0];
    if (glob_check(glob, &e) < 0 || strlen(glob) > 200) {
        say(cmd, "'%s' is not a glob: %s", glob,
            strlen(glob) > 200 ? "longer than 200 bytes" : e.msg);
        goto out;
    }
    if (!has_text(o.reason) || strlen(o.reason) > SILENCE_REASON_MAX) {
        say(cmd, "--reason: %s", has_text(o.reason) ? "longer than 300 bytes" : "empty");
        goto out;
    }
    if (o.by && !has_text(o.by)) {
        say(cmd, "--by: empty");
        goto out;
    }
    by = o.by ? xstrdup(o.by) : cmd_user_name();
    if ((rc = open_state(&c, &s, cmd, g)) != RUN_OK)
        goto out;
    unsigned long id =
        state_silence_add(s, glob, o.channel, o.now, o.now + o.seconds, o.reason, by);
    if ((rc = save(s, cmd, o.now)) != RUN_OK)
        goto out;
    if (!matches_a_device(c, s, glob))
        say(cmd, "warning: no device known yet has a serial or name that '%s' matches", glob);
    list = state_silences(s, &n);
    for (size_t i = 0; i < n; i++) {
        if (list[i].id != id)
            continue;
        if (o.json)
            put_json(&b, silence_json(&list[i], o.now));
        else
            put_words(&b, &list[i], o.now);
    }
    rc = emit(cmd, &b);
out:
    state_silences_free(list, n);
    state_close(s);
    config_free(c);
    free(by);
    buf_free(&b);
    return rc;
}

/* --- silence list ------------------------------------------------------- */

static int cmd_silence_list(const struct cmd_globals *g, const struct opt_args *a)
{
    const struct cmd_entry *cmd = &cmd_silence_list_entry;
    struct silence_args o;
    struct config *c = NULL;
    struct state *s = NULL;
    struct state_silence *list = NULL;
    size_t n = 0, shown = 0;
    struct buf b;
    int rc = RUN_USAGE;
    buf_init(&b, 0);
    if (read_args(&o, cmd, a) < 0)
        goto out;
    if (a->n_operands) {
        cmd_usage(stderr, cmd);
        goto out;
    }
    if ((rc = open_state(&c, &s, cmd, g)) != RUN_OK)
        goto out;
    list = state_silences(s, &n);
    struct json_object *arr = o.json ? jsonv_need(json_object_new_array()) : NULL;
    for (size_t i = 0; i < n; i++) {
        const struct state_silence *v = &list[i];
        bool active = v->from <= o.now && o.now < v->until;
        if (!active && !(o.all && v->until > o.now - STATE_SILENCE_KEEP))
            continue;
        shown++;
        if (arr)
            jsonv_append(arr, silence_json(v, o.now));
        else
            put_words(&b, v, o.now);
    }
    if (arr) {
        struct json_object *top = jsonv_need(json_object_new_object());
        jsonv_put_int(top, "now", o.now);
        jsonv_put(top, "silences", arr);
        put_json(&b, top);
    } else if (!shown) {
        buf_puts(&b, o.all ? "no silence in the last 7 days\n" : "no active silence\n");
    }
    rc = emit(cmd, &b);
out:
    state_silences_free(list, n);
    state_close(s);
    config_free(c);
    buf_free(&b);
    return rc;
}

/* --- silence expire ----------------------------------------------------- */

static int cmd_silence_expire(const struct cmd_globals *g, const struct opt_args *a)
{
    const struct cmd_entry *cmd = &cmd_silence_expire_entry;
    struct silence_args o;
    struct config *c = NULL;
    struct state *s = NULL;
    char *end = NULL;
    int rc = RUN_USAGE;
    if (read_args(&o, cmd, a) < 0)
        goto out;
    if (a->n_operands != 1) {
        cmd_usage(stderr, cmd);
        goto out;
    }
    const char *text = a->operands[0];
    errno = 0;
    unsigned long id = strtoul(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || text[0] == '+' || id == 0) {
        say(cmd, "'%s' is not a silence id (a number that `wsrelay silence list` shows)", text);
        goto out;
    }
    if ((rc = open_state(&c, &s, cmd, g)) != RUN_OK)
        goto out;
    if (!state_silence_expire(s, id, o.now)) {
        bool known = false;
        size_t n = 0;
        struct state_silence *list = state_silences(s, &n);
        for (size_t i = 0; i < n; i++)
            known = known || list[i].id == id;
        state_silences_free(list, n);
        say(cmd, known ? "silence %lu has already ended" : "no silence %lu", id);
        rc = RUN_USAGE;
        goto out;
    }
    if ((rc = save(s, cmd, o.now)) != RUN_OK)
        goto out;
    printf("silence %lu ended\n", id);
    if (fflush(stdout) != 0) {
        say(cmd, "cannot write the output: %s", strerror(errno));
        rc = RUN_FAILED;
    }
out:
    state_close(s);
    config_free(c);
    return rc;
}

static const struct cmd_entry cmd_silence_add_entry = {
    "silence add",
    "GLOB",
    "silence the devices GLOB matches (serial or name) for planned work: their alarms page nobody",
    add_opts,
    cmd_silence_add,
};

static const struct cmd_entry cmd_silence_list_entry = {
    "silence list", "", "list the active silences", list_opts, cmd_silence_list,
};

static const struct cmd_entry cmd_silence_expire_entry = {
    "silence expire", "ID", "end silence ID now", expire_opts, cmd_silence_expire,
};

static const struct cmd_entry *const subs[] = {
    &cmd_silence_add_entry,
    &cmd_silence_list_entry,
    &cmd_silence_expire_entry,
    NULL,
};

const struct cmd_group cmd_silence_group = {
    "silence",
    "silences for planned work: the alarms of the devices they cover page nobody",
    subs,
};
