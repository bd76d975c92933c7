/* Extras never cost an alert: hostile or broken sources of a message's
 * trend and chart, end to end against the simulator, the webhook sink and
 * the file receiver. A Get Latest Data reply about another device gives
 * no trend; one of 100,000 readings for a device with 20 new alarms keeps
 * the outbox small and every alarm reaches every receiver. */
#include "proc.h"
#include "relay.h"
#include "smtpd.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL
#define SERIAL "5214000A"

static struct relay R;
static struct smtpd S;

static void teardown(void)
{
    smtpd_stop(&S);
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

    /* The webhook fails at first: its 20 alarms wait in the outbox, each
     * with its trend. */
    char *err = NULL;
    hooksink_set_status(R.hook, 500);
    cr_assert_eq(relay_run_at(&R, T0 + 60, &err), 1, "%s", err);
    cr_expect_null(strstr(err, "dropped"), "%s", err);
    free(err);
    char *out = read_file_str(R.out_path);
    cr_expect_eq(occurrences(out, "CH1 Upper Limit Exceeded"), 20, "the file receiver");
    free(out);
    struct stat st;
    cr_assert_eq(stat(R.state_path, &st), 0);
    cr_expect_lt(st.st_size, 2 * 1024 * 1024, "the state holds %lld bytes", (long long)st.st_size);
    cr_log_info("the state with 20 alarms waiting, each with its trend: %lld bytes",
                (long long)st.st_size);

    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 660, &err), 0, "%s", err);
    free(err);
    size_t with_trend = 0;
    cr_expect_eq(hook_events(&with_trend), 20, "the webhook got them all");
    cr_expect_eq(with_trend, 20);

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

/* --- a chart helper that hangs ------------------------------------------- */

/* A copy of wsrelay-net in DIR/bin, beside a wsrelay-chart that writes
 * its pid to DIR/chart.pid and then runs the shell text `hang` (NULL:
 * "exec sleep 600"; $dir is DIR), which never answers: wsrelay-net finds its helper
 * beside itself. Receivers: the mail first, then the webhook and the file,
 * each with a 5 s timeout, and run_time 30 s: a run must end within
 * run_time + the longest step + 10 s = 45 s (RELIABILITY.md). Returns the
 * copy's path; caller frees. */
static char *hanging_chart(int alarms, const char *hang)
{
    start(alarms);
    smtpd_start(&S, R.dir, NULL);
    char *receivers = xasprintf("  - name: mail\n"
                                "    timeout: 5s\n"
                                "    email:\n"
                                "      host: 127.0.0.1\n"
                                "      port: %d\n"
                                "      starttls: \"off\"\n"
                                "      from: \"wsrelay <relay@example.org>\"\n"
                                "      to: \"oncall@example.org\"\n"
                                "  - name: hook\n"
                                "    timeout: 5s\n"
                                "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: "
                                "\"Bearer t0ken\"}}\n"
                                "  - name: log\n"
                                "    file: {path: \"@OUT@\"}\n",
                                S.port);
    relay_config_extra(&R,
                       "  - name: lab\n"
                       "    base_url: @BASE_URL@\n"
                       "    api_key: \"${TEST_API_KEY}\"\n"
                       "    login_id: " RELAY_LOGIN "\n"
                       "    login_pass_file: pass.txt\n"
                       "    signals: false\n"
                       "    trend: true\n",
                       receivers, "run_time: 30s\n");
    free(receivers);
    char *bin = xasprintf("%s/bin", R.dir);
    cr_assert_eq(mkdir(bin, 0700), 0);
    char *net = xasprintf("%s/wsrelay-net", bin);
    const char *slash = strrchr(WSRELAY_BIN, '/'); /* the build directory */
    char *src = xasprintf("%.*s/wsrelay-net", (int)(slash - WSRELAY_BIN), WSRELAY_BIN);
    char *const cp[] = {(char *)"cp", src, net, NULL};
    cr_assert_eq(run_cmd(NULL, NULL, 30, cp, NULL), 0);
    char *chart = xasprintf("%s/wsrelay-chart", bin);
    char *script = xasprintf("#!/bin/sh\ndir='%s'\necho $$ > \"$dir/chart.pid\"\n%s\n", R.dir,
                             hang ? hang : "exec sleep 600");
    write_file(chart, script);
    cr_assert_eq(chmod(chart, 0700), 0);
    free(script);
    free(chart);
    free(src);
    free(bin);
    return net;
}

