/* The platform's six operations as the simulator plays them: the request
 * checks in the documented order, per-login sliding-window rate limits on
 * the virtual clock, the data count of the period operations, injected
 * faults, and a log of every authenticated call so that tests can check
 * what a client did, not only what it was told. The graph-data operations
 * themselves are in graph.c. */
#include "world.h"
#include "graph.h"
#include "limiter.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum op { OP_CURRENT, OP_ALERT, OP_LATEST, OP_LATEST_RTR500, OP_DATA, OP_DATA_RTR500, N_OPS };

/* The operations the simulator offers and their limits (spec: "Limits").
 * The flags describe the graph-data operations (OP_LATEST and after). */
static const struct op_row {
    const char *name;
    const char *path;
    int limit;
    long long span;
    bool rtr500; /* for the remote units of a base unit */
    bool period; /* by period and number, with the data count */
} op_table[N_OPS] = {
    [OP_CURRENT] = {"current", "/v1/devices/current", 10, 120, false, false},
    [OP_ALERT] = {"alert", "/v1/devices/alert", 12, 3600, false, false},
    [OP_LATEST] = {"latest-data", "/v1/devices/latest-data", 60, 60, false, false},
    [OP_LATEST_RTR500] = {"latest-data-rtr500", "/v1/devices/latest-data-rtr500", 60, 60, true,
                          false},
    [OP_DATA] = {"data", "/v1/devices/data", 20, 60, false, true},
    [OP_DATA_RTR500] = {"data-rtr500", "/v1/devices/data-rtr500", 20, 60, true, true},
};

struct fault {
    int status;
    int count;  /* calls still to be answered with this fault */
    char *body; /* NULL: the error object */
};

struct call {
    long long t;
    enum op op;
    size_t account;
    char *serial; /* remote-serial when it was a string (never for current) */
    int status;
};

/* Readings a period call served, for the data count. */
struct served {
    long long t;
    const struct device *d; /* devices belong to one account: per login ID */
    size_t count;
};

struct world {
    struct scenario *sc;
    long long now;
    struct limiter *(*limiters)[N_OPS]; /* one row per account */
    struct fault faults[N_OPS];
    struct call *calls;
    size_t n_calls, cap_calls;
    struct served *served;
    size_t n_served;
    size_t rejected_429;
    /* requests in progress, and the most at once: in all and per
     * operation (index N_OPS: a path that is none) */
    unsigned in_flight, max_in_flight;
    unsigned op_in_flight[N_OPS + 1], op_max_in_flight[N_OPS + 1];
};

struct world *world_new(struct scenario *sc)
{
    struct world *w = xcalloc(1, sizeof *w);
    w->sc = sc;
    w->now = sc->now;
    w->limiters = xcalloc(sc->n_accounts, sizeof *w->limiters);
    for (size_t i = 0; i < sc->n_accounts; i++) {
        for (int op = 0; op < N_OPS; op++)
            w->limiters[i][op] = limiter_new(op_table[op].limit, op_table[op].span);
    }
    return w;
}

void world_free(struct world *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->sc->n_accounts; i++) {
        for (int op = 0; op < N_OPS; op++)
            limiter_free(w->limiters[i][op]);
    }
    free(w->limiters);
    for (int op = 0; op < N_OPS; op++)
        free(w->faults[op].body);
    for (size_t i = 0; i < w->n_calls; i++)
        free(w->calls[i].serial);
    free(w->calls);
    free(w->served);
    scenario_free(w->sc);
    free(w);
}

long long world_now(const struct world *w)
{
    return w->now;
}

void world_set_now(struct world *w, long long now)
{
    w->now = now;
}

int world_add_alert(struct world *w, const char *serial, const struct json_object *alert,
                    struct err *e)
{
    return scenario_add_alert(w->sc, serial, alert, e);
}

int world_add_reading(struct world *w, const char *serial, const struct json_object *reading,
                      struct err *e)
{
    return scenario_add_reading(w->sc, serial, reading, e);
}

