/* The platform simulator over real HTTP: both operations in both dialects,
 * every error of the documented check order, rate limits and their
 * headers, faults, the statistics, the command line, and the webhook sink
 * the other integration tests rely on. */
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
#define FREEZER "\"remote-serial\":\"5214000A\",\"base-serial\":\"5214000A\""

static struct sim sim;
static char *dir;

/* Freezer 5214000A carries 25 past alerts (NOW-100 ... NOW-2500, the one at
 * NOW-100 with three kinds) and two future ones; two remote units hang off
 * base unit 5893C000; 5214000B has no alert logs; a second account speaks
 * the numbers dialect. */
static char *scenario_text(void)
{
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"now\":%lld,\"accounts\":[{\"api_key\":\"%s\",\"login_id\":\"%s\","
               "\"login_pass\":\"%s\",\"devices\":[",
               NOW, KEY, LOGIN, PASS);
    buf_puts(&b, "{\"serial\":\"5214000A\",\"model\":\"TR-72A2\",\"name\":\"Freezer A\","
                 "\"group\":{\"num\":1,\"name\":\"Lab A\"},\"time_diff\":540,\"battery\":4,"
                 "\"rssi\":\"\",\"channels\":[{\"name\":\"Temperature\",\"unit\":\"°C\","
                 "\"value\":\"-79.8\"},{\"name\":\"Humidity\",\"unit\":\"%\","
                 "\"value\":\"Sensor Error\"}],\"alerts\":[");
    buf_printf(&b,
               "{\"unixtime\":%lld,\"ch1\":\"CH1 Upper Limit Exceeded -70.2°C (limit "
               "-75.0°C)\",\"battery-level\":\"Low Battery Warning\","
               "\"communication-status\":\"Communication Error\"}",
               NOW - 100);
    /* Listed out of order on purpose: the simulator must sort. */
    for (int k = 25; k >= 2; k--)
        buf_printf(&b, ",{\"unixtime\":%lld,\"ch1\":\"alert %d\"}", NOW - 100LL * k, k);
    buf_printf(&b, ",{\"unixtime\":%lld,\"ch1\":\"future 1\"}", NOW + 50);
    buf_printf(&b, ",{\"unixtime\":%lld,\"ch2\":\"future 2\"}]},", NOW + 1000);
    buf_puts(&b, "{\"serial\":\"5820D101\",\"model\":\"RTR501B\",\"name\":\"Cold Room\","
                 "\"num\":1,\"base\":{\"serial\":\"5893C000\",\"model\":\"RTR500B\","
                 "\"name\":\"Gateway\"},\"channels\":[{\"name\":\"ch1\",\"unit\":\"°C\","
                 "\"value\":\"7.5\"}]},"
                 "{\"serial\":\"5820D102\",\"model\":\"RTR503B\",\"name\":\"冷蔵庫 2F\","
                 "\"num\":2,\"base\":{\"serial\":\"5893C000\",\"model\":\"RTR500B\","
                 "\"name\":\"Gateway\"}},"
                 "{\"serial\":\"5214000B\",\"model\":\"TR-71nw\",\"name\":\"Old\","
                 "\"alert_supported\":false}]},");
    buf_printf(&b,
               "{\"api_key\":\"K2\",\"login_id\":\"num00001\",\"login_pass\":\"pass\","
               "\"dialect\":\"numbers\",\"devices\":[{\"serial\":\"5214000C\","
               "\"model\":\"TR-72A2\",\"name\":\"N\",\"channels\":[{\"name\":\"T\","
               "\"unit\":\"C\",\"value\":\"-79.8\"},{\"name\":\"E\",\"value\":\"Sensor "
               "Error\"}],\"alerts\":[{\"unixtime\":%lld,\"ch1\":\"a\"},"
               "{\"unixtime\":%lld,\"ch1\":\"b\"}]}]}]}",
               NOW - 20, NOW - 10);
    return buf_steal(&b);
}

static void setup(void)
{
    dir = test_tmpdir();
    char *path = xasprintf("%s/scenario.json", dir);
    char *text = scenario_text();
    write_file(path, text);
    sim_start(&sim, path, dir);
    free(text);
    free(path);
}

static void teardown(void)
{
    sim_stop(&sim);
    test_rmtree(dir);
    free(dir);
    dir = NULL;
}

TestSuite(sim, .init = setup, .fini = teardown, .timeout = 30);

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

/* Checks status, content type and {"error":{"code":status,"message":...}};
 * returns the message (a copy). */
static char *expect_error(const struct http_reply *r, long status)
{
    cr_assert_eq(r->status, status, "status %ld, want %ld: %s", r->status, status, r->body);
    const char *ct = http_header(r, "Content-Type");
    cr_assert(ct && strcmp(ct, "application/json; charset=utf-8") == 0, "Content-Type %s", ct);
    struct json_object *o = parse(r);
    struct json_object *e = json_at(o, "error");
    cr_expect_eq(json_int_at(e, "code"), status);
    char *msg = xstrdup(json_str_at(e, "message"));
    cr_expect(*msg, "empty message");
    json_object_put(o);
    return msg;
}

static void call_error(const char *op, const char *creds, const char *fields, long status)
{
    struct http_reply r;
    call(&r, op, creds, fields);
    free(expect_error(&r, status));
    http_reply_free(&r);
}

/* A raw request to a platform path, for the checks before authentication. */
static void raw_error(const char *method, const char *op, const char *override,
                      const char *content_type, const char *body, long status)
{
    char *url = xasprintf("%s/v1/devices/%s", sim.base_url, op);
    char *hdr = override ? xasprintf("X-HTTP-Method-Override: %s", override) : NULL;
    char *const headers[] = {hdr, NULL};
    struct http_reply r;
    cr_assert_eq(http_request(&r, method, url, content_type, body, headers), 0);
    free(expect_error(&r, status));
    cr_expect_null(http_header(&r, "X-RateLimit-Limit"), "rate headers before authentication");
    http_reply_free(&r);
    free(url);
    free(hdr);
}

/* ---- Get Current Readings ---------------------------------------------- */

