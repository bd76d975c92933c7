/* What Slack's two modes share (slack.c, the incoming webhook; slackapp.c,
 * Slack as an app): a payload held to Slack's limits. */
#ifndef WSRELAY_NOTIFY_SLACK_H
#define WSRELAY_NOTIFY_SLACK_H

#include "notify/notify.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Events one message lists at most: a message takes 50 blocks, the
 * template spends two per event and four on the message. */
#define SLACK_MAX_EVENTS 23

/* Holds `payload` (from any template) to Slack's limits in place: the
 * fallback text is cut, blocks past the 50th are dropped, and the texts
 * of header and section blocks are cut to what Slack takes. */
void slack_hold_limits(struct json_object *payload);

/* How many of the first events of `m` one message to Slack receiver `r`
 * (either mode: r->slack) can hold (chat_fit over slack.json). */
size_t slack_fit(const struct notify_env *env, const struct receiver_conf *r,
                 const struct notify_message *m);

#endif
