/* selfcheck: conditions walked through time, as run.c feeds them. */
#include "selfcheck.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL
#define AFTER 900

/* One run: applies the verdict to *cond (as run.c does with the state) and
 * returns the action. */
static enum selfcheck_action step(struct state_condition *cond, bool *have,
                                  const struct selfcheck_input *in, long long now)
{
    struct state_condition next;
    bool keep;
    enum selfcheck_action a = selfcheck_step(&next, &keep, *have ? cond : NULL, in, now, AFTER);
    state_condition_clear(cond);
    *have = keep;
    if (keep)
        *cond = next;
    else
        state_condition_clear(&next);
    return a;
}

Test(selfcheck, a_refused_login_opens_at_once_once_and_pauses_for_an_hour)
{
    struct state_condition c = {0};
    bool have = false;
    char *creds = selfcheck_creds((const char *const[]){"key", "login", "pass"}, 3);
    struct selfcheck_input in = {
        .what = SELFCHECK_LOGIN_REFUSED, .bad = true, .tried = true, .creds = creds};
    cr_assert_eq(step(&c, &have, &in, T0), SELFCHECK_OPEN);
    cr_assert(have);
    cr_assert_eq(c.opened, T0);
    cr_assert_eq(c.retry_at, T0 + 3600);
    cr_assert_str_eq(c.creds, creds);
    /* Thirty runs a minute apart: paused, no call, nothing more to say. */
    in.tried = false;
    for (int i = 1; i <= 30; i++) {
        cr_assert(selfcheck_paused(&c, creds, T0 + 60 * i));
        cr_assert_eq(step(&c, &have, &in, T0 + 60 * i), SELFCHECK_NONE);
        cr_assert(have);
        cr_assert_eq(c.retry_at, T0 + 3600);
    }
    /* After the hour one try; refused again: still open, another hour. */
    cr_assert_not(selfcheck_paused(&c, creds, T0 + 3600));
    in.tried = true;
    cr_assert_eq(step(&c, &have, &in, T0 + 3600), SELFCHECK_NONE);
    cr_assert_eq(c.retry_at, T0 + 7200);
    cr_assert_eq(c.opened, T0);
    /* Other credentials end the pause at once. */
    char *fixed = selfcheck_creds((const char *const[]){"key", "login", "pass2"}, 3);
    cr_assert_str_neq(fixed, creds);
    cr_assert_not(selfcheck_paused(&c, fixed, T0 + 3660));
    struct selfcheck_input ok = {
        .what = SELFCHECK_LOGIN_REFUSED, .good = true, .tried = true, .creds = fixed};
    cr_assert_eq(step(&c, &have, &ok, T0 + 3660), SELFCHECK_CLOSE);
    cr_assert_not(have);
    cr_assert_not(selfcheck_paused(NULL, fixed, T0 + 3660));
    free(fixed);
    free(creds);
}

Test(selfcheck, a_failing_platform_waits_for_after_then_opens_once_and_clears_once)
{
    struct state_condition c = {0};
    bool have = false;
    struct selfcheck_input bad = {.what = SELFCHECK_PLATFORM_FAILING, .bad = true};
    struct selfcheck_input neither = {.what = SELFCHECK_PLATFORM_FAILING};
    struct selfcheck_input good = {.what = SELFCHECK_PLATFORM_FAILING, .good = true};
    int opened = 0;
    for (long long t = T0; t < T0 + AFTER; t += 60) {
        cr_assert_eq(step(&c, &have, &bad, t), SELFCHECK_NONE, "at +%lld", t - T0);
        cr_assert(have);
        cr_assert_eq(c.since, T0);
        cr_assert_eq(c.opened, 0);
    }
    for (long long t = T0 + AFTER; t < T0 + 3 * AFTER; t += 60)
        opened += step(&c, &have, &bad, t) == SELFCHECK_OPEN;
    cr_assert_eq(opened, 1);
    cr_assert_eq(step(&c, &have, &neither, T0 + 3 * AFTER), SELFCHECK_NONE);
    cr_assert(have, "a run without a call keeps it open");
    cr_assert_eq(step(&c, &have, &good, T0 + 3 * AFTER + 60), SELFCHECK_CLOSE);
    cr_assert_not(have);
    cr_assert_eq(step(&c, &have, &good, T0 + 3 * AFTER + 120), SELFCHECK_NONE);
}

Test(selfcheck, a_blip_shorter_than_after_says_nothing)
{
    struct state_condition c = {0};
    bool have = false;
    struct selfcheck_input bad = {.what = SELFCHECK_RECEIVER_FAILING, .bad = true};
    struct selfcheck_input good = {.what = SELFCHECK_RECEIVER_FAILING, .good = true};
    cr_assert_eq(step(&c, &have, &bad, T0), SELFCHECK_NONE);
    cr_assert_eq(step(&c, &have, &bad, T0 + AFTER - 60), SELFCHECK_NONE);
    cr_assert_eq(step(&c, &have, &good, T0 + AFTER - 1), SELFCHECK_NONE);
    cr_assert_not(have);
    /* The outbox's oldest item dates the symptom: old enough opens at once. */
    struct selfcheck_input old = {
        .what = SELFCHECK_RECEIVER_FAILING, .bad = true, .since = T0 - AFTER};
    cr_assert_eq(step(&c, &have, &old, T0), SELFCHECK_OPEN);
    cr_assert_eq(c.since, T0 - AFTER);
    state_condition_clear(&c);
}

