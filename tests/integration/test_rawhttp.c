/* tests/support/rawhttp: the raw server itself, seen from a real client
 * (libcurl through http.h), so that the fault tests built on it test
 * wsrelay and not a server that does something else than it says. */
#include "http.h"
#include "rawhttp.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct rawhttp *S;

static void teardown(void)
{
    rawhttp_stop(S);
    S = NULL;
}

TestSuite(rawhttp, .fini = teardown, .timeout = 60);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(rawhttp, replies_in_order_the_last_repeated_and_requests_recorded)
{
    const struct rawhttp_reply replies[] = {
        {.head = "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy"},
        {.head = "HTTP/1.1 200 OK\r\nX-Odd: \xff\xfe\r\n\r\nok \xc3\x28"}, /* invalid UTF-8 */
    };
    S = rawhttp_start(replies, 2, 30);
    char url[128];
    snprintf(url, sizeof url, "%s/api/x?token=1", rawhttp_url(S));
    char *const extra[] = {(char *)"Authorization: Bearer abc", NULL};
    struct http_reply r;
    cr_assert_eq(http_request(&r, "POST", url, "application/json", "{\"a\":1}", extra), 0);
    cr_assert_eq(r.status, 503);
    cr_assert_str_eq(r.body, "busy");
    http_reply_free(&r);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(http_request(&r, "GET", url, NULL, NULL, NULL), 0);
        cr_assert_eq(r.status, 200);
        cr_assert_str_eq(r.body, "ok \xc3\x28", "the body without Content-Length ends at close");
        cr_assert_str_eq(http_header(&r, "X-Odd"), "\xff\xfe");
        http_reply_free(&r);
    }
    cr_assert_eq(rawhttp_count(S), 3);
    struct rawhttp_request *q = rawhttp_request(S, 0);
    cr_assert_str_eq(q->method, "POST");
    cr_assert_str_eq(q->target, "/api/x?token=1");
    cr_assert_str_eq(q->body, "{\"a\":1}");
    cr_assert_eq(q->body_len, 7);
    char *auth = rawhttp_header(q, "authorization");
    cr_assert_str_eq(auth, "Bearer abc");
    free(auth);
    cr_assert_null(rawhttp_header(q, "X-Absent"));
    cr_assert(q->reply_ended);
    rawhttp_request_free(q);
    cr_assert_null(rawhttp_request(S, 3));

    const struct rawhttp_reply other = {.head = "HTTP/1.1 201 Created\r\n\r\n"};
    rawhttp_set_replies(S, &other, 1);
    cr_assert_eq(http_request(&r, "GET", url, NULL, NULL, NULL), 0);
    cr_assert_eq(r.status, 201);
    http_reply_free(&r);
}

Test(rawhttp, a_body_closed_midway_and_a_lying_content_length)
{
    const struct rawhttp_reply reply = {
        .head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
        .close_after = 45,
    };
    S = rawhttp_start(&reply, 1, 30);
    struct http_reply r;
    cr_assert_eq(http_request(&r, "GET", rawhttp_url(S), NULL, NULL, NULL), -1,
                 "fewer bytes than announced: the transfer fails");
    http_reply_free(&r);
    cr_assert_eq(rawhttp_wait(S, 1, 1000), 1);
    struct rawhttp_request *q = rawhttp_request(S, 0);
    cr_assert_not(q->reply_ended);
    rawhttp_request_free(q);
}

Test(rawhttp, a_large_fill_and_a_dribble)
{
    const struct rawhttp_reply big = {
        .head = "HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n",
        .fill = 10485760,
        .fill_byte = 'z',
    };
    S = rawhttp_start(&big, 1, 30);
    struct http_reply r;
    cr_assert_eq(http_request(&r, "GET", rawhttp_url(S), NULL, NULL, NULL), 0);
    cr_assert_eq(r.body_len, 10485760);
    cr_assert_eq(r.body[0], 'z');
    cr_assert_eq(r.body[r.body_len - 1], 'z');
    http_reply_free(&r);

    const struct rawhttp_reply slow = {
        .head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
        .fill = 5,
        .chunk = 1,
        .every_ms = 100,
    };
    rawhttp_set_replies(S, &slow, 1);
    double t = now_s();
    cr_assert_eq(http_request(&r, "GET", rawhttp_url(S), NULL, NULL, NULL), 0);
    cr_assert_str_eq(r.body, "xxxxx");
    http_reply_free(&r);
    cr_assert_geq(now_s() - t, 0.4, "four pauses of 100 ms");
}

Test(rawhttp, a_reply_without_end_stops_with_the_server)
{
    const struct rawhttp_reply forever = {
        .head = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n",
        .fill = RAWHTTP_FOREVER,
        .chunk = 1,
        .every_ms = 200,
    };
    S = rawhttp_start(&forever, 1, 2);
    double t = now_s();
    struct http_reply r;
    cr_assert_eq(http_request(&r, "GET", rawhttp_url(S), NULL, NULL, NULL), -1);
    http_reply_free(&r);
    cr_assert_lt(now_s() - t, 8.0, "the server's lifetime ended it, not the client's 10 s");
}
