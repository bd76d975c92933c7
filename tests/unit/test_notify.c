/* The transports that need no network: URL redaction, the text block and
 * the file receiver. The webhook is tested end to end in test_run.c. */
#include "notify/http.h"
#include "alerttext.h"
#include "incident.h"
#include "notify/chat.h"
#include "notify/notify.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void check_redact(const char *url, const char *want)
{
    char *got = http_redact_url(url);
    cr_assert_str_eq(got, want, "%s", url);
    free(got);
}

Test(notify, urls_lose_path_query_and_credentials)
{
    check_redact("https://hooks.slack.com/services/T000/B000/XXXX", "https://hooks.slack.com/…");
    check_redact("https://user:pw@example.org:8443/x?token=1", "https://example.org:8443/…");
    check_redact("http://127.0.0.1:8080", "http://127.0.0.1:8080");
    check_redact("https://example.org?key=secret", "https://example.org/…");
    check_redact("no scheme", "(unparsable URL)");
}

/* An event owning its strings (event_clear frees them). */
static struct event sample(const char *name, const char *text)
{
    struct event ev = {
        .account = xstrdup("lab"),
        .serial = xstrdup("5214000A"),
        .model = xstrdup("TR-72A2"),
        .name = xstrdup(name),
        .base_serial = xstrdup("5214000A"),
        .base_model = xstrdup("TR-72A2"),
        .base_name = xstrdup("Freezer"),
        .unixtime = 1795000000,
        .kind = xstrdup("ch1"),
        .text = xstrdup(text),
        .channel_name = xstrdup("温度"),
        .channel_unit = xstrdup("°C"),
        .utc_offset = 540,
    };
    return ev;
}

Test(notify, text_block_shows_device_time_and_raw_text)
{
    struct event evs[2] = {sample("冷凍庫 A", "CH1 上限値警報 -70.2℃"),
                           sample("Freezer", "CH1 Upper Limit Exceeded")};
    free(evs[1].base_serial);
    free(evs[1].base_name);
    free(evs[1].channel_name);
    free(evs[1].channel_unit);
    evs[1].base_serial = xstrdup("58B20000");
    evs[1].base_name = xstrdup("Base 1");
    evs[1].channel_name = NULL;
    evs[1].channel_unit = NULL;
    struct buf b;
    buf_init(&b, 0);
    struct notify_message m = {.events = evs, .n = 2, .now = 1795000000};
    struct err e;
    cr_assert_eq(notify_render_text(&b, NULL, NULL, "console", &m, &e), 0, "%s", e.msg);
    const char *want = "== wsrelay: 2 new alerts for console ==\n"
                       "2 alarms\n"
                       "\n"
                       "[ALARM] 冷凍庫 A (TR-72A2, 5214000A) - ch1 温度 [°C]\n"
                       "  2026-11-18 20:06:40 +09:00  account lab\n"
                       "  CH1 上限値警報 -70.2℃\n"
                       "\n"
                       "[ALARM] Freezer (TR-72A2, 5214000A) - ch1\n"
                       "  2026-11-18 20:06:40 +09:00  account lab, base unit Base 1\n"
                       "  CH1 Upper Limit Exceeded\n";
    cr_assert_str_eq(buf_str(&b), want);
    buf_free(&b);
    event_clear(&evs[0]);
    event_clear(&evs[1]);
}

Test(notify, control_characters_cannot_forge_lines)
{
    struct event ev = sample("evil\r\nBcc: x\x1b[2J", "line1\nline2");
    struct buf b;
    buf_init(&b, 0);
    struct notify_message m = {.events = &ev, .n = 1, .now = 1795000000};
    struct err e;
    cr_assert_eq(notify_render_text(&b, NULL, NULL, "c", &m, &e), 0, "%s", e.msg);
    cr_assert_null(strstr(buf_str(&b), "\r"));
    cr_assert_null(strstr(buf_str(&b), "\x1b"));
    cr_assert_not_null(strstr(buf_str(&b), "evil  Bcc: x [2J"));
    cr_assert_not_null(strstr(buf_str(&b), "line1 line2"));
    buf_free(&b);
    event_clear(&ev);
}

