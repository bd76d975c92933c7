/* Running wsrelay-sim from a test and steering it through its /_sim/
 * control endpoints (tests/sim/README.md). Every function fails the test
 * when the simulator does not answer as documented. */
#ifndef WSRELAY_TEST_SIMCTL_H
#define WSRELAY_TEST_SIMCTL_H

#include "http.h"
#include "proc.h"

#include <json-c/json.h>

struct sim {
    struct proc proc;
    int port;
    char *base_url; /* "http://127.0.0.1:PORT", no trailing slash */
    char *dir;      /* where its stdout, stderr and port file are */
};

/* Starts WSRELAY_SIM_BIN on `scenario_path` with --port 0 and a port file in
 * the existing directory `dir`, and waits up to 10 s until it listens. When
 * the simulator exits or stays silent, the test fails with its stderr.
 * *s is overwritten; release it with sim_stop. */
void sim_start(struct sim *s, const char *scenario_path, const char *dir);

/* sim_start with --latency: every platform reply is held `latency_ms`. */
void sim_start_slow(struct sim *s, const char *scenario_path, const char *dir, unsigned latency_ms);

/* Stops the simulator (SIGTERM, then SIGKILL after 5 s) and frees *s; fails
 * the test when it did not exit with status 0 (a crash, or a leak report
 * in a sanitizer build). Accepts a zeroed or already stopped sim. */
void sim_stop(struct sim *s);

/* The virtual clock: read it, set it, move it by `seconds` (may be < 0). */
long long sim_clock(struct sim *s);
void sim_set_clock(struct sim *s, long long now);
void sim_advance(struct sim *s, long long seconds);

/* Adds an alert-log entry to the device(s) with `serial`; `alert_json` is an
 * entry object as in a scenario, e.g. {"unixtime":1795000100,"ch1":"..."}. */
void sim_add_alert(struct sim *s, const char *serial, const char *alert_json);

/* The next `count` accepted calls of `op` (an operation's name: "current",
 * "alert", "latest-data", "data", ...) answer `status` with `body` (NULL:
 * the platform's error object, code = status). */
void sim_fault(struct sim *s, const char *op, int status, int count, const char *body);

/* GET /_sim/stats, parsed (new reference; json_object_put it). */
struct json_object *sim_stats(struct sim *s);

/* A platform call to the simulator as the client must make it: POST
 * /v1/devices/OP with X-HTTP-Method-Override: GET and the JSON body
 * {CREDS,FIELDS} (`creds` and `fields` are members written out, `fields`
 * may be ""). Fails the test when no reply comes; *r is the caller's to
 * free (http_reply_free). */
void sim_call(struct http_reply *r, struct sim *s, const char *op, const char *creds,
              const char *fields);

/* The body of `r` parsed as JSON (new reference); fails the test when it
 * is not JSON. */
struct json_object *sim_reply_json(const struct http_reply *r);

/* The integer value of header `name` of `r`; fails the test when absent. */
long sim_header_num(const struct http_reply *r, const char *name);

/* Expects the three rate-limit headers of a platform reply. */
void sim_expect_rate(const struct http_reply *r, long limit, long remaining, long reset);

#endif
