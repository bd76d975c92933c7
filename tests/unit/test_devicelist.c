/* Tests of devicelist.c: the devices of Get Current Readings bodies in
 * both dialects (tests/data/platform/), read as json-c read them, and the
 * bodies refused. */
#include "devicelist.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* The text of tests/data/platform/NAME in `b` (buf_free it). */
static void fixture(struct buf *b, const char *name)
{
    struct err e = {{0}};
    char *path = xasprintf("%s/tests/data/platform/%s", WSRELAY_SOURCE_DIR, name);
    buf_init(b, 1 << 20);
    cr_assert_eq(file_read(b, path, &e), 0, "%s", e.msg);
    free(path);
}

/* Lists the devices of `text`, which must succeed. */
static size_t parse_ok(struct device_info **d, const char *text, size_t len)
{
    size_t n = 0;
    struct err e = {{0}};
    cr_assert_eq(devicelist_parse(d, &n, text, len, NULL, &e), 0, "%s", e.msg);
    return n;
}

TestSuite(devices, .timeout = 20);

Test(devices, strings_dialect)
{
    struct device_info *d = NULL;
    struct buf body;
    fixture(&body, "current-strings.json");
    size_t n = parse_ok(&d, body.data, body.len);
    cr_assert_eq(n, 2); /* the record without serial is skipped */
    cr_assert_str_eq(d[0].serial, "52C10001");
    cr_assert_str_eq(d[0].model, "RTR501B");
    cr_assert_str_eq(d[0].name, "冷蔵庫A");
    cr_assert_str_eq(d[0].base_serial, "58210001");
    cr_assert_str_eq(d[0].base_model, "RTR500BW");
    cr_assert_str_eq(d[0].base_name, "本社1F");
    cr_assert_str_eq(d[0].group_name, "冷蔵庫群");
    /* rssi "" and no dst_flg do not matter. */
    cr_assert_str_eq(d[1].serial, "52100002");
    cr_assert_str_eq(d[1].base_serial, "52100002");
    cr_assert_str_eq(d[1].base_name, "Freezer 2");
    cr_assert_str_eq(d[1].group_name, "");
    device_info_free(d, n);
    buf_free(&body);
}

/* A real reply, as public clients keep them (tests/data/platform/README.md). */
Test(devices, as_captured)
{
    struct device_info *d = NULL;
    struct buf body;
    fixture(&body, "current-as-captured.json");
    size_t n = parse_ok(&d, body.data, body.len);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(d[0].name, "蓄熱の上 TR7");
    cr_assert_str_eq(d[0].base_serial, "5234A0C2");
    cr_assert_str_eq(d[0].group_name, "Home", "a group numbered 0 keeps its name");
    cr_assert_eq(d[0].unixtime, 1617520800);
    cr_assert_eq(d[0].battery, 1);
    cr_assert_eq(d[0].utc_offset, 540);
    cr_assert_eq(d[0].n_channels, 2);
    cr_assert_str_eq(d[0].channels[1].value, "Sensor Error");
    cr_assert_str_eq(d[1].base_serial, "5858B01E");
    cr_assert_str_eq(d[1].channels[0].name, "");
    cr_assert_str_eq(d[1].channels[0].value, "1.45760");
    cr_assert_str_eq(d[1].channels[0].unit, "kWh");
    device_info_free(d, n);
    buf_free(&body);
}

Test(devices, numbers_dialect_with_arrays)
{
    struct device_info *d = NULL;
    struct buf body;
    fixture(&body, "current-numbers.json");
    size_t n = parse_ok(&d, body.data, body.len);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(d[0].serial, "52100003");
    cr_assert_str_eq(d[0].model, "RTR-502");
    cr_assert_str_eq(d[0].name, "Warehouse");
    cr_assert_str_eq(d[0].base_serial, "58210009");
    cr_assert_str_eq(d[0].base_model, "RTR-500");
    cr_assert_str_eq(d[0].base_name, "Gateway");
    cr_assert_str_eq(d[0].group_name, "Cold room");
    /* No baseunit: the device is its own; no group: "". */
    cr_assert_str_eq(d[1].serial, "52100004");
    cr_assert_str_eq(d[1].base_serial, "52100004");
    cr_assert_str_eq(d[1].base_model, "TR-72wb");
    cr_assert_str_eq(d[1].base_name, "Standalone");
    cr_assert_str_eq(d[1].group_name, "");
    device_info_free(d, n);
    buf_free(&body);
}

