/* One tick's shared context, for run.c and poll.c only: not a module of its
 * own. The tick is one piece of work split in two files for reading: run.c
 * holds the run as a whole (state and rules opened, the order of the steps,
 * delivery, self-monitoring, saves) and poll.c the platform calls and what
 * their replies change. Polling needs the run's clock, its time limit, its
 * saves and its relay events, and run.c needs polling done: that is all
 * that crosses, and it is declared here. No other file includes this.
 *
 * poll.c's entry point is declared here too rather than in a poll.h of its
 * own: it takes a struct tick, so it is as private as the rest, and with
 * src/ on the include path a src/poll.h would hide the system's <poll.h>
 * from every file that includes it (util/timebox.c does). */
#ifndef WSRELAY_TICK_H
#define WSRELAY_TICK_H

#include "config.h"
#include "rules.h"
#include "run/options.h"
#include "state.h"

#include <stdbool.h>
#include <time.h>

/* Refusals in a row (a 400 for a device's alert log) that park a device:
 * poll.c then asks for its alert log every 6 hours only, and run.c's
 * self-monitoring names it in the login's devices-refused condition. */
#define REFUSALS_TO_PARK 3

/* One run. run_once fills it, owns everything it points to and frees it;
 * poll_all borrows it for the polling steps. */
struct tick {
    const struct config *cfg;
    const struct run_options *opt;
    struct state *st;
    struct rules *rules;
    struct throttle_store throttles; /* the state's */
    struct timespec started;         /* CLOCK_MONOTONIC at the start of the run */
    bool late[2];                    /* tick_out_of_time said so, by enum tick_phase */
    bool unsaved;                    /* a save failed: deliver nothing more in this run */
    int failures;                    /* problems logged so far; any makes the run RUN_FAILED */
};

/* The parts of a run that run_time bounds. */
enum tick_phase { TICK_POLLING, TICK_DELIVERY };

/* --- run.c, for both ------------------------------------------------------ */

/* The run's clock plus the real time elapsed since it started: the time a
 * call is sent, which may be well after the run began (timeouts). */
long long tick_now(const struct tick *t);

/* True once a signal asked the run to stop early (run_options.stop). */
bool tick_stopping(const struct tick *t);

/* True when the run may start no further step of `phase`, whatever a
 * server does: platform calls get the first half of run_time, deliveries
 * all of it. A step under way is bounded by its own timeout, so a run
 * ends within run_time plus the longest timeout. Logs the first time it
 * says so for a phase (t->late). */
bool tick_out_of_time(struct tick *t, enum tick_phase phase);

/* Saves what the next step must not lose: everything, or in a dry run the
 * budget ledger only; outbox items a save had to give up are reported
 * (state-full). Returns 0, or -1 after logging the error with `why` (the
 * step it was for), counting a failure and setting t->unsaved. A save
 * whose state file was written but not every device file
 * (STATE_SAVED_BEHIND) is logged and counted the same way but returns 0:
 * the journal in the state file keeps those keys, so the run goes on. */
int tick_persist(struct tick *t, const char *why);

/* Queues a relay event (kind "relay", device "wsrelay", the `condition`
 * and `text` given; `account` may be NULL) for the receivers of `self:`
 * (every receiver without it) except `not_to` and those whose outbox is
 * full, straight into the outbox: the rules never see it, so no rule can
 * swallow it. A full outbox belongs to a receiver that cannot deliver
 * now, and the event would push out an alert there, which the next run
 * would drop and report, to the others, whose reports would come back in
 * turn, run after run. Its unixtime is unique among relay events
 * (state_relay_time), and so is its id "wsrelay/UNIXTIME/relay". A dry
 * run only logs it. Returns true when it was queued for any receiver; an
 * event that reaches nobody is logged as an error. */
bool tick_relay_send(struct tick *t, const char *account, const char *condition, const char *text,
                     const char *not_to);

/* True when `login` is not to be called in this run: the platform refused
 * its credentials (401), and neither have they changed in the config nor
 * has an hour passed, so that wsrelay does not get the user's login
 * locked. A paused login is logged and counted as a failure (no
 * heartbeat): its devices are not covered. */
bool tick_login_paused(struct tick *t, const char *login);

/* --- poll.c, for run.c ---------------------------------------------------- */

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

/* --- recent.c, for run.c -------------------------------------------------- */

/* Gives the outbox items queued in this run for an alarm, a recovery or
 * an early warning on a channel their channel's recent readings (one Get
 * Latest Data call per device, for accounts with `trend`, within that
 * operation's budget, recorded and saved before it is sent; at most 10
 * devices a run, none started after 20 s or after polling's share of
 * run_time: the alerts wait for these calls). Not in a dry run.
 * A failure is logged and leaves the items as they were: the run goes on
 * and does not fail for it. */
void recent_attach(struct tick *t);

#endif