Test(sim, current_lists_all_devices_with_string_fields)
{
    struct http_reply r;
    call(&r, "current", CREDS, "");
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_expect_str_eq(http_header(&r, "Content-Type"), "application/json; charset=utf-8");
    struct json_object *o = parse(&r);
    struct json_object *devs = json_at(o, "devices");
    cr_assert_eq(json_object_array_length(devs), 4);

    struct json_object *d = json_object_array_get_idx(devs, 0);
    cr_expect_str_eq(json_str_at(d, "num"), "0");
    cr_expect_str_eq(json_str_at(d, "serial"), "5214000A");
    cr_expect_str_eq(json_str_at(d, "model"), "TR-72A2");
    cr_expect_str_eq(json_str_at(d, "name"), "Freezer A");
    cr_expect_str_eq(json_str_at(d, "battery"), "4");
    cr_expect_str_eq(json_str_at(d, "rssi"), "");
    cr_expect_str_eq(json_str_at(d, "time_diff"), "540");
    cr_expect_str_eq(json_str_at(d, "std_bias"), "0");
    cr_expect_str_eq(json_str_at(d, "dst_flg"), "0");
    cr_expect_str_eq(json_str_at(d, "dst_bias"), "60");
    cr_expect_str_eq(json_str_at(d, "unixtime"), "1795000000");
    struct json_object *chs = json_at(d, "channel");
    cr_assert_eq(json_object_array_length(chs), 2);
    struct json_object *ch = json_object_array_get_idx(chs, 0);
    cr_expect_str_eq(json_str_at(ch, "num"), "1");
    cr_expect_str_eq(json_str_at(ch, "name"), "Temperature");
    cr_expect_str_eq(json_str_at(ch, "value"), "-79.8");
    cr_expect_str_eq(json_str_at(ch, "unit"), "°C");
    ch = json_object_array_get_idx(chs, 1);
    cr_expect_str_eq(json_str_at(ch, "num"), "2");
    cr_expect_str_eq(json_str_at(ch, "value"), "Sensor Error");
    struct json_object *base = json_at(d, "baseunit");
    cr_expect_str_eq(json_str_at(base, "serial"), "5214000A");
    cr_expect_str_eq(json_str_at(base, "model"), "TR-72A2");
    cr_expect_str_eq(json_str_at(base, "name"), "Freezer A");
    cr_expect_str_eq(json_str_at(json_at(d, "group"), "num"), "1");
    cr_expect_str_eq(json_str_at(json_at(d, "group"), "name"), "Lab A");

    d = json_object_array_get_idx(devs, 2);
    cr_expect_str_eq(json_str_at(d, "num"), "2");
    cr_expect_str_eq(json_str_at(d, "name"), "冷蔵庫 2F");
    cr_expect_str_eq(json_str_at(json_at(d, "baseunit"), "serial"), "5893C000");
    cr_expect_str_eq(json_str_at(json_at(d, "group"), "num"), "0");
    cr_expect_str_eq(json_str_at(json_at(d, "group"), "name"), "");
    cr_expect_eq(json_object_array_length(json_at(d, "channel")), 0);
    json_object_put(o);
    http_reply_free(&r);

    /* unixtime follows the virtual clock */
    sim_advance(&sim, 61);
    call(&r, "current", CREDS, "");
    o = parse(&r);
    d = json_object_array_get_idx(json_at(o, "devices"), 0);
    cr_expect_str_eq(json_str_at(d, "unixtime"), "1795000061");
    json_object_put(o);
    http_reply_free(&r);
}

static void expect_serials(const char *fields, const char *want)
{
    struct http_reply r;
    call(&r, "current", CREDS, fields);
    cr_assert_eq(r.status, 200, "%s: %s", fields, r.body);
    struct json_object *o = parse(&r);
    struct json_object *devs = json_at(o, "devices");
    char got[256] = "";
    for (size_t i = 0; i < json_object_array_length(devs); i++) {
        strcat(got, i ? " " : "");
        strncat(got, json_str_at(json_object_array_get_idx(devs, i), "serial"), 16);
    }
    cr_expect_str_eq(got, want, "filter %s", fields);
    json_object_put(o);
    http_reply_free(&r);
}

Test(sim, current_filters_by_remote_or_base_serial)
{
    expect_serials("\"remote-serial\":[\"5820D102\"]", "5820D102");
    expect_serials("\"remote-serial\":[\"5214000B\",\"5214000A\"]", "5214000A 5214000B");
    expect_serials("\"base-serial\":[\"5893C000\"]", "5820D101 5820D102");
    expect_serials("\"base-serial\":[\"5214000A\"]", "5214000A");
    expect_serials("\"remote-serial\":[\"00000000\"]", "");
}

Test(sim, current_numbers_dialect_sends_numbers)
{
    struct http_reply r;
    call(&r, "current", NUM_CREDS, "");
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *o = parse(&r);
    struct json_object *d = json_object_array_get_idx(json_at(o, "devices"), 0);
    cr_expect_eq(json_int_at(d, "num"), 0);
    cr_expect_eq(json_int_at(d, "battery"), 5);
    cr_expect_eq(json_int_at(d, "time_diff"), 0);
    cr_expect_eq(json_int_at(d, "dst_bias"), 60);
    cr_expect_eq(json_int_at(d, "unixtime"), NOW);
    cr_expect_str_eq(json_str_at(d, "rssi"), "", "an empty rssi stays a string");
    struct json_object *ch = json_object_array_get_idx(json_at(d, "channel"), 0);
    cr_expect_eq(json_int_at(ch, "num"), 1);
    struct json_object *v = json_at(ch, "value");
    cr_assert(json_object_is_type(v, json_type_double), "value %s", json_object_to_json_string(v));
    cr_expect_float_eq(json_object_get_double(v), -79.8, 1e-9);
    cr_expect(strstr(r.body, "\"value\":-79.8,"), "value not sent as -79.8: %s", r.body);
    ch = json_object_array_get_idx(json_at(d, "channel"), 1);
    cr_expect_str_eq(json_str_at(ch, "value"), "Sensor Error");
    cr_expect_eq(json_int_at(json_at(d, "group"), "num"), 0);
    json_object_put(o);
    http_reply_free(&r);
}

/* ---- Get Alert Logs ----------------------------------------------------- */

Test(sim, alert_returns_20_newest_past_entries_newest_first)
{
    struct http_reply r;
    call(&r, "alert", CREDS, FREEZER);
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *o = parse(&r);
    cr_expect_str_eq(json_str_at(o, "remote-serial"), "5214000A");
    cr_expect_str_eq(json_str_at(o, "remote-model"), "TR-72A2");
    cr_expect_str_eq(json_str_at(o, "remote-name"), "Freezer A");
    cr_expect_str_eq(json_str_at(o, "base-serial"), "5214000A");
    cr_expect_str_eq(json_str_at(o, "base-model"), "TR-72A2");
    cr_expect_str_eq(json_str_at(o, "base-name"), "Freezer A");
    cr_expect_str_eq(json_str_at(o, "time-diff"), "540");
    cr_expect_str_eq(json_str_at(o, "std-bias"), "0");
    cr_expect_str_eq(json_str_at(o, "dst-flg"), "0");
    cr_expect_str_eq(json_str_at(o, "dst-bias"), "60");
    struct json_object *ch = json_object_array_get_idx(json_at(o, "channel"), 0);
    cr_expect_str_eq(json_str_at(ch, "name"), "Temperature");
    cr_expect_str_eq(json_str_at(ch, "num"), "1");
    cr_expect_str_eq(json_str_at(ch, "unit"), "°C");

    struct json_object *logs = json_at(o, "alert-logs");
    cr_assert_eq(json_object_array_length(logs), 20);
    struct json_object *first = json_object_array_get_idx(logs, 0);
    cr_expect_str_eq(json_str_at(first, "unixtime"), "1794999900");
    cr_expect_str_eq(json_str_at(first, "ch1"), "CH1 Upper Limit Exceeded -70.2°C (limit -75.0°C)");
    cr_expect_str_eq(json_str_at(first, "battery-level"), "Low Battery Warning");
    cr_expect_str_eq(json_str_at(first, "communication-status"), "Communication Error");
    cr_expect_not(json_object_object_get_ex(first, "ch2", NULL), "absent kinds are left out");
    for (size_t i = 1; i < 20; i++) {
        struct json_object *e = json_object_array_get_idx(logs, i);
        long long t = strtoll(json_str_at(e, "unixtime"), NULL, 10);
        cr_expect_eq(t, NOW - 100LL * (long long)(i + 1), "entry %zu", i);
        char want[32];
        snprintf(want, sizeof want, "alert %zu", i + 1);
        cr_expect_str_eq(json_str_at(e, "ch1"), want);
    }
    json_object_put(o);
    http_reply_free(&r);

    /* The entry at NOW+50 appears once the clock passes it, pushing out
     * the oldest. */
    sim_advance(&sim, 50);
    call(&r, "alert", CREDS, FREEZER);
    o = parse(&r);
    logs = json_at(o, "alert-logs");
    cr_assert_eq(json_object_array_length(logs), 20);
    cr_expect_str_eq(json_str_at(json_object_array_get_idx(logs, 0), "ch1"), "future 1");
    cr_expect_str_eq(json_str_at(json_object_array_get_idx(logs, 0), "unixtime"), "1795000050");
    cr_expect_str_eq(json_str_at(json_object_array_get_idx(logs, 19), "ch1"), "alert 19");
    json_object_put(o);
    http_reply_free(&r);
}

