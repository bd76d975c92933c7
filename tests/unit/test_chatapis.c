/* The Google Chat, Chatwork and Pushover receivers against the local
 * server that speaks their APIs (tests/support/svcapi.c): the requests
 * each sends, threads and receipts per incident, the escaping of hostile
 * device names and alert texts, the answers taken as permanent or worth
 * retrying, and no secret in what comes back. */
#include "notify/notify.h"
#include "svcapi.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct svcapi *S;

static void setup(void)
{
    S = svcapi_start();
}

static void teardown(void)
{
    svcapi_stop(S);
}

TestSuite(chatapis, .init = setup, .fini = teardown);

/* An alarm of freezer 5214000A, owning its strings. */
static struct event alarm_of(const char *name, const char *text)
{
    return (struct event){
        .account = xstrdup("lab"),
        .serial = xstrdup("5214000A"),
        .model = xstrdup("TR-72A2"),
        .name = xstrdup(name),
        .base_serial = xstrdup("5214000A"),
        .base_model = xstrdup("TR-72A2"),
        .base_name = xstrdup(name),
        .unixtime = 1795000000,
        .kind = xstrdup("ch1"),
        .text = xstrdup(text),
        .channel_name = xstrdup("温度"),
        .channel_unit = xstrdup("°C"),
        .utc_offset = 540,
    };
}

/* Makes `ev` a message about incident `id` (key 5214000A/ch1) with
 * `notice`, as incident_snapshot writes the members the templates read. */
static void about(struct event *ev, unsigned long id, const char *notice)
{
    static const char *const notices[] = {"opened",       "reminder", "escalation",
                                          "acknowledged", "resolved", "closed"};
    char idtext[24], is[32];
    struct json_object *inc = json_object_new_object();
    snprintf(idtext, sizeof idtext, "%lu", id);
    json_object_object_add(inc, "id", json_object_new_string(idtext));
    json_object_object_add(inc, "key", json_object_new_string("5214000A/ch1"));
    json_object_object_add(inc, "state", json_object_new_string("open"));
    json_object_object_add(inc, "notice", json_object_new_string(notice));
    for (size_t i = 0; i < sizeof notices / sizeof notices[0]; i++) {
        snprintf(is, sizeof is, "is_%s", notices[i]);
        json_object_object_add(inc, is, json_object_new_boolean(strcmp(notice, notices[i]) == 0));
    }
    json_object_object_add(inc, "reminder", json_object_new_int(1));
    json_object_object_add(inc, "step", json_object_new_int(0));
    json_object_object_add(inc, "age_text", json_object_new_string("15m"));
    json_object_object_add(inc, "duration_text", json_object_new_string("42m"));
    json_object_object_add(inc, "acknowledged", json_object_new_boolean(0));
    ev->incident = inc;
}

static struct receiver_conf googlechat(int language)
{
    static char name[] = "gchat";
    return (struct receiver_conf){.name = name,
                                  .type = RECEIVER_GOOGLECHAT,
                                  .googlechat = {.url = svcapi_gchat_url(S), .language = language},
                                  .timeout = 10};
}

/* Sends the events to `r`; the result in *res, the error in *e. */
static int send(const struct receiver_conf *r, const struct event *evs, size_t n,
                struct notify_result *res, struct err *e)
{
    struct notify_message m = {.events = evs, .n = n, .now = 1795000100};
    struct notify_env env = {0};
    return notify_send(&env, r, &m, res, e);
}

static void no_secret(const char *text)
{
    static const char *const secrets[] = {SVC_GCHAT_KEY, SVC_GCHAT_TOKEN, SVC_CHATWORK_TOKEN,
                                          SVC_PUSHOVER_TOKEN, SVC_PUSHOVER_USER};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        cr_assert_null(strstr(text, secrets[i]), "a secret in: %s", text);
}

/* --- Google Chat --------------------------------------------------------- */

