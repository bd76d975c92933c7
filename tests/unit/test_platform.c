/* Tests of platform.c against a real HTTP server on 127.0.0.1 started in
 * the test: it records every request and answers what the test prepared.
 * Also a Get Current Readings reply carried to the device list's parser
 * (whose own tests are test_devicelist.c). */
#include "budget.h"
#include "devicelist.h"
#include "platform.h"
#include "proc.h"
#include "run/tick.h"
#include "state.h"
#include "upload.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQUESTS 8

static char api_key[] = "wsk-TESTKEY-0123456789abcdefghijklmnopqrstuvw"; /* 45 chars */
static char login_id[] = "tduser01";
static char password[] = "pa\"ss\\wd"; /* a quote and a backslash */
static char account_name[] = "test";

struct recorded {
    char *method;
    char *url;
    char *override;
    char *content_type;
    char *accept;
    char *user_agent;
    bool has_expect;
    char *body;
};

struct canned {
    unsigned status;
    const char *body;        /* NULL: empty */
    size_t body_len;         /* 0: strlen(body) */
    const char *headers[16]; /* name, value, name, value, ..., NULL */
    unsigned delay_ms;
};

static struct {
    struct MHD_Daemon *d;
    unsigned short port;
    pthread_mutex_t lock;
    int connections;
    int in_flight, max_in_flight; /* requests inside on_request at once */
    size_t n_requests;
    struct recorded req[MAX_REQUESTS];
    struct canned reply;
    atomic_bool stopping;
} srv = {.lock = PTHREAD_MUTEX_INITIALIZER};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)conn;
    (void)socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        pthread_mutex_lock(&srv.lock);
        srv.connections++;
        pthread_mutex_unlock(&srv.lock);
    }
}

static const char *header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **req_cls)
{
    struct upload *up = upload_feed(req_cls, upload_data, upload_size, 0);
    struct MHD_Response *resp;
    enum MHD_Result ret;
    const struct canned *c = &srv.reply;
    (void)cls;
    (void)version;
    if (!up)
        return MHD_YES;
    pthread_mutex_lock(&srv.lock);
    if (srv.n_requests < MAX_REQUESTS) {
        struct recorded *r = &srv.req[srv.n_requests];
        r->method = xstrdup(method);
        r->url = xstrdup(url);
        r->override = dup_or_null(header(conn, "X-HTTP-Method-Override"));
        r->content_type = dup_or_null(header(conn, "Content-Type"));
        r->accept = dup_or_null(header(conn, "Accept"));
        r->user_agent = dup_or_null(header(conn, "User-Agent"));
        r->has_expect = header(conn, "Expect") != NULL;
        r->body = xstrdup(buf_str(&up->body));
    }
    srv.n_requests++;
    if (++srv.in_flight > srv.max_in_flight)
        srv.max_in_flight = srv.in_flight;
    pthread_mutex_unlock(&srv.lock);
    for (unsigned waited = 0; waited < c->delay_ms && !atomic_load(&srv.stopping); waited += 10)
        usleep(10 * 1000);
    pthread_mutex_lock(&srv.lock);
    srv.in_flight--;
    pthread_mutex_unlock(&srv.lock);
    size_t len = c->body ? (c->body_len ? c->body_len : strlen(c->body)) : 0;
    /* A copy: a test may free a body it built as soon as its call returns,
     * while this connection's thread may still be writing the reply. */
    resp = MHD_create_response_from_buffer(len, (void *)(c->body ? c->body : ""),
                                           MHD_RESPMEM_MUST_COPY);
    for (size_t i = 0; c->headers[i]; i += 2)
        MHD_add_response_header(resp, c->headers[i], c->headers[i + 1]);
    ret = MHD_queue_response(conn, c->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void server_start(void)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv.d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED,
        upload_completed, NULL, MHD_OPTION_END);
    cr_assert_not_null(srv.d, "cannot start the test HTTP server");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv.d, MHD_DAEMON_INFO_BIND_PORT);
    cr_assert_not_null(info);
    srv.port = info->port;
    cr_assert_neq(srv.port, 0);
}

static void server_stop(void)
{
    atomic_store(&srv.stopping, true);
    if (srv.d)
        MHD_stop_daemon(srv.d);
    srv.d = NULL;
    srv.connections = srv.in_flight = srv.max_in_flight = 0;
    srv.n_requests = 0;
    atomic_store(&srv.stopping, false);
    for (size_t i = 0; i < MAX_REQUESTS; i++) {
        struct recorded *r = &srv.req[i];
        free(r->method);
        free(r->url);
        free(r->override);
        free(r->content_type);
        free(r->accept);
        free(r->user_agent);
        free(r->body);
        memset(r, 0, sizeof *r);
    }
}

static char base_url[64];
static struct platform_login account;
static struct platform *client;

static void setup(void)
{
    struct err e = {{0}};
    curl_global_init(CURL_GLOBAL_DEFAULT);
    server_start();
    snprintf(base_url, sizeof base_url, "http://127.0.0.1:%u", (unsigned)srv.port);
    memset(&account, 0, sizeof account);
    account.name = account_name;
    account.base_url = base_url;
    account.api_key = api_key;
    account.login_id = login_id;
    account.login_pass = password;
    cr_assert_eq(platform_new(&client, &account, &e), 0, "%s", e.msg);
}

static void teardown(void)
{
    platform_free(client);
    client = NULL;
    server_stop();
    curl_global_cleanup();
}

static void answer(unsigned status, const char *body)
{
    memset(&srv.reply, 0, sizeof srv.reply);
    srv.reply.status = status;
    srv.reply.body = body;
}

static void answer_header(const char *name, const char *value)
{
    size_t i = 0;
    while (srv.reply.headers[i])
        i += 2;
    cr_assert_lt(i + 2, sizeof srv.reply.headers / sizeof srv.reply.headers[0]);
    srv.reply.headers[i] = name;
    srv.reply.headers[i + 1] = value;
}

