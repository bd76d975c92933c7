/* Self-monitoring decisions: which condition of wsrelay's own health opens
 * or clears in a run, and what the relay event says. Pure functions of
 * what the caller passes in, so the tests can walk them through time. */
#include "selfcheck.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *selfcheck_name(enum selfcheck_what what)
{
    switch (what) {
    case SELFCHECK_LOGIN_REFUSED:
        return "login-refused";
    case SELFCHECK_PLATFORM_FAILING:
        return "platform-failing";
    case SELFCHECK_RECEIVER_FAILING:
        return "receiver-failing";
    case SELFCHECK_DEVICES_REFUSED:
        return "devices-refused";
    }
    return "?";
}

enum selfcheck_action selfcheck_step(struct state_condition *next, bool *keep,
                                     const struct state_condition *prev,
                                     const struct selfcheck_input *in, long long now, long after)
{
    memset(next, 0, sizeof *next);
    *keep = false;
    bool open = prev && prev->opened;
    if (in->bad) {
        long long since = in->since > 0 && in->since < now ? in->since : now;
        if (prev && prev->since > 0 && prev->since < since)
            since = prev->since;
        *keep = true;
        next->since = since;
        if (open) {
            next->opened = prev->opened;
            next->retry_at = prev->retry_at;
            next->creds = prev->creds ? xstrdup(prev->creds) : NULL;
            if (in->what == SELFCHECK_LOGIN_REFUSED && in->tried) {
                next->retry_at = now + SELFCHECK_PAUSE;
                free(next->creds);
                next->creds = in->creds ? xstrdup(in->creds) : NULL;
            }
            return SELFCHECK_NONE;
        }
        bool at_once = in->what == SELFCHECK_LOGIN_REFUSED || in->what == SELFCHECK_DEVICES_REFUSED;
        long threshold = at_once ? 0 : after;
        if (now - since < threshold)
            return SELFCHECK_NONE; /* pending: not long enough yet */
        next->opened = now;
        if (in->what == SELFCHECK_LOGIN_REFUSED) {
            next->retry_at = now + SELFCHECK_PAUSE;
            next->creds = in->creds ? xstrdup(in->creds) : NULL;
        }
        return SELFCHECK_OPEN;
    }
    if (in->good)
        return open ? SELFCHECK_CLOSE : SELFCHECK_NONE;
    if (open) { /* nothing learnt in this run */
        *keep = true;
        next->since = prev->since;
        next->opened = prev->opened;
        next->retry_at = prev->retry_at;
        next->creds = prev->creds ? xstrdup(prev->creds) : NULL;
    }
    return SELFCHECK_NONE;
}

bool selfcheck_paused(const struct state_condition *c, const char *creds, long long now)
{
    if (!c || !c->opened || now >= c->retry_at)
        return false;
    return c->creds && creds && strcmp(c->creds, creds) == 0;
}

bool selfcheck_stale(const char *condition, const char *login, const struct state_condition *c)
{
    static const enum selfcheck_what of_logins[] = {
        SELFCHECK_LOGIN_REFUSED, SELFCHECK_PLATFORM_FAILING, SELFCHECK_DEVICES_REFUSED};
    bool about_login = false;
    for (size_t i = 0; condition && i < sizeof of_logins / sizeof of_logins[0]; i++)
        about_login |= strcmp(condition, selfcheck_name(of_logins[i])) == 0;
    if (!about_login)
        return false;
    return !login || !c || !c->opened;
}

char *selfcheck_creds(const char *const *parts, size_t n)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
        xalloc_die();
    for (size_t i = 0; i < n; i++) {
        const char *p = parts[i] ? parts[i] : "";
        if (EVP_DigestUpdate(ctx, p, strlen(p) + 1) != 1)
            xalloc_die();
    }
    if (EVP_DigestFinal_ex(ctx, md, &len) != 1)
        xalloc_die();
    EVP_MD_CTX_free(ctx);
    char *hex = xmalloc(2 * (size_t)len + 1);
    for (unsigned i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    hex[2 * len] = '\0';
    return hex;
}

