/* The look-up commands against the simulator: `wsrelay current`,
 * `wsrelay readings` and `wsrelay alerts`, their tables (Japanese names
 * lined up by display width), CSV and JSON, the operation each one calls,
 * the ledger that records every call, and the refusals of a spent or
 * blocked budget. */
#include "jsonpath.h"
#include "platform.h"
#include "proc.h"
#include "relay.h"
#include "state.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define T0 1795000000LL /* 2026-11-18 11:06:40 UTC, 20:06:40 on the devices' clocks */

static struct relay R;

/* 5279B002, standalone, named in Japanese, with two channels, the second
 * an error value now; readings 20, 10 and 2 minutes ago (data-ids 100 to
 * 102) and an alert log. 5214000A, standalone, whose last reading is an
 * hour old. 5820D101, a remote unit under base unit 5893C000, with
 * readings 15, 10 and 5 minutes ago whose data-ids wrap. */
static const char devices[] =
    "{\"serial\": \"5279B002\", \"model\": \"TR-72wb\", \"name\": \"冷蔵庫 2F\", "
    " \"time_diff\": 540, \"battery\": 4, \"data_id\": 100,"
    " \"channels\": [{\"name\": \"温度\", \"unit\": \"°C\", \"value\": \"-18.5\"},"
    "                {\"name\": \"湿度\", \"unit\": \"%\", \"value\": \"Sensor Error\"}],"
    " \"readings\": ["
    "   {\"at\": 1794998820, \"unixtime\": 1794998800, \"values\": [\"-18.9\", \"45\"]},"
    "   {\"at\": 1794999420, \"unixtime\": 1794999400, \"values\": [\"-18.7\", \"E-001\"]},"
    "   {\"at\": 1794999900, \"unixtime\": 1794999880, \"values\": [\"-18.5\", \"Sensor Error\"]}],"
    " \"alerts\": ["
    "   {\"unixtime\": 1794998500, \"ch1\": \"CH1 上限値警報 -10.2℃ (上限 -15.0℃)\"},"
    "   {\"unixtime\": 1794999100, \"ch1\": \"CH1 正常復帰 -18.0℃\","
    "    \"ch2\": \"CH2 Sensor Error\"},"
    "   {\"unixtime\": 1794999700, \"battery-level\": \"Low Battery Warning\"}]},"
    "{\"serial\": \"5214000A\", \"model\": \"TR-71wb\", \"name\": \"Freezer A\","
    " \"time_diff\": 540, \"battery\": 5,"
    " \"channels\": [{\"name\": \"Temperature\", \"unit\": \"°C\", \"value\": \"-79.8\"}],"
    " \"readings\": [{\"at\": 1794996400, \"values\": [\"-79.8\"]}]},"
    "{\"serial\": \"5820D101\", \"model\": \"RTR501B\", \"name\": \"Cold Room 1\", \"num\": 1,"
    " \"base\": {\"serial\": \"5893C000\", \"model\": \"RTR500BW\", \"name\": \"Base 1\"},"
    " \"time_diff\": 540, \"battery\": 5, \"rssi\": \"4\", \"data_id\": 65534,"
    " \"channels\": [{\"name\": \"Temperature\", \"unit\": \"°C\", \"value\": \"7.6\"}],"
    " \"readings\": ["
    "   {\"at\": 1794999100, \"values\": [\"7.5\"]},"
    "   {\"at\": 1794999400, \"values\": [\"7.8\"]},"
    "   {\"at\": 1794999700, \"values\": [\"7.6\"]}]}";

static void setup(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_puts(&b, devices);
    buf_puts(&b, "]}]}");
    relay_start(&R, buf_str(&b));
    chmod(R.config_path, 0600); /* no warning about a config open to others */
    buf_free(&b);
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(lookup, .init = setup, .fini = teardown, .timeout = 120);

struct out {
    int status;
    char *text;
    char *err;
};

static void out_free(struct out *o)
{
    free(o->text);
    free(o->err);
}

/* `wsrelay -c CONFIG ARGS... --now WHEN`; no secret may appear in what it
 * prints. */
static struct out wsrelay_v(long long when, const char *arg, va_list ap)
{
    char now[32];
    const char *argv[24] = {WSRELAY_BIN, "-c", R.config_path};
    size_t n = 3;
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        cr_assert_lt(n, 20);
        argv[n++] = a;
    }
    snprintf(now, sizeof now, "%lld", when);
    argv[n++] = "--now";
    argv[n++] = now;
    argv[n] = NULL;
    struct out o;
    o.status = run_cmd(&o.text, &o.err, 60, (char *const *)argv, NULL);
    cr_assert_null(strstr(o.text, RELAY_API_KEY));
    cr_assert_null(strstr(o.err, RELAY_API_KEY));
    cr_assert_null(strstr(o.err, "ss\\word"));
    return o;
}

