/* The running simulator: the scenario, the virtual clock, one rate limiter
 * per login ID and operation, the data count of the period operations,
 * injected faults and the log of every authenticated call. world_answer
 * plays the platform's six operations; the control endpoints (control.h)
 * reach in through the other functions.
 *
 * Nothing here locks: the server (sim.c) holds one lock around every use
 * of a world. */
#ifndef WSRELAY_SIM_WORLD_H
#define WSRELAY_SIM_WORLD_H

#include "reply.h"
#include "scenario.h"
#include "util/err.h"

#include <json-c/json.h>

struct world;

/* A world over `sc` (which it takes over and frees), its clock at sc->now. */
struct world *world_new(struct scenario *sc);

void world_free(struct world *w);

/* Answers POST /v1/devices/current, alert, latest-data,
 * latest-data-rtr500, data and data-rtr500 as the platform does (checks in
 * the order of tests/sim/README.md); any other path gets a 404 error.
 * `out` starts zeroed; the caller clears it. */
void world_answer(struct world *w, const struct request *rq, struct reply *out);

long long world_now(const struct world *w);
void world_set_now(struct world *w, long long now);

/* Adds an alert-log entry (JSON object as in the scenario) to the devices
 * with `serial`; fails with a message when the entry is malformed or the
 * serial unknown. */
int world_add_alert(struct world *w, const char *serial, const struct json_object *alert,
                    struct err *e);

/* Appends a reading (JSON object as in the scenario) to the devices with
 * `serial`; fails with a message when the reading is malformed, goes back
 * in time or the serial is unknown (nothing added). */
int world_add_reading(struct world *w, const char *serial, const struct json_object *reading,
                      struct err *e);

/* Makes the next `count` accepted calls of operation `op` ("current",
 * "alert", "latest-data", "latest-data-rtr500", "data", "data-rtr500")
 * answer `status` with `body` (NULL: the platform's error object with code
 * = status), replacing any fault pending for that operation. Fails for an
 * unknown operation. */
int world_set_fault(struct world *w, const char *op, int status, int count, const char *body,
                    struct err *e);

/* A platform request to `path` is in progress from world_flight_begin
 * to world_flight_end (sim.c calls them around the latency, up to the
 * reply); the stats report the most at once, in all and per operation. */
void world_flight_begin(struct world *w, const char *path);
void world_flight_end(struct world *w, const char *path);

/* The call log and counters described in tests/sim/README.md (GET
 * /_sim/stats). New reference. */
struct json_object *world_stats(const struct world *w);

#endif
