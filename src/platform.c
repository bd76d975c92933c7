/* The platform client: builds each request body with json-c, makes the POST
 * over one libcurl handle kept for the whole run, and turns what comes back
 * (status, rate-limit headers, error body, a JSON or CSV body) into a
 * struct platform_reply. The devices of a Get Current Readings body are
 * devicelist.c's to read. */
#include "platform.h"
#include "util/buf.h"
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
    struct platform_login login; /* its strings are the caller's */
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

int platform_new(struct platform **out, const struct platform_login *login, struct err *e)
{
    int rc = -1;
    struct platform *p = NULL;
    bool loopback = false;
    const char *name = login->name ? login->name : "";
    *out = NULL;
    if (check_base_url(&loopback, login->base_url, e) < 0) {
        err_prefix(e, "account '%s'", name);
        goto out;
    }
    p = xcalloc(1, sizeof *p);
    p->login = *login;
    p->connect_s = DEFAULT_CONNECT_TIMEOUT;
    p->total_s = DEFAULT_TOTAL_TIMEOUT;
    p->base_url = xstrdup(login->base_url);
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
static struct json_object *request_body(const struct platform_login *a, enum platform_op op,
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
static char *clean_text(const char *text, size_t len, const struct platform_login *a, size_t max)
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
                           const struct platform_login *a)
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
    c->request = request_body(&p->login, op, q);
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
    const char *name = p->login.name ? p->login.name : "";
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
        out->message = clean_text(why, strlen(why), &p->login, CURL_ERROR_SIZE);
        goto out;
    }
    curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &out->http_status);
    if (out->http_status != 200) {
        out->message = error_message(&out->api_code, out->http_status, &c->body, &p->login);
        goto out;
    }
    if (c->type != PLATFORM_TYPE_JSON || c->op == PLATFORM_CURRENT) {
        /* A Get Current Readings reply is kept as text for
         * devicelist_parse, which reads it without a tree; here
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