static void assert_no_secret(const char *text)
{
    if (!text)
        return;
    cr_assert_null(strstr(text, api_key), "API key in: %s", text);
    cr_assert_null(strstr(text, password), "password in: %s", text);
    cr_assert_null(strstr(text, "pa\\\"ss"), "escaped password in: %s", text);
    cr_assert_null(strstr(text, "login-pass"), "request body in: %s", text);
}

static struct json_object *request_json(size_t i)
{
    cr_assert_lt(i, srv.n_requests);
    struct json_object *obj = json_tokener_parse(srv.req[i].body);
    cr_assert_not_null(obj, "request body is not JSON: %s", srv.req[i].body);
    cr_assert(json_object_is_type(obj, json_type_object));
    return obj;
}

static void assert_member(struct json_object *obj, const char *key, const char *want)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no member '%s'", key);
    cr_assert(json_object_is_type(v, json_type_string), "member '%s' is not a string", key);
    cr_assert_str_eq(json_object_get_string(v), want);
}

static void assert_common_request(size_t i, const char *path)
{
    const struct recorded *r = &srv.req[i];
    cr_assert_str_eq(r->method, "POST");
    cr_assert_str_eq(r->url, path);
    cr_assert_not_null(r->override);
    cr_assert_str_eq(r->override, "GET");
    cr_assert_not_null(r->content_type);
    cr_assert_str_eq(r->content_type, "application/json");
    cr_assert_not_null(r->accept);
    cr_assert_str_eq(r->accept, "application/json");
    cr_assert_not_null(r->user_agent);
    cr_assert_str_eq(r->user_agent, "wsrelay/" WSRELAY_VERSION);
    cr_assert_not(r->has_expect);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

TestSuite(platform, .init = setup, .fini = teardown, .timeout = 30);

Test(platform, current_request_and_ratelimit)
{
    struct platform_reply r = {0};
    answer(200, "{\"devices\":[]}");
    answer_header("Content-Type", "application/json; charset=utf-8");
    answer_header("X-RateLimit-Limit", "10");
    answer_header("X-RateLimit-Reset", "120");
    answer_header("X-RateLimit-Remaining", "7");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), 0, "%s",
                 r.message ? r.message : "");
    cr_assert_eq(r.http_status, 200);
    cr_assert_eq(r.api_code, 0);
    cr_assert_null(r.message);
    cr_assert_null(r.body, "a Get Current Readings reply is kept as text");
    cr_assert_str_eq(r.text, "{\"devices\":[]}");
    cr_assert_eq(r.text_len, strlen(r.text));
    cr_assert(r.rl.present);
    cr_assert_eq(r.rl.limit, 10);
    cr_assert_eq(r.rl.reset, 120);
    cr_assert_eq(r.rl.remaining, 7);

    cr_assert_eq(srv.n_requests, 1);
    assert_common_request(0, "/v1/devices/current");
    struct json_object *req = request_json(0);
    cr_assert_eq(json_object_object_length(req), 3);
    assert_member(req, "api-key", api_key);
    assert_member(req, "login-id", login_id);
    assert_member(req, "login-pass", password);
    /* The quote and backslash travel escaped. */
    cr_assert_not_null(strstr(srv.req[0].body, "\"login-pass\":\"pa\\\"ss\\\\wd\""), "body: %s",
                       srv.req[0].body);
    json_object_put(req);
    platform_reply_free(&r);
    cr_assert_null(r.body);
}

Test(platform, alert_request)
{
    struct platform_reply r = {0};
    answer(200, "{\"remote-serial\":\"52C10001\",\"alert-logs\":[]}");
    cr_assert_eq(platform_call(client, PLATFORM_ALERT, "52C10001", "58210001", &r), 0);
    cr_assert_eq(r.http_status, 200);
    cr_assert_not(r.rl.present);
    cr_assert_eq(srv.n_requests, 1);
    assert_common_request(0, "/v1/devices/alert");
    struct json_object *req = request_json(0);
    cr_assert_eq(json_object_object_length(req), 5);
    assert_member(req, "api-key", api_key);
    assert_member(req, "login-id", login_id);
    assert_member(req, "login-pass", password);
    assert_member(req, "remote-serial", "52C10001");
    assert_member(req, "base-serial", "58210001");
    json_object_put(req);
    platform_reply_free(&r);
}

Test(platform, current_for_one_serial)
{
    struct platform_reply r = {0};
    struct json_object *req, *list = NULL;
    answer(200, "{\"devices\":[]}");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, "52C10001", "58210001", &r), 0);
    req = request_json(0);
    cr_assert_eq(json_object_object_length(req), 4);
    cr_assert(json_object_object_get_ex(req, "remote-serial", &list));
    cr_assert(json_object_is_type(list, json_type_array));
    cr_assert_eq(json_object_array_length(list), 1);
    cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(list, 0)), "52C10001");
    cr_assert_not(json_object_object_get_ex(req, "base-serial", NULL));
    json_object_put(req);
    platform_reply_free(&r);
}

Test(platform, alert_needs_serials)
{
    struct platform_reply r = {0};
    answer(200, "{}");
    cr_assert_eq(platform_call(client, PLATFORM_ALERT, NULL, "58210001", &r), -1);
    cr_assert_eq(r.http_status, 0);
    cr_assert_not_null(r.message);
    cr_assert_eq(srv.n_requests, 0);
    platform_reply_free(&r);
}

Test(platform, too_many_requests)
{
    struct platform_reply r = {0};
    answer(429, "{\"error\":{\"code\":429,\"message\":\"Too Many Requests\"}}");
    /* Names in any case. */
    answer_header("x-ratelimit-limit", "12");
    answer_header("X-RATELIMIT-RESET", "3600");
    answer_header("X-RateLimit-Remaining", " 0 ");
    cr_assert_eq(platform_call(client, PLATFORM_ALERT, "52C10001", "58210001", &r), -1);
    cr_assert_eq(r.http_status, 429);
    cr_assert_eq(r.api_code, 429);
    cr_assert_null(r.body);
    cr_assert(r.rl.present);
    cr_assert_eq(r.rl.limit, 12);
    cr_assert_eq(r.rl.reset, 3600);
    cr_assert_eq(r.rl.remaining, 0);
    cr_assert_str_eq(r.message, "HTTP 429 (code 429: Too Many Requests)");
    platform_reply_free(&r);
}

