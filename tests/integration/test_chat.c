/* The Slack and Teams receivers end to end: the real binary, the
 * simulator, and a local server that answers as the services do (Slack:
 * 200 "ok", 400 "invalid_payload", 429 with Retry-After, 500; Teams: 202,
 * 400, 429, 500). */
#include "proc.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL

static struct relay R;

static void teardown(void)
{
    relay_stop(&R);
}

/* `devices` devices 5214A0NN with `alerts` recent alerts each, whose texts
 * are padded to about `text_len` bytes. */
static void start(int devices, int alerts, size_t text_len, const char *receivers)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int d = 0; d < devices; d++) {
        buf_printf(&b, "%s{\"serial\": \"5214A0%02d\", \"name\": \"冷凍庫 %d\", \"alerts\": [",
                   d ? "," : "", d, d);
        for (int a = 0; a < alerts; a++) {
            buf_printf(&b, "%s{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded %d.0°C ",
                       a ? "," : "", T0 - 600 + a, a);
            for (size_t i = 40; i < text_len; i++)
                buf_puts(&b, "x");
            buf_puts(&b, "\"}");
        }
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}]}");
    relay_start(&R, buf_str(&b));
    buf_free(&b);
    relay_config(&R, NULL, receivers);
}

static void strings_of(struct buf *out, struct json_object *v);

/* The devices of `devices` (JSON objects of the scenario, comma
 * separated) and the receivers `receivers`. */
static void start_devices(const char *devices, const char *receivers)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_puts(&b, devices);
    buf_puts(&b, "]}]}");
    relay_start(&R, buf_str(&b));
    buf_free(&b);
    relay_config(&R, NULL, receivers);
}

static const char slack_and_log[] = "  - name: lab-slack\n"
                                    "    slack: {url: \"@HOOK_URL@\"}\n"
                                    "  - name: log\n"
                                    "    file: {path: \"@OUT@\"}\n";

static const char teams_only[] = "  - name: lab-teams\n"
                                 "    teams: {url: \"@HOOK_URL@\"}\n";

static struct json_object *request_json(size_t i)
{
    struct hook_request *rq = hooksink_request(R.hook, i);
    cr_assert_not_null(rq, "no request %zu", i);
    struct json_object *doc = json_tokener_parse(rq->body);
    cr_assert_not_null(doc, "not JSON: %s", rq->body);
    hook_request_free(rq);
    return doc;
}

static struct json_object *path(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no '%s' in %s", key,
              json_object_to_json_string(obj));
    return v;
}

Test(chat, slack_gets_block_kit_with_a_text_fallback, .fini = teardown, .timeout = 60)
{
    start(1, 1, 0, slack_and_log);
    hooksink_push_reply(R.hook, 200, "ok", 0);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1);
    struct json_object *doc = request_json(0);
    const char *text = json_object_get_string(path(doc, "text"));
    cr_assert(strstr(text, "ALARM 冷凍庫 0: CH1 Upper Limit Exceeded 0.0°C"), "%s", text);
    struct json_object *blocks = path(doc, "blocks");
    cr_assert_geq(json_object_array_length(blocks), 2);
    cr_assert_str_eq(json_object_get_string(path(json_object_array_get_idx(blocks, 0), "type")),
                     "header");
    json_object_put(doc);
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1, "sent once");
}

Test(chat, slack_errors_are_permanent_and_do_not_hold_other_receivers, .fini = teardown,
     .timeout = 60)
{
    start(1, 1, 0, slack_and_log);
    hooksink_push_reply(R.hook, 400, "invalid_payload", 0);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert(strstr(err, "HTTP 400: invalid_payload"), "the answer as it came: %s", err);
    cr_assert(strstr(err, "given up for receiver lab-slack"), "%s", err);
    free(err);
    char *text = read_file_str(R.out_path);
    cr_assert(text && strstr(text, "CH1 Upper Limit Exceeded 0.0°C"), "the file receiver got it");
    free(text);
    for (int i = 1; i < 4; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 3600, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1, "not retried forever");
}

