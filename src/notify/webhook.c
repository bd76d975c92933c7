/* The generic webhook: one JSON document per message, POSTed to a URL.
 *
 * The document is the webhook.json template rendered over the message's
 * context (by default: the context itself plus "source":"wsrelay"). Any 2xx answer is success; any
 * other answer is retried on a later run (a generic endpoint's 4xx may well be fixed by its owners,
 * so nothing is given up here). */
#include "notify/http.h"
#include "notify/notify.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static int webhook_send(const struct notify_env *env, const struct receiver_conf *r,
                        const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    struct http_post_reply reply = {0};
    struct json_object *ctx = notify_context(r->name, m);
    struct json_object *check = NULL;
    struct buf body;
    buf_init(&body, 4 * 1024 * 1024);
    int rendered = notify_render(&body, env, r->webhook.template, "webhook.json", ctx, e);
    if (rendered < 0) {
        res->permanent = rendered == -2;
        goto out;
    }
    /* A template that does not make JSON is a mistake to fix, not a
     * message to send; what goes out is the parsed document, so it is
     * JSON whatever the template's spacing. */
    check = notify_parse_json(buf_str(&body), e);
    if (!check) {
        res->permanent = true;
        err_prefix(e, "the webhook.json template made a document that cannot be sent");
        goto out;
    }
    const char *doc = json_object_to_json_string_ext(check, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    if (http_post(&reply, r->webhook.url, r->webhook.headers, r->webhook.n_headers,
                  "application/json", doc, r->timeout, e) < 0)
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
    json_object_put(check);
    json_object_put(ctx);
    buf_free(&body);
    return rc;
}

const struct notifier notifier_webhook = {
    .type = RECEIVER_WEBHOOK,
    .name = "webhook",
    .send = webhook_send,
};
