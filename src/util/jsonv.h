/* Reading JSON values written in either of the platform's dialects: member
 * names in kebab-case or snake_case, numbers as JSON numbers or as strings
 * of digits. None of these allocate except jsonv_text*, whose result the
 * caller frees; and the building helpers at the end, which end the program
 * when json-c runs out of memory. */
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

/* Building JSON: json-c reports an allocation failure by returning NULL
 * or -1; like xmalloc, these end the program then. */

/* `o`, which must not be NULL. */
struct json_object *jsonv_need(struct json_object *o);

/* Sets member `key` of `obj` to `val` (taken over; NULL is JSON null). */
void jsonv_put(struct json_object *obj, const char *key, struct json_object *val);

/* Sets member `key` of `obj` to the integer `v`. */
void jsonv_put_int(struct json_object *obj, const char *key, long long v);

/* Appends `val` (taken over) to the array `arr`. */
void jsonv_append(struct json_object *arr, struct json_object *val);

#endif
