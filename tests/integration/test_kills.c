/* Runs stopped or killed while they deliver to several receivers. A stop
 * (SIGTERM, as systemd sends when a run outlives its unit's timeout)
 * finishes the message in flight, saves and exits: nothing is sent twice.
 * A kill (SIGKILL) can repeat only the message it cut off: each accepted
 * message is saved before the next one starts, so the other receivers
 * never get again what they already had. */
#include "proc.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL
#define MAX_SINKS 4

static struct relay R;
static struct hooksink *sinks[MAX_SINKS];
static size_t n_sinks;

static void teardown(void)
{
    for (size_t i = 0; i < n_sinks; i++)
        hooksink_stop(sinks[i]);
    n_sinks = 0;
    relay_stop(&R);
}

/* `n` standalone devices 5214C0NN, each with `entries` alert entries in
 * the half hour before T0, every entry an alarm on channels 1 to 3. */
static char *scenario_of(int n, int entries)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (int i = 0; i < n; i++) {
        buf_printf(&b,
                   "%s{\"serial\": \"5214C0%02d\", \"model\": \"TR-72A2\", \"name\": \"F%d\", "
                   "\"alerts\": [",
                   i ? "," : "", i, i);
        for (int k = 0; k < entries; k++)
            buf_printf(&b,
                       "%s{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded\", "
                       "\"ch2\": \"CH2 Upper Limit Exceeded\", \"ch3\": \"CH3 Lower Limit "
                       "Exceeded\"}",
                       k ? "," : "", T0 - 1800 + k * 60LL);
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

/* Starts the simulator on `scenario` and `n` webhook sinks, receivers
 * hook-0 ... hook-N-1, and no file receiver. */
static void start(const char *scenario, size_t n)
{
    relay_start(&R, scenario);
    struct buf yaml;
    buf_init(&yaml, 0);
    n_sinks = n;
    for (size_t i = 0; i < n; i++) {
        sinks[i] = hooksink_start();
        buf_printf(&yaml,
                   "  - name: hook-%zu\n"
                   "    webhook: {url: \"%s\", headers: {Authorization: \"Bearer t0ken\"}}\n",
                   i, hooksink_url(sinks[i]));
    }
    relay_config(&R, NULL, buf_str(&yaml));
    buf_free(&yaml);
}

static void set_status(int status)
{
    for (size_t i = 0; i < n_sinks; i++)
        hooksink_set_status(sinks[i], status);
}

/* Starts `wsrelay run --now NOW` in the background. */
static void start_run(struct proc *p, long long now, char **envp)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&R.sim, now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", R.config_path, (char *)"run",
                    (char *)"--now",     when,         NULL};
    proc_start(p, argv, envp, R.dir);
}

static void end_run(struct proc *p)
{
    unlink(p->out_path);
    unlink(p->err_path);
    proc_stop(p);
}

/* One event as a sink got it: its key and the request that carried it. */
struct got {
    char *key;
    size_t req;
};

static int got_order(const void *a, const void *b)
{
    const struct got *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->req > y->req) - (x->req < y->req);
}

/* What sink `h` got of the devices' events (wsrelay's own relay events
 * aside): the number of distinct events in *distinct, of events it got
 * again in *repeats, and of requests that carried an event an earlier
 * request had carried in *repeated_requests. */
static void sink_tally(struct hooksink *h, size_t *distinct, size_t *repeats,
                       size_t *repeated_requests)
{
    size_t n = 0, cap = 16, reqs = hooksink_count(h);
    struct got *v = xcalloc(cap, sizeof *v);
    for (size_t r = 0; r < reqs; r++) {
        size_t count;
        char *keys = hook_keys(h, r, r + 1, &count), *save = NULL;
        for (char *k = strtok_r(keys, "\n", &save); k; k = strtok_r(NULL, "\n", &save)) {
            if (strncmp(k, "wsrelay/", 8) == 0)
                continue;
            if (n == cap)
                v = xreallocarray(v, cap *= 2, sizeof *v);
            v[n++] = (struct got){.key = xstrdup(k), .req = r};
        }
        free(keys);
    }
    qsort(v, n, sizeof *v, got_order);
    bool *repeated = xcalloc(reqs + 1, sizeof *repeated);
    *distinct = *repeats = *repeated_requests = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(v[i].key, v[i - 1].key) != 0) {
            (*distinct)++;
        } else {
            (*repeats)++;
            repeated[v[i].req] = true;
        }
    }
    for (size_t r = 0; r < reqs; r++)
        *repeated_requests += repeated[r];
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
    free(repeated);
}

