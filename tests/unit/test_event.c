/* Tests of event.c: Get Alert Logs bodies in both dialects turned into
 * events, what their texts say and which alarm a recovery ends, local
 * times, and the JSON form of an event. */
#include "event.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static struct json_object *parse(const char *text)
{
    struct json_object *obj = json_tokener_parse(text);
    cr_assert_not_null(obj, "test JSON does not parse: %s", text);
    return obj;
}

static struct json_object *fixture(const char *name)
{
    struct buf b;
    struct err e = {{0}};
    char *path = NULL;
    struct json_object *obj;
    buf_init(&b, 1 << 20);
    path = xasprintf("%s/tests/data/platform/%s", WSRELAY_SOURCE_DIR, name);
    cr_assert_eq(file_read(&b, path, &e), 0, "%s", e.msg);
    obj = parse(buf_str(&b));
    buf_free(&b);
    free(path);
    return obj;
}

/* Parses `text` and expects success. */
static void parse_ok(struct event_list *l, const char *text)
{
    struct err e = {{0}};
    struct json_object *body = parse(text);
    memset(l, 0, sizeof *l);
    cr_assert_eq(event_parse_alert_log(l, body, "acct", &e), 0, "%s", e.msg);
    json_object_put(body);
}

static void assert_str(const char *got, const char *want)
{
    if (!want)
        cr_assert_null(got, "expected NULL, got '%s'", got ? got : "");
    else {
        cr_assert_not_null(got, "expected '%s', got NULL", want);
        cr_assert_str_eq(got, want);
    }
}

TestSuite(event, .timeout = 20);

Test(event, strings_dialect_kebab)
{
    struct event_list l = {0};
    struct err e = {{0}};
    struct json_object *body = fixture("alert-strings.json");
    cr_assert_eq(event_parse_alert_log(&l, body, "main", &e), 0, "%s", e.msg);
    cr_assert_eq(l.entries, 3);
    cr_assert_eq(l.skipped, 0);
    cr_assert_eq(l.oldest, 1700000000);
    cr_assert_eq(l.n, 4);
    /* Sorted by unixtime whatever the order of the array. */
    cr_assert_eq(l.items[0].unixtime, 1700000000);
    assert_str(l.items[0].kind, "ch2");
    assert_str(l.items[0].text, "CH2 下限値警報 20.5%");
    assert_str(l.items[0].channel_name, "湿度");
    assert_str(l.items[0].channel_unit, "%");

    /* One entry with ch1 and battery-level: two events, in kind order. */
    cr_assert_eq(l.items[1].unixtime, 1700000300);
    assert_str(l.items[1].kind, "ch1");
    assert_str(l.items[1].text, "CH1 上限値警報 12.3℃");
    cr_assert_eq(memcmp(l.items[1].text,
                        "\x43\x48\x31\x20\xe4\xb8\x8a\xe9\x99\x90\xe5\x80\xa4\xe8\xad\xa6\xe5\xa0"
                        "\xb1\x20\x31\x32\x2e\x33\xe2\x84\x83",
                        strlen(l.items[1].text) + 1),
                 0);
    assert_str(l.items[1].channel_name, "温度");
    assert_str(l.items[1].channel_unit, "℃");
    cr_assert_eq(l.items[2].unixtime, 1700000300);
    assert_str(l.items[2].kind, "battery-level");
    assert_str(l.items[2].text, "電池残量低下");
    assert_str(l.items[2].channel_name, NULL);
    assert_str(l.items[2].channel_unit, NULL);

    /* "" and null are absent kinds. */
    cr_assert_eq(l.items[3].unixtime, 1700000600);
    assert_str(l.items[3].kind, "ch1");

    for (size_t i = 0; i < l.n; i++) {
        assert_str(l.items[i].account, "main");
        assert_str(l.items[i].serial, "52C10001");
        assert_str(l.items[i].model, "RTR501B");
        assert_str(l.items[i].name, "冷蔵庫A");
        assert_str(l.items[i].base_serial, "58210001");
        assert_str(l.items[i].base_model, "RTR500BW");
        assert_str(l.items[i].base_name, "本社1F");
        cr_assert_eq(l.items[i].utc_offset, 540);
    }
    event_list_free(&l);
    json_object_put(body);
}

Test(event, numbers_dialect_snake)
{
    struct event_list l = {0};
    struct err e = {{0}};
    struct json_object *body = fixture("alert-numbers.json");
    cr_assert_eq(event_parse_alert_log(&l, body, "old", &e), 0, "%s", e.msg);
    cr_assert_eq(l.entries, 1);
    cr_assert_eq(l.oldest, 1700003600);
    cr_assert_eq(l.n, 2);
    assert_str(l.items[0].serial, "52100002");
    assert_str(l.items[0].base_serial, "52100002");
    assert_str(l.items[0].name, "Freezer 2");
    assert_str(l.items[0].kind, "ch2");
    assert_str(l.items[0].channel_name, "ch2");
    assert_str(l.items[0].channel_unit, "C");
    assert_str(l.items[1].kind, "communication-status");
    assert_str(l.items[1].text, "Communication error");
    /* time_diff -300 with daylight saving on: -240. */
    cr_assert_eq(l.items[0].utc_offset, -240);
    event_list_free(&l);
    json_object_put(body);
}

Test(event, all_kinds_in_order)
{
    struct event_list l;
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"alert-logs\":[{\"unixtime\":\"1700000000\","
                 "\"communication-status\":\"lost\",\"ch6\":\"uv\",\"ch5\":\"lux\","
                 "\"battery_level\":\"low\",\"ch4\":\"d\",\"ch3\":\"c\",\"ch2\":\"b\","
                 "\"ch1\":\"a\"}]}");
    cr_assert_eq(l.n, event_n_kinds);
    for (size_t i = 0; i < l.n; i++)
        assert_str(l.items[i].kind, event_kinds[i]);
    assert_str(l.items[4].text, "lux");
    assert_str(l.items[5].text, "uv");
    assert_str(l.items[6].text, "low");
    assert_str(l.items[7].text, "lost");
    event_list_free(&l);
}

Test(event, number_text_becomes_decimal)
{
    struct event_list l;
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"alert-logs\":[{\"unixtime\":1700000000,"
                 "\"battery-level\":2}]}");
    cr_assert_eq(l.n, 1);
    assert_str(l.items[0].text, "2");
    event_list_free(&l);
}

