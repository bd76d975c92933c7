/* Reading JSON values written in either of the platform's dialects: member
 * names in kebab-case or snake_case, numbers as JSON numbers or as strings
 * of digits. None of these allocate except jsonv_text and
 * jsonv_text_clean, whose result the caller frees; and the building
 * helpers at the end, which end the program when json-c runs out of
 * memory. */
#ifndef WSRELAY_JSONV_H
#define WSRELAY_JSONV_H

#include "util/utf8.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* The member `key` of `obj`, trying the name as given and then with '_' and
 * '-' swapped ("time-diff", then "time_diff"). NULL when absent, null, or
 * `obj` is not an object. A borrowed reference. */
struct json_object *jsonv_member(const struct json_object *obj, const char *key);

/* A string value copied, or a number as its decimal text; NULL for any
 * other type or when `v` is NULL. */
char *jsonv_text(struct json_object *v);

/* The text of a string or a number (its decimal text) without a copy, and
 * its length in *len: a string's whole length, NUL bytes included (json-c
 * keeps "\u0000" as a NUL inside the string). Borrowed from `v`; NULL for
 * any other type or when `v` is NULL. */
const char *jsonv_text_raw(struct json_object *v, size_t *len);

/* Like jsonv_text, but the text made safe for the state, logs and
 * templates (util/utf8.h, utf8_clean): its whole length read, bytes that
 * are not UTF-8 as U+FFFD, control characters as `controls` says, at most
 * `max` bytes cut at a character boundary and ending with "…" when cut
 * (utf8_clean_shown). NULL when jsonv_text would be NULL. */
char *jsonv_text_clean(struct json_object *v, size_t max, enum utf8_controls controls);

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
