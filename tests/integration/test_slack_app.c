/* Slack as an app end to end: real `wsrelay run`s against the simulator,
 * a Slack receiver with a bot token talking to the Web API server of
 * tests/support/slackapi.c, and the webhook sink as the other receiver.
 * An alarm opens an incident and is posted; its reminder is a reply in the
 * thread; a ✅ that a person adds on the first message acknowledges the
 * incident at the next run, as that person, announced in the thread and to
 * the webhook; the recovery is a reply and marks the first message
 * RESOLVED. A token Slack refuses gives the Slack messages up and nothing
 * else; a 429 waits as long as its Retry-After asks; a Web API that hangs
 * costs no alert and no longer than the receiver's timeout; test-receiver
 * posts its TEST message through the Web API. */
#include "proc.h"
#include "relay.h"
#include "slackapi.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define T0 1795000000LL
#define ALARM_AT (T0 + 60)
#define WARM_AT (T0 + 200)     /* channel 2's alarm, routed to the webhook only */
#define RECOVER_AT (T0 + 2400) /* channel 1's recovery */

static struct relay R;
static struct slackapi *S;

static void teardown(void)
{
    relay_stop(&R);
    slackapi_stop(S);
}

TestSuite(slack_app, .fini = teardown, .timeout = 240);

/* A freezer whose channel 1 goes over its limit and comes back, and whose
 * channel 2 alarms once. */
static char *scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_printf(&b,
               "{\"serial\": \"5214000A\", \"model\": \"TR-72A2\", \"name\": \"Freezer 3\","
               " \"time_diff\": 540, \"alerts\": ["
               "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded -65.0°C\"},"
               "{\"unixtime\": %lld, \"ch2\": \"CH2 Upper Limit Exceeded 40.0%%\"},"
               "{\"unixtime\": %lld, \"ch1\": \"CH1 Measurement Recovery -78.0°C\"}]}",
               ALARM_AT, WARM_AT, RECOVER_AT);
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

/* The whole file at `path` in *out (caller frees); -1 when unreadable. */
static int read_text(const char *path, char **out)
{
    FILE *f = fopen(path, "r");
    struct buf b;
    char chunk[4096];
    size_t got;
    if (!f)
        return -1;
    buf_init(&b, 0);
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, got);
    fclose(f);
    *out = buf_steal(&b);
    return 0;
}

static void put_file(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", R.dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(chmod(path, 0600), 0);
    free(path);
}

/* Starts the world with the Slack receiver "slack" (holding `token`) and
 * the webhook "hook": channel 1 goes to both, reminded every 15 minutes;
 * channel 2 to the webhook only. */
static void start(const char *token)
{
    char *scen = scenario();
    S = slackapi_start();
    relay_start(&R, scen);
    free(scen);
    R.incidents = true;
    char *tok = xasprintf("%s\n", token);
    put_file("slack.token", tok);
    free(tok);
    put_file("rules.yaml", "- name: freezer\n"
                           "  match: {serial: \"5214*\", kind: ch1}\n"
                           "  receivers: [slack, hook]\n"
                           "  repeat: 15m\n"
                           "- name: humidity\n"
                           "  match: {serial: \"5214*\", kind: ch2}\n"
                           "  receivers: [hook]\n");
    char *receivers = xasprintf(
        "  - name: slack\n"
        "    slack: {token_file: @DIR@/slack.token, channel: " SLACKAPI_CHANNEL ",\n"
        "            api_url: \"%s\"}\n"
        "    timeout: 5s\n"
        "  - name: hook\n"
        "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: \"Bearer t0ken\"}}\n",
        slackapi_url(S));
    relay_config_extra(&R, NULL, receivers, "rules: @DIR@/rules.yaml\n");
    free(receivers);
}

static int run_at(long long now, char **err)
{
    return relay_run_at(&R, now, err);
}

static const char *member(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    return json_object_object_get_ex(obj, key, &v) ? json_object_get_string(v) : NULL;
}

/* The i-th message of the channel (a new reference). */
static struct json_object *message(size_t i)
{
    struct json_object *all = slackapi_messages(S, SLACKAPI_CHANNEL);
    cr_assert_lt(i, json_object_array_length(all), "only %zu messages",
                 json_object_array_length(all));
    struct json_object *m = json_object_get(json_object_array_get_idx(all, i));
    json_object_put(all);
    return m;
}

static size_t messages(void)
{
    struct json_object *all = slackapi_messages(S, SLACKAPI_CHANNEL);
    size_t n = json_object_array_length(all);
    json_object_put(all);
    return n;
}

