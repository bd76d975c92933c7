/* Receivers: where notifications go.
 *
 * Each transport is one file exporting one `struct notifier`; a new channel
 * is one file and one row in the table of notify.c. A notifier sends all the
 * events given to it as one message and either succeeds (the far end
 * accepted it) or fails with a message that holds no secret (URLs appear
 * with their path redacted). It never retries by itself: the caller keeps
 * failed events in the outbox for a later run. */
#ifndef WSRELAY_NOTIFY_H
#define WSRELAY_NOTIFY_H

#include "config.h"
#include "event.h"
#include "util/buf.h"
#include "util/err.h"

#include <stddef.h>

struct notifier {
    enum receiver_type type;
    const char *name; /* the config key: "webhook", "file", "email", "slack", "teams" */
    int (*send)(const struct receiver_conf *r, const struct event *events, size_t n,
                struct err *e);
};

extern const struct notifier notifier_webhook;
extern const struct notifier notifier_file;
extern const struct notifier notifier_email;

/* Sends `n` events (n >= 1) to receiver `r` as one message. Returns 0 when
 * the far end accepted it; -1 with the reason in `e` otherwise. */
int notify_send(const struct receiver_conf *r, const struct event *events, size_t n,
                struct err *e);

/* The plain-text form of a message, as the file receiver writes it and a
 * dry run shows it: a heading line, then a block per event. */
void notify_render_text(struct buf *out, const char *receiver, const struct event *events,
                        size_t n);

/* The transport name of a receiver type ("webhook", "file", ...). */
const char *notify_type_name(enum receiver_type type);

#endif
