/* `wsrelay explain`: how the rules would route the events of an alert log,
 * told rule by rule, without sending anything or touching the state. */
#ifndef WSRELAY_EXPLAIN_H
#define WSRELAY_EXPLAIN_H

#include "config.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stdio.h>

struct explain_options {
    const char *account; /* the config's account the log belongs to; NULL: the only one */
    const char *serial;  /* the device, when the body does not name it; NULL: from the body */
    const char *group;   /* the device's group (the alert log does not carry it); NULL: none */
    long long now;       /* the routing time: when: windows are checked against it */
};

/* Writes to `out` one block per event of the Get Alert Logs body `body`
 * (which gets a "serial" member when o->serial is given and the body has
 * none): the event, each rule with its verdict and the reason, and where
 * the event would go. Every event counts as new (seen keys and catch_up
 * are the state's business) and throttles start empty, so a throttle acts
 * within the file only. Returns 0; -1 with `e` set when the options or the
 * body are unusable (an unknown or ambiguous account, a serial that
 * contradicts the body, a body that is not an alert log). */
int explain_alert_log(FILE *out, const struct config *c, struct json_object *body,
                      const struct explain_options *o, struct err *e);

#endif