Test(chat, slack_429_waits_for_retry_after_and_500_is_retried, .fini = teardown, .timeout = 60)
{
    start(1, 1, 0, slack_and_log);
    hooksink_push_reply(R.hook, 429, "rate_limited", 300);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    hooksink_push_reply(R.hook, 500, "internal_error", 0);
    cr_assert_eq(relay_run_at(&R, T0 + 120, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1, "not before Retry-After");
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 1, "500: kept for later");
    cr_assert_eq(hooksink_count(R.hook), 2);
    hooksink_push_reply(R.hook, 200, "ok", 0);
    cr_assert_eq(relay_run_at(&R, T0 + 900, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 3);
}

/* Two devices of 19 alerts (20 would be a full first page, which adds a
 * gap event): 38 events, beyond one message's 50 blocks, in two whole
 * messages. */
Test(chat, slack_sends_what_does_not_fit_in_another_message, .fini = teardown, .timeout = 60)
{
    start(2, 19, 300, slack_and_log);
    hooksink_set_status(R.hook, 500);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 1);
    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 2, "two messages for 38 events");
    struct buf all;
    buf_init(&all, 0);
    for (size_t i = 0; i < 2; i++) {
        struct json_object *doc = request_json(i);
        struct json_object *blocks = path(doc, "blocks");
        cr_assert_leq(json_object_array_length(blocks), 50);
        const char *shown = json_object_to_json_string(blocks);
        cr_assert_null(strstr(shown, "more (the full list"), "%s", shown);
        char *part = xasprintf("(message %zu of 2)", i + 1);
        cr_assert(strstr(shown, part), "%s", shown);
        free(part);
        const char *text = json_object_get_string(path(doc, "text"));
        cr_assert_lt(strlen(text), 4000 * 4);
        strings_of(&all, blocks);
        json_object_put(doc);
    }
    for (int d = 0; d < 2; d++)
        for (int a = 0; a < 19; a++) {
            char *want = xasprintf("冷凍庫 %d", d);
            cr_assert(strstr(buf_str(&all), want));
            free(want);
            want = xasprintf("CH1 Upper Limit Exceeded %d.0°C x", a);
            cr_assert_eq(occurrences(buf_str(&all), want), 2, "alert %d of each device", a);
            free(want);
        }
    buf_free(&all);
}

/* Six devices of 19 alerts that Slack refused for a while: 114 events, five
 * messages of at most 23 events, at least a second apart. */
Test(chat, slack_posts_are_paced, .fini = teardown, .timeout = 120)
{
    start(6, 19, 0, slack_and_log);
    hooksink_set_status(R.hook, 500);
    for (int i = 0; i < 6; i++)
        relay_run_at(&R, T0 + i * 300, NULL);
    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 6 * 3600, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 5);
    for (size_t i = 1; i < 5; i++) {
        struct hook_request *a = hooksink_request(R.hook, i - 1), *b = hooksink_request(R.hook, i);
        cr_assert_geq(b->at - a->at, 0.95, "%.3f s apart", b->at - a->at);
        hook_request_free(a);
        hook_request_free(b);
    }
}

Test(chat, teams_gets_an_adaptive_card_and_202_is_success, .fini = teardown, .timeout = 60)
{
    start(1, 1, 0, teams_only);
    hooksink_push_reply(R.hook, 202, "", 0);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct json_object *doc = request_json(0);
    cr_assert_str_eq(json_object_get_string(path(doc, "type")), "message");
    struct json_object *att = json_object_array_get_idx(path(doc, "attachments"), 0);
    cr_assert_str_eq(json_object_get_string(path(att, "contentType")),
                     "application/vnd.microsoft.card.adaptive");
    struct json_object *card = path(att, "content");
    cr_assert_str_eq(json_object_get_string(path(card, "type")), "AdaptiveCard");
    cr_assert_str_eq(json_object_get_string(path(card, "version")), "1.4");
    cr_assert(strstr(json_object_to_json_string(card), "冷凍庫 0"), "the device by name");
    json_object_put(doc);
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1);
}

Test(chat, teams_retries_429_and_500_and_gives_up_400, .fini = teardown, .timeout = 60)
{
    start(1, 1, 0, teams_only);
    hooksink_push_reply(R.hook, 429, "", 200);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    cr_assert_eq(relay_run_at(&R, T0 + 100, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1, "not before Retry-After");
    hooksink_push_reply(R.hook, 500, "", 0);
    cr_assert_eq(relay_run_at(&R, T0 + 200, NULL), 1);
    hooksink_push_reply(R.hook, 400, "Bad card", 0);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 3600, &err), 1);
    cr_assert(strstr(err, "given up for receiver lab-teams"), "%s", err);
    free(err);
    cr_assert_eq(relay_run_at(&R, T0 + 7200, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 3);
}