int world_set_fault(struct world *w, const char *op, int status, int count, const char *body,
                    struct err *e)
{
    for (int i = 0; i < N_OPS; i++) {
        if (strcmp(op_table[i].name, op) == 0) {
            free(w->faults[i].body);
            w->faults[i].status = status;
            w->faults[i].count = count;
            w->faults[i].body = xstrdup_or_null(body);
            return 0;
        }
    }
    return err_set(e,
                   "unknown op '%s' (use current, alert, latest-data, latest-data-rtr500, data "
                   "or data-rtr500)",
                   op);
}

/* What the data count still allows for `d` after the readings served to
 * it in (now - span, now]; the whole count for NULL (no device named). */
static size_t data_budget(const struct world *w, const struct device *d)
{
    size_t used = 0;
    for (size_t i = 0; d && i < w->n_served; i++) {
        const struct served *s = &w->served[i];
        if (s->d == d && s->t > w->now - GRAPH_DATA_COUNT_SPAN && s->t <= w->now)
            used += s->count;
    }
    return used >= GRAPH_DATA_COUNT_LIMIT ? 0 : GRAPH_DATA_COUNT_LIMIT - used;
}

static void record_served(struct world *w, const struct device *d, size_t count)
{
    w->served = xgrowarray(w->served, w->n_served, sizeof *w->served);
    w->served[w->n_served++] = (struct served){.t = w->now, .d = d, .count = count};
}

static void record_call(struct world *w, enum op op, size_t account, const char *serial, int status)
{
    if (w->n_calls == w->cap_calls) {
        w->cap_calls = w->cap_calls ? w->cap_calls * 2 : 64;
        w->calls = xreallocarray(w->calls, w->cap_calls, sizeof *w->calls);
    }
    w->calls[w->n_calls++] = (struct call){.t = w->now,
                                           .op = op,
                                           .account = account,
                                           .serial = xstrdup_or_null(serial),
                                           .status = status};
    if (status == 429)
        w->rejected_429++;
}

/* "application/json", any case, optionally followed by "; parameters". */
static bool is_json_type(const char *ct)
{
    static const char want[] = "application/json";
    if (!ct || strncasecmp(ct, want, sizeof want - 1) != 0)
        return false;
    const char *rest = ct + sizeof want - 1;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    return *rest == '\0' || *rest == ';';
}

static const char *member_string(const struct json_object *obj, const char *key)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static bool is_string_array(const struct json_object *v)
{
    if (!json_object_is_type(v, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string))
            return false;
    }
    return true;
}

static bool in_list(const struct json_object *list, const char *serial)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        if (strcmp(json_object_get_string(json_object_array_get_idx(list, i)), serial) == 0)
            return true;
    }
    return false;
}

/* Get Current Readings, after authentication and the rate limit. */
static void answer_current(const struct world *w, const struct account *a,
                           const struct json_object *body, struct reply *out)
{
    struct json_object *remote = NULL, *base = NULL;
    bool has_remote = json_object_object_get_ex(body, "remote-serial", &remote);
    bool has_base = json_object_object_get_ex(body, "base-serial", &base);
    if (has_remote && has_base) {
        reply_error(out, 400, "give remote-serial or base-serial, not both");
        return;
    }
    if ((has_remote && !is_string_array(remote)) || (has_base && !is_string_array(base))) {
        reply_error(out, 400, "%s must be an array of strings",
                    has_remote ? "remote-serial" : "base-serial");
        return;
    }
    struct json_object *devices = json_object_new_array();
    for (size_t i = 0; i < a->n_devices; i++) {
        const struct device *d = &a->devices[i];
        if (has_remote && !in_list(remote, d->serial))
            continue;
        if (has_base && !in_list(base, d->base_serial))
            continue;
        json_object_array_add(devices, scenario_device_record(a, d, w->now));
    }
    struct json_object *root = json_object_new_object();
    json_object_object_add(root, "devices", devices);
    reply_json(out, 200, root);
}

/* The device named by the string remote-serial and, `with_base`, whose
 * base unit is the string base-serial; NULL with a 400 in `out` when
 * there is none. */
