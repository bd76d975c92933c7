/* `wsrelay run` over long stretches of simulated time and through crashes:
 * a week of 48 devices on one login ID, a burst that overflows a device's
 * 20-entry log, and runs killed with SIGKILL at random points. Each checks
 * a promise of docs/HOW-IT-WORKS.md ("What happens in a run"): the budget is never
 * exceeded, nothing is sent twice (but after a kill between a delivery and
 * the save after it), nothing is lost without a `gap` event saying so, and
 * the state file is always readable. Every random choice comes from a
 * fixed seed, so a failure repeats. */
#include "proc.h"
#include "relay.h"
#include "state.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL
#define HOUR 3600LL
#define DAY 86400LL
#define FULL_PAGE 20 /* the platform keeps a device's 20 newest entries */

/* Simulated seconds between two runs in the week: every 10 minutes, every
 * 15 in a sanitizer build (1,008 or 672 runs; starting the binary is most
 * of a run, several times more under the sanitizers). Each run then makes
 * one or two alert calls (three in sanitizer builds) at once, as a run
 * after missed cron minutes does (the scheduler credits the missed
 * slots), and every device is still looked at about every 4.5 hours (48
 * devices, 11 routine calls an hour). */
#ifdef WSRELAY_SANITIZED
#define WEEK_STEP 900
#else
#define WEEK_STEP 600
#endif

static struct relay R;

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(week, .fini = teardown);

/* Only the webhook: what reaches it is what the tests count. */
static const char hook_only[] =
    "  - name: hook\n"
    "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: \"Bearer t0ken\"}}\n";

/* --- deterministic randomness (splitmix64) -------------------------------- */

static unsigned long long rng_state;

static unsigned long long rng_next(void)
{
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A number from lo to hi, both included. */
static long long rng_range(long long lo, long long hi)
{
    return lo + (long long)(rng_next() % (unsigned long long)(hi - lo + 1));
}

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* --- devices and their alert logs ---------------------------------------- */

enum { K_CH1 = 1, K_CH2 = 2, K_BATTERY = 4 };
static const char *const kind_names[] = {"ch1", "ch2", "battery-level"};
static const char *const kind_texts[] = {"CH1 Upper Limit Exceeded 9.5C (limit 8.0C)",
                                         "CH2 Lower Limit Exceeded 20%", "Low Battery Warning"};

struct entry {
    long long t;
    unsigned kinds; /* K_* bits */
};

struct device {
    char serial[9];
    char base[9];  /* "" for a standalone device */
    int time_diff; /* minutes */
    struct entry *e;
    size_t n, cap;
    long long *polls; /* times of its successful alert calls, in order */
    size_t n_polls, polls_cap;
};

static void device_init(struct device *d, const char *serial, const char *base, int time_diff)
{
    memset(d, 0, sizeof *d);
    snprintf(d->serial, sizeof d->serial, "%s", serial);
    snprintf(d->base, sizeof d->base, "%s", base ? base : "");
    d->time_diff = time_diff;
}

static void device_add(struct device *d, long long t, unsigned kinds)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->e = xreallocarray(d->e, d->cap, sizeof *d->e);
    }
    d->e[d->n++] = (struct entry){.t = t, .kinds = kinds};
}

static bool device_has_time(const struct device *d, long long t)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->e[i].t == t)
            return true;
    return false;
}

static int by_time(const void *a, const void *b)
{
    long long x = ((const struct entry *)a)->t, y = ((const struct entry *)b)->t;
    return x < y ? -1 : x > y;
}

/* Sorts the log and moves entries off a second already taken: the dedup
 * key is serial + unixtime + kind, and the platform never logs two entries
 * of one device in the same second. */
static void device_sort(struct device *d)
{
    qsort(d->e, d->n, sizeof *d->e, by_time);
    for (size_t i = 1; i < d->n; i++)
        if (d->e[i].t <= d->e[i - 1].t)
            d->e[i].t = d->e[i - 1].t + 1;
}

static void device_free(struct device *d)
{
    free(d->e);
    free(d->polls);
    memset(d, 0, sizeof *d);
}

/* The random kinds of one entry: mostly ch1, sometimes ch2 or ch1 with a
 * low battery (two events of one entry). */
static unsigned random_kinds(void)
{
    long long r = rng_range(0, 9);
    return r < 8 ? K_CH1 : r == 8 ? K_CH2 : (K_CH1 | K_BATTERY);
}

static void entry_json(struct buf *b, const struct entry *e)
{
    buf_printf(b, "{\"unixtime\": %lld", e->t);
    for (int k = 0; k < 3; k++)
        if (e->kinds & (1u << k))
            buf_printf(b, ", \"%s\": \"%s\"", kind_names[k], kind_texts[k]);
    buf_puts(b, "}");
}

