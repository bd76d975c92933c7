/* A JSON file read whole and strictly: one value and nothing after it but
 * white space, valid UTF-8, no json-c leniencies. */
#ifndef WSRELAY_JSONFILE_H
#define WSRELAY_JSONFILE_H

#include "util/err.h"

#include <json-c/json.h>
#include <stddef.h>

/* Reads `path` (a regular file of at most `max_bytes`; file_read's rules)
 * and parses it as one JSON value, nested up to twice json-c's default
 * depth. Returns the value (the caller puts it), or NULL with `e` saying
 * "PATH: reason" or "PATH: not JSON: what at offset N". */
struct json_object *jsonfile_read(const char *path, size_t max_bytes, struct err *e);

#endif