Test(chatapis, googlechat_threads_an_incident_and_not_a_plain_event)
{
    struct receiver_conf r = googlechat(CHAT_LANG_EN);
    struct event opened = alarm_of("Bulk Freezer", "CH1 Upper Limit Exceeded -65.0°C");
    struct event reminder = alarm_of("Bulk Freezer", "CH1 Upper Limit Exceeded -65.0°C");
    struct event gap = alarm_of("Bulk Freezer", "no readings for 2h");
    about(&opened, 17, "opened");
    about(&reminder, 17, "reminder");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send(&r, &opened, 1, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(res.status, 200);
    cr_assert_eq(send(&r, &reminder, 1, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(send(&r, &gap, 1, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 3);
    struct svc_message *a = svcapi_message(S, SVC_GOOGLECHAT, 0),
                       *b = svcapi_message(S, SVC_GOOGLECHAT, 1),
                       *c = svcapi_message(S, SVC_GOOGLECHAT, 2);
    cr_assert_str_eq(a->thread_key, "wsrelay:5214000A/ch1:17");
    cr_assert_str_eq(a->reply_option, "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD");
    cr_assert_str_eq(b->thread_key, a->thread_key);
    cr_assert_str_eq(b->thread_name, a->thread_name, "the reminder replies in the alarm's thread");
    cr_assert_null(c->thread_key);
    cr_assert_str_neq(c->thread_name, a->thread_name, "a plain event starts its own thread");
    cr_assert_not_null(strstr(a->text, "*New incident #17*"), "%s", a->text);
    cr_assert_not_null(strstr(a->text, "Bulk Freezer"), "%s", a->text);
    cr_assert_not_null(strstr(b->text, "*Reminder 1: incident #17 is still open*"), "%s", b->text);
    cr_assert_null(strstr(c->text, "incident"), "%s", c->text);
    /* No blank lines after the text. */
    cr_assert_neq(a->text[strlen(a->text) - 1], '\n', "%s", a->text);
    svc_message_free(a);
    svc_message_free(b);
    svc_message_free(c);
    event_clear(&opened);
    event_clear(&reminder);
    event_clear(&gap);
    free(r.googlechat.url);
}

Test(chatapis, googlechat_hostile_names_and_texts_format_nothing)
{
    struct receiver_conf r = googlechat(CHAT_LANG_EN);
    struct event ev =
        alarm_of("*Boss* <users/all> _x_ ~y~", "`rm -rf` <https://evil.example|click> "
                                               "see http://evil.example/a");
    about(&ev, 3, "opened");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send(&r, &ev, 1, &res, &e), 0, "%s", e.msg);
    struct svc_message *m = svcapi_message(S, SVC_GOOGLECHAT, 0);
    static const char *const never[] = {"<users/all>", "*Boss*",    "_x_",         "~y~",
                                        "`rm",         "<https://", "http://evil", "evil.example"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        cr_assert_null(strstr(m->text, never[i]), "%s in %s", never[i], m->text);
    /* The same words are there, with the markup made inert. */
    cr_assert_not_null(strstr(m->text, "\xE2\x88\x97"
                                       "Boss"
                                       "\xE2\x88\x97"),
                       "%s", m->text);
    cr_assert_not_null(strstr(m->text, "<\xE2\x80\x8Busers/all>"), "%s", m->text);
    svc_message_free(m);
    event_clear(&ev);
    free(r.googlechat.url);
}

Test(chatapis, googlechat_speaks_japanese_when_asked)
{
    struct receiver_conf r = googlechat(CHAT_LANG_JA);
    struct event evs[2] = {alarm_of("冷凍庫 A", "CH1 上限値警報 -65.0℃"),
                           alarm_of("冷凍庫 A", "CH1 測定値復帰 -78.0℃")};
    about(&evs[0], 5, "opened");
    about(&evs[1], 5, "resolved");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send(&r, &evs[0], 1, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(send(&r, &evs[1], 1, &res, &e), 0, "%s", e.msg);
    struct svc_message *a = svcapi_message(S, SVC_GOOGLECHAT, 0),
                       *b = svcapi_message(S, SVC_GOOGLECHAT, 1);
    cr_assert_not_null(strstr(a->text, "【通知】インシデント #5 発生"), "%s", a->text);
    cr_assert_not_null(strstr(a->text, "警報"), "%s", a->text);
    cr_assert_not_null(strstr(b->text, "【復帰】インシデント #5"), "%s", b->text);
    cr_assert_str_eq(a->thread_name, b->thread_name);
    svc_message_free(a);
    svc_message_free(b);
    event_clear(&evs[0]);
    event_clear(&evs[1]);
    free(r.googlechat.url);
}

Test(chatapis, googlechat_one_incident_per_message)
{
    struct receiver_conf r = googlechat(CHAT_LANG_EN);
    struct event evs[3] = {alarm_of("A", "x"), alarm_of("B", "y"), alarm_of("C", "z")};
    struct notify_message m = {.events = evs, .n = 3, .now = 1795000100};
    struct notify_env env = {0};
    cr_assert_eq(notify_fit(&env, &r, &m), 3, "plain events go together");
    about(&evs[1], 8, "opened");
    cr_assert_eq(notify_fit(&env, &r, &m), 1, "up to the first incident");
    about(&evs[0], 7, "opened");
    cr_assert_eq(notify_fit(&env, &r, &m), 1, "an incident goes alone");
    for (int i = 0; i < 3; i++)
        event_clear(&evs[i]);
    free(r.googlechat.url);
}

Test(chatapis, googlechat_answers_permanent_or_retried_without_secrets)
{
    struct receiver_conf r = googlechat(CHAT_LANG_EN);
    struct event ev = alarm_of("Freezer", "CH1 Upper Limit Exceeded");
    struct notify_result res;
    struct err e;
    svcapi_push_failure(S, SVC_GOOGLECHAT, 429);
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 429);
    cr_assert_not(res.permanent, "429 is retried");
    svcapi_push_failure(S, SVC_GOOGLECHAT, 500);
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_not(res.permanent, "5xx is retried");
    no_secret(e.msg);
    /* A wrong token: 401, given up. */
    free(r.googlechat.url);
    r.googlechat.url = xasprintf("%s/v1/spaces/" SVC_GCHAT_SPACE "/messages?key=" SVC_GCHAT_KEY
                                 "&token=WrongT0kenWrongT0kenWrongT0ken",
                                 svcapi_base(S));
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 401);
    cr_assert(res.permanent);
    cr_assert_null(strstr(e.msg, "WrongT0ken"), "%s", e.msg);
    /* A wrong key: 400, given up, the answer shown. */
    free(r.googlechat.url);
    r.googlechat.url = xasprintf("%s/v1/spaces/" SVC_GCHAT_SPACE
                                 "/messages?key=AIzaWrongKeyWrongKey&token=" SVC_GCHAT_TOKEN,
                                 svcapi_base(S));
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 400);
    cr_assert(res.permanent);
    cr_assert_not_null(strstr(e.msg, "API key not valid"), "%s", e.msg);
    no_secret(e.msg);
    no_secret(res.answer);
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 0);
    event_clear(&ev);
    free(r.googlechat.url);
}

/* --- Chatwork ------------------------------------------------------------ */

static struct receiver_conf chatwork(int language, const char *token, const char *room)
{
    static char name[] = "cw";
    return (struct receiver_conf){.name = name,
                                  .type = RECEIVER_CHATWORK,
                                  .chatwork = {.token = xstrdup(token),
                                               .room_id = xstrdup(room),
                                               .base_url = xstrdup(svcapi_base(S)),
                                               .language = language},
                                  .timeout = 10};
}

static void chatwork_free(struct receiver_conf *r)
{
    free(r->chatwork.token);
    free(r->chatwork.room_id);
    free(r->chatwork.base_url);
}

Test(chatapis, chatwork_posts_each_notice_in_japanese_by_default)
{
    struct receiver_conf r = chatwork(CHAT_LANG_JA, SVC_CHATWORK_TOKEN, SVC_CHATWORK_ROOM);
    static const char *const notices[] = {"opened", "reminder", "escalation", "acknowledged",
                                          "resolved"};
    static const char *const said[] = {"【通知】", "【リマインダー 1】", "【エスカレーション 0】",
                                       "【確認済み】", "【復帰】"};
    struct notify_result res;
    struct err e;
    for (size_t i = 0; i < 5; i++) {
        struct event ev = alarm_of("冷凍庫 A", "CH1 上限値警報 -65.0℃");
        about(&ev, 17, notices[i]);
        cr_assert_eq(send(&r, &ev, 1, &res, &e), 0, "%s", e.msg);
        cr_assert_eq(res.status, 200);
        event_clear(&ev);
        struct svc_message *m = svcapi_message(S, SVC_CHATWORK, i);
        cr_assert_not_null(strstr(m->text, said[i]), "%s: %s", notices[i], m->text);
        cr_assert_not_null(strstr(m->text, "インシデント #17"), "%s", m->text);
        cr_assert_not_null(strstr(m->text, "[info][title]"), "%s", m->text);
        cr_assert_not_null(strstr(m->text, "CH1 上限値警報 -65.0℃"), "%s", m->text);
        cr_assert_str_eq(m->self_unread, "0");
        size_t len = strlen(m->text);
        cr_assert(len > 7 && strcmp(m->text + len - 7, "[/info]") == 0, "ends: %s", m->text);
        svc_message_free(m);
    }
    /* A plain event: no incident said. */
    struct event gap = alarm_of("冷凍庫 A", "no readings");
    cr_assert_eq(send(&r, &gap, 1, &res, &e), 0, "%s", e.msg);
    struct svc_message *m = svcapi_message(S, SVC_CHATWORK, 5);
    cr_assert_null(strstr(m->text, "インシデント"), "%s", m->text);
    svc_message_free(m);
    event_clear(&gap);
    chatwork_free(&r);
}

Test(chatapis, chatwork_in_english_and_hostile_text_makes_no_tags)
{
    struct receiver_conf r = chatwork(CHAT_LANG_EN, SVC_CHATWORK_TOKEN, SVC_CHATWORK_ROOM);
    struct event ev = alarm_of("[toall] Freezer [To:123]", "[code]x[/code] :) (y) [info]y[/info]");
    about(&ev, 4, "opened");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send(&r, &ev, 1, &res, &e), 0, "%s", e.msg);
    struct svc_message *m = svcapi_message(S, SVC_CHATWORK, 0);
    cr_assert_not_null(strstr(m->text, "[info][title][NEW] ALERT "), "%s", m->text);
    cr_assert_not_null(strstr(m->text, "Incident #4"), "%s", m->text);
    static const char *const never[] = {"[toall]", "[To:123]", "[code]", "[/code]",
                                        ":)",      "(y)",      "[info]y"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        cr_assert_null(strstr(m->text, never[i]), "%s in %s", never[i], m->text);
    cr_assert_not_null(strstr(m->text, "[\xE2\x80\x8Btoall] Freezer"), "%s", m->text);
    svc_message_free(m);
    event_clear(&ev);
    chatwork_free(&r);
}

Test(chatapis, chatwork_answers_permanent_or_retried_without_the_token)
{
    struct event ev = alarm_of("Freezer", "CH1 Upper Limit Exceeded");
    struct notify_result res;
    struct err e;
    struct receiver_conf r = chatwork(CHAT_LANG_JA, SVC_CHATWORK_TOKEN, SVC_CHATWORK_ROOM);
    svcapi_push_failure(S, SVC_CHATWORK, 429);
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 429);
    cr_assert_not(res.permanent);
    cr_assert(res.retry_after >= 1 && res.retry_after <= 300, "waits for the window: %ld",
              res.retry_after);
    svcapi_push_failure(S, SVC_CHATWORK, 500);
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_not(res.permanent);
    chatwork_free(&r);
    /* A room the account cannot post in: 403, given up. */
    r = chatwork(CHAT_LANG_JA, SVC_CHATWORK_TOKEN, "271828");
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 403);
    cr_assert(res.permanent);
    chatwork_free(&r);
    /* A wrong token: 401, given up, and the token shown nowhere. */
    r = chatwork(CHAT_LANG_JA, "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5", SVC_CHATWORK_ROOM);
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 401);
    cr_assert(res.permanent);
    cr_assert_not_null(strstr(e.msg, "Invalid API token"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "a0b1c2d3"), "%s", e.msg);
    no_secret(e.msg);
    no_secret(res.answer);
    cr_assert_eq(svcapi_count(S, SVC_CHATWORK), 0);
    chatwork_free(&r);
    event_clear(&ev);
}

