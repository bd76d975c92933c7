/* The on-call services through real runs: a night with one alarm, its
 * acknowledgement with `wsrelay ack` and its recovery, `wsrelay run`
 * against the simulator with a PagerDuty and an Opsgenie receiver beside
 * the webhook. PagerDuty sees trigger, acknowledge and resolve with one
 * dedup_key; Opsgenie create, acknowledge and close with one alias; a 429
 * delivers once when the far end takes it; a 400 is given up for that
 * receiver only. */
#include "oncall.h"
#include "proc.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define T0 1795000000LL
#define SERIAL "5214000A"
#define ALARM_AT (T0 + 300)    /* the freezer's alarm, logged 100 s later */
#define RECOVER_AT (T0 + 2400) /* its recovery, logged 100 s later */
#define ROUTING_KEY "R0UTINGkey0123456789abcdefABCDEF"
#define GENIE_KEY "eb243592-faa2-4ba2-a551-1afdf565c889"
#define KEY "wsrelay:" SERIAL ":ch1:1" /* the first incident's dedup_key and alias */

static struct relay R;
static struct oncall *PD, *OG;

static void teardown(void)
{
    oncall_stop(PD);
    oncall_stop(OG);
    relay_stop(&R);
}

TestSuite(oncall_night, .fini = teardown, .timeout = 180);

/* A standalone freezer uploading a reading a minute, -80 but -65 from
 * ALARM_AT to RECOVER_AT, with the alarm and the recovery in its log. */
static char *scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_puts(&b, "{\"serial\": \"" SERIAL "\", \"model\": \"TR-71A\", \"name\": \"Freezer 3\","
                 " \"time_diff\": 540, \"channels\": [{\"name\": \"Temperature\", \"unit\": "
                 "\"°C\", \"value\": \"-80.0\"}], \"readings\": [");
    for (long long t = T0 - 1800; t <= T0 + 4000; t += 60)
        buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                   t > T0 - 1800 ? "," : "", t + 20, t,
                   t >= ALARM_AT && t < RECOVER_AT ? "-65.0" : "-80.0");
    buf_printf(&b,
               "], \"alerts\": [{\"unixtime\": %lld, \"logged_at\": %lld, \"ch1\": \"CH1 Upper "
               "Limit Exceeded -65.0°C (limit -70.0°C)\"}, {\"unixtime\": %lld, \"logged_at\": "
               "%lld, \"ch1\": \"CH1 Measurement Recovery -80.0°C\"}]}]}]}",
               ALARM_AT, ALARM_AT + 100, RECOVER_AT, RECOVER_AT + 100);
    return buf_steal(&b);
}

/* Writes `text` to DIR/NAME, mode 0600. */
static void put_secret(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", R.dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, 0600);
    free(path);
}

/* The relay with incidents, the webhook, and PagerDuty (whose routing
 * key file holds `routing_key`) and Opsgenie on their servers. */
static void start(const char *routing_key)
{
    char *scen = scenario();
    relay_start(&R, scen);
    free(scen);
    PD = oncall_start(ONCALL_PAGERDUTY, ROUTING_KEY);
    OG = oncall_start(ONCALL_OPSGENIE, GENIE_KEY);
    put_secret("pd.key", routing_key);
    put_secret("og.key", GENIE_KEY "\n");
    char *receivers =
        xasprintf("  - name: hook\n"
                  "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: \"Bearer t0ken\"}}\n"
                  "  - name: pd\n"
                  "    pagerduty: {routing_key_file: \"@DIR@/pd.key\", base_url: \"%s\"}\n"
                  "  - name: og\n"
                  "    opsgenie: {api_key_file: \"@DIR@/og.key\", region: eu, base_url: \"%s\"}\n",
                  oncall_url(PD), oncall_url(OG));
    R.incidents = true;
    relay_config(&R, NULL, receivers);
    free(receivers);
}