/* 38 events of about 900 bytes: more than one card's 28 KB, so several
 * cards, each under it, that show every event. */
Test(chat, a_teams_card_stays_under_28_kb, .fini = teardown, .timeout = 60)
{
    start(2, 19, 900, teams_only);
    hooksink_set_status(R.hook, 500);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1);
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 1);
    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 202);
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 0);
    size_t cards = hooksink_count(R.hook);
    cr_assert_gt(cards, 1);
    struct buf all;
    buf_init(&all, 0);
    for (size_t i = 0; i < cards; i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        cr_assert_leq(strlen(rq->body), 28 * 1024, "%zu bytes", strlen(rq->body));
        cr_assert_null(strstr(rq->body, "more (the full list"), "nothing left out");
        buf_puts(&all, rq->body);
        hook_request_free(rq);
    }
    for (int a = 0; a < 19; a++) {
        char *want = xasprintf("CH1 Upper Limit Exceeded %d.0°C x", a);
        cr_assert_eq(occurrences(buf_str(&all), want), 2, "alert %d of each device", a);
        free(want);
    }
    buf_free(&all);
}

/* 114 events: five messages. Slack refuses the first for good; the
 * others, never tried, are not given up with it and go out on the next
 * run. */
Test(chat, a_refused_message_does_not_take_the_unsent_ones_with_it, .fini = teardown,
     .timeout = 120)
{
    start(6, 19, 0, slack_and_log);
    hooksink_set_status(R.hook, 500);
    for (int i = 0; i < 6; i++)
        relay_run_at(&R, T0 + i * 300, NULL);
    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    hooksink_push_reply(R.hook, 400, "invalid_payload", 0);
    cr_assert_eq(relay_run_at(&R, T0 + 6 * 3600, NULL), 1);
    cr_assert_eq(hooksink_count(R.hook), 1, "nothing more in the run that failed");
    cr_assert_eq(relay_run_at(&R, T0 + 6 * 3600 + 60, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 5, "the untried messages go out next");
    struct json_object *doc = request_json(4);
    const char *text = json_object_get_string(path(doc, "text"));
    cr_assert(strstr(text, "🔴 22 alarms"), "%s", text);
    cr_assert(strstr(text, "(message 4 of 4)"), "%s", text);
    json_object_put(doc);
}

/* A custom template's file name does not choose the escaping: a device
 * name with quotes and a backslash cannot break a Slack payload. */
Test(chat, a_custom_template_is_escaped_for_its_role, .fini = teardown, .timeout = 60)
{
    relay_start(&R, "{\"now\": 1795000000, \"accounts\": [{\"api_key\": \"@API_KEY@\", "
                    "\"login_id\": \"@LOGIN@\", \"login_pass\": \"@PASSWORD@\", \"devices\": "
                    "[{\"serial\": \"5214A000\", \"name\": \"Freezer \\\"A\\\" C:\\\\lab\", "
                    "\"alerts\": [{\"unixtime\": 1794999940, \"ch1\": \"CH1 x\"}]}]}]}");
    char *tpl = xasprintf("%s/mine.tmpl", R.dir);
    write_file(tpl, "{\"text\": \"{{#events}}{{name}}{{/events}}\", \"channel\": \"#alerts\"}\n");
    relay_config(&R, NULL,
                 "  - name: lab-slack\n"
                 "    slack: {url: \"@HOOK_URL@\", template: mine.tmpl}\n");
    hooksink_push_reply(R.hook, 200, "ok", 0);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct json_object *doc = request_json(0);
    cr_assert_str_eq(json_object_get_string(path(doc, "text")), "Freezer \"A\" C:\\lab");
    cr_assert_str_eq(json_object_get_string(path(doc, "channel")), "#alerts");
    json_object_put(doc);
    free(tpl);
}

/* A template whose output is not one standard JSON object is never sent. */
Test(chat, a_template_that_does_not_make_json_is_not_sent, .fini = teardown, .timeout = 60)
{
    start(1, 1, 0, NULL);
    char *tpl = xasprintf("%s/broken.json", R.dir);
    write_file(tpl, "{\"count\": {{count}}} and more\n");
    relay_config(&R, NULL,
                 "  - name: hook\n"
                 "    webhook: {url: \"@HOOK_URL@\", template: broken.json}\n");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert(strstr(err, "webhook.json template made a document that cannot be sent"), "%s", err);
    cr_assert(strstr(err, "given up for receiver hook"), "%s", err);
    free(err);
    cr_assert_eq(hooksink_count(R.hook), 0);
    free(tpl);
}

/* One device named `name` (JSON string content) with one alarm whose text
 * is `text`, and the receivers `receivers`. */
static void start_one(const char *name, const char *text, const char *receivers)
{
    char *scenario = xasprintf(
        "{\"now\": %lld, \"accounts\": [{\"api_key\": \"@API_KEY@\", \"login_id\": \"@LOGIN@\", "
        "\"login_pass\": \"@PASSWORD@\", \"devices\": [{\"serial\": \"5214A000\", \"model\": "
        "\"TR-72A2\", \"name\": \"%s\", \"alerts\": [{\"unixtime\": %lld, \"ch1\": \"%s\"}]}]}]}",
        T0, name, T0 - 60, text);
    relay_start(&R, scenario);
    relay_config(&R, NULL, receivers);
    free(scenario);
}

/* Markup that people type into device names and that a platform could
 * carry in an alert text: Slack's mentions and links, Markdown. */
#define HOSTILE_NAME "<!channel> <@U123> **bold** [link](http://evil) & _it_"
#define HOSTILE_TEXT                                                                               \
    "CH1 Upper Limit Exceeded -70.2 <http://evil|click> <!here> & [link](http://evil) **bold**"

/* Every string of `v`, one a line. */
static void strings_of(struct buf *out, struct json_object *v)
{
    if (json_object_is_type(v, json_type_string)) {
        buf_puts(out, json_object_get_string(v));
        buf_puts(out, "\n");
    } else if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++)
            strings_of(out, json_object_array_get_idx(v, i));
    } else if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, key, val)
        {
            (void)key;
            strings_of(out, val);
        }
    }
}

