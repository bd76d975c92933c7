/* Tests of series.c: the graph-data records of Get Latest Data and Get
 * Data by Period, standalone and base-attached, in both dialects, and the
 * CSV layout. */
#include "series.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <string.h>

static void slurp(struct buf *b, const char *name)
{
    struct err e = {{0}};
    char *path = xasprintf("%s/tests/data/platform/%s", WSRELAY_SOURCE_DIR, name);
    buf_init(b, 1 << 20);
    cr_assert_eq(file_read(b, path, &e), 0, "%s", e.msg);
    free(path);
}

static struct json_object *fixture(const char *name)
{
    struct buf b;
    slurp(&b, name);
    struct json_object *obj = json_tokener_parse(buf_str(&b));
    cr_assert_not_null(obj, "%s does not parse", name);
    buf_free(&b);
    return obj;
}

static void assert_point(const struct series *s, size_t i, long long t, long id, unsigned valid,
                         double v1, double v2)
{
    cr_assert_lt(i, s->n_points);
    const struct series_point *p = &s->points[i];
    cr_assert_eq(p->unixtime, t, "point %zu: unixtime %lld", i, p->unixtime);
    cr_assert_eq(p->data_id, id, "point %zu: data-id %ld", i, p->data_id);
    cr_assert_eq(p->valid, valid, "point %zu: valid %#x", i, p->valid);
    cr_assert_float_eq(p->v[0], v1, 1e-9, "point %zu: ch1 %g", i, p->v[0]);
    cr_assert_float_eq(p->v[1], v2, 1e-9, "point %zu: ch2 %g", i, p->v[1]);
}

TestSuite(series, .timeout = 20);

Test(series, standalone_strings)
{
    struct series s = {0};
    struct err e = {{0}};
    struct json_object *body = fixture("latest-data-strings.json");
    cr_assert_eq(series_parse_json(&s, body, &e), 0, "%s", e.msg);
    cr_assert_str_eq(s.serial, "52100002");
    cr_assert_str_eq(s.base_serial, "52100002");
    cr_assert_str_eq(s.model, "TR-72wb");
    cr_assert_str_eq(s.name, "冷凍庫 2");
    cr_assert_eq(s.utc_offset, 540);
    /* num starts at 0 in a standalone record: channel 1 is num "0". */
    cr_assert_eq(s.n_channels, 2);
    cr_assert_eq(s.channels[0].num, 1);
    cr_assert_str_eq(s.channels[0].name, "温度");
    cr_assert_str_eq(s.channels[0].unit, "℃");
    cr_assert_eq(s.channels[1].num, 2);
    cr_assert_str_eq(s.channels[1].unit, "%");
    cr_assert_eq(series_channel_index(&s, 2), 1);
    cr_assert_eq(series_channel_index(&s, 3), -1);
    /* The reading without a unixtime is left out; error values are no values. */
    cr_assert_eq(s.n_points, 5);
    assert_point(&s, 0, 1700000000, 65534, 3, -18.5, 40);
    assert_point(&s, 1, 1700000600, 65535, 3, -18.1, 41);
    assert_point(&s, 2, 1700001200, 0, 2, 0, 41);
    assert_point(&s, 3, 1700001800, 1, 0, 0, 0);
    assert_point(&s, 4, 1700003000, 3, 1, -17.9, 0);
    /* 65535 is followed by 0; 1 is not followed by 3 (a reading is missing). */
    cr_assert(series_follows(&s.points[0], &s.points[1]));
    cr_assert(series_follows(&s.points[1], &s.points[2]));
    cr_assert(series_follows(&s.points[2], &s.points[3]));
    cr_assert_not(series_follows(&s.points[3], &s.points[4]));
    cr_assert_not(series_follows(&s.points[1], &s.points[0]));
    series_free(&s);
    cr_assert_null(s.points);
    series_free(&s);
    series_free(NULL);
    json_object_put(body);
}

Test(series, base_attached_numbers)
{
    struct series s = {0};
    struct err e = {{0}};
    struct json_object *body = fixture("data-rtr500-numbers.json");
    cr_assert_eq(series_parse_json(&s, body, &e), 0, "%s", e.msg);
    cr_assert_str_eq(s.serial, "52C10001");
    cr_assert_str_eq(s.base_serial, "58210001");
    cr_assert_str_eq(s.model, "RTR501B");
    cr_assert_str_eq(s.name, "Cold room");
    cr_assert_eq(s.utc_offset, -240); /* -300 and daylight saving on */
    cr_assert_eq(s.n_channels, 1);
    cr_assert_eq(s.channels[0].num, 1); /* num counts from 1 here */
    cr_assert_str_eq(s.channels[0].unit, "°F");
    /* Put in time order; "nan" is not a number. */
    cr_assert_eq(s.n_points, 3);
    assert_point(&s, 0, 1700000000, 11, 1, 39.2, 0);
    assert_point(&s, 1, 1700000600, 12, 1, 40.1, 0);
    assert_point(&s, 2, 1700001200, 13, 0, 0, 0);
    series_free(&s);
    json_object_put(body);
}

