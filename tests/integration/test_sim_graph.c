/* The simulator's graph-data operations over real HTTP: latest-data, data
 * and their -rtr500 variants in both dialects, as JSON, csv2 and csv, with
 * temperatures converted to C or F; the 300-newest rule, the period
 * selection (from, to, number, the default and the cap), data-ids that
 * wrap and jump, the data count and its 429, the member names of the
 * base-attached records, every refusal, the rate limit of each operation,
 * faults and the statistics. */
#include "jsonpath.h"
#include "support.h"
#include "util/xalloc.h"
#include "util/buf.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW 1795000000LL
#define KEY "K-0123456789012345678901234567890123456789AB"
#define LOGIN "tbzz9999"
#define PASS "secret12"
#define CREDS "\"api-key\":\"" KEY "\",\"login-id\":\"" LOGIN "\",\"login-pass\":\"" PASS "\""
#define NUM_CREDS "\"api-key\":\"K2\",\"login-id\":\"num00001\",\"login-pass\":\"pass\""
#define FREEZER "\"remote-serial\":\"5214000A\""
#define LUX "\"remote-serial\":\"5820D101\",\"base-serial\":\"5893C000\""
#define CSV_TYPE "text/csv; charset=utf-8"
#define JSON_TYPE "application/json; charset=utf-8"

/* Freezer 5214000A: readings 0 to 401, one a minute, measured 20 s before
 * their upload; 399 is uploaded at NOW, 400 and 401 later. */
#define FREEZER_READINGS 402
#define FREEZER_UPLOADED 400
#define FREEZER_FIRST_ID 65400
#define FREEZER_GAP_AT 350 /* this reading carries data_id FREEZER_GAP_ID */
#define FREEZER_GAP_ID 1000
#define BIG_READINGS 70000

static struct sim sim;
static char *dir;

static long long freezer_unixtime(int i)
{
    return NOW - 20 - 60LL * (FREEZER_UPLOADED - 1) + 60LL * i;
}

static long freezer_id(int i)
{
    if (i >= FREEZER_GAP_AT)
        return FREEZER_GAP_ID + (i - FREEZER_GAP_AT);
    return (FREEZER_FIRST_ID + i) % 65536;
}

/* Channel 1 of freezer reading i, in tenths: -20.0 at 0, 0.0 at 200. */
static void freezer_ch1(char *out, size_t size, int i)
{
    int t = i - 200;
    snprintf(out, size, "%s%d.%d", t < 0 ? "-" : "", abs(t) / 10, abs(t) % 10);
    if (i == 398)
        snprintf(out, size, "E-001");
}

static void freezer_ch2(char *out, size_t size, int i)
{
    snprintf(out, size, "%d", 40 + i % 10);
    if (i == 399)
        snprintf(out, size, "Sensor Error");
}

static void freezer_device(struct buf *b)
{
    buf_printf(b,
               "{\"serial\":\"5214000A\",\"model\":\"TR-72A2\",\"name\":\"Freezer A\","
               "\"time_diff\":540,\"data_id\":%d,\"channels\":[{\"name\":\"Temp \\\"in\\\"\","
               "\"unit\":\"°C\"},{\"name\":\"Humidity\",\"unit\":\"%%\"}],\"readings\":[",
               FREEZER_FIRST_ID);
    for (int i = 0; i < FREEZER_READINGS; i++) {
        char ch1[16], ch2[16];
        freezer_ch1(ch1, sizeof ch1, i);
        freezer_ch2(ch2, sizeof ch2, i);
        buf_printf(b, "%s{\"at\":%lld,\"unixtime\":%lld,\"values\":[\"%s\",\"%s\"]", i ? "," : "",
                   freezer_unixtime(i) + 20, freezer_unixtime(i), ch1, ch2);
        if (i == FREEZER_GAP_AT)
            buf_printf(b, ",\"data_id\":%d", FREEZER_GAP_ID);
        buf_puts(b, "}");
    }
    buf_puts(b, "]}");
}

/* Account tbzz9999 (strings): the freezer; 5214000D, standalone with three
 * channels; 5214000B, standalone without graph data; under base unit
 * 5893C000 the six-channel 5820D101 (GMT-5 with daylight saving) and
 * 5820D102 without graph data. Account num00001 (numbers): 5214000C in
 * Fahrenheit without dst_flg, and 5820D201 under base unit 5893C100. */
static char *scenario_text(void)
{
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"now\":%lld,\"accounts\":[{\"api_key\":\"%s\",\"login_id\":\"%s\","
               "\"login_pass\":\"%s\",\"devices\":[",
               NOW, KEY, LOGIN, PASS);
    freezer_device(&b);
    buf_puts(&b, ",{\"serial\":\"5214000D\",\"model\":\"TR-73U\",\"name\":\"Three\","
                 "\"channels\":[{\"name\":\"T\",\"unit\":\"°C\"},{\"name\":\"H\",\"unit\":\"%\"},"
                 "{\"name\":\"P\",\"unit\":\"hPa\"}],"
                 "\"readings\":[{\"at\":1794999000,\"values\":[\"1.5\",\"2.5\",\"3.5\"]}]},"
                 "{\"serial\":\"5214000B\",\"model\":\"TR-71nw\",\"name\":\"Old\","
                 "\"graph_supported\":false,\"channels\":[{\"name\":\"T\",\"unit\":\"°C\"}],"
                 "\"readings\":[{\"at\":1794999000,\"values\":[\"1.5\"]}]},");
    buf_printf(&b,
               "{\"serial\":\"5820D101\",\"model\":\"RTR-574\",\"name\":\"Lux Room\",\"num\":1,"
               "\"base\":{\"serial\":\"5893C000\",\"model\":\"RTR500BW\",\"name\":\"Gateway\"},"
               "\"time_diff\":-300,\"std_bias\":0,\"dst_flg\":1,\"channels\":["
               "{\"name\":\"Illuminance\",\"unit\":\"lx\"},{\"name\":\"UV\",\"unit\":\"mW/cm²\"},"
               "{\"name\":\"Temperature\",\"unit\":\"°C\"},{\"name\":\"Humidity\",\"unit\":\"%%\"},"
               "{\"name\":\"Cumulative illuminance\",\"unit\":\"klx·h\"},"
               "{\"name\":\"Cumulative UV\",\"unit\":\"mW/cm²·h\"}],\"readings\":["
               "{\"at\":%lld,\"values\":[\"120\",\"0.05\",\"25.0\",\"50\",\"1.2\",\"0.01\"]},"
               "{\"at\":%lld,\"values\":[\"130\",\"0.06\",\"E-001\",\"51\",\"1.3\",\"0.02\"]},"
               "{\"at\":%lld,\"values\":[\"140\",\"0.07\",\"26.5\",\"52\",\"1.4\",\"0.03\"]}]},",
               NOW - 600, NOW - 300, NOW);
    buf_puts(&b, "{\"serial\":\"5820D102\",\"model\":\"RTR501B\",\"name\":\"FTP Room\",\"num\":2,"
                 "\"base\":{\"serial\":\"5893C000\",\"model\":\"RTR500BW\",\"name\":\"Gateway\"},"
                 "\"graph_supported\":false,\"channels\":[{\"name\":\"T\",\"unit\":\"°C\"}]}]},");
    buf_printf(&b,
               "{\"api_key\":\"K2\",\"login_id\":\"num00001\",\"login_pass\":\"pass\","
               "\"dialect\":\"numbers\",\"devices\":[{\"serial\":\"5214000C\","
               "\"model\":\"TR-72A2\",\"name\":\"N\",\"dst_flg\":null,\"channels\":["
               "{\"name\":\"T\",\"unit\":\"F\"},{\"name\":\"E\"}],\"readings\":["
               "{\"at\":%lld,\"values\":[98.6,\"Sensor Error\"]},"
               "{\"at\":%lld,\"values\":[\"32\",\"1\"]}]},"
               "{\"serial\":\"5820D201\",\"model\":\"RTR501B\",\"name\":\"R\",\"num\":1,"
               "\"base\":{\"serial\":\"5893C100\",\"model\":\"RTR500BW\",\"name\":\"G\"},"
               "\"channels\":[{\"name\":\"T\",\"unit\":\"°C\"}],"
               "\"readings\":[{\"at\":%lld,\"values\":[\"7.5\"]}]}]}]}",
               NOW - 120, NOW - 60, NOW - 60);
    return buf_steal(&b);
}