/* wsrelay_v at T0, ARGS ending with NULL. */
static struct out wsrelay(const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    struct out o = wsrelay_v(T0, arg, ap);
    va_end(ap);
    return o;
}

static struct out wsrelay_at(long long when, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    struct out o = wsrelay_v(when, arg, ap);
    va_end(ap);
    return o;
}

/* The operations the simulator was called with, in order: "current
 * latest-data". */
static char *sim_ops(void)
{
    struct json_object *stats = sim_stats(&R.sim), *calls, *op;
    struct buf b;
    buf_init(&b, 0);
    cr_assert(json_object_object_get_ex(stats, "calls", &calls));
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        cr_assert(json_object_object_get_ex(json_object_array_get_idx(calls, i), "op", &op));
        buf_printf(&b, "%s%s", i ? " " : "", json_object_get_string(op));
    }
    json_object_put(stats);
    return buf_steal(&b);
}

static void expect_ops(const char *want)
{
    char *ops = sim_ops();
    cr_expect_str_eq(ops, want);
    free(ops);
}

/* Calls of `op` the state's ledger holds for the test's login. */
static size_t ledger(enum platform_op op)
{
    struct state *st = NULL;
    struct err e;
    cr_assert_eq(state_peek(&st, R.state_path, &e), 0, "%s", e.msg);
    size_t n = state_calls_since(st, RELAY_LOGIN, op, 0);
    state_close(st);
    return n;
}

/* Records `n` calls of `op` at T0 - 60 in the ledger, as runs would have. */
static void spend(enum platform_op op, int n)
{
    struct state *st = NULL;
    struct err e;
    cr_assert_eq(state_open(&st, R.state_path, 5, &e), 0, "%s", e.msg);
    for (int i = 0; i < n; i++)
        state_record_call(st, RELAY_LOGIN, op, T0 - 60);
    cr_assert_geq(state_save(st, &e), 0, "%s", e.msg);
    state_close(st);
}

static void block(enum platform_op op, long long until)
{
    struct state *st = NULL;
    struct err e;
    cr_assert_eq(state_open(&st, R.state_path, 5, &e), 0, "%s", e.msg);
    state_block(st, RELAY_LOGIN, op, until);
    cr_assert_geq(state_save(st, &e), 0, "%s", e.msg);
    state_close(st);
}

/* The device list a discovery would have left in the state. */
static void discovered(void)
{
    struct state *st = NULL;
    struct err e;
    struct state_device devs[] = {
        {.serial = (char *)"5279B002", .base = (char *)"5279B002"},
        {.serial = (char *)"5214000A", .base = (char *)"5214000A"},
        {.serial = (char *)"5820D101", .base = (char *)"5893C000"},
    };
    cr_assert_eq(state_open(&st, R.state_path, 5, &e), 0, "%s", e.msg);
    state_set_devices(st, "lab", devs, 3, T0 - 600);
    state_set_discovered(st, "lab", T0 - 600);
    cr_assert_geq(state_save(st, &e), 0, "%s", e.msg);
    state_close(st);
}

static struct json_object *parse(const struct out *o)
{
    struct json_object *j = json_tokener_parse(o->text);
    cr_assert_not_null(j, "not JSON:\n%s", o->text);
    return j;
}

/* ---- current ---- */