Test(sim, alert_of_remote_unit_names_its_base)
{
    struct http_reply r;
    call(&r, "alert", CREDS, "\"remote-serial\":\"5820D102\",\"base-serial\":\"5893C000\"");
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *o = parse(&r);
    cr_expect_str_eq(json_str_at(o, "remote-name"), "冷蔵庫 2F");
    cr_expect_str_eq(json_str_at(o, "base-serial"), "5893C000");
    cr_expect_str_eq(json_str_at(o, "base-model"), "RTR500B");
    cr_expect_str_eq(json_str_at(o, "base-name"), "Gateway");
    cr_expect_eq(json_object_array_length(json_at(o, "alert-logs")), 0);
    json_object_put(o);
    http_reply_free(&r);
}

Test(sim, alert_numbers_dialect_sends_numbers)
{
    struct http_reply r;
    call(&r, "alert", NUM_CREDS, "\"remote-serial\":\"5214000C\",\"base-serial\":\"5214000C\"");
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *o = parse(&r);
    cr_expect_eq(json_int_at(o, "time-diff"), 0);
    cr_expect_eq(json_int_at(o, "dst-bias"), 60);
    cr_expect_eq(json_int_at(json_object_array_get_idx(json_at(o, "channel"), 0), "num"), 1);
    struct json_object *logs = json_at(o, "alert-logs");
    cr_assert_eq(json_object_array_length(logs), 2);
    cr_expect_eq(json_int_at(json_object_array_get_idx(logs, 0), "unixtime"), NOW - 10);
    cr_expect_eq(json_int_at(json_object_array_get_idx(logs, 1), "unixtime"), NOW - 20);
    json_object_put(o);
    http_reply_free(&r);
}

/* ---- the check order ---------------------------------------------------- */

Test(sim, rejects_wrong_method_or_override_with_400)
{
    const char *body = "{" CREDS "}";
    raw_error("GET", "current", NULL, "application/json", body, 400);
    raw_error("GET", "alert", "GET", "application/json", body, 400);
    raw_error("PUT", "alert", "GET", "application/json", body, 400);
    raw_error("POST", "alert", NULL, "application/json", body, 400);
    raw_error("POST", "current", "POST", "application/json", body, 400);
    /* the method checks come before the body checks */
    raw_error("POST", "current", NULL, "text/plain", "nope", 400);
}

Test(sim, rejects_other_content_or_bodies_with_415)
{
    const char *body = "{" CREDS "}";
    raw_error("POST", "current", "GET", NULL, body, 415);
    raw_error("POST", "current", "GET", "text/plain", body, 415);
    raw_error("POST", "current", "GET", "application/jsonp", body, 415);
    raw_error("POST", "alert", "GET", "application/json", "", 415);
    raw_error("POST", "alert", "GET", "application/json", "{\"api-key\":", 415);
    raw_error("POST", "alert", "GET", "application/json", "[1,2]", 415);
    raw_error("POST", "alert", "GET", "application/json", "{} x", 415);

    /* with a charset the type is fine */
    char *url = xasprintf("%s/v1/devices/current", sim.base_url);
    char *const headers[] = {(char *)"X-HTTP-Method-Override: GET", NULL};
    struct http_reply r;
    cr_assert_eq(http_request(&r, "POST", url, "application/json; charset=utf-8", body, headers),
                 0);
    cr_expect_eq(r.status, 200, "%s", r.body);
    http_reply_free(&r);
    free(url);
}

Test(sim, rejects_missing_credentials_with_400_and_wrong_ones_with_401)
{
    call_error("current", "\"login-id\":\"" LOGIN "\",\"login-pass\":\"" PASS "\"", "", 400);
    call_error("current", "\"api-key\":\"" KEY "\",\"login-pass\":\"" PASS "\"", "", 400);
    call_error("alert", "\"api-key\":\"" KEY "\",\"login-id\":\"" LOGIN "\"", FREEZER, 400);
    call_error("current", "\"api-key\":1,\"login-id\":\"" LOGIN "\",\"login-pass\":\"" PASS "\"",
               "", 400);
    call_error("current", "\"api-key\":\"" KEY "\",\"login-id\":\"" LOGIN "\",\"login-pass\":\"x\"",
               "", 401);
    call_error("alert", "\"api-key\":\"K2\",\"login-id\":\"" LOGIN "\",\"login-pass\":\"" PASS "\"",
               FREEZER, 401);
    /* a key of one account with the login of another */
    call_error("current",
               "\"api-key\":\"K2\",\"login-id\":\"num00001\",\"login-pass\":\"" PASS "\"", "", 401);

    struct http_reply r;
    call(&r, "current", "\"api-key\":\"" KEY "\",\"login-id\":\"" LOGIN "\",\"login-pass\":\"no\"",
         "");
    cr_expect_null(http_header(&r, "X-RateLimit-Remaining"), "no rate headers without a login");
    http_reply_free(&r);
}

Test(sim, current_rejects_bad_serial_lists_with_400)
{
    call_error("current", CREDS, "\"remote-serial\":[\"5214000A\"],\"base-serial\":[\"5893C000\"]",
               400);
    call_error("current", CREDS, "\"remote-serial\":\"5214000A\"", 400);
    call_error("current", CREDS, "\"base-serial\":[\"5893C000\",7]", 400);
    call_error("current", CREDS, "\"remote-serial\":null", 400);
}

