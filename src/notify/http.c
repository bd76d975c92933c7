/* Posting to receivers over HTTP(S) with libcurl. */
#include "notify/http.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REPLY_CAP (64 * 1024)

char *http_redact_url(const char *url)
{
    const char *scheme_end = strstr(url, "://");
    if (!scheme_end)
        return xstrdup("(unparsable URL)");
    const char *host = scheme_end + 3;
    const char *at = NULL;
    const char *end = host + strcspn(host, "/?#");
    for (const char *p = host; p < end; p++)
        if (*p == '@')
            at = p;
    if (at)
        host = at + 1;
    return xasprintf("%.*s%.*s%s", (int)(scheme_end + 3 - url), url, (int)(end - host), host,
                     *end ? "/…" : "");
}

/* Replaces every occurrence of `secret` (when at least 4 bytes long) in
 * `b` by "[redacted]". */
static void redact(struct buf *b, const char *secret)
{
    size_t n = strlen(secret);
    if (n < 4 || !b->data)
        return;
    struct buf out;
    buf_init(&out, 0);
    const char *p = b->data;
    for (const char *hit; (hit = strstr(p, secret)); p = hit + n) {
        buf_append(&out, p, (size_t)(hit - p));
        buf_puts(&out, "[redacted]");
    }
    buf_puts(&out, p);
    buf_free(b);
    *b = out;
}

void http_reply_excerpt(char *out, size_t size, const char *body, const char *url,
                        const struct header_conf *headers, size_t n_headers)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, body ? body : "");
    redact(&b, url);
    /* The path and query alone, as "Cannot POST /hook/secret" shows it. */
    const char *scheme_end = strstr(url, "://");
    const char *path = scheme_end ? strpbrk(scheme_end + 3, "/?#") : NULL;
    if (path && strlen(path) > 1)
        redact(&b, path);
    for (size_t i = 0; i < n_headers; i++)
        redact(&b, headers[i].value);
    size_t j = 0;
    const char *s = buf_str(&b);
    for (size_t i = 0; s[i] && s[i] != '\n' && j + 1 < size; i++)
        out[j++] = isprint((unsigned char)s[i]) ? s[i] : '?';
    if (size)
        out[j] = '\0';
    buf_free(&b);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct buf *b = userdata;
    /* Keep what fits and drop the rest: the reply is only shown to people. */
    size_t len = size * nmemb;
    size_t room = REPLY_CAP - b->len;
    buf_append(b, data, len < room ? len : room);
    return len;
}

void http_result(struct notify_result *res, const struct http_post_reply *reply, const char *url,
                 const struct header_conf *headers, size_t n_headers)
{
    res->status = reply->status;
    res->retry_after = reply->retry_after;
    http_reply_excerpt(res->answer, sizeof res->answer, reply->body, url, headers, n_headers);
}

/* Reads Retry-After: SECONDS (the HTTP-date form is left to the back-off). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct http_post_reply *out = userdata;
    size_t len = size * nmemb;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        const char *p = data + sizeof name - 1;
        const char *end = data + len;
        long v = 0;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        while (p < end && *p >= '0' && *p <= '9' && v < 86400)
            v = v * 10 + (*p++ - '0');
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
            p++;
        if (p == end)
            out->retry_after = v > 86400 ? 86400 : v;
    }
    return len;
}

/* What every request of wsrelay's shares: https (or http, which the
 * config allows only to this machine), certificates and host names
 * verified, redirects never followed, bounded in time. */
static void set_common_options(CURL *curl, const char *url, long timeout_s)
{
    curl_easy_setopt(curl, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
#else
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTPS | CURLPROTO_HTTP));
#endif
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "wsrelay/" WSRELAY_VERSION);
}

int http_post(struct http_post_reply *out, const char *url, const struct header_conf *headers,
              size_t n_headers, const char *content_type, const char *body, struct err *e)
{
    int rc = -1;
    struct curl_slist *list = NULL;
    struct buf reply;
    char *redacted = http_redact_url(url);
    CURL *curl = curl_easy_init();
    buf_init(&reply, REPLY_CAP);
    out->status = 0;
    out->body = NULL;
    out->retry_after = 0;
    if (!curl) {
        err_set(e, "cannot start an HTTP client");
        goto out;
    }
    char *ct = xasprintf("Content-Type: %s", content_type);
    list = curl_slist_append(list, ct);
    free(ct);
    list = curl_slist_append(list, "Expect:");
    for (size_t i = 0; i < n_headers; i++) {
        /* Names and values were checked for CR/LF when the config loaded. */
        char *line = xasprintf("%s: %s", headers[i].name, headers[i].value);
        list = curl_slist_append(list, line);
        free(line);
    }
    set_common_options(curl, url, 30L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, out);
    CURLcode res = curl_easy_perform(curl);
    if (res != CURLE_OK) {
        /* curl's own message may quote the URL: use the code's text only. */
        err_set(e, "POST %s: %s", redacted, curl_easy_strerror(res));
        goto out;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = buf_steal(&reply);
    rc = 0;
out:
    buf_free(&reply);
    curl_slist_free_all(list);
    if (curl)
        curl_easy_cleanup(curl);
    free(redacted);
    return rc;
}

static size_t on_discard(char *data, size_t size, size_t nmemb, void *userdata)
{
    (void)data;
    (void)userdata;
    return size * nmemb;
}

int http_get(long *status, const char *url, struct err *e)
{
    int rc = -1;
    char *redacted = http_redact_url(url);
    CURL *curl = curl_easy_init();
    *status = 0;
    if (!curl) {
        err_set(e, "cannot start an HTTP client");
        goto out;
    }
    set_common_options(curl, url, 10L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_discard);
    CURLcode res = curl_easy_perform(curl);
    if (res != CURLE_OK) {
        err_set(e, "GET %s: %s", redacted, curl_easy_strerror(res));
        goto out;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    rc = 0;
out:
    if (curl)
        curl_easy_cleanup(curl);
    free(redacted);
    return rc;
}