Test(platform, partial_ratelimit_is_not_present)
{
    struct platform_reply r = {0};
    answer(200, "{}");
    answer_header("X-RateLimit-Limit", "10");
    answer_header("X-RateLimit-Reset", "soon");
    answer_header("X-RateLimit-Remaining", "3");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), 0);
    cr_assert_not(r.rl.present);
    cr_assert_eq(r.rl.limit, 0);
    cr_assert_eq(r.rl.remaining, 0);
    platform_reply_free(&r);
}

Test(platform, error_code_number_401)
{
    struct platform_reply r = {0};
    answer(401, "{\"error\":{\"code\":401,\"message\":\"認証に失敗しました\"}}");
    answer_header("X-RateLimit-Limit", "10");
    answer_header("X-RateLimit-Reset", "120");
    answer_header("X-RateLimit-Remaining", "9");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_eq(r.http_status, 401);
    cr_assert_eq(r.api_code, 401);
    cr_assert(r.rl.present);
    cr_assert_eq(r.rl.remaining, 9);
    cr_assert_str_eq(r.message, "HTTP 401 (code 401: 認証に失敗しました)");
    assert_no_secret(r.message);
    platform_reply_free(&r);
}

Test(platform, error_code_string_503)
{
    struct platform_reply r = {0};
    answer(503, "{\"error\":{\"code\":\"503\",\"message\":\"Service Unavailable\"}}");
    cr_assert_eq(platform_call(client, PLATFORM_ALERT, "52C10001", "58210001", &r), -1);
    cr_assert_eq(r.http_status, 503);
    cr_assert_eq(r.api_code, 503);
    cr_assert_str_eq(r.message, "HTTP 503 (code 503: Service Unavailable)");
    platform_reply_free(&r);
}

Test(platform, error_body_not_json)
{
    struct platform_reply r = {0};
    answer(503, "<html><body>Service Unavailable</body></html>");
    answer_header("Content-Type", "text/html");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_eq(r.http_status, 503);
    cr_assert_eq(r.api_code, 0);
    cr_assert_str_eq(r.message, "HTTP 503 (body not JSON)");
    platform_reply_free(&r);
}

Test(platform, error_body_without_code)
{
    struct platform_reply r = {0};
    answer(400, "{\"error\":{\"code\":\"bad\",\"message\":\"Bad Request\"}}");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_eq(r.http_status, 400);
    cr_assert_eq(r.api_code, 0);
    cr_assert_str_eq(r.message, "HTTP 400 (no error code: Bad Request)");
    platform_reply_free(&r);
    answer(400, "{\"status\":\"nope\"}");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_str_eq(r.message, "HTTP 400 (no error object in body)");
    platform_reply_free(&r);
}

Test(platform, error_message_cleaned)
{
    struct platform_reply r = {0};
    static char body[2048];
    /* Control characters, the API key echoed back, and far too long. */
    snprintf(body, sizeof body,
             "{\"error\":{\"code\":403,\"message\":\"bad\\r\\nkey %s\\u0007 for "
             "%s; %0300d\"}}",
             api_key, "pa\\\"ss\\\\wd", 7);
    answer(403, body);
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_eq(r.api_code, 403);
    assert_no_secret(r.message);
    cr_assert_null(strpbrk(r.message, "\r\n\a"), "%s", r.message);
    const char *prefix = "HTTP 403 (code 403: ";
    cr_assert_eq(strncmp(r.message, prefix, strlen(prefix)), 0, "%s", r.message);
    /* Each control character a space, as everywhere else in the log. */
    const char *want = "bad  key [redacted]  for [redacted]; 000";
    cr_assert_eq(strncmp(r.message + strlen(prefix), want, strlen(want)), 0, "%s", r.message);
    /* The platform's part is at most 200 bytes. */
    cr_assert_eq(strlen(r.message), strlen(prefix) + 200 + 1, "%s", r.message);
    platform_reply_free(&r);
}

Test(platform, error_message_cut_on_character)
{
    struct platform_reply r = {0};
    static char body[2048];
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"error\":{\"code\":500,\"message\":\"x");
    for (int i = 0; i < 100; i++)
        buf_puts(&b, "あ"); /* 3 bytes each; 1 + 3k never lands on 200 */
    buf_puts(&b, "\"}}");
    snprintf(body, sizeof body, "%s", buf_str(&b));
    buf_free(&b);
    answer(500, body);
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    const char *prefix = "HTTP 500 (code 500: ";
    size_t part = strlen(r.message) - strlen(prefix) - 1;
    cr_assert_eq(part, 199, "%s", r.message);
    cr_assert_str_eq(r.message + strlen(r.message) - 4, "あ)");
    platform_reply_free(&r);
}

Test(platform, ok_but_not_json)
{
    struct platform_reply r = {0};
    const char *bodies[] = {"devices: none", "[1,2,3]",    "\"text\"", "null", "",
                            " \n",           "{\"a\":1} x"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        answer(200, bodies[i]);
        enum platform_op op =
            i + 1 < sizeof bodies / sizeof bodies[0] ? PLATFORM_CURRENT : PLATFORM_ALERT;
        cr_assert_eq(platform_call(client, op, "52C10001", "58210001", &r), -1, "%s", bodies[i]);
        cr_assert_eq(r.http_status, 200);
        cr_assert_null(r.body);
        cr_assert_null(r.text);
        cr_assert_str_eq(r.message, "HTTP 200 with a body that is not a JSON object");
        platform_reply_free(&r);
    }
}

/* Of a Get Current Readings reply only the first byte is looked at; the
 * rest is devicelist_parse's to refuse. */
Test(platform, current_reply_checked_when_read)
{
    struct platform_reply r = {0};
    struct device_info *d = NULL;
    size_t n = 0;
    struct err e = {{0}};
    answer(200, " {\"devices\":[]} x");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), 0);
    cr_assert_str_eq(r.text, " {\"devices\":[]} x");
    cr_assert_eq(devicelist_parse(&d, &n, r.text, r.text_len, NULL, &e), -1);
    cr_assert_str_eq(
        e.msg, "Get Current Readings reply is not a JSON object: byte 16: text after the value");
    cr_assert_null(d);
    platform_reply_free(&r);
}