Test(sim, alert_rejects_bad_devices_with_400)
{
    call_error("alert", CREDS, "\"base-serial\":\"5214000A\"", 400);
    call_error("alert", CREDS, "\"remote-serial\":\"5214000A\"", 400);
    call_error("alert", CREDS, "\"remote-serial\":[\"5214000A\"],\"base-serial\":\"5214000A\"",
               400);
    call_error("alert", CREDS, "\"remote-serial\":\"5214000A\",\"base-serial\":5214000", 400);
    call_error("alert", CREDS, "\"remote-serial\":\"5214000A\",\"base-serial\":\"5893C000\"", 400);
    call_error("alert", CREDS, "\"remote-serial\":\"5820D101\",\"base-serial\":\"5820D101\"", 400);
    /* a serial of another account is unknown here */
    call_error("alert", CREDS, "\"remote-serial\":\"5214000C\",\"base-serial\":\"5214000C\"", 400);

    struct http_reply r;
    call(&r, "alert", CREDS, "\"remote-serial\":\"99999999\",\"base-serial\":\"99999999\"");
    char *unknown = expect_error(&r, 400);
    http_reply_free(&r);
    call(&r, "alert", CREDS, "\"remote-serial\":\"5214000B\",\"base-serial\":\"5214000B\"");
    char *unsupported = expect_error(&r, 400);
    http_reply_free(&r);
    cr_expect_str_neq(unknown, unsupported, "an unsupported device needs its own message");
    free(unknown);
    free(unsupported);
}

Test(sim, unknown_paths_get_404)
{
    struct http_reply r;
    char *url = xasprintf("%s/v1/devices/warnings", sim.base_url);
    cr_assert_eq(http_request(&r, "POST", url, "application/json", "{" CREDS "}", NULL), 0);
    free(expect_error(&r, 404));
    http_reply_free(&r);
    free(url);
    url = xasprintf("%s/_sim/nothing", sim.base_url);
    cr_assert_eq(http_request(&r, "GET", url, NULL, NULL, NULL), 0);
    free(expect_error(&r, 404));
    http_reply_free(&r);
    free(url);
}

/* ---- rate limits -------------------------------------------------------- */

Test(sim, rate_headers_come_with_successes_and_errors)
{
    struct http_reply r;
    call(&r, "current", CREDS, "");
    cr_expect_eq(r.status, 200);
    sim_expect_rate(&r, 10, 9, 120);
    http_reply_free(&r);

    sim_advance(&sim, 30);
    call(&r, "current", CREDS, "\"remote-serial\":5");
    free(expect_error(&r, 400));
    sim_expect_rate(&r, 10, 8, 90);
    http_reply_free(&r);

    /* each operation has its own window */
    call(&r, "alert", CREDS, "\"remote-serial\":\"nope\",\"base-serial\":\"nope\"");
    free(expect_error(&r, 400));
    sim_expect_rate(&r, 12, 11, 3600);
    http_reply_free(&r);
    call(&r, "alert", CREDS, FREEZER);
    cr_expect_eq(r.status, 200);
    sim_expect_rate(&r, 12, 10, 3600);
    http_reply_free(&r);

    /* and so has each login */
    call(&r, "alert", NUM_CREDS, "\"remote-serial\":\"5214000C\",\"base-serial\":\"5214000C\"");
    sim_expect_rate(&r, 12, 11, 3600);
    http_reply_free(&r);
}

Test(sim, thirteenth_alert_call_in_an_hour_gets_429_until_the_first_leaves)
{
    struct http_reply r;
    for (int i = 0; i < 12; i++) {
        call(&r, "alert", CREDS, FREEZER);
        cr_assert_eq(r.status, 200, "call %d: %s", i + 1, r.body);
        sim_expect_rate(&r, 12, 11 - i, 3600 - 100L * i);
        http_reply_free(&r);
        sim_advance(&sim, 100);
    }
    /* now = NOW+1200; the first call (NOW) leaves the window at NOW+3600 */
    call(&r, "alert", CREDS, FREEZER);
    free(expect_error(&r, 429));
    sim_expect_rate(&r, 12, 0, 2400);
    http_reply_free(&r);

    sim_advance(&sim, 2399);
    call(&r, "alert", CREDS, FREEZER);
    free(expect_error(&r, 429));
    sim_expect_rate(&r, 12, 0, 1);
    http_reply_free(&r);

    sim_advance(&sim, 1);
    call(&r, "alert", CREDS, FREEZER);
    cr_expect_eq(r.status, 200, "%s", r.body);
    sim_expect_rate(&r, 12, 0, 100);
    http_reply_free(&r);

    /* the two 429s did not count: the next call is refused again, and one
     * more comes free 100 s later */
    call(&r, "alert", CREDS, FREEZER);
    free(expect_error(&r, 429));
    http_reply_free(&r);
    sim_advance(&sim, 100);
    call(&r, "alert", CREDS, FREEZER);
    cr_expect_eq(r.status, 200);
    http_reply_free(&r);
}

Test(sim, eleventh_current_call_in_two_minutes_gets_429)
{
    struct http_reply r;
    for (int i = 0; i < 10; i++) {
        call(&r, "current", CREDS, "");
        cr_assert_eq(r.status, 200, "call %d", i + 1);
        http_reply_free(&r);
    }
    call(&r, "current", CREDS, "");
    free(expect_error(&r, 429));
    sim_expect_rate(&r, 10, 0, 120);
    http_reply_free(&r);
    sim_advance(&sim, 120);
    call(&r, "current", CREDS, "");
    cr_expect_eq(r.status, 200);
    sim_expect_rate(&r, 10, 9, 120);
    http_reply_free(&r);
}

/* ---- faults ------------------------------------------------------------- */

Test(sim, faults_answer_the_next_calls_and_count_as_accepted)
{
    struct http_reply r;
    sim_fault(&sim, "alert", 503, 2, NULL);
    for (int i = 0; i < 2; i++) {
        call(&r, "alert", CREDS, FREEZER);
        free(expect_error(&r, 503));
        sim_expect_rate(&r, 12, 11 - i, 3600);
        http_reply_free(&r);
    }
    call(&r, "alert", CREDS, FREEZER);
    cr_expect_eq(r.status, 200);
    sim_expect_rate(&r, 12, 9, 3600);
    http_reply_free(&r);

    /* only the named operation is affected; a raw body is sent verbatim */
    sim_fault(&sim, "current", 200, 1, "{\"devices\":[{\"serial\":");
    call(&r, "alert", CREDS, FREEZER);
    cr_expect_eq(r.status, 200);
    http_reply_free(&r);
    call(&r, "current", CREDS, "");
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "{\"devices\":[{\"serial\":");
    sim_expect_rate(&r, 10, 9, 120);
    http_reply_free(&r);
    call(&r, "current", CREDS, "");
    cr_expect(strstr(r.body, "5214000A"), "fault did not end: %s", r.body);
    http_reply_free(&r);

    /* faults come after authentication */
    sim_fault(&sim, "current", 500, 1, NULL);
    call_error("current", "\"api-key\":\"x\",\"login-id\":\"y\",\"login-pass\":\"z\"", "", 401);
    call_error("current", CREDS, "", 500);
}

/* ---- control endpoints and statistics ------------------------------------ */

