/* The platform client: builds each request body with json-c, makes the POST
 * over one libcurl handle kept for the whole run, and turns what comes back
 * (status, rate-limit headers, error body, a JSON or CSV body) into a
 * struct platform_reply. It also lists the devices of a Get Current
 * Readings body. */
#include "platform.h"
#include "serial.h"
#include "util/buf.h"
#include "util/jscan.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/url.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RESPONSE_LIMIT ((size_t)4 * 1024 * 1024)
#define PLATFORM_MESSAGE_MAX 200 /* bytes of the platform's own error message kept */
#define DEFAULT_CONNECT_TIMEOUT 10L
#define DEFAULT_TOTAL_TIMEOUT 30L
#define REDACT_WINDOW (64 * 1024) /* bytes of a message from outside searched for secrets */

struct platform {
    const struct account_conf *account;
    CURL *curl;
    struct curl_slist *headers;
    char *base_url; /* without trailing slashes */
    long connect_s;
    long total_s;
    char errbuf[CURL_ERROR_SIZE];
};

/* What one transfer collects through the libcurl callbacks. */
struct call {
    struct platform_reply *reply;
    enum platform_op op;
    enum platform_type type;
    struct json_object *request;
    char *url;
    struct buf body;
    long length; /* the reply's Content-Length; 0: not given */
    bool too_large;
    bool seen_limit, seen_reset, seen_remaining, seen_data_count;
};

static const char *const op_names[PLATFORM_N_OPS] = {
    "current", "alert", "latest-data", "latest-data-rtr500", "data", "data-rtr500"};
static const char *const op_paths[PLATFORM_N_OPS] = {
    "/v1/devices/current",     "/v1/devices/alert",
    "/v1/devices/latest-data", "/v1/devices/latest-data-rtr500",
    "/v1/devices/data",        "/v1/devices/data-rtr500"};

const char *platform_op_name(enum platform_op op)
{
    return (unsigned)op < PLATFORM_N_OPS ? op_names[op] : "unknown";
}

struct platform_limit platform_op_limit(enum platform_op op)
{
    static const struct platform_limit limits[PLATFORM_N_OPS] = {
        [PLATFORM_CURRENT] = {10, 120}, [PLATFORM_ALERT] = {12, 3600},
        [PLATFORM_LATEST] = {60, 60},   [PLATFORM_LATEST_RTR500] = {60, 60},
        [PLATFORM_DATA] = {20, 60},     [PLATFORM_DATA_RTR500] = {20, 60},
    };
    return (unsigned)op < PLATFORM_N_OPS ? limits[op] : limits[PLATFORM_ALERT];
}

/* ---- JSON helpers ---- */

/* Parses exactly `len` bytes as one JSON value (whitespace may follow).
 * NULL when it is not JSON, or is JSON null. */
static struct json_object *parse_json(const char *data, size_t len)
{
    struct json_tokener *tok = NULL;
    struct json_object *obj = NULL;
    if (!data || len == 0 || len > INT_MAX)
        goto out;
    tok = json_tokener_new();
    if (!tok)
        goto out;
    obj = json_tokener_parse_ex(tok, data, (int)len);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(obj);
        obj = NULL;
        goto out;
    }
    for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
        if (!strchr(" \t\r\n", data[i])) {
            json_object_put(obj);
            obj = NULL;
            goto out;
        }
    }
out:
    if (tok)
        json_tokener_free(tok);
    return obj;
}

/* True when the first byte of `data` that is not white space is '{'. */
static bool starts_object(const char *data, size_t len)
{
    size_t i = 0;
    while (i < len && data[i] && strchr(" \t\r\n", data[i]))
        i++;
    return i < len && data[i] == '{';
}

/* ---- The client ---- */

/* Checks a base URL by the same rule as the configuration (URL_BASE): https
 * to any host, http only to a loopback host, no user name or password, no
 * query or fragment (paths are appended to it). The URL itself is not
 * repeated in messages. */
static int check_base_url(bool *loopback, const char *url, struct err *e)
{
    struct url u;
    if (url_check(&u, url, URL_BASE, e) < 0)
        return err_prefix(e, "base_url");
    *loopback = url_host_is_loopback(u.host);
    return 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    struct call *c = userdata;
    (void)size; /* always 1 */
    if (!c->body.data && c->length > 0 && (size_t)c->length <= RESPONSE_LIMIT)
        buf_reserve(&c->body, (size_t)c->length); /* one allocation, no copies as it grows */
    if (buf_append(&c->body, data, n) < 0) {
        c->too_large = true;
        return 0; /* makes libcurl stop with CURLE_WRITE_ERROR */
    }
    return n;
}

/* A header value that is a whole non-negative integer. */
static bool header_long(long *out, const char *value, size_t len)
{
    char text[32];
    char *end = NULL;
    while (len && (*value == ' ' || *value == '\t')) {
        value++;
        len--;
    }
    while (len && strchr(" \t\r\n", value[len - 1]))
        len--;
    if (len == 0 || len >= sizeof text)
        return false;
    memcpy(text, value, len);
    text[len] = '\0';
    if (text[0] < '0' || text[0] > '9')
        return false;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (errno || *end)
        return false;
    *out = n;
    return true;
}

/* Called once per header line. A status line starts a new response (there
 * could be an interim one), so it clears what earlier lines set. */
static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
    struct call *c = userdata;
    struct ratelimit *rl = &c->reply->rl;
    const struct {
        const char *name;
        long *slot;
        bool *seen;
    } wanted[] = {
        {"X-RateLimit-Limit", &rl->limit, &c->seen_limit},
        {"X-RateLimit-Reset", &rl->reset, &c->seen_reset},
        {"X-RateLimit-Remaining", &rl->remaining, &c->seen_remaining},
        {"X-RateLimit-Remaining-DataCount", &rl->data_count, &c->seen_data_count},
    };
    (void)size; /* always 1 */
    if (n >= 5 && !strncmp(data, "HTTP/", 5)) {
        memset(rl, 0, sizeof *rl);
        c->seen_limit = c->seen_reset = c->seen_remaining = c->seen_data_count = false;
        c->length = 0;
        return n;
    }
    const char *colon = memchr(data, ':', n);
    if (!colon)
        return n;
    size_t name_len = (size_t)(colon - data);
    if (name_len == 14 && !strncasecmp(data, "Content-Length", 14) &&
        !header_long(&c->length, colon + 1, n - name_len - 1))
        c->length = 0;
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        if (name_len == strlen(wanted[i].name) && !strncasecmp(data, wanted[i].name, name_len))
            *wanted[i].seen = header_long(wanted[i].slot, colon + 1, n - name_len - 1);
    }
    return n;
}

