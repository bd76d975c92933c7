/* The trend in an alarm's messages, end to end: a fridge whose readings
 * climb through its upper limit, the platform's alarm in its alert log,
 * and one `wsrelay run` against the real simulator, SMTP server and HTTP
 * sinks. The run reads the device's latest readings once (Get Latest
 * Data), and every receiver shows them: Slack and Teams as a sparkline
 * line, email as the same line and an inline PNG chart, the webhook
 * document as the trend object with its points. */
#include "relay.h"
#include "smtpd.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL
#define SERIAL "5214000A"
#define ALARM_AT (T0 - 1200)

static struct relay R;
static struct smtpd S;
static struct hooksink *slack, *teams;

static void teardown(void)
{
    hooksink_stop(slack);
    hooksink_stop(teams);
    slack = teams = NULL;
    smtpd_stop(&S);
    relay_stop(&R);
}

TestSuite(trend_messages, .fini = teardown, .timeout = 120);

/* Six hours of readings every 10 minutes: 4 °C give or take until an hour
 * ago, then a climb to 9.5 °C, through the limit of 8 °C 20 minutes ago. */
static const char *reading_at(long long t)
{
    static const char *const calm[] = {"4.1", "3.9", "4.0", "4.2"};
    static const char *const climb[] = {"4.4", "5.6", "7.1", "8.3", "8.9", "9.3", "9.5"};
    long long ago = T0 - t;
    if (ago > 3600)
        return calm[(ago / 600) % 4];
    return climb[6 - ago / 600];
}

static char *scenario(const char *extra_device_keys)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_printf(&b,
               "{\"serial\": \"" SERIAL "\", \"model\": \"TR-72wb\", \"name\": \"冷蔵庫 3\","
               " \"time_diff\": 540, \"data_id\": 65530%s,"
               " \"channels\": [{\"name\": \"温度\", \"unit\": \"°C\", \"value\": \"9.5\"}],"
               " \"readings\": [",
               extra_device_keys);
    for (long long t = T0 - 6 * 3600; t <= T0; t += 600)
        buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                   t > T0 - 6 * 3600 ? "," : "", t + 30, t, reading_at(t));
    buf_printf(&b,
               "], \"alerts\": [{\"unixtime\": %lld,"
               " \"ch1\": \"CH1 Upper Limit Exceeded 8.3°C (limit 8.0°C)\"}]}]}]}",
               ALARM_AT);
    return buf_steal(&b);
}

/* The fridge's account, with its limit configured, and `trend` and
 * `signals` as given. */
static char *account(const char *trend, const char *signals)
{
    return xasprintf("  - name: lab\n"
                     "    base_url: @BASE_URL@\n"
                     "    api_key: \"${TEST_API_KEY}\"\n"
                     "    login_id: " RELAY_LOGIN "\n"
                     "    login_pass_file: pass.txt\n"
                     "    signals: %s\n"
                     "    trend: %s\n"
                     "    limits:\n"
                     "      - {serial: \"5214*\", channel: 1, upper: 8}\n",
                     signals, trend);
}

/* Starts everything: the webhook "hook" (relay.h), Slack, Teams and email. */
static void start(const char *extra_device_keys, const char *trend)
{
    char *scen = scenario(extra_device_keys);
    relay_start(&R, scen);
    free(scen);
    smtpd_start(&S, R.dir, NULL);
    slack = hooksink_start();
    teams = hooksink_start();
    char *receivers = xasprintf("  - name: hook\n"
                                "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: "
                                "\"Bearer t0ken\"}}\n"
                                "  - name: chat\n"
                                "    slack: {url: \"%s\"}\n"
                                "  - name: card\n"
                                "    teams: {url: \"%s\"}\n"
                                "  - name: mail\n"
                                "    email:\n"
                                "      host: 127.0.0.1\n"
                                "      port: %d\n"
                                "      starttls: \"off\"\n"
                                "      from: \"wsrelay <relay@example.org>\"\n"
                                "      to: \"oncall@example.org\"\n",
                                hooksink_url(slack), hooksink_url(teams), S.port);
    char *acct = account(trend, "false");
    relay_config(&R, acct, receivers);
    free(acct);
    free(receivers);
}

static char *body_of(struct hooksink *h, size_t i)
{
    cr_assert_geq(hooksink_count(h), i + 1, "request %zu never came", i);
    struct hook_request *rq = hooksink_request(h, i);
    char *body = xstrdup(rq->body);
    hook_request_free(rq);
    return body;
}

/* How many calls of operation `op` the simulator served. */
static size_t calls_of(const char *op)
{
    struct json_object *stats = sim_stats(&R.sim), *calls = NULL;
    cr_assert(json_object_object_get_ex(stats, "calls", &calls));
    size_t n = 0;
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        struct json_object *c = json_object_array_get_idx(calls, i), *v = NULL;
        n += json_object_object_get_ex(c, "op", &v) && !strcmp(json_object_get_string(v), op);
    }
    json_object_put(stats);
    return n;
}