Test(chat, slack_gets_platform_markup_escaped, .fini = teardown, .timeout = 60)
{
    start_one(HOSTILE_NAME, HOSTILE_TEXT, slack_and_log);
    hooksink_push_reply(R.hook, 200, "ok", 0);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct json_object *doc = request_json(0);
    struct buf all;
    buf_init(&all, 0);
    strings_of(&all, doc);
    const char *s = buf_str(&all);
    cr_assert_null(strstr(s, "<!channel>"), "%s", s);
    cr_assert_null(strstr(s, "<!here>"), "%s", s);
    cr_assert_null(strstr(s, "<@U123>"), "%s", s);
    cr_assert_null(strstr(s, "<http"), "%s", s);
    /* Slack shows its entities as the characters: nothing is lost. */
    const char *text = json_object_get_string(path(doc, "text"));
    cr_assert(strstr(text, "🔴 ALARM &lt;!channel&gt; &lt;@U123&gt; **bold** "
                           "[link](http://evil) &amp; _it_: CH1 Upper Limit Exceeded -70.2 "
                           "&lt;http://evil|click&gt; &lt;!here&gt; &amp;"),
              "%s", text);
    struct json_object *header = json_object_array_get_idx(path(doc, "blocks"), 0);
    cr_assert_str_eq(json_object_get_string(path(path(header, "text"), "text")),
                     "🔴 ALARM &lt;!channel&gt; &lt;@U123&gt; **bold** [link](http://evil) "
                     "&amp; _it_");
    cr_assert_str_eq(json_object_get_string(path(path(header, "text"), "type")), "plain_text");
    buf_free(&all);
    json_object_put(doc);
    /* The file receiver writes the text as it came. */
    char *out = read_file_str(R.out_path);
    cr_assert(out && strstr(out, HOSTILE_TEXT), "%s", out ? out : "");
    free(out);
}

