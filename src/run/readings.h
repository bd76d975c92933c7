/* Current readings, for polling (poll.c): whether a login reads them now,
 * and what its Get Current Readings reply changes: the device lists of
 * its accounts, each device's readings memory (readings_memory.h), the signals that
 * make a device's alert log the next to be read, and early warnings. Part
 * of the run's wing (tick.h); no file outside src/run/ includes this. */
#ifndef WSRELAY_RUN_READINGS_H
#define WSRELAY_RUN_READINGS_H

#include "config.h"
#include "platform.h"
#include "run/tick.h"

#include <stdbool.h>

#define DISCOVERY_INTERVAL 600 /* seconds between two device lists without signals */

/* True when `login` is to call Get Current Readings now: every run (at
 * most one a minute) when one of its accounts watches readings, else when
 * one of its accounts' device list is due (DISCOVERY_INTERVAL); and the
 * budget of the operation allows the call (logged when it does not). */
bool readings_now(const struct tick *t, const char *login);

/* Takes the reply `rq` of a login's Get Current Readings, made through
 * the client of account `first` (its name goes into parse errors): the
 * device list of each of the login's accounts that discovers devices, and
 * each device's reading, with the signals and early warnings it raises.
 * A failure is logged, counted in t->failures and noted in the login's
 * health; the login's ledger takes what the reply tells. Returns false
 * when the login's credentials were refused. */
bool take_readings(struct tick *t, const char *login, const struct account_conf *first,
                   const struct platform_request *rq);

#endif