Test(platform, redirect_not_followed)
{
    struct platform_reply r = {0};
    answer(302, "");
    answer_header("Location", "/v1/devices/elsewhere");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_eq(r.http_status, 302);
    cr_assert_null(r.body);
    cr_assert_not_null(strstr(r.message, "redirect"), "%s", r.message);
    cr_assert_eq(srv.n_requests, 1);
    platform_reply_free(&r);
}

Test(platform, response_too_large)
{
    struct platform_reply r = {0};
    size_t len = 5 * 1024 * 1024;
    char *big = xmalloc(len);
    memset(big, ' ', len);
    big[0] = '{';
    big[len - 1] = '}';
    answer(200, big);
    srv.reply.body_len = len;
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_null(r.body);
    cr_assert_not_null(strstr(r.message, "response too large"), "%s", r.message);
    platform_reply_free(&r);
    server_stop(); /* before the buffer it serves goes */
    free(big);
}

Test(platform, connection_refused)
{
    struct platform_reply r = {0};
    struct platform *p = NULL;
    struct platform_login a = account;
    struct err e = {{0}};
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    char url[64];
    struct timespec t0;
    /* A port that was free a moment ago: nothing listens there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    close(fd);
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    a.base_url = url;
    cr_assert_eq(platform_new(&p, &a, &e), 0, "%s", e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(platform_call(p, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_lt(seconds_since(&t0), 5.0);
    cr_assert_eq(r.http_status, 0);
    cr_assert_not_null(r.message);
    cr_assert_neq(r.message[0], '\0');
    cr_assert_not(r.rl.present);
    assert_no_secret(r.message);
    platform_reply_free(&r);
    platform_free(p);
}

Test(platform, slow_server_times_out)
{
    struct platform_reply r = {0};
    struct timespec t0;
    answer(200, "{}");
    srv.reply.delay_ms = 10 * 1000;
    platform_set_timeouts(client, 1, 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(platform_call(client, PLATFORM_ALERT, "52C10001", "58210001", &r), -1);
    double took = seconds_since(&t0);
    cr_assert_geq(took, 0.9);
    cr_assert_lt(took, 4.0, "took %.1f s", took);
    cr_assert_eq(r.http_status, 0);
    cr_assert_not_null(r.message);
    cr_assert_not_null(strstr(r.message, "imed out"), "%s", r.message);
    assert_no_secret(r.message);
    platform_reply_free(&r);
}

Test(platform, one_connection_for_many_calls)
{
    struct platform_reply r = {0};
    answer(200, "{\"devices\":[]}");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(platform_call(client, i == 1 ? PLATFORM_ALERT : PLATFORM_CURRENT,
                                   i == 1 ? "52C10001" : NULL, i == 1 ? "58210001" : NULL, &r),
                     0);
        platform_reply_free(&r);
    }
    cr_assert_eq(srv.n_requests, 3);
    cr_assert_eq(srv.connections, 1);
}

/* Clients of their own, as the run has one per account. */
#define N_PARALLEL 4
static struct platform *more[N_PARALLEL];
static struct platform_multi *multi;

/* Runs after the suite's setup (Criterion runs both), as multi_teardown
 * runs before the suite's teardown. */
static void multi_setup(void)
{
    struct err e = {{0}};
    for (size_t i = 0; i < N_PARALLEL; i++)
        cr_assert_eq(platform_new(&more[i], &account, &e), 0, "%s", e.msg);
    cr_assert_eq(platform_multi_new(&multi, &e), 0, "%s", e.msg);
}

static void multi_teardown(void)
{
    platform_multi_free(multi);
    multi = NULL;
    for (size_t i = 0; i < N_PARALLEL; i++) {
        platform_free(more[i]);
        more[i] = NULL;
    }
}

static const char *const parallel_serials[N_PARALLEL] = {"52C10001", "52C10002", "52C10003",
                                                         "52C10004"};

static void alert_requests(struct platform_request *reqs)
{
    for (size_t i = 0; i < N_PARALLEL; i++)
        reqs[i] = (struct platform_request){
            .p = more[i],
            .op = PLATFORM_ALERT,
            .query = {.serial = parallel_serials[i], .base = parallel_serials[i]}};
}

static void free_requests(struct platform_request *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        platform_reply_free(&reqs[i].reply);
}

/* What tick_call's save saw: how many calls the ledger held and how many
 * the server had been sent when it was asked, and what it answered. */
struct seen_save {
    struct state *st;
    int answer; /* what the save returns */
    int saves;
    size_t recorded, sent;
};

#define CALL_TIME 1795000000LL

static int save_seen(void *ctx, const char *why)
{
    struct seen_save *sv = ctx;
    cr_assert_str_eq(why, "before the test's calls");
    sv->saves++;
    sv->recorded = budget_read(sv->st, login_id, PLATFORM_ALERT, CALL_TIME).used;
    sv->sent = srv.n_requests;
    return sv->answer;
}

/* Makes the four alert calls through tick_call with a save that returns
 * `says`; *sv tells what the save saw. */
static int call_through_tick(struct seen_save *sv, struct platform_request *reqs, int says)
{
    const char *logins[N_PARALLEL];
    struct tick_saver saver = {.save = save_seen, .ctx = sv};
    char *dir = test_tmpdir(), *path = xasprintf("%s/state.json", dir);
    struct err e;
    *sv = (struct seen_save){.answer = says};
    cr_assert_eq(state_open(&sv->st, path, 0, &e), 0, "state_open: %s", e.msg);
    answer(200, "{\"alert-logs\":[]}");
    alert_requests(reqs);
    for (size_t i = 0; i < N_PARALLEL; i++)
        logins[i] = login_id;
    int rc = tick_call(sv->st, CALL_TIME, logins, reqs, N_PARALLEL, multi, &saver,
                       "before the test's calls");
    state_close(sv->st);
    sv->st = NULL;
    test_rmtree(dir);
    free(path);
    free(dir);
    return rc;
}

Test(platform, tick_call_records_every_call_and_saves_before_it_sends, .init = multi_setup,
     .fini = multi_teardown)
{
    struct platform_request reqs[N_PARALLEL];
    struct seen_save sv;
    cr_assert_eq(call_through_tick(&sv, reqs, 0), 0);
    cr_assert_eq(sv.saves, 1);
    cr_assert_eq(sv.recorded, N_PARALLEL, "the ledger held %zu calls at the save", sv.recorded);
    cr_assert_eq(sv.sent, 0, "%zu calls were sent before the save", sv.sent);
    cr_assert_eq(srv.n_requests, N_PARALLEL);
    for (size_t i = 0; i < N_PARALLEL; i++)
        cr_assert_eq(reqs[i].rc, 0, "call %zu: %s", i, reqs[i].reply.message);
    free_requests(reqs, N_PARALLEL);
}

Test(platform, tick_call_sends_nothing_when_the_save_fails, .init = multi_setup,
     .fini = multi_teardown)
{
    struct platform_request reqs[N_PARALLEL];
    struct seen_save sv;
    cr_assert_eq(call_through_tick(&sv, reqs, -1), -1);
    cr_assert_eq(sv.saves, 1);
    cr_assert_eq(sv.recorded, N_PARALLEL);
    cr_assert_eq(srv.n_requests, 0, "%zu calls were sent after a failed save", srv.n_requests);
    for (size_t i = 0; i < N_PARALLEL; i++)
        cr_assert_null(reqs[i].reply.body);
    free_requests(reqs, N_PARALLEL);
}

Test(platform, multi_calls_at_once, .init = multi_setup, .fini = multi_teardown)
{
    struct platform_request reqs[N_PARALLEL];
    answer(200, "{\"alert-logs\":[]}");
    answer_header("X-RateLimit-Limit", "12");
    answer_header("X-RateLimit-Reset", "3600");
    answer_header("X-RateLimit-Remaining", "11");
    /* Long enough that the calls are all in the server at once even on a
     * busy machine, had they been made one after another they never are. */
    srv.reply.delay_ms = 1500;
    alert_requests(reqs);
    platform_multi_call(multi, reqs, N_PARALLEL);
    for (size_t i = 0; i < N_PARALLEL; i++) {
        cr_assert_eq(reqs[i].rc, 0, "call %zu: %s", i, reqs[i].reply.message);
        cr_assert_eq(reqs[i].reply.http_status, 200);
        cr_assert_not_null(reqs[i].reply.body);
        cr_assert(reqs[i].reply.rl.present);
        cr_assert_eq(reqs[i].reply.rl.remaining, 11);
    }
    cr_assert_eq(srv.n_requests, N_PARALLEL);
    cr_assert_eq(srv.max_in_flight, N_PARALLEL, "at most %d calls were made at once",
                 srv.max_in_flight);
    /* Each serial was asked once. */
    for (size_t k = 0; k < N_PARALLEL; k++) {
        int asked = 0;
        for (size_t i = 0; i < srv.n_requests; i++) {
            struct json_object *req = request_json(i);
            struct json_object *v = NULL;
            json_object_object_get_ex(req, "remote-serial", &v);
            asked += v && strcmp(json_object_get_string(v), parallel_serials[k]) == 0;
            json_object_put(req);
        }
        cr_assert_eq(asked, 1, "%s asked %d times", parallel_serials[k], asked);
    }
    free_requests(reqs, N_PARALLEL);
}

Test(platform, multi_keeps_connections, .init = multi_setup, .fini = multi_teardown)
{
    struct platform_request reqs[N_PARALLEL];
    answer(200, "{\"alert-logs\":[]}");
    for (int round = 0; round < 2; round++) {
        alert_requests(reqs);
        platform_multi_call(multi, reqs, 2);
        cr_assert_eq(reqs[0].rc, 0, "%s", reqs[0].reply.message);
        cr_assert_eq(reqs[1].rc, 0, "%s", reqs[1].reply.message);
        free_requests(reqs, 2);
    }
    cr_assert_eq(srv.n_requests, 4);
    cr_assert_eq(srv.connections, 2);
}

Test(platform, multi_failures_stay_apart, .init = multi_setup, .fini = multi_teardown)
{
    struct platform_request reqs[N_PARALLEL];
    answer(503, "{\"error\":{\"code\":503,\"message\":\"busy\"}}");
    alert_requests(reqs);
    reqs[1].query.serial = NULL; /* cannot be sent */
    reqs[2].p = reqs[0].p;       /* one client twice */
    platform_multi_call(multi, reqs, 3);
    cr_assert_eq(reqs[0].rc, -1);
    cr_assert_eq(reqs[0].reply.http_status, 503);
    cr_assert_eq(reqs[0].reply.api_code, 503);
    cr_assert_eq(reqs[1].rc, -1);
    cr_assert_eq(reqs[1].reply.http_status, 0);
    cr_assert_str_eq(reqs[1].reply.message, "alert: a serial and a base serial are needed");
    cr_assert_eq(reqs[2].rc, -1);
    cr_assert_eq(reqs[2].reply.http_status, 0);
    cr_assert_not_null(reqs[2].reply.message);
    assert_no_secret(reqs[2].reply.message);
    cr_assert_eq(srv.n_requests, 1);
    free_requests(reqs, 3);
    /* The client used twice is usable again. */
    alert_requests(reqs);
    answer(200, "{\"alert-logs\":[]}");
    platform_multi_call(multi, reqs, 1);
    cr_assert_eq(reqs[0].rc, 0, "%s", reqs[0].reply.message);
    free_requests(reqs, 1);
}

Test(platform, multi_makes_graph_data_calls, .init = multi_setup, .fini = multi_teardown)
{
    struct platform_request reqs[2] = {
        {.p = more[0], .op = PLATFORM_LATEST, .query = {.serial = "52C10001"}},
        {.p = more[1],
         .op = PLATFORM_LATEST_RTR500,
         .query = {.serial = "52C10002", .base = "58210001"}},
    };
    answer(200, "{\"serial\":\"52C10001\",\"channel\":[],\"data\":[]}");
    srv.reply.delay_ms = 1500; /* as in multi_calls_at_once */
    platform_multi_call(multi, reqs, 2);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(reqs[i].rc, 0, "call %zu: %s", i, reqs[i].reply.message);
        cr_assert_not_null(reqs[i].reply.body);
    }
    cr_assert_eq(srv.n_requests, 2);
    cr_assert_eq(srv.max_in_flight, 2);
    /* Each request went to its operation with its query, whichever came first. */
    for (size_t i = 0; i < 2; i++) {
        struct json_object *req = request_json(i);
        struct json_object *v = NULL;
        json_object_object_get_ex(req, "remote-serial", &v);
        bool rtr500 = v && !strcmp(json_object_get_string(v), "52C10002");
        assert_common_request(i, rtr500 ? "/v1/devices/latest-data-rtr500"
                                        : "/v1/devices/latest-data");
        if (rtr500)
            assert_member(req, "base-serial", "58210001");
        else
            cr_assert_not(json_object_object_get_ex(req, "base-serial", NULL));
        json_object_put(req);
    }
    free_requests(reqs, 2);
}