/* The texts of the webhook's events, in order, one a line. */
static char *hook_texts(void)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        struct json_object *doc = json_tokener_parse(rq->body), *events = NULL;
        cr_assert(json_object_object_get_ex(doc, "events", &events), "%s", rq->body);
        for (size_t k = 0; k < json_object_array_length(events); k++)
            buf_printf(&b, "%s\n", member(json_object_array_get_idx(events, k), "text"));
        json_object_put(doc);
        hook_request_free(rq);
    }
    return buf_steal(&b);
}

Test(slack_app, an_incident_is_one_thread_acknowledged_from_slack_and_resolved)
{
    start(SLACKAPI_TOKEN);
    slackapi_add_user(S, "U0AIKO0001", "Aiko Tanaka");
    char *err = NULL;

    /* The alarm: one message, the thread's first. */
    cr_assert_eq(run_at(ALARM_AT + 60, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(messages(), 1);
    struct json_object *first = message(0);
    const char *ts = member(first, "ts");
    cr_assert_null(member(first, "thread_ts"));
    cr_assert(strstr(member(first, "text"), "Freezer 3: CH1 Upper Limit Exceeded -65.0°C"), "%s",
              member(first, "text"));
    struct slack_call *c = slackapi_call(S, "chat.postMessage", 0);
    cr_assert_str_eq(c->authorization, "Bearer " SLACKAPI_TOKEN);
    slack_call_free(c);

    /* Quiet runs until the reminder, 15 minutes after the alarm's run. */
    for (long long t = ALARM_AT + 360; t < ALARM_AT + 60 + 900; t += 300) {
        cr_assert_eq(run_at(t, &err), 0, "%s", err);
        free(err);
    }
    size_t before = messages();
    cr_assert_eq(run_at(ALARM_AT + 60 + 960, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(messages(), before + 1, "the reminder");
    struct json_object *reminder = message(before);
    cr_assert_str_eq(member(reminder, "thread_ts"), ts, "the reminder is in the thread");
    cr_assert(strstr(member(reminder, "text"), "Reminder 1"), "%s", member(reminder, "text"));
    json_object_put(reminder);

    /* A person reacts ✅: the next run acknowledges as them, in the thread
     * and to the other receiver. */
    slackapi_add_reaction(S, SLACKAPI_CHANNEL, ts, "white_check_mark", "U0AIKO0001");
    before = messages();
    cr_assert_eq(run_at(ALARM_AT + 60 + 1020, &err), 0, "%s", err);
    cr_assert(strstr(err, "incident 1 acknowledged by Aiko Tanaka (U0AIKO0001) through receiver "
                          "slack"),
              "%s", err);
    free(err);
    cr_assert_eq(messages(), before + 1, "the acknowledgement");
    struct json_object *ack = message(before);
    cr_assert_str_eq(member(ack, "thread_ts"), ts);
    cr_assert(strstr(member(ack, "text"), "Aiko Tanaka (U0AIKO0001)"), "%s", member(ack, "text"));
    json_object_put(ack);
    char *texts = hook_texts();
    cr_assert(strstr(texts, "\nIncident 1 acknowledged by Aiko Tanaka (U0AIKO0001) at 20:25.\n"),
              "the webhook hears of it:\n%s", texts);
    free(texts);
    /* its timeline (the incident log) says who, and wsrelay incidents too */
    char *log_path = xasprintf("%s.incidents/2026-11.jsonl", R.state_path);
    char *timeline = NULL;
    cr_assert_eq(read_text(log_path, &timeline), 0, "%s", log_path);
    cr_assert_eq(occurrences(timeline, "\"what\":\"acknowledged\""), 1, "%s", timeline);
    cr_assert_eq(occurrences(timeline, "\"by\":\"Aiko Tanaka (U0AIKO0001)\""), 1, "%s", timeline);
    free(timeline);
    free(log_path);
    struct cmd_result list =
        wsrelay_cmd(30, "-c", R.config_path, "incidents", "--all", "--json", NULL);
    cr_assert_eq(list.status, 0, "%s", list.err);
    cr_assert(strstr(list.out, "\"acknowledged_by\":\"Aiko Tanaka (U0AIKO0001)\""), "%s", list.out);
    cmd_result_free(&list);

    /* Acknowledged: no more reminders. */
    before = messages();
    cr_assert_eq(run_at(ALARM_AT + 60 + 1920, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(messages(), before);

    /* The recovery: a reply, and the first message now says RESOLVED. */
    cr_assert_eq(run_at(RECOVER_AT + 60, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(messages(), before + 1, "the resolution");
    struct json_object *end = message(before);
    cr_assert_str_eq(member(end, "thread_ts"), ts);
    json_object_put(end);
    cr_assert_eq(slackapi_count(S, "chat.update"), 1);
    json_object_put(first);
    first = message(0);
    cr_assert(!strncmp(member(first, "text"), "RESOLVED: ", 10), "%s", member(first, "text"));
    json_object_put(first);
    texts = hook_texts();
    cr_assert_str_eq(texts,
                     "CH1 Upper Limit Exceeded -65.0°C\n"
                     "CH2 Upper Limit Exceeded 40.0%\n"
                     "Reminder 1: incident 1 open for 16 min, not acknowledged. Now -65.0°C at "
                     "20:07. CH1 Upper Limit Exceeded -65.0°C Acknowledge: wsrelay ack 1\n"
                     "Incident 1 acknowledged by Aiko Tanaka (U0AIKO0001) at 20:25.\n"
                     "CH1 Measurement Recovery -78.0°C Incident 1: open for 39 min; acknowledged "
                     "by Aiko Tanaka (U0AIKO0001) at 20:25.\n");
    free(texts);
}

Test(slack_app, a_token_slack_refuses_gives_up_the_slack_messages_only)
{
    start("xoxb-9999999999-8888888888-Revoked0Token0Revoked0T0k");
    char *err = NULL;
    run_at(ALARM_AT + 60, &err);
    cr_assert(strstr(err, "chat.postMessage: invalid_auth; refused for good: 1 event given up "
                          "for receiver slack"),
              "%s", err);
    cr_assert_null(strstr(err, "Revoked0Token"), "%s", err);
    free(err);
    cr_assert_eq(slackapi_count(S, "chat.postMessage"), 1);
    cr_assert_eq(messages(), 0);
    char *texts = hook_texts();
    cr_assert_str_eq(texts, "CH1 Upper Limit Exceeded -65.0°C\n", "the webhook has the alarm");
    free(texts);
    /* given up, not retried: the next run sends Slack nothing */
    cr_assert_eq(run_at(ALARM_AT + 360, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(slackapi_count(S, "chat.postMessage"), 1);
}

Test(slack_app, a_hanging_web_api_costs_no_alert_and_no_longer_than_the_timeout)
{
    start(SLACKAPI_TOKEN);
    char *err = NULL;
    cr_assert_eq(run_at(ALARM_AT + 60, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(messages(), 1);
    /* Slack now holds every answer longer than the receiver's 5 s. */
    slackapi_set_delay_ms(S, 15000);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(run_at(WARM_AT + 520, &err), 0, "%s", err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert(strstr(err, "receiver 'slack' (slack): acknowledgements: reactions.get: POST "
                          "http://127.0.0.1"),
              "%s", err);
    cr_assert(strstr(err, "no complete answer within 5 s (the receiver's timeout) (nothing is "
                          "lost: the next run asks again)"),
              "%s", err);
    free(err);
    /* a hang guard with a wide margin: the run did not wait for Slack */
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 12);
    char *texts = hook_texts();
    cr_assert_str_eq(texts, "CH1 Upper Limit Exceeded -65.0°C\nCH2 Upper Limit Exceeded 40.0%\n");
    free(texts);
}

Test(slack_app, test_receiver_posts_a_test_message_through_the_web_api)
{
    start(SLACKAPI_TOKEN);
    struct cmd_result r = wsrelay_cmd(30, "-c", R.config_path, "test-receiver", "slack", NULL);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert_null(strstr(r.out, "T3stT0ken"), "%s", r.out);
    cr_assert_null(strstr(r.err, "T3stT0ken"), "%s", r.err);
    cmd_result_free(&r);
    cr_assert_eq(messages(), 1);
    struct json_object *m = message(0);
    cr_assert(!strncmp(member(m, "text"), "[TEST] ", 7), "%s", member(m, "text"));
    cr_assert_null(member(m, "thread_ts"));
    json_object_put(m);
}

Test(slack_app, a_429_waits_as_long_as_slack_asked)
{
    start(SLACKAPI_TOKEN);
    slackapi_push_error(S, "chat.postMessage", 429, "ratelimited", 600);
    char *err = NULL;
    run_at(ALARM_AT + 60, &err);
    cr_assert(strstr(err, "chat.postMessage: HTTP 429: rate limited, asked to wait 600 s; 1 event "
                          "kept for a later run (as the far end asked)"),
              "%s", err);
    free(err);
    cr_assert_eq(messages(), 0);
    char *texts = hook_texts();
    cr_assert_str_eq(texts, "CH1 Upper Limit Exceeded -65.0°C\n", "the webhook has the alarm");
    free(texts);
    /* 300 s later Slack's wait is not over: nothing is tried */
    run_at(ALARM_AT + 360, NULL);
    cr_assert_eq(slackapi_count(S, "chat.postMessage"), 1);
    /* after it, the alarm is posted, as the thread's first message */
    cr_assert_eq(run_at(ALARM_AT + 720, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(slackapi_count(S, "chat.postMessage"), 2);
    cr_assert_eq(messages(), 1);
    struct json_object *m = message(0);
    cr_assert_null(member(m, "thread_ts"));
    json_object_put(m);
}