static char *scenario_json(const struct device *devs, size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    for (size_t i = 0; i < n; i++) {
        const struct device *d = &devs[i];
        buf_printf(&b,
                   "%s{\"serial\": \"%s\", \"model\": \"%s\", \"name\": \"Device %zu\", "
                   "\"time_diff\": %d",
                   i ? ",\n" : "", d->serial, *d->base ? "RTR501B" : "TR-72A2", i, d->time_diff);
        if (*d->base)
            buf_printf(&b,
                       ", \"base\": {\"serial\": \"%s\", \"model\": \"RTR500BW\", "
                       "\"name\": \"Base %s\"}",
                       d->base, d->base);
        buf_puts(&b, ", \"alerts\": [");
        for (size_t k = 0; k < d->n; k++) {
            if (k)
                buf_puts(&b, ", ");
            entry_json(&b, &d->e[k]);
        }
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

/* Adds an entry to the device and to the running simulator. */
static void add_alert(struct device *d, long long t, unsigned kinds)
{
    struct entry e = {.t = t, .kinds = kinds};
    struct buf b;
    buf_init(&b, 0);
    entry_json(&b, &e);
    sim_add_alert(&R.sim, d->serial, buf_str(&b));
    buf_free(&b);
    device_add(d, t, kinds);
}

static char *event_key(const char *serial, long long t, const char *kind)
{
    return xasprintf("%s/%lld/%s", serial, t, kind);
}

/* "YYYY-MM-DD HH:MM:SS +HH:MM" on the device's clock, as messages show it. */
static void local_time(char *out, size_t size, long long t, int offset_min)
{
    time_t lt = (time_t)(t + (long long)offset_min * 60);
    struct tm tm;
    gmtime_r(&lt, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    int off = offset_min < 0 ? -offset_min : offset_min;
    snprintf(out, size, "%s %c%02d:%02d", date, offset_min < 0 ? '-' : '+', off / 60, off % 60);
}

/* --- what the webhook received ------------------------------------------- */

struct hev {
    char *id;
    char *kind;
    char *text;
    size_t req; /* index of the request that carried it */
};

struct hevs {
    struct hev *v;
    size_t n, cap;
};

static const char *member(struct json_object *o, const char *key)
{
    struct json_object *v;
    cr_assert(json_object_object_get_ex(o, key, &v), "event without '%s'", key);
    return json_object_get_string(v);
}

/* The events of the webhook requests [from, to), in arrival order. */
static void hook_events(struct hevs *out, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        struct hook_request *rq = hooksink_request(R.hook, i);
        cr_assert_not_null(rq);
        struct json_object *doc = json_tokener_parse(rq->body), *events;
        cr_assert_not_null(doc, "webhook body is not JSON: %s", rq->body);
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        for (size_t k = 0; k < json_object_array_length(events); k++) {
            struct json_object *ev = json_object_array_get_idx(events, k);
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 64;
                out->v = xreallocarray(out->v, out->cap, sizeof *out->v);
            }
            out->v[out->n++] = (struct hev){.id = xstrdup(member(ev, "id")),
                                            .kind = xstrdup(member(ev, "kind")),
                                            .text = xstrdup(member(ev, "text")),
                                            .req = i};
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
}

static void hevs_free(struct hevs *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].id);
        free(h->v[i].kind);
        free(h->v[i].text);
    }
    free(h->v);
    memset(h, 0, sizeof *h);
}

static int hev_by_id(const void *a, const void *b)
{
    const struct hev *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->req > y->req) - (x->req < y->req);
}

/* The first event with `id` in an array sorted by hev_by_id, or NULL. */
static const struct hev *hevs_find(const struct hevs *h, const char *id)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(h->v[mid].id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < h->n && strcmp(h->v[lo].id, id) == 0 ? &h->v[lo] : NULL;
}

/* Every event of every request so far, shape-checked by relay_hook_keys
 * (the id is the dedup key), sorted by id; fails on a duplicate id. */
static void all_events_once(struct hevs *out)
{
    size_t n;
    free(relay_hook_keys(&R, &n));
    hook_events(out, 0, hooksink_count(R.hook));
    cr_assert_eq(out->n, n);
    qsort(out->v, out->n, sizeof *out->v, hev_by_id);
    for (size_t i = 1; i < out->n; i++)
        cr_assert(strcmp(out->v[i - 1].id, out->v[i].id) != 0, "event %s delivered twice",
                  out->v[i].id);
}

/* --- what the simulator saw ---------------------------------------------- */

static struct device *device_of(struct device *devs, size_t n, const char *serial)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(devs[i].serial, serial) == 0)
            return &devs[i];
    return NULL;
}

/* Asserts the budget held (no 429, never more than the 11 routine alert
 * calls in any hour) and fills each device's poll times with its successful alert calls;
 * returns the number of alert calls. Every alert call must have succeeded:
 * these tests set no platform fault. */