Test(event, channel_mapping)
{
    struct event_list l;
    /* num as string and number, out of order; ch3 has no channel element. */
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"channel\":[{\"name\":\"Humidity\",\"num\":2,"
                 "\"unit\":\"%RH\"},{\"name\":\"Temp\",\"num\":\"1\",\"unit\":\"F\"}],"
                 "\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"x\",\"ch2\":\"y\","
                 "\"ch3\":\"z\"}]}");
    cr_assert_eq(l.n, 3);
    assert_str(l.items[0].channel_name, "Temp");
    assert_str(l.items[0].channel_unit, "F");
    assert_str(l.items[1].channel_name, "Humidity");
    assert_str(l.items[1].channel_unit, "%RH");
    assert_str(l.items[2].channel_name, NULL);
    assert_str(l.items[2].channel_unit, NULL);
    event_list_free(&l);
}

Test(event, missing_optional_members)
{
    struct event_list l;
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"unknown\":{\"x\":1},"
                 "\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"hot\",\"extra\":1}]}");
    cr_assert_eq(l.n, 1);
    assert_str(l.items[0].account, "acct");
    assert_str(l.items[0].serial, "52C10001");
    assert_str(l.items[0].base_serial, "52C10001");
    assert_str(l.items[0].model, "");
    assert_str(l.items[0].name, "");
    assert_str(l.items[0].base_model, "");
    assert_str(l.items[0].base_name, "");
    assert_str(l.items[0].channel_name, NULL);
    cr_assert_eq(l.items[0].utc_offset, 0);
    event_list_free(&l);
}

Test(event, entry_without_unixtime_skipped)
{
    struct event_list l;
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"alert-logs\":["
                 "{\"ch1\":\"no time\"},"
                 "{\"unixtime\":\"soon\",\"ch1\":\"bad time\"},"
                 "{\"unixtime\":\"\",\"ch1\":\"empty time\"},"
                 "{\"unixtime\":null,\"ch1\":\"null time\"},"
                 "\"not an object\","
                 "{\"unixtime\":\"1700000500\",\"ch1\":\"b\"},"
                 "{\"unixtime\":1700000100,\"ch2\":\"a\"}]}");
    cr_assert_eq(l.entries, 7);
    cr_assert_eq(l.skipped, 5);
    cr_assert_eq(l.n, 2);
    cr_assert_eq(l.oldest, 1700000100);
    assert_str(l.items[0].text, "a");
    assert_str(l.items[1].text, "b");
    event_list_free(&l);
}

Test(event, empty_and_missing_log)
{
    struct event_list l;
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"alert-logs\":[]}");
    cr_assert_eq(l.n, 0);
    cr_assert_eq(l.entries, 0);
    cr_assert_eq(l.oldest, 0);
    cr_assert_null(l.items);
    event_list_free(&l);
    parse_ok(&l, "{\"remote-serial\":\"52C10001\"}");
    cr_assert_eq(l.n, 0);
    cr_assert_eq(l.entries, 0);
    event_list_free(&l);
    /* An entry with no kind at all counts but makes nothing. */
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"alert-logs\":[{\"unixtime\":\"1700000000\"}]}");
    cr_assert_eq(l.n, 0);
    cr_assert_eq(l.entries, 1);
    cr_assert_eq(l.oldest, 1700000000);
    event_list_free(&l);
}

Test(event, rejects_bad_bodies)
{
    const char *bad[] = {
        "[]",
        "\"text\"",
        "42",
        "{\"alert-logs\":[]}",
        "{\"remote-serial\":\"\",\"alert-logs\":[]}",
        "{\"remote-serial\":\"52C10001\",\"alert-logs\":{\"unixtime\":\"1\"}}",
        "{\"remote-serial\":\"52C10001\",\"alert-logs\":\"none\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct event_list l = {0};
        struct err e = {{0}};
        struct json_object *body = parse(bad[i]);
        cr_assert_eq(event_parse_alert_log(&l, body, "acct", &e), -1, "accepted %s", bad[i]);
        cr_assert_neq(e.msg[0], '\0');
        cr_assert_eq(l.n, 0);
        cr_assert_null(l.items);
        json_object_put(body);
    }
    struct event_list l = {0};
    struct err e = {{0}};
    cr_assert_eq(event_parse_alert_log(&l, NULL, "acct", &e), -1);
    cr_assert_str_eq(e.msg, "alert log is not a JSON object");
}

/* The strings of an event: valid UTF-8, bounded, and without control
 * characters but the tabs and line feeds of a text. */
static void assert_clean(const char *s, size_t max, bool lines)
{
    size_t n = s ? strlen(s) : 0;
    if (!s)
        return;
    cr_assert(utf8_valid(s, n), "not UTF-8: %s", s);
    cr_assert_leq(n, max);
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t len = utf8_decode(&cp, s + i, n - i);
        cr_assert(!utf8_is_control(cp) || (lines && (cp == '\t' || cp == '\n')),
                  "control character U+%04X in: %s", (unsigned)cp, s);
        i += len;
    }
}

/* Bytes that are not UTF-8, control characters, "\u0000" and a text far
 * too long: the body is taken (as platform.c takes it) and every string
 * repaired, so that the state stays valid UTF-8 and nothing is cut
 * silently. */
Test(event, odd_strings_are_repaired)
{
    struct buf b;
    struct event_list l = {0};
    struct err e = {{0}};
    buf_init(&b, 0);
    buf_puts(&b, "{\"remote-serial\":\"52C10001\",\"remote-name\":\"冷凍庫\xFF\\r\\nX\","
                 "\"remote-model\":\"M\\u001b\",\"base-serial\":\"5821\\r\\n01\","
                 "\"base-name\":\"B\xFE\",\"channel\":[{\"num\":\"1\",\"name\":\"Temp\xFF\","
                 "\"unit\":\"°C\\u0007\"}],\"alert-logs\":[{\"unixtime\":\"1700000000\","
                 "\"ch1\":\"CH1 Upper\\u0000Limit \xFF -70.2°C\\r\\nline2\\tTab\\u001b[31m\","
                 "\"battery-level\":\"");
    for (int i = 0; i < 2000; i++)
        buf_puts(&b, "電池");
    buf_puts(&b, "\"}]}");
    struct json_tokener *tok = json_tokener_new();
    struct json_object *body = json_tokener_parse_ex(tok, b.data, (int)b.len);
    cr_assert_not_null(body, "json-c takes the bytes as they are");
    json_tokener_free(tok);
    cr_assert_eq(event_parse_alert_log(&l, body, "acct", &e), 0, "%s", e.msg);
    cr_assert_eq(l.n, 2);
    const struct event *ch1 = &l.items[0], *bat = &l.items[1];
    assert_str(ch1->kind, "ch1");
    assert_str(ch1->text, "CH1 Upper Limit " UTF8_REPLACEMENT " -70.2°C \nline2\tTab [31m");
    assert_str(ch1->name, "冷凍庫" UTF8_REPLACEMENT "  X");
    assert_str(ch1->model, "M ");
    assert_str(ch1->base_serial, "52C10001"); /* not a serial: the device is its own base */
    assert_str(ch1->base_name, "B" UTF8_REPLACEMENT);
    assert_str(ch1->channel_name, "Temp" UTF8_REPLACEMENT);
    assert_str(ch1->channel_unit, "°C ");
    assert_str(bat->kind, "battery-level");
    cr_assert_eq(strlen(bat->text), 4095, "cut to 4 KB between two characters");
    for (size_t i = 0; i < l.n; i++) {
        const struct event *ev = &l.items[i];
        const char *names[] = {ev->serial,     ev->model,     ev->name,         ev->base_serial,
                               ev->base_model, ev->base_name, ev->channel_name, ev->channel_unit};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            assert_clean(names[k], 256, false);
        assert_clean(ev->text, 4096, true);
    }
    event_list_free(&l);
    json_object_put(body);
    buf_free(&b);
}