static const char *str_member(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(o, key, &v) && v, "no %s in %s", key,
              json_object_to_json_string(o));
    return json_object_get_string(v);
}

/* The sparkline of the climb: 37 readings over 6 hours in 24 buckets. */
#define LINE "last 6 h: 3.9 to 9.5 °C, now 9.5 (rising)"

Test(trend_messages, every_receiver_shows_the_climb)
{
    start("", "true");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 60, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(calls_of("latest-data"), 1, "one Get Latest Data call for the alarm");

    /* The webhook document carries the trend whole. */
    char *doc_text = body_of(R.hook, 0);
    struct json_object *doc = json_tokener_parse(doc_text), *events, *trend, *points, *v;
    cr_assert_not_null(doc, "%s", doc_text);
    cr_assert(json_object_object_get_ex(doc, "events", &events));
    cr_assert(json_object_object_get_ex(json_object_array_get_idx(events, 0), "trend", &trend));
    cr_assert_not_null(trend, "%s", doc_text);
    const char *sparkline = str_member(trend, "sparkline");
    cr_assert_eq(strlen(sparkline), 24 * 3, "24 blocks: %s", sparkline);
    cr_assert_str_eq(str_member(trend, "direction"), "rising");
    cr_assert_str_eq(str_member(trend, "max"), "9.5");
    cr_assert_str_eq(str_member(trend, "upper_limit"), "8");
    cr_assert(json_object_object_get_ex(trend, "points", &points));
    cr_assert_eq(json_object_array_length(points), 37);
    /* Data-ids wrap from 65535 to 0 on the way, and are kept. */
    struct json_object *p6 = json_object_array_get_idx(points, 6);
    cr_assert(json_object_object_get_ex(trend, "upper", &v));
    cr_assert_eq(json_object_get_int(json_object_array_get_idx(p6, 1)), 0);
    char *line = xasprintf("%s  " LINE, sparkline);

    /* Slack and Teams show the sparkline line as text. */
    char *chat = body_of(slack, 0);
    cr_assert(strstr(chat, line), "%s\nnot in\n%s", line, chat);
    char *card = body_of(teams, 0);
    cr_assert(strstr(card, line), "%s\nnot in\n%s", line, card);
    cr_assert(strstr(card, "\"fontType\":\"Monospace\""), "%s", card);

    /* The mail: the line in its text, and the chart inline in its HTML. */
    cr_assert_eq(smtpd_count(&S), 1);
    struct json_object *mail = smtpd_mail(&S, 0), *parts, *defects;
    cr_assert(json_object_object_get_ex(mail, "defects", &defects));
    cr_assert_eq(json_object_array_length(defects), 0, "%s", json_object_to_json_string(defects));
    cr_assert(json_object_object_get_ex(mail, "parts", &parts));
    cr_assert_eq(json_object_array_length(parts), 3, "%s", json_object_to_json_string(parts));
    struct json_object *text = json_object_array_get_idx(parts, 0);
    struct json_object *html = json_object_array_get_idx(parts, 1);
    struct json_object *png = json_object_array_get_idx(parts, 2);
    cr_assert_str_eq(str_member(text, "type"), "text/plain");
    cr_assert(strstr(str_member(text, "body"), line), "%s", str_member(text, "body"));
    cr_assert_str_eq(str_member(html, "type"), "text/html");
    cr_assert(strstr(str_member(html, "body"), "<img src=\"cid:chart-1@wsrelay\""), "%s",
              str_member(html, "body"));
    cr_assert_str_eq(str_member(png, "type"), "image/png");
    cr_assert_str_eq(str_member(png, "content_id"), "<chart-1@wsrelay>");
    cr_assert_str_eq(str_member(png, "disposition"), "inline");
    cr_assert_str_eq(str_member(png, "filename"), SERIAL "-ch1.png");
    cr_assert(json_object_object_get_ex(png, "size", &v));
    cr_assert_lt(json_object_get_int(v), 40 * 1024, "a chart under 40 KB");
    cr_assert_gt(json_object_get_int(v), 1000);
    const char *hex = str_member(png, "hex");
    cr_assert_eq(strncmp(hex, "89504e470d0a1a0a", 16), 0, "a PNG: %.16s", hex);
    /* IHDR: 600 by 300 pixels. */
    cr_assert_eq(strncmp(hex + 32,
                         "0000025800000"
                         "12c",
                         16),
                 0, "%.48s", hex);

    /* The picture of an alarm mail's chart in docs/HOW-IT-WORKS.md comes from
     * here. */
    const char *out = getenv("WSRELAY_CHART_OUT");
    if (out && *out) {
        FILE *f = fopen(out, "wb");
        cr_assert_not_null(f, "%s", out);
        for (const char *h = hex; h[0] && h[1]; h += 2) {
            unsigned byte = 0;
            sscanf(h, "%2x", &byte);
            fputc((int)byte, f);
        }
        fclose(f);
    }
    json_object_put(mail);
    free(card);
    free(chat);
    free(line);
    json_object_put(doc);
    free(doc_text);
}

