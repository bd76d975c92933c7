/* The PagerDuty and Opsgenie receivers against local servers that check
 * each request as the services do (tests/support/oncall.c): the exact
 * JSON of each step of an incident's alert, one key for all of them,
 * lengths cut to the services' limits, severity and priority from the
 * rule, the services' answers (202, 400, 401, 422, 429, 5xx) and no
 * secret in any error; and the configuration keys. */
#include "config.h"
#include "notify/notify.h"
#include "notify/oncall.h"
#include "oncall.h"
#include "support.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUTING_KEY "R0UTINGkey0123456789abcdefABCDEF" /* 32 characters, as PagerDuty's */
#define GENIE_KEY "eb243592-faa2-4ba2-a551-1afdf565c889"

static struct oncall *S;

/* Strings of the receivers the tests build, freed after each test. */
static char *kept[64];
static size_t n_kept;

static char *keep(const char *s)
{
    cr_assert_lt(n_kept, sizeof kept / sizeof kept[0]);
    return kept[n_kept++] = xstrdup(s);
}

static void teardown(void)
{
    oncall_stop(S);
    S = NULL;
    while (n_kept > 0)
        free(kept[--n_kept]);
}

TestSuite(oncall, .fini = teardown, .timeout = 60);

/* A freezer's alarm on ch1 (owning its strings), routed by rule "cold"
 * with `severity` (NULL: none). */
static struct event alarm_of(const char *severity)
{
    struct event ev = {
        .account = xstrdup("lab"),
        .serial = xstrdup("5214000A"),
        .model = xstrdup("TR-71A"),
        .name = xstrdup("Freezer 3"),
        .base_serial = xstrdup("5214000A"),
        .base_model = xstrdup("TR-71A"),
        .base_name = xstrdup("Freezer 3"),
        .unixtime = 1795000300,
        .kind = xstrdup("ch1"),
        .text = xstrdup("CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)"),
        .state = xstrdup("alarm"),
        .value = xstrdup("-65.0°C"),
        .limit = xstrdup("-70.0°C"),
        .channel_name = xstrdup("Temperature"),
        .channel_unit = xstrdup("°C"),
        .utc_offset = 540,
        .rule = xstrdup("cold"),
        .severity = xstrdup_or_null(severity),
    };
    return ev;
}

/* Makes `ev` a message of incident 12 (key 5214000A/ch1) with `notice`,
 * acknowledged by `by` with `note` when not NULL. */
static void notice_of(struct event *ev, const char *notice, const char *by, const char *note)
{
    struct json_object *snap = json_object_new_object();
    json_object_object_add(snap, "id", json_object_new_int(12));
    json_object_object_add(snap, "key", json_object_new_string("5214000A/ch1"));
    json_object_object_add(snap, "notice", json_object_new_string(notice));
    if (by) {
        json_object_object_add(snap, "acknowledged_by", json_object_new_string(by));
        json_object_object_add(snap, "acknowledged_note",
                               note ? json_object_new_string(note) : NULL);
    }
    json_object_put(ev->incident);
    ev->incident = snap;
}

static struct receiver_conf pagerduty(enum pagerduty_severity severity)
{
    struct receiver_conf r = {.name = keep("pd"), .type = RECEIVER_PAGERDUTY, .timeout = 10};
    r.pagerduty.routing_key = keep(ROUTING_KEY);
    r.pagerduty.severity = severity;
    r.pagerduty.base_url = keep(oncall_url(S));
    return r;
}

static struct receiver_conf opsgenie(const char *key)
{
    struct receiver_conf r = {.name = keep("og"), .type = RECEIVER_OPSGENIE, .timeout = 10};
    r.opsgenie.api_key = keep(key);
    r.opsgenie.region = OPSGENIE_EU;
    r.opsgenie.base_url = keep(oncall_url(S));
    return r;
}

/* Sends `ev` alone to `r`; returns notify_send's answer. */
static int send_one(const struct receiver_conf *r, const struct event *ev,
                    struct notify_result *res, struct err *e)
{
    struct notify_message m = {.events = ev, .n = 1, .now = 1795000400};
    return notify_send(NULL, r, &m, res, e);
}

/* The body of the i-th request the server got. */
static char *body_of(size_t i)
{
    struct oncall_request *rq = oncall_request(S, i);
    cr_assert_not_null(rq, "no request %zu", i);
    char *body = xstrdup(rq->body);
    oncall_request_free(rq);
    return body;
}