void platform_set_timeouts(struct platform *p, long connect_s, long total_s)
{
    if (connect_s >= 1)
        p->connect_s = connect_s;
    if (total_s >= 1)
        p->total_s = total_s;
}

/* The options that stay the same for every call. */
static int set_fixed_options(struct platform *p, bool loopback, struct err *e)
{
    int rc = -1;
    const struct {
        CURLoption opt;
        long value;
    } longs[] = {
        {CURLOPT_SSL_VERIFYPEER, 1L}, {CURLOPT_SSL_VERIFYHOST, 2L}, {CURLOPT_FOLLOWLOCATION, 0L},
        {CURLOPT_NOSIGNAL, 1L},       {CURLOPT_POST, 1L},
    };
    const char *headers[] = {"X-HTTP-Method-Override: GET", "Content-Type: application/json",
                             "Accept: application/json", "Expect:"};
    CURLcode cc = CURLE_OK;
    for (size_t i = 0; i < sizeof longs / sizeof longs[0] && cc == CURLE_OK; i++)
        cc = curl_easy_setopt(p->curl, longs[i].opt, longs[i].value);
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        struct curl_slist *l = curl_slist_append(p->headers, headers[i]);
        if (!l) {
            err_set(e, "cannot build the request headers");
            goto out;
        }
        p->headers = l;
    }
#if LIBCURL_VERSION_NUM >= 0x075500
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, loopback ? "https,http" : "https");
#else
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS,
                              loopback ? (long)(CURLPROTO_HTTPS | CURLPROTO_HTTP)
                                       : (long)CURLPROTO_HTTPS);
#endif
    /* The simulator on this machine is never reached through a proxy. */
    if (cc == CURLE_OK && loopback)
        cc = curl_easy_setopt(p->curl, CURLOPT_NOPROXY, "*");
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->headers);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "wsrelay/" WSRELAY_VERSION);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, p->errbuf);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, on_body);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_HEADERFUNCTION, on_header);
    if (cc != CURLE_OK) {
        err_set(e, "libcurl refused an option: %s", curl_easy_strerror(cc));
        goto out;
    }
    rc = 0;
out:
    return rc;
}

int platform_new(struct platform **out, const struct account_conf *account, struct err *e)
{
    int rc = -1;
    struct platform *p = NULL;
    bool loopback = false;
    const char *name = account->name ? account->name : "";
    *out = NULL;
    if (check_base_url(&loopback, account->base_url, e) < 0) {
        err_prefix(e, "account '%s'", name);
        goto out;
    }
    p = xcalloc(1, sizeof *p);
    p->account = account;
    p->connect_s = DEFAULT_CONNECT_TIMEOUT;
    p->total_s = DEFAULT_TOTAL_TIMEOUT;
    p->base_url = xstrdup(account->base_url);
    for (size_t len = strlen(p->base_url); len > 0 && p->base_url[len - 1] == '/'; len--)
        p->base_url[len - 1] = '\0';
    p->curl = curl_easy_init();
    if (!p->curl) {
        err_set(e, "account '%s': cannot start libcurl", name);
        goto out;
    }
    if (set_fixed_options(p, loopback, e) < 0) {
        err_prefix(e, "account '%s'", name);
        goto out;
    }
    rc = 0;
out:
    if (rc < 0)
        platform_free(p);
    else
        *out = p;
    return rc;
}

void platform_free(struct platform *p)
{
    if (!p)
        return;
    if (p->curl)
        curl_easy_cleanup(p->curl);
    curl_slist_free_all(p->headers);
    free(p->base_url);
    free(p);
}

void platform_reply_free(struct platform_reply *r)
{
    if (!r)
        return;
    free(r->message);
    free(r->text);
    json_object_put(r->body);
    memset(r, 0, sizeof *r);
}

enum platform_op platform_graph_op(const char *serial, const char *base, bool period)
{
    bool standalone = !base || !*base || (serial && strcmp(serial, base) == 0);
    if (period)
        return standalone ? PLATFORM_DATA : PLATFORM_DATA_RTR500;
    return standalone ? PLATFORM_LATEST : PLATFORM_LATEST_RTR500;
}

static bool is_graph_op(enum platform_op op)
{
    return op >= PLATFORM_LATEST && op <= PLATFORM_DATA_RTR500;
}

static bool is_rtr500_op(enum platform_op op)
{
    return op == PLATFORM_LATEST_RTR500 || op == PLATFORM_DATA_RTR500;
}

static bool is_period_op(enum platform_op op)
{
    return op == PLATFORM_DATA || op == PLATFORM_DATA_RTR500;
}

/* Why `q` cannot be sent as `op`; NULL when it can. */
static const char *query_problem(enum platform_op op, const struct platform_query *q)
{
    if ((unsigned)op >= PLATFORM_N_OPS)
        return "unknown operation";
    if (op == PLATFORM_CURRENT)
        return NULL;
    if (!q->serial || !*q->serial)
        return op == PLATFORM_ALERT ? "a serial and a base serial are needed"
                                    : "a serial is needed";
    if (op == PLATFORM_ALERT && (!q->base || !*q->base))
        return "a serial and a base serial are needed";
    if (is_rtr500_op(op) && (!q->base || !*q->base))
        return "a base serial is needed";
    if (is_graph_op(op) && q->type == PLATFORM_TYPE_CSV && is_rtr500_op(op))
        return "type csv has no CSV layout for base-attached remote units (use csv2)";
    if (q->temperature_unit && q->temperature_unit != 'C' && q->temperature_unit != 'F')
        return "the temperature unit must be C or F";
    return NULL;
}

/* The request body. json-c does the quoting, so no value can break out of
 * its string. */
