/* The simulator's control endpoints under /_sim/ (clock, alerts, faults,
 * stats), which tests and the demo use to steer the world. They need no
 * credentials and are documented in tests/sim/README.md. */
#ifndef WSRELAY_SIM_CONTROL_H
#define WSRELAY_SIM_CONTROL_H

#include "reply.h"
#include "world.h"

/* Answers a request whose path starts with /_sim/; unknown paths and
 * methods get a 404 error, malformed bodies a 400. `out` starts zeroed. */
void control_answer(struct world *w, const struct request *rq, struct reply *out);

#endif
