/* The json-c reader of a Get Current Readings body as wsrelay had it
 * before util/jscan.h: the reference of fuzz_platform_current. */
#ifndef WSRELAY_DEVICES_ORACLE_H
#define WSRELAY_DEVICES_ORACLE_H

#include "devicelist.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stddef.h>

/* devicelist_parse as it was: the devices of the parsed body
 * `body` (a JSON object), with the same results and warnings. */
int oracle_parse_devices(struct device_info **out, size_t *n, const struct json_object *body,
                         const char *account, struct err *e);

#endif
