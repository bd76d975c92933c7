/* The generic webhook: one JSON document per message, POSTed to a URL.
 *
 * The document is the message's template context (notify_context) plus
 * "source":"wsrelay" and "version". Any 2xx answer is success; any other
 * answer is retried on a later run (a generic endpoint's 4xx may well be
 * fixed by its owners, so nothing is given up here). */
#include "notify/http.h"
#include "notify/notify.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static int webhook_send(const struct notify_env *env, const struct receiver_conf *r,
                        const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    struct http_post_reply reply = {0};
    struct json_object *doc = notify_context(r->name, m);
    (void)env;
    json_object_object_add(doc, "source", json_object_new_string("wsrelay"));
    json_object_object_add(doc, "version", json_object_new_string(WSRELAY_VERSION));
    const char *body = json_object_to_json_string_ext(
        doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (http_post(&reply, r->webhook.url, r->webhook.headers, r->webhook.n_headers,
                  "application/json", body, e) < 0)
        goto out;
    http_result(res, &reply, r->webhook.url, r->webhook.headers, r->webhook.n_headers);
    if (reply.status < 200 || reply.status > 299) {
        char *redacted = http_redact_url(r->webhook.url);
        err_set(e, "POST %s: HTTP %ld%s%s", redacted, reply.status, *res->answer ? ": " : "",
                res->answer);
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
