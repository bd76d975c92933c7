/* Receivers: where notifications go.
 *
 * Each transport is one file exporting one `struct notifier`; a new channel
 * is one file and one row in the table of notify.c. A notifier sends all the
 * events of a message as one message (or, where the far end limits a
 * message's size, as few as it can) and reports what the far end answered.
 * It never retries by itself: the caller keeps failed events in the outbox
 * for a later run, or gives them up when the answer was permanent. No
 * secret reaches an error or an answer: URLs appear without their path,
 * and notify_send takes every secret of the receiver's configuration out
 * of both, in every form util/redact.h knows, whatever the transport did. */
#ifndef WSRELAY_NOTIFY_H
#define WSRELAY_NOTIFY_H

#include "config.h"
#include "event.h"
#include "util/buf.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct redact;

/* One message: the events it carries and when it is sent. */
struct notify_message {
    const struct event *events;
    size_t n;      /* >= 1 */
    long long now; /* the run's clock */
    bool test;     /* a test notification (wsrelay test-receiver) */
};

/* What every notifier of a run shares. */
struct notify_env {
    const char *templates_dir; /* the config's templates: directory, or NULL */
};

/* What the far end answered. Filled on success and on failure. */
struct notify_result {
    long status;      /* HTTP status or SMTP reply code; 0 when none came */
    char answer[256]; /* its answer, one printable line, secrets redacted */
    bool permanent;   /* a failure that retrying cannot fix */
    long retry_after; /* seconds the far end asked to wait first; 0: none */
};

struct notifier {
    enum receiver_type type;
    const char *name; /* the config key: "webhook", "file", "email", "slack", "teams" */
    unsigned pace_ms; /* least time between two posts to one receiver; 0: none */
    int (*send)(const struct notify_env *env, const struct receiver_conf *r,
                const struct notify_message *m, struct notify_result *res, struct err *e);
};

extern const struct notifier notifier_webhook;
extern const struct notifier notifier_file;
extern const struct notifier notifier_email;
extern const struct notifier notifier_slack;
extern const struct notifier notifier_teams;

/* Sends message `m` to receiver `r`. Returns 0 when the far end accepted
 * it; -1 with the reason in `e` (prefixed with the receiver's name) and the
 * details in `res` otherwise. The receiver's secrets (URL and its parts,
 * header values, the SMTP password) are redacted from res->answer and
 * e->msg (util/redact.h). */
int notify_send(const struct notify_env *env, const struct receiver_conf *r,
                const struct notify_message *m, struct notify_result *res, struct err *e);

/* Every secret of configuration `c`, as notify_send redacts a receiver's,
 * for all its receivers together, with each account's API key and
 * password and the heartbeat URL: for what shows one receiver's answer
 * where another's secret could be quoted (test-receiver). Caller frees
 * (redact_free). */
struct redact *notify_secrets(const struct config *c);

/* The template context of a message (a new reference): templates_context
 * (templates.h) over the events as event_to_json writes them, with
 * "more": 0. */
struct json_object *notify_context(const char *receiver, const struct notify_message *m);

/* The same with only the first `k` events listed, for services that limit
 * a message's size: "count" stays the message's number of events and
 * "more" is how many were left out, for "…and 37 more". */
struct json_object *notify_context_first(const char *receiver, const struct notify_message *m,
                                         size_t k);

/* Renders the template `name` ("slack.json") for a message context:
 * `explicit_path` (a receiver's template: key) when not NULL, else the file
 * of that name in env->templates_dir, else the built-in one. The escaping
 * is that of the role `name` (templates_escape: Slack's and Teams' own for
 * slack.json and teams.json, JSON for other .json, HTML for .html, text
 * for .txt), never of a custom file's name. Returns 0; -1 when the template file cannot be
 * read now (worth retrying); -2 when it does not compile or render (a
 * mistake to fix: retrying cannot help). `e` says which. */
int notify_render(struct buf *out, const struct notify_env *env, const char *explicit_path,
                  const char *name, const struct json_object *ctx, struct err *e);

/* `text` as one JSON object, parsed strictly (standard JSON only, and
 * nothing but whitespace after it); NULL with `e` set otherwise. A new
 * reference. */
struct json_object *notify_parse_json(const char *text, struct err *e);

/* The plain-text form of a message (file.txt, or `explicit_path`), as the
 * file receiver writes it and a dry run shows it: a heading line, then a
 * block per event. */
int notify_render_text(struct buf *out, const struct notify_env *env, const char *explicit_path,
                       const char *receiver, const struct notify_message *m, struct err *e);

/* For `wsrelay check`: every template the receiver will render compiles,
 * and every partial it uses exists and compiles. Fails with
 * "receiver 'NAME': ORIGIN:LINE:COL: ...". */
int notify_check_templates(const struct notify_env *env, const struct receiver_conf *r,
                           struct err *e);

/* The transport name of a receiver type ("webhook", "file", ...). */
const char *notify_type_name(enum receiver_type type);

/* The least time between two posts to a receiver of that type, in ms. */
unsigned notify_pace_ms(enum receiver_type type);

#endif