Test(notify, file_receiver_appends_whole_blocks_privately)
{
    char dir[] = "/tmp/wsrelay-notify-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/alerts.txt", dir);
    char name[] = "log";
    struct receiver_conf r = {.name = name, .type = RECEIVER_FILE, .file = {.path = path}};
    struct event ev = sample("Freezer", "CH1 Upper Limit Exceeded");
    struct notify_message m = {.events = &ev, .n = 1, .now = 1795000000};
    struct notify_env env = {0};
    struct notify_result res;
    struct err e;
    cr_assert_eq(notify_send(&env, &r, &m, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(notify_send(&env, &r, &m, &res, &e), 0, "%s", e.msg);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    FILE *f = fopen(path, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    size_t blocks = 0;
    for (const char *p = text; (p = strstr(p, "== wsrelay: 1 new alert for log ==")); p++)
        blocks++;
    cr_assert_eq(blocks, 2);
    event_clear(&ev);
    unlink(path);
    rmdir(dir);
}

/* What the file receiver writes is valid UTF-8 whatever it is given: an
 * event with bytes that are not UTF-8 (an outbox item of an older
 * wsrelay), through the built-in template and through a receiver's own
 * template that inserts values raw and holds such a byte itself. */
Test(notify, file_receiver_writes_valid_utf8)
{
    char dir[] = "/tmp/wsrelay-notify-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128], tpl[128];
    snprintf(path, sizeof path, "%s/alerts.txt", dir);
    snprintf(tpl, sizeof tpl, "%s/mine.txt", dir);
    FILE *f = fopen(tpl, "w");
    cr_assert_not_null(f);
    fputs("raw \xFE: {{#events}}{{{name}}} / {{{text}}}{{/events}}\n", f);
    fclose(f);
    char name[] = "log";
    struct receiver_conf r = {.name = name, .type = RECEIVER_FILE, .file = {.path = path}};
    struct event ev = sample("Freezer\xFF A", "CH1 Upper\xC0\xAF Limit \xED\xA0\x80");
    struct notify_message m = {.events = &ev, .n = 1, .now = 1795000000};
    struct notify_env env = {0};
    struct notify_result res;
    struct err e;
    cr_assert_eq(notify_send(&env, &r, &m, &res, &e), 0, "%s", e.msg);
    r.file.template = tpl;
    cr_assert_eq(notify_send(&env, &r, &m, &res, &e), 0, "%s", e.msg);
    f = fopen(path, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    cr_assert(utf8_valid(text, n), "%s", text);
    cr_assert_not_null(strstr(text, "Freezer" UTF8_REPLACEMENT " A"), "%s", text);
    cr_assert_not_null(strstr(text, "raw " UTF8_REPLACEMENT ": Freezer" UTF8_REPLACEMENT
                                    " A / CH1 Upper" UTF8_REPLACEMENT UTF8_REPLACEMENT
                                    " Limit " UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT),
                       "%s", text);
    event_clear(&ev);
    unlink(path);
    unlink(tpl);
    rmdir(dir);
}

Test(notify, file_receiver_failure_names_the_file)
{
    char name[] = "log", path[] = "/nonexistent-dir/alerts.txt";
    struct receiver_conf r = {.name = name, .type = RECEIVER_FILE, .file = {.path = path}};
    struct event ev = sample("Freezer", "x");
    struct notify_message m = {.events = &ev, .n = 1, .now = 1795000000};
    struct notify_env env = {0};
    struct notify_result res;
    struct err e;
    cr_assert_eq(notify_send(&env, &r, &m, &res, &e), -1);
    event_clear(&ev);
    cr_assert_not_null(strstr(e.msg, "receiver 'log' (file): /nonexistent-dir/alerts.txt"), "%s",
                       e.msg);
}

Test(notify, reply_excerpts_never_echo_the_url_or_header_values)
{
    char name[] = "Authorization", value[] = "Bearer s3cr3t-t0ken";
    struct header_conf h = {.name = name, .value = value};
    char out[256];
    http_reply_excerpt(out, sizeof out,
                       "Cannot POST /services/T0/B0/XyZ?k=1 (https://hooks.example.org/services/"
                       "T0/B0/XyZ?k=1) auth=Bearer s3cr3t-t0ken\nsecond line",
                       "https://hooks.example.org/services/T0/B0/XyZ?k=1", &h, 1);
    cr_assert_str_eq(out, "Cannot POST [redacted] ([redacted]) auth=[redacted]");
    http_reply_excerpt(out, 8, "\x01\x02long text", "https://x.org/", NULL, 0);
    cr_assert_str_eq(out, "??long ");
}

/* An event of device `serial` named `name` whose text says `text`, of
 * kind `kind`, classified as a parsed event is. */
static struct event ranked(const char *serial, const char *name, const char *kind, const char *text)
{
    struct event ev = sample(name, text);
    free(ev.serial);
    free(ev.kind);
    ev.serial = xstrdup(serial);
    ev.kind = xstrdup(kind);
    struct alert_reading rd;
    alert_classify(&rd, kind, text);
    ev.state = xstrdup(alert_state_name(rd.state));
    alert_reading_clear(&rd);
    return ev;
}

/* What matters most comes first, then devices stay together; ordering
 * the result again changes nothing. */
Test(notify, events_are_ordered_by_what_matters_and_grouped_by_device)
{
    struct event evs[] = {
        ranked("A", "Bulk Freezer", "ch1", "CH1 Measurement Recovery"),          /* 0 */
        ranked("A", "Bulk Freezer", "ch1", "CH1 Upper Limit Exceeded"),          /* 1 */
        ranked("C", "Cold Room", "battery-level", "Low Battery Warning"),        /* 2 */
        ranked("A", "Bulk Freezer", "gap", "Alerts may be missing"),             /* 3 */
        ranked("B", "Freezer B", "ch2", "CH2 Recovered"),                        /* 4 */
        ranked("C", "Cold Room", "ch1", "CH1 Sensor Error"),                     /* 5 */
        ranked("B", "Freezer B", "ch1", "CH1 Upper Limit Exceeded"),             /* 6 */
        ranked("A", "Bulk Freezer", "ch1", "CH1 Upper Limit Exceeded"),          /* 7 */
        ranked("B", "Freezer B", "communication-status", "Communication Error"), /* 8 */
        ranked("C", "Cold Room", "ch3", "something else"),                       /* 9 */
        ranked("B", "Freezer B", "relay", "wsrelay cannot log in"),              /* 10 */
    };
    size_t n = sizeof evs / sizeof evs[0];
    size_t order[sizeof evs / sizeof evs[0]];
    notify_order(order, evs, n);
    const size_t want[] = {1, 7, 6, 5, 8, 3, 10, 2, 0, 4, 9};
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(order[i], want[i], "place %zu: event %zu, not %zu", i, order[i], want[i]);
    struct event again[sizeof evs / sizeof evs[0]];
    for (size_t i = 0; i < n; i++)
        again[i] = evs[order[i]];
    notify_order(order, again, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(order[i], i, "stable: place %zu", i);
    char *summary = notify_summary(evs, n, true);
    cr_assert_str_eq(summary, "3 alarms on 2 devices, 1 sensor error, 1 communication alert, "
                              "2 reports from wsrelay, 1 battery alert, 2 recoveries, "
                              "1 other alert");
    free(summary);
    summary = notify_summary(evs, 2, false);
    cr_assert_str_eq(summary, "1 alarm, 1 recovery");
    free(summary);
    summary = notify_summary(evs, 2, true);
    cr_assert_str_eq(summary, "1 alarm, 1 recovery", "one device: not counted");
    free(summary);
    char *devices = notify_devices(again, n);
    cr_assert_str_eq(devices, "Bulk Freezer, Freezer B, Cold Room");
    free(devices);
    for (size_t i = 0; i < n; i++)
        event_clear(&evs[i]);
}

/* The subject of a mail of several events names the worst state, the
 * devices and the counts, whatever the order the events came in. */
Test(notify, the_subject_names_the_worst_state_and_the_devices)
{
    struct event evs[62];
    size_t n = 0;
    for (int i = 0; i < 41; i++)
        evs[n++] = ranked("A", "Bulk Freezer", "ch1", "CH1 Measurement Recovery");
    for (int i = 0; i < 20; i++)
        evs[n++] = ranked("A", "Bulk Freezer", "ch1", "CH1 Upper Limit Exceeded");
    evs[n++] = ranked("B", "Freezer B", "ch1", "CH1 Upper Limit Exceeded");
    size_t order[62];
    struct event sorted[62];
    notify_order(order, evs, n);
    for (size_t i = 0; i < n; i++)
        sorted[i] = evs[order[i]];
    struct notify_message m = {.events = sorted, .n = n, .now = 1795000000};
    struct json_object *ctx = notify_context("mail", &m);
    struct buf b;
    buf_init(&b, 0);
    struct err e;
    cr_assert_eq(notify_render(&b, NULL, NULL, "email-subject.txt", ctx, &e), 0, "%s", e.msg);
    cr_assert_str_eq(buf_str(&b), "[ALARM] Bulk Freezer, Freezer B: 21 alarms, 41 recoveries");
    buf_free(&b);
    json_object_put(ctx);
    for (size_t i = 0; i < n; i++)
        event_clear(&evs[i]);
}

/* The size of the Teams card of the first `k` events of `evs`, as
 * message `part` of `parts`. */
static size_t teams_card_size(const struct receiver_conf *r, const struct event *evs, size_t k,
                              size_t part, size_t parts)
{
    struct notify_env env = {0};
    struct notify_message m = {
        .events = evs, .n = k, .now = 1795000000, .part = part, .parts = parts};
    struct notify_result res = {0};
    struct err e;
    struct json_object *card = chat_render(&env, r, &r->teams, "teams.json", &m, k, &res, &e);
    cr_assert_not_null(card, "%s", e.msg);
    size_t size = strlen(json_object_to_json_string_ext(card, JSON_C_TO_STRING_PLAIN |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(card);
    return size;
}

/* What notify_fit says fits still fits as message 999 of 1000 of a
 * delivery of 1000 events (before: it measured the card as "2 of 2", and a
 * card a few bytes over 28 KB was cut to "…and 1 more" when sent). Two
 * events whose card crosses 28 KB as "1 of 2", one padding byte at a time
 * around it. */
Test(notify, what_fits_fits_with_the_deliverys_longest_message_number)
{
    struct receiver_conf r = {.name = (char *)"lab-teams",
                              .type = RECEIVER_TEAMS,
                              .teams = {.url = (char *)"http://127.0.0.1:1/"}};
    size_t lo = 64, hi = 40000; /* two events fit at lo and not at hi: halve */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        char *text = xasprintf("CH1 Upper Limit Exceeded %*s", (int)mid, "x");
        struct event two[2] = {sample("Freezer", text), sample("Freezer", text)};
        size_t size = teams_card_size(&r, two, 2, 1, 2);
        event_clear(&two[0]);
        event_clear(&two[1]);
        free(text);
        *(size > 28 * 1024 ? &hi : &lo) = mid;
    }
    size_t len = hi + 16;
    for (size_t l = len - 64; l <= len; l++) {
        char *text = xasprintf("CH1 Upper Limit Exceeded %*s", (int)l, "x");
        struct event two[2] = {sample("Freezer", text), sample("Freezer", text)};
        struct notify_message m = {.events = two, .n = 2, .now = 1795000000, .parts = 1000};
        struct notify_env env = {0};
        size_t k = notify_fit(&env, &r, &m);
        size_t size = teams_card_size(&r, two, k, 999, 1000);
        cr_expect_leq(size, 28 * 1024, "%zu padding bytes: %zu events said to fit, %zu bytes", l, k,
                      size);
        event_clear(&two[0]);
        event_clear(&two[1]);
        free(text);
    }
}

/* A Slack message of incidents' reminders, whose line takes a block of
 * its own (three an event), still holds what Slack takes: notify_fit
 * gives as many as fit in 50 blocks, and they do. */
Test(notify, reminders_fit_slacks_blocks_with_their_incident_lines)
{
    struct receiver_conf r = {.name = (char *)"oncall-slack",
                              .type = RECEIVER_SLACK,
                              .slack = {.url = (char *)"http://127.0.0.1:1/"}};
    struct event evs[23];
    for (size_t i = 0; i < 23; i++) {
        struct incident inc = {.id = i + 1, .state = INCIDENT_OPEN, .opened_at = 1795000030};
        char *name = xasprintf("Freezer %zu", i);
        inc.first = sample(name, "CH1 Upper Limit Exceeded -70.2°C");
        inc.reminders = 1;
        incident_message(&evs[i], &inc, NOTICE_REMINDER, NULL, 1795000930);
        free(name);
        incident_clear(&inc);
    }
    struct notify_message m = {.events = evs, .n = 23, .now = 1795000930};
    struct notify_env env = {0};
    size_t k = notify_fit(&env, &r, &m);
    /* a summary, three blocks an event, the footer */
    cr_assert_eq(k, 16);
    /* the message of those k events, as the delivery sends it */
    struct notify_message first = {.events = evs, .n = k, .now = 1795000930};
    struct json_object *ctx = notify_context(r.name, &first);
    struct buf out;
    struct err e = {{0}};
    buf_init(&out, 1 << 20);
    cr_assert_eq(notify_render(&out, &env, NULL, "slack.json", ctx, &e), 0, "%s", e.msg);
    struct json_object *doc = notify_parse_json(buf_str(&out), &e), *blocks = NULL;
    cr_assert_not_null(doc, "%s", e.msg);
    cr_assert(json_object_object_get_ex(doc, "blocks", &blocks));
    cr_assert_eq(json_object_array_length(blocks), 50, "%s", buf_str(&out));
    json_object_put(doc);
    json_object_put(ctx);
    buf_free(&out);
    for (size_t i = 0; i < 23; i++)
        event_clear(&evs[i]);
}