static struct json_object *request_body(const struct account_conf *a, enum platform_op op,
                                        const struct platform_query *q)
{
    static const char *const types[] = {"json", "csv2", "csv"};
    struct json_object *req = json_object_new_object();
    json_object_object_add(req, "api-key", json_object_new_string(a->api_key ? a->api_key : ""));
    json_object_object_add(req, "login-id", json_object_new_string(a->login_id ? a->login_id : ""));
    json_object_object_add(req, "login-pass",
                           json_object_new_string(a->login_pass ? a->login_pass : ""));
    if (op == PLATFORM_CURRENT) {
        if (q->serial || q->base) {
            struct json_object *list = json_object_new_array();
            json_object_array_add(list, json_object_new_string(q->serial ? q->serial : q->base));
            json_object_object_add(req, q->serial ? "remote-serial" : "base-serial", list);
        }
        return req;
    }
    json_object_object_add(req, "remote-serial", json_object_new_string(q->serial));
    if (op == PLATFORM_ALERT || is_rtr500_op(op))
        json_object_object_add(req, "base-serial", json_object_new_string(q->base));
    if (!is_graph_op(op))
        return req;
    if (q->type != PLATFORM_TYPE_JSON)
        json_object_object_add(req, "type", json_object_new_string(types[q->type]));
    if (q->temperature_unit)
        json_object_object_add(req, "temperature-unit",
                               json_object_new_string(q->temperature_unit == 'F' ? "F" : "C"));
    if (!is_period_op(op))
        return req;
    if (q->from > 0)
        json_object_object_add(req, "unixtime-from", json_object_new_int64(q->from));
    if (q->to > 0)
        json_object_object_add(req, "unixtime-to", json_object_new_int64(q->to));
    if (q->number > 0)
        json_object_object_add(req, "number",
                               json_object_new_int64(q->number > 65535 ? 65535 : q->number));
    return req;
}

/* A message from outside (`len` bytes) made fit for a log line: cut to a
 * window (a secret that starts in the part kept is still found whole,
 * however it was escaped), made valid UTF-8 with control characters as
 * spaces (a space never joins the parts of a secret it sits between), the
 * account's secrets taken out in every form a far end could echo them
 * (util/redact.h), and cut to `max` bytes without splitting a character. */
static char *clean_text(const char *text, size_t len, const struct account_conf *a, size_t max)
{
    char *window =
        utf8_clean(text, len < REDACT_WINDOW ? len : REDACT_WINDOW, SIZE_MAX, UTF8_CONTROLS_NONE);
    struct redact *secrets = redact_new();
    redact_add(secrets, a->api_key);
    redact_add(secrets, a->login_pass);
    char *s = redact_text(secrets, window);
    redact_free(secrets);
    free(window);
    s[utf8_cut(s, strlen(s), max)] = '\0';
    return s;
}

/* Describes a reply other than 200: "HTTP 401 (code 401: message)". */
static char *error_message(int *api_code, long status, const struct buf *body,
                           const struct account_conf *a)
{
    struct json_object *doc = NULL, *error = NULL, *text = NULL;
    char *detail = NULL, *message = NULL;
    long long code = 0;
    bool have_code = false;
    *api_code = 0;
    if (status >= 300 && status < 400) {
        message = xasprintf("HTTP %ld (a redirect; redirects are not followed)", status);
        goto out;
    }
    if (body->len == 0) {
        message = xasprintf("HTTP %ld (empty body)", status);
        goto out;
    }
    doc = parse_json(body->data, body->len);
    if (!doc) {
        message = xasprintf("HTTP %ld (body not JSON)", status);
        goto out;
    }
    error = jsonv_member(doc, "error");
    if (jsonv_int(jsonv_member(error, "code"), &code) && code >= INT_MIN && code <= INT_MAX) {
        have_code = true;
        *api_code = (int)code;
    }
    text = jsonv_member(error, "message");
    if (text && json_object_is_type(text, json_type_string))
        detail = clean_text(json_object_get_string(text), (size_t)json_object_get_string_len(text),
                            a, PLATFORM_MESSAGE_MAX);
    if (have_code && detail)
        message = xasprintf("HTTP %ld (code %d: %s)", status, *api_code, detail);
    else if (have_code)
        message = xasprintf("HTTP %ld (code %d)", status, *api_code);
    else if (detail)
        message = xasprintf("HTTP %ld (no error code: %s)", status, detail);
    else
        message = xasprintf("HTTP %ld (no error object in body)", status);
out:
    free(detail);
    json_object_put(doc);
    return message;
}

/* Sets up p's handle for one call into `c` (zeroed by the caller), whose
 * reply is `out`. Returns false, with out->message set, when the call
 * cannot be made; call_end must follow either way. */
static bool call_begin(struct platform *p, struct call *c, enum platform_op op,
                       const struct platform_query *q, struct platform_reply *out)
{
    CURLcode cc = CURLE_OK;
    c->reply = out;
    c->op = op;
    c->type = is_graph_op(op) ? q->type : PLATFORM_TYPE_JSON;
    buf_init(&c->body, RESPONSE_LIMIT);
    platform_reply_free(out);
    const char *problem = query_problem(op, q);
    if (problem) {
        out->message = xasprintf("%s: %s", platform_op_name(op), problem);
        return false;
    }
    c->request = request_body(p->account, op, q);
    const char *text = json_object_to_json_string_ext(
        c->request, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    c->url = xasprintf("%s%s", p->base_url, op_paths[op]);
    p->errbuf[0] = '\0';
    cc = curl_easy_setopt(p->curl, CURLOPT_URL, c->url);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, text);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, c);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_HEADERDATA, c);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT, p->connect_s);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(p->curl, CURLOPT_TIMEOUT, p->total_s);
    if (cc != CURLE_OK) {
        out->message = xasprintf("libcurl refused an option: %s", curl_easy_strerror(cc));
        return false;
    }
    return true;
}

/* Turns the transfer's outcome `cc` (ignored when `begun` is false) into
 * c->reply, logs it and releases what call_begin took. Returns 0 on a 200
 * with a JSON object body (of Get Current Readings, a body that starts
 * with '{', kept as text), or with any body of a CSV type; -1 otherwise. */