Test(chat, teams_gets_platform_markdown_made_inert, .fini = teardown, .timeout = 60)
{
    start_one(HOSTILE_NAME, HOSTILE_TEXT, teams_only);
    hooksink_push_reply(R.hook, 202, "", 0);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct json_object *doc = request_json(0);
    struct json_object *att = json_object_array_get_idx(path(doc, "attachments"), 0);
    struct json_object *body = path(path(att, "content"), "body");
    struct buf all;
    buf_init(&all, 0);
    strings_of(&all, body);
    const char *s = buf_str(&all);
    cr_assert_null(strstr(s, "]("), "no link can form: %s", s);
    cr_assert_null(strstr(s, "**"), "no emphasis can form: %s", s);
    /* The device's TextBlock: wsrelay's own look (size, weight, colour)
     * stays, the name's Markdown is escaped. */
    struct json_object *title = json_object_array_get_idx(body, 1);
    cr_assert_str_eq(json_object_get_string(path(title, "text")),
                     "🔴 ALARM <!channel> <@U123> \\*\\*bold\\*\\* [link]\xE2\x80\x8B(http://evil) "
                     "& \\_it\\_");
    cr_assert_str_eq(json_object_get_string(path(title, "weight")), "Bolder");
    cr_assert_str_eq(json_object_get_string(path(title, "color")), "Attention");
    struct json_object *text = json_object_array_get_idx(body, 2);
    cr_assert_str_eq(json_object_get_string(path(text, "text")),
                     "CH1 Upper Limit Exceeded -70.2 <http://evil|click> <!here> & "
                     "[link]\xE2\x80\x8B(http://evil) \\*\\*bold\\*\\*");
    buf_free(&all);
    json_object_put(doc);
}

/* The escaping belongs to the role: a receiver's own Slack template that
 * writes mrkdwn and a link of its own keeps them, and the device's name
 * still cannot mention anyone. */
Test(chat, a_custom_slack_template_keeps_its_markup_and_escapes_values, .fini = teardown,
     .timeout = 60)
{
    start_one(HOSTILE_NAME, HOSTILE_TEXT, NULL);
    char *tpl = xasprintf("%s/mine.tmpl", R.dir);
    write_file(tpl, "{\"text\": \"{{#events}}*{{name}}* <https://example.com/d/{{serial}}|details>"
                    "{{/events}}\"}\n");
    relay_config(&R, NULL,
                 "  - name: lab-slack\n"
                 "    slack: {url: \"@HOOK_URL@\", template: mine.tmpl}\n");
    hooksink_push_reply(R.hook, 200, "ok", 0);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct json_object *doc = request_json(0);
    cr_assert_str_eq(json_object_get_string(path(doc, "text")),
                     "*&lt;!channel&gt; &lt;@U123&gt; **bold** [link](http://evil) &amp; _it_* "
                     "<https://example.com/d/5214A000|details>");
    json_object_put(doc);
    free(tpl);
}

/* Slack's fallback text is cut at 3,900 characters, never inside one of
 * the entities of the escaping (half of one would show as text). */
Test(chat, slack_text_is_cut_between_entities, .fini = teardown, .timeout = 60)
{
    char text[2001];
    memset(text, '&', 2000);
    text[2000] = '\0';
    start_one("Freezer", text, slack_and_log);
    hooksink_push_reply(R.hook, 200, "ok", 0);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct json_object *doc = request_json(0);
    const char *cut = json_object_get_string(path(doc, "text"));
    size_t len = strlen(cut);
    cr_assert_gt(len, 3000);
    cr_assert_str_eq(cut + len - strlen("&amp;…"), "&amp;…", "%s", cut + len - 20);
    for (const char *p = strchr(cut, '&'); p; p = strchr(p + 1, '&'))
        cr_assert_eq(strncmp(p, "&amp;", 5), 0, "half an entity at %zu", (size_t)(p - cut));
    /* The section holding the text is cut to Slack's 3,000 characters. */
    struct json_object *section = json_object_array_get_idx(path(doc, "blocks"), 1);
    const char *shown = json_object_get_string(path(path(section, "text"), "text"));
    size_t chars = 0;
    for (const char *p = shown; *p; p++)
        chars += ((unsigned char)*p & 0xC0) != 0x80;
    cr_assert_leq(chars, 3000);
    cr_assert_gt(chars, 2990);
    cr_assert_str_eq(shown + strlen(shown) - strlen("&amp;…"), "&amp;…");
    json_object_put(doc);
}

/* A message of several events opens with a summary, and the alarm of the
 * device that alerted last comes before the other device's recoveries. */
