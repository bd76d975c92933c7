/* Slack as an app (notify/slackapp.c) against the Web API server of
 * tests/support/slackapi.c: the requests it makes (method, token, JSON or
 * form, channel, thread), the refs it keeps, how it reads Slack's answers
 * and errors, and the acknowledgements it collects from a thread. */
#include "notify/notify.h"
#include "slackapi.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct slackapi *S;
static struct receiver_conf R;

static void setup(void)
{
    S = slackapi_start();
    R = (struct receiver_conf){.name = xstrdup("ops"), .type = RECEIVER_SLACK_APP, .timeout = 5};
    R.slack.token = xstrdup(SLACKAPI_TOKEN);
    R.slack.channel = xstrdup(SLACKAPI_CHANNEL);
    R.slack.api_url = xstrdup(slackapi_url(S));
}

static void teardown(void)
{
    slackapi_stop(S);
    free(R.name);
    free(R.slack.token);
    free(R.slack.channel);
    free(R.slack.api_url);
}

TestSuite(slackapp, .init = setup, .fini = teardown, .timeout = 60);

/* An alarm of freezer 5214000A; with `notice`, a message of incident 4. */
static struct event alarm_event(const char *notice)
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
        .state = xstrdup(notice && !strcmp(notice, "resolved") ? "recovered" : "alarm"),
        .utc_offset = 540,
    };
    if (notice) {
        ev.incident = json_object_new_object();
        json_object_object_add(ev.incident, "id", json_object_new_int(4));
        json_object_object_add(ev.incident, "key", json_object_new_string("5214000A/ch1"));
        json_object_object_add(ev.incident, "notice", json_object_new_string(notice));
    }
    return ev;
}

/* Sends `ev` (with `refs`) to R; returns notify_send's answer. */
static int send_one(struct event *ev, const struct json_object *refs, struct notify_result *res,
                    struct err *e)
{
    struct notify_message m = {.events = ev, .n = 1, .now = 1795000400, .refs = refs};
    return notify_send(NULL, &R, &m, res, e);
}

/* The refs an incident keeps after its first message. */
static struct json_object *opened(void)
{
    struct event ev = alarm_event("opened");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send_one(&ev, NULL, &res, &e), 0, "%s", e.msg);
    event_clear(&ev);
    cr_assert_not_null(res.refs);
    return res.refs;
}

static const char *member(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    return json_object_object_get_ex(obj, key, &v) ? json_object_get_string(v) : NULL;
}

Test(slackapp, the_first_message_of_an_incident_is_posted_with_the_token_and_its_ts_kept)
{
    struct json_object *refs = opened();
    cr_assert_eq(slackapi_count(S, NULL), 1);
    struct slack_call *c = slackapi_call(S, "chat.postMessage", 0);
    cr_assert_str_eq(c->authorization, "Bearer " SLACKAPI_TOKEN);
    cr_assert_str_eq(c->content_type, "application/json; charset=utf-8");
    cr_assert_str_eq(member(c->args, "channel"), SLACKAPI_CHANNEL);
    cr_assert_null(member(c->args, "thread_ts"));
    cr_assert(strstr(member(c->args, "text"), "Freezer 3: CH1 Upper Limit Exceeded -65.0°C"), "%s",
              member(c->args, "text"));
    struct json_object *blocks = NULL, *text = NULL; /* slack.json's, as the webhook's */
    cr_assert(json_object_object_get_ex(c->args, "blocks", &blocks));
    struct json_object *header = json_object_array_get_idx(blocks, 0);
    cr_assert_str_eq(member(header, "type"), "header");
    cr_assert(json_object_object_get_ex(header, "text", &text));
    cr_assert(strstr(member(text, "text"), "Freezer 3"), "%s", member(text, "text"));
    struct json_object *footer =
        json_object_array_get_idx(blocks, json_object_array_length(blocks) - 1);
    cr_assert_str_eq(member(footer, "type"), "context");
    cr_assert_str_eq(member(refs, "ts"), "1795000000.000001");
    cr_assert_str_eq(member(refs, "channel"), SLACKAPI_CHANNEL);
    slack_call_free(c);
    json_object_put(refs);
}

Test(slackapp, a_reminder_is_a_reply_in_the_incidents_thread)
{
    struct json_object *refs = opened();
    struct event ev = alarm_event("reminder");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send_one(&ev, refs, &res, &e), 0, "%s", e.msg);
    cr_assert_null(res.refs, "a reply is no new thread");
    struct slack_call *c = slackapi_call(S, "chat.postMessage", 1);
    cr_assert_str_eq(member(c->args, "thread_ts"), "1795000000.000001");
    cr_assert_str_eq(member(c->args, "channel"), SLACKAPI_CHANNEL);
    cr_assert_eq(slackapi_count(S, "chat.update"), 0);
    slack_call_free(c);
    event_clear(&ev);
    json_object_put(refs);
}

