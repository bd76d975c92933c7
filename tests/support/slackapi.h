/* Slack's Web API inside the test process, as far as wsrelay uses it:
 * chat.postMessage, chat.update, reactions.get, conversations.replies and
 * users.info on 127.0.0.1 (a free port), on their own thread. Slack has no
 * local edition, so this server plays it as its documentation says: the
 * bot token checked in "Authorization: Bearer" (not_authed, invalid_auth),
 * JSON or form bodies, HTTP 200 with {"ok": true, ...} or {"ok": false,
 * "error": "..."}, messages with `ts` values, threads, reactions; a test
 * adds what people do (a reaction, a reply, a user) and scripts failures
 * (an error, a 429 with Retry-After, a hang). All functions lock. */
#ifndef WSRELAY_TEST_SLACKAPI_H
#define WSRELAY_TEST_SLACKAPI_H

#include <json-c/json.h>
#include <stddef.h>

/* The token the server takes and the channel the bot is a member of;
 * SLACKAPI_OUTSIDE exists but the bot is not in it (not_in_channel), any
 * other channel does not exist (channel_not_found). */
#define SLACKAPI_TOKEN "xoxb-1111111111-2222222222-T3stT0kenAbCdEfGhIjKlMnO"
#define SLACKAPI_CHANNEL "C0ALERTS01"
#define SLACKAPI_OUTSIDE "C0OUTSIDE1"
#define SLACKAPI_BOT "B0WSRELAY1"

struct slackapi;

/* One call as it came: the method ("chat.postMessage"), the raw
 * Authorization header (NULL: none), the Content-Type, and its arguments
 * as one object (a JSON body as sent; a form's or query's fields as
 * strings). */
struct slack_call {
    char *method;
    char *authorization;
    char *content_type;
    struct json_object *args;
    double at; /* arrival, seconds on CLOCK_MONOTONIC */
};

/* Starts the server; stop it with slackapi_stop. */
struct slackapi *slackapi_start(void);

/* "http://127.0.0.1:PORT/api" (an api_url); owned by the server. */
const char *slackapi_url(const struct slackapi *s);

/* The next call of `method` answers with `status` (200: {"ok": false,
 * "error": ERROR}; 429: that body with "Retry-After: RETRY_AFTER"; another
 * status: ERROR as plain text) instead of doing what it asks. Scripted
 * answers are used in order, per method. */
void slackapi_push_error(struct slackapi *s, const char *method, int status, const char *error,
                         int retry_after);

/* Every following call waits `ms` before it is answered (0: none). */
void slackapi_set_delay_ms(struct slackapi *s, int ms);

/* A user of the workspace, for users.info. */
void slackapi_add_user(struct slackapi *s, const char *id, const char *display_name);

/* What people do: `user` reacts with `name` to message `ts` of `channel`,
 * or replies `text` in its thread. */
void slackapi_add_reaction(struct slackapi *s, const char *channel, const char *ts,
                           const char *name, const char *user);
void slackapi_add_reply(struct slackapi *s, const char *channel, const char *thread_ts,
                        const char *user, const char *text);

/* How many calls came so far, of `method` (NULL: of all). */
size_t slackapi_count(struct slackapi *s, const char *method);

/* A copy of the i-th call of `method` (NULL: of all), 0 the first; NULL
 * when there is none. Free it with slack_call_free. */
struct slack_call *slackapi_call(struct slackapi *s, const char *method, size_t i);
void slack_call_free(struct slack_call *c);

/* The messages of `channel` in the order posted, as the server keeps
 * them (channel, ts, text, blocks, thread_ts for a reply, bot_id or user,
 * reactions, edited after a chat.update): a new array. */
struct json_object *slackapi_messages(struct slackapi *s, const char *channel);

/* Stops the server and frees everything; NULL is fine. */
void slackapi_stop(struct slackapi *s);

#endif