static void run_at(long long t)
{
    char *err = NULL;
    int status = relay_run_at(&R, t, &err);
    cr_log_info("run at T0+%lld: %d\n%s", t - T0, status, err);
    free(err);
}

/* The member `name` of the i-th request's body to `o` ("" when none). */
static char *member(struct oncall *o, size_t i, const char *name)
{
    struct oncall_request *rq = oncall_request(o, i);
    cr_assert_not_null(rq, "no request %zu", i);
    struct json_object *doc = json_tokener_parse(rq->body), *v = NULL;
    char *text =
        xstrdup(json_object_object_get_ex(doc, name, &v) && v ? json_object_get_string(v) : "");
    json_object_put(doc);
    oncall_request_free(rq);
    return text;
}

/* The i-th request to PagerDuty was `action` of KEY and was taken. */
static void expect_pd(size_t i, const char *action, int status)
{
    char *got = member(PD, i, "event_action"), *dedup = member(PD, i, "dedup_key");
    struct oncall_request *rq = oncall_request(PD, i);
    cr_assert_str_eq(got, action, "request %zu", i);
    cr_assert_str_eq(dedup, KEY, "request %zu", i);
    cr_assert_eq(rq->status, status, "request %zu: %d %s", i, rq->status, rq->answer);
    oncall_request_free(rq);
    free(got);
    free(dedup);
}

/* The i-th request to Opsgenie went to `path` and was taken (202). */
static void expect_og(size_t i, const char *path)
{
    struct oncall_request *rq = oncall_request(OG, i);
    cr_assert_not_null(rq, "no request %zu", i);
    cr_assert_str_eq(rq->path, path, "request %zu", i);
    cr_assert_eq(rq->status, 202, "request %zu: %d %s", i, rq->status, rq->answer);
    oncall_request_free(rq);
}

/* `wsrelay ack 1` by alice at `t`. */
static void ack_at(long long t)
{
    char now[24];
    snprintf(now, sizeof now, "%lld", t);
    struct cmd_result res = wsrelay_cmd(30, "-c", R.config_path, "ack", "1", "--by", "alice",
                                        "--note", "moving samples", "--now", now, NULL);
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    cmd_result_free(&res);
}

Test(oncall_night, an_alarm_its_ack_and_its_recovery_reach_both_services_by_one_key)
{
    start(ROUTING_KEY "\n");
    run_at(T0 + 600);
    cr_assert_eq(oncall_count(PD), 1);
    cr_assert_eq(oncall_count(OG), 1);
    ack_at(T0 + 900);
    run_at(T0 + 1200);
    run_at(T0 + 1800); /* nothing new: nothing sent */
    cr_assert_eq(oncall_count(PD), 2);
    cr_assert_eq(oncall_count(OG), 2);
    run_at(RECOVER_AT + 600);
    cr_assert_eq(oncall_count(PD), 3, "PagerDuty got %zu requests", oncall_count(PD));
    cr_assert_eq(oncall_count(OG), 3, "Opsgenie got %zu requests", oncall_count(OG));
    expect_pd(0, "trigger", 202);
    expect_pd(1, "acknowledge", 202);
    expect_pd(2, "resolve", 202);
    expect_og(0, "/v2/alerts");
    expect_og(1, "/v2/alerts/" KEY "/acknowledge");
    expect_og(2, "/v2/alerts/" KEY "/close");
    char *alias = member(OG, 0, "alias"), *user = member(OG, 1, "user");
    char *note = member(OG, 1, "note");
    cr_assert_str_eq(alias, KEY);
    cr_assert_str_eq(user, "alice");
    cr_assert_str_eq(note, "moving samples");
    free(alias);
    free(user);
    free(note);
    char *pd_state = oncall_alert_state(PD, KEY), *og_state = oncall_alert_state(OG, KEY);
    cr_assert_str_eq(pd_state, "resolved");
    cr_assert_str_eq(og_state, "closed");
    cr_assert_eq(oncall_alerts(PD), 1);
    cr_assert_eq(oncall_alerts(OG), 1);
    free(pd_state);
    free(og_state);
}