Test(platform, reply_reset_between_calls)
{
    struct platform_reply r = {0};
    answer(429, "{\"error\":{\"code\":429,\"message\":\"slow down\"}}");
    answer_header("X-RateLimit-Limit", "12");
    answer_header("X-RateLimit-Reset", "3600");
    answer_header("X-RateLimit-Remaining", "0");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert(r.rl.present);
    /* The same reply again, without platform_reply_free in between. */
    answer(200, "{\"devices\":[]}");
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), 0);
    cr_assert_eq(r.http_status, 200);
    cr_assert_eq(r.api_code, 0);
    cr_assert_null(r.message);
    cr_assert_not(r.rl.present);
    cr_assert_not_null(r.text);
    platform_reply_free(&r);
}

Test(platform, no_secret_in_logs)
{
    struct platform_reply r = {0};
    static char body[512];
    char path[] = "/tmp/wsrelay-test-log-XXXXXX";
    char text[8192];
    int fd = mkstemp(path), saved;
    ssize_t n;
    cr_assert_geq(fd, 0);
    unlink(path);
    fflush(stderr);
    saved = dup(2);
    dup2(fd, 2);
    log_set_level(LOG_DEBUG);
    answer(200, "{\"devices\":[]}");
    platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r);
    snprintf(body, sizeof body, "{\"error\":{\"code\":401,\"message\":\"bad key %s / %s\"}}",
             api_key, "pa\\\"ss\\\\wd");
    answer(401, body);
    platform_call(client, PLATFORM_ALERT, "52C10001", "58210001", &r);
    answer(500, "not json");
    platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r);
    platform_reply_free(&r);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    log_set_level(LOG_INFO);
    lseek(fd, 0, SEEK_SET);
    n = read(fd, text, sizeof text - 1);
    close(fd);
    cr_assert_gt(n, 0);
    text[n] = '\0';
    cr_assert_not_null(strstr(text, "platform: account 'test': current: HTTP 200"), "%s", text);
    cr_assert_not_null(strstr(text, "platform: account 'test': alert: HTTP 401"), "%s", text);
    assert_no_secret(text);
}