/* A remote serial that is not a serial cannot be the device asked about:
 * the reply is refused, and the message shows the serial escaped and
 * short, whatever it holds. */
Test(event, a_remote_serial_that_is_not_one_is_refused)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"remote-serial\":\"");
    for (int i = 0; i < 1200; i++)
        buf_puts(&b, "5");
    buf_puts(&b, "\",\"alert-logs\":[{\"unixtime\":1700000000,\"ch1\":\"x\"}]}");
    const char *bodies[] = {
        b.data,
        "{\"remote-serial\":\"5214\\r\\nwsrelay: ERROR: forged\",\"alert-logs\":[]}",
        "{\"remote-serial\":\"5214000\\u0000\",\"alert-logs\":[]}",
        "{\"remote-serial\":\"5214\xFF\x30\x30\x30\",\"alert-logs\":[]}",
        "{\"remote-serial\":\"5214000AB\",\"alert-logs\":[]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct event_list l = {0};
        struct err e = {{0}};
        struct json_object *body = parse(bodies[i]);
        cr_assert_eq(event_parse_alert_log(&l, body, "acct", &e), -1, "accepted %s", bodies[i]);
        cr_assert_not_null(strstr(e.msg, "alert log: remote-serial \""), "%s", e.msg);
        cr_assert_not_null(strstr(e.msg, "is not a device serial"), "%s", e.msg);
        cr_assert_lt(strlen(e.msg), 200, "%s", e.msg);
        for (const char *p = e.msg; *p; p++)
            cr_assert((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte in %s", e.msg);
        cr_assert(utf8_valid(e.msg, strlen(e.msg)), "%s", e.msg);
        cr_assert_eq(l.n, 0);
        json_object_put(body);
    }
    buf_free(&b);
}

Test(event, local_time_plus_nine)
{
    struct event_list l;
    char local[40], utc[32];
    /* 2023-11-14T22:13:20Z */
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"time-diff\":\"540\",\"dst-flg\":\"0\","
                 "\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"x\"}]}");
    cr_assert_eq(l.items[0].utc_offset, 540);
    event_local_time(local, sizeof local, &l.items[0]);
    cr_assert_str_eq(local, "2023-11-15 07:13:20 +09:00");
    event_utc_time(utc, sizeof utc, &l.items[0]);
    cr_assert_str_eq(utc, "2023-11-14T22:13:20Z");
    event_list_free(&l);
}

Test(event, local_time_negative)
{
    struct event_list l;
    char local[40];
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"time_diff\":-300,\"dst_flg\":\"0\","
                 "\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"x\"}]}");
    cr_assert_eq(l.items[0].utc_offset, -300);
    event_local_time(local, sizeof local, &l.items[0]);
    cr_assert_str_eq(local, "2023-11-14 17:13:20 -05:00");
    event_list_free(&l);
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"time-diff\":\"-210\","
                 "\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"x\"}]}");
    event_local_time(local, sizeof local, &l.items[0]);
    cr_assert_str_eq(local, "2023-11-14 18:43:20 -03:30");
    event_list_free(&l);
}

Test(event, daylight_saving)
{
    struct event_list l;
    char local[40];
    /* dst-flg 1 adds dst-bias; std-bias is not added. */
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"time-diff\":\"60\",\"std-bias\":\"30\","
                 "\"dst-flg\":\"1\",\"dst-bias\":\"60\","
                 "\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"x\"}]}");
    cr_assert_eq(l.items[0].utc_offset, 120);
    event_local_time(local, sizeof local, &l.items[0]);
    cr_assert_str_eq(local, "2023-11-15 00:13:20 +02:00");
    event_list_free(&l);
    /* dst-bias missing: 60. */
    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"time-diff\":-300,\"dst-flg\":1,"
                 "\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"x\"}]}");
    cr_assert_eq(l.items[0].utc_offset, -240);
    event_list_free(&l);
    /* dst-flg 0 ignores dst-bias. */
    parse_ok(&l,
             "{\"remote-serial\":\"52C10001\",\"time-diff\":\"540\",\"dst-flg\":\"0\","
             "\"dst-bias\":\"60\",\"alert-logs\":[{\"unixtime\":\"1700000000\",\"ch1\":\"x\"}]}");
    cr_assert_eq(l.items[0].utc_offset, 540);
    event_list_free(&l);
}

Test(event, entry_order_does_not_matter)
{
    struct event_list a, b;
    parse_ok(&a, "{\"remote-serial\":\"52C10001\",\"alert-logs\":["
                 "{\"unixtime\":\"1700000300\",\"ch1\":\"x\",\"battery-level\":\"y\"},"
                 "{\"unixtime\":\"1700000000\",\"ch2\":\"z\"}]}");
    parse_ok(&b, "{\"remote-serial\":\"52C10001\",\"alert-logs\":["
                 "{\"unixtime\":\"1700000000\",\"ch2\":\"z\"},"
                 "{\"battery-level\":\"y\",\"unixtime\":\"1700000300\",\"ch1\":\"x\"}]}");
    cr_assert_eq(a.n, 3);
    cr_assert_eq(b.n, 3);
    cr_assert_eq(a.oldest, b.oldest);
    for (size_t i = 0; i < a.n; i++) {
        cr_assert_eq(a.items[i].unixtime, b.items[i].unixtime);
        cr_assert_str_eq(a.items[i].kind, b.items[i].kind);
        cr_assert_str_eq(a.items[i].text, b.items[i].text);
    }
    event_list_free(&a);
    event_list_free(&b);
}