Test(lookup, current_lines_up_japanese_names_by_display_width)
{
    struct out o = wsrelay("current", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.err, "");
    cr_expect_str_eq(o.text,
                     "account lab, login tbzz9999: 3 devices\n"
                     "SERIAL    NAME         MODEL    CH1       CH2           BATTERY  SIGNAL  "
                     "LAST READING\n"
                     "5279B002  冷蔵庫 2F    TR-72wb  -18.5 °C  Sensor Error        4          "
                     "2 min ago\n"
                     "5214000A  Freezer A    TR-71wb  -79.8 °C                      5          "
                     "60 min ago (stale)\n"
                     "5820D101  Cold Room 1  RTR501B  7.6 °C                        5       4  "
                     "5 min ago\n");
    expect_ops("current");
    cr_expect_eq(ledger(PLATFORM_CURRENT), 1);
    out_free(&o);
}

Test(lookup, current_as_json)
{
    struct out o = wsrelay("current", "--json", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    struct json_object *j = parse(&o);
    cr_assert(json_object_is_type(j, json_type_array));
    cr_assert_eq(json_object_array_length(j), 3);
    cr_expect_str_eq(json_str_at(j, "0.account"), "lab");
    cr_expect_str_eq(json_str_at(j, "0.serial"), "5279B002");
    cr_expect_str_eq(json_str_at(j, "0.name"), "冷蔵庫 2F");
    cr_expect_str_eq(json_str_at(j, "0.channels.0.name"), "温度");
    cr_expect_str_eq(json_str_at(j, "0.channels.0.value"), "-18.5");
    cr_expect_str_eq(json_str_at(j, "0.channels.0.unit"), "°C");
    cr_expect_eq(json_int_at(j, "0.channels.1.num"), 2);
    cr_expect_str_eq(json_str_at(j, "0.channels.1.value"), "Sensor Error");
    cr_expect_eq(json_int_at(j, "0.battery"), 4);
    cr_expect_str_eq(json_str_at(j, "0.rssi"), "");
    cr_expect_eq(json_int_at(j, "0.unixtime"), 1794999880);
    cr_expect_str_eq(json_str_at(j, "0.local_time"), "2026-11-18 20:04:40");
    cr_expect_eq(json_int_at(j, "0.utc_offset"), 540);
    cr_expect_eq(json_int_at(j, "0.age"), 120);
    cr_expect_not(json_object_get_boolean(json_at(j, "0.stale")));
    cr_expect(json_object_get_boolean(json_at(j, "1.stale")));
    cr_expect_str_eq(json_str_at(j, "2.base_serial"), "5893C000");
    cr_expect_str_eq(json_str_at(j, "2.base_name"), "Base 1");
    cr_expect_str_eq(json_str_at(j, "2.rssi"), "4");
    json_object_put(j);
    out_free(&o);
}

/* What the readings memory of runs with signals knows of a device's
 * usual interval between readings. */
static void usual_gap(const char *serial, long gap)
{
    struct state *st = NULL;
    struct err e;
    struct watch w = {.unixtime = T0 - 600, .seen_at = T0 - 600, .n_gaps = 3};
    w.gaps[0] = w.gaps[1] = w.gaps[2] = gap;
    cr_assert_eq(state_open(&st, R.state_path, 5, &e), 0, "%s", e.msg);
    state_set_watch(st, serial, &w);
    cr_assert_geq(state_save(st, &e), 0, "%s", e.msg);
    state_close(st);
}

/* Stale: older than twice the usual interval, never sooner than 10
 * minutes; 30 minutes when the interval is not known. */
Test(lookup, current_marks_stale_readings_by_the_usual_interval)
{
    usual_gap("5820D101", 300);  /* every 5 minutes: stale after 10 */
    usual_gap("5214000A", 7200); /* every 2 hours: stale after 4 */
    struct out o = wsrelay_at(T0 + 900, "current", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect(strstr(o.text, "  17 min ago\n"), "%s", o.text);
    cr_expect(strstr(o.text, "  75 min ago\n"), "%s", o.text);
    cr_expect(strstr(o.text, "  20 min ago (stale)\n"), "%s", o.text);
    out_free(&o);
    /* Nine days on, in days and hours, not "13157 min ago". */
    o = wsrelay_at(T0 + 13157 * 60 - 300, "current", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect(strstr(o.text, "  9 d 3 h ago (stale)\n"), "%s", o.text);
    out_free(&o);
    o = wsrelay_at(T0 + 1200, "current", "--json", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    struct json_object *j = parse(&o);
    cr_expect_eq(json_int_at(j, "0.age"), 1320);
    cr_expect_not(json_object_get_boolean(json_at(j, "0.stale")));
    cr_expect_not(json_object_get_boolean(json_at(j, "1.stale")));
    cr_expect(json_object_get_boolean(json_at(j, "2.stale")));
    json_object_put(j);
    out_free(&o);
    o = wsrelay_at(T0 + 1700, "current", "--json", NULL);
    j = parse(&o);
    cr_expect(json_object_get_boolean(json_at(j, "0.stale")), "31 min without a known interval");
    json_object_put(j);
    out_free(&o);
}

Test(lookup, current_with_two_accounts_calls_once_for_each)
{
    relay_config(&R,
                 "  - name: lab\n"
                 "    base_url: @BASE_URL@\n"
                 "    api_key: \"${TEST_API_KEY}\"\n"
                 "    login_id: " RELAY_LOGIN "\n"
                 "    login_pass_file: pass.txt\n"
                 "  - name: annex\n"
                 "    base_url: @BASE_URL@\n"
                 "    api_key: \"${TEST_API_KEY}\"\n"
                 "    login_id: " RELAY_LOGIN "\n"
                 "    login_pass_file: pass.txt\n",
                 NULL);
    chmod(R.config_path, 0600);
    struct out o = wsrelay("current", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect(strstr(o.text, "account lab, login tbzz9999: 3 devices\n"), "%s", o.text);
    cr_expect(strstr(o.text, "\n\naccount annex, login tbzz9999: 3 devices\n"), "%s", o.text);
    expect_ops("current current");
    cr_expect_eq(ledger(PLATFORM_CURRENT), 2);
    out_free(&o);
    o = wsrelay("current", "--account", "annex", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect_eq(strncmp(o.text, "account annex,", 14), 0, "%s", o.text);
    cr_expect_null(strstr(o.text, "account lab"));
    cr_expect_eq(ledger(PLATFORM_CURRENT), 3);
    out_free(&o);
}

Test(lookup, current_refuses_when_the_window_is_full_or_blocked)
{
    spend(PLATFORM_CURRENT, 10);
    struct out o = wsrelay("current", NULL);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "wsrelay: current: login tbzz9999 has made 10 of the 10 current "
                            "calls allowed per 2m (the state's ledger); the next is allowed in "
                            "60 s\n"),
              "%s", o.err);
    expect_ops("");
    cr_expect_eq(ledger(PLATFORM_CURRENT), 10);
    out_free(&o);
    relay_forget_state(&R);
    block(PLATFORM_CURRENT, T0 + 30);
    o = wsrelay("current", "--json", NULL);
    cr_expect_eq(o.status, 1);
    cr_expect(strstr(o.err, "login tbzz9999: the platform refused further current calls"), "%s",
              o.err);
    expect_ops("");
    out_free(&o);
}

Test(lookup, unknown_account_is_a_usage_error)
{
    struct out o = wsrelay("current", "--account", "nowhere", NULL);
    cr_expect_eq(o.status, 2);
    cr_expect(strstr(o.err, "wsrelay: current: no account named 'nowhere' in "), "%s", o.err);
    out_free(&o);
    o = wsrelay("readings", "5279B002", "--account", "nowhere", NULL);
    cr_expect_eq(o.status, 2);
    out_free(&o);
    expect_ops("");
}

/* ---- readings ---- */

Test(lookup, readings_latest_of_a_standalone_device)
{
    struct out o = wsrelay("readings", "5279B002", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.err, "");
    cr_expect_str_eq(o.text, "5279B002 冷蔵庫 2F (TR-72wb), account lab: 3 readings "
                             "(latest-data), times UTC+09:00\n"
                             "TIME                     温度          湿度\n"
                             "2026-11-18 19:46:40  -18.9 °C          45 %\n"
                             "2026-11-18 19:56:40  -18.7 °C         E-001\n"
                             "2026-11-18 20:04:40  -18.5 °C  Sensor Error\n");
    /* The state knows no device yet: a current-readings call finds it. */
    expect_ops("current latest-data");
    cr_expect_eq(ledger(PLATFORM_CURRENT), 1);
    cr_expect_eq(ledger(PLATFORM_LATEST), 1);
    out_free(&o);
}

Test(lookup, readings_take_the_base_unit_from_the_state)
{
    discovered();
    struct out o = wsrelay("readings", "5820D101", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.text, "5820D101 Cold Room 1 (RTR501B), account lab: 3 readings "
                             "(latest-data-rtr500), times UTC+09:00\n"
                             "TIME                    ch1\n"
                             "2026-11-18 19:51:40  7.5 °C\n"
                             "2026-11-18 19:56:40  7.8 °C\n"
                             "2026-11-18 20:01:40  7.6 °C\n");
    expect_ops("latest-data-rtr500");
    cr_expect_eq(ledger(PLATFORM_CURRENT), 0);
    cr_expect_eq(ledger(PLATFORM_LATEST_RTR500), 1);
    out_free(&o);
}

Test(lookup, readings_of_a_period_as_csv)
{
    discovered();
    struct out o = wsrelay("readings", "5279B002", "--since", "15m", "--csv", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.text, "time (UTC+09:00),unixtime,data_id,温度 (°C),湿度 (%)\r\n"
                             "2026-11-18 19:56:40,1794999400,101,-18.7,E-001\r\n"
                             "2026-11-18 20:04:40,1794999880,102,-18.5,Sensor Error\r\n");
    expect_ops("data");
    cr_expect_eq(ledger(PLATFORM_DATA), 1);
    out_free(&o);
}

Test(lookup, readings_of_a_period_in_local_time_as_json)
{
    discovered();
    /* 19:56 to 20:01:59 on the device's clock: the readings of 19:56:40
     * and 20:01:40; the device's clock comes from a current reading. */
    struct out o = wsrelay("readings", "5820D101", "--from", "2026-11-18 19:56", "--to",
                           "2026-11-18 20:01", "--json", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    struct json_object *j = parse(&o);
    cr_expect_str_eq(json_str_at(j, "serial"), "5820D101");
    cr_expect_str_eq(json_str_at(j, "base_serial"), "5893C000");
    cr_expect_str_eq(json_str_at(j, "operation"), "data-rtr500");
    cr_expect_eq(json_int_at(j, "utc_offset"), 540);
    cr_expect_eq(json_int_at(j, "channels.0.num"), 1);
    cr_expect_str_eq(json_str_at(j, "channels.0.unit"), "°C");
    cr_assert_eq(json_object_array_length(json_at(j, "readings")), 1, "%s", o.text);
    cr_expect_eq(json_int_at(j, "readings.0.unixtime"), 1794999400);
    cr_expect_str_eq(json_str_at(j, "readings.0.local_time"), "2026-11-18 19:56:40");
    cr_expect_eq(json_int_at(j, "readings.0.data_id"), 65535);
    cr_expect_str_eq(json_str_at(j, "readings.0.values.0"), "7.8");
    json_object_put(j);
    expect_ops("current data-rtr500");
    out_free(&o);
    /* Unix times need no current reading; both ends are included. */
    o = wsrelay("readings", "5820D101", "--from", "1794999400", "--to", "1794999700", "--json",
                NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    j = parse(&o);
    cr_assert_eq(json_object_array_length(json_at(j, "readings")), 2, "%s", o.text);
    cr_expect_eq(json_int_at(j, "readings.1.data_id"), 0);
    json_object_put(j);
    expect_ops("current data-rtr500 data-rtr500");
    out_free(&o);
}

Test(lookup, readings_in_fahrenheit)
{
    discovered();
    struct out o = wsrelay("readings", "5279B002", "--unit", "F", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect(strstr(o.text, "2026-11-18 20:04:40  -1.3 °F  Sensor Error\n"), "%s", o.text);
    cr_expect(strstr(o.text, "2026-11-18 19:46:40  -2.0 °F          45 %\n"), "%s", o.text);
    out_free(&o);
}

Test(lookup, readings_usage_errors)
{
    struct out o = wsrelay("readings", "5279B002", "--since", "1h", "--from", "1794999400", NULL);
    cr_expect_eq(o.status, 2);
    cr_expect(strstr(o.err, "--since cannot be used with --from or --to"), "%s", o.err);
    out_free(&o);
    o = wsrelay("readings", "5279B002", "--from", "yesterday", NULL);
    cr_expect_eq(o.status, 2);
    cr_expect(strstr(o.err, "--from: cannot use 'yesterday'"), "%s", o.err);
    out_free(&o);
    o = wsrelay("readings", "5279B002", "--unit", "K", NULL);
    cr_expect_eq(o.status, 2);
    out_free(&o);
    o = wsrelay("readings", "5279B002", "--csv", "--json", NULL);
    cr_expect_eq(o.status, 2);
    out_free(&o);
    o = wsrelay("readings", "5279B002", "--force", NULL);
    cr_expect_eq(o.status, 2);
    cr_expect(strstr(o.err, "usage: wsrelay readings SERIAL"), "%s", o.err);
    out_free(&o);
    o = wsrelay("readings", "5279B002", "--from", "1794999700", "--to", "1794999400", NULL);
    cr_expect_eq(o.status, 2);
    cr_expect(strstr(o.err, "--from must come before --to"), "%s", o.err);
    out_free(&o);
    expect_ops("");
}

Test(lookup, unknown_serial_exits_2)
{
    struct out o = wsrelay("readings", "5279B009", NULL);
    cr_expect_eq(o.status, 2, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.err, "wsrelay: readings: account lab has no device 5279B009\n");
    cr_expect_str_eq(o.text, "");
    out_free(&o);
    o = wsrelay("alerts", "5279B009", NULL);
    cr_expect_eq(o.status, 2, "%s%s", o.text, o.err);
    out_free(&o);
    o = wsrelay("alerts", "5279-B00", NULL);
    cr_expect_eq(o.status, 2, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "expected a device serial"), "%s", o.err);
    out_free(&o);
    /* Each unknown serial was asked about once; no alert call was made. */
    expect_ops("current current");
}

/* ---- alerts ---- */

Test(lookup, alerts_newest_first_with_the_budget_line)
{
    discovered();
    struct out o = wsrelay("alerts", "5279B002", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.err, "wsrelay: alerts: this spends 1 of the 12 alert calls of login "
                            "tbzz9999 this hour (11 left)\n");
    cr_expect_str_eq(o.text,
                     "5279B002 冷蔵庫 2F (TR-72wb), account lab: 3 alert-log entries, times "
                     "UTC+09:00\n"
                     "TIME                 KIND           STATE         TEXT\n"
                     "2026-11-18 20:01:40  battery-level  battery       Low Battery Warning\n"
                     "2026-11-18 19:51:40  ch2            sensor-error  CH2 Sensor Error\n"
                     "2026-11-18 19:51:40  ch1            recovered     CH1 正常復帰 -18.0℃\n"
                     "2026-11-18 19:41:40  ch1            alarm         CH1 上限値警報 -10.2℃ "
                     "(上限 -15.0℃)\n");
    expect_ops("alert");
    cr_expect_eq(ledger(PLATFORM_ALERT), 1);
    out_free(&o);
}

Test(lookup, alerts_as_json)
{
    discovered();
    struct out o = wsrelay("alerts", "5820D101", "--json", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    struct json_object *j = parse(&o);
    cr_expect_str_eq(json_str_at(j, "serial"), "5820D101");
    cr_expect_str_eq(json_str_at(j, "base_serial"), "5893C000");
    cr_expect_eq(json_object_array_length(json_at(j, "entries")), 0);
    json_object_put(j);
    out_free(&o);
    o = wsrelay("alerts", "5279B002", "--json", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    j = parse(&o);
    cr_expect_str_eq(json_str_at(j, "name"), "冷蔵庫 2F");
    cr_expect_eq(json_int_at(j, "utc_offset"), 540);
    cr_assert_eq(json_object_array_length(json_at(j, "entries")), 4);
    cr_expect_str_eq(json_str_at(j, "entries.0.kind"), "battery-level");
    cr_expect_str_eq(json_str_at(j, "entries.3.kind"), "ch1");
    cr_expect_str_eq(json_str_at(j, "entries.3.state"), "alarm");
    cr_expect_str_eq(json_str_at(j, "entries.3.value"), "-10.2℃");
    cr_expect_str_eq(json_str_at(j, "entries.3.limit"), "-15.0℃");
    cr_expect_eq(json_int_at(j, "entries.3.unixtime"), 1794998500);
    cr_expect_str_eq(json_str_at(j, "entries.3.local_time"), "2026-11-18 19:41:40");
    json_object_put(j);
    expect_ops("alert alert");
    cr_expect_eq(ledger(PLATFORM_ALERT), 2);
    out_free(&o);
}

Test(lookup, alerts_may_take_the_call_kept_for_urgent_looks)
{
    discovered();
    spend(PLATFORM_ALERT, 11);
    struct out o = wsrelay("alerts", "5279B002", NULL);
    cr_assert_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.err, "wsrelay: alerts: this spends 1 of the 12 alert calls of login "
                            "tbzz9999 this hour (0 left)\n");
    cr_expect_eq(ledger(PLATFORM_ALERT), 12);
    out_free(&o);
}

Test(lookup, alerts_refuse_a_spent_budget_unless_forced)
{
    discovered();
    spend(PLATFORM_ALERT, 12);
    struct out o = wsrelay("alerts", "5279B002", NULL);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    cr_expect_str_eq(o.err, "wsrelay: alerts: login tbzz9999 has made 12 of the 12 alert calls "
                            "allowed per 1h (the state's ledger); the next is allowed in 3540 "
                            "s; --force calls anyway\n");
    cr_expect_str_eq(o.text, "");
    expect_ops("");
    cr_expect_eq(ledger(PLATFORM_ALERT), 12);
    out_free(&o);
    o = wsrelay("alerts", "5279B002", "--force", NULL);
    cr_expect_eq(o.status, 0, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "wsrelay: alerts: --force: the ledger counts 12 of the 12 alert "
                            "calls of login tbzz9999 this hour; calling anyway"),
              "%s", o.err);
    cr_expect(strstr(o.text, "CH1 上限値警報"), "%s", o.text);
    expect_ops("alert");
    cr_expect_eq(ledger(PLATFORM_ALERT), 13);
    out_free(&o);
}

Test(lookup, alerts_never_call_an_operation_the_platform_blocked)
{
    discovered();
    block(PLATFORM_ALERT, T0 + 600);
    struct out o = wsrelay("alerts", "5279B002", "--force", NULL);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "the platform refused further alert calls (429 or no call left); "
                            "the ledger blocks them for 600 s more"),
              "%s", o.err);
    expect_ops("");
    cr_expect_eq(ledger(PLATFORM_ALERT), 0);
    out_free(&o);
}

Test(lookup, alerts_fill_the_budget_run_after_run)
{
    discovered();
    for (int i = 0; i < 12; i++) {
        struct out o = wsrelay("alerts", "5214000A", NULL);
        cr_assert_eq(o.status, 0, "call %d: %s%s", i + 1, o.text, o.err);
        out_free(&o);
    }
    cr_expect_eq(ledger(PLATFORM_ALERT), 12);
    /* The twelfth reply said no call is left: the platform's word blocks
     * the operation, --force or not. */
    struct out o = wsrelay("alerts", "5214000A", "--force", NULL);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "the platform refused further alert calls (429 or no call left); "
                            "the ledger blocks them for 3600 s more"),
              "%s", o.err);
    out_free(&o);
    struct json_object *stats = sim_stats(&R.sim);
    cr_expect_eq(json_int_at(stats, "totals." RELAY_LOGIN ".alert"), 12);
    cr_expect_eq(json_int_at(stats, "rejected_429"), 0);
    json_object_put(stats);
}

/* A failure of the platform is exit 1 with its message; the call is still
 * in the ledger, and the platform's block after a 429 is kept. */
Test(lookup, a_platform_failure_exits_1)
{
    discovered();
    sim_fault(&R.sim, "latest-data", 503, 1, NULL);
    struct out o = wsrelay("readings", "5214000A", NULL);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "wsrelay: readings: account lab: latest-data call for 5214000A "
                            "failed: HTTP 503"),
              "%s", o.err);
    cr_expect_eq(ledger(PLATFORM_LATEST), 1);
    out_free(&o);
    sim_fault(&R.sim, "alert", 429, 1, NULL);
    o = wsrelay("alerts", "5214000A", NULL);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "HTTP 429"), "%s", o.err);
    out_free(&o);
    o = wsrelay("alerts", "5214000A", "--force", NULL);
    cr_expect_eq(o.status, 1, "%s%s", o.text, o.err);
    cr_expect(strstr(o.err, "the platform refused further alert calls"), "%s", o.err);
    out_free(&o);
    expect_ops("latest-data alert");
}
