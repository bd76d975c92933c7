/* Slack incoming webhooks: a Block Kit payload (slack.json) with a plain
 * `text` fallback for notifications.
 *
 * Slack's rules shape this file: a message takes at most 50 blocks (the
 * template spends two per event and four on the message, so a message
 * lists at most 23 events), `text` should stay under 4,000
 * characters, a header's text under 150, a section's under 3,000 and each
 * of its fields under 2,000 (longer ones are cut, as Slack refuses the
 * whole message otherwise); success is HTTP 200 with the body "ok"; a
 * 429 carries Retry-After; posts to one webhook are paced to one per
 * second. A message holds the events that fit (slack_fit): wsrelay sends
 * the others in more messages, paced; "…and N more" is left for a
 * message that was not fitted first (none that wsrelay sends; logged as
 * an error). Its 4xx answers (invalid_payload,
 * no_text, channel_is_archived, no_service, action_prohibited, …) say the message or the webhook is
 * wrong: retrying cannot help, so the message is given up for this
 * receiver only, and the answer is reported as it came. */
#include "notify/slack.h"
#include "notify/chat.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLACK_MAX_BLOCKS 50
#define SLACK_TEXT_MAX 3900    /* characters, under Slack's 4,000 */
#define SLACK_HEADER_MAX 150   /* characters of a header block's text */
#define SLACK_SECTION_MAX 3000 /* characters of a section block's text */
#define SLACK_FIELD_MAX 2000   /* characters of each of a section's fields */

/* The offset of `s` (`len` bytes) after its first `n` characters, or len
 * when it has fewer. */
static size_t skip_chars(const char *s, size_t len, size_t n)
{
    size_t i = 0;
    uint32_t cp;
    for (; i < len && n > 0; n--) {
        size_t step = utf8_decode(&cp, s + i, len - i);
        i += step ? step : 1;
    }
    return i;
}

/* Cuts `s` to at most `max` characters (`max` >= 1), the last of them "…"
 * when cut, never inside a character nor inside one of the entities the
 * Slack escaping writes (&amp; &lt; &gt;: half of one would show as
 * text). A new string. */
static char *cut_text(const char *s, size_t max)
{
    size_t len = strlen(s);
    if (skip_chars(s, len, max) == len)
        return xstrdup(s);
    size_t keep = skip_chars(s, len, max - 1);
    for (size_t i = keep; i > 0 && keep - i < sizeof "&amp;" - 1 && s[i - 1] != ';'; i--)
        if (s[i - 1] == '&') {
            keep = i - 1;
            break;
        }
    return xasprintf("%.*s…", (int)keep, s);
}

/* Cuts the string member `key` of `obj`, when it has one, to `max`
 * characters. */
static void cut_member(struct json_object *obj, const char *key, size_t max)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
        return;
    char *cut = cut_text(json_object_get_string(v), max);
    json_object_object_add(obj, key, json_object_new_string(cut));
    free(cut);
}

/* Holds a payload from any template to Slack's limits: the fallback text
 * is cut, blocks past the 50th are dropped, and the texts of header and
 * section blocks are cut to what Slack takes (a device name and an alert
 * text can be long, and Slack refuses the whole message for one text too
 * long). */
void slack_hold_limits(struct json_object *payload)
{
    struct json_object *blocks;
    cut_member(payload, "text", SLACK_TEXT_MAX);
    if (!json_object_object_get_ex(payload, "blocks", &blocks) ||
        !json_object_is_type(blocks, json_type_array))
        return;
    if (json_object_array_length(blocks) > SLACK_MAX_BLOCKS)
        json_object_array_del_idx(blocks, SLACK_MAX_BLOCKS,
                                  json_object_array_length(blocks) - SLACK_MAX_BLOCKS);
    for (size_t i = 0; i < json_object_array_length(blocks); i++) {
        struct json_object *b = json_object_array_get_idx(blocks, i), *type, *text, *fields;
        if (!json_object_object_get_ex(b, "type", &type) ||
            !json_object_object_get_ex(b, "text", &text))
            continue;
        bool header = strcmp(json_object_get_string(type), "header") == 0;
        cut_member(text, "text", header ? SLACK_HEADER_MAX : SLACK_SECTION_MAX);
        if (json_object_object_get_ex(b, "fields", &fields) &&
            json_object_is_type(fields, json_type_array))
            for (size_t k = 0; k < json_object_array_length(fields); k++)
                cut_member(json_object_array_get_idx(fields, k), "text", SLACK_FIELD_MAX);
    }
}

/* A payload within Slack's 50 blocks (texts are cut to fit, blocks are
 * not: a block left out would be an event nobody sees). */
static bool fits(struct json_object *payload)
{
    struct json_object *blocks;
    return !json_object_object_get_ex(payload, "blocks", &blocks) ||
           !json_object_is_type(blocks, json_type_array) ||
           json_object_array_length(blocks) <= SLACK_MAX_BLOCKS;
}

size_t slack_fit(const struct notify_env *env, const struct receiver_conf *r,
                 const struct notify_message *m)
{
    return chat_fit(env, r, &r->slack, "slack.json", m, SLACK_MAX_EVENTS, fits);
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
    slack_hold_limits(payload);
    int rc = chat_send(&r->slack, payload, accepted, r->timeout, res, e);
    json_object_put(payload);
    return rc;
}

const struct notifier notifier_slack = {
    .type = RECEIVER_SLACK,
    .name = "slack",
    .pace_ms = 1000,
    .fit = slack_fit,
    .send = slack_send,
};