/* 4 devices, 20 entries of 3 alarms each: 240 events (and a gap event per
 * device: a full page on its first look) wait for 4 receivers, which
 * failed while the devices were polled. The last receiver is slow. A stop
 * during its first message: the run finishes that message, saves and
 * ends; the next run delivers the rest. No receiver gets an event twice. */
Test(kills, a_stop_during_delivery_repeats_nothing, .fini = teardown, .timeout = 240)
{
    char *scen = scenario_of(4, 20);
    start(scen, 4);
    free(scen);
    set_status(503);
    for (int i = 0; i < 4; i++)
        relay_run_at(&R, T0 + i * 360, NULL);
    for (size_t i = 0; i < n_sinks; i++)
        hooksink_clear(sinks[i]);
    set_status(200);
    hooksink_set_delay_ms(sinks[3], 1500);

    struct proc p;
    long long later = T0 + 3 * 3600; /* every back-off is over */
    start_run(&p, later, NULL);
    cr_assert_eq(hooksink_wait(sinks[3], 1, 60000), 1, "the slow receiver got nothing");
    kill(p.pid, SIGTERM);
    int status = proc_wait(&p, 30);
    char *err = proc_stderr(&p);
    cr_assert(status == 0 || status == 1, "exit %d:\n%s", status, err);
    cr_expect(strstr(err, "stopped by a signal"), "%s", err);
    free(err);
    end_run(&p);
    cr_expect_eq(hooksink_count(sinks[3]), 1, "a message started after the stop");

    hooksink_set_delay_ms(sinks[3], 0);
    cr_assert_eq(relay_run_at(&R, later + 60, NULL), 0);
    for (size_t i = 0; i < n_sinks; i++) {
        size_t distinct, repeats, requests;
        sink_tally(sinks[i], &distinct, &repeats, &requests);
        cr_expect_eq(distinct, 4 * 61, "hook-%zu got %zu distinct events", i, distinct);
        cr_expect_eq(repeats, 0, "hook-%zu got %zu events twice", i, repeats);
    }
}

#define KILLS 200      /* runs killed */
#define MAX_ROUNDS 600 /* runs started, killed or not */
#define KILL_SINKS 3
#define KILL_DEVICES 4

static unsigned long long rng = 0x6b696c6c33ULL;

