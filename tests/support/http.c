/* A blocking libcurl request for tests, keeping the reply's status, body
 * and headers. Bodies and headers are capped so that a runaway server
 * cannot exhaust memory. */
#include "http.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BODY_MAX (16u * 1024 * 1024)
#define HEADERS_MAX (256u * 1024)

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    struct buf *b = userdata;
    return buf_append(b, data, size * n) < 0 ? 0 : size * n;
}

/* Keeps only the last response's headers (a 100 Continue or a redirect
 * comes first). */
static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
    struct buf *b = userdata;
    if (size * n >= 5 && strncmp(data, "HTTP/", 5) == 0)
        buf_reset(b);
    return buf_append(b, data, size * n) < 0 ? 0 : size * n;
}

static char *trimmed(const char *s, size_t len)
{
    while (len && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len && strchr(" \t\r\n", s[len - 1]))
        len--;
    return xstrndup(s, len);
}

/* Splits "Name: value" lines into r->fields; the status line is skipped. */
static void parse_fields(struct http_reply *r)
{
    size_t n = 0, cap = 8;
    r->fields = xcalloc(cap, sizeof *r->fields);
    for (const char *line = r->headers; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *colon = memchr(line, ':', len);
        if (colon && strncmp(line, "HTTP/", 5) != 0) {
            if (n + 3 > cap) {
                cap *= 2;
                r->fields = xreallocarray(r->fields, cap, sizeof *r->fields);
            }
            r->fields[n++] = trimmed(line, (size_t)(colon - line));
            r->fields[n++] = trimmed(colon + 1, len - (size_t)(colon - line) - 1);
            r->fields[n] = NULL;
        }
        line += len + (end ? 1 : 0);
    }
}

int http_request(struct http_reply *out, const char *method, const char *url,
                 const char *content_type, const char *body, char *const extra_headers[])
{
    int rc = -1;
    struct buf resp, heads;
    struct curl_slist *list = NULL;
    bool has_type = false;
    char *type_line = NULL;
    memset(out, 0, sizeof *out);
    buf_init(&resp, BODY_MAX);
    buf_init(&heads, HEADERS_MAX);
    CURL *c = curl_easy_init();
    if (!c)
        goto out;

    for (size_t i = 0; extra_headers && extra_headers[i]; i++) {
        list = curl_slist_append(list, extra_headers[i]);
        if (strncasecmp(extra_headers[i], "Content-Type:", 13) == 0)
            has_type = true;
    }
    if (!has_type) {
        /* "Content-Type:" with no value stops curl adding its own. */
        type_line =
            content_type ? xasprintf("Content-Type: %s", content_type) : xstrdup("Content-Type:");
        list = curl_slist_append(list, type_line);
    }
    list = curl_slist_append(list, "Expect:");

    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &heads);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body || strcmp(method, "POST") == 0) {
        /* A POST without a body still says Content-Length: 0. */
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
    }
    if (strcmp(method, "POST") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (curl_easy_perform(c) != CURLE_OK)
        goto out;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    out->body_len = resp.len;
    out->body = buf_steal(&resp);
    out->headers = buf_steal(&heads);
    parse_fields(out);
    rc = 0;
out:
    if (c)
        curl_easy_cleanup(c);
    curl_slist_free_all(list);
    free(type_line);
    buf_free(&resp);
    buf_free(&heads);
    return rc;
}

void http_reply_free(struct http_reply *r)
{
    if (!r)
        return;
    free(r->body);
    free(r->headers);
    for (size_t i = 0; r->fields && r->fields[i]; i++)
        free(r->fields[i]);
    free(r->fields);
    memset(r, 0, sizeof *r);
}

const char *http_header(const struct http_reply *r, const char *name)
{
    for (size_t i = 0; r->fields && r->fields[i]; i += 2) {
        if (strcasecmp(r->fields[i], name) == 0)
            return r->fields[i + 1];
    }
    return NULL;
}