Test(chat, several_events_open_with_a_summary_and_the_alarm_first, .fini = teardown, .timeout = 60)
{
    char *devices =
        xasprintf("{\"serial\": \"5214A000\", \"name\": \"Bulk Freezer\", \"alerts\": ["
                  "{\"unixtime\": %lld, \"ch1\": \"CH1 Measurement Recovery\"},"
                  "{\"unixtime\": %lld, \"ch2\": \"CH2 Measurement Recovery\"}]},"
                  "{\"serial\": \"5214A001\", \"name\": \"Freezer B\", \"alerts\": ["
                  "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded -60.0°C\"}]}",
                  T0 - 300, T0 - 200, T0 - 100);
    start_devices(devices, slack_and_log);
    free(devices);
    hooksink_set_status(R.hook, 500);
    relay_run_at(&R, T0, NULL);
    relay_run_at(&R, T0 + 300, NULL); /* each device polled once at least */
    hooksink_clear(R.hook);
    hooksink_push_reply(R.hook, 200, "ok", 0);
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 1);
    struct json_object *doc = request_json(0);
    cr_assert_str_eq(json_object_get_string(path(doc, "text")),
                     "🔴 1 alarm, 2 recoveries: Freezer B, Bulk Freezer");
    struct json_object *blocks = path(doc, "blocks");
    struct json_object *summary = json_object_array_get_idx(blocks, 0);
    cr_assert_str_eq(json_object_get_string(path(path(summary, "text"), "text")),
                     "1 alarm, 2 recoveries");
    const char *want[] = {"🔴 ALARM Freezer B", "🟢 RECOVERED Bulk Freezer",
                          "🟢 RECOVERED Bulk Freezer"};
    for (size_t i = 0; i < 3; i++) {
        struct json_object *header = json_object_array_get_idx(blocks, 1 + 2 * i);
        cr_assert_str_eq(json_object_get_string(path(path(header, "text"), "text")), want[i]);
    }
    json_object_put(doc);
}

/* The 162 events of a bad night: two freezers of 20 alert-log entries
 * with ch1 to ch4 each (80 events, and a gap event for each full log),
 * Bulk Freezer's mostly recoveries with 20 alarms, Freezer B's all
 * recoveries but one alarm. In one message those two would be events 61
 * and 62, past what Slack or a Teams card can show; every event reaches
 * both, in whole messages, the alarms first. */
static void start_bad_night(void)
{
    struct buf b;
    buf_init(&b, 0);
    for (int d = 0; d < 2; d++) {
        buf_printf(&b, "%s{\"serial\": \"5214A00%d\", \"name\": \"%s\", \"alerts\": [",
                   d ? "," : "", d, d ? "Freezer B" : "Bulk Freezer");
        for (int a = 0; a < 20; a++) {
            buf_printf(&b, "%s{\"unixtime\": %lld", a ? "," : "", T0 - 3000 + a * 60);
            for (int ch = 1; ch <= 4; ch++) {
                bool alarm = d == 0 ? ch == 1 : a == 19 && ch == 1;
                buf_printf(&b, ", \"ch%d\": \"CH%d %s d%d a%d\"", ch, ch,
                           alarm ? "Upper Limit Exceeded" : "Measurement Recovery", d, a);
            }
            buf_puts(&b, "}");
        }
        buf_puts(&b, "]}");
    }
    start_devices(buf_str(&b), "  - name: lab-slack\n"
                               "    slack: {url: \"@HOOK_URL@\"}\n"
                               "  - name: lab-teams\n"
                               "    teams: {url: \"@HOOK_URL@\"}\n");
    buf_free(&b);
}

