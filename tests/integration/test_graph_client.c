/* The platform client's graph-data operations against the real
 * simulator: platform_query makes each of latest-data, data and their
 * -rtr500 variants, in both dialects, as JSON, csv2 and csv, with
 * temperatures in C and F, and series.h reads every reply to the same
 * readings. */
#include "platform.h"
#include "series.h"
#include "support.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW 1795000000LL
#define FIRST (NOW - 3000) /* ten readings, 5 minutes apart, the last at NOW - 300 */

static struct sim sim;
static char *dir;
static struct platform_login strings_account, numbers_account;
static struct platform *strings_client, *numbers_client;

/* Reading i of both devices: 4.0 + 0.5 i °C (ch1); ch2 40 + i %, and
 * "Sensor Error" at i = 7. Data-ids from 65532: 65535 then 0 at i = 4. */
static void device(struct buf *b, const char *serial, const char *base, bool numbers)
{
    buf_printf(b, "{\"serial\":\"%s\",\"model\":\"M\",\"name\":\"冷凍庫 %s\",\"time_diff\":540,",
               serial, serial);
    if (base)
        buf_printf(b, "\"num\":1,\"base\":{\"serial\":\"%s\",\"model\":\"RTR500BW\"},", base);
    buf_puts(b, "\"data_id\":65532,\"channels\":[{\"name\":\"温度\",\"unit\":\"°C\"},"
                "{\"name\":\"湿度\",\"unit\":\"%\"}],\"readings\":[");
    for (int i = 0; i < 10; i++) {
        long long t = FIRST + 300LL * i;
        if (numbers)
            buf_printf(b, "%s{\"at\":%lld,\"unixtime\":%lld,\"values\":[%.1f,", i ? "," : "",
                       t + 10, t, 4.0 + 0.5 * i);
        else
            buf_printf(b, "%s{\"at\":%lld,\"unixtime\":%lld,\"values\":[\"%.1f\",", i ? "," : "",
                       t + 10, t, 4.0 + 0.5 * i);
        if (i == 7)
            buf_puts(b, "\"Sensor Error\"]}");
        else
            buf_printf(b, numbers ? "%d]}" : "\"%d\"]}", 40 + i);
    }
    buf_puts(b, "]}");
}

static void account_of(struct platform_login *a, const char *name, const char *key,
                       const char *login, const char *pass)
{
    memset(a, 0, sizeof *a);
    a->name = (char *)name;
    a->base_url = sim.base_url;
    a->api_key = (char *)key;
    a->login_id = (char *)login;
    a->login_pass = (char *)pass;
}

static void setup(void)
{
    struct buf b;
    struct err e;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"now\":%lld,\"accounts\":[{\"api_key\":\"KS\",\"login_id\":\"strs0001\","
               "\"login_pass\":\"pass\",\"devices\":[",
               NOW);
    device(&b, "5214000A", NULL, false);
    buf_puts(&b, ",");
    device(&b, "5820D101", "5893C000", false);
    buf_puts(&b, "]},{\"api_key\":\"KN\",\"login_id\":\"nums0001\",\"login_pass\":\"pass\","
                 "\"dialect\":\"numbers\",\"devices\":[");
    device(&b, "5214000A", NULL, true);
    buf_puts(&b, ",");
    device(&b, "5820D101", "5893C000", true);
    buf_puts(&b, "]}]}");
    dir = test_tmpdir();
    char *path = xasprintf("%s/scenario.json", dir);
    write_file(path, buf_str(&b));
    buf_free(&b);
    sim_start(&sim, path, dir);
    free(path);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    account_of(&strings_account, "strings", "KS", "strs0001", "pass");
    account_of(&numbers_account, "numbers", "KN", "nums0001", "pass");
    cr_assert_eq(platform_new(&strings_client, &strings_account, &e), 0, "%s", e.msg);
    cr_assert_eq(platform_new(&numbers_client, &numbers_account, &e), 0, "%s", e.msg);
}

static void teardown(void)
{
    platform_free(strings_client);
    platform_free(numbers_client);
    curl_global_cleanup();
    sim_stop(&sim);
    test_rmtree(dir);
    free(dir);
}

TestSuite(graph_client, .init = setup, .fini = teardown, .timeout = 60);

/* Makes the call and reads its reply, JSON or CSV, into *s. */
static struct platform_reply query(struct series *s, struct platform *p, enum platform_op op,
                                   const struct platform_query *q)
{
    struct platform_reply r = {0};
    struct err e = {{0}};
    cr_assert_eq(platform_query(p, op, q, &r), 0, "%s: %s", platform_op_name(op),
                 r.message ? r.message : "");
    if (q->type == PLATFORM_TYPE_JSON)
        cr_assert_eq(series_parse_json(s, r.body, &e), 0, "%s", e.msg);
    else
        cr_assert_eq(series_parse_csv(s, r.text, r.text_len, &e), 0, "%s\n%s", e.msg, r.text);
    return r;
}

/* The readings [from, to) of the scenario, as every reply must give them;
 * `f` converts channel 1 to Fahrenheit; `ids` whether data-ids came. */