Test(slackapp, posts_to_one_channel_are_a_second_apart_whoever_sends_them)
{
    struct json_object *refs = opened();
    struct event ev = alarm_event("reminder");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send_one(&ev, refs, &res, &e), 0, "%s", e.msg);
    free(R.name);
    R.name = xstrdup("another"); /* another receiver, the same channel */
    cr_assert_eq(send_one(&ev, refs, &res, &e), 0, "%s", e.msg);
    for (size_t i = 1; i < 3; i++) {
        struct slack_call *a = slackapi_call(S, "chat.postMessage", i - 1);
        struct slack_call *b = slackapi_call(S, "chat.postMessage", i);
        cr_assert_geq(b->at - a->at, 0.95, "%.3f s apart", b->at - a->at);
        slack_call_free(a);
        slack_call_free(b);
    }
    event_clear(&ev);
    json_object_put(refs);
}

Test(slackapp, the_resolution_is_a_reply_and_marks_the_first_message_resolved)
{
    struct json_object *refs = opened();
    struct event ev = alarm_event("resolved");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send_one(&ev, refs, &res, &e), 0, "%s", e.msg);
    struct slack_call *reply = slackapi_call(S, "chat.postMessage", 1);
    cr_assert_str_eq(member(reply->args, "thread_ts"), "1795000000.000001");
    cr_assert_eq(slackapi_count(S, "chat.update"), 1);
    struct slack_call *up = slackapi_call(S, "chat.update", 0);
    cr_assert_str_eq(member(up->args, "ts"), "1795000000.000001");
    cr_assert_str_eq(member(up->args, "channel"), SLACKAPI_CHANNEL);
    cr_assert_null(member(up->args, "thread_ts"));
    cr_assert(!strncmp(member(up->args, "text"), "RESOLVED: ", 10), "%s", member(up->args, "text"));
    struct json_object *msgs = slackapi_messages(S, SLACKAPI_CHANNEL), *blocks, *text;
    struct json_object *first = json_object_array_get_idx(msgs, 0);
    cr_assert(json_object_object_get_ex(first, "blocks", &blocks));
    cr_assert(json_object_object_get_ex(json_object_array_get_idx(blocks, 0), "text", &text));
    cr_assert(!strncmp(member(text, "text"), "RESOLVED · ", strlen("RESOLVED · ")), "%s",
              member(text, "text"));
    json_object_put(msgs);
    slack_call_free(reply);
    slack_call_free(up);
    event_clear(&ev);
    json_object_put(refs);
}

Test(slackapp, a_message_outside_an_incident_is_posted_without_refs)
{
    struct event ev = alarm_event(NULL);
    struct notify_result res;
    struct err e;
    cr_assert_eq(send_one(&ev, NULL, &res, &e), 0, "%s", e.msg);
    cr_assert_null(res.refs);
    event_clear(&ev);
}

Test(slackapp, an_incidents_message_fits_alone)
{
    struct event evs[3] = {alarm_event(NULL), alarm_event(NULL), alarm_event("opened")};
    struct notify_message m = {.events = evs, .n = 3, .now = 1795000400};
    cr_assert_eq(notify_fit(NULL, &R, &m), 2);
    m.events = evs + 2;
    m.n = 1;
    cr_assert_eq(notify_fit(NULL, &R, &m), 1);
    for (int i = 0; i < 3; i++)
        event_clear(&evs[i]);
}

/* Sends an alarm and returns what notify_send said, with `res` and `e`. */
static int send_failing(struct notify_result *res, struct err *e)
{
    struct event ev = alarm_event("opened");
    int rc = send_one(&ev, NULL, res, e);
    event_clear(&ev);
    return rc;
}

Test(slackapp, a_wrong_token_is_refused_for_good_and_never_shown)
{
    free(R.slack.token);
    R.slack.token = xstrdup("xoxb-9999999999-8888888888-WrongTokenWrongTokenWrong");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send_failing(&res, &e), -1);
    cr_assert(res.permanent);
    cr_assert_str_eq(res.answer, "invalid_auth");
    cr_assert_str_eq(e.msg, "receiver 'ops' (slack): chat.postMessage: invalid_auth");
    cr_assert_null(res.refs);
}

Test(slackapp, a_channel_the_app_cannot_post_in_is_refused_for_good)
{
    struct notify_result res;
    struct err e;
    free(R.slack.channel);
    R.slack.channel = xstrdup("C0NOSUCH99");
    cr_assert_eq(send_failing(&res, &e), -1);
    cr_assert(res.permanent);
    cr_assert_str_eq(res.answer, "channel_not_found");
    free(R.slack.channel);
    R.slack.channel = xstrdup(SLACKAPI_OUTSIDE);
    cr_assert_eq(send_failing(&res, &e), -1);
    cr_assert(res.permanent);
    cr_assert_str_eq(res.answer, "not_in_channel");
}

