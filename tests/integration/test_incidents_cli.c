/* `wsrelay incidents` and `wsrelay status` on incidents that real runs
 * made: the real relay against the simulator on a virtual clock, two
 * freezers whose ch1 alarms open two incidents, one that recovers 20
 * minutes later and one that someone acknowledges and that stays open.
 * The list, --all --json, show ID (from the state, and rebuilt from the
 * incident log once the state forgot it), --since, --csv, the errors, the
 * open incident in status, and the log's bound (incidents.keep) that each
 * run keeps. Times are printed in UTC (TZ is set). */
#include "jsonpath.h"
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

#define T0 1795000000LL          /* 2026-11-18 11:06:40 UTC */
#define ALARM_A (T0 + 60)        /* Freezer A's ch1 alarm, recovered at RECOVERY_A */
#define RECOVERY_A (T0 + 1260)   /* 20 minutes later */
#define ALARM_B (T0 + 120)       /* Freezer B's ch1 alarm, never recovered */
#define ACK_AT (T0 + 900)        /* alice acknowledges B's incident */
#define NOW (T0 + 3030)          /* when the commands look */
#define LATER (NOW + 2 * 86400L) /* the state has forgotten A's incident by then */

static struct relay R;

static void setup(void)
{
    setenv("TZ", "UTC", 1);
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(incidents_cli, .init = setup, .fini = teardown, .timeout = 240);

/* Two freezers: A's ch1 alarm and its recovery, B's ch1 alarm alone, each
 * logged by the platform 30 s after it happened. */
static char *scenario(void)
{
    struct buf b;
    buf_init(&b, 0);
    relay_scenario_open(&b, T0);
    buf_printf(&b,
               "{\"serial\": \"5214000A\", \"model\": \"TR-72A2\", \"name\": \"Freezer A\","
               " \"time_diff\": 540, \"channels\": [{\"name\": \"Temperature\", \"unit\": \"°C\","
               " \"value\": \"-80.0\"}], \"alerts\": ["
               "{\"unixtime\": %lld, \"logged_at\": %lld,"
               " \"ch1\": \"CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)\"},"
               "{\"unixtime\": %lld, \"logged_at\": %lld,"
               " \"ch1\": \"CH1 Measurement Recovery -78.0°C\"}]},",
               ALARM_A, ALARM_A + 30, RECOVERY_A, RECOVERY_A + 30);
    buf_printf(&b,
               "{\"serial\": \"5214000B\", \"model\": \"TR-72A2\", \"name\": \"Freezer B\","
               " \"time_diff\": 540, \"channels\": [{\"name\": \"Temperature\", \"unit\": \"°C\","
               " \"value\": \"-80.0\"}], \"alerts\": ["
               "{\"unixtime\": %lld, \"logged_at\": %lld,"
               " \"ch1\": \"CH1 Upper Limit Exceeded -61.5°C (limit -70.0°C)\"}]}",
               ALARM_B, ALARM_B + 30);
    buf_puts(&b, "]}]}");
    return buf_steal(&b);
}

/* Starts the relay with incidents on and `extra` configuration (NULL:
 * none). */
static void start(const char *extra)
{
    char *scen = scenario();
    relay_start(&R, scen);
    free(scen);
    R.incidents = true;
    relay_config_extra(&R, NULL, NULL, extra);
}

/* `wsrelay run` every minute from `from` to `to`, each of which must
 * succeed. */
static void run_minutes(long long from, long long to)
{
    for (long long t = from; t <= to; t += 60) {
        char *err = NULL;
        int status = relay_run_at(&R, t, &err);
        cr_assert_eq(status, 0, "run at T0+%lld failed:\n%s", t - T0, err);
        free(err);
    }
}

/* `wsrelay -c CONFIG ARGS... --now NOW` (up to 5 arguments, NULL-ended). */
static struct cmd_result cmd_at(long long now, const char *a1, const char *a2, const char *a3,
                                const char *a4, const char *a5)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    const char *args[5] = {a1, a2, a3, a4, a5};
    const char *argv[12] = {WSRELAY_BIN, "-c", R.config_path};
    size_t n = 3;
    for (size_t i = 0; i < 5 && args[i]; i++)
        argv[n++] = args[i];
    argv[n++] = "--now";
    argv[n++] = when;
    argv[n] = NULL;
    return cmd_run(30, argv);
}

