/* Posting to receivers over HTTP(S) with libcurl. */
#include "notify/http.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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

void http_reply_excerpt(char *out, size_t size, const char *body, const char *url,
                        const struct header_conf *headers, size_t n_headers)
{
    /* The first line only is shown, so only it is searched. */
    const char *text = body ? body : "";
    char *line = xstrndup(text, strcspn(text, "\r\n"));
    struct redact *secrets = redact_new();
    redact_add_url(secrets, url);
    for (size_t i = 0; i < n_headers; i++)
        redact_add_header(secrets, headers[i].value);
    char *clean = redact_text(secrets, line);
    size_t j = 0;
    for (size_t i = 0; clean[i] && j + 1 < size; i++)
        out[j++] = isprint((unsigned char)clean[i]) ? clean[i] : '?';
    if (size)
        out[j] = '\0';
    free(clean);
    redact_free(secrets);
    free(line);
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
    if (reply->retry_after_asked > reply->retry_after) {
        char *redacted = http_redact_url(url);
        log_warn("POST %s: the far end asked to wait %lld s (Retry-After); waiting %ld s, the "
                 "longest wsrelay waits",
                 redacted, reply->retry_after_asked, reply->retry_after);
        free(redacted);
    }
}

/* The headers of a reply that matter here, as they came. */
struct reply_headers {
    char retry_after[64];
    char date[64];
    char ratelimit_reset[32];
    bool ended; /* the blank line that ends them came */
};

/* Keeps the value of header `name` (lower case, with the colon) when the
 * line `data` is that header, trimmed and cut to fit. */
static void keep_header(char *out, size_t size, const char *data, size_t len, const char *name)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(data, name, n) != 0)
        return;
    const char *p = data + n, *end = data + len;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    snprintf(out, size, "%.*s", (int)(end - p), p);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct reply_headers *h = userdata;
    size_t len = size * nmemb;
    if (len >= 5 && strncmp(data, "HTTP/", 5) == 0)
        *h = (struct reply_headers){0}; /* a new response: only the last one counts */
    keep_header(h->retry_after, sizeof h->retry_after, data, len, "retry-after:");
    keep_header(h->date, sizeof h->date, data, len, "date:");
    keep_header(h->ratelimit_reset, sizeof h->ratelimit_reset, data, len, "x-ratelimit-reset:");
    if ((len == 2 && data[0] == '\r' && data[1] == '\n') || (len == 1 && data[0] == '\n'))
        h->ended = true;
    return len;
}

/* Seconds the far end asked to wait with Retry-After: delta-seconds, or an
 * HTTP-date counted from the reply's own Date (the far end's clock, so
 * that a clock that is off on either side does not matter) or, without
 * one, from this machine's clock. 0 when absent, unreadable or past. */
static long long retry_after_seconds(const struct reply_headers *h)
{
    const char *v = h->retry_after;
    if (!*v)
        return 0;
    if (strspn(v, "0123456789") == strlen(v)) {
        long long s = 0;
        for (; *v; v++)
            s = s < 1000000000000LL ? s * 10 + (*v - '0') : s; /* far beyond any cap */
        return s;
    }
    time_t until = curl_getdate(v, NULL);
    if (until == (time_t)-1)
        return 0;
    time_t from = *h->date ? curl_getdate(h->date, NULL) : (time_t)-1;
    if (from == (time_t)-1)
        from = time(NULL);
    return until > from ? (long long)(until - from) : 0;
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

/* One request: a POST of `body` (of `content_type`), or a GET when body
 * is NULL. */
static int request(struct http_post_reply *out, const char *url, const struct header_conf *headers,
                   size_t n_headers, const char *content_type, const char *body, long timeout_s,
                   struct err *e)
{
    const char *method = body ? "POST" : "GET";
    int rc = -1;
    struct curl_slist *list = NULL;
    struct buf reply;
    struct reply_headers seen = {0};
    char *redacted = http_redact_url(url);
    CURL *curl = curl_easy_init();
    buf_init(&reply, REPLY_CAP);
    *out = (struct http_post_reply){0};
    if (!curl) {
        err_set(e, "cannot start an HTTP client");
        goto out;
    }
    if (body) {
        char *ct = xasprintf("Content-Type: %s", content_type);
        list = curl_slist_append(list, ct);
        free(ct);
        list = curl_slist_append(list, "Expect:");
    }
    for (size_t i = 0; i < n_headers; i++) {
        /* Names and values were checked for CR/LF when the config loaded. */
        char *line = xasprintf("%s: %s", headers[i].name, headers[i].value);
        list = curl_slist_append(list, line);
        free(line);
    }
    set_common_options(curl, url, timeout_s);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &seen);
    CURLcode res = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (res != CURLE_OK && seen.ended && status >= 200 && status <= 299) {
        /* The far end said yes, its headers whole, then its body was cut
         * or too slow: the message was taken, and sending it again would
         * repeat it at every retry. */
        log_warn("%s %s: HTTP %ld, then %s: taken as accepted", method, redacted, status,
                 res == CURLE_OPERATION_TIMEDOUT ? "the reply's body did not end in time"
                                                 : curl_easy_strerror(res));
        res = CURLE_OK;
    }
    if (res == CURLE_OPERATION_TIMEDOUT) {
        err_set(e, "%s %s: no complete answer within %ld s (the receiver's timeout)", method,
                redacted, timeout_s);
        goto out;
    }
    if (res != CURLE_OK) {
        /* curl's own message may quote the URL: use the code's text only. */
        err_set(e, "%s %s: %s", method, redacted, curl_easy_strerror(res));
        goto out;
    }
    out->status = status;
    out->body = buf_steal(&reply);
    long long asked = retry_after_seconds(&seen);
    out->retry_after = asked > HTTP_RETRY_AFTER_MAX ? HTTP_RETRY_AFTER_MAX : (long)asked;
    out->retry_after_asked = asked;
    if (*seen.ratelimit_reset &&
        strspn(seen.ratelimit_reset, "0123456789") == strlen(seen.ratelimit_reset))
        out->ratelimit_reset = strtoll(seen.ratelimit_reset, NULL, 10);
    rc = 0;
out:
    buf_free(&reply);
    curl_slist_free_all(list);
    if (curl)
        curl_easy_cleanup(curl);
    free(redacted);
    return rc;
}

int http_post(struct http_post_reply *out, const char *url, const struct header_conf *headers,
              size_t n_headers, const char *content_type, const char *body, long timeout_s,
              struct err *e)
{
    return request(out, url, headers, n_headers, content_type, body, timeout_s, e);
}

int http_get_reply(struct http_post_reply *out, const char *url, const struct header_conf *headers,
                   size_t n_headers, long timeout_s, struct err *e)
{
    return request(out, url, headers, n_headers, NULL, NULL, timeout_s, e);
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
