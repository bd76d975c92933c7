/* One run's shared context and the services every step of it uses (tick.c):
 * the run's clock and its time limit, the saves between steps, relay
 * events, paused logins. run.c fills the context and orders the steps
 * (steps.h); each step borrows it. Only the files of src/run/ include
 * this, and the look-ups (lookup/session.c) for tick_call. */
#ifndef WSRELAY_TICK_H
#define WSRELAY_TICK_H

#include "config.h"
#include "platform.h"
#include "rules.h"
#include "run/options.h"
#include "selfcheck.h"
#include "state.h"

#include <stdbool.h>
#include <time.h>

/* Refusals in a row (a 400 for a device's alert log) that park a device:
 * intake.c then has its alert log asked for every 6 hours only, and
 * self-monitoring (selfmon.c) names it in the login's devices-refused condition. */
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

/* --- tick.c, for every step ---------------------------------------------- */

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

/* How tick_call has the state saved once its calls are recorded: `save`
 * returns 0 when what was recorded is on disk, else -1 after it said why
 * (a log line, a message), `why` naming the calls. */
struct tick_saver {
    int (*save)(void *ctx, const char *why);
    void *ctx;
};

/* tick_persist as a struct tick_saver's save: `t` is the struct tick. */
int tick_save(void *t, const char *why);

/* Makes the platform calls reqs[0..n) as every one is made, by polling,
 * trends and the look-ups alike: each is recorded in the budget ledger of
 * `st` (reqs[i] for login logins[i]) at `now`; then the state is saved
 * (saver, told `why`); and only when that save succeeded are they sent,
 * all at once (platform_multi_call through `m`), so that a process killed
 * during a call has counted it. Returns 0 when the calls were made, each
 * with its reply and rc in reqs[i] (the caller releases the replies); -1
 * when the save failed and nothing was sent (the calls stay recorded in
 * the state in memory). */
int tick_call(struct state *st, long long now, const char *const *logins,
              struct platform_request *reqs, size_t n, struct platform_multi *m,
              const struct tick_saver *saver, const char *why);

/* The SHA-256 of the credentials (api_key, login_id, login_pass) of every
 * account of `login` in `c`, as hex: a change to any of them ends a pause
 * (selfcheck.h). Caller frees. */
char *tick_login_creds(const struct config *c, const char *login);

/* The state's key of a self-monitoring condition: "NAME/SUBJECT" (NAME
 * selfcheck_name's). Caller frees. */
char *tick_condition_key(enum selfcheck_what what, const char *subject);

/* Frees v[0..n) and v: the lists of names the state hands out
 * (state_outbox_receivers, state_condition_keys). NULL with n 0 is fine. */
void tick_strings_free(char **v, size_t n);

#endif