static void assert_events_equal(const struct event *a, const struct event *b)
{
    assert_str(b->account, a->account);
    assert_str(b->serial, a->serial);
    assert_str(b->model, a->model);
    assert_str(b->name, a->name);
    assert_str(b->base_serial, a->base_serial);
    assert_str(b->base_model, a->base_model);
    assert_str(b->base_name, a->base_name);
    cr_assert_eq(b->unixtime, a->unixtime);
    assert_str(b->kind, a->kind);
    assert_str(b->text, a->text);
    assert_str(b->state, a->state);
    assert_str(b->value, a->value);
    assert_str(b->limit, a->limit);
    cr_assert_eq(b->recovers, a->recovers);
    assert_str(b->channel_name, a->channel_name);
    assert_str(b->channel_unit, a->channel_unit);
    cr_assert_eq(b->utc_offset, a->utc_offset);
    /* An unknown group goes out as "" and comes back so. */
    assert_str(b->group ? b->group : "", a->group ? a->group : "");
    assert_str(b->rule, a->rule);
    assert_str(b->severity, a->severity);
    cr_assert_eq(b->held, a->held);
    cr_assert_eq(b->held_since, a->held_since);
}

Test(event, json_round_trip)
{
    struct event_list l = {0};
    struct err e = {{0}};
    struct json_object *body = fixture("alert-strings.json");
    cr_assert_eq(event_parse_alert_log(&l, body, "main", &e), 0, "%s", e.msg);
    for (size_t i = 0; i < l.n; i++) {
        struct event back;
        struct json_object *obj = event_to_json(&l.items[i]);
        /* Through text, as the outbox keeps it. */
        struct json_object *again = json_tokener_parse(json_object_to_json_string(obj));
        cr_assert_not_null(again);
        cr_assert_eq(event_from_json(&back, again, &e), 0, "%s", e.msg);
        assert_events_equal(&l.items[i], &back);
        event_clear(&back);
        json_object_put(obj);
        json_object_put(again);
    }
    /* The copy is equal too. */
    struct event copy;
    event_copy(&copy, &l.items[1]);
    assert_events_equal(&l.items[1], &copy);
    event_clear(&copy);
    event_list_free(&l);
    json_object_put(body);
}

Test(event, from_json_needs_serial)
{
    struct event ev;
    struct err e = {{0}};
    struct json_object *obj = parse("{\"account\":\"a\",\"kind\":\"ch1\",\"text\":\"x\","
                                    "\"unixtime\":1700000000}");
    cr_assert_eq(event_from_json(&ev, obj, &e), -1);
    cr_assert_str_eq(e.msg, "event has no 'serial'");
    cr_assert_null(ev.account);
    json_object_put(obj);
}

/* ---- what the texts say ---- */

Test(event, texts_classified)
{
    struct event_list l = {0};
    struct err e = {{0}};
    struct json_object *body = fixture("alert-strings.json");
    cr_assert_eq(event_parse_alert_log(&l, body, "main", &e), 0, "%s", e.msg);
    cr_assert_eq(l.n, 4);
    assert_str(l.items[0].state, "alarm");
    assert_str(l.items[0].value, "20.5%");
    assert_str(l.items[0].limit, NULL);
    assert_str(l.items[1].state, "alarm");
    assert_str(l.items[1].value, "12.3℃");
    assert_str(l.items[2].state, "battery");
    assert_str(l.items[2].value, NULL);
    assert_str(l.items[3].state, "recovered");
    assert_str(l.items[3].value, "7.9℃");
    /* The raw text is untouched. */
    assert_str(l.items[3].text, "CH1 正常復帰 7.9℃");
    /* ch1's recovery ends ch1's alarm at 1700000300, not ch2's older one. */
    cr_assert_eq(l.items[3].recovers, 1700000300);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(l.items[i].recovers, 0);
    event_list_free(&l);
    json_object_put(body);

    parse_ok(&l, "{\"remote-serial\":\"52C10001\",\"alert-logs\":[{\"unixtime\":1700000000,"
                 "\"ch1\":\"CH1 Upper Limit Exceeded -70.2°C (limit -75.0°C)\","
                 "\"ch2\":\"whatever this is\",\"communication-status\":\"link down\"}]}");
    cr_assert_eq(l.n, 3);
    assert_str(l.items[0].state, "alarm");
    assert_str(l.items[0].value, "-70.2°C");
    assert_str(l.items[0].limit, "-75.0°C");
    assert_str(l.items[1].state, "other");
    assert_str(l.items[1].value, NULL);
    /* The kind decides when the text does not. */
    assert_str(l.items[2].state, "communication");
    event_list_free(&l);
}

