/* util/jscan: reading JSON value by value. Valid and invalid texts are
 * also given to json-c in its strict mode, which must agree. */
#include "util/jscan.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

/* Whether json-c, strict, takes `text` as one document. */
static bool json_c_takes(const char *text)
{
    struct json_tokener *tok = json_tokener_new_ex(JSCAN_DEPTH + 1);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    struct json_object *o = json_tokener_parse_ex(tok, text, (int)strlen(text));
    bool ok = json_tokener_get_error(tok) == json_tokener_success &&
              json_tokener_get_parse_end(tok) == strlen(text);
    json_object_put(o);
    json_tokener_free(tok);
    return ok;
}

static bool jscan_takes(const char *text)
{
    struct jscan s = {0};
    struct err e;
    jscan_init(&s, text, strlen(text));
    jscan_skip(&s, NULL);
    int rc = jscan_end(&s, &e);
    jscan_free(&s);
    return rc == 0;
}

Test(jscan, agrees_with_json_c_on_valid_documents)
{
    static const char *const valid[] = {
        "{}",
        "[]",
        " {\"a\" : [1, -2.5e3, true, false, null, \"x\"]} ",
        "\"\\u00e9\\ud83d\\ude00\\n\\/\"",
        "[0]",
        "[-0.0e+1]",
        "{\"a\":{\"b\":{\"c\":[[[]]]}}}",
        "\"冷蔵庫 1\"",
        "[\"\\u0000\"]",
    };
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        cr_expect(json_c_takes(valid[i]), "json-c refuses %s", valid[i]);
        cr_expect(jscan_takes(valid[i]), "jscan refuses %s", valid[i]);
    }
}

Test(jscan, agrees_with_json_c_on_invalid_documents)
{
    static const char *const invalid[] = {
        "",    "{",       "[1,]",  "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]",  "[.5]", "[1e]",
        "[-]", "\"\\x\"", "\"abc", "[tru]",      "[nul]",     "{} {}", "[1 2]", "'a'",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        cr_expect(!json_c_takes(invalid[i]), "json-c takes %s", invalid[i]);
        cr_expect(!jscan_takes(invalid[i]), "jscan takes %s", invalid[i]);
    }
}

/* Strings as lenient as json-c's: what the platform sends is cleaned by
 * whoever keeps it, and one odd name must not cost a whole reply. */