static int call_end(struct platform *p, struct call *c, bool begun, CURLcode cc)
{
    int rc = -1;
    struct platform_reply *out = c->reply;
    const char *name = p->account->name ? p->account->name : "";
    if (!begun)
        goto out;
    out->rl.present = c->seen_limit && c->seen_reset && c->seen_remaining;
    out->rl.has_data_count = c->seen_data_count;
    if (!out->rl.present) {
        long data_count = out->rl.data_count;
        memset(&out->rl, 0, sizeof out->rl);
        out->rl.has_data_count = c->seen_data_count;
        out->rl.data_count = c->seen_data_count ? data_count : 0;
    } else if (!c->seen_data_count) {
        out->rl.data_count = 0;
    }
    if (c->too_large) {
        curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &out->http_status);
        out->message = xasprintf("HTTP %ld: response too large (over %zu MiB)", out->http_status,
                                 RESPONSE_LIMIT / (1024 * 1024));
        goto out;
    }
    if (cc != CURLE_OK) {
        out->http_status = 0;
        const char *why = p->errbuf[0] ? p->errbuf : curl_easy_strerror(cc);
        out->message = clean_text(why, strlen(why), p->account, CURL_ERROR_SIZE);
        goto out;
    }
    curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &out->http_status);
    if (out->http_status != 200) {
        out->message = error_message(&out->api_code, out->http_status, &c->body, p->account);
        goto out;
    }
    if (c->type != PLATFORM_TYPE_JSON || c->op == PLATFORM_CURRENT) {
        /* A Get Current Readings reply is kept as text for
         * platform_parse_devices, which reads it without a tree; here
         * only its first byte is looked at. */
        if (c->type == PLATFORM_TYPE_JSON && !starts_object(c->body.data, c->body.len)) {
            out->message = xstrdup("HTTP 200 with a body that is not a JSON object");
            goto out;
        }
        out->text_len = c->body.len;
        out->text = buf_steal(&c->body); /* 730 KB at 2000 devices: not copied */
        rc = 0;
        goto out;
    }
    out->body = parse_json(c->body.data, c->body.len);
    if (!out->body || !json_object_is_type(out->body, json_type_object)) {
        json_object_put(out->body);
        out->body = NULL;
        out->message = xstrdup("HTTP 200 with a body that is not a JSON object");
        goto out;
    }
    rc = 0;
out:
    if (out->rl.present)
        log_debug("platform: account '%s': %s: HTTP %ld, %ld of %ld calls left", name,
                  platform_op_name(c->op), out->http_status, out->rl.remaining, out->rl.limit);
    else
        log_debug("platform: account '%s': %s: HTTP %ld, no rate-limit headers", name,
                  platform_op_name(c->op), out->http_status);
    json_object_put(c->request);
    free(c->url);
    buf_free(&c->body);
    return rc;
}

int platform_call(struct platform *p, enum platform_op op, const char *serial, const char *base,
                  struct platform_reply *out)
{
    if (is_graph_op(op)) {
        platform_reply_free(out);
        out->message = xasprintf("%s: use platform_query", platform_op_name(op));
        return -1;
    }
    struct platform_query q = {.serial = serial, .base = base};
    return platform_query(p, op, &q, out);
}

int platform_query(struct platform *p, enum platform_op op, const struct platform_query *q,
                   struct platform_reply *out)
{
    struct call c = {0};
    bool begun = call_begin(p, &c, op, q, out);
    CURLcode cc = begun ? curl_easy_perform(p->curl) : CURLE_OK;
    return call_end(p, &c, begun, cc);
}

/* ---- Calls in parallel ---- */

struct platform_multi {
    CURLM *multi;
};

int platform_multi_new(struct platform_multi **out, struct err *e)
{
    *out = NULL;
    CURLM *m = curl_multi_init();
    if (!m) {
        err_set(e, "cannot start libcurl's multi interface");
        return -1;
    }
    *out = xcalloc(1, sizeof **out);
    (*out)->multi = m;
    return 0;
}

void platform_multi_free(struct platform_multi *m)
{
    if (!m)
        return;
    curl_multi_cleanup(m->multi);
    free(m);
}

/* One request of platform_multi_call on its way. */
struct transfer {
    struct call call;
    bool begun; /* call_begin succeeded */
    bool added; /* its handle is in the multi handle */
    bool done;  /* libcurl reported its end, with `result` */
    CURLcode result;
};

/* Runs the transfers added to `m` until all have ended, recording each
 * one's end in its struct transfer (the handle's CURLOPT_PRIVATE). Returns
 * NULL, or libcurl's description of why the multi interface itself failed
 * (the transfers not done then have failed). */
static const char *multi_run(struct platform_multi *m)
{
    int running = 0;
    CURLMcode mc = CURLM_OK;
    do {
        mc = curl_multi_perform(m->multi, &running);
        if (mc == CURLM_OK && running)
            mc = curl_multi_poll(m->multi, NULL, 0, 1000, NULL);
        CURLMsg *msg;
        int left = 0;
        while ((msg = curl_multi_info_read(m->multi, &left))) {
            struct transfer *t = NULL;
            if (msg->msg != CURLMSG_DONE ||
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t) != CURLE_OK ||
                !t)
                continue;
            t->done = true;
            t->result = msg->data.result;
        }
    } while (mc == CURLM_OK && running);
    return mc == CURLM_OK ? NULL : curl_multi_strerror(mc);
}