Test(sim, control_moves_the_clock_and_adds_alerts)
{
    cr_expect_eq(sim_clock(&sim), NOW);
    sim_set_clock(&sim, NOW + 5000);
    sim_advance(&sim, -1000);
    cr_expect_eq(sim_clock(&sim), NOW + 4000);

    sim_add_alert(&sim, "5820D101", "{\"unixtime\":1795003999,\"ch1\":\"CH1 Sensor Error\"}");
    struct http_reply r;
    call(&r, "alert", CREDS, "\"remote-serial\":\"5820D101\",\"base-serial\":\"5893C000\"");
    struct json_object *o = parse(&r);
    struct json_object *logs = json_at(o, "alert-logs");
    cr_assert_eq(json_object_array_length(logs), 1);
    cr_expect_str_eq(json_str_at(json_object_array_get_idx(logs, 0), "ch1"), "CH1 Sensor Error");
    json_object_put(o);
    http_reply_free(&r);

    const char *bad[] = {
        "{\"serial\":\"00000000\",\"alert\":{\"unixtime\":1,\"ch1\":\"x\"}}",
        "{\"serial\":\"5820D101\",\"alert\":{\"unixtime\":\"1\"}}",
        "{\"serial\":\"5820D101\",\"alert\":{\"unixtime\":1,\"ch7\":\"x\"}}",
        "{\"serial\":\"5820D101\"}",
    };
    char *url = xasprintf("%s/_sim/alerts", sim.base_url);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(http_request(&r, "POST", url, "application/json", bad[i], NULL), 0);
        free(expect_error(&r, 400));
        http_reply_free(&r);
    }
    free(url);
    url = xasprintf("%s/_sim/clock", sim.base_url);
    cr_assert_eq(http_request(&r, "POST", url, NULL, "{\"now\":1,\"advance\":2}", NULL), 0);
    free(expect_error(&r, 400));
    http_reply_free(&r);
    free(url);
    url = xasprintf("%s/_sim/faults", sim.base_url);
    cr_assert_eq(http_request(&r, "POST", url, NULL,
                              "{\"op\":\"warnings\",\"status\":503,\"count\":1}", NULL),
                 0);
    free(expect_error(&r, 400));
    http_reply_free(&r);
    free(url);
}

Test(sim, stats_log_every_authenticated_call)
{
    struct http_reply r;
    for (int i = 0; i < 13; i++) {
        call(&r, "alert", CREDS, FREEZER);
        http_reply_free(&r);
    }
    call(&r, "current", CREDS, "");
    http_reply_free(&r);
    call(&r, "current", "\"api-key\":\"x\",\"login-id\":\"y\",\"login-pass\":\"z\"", "");
    http_reply_free(&r);
    /* an hour later: 6 more, which share no window with the first 12 */
    sim_advance(&sim, 3600);
    for (int i = 0; i < 6; i++) {
        call(&r, "alert", CREDS, "\"remote-serial\":\"5820D101\",\"base-serial\":\"5893C000\"");
        http_reply_free(&r);
    }

    struct json_object *st = sim_stats(&sim);
    struct json_object *calls = json_at(st, "calls");
    cr_assert_eq(json_object_array_length(calls), 20);
    struct json_object *c = json_object_array_get_idx(calls, 0);
    cr_expect_eq(json_int_at(c, "t"), NOW);
    cr_expect_str_eq(json_str_at(c, "op"), "alert");
    cr_expect_str_eq(json_str_at(c, "login_id"), LOGIN);
    cr_expect_str_eq(json_str_at(c, "serial"), "5214000A");
    cr_expect_eq(json_int_at(c, "status"), 200);
    cr_expect_eq(json_int_at(json_object_array_get_idx(calls, 12), "status"), 429);
    c = json_object_array_get_idx(calls, 13);
    cr_expect_str_eq(json_str_at(c, "op"), "current");
    c = json_object_array_get_idx(calls, 19);
    cr_expect_eq(json_int_at(c, "t"), NOW + 3600);
    cr_expect_str_eq(json_str_at(c, "serial"), "5820D101");

    struct json_object *totals = json_at(json_at(st, "totals"), LOGIN);
    cr_expect_eq(json_int_at(totals, "alert"), 19);
    cr_expect_eq(json_int_at(totals, "current"), 1);
    cr_expect_eq(json_int_at(json_at(json_at(st, "totals"), "num00001"), "alert"), 0);
    cr_expect_eq(json_int_at(st, "rejected_429"), 1);
    cr_expect_eq(json_int_at(json_at(st, "max_alert_calls_per_hour"), LOGIN), 12);
    cr_expect_eq(json_int_at(json_at(st, "max_alert_calls_per_hour"), "num00001"), 0);
    json_object_put(st);

    /* one second less than an hour apart, 6 + 6 calls share a window */
    sim_advance(&sim, 3599);
    for (int i = 0; i < 6; i++) {
        call(&r, "alert", CREDS, FREEZER);
        cr_expect_eq(r.status, 200);
        http_reply_free(&r);
    }
    st = sim_stats(&sim);
    cr_expect_eq(json_int_at(json_at(st, "max_alert_calls_per_hour"), LOGIN), 12);
    json_object_put(st);
    /* Moving the clock back lets a call through (the limiter only looks at
     * (now - 3600, now]); the statistic does not trust the limiter and
     * reports the 13 calls that now lie in (NOW+3599, NOW+7199]. */
    sim_advance(&sim, -1800);
    call(&r, "alert", CREDS, FREEZER);
    cr_expect_eq(r.status, 200, "window (now-3600, now] holds 6 calls");
    http_reply_free(&r);
    st = sim_stats(&sim);
    cr_expect_eq(json_int_at(json_at(st, "max_alert_calls_per_hour"), LOGIN), 13);
    json_object_put(st);
}

Test(sim, stats_max_per_hour_counts_calls_less_than_an_hour_apart)
{
    struct http_reply r;
    for (int i = 0; i < 5; i++) {
        call(&r, "alert", CREDS, FREEZER);
        http_reply_free(&r);
    }
    sim_advance(&sim, 3599);
    for (int i = 0; i < 3; i++) {
        call(&r, "alert", CREDS, FREEZER);
        http_reply_free(&r);
    }
    struct json_object *st = sim_stats(&sim);
    cr_expect_eq(json_int_at(json_at(st, "max_alert_calls_per_hour"), LOGIN), 8);
    json_object_put(st);
    /* 7 more at NOW+3600 share a window with the 3 (10), not with the 5 */
    sim_advance(&sim, 1);
    for (int i = 0; i < 7; i++) {
        call(&r, "alert", CREDS, FREEZER);
        cr_expect_eq(r.status, 200);
        http_reply_free(&r);
    }
    st = sim_stats(&sim);
    cr_expect_eq(json_int_at(json_at(st, "max_alert_calls_per_hour"), LOGIN), 10,
                 "calls exactly 3600 s apart are in different windows");
    json_object_put(st);
}

/* ---- the program ------------------------------------------------------- */

Test(sim, prints_where_it_listens)
{
    char *out = proc_stdout(&sim.proc);
    char want[64];
    snprintf(want, sizeof want, "wsrelay-sim listening on http://127.0.0.1:%d\n", sim.port);
    cr_expect_str_eq(out, want);
    free(out);
}

static void expect_bad_scenario(const char *text, const char *needle)
{
    char *path = xasprintf("%s/bad.json", dir);
    write_file(path, text);
    char *argv[] = {(char *)WSRELAY_SIM_BIN, (char *)"--scenario", path, NULL};
    char *err = NULL;
    int status = run_cmd(NULL, &err, 10, argv, NULL);
    cr_expect_eq(status, 2, "scenario %s: status %d", text, status);
    char *prefix = xasprintf("%s: ", path);
    cr_expect(strncmp(err, prefix, strlen(prefix)) == 0, "stderr: %s", err);
    cr_expect(strstr(err, needle), "want '%s' in: %s", needle, err);
    free(prefix);
    free(err);
    free(path);
}