static void assert_readings(const struct series *s, int from, int to, bool f, bool ids)
{
    cr_assert_eq(s->n_points, (size_t)(to - from), "%zu readings", s->n_points);
    cr_assert_eq(s->n_channels, 2);
    cr_assert_eq(s->utc_offset, 540);
    cr_assert_eq(s->channels[0].num, 1);
    cr_assert_eq(s->channels[1].num, 2);
    cr_assert_str_eq(s->channels[1].unit, "%");
    for (int i = from; i < to; i++) {
        const struct series_point *p = &s->points[i - from];
        double c = 4.0 + 0.5 * i;
        cr_assert_eq(p->unixtime, FIRST + 300LL * i, "reading %d: %lld", i, p->unixtime);
        cr_assert_eq(p->data_id, ids ? (65532 + i) % 65536 : -1, "reading %d", i);
        cr_assert(p->valid & 1, "reading %d", i);
        cr_assert_float_eq(p->v[0], f ? c * 9 / 5 + 32 : c, 0.051, "reading %d: %g", i, p->v[0]);
        if (i == 7) {
            cr_assert_not(p->valid & 2, "Sensor Error is no value");
        } else {
            cr_assert(p->valid & 2);
            cr_assert_float_eq(p->v[1], 40 + i, 1e-9);
        }
    }
    for (size_t i = 1; i < s->n_points && ids; i++)
        cr_assert(series_follows(&s->points[i - 1], &s->points[i]), "65535 is followed by 0");
}

Test(graph_client, latest_data_of_both_families_in_both_dialects)
{
    struct platform *clients[] = {strings_client, numbers_client};
    for (size_t k = 0; k < 2; k++) {
        struct series s = {0};
        struct platform_query q = {.serial = "5214000A"};
        enum platform_op op = platform_graph_op("5214000A", "5214000A", false);
        struct platform_reply r = query(&s, clients[k], op, &q);
        cr_assert(r.rl.present);
        cr_assert_eq(r.rl.limit, 60);
        cr_assert_str_eq(s.serial, "5214000A");
        cr_assert_str_eq(s.name, "冷凍庫 5214000A");
        assert_readings(&s, 0, 10, false, true);
        series_free(&s);
        platform_reply_free(&r);

        q = (struct platform_query){.serial = "5820D101", .base = "5893C000"};
        op = platform_graph_op("5820D101", "5893C000", false);
        cr_assert_eq(op, PLATFORM_LATEST_RTR500);
        r = query(&s, clients[k], op, &q);
        cr_assert_str_eq(s.serial, "5820D101");
        cr_assert_str_eq(s.base_serial, "5893C000");
        assert_readings(&s, 0, 10, false, true);
        series_free(&s);
        platform_reply_free(&r);
    }
}

Test(graph_client, data_by_period_with_the_data_count)
{
    struct platform *clients[] = {strings_client, numbers_client};
    for (size_t k = 0; k < 2; k++) {
        struct series s = {0};
        /* Readings after reading 2 and before reading 8, the newest 4 of them. */
        struct platform_query q = {.serial = "5820D101",
                                   .base = "5893C000",
                                   .from = FIRST + 600,
                                   .to = FIRST + 2400,
                                   .number = 4};
        struct platform_reply r = query(&s, clients[k], PLATFORM_DATA_RTR500, &q);
        assert_readings(&s, 4, 8, false, true);
        cr_assert(r.rl.has_data_count);
        cr_assert_eq(r.rl.data_count, 160000 - 4);
        series_free(&s);
        platform_reply_free(&r);
        /* Without a period: every reading (the platform's default is 16000). */
        q = (struct platform_query){.serial = "5214000A"};
        r = query(&s, clients[k], PLATFORM_DATA, &q);
        assert_readings(&s, 0, 10, false, true);
        cr_assert_eq(r.rl.data_count, 160000 - 10);
        series_free(&s);
        platform_reply_free(&r);
    }
}

Test(graph_client, csv_layouts_and_temperature_units)
{
    const struct {
        enum platform_op op;
        const char *serial, *base;
        enum platform_type type;
        char unit;
    } cases[] = {
        {PLATFORM_LATEST, "5214000A", NULL, PLATFORM_TYPE_CSV2, 0},
        {PLATFORM_LATEST, "5214000A", NULL, PLATFORM_TYPE_CSV, 'F'},
        {PLATFORM_DATA, "5214000A", NULL, PLATFORM_TYPE_CSV2, 'C'},
        {PLATFORM_LATEST_RTR500, "5820D101", "5893C000", PLATFORM_TYPE_CSV2, 'F'},
        {PLATFORM_DATA_RTR500, "5820D101", "5893C000", PLATFORM_TYPE_JSON, 'F'},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct series s = {0};
        struct platform_query q = {.serial = cases[i].serial,
                                   .base = cases[i].base,
                                   .type = cases[i].type,
                                   .temperature_unit = cases[i].unit};
        struct platform_reply r = query(&s, strings_client, cases[i].op, &q);
        bool csv = cases[i].type != PLATFORM_TYPE_JSON;
        assert_readings(&s, 0, 10, cases[i].unit == 'F', !csv);
        if (cases[i].unit)
            cr_assert_not_null(strchr(s.channels[0].unit, cases[i].unit), "case %zu: unit %s", i,
                               s.channels[0].unit);
        /* A remote unit's channels are named by number ("ch1"). */
        cr_assert_str_eq(s.channels[0].name, cases[i].base ? "ch1" : "温度");
        series_free(&s);
        platform_reply_free(&r);
    }
}

Test(graph_client, the_wrong_family_is_refused_by_the_platform)
{
    struct platform_reply r = {0};
    struct platform_query q = {.serial = "5820D101"};
    cr_assert_eq(platform_query(strings_client, PLATFORM_LATEST, &q, &r), -1);
    cr_assert_eq(r.http_status, 400);
    cr_assert_not_null(r.message);
    platform_reply_free(&r);
}