void platform_multi_call(struct platform_multi *m, struct platform_request *reqs, size_t n)
{
    struct transfer *ts = xcalloc(n ? n : 1, sizeof *ts);
    for (size_t i = 0; i < n; i++) {
        struct platform_request *rq = &reqs[i];
        struct transfer *t = &ts[i];
        bool busy = false;
        for (size_t j = 0; j < i; j++)
            busy |= reqs[j].p == rq->p;
        if (busy) {
            /* Setting up its handle again would take it from the first. */
            platform_reply_free(&rq->reply);
            t->call = (struct call){.reply = &rq->reply, .op = rq->op};
            rq->reply.message = xstrdup("the client is busy with another call");
            continue;
        }
        t->begun = call_begin(rq->p, &t->call, rq->op, &rq->query, &rq->reply);
        if (!t->begun)
            continue;
        CURLMcode mc = curl_easy_setopt(rq->p->curl, CURLOPT_PRIVATE, (char *)t) == CURLE_OK
                           ? curl_multi_add_handle(m->multi, rq->p->curl)
                           : CURLM_INTERNAL_ERROR;
        t->added = mc == CURLM_OK;
        if (!t->added)
            snprintf(rq->p->errbuf, sizeof rq->p->errbuf, "%s", curl_multi_strerror(mc));
    }
    const char *failed = multi_run(m);
    for (size_t i = 0; i < n; i++) {
        struct platform *p = reqs[i].p;
        struct transfer *t = &ts[i];
        if (t->added) {
            curl_multi_remove_handle(m->multi, p->curl);
            if (!t->done)
                snprintf(p->errbuf, sizeof p->errbuf, "%s",
                         failed ? failed : "the transfer did not end");
        }
        curl_easy_setopt(p->curl, CURLOPT_PRIVATE, (char *)NULL);
        reqs[i].rc = call_end(p, &t->call, t->begun, t->done ? t->result : CURLE_FAILED_INIT);
    }
    free(ts);
}

/* ---- Devices of a Get Current Readings body ---- */

/* The reply is read with util/jscan.h rather than a json-c tree, with the
 * results json-c's reading gave: a member name is looked up as given and
 * then with '_' and '-' swapped (jsonv_member), the last of members of the
 * same name wins and a null one counts as absent, numbers read as json-c
 * prints them (jsonv_text) and integers as jsonv_int takes them. The
 * members of an object that are wanted are first taken as raw spans (a
 * small table filled by one pass), then the chosen ones decoded. */

#define NUMBER_TEXT 400 /* a number's text, as util/jscan.c bounds it, and NUL */

/* The members of a device record, of a base unit and group, and of a
 * channel that are read; each name with '_' is followed by its '-'
 * spelling. */
enum {
    R_SERIAL,
    R_BASEUNIT,
    R_MODEL,
    R_NAME,
    R_GROUP,
    R_CHANNEL,
    R_UNIXTIME,
    R_BATTERY,
    R_RSSI,
    R_TIME_DIFF,
    R_TIME_DIFF_ALT,
    R_DST_FLG,
    R_DST_FLG_ALT,
    R_DST_BIAS,
    R_DST_BIAS_ALT,
    R_N
};
static const char *const record_names[R_N] = {
    "serial", "baseunit",  "model",     "name",    "group",   "channel",  "unixtime", "battery",
    "rssi",   "time_diff", "time-diff", "dst_flg", "dst-flg", "dst_bias", "dst-bias"};
enum { U_SERIAL, U_MODEL, U_NAME, U_N };
static const char *const unit_names[U_N] = {"serial", "model", "name"};
enum { C_NUM, C_NAME, C_UNIT, C_VALUE, C_N };
static const char *const channel_names[C_N] = {"num", "name", "unit", "value"};

/* The position of the member `s` is on in `names` (n of them), compared
 * as json-c compares names (up to a NUL written as \u0000); n when it is
 * none of them. */
static size_t name_index(const struct jscan *s, const char *const *names, size_t n)
{
    size_t i = 0;
    while (i < n && (s->key[0] != names[i][0] || strcmp(s->key, names[i]) != 0))
        i++;
    return i;
}

/* The object that comes next in `s` read into `found` (n spans, one per
 * name of `names`; an absent member's text NULL): the last member of each
 * name. False on an error of the scan. */
static bool read_members(struct jscan *s, const char *const *names, size_t n,
                         struct jscan_raw *found)
{
    memset(found, 0, n * sizeof *found);
    if (!jscan_object(s))
        return false;
    while (jscan_member(s)) {
        size_t i = name_index(s, names, n);
        if (!jscan_skip(s, i < n ? &found[i] : NULL))
            return false;
    }
    return !s->failed;
}

/* A device record's members (R_*), with its base unit's and its group's
 * (U_*) when they were objects, and its channels' (C_*) when "channel"
 * was an array, read in the same pass (`nested`); when they were not (an
 * array holding the object, say), read_device reads them from their
 * spans, as it reads any value. */
struct record {
    struct jscan_raw f[R_N];
    struct jscan_raw unit[U_N], group[U_N];
    struct jscan_raw channel[PLATFORM_CHANNELS_MAX][C_N];
    bool is_object[PLATFORM_CHANNELS_MAX]; /* the item was an object */
    size_t n_items;                        /* items of the array, up to the maximum */
    bool nested[3];                        /* the base unit's, the group's, the channels' */
};

/* The array that comes next in `s`: its first PLATFORM_CHANNELS_MAX items
 * that are objects read into r->channel, every other item checked. */
static bool read_channel_items(struct jscan *s, struct record *r)
{
    jscan_array(s);
    r->n_items = 0;
    for (size_t i = 0; jscan_item(s); i++) {
        bool keep = i < PLATFORM_CHANNELS_MAX && jscan_peek(s) == JSCAN_OBJECT;
        if (i < PLATFORM_CHANNELS_MAX) {
            r->is_object[i] = keep;
            r->n_items = i + 1;
        }
        if (!(keep ? read_members(s, channel_names, C_N, r->channel[i]) : jscan_skip(s, NULL)))
            return false;
    }
    return !s->failed;
}

static bool read_record(struct jscan *s, struct record *r)
{
    memset(r, 0, sizeof *r);
    if (!jscan_object(s))
        return false;
    while (jscan_member(s)) {
        size_t i = name_index(s, record_names, R_N);
        bool unit = i == R_BASEUNIT, group = i == R_GROUP, channel = i == R_CHANNEL;
        int which = unit ? 0 : group ? 1 : 2;
        if (unit || group || channel)
            r->nested[which] = false; /* the last member of the name counts */
        enum jscan_type want = channel ? JSCAN_ARRAY : JSCAN_OBJECT;
        if ((unit || group || channel) && jscan_peek(s) == want) {
            const char *start = s->p;
            bool ok = channel ? read_channel_items(s, r)
                              : read_members(s, unit_names, U_N, unit ? r->unit : r->group);
            if (!ok)
                return false;
            r->f[i] = (struct jscan_raw){start, (size_t)(s->p - start)};
            r->nested[which] = true;
            continue;
        }
        if (!jscan_skip(s, i < R_N ? &r->f[i] : NULL))
            return false;
    }
    return !s->failed;
}