/* The command line of a run of `net` (hanging_chart's copy of
 * wsrelay-net) at `now`, the simulator's clock set to it: argv holds
 * pointers into the struct, which must outlive the run. */
struct net_run {
    char when[32];
    char *argv[7];
};

static void net_run_at(struct net_run *out, char *net, long long now)
{
    snprintf(out->when, sizeof out->when, "%lld", now);
    sim_set_clock(&R.sim, now);
    char *const argv[] = {net,       (char *)"-c", R.config_path, (char *)"run", (char *)"--now",
                          out->when, NULL};
    memcpy(out->argv, argv, sizeof argv);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The pid the helper wrote to DIR/NAME, once it has; 0 before. */
static long pid_in(const char *name)
{
    char *p = xasprintf("%s/%s", R.dir, name);
    char *text = access(p, F_OK) == 0 ? read_file_str(p) : NULL;
    long pid = text ? strtol(text, NULL, 10) : 0;
    free(text);
    free(p);
    return pid;
}

/* The helper's pid, once it has started; 0 before. */
static long chart_pid(void)
{
    return pid_in("chart.pid");
}

static bool gone(long pid)
{
    return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* 12 alarms with a trend in one mail, and a chart helper that never
 * answers: it is tried once, within its 10 s, and the mail goes out with
 * sparklines; the webhook and the file receiver after it get all 12 in
 * the same run, which ends within its bound (before: each of the 12
 * waited the 30 s chart limit, 360 s, and the receivers after the mail got
 * nothing). The bound is the documented one, not a speed: the run takes
 * about 11 s. */
Test(fault_trend, a_chart_helper_that_hangs_costs_one_try_within_the_runs_time)
{
    char *net = hanging_chart(12, NULL);
    struct net_run run;
    net_run_at(&run, net, T0 + 60);
    struct timespec t0;
    char *err = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run_cmd(NULL, &err, 400, run.argv, NULL);
    double took = seconds_since(&t0);
    cr_expect_eq(rc, 0, "%s", err);
    cr_expect_lt(took, 45.0, "the run took %.1f s, beyond run_time + timeout + 10 s", took);
    cr_log_info("a run of 12 alarms with a hanging chart helper took %.1f s", took);
    cr_expect_eq(occurrences(err, SERIAL ": no chart:"), 1, "one try:\n%s", err);
    free(err);
    cr_expect_eq(smtpd_count(&S), 1, "the mail, with sparklines");
    size_t with_trend = 0;
    cr_expect_eq(hook_events(&with_trend), 12, "the webhook after the mail");
    char *out = read_file_str(R.out_path);
    cr_expect_eq(occurrences(out, "CH1 Upper Limit Exceeded"), 12, "the file receiver");
    free(out);
    long pid = chart_pid();
    cr_expect_gt(pid, 0, "the helper never started");
    cr_expect(pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH), "the helper was left");
    free(net);
}

/* SIGTERM while the mail waits for its chart: the helper is killed, the
 * mail goes out with its sparklines (the step under way finishes), and
 * the run ends, saved; the next run delivers the rest once. */
Test(fault_trend, a_stop_while_a_chart_is_drawn_kills_the_helper)
{
    char *net = hanging_chart(3, NULL);
    struct net_run run;
    net_run_at(&run, net, T0 + 60);
    struct proc p;
    proc_start(&p, run.argv, NULL, R.dir);
    for (int i = 0; i < 300 && !chart_pid(); i++) /* a hang guard: 30 s */
        test_sleep_ms(100);
    long pid = chart_pid();
    cr_assert_gt(pid, 0, "the helper never started");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = proc_terminate(&p, 20);
    double took = seconds_since(&t0);
    char *err = proc_stderr(&p);
    cr_expect(rc == 0 || rc == 1, "exit status %d (killed?): %s", rc, err);
    cr_expect_lt(took, 8.0, "the stop took %.1f s: the chart's limit ran out instead", took);
    cr_expect_not_null(strstr(err, "stopped by a signal"), "%s", err);
    free(err);
    proc_stop(&p);
    cr_expect(kill((pid_t)pid, 0) < 0 && errno == ESRCH, "the helper was left");
    cr_expect_eq(smtpd_count(&S), 1, "the mail under way went out");

    net_run_at(&run, net, T0 + 360);
    char *chart = xasprintf("%s/bin/wsrelay-chart", R.dir);
    cr_assert_eq(unlink(chart), 0); /* the next run without a helper at all */
    free(chart);
    cr_expect_eq(run_cmd(NULL, NULL, 120, run.argv, NULL), 0);
    size_t with_trend = 0;
    cr_expect_eq(hook_events(&with_trend), 3, "the webhook, once each");
    cr_expect_eq(smtpd_count(&S), 1, "the mail, once");
    free(net);
}

/* A helper that closes its output and goes on running: the run still
 * waits for it only within the chart's limit, kills it, and delivers to
 * every receiver (before: once its output closed, the run waited for it
 * with no limit, and the mail, the receivers after it and the save with
 * it, forever). The run_cmd limit is a hang guard, not a speed. */
Test(fault_trend, a_chart_helper_that_closes_its_output_and_hangs_costs_one_try)
{
    char *net = hanging_chart(3, "exec >&-; exec sleep 600");
    struct net_run run;
    net_run_at(&run, net, T0 + 60);
    struct timespec t0;
    char *err = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run_cmd(NULL, &err, 90, run.argv, NULL);
    double took = seconds_since(&t0);
    cr_expect_eq(rc, 0, "%s", err);
    cr_expect_lt(took, 45.0, "the run took %.1f s, beyond run_time + timeout + 10 s", took);
    cr_expect_eq(occurrences(err, SERIAL ": no chart:"), 1, "one try:\n%s", err);
    free(err);
    cr_expect_eq(smtpd_count(&S), 1, "the mail, with sparklines");
    size_t with_trend = 0;
    cr_expect_eq(hook_events(&with_trend), 3, "the webhook after the mail");
    long pid = chart_pid();
    cr_expect_gt(pid, 0, "the helper never started");
    cr_expect(gone(pid), "the helper was left");
    free(net);
}

/* SIGTERM while a helper that closed its output still runs: the stop is
 * seen at once, the helper killed, the run saved. */
Test(fault_trend, a_stop_while_a_closed_chart_helper_runs_kills_it)
{
    char *net = hanging_chart(3, "exec >&-; exec sleep 600");
    struct net_run run;
    net_run_at(&run, net, T0 + 60);
    struct proc p;
    proc_start(&p, run.argv, NULL, R.dir);
    for (int i = 0; i < 300 && !chart_pid(); i++) /* a hang guard: 30 s */
        test_sleep_ms(100);
    long pid = chart_pid();
    cr_assert_gt(pid, 0, "the helper never started");
    test_sleep_ms(200); /* it has closed its output */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = proc_terminate(&p, 20);
    double took = seconds_since(&t0);
    char *err = proc_stderr(&p);
    cr_expect(rc == 0 || rc == 1, "exit status %d (killed?): %s", rc, err);
    cr_expect_lt(took, 8.0, "the stop took %.1f s: the chart's limit ran out instead", took);
    cr_expect_not_null(strstr(err, "stopped by a signal"), "%s", err);
    free(err);
    proc_stop(&p);
    cr_expect(gone(pid), "the helper was left");
    cr_expect_eq(smtpd_count(&S), 1, "the mail under way went out");
    free(net);
}

/* A helper whose child holds its output: both are killed, as one group,
 * when the chart's limit runs out (before: the child outlived the run). */
Test(fault_trend, a_chart_helpers_child_dies_with_it)
{
    char *net = hanging_chart(3, "sleep 600 & echo $! > \"$dir/child.pid\"; exec sleep 600");
    struct net_run run;
    net_run_at(&run, net, T0 + 60);
    char *err = NULL;
    int rc = run_cmd(NULL, &err, 90, run.argv, NULL);
    cr_expect_eq(rc, 0, "%s", err);
    free(err);
    cr_expect_eq(smtpd_count(&S), 1, "the mail, with sparklines");
    long child = pid_in("child.pid");
    cr_expect_gt(child, 0, "the helper's child never started");
    for (int i = 0; i < 50 && child > 0 && !gone(child); i++) /* it is reaped by init */
        test_sleep_ms(100);
    cr_expect(gone(child), "the helper's child was left");
    cr_expect(gone(chart_pid()), "the helper was left");
    free(net);
}