/* "HH:MM UTC" of `t`, with the date when it is not the day of `now`. */
static void utc_time(char *out, size_t size, long long t, long long now)
{
    time_t a = (time_t)t, b = (time_t)now;
    struct tm ta, tb;
    gmtime_r(&a, &ta);
    gmtime_r(&b, &tb);
    bool same_day = ta.tm_year == tb.tm_year && ta.tm_yday == tb.tm_yday;
    strftime(out, size, same_day ? "%H:%M UTC" : "%Y-%m-%d %H:%M UTC", &ta);
}

/* "20 min", "3 h 5 min", "2 days". */
static void span_text(char *out, size_t size, long long seconds)
{
    if (seconds < 0)
        seconds = 0;
    if (seconds < 3600)
        snprintf(out, size, "%lld min", seconds / 60);
    else if (seconds < 2 * 86400)
        snprintf(out, size, "%lld h %lld min", seconds / 3600, seconds % 3600 / 60);
    else
        snprintf(out, size, "%lld days", seconds / 86400);
}

char *selfcheck_text(enum selfcheck_what what, enum selfcheck_action action, const char *subject,
                     const char *accounts, const struct state_condition *c, const char *detail,
                     long long now)
{
    char since[40], until[40], span[40];
    struct buf b;
    buf_init(&b, 0);
    utc_time(since, sizeof since, c->since ? c->since : now, now);
    utc_time(until, sizeof until, c->retry_at, now);
    span_text(span, sizeof span, now - (c->since ? c->since : now));
    bool open = action == SELFCHECK_OPEN;
    if (action == SELFCHECK_GONE) {
        if (what == SELFCHECK_RECEIVER_FAILING)
            buf_printf(&b,
                       "Receiver '%s' is no longer in wsrelay's configuration, so its failure "
                       "(since %s) is no longer watched; what waited for it is kept until it "
                       "is configured again.",
                       subject, since);
        else
            buf_printf(&b,
                       "wsrelay no longer logs in to WebStorage as %s: that login ID left the "
                       "configuration, so what was reported about it since %s is over. The "
                       "accounts that used it are polled with their login IDs as configured "
                       "now.",
                       subject, since);
        return buf_steal(&b);
    }
    switch (what) {
    case SELFCHECK_LOGIN_REFUSED:
        if (open)
            buf_printf(&b,
                       "wsrelay cannot log in to WebStorage as %s (401): polling of accounts "
                       "%s is paused until the configuration changes or for an hour (next "
                       "try %s). Check api_key, login_id and login_pass.",
                       subject, accounts, until);
        else
            buf_printf(&b,
                       "wsrelay can log in to WebStorage as %s again: polling of accounts %s "
                       "has resumed (refused since %s).",
                       subject, accounts, since);
        break;
    case SELFCHECK_PLATFORM_FAILING:
        if (open)
            buf_printf(&b,
                       "wsrelay has been failing to poll WebStorage as %s for %s (since "
                       "%s): new alerts of accounts %s are not being relayed.",
                       subject, span, since, accounts);
        else
            buf_printf(&b,
                       "wsrelay polls WebStorage as %s again (accounts %s); it had been "
                       "failing since %s, for %s.",
                       subject, accounts, since, span);
        break;
    case SELFCHECK_RECEIVER_FAILING:
        if (open)
            buf_printf(&b,
                       "wsrelay has been unable to deliver to receiver '%s' for %s (since "
                       "%s): its events wait in the outbox and are retried.",
                       subject, span, since);
        else
            buf_printf(&b,
                       "wsrelay delivers to receiver '%s' again; it had been failing since "
                       "%s, for %s.",
                       subject, since, span);
        break;
    case SELFCHECK_DEVICES_REFUSED:
        if (open)
            buf_printf(&b,
                       "WebStorage keeps refusing the alert logs of %s (login %s, accounts "
                       "%s): wsrelay now asks for them only every 6 hours, and their alerts "
                       "are not relayed meanwhile. Check the serials and base units on "
                       "WebStorage, or add them to exclude: if they are not to be polled.",
                       detail && *detail ? detail : "some devices", subject, accounts);
        else
            buf_printf(&b,
                       "WebStorage no longer refuses any device of login %s (accounts %s); "
                       "refusals had begun %s.",
                       subject, accounts, since);
        return buf_steal(&b);
    }
    if (open && detail && *detail)
        buf_printf(&b, " Last error: %s", detail);
    return buf_steal(&b);
}
