/* The platform's graph-data operations as the simulator plays them: Get
 * Latest Data (latest-data) and Get Data by Period and Number (data) for
 * standalone devices, and their -rtr500 variants for the remote units of a
 * base unit. They serve a device's scenario readings that are already
 * uploaded (at <= now), as a JSON record in the account's dialect or in the
 * spec's CSV layout, with temperatures in the unit asked for. The exact
 * rules are in tests/sim/README.md.
 *
 * The caller (world.c) authenticates the call, applies the request limit,
 * finds the device named by remote-serial, checks base-serial for the
 * -rtr500 operations, and keeps the data count of the period operations. */
#ifndef WSRELAY_SIM_GRAPH_H
#define WSRELAY_SIM_GRAPH_H

#include "reply.h"
#include "scenario.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* The data count of the period operations: readings per device and login
 * ID in any window of GRAPH_DATA_COUNT_SPAN seconds. */
#define GRAPH_DATA_COUNT_LIMIT 160000
#define GRAPH_DATA_COUNT_SPAN 3600

/* One call of a graph-data operation; every pointer is borrowed. */
struct graph_call {
    const struct account *a;
    const struct device *d;         /* the device named by remote-serial */
    const struct json_object *body; /* the request */
    long long now;
    bool rtr500;   /* latest-data-rtr500 or data-rtr500: for base-attached remote units */
    bool period;   /* data or data-rtr500: unixtime-from, unixtime-to, number, data count */
    size_t budget; /* period operations: the readings the data count still allows */
};

/* Answers `call` into `out` (zeroed): 400 when the device belongs to the
 * other family or has graph_supported false, or when type,
 * temperature-unit, unixtime-from, unixtime-to or number is wrong; then
 * 429 when a period call finds `budget` at 0; else 200 with the record,
 * JSON or CSV. Returns the number of readings the reply carries (0 unless
 * 200). */
size_t graph_answer(struct reply *out, const struct graph_call *call);

#endif