Test(chat, every_event_of_162_reaches_slack_and_teams, .fini = teardown, .timeout = 120)
{
    start_bad_night();
    hooksink_set_status(R.hook, 500);
    relay_run_at(&R, T0, NULL);
    relay_run_at(&R, T0 + 300, NULL); /* each device polled once at least */
    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 0);
    size_t n = hooksink_count(R.hook);
    struct buf slack, teams;
    buf_init(&slack, 0);
    buf_init(&teams, 0);
    size_t n_slack = 0, n_teams = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *doc = request_json(i);
        bool is_slack = json_object_object_get_ex(doc, "blocks", NULL);
        struct buf *into = is_slack ? &slack : &teams;
        if (is_slack) {
            struct json_object *blocks = path(doc, "blocks");
            cr_assert_leq(json_object_array_length(blocks), 50);
            size_t headers = 0;
            for (size_t b = 0; b < json_object_array_length(blocks); b++)
                headers += !strcmp(
                    json_object_get_string(path(json_object_array_get_idx(blocks, b), "type")),
                    "header");
            cr_assert(headers == 20 || headers == 21, "as full as each other: %zu events", headers);
            if (n_slack++ == 0) {
                const char *text = json_object_get_string(path(doc, "text"));
                cr_assert(strncmp(text, "🔴 21 alarms on 2 devices",
                                  strlen("🔴 21 alarms on 2 devices")) == 0,
                          "%s", text);
            }
        } else {
            n_teams++;
            cr_assert_leq(strlen(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN)),
                          28 * 1024);
        }
        strings_of(into, doc);
        json_object_put(doc);
    }
    cr_assert_eq(n_slack, 8, "162 events, 23 a message");
    cr_assert_geq(n_teams, 2);
    cr_log_info("162 events: %zu Slack messages, %zu Teams cards", n_slack, n_teams);
    struct buf *bodies[] = {&slack, &teams};
    for (size_t k = 0; k < 2; k++) {
        const char *all = buf_str(bodies[k]);
        cr_assert_null(strstr(all, "more (the full list"), "nothing left out");
        cr_assert_eq(occurrences(all, "Alerts may be missing"), 2, "both gap events");
        cr_assert(strstr(all, "CH1 Upper Limit Exceeded d1 a19"), "Freezer B's alarm");
        for (int d = 0; d < 2; d++)
            for (int a = 0; a < 20; a++)
                for (int ch = 1; ch <= 4; ch++) {
                    bool alarm = d == 0 ? ch == 1 : a == 19 && ch == 1;
                    char *want =
                        xasprintf("CH%d %s d%d a%d\n", ch,
                                  alarm ? "Upper Limit Exceeded" : "Measurement Recovery", d, a);
                    cr_assert_geq(occurrences(all, want), 1, "%s in %s", want,
                                  k ? "Teams" : "Slack");
                    free(want);
                }
    }
    buf_free(&slack);
    buf_free(&teams);
}

/* 38 events in two messages: Slack takes the first and fails the second.
 * The next run sends the second again, and only it: delivery is per
 * event and receiver, whatever message an event went in. */
Test(chat, a_failed_part_is_retried_and_the_delivered_part_is_not_repeated, .fini = teardown,
     .timeout = 60)
{
    start(2, 19, 0, slack_and_log);
    hooksink_set_status(R.hook, 500);
    relay_run_at(&R, T0, NULL);
    relay_run_at(&R, T0 + 300, NULL); /* each device polled once at least */
    hooksink_clear(R.hook);
    hooksink_push_reply(R.hook, 200, "ok", 0);
    hooksink_push_reply(R.hook, 500, "internal_error", 0);
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 1, "the second part failed");
    cr_assert_eq(hooksink_count(R.hook), 2);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 3600 + 600, NULL), 0);
    cr_assert_eq(hooksink_count(R.hook), 3, "the failed part alone, once");
    struct buf first, failed, again;
    buf_init(&first, 0);
    buf_init(&failed, 0);
    buf_init(&again, 0);
    struct buf *into[] = {&first, &failed, &again};
    for (size_t i = 0; i < 3; i++) {
        struct json_object *doc = request_json(i);
        strings_of(into[i], path(doc, "blocks"));
        json_object_put(doc);
    }
    size_t sent = 0;
    for (int a = 0; a < 19; a++) {
        char *want = xasprintf("CH1 Upper Limit Exceeded %d.0°C \n", a);
        size_t in_first = occurrences(buf_str(&first), want);
        size_t in_failed = occurrences(buf_str(&failed), want);
        size_t in_again = occurrences(buf_str(&again), want);
        cr_assert_eq(in_first + in_again, 2, "alert %d of each device, once: %zu + %zu", a,
                     in_first, in_again);
        cr_assert_eq(in_failed, in_again, "alert %d: the failed part is what is sent again", a);
        sent += in_first + in_again;
        free(want);
    }
    cr_assert_eq(sent, 38);
    buf_free(&first);
    buf_free(&failed);
    buf_free(&again);
}
