/* Google Chat, Chatwork and Pushover through real `wsrelay run`s against
 * the simulator and the local server of their APIs (tests/support/
 * svcapi.c): a freezer's alarm opens an incident, a rule reminds of it,
 * its recovery resolves it. Google Chat and Chatwork get the alarm, the
 * reminder (Google Chat in the alarm's thread) and the resolution;
 * Pushover's emergency receipt, acknowledged on the server, acknowledges
 * the incident in the next run, which tells the others. No secret shows
 * in any output. */
#include "proc.h"
#include "relay.h"
#include "svcapi.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL
#define SERIAL "5214000A"
#define ALARM_AT (T0 + 300)
#define RECOVER_AT (T0 + 1500)
#define LOG_LAG 60
#define ALARM_RUN (ALARM_AT + LOG_LAG + 30)     /* sees the alarm */
#define REMIND_RUN (ALARM_RUN + 360)            /* 6 min later: a reminder (repeat: 5m) */
#define RECOVER_RUN (RECOVER_AT + LOG_LAG + 30) /* sees the recovery */

static struct relay R;
static struct svcapi *S;

static void teardown(void)
{
    svcapi_stop(S);
    relay_stop(&R);
}

TestSuite(chatapis_run, .fini = teardown, .timeout = 240);

/* A freezer at -80 that logs an alarm at ALARM_AT and, when `recovers`,
 * its recovery at RECOVER_AT; its name is `name` (JSON-escaped). */
static char *scenario(const char *name, bool recovers)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_printf(&b,
               "{\"serial\": \"" SERIAL "\", \"model\": \"TR-71A\", \"name\": \"%s\","
               " \"time_diff\": 540, \"channels\": [{\"name\": \"Temperature\", \"unit\": \"°C\","
               " \"value\": \"-80.0\"}], \"readings\": [",
               name);
    for (long long t = T0 - 1800; t <= RECOVER_RUN + 600; t += 60)
        buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                   t > T0 - 1800 ? "," : "", t + 20, t,
                   t >= ALARM_AT && t < RECOVER_AT ? "-65.0" : "-80.0");
    buf_printf(&b,
               "], \"alerts\": [{\"unixtime\": %lld, \"logged_at\": %lld, \"ch1\": "
               "\"CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)\"}",
               ALARM_AT, ALARM_AT + LOG_LAG);
    if (recovers)
        buf_printf(&b,
                   ",{\"unixtime\": %lld, \"logged_at\": %lld, \"ch1\": \"CH1 Measurement "
                   "Recovery -80.0°C\"}",
                   RECOVER_AT, RECOVER_AT + LOG_LAG);
    buf_puts(&b, "]}]}]}");
    return buf_steal(&b);
}