static bool present(const struct jscan_raw *v)
{
    return v->text && v->text[0] != 'n';
}

/* jsonv_member over a table: the member `i`, else its other spelling `alt`,
 * when not null; NULL when neither is there. */
static const struct jscan_raw *member(const struct jscan_raw *found, int i, int alt)
{
    return present(&found[i]) ? &found[i] : present(&found[alt]) ? &found[alt] : NULL;
}

static bool is_number(const struct jscan_raw *v)
{
    return v && (v->text[0] == '-' || (v->text[0] >= '0' && v->text[0] <= '9'));
}

/* A number without fraction or exponent: one json-c keeps as an integer. */
static bool is_integral(const struct jscan_raw *v)
{
    for (size_t i = 0; i < v->len; i++)
        if (v->text[i] == '.' || v->text[i] == 'e' || v->text[i] == 'E')
            return false;
    return true;
}

/* The integer json-c makes of an integral number `v`, and whether it took
 * it as unsigned (above INT64_MAX): beyond range, the nearest bound. */
static long long integer_of(const struct jscan_raw *v, unsigned long long *u, bool *is_unsigned)
{
    char text[NUMBER_TEXT];
    size_t n = v->len < sizeof text ? v->len : sizeof text - 1;
    memcpy(text, v->text, n);
    text[n] = '\0';
    *is_unsigned = false;
    if (text[0] == '-')
        return strtoll(text, NULL, 10);
    *u = strtoull(text, NULL, 10);
    *is_unsigned = *u > (unsigned long long)LLONG_MAX;
    return *is_unsigned ? LLONG_MAX : (long long)*u;
}

/* A number's text as json-c gives it (jsonv_text): an integer printed in
 * decimal, any other number as it was written. */
static size_t number_text(char out[NUMBER_TEXT], const struct jscan_raw *v)
{
    if (!is_integral(v)) {
        size_t n = v->len < NUMBER_TEXT ? v->len : NUMBER_TEXT - 1;
        memcpy(out, v->text, n);
        out[n] = '\0';
        return n;
    }
    unsigned long long u = 0;
    bool is_unsigned = false;
    long long i = integer_of(v, &u, &is_unsigned);
    int n =
        is_unsigned ? snprintf(out, NUMBER_TEXT, "%llu", u) : snprintf(out, NUMBER_TEXT, "%lld", i);
    return n > 0 ? (size_t)n : 0;
}

/* The text jsonv_text_raw gives of `v` (NULL: absent) and its length: a
 * string decoded, whole (NUL bytes included), a number as number_text
 * writes it into `num`; NULL for any other value. A string with escapes
 * is decoded into *tmp, which the caller frees. */
static const char *value_text(const struct jscan_raw *v, char num[NUMBER_TEXT], char **tmp,
                              size_t *len)
{
    *tmp = NULL;
    if (!v)
        return NULL;
    if (is_number(v)) {
        *len = number_text(num, v);
        return num;
    }
    if (v->text[0] != '"')
        return NULL;
    if (!memchr(v->text, '\\', v->len)) {
        *len = v->len - 2;
        return v->text + 1;
    }
    struct jscan s = {0};
    jscan_init(&s, v->text, v->len);
    if (!jscan_string_dup(&s, tmp, len))
        return NULL; /* cannot happen: the span was scanned already */
    return *tmp;
}

/* The strings of one device, gathered as its record is read, then copied
 * into one allocation (struct device_info's `strings`): a record has a
 * dozen strings, and at 2000 devices their allocations and frees were a
 * tenth of a readings run. A piece is a span of the reply (a string as it
 * was written, with nothing to repair) or of a text made on the way
 * (repaired, decoded, a serial's copy), which the gather owns until it is
 * done. */
#define DEVICE_STRINGS (8 + 3 * PLATFORM_CHANNELS_MAX)
struct gather {
    struct piece {
        const char *p;
        size_t n;
        char **to; /* where its copy's address goes */
    } piece[DEVICE_STRINGS];
    char *owned[DEVICE_STRINGS];
    size_t n, n_owned, bytes;
};

/* Adds a piece; returns its index. */
static size_t gather_put(struct gather *g, const char *p, size_t n, char **to)
{
    g->piece[g->n] = (struct piece){p, n, to};
    g->bytes += n + 1;
    return g->n++;
}

/* Adds `text` (allocated; the gather frees it) as a piece. */
static size_t gather_own(struct gather *g, char *text, char **to)
{
    g->owned[g->n_owned++] = text;
    return gather_put(g, text, strlen(text), to);
}

/* The piece `i` once more, for another field. */
static void gather_again(struct gather *g, size_t i, char **to)
{
    gather_put(g, g->piece[i].p, g->piece[i].n, to);
}

static void gather_clear(struct gather *g)
{
    for (size_t i = 0; i < g->n_owned; i++)
        free(g->owned[i]);
    g->n = g->n_owned = g->bytes = 0;
}

/* Copies every piece into d->strings and points the fields at them. */
static void gather_done(struct gather *g, struct device_info *d)
{
    char *at = d->strings = xmalloc(g->bytes ? g->bytes : 1);
    for (size_t i = 0; i < g->n; i++) {
        memcpy(at, g->piece[i].p, g->piece[i].n);
        at[g->piece[i].n] = '\0';
        *g->piece[i].to = at;
        at += g->piece[i].n + 1;
    }
    gather_clear(g);
}

static bool printable_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

/* A name, model or group name into *to: repaired, one line, bounded; ""
 * when absent or not text. Returns its piece. */
static size_t name_text(struct gather *g, const struct jscan_raw *v, char **to)
{
    char num[NUMBER_TEXT], *tmp = NULL;
    size_t len = 0, i;
    const char *s = value_text(v, num, &tmp, &len);
    if (!s)
        i = gather_put(g, "", 0, to);
    else if (s != num && !tmp && len <= PLATFORM_NAME_MAX && printable_ascii(s, len))
        i = gather_put(g, s, len, to); /* what utf8_clean would copy as it is */
    else
        i = gather_own(g, utf8_clean_shown(s, len, PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE), to);
    free(tmp);
    return i;
}

/* jsonv_int of `v`: an integer number, or a string of digits (an optional
 * '-' first) read up to its first NUL. */
