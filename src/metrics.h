/* The metrics file: Prometheus text exposition of what the relay did, for
 * node_exporter's textfile collector (config `metrics_file:`).
 *
 * Counters live in the state (state_count), so they add up across runs,
 * which are separate processes; gauges are computed from the state when the
 * file is written. The file is replaced atomically at the end of each run,
 * mode 0644: it holds names of login IDs and receivers, never a secret. */
#ifndef WSRELAY_METRICS_H
#define WSRELAY_METRICS_H

#include "config.h"
#include "platform.h"
#include "state.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdbool.h>

/* The names run.c counts under (state counters). Event outcomes are plain
 * names that `wsrelay status` shows too; the labelled series are stored
 * under their full series text. */
#define METRICS_EVENTS_ROUTED "routed"
#define METRICS_EVENTS_DROPPED "dropped"
#define METRICS_EVENTS_THROTTLED "throttled"
#define METRICS_EVENTS_UNROUTED "unrouted"
#define METRICS_EVENTS_OLD "before_catch_up"
#define METRICS_EVENTS_GAP "gaps"
#define METRICS_EVENTS_EARLY "early_warnings"
#define METRICS_EVENTS_JOINED "joined" /* joined an incident: nobody paged again */
#define METRICS_LAST_SUCCESS "last_success_time"

/* Counts one platform call of `op` for `login` that got `http_status` (0:
 * no answer) and succeeded or not. */
void metrics_count_call(struct state *s, const char *login, enum platform_op op, bool ok,
                        long http_status);

/* Counts one message to `receiver`: "sent", "failed" or "given_up". */
void metrics_count_message(struct state *s, const char *receiver, const char *outcome);

/* Counts `n` events of `receiver`'s outbox that were given up: "expired"
 * (older than outbox.max_age) or "dropped" (beyond outbox.max_items).
 * They are counted under wsrelay_notifications_total too, per event. */
void metrics_count_lost(struct state *s, const char *receiver, const char *outcome, size_t n);

/* Counts one heartbeat GET that succeeded or not. */
void metrics_count_heartbeat(struct state *s, bool ok);

/* Appends the exposition text for the state `s` of config `c` at `now`,
 * after a run that ended well (`run_ok`) or not. */
void metrics_render(struct buf *out, const struct config *c, const struct state *s, long long now,
                    bool run_ok);

/* metrics_render into `path`, replaced atomically. */
int metrics_write(const char *path, const struct config *c, const struct state *s, long long now,
                  bool run_ok, struct err *e);

#endif