/* A number from lo to hi (xorshift: the same rounds every time). */
static long long rng_range(long long lo, long long hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (long long)(rng % (unsigned long long)(hi - lo + 1));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Requests of every sink so far. */
static size_t requests(void)
{
    size_t total = 0;
    for (size_t i = 0; i < n_sinks; i++)
        total += hooksink_count(sinks[i]);
    return total;
}

/* Waits until no sink records another request for a moment: one a killed
 * run had sent may still be on its way. */
static void settle(void)
{
    for (size_t before = SIZE_MAX; before != requests();) {
        before = requests();
        test_sleep_ms(60);
    }
}

/* Waits until the run `p` has sent a request (more than `before` in all)
 * or ended. */
static void wait_for_delivery(struct proc *p, size_t before)
{
    for (int i = 0; i < 6000 && requests() == before && proc_poll(p) < 0; i++)
        test_sleep_ms(5);
}

/* Runs killed at random moments while alerts keep arriving and three slow
 * receivers take them: every event reaches every receiver, and the
 * messages that repeat events are at most one per kill. */
Test(kills, random_kills_during_delivery_repeat_at_most_one_message_each, .fini = teardown,
     .timeout = 1100)
{
    char *scen = scenario_of(KILL_DEVICES, 0);
    start(scen, KILL_SINKS);
    free(scen);
    char **kill_env = proc_environ_for_kills();
    long long now = T0;
    size_t alerts = 0;

    /* A warm-up run, to learn how long a run that delivers takes. */
    for (int d = 0; d < KILL_DEVICES; d++) {
        char serial[16], entry[160];
        snprintf(serial, sizeof serial, "5214C0%02d", d);
        snprintf(entry, sizeof entry, "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded\"}",
                 now - 60);
        sim_add_alert(&R.sim, serial, entry);
        alerts++;
    }
    cr_assert_eq(relay_run_at(&R, now, NULL), 0);

    size_t kills = 0, kills_in_delivery = 0;
    double started = now_s();
    int round = 0;
    for (; kills < KILLS && round < MAX_ROUNDS; round++) {
        /* The clock moves 6 minutes (an alert call is due) and one to
         * three alerts arrive, two kinds each. */
        now += 360;
        for (long long k = rng_range(1, 3); k > 0; k--) {
            char serial[16], entry[200];
            snprintf(serial, sizeof serial, "5214C0%02lld", rng_range(0, KILL_DEVICES - 1));
            snprintf(entry, sizeof entry,
                     "{\"unixtime\": %lld, \"ch1\": \"CH1 Upper Limit Exceeded\", "
                     "\"battery-level\": \"Battery Low\"}",
                     now - 10 * k);
            sim_add_alert(&R.sim, serial, entry);
            alerts++;
        }
        for (size_t i = 0; i < n_sinks; i++)
            hooksink_set_delay_ms(sinks[i], (int)rng_range(0, 80));
        size_t before = requests();
        struct proc p;
        start_run(&p, now, kill_env);
        /* The kill comes during delivery: once the first message is on its
         * way, after up to three receivers' delays more. */
        wait_for_delivery(&p, before);
        test_sleep_ms(rng_range(0, 240));
        if (proc_poll(&p) < 0)
            kill(p.pid, SIGKILL);
        int status = proc_wait(&p, 60);
        if (status == 128 + SIGKILL) {
            kills++;
            settle();
            kills_in_delivery += requests() > before;
        } else {
            char *err = proc_stderr(&p);
            cr_assert(status == 0 || status == 1, "round %d: exit %d:\n%.3000s", round, status,
                      err);
            free(err);
        }
        end_run(&p);
    }
    proc_environ_free(kill_env);
    double took = now_s() - started;

    /* Clean runs until every device was looked at since its last alert. */
    for (size_t i = 0; i < n_sinks; i++)
        hooksink_set_delay_ms(sinks[i], 0);
    for (int i = 0; i < 2 * KILL_DEVICES; i++) {
        now += 360;
        cr_assert_eq(relay_run_at(&R, now, NULL), 0);
    }

    /* Every alert has two kinds but the four of the warm-up one. */
    size_t events = 2 * alerts - KILL_DEVICES, repeated_messages = 0, repeated_events = 0;
    for (size_t i = 0; i < n_sinks; i++) {
        size_t distinct, repeats, requests;
        sink_tally(sinks[i], &distinct, &repeats, &requests);
        cr_expect_eq(distinct, events, "hook-%zu: %zu of %zu events arrived", i, distinct, events);
        repeated_messages += requests;
        repeated_events += repeats;
    }
    cr_log_info("kills: %d rounds in %.1f s: %zu killed during delivery, %zu with a message "
                "at a receiver; %zu events to each of %d receivers; %zu messages (%zu events) "
                "repeated",
                round, took, kills, kills_in_delivery, events, KILL_SINKS, repeated_messages,
                repeated_events);
    cr_expect_geq(kills, KILLS, "only %zu of %d rounds were killed", kills, round);
    cr_expect_leq(repeated_messages, kills_in_delivery, "more than one message repeated per kill");
    cr_expect_geq(kills_in_delivery, kills / 2, "too few kills landed in a delivery");
}