Test(slackapp, slacks_passing_troubles_keep_the_message)
{
    struct notify_result res;
    struct err e;
    slackapi_push_error(S, "chat.postMessage", 200, "internal_error", 0);
    cr_assert_eq(send_failing(&res, &e), -1);
    cr_assert_not(res.permanent);
    cr_assert_str_eq(e.msg, "receiver 'ops' (slack): chat.postMessage: internal_error (Slack may "
                            "take it at a later try)");
    slackapi_push_error(S, "chat.postMessage", 429, "ratelimited", 7);
    cr_assert_eq(send_failing(&res, &e), -1);
    cr_assert_not(res.permanent);
    cr_assert_eq(res.status, 429);
    cr_assert_eq(res.retry_after, 7);
    cr_assert_str_eq(e.msg,
                     "receiver 'ops' (slack): chat.postMessage: HTTP 429: rate limited, asked to "
                     "wait 7 s");
    slackapi_push_error(S, "chat.postMessage", 503, "upstream down", 0);
    cr_assert_eq(send_failing(&res, &e), -1);
    cr_assert_not(res.permanent);
    cr_assert_eq(res.status, 503);
    cr_assert_eq(slackapi_count(S, "chat.postMessage"), 3);
}

Test(slackapp, a_far_end_that_quotes_the_token_never_shows_it)
{
    struct notify_result res;
    struct err e;
    slackapi_push_error(S, "chat.postMessage", 400, "bad token " SLACKAPI_TOKEN, 0);
    cr_assert_eq(send_failing(&res, &e), -1);
    cr_assert(res.permanent);
    cr_assert_null(strstr(res.answer, "T3stT0ken"), "%s", res.answer);
    cr_assert_null(strstr(e.msg, "T3stT0ken"), "%s", e.msg);
    cr_assert(strstr(e.msg, "[redacted]"), "%s", e.msg);
}

/* Collects R's acknowledgements of incident 4, posted with `refs`. */
static int collect(const struct json_object *refs, struct notify_ack **acks, size_t *n,
                   struct err *e)
{
    struct event first = alarm_event("opened");
    struct notify_open open = {.id = 4, .key = "5214000A/ch1", .first = &first, .refs = refs};
    int rc = notify_collect(NULL, &R, &open, 1, 1795000500, acks, n, e);
    event_clear(&first);
    return rc;
}

Test(slackapp, a_check_mark_on_the_first_message_acknowledges_as_that_user)
{
    struct json_object *refs = opened();
    struct notify_ack *acks = NULL;
    size_t n = 0;
    struct err e;
    cr_assert_eq(collect(refs, &acks, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 0, "nobody reacted yet");
    slackapi_add_reaction(S, SLACKAPI_CHANNEL, member(refs, "ts"), "eyes", "U0OTHER001");
    slackapi_add_reaction(S, SLACKAPI_CHANNEL, member(refs, "ts"), "white_check_mark",
                          "U0AIKO0001");
    slackapi_add_user(S, "U0AIKO0001", "Aiko Tanaka");
    cr_assert_eq(collect(refs, &acks, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(acks[0].id, 4);
    cr_assert_str_eq(acks[0].by, "Aiko Tanaka (U0AIKO0001)");
    cr_assert_null(acks[0].note);
    struct slack_call *c = slackapi_call(S, "reactions.get", 1);
    cr_assert_str_eq(c->content_type, "application/x-www-form-urlencoded");
    cr_assert_str_eq(c->authorization, "Bearer " SLACKAPI_TOKEN);
    cr_assert_str_eq(member(c->args, "channel"), SLACKAPI_CHANNEL);
    cr_assert_str_eq(member(c->args, "timestamp"), member(refs, "ts"));
    slack_call_free(c);
    notify_acks_free(acks, n);
    json_object_put(refs);
}

Test(slackapp, a_reply_starting_with_ack_acknowledges_with_the_rest_as_the_note)
{
    struct json_object *refs = opened();
    struct event ev = alarm_event("reminder"); /* wsrelay's own reply is no one's ack */
    struct notify_result res;
    struct notify_ack *acks = NULL;
    size_t n = 0;
    struct err e;
    cr_assert_eq(send_one(&ev, refs, &res, &e), 0, "%s", e.msg);
    event_clear(&ev);
    slackapi_add_reply(S, SLACKAPI_CHANNEL, member(refs, "ts"), "U0KEN00001", "looking at it");
    slackapi_add_reply(S, SLACKAPI_CHANNEL, member(refs, "ts"), "U0KEN00001",
                       "ACK: moving samples\nto freezer 4");
    cr_assert_eq(collect(refs, &acks, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(acks[0].by, "U0KEN00001", "users.info does not know him: his id");
    cr_assert_str_eq(acks[0].note, "moving samples to freezer 4");
    struct slack_call *c = slackapi_call(S, "conversations.replies", 0);
    cr_assert_str_eq(member(c->args, "ts"), member(refs, "ts"));
    slack_call_free(c);
    notify_acks_free(acks, n);
    json_object_put(refs);
}

Test(slackapp, a_hanging_api_costs_no_longer_than_the_timeout)
{
    struct json_object *refs = opened();
    struct notify_ack *acks = NULL;
    size_t n = 0;
    struct err e;
    struct timespec t0, t1;
    slackapi_set_delay_ms(S, 9000);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(collect(refs, &acks, &n, &e), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_null(acks);
    cr_assert_eq(n, 0);
    cr_assert(strstr(e.msg, "within 5 s"), "%s", e.msg);
    /* a hang guard with a wide margin, not a measure of speed */
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 5 + 3);
    json_object_put(refs);
}