/* One standalone device with BIG_READINGS readings, one every 10 s up to
 * NOW, data-ids from 0 (so the last ones have wrapped). */
static char *big_scenario_text(void)
{
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"now\":%lld,\"accounts\":[{\"api_key\":\"%s\",\"login_id\":\"%s\","
               "\"login_pass\":\"%s\",\"devices\":[{\"serial\":\"5214000F\",\"channels\":"
               "[{\"name\":\"T\",\"unit\":\"°C\"}],\"readings\":[",
               NOW, KEY, LOGIN, PASS);
    for (int i = 0; i < BIG_READINGS; i++)
        buf_printf(&b, "%s{\"at\":%lld,\"values\":[%d]}", i ? "," : "",
                   NOW - 10LL * (BIG_READINGS - 1 - i), i % 100);
    buf_puts(&b, "]}]}]}");
    return buf_steal(&b);
}

static void start_with(char *text)
{
    dir = test_tmpdir();
    char *path = xasprintf("%s/scenario.json", dir);
    write_file(path, text);
    sim_start(&sim, path, dir);
    free(text);
    free(path);
}

static void setup(void)
{
    start_with(scenario_text());
}

static void setup_big(void)
{
    start_with(big_scenario_text());
}

static void teardown(void)
{
    sim_stop(&sim);
    test_rmtree(dir);
    free(dir);
    dir = NULL;
}