Test(sim, refuses_bad_scenarios_with_status_2)
{
    expect_bad_scenario("{\"accounts\":[", "line 1");
    expect_bad_scenario("{\"accounts\":[]}", "accounts");
    expect_bad_scenario("{\"accounts\":[{\"api_key\":\"a\",\"login_id\":\"b\"}]}", "login_pass");
    expect_bad_scenario("{\"accounts\":[{\"api_key\":\"a\",\"login_id\":\"b\",\"login_pass\":\"c\","
                        "\"devices\":[{\"serial\":\"x\",\"seriall\":\"y\"}]}]}",
                        "accounts[0].devices[0]: unknown key 'seriall'");
    expect_bad_scenario("{\"accounts\":[{\"api_key\":\"a\",\"login_id\":\"b\",\"login_pass\":\"c\","
                        "\"dialect\":\"xml\"}]}",
                        "dialect");
    expect_bad_scenario("{\"accounts\":[{\"api_key\":\"a\",\"login_id\":\"b\",\"login_pass\":\"c\","
                        "\"devices\":[{\"serial\":\"x\",\"alerts\":[{\"ch1\":\"t\"}]}]}]}",
                        "alerts[0]: 'unixtime' is required");

    char *missing = xasprintf("%s/missing.json", dir);
    char *argv[] = {(char *)WSRELAY_SIM_BIN, (char *)"--scenario", missing, NULL};
    char *err = NULL;
    cr_expect_eq(run_cmd(NULL, &err, 10, argv, NULL), 2);
    cr_expect(strncmp(err, missing, strlen(missing)) == 0, "stderr: %s", err);
    free(err);
    free(missing);
}

Test(sim, demo_scenario_serves_its_story)
{
    struct sim demo;
    sim_start(&demo, WSRELAY_SOURCE_DIR "/tests/sim/scenarios/demo.json", dir);
    char *url = xasprintf("%s/v1/devices/current", demo.base_url);
    char *const headers[] = {(char *)"X-HTTP-Method-Override: GET", NULL};
    const char *creds = "{\"api-key\":\"DEMO-API-KEY-0000000000000000000000000000000\","
                        "\"login-id\":\"demo0001\",\"login-pass\":\"demo-pass\"}";
    struct http_reply r;
    cr_assert_eq(http_request(&r, "POST", url, "application/json", creds, headers), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *o = parse(&r);
    struct json_object *devs = json_at(o, "devices");
    cr_expect_eq(json_object_array_length(devs), 4);
    cr_expect(strstr(r.body, "冷蔵庫 2F"), "%s", r.body);
    json_object_put(o);
    http_reply_free(&r);
    free(url);
    sim_stop(&demo);
}

/* ---- the webhook sink ------------------------------------------------------ */

Test(sim, hooksink_records_requests_and_answers_the_set_status)
{
    struct hooksink *h = hooksink_start();
    const char *url = hooksink_url(h);
    cr_assert(strncmp(url, "http://127.0.0.1:", 17) == 0, "%s", url);
    char *const headers[] = {(char *)"Authorization: Bearer t0ken", NULL};
    struct http_reply r;
    cr_assert_eq(
        http_request(&r, "POST", url, "application/json", "{\"text\":\"冷蔵庫\"}", headers), 0);
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "ok");
    http_reply_free(&r);

    hooksink_set_status(h, 500);
    cr_assert_eq(http_request(&r, "PUT", url, NULL, "second", NULL), 0);
    cr_expect_eq(r.status, 500);
    http_reply_free(&r);

    cr_assert_eq(hooksink_wait(h, 2, 1000), 2);
    struct hook_request *q = hooksink_request(h, 0);
    cr_assert(q);
    cr_expect_str_eq(q->method, "POST");
    cr_expect_str_eq(q->path, "/hook");
    cr_expect_str_eq(q->content_type, "application/json");
    cr_expect_str_eq(q->body, "{\"text\":\"冷蔵庫\"}");
    cr_expect_str_eq(q->authorization, "Bearer t0ken");
    hook_request_free(q);
    q = hooksink_request(h, 1);
    cr_assert(q);
    cr_expect_str_eq(q->method, "PUT");
    cr_expect_null(q->content_type);
    cr_expect_null(q->authorization);
    cr_expect_str_eq(q->body, "second");
    hook_request_free(q);
    cr_expect_null(hooksink_request(h, 2));

    hooksink_clear(h);
    cr_expect_eq(hooksink_count(h), 0);
    hooksink_stop(h);
}

Test(sim, hooksink_plays_scripted_replies_in_order_then_the_set_status)
{
    struct hooksink *h = hooksink_start();
    const char *url = hooksink_url(h);
    hooksink_push_reply(h, 429, "rate_limited", 7);
    hooksink_push_reply(h, 400, "invalid_payload", 0);
    hooksink_push_reply(h, 202, NULL, 0); /* left over: freed by stop */
    struct http_reply r;
    cr_assert_eq(http_request(&r, "POST", url, "application/json", "{}", NULL), 0);
    cr_expect_eq(r.status, 429);
    cr_expect_str_eq(r.body, "rate_limited");
    cr_expect_str_eq(http_header(&r, "Retry-After"), "7");
    http_reply_free(&r);
    cr_assert_eq(http_request(&r, "POST", url, "application/json", "{}", NULL), 0);
    cr_expect_eq(r.status, 400);
    cr_expect_str_eq(r.body, "invalid_payload");
    cr_expect_null(http_header(&r, "Retry-After"));
    http_reply_free(&r);
    hooksink_stop(h);

    h = hooksink_start();
    hooksink_push_reply(h, 202, NULL, 0);
    cr_assert_eq(http_request(&r, "POST", hooksink_url(h), NULL, "x", NULL), 0);
    cr_expect_eq(r.status, 202);
    cr_expect_str_eq(r.body, "error", "the default text for a status other than 200");
    http_reply_free(&r);
    cr_assert_eq(http_request(&r, "POST", hooksink_url(h), NULL, "x", NULL), 0);
    cr_expect_eq(r.status, 200, "script used up: the set status again");
    http_reply_free(&r);
    struct hook_request *a = hooksink_request(h, 0), *b = hooksink_request(h, 1);
    cr_expect_gt(a->at, 0);
    cr_expect_geq(b->at, a->at, "arrival times in order");
    hook_request_free(a);
    hook_request_free(b);
    hooksink_stop(h);
}

/* ---- readings that change over time, entries logged late ----------------- */

/* Another world: 5214R001 (two channels, battery 5) uploads three readings;
 * 5214R002 (one channel) has none until a test posts some; 5214L001 has an
 * alert log where some entries are logged after they happened; 5214P001 is
 * a plain device as in the first world. */