/* Sends stderr to a temporary file until stderr_end, which returns what
 * was written (caller frees). */
static int stderr_begin(int *saved)
{
    char path[] = "/tmp/wsrelay-test-log-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    fflush(stderr);
    *saved = dup(2);
    dup2(fd, 2);
    return fd;
}

static char *stderr_end(int fd, int saved)
{
    static char text[16384];
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    return xstrdup(text);
}

/* Every string of a device: valid UTF-8, no control character, bounded. */
static void assert_clean(const char *s, size_t max)
{
    size_t n = strlen(s);
    cr_assert(utf8_valid(s, n), "not UTF-8: %s", s);
    cr_assert_leq(n, max);
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t len = utf8_decode(&cp, s + i, n - i);
        cr_assert_not(utf8_is_control(cp), "control character U+%04X in: %s", (unsigned)cp, s);
        i += len;
    }
}

/* What the platform could send one day: bytes that are not UTF-8, control
 * characters, "\u0000", names too long, serials that are not serials. The
 * reply is taken (a device with one bad byte in its name must still be
 * polled), the strings repaired, and the devices whose serial cannot be
 * trusted left out, each with one warning. */
Test(platform, odd_device_data_is_repaired_or_skipped)
{
    struct buf body;
    struct platform_reply r = {0};
    struct device_info *d = NULL;
    size_t n = 0;
    struct err e = {{0}};
    buf_init(&body, 0);
    buf_puts(&body, "{\"devices\":[{\"serial\":\"52C10001\",\"model\":\"RTR\x01"
                    "501\","
                    "\"name\":\"Freezer\xFF A\\u0000B\\r\\nwsrelay: ERROR: forged\","
                    "\"baseunit\":{\"serial\":\"58210001\",\"model\":\"RTR500\","
                    "\"name\":\"Gate\xC0\xAFway\"},\"group\":{\"name\":\"Lab\\u001b[2J\"}},");
    buf_puts(&body, "{\"serial\":\"");
    for (int i = 0; i < 1200; i++)
        buf_puts(&body, "A");
    buf_puts(&body, "\",\"name\":\"long serial\"},");
    buf_puts(&body, "{\"serial\":\"5214\\r\\nXY\",\"name\":\"line break\"},");
    buf_puts(&body, "{\"serial\":\"5214000B\",\"baseunit\":{\"serial\":\"5821\\u0000001\"}},");
    buf_puts(&body, "{\"serial\":\"5214000C\",\"model\":\"\\ud800\",\"name\":\"");
    for (int i = 0; i < 400; i++)
        buf_puts(&body, "冷");
    buf_puts(&body, "\"}]}");
    answer(200, body.data);
    srv.reply.body_len = body.len;
    cr_assert_eq(platform_call(client, PLATFORM_CURRENT, NULL, NULL, &r), 0, "%s",
                 r.message ? r.message : "");

    int saved, fd = stderr_begin(&saved);
    cr_assert_eq(devicelist_parse(&d, &n, r.text, r.text_len, "test", &e), 0, "%s", e.msg);
    char *log = stderr_end(fd, saved);
    cr_assert_eq(n, 2, "the three devices without a trustworthy serial are left out");
    cr_assert_str_eq(d[0].serial, "52C10001");
    cr_assert_str_eq(d[0].name, "Freezer" UTF8_REPLACEMENT " A B  wsrelay: ERROR: forged");
    cr_assert_str_eq(d[0].model, "RTR 501");
    cr_assert_str_eq(d[0].base_serial, "58210001");
    cr_assert_str_eq(d[0].base_name, "Gate" UTF8_REPLACEMENT UTF8_REPLACEMENT "way");
    cr_assert_str_eq(d[0].group_name, "Lab [2J");
    cr_assert_str_eq(d[1].serial, "5214000C");
    cr_assert_str_eq(d[1].model, UTF8_REPLACEMENT);
    cr_assert_eq(strlen(d[1].name), 255, "cut to PLATFORM_NAME_MAX at a character boundary");
    cr_assert(!strcmp(d[1].name + 252, UTF8_ELLIPSIS), "a cut name ends with an ellipsis: %s",
              d[1].name);
    for (size_t i = 0; i < n; i++) {
        const char *fields[] = {d[i].serial,     d[i].model,     d[i].name,      d[i].base_serial,
                                d[i].base_model, d[i].base_name, d[i].group_name};
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
            assert_clean(fields[k], PLATFORM_NAME_MAX);
    }

    /* One warning per device left out, naming the account and showing the
     * serial escaped and bounded: no log line can be forged. */
    size_t lines = 0;
    for (const char *p = log; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 3, "%s", log);
    cr_assert_not_null(strstr(log, "wsrelay: warning: platform: account test: device record 2 "
                                   "of 5 skipped: serial \"AAAAAAAA"),
                       "%s", log);
    cr_assert_not_null(strstr(log, "…\" (1200 bytes) is not a device serial"), "%s", log);
    cr_assert_not_null(strstr(log, "device record 3 of 5 skipped: serial \"5214\\r\\nXY\" is "
                                   "not a device serial (exactly 8 letters or digits)"),
                       "%s", log);
    cr_assert_not_null(strstr(log, "device record 4 of 5 skipped: device 5214000B: base unit "
                                   "serial \"5821\\x00001\" is not a device serial"),
                       "%s", log);
    cr_assert_null(strchr(log, '\r'), "%s", log);
    cr_assert_null(strchr(log, 0x1b), "%s", log);
    cr_assert_lt(strlen(log), 1000, "the 1200-byte serial is not repeated: %s", log);
    free(log);
    device_info_free(d, n);
    platform_reply_free(&r);
    buf_free(&body);
}

