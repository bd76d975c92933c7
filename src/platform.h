/* The platform client: the six operations of the platform interface over
 * HTTPS: Get Current Readings, Get Alert Logs, and the graph-data
 * operations (Get Latest Data and Get Data by Period and Number, each for
 * standalone devices and for base-attached remote units, the -rtr500
 * variants), whose records series.h reads.
 *
 * Every request is a POST with `X-HTTP-Method-Override: GET` and a JSON body
 * carrying the credentials. TLS verification is always on; plain http is
 * accepted only for a loopback host (the simulator). Calls to several
 * login IDs run in parallel through platform_multi_call; a connection is
 * kept open for the next call of the same client (by the client for
 * platform_call, by the struct platform_multi for platform_multi_call).
 * The rate-limit headers are read from every response, errors included. An error is keyed on the
 * HTTP status and the body's numeric code, never on the (localised) message. */
#ifndef WSRELAY_PLATFORM_H
#define WSRELAY_PLATFORM_H

#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>

enum platform_op {
    PLATFORM_CURRENT,
    PLATFORM_ALERT,
    PLATFORM_LATEST,        /* latest-data: a standalone device's 300 newest readings */
    PLATFORM_LATEST_RTR500, /* latest-data-rtr500: the same of a base-attached remote unit */
    PLATFORM_DATA,          /* data: a standalone device's readings by period and number */
    PLATFORM_DATA_RTR500,   /* data-rtr500: the same of a base-attached remote unit */
    PLATFORM_N_OPS
};

/* The operation's path name ("current", "alert", "latest-data",
 * "latest-data-rtr500", "data", "data-rtr500"): the name used in logs, the
 * state and metrics. */
const char *platform_op_name(enum platform_op op);

/* The platform's published limit of `op` per login ID: at most
 * `limit` calls in any `span` seconds (alert logs: 12 per 3600 s, current
 * readings: 10 per 120 s, latest data 60 per 60 s, data by period 20 per
 * 60 s). The period operations also cap the readings served per device
 * (160,000 an hour), which the reply's data count reports. */
struct platform_limit {
    int limit;
    long span;
};
struct platform_limit platform_op_limit(enum platform_op op);

struct ratelimit {
    bool present;        /* all three headers were there */
    long limit;          /* X-RateLimit-Limit */
    long reset;          /* X-RateLimit-Reset, seconds */
    long remaining;      /* X-RateLimit-Remaining */
    bool has_data_count; /* X-RateLimit-Remaining-DataCount came (period operations) */
    long data_count;     /* the readings still allowed; 0 when absent */
};

struct platform_reply {
    long http_status; /* 0 when no HTTP response came (connection, TLS, timeout) */
    int api_code;     /* error.code of an error body; 0 when absent or not JSON */
    char *message;    /* what went wrong, for logs (never holds a secret); NULL on success */
    struct ratelimit rl;
    struct json_object *body; /* the parsed JSON object of a 200 JSON reply other than Get
                                 Current Readings; else NULL */
    char *text;               /* the body of a 200 CSV reply, or of a 200 Get Current Readings reply
                                 (whose JSON devicelist_parse reads; only its first byte, '{',
                                 is checked): NUL-terminated; else NULL */
    size_t text_len;          /* its length in bytes */
};

struct platform;

/* What a client needs of an account to log in: its name (for messages)
 * and where and as whom it calls. The caller builds it from the account
 * of the configuration (config.h's struct account_conf). */
struct platform_login {
    const char *name;       /* the account's name, in messages and logs; NULL: "" */
    const char *base_url;   /* https, or http to a loopback host; trailing slashes dropped */
    const char *api_key;    /* secret: sent as api-key, and taken out of every message */
    const char *login_id;   /* sent as login-id */
    const char *login_pass; /* secret: sent as login-pass, and taken out of every message */
};

/* A client for one login. Fails when the base URL is not usable (not
 * https, and not http to this machine: see util/url.h), with a message
 * that names the account. The client keeps a copy of `login`, not of its
 * strings: they must outlive the client. */
int platform_new(struct platform **out, const struct platform_login *login, struct err *e);

void platform_free(struct platform *p);

/* Sets the connect and total timeouts of every later call, in seconds
 * (defaults 10 and 30); a value below 1 keeps the current one. A call that
 * runs out of time fails with http_status 0. */