static struct json_object *parse(const struct cmd_result *r)
{
    struct json_object *j = json_tokener_parse(r->out);
    cr_assert_not_null(j, "not JSON:\n%s\n%s", r->out, r->err);
    return j;
}

/* The incident of `serial` in the array `arr` (of incidents --json). */
static struct json_object *of_serial(struct json_object *arr, const char *path, const char *serial)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *o = json_object_array_get_idx(arr, i);
        if (strcmp(json_str_at(o, path), serial) == 0)
            return o;
    }
    cr_assert_fail("no incident of %s in %s", serial, json_object_to_json_string(arr));
    return NULL;
}

/* A member that is JSON null. */
static bool is_null(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) && v == NULL;
}

/* The ids of A's and B's incidents, from incidents --all --json. */
static void ids(char a[24], char b[24])
{
    struct cmd_result r = cmd_at(NOW, "incidents", "--all", "--json", NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct json_object *arr = parse(&r);
    snprintf(a, 24, "%s", json_str_at(of_serial(arr, "device.serial", "5214000A"), "id"));
    snprintf(b, 24, "%s", json_str_at(of_serial(arr, "device.serial", "5214000B"), "id"));
    json_object_put(arr);
    cmd_result_free(&r);
}

/* The night: both alarms, alice's acknowledgement of B's incident, A's
 * recovery. */
static void night(void)
{
    start(NULL);
    run_minutes(T0 + 30, ACK_AT - 60);
    char a[24], b[24];
    ids(a, b);
    struct cmd_result r =
        cmd_at(ACK_AT, "ack", b, "--by", "alice", "--note=moving the samples to freezer C");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cmd_result_free(&r);
    run_minutes(ACK_AT + 30, NOW);
}

/* The steps ("what") of the timeline of `show ID --json`, joined by
 * spaces. */
static char *steps_of(struct json_object *doc)
{
    struct buf b;
    buf_init(&b, 0);
    struct json_object *tl = json_at(doc, "timeline");
    for (size_t i = 0; i < json_object_array_length(tl); i++)
        buf_printf(&b, "%s%s", i ? " " : "", json_str_at(json_object_array_get_idx(tl, i), "what"));
    return buf_steal(&b);
}

Test(incidents_cli, the_list_shows_the_open_one_and_all_shows_both)
{
    night();
    char a[24], b[24];
    ids(a, b);
    cr_expect_str_neq(a, b);

    struct cmd_result r = cmd_at(NOW, "incidents", NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "ID     STATE        OPENED      DURATION   DEVICE AND WHAT\n"), "%s",
              r.out);
    cr_expect(strstr(r.out, "Freezer B (5214000B) ch1, acknowledged by alice"), "%s", r.out);
    cr_expect_null(strstr(r.out, "5214000A"), "A's incident is resolved:\n%s", r.out);
    cmd_result_free(&r);

    r = cmd_at(NOW, "incidents", "--all", "--json", NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct json_object *arr = parse(&r);
    cr_assert_eq(json_object_array_length(arr), 2, "%s", r.out);
    struct json_object *ia = of_serial(arr, "device.serial", "5214000A");
    struct json_object *ib = of_serial(arr, "device.serial", "5214000B");
    cr_expect_str_eq(json_str_at(ia, "key"), "5214000A/ch1");
    cr_expect_str_eq(json_str_at(ia, "state"), "resolved");
    cr_expect_eq(json_int_at(ia, "duration"), RECOVERY_A - ALARM_A);
    cr_expect_str_eq(json_str_at(ia, "receivers.0"), "hook");
    cr_expect_str_eq(json_str_at(ia, "receivers.1"), "log");
    cr_expect_str_eq(json_str_at(ib, "key"), "5214000B/ch1");
    cr_expect_str_eq(json_str_at(ib, "state"), "acknowledged");
    cr_expect_str_eq(json_str_at(ib, "acknowledged_by"), "alice");
    cr_expect_str_eq(json_str_at(ib, "acknowledged_note"), "moving the samples to freezer C");
    json_object_put(arr);
    cmd_result_free(&r);
}

Test(incidents_cli, show_gives_the_incident_and_its_timeline_in_order)
{
    night();
    char a[24], b[24];
    ids(a, b);

    struct cmd_result r = cmd_at(NOW, "incidents", "show", a, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct json_object *doc = parse(&r);
    cr_expect_str_eq(json_str_at(doc, "incident.id"), a);
    cr_expect_str_eq(json_str_at(doc, "incident.state"), "resolved");
    cr_expect_str_eq(json_str_at(doc, "incident.device"), "Freezer A");
    cr_expect_str_eq(json_str_at(doc, "incident.text"),
                     "CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)");
    cr_expect_eq(json_int_at(doc, "incident.opened"), ALARM_A);
    cr_expect_eq(json_int_at(doc, "incident.ended"), RECOVERY_A);
    cr_expect_eq(json_int_at(doc, "incident.duration"), RECOVERY_A - ALARM_A);
    cr_expect(json_object_get_boolean(json_at(doc, "incident.kept")));
    char *steps = steps_of(doc);
    cr_expect_str_eq(steps, "opened resolved", "%s", r.out);
    free(steps);
    struct json_object *tl = json_at(doc, "timeline");
    struct json_object *opened = json_object_array_get_idx(tl, 0);
    struct json_object *resolved = json_object_array_get_idx(tl, 1);
    cr_expect_str_eq(json_str_at(opened, "incident"), a);
    cr_expect_eq(json_int_at(opened, "seq"), 1);
    cr_expect_str_eq(json_str_at(opened, "receivers.0"), "hook");
    cr_expect_str_eq(json_str_at(opened, "receivers.1"), "log");
    cr_expect_eq(json_int_at(opened, "event_time"), ALARM_A);
    cr_expect_eq(json_int_at(resolved, "seq"), 2);
    cr_expect_eq(json_int_at(resolved, "duration"), RECOVERY_A - ALARM_A);
    cr_expect_str_eq(json_str_at(resolved, "receivers.0"), "hook");
    cr_expect(json_int_at(opened, "at") <= json_int_at(resolved, "at"));
    json_object_put(doc);
    cmd_result_free(&r);

    /* in words: the header, then one line a step, in local time */
    r = cmd_at(NOW, "incidents", "show", a, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *head = xasprintf("incident %s: Freezer A (5214000A) ch1, resolved\n", a);
    cr_expect_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
    free(head);
    cr_expect(strstr(r.out, "  alarm:         CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C) "
                            "(2026-11-18 11:07)\n"),
              "%s", r.out);
    cr_expect(strstr(r.out, "  told:          hook, log\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  resolved:      recovered at 2026-11-18 11:27, after 20 min\n"), "%s",
              r.out);
    const char *o = strstr(r.out, "  opened        to hook, log");
    const char *s = strstr(
        r.out, "  resolved      to hook, log; value -78.0°C; peak -65.0°C; duration 20 min\n");
    cr_expect(o && s && o < s, "opened, then resolved:\n%s", r.out);
    cr_expect(strstr(r.out, "\ntimeline (local time):\n  2026-11-18 11:"), "%s", r.out);
    cmd_result_free(&r);

    /* B: opened, alice's acknowledgement with her note, and its notice */
    r = cmd_at(NOW, "incidents", "show", b, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    doc = parse(&r);
    steps = steps_of(doc);
    cr_expect_str_eq(steps, "opened acknowledged notice", "%s", r.out);
    free(steps);
    cr_expect_str_eq(json_str_at(doc, "incident.state"), "acknowledged");
    struct json_object *ack = json_object_array_get_idx(json_at(doc, "timeline"), 1);
    cr_expect_str_eq(json_str_at(ack, "by"), "alice");
    cr_expect_str_eq(json_str_at(ack, "note"), "moving the samples to freezer C");
    cr_expect_eq(json_int_at(ack, "at"), ACK_AT);
    json_object_put(doc);
    cmd_result_free(&r);
    r = cmd_at(NOW, "incidents", "show", b, NULL, NULL);
    cr_expect(strstr(r.out, "  2026-11-18 11:21:40  acknowledged  by alice; note: moving the "
                            "samples to freezer C\n"),
              "%s", r.out);
    cr_expect(strstr(r.out, "  acknowledged:  by alice at 2026-11-18 11:21: moving the samples "
                            "to freezer C\n"),
              "%s", r.out);
    cmd_result_free(&r);
}

Test(incidents_cli, show_rebuilds_what_the_state_forgot_from_the_log)
{
    night();
    char a[24], b[24];
    ids(a, b);
    /* two days on, the state keeps B (open) only */
    run_minutes(LATER, LATER);
    struct cmd_result r = cmd_at(LATER, "incidents", "--all", "--json", NULL, NULL);
    struct json_object *arr = parse(&r);
    cr_assert_eq(json_object_array_length(arr), 1, "%s", r.out);
    json_object_put(arr);
    cmd_result_free(&r);

    r = cmd_at(LATER, "incidents", "show", a, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct json_object *doc = parse(&r);
    cr_expect_not(json_object_get_boolean(json_at(doc, "incident.kept")));
    cr_expect_str_eq(json_str_at(doc, "incident.state"), "resolved");
    cr_expect_str_eq(json_str_at(doc, "incident.key"), "5214000A/ch1");
    cr_expect_str_eq(json_str_at(doc, "incident.device"), "Freezer A");
    cr_expect_eq(json_int_at(doc, "incident.opened"), ALARM_A);
    cr_expect_eq(json_int_at(doc, "incident.duration"), RECOVERY_A - ALARM_A);
    cr_expect_str_eq(json_str_at(doc, "incident.receivers.1"), "log");
    cr_expect(is_null(json_at(doc, "incident"), "acknowledged_by"));
    char *steps = steps_of(doc);
    cr_expect_str_eq(steps, "opened resolved");
    free(steps);
    json_object_put(doc);
    cmd_result_free(&r);

    r = cmd_at(LATER, "incidents", "show", a, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "(from the incident log: the state no longer keeps it)"), "%s", r.out);
    cmd_result_free(&r);

    /* --since still lists it, as the state no longer keeps it */
    r = cmd_at(LATER, "incidents", "--since", "3d", "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    arr = parse(&r);
    cr_assert_eq(json_object_array_length(arr), 2, "%s", r.out);
    struct json_object *ia = of_serial(arr, "serial", "5214000A");
    struct json_object *ib = of_serial(arr, "serial", "5214000B");
    cr_expect_str_eq(json_str_at(ia, "state"), "resolved");
    cr_expect_not(json_object_get_boolean(json_at(ia, "kept")));
    cr_expect_str_eq(json_str_at(ib, "state"), "acknowledged");
    cr_expect(json_object_get_boolean(json_at(ib, "kept")));
    cr_expect_eq(json_int_at(ib, "duration"), LATER - ALARM_B);
    json_object_put(arr);
    cmd_result_free(&r);
}

Test(incidents_cli, since_lists_the_incidents_of_a_span_from_the_log)
{
    night();
    char a[24], b[24];
    ids(a, b);
    struct cmd_result r = cmd_at(NOW, "incidents", "--since", "1d", "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct json_object *arr = parse(&r);
    cr_assert_eq(json_object_array_length(arr), 2, "%s", r.out);
    struct json_object *ia = of_serial(arr, "serial", "5214000A");
    struct json_object *ib = of_serial(arr, "serial", "5214000B");
    cr_expect_str_eq(json_str_at(ia, "id"), a);
    cr_expect_str_eq(json_str_at(ia, "state"), "resolved");
    cr_expect_eq(json_int_at(ia, "opened"), ALARM_A);
    cr_expect_eq(json_int_at(ia, "duration"), RECOVERY_A - ALARM_A);
    cr_expect_str_eq(json_str_at(ia, "device"), "Freezer A");
    cr_expect_str_eq(json_str_at(ia, "text"), "CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)");
    cr_expect(is_null(ia, "acknowledged_by"));
    cr_expect(json_object_get_boolean(json_at(ia, "kept")), "ended an hour ago: still kept");
    cr_expect_str_eq(json_str_at(ib, "id"), b);
    cr_expect_str_eq(json_str_at(ib, "state"), "acknowledged");
    cr_expect_str_eq(json_str_at(ib, "acknowledged_by"), "alice");
    cr_expect_eq(json_int_at(ib, "duration"), NOW - ALARM_B, "open: up to the span's end");
    cr_expect_eq(json_int_at(ib, "channel"), 1);
    json_object_put(arr);
    cmd_result_free(&r);

    r = cmd_at(NOW, "incidents", "--since", "7d", NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *line =
        xasprintf("%-6s resolved     2026-11-18 11:07 20 min     Freezer A (5214000A) ch1: "
                  "CH1 Upper Limit Exceeded -65.0°C (limit -70.0°C)\n",
                  a);
    cr_expect(strstr(r.out, line), "no\n%sin\n%s", line, r.out);
    free(line);
    cr_expect(strstr(r.out, "Freezer B (5214000B) ch1: CH1 Upper Limit Exceeded -61.5°C (limit "
                            "-70.0°C), acknowledged by alice\n"),
              "%s", r.out);
    cmd_result_free(&r);

    /* a span with no step of either: B's last step was alice's */
    r = cmd_at(LATER, "incidents", "--since", "1h", NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "no incident in the last 1h\n");
    cmd_result_free(&r);
}

/* Splits CSV `text` (RFC 4180, CRLF) into rows of cells: *rows[i][k]. */
struct csv {
    char ***rows;
    size_t *n_cells;
    size_t n;
};

static void csv_parse(struct csv *out, const char *text)
{
    *out = (struct csv){0};
    const char *p = text;
    while (*p) {
        char **cells = NULL;
        size_t n = 0;
        for (;;) {
            struct buf cell;
            buf_init(&cell, 0);
            if (*p == '"') {
                for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                    buf_append(&cell, p, 1);
                    if (*p == '"')
                        p++;
                }
                cr_assert_eq(*p, '"', "an unterminated quote");
                p++;
            } else {
                for (; *p && *p != ',' && *p != '\r' && *p != '\n'; p++)
                    buf_append(&cell, p, 1);
            }
            cells = xreallocarray(cells, n + 1, sizeof *cells);
            cells[n++] = buf_steal(&cell);
            if (*p == ',') {
                p++;
                continue;
            }
            cr_assert(p[0] == '\r' && p[1] == '\n', "a row ends with CRLF: %.20s", p);
            p += 2;
            break;
        }
        out->rows = xreallocarray(out->rows, out->n + 1, sizeof *out->rows);
        out->n_cells = xreallocarray(out->n_cells, out->n + 1, sizeof *out->n_cells);
        out->rows[out->n] = cells;
        out->n_cells[out->n++] = n;
    }
}

static void csv_free(struct csv *c)
{
    for (size_t i = 0; i < c->n; i++) {
        for (size_t k = 0; k < c->n_cells[i]; k++)
            free(c->rows[i][k]);
        free(c->rows[i]);
    }
    free(c->rows);
    free(c->n_cells);
}

Test(incidents_cli, csv_exports_every_step_of_the_span_header_first)
{
    night();
    char a[24], b[24];
    ids(a, b);
    struct cmd_result r = cmd_at(NOW, "incidents", "--since", "1d", "--csv", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct csv c;
    csv_parse(&c, r.out);
    cr_assert_eq(c.n, 1 + 5, "a header and five steps:\n%s", r.out);
    static const char *const header[] = {
        "at",    "incident", "seq",  "what",     "account",    "serial", "device",
        "kind",  "channel",  "rule", "severity", "receivers",  "by",     "note",
        "value", "limit",    "peak", "duration", "event_time", "text",
    };
    cr_assert_eq(c.n_cells[0], 20);
    for (size_t k = 0; k < 20; k++)
        cr_expect_str_eq(c.rows[0][k], header[k]);
    /* each incident's steps in order, the log's order by time */
    struct buf got;
    buf_init(&got, 0);
    for (size_t i = 1; i < c.n; i++) {
        cr_assert_eq(c.n_cells[i], 20, "row %zu", i);
        buf_printf(&got, "%s/%s/%s/%s/%s/%s\n", c.rows[i][5], c.rows[i][1], c.rows[i][2],
                   c.rows[i][3], c.rows[i][11], c.rows[i][12]);
        cr_expect_eq(strlen(c.rows[i][0]), strlen("2026-11-18T11:07:10Z"), "%s", c.rows[i][0]);
    }
    char *want_a = xasprintf("5214000A/%s/1/opened/hook log/\n", a);
    char *want_ra = xasprintf("5214000A/%s/2/resolved/hook log/\n", a);
    char *want_b = xasprintf("5214000B/%s/1/opened/hook log/\n", b);
    char *want_ack = xasprintf("5214000B/%s/2/acknowledged//alice\n", b);
    char *want_nb = xasprintf("5214000B/%s/3/notice/hook log/\n", b);
    const char *text = buf_str(&got);
    const char *wants[] = {want_a, want_ra, want_b, want_ack, want_nb};
    for (size_t i = 0; i < 5; i++)
        cr_expect(strstr(text, wants[i]), "no %s in\n%s", wants[i], text);
    cr_expect(strstr(text, want_a) < strstr(text, want_ra), "%s", text);
    cr_expect(strstr(text, want_b) < strstr(text, want_ack), "%s", text);
    cr_expect(strstr(text, want_ack) < strstr(text, want_nb), "%s", text);
    for (size_t i = 0; i < 5; i++)
        free((char *)wants[i]);
    buf_free(&got);
    csv_free(&c);
    cmd_result_free(&r);

    /* --csv alone: the last 30 days; a span after every step: the header
     * alone */
    r = cmd_at(NOW, "incidents", "--csv", NULL, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    csv_parse(&c, r.out);
    cr_expect_eq(c.n, 6);
    csv_free(&c);
    cmd_result_free(&r);
    r = cmd_at(LATER, "incidents", "--since", "1h", "--csv", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    csv_parse(&c, r.out);
    cr_expect_eq(c.n, 1, "%s", r.out);
    csv_free(&c);
    cmd_result_free(&r);
}

Test(incidents_cli, status_lists_the_open_incidents_and_stays_ok)
{
    start(NULL);
    run_minutes(T0 + 30, ACK_AT - 60);
    char a[24], b[24];
    ids(a, b);
    /* both open, nobody has them */
    struct cmd_result r = cmd_at(ACK_AT - 40, "status", NULL, NULL, NULL, NULL);
    cr_expect_eq(r.status, 0, "an open incident is no problem of the relay's:\n%s", r.out);
    cr_expect_eq(strncmp(r.out, "OK\n", 3), 0, "%s", r.out);
    char *la = xasprintf("\nincidents\n  incident %s: Freezer B ch1 open 8 min, not acknowledged\n"
                         "  incident %s: Freezer A ch1 open 3 min, not acknowledged\n",
                         b, a);
    cr_expect(strstr(r.out, la), "no\n%sin\n%s", la, r.out);
    free(la);
    cmd_result_free(&r);

    r = cmd_at(ACK_AT, "ack", b, "--by", "alice", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cmd_result_free(&r);
    run_minutes(ACK_AT + 30, NOW);
    r = cmd_at(NOW, "status", NULL, NULL, NULL, NULL);
    cr_expect_eq(r.status, 0, "%s", r.out);
    char *lb = xasprintf("\nincidents\n  incident %s: Freezer B ch1 open 45 min, acknowledged by "
                         "alice\n",
                         b);
    cr_expect(strstr(r.out, lb), "no\n%sin\n%s", lb, r.out);
    free(lb);
    cmd_result_free(&r);

    r = cmd_at(NOW, "status", "--json", NULL, NULL, NULL);
    cr_expect_eq(r.status, 0, "%s", r.out);
    struct json_object *doc = parse(&r);
    cr_expect_str_eq(json_str_at(doc, "verdict"), "OK");
    struct json_object *arr = json_at(doc, "incidents");
    cr_assert_eq(json_object_array_length(arr), 1, "%s", r.out);
    struct json_object *ib = json_object_array_get_idx(arr, 0);
    cr_expect_str_eq(json_str_at(ib, "id"), b);
    cr_expect_str_eq(json_str_at(ib, "key"), "5214000B/ch1");
    cr_expect_str_eq(json_str_at(ib, "state"), "acknowledged");
    cr_expect_eq(json_int_at(ib, "opened"), ALARM_B);
    cr_expect(json_int_at(ib, "age") > 0);
    cr_expect_str_eq(json_str_at(ib, "acknowledged_by"), "alice");
    cr_expect_eq(json_int_at(ib, "reminders"), 0);
    cr_expect_eq(json_int_at(ib, "step"), 0);
    json_object_put(doc);
    cmd_result_free(&r);
}

Test(incidents_cli, an_unknown_id_or_a_bad_span_is_an_error)
{
    night();
    struct cmd_result r = cmd_at(NOW, "incidents", "show", "999", NULL, NULL);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect_str_eq(r.out, "");
    cr_expect(strstr(r.err, "wsrelay: incidents: no incident 999: neither the state nor the "
                            "incident log knows it"),
              "%s", r.err);
    cmd_result_free(&r);

    const char *const usage[][3] = {
        {"--since", "3x", "--since: '3x' is not a duration (such as 7d or 30d)"},
        {"--since", "0", "--since: '0' is not a duration"},
        {"show", "abc", "'abc' is not an incident id"},
        {"show", "0", "'0' is not an incident id"},
        {"--all", "--csv", "--csv exports the incident log: use --since, not --all"},
        {"--csv", "--json", "--csv or --json, not both"},
        {"frobnicate", NULL, "unknown operand 'frobnicate'"},
    };
    for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
        r = cmd_at(NOW, "incidents", usage[i][0], usage[i][1], NULL, NULL);
        cr_expect_eq(r.status, 2, "%s %s: %s", usage[i][0], usage[i][1], r.err);
        cr_expect(strstr(r.err, usage[i][2]), "%s %s:\n%s", usage[i][0], usage[i][1], r.err);
        cr_expect_str_eq(r.out, "");
        cmd_result_free(&r);
    }
    r = cmd_at(NOW, "incidents", "show", "1", "--since", "1d");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "show takes --json and --now only"), "%s", r.err);
    cmd_result_free(&r);
}

/* The month file of the log named `name` with one line of incident 1. */
static void month_file(const char *dir, const char *name, long long at)
{
    char *path = xasprintf("%s/%s", dir, name);
    char *line = xasprintf("{\"at\":%lld,\"incident\":\"1\",\"seq\":1,\"what\":\"opened\"}\n", at);
    write_file(path, line);
    free(line);
    free(path);
}

Test(incidents_cli, each_run_keeps_the_log_within_incidents_keep)
{
    /* keep 60 days: at T0 (2026-11-18) what ended before 2026-09-19 goes */
    start("incidents:\n  keep: 60d\n");
    char *dir = xasprintf("%s.incidents", R.state_path);
    cr_assert_eq(mkdir(dir, 0700), 0);
    month_file(dir, "2026-08.jsonl", 1786000000LL); /* 2026-08-05: ended 2026-09-01 */
    month_file(dir, "2026-09.jsonl", 1789000000LL); /* 2026-09-10: ends 2026-10-01 */
    char *notes = xasprintf("%s/notes.txt", dir);
    write_file(notes, "x"); /* not a month file: left alone */
    free(notes);
    run_minutes(T0 + 30, T0 + 30);
    cr_expect_eq(test_count_files(dir, "2026-08"), 0, "older than keep: removed");
    cr_expect_eq(test_count_files(dir, "2026-09"), 1, "within keep: kept");
    cr_expect_eq(test_count_files(dir, "notes.txt"), 1);

    /* a month file that cannot be removed (here a directory in its
     * place) is a warning, and the run succeeds */
    char *stuck = xasprintf("%s/2026-07.jsonl", dir);
    cr_assert_eq(mkdir(stuck, 0700), 0);
    month_file(stuck, "inside", 1);
    /* the configuration written anew: the next run is a full one, not a
     * quiet one (quiet.h) */
    relay_config_extra(&R, NULL, NULL, "incidents:\n  keep: 60d\n");
    char *err = NULL;
    int status = relay_run_at(&R, T0 + 90, &err);
    cr_expect_eq(status, 0, "%s", err);
    cr_expect(strstr(err, "incident log: ") && strstr(err, "2026-07.jsonl: cannot remove"), "%s",
              err);
    cr_expect(strstr(err, "(the next run tries again)"), "%s", err);
    free(err);
    free(stuck);
    free(dir);
}