Test(series, json_not_a_record)
{
    struct series s = {0};
    struct err e = {{0}};
    struct json_object *body = json_tokener_parse("{\"serial\":\"52100002\",\"data\":{}}");
    cr_assert_eq(series_parse_json(&s, body, &e), -1);
    cr_assert_str_eq(e.msg, "the graph-data reply has no 'data' array");
    cr_assert_null(s.points);
    json_object_put(body);
    body = json_tokener_parse("[]");
    cr_assert_eq(series_parse_json(&s, body, &e), -1);
    json_object_put(body);
    /* An empty record is a series without readings. */
    body = json_tokener_parse("{\"serial\":\"52100002\",\"channel\":[],\"data\":[]}");
    cr_assert_eq(series_parse_json(&s, body, &e), 0, "%s", e.msg);
    cr_assert_eq(s.n_points, 0);
    cr_assert_eq(s.n_channels, 0);
    series_free(&s);
    json_object_put(body);
}

Test(series, csv2_layout)
{
    struct series s = {0};
    struct err e = {{0}};
    struct buf b;
    slurp(&b, "data-csv2.csv");
    cr_assert_eq(series_parse_csv(&s, b.data, b.len, &e), 0, "%s", e.msg);
    cr_assert_eq(s.utc_offset, 540);
    cr_assert_eq(s.n_channels, 2);
    cr_assert_str_eq(s.channels[0].name, "温度");
    cr_assert_str_eq(s.channels[0].unit, "C");
    cr_assert_str_eq(s.channels[1].name, "湿度");
    cr_assert_str_eq(s.channels[1].unit, "%");
    cr_assert_eq(s.n_points, 3);
    /* 2023-11-15 07:13:20 at GMT+09:00 is 1700000000. */
    assert_point(&s, 0, 1700000000, -1, 3, -18.5, 40);
    assert_point(&s, 1, 1700000600, -1, 2, 0, 41);
    assert_point(&s, 2, 1700001200, -1, 1, -17.5, 0);
    cr_assert(series_follows(&s.points[0], &s.points[1]));
    series_free(&s);
    buf_free(&b);
}

Test(series, csv_daylight_saving_lf_and_quotes)
{
    struct series s = {0};
    struct err e = {{0}};
    static const char text[] =
        "\xEF\xBB\xBF\"Date/Time\",\"Date/Time\",\"No.1\"\n"
        "\"time difference:GMT-05:00/daylight savings time:on\",\"x\",\"a \"\"b\"\", c\"\n"
        "\"\",\"\",\"F\"\n"
        "\"2023/11/14 19:13:20\",\"45244.8\",\"39.2\"\n"
        "\n";
    cr_assert_eq(series_parse_csv(&s, text, sizeof text - 1, &e), 0, "%s", e.msg);
    cr_assert_eq(s.utc_offset, -240);
    cr_assert_str_eq(s.channels[0].name, "a \"b\", c");
    cr_assert_eq(s.n_points, 1);
    /* 19:13:20 at UTC-4 is 23:13:20 UTC. */
    assert_point(&s, 0, 1700003600, -1, 1, 39.2, 0);
    series_free(&s);
}

Test(series, csv_errors_name_the_line)
{
    struct series s = {0};
    struct err e = {{0}};
    static const char no_layout[] = "{\"error\":{\"code\":400}}";
    static const char no_offset[] =
        "\"Date/Time\",\"Date/Time\",\"No.1\"\r\n\"GMT?\",\"\",\"t\"\r\n";
    static const char bad_time[] =
        "\"Date/Time\",\"Date/Time\",\"No.1\"\r\n"
        "\"time difference:GMT+09:00/daylight savings time:off\",\"\",\"t\"\r\n"
        "\"\",\"\",\"C\"\r\n"
        "\"2023-11-15 07:13:20\",\"1\",\"1.5\"\r\n"
        "\"15 Nov 2023\",\"1\",\"1.5\"\r\n";
    cr_assert_eq(series_parse_csv(&s, no_layout, sizeof no_layout - 1, &e), -1);
    cr_assert_str_eq(e.msg,
                     "CSV line 1: not the graph-data layout (\"Date/Time\",\"Date/Time\",...)");
    cr_assert_eq(series_parse_csv(&s, no_offset, sizeof no_offset - 1, &e), -1);
    cr_assert_not_null(strstr(e.msg, "CSV line 2: "), "%s", e.msg);
    cr_assert_eq(series_parse_csv(&s, bad_time, sizeof bad_time - 1, &e), -1);
    cr_assert_str_eq(e.msg,
                     "CSV line 5: \"15 Nov 2023\" is not a time of the form yyyy-mm-dd HH:mm:ss");
    cr_assert_null(s.points);
    cr_assert_null(s.serial);
}