static bool value_int(const struct jscan_raw *v, long long *out)
{
    char num[NUMBER_TEXT], *tmp = NULL;
    size_t len = 0;
    bool ok = false;
    if (!v)
        return false;
    if (is_number(v)) {
        if (!is_integral(v))
            return false;
        unsigned long long u = 0;
        bool is_unsigned = false;
        *out = integer_of(v, &u, &is_unsigned);
        return true;
    }
    if (v->text[0] != '"')
        return false;
    const char *s = value_text(v, num, &tmp, &len);
    if (s && !tmp && len > 0 && len <= 18) {
        /* Most are short digit strings ("1795717800"): what strtoll makes
         * of them, without the copy. */
        size_t i = s[0] == '-';
        long long n = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            n = n * 10 + (s[i++] - '0');
        if (i == len && len > (size_t)(s[0] == '-')) {
            *out = s[0] == '-' ? -n : n;
            return true;
        }
    }
    if (s && !tmp) {
        /* Borrowed from the reply, which goes on after it: a copy ends it. */
        char *copy = len < sizeof num ? num : (tmp = xmalloc(len + 1));
        memcpy(copy, s, len);
        copy[len] = '\0';
        s = copy;
    }
    if (s) {
        const char *digits = *s == '-' ? s + 1 : s;
        char *end = NULL;
        if (*digits >= '0' && *digits <= '9') {
            errno = 0;
            long long n = strtoll(s, &end, 10);
            if (!errno && !*end) {
                *out = n;
                ok = true;
            }
        }
    }
    free(tmp);
    return ok;
}

/* The serial `v` into *out (a copy) when it is a serial. 0 when absent or
 * empty (*out NULL); -1 with what is wrong in `e` when it breaks
 * serial.h's rule. */
static int read_serial(char **out, const struct jscan_raw *v, const char *what, struct err *e)
{
    char num[NUMBER_TEXT], *tmp = NULL;
    size_t len = 0;
    int rc = 0;
    const char *s = value_text(v, num, &tmp, &len);
    *out = NULL;
    if (s && len > 0)
        rc = serial_copy(out, s, len, what, e);
    free(tmp);
    return rc;
}

/* object_or_first of `v` into *out: `v` when it is an object, its first
 * element when it is an array that starts with an object; else false. */
static bool object_or_first(struct jscan *s, const struct jscan_raw *v, struct jscan_raw *out)
{
    if (!v)
        return false;
    if (v->text[0] == '{') {
        *out = *v;
        return true;
    }
    if (v->text[0] != '[')
        return false;
    jscan_init(s, v->text, v->len);
    return jscan_array(s) && jscan_item(s) && jscan_peek(s) == JSCAN_OBJECT && jscan_skip(s, out);
}

/* The members `names` of the object `v` (NULL: none) into `found`. */
static void read_object(struct jscan *s, const struct jscan_raw *v, const char *const *names,
                        size_t n, struct jscan_raw *found)
{
    memset(found, 0, n * sizeof *found);
    if (!v)
        return;
    jscan_init(s, v->text, v->len);
    read_members(s, names, n, found);
}

/* The channels of a record: the first PLATFORM_CHANNELS_MAX values of the
 * array "channel", of which the objects are kept (read with the record
 * when it was an array: r->channel; `v` otherwise, which is then not one). */
static void read_channels(struct device_info *d, struct gather *g, const struct record *r,
                          const struct jscan_raw *v)
{
    long long num;
    if (!v || !r->nested[2])
        return;
    d->channels = xcalloc(PLATFORM_CHANNELS_MAX, sizeof *d->channels);
    for (size_t i = 0; i < r->n_items; i++) {
        const struct jscan_raw *f = r->channel[i];
        struct channel_info *ci = &d->channels[d->n_channels];
        if (!r->is_object[i])
            continue;
        ci->num = value_int(member(f, C_NUM, C_NUM), &num) && num >= 1 && num <= 99 ? (int)num
                                                                                    : (int)i + 1;
        name_text(g, member(f, C_NAME, C_NAME), &ci->name);
        name_text(g, member(f, C_UNIT, C_UNIT), &ci->unit);
        name_text(g, member(f, C_VALUE, C_VALUE), &ci->value);
        d->n_channels++;
    }
}

/* The reading of a device record: its time, battery and channels. What is
 * missing or not a number is 0 (or ""): a reading is a hint for the
 * scheduler, never a reason to drop the device. */
static void read_reading(struct device_info *d, struct gather *g, const struct record *r)
{
    const struct jscan_raw *f = r->f;
    long long v;
    d->unixtime = value_int(member(f, R_UNIXTIME, R_UNIXTIME), &v) && v > 0 ? v : 0;
    d->battery = value_int(member(f, R_BATTERY, R_BATTERY), &v) && v > 0 && v < 100 ? (int)v : 0;
    name_text(g, member(f, R_RSSI, R_RSSI), &d->rssi);
    long long diff = 0, flag = 0, bias = 60;
    if (value_int(member(f, R_TIME_DIFF, R_TIME_DIFF_ALT), &diff) && diff > -1440 && diff < 1440) {
        if (value_int(member(f, R_DST_FLG, R_DST_FLG_ALT), &flag) && flag == 1 &&
            !(value_int(member(f, R_DST_BIAS, R_DST_BIAS_ALT), &bias) && bias >= 0 && bias <= 120))
            bias = 60;
        d->utc_offset = (int)(diff + (flag == 1 ? bias : 0));
    }
    read_channels(d, g, r, member(f, R_CHANNEL, R_CHANNEL));
}

/* Fills `d` from one device record `r`, `s` a scanner for the values
 * within it; -1 with the reason in `e` when it has no usable serial or
 * base serial (d is then left empty). */
