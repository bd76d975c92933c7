/* One HTTP request from a test (libcurl), with the whole reply kept in
 * memory: status, body and headers. Only for 127.0.0.1 servers: proxies
 * from the environment are ignored. */
#ifndef WSRELAY_TEST_HTTP_H
#define WSRELAY_TEST_HTTP_H

#include <stddef.h>

struct http_reply {
    long status;   /* the HTTP status; 0 when no reply came */
    char *body;    /* NUL-terminated; "" when empty; NULL when no reply came */
    char *headers; /* the raw header lines of the final response ("Name: value\r\n"...) */
    /* private: parsed headers, name and value alternating, NULL-terminated */
    char **fields;
    size_t body_len;
};

/* Sends `method` (GET, POST, PUT, ... as given) to `url` with an optional
 * `body` (sent even with GET when not NULL) and `content_type` (NULL: no
 * Content-Type header at all), plus `extra_headers` ("Name: value" strings,
 * NULL-terminated; the array may be NULL). Times out after 10 s. Returns 0
 * when an HTTP reply came, whatever its status, and -1 otherwise (refused,
 * timed out); either way *out (overwritten) must be released with
 * http_reply_free. Does not fail the test by itself. */
int http_request(struct http_reply *out, const char *method, const char *url,
                 const char *content_type, const char *body, char *const extra_headers[]);

void http_reply_free(struct http_reply *r);

/* The value of the first header `name` (any case) of the reply, without
 * surrounding blanks, or NULL when absent. The string belongs to `r`. */
const char *http_header(const struct http_reply *r, const char *name);

#endif