static size_t collect_polls(struct device *devs, size_t n)
{
    struct json_object *stats = sim_stats(&R.sim), *calls, *v, *login;
    cr_assert(json_object_object_get_ex(stats, "rejected_429", &v));
    cr_assert_eq(json_object_get_int(v), 0, "the platform answered 429");
    cr_assert(json_object_object_get_ex(stats, "max_alert_calls_per_hour", &v));
    cr_assert(json_object_object_get_ex(v, RELAY_LOGIN, &login));
    cr_assert_leq(json_object_get_int(login), 11,
                  "more than 11 alert calls in an hour: routine polling took the reserve");
    cr_assert(json_object_object_get_ex(stats, "calls", &calls));
    size_t alert_calls = 0;
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        struct json_object *c = json_object_array_get_idx(calls, i), *op, *serial, *t, *st;
        cr_assert(json_object_object_get_ex(c, "op", &op));
        if (strcmp(json_object_get_string(op), "alert") != 0)
            continue;
        alert_calls++;
        cr_assert(json_object_object_get_ex(c, "serial", &serial) && serial);
        cr_assert(json_object_object_get_ex(c, "t", &t));
        cr_assert(json_object_object_get_ex(c, "status", &st));
        cr_assert_eq(json_object_get_int(st), 200, "alert call of %s at %lld answered %d",
                     json_object_get_string(serial), (long long)json_object_get_int64(t),
                     json_object_get_int(st));
        struct device *d = device_of(devs, n, json_object_get_string(serial));
        cr_assert_not_null(d, "alert call for unknown serial %s", json_object_get_string(serial));
        if (d->n_polls == d->polls_cap) {
            d->polls_cap = d->polls_cap ? d->polls_cap * 2 : 16;
            d->polls = xreallocarray(d->polls, d->polls_cap, sizeof *d->polls);
        }
        d->polls[d->n_polls++] = (long long)json_object_get_int64(t);
    }
    json_object_put(stats);
    return alert_calls;
}

/* --- what should have arrived -------------------------------------------- */

struct expectation {
    char **keys; /* events that must arrive: SERIAL/UNIXTIME/KIND, gaps included */
    size_t n, cap;
    size_t gaps;      /* of them, gap events */
    size_t lost;      /* entries that left a log unseen, each covered by a gap */
    size_t near;      /* polls that found 12 to 19 new entries: no gap due */
    size_t full;      /* polls that found a full page with fewer than 20 new entries:
                         no gap due */
    size_t delivered; /* entries (not events) that must arrive */
};

static void expect_key(struct expectation *x, char *owned)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 256;
        x->keys = xreallocarray(x->keys, x->cap, sizeof *x->keys);
    }
    x->keys[x->n++] = owned;
}

static void expect_entry(struct expectation *x, const struct device *d, const struct entry *e)
{
    for (int k = 0; k < 3; k++)
        if (e->kinds & (1u << k))
            expect_key(x, event_key(d->serial, e->t, kind_names[k]));
    x->delivered++;
}

static void expectation_free(struct expectation *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->keys[i]);
    free(x->keys);
    memset(x, 0, sizeof *x);
}

/* Walks each device's polls: the entries logged since its previous poll
 * are what that poll could return. Up to 19 of them: all arrive. 20 or
 * more fill the page with unseen entries, so wsrelay cannot tell whether
 * any left the log (with exactly 20 none did): a gap event is due, keyed
 * by the oldest entry of the page, and the page's 20 entries arrive; the
 * older ones ("more than 20 between two polls") are lost, covered by that
 * gap. The gap's text must name its span, from the previous poll to the
 * oldest kept entry; `spans` collects "ID\tFROM\tTO" lines to check that. */
static void expect_from_polls(struct expectation *x, struct buf *spans, const struct device *devs,
                              size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct device *d = &devs[i];
        cr_assert_gt(d->n_polls, 0, "device %s was never polled", d->serial);
        size_t next = 0; /* first entry not yet covered by a poll */
        for (size_t p = 0; p < d->n_polls; p++) {
            size_t from = next;
            while (next < d->n && d->e[next].t <= d->polls[p])
                next++;
            size_t fresh = next - from;
            if (p == 0) {
                /* A first poll sends a gap only for a full page newer
                 * than the catch_up horizon; the scenario keeps the
                 * entries before it few, so it never does here. */
                cr_assert_lt(fresh, FULL_PAGE, "scenario: %zu entries of %s before its first poll",
                             fresh, d->serial);
            }
            size_t kept_from = fresh >= FULL_PAGE ? next - FULL_PAGE : from;
            if (fresh >= FULL_PAGE) {
                char *gap = event_key(d->serial, d->e[kept_from].t, "gap");
                char last[48], oldest[48];
                local_time(last, sizeof last, d->polls[p - 1], d->time_diff);
                local_time(oldest, sizeof oldest, d->e[kept_from].t, d->time_diff);
                buf_printf(spans, "%s\t%s\t%s\n", gap, last, oldest);
                expect_key(x, gap);
                x->gaps++;
                x->lost += kept_from - from;
            } else {
                x->near += fresh >= 12;
                x->full += next >= FULL_PAGE;
            }
            for (size_t k = kept_from; k < next; k++)
                expect_entry(x, d, &d->e[k]);
        }
        cr_assert_eq(next, d->n, "scenario: %s logged entries after its last poll", d->serial);
    }
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The received events are exactly the expected ones, each once, and each
 * gap names its span. */
