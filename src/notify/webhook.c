/* The generic webhook: one JSON document per message, POSTed to a URL.
 *
 * The document is
 *   {"source":"wsrelay","version":"0.1.0","receiver":NAME,"count":N,
 *    "events":[EVENT, …]}
 * with each EVENT as event_to_json writes it. Any 2xx answer is success. */
#include "notify/http.h"
#include "notify/notify.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static int webhook_send(const struct receiver_conf *r, const struct event *events, size_t n,
                        struct err *e)
{
    int rc = -1;
    struct http_post_reply reply = {0};
    struct json_object *doc = json_object_new_object();
    struct json_object *list = json_object_new_array();
    json_object_object_add(doc, "source", json_object_new_string("wsrelay"));
    json_object_object_add(doc, "version", json_object_new_string(WSRELAY_VERSION));
    json_object_object_add(doc, "receiver", json_object_new_string(r->name));
    json_object_object_add(doc, "count", json_object_new_int64((int64_t)n));
    for (size_t i = 0; i < n; i++)
        json_object_array_add(list, event_to_json(&events[i]));
    json_object_object_add(doc, "events", list);
    const char *body = json_object_to_json_string_ext(
        doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (http_post(&reply, r->webhook.url, r->webhook.headers, r->webhook.n_headers,
                  "application/json", body, e) < 0)
        goto out;
    if (reply.status < 200 || reply.status > 299) {
        char excerpt[256];
        char *redacted = http_redact_url(r->webhook.url);
        http_reply_excerpt(excerpt, sizeof excerpt, reply.body, r->webhook.url,
                           r->webhook.headers, r->webhook.n_headers);
        err_set(e, "POST %s: HTTP %ld%s%s", redacted, reply.status, *excerpt ? ": " : "",
                excerpt);
        free(redacted);
        goto out;
    }
    rc = 0;
out:
    free(reply.body);
    json_object_put(doc);
    return rc;
}

const struct notifier notifier_webhook = {
    .type = RECEIVER_WEBHOOK,
    .name = "webhook",
    .send = webhook_send,
};