Test(oncall_night, a_429_delivers_once_when_the_service_takes_it)
{
    start(ROUTING_KEY "\n");
    oncall_push_reply(PD, 429, "{\"status\":\"throttle event\"}", 60);
    oncall_push_reply(OG, 429, "{\"message\":\"You are making too many requests!\"}", 60);
    run_at(T0 + 600);
    cr_assert_eq(oncall_count(PD), 1);
    cr_assert_eq(oncall_count(OG), 1);
    cr_assert_eq(oncall_alerts(PD), 0);
    run_at(T0 + 1200);
    run_at(T0 + 1800);
    cr_assert_eq(oncall_count(PD), 2, "PagerDuty got %zu requests", oncall_count(PD));
    cr_assert_eq(oncall_count(OG), 2, "Opsgenie got %zu requests", oncall_count(OG));
    expect_pd(0, "trigger", 429);
    expect_pd(1, "trigger", 202);
    expect_og(1, "/v2/alerts");
    cr_assert_eq(oncall_alerts(PD), 1);
    cr_assert_eq(oncall_alerts(OG), 1);
}

Test(oncall_night, a_400_gives_up_for_that_receiver_only)
{
    start("R0UTINGkey0123456789abcdef\n"); /* 26 characters: PagerDuty's 400 */
    run_at(T0 + 600);
    run_at(T0 + 1200);
    run_at(T0 + 1800);
    cr_assert_eq(oncall_count(PD), 1, "a refused trigger was sent again");
    struct oncall_request *rq = oncall_request(PD, 0);
    cr_assert_eq(rq->status, 400);
    cr_assert(strstr(rq->answer, "Length of 'routing_key' is incorrect"), "%s", rq->answer);
    oncall_request_free(rq);
    /* Opsgenie got the alarm, and 20 min on wsrelay's own word that pd
     * fails: an alert of its own, without the key it quotes */
    cr_assert_eq(oncall_count(OG), 2);
    expect_og(0, "/v2/alerts");
    expect_og(1, "/v2/alerts");
    char *alias = member(OG, 1, "alias"), *description = member(OG, 1, "description");
    cr_assert(strstr(alias, ":relay"), "%s", alias);
    cr_assert(strstr(description, "receiver 'pd'"), "%s", description);
    cr_assert_null(strstr(description, "R0UTINGkey01"), "%s", description);
    free(alias);
    free(description);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(occurrences(keys, SERIAL "/1795000300/ch1"), 1, "%s", keys);
    free(keys);
    struct cmd_result res = wsrelay_cmd(30, "-c", R.config_path, "status", NULL);
    cr_assert(strstr(res.out, "pd"), "%s", res.out);
    cr_assert_null(strstr(res.out, "R0UTINGkey01"), "%s", res.out);
    cr_assert_null(strstr(res.err, "R0UTINGkey01"), "%s", res.err);
    cmd_result_free(&res);
}

Test(oncall_night, test_receiver_sends_a_marked_alert_to_each)
{
    start(ROUTING_KEY "\n");
    const char *names[] = {"pd", "og"};
    for (size_t i = 0; i < 2; i++) {
        struct cmd_result res =
            wsrelay_cmd(30, "-c", R.config_path, "test-receiver", names[i], NULL);
        cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
        cr_assert(strstr(res.out, "accepted"), "%s", res.out);
        cr_assert_null(strstr(res.out, "R0UTINGkey01"), "%s", res.out);
        cr_assert_null(strstr(res.out, "eb243592-faa2"), "%s", res.out);
        cmd_result_free(&res);
    }
    cr_assert_eq(oncall_count(PD), 1);
    cr_assert_eq(oncall_count(OG), 1);
    char *action = member(PD, 0, "event_action"), *message = member(OG, 0, "message");
    cr_assert_str_eq(action, "trigger");
    cr_assert(strstr(message, "test notification"), "%s", message);
    free(action);
    free(message);
}
