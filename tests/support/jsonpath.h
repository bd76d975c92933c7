/* Reaching into a JSON document by a dotted path ("logins.0.alert.used":
 * object keys and array indices), for tests that check a command's --json
 * output. Each fails the current test when the path is absent or the value
 * has another type; what they return is borrowed from `o`. */
#ifndef WSRELAY_TEST_JSONPATH_H
#define WSRELAY_TEST_JSONPATH_H

#include <json-c/json.h>

struct json_object *json_at(struct json_object *o, const char *path);
const char *json_str_at(struct json_object *o, const char *path);
long long json_int_at(struct json_object *o, const char *path);

#endif