static void check_delivery(const struct expectation *x, const char *spans)
{
    struct hevs got = {0};
    all_events_once(&got);
    for (size_t i = 0; i < x->n; i++)
        cr_assert_not_null(hevs_find(&got, x->keys[i]), "never delivered: %s", x->keys[i]);
    char **want = xcalloc(x->n ? x->n : 1, sizeof *want);
    memcpy(want, x->keys, x->n * sizeof *want);
    qsort(want, x->n, sizeof *want, by_string);
    for (size_t i = 0; i < got.n; i++)
        cr_assert_not_null(bsearch(&got.v[i].id, want, x->n, sizeof *want, by_string),
                           "delivered, but not expected: %s (a gap for a device whose log "
                           "did not fill between two polls?)",
                           got.v[i].id);
    free(want);
    for (const char *line = spans; *line;) {
        char id[64], from[48], to[48];
        cr_assert_eq(sscanf(line, "%63[^\t]\t%47[^\t]\t%47[^\n]", id, from, to), 3);
        const struct hev *g = hevs_find(&got, id);
        cr_assert_str_eq(g->kind, "gap");
        char *span = xasprintf("between %s and %s: ", from, to);
        cr_assert(strstr(g->text, span), "gap %s does not name the span %s .. %s: %s", id, from, to,
                  g->text);
        free(span);
        line = strchr(line, '\n') + 1;
    }
    hevs_free(&got);
}

static void run_ok(long long now)
{
    char *err = NULL;
    int status = relay_run_at(&R, now, &err);
    cr_assert_eq(status, 0, "run at %lld exited %d:\n%.3000s", now, status, err);
    free(err);
}

/* --- 1. a week ------------------------------------------------------------ */

#define WEEK_DEVICES 48
#define WEEK_BURSTS 7

/* 48 devices (40 standalone, 8 remote units behind two base units), each
 * with a few alerts spread over the week, and bursts of 12 to 40 entries
 * on four of them: some fit in the 20-entry log between two polls, some
 * do not. Alerts stop seven hours before the week ends, so that every
 * device is looked at after its last one (each is polled every 4 to 5
 * hours). */
static void week_devices(struct device *devs)
{
    static const int offsets[] = {540, 0, -300}; /* Tokyo, UTC, New York (minutes) */
    rng_state = 0x77656b3132ULL;
    for (int i = 0; i < WEEK_DEVICES; i++) {
        char serial[9], base[9];
        snprintf(serial, sizeof serial, "5300%s%03d", i < 40 ? "A" : "B", i);
        snprintf(base, sizeof base, "58B0000%d", i % 2);
        device_init(&devs[i], serial, i < 40 ? NULL : base, offsets[i % 3]);
        long long sparse = rng_range(2, 12);
        for (long long k = 0; k < sparse; k++)
            device_add(&devs[i], rng_range(T0 + 60, T0 + 7 * DAY - 8 * HOUR), random_kinds());
    }
    int bursty[4];
    for (int b = 0; b < 4; b++) {
        bool again;
        do {
            bursty[b] = (int)rng_range(0, WEEK_DEVICES - 1);
            again = false;
            for (int k = 0; k < b; k++)
                again = again || bursty[k] == bursty[b];
        } while (again);
    }
    for (int b = 0; b < WEEK_BURSTS; b++) {
        struct device *d = &devs[bursty[b % 4]];
        long long count = rng_range(12, 40), spacing = rng_range(30, 75);
        /* After every device's first poll (48 × 5 min). */
        long long start = rng_range(T0 + 5 * HOUR, T0 + 7 * DAY - 8 * HOUR);
        for (long long k = 0; k < count; k++)
            device_add(d, start + k * spacing, random_kinds());
    }
    for (int i = 0; i < WEEK_DEVICES; i++)
        device_sort(&devs[i]);
}

