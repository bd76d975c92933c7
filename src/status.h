/* `wsrelay status`: whether the relay covers what it should, at a glance,
 * from the state file (read without its lock: state_peek) and the
 * configuration.
 *
 * The verdict is PROBLEM when
 *   - the state file cannot be read, or no run has recorded anything yet;
 *   - a login ID's last platform call failed (whether or not one ever
 *     succeeded before);
 *   - a login ID made no platform call for more than 15 minutes although
 *     its budget allowed one (wsrelay is not running);
 *   - no device of a login ID can be polled because the platform refuses
 *     them;
 *   - a receiver, configured or not, has outbox items queued more than 15
 *     minutes ago;
 * and OK otherwise, with warnings for what deserves a look but leaves the
 * relay covering its devices: events that no rule took, devices the
 * platform refuses, a receiver whose last delivery failed (or whose events
 * were given up), events queued for a receiver no longer configured. An
 * active silence (planned work) is listed, never a problem: the alarms it
 * covers are still recorded. An open incident is listed too, never a
 * problem: the relay did its part (it told the receivers, and reminds
 * them as the rules say); what remains is for people to do. */
#ifndef WSRELAY_STATUS_H
#define WSRELAY_STATUS_H

#include "config.h"
#include "state.h"

#include <stdbool.h>
#include <stdio.h>

/* What status_report returns; also the exit status of `wsrelay status`. */
enum status_verdict { STATUS_OK = 0, STATUS_PROBLEM = 1 };

/* Writes the report on the state `s` at `now` to `out`: in words (times
 * in the machine's local time) or, with `json`, as one JSON object with
 * Unix times (null for never). `s` NULL means the state file could not be
 * read and `state_error` says why (no secret: a path and what is wrong).
 * Nothing that the config keeps secret is written. Returns the verdict;
 * write errors are the caller's to check (ferror). */
enum status_verdict status_report(FILE *out, const struct config *c, const struct state *s,
                                  const char *state_error, long long now, bool json);

#endif