Test(platform, base_url_checked)
{
    const char *rejected[] = {
        "http://example.com",
        "ftp://example.com/",
        "example.com",
        "",
        "http://127.0.0.1.example.com",
        "http://localhost@example.com",
        "https://user:secretpw@example.com",
        "https://example.com/?a=1",
        "https://example.com/#a",
        "https://",
        "http://[::2]:8080",
        "http://127.1:8080",
    };
    const char *accepted[] = {
        "https://example.com",       "https://api.webstorage-service.com/",
        "http://127.0.0.1:1",        "http://localhost:8080",
        "http://[::1]:8080",         "http://127.0.0.2:8080",
        "http://[0:0:0:0:0:0:0:1]/", "https://10.0.0.1:8443/prefix",
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) {
        struct platform_login a = account;
        struct platform *p = (struct platform *)&a; /* must become NULL */
        struct err e = {{0}};
        char url[128];
        snprintf(url, sizeof url, "%s", rejected[i]);
        a.base_url = url;
        cr_assert_eq(platform_new(&p, &a, &e), -1, "accepted %s", rejected[i]);
        cr_assert_null(p);
        cr_assert_not_null(strstr(e.msg, "account 'test': base_url: "), "%s", e.msg);
        cr_assert_null(strstr(e.msg, "secretpw"), "%s", e.msg);
        cr_assert_null(strstr(e.msg, "example"), "the URL is not repeated: %s", e.msg);
    }
    {
        struct platform_login a = account;
        struct platform *p = NULL;
        struct err e = {{0}};
        char url[] = "http://example.com";
        a.base_url = url;
        cr_assert_eq(platform_new(&p, &a, &e), -1);
        cr_assert_str_eq(e.msg, "account 'test': base_url: http:// is only allowed to this "
                                "machine (localhost, 127.0.0.0/8 or [::1]); use https://");
    }
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        struct platform_login a = account;
        struct platform *p = NULL;
        struct err e = {{0}};
        char url[128];
        snprintf(url, sizeof url, "%s", accepted[i]);
        a.base_url = url;
        cr_assert_eq(platform_new(&p, &a, &e), 0, "rejected %s: %s", accepted[i], e.msg);
        cr_assert_not_null(p);
        platform_free(p);
    }
    platform_free(NULL);
}

Test(platform, tls_to_plain_server_fails)
{
    /* A TLS handshake with a plain-HTTP server fails: status 0, not a
     * silent downgrade. */
    struct platform_reply r = {0};
    struct platform *p = NULL;
    struct platform_login a = account;
    struct err e = {{0}};
    char url[64];
    snprintf(url, sizeof url, "https://127.0.0.1:%u", (unsigned)srv.port);
    a.base_url = url;
    answer(200, "{}");
    cr_assert_eq(platform_new(&p, &a, &e), 0, "%s", e.msg);
    platform_set_timeouts(p, 2, 3);
    cr_assert_eq(platform_call(p, PLATFORM_CURRENT, NULL, NULL, &r), -1);
    cr_assert_eq(r.http_status, 0);
    cr_assert_not_null(r.message);
    platform_reply_free(&r);
    platform_free(p);
}

static void assert_int_member(struct json_object *obj, const char *key, long long want)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no member '%s'", key);
    cr_assert(json_object_is_type(v, json_type_int), "member '%s' is not an integer", key);
    cr_assert_eq(json_object_get_int64(v), want, "%s: %lld", key,
                 (long long)json_object_get_int64(v));
}