Test(week, a_week_of_48_devices_within_the_budget_and_nothing_missed_silently, .timeout = 600)
{
    struct device devs[WEEK_DEVICES];
    week_devices(devs);
    size_t entries = 0;
    for (int i = 0; i < WEEK_DEVICES; i++)
        entries += devs[i].n;
    char *scen = scenario_json(devs, WEEK_DEVICES);
    relay_start(&R, scen);
    free(scen);
    relay_config(&R, NULL, hook_only);

    struct timespec started;
    clock_gettime(CLOCK_MONOTONIC, &started);
    size_t runs = 0;
    for (long long now = T0; now < T0 + 7 * DAY; now += WEEK_STEP, runs++)
        run_ok(now);
    double took = seconds_since(&started);

    size_t alert_calls = collect_polls(devs, WEEK_DEVICES);
    struct expectation x = {0};
    struct buf spans;
    buf_init(&spans, 0);
    expect_from_polls(&x, &spans, devs, WEEK_DEVICES);
    cr_log_info("week: %zu runs every %d s in %.1f s (%.0f ms a run); %zu alert calls; "
                "%zu entries, %zu delivered (%zu events); %zu gaps covering %zu lost entries; "
                "%zu polls found 12-19 new entries, %zu a full page with fewer new ones",
                runs, WEEK_STEP, took, took * 1000 / (double)runs, alert_calls, entries,
                x.delivered, x.n - x.gaps, x.gaps, x.lost, x.near, x.full);
    /* The scenario does what it is for: logs overflowed, and full pages
     * came back where no gap was due. */
    cr_assert_geq(x.gaps, 2);
    cr_assert_geq(x.lost, 1);
    cr_assert_geq(x.full, 1);
    /* wsrelay counts a call until a whole span after it, both ends
     * included (the simulated platform frees it at the end), so a run
     * exactly an hour after a call waits for the next run: the 11 routine
     * calls of a window come once per hour and a step (9.4 an hour with a
     * run every 10 minutes, close to 11 with a run every minute). */
    size_t due = (size_t)(7 * DAY * 11 / (HOUR + WEEK_STEP));
    cr_assert_geq(alert_calls, due * 95 / 100, "the budget is used, not wasted: %zu of %zu",
                  alert_calls, due);
    check_delivery(&x, buf_str(&spans));

    buf_free(&spans);
    expectation_free(&x);
    for (int i = 0; i < WEEK_DEVICES; i++)
        device_free(&devs[i]);
}

/* --- 2. a burst ----------------------------------------------------------- */

#define BURST_DEVICES 12
#define BURST_ENTRIES 45

Test(week, a_burst_of_45_alerts_in_20_minutes_gives_one_gap, .timeout = 300)
{
    /* Twelve devices: each is looked at once an hour. Device 0 (Tokyo
     * time) is polled first, at T0, then logs 45 alerts in 20 minutes. */
    struct device devs[BURST_DEVICES];
    for (int i = 0; i < BURST_DEVICES; i++) {
        char serial[9];
        snprintf(serial, sizeof serial, "5214A0%02d", i);
        device_init(&devs[i], serial, NULL, i == 0 ? 540 : 0);
    }
    struct device *d = &devs[0];
    for (int k = 0; k < BURST_ENTRIES; k++)
        device_add(d, T0 + 60 + k * 26, K_CH1);
    long long burst_end = d->e[BURST_ENTRIES - 1].t;
    cr_assert_leq(burst_end - d->e[0].t, 20 * 60);
    char *scen = scenario_json(devs, BURST_DEVICES);
    relay_start(&R, scen);
    free(scen);
    relay_config(&R, NULL, hook_only);

    for (long long now = T0; now < T0 + 2 * HOUR; now += 60)
        run_ok(now);
    collect_polls(devs, BURST_DEVICES);
    cr_assert_geq(d->n_polls, 2);
    cr_assert_eq(d->polls[0], T0, "device 0 is polled first");
    cr_assert_geq(d->polls[1], burst_end, "the whole burst lies between two polls");

    struct hevs got = {0};
    all_events_once(&got);
    cr_assert_eq(got.n, FULL_PAGE + 1, "the 20 entries the platform still had and one gap");
    size_t kept = BURST_ENTRIES - FULL_PAGE;
    for (size_t k = kept; k < BURST_ENTRIES; k++) {
        char *key = event_key(d->serial, d->e[k].t, "ch1");
        cr_assert_not_null(hevs_find(&got, key), "never delivered: %s", key);
        free(key);
    }
    char *gap_id = event_key(d->serial, d->e[kept].t, "gap");
    const struct hev *gap = hevs_find(&got, gap_id);
    cr_assert_not_null(gap, "no gap event %s", gap_id);
    cr_assert_str_eq(gap->kind, "gap");
    char from[48], to[48];
    local_time(from, sizeof from, T0, 540);
    local_time(to, sizeof to, d->e[kept].t, 540);
    cr_assert(strstr(gap->text, from) && strstr(gap->text, to),
              "the gap names the span %s .. %s: %s", from, to, gap->text);
    cr_assert(strstr(from, "+09:00"), "%s", from);
    free(gap_id);
    hevs_free(&got);

    /* Nothing more, however often the device is looked at again. */
    size_t requests = hooksink_count(R.hook);
    for (long long now = T0 + 2 * HOUR; now < T0 + 4 * HOUR; now += 300)
        run_ok(now);
    cr_assert_eq(hooksink_count(R.hook), requests, "a later run sent more");
    for (int i = 0; i < BURST_DEVICES; i++)
        device_free(&devs[i]);
}

