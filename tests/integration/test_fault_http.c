/* Hostile HTTP peers end to end: the real binary, the simulator, and a raw
 * HTTP server (rawhttp.h) that answers with exactly the bytes a test
 * chooses. A receiver or a platform that echoes a secret in any form must
 * never get it into a log line, the state, `status` or `test-receiver`; one
 * that dribbles its reply must not hold a run past its timeout; a
 * Retry-After beyond a day is capped at a day. */
#include "proc.h"
#include "rawhttp.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0 1795000000LL

/* The secrets of the webhook receiver's configuration. */
#define PATH_TOKEN "Tk9xQ2SeCrEt7pAtH4u"
#define ESC_TOKEN "esc%2Bs3cr3t%2FZ9q" /* a token with %XX escapes, as configured */
#define ESC_TOKEN_DECODED "esc+s3cr3t/Z9q"
#define QUERY_TOKEN "Qy7SeCrEtQuErY5mKp"
#define USER_PASS "Pw7SeCrEtUsErInFo"
#define BEARER "Bz8SeCrEtBeArEr3xLw"
#define HEADER_VALUE "Hv5SeCrEtHeAdEr0wQn"

static struct relay R;
static struct rawhttp *S;

static void setup(void)
{
    relay_start_world(&R, "freezer-a");
}

static void teardown(void)
{
    rawhttp_stop(S);
    S = NULL;
    relay_stop(&R);
}

TestSuite(fault_http, .init = setup, .fini = teardown, .timeout = 300);

/* "http://wsrelay:PASS@127.0.0.1:PORT/hook/TOKEN/ESC?token=Q&v=1"; caller
 * frees. */
static char *hook_url(void)
{
    const char *base = rawhttp_url(S) + strlen("http://");
    return xasprintf("http://wsrelay:" USER_PASS "@%s/hook/" PATH_TOKEN "/%s?token=" QUERY_TOKEN
                     "&v=1",
                     base, ESC_TOKEN);
}

/* The config: the webhook receiver "hook" at rawhttp with both headers,
 * and the shortest timeout a receiver may have. */
static void config_hook(void)
{
    char *url = hook_url();
    char *receivers = xasprintf("  - name: hook\n"
                                "    webhook:\n"
                                "      url: \"%s\"\n"
                                "      headers:\n"
                                "        Authorization: \"Bearer " BEARER "\"\n"
                                "        X-Signature: \"" HEADER_VALUE "\"\n"
                                "    timeout: 5s\n",
                                url);
    relay_config(&R, NULL, receivers);
    free(receivers);
    free(url);
}

/* `wsrelay -c CONFIG A B C` (B and C may be NULL); its stdout and stderr
 * together. Caller frees. */
static char *wsrelay(const char *a, const char *b, const char *c)
{
    struct cmd_result r = wsrelay_cmd(60, "-c", R.config_path, a, b, c, NULL);
    char *both = xasprintf("%s\n--- stderr ---\n%s", r.out, r.err);
    cmd_result_free(&r);
    return both;
}

/* JSON text as its strings read once decoded ("\/" is "/"), so that a
 * secret with a '/' is found whatever json-c escaped. */
