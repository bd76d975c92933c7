/* What the Slack and Teams receivers share: render a JSON template over the
 * first events of a message that fit the service's limit, and post it. */
#ifndef WSRELAY_NOTIFY_CHAT_H
#define WSRELAY_NOTIFY_CHAT_H

#include "notify/http.h"
#include "notify/notify.h"
#include "util/buf.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Renders template `name` (the receiver's `template`, else the templates
 * directory's, else the built-in one) over the first `k` events of `m` and
 * parses it strictly. Returns the JSON (a new reference) or NULL with `e`
 * set; res->permanent when the template does not compile, render or make
 * one JSON object (a mistake to fix, not a message to retry), not when its
 * file cannot be read now. A `k` below m->n (the template's "…and N
 * more") is logged as an error: what wsrelay sends is fitted first
 * (notify_fit), so no event is hidden without a word. */
struct json_object *chat_render(const struct notify_env *env, const struct receiver_conf *r,
                                const struct chat_conf *chat, const char *name,
                                const struct notify_message *m, size_t k, struct notify_result *res,
                                struct err *e);

/* How many of the first events of `m`, at most `max` of them, one
 * message can hold: the largest k whose rendering of template `name`
 * `fits` (1 when none does; `max` when the template cannot be rendered,
 * which the send reports). The message is rendered as the last of many
 * parts, so that a part's own number never makes it longer than tried. */
size_t chat_fit(const struct notify_env *env, const struct receiver_conf *r,
                const struct chat_conf *chat, const char *name, const struct notify_message *m,
                size_t max, bool (*fits)(struct json_object *payload));

/* POSTs `payload` to chat->url within `timeout_s` seconds (the receiver's
 * `timeout`) and judges the answer with `accepted`. Returns 0 when
 * accepted; otherwise -1 with "POST URL: HTTP STATUS: ANSWER" in `e` (URL
 * redacted) and `res` filled: a 4xx other than 429 is permanent (the
 * message or the URL is wrong), a 429, a 5xx or no answer is not. */
int chat_send(const struct chat_conf *chat, struct json_object *payload,
              bool (*accepted)(long status, const char *body), long timeout_s,
              struct notify_result *res, struct err *e);

/* What the services whose messages are text (Google Chat, Chatwork,
 * Pushover) share. */

/* Renders text template `name` ("googlechat-en.txt"; `explicit_path`, a
 * receiver's template:, when not NULL) over the first `k` events of `m`
 * into `out`, with the role's escaping, without the line ends and spaces
 * it ends with. 0, or -1 with `e` set and
 * res->permanent when the template does not compile or render (not when
 * its file cannot be read now). */
int chat_render_text(struct buf *out, const struct notify_env *env, const struct receiver_conf *r,
                     const char *explicit_path, const char *name, const struct notify_message *m,
                     size_t k, struct notify_result *res, struct err *e);

/* How many of the first events of `m`, at most `max` of them, make a
 * text of at most `max_chars` characters (1 when none does; `max` when
 * the template cannot be rendered, which the send reports). */
size_t chat_fit_text(const struct notify_env *env, const struct receiver_conf *r,
                     const char *explicit_path, const char *name, const struct notify_message *m,
                     size_t max, size_t max_chars);

/* The number of characters of UTF-8 text `s` (a byte that is not UTF-8
 * counts as one). */
size_t chat_chars(const char *s);

/* `s` cut to at most `max` characters (max >= 1), the last of them "…"
 * when cut, never inside a character. A new string. */
char *chat_cut(const char *s, size_t max);

/* Appends "name=value" to a form body (application/x-www-form-urlencoded),
 * with '&' before it when the body is not empty; the value
 * percent-encoded but for letters, digits and "-._~". */
void chat_form_add(struct buf *form, const char *name, const char *value);

/* The incident snapshot of event `ev` (event.h), or NULL outside one;
 * with its id in *id and key in *key (borrowed) when not NULL. */
const struct json_object *chat_incident(const struct event *ev, unsigned long *id,
                                        const char **key);

#endif