Test(series, csv_extra_cells_and_long_cells)
{
    struct series s = {0};
    struct err e = {{0}};
    struct buf b;
    buf_init(&b, 1 << 16);
    buf_puts(&b, "\"Date/Time\",\"Date/Time\",\"No.1\",\"No.2\",\"No.3\",\"No.4\",\"No.5\"\r\n"
                 "\"time difference:GMT+00:00/daylight savings time:off\",\"\",\"");
    for (int i = 0; i < 400; i++)
        buf_puts(&b, "x");
    buf_puts(&b, "\",\"b\",\"c\",\"d\",\"e\"\r\n\"\",\"\",\"C\",\"C\",\"C\",\"C\",\"C\"\r\n"
                 "\"1970-01-02 00:00:00\",\"2\",\"1\",\"2\",\"3\",\"4\",\"5\"\r\n");
    cr_assert_eq(series_parse_csv(&s, b.data, b.len, &e), 0, "%s", e.msg);
    cr_assert_eq(s.n_channels, 4);
    cr_assert_eq(strlen(s.channels[0].name), 255);
    cr_assert_str_eq(s.channels[3].name, "d");
    cr_assert_eq(s.n_points, 1);
    cr_assert_eq(s.points[0].unixtime, 86400);
    cr_assert_eq(s.points[0].valid, 15);
    cr_assert_float_eq(s.points[0].v[3], 4.0, 1e-9);
    series_free(&s);
    buf_free(&b);
}

Test(series, csv_japanese_texts)
{
    struct series s = {0};
    struct err e = {{0}};
    static const char text[] =
        "\"Date/Time\",\"Date/Time\",\"No.1\"\r\n"
        "\"時差:GMT+9:00/夏時間:on\",\"日付のシリアル値(Excel)\",\"温度\"\r\n"
        "\"\",\"\",\"C\"\r\n"
        "\"2023-11-15 08:13:20\",\"45245.34259259\",\"-18.5\"\r\n";
    cr_assert_eq(series_parse_csv(&s, text, sizeof text - 1, &e), 0, "%s", e.msg);
    cr_assert_eq(s.utc_offset, 600);
    cr_assert_str_eq(s.channels[0].name, "温度");
    assert_point(&s, 0, 1700000000, -1, 1, -18.5, 0);
    series_free(&s);
}

Test(series, channels_numbered_from_one_in_a_standalone_record)
{
    /* Real replies number a standalone record's channels from 1. */
    struct series s = {0};
    struct err e = {{0}};
    struct json_object *body = json_tokener_parse(
        "{\"serial\":\"52100002\",\"dst_bias\":\"30\",\"dst_flg\":\"1\",\"time_diff\":\"600\","
        "\"channel\":[{\"num\":\"1\",\"name\":\"\",\"unit\":\"C\"},{\"num\":\"2\",\"unit\":\"%\"}],"
        "\"data\":[{\"unixtime\":\"1700000000\",\"data-id\":\"7\",\"ch1\":\"5.5\",\"ch2\":\"60\"}]"
        "}");
    cr_assert_eq(series_parse_json(&s, body, &e), 0, "%s", e.msg);
    cr_assert_eq(s.utc_offset, 630); /* a 30-minute daylight saving bias */
    cr_assert_eq(s.n_channels, 2);
    cr_assert_eq(s.channels[0].num, 1);
    cr_assert_str_eq(s.channels[0].name, "");
    cr_assert_eq(s.channels[1].num, 2);
    assert_point(&s, 0, 1700000000, 7, 3, 5.5, 60);
    series_free(&s);
    json_object_put(body);
}

/* Real replies, as public clients keep them (tests/data/platform/README.md). */
Test(series, latest_data_as_captured)
{
    struct series s = {0};
    struct err e = {{0}};
    struct json_object *body = fixture("latest-data-as-captured.json");
    cr_assert_eq(series_parse_json(&s, body, &e), 0, "%s", e.msg);
    cr_assert_str_eq(s.name, "リビング TR-72wb");
    cr_assert_eq(s.utc_offset, 540, "no dst_flg: the bias does not apply");
    cr_assert_eq(s.n_channels, 2);
    cr_assert_eq(s.channels[0].num, 1);
    cr_assert_str_eq(s.channels[0].name, "temp");
    cr_assert_eq(s.channels[1].num, 2);
    cr_assert_eq(s.n_points, 3);
    assert_point(&s, 1, 1619040600, 20660, 3, 23.0, 26);
    series_free(&s);
    json_object_put(body);

    body = fixture("latest-data-rtr500-as-captured.json");
    cr_assert_eq(series_parse_json(&s, body, &e), 0, "%s", e.msg);
    cr_assert_str_eq(s.serial, "52800A10");
    cr_assert_str_eq(s.base_serial, "5858B01E");
    cr_assert_str_eq(s.name, "外気");
    cr_assert_eq(s.n_channels, 1);
    cr_assert_str_eq(s.channels[0].name, "ch1");
    cr_assert_eq(s.channels[0].num, 1);
    cr_assert_eq(s.n_points, 3);
    assert_point(&s, 2, 1619465175, 34167, 1, 0.3, 0);
    cr_assert(series_follows(&s.points[1], &s.points[2]), "601 s apart, yet consecutive");
    series_free(&s);
    json_object_put(body);
}