static char *json_decoded(const char *text)
{
    struct json_object *j = json_tokener_parse(text);
    cr_assert_not_null(j, "not JSON:\n%s", text);
    char *s = xstrdup(
        json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(j);
    return s;
}

/* Fails unless the echo of a rawhttp reply ("echo: ... :end") is in
 * `text` with "[redacted]" in it: the answer reached `text`, redacted. */
static void assert_redacted_echo(const char *text, size_t form, const char *where)
{
    const char *start = strstr(text, "echo: ");
    const char *end = start ? strstr(start, " :end") : NULL;
    cr_assert(end, "form %zu: %s does not show the answer:\n%s", form, where, text);
    char *echo = xstrndup(start, (size_t)(end - start));
    cr_assert(strstr(echo, "[redacted]"), "form %zu: %s: %s", form, where, echo);
    free(echo);
}

/* Fails when any of `secrets` (NULL-terminated) is in `text`. */
static void assert_none(const char *text, const char *const *secrets, const char *where)
{
    for (const char *const *s = secrets; *s; s++)
        cr_assert_null(strstr(text, *s), "%s: '%s' leaked in:\n%s", where, *s, text);
}

static const char *const hook_secrets[] = {
    PATH_TOKEN,
    ESC_TOKEN,
    ESC_TOKEN_DECODED,
    "esc%2bs3cr3t%2fZ9q",
    QUERY_TOKEN,
    USER_PASS,
    BEARER,
    HEADER_VALUE,
    NULL,
};

/* The token with every byte as %xx in lower case. */
static char *percent_all(const char *s)
{
    struct buf b;
    buf_init(&b, 0);
    for (; *s; s++)
        buf_printf(&b, "%%%02x", (unsigned char)*s);
    return buf_steal(&b);
}

Test(fault_http, a_receiver_echoing_its_secrets_in_any_form_leaks_none)
{
    static const struct rawhttp_reply placeholder = {.head = "HTTP/1.1 500 x\r\n\r\n"};
    S = rawhttp_start(&placeholder, 1, 240);
    config_hook();
    char *url = hook_url();
    /* The whole URL as a JSON encoder writes it: every '/' as "\/". */
    struct buf b;
    buf_init(&b, 0);
    for (const char *p = url; *p; p++)
        buf_append(&b, *p == '/' ? "\\/" : p, *p == '/' ? 2 : 1);
    char *url_json = buf_steal(&b);
    char *token_pct = percent_all(PATH_TOKEN);
    char *forms[] = {
        xstrdup(PATH_TOKEN),                               /* the path's token alone */
        xstrdup("\\/hook\\/" PATH_TOKEN),                  /* JSON-escaped path */
        xstrdup("%2Fhook%2F" PATH_TOKEN),                  /* URL-encoded path */
        xasprintf("%%2fhook%%2f%s", token_pct),            /* every byte, lower case */
        xstrdup("\\u0054k9xQ2\\u0053eCrEt7pAtH4\\u0075"),  /* JSON \u escapes */
        xstrdup("%252Fhook%252F" PATH_TOKEN),              /* encoded twice */
        xstrdup("&#84;k9xQ2SeCrEt7pAtH4&#x75;"),           /* HTML references */
        xstrdup(ESC_TOKEN_DECODED),                        /* the %XX token decoded */
        xstrdup("esc%2bs3cr3t%2fZ9q"),                     /* ... re-encoded in lower case */
        xstrdup(QUERY_TOKEN),                              /* a query value alone */
        xstrdup("token=" QUERY_TOKEN "&amp;v=1"),          /* the query, HTML-escaped */
        xstrdup(USER_PASS),                                /* the userinfo's password */
        xstrdup(BEARER),                                   /* the bearer token alone */
        xstrdup("Bearer " BEARER),                         /* the header value whole */
        xstrdup(HEADER_VALUE),                             /* another header's value */
        xstrdup(url_json),                                 /* the whole URL, JSON-escaped */
        xstrdup(PATH_TOKEN PATH_TOKEN QUERY_TOKEN BEARER), /* twice, and side by side */
        xstrdup(PATH_TOKEN + 3),                           /* the URL token, first 3 cut */
        xstrdup(BEARER + 4),                               /* the bearer token, first 4 cut */
        xasprintf("403 token ...%s", QUERY_TOKEN + 6),     /* the query token's end */
    };
    size_t n_forms = sizeof forms / sizeof forms[0];
    for (size_t i = 0; i < n_forms; i++) {
        /* The run's delivery and then test-receiver each get this reply. */
        char *head = xasprintf("HTTP/1.1 500 Internal Server Error\r\n"
                               "Content-Type: text/plain\r\n\r\n"
                               "echo: %s :end\r\nsecond line %s",
                               forms[i], forms[i]);
        struct rawhttp_reply reply = {.head = head};
        rawhttp_set_replies(S, &reply, 1);
        free(head);
        const char *const extra[] = {forms[i], NULL};
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, T0 + (long long)i * 7200, &err), 1, "form %zu", i);
        assert_redacted_echo(err, i, "the run's stderr");
        assert_none(err, hook_secrets, "run's stderr");
        assert_none(err, extra, "run's stderr");
        free(err);

        char *raw = read_file_str(R.state_path);
        char *state = json_decoded(raw);
        assert_redacted_echo(state, i, "the state");
        assert_none(raw, hook_secrets, "state file");
        assert_none(state, hook_secrets, "state file, decoded");
        assert_none(raw, extra, "state file");
        free(state);
        free(raw);

        char *now = xasprintf("%lld", T0 + (long long)i * 7200 + 10);
        char *status = wsrelay("status", "--now", now);
        assert_redacted_echo(status, i, "status");
        assert_none(status, hook_secrets, "status");
        assert_none(status, extra, "status");
        free(status);
        char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",    R.config_path, (char *)"status",
                        (char *)"--json",    (char *)"--now", now,           NULL};
        char *out = NULL, *serr = NULL;
        run_cmd(&out, &serr, 60, argv, NULL);
        char *json = json_decoded(out);
        assert_redacted_echo(json, i, "status --json");
        assert_none(out, hook_secrets, "status --json");
        assert_none(json, hook_secrets, "status --json, decoded");
        assert_none(serr, hook_secrets, "status --json's stderr");
        free(json);
        free(out);
        free(serr);
        free(now);

        char *test = wsrelay("test-receiver", "hook", NULL);
        assert_redacted_echo(test, i, "test-receiver");
        assert_none(test, hook_secrets, "test-receiver");
        assert_none(test, extra, "test-receiver");
        free(test);
    }
    cr_assert_eq(rawhttp_count(S), 2 * n_forms, "every form was answered twice");
    for (size_t i = 0; i < n_forms; i++)
        free(forms[i]);
    free(token_pct);
    free(url_json);
    free(url);
}