/* The timeouts are hang guards: every test takes well under a second. */
TestSuite(graph, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(graph_big, .init = setup_big, .fini = teardown, .timeout = 120);

/* ---- helpers ---------------------------------------------------------- */

/* A platform call as the client must make it; `fields` go after the
 * credentials (may be ""). */
static void call(struct http_reply *r, const char *op, const char *creds, const char *fields)
{
    sim_call(r, &sim, op, creds, fields);
}

static struct json_object *parse(const struct http_reply *r)
{
    return sim_reply_json(r);
}

/* A successful call's JSON record (new reference), its Content-Type
 * checked. */
static struct json_object *record(const char *op, const char *creds, const char *fields,
                                  const char *content_type)
{
    struct http_reply r;
    call(&r, op, creds, fields);
    cr_assert_eq(r.status, 200, "%s {%s}: %ld %s", op, fields, r.status, r.body);
    cr_expect_str_eq(http_header(&r, "Content-Type"), content_type);
    struct json_object *o = parse(&r);
    http_reply_free(&r);
    return o;
}

static bool has(struct json_object *o, const char *key)
{
    return json_object_object_get_ex(o, key, NULL);
}

static struct json_object *at(struct json_object *array, size_t i)
{
    cr_assert_lt(i, json_object_array_length(array), "no element %zu", i);
    return json_object_array_get_idx(array, i);
}

static size_t length(struct json_object *o, const char *key)
{
    return json_object_array_length(json_at(o, key));
}

/* The string member `key` of data[i] of a strings-dialect record. */
static const char *row_str(struct json_object *rec, size_t i, const char *key)
{
    return json_str_at(at(json_at(rec, "data"), i), key);
}

static long long row_ll(struct json_object *rec, size_t i, const char *key)
{
    return strtoll(row_str(rec, i, key), NULL, 10);
}

/* Checks status, content type and {"error":{"code":status,"message":...}};
 * returns the message (a copy). */
static char *expect_error(const struct http_reply *r, long status)
{
    cr_assert_eq(r->status, status, "status %ld, want %ld: %s", r->status, status, r->body);
    cr_expect_str_eq(http_header(r, "Content-Type"), JSON_TYPE);
    struct json_object *o = parse(r);
    struct json_object *e = json_at(o, "error");
    cr_expect_eq(json_int_at(e, "code"), status);
    char *msg = xstrdup(json_str_at(e, "message"));
    json_object_put(o);
    return msg;
}

/* A call that must fail with `status` and a message holding `needle`. */
static void call_error(const char *op, const char *creds, const char *fields, long status,
                       const char *needle)
{
    struct http_reply r;
    call(&r, op, creds, fields);
    char *msg = expect_error(&r, status);
    cr_expect(strstr(msg, needle), "%s {%s}: want '%s' in '%s'", op, fields, needle, msg);
    free(msg);
    http_reply_free(&r);
}

/* data over freezer readings in (unixtime of `from`, unixtime of `to`),
 * -1 leaving the bound out, and at most `number` (0: not given). */
static struct json_object *freezer_period(int from, int to, long number)
{
    char fields[256];
    int n = snprintf(fields, sizeof fields, "%s", FREEZER);
    if (from >= 0)
        n += snprintf(fields + n, sizeof fields - (size_t)n, ",\"unixtime-from\":%lld",
                      freezer_unixtime(from));
    if (to >= 0)
        n += snprintf(fields + n, sizeof fields - (size_t)n, ",\"unixtime-to\":%lld",
                      freezer_unixtime(to));
    if (number)
        snprintf(fields + n, sizeof fields - (size_t)n, ",\"number\":%ld", number);
    return record("data", CREDS, fields, JSON_TYPE);
}

/* The record's data are freezer readings first ... first + count - 1, with
 * their unixtimes, data-ids and values. */
static void expect_freezer_rows(struct json_object *rec, int first, int count)
{
    cr_assert_eq(length(rec, "data"), (size_t)count, "want %d readings from %d, got %zu", count,
                 first, length(rec, "data"));
    for (int k = 0; k < count; k++) {
        int i = first + k;
        char ch1[16], ch2[16];
        freezer_ch1(ch1, sizeof ch1, i);
        freezer_ch2(ch2, sizeof ch2, i);
        cr_expect_eq(row_ll(rec, (size_t)k, "unixtime"), freezer_unixtime(i), "reading %d", i);
        cr_expect_eq(row_ll(rec, (size_t)k, "data-id"), freezer_id(i), "reading %d", i);
        cr_expect_str_eq(row_str(rec, (size_t)k, "ch1"), ch1, "reading %d", i);
        cr_expect_str_eq(row_str(rec, (size_t)k, "ch2"), ch2, "reading %d", i);
    }
}

/* POST /_sim/readings. */
static void add_reading(const char *serial, const char *reading)
{
    char *url = xasprintf("%s/_sim/readings", sim.base_url);
    char *body = xasprintf("{\"serial\":\"%s\",\"reading\":%s}", serial, reading);
    struct http_reply r;
    cr_assert_eq(http_request(&r, "POST", url, "application/json", body, NULL), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_reply_free(&r);
    free(body);
    free(url);
}

/* ---- Get Latest Data ---------------------------------------------------- */

Test(graph, latest_data_sends_the_300_newest_uploaded_readings_oldest_first)
{
    struct json_object *rec = record("latest-data", CREDS, FREEZER, JSON_TYPE);
    cr_expect_str_eq(json_str_at(rec, "serial"), "5214000A");
    cr_expect_str_eq(json_str_at(rec, "model"), "TR-72A2");
    cr_expect_str_eq(json_str_at(rec, "name"), "Freezer A");
    cr_expect_str_eq(json_str_at(rec, "time_diff"), "540");
    cr_expect_str_eq(json_str_at(rec, "std_bias"), "0");
    cr_expect_str_eq(json_str_at(rec, "dst_flg"), "0");
    cr_expect_str_eq(json_str_at(rec, "dst_bias"), "60");
    cr_expect_not(has(rec, "remote-serial") || has(rec, "base-serial") || has(rec, "time-diff"));
    struct json_object *chs = json_at(rec, "channel");
    cr_assert_eq(json_object_array_length(chs), 2);
    cr_expect_str_eq(json_str_at(at(chs, 0), "name"), "Temp \"in\"");
    cr_expect_str_eq(json_str_at(at(chs, 0), "num"), "0");
    cr_expect_str_eq(json_str_at(at(chs, 0), "unit"), "°C");
    cr_expect_str_eq(json_str_at(at(chs, 1), "name"), "Humidity");
    cr_expect_str_eq(json_str_at(at(chs, 1), "num"), "1");
    cr_expect_str_eq(json_str_at(at(chs, 1), "unit"), "%");
    /* readings 100 to 399: 400 and 401 are not uploaded yet; 398 and 399
     * carry error values */
    expect_freezer_rows(rec, FREEZER_UPLOADED - 300, 300);
    struct json_object *last = at(json_at(rec, "data"), 299);
    cr_expect_eq(json_object_object_length(last), 4, "unixtime, data-id, ch1, ch2: %s",
                 json_object_to_json_string(last));
    cr_expect_str_eq(json_str_at(at(json_at(rec, "data"), 298), "ch1"), "E-001");
    cr_expect_str_eq(json_str_at(last, "ch2"), "Sensor Error");
    json_object_put(rec);

    /* a reading counts from its upload on */
    sim_advance(&sim, 59);
    rec = record("latest-data", CREDS, FREEZER, JSON_TYPE);
    expect_freezer_rows(rec, FREEZER_UPLOADED - 300, 300);
    json_object_put(rec);
    sim_advance(&sim, 1);
    rec = record("latest-data", CREDS, FREEZER, JSON_TYPE);
    expect_freezer_rows(rec, FREEZER_UPLOADED - 299, 300);
    json_object_put(rec);
}

Test(graph, latest_data_has_fewer_readings_when_the_device_has_fewer)
{
    struct json_object *rec =
        record("latest-data", CREDS, "\"remote-serial\":\"5214000D\"", JSON_TYPE);
    cr_assert_eq(length(rec, "data"), 1);
    struct json_object *row = at(json_at(rec, "data"), 0);
    cr_expect_str_eq(json_str_at(row, "unixtime"), "1794999000");
    cr_expect_str_eq(json_str_at(row, "data-id"), "0");
    cr_expect_str_eq(json_str_at(row, "ch1"), "1.5");
    cr_expect_str_eq(json_str_at(row, "ch2"), "2.5");
    cr_expect_not(has(row, "ch3"), "a standalone record has ch1 and ch2 only");
    cr_expect_eq(length(rec, "channel"), 2);
    json_object_put(rec);

    /* before the first upload: no readings, the channels all the same */
    sim_set_clock(&sim, 1794998999);
    rec = record("latest-data", CREDS, "\"remote-serial\":\"5214000D\"", JSON_TYPE);
    cr_expect_eq(length(rec, "data"), 0);
    cr_expect_eq(length(rec, "channel"), 2);
    json_object_put(rec);
}

Test(graph, numbers_dialect_sends_numbers_and_leaves_out_a_null_dst_flg)
{
    struct json_object *rec =
        record("latest-data", NUM_CREDS, "\"remote-serial\":\"5214000C\"", JSON_TYPE);
    cr_expect_eq(json_int_at(rec, "time_diff"), 0);
    cr_expect_eq(json_int_at(rec, "std_bias"), 0);
    cr_expect_eq(json_int_at(rec, "dst_bias"), 60);
    cr_expect_not(has(rec, "dst_flg"));
    cr_expect_eq(json_int_at(at(json_at(rec, "channel"), 0), "num"), 0);
    cr_expect_eq(json_int_at(at(json_at(rec, "channel"), 1), "num"), 1);
    cr_expect_str_eq(json_str_at(at(json_at(rec, "channel"), 1), "unit"), "");
    struct json_object *data = json_at(rec, "data");
    cr_assert_eq(json_object_array_length(data), 2);
    cr_expect_eq(json_int_at(at(data, 0), "unixtime"), NOW - 120);
    cr_expect_eq(json_int_at(at(data, 0), "data-id"), 0);
    struct json_object *v = json_at(at(data, 0), "ch1");
    cr_assert(json_object_is_type(v, json_type_double), "%s", json_object_to_json_string(v));
    cr_expect_float_eq(json_object_get_double(v), 98.6, 1e-9);
    cr_expect_str_eq(json_str_at(at(data, 0), "ch2"), "Sensor Error");
    cr_expect_eq(json_int_at(at(data, 1), "ch1"), 32);
    cr_expect_eq(json_int_at(at(data, 1), "ch2"), 1);
    cr_expect_eq(json_int_at(at(data, 1), "data-id"), 1);
    json_object_put(rec);

    rec = record("data-rtr500", NUM_CREDS,
                 "\"remote-serial\":\"5820D201\",\"base-serial\":\"5893C100\"", JSON_TYPE);
    cr_expect_eq(json_int_at(rec, "time-diff"), 0);
    cr_expect_eq(json_int_at(rec, "dst-flg"), 0);
    cr_expect_eq(json_int_at(rec, "dst-bias"), 60);
    cr_expect_eq(json_int_at(at(json_at(rec, "channel"), 0), "num"), 1);
    data = json_at(rec, "data");
    cr_assert_eq(json_object_array_length(data), 1);
    cr_expect_eq(json_int_at(at(data, 0), "unixtime"), NOW - 60);
    cr_expect_float_eq(json_object_get_double(json_at(at(data, 0), "ch1")), 7.5, 1e-9);
    json_object_put(rec);
}

/* ---- Get Data by Period and Number ------------------------------------------ */

Test(graph, data_without_a_period_sends_every_uploaded_reading_and_counts_them)
{
    struct http_reply r;
    call(&r, "data", CREDS, FREEZER);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_expect_eq(sim_header_num(&r, "X-RateLimit-Remaining-DataCount"), 160000 - FREEZER_UPLOADED);
    sim_expect_rate(&r, 20, 19, 60);
    struct json_object *rec = parse(&r);
    expect_freezer_rows(rec, 0, FREEZER_UPLOADED);
    json_object_put(rec);
    http_reply_free(&r);

    /* latest-data leaves the data count alone and has no header for it */
    call(&r, "latest-data", CREDS, FREEZER);
    cr_expect_null(http_header(&r, "X-RateLimit-Remaining-DataCount"));
    http_reply_free(&r);
    call(&r, "data", CREDS, FREEZER ",\"number\":10");
    cr_expect_eq(sim_header_num(&r, "X-RateLimit-Remaining-DataCount"),
                 160000 - FREEZER_UPLOADED - 10);
    http_reply_free(&r);
}

Test(graph, data_takes_the_newest_readings_between_exclusive_bounds)
{
    /* strictly after `from` and strictly before `to` */
    struct json_object *rec = freezer_period(10, 13, 0);
    expect_freezer_rows(rec, 11, 2);
    json_object_put(rec);
    /* more in range than number: the newest */
    rec = freezer_period(-1, 200, 5);
    expect_freezer_rows(rec, 195, 5);
    json_object_put(rec);
    rec = freezer_period(100, 200, 1000);
    expect_freezer_rows(rec, 101, 99);
    json_object_put(rec);
    rec = freezer_period(390, -1, 3);
    expect_freezer_rows(rec, 397, 3);
    json_object_put(rec);
    /* no `to`: up to the newest uploaded reading; a `to` at its unixtime
     * leaves it out */
    rec = freezer_period(395, -1, 0);
    expect_freezer_rows(rec, 396, 4);
    json_object_put(rec);
    rec = freezer_period(395, 399, 0);
    expect_freezer_rows(rec, 396, 3);
    json_object_put(rec);
    /* an empty range */
    rec = freezer_period(200, 200, 0);
    cr_expect_eq(length(rec, "data"), 0);
    json_object_put(rec);
    rec = freezer_period(201, 200, 0);
    cr_expect_eq(length(rec, "data"), 0);
    json_object_put(rec);
    /* a `to` in the future does not reach readings not yet uploaded */
    rec = record("data", CREDS, FREEZER ",\"unixtime-from\":1794999950,\"unixtime-to\":1795999999",
                 JSON_TYPE);
    expect_freezer_rows(rec, 399, 1);
    json_object_put(rec);
}

Test(graph, data_without_to_includes_a_reading_measured_at_now)
{
    add_reading("5214000A", "{\"at\":1795000200,\"values\":[\"1.0\",\"2\"],\"data_id\":7}");
    sim_set_clock(&sim, NOW + 200);
    struct json_object *rec =
        record("data", CREDS, FREEZER ",\"unixtime-from\":1795000090", JSON_TYPE);
    cr_assert_eq(length(rec, "data"), 2);
    cr_expect_eq(row_ll(rec, 0, "unixtime"), freezer_unixtime(401));
    cr_expect_eq(row_ll(rec, 1, "unixtime"), NOW + 200);
    cr_expect_str_eq(row_str(rec, 1, "data-id"), "7", "the data_id of the added reading");
    json_object_put(rec);
    rec = record("data", CREDS, FREEZER ",\"unixtime-from\":1795000090,\"unixtime-to\":1795000200",
                 JSON_TYPE);
    cr_expect_eq(length(rec, "data"), 1);
    json_object_put(rec);
}

Test(graph, data_ids_wrap_after_65535_and_continue_from_a_gap)
{
    /* 65400 + 136 readings: 130 to 140 cross the wrap */
    struct json_object *rec = freezer_period(130, 140, 0);
    expect_freezer_rows(rec, 131, 9);
    cr_expect_str_eq(row_str(rec, 4, "data-id"), "65535");
    cr_expect_str_eq(row_str(rec, 5, "data-id"), "0");
    cr_expect_str_eq(row_str(rec, 6, "data-id"), "1");
    json_object_put(rec);
    /* reading 350 carries data_id 1000: the count jumps and goes on */
    rec = freezer_period(347, 353, 0);
    expect_freezer_rows(rec, 348, 5);
    cr_expect_str_eq(row_str(rec, 0, "data-id"), "212");
    cr_expect_str_eq(row_str(rec, 1, "data-id"), "213");
    cr_expect_str_eq(row_str(rec, 2, "data-id"), "1000");
    cr_expect_str_eq(row_str(rec, 3, "data-id"), "1001");
    json_object_put(rec);
}

Test(graph, data_refuses_bad_period_parameters)
{
    call_error("data", CREDS, FREEZER ",\"number\":0", 400, "number");
    call_error("data", CREDS, FREEZER ",\"number\":-5", 400, "number");
    call_error("data", CREDS, FREEZER ",\"number\":\"10\"", 400, "number");
    call_error("data", CREDS, FREEZER ",\"number\":10.5", 400, "number");
    call_error("data", CREDS, FREEZER ",\"unixtime-from\":\"1794999000\"", 400, "unixtime-from");
    call_error("data", CREDS, FREEZER ",\"unixtime-to\":null", 400, "unixtime-to");
    call_error("data-rtr500", CREDS, LUX ",\"unixtime-to\":1.5e9", 400, "unixtime-to");
    /* the period parameters mean nothing to latest-data */
    struct json_object *rec =
        record("latest-data", CREDS, FREEZER ",\"number\":\"x\",\"unixtime-to\":1", JSON_TYPE);
    cr_expect_eq(length(rec, "data"), 300);
    json_object_put(rec);
}

Test(graph_big, data_sends_16000_by_default_and_at_most_65535)
{
    struct json_object *rec = record("data", CREDS, "\"remote-serial\":\"5214000F\"", JSON_TYPE);
    cr_assert_eq(length(rec, "data"), 16000);
    cr_expect_eq(row_ll(rec, 0, "unixtime"), NOW - 10LL * 15999);
    cr_expect_eq(row_ll(rec, 15999, "unixtime"), NOW);
    cr_expect_eq(row_ll(rec, 0, "data-id"), BIG_READINGS - 16000);
    cr_expect_eq(row_ll(rec, 15999, "data-id"), (BIG_READINGS - 1) % 65536);
    json_object_put(rec);

    rec = record("data", CREDS, "\"remote-serial\":\"5214000F\",\"number\":100000", JSON_TYPE);
    cr_assert_eq(length(rec, "data"), 65535);
    cr_expect_eq(row_ll(rec, 0, "unixtime"), NOW - 10LL * 65534);
    cr_expect_eq(row_ll(rec, 65534, "unixtime"), NOW);
    cr_expect_eq(row_ll(rec, 0, "data-id"), BIG_READINGS - 65535);
    json_object_put(rec);

    rec = record("latest-data", CREDS, "\"remote-serial\":\"5214000F\"", JSON_TYPE);
    cr_expect_eq(length(rec, "data"), 300);
    json_object_put(rec);
}

Test(graph_big, data_count_of_160000_readings_an_hour_runs_out_with_429)
{
    const char *fields = "\"remote-serial\":\"5214000F\",\"number\":65535";
    long want[] = {160000 - 65535, 160000 - 2 * 65535, 0};
    size_t got[] = {65535, 65535, 160000 - 2 * 65535};
    struct http_reply r;
    for (int i = 0; i < 3; i++) {
        call(&r, "data", CREDS, fields);
        cr_assert_eq(r.status, 200, "call %d: %s", i + 1, r.status == 200 ? "" : r.body);
        cr_expect_eq(sim_header_num(&r, "X-RateLimit-Remaining-DataCount"), want[i], "call %d",
                     i + 1);
        struct json_object *rec = parse(&r);
        cr_expect_eq(length(rec, "data"), got[i], "call %d: the reply stops at the data count",
                     i + 1);
        /* the newest ones */
        cr_expect_eq(row_ll(rec, got[i] - 1, "unixtime"), NOW);
        json_object_put(rec);
        http_reply_free(&r);
    }
    call(&r, "data", CREDS, fields);
    char *msg = expect_error(&r, 429);
    cr_expect(strstr(msg, "data count"), "%s", msg);
    free(msg);
    cr_expect_eq(sim_header_num(&r, "X-RateLimit-Remaining-DataCount"), 0);
    sim_expect_rate(&r, 20, 16, 60); /* the request limit counted it */
    http_reply_free(&r);

    /* latest-data is not limited by it */
    call(&r, "latest-data", CREDS, "\"remote-serial\":\"5214000F\"");
    cr_expect_eq(r.status, 200);
    http_reply_free(&r);

    sim_advance(&sim, 3599);
    call(&r, "data", CREDS, fields);
    free(expect_error(&r, 429));
    http_reply_free(&r);
    sim_advance(&sim, 1);
    call(&r, "data", CREDS, "\"remote-serial\":\"5214000F\",\"number\":5");
    cr_expect_eq(r.status, 200, "%s", r.status == 200 ? "" : r.body);
    cr_expect_eq(sim_header_num(&r, "X-RateLimit-Remaining-DataCount"), 160000 - 5);
    http_reply_free(&r);

    struct json_object *st = sim_stats(&sim);
    cr_expect_eq(json_object_get_int64(json_at(st, "rejected_429")), 2);
    json_object_put(st);
}

/* ---- the base-attached operations ------------------------------------------------ */

Test(graph, rtr500_record_has_hyphenated_members_and_four_channels_named_chN)
{
    const char *ops[] = {"latest-data-rtr500", "data-rtr500"};
    for (size_t k = 0; k < 2; k++) {
        struct json_object *rec = record(ops[k], CREDS, LUX, JSON_TYPE);
        cr_expect_str_eq(json_str_at(rec, "remote-serial"), "5820D101");
        cr_expect_str_eq(json_str_at(rec, "remote-model"), "RTR-574");
        cr_expect_str_eq(json_str_at(rec, "remote-name"), "Lux Room");
        cr_expect_str_eq(json_str_at(rec, "base-serial"), "5893C000");
        cr_expect_str_eq(json_str_at(rec, "base-model"), "RTR500BW");
        cr_expect_str_eq(json_str_at(rec, "base-name"), "Gateway");
        cr_expect_str_eq(json_str_at(rec, "time-diff"), "-300");
        cr_expect_str_eq(json_str_at(rec, "std-bias"), "0");
        cr_expect_str_eq(json_str_at(rec, "dst-flg"), "1");
        cr_expect_str_eq(json_str_at(rec, "dst-bias"), "60");
        cr_expect_not(has(rec, "serial") || has(rec, "time_diff") || has(rec, "dst_bias"));
        struct json_object *chs = json_at(rec, "channel");
        cr_assert_eq(json_object_array_length(chs), 4, "channels 5 and 6 are not retrievable");
        const char *units[] = {"lx", "mW/cm²", "°C", "%"};
        for (size_t i = 0; i < 4; i++) {
            char name[32], n[32];
            snprintf(name, sizeof name, "ch%zu", i + 1);
            snprintf(n, sizeof n, "%zu", i + 1);
            cr_expect_str_eq(json_str_at(at(chs, i), "name"), name);
            cr_expect_str_eq(json_str_at(at(chs, i), "num"), n);
            cr_expect_str_eq(json_str_at(at(chs, i), "unit"), units[i]);
        }
        cr_assert_eq(length(rec, "data"), 3);
        struct json_object *row = at(json_at(rec, "data"), 1);
        cr_expect_eq(json_object_object_length(row), 6, "%s", json_object_to_json_string(row));
        cr_expect_str_eq(json_str_at(row, "unixtime"), "1794999700");
        cr_expect_str_eq(json_str_at(row, "data-id"), "1");
        cr_expect_str_eq(json_str_at(row, "ch1"), "130");
        cr_expect_str_eq(json_str_at(row, "ch2"), "0.06");
        cr_expect_str_eq(json_str_at(row, "ch3"), "E-001");
        cr_expect_str_eq(json_str_at(row, "ch4"), "51");
        json_object_put(rec);
    }

    struct json_object *rec =
        record("data-rtr500", CREDS, LUX ",\"unixtime-from\":1794999400,\"number\":1", JSON_TYPE);
    cr_assert_eq(length(rec, "data"), 1);
    cr_expect_str_eq(row_str(rec, 0, "unixtime"), "1795000000");
    json_object_put(rec);
    struct http_reply r;
    call(&r, "data-rtr500", CREDS, LUX);
    cr_expect_eq(sim_header_num(&r, "X-RateLimit-Remaining-DataCount"), 160000 - 3 - 1 - 3);
    http_reply_free(&r);
}

Test(graph, rtr500_csv_is_the_json_record_sent_as_text_csv)
{
    struct json_object *json = record("latest-data-rtr500", CREDS, LUX, JSON_TYPE);
    struct json_object *csv =
        record("latest-data-rtr500", CREDS, LUX ",\"type\":\"csv\"", CSV_TYPE);
    cr_expect(json_object_equal(json, csv), "%s\n%s", json_object_to_json_string(json),
              json_object_to_json_string(csv));
    json_object_put(csv);
    csv =
        record("data-rtr500", CREDS, LUX ",\"type\":\"csv\",\"temperature-unit\":\"F\"", CSV_TYPE);
    cr_expect_str_eq(json_str_at(at(json_at(csv, "channel"), 2), "unit"), "°F");
    json_object_put(csv);
    json_object_put(json);
}

/* ---- CSV --------------------------------------------------------------------------- */

/* The body of a successful CSV reply (a copy). */
static char *csv_body(const char *op, const char *creds, const char *fields)
{
    struct http_reply r;
    call(&r, op, creds, fields);
    cr_assert_eq(r.status, 200, "%s {%s}: %s", op, fields, r.body);
    cr_expect_str_eq(http_header(&r, "Content-Type"), CSV_TYPE);
    char *body = xstrdup(r.body);
    http_reply_free(&r);
    return body;
}

Test(graph, csv2_quotes_every_cell_and_ends_lines_with_crlf)
{
    /* readings 198 and 199: the times of Japan (GMT+9) */
    const char *fields = FREEZER ",\"type\":\"csv2\",\"unixtime-from\":1794987860,"
                                 "\"unixtime-to\":1794988040";
    char *body = csv_body("data", CREDS, fields);
    cr_expect_str_eq(body, "\"Date/Time\",\"Date/Time\",\"No.1\",\"No.2\"\r\n"
                           "\"time difference:GMT+09:00/daylight savings time:off\","
                           "\"Date serial value(Excel)\",\"Temp \"\"in\"\"\",\"Humidity\"\r\n"
                           "\"\",\"\",\"°C\",\"%\"\r\n"
                           "\"2026-11-18 16:45:20\",\"46344.69814815\",\"-0.2\",\"48\"\r\n"
                           "\"2026-11-18 16:46:20\",\"46344.69884259\",\"-0.1\",\"49\"\r\n");
    free(body);

    /* csv is the same layout for a standalone device */
    char *csv2 = csv_body("data", CREDS, FREEZER ",\"type\":\"csv2\",\"number\":20");
    char *csv = csv_body("data", CREDS, FREEZER ",\"type\":\"csv\",\"number\":20");
    cr_expect_str_eq(csv, csv2);
    free(csv);
    free(csv2);
    csv = csv_body("latest-data", CREDS, FREEZER ",\"type\":\"csv\"");
    size_t lines = 0;
    for (const char *p = csv; (p = strstr(p, "\r\n")); p += 2)
        lines++;
    cr_expect_eq(lines, 3 + 300);
    cr_expect(strstr(csv, ",\"E-001\",\"48\"\r\n"), "error values as they are");
    cr_expect(strstr(csv, ",\"19.9\",\"Sensor Error\"\r\n"), "error values as they are");
    free(csv);
}

Test(graph, csv2_of_a_remote_unit_shows_daylight_saving_and_converted_units)
{
    char *body =
        csv_body("latest-data-rtr500", CREDS, LUX ",\"type\":\"csv2\",\"temperature-unit\":\"F\"");
    /* GMT-5 plus an hour of daylight saving: four hours behind */
    cr_expect_str_eq(
        body, "\"Date/Time\",\"Date/Time\",\"No.1\",\"No.2\",\"No.3\",\"No.4\"\r\n"
              "\"time difference:GMT-05:00/daylight savings time:on\","
              "\"Date serial value(Excel)\",\"ch1\",\"ch2\",\"ch3\",\"ch4\"\r\n"
              "\"\",\"\",\"lx\",\"mW/cm²\",\"F\",\"%\"\r\n"
              "\"2026-11-18 06:56:40\",\"46344.28935185\",\"120\",\"0.05\",\"77.0\",\"50\"\r\n"
              "\"2026-11-18 07:01:40\",\"46344.29282407\",\"130\",\"0.06\",\"E-001\",\"51\"\r\n"
              "\"2026-11-18 07:06:40\",\"46344.29629630\",\"140\",\"0.07\",\"79.7\",\"52\"\r\n");
    free(body);

    /* no readings: the three lines of the head */
    sim_set_clock(&sim, NOW - 601);
    body = csv_body("data-rtr500", CREDS, LUX ",\"type\":\"csv2\"");
    cr_expect_str_eq(body, "\"Date/Time\",\"Date/Time\",\"No.1\",\"No.2\",\"No.3\",\"No.4\"\r\n"
                           "\"time difference:GMT-05:00/daylight savings time:on\","
                           "\"Date serial value(Excel)\",\"ch1\",\"ch2\",\"ch3\",\"ch4\"\r\n"
                           "\"\",\"\",\"lx\",\"mW/cm²\",\"°C\",\"%\"\r\n");
    free(body);
}

/* ---- temperature-unit ------------------------------------------------------------------ */

Test(graph, temperature_unit_converts_temperature_channels_only)
{
    const char *fields = FREEZER ",\"temperature-unit\":\"F\",\"unixtime-from\":1794987860,"
                                 "\"unixtime-to\":1794988040";
    struct json_object *rec = record("data", CREDS, fields, JSON_TYPE);
    cr_expect_str_eq(json_str_at(at(json_at(rec, "channel"), 0), "unit"), "°F");
    cr_expect_str_eq(json_str_at(at(json_at(rec, "channel"), 1), "unit"), "%", "humidity stays");
    cr_expect_str_eq(row_str(rec, 0, "ch1"), "31.6");
    cr_expect_str_eq(row_str(rec, 1, "ch1"), "31.8");
    cr_expect_str_eq(row_str(rec, 0, "ch2"), "48");
    json_object_put(rec);

    /* C on a Celsius channel: the same values with one decimal */
    rec = record("latest-data", CREDS,
                 "\"remote-serial\":\"5214000D\",\"temperature-unit\":\"C\",\"type\":\"json\"",
                 JSON_TYPE);
    cr_expect_str_eq(json_str_at(at(json_at(rec, "channel"), 0), "unit"), "°C");
    cr_expect_str_eq(row_str(rec, 0, "ch1"), "1.5");
    cr_expect_str_eq(row_str(rec, 0, "ch2"), "2.5");
    json_object_put(rec);

    /* "device" changes nothing; error values are never converted */
    rec = record("latest-data", CREDS, FREEZER ",\"temperature-unit\":\"device\"", JSON_TYPE);
    cr_expect_str_eq(json_str_at(at(json_at(rec, "channel"), 0), "unit"), "°C");
    cr_expect_str_eq(row_str(rec, 299, "ch1"), "19.9");
    json_object_put(rec);
    rec = record("latest-data", CREDS, FREEZER ",\"temperature-unit\":\"F\"", JSON_TYPE);
    cr_expect_str_eq(row_str(rec, 298, "ch1"), "E-001");
    cr_expect_str_eq(row_str(rec, 299, "ch1"), "67.8");
    json_object_put(rec);

    /* a Fahrenheit unit "F" to C, in the numbers dialect */
    rec = record("latest-data", NUM_CREDS,
                 "\"remote-serial\":\"5214000C\",\"temperature-unit\":\"C\"", JSON_TYPE);
    cr_expect_str_eq(json_str_at(at(json_at(rec, "channel"), 0), "unit"), "°C");
    struct json_object *data = json_at(rec, "data");
    cr_expect_float_eq(json_object_get_double(json_at(at(data, 0), "ch1")), 37.0, 1e-9);
    cr_expect_float_eq(json_object_get_double(json_at(at(data, 1), "ch1")), 0.0, 1e-9);
    cr_expect_str_eq(json_str_at(at(data, 0), "ch2"), "Sensor Error");
    cr_expect_eq(json_int_at(at(data, 1), "ch2"), 1, "a channel without a unit stays");
    json_object_put(rec);

    char *csv = csv_body("latest-data", NUM_CREDS,
                         "\"remote-serial\":\"5214000C\",\"temperature-unit\":\"C\","
                         "\"type\":\"csv2\"");
    cr_expect_str_eq(csv, "\"Date/Time\",\"Date/Time\",\"No.1\",\"No.2\"\r\n"
                          "\"time difference:GMT+00:00/daylight savings time:off\","
                          "\"Date serial value(Excel)\",\"T\",\"E\"\r\n"
                          "\"\",\"\",\"C\",\"\"\r\n"
                          "\"2026-11-18 11:04:40\",\"46344.46157407\",\"37.0\",\"Sensor Error\"\r\n"
                          "\"2026-11-18 11:05:40\",\"46344.46226852\",\"0.0\",\"1\"\r\n");
    free(csv);
}

/* ---- refusals -------------------------------------------------------------------------- */

Test(graph, refuses_the_other_family_and_devices_without_graph_data)
{
    call_error("latest-data", CREDS, "\"remote-serial\":\"5820D101\"", 400, "latest-data-rtr500");
    call_error("data", CREDS, "\"remote-serial\":\"5820D101\"", 400, "data-rtr500");
    call_error("latest-data-rtr500", CREDS, FREEZER ",\"base-serial\":\"5214000A\"", 400,
               "standalone");
    call_error("data-rtr500", CREDS, FREEZER ",\"base-serial\":\"5214000A\"", 400, "standalone");
    const char *unsupported[][2] = {
        {"latest-data", "\"remote-serial\":\"5214000B\""},
        {"data", "\"remote-serial\":\"5214000B\""},
        {"latest-data-rtr500", "\"remote-serial\":\"5820D102\",\"base-serial\":\"5893C000\""},
        {"data-rtr500", "\"remote-serial\":\"5820D102\",\"base-serial\":\"5893C000\""},
    };
    for (size_t i = 0; i < 4; i++)
        call_error(unsupported[i][0], CREDS, unsupported[i][1], 400, "not available");
}

Test(graph, refuses_missing_unknown_or_mismatched_serials)
{
    const char *ops[] = {"latest-data", "data", "latest-data-rtr500", "data-rtr500"};
    for (size_t i = 0; i < 4; i++) {
        call_error(ops[i], CREDS, "", 400, "remote-serial");
        call_error(ops[i], CREDS, "\"remote-serial\":[\"5214000A\"]", 400, "remote-serial");
        call_error(ops[i], CREDS, "\"remote-serial\":\"99999999\",\"base-serial\":\"99999999\"",
                   400, "unknown remote-serial");
        /* a serial of another account is unknown here */
        call_error(ops[i], CREDS, "\"remote-serial\":\"5820D201\",\"base-serial\":\"5893C100\"",
                   400, "unknown remote-serial");
    }
    call_error("latest-data-rtr500", CREDS, "\"remote-serial\":\"5820D101\"", 400, "base-serial");
    call_error("data-rtr500", CREDS, "\"remote-serial\":\"5820D101\",\"base-serial\":5893", 400,
               "base-serial");
    call_error("latest-data-rtr500", CREDS,
               "\"remote-serial\":\"5820D101\",\"base-serial\":\"5893C100\"", 400,
               "not the base unit");
    call_error("data-rtr500", CREDS, "\"remote-serial\":\"5820D101\",\"base-serial\":\"5820D101\"",
               400, "not the base unit");
}

Test(graph, refuses_unknown_types_and_temperature_units)
{
    const char *ops[][2] = {{"latest-data", FREEZER},
                            {"data", FREEZER},
                            {"latest-data-rtr500", LUX},
                            {"data-rtr500", LUX}};
    const char *bad_type[] = {"\"type\":\"xml\"", "\"type\":\"CSV\"", "\"type\":1"};
    const char *bad_unit[] = {"\"temperature-unit\":\"K\"", "\"temperature-unit\":\"c\"",
                              "\"temperature-unit\":\"°C\"", "\"temperature-unit\":null"};
    for (size_t i = 0; i < 4; i++) {
        for (size_t k = 0; k < 3; k++) {
            char *fields = xasprintf("%s,%s", ops[i][1], bad_type[k]);
            call_error(ops[i][0], CREDS, fields, 400, "type must be");
            free(fields);
        }
        for (size_t k = 0; k < 4; k++) {
            char *fields = xasprintf("%s,%s", ops[i][1], bad_unit[k]);
            call_error(ops[i][0], CREDS, fields, 400, "temperature-unit must be");
            free(fields);
        }
    }
}

/* ---- rate limits, faults, statistics ------------------------------------------------------ */

Test(graph, each_operation_has_its_own_request_limit)
{
    const struct {
        const char *op, *fields;
        int limit;
    } ops[] = {
        {"latest-data", FREEZER, 60},
        {"latest-data-rtr500", LUX, 60},
        {"data", FREEZER ",\"number\":1", 20},
        {"data-rtr500", LUX ",\"number\":1", 20},
    };
    struct http_reply r;
    for (size_t i = 0; i < 4; i++) {
        for (int k = 0; k < ops[i].limit; k++) {
            call(&r, ops[i].op, CREDS, ops[i].fields);
            cr_assert_eq(r.status, 200, "%s call %d: %s", ops[i].op, k + 1, r.body);
            sim_expect_rate(&r, ops[i].limit, ops[i].limit - 1 - k, 60);
            http_reply_free(&r);
        }
        call(&r, ops[i].op, CREDS, ops[i].fields);
        char *msg = expect_error(&r, 429);
        cr_expect(strstr(msg, "rate limit"), "%s", msg);
        free(msg);
        sim_expect_rate(&r, ops[i].limit, 0, 60);
        http_reply_free(&r);
        /* another login ID has its own */
        call(&r, ops[i].op, NUM_CREDS,
             i % 2 ? "\"remote-serial\":\"5820D201\",\"base-serial\":\"5893C100\""
                   : "\"remote-serial\":\"5214000C\"");
        cr_expect_eq(r.status, 200, "%s: %s", ops[i].op, r.body);
        http_reply_free(&r);
    }
    sim_advance(&sim, 60);
    for (size_t i = 0; i < 4; i++) {
        call(&r, ops[i].op, CREDS, ops[i].fields);
        cr_expect_eq(r.status, 200, "%s a minute later: %s", ops[i].op, r.body);
        sim_expect_rate(&r, ops[i].limit, ops[i].limit - 1, 60);
        http_reply_free(&r);
    }
}

Test(graph, faults_and_statistics_know_the_new_operations)
{
    struct http_reply r;
    sim_fault(&sim, "data", 503, 1, NULL);
    sim_fault(&sim, "latest-data-rtr500", 200, 1, "{\"remote-serial\":");
    call(&r, "data", CREDS, FREEZER);
    free(expect_error(&r, 503));
    sim_expect_rate(&r, 20, 19, 60);
    cr_expect_eq(sim_header_num(&r, "X-RateLimit-Remaining-DataCount"), 160000);
    http_reply_free(&r);
    call(&r, "latest-data-rtr500", CREDS, LUX);
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "{\"remote-serial\":");
    cr_expect_str_eq(http_header(&r, "Content-Type"), JSON_TYPE);
    http_reply_free(&r);
    call(&r, "latest-data-rtr500", CREDS, LUX ",\"type\":\"csv2\"");
    cr_expect_eq(r.status, 200, "the fault is over: %s", r.body);
    http_reply_free(&r);
    call(&r, "data-rtr500", CREDS, LUX);
    http_reply_free(&r);
    call(&r, "latest-data", NUM_CREDS, "\"remote-serial\":\"5214000C\"");
    http_reply_free(&r);

    struct json_object *st = sim_stats(&sim);
    struct json_object *calls = json_at(st, "calls");
    cr_assert_eq(json_object_array_length(calls), 5);
    const char *want[][3] = {{"data", LOGIN, "5214000A"},
                             {"latest-data-rtr500", LOGIN, "5820D101"},
                             {"latest-data-rtr500", LOGIN, "5820D101"},
                             {"data-rtr500", LOGIN, "5820D101"},
                             {"latest-data", "num00001", "5214000C"}};
    long status[] = {503, 200, 200, 200, 200};
    for (size_t i = 0; i < 5; i++) {
        struct json_object *c = at(calls, i);
        cr_expect_str_eq(json_str_at(c, "op"), want[i][0], "call %zu", i);
        cr_expect_str_eq(json_str_at(c, "login_id"), want[i][1], "call %zu", i);
        cr_expect_str_eq(json_str_at(c, "serial"), want[i][2], "call %zu", i);
        cr_expect_eq(json_int_at(c, "status"), status[i], "call %zu", i);
    }
    struct json_object *t = json_at(json_at(st, "totals"), LOGIN);
    cr_expect_eq(json_object_object_length(t), 6);
    cr_expect_eq(json_int_at(t, "current"), 0);
    cr_expect_eq(json_int_at(t, "alert"), 0);
    cr_expect_eq(json_int_at(t, "latest-data"), 0);
    cr_expect_eq(json_int_at(t, "latest-data-rtr500"), 2);
    cr_expect_eq(json_int_at(t, "data"), 1);
    cr_expect_eq(json_int_at(t, "data-rtr500"), 1);
    cr_expect_eq(json_int_at(json_at(json_at(st, "totals"), "num00001"), "latest-data"), 1);
    json_object_put(st);

    /* faults of the new operations are refused for unknown names only */
    char *url = xasprintf("%s/_sim/faults", sim.base_url);
    cr_assert_eq(
        http_request(&r, "POST", url, NULL, "{\"op\":\"latest\",\"status\":503,\"count\":1}", NULL),
        0);
    free(expect_error(&r, 400));
    http_reply_free(&r);
    free(url);
}

Test(graph, scenario_refuses_bad_data_ids)
{
    const char *bad[][2] = {
        {"\"data_id\":65536", "'data_id' must be 0 to 65535"},
        {"\"data_id\":\"1\"", "'data_id' must be an integer"},
        {"\"readings\":[{\"at\":1,\"values\":[],\"data_id\":-1}]",
         "readings[0]: 'data_id' must be 0 to 65535"},
        {"\"graph_supported\":\"no\"", "'graph_supported' must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *path = xasprintf("%s/bad.json", dir);
        char *text = xasprintf("{\"accounts\":[{\"api_key\":\"a\",\"login_id\":\"b\","
                               "\"login_pass\":\"c\",\"devices\":[{\"serial\":\"x\",%s}]}]}",
                               bad[i][0]);
        write_file(path, text);
        char *argv[] = {(char *)WSRELAY_SIM_BIN, (char *)"--scenario", path, NULL};
        char *err = NULL;
        cr_expect_eq(run_cmd(NULL, &err, 10, argv, NULL), 2, "%s", text);
        cr_expect(strstr(err, bad[i][1]), "want '%s' in: %s", bad[i][1], err);
        free(err);
        free(text);
        free(path);
    }
}

Test(graph, demo_scenario_serves_graph_data)
{
    struct sim demo;
    sim_start(&demo, WSRELAY_SOURCE_DIR "/tests/sim/scenarios/demo.json", dir);
    char *url = xasprintf("%s/v1/devices/latest-data-rtr500", demo.base_url);
    char *const headers[] = {(char *)"X-HTTP-Method-Override: GET", NULL};
    const char *body = "{\"api-key\":\"DEMO-API-KEY-0000000000000000000000000000000\","
                       "\"login-id\":\"demo0001\",\"login-pass\":\"demo-pass\","
                       "\"remote-serial\":\"5820D101\",\"base-serial\":\"5893C000\"}";
    struct http_reply r;
    cr_assert_eq(http_request(&r, "POST", url, "application/json", body, headers), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *rec = parse(&r);
    cr_expect_eq(length(rec, "data"), 2, "the readings uploaded by the demo's now");
    json_object_put(rec);
    http_reply_free(&r);
    free(url);
    sim_stop(&demo);
}