void platform_set_timeouts(struct platform *p, long connect_s, long total_s);

/* Makes one call. For PLATFORM_ALERT, `serial` and `base` name the device;
 * for PLATFORM_CURRENT both are NULL (all devices), or one names the remote
 * unit (sent as `remote-serial`) or the base unit (`base-serial`) to list;
 * `serial` wins when both are given, as the platform forbids both. Returns 0 on a 200 with
 * a JSON object body (for PLATFORM_CURRENT, a body that starts with '{', kept as text
 * for devicelist_parse), -1 otherwise; in both cases `out` (zeroed by the
 * caller) describes the reply and must be released with
 * platform_reply_free. Whatever `out` held from an earlier call is freed
 * first. http_status is 0 when no HTTP response came, and the status
 * received when the body passed the 4 MiB cap ("response too large").
 * 3xx replies are failures: redirects are never followed. */
int platform_call(struct platform *p, enum platform_op op, const char *serial, const char *base,
                  struct platform_reply *out);

void platform_reply_free(struct platform_reply *r);

/* What a graph-data call asks for. */
enum platform_type { PLATFORM_TYPE_JSON, PLATFORM_TYPE_CSV2, PLATFORM_TYPE_CSV };
struct platform_query {
    const char *serial;      /* remote-serial, required */
    const char *base;        /* base-serial: required by the -rtr500 operations, else unused */
    enum platform_type type; /* csv: the layout of csv2 for standalone devices (deprecated) */
    char temperature_unit;   /* 'C' or 'F' converts temperatures; 0: the device's own unit */
    long long from, to;      /* the period operations' unixtime-from and -to; 0: not sent */
    long number;             /* the period operations' number; 0: not sent (the platform's
                                default, 16000); above 65535 sent as 65535 */
};

/* The graph-data operation that fits a device: the standalone one when the
 * device is its own base unit (`base` NULL, empty or `serial`), else the
 * -rtr500 one; by period when `period` is true, else the latest readings. */
enum platform_op platform_graph_op(const char *serial, const char *base, bool period);

/* Makes one graph-data call (`op` PLATFORM_LATEST to PLATFORM_DATA_RTR500).
 * Returns 0 on a 200 whose body is a JSON object (type json; in
 * out->body) or any text (csv types; in out->text), -1 otherwise, with
 * `out` as platform_call fills it. A query the operation cannot send (no
 * serial, no base for -rtr500, another operation) fails without a call. */
int platform_query(struct platform *p, enum platform_op op, const struct platform_query *q,
                   struct platform_reply *out);

/* Calls in parallel: the calls of one platform_multi_call run at once over
 * libcurl's multi interface, so calls to several login IDs take about as
 * long as the slowest of them. A platform_multi also keeps the
 * connections of its calls open for the next platform_multi_call. */
struct platform_multi;

int platform_multi_new(struct platform_multi **out, struct err *e);

/* Closes the connections; the clients used with it stay usable. */
void platform_multi_free(struct platform_multi *m);

/* One call of platform_multi_call: the same arguments as platform_query
 * (for Get Current Readings and Get Alert Logs, only the query's serial
 * and base count, as platform_call's), and what it returns (`reply`,
 * zeroed by the caller before the first use and released with
 * platform_reply_free; `rc`). */
struct platform_request {
    struct platform *p;
    enum platform_op op;
    struct platform_query query;
    struct platform_reply reply;
    int rc;
};

/* Makes the n calls at once and returns when all have ended, each with
 * the reply and rc that platform_query would have given it. A client may
 * appear only once (one call per connection at a time); a second request
 * on the same client fails with a message, as does every call when the
 * multi interface itself fails. Each call keeps its client's timeouts. */
void platform_multi_call(struct platform_multi *m, struct platform_request *reqs, size_t n);

/* What wsrelay keeps of a text in a platform reply, in bytes of UTF-8 cut
 * at a character boundary. The spec gives names, models and channel names
 * 32 characters, units 20 and group names 16 (at most 128 bytes); the
 * bounds leave room for longer ones, yet keep one reply from filling the
 * state, a log line or a chat message. */
#define PLATFORM_NAME_MAX 256  /* names, models, group names, channel names and units */
#define PLATFORM_TEXT_MAX 4096 /* an alert text */

#endif