static void write_secret(const char *name, const char *value)
{
    char *path = xasprintf("%s/%s", R.dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(value, f);
    fclose(f);
    chmod(path, 0600);
    free(path);
}

/* The relay with the receivers `receivers` (YAML list items; "@SVC@" is
 * the local server's base URL) and a rule that sends everything of the
 * freezer to `to` and reminds every 5 minutes. */
static void start(const char *name, bool recovers, const char *receivers, const char *to)
{
    char *scen = scenario(name, recovers);
    relay_start(&R, scen);
    free(scen);
    S = svcapi_start();
    char *url = svcapi_gchat_url(S);
    write_secret("gchat-url", url);
    free(url);
    write_secret("cw-token", SVC_CHATWORK_TOKEN);
    write_secret("po-token", SVC_PUSHOVER_TOKEN);
    write_secret("po-user", SVC_PUSHOVER_USER);
    char *rules = xasprintf("- name: freezer\n"
                            "  match: {serial: \"" SERIAL "\"}\n"
                            "  receivers: [%s]\n"
                            "  repeat: 5m\n",
                            to);
    write_secret("rules.yaml", rules);
    free(rules);
    /* "@SVC@" by hand: relay_config knows its own placeholders only. */
    struct buf yaml;
    buf_init(&yaml, 0);
    for (const char *p = receivers; *p;) {
        const char *at = strstr(p, "@SVC@");
        if (!at) {
            buf_puts(&yaml, p);
            break;
        }
        buf_append(&yaml, p, (size_t)(at - p));
        buf_puts(&yaml, svcapi_base(S));
        p = at + 5;
    }
    R.incidents = true;
    relay_config_extra(&R, NULL, buf_str(&yaml), "rules: @DIR@/rules.yaml\n");
    buf_free(&yaml);
}

/* Runs `wsrelay run` at `now`, which must succeed; its stderr (caller
 * frees), checked for secrets. */
static char *run_at(long long now)
{
    char *err = NULL;
    int status = relay_run_at(&R, now, &err);
    cr_assert_eq(status, 0, "run at T0+%lld failed:\n%s", now - T0, err);
    static const char *const secrets[] = {SVC_GCHAT_KEY, SVC_GCHAT_TOKEN, SVC_CHATWORK_TOKEN,
                                          SVC_PUSHOVER_TOKEN, SVC_PUSHOVER_USER};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        cr_assert_null(strstr(err, secrets[i]), "a secret in the log:\n%s", err);
    return err;
}

#define RECEIVERS_CHAT                                                                             \
    "  - name: hook\n"                                                                             \
    "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: \"Bearer t0ken\"}}\n"             \
    "  - name: gchat\n"                                                                            \
    "    googlechat: {url_file: gchat-url}\n"                                                      \
    "  - name: cw\n"                                                                               \
    "    chatwork: {token_file: cw-token, room_id: \"" SVC_CHATWORK_ROOM "\", base_url: @SVC@}\n"

Test(chatapis_run, chats_get_the_alarm_its_reminder_threaded_and_the_resolution)
{
    start("Freezer *3* <users/all> [toall]", true, RECEIVERS_CHAT, "hook, gchat, cw");
    free(run_at(ALARM_RUN));
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 1);
    cr_assert_eq(svcapi_count(S, SVC_CHATWORK), 1);
    free(run_at(REMIND_RUN));
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 2, "the reminder");
    cr_assert_eq(svcapi_count(S, SVC_CHATWORK), 2, "the reminder");
    free(run_at(RECOVER_RUN));
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 3, "the resolution");
    cr_assert_eq(svcapi_count(S, SVC_CHATWORK), 3, "the resolution");

    /* Google Chat: one thread, named by the incident, each notice said. */
    static const char *const said[] = {"*New incident #", "*Reminder 1: incident #", "*Incident #"};
    struct svc_message *first = svcapi_message(S, SVC_GOOGLECHAT, 0);
    cr_assert_not_null(first->thread_key);
    cr_assert_not_null(strstr(first->thread_key, SERIAL "/ch1"), "%s", first->thread_key);
    for (size_t i = 0; i < 3; i++) {
        struct svc_message *m = svcapi_message(S, SVC_GOOGLECHAT, i);
        cr_assert_str_eq(m->thread_key, first->thread_key);
        cr_assert_str_eq(m->thread_name, first->thread_name, "message %zu in the thread", i);
        cr_assert_not_null(strstr(m->text, said[i]), "message %zu: %s", i, m->text);
        cr_assert_null(strstr(m->text, "<users/all>"), "%s", m->text);
        cr_assert_null(strstr(m->text, "*3*"), "%s", m->text);
        svc_message_free(m);
    }
    svc_message_free(first);
    struct svc_message *last = svcapi_message(S, SVC_GOOGLECHAT, 2);
    cr_assert_not_null(strstr(last->text, "resolved"), "%s", last->text);
    svc_message_free(last);

    /* Chatwork, in Japanese by default: 通知, リマインダー, 復帰. */
    static const char *const notices[] = {"【通知】", "【リマインダー 1】", "【復帰】"};
    for (size_t i = 0; i < 3; i++) {
        struct svc_message *m = svcapi_message(S, SVC_CHATWORK, i);
        cr_assert_not_null(strstr(m->text, notices[i]), "message %zu: %s", i, m->text);
        cr_assert_not_null(strstr(m->text, "[info][title]"), "%s", m->text);
        cr_assert_null(strstr(m->text, "[toall]"), "%s", m->text);
        cr_assert_str_eq(m->self_unread, "0");
        svc_message_free(m);
    }
}

