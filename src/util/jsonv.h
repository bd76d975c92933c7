/* Reading JSON values written in either of the platform's dialects: member
 * names in kebab-case or snake_case, numbers as JSON numbers or as strings
 * of digits. None of these allocate except jsonv_text*, whose result the
 * caller frees. */
#ifndef WSRELAY_JSONV_H
#define WSRELAY_JSONV_H

#include <json-c/json.h>
#include <stdbool.h>

/* The member `key` of `obj`, trying the name as given and then with '_' and
 * '-' swapped ("time-diff", then "time_diff"). NULL when absent, null, or
 * `obj` is not an object. A borrowed reference. */
struct json_object *jsonv_member(const struct json_object *obj, const char *key);

/* A string value copied, or a number as its decimal text; NULL for any
 * other type or when `v` is NULL. */
char *jsonv_text(struct json_object *v);

/* Like jsonv_text, but "" instead of NULL. */
char *jsonv_text_or_empty(struct json_object *v);

/* An integer given as a JSON integer or as a string of digits (an optional
 * '-' first). False, *out untouched, for anything else. */
bool jsonv_int(struct json_object *v, long long *out);

#endif