/* The `recovers` of each event of `body`, in order. */
static void expect_recovers(const char *body, const long long *want, size_t n)
{
    struct event_list l;
    parse_ok(&l, body);
    cr_assert_eq(l.n, n, "%zu events, want %zu", l.n, n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(l.items[i].recovers, want[i], "event %zu (%s at %lld): %lld, want %lld", i,
                     l.items[i].kind, l.items[i].unixtime, l.items[i].recovers, want[i]);
    event_list_free(&l);
}

#define LOG(entries) "{\"remote-serial\":\"52C10001\",\"alert-logs\":[" entries "]}"
#define ALARM "CH1 Upper Limit Exceeded 9.4°C (limit 8.0°C)"
#define BACK "CH1 Measurement Recovery 7.6°C"

Test(event, recovery_links_alarm_of_same_kind)
{
    /* Alarm at t1, recovery at t2: t1; given out of order, still t1. */
    expect_recovers(LOG("{\"unixtime\":200,\"ch1\":\"" BACK "\"},"
                        "{\"unixtime\":100,\"ch1\":\"" ALARM "\"}"),
                    (const long long[]){0, 100}, 2);
    /* The latest earlier alarm of that kind. */
    expect_recovers(LOG("{\"unixtime\":100,\"ch1\":\"" ALARM "\"},"
                        "{\"unixtime\":150,\"ch1\":\"CH1 上限値警報 12.3℃\"},"
                        "{\"unixtime\":200,\"ch1\":\"CH1 正常復帰 7.1℃\"}"),
                    (const long long[]){0, 0, 150}, 3);
    /* Unknown wording in between is looked past. */
    expect_recovers(LOG("{\"unixtime\":100,\"ch1\":\"" ALARM "\"},"
                        "{\"unixtime\":150,\"ch1\":\"CH1 something\"},"
                        "{\"unixtime\":200,\"ch1\":\"" BACK "\"}"),
                    (const long long[]){0, 0, 100}, 3);
    /* A sensor error, a low battery and a lost link are ended too. */
    expect_recovers(LOG("{\"unixtime\":100,\"ch2\":\"CH2 Sensor Error\","
                        "\"battery-level\":\"Low Battery Warning\"},"
                        "{\"unixtime\":200,\"ch2\":\"CH2 Recovery\","
                        "\"battery-level\":\"Battery recovered\"}"),
                    (const long long[]){0, 0, 100, 100}, 4);
}

Test(event, recovery_without_its_alarm)
{
    /* Different kind: 0. */
    expect_recovers(LOG("{\"unixtime\":100,\"ch2\":\"CH2 Upper Limit Exceeded 9.4°C\"},"
                        "{\"unixtime\":200,\"ch1\":\"" BACK "\"}"),
                    (const long long[]){0, 0}, 2);
    /* No earlier alarm at all; the alarm comes after. */
    expect_recovers(LOG("{\"unixtime\":200,\"ch1\":\"" BACK "\"},"
                        "{\"unixtime\":300,\"ch1\":\"" ALARM "\"}"),
                    (const long long[]){0, 0}, 2);
    /* Same unixtime: not earlier (the alarm's text sorts first here). */
    expect_recovers(LOG("{\"unixtime\":200,\"ch1\":\"CH1 正常復帰 7.1℃\"},"
                        "{\"unixtime\":200,\"ch1\":\"" ALARM "\"}"),
                    (const long long[]){0, 0}, 2);
    /* A second recovery ends nothing: the alarm was already over. */
    expect_recovers(LOG("{\"unixtime\":100,\"ch1\":\"" ALARM "\"},"
                        "{\"unixtime\":200,\"ch1\":\"" BACK "\"},"
                        "{\"unixtime\":300,\"ch1\":\"" BACK "\"}"),
                    (const long long[]){0, 100, 0}, 3);
    /* Only recoveries link: an alarm after an alarm does not. */
    expect_recovers(LOG("{\"unixtime\":100,\"ch1\":\"" ALARM "\"},"
                        "{\"unixtime\":200,\"ch1\":\"" ALARM "\"}"),
                    (const long long[]){0, 0}, 2);
}

static bool member_bool(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no '%s'", key);
    cr_assert(json_object_is_type(v, json_type_boolean), "'%s' is not a boolean", key);
    return json_object_get_boolean(v);
}

Test(event, json_members_of_the_reading)
{
    static const char *const flags[] = {"is_alarm",   "is_recovered",     "is_sensor_error",
                                        "is_battery", "is_communication", "is_other"};
    struct event_list l;
    struct json_object *v = NULL;
    parse_ok(&l, LOG("{\"unixtime\":100,\"ch1\":\"" ALARM "\"},"
                     "{\"unixtime\":200,\"ch1\":\"" BACK "\"}"));
    struct json_object *alarm = event_to_json(&l.items[0]);
    struct json_object *back = event_to_json(&l.items[1]);
    cr_assert_str_eq(json_object_get_string(json_object_object_get(alarm, "state")), "alarm");
    cr_assert_str_eq(json_object_get_string(json_object_object_get(alarm, "value")), "9.4°C");
    cr_assert_str_eq(json_object_get_string(json_object_object_get(alarm, "limit")), "8.0°C");
    cr_assert(json_object_object_get_ex(alarm, "recovers", &v));
    cr_assert(json_object_is_type(v, json_type_int));
    cr_assert_eq(json_object_get_int64(v), 0);
    /* An absent limit is null, present. */
    cr_assert(json_object_object_get_ex(back, "limit", &v));
    cr_assert_null(v);
    cr_assert_eq(json_object_get_int64(json_object_object_get(back, "recovers")), 100);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        cr_expect_eq(member_bool(alarm, flags[i]), i == 0, "%s", flags[i]);
        cr_expect_eq(member_bool(back, flags[i]), i == 1, "%s", flags[i]);
    }
    json_object_put(alarm);
    json_object_put(back);

    /* Round trip through text, with a link and a NULL value. */
    for (size_t i = 0; i < l.n; i++) {
        struct event got;
        struct err e = {{0}};
        struct json_object *obj = event_to_json(&l.items[i]);
        struct json_object *again = json_tokener_parse(json_object_to_json_string(obj));
        cr_assert_eq(event_from_json(&got, again, &e), 0, "%s", e.msg);
        assert_events_equal(&l.items[i], &got);
        event_clear(&got);
        json_object_put(obj);
        json_object_put(again);
    }
    struct event copy;
    event_copy(&copy, &l.items[1]);
    assert_events_equal(&l.items[1], &copy);
    event_clear(&copy);
    event_list_free(&l);
}

Test(event, old_outbox_entry_classified_on_load)
{
    struct event ev;
    struct err e = {{0}};
    /* As an outbox entry was written before state, value, limit, recovers. */
    struct json_object *obj =
        parse("{\"id\":\"52C10001/1700000300/ch1\",\"account\":\"a\",\"serial\":\"52C10001\","
              "\"model\":\"\",\"name\":\"\",\"unixtime\":1700000300,\"kind\":\"ch1\","
              "\"text\":\"CH1 上限値警報 12.3℃ (上限 8.0℃)\",\"channel_name\":null,"
              "\"channel_unit\":null,\"utc_offset\":540}");
    cr_assert_eq(event_from_json(&ev, obj, &e), 0, "%s", e.msg);
    assert_str(ev.state, "alarm");
    assert_str(ev.value, "12.3℃");
    assert_str(ev.limit, "8.0℃");
    cr_assert_eq(ev.recovers, 0);
    assert_str(ev.text, "CH1 上限値警報 12.3℃ (上限 8.0℃)");
    event_clear(&ev);
    json_object_put(obj);

    /* A battery-level entry: the kind decides. */
    obj = parse("{\"account\":\"a\",\"serial\":\"S\",\"unixtime\":1,\"kind\":\"battery-level\","
                "\"text\":\"3\"}");
    cr_assert_eq(event_from_json(&ev, obj, &e), 0, "%s", e.msg);
    assert_str(ev.state, "battery");
    assert_str(ev.value, "3");
    event_clear(&ev);
    json_object_put(obj);
}