/* Configures the receivers `receivers` (freed here) and returns what
 * `wsrelay test-receiver NAME` prints (caller frees), which says that the
 * far end did not accept the test. */
static char *refused_test(char *receivers, const char *name)
{
    relay_config(&R, NULL, receivers);
    free(receivers);
    char *test = wsrelay("test-receiver", name, NULL);
    cr_assert_not_null(strstr(test, "test notification NOT accepted"), "%s", test);
    return test;
}

/* A Slack receiver whose far end (a proxy in front of it, say) echoes the
 * bearer token of another receiver, without its first characters:
 * test-receiver shows the answer with every configured secret redacted,
 * not only the Slack receiver's own. */
Test(fault_http, test_receiver_redacts_every_configured_secret)
{
    static const struct rawhttp_reply reply = {
        .head = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\n"
                "echo: invalid_token: Authorization: Bearer ...eCrEtBeArEr3xLw :end"};
    S = rawhttp_start(&reply, 1, 60);
    char *url = hook_url();
    char *receivers = xasprintf("  - name: hook\n"
                                "    webhook:\n"
                                "      url: \"%s\"\n"
                                "      headers:\n"
                                "        Authorization: \"Bearer " BEARER "\"\n"
                                "  - name: chat\n"
                                "    slack:\n"
                                "      url: \"%s/services/T0AB12CD3/B0EF45GH6/XkqPzRtwLm9aBcDe\"\n"
                                "    timeout: 5s\n",
                                url, rawhttp_url(S));
    free(url);
    char *test = refused_test(receivers, "chat");
    cr_assert_not_null(
        strstr(test, "echo: invalid_token: Authorization: Bearer ...[redacted] :end"), "%s", test);
    const char *const part[] = {"eCrEtBeArEr3xLw", "BeArEr3x", NULL};
    assert_none(test, part, "test-receiver");
    free(test);
}