static void expect_body(size_t i, const char *want)
{
    char *got = body_of(i);
    cr_assert_str_eq(got, want);
    free(got);
}

static void expect_sent(const struct receiver_conf *r, const struct event *ev)
{
    struct notify_result res;
    struct err e = {0};
    cr_assert_eq(send_one(r, ev, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(res.status, 202, "%ld %s", res.status, res.answer);
}

#define PD_TRIGGER                                                                                 \
    "{\"routing_key\":\"" ROUTING_KEY "\",\"event_action\":\"trigger\","                           \
    "\"dedup_key\":\"wsrelay:5214000A:ch1:12\",\"payload\":{\"summary\":\"Freezer 3: CH1 Upper "   \
    "Limit Exceeded -65.0°C (limit -70.0°C)\",\"source\":\"Freezer 3 (5214000A)\","              \
    "\"severity\":\"critical\",\"timestamp\":\"2026-11-18T11:11:40Z\",\"component\":\"ch1\","      \
    "\"custom_details\":{\"device\":\"Freezer 3\",\"serial\":\"5214000A\",\"account\":\"lab\","    \
    "\"kind\":\"ch1\",\"channel\":\"Temperature\",\"value\":\"-65.0°C\",\"limit\":\"-70.0°C\","  \
    "\"rule\":\"cold\",\"incident\":\"12\",\"time\":\"2026-11-18T11:11:40Z\"}},"                   \
    "\"client\":\"wsrelay\"}"

Test(oncall, pagerduty_triggers_acknowledges_and_resolves_one_dedup_key)
{
    S = oncall_start(ONCALL_PAGERDUTY, ROUTING_KEY);
    struct receiver_conf r = pagerduty(PAGERDUTY_ERROR);
    struct event ev = alarm_of("critical");
    notice_of(&ev, "opened", NULL, NULL);
    expect_sent(&r, &ev);
    notice_of(&ev, "reminder", NULL, NULL); /* PagerDuty pages again by itself */
    {
        struct notify_result res;
        struct err e = {0};
        cr_assert_eq(send_one(&r, &ev, &res, &e), 0, "%s", e.msg);
        cr_assert_eq(oncall_count(S), 1, "a reminder went to PagerDuty");
    }
    notice_of(&ev, "acknowledged", "alice", "moving samples");
    expect_sent(&r, &ev);
    notice_of(&ev, "resolved", NULL, NULL);
    expect_sent(&r, &ev);
    cr_assert_eq(oncall_count(S), 3);
    expect_body(0, PD_TRIGGER);
    expect_body(1, "{\"routing_key\":\"" ROUTING_KEY "\",\"event_action\":\"acknowledge\","
                   "\"dedup_key\":\"wsrelay:5214000A:ch1:12\"}");
    expect_body(2, "{\"routing_key\":\"" ROUTING_KEY "\",\"event_action\":\"resolve\","
                   "\"dedup_key\":\"wsrelay:5214000A:ch1:12\"}");
    char *state = oncall_alert_state(S, "wsrelay:5214000A:ch1:12");
    cr_assert_str_eq(state, "resolved");
    cr_assert_eq(oncall_alerts(S), 1);
    free(state);
    struct oncall_request *rq = oncall_request(S, 0);
    cr_assert_str_eq(rq->path, "/v2/enqueue");
    cr_assert_null(rq->authorization, "the Events API takes its key in the body only");
    oncall_request_free(rq);
    event_clear(&ev);
}

Test(oncall, pagerduty_closing_resolves_and_an_escalation_triggers)
{
    S = oncall_start(ONCALL_PAGERDUTY, ROUTING_KEY);
    struct receiver_conf r = pagerduty(PAGERDUTY_ERROR);
    struct event ev = alarm_of("critical");
    /* escalated to this receiver: the first it hears of the incident */
    notice_of(&ev, "escalation", NULL, NULL);
    expect_sent(&r, &ev);
    notice_of(&ev, "closed", NULL, NULL);
    expect_sent(&r, &ev);
    expect_body(0, PD_TRIGGER);
    char *state = oncall_alert_state(S, "wsrelay:5214000A:ch1:12");
    cr_assert_str_eq(state, "resolved");
    free(state);
    event_clear(&ev);
}

Test(oncall, an_event_outside_incidents_triggers_an_alert_of_its_own)
{
    S = oncall_start(ONCALL_PAGERDUTY, ROUTING_KEY);
    struct receiver_conf r = pagerduty(PAGERDUTY_WARNING);
    struct event ev = alarm_of(NULL);
    free(ev.kind);
    ev.kind = xstrdup("gap");
    expect_sent(&r, &ev);
    char *body = body_of(0);
    cr_assert(strstr(body, "\"event_action\":\"trigger\",\"dedup_key\":\"wsrelay:5214000A:"
                           "1795000300:gap\""),
              "%s", body);
    cr_assert(strstr(body, "\"severity\":\"warning\""), "%s", body);
    cr_assert_null(strstr(body, "incident"), "%s", body);
    free(body);
    event_clear(&ev);
}

/* The severity PagerDuty gets for a rule's label, the receiver's being
 * `fallback`. */
static void expect_severity(const char *label, enum pagerduty_severity fallback, const char *want)
{
    struct receiver_conf r = pagerduty(fallback);
    struct event ev = alarm_of(label);
    notice_of(&ev, "opened", NULL, NULL);
    size_t i = oncall_count(S);
    expect_sent(&r, &ev);
    char *body = body_of(i);
    char *needle = xasprintf("\"severity\":\"%s\"", want);
    cr_assert(strstr(body, needle), "label %s: %s", label ? label : "(none)", body);
    free(needle);
    free(body);
    event_clear(&ev);
}

Test(oncall, pagerduty_severity_is_the_rules_else_the_receivers_else_error)
{
    S = oncall_start(ONCALL_PAGERDUTY, ROUTING_KEY);
    expect_severity("critical", PAGERDUTY_INFO, "critical");
    expect_severity("Warning", PAGERDUTY_INFO, "warning");
    expect_severity("info", PAGERDUTY_CRITICAL, "info");
    expect_severity("error", PAGERDUTY_INFO, "error");
    expect_severity("high", PAGERDUTY_WARNING, "warning");
    expect_severity(NULL, PAGERDUTY_INFO, "info");
    expect_severity(NULL, PAGERDUTY_ERROR, "error");
}

/* `n` copies of "℃", three bytes each. */
static char *long_text(size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++)
        buf_puts(&b, "℃");
    return buf_steal(&b);
}

/* The characters of UTF-8 `s`. */
static size_t chars_in(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The string at `path` ("payload.summary") of the i-th request's body. */
static char *member_of(size_t i, const char *first, const char *second)
{
    char *body = body_of(i);
    struct json_object *doc = json_tokener_parse(body), *v = NULL;
    cr_assert(json_object_object_get_ex(doc, first, &v), "%s", body);
    if (second)
        cr_assert(json_object_object_get_ex(v, second, &v), "%s", body);
    char *text = xstrdup(json_object_get_string(v));
    json_object_put(doc);
    free(body);
    return text;
}

Test(oncall, long_texts_are_cut_to_the_services_limits)
{
    S = oncall_start(ONCALL_PAGERDUTY, ROUTING_KEY);
    struct receiver_conf r = pagerduty(PAGERDUTY_ERROR);
    struct event ev = alarm_of(NULL);
    free(ev.text);
    ev.text = long_text(3000);
    notice_of(&ev, "opened", NULL, NULL);
    expect_sent(&r, &ev); /* the server refuses a summary over 1,024 */
    char *summary = member_of(0, "payload", "summary");
    cr_assert_eq(chars_in(summary), 1024);
    cr_assert_eq(strncmp(summary, "Freezer 3: ℃℃", strlen("Freezer 3: ℃℃")), 0);
    cr_assert_str_eq(summary + strlen(summary) - strlen("℃…"), "℃…");
    free(summary);
    oncall_stop(S);
    S = oncall_start(ONCALL_OPSGENIE, GENIE_KEY);
    struct receiver_conf og = opsgenie(GENIE_KEY);
    free(ev.text);
    ev.text = long_text(20000);
    expect_sent(&og, &ev); /* the server refuses a message over 130 */
    char *message = member_of(0, "message", NULL);
    char *description = member_of(0, "description", NULL);
    cr_assert_eq(chars_in(message), 130);
    cr_assert_eq(chars_in(description), 15000);
    cr_assert_str_eq(message + strlen(message) - strlen("℃…"), "℃…");
    free(message);
    free(description);
    event_clear(&ev);
}

#define OG_CREATE                                                                                  \
    "{\"message\":\"Freezer 3: CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)\","              \
    "\"alias\":\"wsrelay:5214000A:ch1:12\",\"description\":\"CH1 Upper Limit Exceeded -65.0°C "   \
    "(limit -70.0°C)\",\"entity\":\"Freezer 3 (5214000A)\",\"source\":\"wsrelay\","               \
    "\"priority\":\"P2\",\"details\":{\"device\":\"Freezer 3\",\"serial\":\"5214000A\","           \
    "\"account\":\"lab\",\"kind\":\"ch1\",\"channel\":\"Temperature\",\"value\":\"-65.0°C\","     \
    "\"limit\":\"-70.0°C\",\"rule\":\"cold\",\"incident\":\"12\","                                \
    "\"time\":\"2026-11-18T11:11:40Z\"}}"

/* The path, query and authorization of the i-th request. */
static void expect_request(size_t i, const char *path, const char *query)
{
    struct oncall_request *rq = oncall_request(S, i);
    cr_assert_str_eq(rq->method, "POST");
    cr_assert_str_eq(rq->path, path);
    if (query)
        cr_assert_str_eq(rq->query, query);
    else
        cr_assert_null(rq->query);
    cr_assert_str_eq(rq->authorization, "GenieKey " GENIE_KEY);
    oncall_request_free(rq);
}

Test(oncall, opsgenie_creates_acknowledges_and_closes_one_alias)
{
    S = oncall_start(ONCALL_OPSGENIE, GENIE_KEY);
    struct receiver_conf r = opsgenie(GENIE_KEY);
    struct event ev = alarm_of("error");
    notice_of(&ev, "opened", NULL, NULL);
    expect_sent(&r, &ev);
    notice_of(&ev, "reminder", NULL, NULL);
    struct notify_result res;
    struct err e = {0};
    cr_assert_eq(send_one(&r, &ev, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(oncall_count(S), 1, "a reminder went to Opsgenie");
    notice_of(&ev, "acknowledged", "alice", "moving samples");
    expect_sent(&r, &ev);
    free(ev.text);
    ev.text = xstrdup("CH1 Measurement Recovery -78.0°C");
    notice_of(&ev, "resolved", NULL, NULL);
    expect_sent(&r, &ev);
    cr_assert_eq(oncall_count(S), 3);
    expect_body(0, OG_CREATE);
    expect_body(1, "{\"user\":\"alice\",\"source\":\"wsrelay\",\"note\":\"moving samples\"}");
    expect_body(2, "{\"user\":\"wsrelay\",\"source\":\"wsrelay\",\"note\":\"CH1 Measurement "
                   "Recovery -78.0°C\"}");
    expect_request(0, "/v2/alerts", NULL);
    expect_request(1, "/v2/alerts/wsrelay:5214000A:ch1:12/acknowledge", "alias");
    expect_request(2, "/v2/alerts/wsrelay:5214000A:ch1:12/close", "alias");
    char *state = oncall_alert_state(S, "wsrelay:5214000A:ch1:12");
    cr_assert_str_eq(state, "closed");
    free(state);
    event_clear(&ev);
}

/* The priority Opsgenie gets for a rule's severity label. */
static void expect_priority(const char *label, const char *want)
{
    struct receiver_conf r = opsgenie(GENIE_KEY);
    struct event ev = alarm_of(label);
    size_t i = oncall_count(S);
    expect_sent(&r, &ev);
    char *priority = member_of(i, "priority", NULL);
    cr_assert_str_eq(priority, want, "label %s", label ? label : "(none)");
    free(priority);
    event_clear(&ev);
}

Test(oncall, opsgenie_priority_follows_the_severity)
{
    S = oncall_start(ONCALL_OPSGENIE, GENIE_KEY);
    expect_priority("critical", "P1");
    expect_priority("error", "P2");
    expect_priority("warning", "P3");
    expect_priority("INFO", "P5");
    expect_priority("high", "P3");
    expect_priority(NULL, "P3");
}

/* Sends an alarm to `r` and expects a failure: `permanent`, the far end's
 * status, and an error holding `words` and neither `secret` nor any
 * 8 bytes of it. */
static void expect_failure(const struct receiver_conf *r, long status, bool permanent,
                           long retry_after, const char *words, const char *secret)
{
    struct event ev = alarm_of(NULL);
    notice_of(&ev, "opened", NULL, NULL);
    struct notify_result res;
    struct err e = {0};
    cr_assert_eq(send_one(r, &ev, &res, &e), -1);
    cr_assert_eq(res.status, status, "%ld: %s", res.status, e.msg);
    cr_assert_eq(res.permanent, permanent, "%s", e.msg);
    cr_assert_eq(res.retry_after, retry_after, "%s", e.msg);
    cr_assert(strstr(e.msg, words), "%s", e.msg);
    for (size_t i = 0; i + 8 <= strlen(secret); i++) {
        char run[9];
        memcpy(run, secret + i, 8);
        run[8] = '\0';
        cr_assert_null(strstr(e.msg, run), "a secret in the error: %s", e.msg);
        cr_assert_null(strstr(res.answer, run), "a secret in the answer: %s", res.answer);
    }
    event_clear(&ev);
}

Test(oncall, pagerduty_answers_give_up_or_wait_as_documented)
{
    S = oncall_start(ONCALL_PAGERDUTY, ROUTING_KEY);
    struct receiver_conf r = pagerduty(PAGERDUTY_ERROR);
    /* a key of the wrong length: PagerDuty's own 400 */
    r.pagerduty.routing_key = keep("R0UTINGkey0123456789abcdef");
    expect_failure(&r, 400, true, 0,
                   "HTTP 400: invalid event: Event object is invalid: Length of 'routing_key' is "
                   "incorrect (should be 32 characters)",
                   "R0UTINGkey0123456789abcdef");
    r.pagerduty.routing_key = keep(ROUTING_KEY);
    /* a far end that quotes the key back */
    oncall_push_reply(S, 400,
                      "{\"status\":\"invalid event\",\"message\":\"Event object is invalid\","
                      "\"errors\":[\"Invalid routing key " ROUTING_KEY "\"]}",
                      0);
    expect_failure(&r, 400, true, 0, "Invalid routing key [redacted]", ROUTING_KEY);
    oncall_push_reply(S, 429, "{\"status\":\"throttle event\"}", 30);
    expect_failure(&r, 429, false, 30, "HTTP 429", ROUTING_KEY);
    oncall_push_reply(S, 503, "{}", 0);
    expect_failure(&r, 503, false, 0, "HTTP 503", ROUTING_KEY);
    cr_assert_eq(oncall_alerts(S), 0);
}

Test(oncall, opsgenie_answers_give_up_or_wait_as_documented)
{
    S = oncall_start(ONCALL_OPSGENIE, GENIE_KEY);
    struct receiver_conf r = opsgenie("0f0f0f0f-wrong-key-0f0f0f0f");
    expect_failure(&r, 401, true, 0, "HTTP 401: Could not authenticate",
                   "0f0f0f0f-wrong-key-0f0f0f0f");
    r = opsgenie(GENIE_KEY);
    oncall_push_reply(S, 422,
                      "{\"message\":\"Request body is not processable. Please check the "
                      "errors.\",\"errors\":{\"message\":\"Message can not be empty.\"},"
                      "\"took\":0.001,\"requestId\":\"x\"}",
                      0);
    expect_failure(&r, 422, true, 0,
                   "HTTP 422: Request body is not processable. Please check the errors.: "
                   "message: Message can not be empty.",
                   GENIE_KEY);
    oncall_push_reply(S, 403, "{\"message\":\"Key GenieKey " GENIE_KEY " may not do this\"}", 0);
    expect_failure(&r, 403, true, 0, "HTTP 403", GENIE_KEY);
    oncall_push_reply(S, 429, "{\"message\":\"You are making too many requests!\"}", 12);
    expect_failure(&r, 429, false, 12, "HTTP 429", GENIE_KEY);
    oncall_push_reply(S, 500, "{}", 0);
    expect_failure(&r, 500, false, 0, "HTTP 500", GENIE_KEY);
    cr_assert_eq(oncall_alerts(S), 0);
}

/* ---- the configuration ---- */

static char *dir;

static int load(struct config **cfg, const char *receivers, struct err *e)
{
    char *rk = xasprintf("%s/rk", dir), *ok = xasprintf("%s/ok", dir);
    char *path = xasprintf("%s/wsrelay.yaml", dir);
    FILE *f = fopen(rk, "w");
    fputs(ROUTING_KEY "\n", f);
    fclose(f);
    f = fopen(ok, "w");
    fputs(GENIE_KEY "\n", f);
    fclose(f);
    chmod(rk, 0600);
    chmod(ok, 0600);
    f = fopen(path, "w");
    fprintf(f,
            "accounts:\n"
            "  - {name: lab, api_key: k, login_id: tbzz9999, login_pass: p}\n"
            "receivers:\n%s",
            receivers);
    fclose(f);
    chmod(path, 0600);
    cr_assert_eq(chdir(dir), 0);
    int rc = config_load(cfg, path, e);
    free(rk);
    free(ok);
    free(path);
    return rc;
}

Test(oncall, configuration_keys_and_their_defaults)
{
    dir = test_tmpdir();
    struct config *cfg = NULL;
    struct err e = {0};
    cr_assert_eq(load(&cfg,
                      "  - {name: pd, pagerduty: {routing_key_file: rk}}\n"
                      "  - name: og\n"
                      "    opsgenie: {api_key_file: ok, region: eu, base_url: "
                      "\"https://api.atlassian.com/jsm/ops/integration/\"}\n"
                      "  - {name: og2, opsgenie: {api_key_file: ok}}\n",
                      &e),
                 0, "%s", e.msg);
    const struct receiver_conf *pd = config_receiver(cfg, "pd");
    const struct receiver_conf *og = config_receiver(cfg, "og");
    const struct receiver_conf *og2 = config_receiver(cfg, "og2");
    cr_assert_eq(pd->type, RECEIVER_PAGERDUTY);
    cr_assert_str_eq(pd->pagerduty.routing_key, ROUTING_KEY);
    cr_assert_eq(pd->pagerduty.severity, PAGERDUTY_ERROR);
    cr_assert_str_eq(pd->pagerduty.base_url, "https://events.pagerduty.com");
    cr_assert_eq(og->type, RECEIVER_OPSGENIE);
    cr_assert_str_eq(og->opsgenie.api_key, GENIE_KEY);
    cr_assert_eq(og->opsgenie.region, OPSGENIE_EU);
    cr_assert_str_eq(og->opsgenie.base_url, "https://api.atlassian.com/jsm/ops/integration");
    cr_assert_eq(og2->opsgenie.region, OPSGENIE_US);
    cr_assert_null(og2->opsgenie.base_url);
    config_free(cfg);
    cfg = NULL;
    cr_assert_eq(
        load(&cfg, "  - {name: pd, pagerduty: {routing_key_file: rk, severity: high}}\n", &e), -1);
    cr_assert(strstr(e.msg, "wsrelay.yaml:4:") && strstr(e.msg, "critical, error, warning"), "%s",
              e.msg);
    cr_assert_eq(load(&cfg,
                      "  - {name: og, opsgenie: {api_key_file: ok, base_url: "
                      "\"http://api.opsgenie.com\"}}\n",
                      &e),
                 -1);
    cr_assert(strstr(e.msg, "wsrelay.yaml:4:"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, GENIE_KEY), "%s", e.msg);
    cr_assert_eq(load(&cfg, "  - {name: og, opsgenie: {region: eu}}\n", &e), -1);
    cr_assert(strstr(e.msg, "api_key_file"), "%s", e.msg);
    test_rmtree(dir);
    free(dir);
}

/* Sends an alarm to `r` through a proxy on 127.0.0.1 (the server, which
 * refuses the tunnel): nothing leaves this machine, and the server sees
 * where the request was going. Returns the host and port it named. */
static char *tunnel_of(const struct receiver_conf *r)
{
    struct event ev = alarm_of(NULL);
    struct notify_result res;
    struct err e = {0};
    size_t i = oncall_count(S);
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");
    setenv("https_proxy", oncall_url(S), 1);
    cr_assert_eq(send_one(r, &ev, &res, &e), -1);
    unsetenv("https_proxy");
    cr_assert_eq(oncall_count(S), i + 1, "%s", e.msg);
    struct oncall_request *rq = oncall_request(S, i);
    cr_assert_str_eq(rq->method, "CONNECT");
    char *where = xstrdup(rq->path);
    oncall_request_free(rq);
    event_clear(&ev);
    return where;
}

Test(oncall, the_services_addresses_by_default)
{
    S = oncall_start(ONCALL_OPSGENIE, GENIE_KEY);
    struct receiver_conf og = opsgenie(GENIE_KEY);
    og.opsgenie.base_url = NULL;
    char *where = tunnel_of(&og);
    cr_assert_str_eq(where, "api.eu.opsgenie.com:443");
    free(where);
    og.opsgenie.region = OPSGENIE_US;
    where = tunnel_of(&og);
    cr_assert_str_eq(where, "api.opsgenie.com:443");
    free(where);
    struct receiver_conf pd = pagerduty(PAGERDUTY_ERROR);
    pd.pagerduty.base_url = keep("https://events.pagerduty.com");
    where = tunnel_of(&pd);
    cr_assert_str_eq(where, "events.pagerduty.com:443");
    free(where);
}