Test(event, unusable_reading_members_do_not_fail)
{
    struct event ev;
    struct err e = {{0}};
    /* A state of another type or unknown name is read again from the text;
     * a stored value is kept; the is_* members are not read. */
    const char *bodies[] = {
        "{\"account\":\"a\",\"serial\":\"S\",\"unixtime\":1,\"kind\":\"ch1\","
        "\"text\":\"CH1 Measurement Recovery 7.6°C\",\"state\":42,\"value\":[1],"
        "\"recovers\":\"x\",\"is_alarm\":true}",
        "{\"account\":\"a\",\"serial\":\"S\",\"unixtime\":1,\"kind\":\"ch1\","
        "\"text\":\"CH1 Measurement Recovery 7.6°C\",\"state\":\"panic\",\"value\":\"7.6°C\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct json_object *obj = parse(bodies[i]);
        cr_assert_eq(event_from_json(&ev, obj, &e), 0, "%s", e.msg);
        assert_str(ev.state, "recovered");
        assert_str(ev.value, "7.6°C");
        assert_str(ev.limit, NULL);
        cr_assert_eq(ev.recovers, 0);
        event_clear(&ev);
        json_object_put(obj);
    }
    /* A stored reading is taken as it is, not read again. */
    struct json_object *obj =
        parse("{\"account\":\"a\",\"serial\":\"S\",\"unixtime\":1,\"kind\":\"ch1\","
              "\"text\":\"CH1 Measurement Recovery 7.6°C\",\"state\":\"other\",\"value\":null,"
              "\"recovers\":5}");
    cr_assert_eq(event_from_json(&ev, obj, &e), 0, "%s", e.msg);
    assert_str(ev.state, "other");
    assert_str(ev.value, NULL);
    cr_assert_eq(ev.recovers, 5);
    event_clear(&ev);
    json_object_put(obj);
}

Test(event, hand_built_event_gets_a_state_in_json)
{
    struct event ev;
    memset(&ev, 0, sizeof ev);
    ev.account = xstrdup("a");
    ev.serial = xstrdup("S");
    ev.kind = xstrdup("ch1");
    ev.text = xstrdup("CH1 Lower Limit Exceeded 1.8°C (limit 2.0°C)");
    struct json_object *obj = event_to_json(&ev);
    event_clear(&ev);
    cr_assert_str_eq(json_object_get_string(json_object_object_get(obj, "state")), "alarm");
    cr_assert_str_eq(json_object_get_string(json_object_object_get(obj, "limit")), "2.0°C");
    cr_assert(member_bool(obj, "is_alarm"));
    cr_assert_not(member_bool(obj, "is_other"));
    json_object_put(obj);
}

/* --- group and routing annotations ------------------------------------- */

/* An event of device S at `unixtime` (local time `utc_offset` minutes east
 * of UTC) that a rule routed, with `held` events held back since
 * `held_since`. */
static struct event routed_event(long long unixtime, int utc_offset, long held,
                                 long long held_since)
{
    struct event ev;
    memset(&ev, 0, sizeof ev);
    ev.account = xstrdup("a");
    ev.serial = xstrdup("S");
    ev.model = xstrdup("");
    ev.name = xstrdup("");
    ev.kind = xstrdup("ch1");
    ev.text = xstrdup("CH1 Upper Limit Exceeded -70.2°C (limit -75.0°C)");
    ev.state = xstrdup("alarm");
    ev.value = xstrdup("-70.2°C");
    ev.limit = xstrdup("-75.0°C");
    ev.unixtime = unixtime;
    ev.utc_offset = utc_offset;
    ev.group = xstrdup("冷凍庫 B1");
    ev.rule = xstrdup("freezer-critical");
    ev.severity = xstrdup("critical");
    ev.held = held;
    ev.held_since = held_since;
    return ev;
}

/* The string member `key`, or NULL when it is null; fails when missing. */
static const char *member_str_or_null(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no '%s' in %s", key,
              json_object_to_json_string(obj));
    if (!v)
        return NULL;
    cr_assert(json_object_is_type(v, json_type_string), "'%s' is not a string", key);
    return json_object_get_string(v);
}

static long long member_int(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no '%s'", key);
    cr_assert(json_object_is_type(v, json_type_int), "'%s' is not an integer", key);
    return (long long)json_object_get_int64(v);
}

Test(event, group_and_routing_round_trip)
{
    struct event ev = routed_event(1700000000, 540, 12, 1699990000);
    struct err e = {{0}};
    struct json_object *obj = event_to_json(&ev);
    assert_str(member_str_or_null(obj, "group"), "冷凍庫 B1");
    assert_str(member_str_or_null(obj, "rule"), "freezer-critical");
    assert_str(member_str_or_null(obj, "severity"), "critical");
    cr_assert_eq(member_int(obj, "held"), 12);
    cr_assert_eq(member_int(obj, "held_since"), 1699990000);
    /* Through text, as the outbox keeps it. */
    struct json_object *again = json_tokener_parse(json_object_to_json_string(obj));
    struct event back;
    cr_assert_eq(event_from_json(&back, again, &e), 0, "%s", e.msg);
    assert_events_equal(&ev, &back);
    assert_str(back.group, "冷凍庫 B1");
    event_clear(&back);
    json_object_put(again);
    json_object_put(obj);

    /* The copy has them too, in its own memory. */
    struct event copy;
    event_copy(&copy, &ev);
    assert_events_equal(&ev, &copy);
    cr_assert_neq(copy.group, ev.group);
    cr_assert_neq(copy.rule, ev.rule);
    cr_assert_neq(copy.severity, ev.severity);
    event_clear(&copy);
    event_clear(&ev);
    cr_assert_null(ev.group);
    cr_assert_null(ev.rule);
    cr_assert_eq(ev.held, 0);
}

Test(event, no_group_and_no_rule_in_json)
{
    struct event ev = routed_event(1700000000, 540, 0, 0);
    free(ev.group);
    free(ev.rule);
    free(ev.severity);
    ev.group = ev.rule = ev.severity = NULL;
    struct json_object *obj = event_to_json(&ev);
    assert_str(member_str_or_null(obj, "group"), "");
    assert_str(member_str_or_null(obj, "rule"), NULL);
    assert_str(member_str_or_null(obj, "severity"), NULL);
    cr_assert_eq(member_int(obj, "held"), 0);
    cr_assert_eq(member_int(obj, "held_since"), 0);
    assert_str(member_str_or_null(obj, "held_since_time"), NULL);
    struct event back;
    struct err e = {{0}};
    cr_assert_eq(event_from_json(&back, obj, &e), 0, "%s", e.msg);
    assert_str(back.group, "");
    assert_str(back.rule, NULL);
    assert_str(back.severity, NULL);
    event_clear(&back);
    json_object_put(obj);
    event_clear(&ev);
}