/* --- 3. SIGKILL ----------------------------------------------------------- */

#define KILL_DEVICES 4
#define KILL_ROUNDS 200

/* Checks what a run killed at any point leaves behind: no state file, or
 * one that wsrelay loads (the same state_open a run does: JSON, and every
 * known member in its shape). */
static void check_state_readable(int round)
{
    char *text = read_file_str(R.state_path);
    if (!text)
        return;
    struct json_tokener *tok = json_tokener_new();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    struct json_object *doc = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
    cr_assert(doc && json_tokener_get_error(tok) == json_tokener_success,
              "round %d: the state file is not JSON: %.200s", round, text);
    json_object_put(doc);
    json_tokener_free(tok);
    free(text);
    struct state *st = NULL;
    struct err e;
    cr_assert_eq(state_open(&st, R.state_path, 0, &e), 0, "round %d: %s", round, e.msg);
    state_close(st);
}

static size_t outbox_size(void)
{
    char *text = read_file_str(R.state_path);
    cr_assert_not_null(text);
    struct json_object *doc = json_tokener_parse(text), *outbox;
    cr_assert_not_null(doc);
    size_t n =
        json_object_object_get_ex(doc, "outbox", &outbox) ? json_object_array_length(outbox) : 0;
    json_object_put(doc);
    free(text);
    return n;
}

/* The round whose run made webhook request `req`; -1 for the runs before
 * and after the rounds. */
static int round_of(const size_t *first_req, size_t req)
{
    for (int r = 0; r < KILL_ROUNDS; r++)
        if (req >= first_req[r] && req < first_req[r + 1])
            return r;
    return -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts `wsrelay run --now NOW` with its output in `dir`. */
static void start_run(struct proc *p, long long now, const char *dir, char **envp)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&R.sim, now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", R.config_path, (char *)"run",
                    (char *)"--now",     when,         NULL};
    proc_start(p, argv, envp, dir);
}

static void end_run(struct proc *p)
{
    unlink(p->out_path);
    unlink(p->err_path);
    proc_stop(p);
}

/* What the test knows of an alert that never arrived, for whoever
 * finds the failure: the device's alert calls around it and the rounds
 * they fell in (killed, refusing), the webhook requests of those rounds,
 * and what the state's files say of its key now. Caller frees. */
static char *lost_diagnosis(const struct device *d, long long t, const char *key,
                            const long long *round_now, const bool *killed, const bool *refusing,
                            const size_t *first_req)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t p = 0; p < d->n_polls; p++) {
        if (d->polls[p] < t - 3600 || d->polls[p] > t + 3 * 3600)
            continue;
        int r = KILL_ROUNDS - 1;
        while (r > 0 && round_now[r] > d->polls[p])
            r--;
        if (round_now[r] > d->polls[p]) {
            buf_printf(&b, "alert call at %lld: before the rounds\n", d->polls[p]);
            continue;
        }
        buf_printf(&b, "alert call at %lld: round %d (now %lld)%s%s, requests %zu to %zu\n",
                   d->polls[p], r, round_now[r], killed[r] ? ", killed" : "",
                   refusing[r] ? ", sink refusing" : "", first_req[r], first_req[r + 1]);
    }
    char *path = xasprintf("%s.d/%s.json", R.state_path, d->serial);
    char *device_file = read_file_str(path);
    char *state = read_file_str(R.state_path);
    char *stamp = xasprintf("%lld", t);
    buf_printf(&b, "%s: %s; the state file %s\n", path,
               !device_file                 ? "missing"
               : strstr(device_file, stamp) ? "holds its time"
                                            : "does not hold its time",
               state && strstr(state, key) ? "names the key" : "does not name the key");
    free(stamp);
    free(state);
    free(device_file);
    free(path);
    return buf_steal(&b);
}