static char *timed_scenario_text(void)
{
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"now\":%lld,\"accounts\":[{\"api_key\":\"%s\",\"login_id\":\"%s\","
               "\"login_pass\":\"%s\",\"devices\":[",
               NOW, KEY, LOGIN, PASS);
    buf_printf(&b,
               "{\"serial\":\"5214R001\",\"battery\":5,\"channels\":[{\"name\":\"Temperature\","
               "\"unit\":\"°C\",\"value\":\"-80.0\"},{\"name\":\"Humidity\",\"unit\":\"%%\","
               "\"value\":\"40\"}],\"readings\":["
               "{\"at\":%lld,\"unixtime\":%lld,\"values\":[\"-79.5\",\"45.0\"]},"
               "{\"at\":%lld,\"unixtime\":%lld,\"values\":[\"-70.1\",\"Sensor Error\"],"
               "\"battery\":2},"
               "{\"at\":%lld,\"values\":[\"-78.2\",44]}]},",
               NOW + 60, NOW + 30, NOW + 120, NOW + 100, NOW + 300);
    buf_puts(&b, "{\"serial\":\"5214R002\",\"battery\":4,\"channels\":[{\"name\":\"T\","
                 "\"unit\":\"°C\",\"value\":\"5.0\"}]},");
    buf_puts(&b, "{\"serial\":\"5214L001\",\"alerts\":[");
    /* 22 entries logged when they happened: NOW-2200 ... NOW-100 */
    for (int k = 22; k >= 1; k--)
        buf_printf(&b, "{\"unixtime\":%lld,\"ch1\":\"on time %d\"},", NOW - 100LL * k, k);
    /* 3 newer ones the platform logs 10 minutes from now */
    for (int k = 5; k >= 3; k--)
        buf_printf(&b, "{\"unixtime\":%lld,\"logged_at\":%lld,\"ch1\":\"late %d\"}%s",
                   NOW - 10LL * k, NOW + 600, k, k > 3 ? "," : "");
    buf_puts(&b, "]},");
    buf_puts(&b, "{\"serial\":\"5214P001\",\"battery\":3,\"channels\":[{\"name\":\"T\","
                 "\"unit\":\"°C\",\"value\":\"21.5\"}]}]}]}");
    return buf_steal(&b);
}

static void timed_setup(void)
{
    dir = test_tmpdir();
    char *path = xasprintf("%s/scenario.json", dir);
    char *text = timed_scenario_text();
    write_file(path, text);
    sim_start(&sim, path, dir);
    free(text);
    free(path);
}

TestSuite(sim_timed, .init = timed_setup, .fini = teardown, .timeout = 30);

/* What Get Current Readings says of `serial` now: "unixtime battery v1 v2 ...". */
static char *current_of(const char *serial)
{
    struct http_reply r;
    char *fields = xasprintf("\"remote-serial\":[\"%s\"]", serial);
    call(&r, "current", CREDS, fields);
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *o = parse(&r);
    struct json_object *devs = json_at(o, "devices");
    cr_assert_eq(json_object_array_length(devs), 1, "%s", r.body);
    struct json_object *d = json_object_array_get_idx(devs, 0);
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b, "%s %s", json_str_at(d, "unixtime"), json_str_at(d, "battery"));
    struct json_object *chs = json_at(d, "channel");
    for (size_t i = 0; i < json_object_array_length(chs); i++)
        buf_printf(&b, " %s", json_str_at(json_object_array_get_idx(chs, i), "value"));
    json_object_put(o);
    http_reply_free(&r);
    free(fields);
    return buf_steal(&b);
}

static void expect_current(const char *serial, const char *want)
{
    char *got = current_of(serial);
    cr_expect_str_eq(got, want, "%s at %lld: got '%s', want '%s'", serial, sim_clock(&sim), got,
                     want);
    free(got);
}

/* The ch1 texts of 5214L001's alert log now, newest first, joined by '|'. */
static char *log_of_l001(void)
{
    struct http_reply r;
    call(&r, "alert", CREDS, "\"remote-serial\":\"5214L001\",\"base-serial\":\"5214L001\"");
    cr_assert_eq(r.status, 200, "%s", r.body);
    struct json_object *o = parse(&r);
    struct json_object *logs = json_at(o, "alert-logs");
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < json_object_array_length(logs); i++)
        buf_printf(&b, "%s%s", i ? "|" : "",
                   json_str_at(json_object_array_get_idx(logs, i), "ch1"));
    json_object_put(o);
    http_reply_free(&r);
    return buf_steal(&b);
}

Test(sim_timed, readings_serve_the_latest_upload_and_the_static_fields_before)
{
    /* before the first upload: the static fields, unixtime = now */
    expect_current("5214R001", "1795000000 5 -80.0 40");
    sim_set_clock(&sim, NOW + 59);
    expect_current("5214R001", "1795000059 5 -80.0 40");
    /* from `at` on: the measurement's time and values; the battery stays */
    sim_set_clock(&sim, NOW + 60);
    expect_current("5214R001", "1795000030 5 -79.5 45.0");
    sim_set_clock(&sim, NOW + 119);
    expect_current("5214R001", "1795000030 5 -79.5 45.0");
    /* an error value and a battery of its own */
    sim_set_clock(&sim, NOW + 120);
    expect_current("5214R001", "1795000100 2 -70.1 Sensor Error");
    sim_set_clock(&sim, NOW + 299);
    expect_current("5214R001", "1795000100 2 -70.1 Sensor Error");
    /* unixtime defaults to at; without a battery of its own, the device's */
    sim_set_clock(&sim, NOW + 300);
    expect_current("5214R001", "1795000300 5 -78.2 44");
    sim_set_clock(&sim, NOW + 86400);
    expect_current("5214R001", "1795000300 5 -78.2 44");
    /* the clock may go back: the reading of that time again */
    sim_set_clock(&sim, NOW + 61);
    expect_current("5214R001", "1795000030 5 -79.5 45.0");
    /* channel names and units stay */
    struct http_reply r;
    call(&r, "current", CREDS, "\"remote-serial\":[\"5214R001\"]");
    cr_expect(strstr(r.body, "\"name\":\"Humidity\",\"value\":\"45.0\",\"unit\":\"%\""), "%s",
              r.body);
    http_reply_free(&r);
}

Test(sim_timed, device_without_readings_is_unchanged)
{
    expect_current("5214P001", "1795000000 3 21.5");
    sim_set_clock(&sim, NOW + 400);
    expect_current("5214P001", "1795000400 3 21.5");
}

Test(sim_timed, entries_are_served_from_logged_at_on)
{
    /* now: the 20 newest of the 22 entries already logged; the 3 late ones hidden */
    char *got = log_of_l001();
    struct buf want;
    buf_init(&want, 0);
    for (int k = 1; k <= 20; k++)
        buf_printf(&want, "%son time %d", k > 1 ? "|" : "", k);
    cr_expect_str_eq(got, buf_str(&want));
    free(got);
    sim_set_clock(&sim, NOW + 599);
    got = log_of_l001();
    cr_expect_str_eq(got, buf_str(&want), "hidden until logged_at");
    free(got);
    buf_free(&want);

    /* once logged, they take their place by unixtime and push 3 out */
    sim_set_clock(&sim, NOW + 600);
    got = log_of_l001();
    buf_init(&want, 0);
    buf_puts(&want, "late 3|late 4|late 5");
    for (int k = 1; k <= 17; k++)
        buf_printf(&want, "|on time %d", k);
    cr_expect_str_eq(got, buf_str(&want));
    free(got);
    buf_free(&want);
}