/* wsrelay test-receiver reaches each service, and `check` and the test's
 * output show no secret. */
#define RECEIVERS_PUSH                                                                             \
    RECEIVERS_CHAT "  - name: phone\n"                                                             \
                   "    pushover: {token_file: po-token, user_file: po-user, retry: 30s, expire: " \
                   "1h, base_url: @SVC@}\n"

Test(chatapis_run, pushover_receipt_acknowledged_on_the_phone_acknowledges_the_incident)
{
    start("Freezer 3", false, RECEIVERS_PUSH, "hook, gchat, cw, phone");
    free(run_at(ALARM_RUN));
    cr_assert_eq(svcapi_count(S, SVC_PUSHOVER), 1);
    struct svc_message *m = svcapi_message(S, SVC_PUSHOVER, 0);
    cr_assert_eq(m->priority, 2, "the alarm is an emergency");
    cr_assert_eq(m->retry, 30);
    cr_assert_eq(m->expire, 3600);
    cr_assert_not_null(m->receipt);
    char *receipt = xstrdup(m->receipt);
    svc_message_free(m);

    /* The run asked at once, after delivery. Nobody has acknowledged yet:
     * the next run (which has nothing else to do) asks again and changes
     * nothing. */
    cr_assert_eq(svcapi_receipt_polls(S), 1);
    free(run_at(ALARM_RUN + 60));
    cr_assert_eq(svcapi_receipt_polls(S), 2, "a quiet run still asks for the receipt");
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 1);
    cr_assert_eq(svcapi_count(S, SVC_CHATWORK), 1);

    /* Acknowledged on the phone: the next run acknowledges the incident as
     * that device and tells every receiver. */
    cr_assert(svcapi_pushover_ack(S, receipt, "pixel-7"));
    char *err = run_at(ALARM_RUN + 120);
    cr_assert_not_null(strstr(err, "acknowledged by pixel-7 (Pushover) through receiver phone"),
                       "%s\npolls %zu", err, svcapi_receipt_polls(S));
    free(err);
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 2);
    cr_assert_eq(svcapi_count(S, SVC_CHATWORK), 2);
    struct svc_message *cw = svcapi_message(S, SVC_CHATWORK, 1);
    cr_assert_not_null(strstr(cw->text, "【確認済み】"), "%s", cw->text);
    cr_assert_not_null(strstr(cw->text, "確認者: pixel-7 ("), "%s", cw->text);
    svc_message_free(cw);
    struct svc_message *chat = svcapi_message(S, SVC_GOOGLECHAT, 1);
    cr_assert_not_null(strstr(chat->text, "acknowledged* by pixel-7 (Pushover)"), "%s", chat->text);
    svc_message_free(chat);
    cr_assert_eq(svcapi_count(S, SVC_PUSHOVER), 2);
    m = svcapi_message(S, SVC_PUSHOVER, 1);
    cr_assert_eq(m->priority, 0);
    cr_assert_not_null(strstr(m->title, "ACKNOWLEDGED Freezer 3"), "%s", m->title);
    svc_message_free(m);
    cr_assert(svcapi_receipt_cancelled(S, receipt), "the emergency stops");

    /* Acknowledged: no reminder, and the receipt is not asked again. */
    size_t polls = svcapi_receipt_polls(S);
    free(run_at(REMIND_RUN + 60));
    cr_assert_eq(svcapi_receipt_polls(S), polls);
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 2, "no reminder after the acknowledgement");

    /* The receipt is kept in the state; no secret is. */
    struct json_object *state = relay_state_doc(&R);
    const char *text = json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN);
    cr_assert_not_null(strstr(text, receipt), "%s", text);
    cr_assert_not_null(strstr(text, "\"acked_by\":\"pixel-7 (Pushover)\""), "%s", text);
    static const char *const secrets[] = {SVC_PUSHOVER_TOKEN, SVC_PUSHOVER_USER, SVC_GCHAT_TOKEN,
                                          SVC_CHATWORK_TOKEN};
    for (size_t i = 0; i < 4; i++)
        cr_assert_null(strstr(text, secrets[i]), "a secret in the state: %s", text);
    json_object_put(state);
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        cr_assert_null(strstr(rq->body, SVC_PUSHOVER_USER), "%s", rq->body);
        hook_request_free(rq);
    }
    free(receipt);
}