Test(jscan, strings_are_as_lenient_as_json_c)
{
    static const struct {
        const char *text, *decoded;
    } cases[] = {
        {"\"\\ud800\"", "\xef\xbf\xbd"},
        {"\"\\udc00x\"", "\xef\xbf\xbdx"},
        {"\"\\ud800\\u0041\"", "\xef\xbf\xbd"
                               "A"},
        {"\"a\tb\"", "a\tb"},
        {"\"\xff\"", "\xff"},
        {"\"\xc3\"", "\xc3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct jscan s = {0};
        char *str = NULL;
        cr_expect(json_c_takes(cases[i].text), "json-c refuses case %zu", i);
        jscan_init(&s, cases[i].text, strlen(cases[i].text));
        cr_assert(jscan_string_dup(&s, &str, NULL), "case %zu", i);
        cr_expect_str_eq(str, cases[i].decoded, "case %zu", i);
        free(str);
        jscan_free(&s);
    }
}

/* Where jscan is stricter than json-c, which takes NaN even in its
 * strict mode: no number in JSON is NaN. */
Test(jscan, refuses_nan)
{
    cr_expect(!jscan_takes("[NaN]"));
    cr_expect(!jscan_takes("[-Infinity]"));
    cr_expect(!jscan_takes("[1.]"), "json-c takes 1. too");
}

Test(jscan, reads_members_and_items_in_order)
{
    const char *text = "{\"t\": 1795000000, \"v\": [\"-79.8\", 2.5, null], \"ok\": true, "
                       "\"k\\u00e9y\": {\"x\": [1, {\"y\": 2}]}}";
    struct jscan s = {0};
    struct err e;
    long long t = 0;
    bool ok = false;
    double d = 0;
    char *str = NULL;
    struct jscan_raw raw = {0};
    jscan_init(&s, text, strlen(text));
    cr_assert(jscan_object(&s));
    cr_assert(jscan_member(&s));
    cr_expect_str_eq(s.key, "t");
    cr_assert(jscan_int(&s, &t));
    cr_expect_eq(t, 1795000000LL);
    cr_assert(jscan_member(&s));
    cr_expect_str_eq(s.key, "v");
    cr_assert(jscan_array(&s));
    cr_assert(jscan_item(&s));
    cr_assert(jscan_string_dup(&s, &str, NULL));
    cr_expect_str_eq(str, "-79.8");
    free(str);
    cr_assert(jscan_item(&s));
    cr_assert_eq(jscan_peek(&s), JSCAN_NUMBER);
    cr_assert(jscan_number(&s, &d));
    cr_expect_float_eq(d, 2.5, 1e-12);
    cr_assert(jscan_item(&s));
    cr_expect(jscan_null(&s));
    cr_expect(!jscan_item(&s));
    cr_assert(jscan_member(&s));
    cr_assert(jscan_bool(&s, &ok));
    cr_expect(ok);
    cr_assert(jscan_member(&s));
    cr_expect_str_eq(s.key, "k\xc3\xa9y");
    cr_assert(jscan_skip(&s, &raw));
    cr_expect_eq(raw.len, strlen("{\"x\": [1, {\"y\": 2}]}"));
    cr_expect(memcmp(raw.text, "{\"x\": [1, {\"y\": 2}]}", raw.len) == 0);
    cr_expect(!jscan_member(&s));
    cr_expect_eq(jscan_end(&s, &e), 0);
    jscan_free(&s);
}

Test(jscan, the_first_error_sticks_with_its_offset)
{
    const char *text = "{\"n\": 1.5, \"m\": 2}";
    struct jscan s = {0};
    struct err e;
    long long n = 0;
    jscan_init(&s, text, strlen(text));
    cr_assert(jscan_object(&s));
    cr_assert(jscan_member(&s));
    cr_expect(!jscan_int(&s, &n), "1.5 is no integer");
    cr_expect(!jscan_member(&s), "nothing after an error");
    cr_expect_eq(jscan_end(&s, &e), -1);
    cr_expect_str_eq(e.msg, "byte 6: not an integer", "where the number starts");
    jscan_free(&s);
}

Test(jscan, strings_keep_nul_bytes_and_their_length)
{
    const char *text = "\"a\\u0000b\"";
    struct jscan s = {0};
    char *str = NULL;
    size_t len = 0;
    jscan_init(&s, text, strlen(text));
    cr_assert(jscan_string_dup(&s, &str, &len));
    cr_expect_eq(len, 3);
    cr_expect(memcmp(str, "a\0b", 3) == 0);
    free(str);
    jscan_free(&s);
}

Test(jscan, nesting_is_bounded)
{
    char deep[2 * (JSCAN_DEPTH + 2) + 1];
    size_t n = JSCAN_DEPTH + 1;
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    cr_expect(!jscan_takes(deep));
    deep[0] = ' ';
    deep[2 * n - 1] = ' ';
    cr_expect(jscan_takes(deep), "JSCAN_DEPTH levels are allowed");
}

Test(jscan, integers_beyond_range_and_huge_numbers_fail)
{
    struct jscan s = {0};
    long long n;
    double d;
    const char *big = "99999999999999999999";
    jscan_init(&s, big, strlen(big));
    cr_expect(!jscan_int(&s, &n));
    jscan_init(&s, "1e400", 5);
    cr_expect(!jscan_number(&s, &d));
    struct err e;
    cr_expect_eq(jscan_error(&s, &e), -1);
    cr_expect_str_eq(e.msg, "byte 0: a number beyond range", "not the end of the text");
    jscan_init(&s, "12.5", 4);
    cr_expect(!jscan_int(&s, &n));
    cr_expect_eq(jscan_error(&s, &e), -1);
    cr_expect_str_eq(e.msg, "byte 0: not an integer");
    jscan_free(&s);
}

/* Numbers read as strtod reads them, by the short path or the long one. */
Test(jscan, numbers_read_as_strtod_reads_them)
{
    static const char *const texts[] = {
        "0",
        "-0",
        "4",
        "-79.8",
        "0.1",
        "0.30000000000000004",
        "123456789012345",
        "1234567890123456",
        "-0.000001",
        "99.99",
        "1e3",
        "2.5E-3",
        "-1.7976931348623157e308",
        "5e-324",
        "0.1234567890123456789",
        "18446744073709551616",
        "10",
        "-0.0",
        "0.5",
        "100.25",
        "999999999999999",
        "99999999999999.9",
        "-12345678901234.5",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct jscan s = {0};
        double d = 0;
        jscan_init(&s, texts[i], strlen(texts[i]));
        cr_assert(jscan_number(&s, &d), "%s", texts[i]);
        double want = strtod(texts[i], NULL);
        cr_expect(memcmp(&d, &want, sizeof d) == 0, "%s: %.17g, strtod %.17g", texts[i], d, want);
        jscan_free(&s);
    }
}

/* Integers read in place (short, plain) and the long way agree with
 * strtoll; what is not a JSON number fails either way. */
Test(jscan, integers_read_as_strtoll_reads_them)
{
    static const char *const good[] = {
        "0",
        "-0",
        "7",
        "-123",
        "1795000000",
        "999999999999999",
        "1000000000000000",
        "123456789012345678",
        "-9223372036854775808",
        "9223372036854775807",
    };
    static const char *const bad[] = {"01", "-01", "1.", "-", "00.5", "1.5.3", "1e2", "-x", "0.5"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct jscan s = {0};
        long long n = 1;
        struct err e;
        jscan_init(&s, good[i], strlen(good[i]));
        cr_expect(jscan_int(&s, &n), "%s", good[i]);
        cr_expect_eq(jscan_end(&s, &e), 0, "%s", good[i]);
        cr_expect_eq(n, strtoll(good[i], NULL, 10), "%s: %lld", good[i], n);
        jscan_free(&s);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct jscan s = {0};
        long long n = 0;
        double d = 0;
        struct err e;
        jscan_init(&s, bad[i], strlen(bad[i]));
        bool whole = jscan_int(&s, &n) && jscan_end(&s, &e) == 0;
        cr_expect(!whole, "%s read as the integer %lld", bad[i], n);
        jscan_init(&s, bad[i], strlen(bad[i]));
        whole = jscan_number(&s, &d) && jscan_end(&s, &e) == 0;
        cr_expect(!whole || !strcmp(bad[i], "1e2") || !strcmp(bad[i], "0.5"), "%s read as %g",
                  bad[i], d);
        jscan_free(&s);
    }
}
