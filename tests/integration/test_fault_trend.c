/* Extras never cost an alert: hostile or broken sources of a message's
 * trend and chart, end to end against the simulator, the webhook sink and
 * the file receiver. A Get Latest Data reply about another device gives
 * no trend; one of 100,000 readings for a device with 20 new alarms keeps
 * the outbox small and every alarm reaches every receiver. */
#include "proc.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define T0 1795000000LL
#define SERIAL "5214000A"

static struct relay R;

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(fault_trend, .fini = teardown, .timeout = 180);

/* A fridge with six hours of readings every 10 minutes and `alarms`
 * alarms of channel 1 in its log, the newest 5 minutes before T0, one a
 * minute; its account reads trends. The receivers are relay.h's: the
 * webhook "hook" and the file "log". */
static void start(int alarms)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_printf(&b, "{\"serial\": \"" SERIAL "\", \"model\": \"TR-72wb\", \"name\": \"Fridge 3\","
                   " \"time_diff\": 540,"
                   " \"channels\": [{\"name\": \"temp\", \"unit\": \"°C\", \"value\": \"9.5\"}],"
                   " \"readings\": [");
    for (long long t = T0 - 6 * 3600; t <= T0; t += 600)
        buf_printf(&b, "%s{\"at\": %lld, \"unixtime\": %lld, \"values\": [\"%s\"]}",
                   t > T0 - 6 * 3600 ? "," : "", t + 30, t, t > T0 - 3600 ? "9.1" : "4.0");
    buf_printf(&b, "], \"alerts\": [");
    for (int i = 0; i < alarms; i++)
        buf_printf(&b, "%s{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded 9.%d°C\"}",
                   i ? "," : "", T0 - 300 - 60LL * i, i % 10);
    buf_printf(&b, "]}]}]}");
    relay_start(&R, buf_str(&b));
    buf_free(&b);
    relay_config(&R,
                 "  - name: lab\n"
                 "    base_url: @BASE_URL@\n"
                 "    api_key: \"${TEST_API_KEY}\"\n"
                 "    login_id: " RELAY_LOGIN "\n"
                 "    login_pass_file: pass.txt\n"
                 "    signals: false\n"
                 "    trend: true\n",
                 NULL);
}

/* The webhook's alarms so far (events of kind ch1: a first poll of a
 * full log adds a gap event): how many, and how many of them carry a
 * trend. */
static size_t hook_events(size_t *with_trend)
{
    size_t n = 0;
    *with_trend = 0;
    for (size_t i = 0; i < hooksink_count(R.hook); i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        struct json_object *doc = json_tokener_parse(rq->body), *events = NULL, *trend = NULL;
        cr_assert_not_null(doc, "request %zu is not JSON", i);
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        for (size_t k = 0; k < json_object_array_length(events); k++) {
            struct json_object *ev = json_object_array_get_idx(events, k), *kind = NULL;
            if (!json_object_object_get_ex(ev, "kind", &kind) ||
                strcmp(json_object_get_string(kind), "ch1") != 0)
                continue;
            n++;
            *with_trend += json_object_object_get_ex(ev, "trend", &trend) && trend;
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
    return n;
}

Test(fault_trend, a_readings_reply_about_another_device_gives_no_trend)
{
    start(1);
    sim_fault(&R.sim, "latest-data", 200, 1,
              "{\"serial\": \"5214000B\", \"model\": \"TR-72wb\", \"name\": \"Other\","
              " \"time_diff\": \"540\", \"std_bias\": \"0\", \"dst_bias\": \"0\","
              " \"channel\": [{\"num\": \"1\", \"name\": \"temp\", \"unit\": \"C\"}],"
              " \"data\": [{\"unixtime\": \"1794999000\", \"data-id\": \"1\", \"ch1\": \"-80.5\"},"
              " {\"unixtime\": \"1794999600\", \"data-id\": \"2\", \"ch1\": \"-80.1\"}]}");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 60, &err), 0, "the trend is an extra: %s", err);
    cr_expect_not_null(strstr(err, "about device 5214000B"), "no warning: %s", err);
    free(err);
    size_t with_trend = 0;
    cr_expect_eq(hook_events(&with_trend), 1, "the alarm");
    cr_expect_eq(with_trend, 0, "another device's readings shown as this one's");
    char *out = read_file_str(R.out_path);
    cr_expect_eq(occurrences(out, "CH1 Upper Limit Exceeded"), 1, "%s", out);
    cr_expect_null(strstr(out, "-80.5"), "%s", out);
    free(out);
}

/* One Get Latest Data reply of 100,000 readings (3.6 MB, under the 4 MiB
 * wsrelay reads) over the last six hours, for a device with 20 new
 * alarms: each alarm's trend keeps what a message shows (a few hundred
 * points, each part's lowest and highest), so the outbox stays small and
 * every receiver gets all 20 (before: the whole trend went into each
 * outbox item, the save gave up events and the webhook's message was too
 * large to send). The peak, one reading of 12.5 among 4.0s, survives. */
Test(fault_trend, a_reply_of_100000_readings_costs_no_alert)
{
    start(20);
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"serial\":\"" SERIAL "\",\"model\":\"TR-72wb\",\"name\":\"Fridge 3\","
                   "\"time_diff\":\"540\",\"std_bias\":\"0\",\"dst_bias\":\"0\","
                   "\"channel\":[{\"num\":\"1\",\"name\":\"temp\",\"unit\":\"C\"}],\"data\":[");
    for (long i = 0; i < 100000; i++)
        buf_printf(&b, "%s{\"unixtime\":%lld,\"ch1\":\"%s\"}", i ? "," : "",
                   T0 - 6 * 3600 + i * 6 * 3600 / 100000, i == 54321 ? "12.5" : "4.0");
    buf_printf(&b, "]}");
    cr_assert_gt(b.len, 3500000);
    cr_assert_lt(b.len, 4 * 1024 * 1024);
    sim_fault(&R.sim, "latest-data", 200, 1, buf_str(&b));
    buf_free(&b);

    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0 + 60, &err), 0, "%s", err);
    free(err);
    size_t with_trend = 0;
    cr_expect_eq(hook_events(&with_trend), 20, "the webhook got them all");
    cr_expect_eq(with_trend, 20);
    char *out = read_file_str(R.out_path);
    cr_expect_eq(occurrences(out, "CH1 Upper Limit Exceeded"), 20, "the file receiver");
    free(out);
    struct stat st;
    cr_assert_eq(stat(R.state_path, &st), 0);
    cr_expect_lt(st.st_size, 1024 * 1024, "the state holds %lld bytes", (long long)st.st_size);

    struct hook_request *rq = hooksink_request(R.hook, 0);
    struct json_object *doc = json_tokener_parse(rq->body), *events, *trend, *points, *v;
    cr_assert(json_object_object_get_ex(doc, "events", &events));
    cr_assert(json_object_object_get_ex(json_object_array_get_idx(events, 0), "trend", &trend));
    cr_assert(json_object_object_get_ex(trend, "points", &points));
    cr_expect_leq(json_object_array_length(points), 600, "%zu points",
                  json_object_array_length(points));
    cr_expect_geq(json_object_array_length(points), 100);
    cr_assert(json_object_object_get_ex(trend, "max", &v));
    cr_expect_str_eq(json_object_get_string(v), "12.5");
    json_object_put(doc);
    hook_request_free(rq);
}