Test(sim_timed, control_adds_an_entry_logged_later)
{
    sim_add_alert(&sim, "5214P001",
                  "{\"unixtime\":1795000010,\"logged_at\":1795000070,"
                  "\"ch1\":\"CH1 Upper Limit Exceeded 30.0°C (limit 25.0°C)\"}");
    struct http_reply r;
    const char *fields = "\"remote-serial\":\"5214P001\",\"base-serial\":\"5214P001\"";
    sim_set_clock(&sim, NOW + 69);
    call(&r, "alert", CREDS, fields);
    cr_expect(strstr(r.body, "\"alert-logs\":[]"), "%s", r.body);
    http_reply_free(&r);
    sim_set_clock(&sim, NOW + 70);
    call(&r, "alert", CREDS, fields);
    cr_expect(strstr(r.body, "\"alert-logs\":[{\"unixtime\":\"1795000010\",\"ch1\":\"CH1 Upper "
                             "Limit Exceeded 30.0°C (limit 25.0°C)\"}]"),
              "%s", r.body);
    http_reply_free(&r);

    /* logged before it happened: refused */
    char *url = xasprintf("%s/_sim/alerts", sim.base_url);
    cr_assert_eq(http_request(&r, "POST", url, "application/json",
                              "{\"serial\":\"5214P001\",\"alert\":{\"unixtime\":100,"
                              "\"logged_at\":99,\"ch1\":\"x\"}}",
                              NULL),
                 0);
    char *msg = expect_error(&r, 400);
    cr_expect(strstr(msg, "'logged_at' (99) lies before 'unixtime' (100)"), "%s", msg);
    free(msg);
    http_reply_free(&r);
    free(url);
}

/* POSTs `body` to /_sim/readings; returns the status, and the message of an
 * error reply in *msg (a copy; NULL for 200). */
static long post_reading(const char *body, char **msg)
{
    char *url = xasprintf("%s/_sim/readings", sim.base_url);
    struct http_reply r;
    cr_assert_eq(http_request(&r, "POST", url, "application/json", body, NULL), 0);
    long status = r.status;
    *msg = NULL;
    if (status == 200)
        cr_expect_str_eq(r.body, "{\"added\":true}");
    else
        *msg = expect_error(&r, status);
    http_reply_free(&r);
    free(url);
    return status;
}

Test(sim_timed, control_appends_readings)
{
    char *msg;
    cr_assert_eq(post_reading("{\"serial\":\"5214R002\",\"reading\":{\"at\":1795000010,"
                              "\"values\":[\"3.5\"],\"battery\":3}}",
                              &msg),
                 200, "%s", msg);
    expect_current("5214R002", "1795000000 4 5.0");
    sim_set_clock(&sim, NOW + 10);
    expect_current("5214R002", "1795000010 3 3.5");

    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"{\"serial\":\"00000000\",\"reading\":{\"at\":1795000020,\"values\":[\"1\"]}}",
         "no device has serial '00000000'"},
        {"{\"serial\":\"5214R002\"}", "give \"serial\" (a string) and \"reading\" (an object)"},
        {"{\"serial\":\"5214R002\",\"reading\":[]}", "reading: must be an object"},
        {"{\"serial\":\"5214R002\",\"reading\":{\"values\":[\"1\"]}}", "reading: 'at' is required"},
        {"{\"serial\":\"5214R002\",\"reading\":{\"at\":1795000020}}",
         "reading: 'values' is required"},
        {"{\"serial\":\"5214R002\",\"reading\":{\"at\":1795000020,\"values\":[\"1\",\"2\"]}}",
         "reading: 'values' has 2 values for 1 channels"},
        {"{\"serial\":\"5214R002\",\"reading\":{\"at\":1795000020,\"values\":[{}]}}",
         "reading: values[0] must be a string or a number"},
        {"{\"serial\":\"5214R002\",\"reading\":{\"at\":1795000020,\"values\":[\"1\"],"
         "\"batery\":2}}",
         "reading: unknown key 'batery'"},
        {"{\"serial\":\"5214R002\",\"reading\":{\"at\":1795000009,\"values\":[\"1\"]}}",
         "reading: 'at' (1795000009) lies before the last reading of '5214R002' (1795000010)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(post_reading(bad[i].body, &msg), 400, "%s", bad[i].body);
        cr_expect(msg && strcmp(msg, bad[i].msg) == 0, "%s: got '%s', want '%s'", bad[i].body, msg,
                  bad[i].msg);
        free(msg);
    }
    /* nothing of that was added */
    expect_current("5214R002", "1795000010 3 3.5");

    /* the same `at` is not going back: the later one wins; without a
     * battery of its own, the device's */
    cr_expect_eq(post_reading("{\"serial\":\"5214R002\",\"reading\":{\"at\":1795000010,"
                              "\"unixtime\":1795000005,\"values\":[-1.5]}}",
                              &msg),
                 200);
    free(msg);
    expect_current("5214R002", "1795000005 4 -1.5");
    /* appended after the scenario's own readings */
    cr_expect_eq(post_reading("{\"serial\":\"5214R001\",\"reading\":{\"at\":1795000400,"
                              "\"values\":[\"-60.0\",\"50\"]}}",
                              &msg),
                 200);
    free(msg);
    sim_set_clock(&sim, NOW + 399);
    expect_current("5214R001", "1795000300 5 -78.2 44");
    sim_set_clock(&sim, NOW + 400);
    expect_current("5214R001", "1795000400 5 -60.0 50");
}

Test(sim_timed, refuses_bad_readings_in_scenarios)
{
    const char *head = "{\"accounts\":[{\"api_key\":\"a\",\"login_id\":\"b\",\"login_pass\":\"c\","
                       "\"devices\":[{\"serial\":\"x\",\"channels\":[{\"value\":\"1\"}],";
    char *text = xasprintf("%s\"readings\":[{\"at\":5,\"values\":[\"1\"],\"value\":1}]}]}]}", head);
    expect_bad_scenario(text, "accounts[0].devices[0].readings[0]: unknown key 'value'");
    free(text);
    text = xasprintf(
        "%s\"readings\":[{\"at\":5,\"values\":[\"1\"]},{\"at\":4,\"values\":[\"2\"]}]}]}]}", head);
    expect_bad_scenario(text, "accounts[0].devices[0].readings[1]: 'at' (4) lies before the "
                              "previous reading's (5)");
    free(text);
    text = xasprintf("%s\"readings\":[{\"at\":5,\"values\":[]}]}]}]}", head);
    expect_bad_scenario(text, "readings[0]: 'values' has 0 values for 1 channels");
    free(text);
    text =
        xasprintf("%s\"readings\":[{\"at\":5,\"unixtime\":\"4\",\"values\":[\"1\"]}]}]}]}", head);
    expect_bad_scenario(text, "readings[0]: 'unixtime' must be an integer");
    free(text);
    text = xasprintf("%s\"alerts\":[{\"unixtime\":5,\"logged_at\":4,\"ch1\":\"t\"}]}]}]}", head);
    expect_bad_scenario(text, "alerts[0]: 'logged_at' (4) lies before 'unixtime' (5)");
    free(text);
}