static const struct device *requested_device(struct reply *out, const struct account *a,
                                             const struct json_object *body, bool with_base)
{
    const char *remote = member_string(body, "remote-serial");
    const char *base = with_base ? member_string(body, "base-serial") : "";
    if (!remote || !base) {
        reply_error(out, 400, "%s is required and must be a string",
                    !remote ? "remote-serial" : "base-serial");
        return NULL;
    }
    const struct device *d = scenario_find_device(a, remote);
    if (!d) {
        reply_error(out, 400, "unknown remote-serial '%s'", remote);
        return NULL;
    }
    if (with_base && strcmp(d->base_serial, base) != 0) {
        reply_error(out, 400, "base-serial '%s' is not the base unit of '%s'", base, remote);
        return NULL;
    }
    return d;
}

/* Get Alert Logs, after authentication and the rate limit. */
static void answer_alert(const struct world *w, const struct account *a,
                         const struct json_object *body, struct reply *out)
{
    const struct device *d = requested_device(out, a, body, true);
    if (!d)
        return;
    if (!d->alert_supported) {
        reply_error(out, 400, "alert logs are not available for this device model (%s)", d->model);
        return;
    }
    reply_json(out, 200, scenario_alert_record(a, d, w->now));
}

/* A graph-data operation (graph.h), after authentication and the rate
 * limit; returns the number of readings served. */
static size_t answer_graph(const struct world *w, enum op op, const struct account *a,
                           const struct json_object *body, size_t budget, struct reply *out)
{
    const struct device *d = requested_device(out, a, body, op_table[op].rtr500);
    if (!d)
        return 0;
    struct graph_call call = {.a = a,
                              .d = d,
                              .body = body,
                              .now = w->now,
                              .rtr500 = op_table[op].rtr500,
                              .period = op_table[op].period,
                              .budget = budget};
    return graph_answer(out, &call);
}

/* Finds the account whose three credentials all match; -1 when none. */
static long find_account(const struct scenario *sc, const char *key, const char *id,
                         const char *pass)
{
    for (size_t i = 0; i < sc->n_accounts; i++) {
        const struct account *a = &sc->accounts[i];
        if (strcmp(a->api_key, key) == 0 && strcmp(a->login_id, id) == 0 &&
            strcmp(a->login_pass, pass) == 0)
            return (long)i;
    }
    return -1;
}

/* Steps 1 to 4 of the checks: the method, the body and the credentials.
 * Returns the account's index and the body (*body, new reference), or -1
 * with the error in `out` (and *body NULL). */
static long authenticate(struct json_object **body, const struct world *w, const struct request *rq,
                         struct reply *out)
{
    long acct = -1;
    *body = NULL;
    if (strcmp(rq->method, "POST") != 0) {
        reply_error(out, 400, "method %s not allowed: use POST with X-HTTP-Method-Override: GET",
                    rq->method);
        goto out;
    }
    if (!rq->method_override || strcmp(rq->method_override, "GET") != 0) {
        reply_error(out, 400, "X-HTTP-Method-Override: GET is required");
        goto out;
    }
    if (!is_json_type(rq->content_type)) {
        reply_error(out, 415, "Content-Type must be application/json");
        goto out;
    }
    *body = request_json_object(rq);
    if (!*body) {
        reply_error(out, 415, "the body must be one JSON object");
        goto out;
    }
    const char *key = member_string(*body, "api-key");
    const char *id = member_string(*body, "login-id");
    const char *pass = member_string(*body, "login-pass");
    if (!key || !id || !pass) {
        reply_error(out, 400, "%s is required", !key ? "api-key" : !id ? "login-id" : "login-pass");
        goto out;
    }
    acct = find_account(w->sc, key, id, pass);
    if (acct < 0)
        reply_error(out, 401, "authentication failed");
out:
    if (acct < 0) {
        json_object_put(*body);
        *body = NULL;
    }
    return acct;
}

