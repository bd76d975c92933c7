/* The steps of a run, in the order run.c takes them: what run.c calls in
 * the other files of src/run/. Each step borrows the run's context
 * (tick.h), logs its problems and counts them in t->failures unless it
 * says otherwise. The poll.c part is declared here rather than in a
 * poll.h of its own: such a name beside the system's <poll.h> invites
 * the wrong one. Only run.c and the steps include this. */
#ifndef WSRELAY_RUN_STEPS_H
#define WSRELAY_RUN_STEPS_H

#include "notify/notify.h"
#include "run/tick.h"

#include <stdbool.h>

/* --- selfmon.c, before polling --------------------------------------------- */

/* The state file was corrupt and state_open moved it aside: a relay event
 * (state-corrupt) says where and what it costs. Nothing when it was not. */
void self_state_corrupt(struct tick *t);

/* --- deliver.c, before polling --------------------------------------------- */

/* Logs a warning for each receiver that holds queued events but is no
 * longer configured: they stay queued (renaming it back delivers them). */
void warn_orphans(struct tick *t);

/* --- poll.c ---------------------------------------------------------------- */

/* Polls every login ID that is not paused, in rounds of parallel calls,
 * until none has a call left, the run is stopping, or polling's share of
 * run_time is spent. Each round's calls are recorded in the budget ledger
 * and saved (tick_persist) before any of them is sent; that save also
 * keeps what the round before found; a failed save ends polling. Replies
 * update the device lists, the readings memory, the login IDs' health
 * and the outbox; the last round's findings are left for the caller to
 * save. A serial of `run --look` that no pool holds fails the run. Every
 * problem is logged and counted in t->failures; a refusal of a login ID
 * (401, 429) ends only that login ID's calls. */
void poll_all(struct tick *t);

/* The first time at or after the run's time when polling could make a
 * call, given the state as it is now (quiet.h): the run's time for a
 * login whose accounts read readings every run, or with `--look`; else
 * the earliest of each account's next device list (DISCOVERY_INTERVAL
 * after the last) and each login's next alert call that its budget allows
 * (scheduler_next_call, when the login has a device its accounts want,
 * one refused for now included: its pause may end first). Never more than
 * 10 minutes ahead. Exact or early, never late: a run before it would
 * make no platform call. */
long long poll_quiet_until(const struct tick *t);

/* --- recent.c, after polling ----------------------------------------------- */

/* Gives the outbox items queued in this run for an alarm, a recovery or
 * an early warning on a channel their channel's recent readings (one Get
 * Latest Data call per device, for accounts with `trend`, within that
 * operation's budget, recorded and saved before it is sent; at most 10
 * devices a run, none started after 20 s or after polling's share of
 * run_time: the alerts wait for these calls). Not in a dry run.
 * A failure is logged and leaves the items as they were: the run goes on
 * and does not fail for it. */
void recent_attach(struct tick *t);

/* --- selfmon.c, after polling ---------------------------------------------- */

/* Forgets the conditions whose login or receiver left the config; one that
 * was reported gets its recovery event (relay event), since nothing else
 * will ever close it. */
void self_forget(struct tick *t);

/* Opens or closes the login IDs' conditions (login-refused,
 * platform-failing, devices-refused) from the health this run recorded,
 * with a relay event for each change (selfcheck.h decides). */
void self_logins(struct tick *t);

/* Drops, with a log line, each relay event waiting in the outbox that
 * opened a condition of a login now over ("paused until 15:23" must not
 * arrive after the fix): the condition's recovery event says the rest. */
void self_drop_stale(struct tick *t);

/* --- deliver.c --------------------------------------------------------------- */

/* Delivers the due outbox items of receiver `r` (the config's), ordered
 * and cut into messages its service takes whole, through `env`; in a dry
 * run prints them instead. Each accepted message is saved at once
 * (tick_persist); a failure keeps its items for a later try, or gives
 * them up for this receiver when the far end refused them for good, and
 * ends this receiver's part of the run. Stops with the run, a failed
 * save, or the end of delivery's share of run_time. */
void deliver_receiver(struct tick *t, const struct notify_env *env, const struct receiver_conf *r);

/* Applies outbox.max_age and outbox.max_items after delivery: what a
 * receiver held too long or beyond the cap is given up, never silently
 * (an error, a metric, a relay event to the other receivers). Returns
 * true when a relay event was queued. */
bool outbox_limits(struct tick *t);

/* --- selfmon.c, after delivery ---------------------------------------------- */

/* Opens or closes each receiver's condition (its deliveries fail, or its
 * outbox holds events longer than self.after), the relay event going to
 * the other receivers. Returns true when an event was queued. */
bool self_receivers(struct tick *t);

/* GETs self.heartbeat (after a run without failure) and records the
 * result in the state and the metrics. Its failure is logged and counted
 * there, never a failure of the run. */
void self_heartbeat(struct tick *t);

#endif