/* held_since_time of an event at `unixtime` with events held back since
 * `held_since`, in the local time of `utc_offset`. */
static void expect_held_since_time(long long unixtime, int utc_offset, long held,
                                   long long held_since, const char *want)
{
    struct event ev = routed_event(unixtime, utc_offset, held, held_since);
    struct json_object *obj = event_to_json(&ev);
    const char *got = member_str_or_null(obj, "held_since_time");
    if (want)
        cr_expect(got && strcmp(got, want) == 0,
                  "at %lld%+d, held %ld since %lld: want '%s', got '%s'", unixtime, utc_offset,
                  held, held_since, want, got ? got : "null");
    else
        cr_expect_null(got, "at %lld%+d, held %ld since %lld: want null, got '%s'", unixtime,
                       utc_offset, held, held_since, got ? got : "");
    json_object_put(obj);
    event_clear(&ev);
}

Test(event, held_since_time_is_local_and_dated_only_on_another_day)
{
    /* 1700000000 is 2023-11-14T22:13:20Z. In UTC: the same day, 02:14. */
    const long long at = 1700000000, since = 1699928040; /* 2023-11-14T02:14:00Z */
    expect_held_since_time(at, 0, 12, since, "02:14");
    /* In +09:00 the event is at 07:13 on the 15th and the first held one at
     * 11:14 on the 14th: midnight lies between them. */
    expect_held_since_time(at, 540, 12, since, "11-14 11:14");
    /* An hour before in UTC is the same local day in +09:00... */
    expect_held_since_time(at, 540, 3, at - 3600, "06:13");
    /* ...and in -10:00 (11:13 and 12:13 on the 14th). In +01:00 the event
     * is at 23:13 on the 14th: 00:50 that morning is the same day, 23:50
     * the evening before is not, though both are on the 13th in UTC. */
    expect_held_since_time(at, -600, 3, at - 3600, "11:13");
    expect_held_since_time(at, 60, 3, at - 1380 - 3600 * 22, "00:50");
    expect_held_since_time(at, 60, 3, at - 1380 - 3600 * 23, "11-13 23:50");
    /* Another year altogether still shows month and day. */
    expect_held_since_time(1704067200, 0, 1, 1704067140, "12-31 23:59");
    /* Nothing held: null, whatever held_since says. */
    expect_held_since_time(at, 540, 0, 0, NULL);
    expect_held_since_time(at, 540, 0, since, NULL);
    /* Held, but no usable time. */
    expect_held_since_time(at, 540, 2, 0, NULL);
    expect_held_since_time(at, 540, 2, 253402300800LL, NULL);
}

Test(event, old_outbox_entry_without_group_or_routing_loads)
{
    struct event ev;
    struct err e = {{0}};
    struct json_object *obj = parse("{\"account\":\"a\",\"serial\":\"S\",\"unixtime\":1,"
                                    "\"kind\":\"ch1\",\"text\":\"x\"}");
    cr_assert_eq(event_from_json(&ev, obj, &e), 0, "%s", e.msg);
    assert_str(ev.group, NULL);
    assert_str(ev.rule, NULL);
    assert_str(ev.severity, NULL);
    cr_assert_eq(ev.held, 0);
    cr_assert_eq(ev.held_since, 0);
    event_clear(&ev);
    json_object_put(obj);
}

Test(event, unusable_routing_members_do_not_fail)
{
    static const char *const bodies[] = {
        "{\"account\":\"a\",\"serial\":\"S\",\"unixtime\":1,\"kind\":\"ch1\",\"text\":\"x\","
        "\"group\":7,\"rule\":[\"r\"],\"severity\":{},\"held\":\"12\",\"held_since\":1.5,"
        "\"held_since_time\":42}",
        "{\"account\":\"a\",\"serial\":\"S\",\"unixtime\":1,\"kind\":\"ch1\",\"text\":\"x\","
        "\"group\":null,\"rule\":null,\"severity\":true,\"held\":-4,\"held_since\":-9}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct event ev;
        struct err e = {{0}};
        struct json_object *obj = parse(bodies[i]);
        cr_assert_eq(event_from_json(&ev, obj, &e), 0, "body %zu: %s", i, e.msg);
        assert_str(ev.group, NULL);
        assert_str(ev.rule, NULL);
        assert_str(ev.severity, NULL);
        cr_assert_eq(ev.held, 0, "body %zu", i);
        cr_assert_eq(ev.held_since, 0, "body %zu", i);
        event_clear(&ev);
        json_object_put(obj);
    }
}

/* ---- the trend of an event's channel ---- */

/* A series of channels 1 and 2 with a reading every 10 minutes from
 * `t0`: ch1 rises from 2.0 by 0.5 a reading; the fourth reading has no
 * ch1 value; data-ids run from 65534 and wrap. */
static void trend_series(struct series *s, long long t0, size_t n)
{
    memset(s, 0, sizeof *s);
    s->serial = xstrdup("52C10001");
    s->utc_offset = 540;
    s->n_channels = 2;
    s->channels[0] = (struct series_channel){1, xstrdup("温度"), xstrdup("C")};
    s->channels[1] = (struct series_channel){2, xstrdup("湿度"), xstrdup("%")};
    s->points = xcalloc(n, sizeof *s->points);
    for (size_t i = 0; i < n; i++) {
        struct series_point *p = &s->points[s->n_points++];
        p->unixtime = t0 + 600 * (long long)i;
        p->data_id = (long)((65534 + i) % 65536);
        p->valid = i == 3 ? 2 : 3;
        p->v[0] = i == 3 ? 0 : 2.0 + 0.5 * (double)i;
        p->v[1] = 50;
    }
}

static struct event trend_event(void)
{
    struct event ev = {0};
    ev.account = xstrdup("tokyo");
    ev.serial = xstrdup("52C10001");
    ev.model = xstrdup("");
    ev.name = xstrdup("冷蔵庫");
    ev.kind = xstrdup("ch1");
    ev.text = xstrdup("CH1 Upper Limit Exceeded 5.5C (limit 5.0C)");
    ev.unixtime = 1795003000;
    ev.utc_offset = 540;
    return ev;
}