/* wsrelay test-receiver reaches each service, and `check` and the test's
 * output show no secret. */
Test(chatapis_run, test_receiver_and_check_reach_each_service_without_secrets)
{
    start("Freezer 3", true, RECEIVERS_PUSH, "hook");
    static const char *const names[] = {"gchat", "cw", "phone"};
    static const enum svc_service services[] = {SVC_GOOGLECHAT, SVC_CHATWORK, SVC_PUSHOVER};
    static const char *const secrets[] = {SVC_GCHAT_KEY, SVC_GCHAT_TOKEN, SVC_CHATWORK_TOKEN,
                                          SVC_PUSHOVER_TOKEN, SVC_PUSHOVER_USER};
    for (size_t i = 0; i < 3; i++) {
        struct cmd_result r = wsrelay_cmd(60, "-c", R.config_path, "test-receiver", names[i], NULL);
        cr_assert_eq(r.status, 0, "%s:\n%s%s", names[i], r.out, r.err);
        cr_assert_eq(svcapi_count(S, services[i]), 1, "%s", names[i]);
        for (size_t k = 0; k < 5; k++)
            cr_assert(!strstr(r.out, secrets[k]) && !strstr(r.err, secrets[k]), "%s:\n%s%s",
                      names[i], r.out, r.err);
        cmd_result_free(&r);
    }
    struct svc_message *m = svcapi_message(S, SVC_CHATWORK, 0);
    cr_assert_not_null(strstr(m->text, "テスト"), "%s", m->text);
    svc_message_free(m);
    m = svcapi_message(S, SVC_PUSHOVER, 0);
    cr_assert_not_null(strstr(m->title, "[TEST]"), "%s", m->title);
    cr_assert_neq(m->priority, 2, "a test is never an emergency");
    svc_message_free(m);
    struct cmd_result r = wsrelay_cmd(60, "-c", R.config_path, "check", NULL);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    for (size_t k = 0; k < 5; k++)
        cr_assert(!strstr(r.out, secrets[k]) && !strstr(r.err, secrets[k]), "%s%s", r.out, r.err);
    cmd_result_free(&r);
}

/* A Pushover that hangs when asked for a receipt costs the run no more
 * than the receiver's timeout and no alert: the next run asks again and
 * takes the acknowledgement. */
Test(chatapis_run, a_hanging_receipt_costs_its_timeout_and_nothing_else)
{
    start("Freezer 3", true,
          RECEIVERS_CHAT "  - name: phone\n"
                         "    pushover: {token_file: po-token, user_file: "
                         "po-user, base_url: @SVC@}\n"
                         "    timeout: 5s\n",
          "hook, gchat, phone");
    free(run_at(ALARM_RUN));
    struct svc_message *m = svcapi_message(S, SVC_PUSHOVER, 0);
    cr_assert_not_null(m->receipt);
    char *receipt = xstrdup(m->receipt);
    svc_message_free(m);
    svcapi_set_receipt_delay_ms(S, 7000);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    char *err = run_at(ALARM_RUN + 60);
    clock_gettime(CLOCK_MONOTONIC, &b);
    cr_assert_lt(b.tv_sec - a.tv_sec, 7, "the run took %ld s", (long)(b.tv_sec - a.tv_sec));
    cr_assert_not_null(strstr(err, "no complete answer within 5 s"), "%s", err);
    cr_assert_not_null(strstr(err, "nothing is lost"), "%s", err);
    free(err);
    /* The server is done waiting; acknowledged meanwhile. */
    svcapi_set_receipt_delay_ms(S, 0);
    sleep(3);
    cr_assert(svcapi_pushover_ack(S, receipt, "iphone"));
    err = run_at(ALARM_RUN + 120);
    cr_assert_not_null(strstr(err, "acknowledged by iphone (Pushover) through receiver phone"),
                       "%s", err);
    free(err);
    cr_assert_eq(svcapi_count(S, SVC_GOOGLECHAT), 2, "the alarm and the acknowledgement");
    free(receipt);
}
