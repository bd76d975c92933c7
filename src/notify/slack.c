/* Slack incoming webhooks: a Block Kit payload (slack.json) with a plain
 * `text` fallback for notifications.
 *
 * Slack's rules shape this file: a message takes at most 50 blocks (the
 * template spends two per event, so at most 23 events are listed and the
 * rest summarised: "…and 37 more") and `text` should stay under 4,000
 * characters; success is HTTP 200 with the body "ok"; a 429 carries
 * Retry-After; posts to one webhook are paced to one per second. Its 4xx
 * answers (invalid_payload, no_text, channel_is_archived, no_service,
 * action_prohibited, …) say the message or the webhook is wrong: retrying
 * cannot help, so the message is given up for this receiver only, and
 * the answer is reported as it came. */
#include "notify/chat.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define SLACK_MAX_EVENTS 23
#define SLACK_MAX_BLOCKS 50
#define SLACK_TEXT_MAX 3900 /* characters, under Slack's 4,000 */

/* Cuts `s` to at most `max` characters (UTF-8), ending with "…" when cut;
 * a new string. */
static char *utf8_cut(const char *s, size_t max)
{
    size_t chars = 0;
    for (size_t i = 0; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80)
            continue;
        if (chars == max)
            return xasprintf("%.*s…", (int)i, s);
        chars++;
    }
    return xstrdup(s);
}

/* Holds a payload from any template to Slack's limits: the fallback text
 * is cut, and blocks past the 50th are dropped. */
static void fit_limits(struct json_object *payload)
{
    struct json_object *text, *blocks;
    if (json_object_object_get_ex(payload, "text", &text) &&
        json_object_is_type(text, json_type_string)) {
        char *cut = utf8_cut(json_object_get_string(text), SLACK_TEXT_MAX);
        json_object_object_add(payload, "text", json_object_new_string(cut));
        free(cut);
    }
    if (json_object_object_get_ex(payload, "blocks", &blocks) &&
        json_object_is_type(blocks, json_type_array) &&
        json_object_array_length(blocks) > SLACK_MAX_BLOCKS)
        json_object_array_del_idx(blocks, SLACK_MAX_BLOCKS,
                                  json_object_array_length(blocks) - SLACK_MAX_BLOCKS);
}

/* Slack answers 200 "ok", possibly followed by a line end. */
static bool accepted(long status, const char *body)
{
    return status == 200 && body && strncmp(body, "ok", 2) == 0 &&
           strspn(body + 2, "\r\n") == strlen(body + 2);
}

static int slack_send(const struct notify_env *env, const struct receiver_conf *r,
                      const struct notify_message *m, struct notify_result *res, struct err *e)
{
    size_t k = m->n < SLACK_MAX_EVENTS ? m->n : SLACK_MAX_EVENTS;
    struct json_object *payload = chat_render(env, r, &r->slack, "slack.json", m, k, res, e);
    if (!payload)
        return -1;
    fit_limits(payload);
    int rc = chat_send(&r->slack, payload, accepted, res, e);
    json_object_put(payload);
    return rc;
}

const struct notifier notifier_slack = {
    .type = RECEIVER_SLACK,
    .name = "slack",
    .pace_ms = 1000,
    .send = slack_send,
};