Test(trend_messages, a_device_without_graph_data_is_told_without_its_trend)
{
    start(", \"graph_supported\": false", "true");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 60, &err), 0, "the trend is an extra: %s", err);
    free(err);
    cr_assert_eq(calls_of("latest-data"), 1, "asked once, refused");
    char *chat = body_of(slack, 0);
    cr_assert(strstr(chat, "Upper Limit Exceeded 8.3°C"), "%s", chat);
    cr_assert_null(strstr(chat, "last 6 h"), "%s", chat);
    cr_assert_eq(smtpd_count(&S), 1);
    char *raw = smtpd_raw(&S, 0);
    cr_assert_null(strstr(raw, "image/png"), "no chart without readings");
    free(raw);
    free(chat);
}

Test(trend_messages, trend_false_makes_no_call)
{
    start("", "false");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 60, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(calls_of("latest-data"), 0);
    char *doc = body_of(R.hook, 0);
    cr_assert(strstr(doc, "\"trend\": null") || strstr(doc, "\"trend\":null"), "%s", doc);
    free(doc);
}

/* FLEET fridges of one account, calm at 4 °C for an hour and all at 9.5
 * in the reading of T0: one run sees every one of them cross the limit. */
#define FLEET 12
static char *fleet_scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int i = 0; i < FLEET; i++) {
        buf_printf(&b,
                   "%s{\"serial\": \"521400%02d\", \"model\": \"TR-72wb\","
                   " \"channels\": [{\"name\": \"温度\", \"unit\": \"°C\", \"value\": \"4.0\"}],"
                   " \"readings\": [",
                   i ? "," : "", i);
        for (long long t = T0 - 3600; t <= T0; t += 600)
            buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                       t > T0 - 3600 ? "," : "", t + 30, t, t < T0 ? "4.0" : "9.5");
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

Test(trend_messages, an_account_reads_ten_devices_a_run_one_call_at_a_time)
{
    char *scen = fleet_scenario();
    relay_start(&R, scen);
    free(scen);
    char *acct = account("true", "true"); /* early warnings come with signals */
    relay_config(&R, acct, NULL);
    free(acct);
    char *err = NULL;
    for (long long t = T0 - 540; t <= T0 + 60; t += 600) {
        free(err);
        cr_assert_eq(relay_run_at(&R, t, &err), 0, "run at T0%+lld: %s", t - T0, err);
    }
    /* Every fridge's early warning went out; ten of them with a trend. */
    size_t n = 0, with_trend = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, FLEET, "%s\nthe last run's log:\n%s", keys, err);
    free(err);
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        char *doc_text = body_of(R.hook, i);
        struct json_object *doc = json_tokener_parse(doc_text), *events, *trend;
        cr_assert(json_object_object_get_ex(doc, "events", &events), "%s", doc_text);
        for (size_t k = 0; k < json_object_array_length(events); k++) {
            struct json_object *ev = json_object_array_get_idx(events, k);
            with_trend += json_object_object_get_ex(ev, "trend", &trend) && trend;
        }
        json_object_put(doc);
        free(doc_text);
    }
    cr_assert_eq(with_trend, 10, "%zu events had a trend", with_trend);
    cr_assert_eq(calls_of("latest-data"), 10);
    /* One client, one call at a time. */
    struct json_object *stats = sim_stats(&R.sim), *by_op = NULL, *v = NULL;
    cr_assert(json_object_object_get_ex(stats, "max_in_flight_by_op", &by_op));
    cr_assert(json_object_object_get_ex(by_op, "latest-data", &v));
    cr_assert_eq(json_object_get_int(v), 1);
    json_object_put(stats);
    free(keys);
}

Test(trend_messages, an_html_template_without_the_chart_sends_no_image)
{
    char *scen = scenario("");
    relay_start(&R, scen);
    free(scen);
    smtpd_start(&S, R.dir, NULL);
    char *tmpl = xasprintf("%s/plain.html", R.dir);
    FILE *f = fopen(tmpl, "w");
    cr_assert_not_null(f);
    fputs("<p>{{#events}}{{text}} {{#trend}}{{sparkline}}{{/trend}}{{/events}}</p>\n", f);
    fclose(f);
    char *receivers = xasprintf("  - name: mail\n"
                                "    email:\n"
                                "      host: 127.0.0.1\n"
                                "      port: %d\n"
                                "      starttls: \"off\"\n"
                                "      from: \"wsrelay <relay@example.org>\"\n"
                                "      to: \"oncall@example.org\"\n"
                                "      html_template: %s\n",
                                S.port, tmpl);
    char *acct = account("true", "false");
    relay_config(&R, acct, receivers);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 60, &err), 0, "%s", err);
    free(err);
    cr_assert_eq(calls_of("latest-data"), 1);
    cr_assert_eq(smtpd_count(&S), 1);
    char *raw = smtpd_raw(&S, 0);
    cr_assert_null(strstr(raw, "image/png"), "a chart no part shows is left out");
    cr_assert_null(strstr(raw, "multipart/related"), "%s", raw);
    free(raw);
    free(acct);
    free(receivers);
    free(tmpl);
}