static int read_device(struct device_info *d, struct jscan *s, const struct record *r,
                       struct err *e)
{
    const struct jscan_raw *f = r->f;
    struct jscan_raw unit_span, group_span, read_unit[U_N], read_group[U_N];
    const struct jscan_raw *unit = r->unit, *group = r->group;
    char *serial = NULL, *base_serial = NULL;
    struct gather g = {0};
    memset(d, 0, sizeof *d);
    if (read_serial(&serial, member(f, R_SERIAL, R_SERIAL), "serial", e) < 0)
        return -1;
    if (!serial)
        return err_set(e, "no serial");
    size_t own = gather_own(&g, serial, &d->serial);
    if (!r->nested[0]) {
        bool has_unit = object_or_first(s, member(f, R_BASEUNIT, R_BASEUNIT), &unit_span);
        read_object(s, has_unit ? &unit_span : NULL, unit_names, U_N, read_unit);
        unit = read_unit;
    }
    if (read_serial(&base_serial, member(unit, U_SERIAL, U_SERIAL), "base unit serial", e) < 0) {
        err_prefix(e, "device %s", serial);
        gather_clear(&g);
        return -1;
    }
    size_t model = name_text(&g, member(f, R_MODEL, R_MODEL), &d->model);
    size_t name = name_text(&g, member(f, R_NAME, R_NAME), &d->name);
    if (base_serial) {
        gather_own(&g, base_serial, &d->base_serial);
        name_text(&g, member(unit, U_MODEL, U_MODEL), &d->base_model);
        name_text(&g, member(unit, U_NAME, U_NAME), &d->base_name);
    } else {
        /* No base unit given: a standalone device is its own base unit. */
        gather_again(&g, own, &d->base_serial);
        gather_again(&g, model, &d->base_model);
        gather_again(&g, name, &d->base_name);
    }
    if (!r->nested[1]) {
        bool has_group = object_or_first(s, member(f, R_GROUP, R_GROUP), &group_span);
        read_object(s, has_group ? &group_span : NULL, unit_names, U_N, read_group);
        group = read_group;
    }
    name_text(&g, member(group, U_NAME, U_NAME), &d->group_name);
    read_reading(d, &g, r);
    gather_done(&g, d);
    return 0;
}

/* A record skipped, to be said once the whole reply has been read. */
struct skipped {
    size_t index;
    struct err why;
};

/* What one `devices` array gave. */
struct device_list {
    struct device_info *items;
    size_t count, cap, records;
    struct skipped *skipped;
    size_t n_skipped, cap_skipped;
};

static void device_list_clear(struct device_list *l)
{
    device_info_free(l->items, l->count);
    free(l->skipped);
    memset(l, 0, sizeof *l);
}

static void note_skipped(struct device_list *l, const struct err *why)
{
    if (l->n_skipped == l->cap_skipped) {
        l->cap_skipped = l->cap_skipped ? 2 * l->cap_skipped : 8;
        l->skipped = xreallocarray(l->skipped, l->cap_skipped, sizeof *l->skipped);
    }
    l->skipped[l->n_skipped].index = l->records;
    l->skipped[l->n_skipped++].why = *why;
}

/* The devices array that comes next in `s`, `sub` a second scanner for
 * the values within each record. */
static void read_devices(struct device_list *l, struct jscan *s, struct jscan *sub)
{
    jscan_array(s);
    while (jscan_item(s)) {
        struct record r;
        struct err why;
        if (jscan_peek(s) != JSCAN_OBJECT) {
            if (!jscan_skip(s, NULL))
                return;
            err_set(&why, "not an object");
            note_skipped(l, &why);
            l->records++;
            continue;
        }
        if (!read_record(s, &r))
            return;
        if (l->count == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 64;
            l->items = xreallocarray(l->items, l->cap, sizeof *l->items);
        }
        if (read_device(&l->items[l->count], sub, &r, &why) < 0)
            note_skipped(l, &why);
        else
            l->count++;
        l->records++;
    }
}

int platform_parse_devices(struct device_info **out, size_t *n, const char *text, size_t len,
                           const char *account, struct err *e)
{
    int rc = -1;
    struct jscan s = {0}, sub = {0};
    struct device_list list = {0};
    bool found = false;
    struct err why;
    *out = NULL;
    *n = 0;
    /* What follows the value may be white space or NUL bytes, as call_end
     * used to allow. */
    while (text && len > 0 && strchr(" \t\r\n", text[len - 1]))
        len--;
    jscan_init(&s, text ? text : "", text ? len : 0);
    jscan_init(&sub, "", 0);
    if (jscan_object(&s)) {
        while (jscan_member(&s)) {
            if (strcmp(s.key, "devices") != 0) {
                jscan_skip(&s, NULL);
                continue;
            }
            /* json-c kept the last of members of the same name. */
            device_list_clear(&list);
            found = jscan_peek(&s) == JSCAN_ARRAY;
            if (found)
                read_devices(&list, &s, &sub);
            else
                jscan_skip(&s, NULL);
        }
    }
    if (jscan_end(&s, &why) < 0) {
        err_set(e, "Get Current Readings reply is not a JSON object: %s", why.msg);
        goto out;
    }
    if (!found) {
        err_set(e, "Get Current Readings reply has no 'devices' array");
        goto out;
    }
    for (size_t i = 0; i < list.n_skipped; i++) {
        const struct skipped *k = &list.skipped[i];
        if (account)
            log_warn("platform: account %s: device record %zu of %zu skipped: %s", account,
                     k->index + 1, list.records, k->why.msg);
        else
            log_warn("platform: device record %zu of %zu skipped: %s", k->index + 1, list.records,
                     k->why.msg);
    }
    rc = 0;
out:
    if (rc == 0 && list.count > 0) {
        *out = list.items;
        *n = list.count;
        list.items = NULL;
        list.count = 0;
    }
    device_list_clear(&list);
    jscan_free(&s);
    jscan_free(&sub);
    return rc;
}

void device_info_free(struct device_info *d, size_t n)
{
    if (!d)
        return;
    for (size_t i = 0; i < n; i++) {
        if (d[i].strings) { /* the parser's: every string in one block */
            free(d[i].strings);
            free(d[i].channels);
            continue;
        }
        free(d[i].serial);
        free(d[i].model);
        free(d[i].name);
        free(d[i].base_serial);
        free(d[i].base_model);
        free(d[i].base_name);
        free(d[i].group_name);
        free(d[i].rssi);
        for (size_t k = 0; k < d[i].n_channels; k++) {
            free(d[i].channels[k].name);
            free(d[i].channels[k].unit);
            free(d[i].channels[k].value);
        }
        free(d[i].channels);
    }
    free(d);
}
