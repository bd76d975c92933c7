/* Several login IDs in one run: their calls go out in parallel, and each
 * login ID keeps its own budget and its own order of calls. The simulator
 * holds every platform reply for a while, as a distant platform would, and
 * reports how many requests it had in progress at once. */
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL
#define LOGINS 8
#define DEVICES 2       /* per login ID */
#define LATENCY_MS 1000 /* long enough that calls made one by one never overlap */

static struct relay R;

static void serial_of(char *out, size_t size, int login, int device)
{
    snprintf(out, size, "5214%02d%02d", login, device);
}

/* LOGINS login IDs of DEVICES devices each, every device with one alert
 * a few minutes old. */
static char *scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"now\": %lld, \"accounts\": [", T0);
    for (int i = 0; i < LOGINS; i++) {
        buf_printf(&b,
                   "%s{\"api_key\": \"@API_KEY@\", \"login_id\": \"tbzz00%02d\", "
                   "\"login_pass\": \"pw-%d\", \"devices\": [",
                   i ? "," : "", i, i);
        for (int k = 0; k < DEVICES; k++) {
            char serial[16];
            serial_of(serial, sizeof serial, i, k);
            buf_printf(&b,
                       "%s{\"serial\": \"%s\", \"alerts\": [{\"unixtime\": %lld, "
                       "\"ch1\": \"CH1 Upper Limit Exceeded\"}]}",
                       k ? "," : "", serial, T0 - 100 - k);
        }
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}");
    return buf_steal(&b);
}

static void setup(void)
{
    char *scen = scenario();
    relay_start_slow(&R, scen, LATENCY_MS);
    free(scen);
    struct buf acc;
    buf_init(&acc, 0);
    for (int i = 0; i < LOGINS; i++)
        buf_printf(&acc,
                   "  - name: site%d\n"
                   "    base_url: @BASE_URL@\n"
                   "    api_key: \"${TEST_API_KEY}\"\n"
                   "    login_id: tbzz00%02d\n"
                   "    login_pass: pw-%d\n"
                   "    signals: false\n", /* the round robin's arithmetic */
                   i, i, i);
    relay_config(&R, buf_str(&acc), NULL);
    buf_free(&acc);
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(parallel, .init = setup, .fini = teardown, .timeout = 240);

static long long stat_int(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(o, key, &v), "no '%s' in the stats", key);
    return json_object_get_int64(v);
}

Test(parallel, login_ids_are_called_at_once)
{
    char *err = NULL;
    int status = relay_run_at(&R, T0, &err);
    cr_assert_eq(status, 0, "wsrelay run failed:\n%s", err);
    free(err);
    struct json_object *stats = sim_stats(&R.sim);
    /* Every login ID listed its devices, polled one, and read the latest
     * readings of that device for its alarm's trend: three rounds of
     * LOGINS calls, each round all at once. */
    cr_assert_eq(stat_int(stats, "max_in_flight"), LOGINS,
                 "the simulator had at most %lld calls in progress at once",
                 stat_int(stats, "max_in_flight"));
    struct json_object *by_op = NULL;
    cr_assert(json_object_object_get_ex(stats, "max_in_flight_by_op", &by_op));
    static const char *const ops[] = {"current", "alert", "latest-data"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        cr_expect_eq(stat_int(by_op, ops[i]), LOGINS, "at most %lld %s calls at once",
                     stat_int(by_op, ops[i]), ops[i]);
    struct json_object *totals = NULL;
    json_object_object_get_ex(stats, "totals", &totals);
    for (int i = 0; i < LOGINS; i++) {
        char login[16];
        snprintf(login, sizeof login, "tbzz00%02d", i);
        struct json_object *t = NULL;
        cr_assert(json_object_object_get_ex(totals, login, &t), "no totals for %s", login);
        cr_expect_eq(stat_int(t, "current"), 1, "%s: %lld current calls", login,
                     stat_int(t, "current"));
        cr_expect_eq(stat_int(t, "alert"), 1, "%s: %lld alert calls", login, stat_int(t, "alert"));
        cr_expect_eq(stat_int(t, "latest-data"), 1, "%s: %lld latest-data calls", login,
                     stat_int(t, "latest-data"));
    }
    json_object_put(stats);
}

Test(parallel, every_alert_arrives_once_and_each_budget_holds)
{
    /* One alert call per login ID every 5 minutes: two runs poll every
     * device once; a third finds nothing new. */
    for (int run = 0; run < 3; run++) {
        char *err = NULL;
        int status = relay_run_at(&R, T0 + run * 300, &err);
        cr_assert_eq(status, 0, "run %d failed:\n%s", run, err);
        free(err);
    }
    size_t count = 0;
    char *keys = relay_hook_keys(&R, &count);
    cr_assert_eq(count, LOGINS * DEVICES, "%zu events arrived:\n%s", count, keys);
    for (int i = 0; i < LOGINS; i++) {
        for (int k = 0; k < DEVICES; k++) {
            char key[64];
            serial_of(key, sizeof key, i, k);
            snprintf(key + strlen(key), sizeof key - strlen(key), "/%lld/ch1\n", T0 - 100 - k);
            cr_expect_eq(occurrences(keys, key), 1, "%s arrived %zu times", key,
                         occurrences(keys, key));
        }
    }
    free(keys);
    struct json_object *stats = sim_stats(&R.sim);
    cr_expect_eq(stat_int(stats, "rejected_429"), 0);
    struct json_object *per_hour = NULL;
    json_object_object_get_ex(stats, "max_alert_calls_per_hour", &per_hour);
    json_object_object_foreach(per_hour, login, calls)
    {
        cr_expect_eq(json_object_get_int64(calls), 3, "%s made %lld alert calls", login,
                     (long long)json_object_get_int64(calls));
    }
    json_object_put(stats);
}