/* A webhook whose far end echoes the AUTH PLAIN blob that another,
 * email, receiver sends ("\0mailer\0Sm7pW-q2xLr9" in base64), and its
 * AUTH LOGIN form: test-receiver redacts both, as the email receiver's own
 * errors do. */
Test(fault_http, test_receiver_redacts_another_email_receivers_smtp_auth_forms)
{
    static const struct rawhttp_reply reply = {
        .head = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\n"
                "echo: AUTH PLAIN AG1haWxlcgBTbTdwVy1xMnhMcjk= then U203cFctcTJ4THI5 :end"};
    S = rawhttp_start(&reply, 1, 60);
    char *receivers = xasprintf("  - name: hook\n"
                                "    webhook: {url: \"%s/in\"}\n"
                                "    timeout: 5s\n"
                                "  - name: mail\n"
                                "    email:\n"
                                "      host: 127.0.0.1\n"
                                "      from: relay@example.org\n"
                                "      to: oncall@example.org\n"
                                "      username: mailer\n"
                                "      password: \"Sm7pW-q2xLr9\"\n",
                                rawhttp_url(S));
    char *test = refused_test(receivers, "hook");
    cr_assert_not_null(strstr(test, "echo: AUTH PLAIN [redacted] then [redacted] :end"), "%s",
                       test);
    const char *const part[] = {"AG1haWxlcgBTbTdwVy1xMnhMcjk", "U203cFctcTJ4THI5", NULL};
    assert_none(test, part, "test-receiver");
    free(test);
}

/* Runs `wsrelay run --now NOW` and returns how long it took (seconds);
 * *status its exit status, *err its stderr (caller frees). The run may
 * take up to `limit_s` before the test fails. */