Test(week, runs_killed_at_random_points_lose_nothing_and_keep_the_state_readable, .timeout = 600)
{
    /* Two standalone devices and two remote units, each with an alert of
     * the last hour; more arrive as the clock moves. */
    struct device devs[KILL_DEVICES];
    for (int i = 0; i < KILL_DEVICES; i++) {
        char serial[9];
        snprintf(serial, sizeof serial, "5214B0%02d", i);
        device_init(&devs[i], serial, i < 2 ? NULL : "58B20000", 540);
        device_add(&devs[i], T0 - 600 + i, K_CH1);
    }
    char *scen = scenario_json(devs, KILL_DEVICES);
    relay_start(&R, scen);
    free(scen);
    relay_config(&R, NULL, hook_only);
    char *procdir = xasprintf("%s/procs", R.dir);
    cr_assert_eq(mkdir(procdir, 0700), 0);
    rng_state = 0x6b696c6c32ULL;
    char **kill_env = proc_environ_for_kills();

    /* The typical length of a run that polls a device and delivers to a
     * slowish receiver. */
    hooksink_set_delay_ms(R.hook, 60);
    double typical = 0;
    long long now = T0;
    /* 6 minutes apart: a run may stamp its call a second after its --now
     * (run.c's tick_now counts the second boundaries crossed), so a run
     * exactly 5 minutes later may find the next slot a second short. */
    for (int i = 0; i < 3; i++, now += 360) {
        struct proc p;
        double t = now_s();
        start_run(&p, now, procdir, NULL);
        cr_assert_eq(proc_wait(&p, 60), 0);
        t = now_s() - t;
        typical = t > typical ? t : typical;
        end_run(&p);
    }
    cr_assert_eq(hooksink_count(R.hook), 3, "one delivery per warm-up run, not %zu",
                 hooksink_count(R.hook));

    /* Round i's webhook requests are [first_req[i], first_req[i + 1]). */
    size_t first_req[KILL_ROUNDS + 1];
    bool killed[KILL_ROUNDS], refusing[KILL_ROUNDS];
    long long round_now[KILL_ROUNDS];
    size_t kills = 0, kills_in_delivery = 0, alerts_added = 0;
    struct timespec started;
    clock_gettime(CLOCK_MONOTONIC, &started);
    for (int round = 0; round < KILL_ROUNDS; round++) {
        /* Every other round the clock moves (an alert call is due every
         * 5 minutes) and an alert or two arrive in the meantime. */
        if (rng_range(0, 1) == 0) {
            long long step = rng_range(60, 600);
            for (long long k = rng_range(1, 2); k > 0; k--) {
                struct device *d = &devs[rng_range(0, KILL_DEVICES - 1)];
                long long t = rng_range(now + 1, now + step);
                if (!device_has_time(d, t)) {
                    add_alert(d, t, random_kinds());
                    alerts_added++;
                }
            }
            now += step;
        }
        round_now[round] = now;
        /* The receiver: mostly fine, sometimes slow, sometimes failing. */
        long long mood = rng_range(0, 9);
        refusing[round] = mood < 2;
        hooksink_set_status(R.hook, refusing[round] ? 503 : 200);
        hooksink_set_delay_ms(R.hook, mood >= 2 && mood < 6 ? (int)rng_range(20, 120) : 0);

        long long delay_us = rng_range(0, (long long)(typical * 1e6));
        first_req[round] = hooksink_count(R.hook);
        struct proc p;
        start_run(&p, now, procdir, kill_env);
        struct timespec ts = {(time_t)(delay_us / 1000000), (long)(delay_us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        if (proc_poll(&p) < 0)
            kill(p.pid, SIGKILL);
        int status = proc_wait(&p, 60);
        killed[round] = status == 128 + SIGKILL;
        if (killed[round]) {
            kills++;
            /* A request the run had sent before it died may still be on
             * its way: let the sink record it in this round, however busy
             * the machine is (it records a request as it arrives). */
            for (size_t seen = SIZE_MAX; seen != hooksink_count(R.hook);) {
                seen = hooksink_count(R.hook);
                test_sleep_ms(60);
            }
            if (!refusing[round] && hooksink_count(R.hook) > first_req[round])
                kills_in_delivery++;
        } else {
            char *err = proc_stderr(&p);
            cr_assert(status == 0 || status == 1, "round %d: exit %d:\n%.3000s", round, status,
                      err);
            cr_assert_null(strstr(err, "corrupt"), "round %d: %.3000s", round, err);
            free(err);
        }
        end_run(&p);
        check_state_readable(round);
    }
    first_req[KILL_ROUNDS] = hooksink_count(R.hook);
    proc_environ_free(kill_env);
    double took = seconds_since(&started);

    /* Clean runs until everything is delivered, and for an hour at least:
     * the round robin looks at each of the 4 devices about every 22
     * minutes, later when killed runs spent budget on calls that never
     * reached the platform (a call is recorded before it is sent), so an
     * alert that came after its device's last poll of the rounds may wait
     * more than half an hour to be seen. */
    hooksink_set_status(R.hook, 200);
    hooksink_set_delay_ms(R.hook, 0);
    int clean = 0;
    for (; clean < 40 && (clean < 12 || outbox_size() > 0); clean++) {
        now += 300;
        run_ok(now);
    }
    cr_assert_eq(outbox_size(), 0, "the outbox is still not empty after %d clean runs", clean);
    /* No kill made wsrelay overspend: a call is recorded before it is sent. */
    size_t alert_calls = collect_polls(devs, KILL_DEVICES);

    /* Every alert arrived, at least once; a repeat only of what a killed
     * run had delivered before the save that would have recorded it.
     * Requests the sink answered 503 delivered nothing. */
    struct hevs got = {0};
    hook_events(&got, 0, first_req[0]);
    for (int r = 0; r < KILL_ROUNDS; r++)
        if (!refusing[r])
            hook_events(&got, first_req[r], first_req[r + 1]);
    hook_events(&got, first_req[KILL_ROUNDS], hooksink_count(R.hook));
    qsort(got.v, got.n, sizeof *got.v, hev_by_id);
    size_t events = 0, repeats = 0, repeated_messages = 0;
    bool *repeated = xcalloc(hooksink_count(R.hook) + 1, sizeof *repeated);
    for (int i = 0; i < KILL_DEVICES; i++) {
        for (size_t k = 0; k < devs[i].n; k++) {
            for (int kind = 0; kind < 3; kind++) {
                if (!(devs[i].e[k].kinds & (1u << kind)))
                    continue;
                char *key = event_key(devs[i].serial, devs[i].e[k].t, kind_names[kind]);
                const struct hev *h = hevs_find(&got, key);
                if (!h) {
                    char *why = lost_diagnosis(&devs[i], devs[i].e[k].t, key, round_now, killed,
                                               refusing, first_req);
                    cr_assert_fail("lost: %s\n%s", key, why);
                }
                /* Copies in arrival order: each but the last must come
                 * from a run killed before it could record the delivery. */
                for (; h + 1 < got.v + got.n && strcmp(h[1].id, key) == 0; h++) {
                    int r = round_of(first_req, h->req);
                    cr_assert(r >= 0 && killed[r],
                              "%s delivered again after request %zu, which a run that was "
                              "not killed made",
                              key, h->req);
                    repeats++;
                    if (!repeated[h->req])
                        repeated_messages++;
                    repeated[h->req] = true;
                }
                events++;
                free(key);
            }
        }
    }
    free(repeated);
    cr_assert_eq(got.n, events + repeats, "an event that was never logged was delivered");
    cr_assert_leq(repeated_messages, kills_in_delivery, "at most one message per kill repeats");
    cr_log_info("kill: %d rounds in %.1f s (typical run %.0f ms): %zu killed, %zu of them "
                "with a message at the receiver; %zu alerts added; %zu events, %zu "
                "delivered again (%zu messages); %zu alert calls; %d clean runs to empty the "
                "outbox",
                KILL_ROUNDS, took, typical * 1000, kills, kills_in_delivery, alerts_added, events,
                repeats, repeated_messages, alert_calls, clean);
    /* A kill comes at a random moment of the slowest warm-up run; runs with
     * nothing to deliver end sooner, so about 55 to 80 of the 200 die
     * (measured); fewer than 25 would mean the test no longer kills. */
    cr_assert_geq(kills, KILL_ROUNDS / 8, "too few runs were killed before they ended");
    cr_assert_geq(kills_in_delivery, 1, "no kill landed in a delivery");
    hevs_free(&got);

    /* Beside the state only its lock, its directory of device files, the
     * quiet file of the last run that ended well (src/quiet.h), one fleet
     * file (the generation the state names: the clean runs removed any
     * other a kill left), and at most the temporary file of a save that
     * was cut short; in the directory only device files (none moved aside
     * as corrupt) and temporary files. */
    DIR *dir = opendir(R.dir);
    cr_assert_not_null(dir);
    int fleet_files = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        const char *gen = strncmp(de->d_name, "state.json.fleet-", 17) == 0 ? de->d_name + 17 : "";
        size_t digits = strspn(gen, "0123456789");
        if (digits && (!gen[digits] || strcmp(gen + digits, ".tmp") == 0)) {
            fleet_files += !gen[digits];
            continue;
        }
        if (strncmp(de->d_name, "state.json", 10) == 0)
            cr_assert(strcmp(de->d_name, "state.json") == 0 ||
                          strcmp(de->d_name, "state.json.lock") == 0 ||
                          strcmp(de->d_name, "state.json.tmp") == 0 ||
                          strcmp(de->d_name, "state.json.quiet") == 0 ||
                          strcmp(de->d_name, "state.json.quiet.tmp") == 0 ||
                          strcmp(de->d_name, "state.json.d") == 0,
                      "left behind: %s", de->d_name);
    }
    cr_assert_eq(fleet_files, 1, "%d fleet files", fleet_files);
    closedir(dir);
    char *files = xasprintf("%s.d", R.state_path);
    dir = opendir(files);
    cr_assert_not_null(dir, "%s", files);
    for (struct dirent *de; (de = readdir(dir));) {
        size_t len = strlen(de->d_name);
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cr_assert((len > 5 && strcmp(de->d_name + len - 5, ".json") == 0) ||
                      (len > 9 && strcmp(de->d_name + len - 9, ".json.tmp") == 0),
                  "left behind in %s: %s", files, de->d_name);
    }
    closedir(dir);
    free(files);
    free(procdir);
    for (int i = 0; i < KILL_DEVICES; i++)
        device_free(&devs[i]);
}