Test(selfcheck, texts_name_the_subject_and_what_to_do)
{
    struct state_condition c = {.since = T0, .opened = T0, .retry_at = T0 + 3600};
    char *t = selfcheck_text(SELFCHECK_LOGIN_REFUSED, SELFCHECK_OPEN, "tbzz9999", "tokyo, osaka",
                             &c, NULL, T0);
    cr_assert_str_eq(t, "wsrelay cannot log in to WebStorage as tbzz9999 (401): polling of "
                        "accounts tokyo, osaka is paused until the configuration changes or for "
                        "an hour (next try 12:06 UTC). Check api_key, login_id and login_pass.");
    free(t);
    t = selfcheck_text(SELFCHECK_RECEIVER_FAILING, SELFCHECK_OPEN, "hook", "", &c, "HTTP 503",
                       T0 + 1200);
    cr_assert_str_eq(t, "wsrelay has been unable to deliver to receiver 'hook' for 20 min (since "
                        "11:06 UTC): its events wait in the outbox and are retried. Last error: "
                        "HTTP 503");
    free(t);
    t = selfcheck_text(SELFCHECK_PLATFORM_FAILING, SELFCHECK_CLOSE, "tbzz9999", "lab", &c, NULL,
                       T0 + 1800);
    cr_assert_str_eq(t, "wsrelay polls WebStorage as tbzz9999 again (accounts lab); it had been "
                        "failing since 11:06 UTC, for 30 min.");
    free(t);
}

/* Parked devices were confirmed by refusals in a row already: their
 * condition opens at once, names them, and clears when none is left. */
Test(selfcheck, refused_devices_open_at_once_and_name_the_serials)
{
    struct state_condition c = {0};
    bool have = false;
    struct selfcheck_input bad = {.what = SELFCHECK_DEVICES_REFUSED, .bad = true};
    struct selfcheck_input good = {.what = SELFCHECK_DEVICES_REFUSED, .good = true};
    cr_assert_str_eq(selfcheck_name(SELFCHECK_DEVICES_REFUSED), "devices-refused");
    cr_assert_eq(step(&c, &have, &bad, T0), SELFCHECK_OPEN);
    cr_assert_eq(step(&c, &have, &bad, T0 + 60), SELFCHECK_NONE, "once, not every run");
    char *text = selfcheck_text(SELFCHECK_DEVICES_REFUSED, SELFCHECK_OPEN, "tbzz9999", "lab", &c,
                                "5214000A (lab)", T0 + 60);
    cr_expect(strstr(text, "5214000A (lab)"), "%s", text);
    cr_expect(strstr(text, "every 6 hours"), "%s", text);
    cr_expect(strstr(text, "exclude:"), "%s", text);
    cr_expect_null(strstr(text, "Last error"), "%s", text);
    free(text);
    struct state_condition prev = {.since = c.since, .opened = c.opened};
    cr_assert_eq(step(&c, &have, &good, T0 + 7200), SELFCHECK_CLOSE);
    text = selfcheck_text(SELFCHECK_DEVICES_REFUSED, SELFCHECK_CLOSE, "tbzz9999", "lab", &prev,
                          NULL, T0 + 7200);
    cr_expect(strstr(text, "no longer refuses"), "%s", text);
    free(text);
    state_condition_clear(&c);
}

/* A report of a login waiting in the outbox is stale once that login's
 * condition is no longer open (or the login left the configuration); a
 * recovery, and a receiver's report, never are. */
Test(selfcheck, a_queued_report_of_a_login_is_stale_once_its_condition_is_over)
{
    struct state_condition open = {.since = T0, .opened = T0, .retry_at = T0 + 3600};
    struct state_condition pending = {.since = T0};
    cr_assert_not(selfcheck_stale("login-refused", "tbzz9999", &open));
    cr_assert(selfcheck_stale("login-refused", "tbzz9999", NULL));
    cr_assert(selfcheck_stale("platform-failing", "tbzz9999", &pending));
    cr_assert(selfcheck_stale("devices-refused", NULL, &open));
    cr_assert_not(selfcheck_stale("login-refused-cleared", "tbzz9999", NULL));
    cr_assert_not(selfcheck_stale("receiver-failing", NULL, NULL));
    cr_assert_not(selfcheck_stale("state-corrupt", NULL, NULL));
}

Test(selfcheck, a_login_that_left_the_configuration_says_it_is_over)
{
    struct state_condition c = {.since = T0, .opened = T0};
    char *text =
        selfcheck_text(SELFCHECK_LOGIN_REFUSED, SELFCHECK_GONE, "tbzz9998", "", &c, NULL, T0 + 120);
    cr_assert_str_eq(text, "wsrelay no longer logs in to WebStorage as tbzz9998: that login ID "
                           "left the configuration, so what was reported about it since 11:06 "
                           "UTC is over. The accounts that used it are polled with their login "
                           "IDs as configured now.");
    free(text);
}