Test(platform, latest_data_request)
{
    struct platform_reply r = {0};
    struct platform_query q = {.serial = "52C10001"};
    answer(200, "{\"serial\":\"52C10001\",\"channel\":[],\"data\":[]}");
    answer_header("X-RateLimit-Limit", "60");
    answer_header("X-RateLimit-Reset", "60");
    answer_header("X-RateLimit-Remaining", "59");
    cr_assert_eq(platform_query(client, PLATFORM_LATEST, &q, &r), 0, "%s",
                 r.message ? r.message : "");
    cr_assert_not_null(r.body);
    cr_assert_null(r.text);
    cr_assert(r.rl.present);
    cr_assert_not(r.rl.has_data_count);
    assert_common_request(0, "/v1/devices/latest-data");
    struct json_object *req = request_json(0);
    /* Only what was asked: no type, no unit, no base for a standalone device. */
    cr_assert_eq(json_object_object_length(req), 4);
    assert_member(req, "remote-serial", "52C10001");
    json_object_put(req);
    platform_reply_free(&r);
}

Test(platform, data_rtr500_request_csv_and_data_count)
{
    struct platform_reply r = {0};
    struct platform_query q = {.serial = "52C10001",
                               .base = "58210001",
                               .type = PLATFORM_TYPE_CSV2,
                               .temperature_unit = 'F',
                               .from = 1795000000,
                               .to = 1795003600,
                               .number = 100000};
    static const char csv[] = "\"Date/Time\",\"Date/Time\",\"No.1\"\r\n";
    answer(200, csv);
    answer_header("Content-Type", "text/csv; charset=utf-8");
    answer_header("X-RateLimit-Limit", "20");
    answer_header("X-RateLimit-Reset", "60");
    answer_header("X-RateLimit-Remaining", "19");
    answer_header("X-RateLimit-Remaining-DataCount", "159700");
    cr_assert_eq(platform_query(client, PLATFORM_DATA_RTR500, &q, &r), 0, "%s",
                 r.message ? r.message : "");
    cr_assert_null(r.body);
    cr_assert_not_null(r.text);
    cr_assert_eq(r.text_len, strlen(csv));
    cr_assert_str_eq(r.text, csv);
    cr_assert(r.rl.present);
    cr_assert_eq(r.rl.remaining, 19);
    cr_assert(r.rl.has_data_count);
    cr_assert_eq(r.rl.data_count, 159700);
    assert_common_request(0, "/v1/devices/data-rtr500");
    struct json_object *req = request_json(0);
    cr_assert_eq(json_object_object_length(req), 10);
    assert_member(req, "remote-serial", "52C10001");
    assert_member(req, "base-serial", "58210001");
    assert_member(req, "type", "csv2");
    assert_member(req, "temperature-unit", "F");
    assert_int_member(req, "unixtime-from", 1795000000);
    assert_int_member(req, "unixtime-to", 1795003600);
    assert_int_member(req, "number", 65535); /* the platform's cap */
    json_object_put(req);
    platform_reply_free(&r);
    cr_assert_null(r.text);
}

Test(platform, graph_queries_refused_before_a_call)
{
    struct platform_reply r = {0};
    const struct {
        enum platform_op op;
        struct platform_query q;
        const char *message;
    } cases[] = {
        {PLATFORM_LATEST, {.serial = NULL}, "latest-data: a serial is needed"},
        {PLATFORM_LATEST_RTR500,
         {.serial = "52C10001"},
         "latest-data-rtr500: a base serial is needed"},
        {PLATFORM_DATA_RTR500,
         {.serial = "52C10001", .base = "58210001", .type = PLATFORM_TYPE_CSV},
         "data-rtr500: type csv has no CSV layout for base-attached remote units (use csv2)"},
        {PLATFORM_DATA,
         {.serial = "52C10001", .temperature_unit = 'K'},
         "data: the temperature unit must be C or F"},
    };
    answer(200, "{}");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(platform_query(client, cases[i].op, &cases[i].q, &r), -1);
        cr_assert_str_eq(r.message, cases[i].message);
        cr_assert_eq(r.http_status, 0);
    }
    /* The graph operations have their own entry point. */
    cr_assert_eq(platform_call(client, PLATFORM_LATEST, "52C10001", NULL, &r), -1);
    cr_assert_str_eq(r.message, "latest-data: use platform_query");
    cr_assert_eq(srv.n_requests, 0);
    platform_reply_free(&r);
}

Test(platform, graph_op_fits_the_device)
{
    cr_assert_eq(platform_graph_op("52C10001", "52C10001", false), PLATFORM_LATEST);
    cr_assert_eq(platform_graph_op("52C10001", NULL, true), PLATFORM_DATA);
    cr_assert_eq(platform_graph_op("52C10001", "", false), PLATFORM_LATEST);
    cr_assert_eq(platform_graph_op("52C10001", "58210001", false), PLATFORM_LATEST_RTR500);
    cr_assert_eq(platform_graph_op("52C10001", "58210001", true), PLATFORM_DATA_RTR500);
    struct platform_limit l = platform_op_limit(PLATFORM_LATEST_RTR500);
    cr_assert_eq(l.limit, 60);
    cr_assert_eq(l.span, 60);
    l = platform_op_limit(PLATFORM_DATA);
    cr_assert_eq(l.limit, 20);
    cr_assert_eq(l.span, 60);
}

Test(platform, op_names)
{
    cr_assert_str_eq(platform_op_name(PLATFORM_CURRENT), "current");
    cr_assert_str_eq(platform_op_name(PLATFORM_ALERT), "alert");
    cr_assert_str_eq(platform_op_name(PLATFORM_LATEST), "latest-data");
    cr_assert_str_eq(platform_op_name(PLATFORM_LATEST_RTR500), "latest-data-rtr500");
    cr_assert_str_eq(platform_op_name(PLATFORM_DATA), "data");
    cr_assert_str_eq(platform_op_name(PLATFORM_DATA_RTR500), "data-rtr500");
    struct platform_reply r = {0};
    platform_reply_free(&r);
    platform_reply_free(NULL);
}
