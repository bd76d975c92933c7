/* One tick of the relay (`wsrelay run`): poll what the budget allows, turn
 * new alert-log entries into events, queue them for their receivers, and
 * deliver what is due. The steps live beside it in src/run/ (steps.h). */
#ifndef WSRELAY_RUN_H
#define WSRELAY_RUN_H

#include "config.h"
#include "run/options.h"

/* Runs one tick. Returns RUN_OK when every call and delivery succeeded, and
 * RUN_FAILED when something failed that the next run retries (what was
 * polled and queued is saved either way). Each problem is logged. */
int run_once(const struct config *c, const struct run_options *o);

#endif
