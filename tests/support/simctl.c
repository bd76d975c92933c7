/* Starting, steering and stopping the platform simulator from tests. */
#include "simctl.h"
#include "http.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 10000

static void fail_with_stderr(struct sim *s, const char *what)
{
    char *err = proc_stderr(&s->proc);
    cr_log_error("wsrelay-sim stderr:\n%.4000s", err);
    free(err);
    proc_stop(&s->proc);
    cr_assert_fail("wsrelay-sim %s", what);
}

void sim_start(struct sim *s, const char *scenario_path, const char *dir)
{
    sim_start_slow(s, scenario_path, dir, 0);
}

void sim_start_slow(struct sim *s, const char *scenario_path, const char *dir, unsigned latency_ms)
{
    memset(s, 0, sizeof *s);
    char latency[16];
    snprintf(latency, sizeof latency, "%u", latency_ms);
    s->dir = xstrdup(dir);
    static unsigned started; /* tells apart several simulators in one dir */
    char *port_file = xasprintf("%s/sim-%ld-%u.port", dir, (long)getpid(), started++);
    unlink(port_file);
    char *argv[] = {(char *)WSRELAY_SIM_BIN,
                    (char *)"--scenario",
                    (char *)scenario_path,
                    (char *)"--port",
                    (char *)"0",
                    (char *)"--port-file",
                    port_file,
                    (char *)"--latency",
                    latency,
                    NULL};
    proc_start(&s->proc, argv, NULL, dir);
    for (int waited = 0; !s->port; waited += 10) {
        s->port = test_read_port(port_file);
        if (s->port)
            break;
        int status = proc_poll(&s->proc);
        if (status >= 0) {
            free(port_file);
            char what[64];
            snprintf(what, sizeof what, "exited with status %d before listening", status);
            fail_with_stderr(s, what);
        }
        if (waited >= START_TIMEOUT_MS) {
            free(port_file);
            fail_with_stderr(s, "did not write its port file within 10 s");
        }
        test_sleep_ms(10);
    }
    free(port_file);
    s->base_url = xasprintf("http://127.0.0.1:%d", s->port);
}

void sim_stop(struct sim *s)
{
    if (!s)
        return;
    int status = 0;
    char *err = NULL;
    if (s->proc.pid > 0 || s->proc.exited) {
        status = proc_terminate(&s->proc, 5);
        if (status != 0)
            err = proc_stderr(&s->proc);
    }
    proc_stop(&s->proc);
    free(s->base_url);
    free(s->dir);
    memset(s, 0, sizeof *s);
    if (status != 0) {
        cr_log_error("wsrelay-sim stderr:\n%.4000s", err);
        free(err);
        cr_assert_fail("wsrelay-sim ended with status %d (want 0)", status);
    }
}

/* Sends a control request and returns the parsed JSON reply of a 200. */
static struct json_object *control(struct sim *s, const char *method, const char *path,
                                   const char *body)
{
    struct http_reply r;
    char *url = xasprintf("%s%s", s->base_url, path);
    int rc = http_request(&r, method, url, body ? "application/json" : NULL, body, NULL);
    free(url);
    if (rc < 0 || r.status != 200) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s %s -> %ld %.300s", method, path, r.status,
                 r.body ? r.body : "(no reply)");
        http_reply_free(&r);
        cr_assert_fail("wsrelay-sim control: %s", msg);
    }
    struct json_object *obj = json_tokener_parse(r.body);
    http_reply_free(&r);
    cr_assert(obj, "wsrelay-sim control: %s %s: reply is not JSON", method, path);
    return obj;
}

static long long clock_call(struct sim *s, const char *method, const char *body)
{
    struct json_object *o = control(s, method, "/_sim/clock", body);
    struct json_object *now;
    cr_assert(json_object_object_get_ex(o, "now", &now), "/_sim/clock: no \"now\"");
    long long n = (long long)json_object_get_int64(now);
    json_object_put(o);
    return n;
}

long long sim_clock(struct sim *s)
{
    return clock_call(s, "GET", NULL);
}

void sim_set_clock(struct sim *s, long long now)
{
    char body[64];
    snprintf(body, sizeof body, "{\"now\":%lld}", now);
    long long got = clock_call(s, "POST", body);
    cr_assert(got == now, "sim_set_clock: clock is %lld, want %lld", got, now);
}

void sim_advance(struct sim *s, long long seconds)
{
    char body[64];
    snprintf(body, sizeof body, "{\"advance\":%lld}", seconds);
    clock_call(s, "POST", body);
}

void sim_add_alert(struct sim *s, const char *serial, const char *alert_json)
{
    struct json_object *alert = json_tokener_parse(alert_json);
    cr_assert(alert, "sim_add_alert: not JSON: %s", alert_json);
    struct json_object *req = json_object_new_object();
    json_object_object_add(req, "serial", json_object_new_string(serial));
    json_object_object_add(req, "alert", alert);
    json_object_put(control(s, "POST", "/_sim/alerts", json_object_to_json_string(req)));
    json_object_put(req);
}

void sim_fault(struct sim *s, const char *op, int status, int count, const char *body)
{
    struct json_object *req = json_object_new_object();
    json_object_object_add(req, "op", json_object_new_string(op));
    json_object_object_add(req, "status", json_object_new_int(status));
    json_object_object_add(req, "count", json_object_new_int(count));
    if (body)
        json_object_object_add(req, "body", json_object_new_string(body));
    json_object_put(control(s, "POST", "/_sim/faults", json_object_to_json_string(req)));
    json_object_put(req);
}

struct json_object *sim_stats(struct sim *s)
{
    return control(s, "GET", "/_sim/stats", NULL);
}

void sim_call(struct http_reply *r, struct sim *s, const char *op, const char *creds,
              const char *fields)
{
    char *url = xasprintf("%s/v1/devices/%s", s->base_url, op);
    char *body = xasprintf("{%s%s%s}", creds, *fields ? "," : "", fields);
    char *const headers[] = {(char *)"X-HTTP-Method-Override: GET", NULL};
    int rc = http_request(r, "POST", url, "application/json", body, headers);
    cr_assert_eq(rc, 0, "no reply from %s", url);
    free(url);
    free(body);
}

struct json_object *sim_reply_json(const struct http_reply *r)
{
    struct json_object *o = json_tokener_parse(r->body);
    cr_assert(o, "not JSON: %.400s", r->body);
    return o;
}

long sim_header_num(const struct http_reply *r, const char *name)
{
    const char *v = http_header(r, name);
    cr_assert(v, "no %s header in:\n%s", name, r->headers);
    return strtol(v, NULL, 10);
}

void sim_expect_rate(const struct http_reply *r, long limit, long remaining, long reset)
{
    cr_expect_eq(sim_header_num(r, "X-RateLimit-Limit"), limit);
    cr_expect_eq(sim_header_num(r, "X-RateLimit-Remaining"), remaining);
    cr_expect_eq(sim_header_num(r, "X-RateLimit-Reset"), reset);
}