/* What json-c made of a reply, the scanner gives: the last of members of
 * one name, null as absent, '-' for '_', numbers as json-c prints them. */
Test(devices, read_as_json_c_read_it)
{
    struct device_info *d = NULL;
    const char *text =
        "{\"devices\":[{\"serial\":\"00000000\"}],\"other\":{\"devices\":1},\"devices\":["
        "{\"serial\":\"x\",\"serial\":\"52C1\\u0030001\",\"name\":1.50,\"name\\u0000x\":2E3,"
        "\"model\":-0,\"rssi\":99999999999999999999,\"battery\":\"0042\",\"unixtime\":1e3,"
        "\"time_diff\":null,\"time-diff\":\"540\",\"dst-flg\":1,\"dst_bias\":30,"
        "\"baseunit\":[{\"serial\":\"58210001\",\"name\":\"a\\u0000b\"},{}],"
        "\"group\":[\"x\",{\"name\":\"g\"}],"
        "\"channel\":[{\"num\":-1,\"value\":\"\\ud800\"},7,{\"num\":\"3\",\"unit\":true}]},"
        "{\"serial\":12345678,\"channel\":{},\"group\":{\"name\":null},\"battery\":1.0}"
        "]}\n\0";
    size_t n = parse_ok(&d, text, strlen(text) + 2);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(d[0].serial, "52C10001");
    cr_assert_str_eq(d[0].name, "2E3", "a name cut at \\u0000 is the same name");
    cr_assert_str_eq(d[0].model, "0");
    cr_assert_str_eq(d[0].rssi, "18446744073709551615");
    cr_assert_eq(d[0].battery, 42);
    cr_assert_eq(d[0].unixtime, 0, "1e3 is not an integer");
    cr_assert_eq(d[0].utc_offset, 540 + 30);
    cr_assert_str_eq(d[0].base_serial, "58210001");
    cr_assert_str_eq(d[0].base_name, "a b");
    cr_assert_str_eq(d[0].group_name, "", "the first of the array is not an object");
    cr_assert_eq(d[0].n_channels, 2);
    cr_assert_eq(d[0].channels[0].num, 1);
    cr_assert_str_eq(d[0].channels[0].value, UTF8_REPLACEMENT);
    cr_assert_eq(d[0].channels[1].num, 3);
    cr_assert_str_eq(d[0].channels[1].unit, "");
    cr_assert_str_eq(d[1].serial, "12345678");
    cr_assert_str_eq(d[1].base_name, "");
    cr_assert_eq(d[1].n_channels, 0);
    cr_assert_eq(d[1].battery, 0);
    device_info_free(d, n);
}

Test(devices, empty_and_bad)
{
    struct device_info *d = (struct device_info *)&d;
    size_t n = 99;
    struct err e = {{0}};
    const char *empty = "{\"devices\":[]}";
    cr_assert_eq(devicelist_parse(&d, &n, empty, strlen(empty), NULL, &e), 0);
    cr_assert_eq(n, 0);
    cr_assert_null(d);
    const char *bad[] = {"{}", "{\"devices\":{}}", "{\"devices\":\"x\"}", "{\"devices\":null}",
                         "{\"devices\":[],\"devices\":{}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d = (struct device_info *)&d;
        n = 99;
        cr_assert_eq(devicelist_parse(&d, &n, bad[i], strlen(bad[i]), NULL, &e), -1, "%s", bad[i]);
        cr_assert_null(d);
        cr_assert_eq(n, 0);
        cr_assert_str_eq(e.msg, "Get Current Readings reply has no 'devices' array");
    }
    const struct {
        const char *text, *msg;
    } broken[] = {
        {"[]", "byte 0: not an object"},
        {"", "byte 0: the text ends too soon"},
        {"{\"devices\":[{\"serial\":\"52C10001\"}]", "byte 34: the text ends too soon"},
        {"{\"devices\":[]} {}", "byte 15: text after the value"},
        {"{\"devices\":[1,]}", "byte 14: a comma before a closing bracket"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        const char *t = broken[i].text;
        cr_assert_eq(devicelist_parse(&d, &n, t, strlen(t), NULL, &e), -1, "%s", t);
        cr_assert_null(d);
        cr_assert_eq(n, 0);
        char *want =
            xasprintf("Get Current Readings reply is not a JSON object: %s", broken[i].msg);
        cr_assert_str_eq(e.msg, want);
        free(want);
    }
    cr_assert_eq(devicelist_parse(&d, &n, NULL, 0, NULL, &e), -1);
    device_info_free(NULL, 0);
}
