/* The session of a look-up command (lookup/session.h): the locked state,
 * the ledger's say on each call, the device a serial names, and the bits
 * of output the commands share. */
#include "lookup/session.h"
#include "budget.h"
#include "devicelist.h"
#include "metrics.h"
#include "run/run.h"
#include "run/tick.h"
#include "scheduler.h"
#include "serial.h"
#include "util/duration.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LOOKUP_CONNECT_TIMEOUT 5 /* seconds; the state stays locked during a call */
#define LOOKUP_TOTAL_TIMEOUT 20

void session_say(const struct session *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wsrelay: %s: ", s->cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- times ---- */

int lookup_parse_time(struct lookup_time *out, const char *text)
{
    int y, mo, d, h, mi, end = -1, rc = -1;
    struct tm tm = {0}, back;
    size_t len = strlen(text);
    if (len > 0 && len <= 12 && strspn(text, "0123456789") == len) {
        *out = (struct lookup_time){.given = true, .t = strtoll(text, NULL, 10)};
        rc = 0;
        goto out;
    }
    if (sscanf(text, "%4d-%2d-%2d %2d:%2d%n", &y, &mo, &d, &h, &mi, &end) != 5 || end != (int)len ||
        y < 1970 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59)
        goto out;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    time_t t = timegm(&tm);
    /* timegm moves a day that does not exist (02-30) to one that does. */
    if (t == (time_t)-1 || !gmtime_r(&t, &back) || back.tm_mon != mo - 1 || back.tm_mday != d)
        goto out;
    *out = (struct lookup_time){.given = true, .local = true, .t = (long long)t};
    rc = 0;
out:
    return rc;
}

/* "YYYY-MM-DD HH:MM:SS" of `t` on a clock `offset` minutes east of UTC. */
void lookup_local_time(char *out, size_t size, long long t, int offset)
{
    time_t at = (time_t)(t + (long long)offset * 60);
    struct tm tm;
    if (!gmtime_r(&at, &tm) || !strftime(out, size, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, size, "@%lld", t);
}

/* "UTC+09:00" */
void lookup_offset_name(char *out, size_t size, int offset)
{
    int m = offset < 0 ? -offset : offset;
    snprintf(out, size, "UTC%c%02d:%02d", offset < 0 ? '-' : '+', m / 60, m % 60);
}

/* ---- the state and the ledger ---- */

/* Reads and locks the state. On failure (said) *s can still be closed. */
int session_open(struct session *s, const struct config *c, const struct lookup_options *o,
                 const char *cmd)
{
    struct state *peek = NULL;
    struct err e;
    int rc = -1;
    *s = (struct session){.c = c, .o = o, .cmd = cmd};
    /* state_open would set a corrupt state aside, and the run that
     * reports that (selfcheck.h) would never know: leave it to the run. */
    if (state_peek(&peek, c->state_file, &e) < 0 ||
        state_open(&s->st, c->state_file, o->lock_wait, &e) < 0) {
        session_say(s, "%s", e.msg);
        goto out;
    }
    s->clients = xcalloc(c->n_accounts ? c->n_accounts : 1, sizeof *s->clients);
    rc = 0;
out:
    state_close(peek);
    return rc;
}

void session_close(struct session *s)
{
    for (size_t i = 0; s->clients && i < s->c->n_accounts; i++)
        platform_free(s->clients[i]);
    free(s->clients);
    platform_multi_free(s->multi);
    state_close(s->st);
}

/* Whether the login of `a` may call `op` now, by the ledger; says why
 * not. `force` passes a full window, never a block. */
bool session_may_call(const struct session *s, const struct account_conf *a, enum platform_op op,
                      bool force)
{
    long long now = s->o->now;
    struct sched_budget b = budget_read(s->st, a->login_id, op, now);
    char span[24];
    bool ok = false;
    if (b.blocked_until > now) {
        session_say(s,
                    "login %s: the platform refused further %s calls (429 or no call left); the "
                    "ledger blocks them for %lld s more",
                    a->login_id, platform_op_name(op), b.blocked_until - now);
        goto out;
    }
    ok = force || (op == PLATFORM_ALERT ? scheduler_urgent(&b, now) : b.used < (size_t)b.limit);
    if (ok)
        goto out;
    duration_format(span, sizeof span, b.span);
    long long wait = b.oldest ? b.oldest + b.span - now : b.span;
    session_say(s,
                "login %s has made %zu of the %d %s calls allowed per %s (the state's ledger); the "
                "next is allowed in %lld s%s",
                a->login_id, b.used, b.limit, platform_op_name(op), span, wait < 1 ? 1 : wait,
                op == PLATFORM_ALERT ? "; --force calls anyway" : "");
out:
    return ok;
}

/* What a reply tells of the budget, as a run notes it. */
static void note_reply(struct session *s, const char *login, enum platform_op op,
                       const struct platform_reply *r)
{
    metrics_count_call(s->st, login, op, r->http_status == 200, r->http_status);
    budget_note_reply(s->st, login, op, r, s->o->now);
}

/* Saves the state before a call (a struct tick_saver's save): 0, or -1
 * after saying that it failed and `why`. */
static int session_save(void *ctx, const char *why)
{
    struct session *s = ctx;
    struct err e;
    int rc = state_save(s->st, &e) < 0 ? -1 : 0;
    if (rc < 0)
        session_say(s, "%s (%s)", e.msg, why);
    return rc;
}

/* One call of `op` for account `a` (q: what it asks; for the current
 * readings q->serial alone or nothing, for the alert log serial and
 * base). The call is recorded in the ledger and saved before it is sent;
 * nothing is sent when that save fails. 0 on success; -1 after saying
 * what failed, `r` holding the reply (zeroed by the caller). */
int session_call(struct session *s, const struct account_conf *a, enum platform_op op,
                 const struct platform_query *q, struct platform_reply *r)
{
    struct platform **p = &s->clients[a - s->c->accounts];
    struct platform_request rq = {.op = op, .query = *q};
    struct tick_saver saver = {.save = session_save, .ctx = s};
    const char *login = a->login_id;
    struct err e;
    int rc = -1;
    if (!*p) {
        struct platform_login as = {.name = a->name,
                                    .base_url = a->base_url,
                                    .api_key = a->api_key,
                                    .login_id = a->login_id,
                                    .login_pass = a->login_pass};
        if (platform_new(p, &as, &e) < 0) {
            session_say(s, "account %s: %s", a->name, e.msg);
            goto out;
        }
        platform_set_timeouts(*p, LOOKUP_CONNECT_TIMEOUT, LOOKUP_TOTAL_TIMEOUT);
    }
    if (!s->multi && platform_multi_new(&s->multi, &e) < 0) {
        session_say(s, "%s", e.msg);
        goto out;
    }
    rq.p = *p;
    if (tick_call(s->st, s->o->now, &login, &rq, 1, s->multi, &saver, "no call was made") < 0)
        goto out;
    *r = rq.reply; /* the caller's to release */
    note_reply(s, a->login_id, op, r);
    if (state_save(s->st, &e) < 0)
        session_say(s, "warning: %s (the call itself was recorded)", e.msg);
    if (rq.rc < 0) {
        session_say(s, "account %s: %s call%s%s failed: %s", a->name, platform_op_name(op),
                    q->serial ? " for " : "", q->serial ? q->serial : "", r->message);
        goto out;
    }
    rc = 0;
out:
    return rc;
}

/* ---- finding a device ---- */

/* The accounts to look in: --account's, or all. NULL (said why) for an
 * unknown name. */
const struct account_conf *session_accounts(const struct session *s, size_t *n)
{
    const struct account_conf *a = s->c->accounts;
    *n = s->c->n_accounts;
    if (s->o->account) {
        a = config_account(s->c, s->o->account);
        *n = 1;
        if (!a)
            session_say(s, "no account named '%s' in %s", s->o->account, s->c->path);
    }
    return a;
}

/* The device's base unit as the configuration or the state's device list
 * of `a` gives it (the serial as they spell it in *serial); NULL when
 * neither lists it. */
static char *known_base(const struct session *s, const struct account_conf *a, const char *serial,
                        char **spelt)
{
    char *base = NULL;
    size_t n = 0;
    for (size_t i = 0; i < a->n_devices && !base; i++)
        if (!strcasecmp(a->devices[i].serial, serial)) {
            base = xstrdup(a->devices[i].base);
            *spelt = xstrdup(a->devices[i].serial);
        }
    struct state_device *devs = base ? NULL : state_devices(s->st, a->name, &n);
    for (size_t i = 0; i < n && !base; i++)
        if (!strcasecmp(devs[i].serial, serial) && *devs[i].base) {
            base = xstrdup(devs[i].base);
            *spelt = xstrdup(devs[i].serial);
        }
    state_devices_free(devs, n);
    return base;
}

/* Asks Get Current Readings of `a` about `serial`: 1 when it lists the
 * device (t filled), 0 when not, -1 when the call was refused or failed
 * (said). A 400 is the platform not knowing the serial. */
static int ask_current(struct session *s, const struct account_conf *a, const char *serial,
                       struct target *t)
{
    struct platform_reply r = {0};
    struct platform_query q = {.serial = serial};
    struct device_info *devs = NULL;
    size_t n = 0;
    struct err e;
    int rc = -1;
    if (!session_may_call(s, a, PLATFORM_CURRENT, false))
        goto out;
    if (session_call(s, a, PLATFORM_CURRENT, &q, &r) < 0) {
        rc = r.http_status == 400 ? 0 : -1;
        goto out;
    }
    if (devicelist_parse(&devs, &n, r.text, r.text_len, a->name, &e) < 0) {
        session_say(s, "account %s: %s", a->name, e.msg);
        goto out;
    }
    rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        if (!strcasecmp(devs[i].serial, serial)) {
            free(t->serial);
            free(t->base);
            *t = (struct target){.a = a,
                                 .serial = xstrdup(devs[i].serial),
                                 .base = xstrdup(devs[i].base_serial),
                                 .utc_offset = devs[i].utc_offset};
            rc = 1;
        }
out:
    device_info_free(devs, n);
    platform_reply_free(&r);
    return rc;
}

/* Finds `serial` in the accounts to look in: the configuration and the
 * state first, then Get Current Readings (also when the device's clock is
 * needed). RUN_OK with *t filled (free with target_clear), RUN_USAGE for
 * an unknown serial, RUN_FAILED when a call failed. */
int session_find(struct session *s, const char *serial, bool need_clock, struct target *t)
{
    struct err e;
    size_t n = 0;
    int rc = RUN_USAGE;
    memset(t, 0, sizeof *t);
    const struct account_conf *list = session_accounts(s, &n);
    if (!list)
        goto out;
    if (serial_check(serial, strlen(serial), &e) < 0) {
        session_say(s, "%s", e.msg);
        goto out;
    }
    for (size_t i = 0; i < n && !t->a; i++)
        if ((t->base = known_base(s, &list[i], serial, &t->serial)))
            t->a = &list[i];
    rc = RUN_OK;
    if (t->a && !need_clock)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (t->a && t->a != &list[i])
            continue;
        int found = ask_current(s, &list[i], serial, t);
        if (found != 0) {
            rc = found > 0 ? RUN_OK : RUN_FAILED;
            goto out;
        }
    }
    rc = RUN_USAGE;
    if (t->a || n == 1)
        session_say(s, "account %s has no device %s", t->a ? t->a->name : list[0].name, serial);
    else
        session_say(s, "no account has a device %s", serial);
out:
    return rc;
}

void target_clear(struct target *t)
{
    free(t->serial);
    free(t->base);
    memset(t, 0, sizeof *t);
}

/* ---- output ---- */

/* Writes `b` to `out`; RUN_FAILED when that fails. */
int lookup_emit(const struct session *s, FILE *out, const struct buf *b)
{
    int rc = RUN_OK;
    if (fputs(buf_str(b), out) == EOF || fflush(out) != 0) {
        session_say(s, "cannot write the output: %s", strerror(errno));
        rc = RUN_FAILED;
    }
    return rc;
}

void lookup_put_json(struct buf *b, struct json_object *o)
{
    const char *text = json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!text)
        xalloc_die();
    buf_puts(b, text);
    buf_puts(b, "\n");
}

struct json_object *lookup_jstr(const char *s)
{
    return jsonv_need(json_object_new_string(s ? s : ""));
}

/* "-18.5 °C" for a number with a unit; anything else as it came. */
char *lookup_with_unit(const char *value, const char *unit)
{
    return *unit && watch_parse_value(value, NULL, NULL) ? xasprintf("%s %s", value, unit)
                                                         : xstrdup(value);
}

/* Adds the row of `n` cells that the caller allocated, and frees them. */
void lookup_add_row(struct table *t, char **row, size_t n)
{
    table_add(t, (const char *const *)row);
    for (size_t i = 0; i < n; i++) {
        free(row[i]);
        row[i] = NULL;
    }
}

/* "SERIAL NAME (MODEL)", leaving out what is not known. */
void lookup_device_title(struct buf *b, const char *serial, const char *name, const char *model)
{
    buf_puts(b, serial);
    if (*name)
        buf_printf(b, " %s", name);
    if (*model)
        buf_printf(b, " (%s)", model);
}
