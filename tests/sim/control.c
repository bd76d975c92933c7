/* Steering the simulated platform from tests: read or move the virtual
 * clock, add alert-log entries and readings, inject faults, and read the
 * call log. Each endpoint is one row of a table and one small function. */
#include "control.h"
#include "util/err.h"

#include <limits.h>
#include <string.h>

static struct json_object *now_object(const struct world *w)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "now", json_object_new_int64(world_now(w)));
    return o;
}

static void get_clock(struct world *w, const struct json_object *body, struct reply *out)
{
    (void)body;
    reply_json(out, 200, now_object(w));
}

/* {"now":N} sets the clock, {"advance":S} moves it (S may be negative). */
static void set_clock(struct world *w, const struct json_object *body, struct reply *out)
{
    struct json_object *now = NULL, *advance = NULL;
    bool has_now = json_object_object_get_ex(body, "now", &now);
    bool has_advance = json_object_object_get_ex(body, "advance", &advance);
    if (has_now == has_advance || json_object_object_length(body) != 1) {
        reply_error(out, 400, "give exactly one of \"now\" and \"advance\"");
        return;
    }
    struct json_object *v = has_now ? now : advance;
    if (!json_object_is_type(v, json_type_int)) {
        reply_error(out, 400, "\"%s\" must be an integer", has_now ? "now" : "advance");
        return;
    }
    long long n = (long long)json_object_get_int64(v);
    world_set_now(w, has_now ? n : world_now(w) + n);
    reply_json(out, 200, now_object(w));
}

/* {"serial":"...","alert":{"unixtime":N,"ch1":"..."}} */
static void add_alert(struct world *w, const struct json_object *body, struct reply *out)
{
    struct json_object *serial, *alert;
    struct err e;
    if (!json_object_object_get_ex(body, "serial", &serial) ||
        !json_object_is_type(serial, json_type_string) ||
        !json_object_object_get_ex(body, "alert", &alert)) {
        reply_error(out, 400, "give \"serial\" (a string) and \"alert\" (an object)");
        return;
    }
    if (world_add_alert(w, json_object_get_string(serial), alert, &e) < 0) {
        reply_error(out, 400, "%s", e.msg);
        return;
    }
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "added", json_object_new_boolean(1));
    reply_json(out, 200, o);
}

/* {"serial":"...","reading":{"at":N,"unixtime":N,"values":[...],"battery":N}} */
static void add_reading(struct world *w, const struct json_object *body, struct reply *out)
{
    struct json_object *serial, *reading;
    struct err e;
    if (!json_object_object_get_ex(body, "serial", &serial) ||
        !json_object_is_type(serial, json_type_string) ||
        !json_object_object_get_ex(body, "reading", &reading)) {
        reply_error(out, 400, "give \"serial\" (a string) and \"reading\" (an object)");
        return;
    }
    if (world_add_reading(w, json_object_get_string(serial), reading, &e) < 0) {
        reply_error(out, 400, "%s", e.msg);
        return;
    }
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "added", json_object_new_boolean(1));
    reply_json(out, 200, o);
}

static int int_member(int *out, const struct json_object *obj, const char *key, int lo, int hi)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
        return -1;
    int64_t n = json_object_get_int64(v);
    if (n < lo || n > hi)
        return -1;
    *out = (int)n;
    return 0;
}

/* {"op":"alert","status":503,"count":2,"body":"optional raw body"} */
static void set_fault(struct world *w, const struct json_object *body, struct reply *out)
{
    struct json_object *op, *raw = NULL;
    int status, count;
    struct err e;
    if (!json_object_object_get_ex(body, "op", &op) || !json_object_is_type(op, json_type_string)) {
        reply_error(out, 400, "\"op\" must be the name of an operation (a string)");
        return;
    }
    if (int_member(&status, body, "status", 200, 599) < 0 ||
        int_member(&count, body, "count", 0, INT_MAX) < 0) {
        reply_error(out, 400, "\"status\" (200-599) and \"count\" (>= 0) must be integers");
        return;
    }
    if (json_object_object_get_ex(body, "body", &raw) &&
        !json_object_is_type(raw, json_type_string)) {
        reply_error(out, 400, "\"body\" must be a string");
        return;
    }
    if (world_set_fault(w, json_object_get_string(op), status, count,
                        raw ? json_object_get_string(raw) : NULL, &e) < 0) {
        reply_error(out, 400, "%s", e.msg);
        return;
    }
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "op", json_object_new_string(json_object_get_string(op)));
    json_object_object_add(o, "status", json_object_new_int(status));
    json_object_object_add(o, "pending", json_object_new_int(count));
    reply_json(out, 200, o);
}

static void get_stats(struct world *w, const struct json_object *body, struct reply *out)
{
    (void)body;
    reply_json(out, 200, world_stats(w));
}

static const struct endpoint {
    const char *method;
    const char *path;
    bool wants_body; /* the body must be a JSON object */
    void (*answer)(struct world *w, const struct json_object *body, struct reply *out);
} endpoints[] = {
    {"GET", "/_sim/clock", false, get_clock},  {"POST", "/_sim/clock", true, set_clock},
    {"POST", "/_sim/alerts", true, add_alert}, {"POST", "/_sim/readings", true, add_reading},
    {"POST", "/_sim/faults", true, set_fault}, {"GET", "/_sim/stats", false, get_stats},
};

void control_answer(struct world *w, const struct request *rq, struct reply *out)
{
    struct json_object *body = NULL;
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++) {
        const struct endpoint *ep = &endpoints[i];
        if (strcmp(ep->method, rq->method) != 0 || strcmp(ep->path, rq->path) != 0)
            continue;
        if (ep->wants_body) {
            body = request_json_object(rq);
            if (!body) {
                reply_error(out, 400, "the body must be one JSON object");
                goto out;
            }
        }
        ep->answer(w, body, out);
        goto out;
    }
    reply_error(out, 404, "no such control endpoint: %s %s", rq->method, rq->path);
out:
    json_object_put(body);
}