Test(event, channel_of_an_event)
{
    struct event ev = {.kind = (char *)"ch3"};
    cr_assert_eq(event_channel(&ev), 3);
    ev.kind = (char *)"ch5"; /* cumulative channels have no graph data */
    cr_assert_eq(event_channel(&ev), 0);
    ev.kind = (char *)"battery-level";
    cr_assert_eq(event_channel(&ev), 0);
    ev.kind = (char *)"reading";
    ev.channel = 2;
    cr_assert_eq(event_channel(&ev), 2);
    ev.kind = (char *)"ch10";
    cr_assert_eq(event_channel(&ev), 0);
}

Test(event, trend_keeps_one_channel_in_its_span)
{
    struct series s;
    trend_series(&s, 1795000000, 8);
    /* The span leaves out the first and the last reading. */
    struct event_trend *t = event_trend_of(&s, 1, 1795000600, 1795003600);
    cr_assert_not_null(t);
    cr_assert_eq(t->series.n_channels, 1);
    cr_assert_eq(t->series.channels[0].num, 1);
    cr_assert_str_eq(t->series.channels[0].unit, "C");
    cr_assert_eq(t->series.n_points, 6);
    cr_assert_eq(t->series.points[0].unixtime, 1795000600);
    cr_assert_eq(t->series.points[2].valid, 0); /* the reading without a ch1 value stays a gap */
    cr_assert_eq(t->series.points[5].valid, 1);
    cr_assert_float_eq(t->series.points[5].v[0], 5.0, 1e-9);
    event_trend_free(t);
    /* No reading of the channel in the span, or no such channel: none. */
    cr_assert_null(event_trend_of(&s, 1, 1795001800, 1795001800));
    cr_assert_null(event_trend_of(&s, 3, 1795000000, 1795009999));
    cr_assert_null(event_trend_of(&s, 1, 1795009999, 1795000000));
    event_trend_free(NULL);
    series_free(&s);
}

Test(event, trend_travels_through_the_outbox_and_shows_in_templates)
{
    struct series s;
    struct err e = {{0}};
    trend_series(&s, 1795000000, 8);
    struct event ev = trend_event();
    ev.trend = event_trend_of(&s, 1, 1795000000, 1795004200);
    ev.trend->has_upper = true;
    ev.trend->upper = 5.0;
    struct json_object *obj = event_to_json(&ev);
    struct json_object *tj = NULL, *v = NULL;
    cr_assert(json_object_object_get_ex(obj, "trend", &tj) && tj);
    /* What templates show. */
    const struct {
        const char *key, *want;
    } shown[] = {
        {"sparkline", "▁▂▃·▅▆▇█"}, /* a bucket per reading, the gap shown */
        {"direction", "rising"},
        {"first", "2"},
        {"last", "5.5"},
        {"min", "2"},
        {"max", "5.5"},
        {"unit", "C"},
        {"channel_name", "温度"},
        {"upper_limit", "5"},
        {"since_time", "20:06"},
        {"until_time", "21:16"},
        {"max_time", "21:16"},
        {"span", "70 min"},
    };
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        cr_assert(json_object_object_get_ex(tj, shown[i].key, &v), "no %s", shown[i].key);
        cr_assert_str_eq(json_object_get_string(v), shown[i].want, "%s", shown[i].key);
    }
    cr_assert(json_object_object_get_ex(tj, "count", &v));
    cr_assert_eq(json_object_get_int(v), 7);
    cr_assert(json_object_object_get_ex(tj, "hours", &v));
    cr_assert_eq(json_object_get_int(v), 1);
    cr_assert_not(json_object_object_get_ex(tj, "lower_limit", NULL));

    /* Back from the outbox: the same points, limits and span. */
    struct event back;
    cr_assert_eq(event_from_json(&back, obj, &e), 0, "%s", e.msg);
    cr_assert_not_null(back.trend);
    cr_assert_eq(back.trend->since, 1795000000);
    cr_assert_eq(back.trend->until, 1795004200);
    cr_assert_eq(back.trend->series.utc_offset, 540);
    cr_assert_eq(back.trend->series.n_points, 8);
    for (size_t i = 0; i < 8; i++) {
        const struct series_point *a = &ev.trend->series.points[i],
                                  *b = &back.trend->series.points[i];
        cr_assert_eq(a->unixtime, b->unixtime);
        cr_assert_eq(a->data_id, b->data_id);
        cr_assert_eq(a->valid, b->valid);
        cr_assert_float_eq(a->v[0], b->v[0], 1e-9);
    }
    cr_assert(back.trend->has_upper);
    cr_assert_float_eq(back.trend->upper, 5.0, 1e-9);
    cr_assert_not(back.trend->has_lower);
    struct json_object *again = event_to_json(&back);
    cr_assert(json_object_equal(obj, again), "%s\n%s", json_object_to_json_string(obj),
              json_object_to_json_string(again));

    /* A copy owns its own trend. */
    struct event copy = {0};
    event_copy(&copy, &ev);
    cr_assert_not_null(copy.trend);
    cr_assert_neq(copy.trend, ev.trend);
    cr_assert_eq(copy.trend->series.n_points, 8);
    cr_assert(copy.trend->has_upper);
    event_clear(&copy);
    json_object_put(again);
    json_object_put(obj);
    event_clear(&back);
    event_clear(&ev);
    series_free(&s);
}

Test(event, a_trend_that_cannot_be_read_back_is_left_out)
{
    static const char *const bad[] = {
        "{\"since\":1,\"until\":2,\"channel\":1,\"utc_offset\":0,\"points\":{}}",
        "{\"since\":1,\"until\":2,\"channel\":9,\"utc_offset\":0,\"points\":[]}",
        "{\"since\":1,\"until\":2,\"channel\":1,\"utc_offset\":0,\"points\":[[1,null]]}",
        "{\"since\":1,\"until\":2,\"channel\":1,\"utc_offset\":0,\"points\":[[\"1\",null,1]]}",
        "{\"until\":2,\"channel\":1,\"utc_offset\":0,\"points\":[[1,null,1]]}",
        "{\"since\":1,\"until\":2,\"channel\":1,\"utc_offset\":0,\"points\":[[1,null,null]]}",
        "\"a trend\"",
    };
    struct event ev = trend_event();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct json_object *obj = event_to_json(&ev);
        json_object_object_add(obj, "trend", json_tokener_parse(bad[i]));
        struct event back;
        struct err e = {{0}};
        cr_assert_eq(event_from_json(&back, obj, &e), 0, "%s: %s", bad[i], e.msg);
        cr_assert_null(back.trend, "%s", bad[i]);
        event_clear(&back);
        json_object_put(obj);
    }
    event_clear(&ev);
}
