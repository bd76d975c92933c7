/* Self-monitoring: when wsrelay itself should tell the people on call that
 * it cannot do its job, and when it should tell them it can again.
 *
 * A condition is one symptom of one subject: a login ID whose credentials
 * the platform refuses (401), a login ID whose calls fail otherwise (the
 * platform down or failing), a login ID some of whose devices the platform
 * refuses again and again (400), a receiver that cannot be delivered to. Each
 * makes one relay event when it opens and one when it clears, never one
 * per run: what was said is remembered in the state (state_condition).
 * A refused login, and refused devices (already confirmed by several
 * refusals in a row), open at once; the others once the symptom has lasted
 * `after` (config self.after), so that a blip pages nobody.
 *
 * Everything here is pure: the caller (run.c) reads the health that the
 * run recorded, passes it in with the time, and carries out the verdict. */
#ifndef WSRELAY_SELFCHECK_H
#define WSRELAY_SELFCHECK_H

#include "state.h"

#include <stdbool.h>
#include <stddef.h>

#define SELFCHECK_PAUSE 3600 /* a refused login is tried again after this long */

enum selfcheck_what {
    SELFCHECK_LOGIN_REFUSED,    /* subject: a login ID; its calls got 401 */
    SELFCHECK_PLATFORM_FAILING, /* subject: a login ID; its calls fail otherwise */
    SELFCHECK_RECEIVER_FAILING, /* subject: a receiver; deliveries fail or its outbox waits */
    SELFCHECK_DEVICES_REFUSED,  /* subject: a login ID; some of its devices are parked after
                                   refusals in a row */
};

/* "login-refused", "platform-failing", "receiver-failing", "devices-refused":
 * the first part
 * of a condition's key and the `condition` of its relay events. */
const char *selfcheck_name(enum selfcheck_what what);

/* What the run found about one subject. */
struct selfcheck_input {
    enum selfcheck_what what;
    bool bad;          /* the symptom holds now */
    bool good;         /* the symptom is known to be over (a success since) */
    long long since;   /* the earliest time the symptom is known to have held
                          (the oldest waiting outbox item); 0: now */
    bool tried;        /* login-refused: a call of the login was made in this run */
    const char *creds; /* login-refused: selfcheck_creds of the login now */
};

enum selfcheck_action {
    SELFCHECK_NONE,  /* nothing to say */
    SELFCHECK_OPEN,  /* the condition starts: send its relay event */
    SELFCHECK_CLOSE, /* it cleared: send the recovery event */
    SELFCHECK_GONE,  /* its login or receiver left the configuration (a mistyped login ID
                        fixed): it is over, and its recovery event says why */
};

/* One run's verdict on a condition. `prev` is the condition as the state
 * had it (NULL: none). Writes the condition to keep in *next (its creds
 * are the caller's: state_condition_clear) and sets *keep; false means the
 * condition is to be forgotten. A symptom that neither holds nor is over
 * (no call made) leaves an open condition as it is. An open login-refused
 * condition moves retry_at on by SELFCHECK_PAUSE (and takes the current
 * creds) each time a call was tried and refused again. */
enum selfcheck_action selfcheck_step(struct state_condition *next, bool *keep,
                                     const struct state_condition *prev,
                                     const struct selfcheck_input *in, long long now, long after);

/* True when the calls of a login must wait: its login-refused condition
 * `c` (NULL: none) is open, the credentials are those that were refused,
 * and retry_at has not come. */
bool selfcheck_paused(const struct state_condition *c, const char *creds, long long now);

/* The hex SHA-256 of `n` strings (each followed by a NUL byte), for
 * recognising changed credentials without keeping them. Caller frees. */
char *selfcheck_creds(const char *const *parts, size_t n);

/* True when a relay event of `condition` (an event's condition, e.g.
 * "login-refused") still waiting in the outbox is no longer true and must
 * not be sent late: it opened a condition of the login `login` (the
 * event's account's login ID now; NULL when that account left the
 * configuration), and `c`, that login's condition of the same kind (NULL:
 * none), is not open any more. A recovery event ("...-cleared") and a
 * receiver's condition are never stale. */
bool selfcheck_stale(const char *condition, const char *login, const struct state_condition *c);

/* The sentence of a relay event for the people on call. `subject` is the
 * login ID or receiver; `accounts` the config's accounts of a login ("" for
 * a receiver); `c` the condition (its since, retry_at); `detail` the last
 * error (NULL: none), or for devices-refused the refused serials. `now` and `c` times print in UTC.
 * Caller frees. */
char *selfcheck_text(enum selfcheck_what what, enum selfcheck_action action, const char *subject,
                     const char *accounts, const struct state_condition *c, const char *detail,
                     long long now);

#endif