/* --- Pushover ------------------------------------------------------------ */

static struct receiver_conf pushover(const char *user)
{
    static char name[] = "phone";
    return (struct receiver_conf){.name = name,
                                  .type = RECEIVER_PUSHOVER,
                                  .pushover = {.token = xstrdup(SVC_PUSHOVER_TOKEN),
                                               .user = xstrdup(user),
                                               .retry = 60,
                                               .expire = 3600,
                                               .base_url = xstrdup(svcapi_base(S))},
                                  .timeout = 10};
}

static void pushover_free(struct receiver_conf *r)
{
    free(r->pushover.token);
    free(r->pushover.user);
    free(r->pushover.base_url);
}

/* The receipt in `refs`, or NULL. */
static const char *receipt_of(struct json_object *refs)
{
    struct json_object *v;
    return refs && json_object_object_get_ex(refs, "receipt", &v) ? json_object_get_string(v)
                                                                  : NULL;
}

Test(chatapis, pushover_opened_is_an_emergency_whose_receipt_is_kept)
{
    struct receiver_conf r = pushover(SVC_PUSHOVER_USER);
    struct event opened = alarm_of("Bulk Freezer", "CH1 Upper Limit Exceeded -65.0°C");
    about(&opened, 17, "opened");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send(&r, &opened, 1, &res, &e), 0, "%s", e.msg);
    struct svc_message *m = svcapi_message(S, SVC_PUSHOVER, 0);
    cr_assert_eq(m->priority, 2);
    cr_assert_eq(m->retry, 60);
    cr_assert_eq(m->expire, 3600);
    cr_assert_str_eq(m->tags, "wsrelay-17-5214000A-ch1");
    cr_assert_not_null(m->receipt);
    cr_assert_str_eq(receipt_of(res.refs), m->receipt, "the receipt is kept");
    cr_assert_not_null(strstr(m->title, "ALARM Bulk Freezer"), "%s", m->title);
    cr_assert_not_null(strstr(m->text, "Incident #17"), "%s", m->text);
    cr_assert_not_null(strstr(m->text, "CH1 Upper Limit Exceeded -65.0°C"), "%s", m->text);
    char *receipt = xstrdup(m->receipt);
    svc_message_free(m);
    json_object_put(res.refs);

    /* A reminder is a normal push; the resolution one too, and it stops
     * the phones. */
    struct event reminder = alarm_of("Bulk Freezer", "CH1 Upper Limit Exceeded -65.0°C");
    about(&reminder, 17, "reminder");
    cr_assert_eq(send(&r, &reminder, 1, &res, &e), 0, "%s", e.msg);
    cr_assert_null(res.refs);
    m = svcapi_message(S, SVC_PUSHOVER, 1);
    cr_assert_eq(m->priority, 0);
    cr_assert_null(m->receipt);
    cr_assert_not_null(strstr(m->title, "REMINDER 1 Bulk Freezer"), "%s", m->title);
    svc_message_free(m);
    cr_assert_not(svcapi_receipt_cancelled(S, receipt));
    struct event resolved = alarm_of("Bulk Freezer", "CH1 Measurement Recovery -80.0°C");
    about(&resolved, 17, "resolved");
    cr_assert_eq(send(&r, &resolved, 1, &res, &e), 0, "%s", e.msg);
    m = svcapi_message(S, SVC_PUSHOVER, 2);
    cr_assert_eq(m->priority, 0);
    cr_assert_not_null(strstr(m->title, "RESOLVED Bulk Freezer"), "%s", m->title);
    svc_message_free(m);
    cr_assert(svcapi_receipt_cancelled(S, receipt), "the resolution cancels the emergency");

    /* An alarm outside an incident is high priority, once. */
    struct event plain = alarm_of("Bulk Freezer", "CH1 Upper Limit Exceeded -65.0°C");
    cr_assert_eq(send(&r, &plain, 1, &res, &e), 0, "%s", e.msg);
    m = svcapi_message(S, SVC_PUSHOVER, 3);
    cr_assert_eq(m->priority, 1);
    cr_assert_null(m->receipt);
    svc_message_free(m);
    free(receipt);
    event_clear(&opened);
    event_clear(&reminder);
    event_clear(&resolved);
    event_clear(&plain);
    pushover_free(&r);
}