static double timed_run(long long now, int limit_s, int *status, char **err)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&R.sim, now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", R.config_path, (char *)"run",
                    (char *)"--now",     when,         NULL};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    *status = run_cmd(NULL, err, limit_s, argv, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* The receiver's timeout (config_hook) and the platform client's total
 * timeout (platform_set_timeouts' default). */
#define RECEIVER_TIMEOUT_S 5
#define PLATFORM_TIMEOUT_S 30
#define MARGIN_S 25

/* A reply that announces a body and sends one byte of it a second,
 * forever: only a timeout ends it. */
static const struct rawhttp_reply dribble = {
    .head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000000\r\n\r\n{",
    .fill = RAWHTTP_FOREVER,
    .fill_byte = ' ',
    .chunk = 1,
    .every_ms = 1000,
};

/* The same, but the headers never end: no answer has come. */
static const struct rawhttp_reply dribble_head = {
    .head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: ",
    .fill = RAWHTTP_FOREVER,
    .fill_byte = 'x',
    .chunk = 1,
    .every_ms = 1000,
};

/* How many items the saved outbox holds. */
static size_t outbox_length(void)
{
    char *raw = read_file_str(R.state_path);
    struct json_object *st = json_tokener_parse(raw);
    struct json_object *outbox = NULL;
    cr_assert(json_object_object_get_ex(st, "outbox", &outbox), "%s", raw);
    size_t n = json_object_array_length(outbox);
    json_object_put(st);
    free(raw);
    return n;
}

/* One run against a receiver that holds its reply open; returns its log. */
static char *dribbled_run(const struct rawhttp_reply *reply, int want_status)
{
    /* The server outlives the bound by far: without a timeout the run
     * would last until it stops, and the test would see it. */
    S = rawhttp_start(reply, 1, RECEIVER_TIMEOUT_S + MARGIN_S + 60);
    config_hook();
    int status;
    char *err = NULL;
    double took = timed_run(T0, RECEIVER_TIMEOUT_S + MARGIN_S + 90, &status, &err);
    cr_assert_eq(status, want_status, "%s", err);
    cr_assert_lt(took, RECEIVER_TIMEOUT_S + MARGIN_S, "the run took %.1f s", took);
    assert_none(err, hook_secrets, "run's stderr");
    cr_assert_eq(rawhttp_count(S), 1);
    struct rawhttp_request *rq = rawhttp_request(S, 0);
    cr_assert_not(rq->reply_ended, "the reply never ends");
    rawhttp_request_free(rq);
    return err;
}

Test(fault_http, a_receiver_dribbling_its_headers_is_cut_off_and_the_events_stay_queued)
{
    char *err = dribbled_run(&dribble_head, 1);
    cr_assert(strstr(err, "kept for a later run"), "%s", err);
    cr_assert_eq(outbox_length(), 1, "the event is still queued");
    free(err);
}

/* A 200 with its headers whole has taken the message, however its body
 * ends: sent again, it would be repeated at every retry. */
Test(fault_http, a_receiver_that_said_200_then_dribbles_its_body_has_the_events)
{
    char *err = dribbled_run(&dribble, 0);
    cr_assert(strstr(err, "HTTP 200, then the reply's body did not end in time: taken as "
                          "accepted"),
              "%s", err);
    cr_assert_eq(outbox_length(), 0, "delivered:\n%s", err);
    free(err);
}

/* A 200 whose body is cut short (Content-Length says more; the
 * connection closes) is the same: the event is sent once, never again. */
static const struct rawhttp_reply cut_short = {
    .head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nok",
};

Test(fault_http, a_200_cut_short_is_delivered_once)
{
    S = rawhttp_start(&cut_short, 1, 240);
    config_hook();
    for (int i = 0; i < 4; i++) {
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, T0 + i * 600, &err), 0, "run %d:\n%s", i, err);
        if (i == 0)
            cr_assert(strstr(err, "HTTP 200, then "), "%s", err);
        free(err);
    }
    cr_assert_eq(rawhttp_count(S), 1, "posted %zu times", rawhttp_count(S));
    cr_assert_eq(outbox_length(), 0);
}

Test(fault_http, a_platform_dribbling_its_reply_is_cut_off)
{
    S = rawhttp_start(&dribble, 1, PLATFORM_TIMEOUT_S + MARGIN_S + 60);
    relay_config_platform(&R, rawhttp_url(S));
    int status;
    char *err = NULL;
    double took = timed_run(T0, PLATFORM_TIMEOUT_S + MARGIN_S + 90, &status, &err);
    cr_assert_eq(status, 1, "a failed call:\n%s", err);
    cr_assert_lt(took, PLATFORM_TIMEOUT_S + MARGIN_S, "the run took %.1f s:\n%s", took, err);
    cr_assert_geq(rawhttp_count(S), 1);
    free(err);
}

/* The account's secrets in forms a platform's error message could echo
 * them (the JSON decoding of the body undoes one level already). */
Test(fault_http, a_platform_echoing_the_credentials_leaks_none)
{
    static const char *const creds[] = {RELAY_API_KEY, RELAY_PASSWORD, "p\"ss", NULL};
    char *key_pct = percent_all(RELAY_API_KEY);
    char *forms[] = {
        xasprintf("%s", key_pct),                                        /* every byte %xx */
        xstrdup("\\\\u0054EST-API-KEY-abcdefghijklmnopqrstuvwxyz01234"), /* \u, escaped twice */
        xstrdup("TEST-API-KEY-abcdefghijklmnopqrstuvwxyz01234"),         /* as it is */
        xstrdup("p%22ss%5Cword"),     /* the password URL-encoded */
        xstrdup("p&quot;ss\\\\word"), /* ... HTML-escaped */
    };
    size_t n_forms = sizeof forms / sizeof forms[0];
    static const struct rawhttp_reply placeholder = {.head = "HTTP/1.1 500 x\r\n\r\n"};
    S = rawhttp_start(&placeholder, 1, 120);
    relay_config_platform(&R, rawhttp_url(S));
    for (size_t i = 0; i < n_forms; i++) {
        char *head = xasprintf("HTTP/1.1 500 Internal Server Error\r\n"
                               "Content-Type: application/json\r\n\r\n"
                               "{\"error\": {\"code\": 500, \"message\": \"echo: %s :end\"}}",
                               forms[i]);
        struct rawhttp_reply reply = {.head = head};
        rawhttp_set_replies(S, &reply, 1);
        free(head);
        const char *const extra[] = {forms[i], NULL};
        char *err = NULL;
        cr_assert_eq(relay_run_at(&R, T0 + (long long)i * 7200, &err), 1);
        assert_redacted_echo(err, i, "the run's stderr");
        assert_none(err, creds, "run's stderr");
        assert_none(err, extra, "run's stderr");
        free(err);
        char *raw = read_file_str(R.state_path);
        char *state = json_decoded(raw);
        assert_redacted_echo(state, i, "the state");
        assert_none(state, creds, "state, decoded");
        assert_none(raw, extra, "state");
        free(state);
        free(raw);
        char *now = xasprintf("%lld", T0 + (long long)i * 7200 + 10);
        char *status = wsrelay("status", "--now", now);
        assert_redacted_echo(status, i, "status");
        assert_none(status, creds, "status");
        free(status);
        free(now);
    }
    for (size_t i = 0; i < n_forms; i++)
        free(forms[i]);
    free(key_pct);
}

/* The next try of the only outbox item. */
static long long next_try(void)
{
    char *raw = read_file_str(R.state_path);
    struct json_object *st = json_tokener_parse(raw), *outbox, *v;
    cr_assert(json_object_object_get_ex(st, "outbox", &outbox));
    cr_assert_eq(json_object_array_length(outbox), 1, "%s", raw);
    cr_assert(json_object_object_get_ex(json_object_array_get_idx(outbox, 0), "next_try", &v));
    long long t = json_object_get_int64(v);
    json_object_put(st);
    free(raw);
    return t;
}

/* An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") of `t`, in `out`. */
static void http_date(char *out, size_t size, long long t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    snprintf(out, size, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* A 429 whose Retry-After is `value`, with a Date header of `date` (NULL:
 * none). */
static void answer_429(const char *value, const char *date)
{
    char *head = xasprintf("HTTP/1.1 429 Too Many Requests\r\n%s%s%sRetry-After: %s\r\n"
                           "Content-Length: 4\r\n\r\nslow",
                           date ? "Date: " : "", date ? date : "", date ? "\r\n" : "", value);
    struct rawhttp_reply reply = {.head = head};
    rawhttp_set_replies(S, &reply, 1);
    free(head);
}

Test(fault_http, a_retry_after_beyond_a_day_waits_a_day)
{
    static const struct rawhttp_reply placeholder = {.head = "HTTP/1.1 500 x\r\n\r\n"};
    S = rawhttp_start(&placeholder, 1, 120);
    config_hook();
    answer_429("999999", NULL);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert_eq(next_try(), T0 + 86400, "a day away, not ignored:\n%s", err);
    cr_assert(strstr(err, "999999"), "the cap is logged:\n%s", err);
    free(err);
    /* Not before: a run an hour later leaves it alone. */
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 0);
    cr_assert_eq(rawhttp_count(S), 1);
}

Test(fault_http, a_retry_after_date_counts_from_the_replys_date_and_is_capped_too)
{
    static const struct rawhttp_reply placeholder = {.head = "HTTP/1.1 500 x\r\n\r\n"};
    S = rawhttp_start(&placeholder, 1, 120);
    config_hook();
    /* The far end's clock is a year behind the run's: the wait is counted
     * on its clock, from its Date header. */
    long long far = T0 - 365LL * 86400;
    char date[64], until[64];
    http_date(date, sizeof date, far);
    http_date(until, sizeof until, far + 7200);
    answer_429(until, date);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    cr_assert_eq(next_try(), T0 + 7200);
    http_date(until, sizeof until, far + 30 * 86400);
    answer_429(until, date);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 7200, &err), 1);
    cr_assert_eq(next_try(), T0 + 7200 + 86400, "capped at a day:\n%s", err);
    free(err);
}