static void answer_op(struct world *w, enum op op, const struct request *rq, struct reply *out)
{
    struct json_object *body;
    long acct = authenticate(&body, w, rq, out);
    if (acct < 0)
        return;
    const struct account *a = &w->sc->accounts[acct];
    const char *serial = op == OP_CURRENT ? NULL : member_string(body, "remote-serial");
    const struct device *named = serial ? scenario_find_device(a, serial) : NULL;
    size_t budget = data_budget(w, named), served = 0;

    out->rate_headers = true;
    limiter_take(&out->rate, w->limiters[acct][op], w->now);
    struct fault *f = &w->faults[op];
    if (!out->rate.accepted) {
        reply_error(out, 429, "rate limit exceeded: %d %s calls per %lld s", op_table[op].limit,
                    op_table[op].name, op_table[op].span);
    } else if (f->count > 0) {
        f->count--;
        if (f->body)
            reply_raw(out, f->status, f->body);
        else
            reply_error(out, f->status, "simulated fault");
    } else if (op == OP_CURRENT) {
        answer_current(w, a, body, out);
    } else if (op == OP_ALERT) {
        answer_alert(w, a, body, out);
    } else {
        served = answer_graph(w, op, a, body, budget, out);
    }
    if (op_table[op].period) {
        if (served)
            record_served(w, named, served);
        out->data_count_header = true;
        out->data_count = (long long)(budget - served);
    }
    record_call(w, op, (size_t)acct, serial, out->status);
    json_object_put(body);
}

/* The operation at `path`; N_OPS when none is. */
static int op_of_path(const char *path)
{
    int op = 0;
    while (op < N_OPS && strcmp(path, op_table[op].path) != 0)
        op++;
    return op;
}

void world_answer(struct world *w, const struct request *rq, struct reply *out)
{
    int op = op_of_path(rq->path);
    if (op < N_OPS)
        answer_op(w, (enum op)op, rq, out);
    else
        reply_error(out, 404, "no such operation: %s", rq->path);
}

void world_flight_begin(struct world *w, const char *path)
{
    int op = op_of_path(path);
    if (++w->in_flight > w->max_in_flight)
        w->max_in_flight = w->in_flight;
    if (++w->op_in_flight[op] > w->op_max_in_flight[op])
        w->op_max_in_flight[op] = w->op_in_flight[op];
}

void world_flight_end(struct world *w, const char *path)
{
    w->in_flight--;
    w->op_in_flight[op_of_path(path)]--;
}

struct json_object *world_stats(const struct world *w)
{
    const struct scenario *sc = w->sc;
    struct json_object *calls = json_object_new_array();
    for (size_t i = 0; i < w->n_calls; i++) {
        const struct call *c = &w->calls[i];
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "t", json_object_new_int64(c->t));
        json_object_object_add(o, "op", json_object_new_string(op_table[c->op].name));
        json_object_object_add(o, "login_id",
                               json_object_new_string(sc->accounts[c->account].login_id));
        json_object_object_add(o, "serial", c->serial ? json_object_new_string(c->serial) : NULL);
        json_object_object_add(o, "status", json_object_new_int(c->status));
        json_object_array_add(calls, o);
    }
    struct json_object *totals = json_object_new_object();
    struct json_object *max_alert = json_object_new_object();
    for (size_t i = 0; i < sc->n_accounts; i++) {
        size_t count[N_OPS] = {0};
        for (size_t j = 0; j < w->n_calls; j++) {
            if (w->calls[j].account == i)
                count[w->calls[j].op]++;
        }
        struct json_object *t = json_object_new_object();
        for (int op = 0; op < N_OPS; op++)
            json_object_object_add(t, op_table[op].name, json_object_new_int64((int64_t)count[op]));
        json_object_object_add(totals, sc->accounts[i].login_id, t);
        json_object_object_add(
            max_alert, sc->accounts[i].login_id,
            json_object_new_int64((int64_t)limiter_max_in_window(w->limiters[i][OP_ALERT])));
    }
    struct json_object *root = json_object_new_object();
    json_object_object_add(root, "now", json_object_new_int64(w->now));
    json_object_object_add(root, "calls", calls);
    json_object_object_add(root, "totals", totals);
    json_object_object_add(root, "rejected_429", json_object_new_int64((int64_t)w->rejected_429));
    json_object_object_add(root, "max_alert_calls_per_hour", max_alert);
    json_object_object_add(root, "max_in_flight", json_object_new_int64(w->max_in_flight));
    struct json_object *by_op = json_object_new_object();
    for (int op = 0; op < N_OPS; op++)
        json_object_object_add(by_op, op_table[op].name,
                               json_object_new_int64(w->op_max_in_flight[op]));
    json_object_object_add(root, "max_in_flight_by_op", by_op);
    return root;
}