Test(chatapis, pushover_holds_title_and_message_to_their_limits)
{
    struct receiver_conf r = pushover(SVC_PUSHOVER_USER);
    char name[401], text[3001];
    memset(name, 'N', 400);
    name[400] = '\0';
    memset(text, 'x', 3000);
    text[3000] = '\0';
    struct event ev = alarm_of(name, text);
    about(&ev, 2, "opened");
    struct notify_result res;
    struct err e;
    cr_assert_eq(send(&r, &ev, 1, &res, &e), 0, "%s", e.msg);
    struct svc_message *m = svcapi_message(S, SVC_PUSHOVER, 0);
    cr_assert(strlen(m->title) <= 250 + 2, "%zu", strlen(m->title));
    cr_assert_not_null(strstr(m->title, "…"));
    cr_assert_not_null(strstr(m->text, "…"));
    svc_message_free(m);
    json_object_put(res.refs);
    event_clear(&ev);
    pushover_free(&r);
}

Test(chatapis, pushover_receipt_acknowledged_as_the_device_never_the_user_key)
{
    struct receiver_conf r = pushover(SVC_PUSHOVER_USER);
    struct event evs[2] = {alarm_of("A", "CH1 Upper Limit Exceeded"),
                           alarm_of("B", "CH1 Upper Limit Exceeded")};
    about(&evs[0], 1, "opened");
    about(&evs[1], 2, "opened");
    struct notify_result res[2];
    struct err e;
    for (int i = 0; i < 2; i++)
        cr_assert_eq(send(&r, &evs[i], 1, &res[i], &e), 0, "%s", e.msg);
    struct notify_open open[2] = {
        {.id = 1, .key = "5214000A/ch1", .first = &evs[0], .refs = res[0].refs},
        {.id = 2, .key = "5214000A/ch1", .first = &evs[1], .refs = res[1].refs}};
    struct notify_env env = {0};
    struct notify_ack *acks = NULL;
    size_t n = 9;
    cr_assert_eq(notify_collect(&env, &r, open, 2, 1795000200, &acks, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 0, "nobody acknowledged yet");
    cr_assert_eq(svcapi_receipt_polls(S), 2);
    cr_assert(svcapi_pushover_ack(S, receipt_of(res[1].refs), "pixel-7"));
    cr_assert_eq(notify_collect(&env, &r, open, 2, 1795000260, &acks, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(acks[0].id, 2);
    cr_assert_str_eq(acks[0].by, "pixel-7 (Pushover)");
    cr_assert_null(acks[0].note);
    notify_acks_free(acks, n);
    /* Acknowledged where Pushover names no device. */
    cr_assert(svcapi_pushover_ack(S, receipt_of(res[0].refs), NULL));
    cr_assert_eq(notify_collect(&env, &r, open, 2, 1795000320, &acks, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(acks[0].by, "Pushover user");
    for (size_t i = 0; i < n; i++)
        no_secret(acks[i].by);
    notify_acks_free(acks, n);
    /* A receipt Pushover does not know: an error, without the token. */
    struct json_object *unknown = json_object_new_object();
    json_object_object_add(unknown, "receipt",
                           json_object_new_string("rXunknownunknownunknownunknow1"));
    struct notify_open gone = {.id = 3, .key = "5214000A/ch1", .first = &evs[0], .refs = unknown};
    cr_assert_eq(notify_collect(&env, &r, &gone, 1, 1795000400, &acks, &n, &e), -1);
    cr_assert_null(acks);
    cr_assert_not_null(strstr(e.msg, "HTTP 404"), "%s", e.msg);
    no_secret(e.msg);
    json_object_put(unknown);
    json_object_put(res[0].refs);
    json_object_put(res[1].refs);
    event_clear(&evs[0]);
    event_clear(&evs[1]);
    pushover_free(&r);
}

Test(chatapis, pushover_answers_permanent_or_retried_without_secrets)
{
    struct event ev = alarm_of("Freezer", "CH1 Upper Limit Exceeded");
    struct notify_result res;
    struct err e;
    struct receiver_conf r = pushover(SVC_PUSHOVER_USER);
    svcapi_push_failure(S, SVC_PUSHOVER, 429);
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 429);
    cr_assert_not(res.permanent);
    svcapi_push_failure(S, SVC_PUSHOVER, 500);
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_not(res.permanent);
    no_secret(e.msg);
    pushover_free(&r);
    /* A user key Pushover does not know: 400, given up. */
    r = pushover("uWrongWrongWrongWrongWrongWron");
    cr_assert_eq(send(&r, &ev, 1, &res, &e), -1);
    cr_assert_eq(res.status, 400);
    cr_assert(res.permanent);
    cr_assert_not_null(strstr(e.msg, "user identifier"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "uWrongWrong"), "%s", e.msg);
    no_secret(e.msg);
    no_secret(res.answer);
    cr_assert_eq(svcapi_count(S, SVC_PUSHOVER), 0);
    pushover_free(&r);
    event_clear(&ev);
}
