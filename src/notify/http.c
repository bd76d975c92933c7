/* Posting to receivers over HTTP(S) with libcurl. */
#include "notify/http.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

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

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct buf *b = userdata;
    /* Keep what fits and drop the rest: the reply is only shown to people. */
    size_t len = size * nmemb;
    size_t room = REPLY_CAP - b->len;
    buf_append(b, data, len < room ? len : room);
    return len;
}

int http_post(struct http_post_reply *out, const char *url, const struct header_conf *headers,
              size_t n_headers, const char *content_type, const char *body, struct err *e)
{
    int rc = -1;
    struct curl_slist *list = NULL;
    struct buf reply;
    char errbuf[CURL_ERROR_SIZE] = "";
    char *redacted = http_redact_url(url);
    CURL *curl = curl_easy_init();
    buf_init(&reply, REPLY_CAP);
    out->status = 0;
    out->body = NULL;
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
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "wsrelay/" WSRELAY_VERSION);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
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
