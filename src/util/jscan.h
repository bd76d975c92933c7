/* Reading JSON text value by value, without building a tree.
 *
 * json-c builds a hash table for every object it reads; for the large,
 * regular documents a run reads every minute (the Get Current Readings
 * reply of 2000 devices, the state's per-device sections) that costs more
 * than all the rest of the run. A scanner walks the text instead: the
 * caller asks for the value it expects next, and what it does not want it
 * skips (checked all the same) or takes as raw text to write back as it
 * was.
 *
 * The grammar is RFC 8259's: no comments, no trailing commas, no NaN, no
 * "1." or ".5". Inside strings it is as lenient as json-c, whose place it
 * takes for the platform's replies: raw control characters and bytes that
 * are not UTF-8 pass through as they are, and a lone surrogate escape
 * reads as U+FFFD; whoever keeps or shows a string cleans it
 * (util/utf8.h, utf8_clean), as the readers of json-c's strings do.
 * Nesting deeper than JSCAN_DEPTH is an error.
 *
 * Errors stick: the first one is kept (with its byte offset) and every call
 * after it fails, so a reader may check once at the end (jscan_end) rather
 * than after every step. Nothing here allocates except jscan_member's key
 * buffer (freed by jscan_free) and jscan_string_dup's result (the
 * caller's). */
#ifndef WSRELAY_JSCAN_H
#define WSRELAY_JSCAN_H

#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define JSCAN_DEPTH 64

enum jscan_type {
    JSCAN_NONE, /* the end of the text, a closing bracket, or an error */
    JSCAN_OBJECT,
    JSCAN_ARRAY,
    JSCAN_STRING,
    JSCAN_NUMBER,
    JSCAN_TRUE,
    JSCAN_FALSE,
    JSCAN_NULL,
};

struct jscan {
    const char *text, *p, *end;
    int depth;
    bool first[JSCAN_DEPTH + 1]; /* the open container at that depth has no value yet */
    bool failed;
    size_t fail_at;     /* byte offset of the first error */
    const char *reason; /* its reason, a static string */
    char *key;          /* the last member name, decoded (jscan_member) */
    size_t key_len, key_cap;
};

/* Starts reading `len` bytes of `text` (borrowed; need not end in NUL). */
void jscan_init(struct jscan *s, const char *text, size_t len);

/* Frees the key buffer; `s` may be reused after jscan_init. */
void jscan_free(struct jscan *s);

/* The type of the next value, nothing consumed; JSCAN_NONE at the end,
 * before a closing bracket, or after an error. */
enum jscan_type jscan_peek(struct jscan *s);

/* Opens the object that comes next (false, and an error, if the next value
 * is not an object). Then jscan_member until it returns false. */
bool jscan_object(struct jscan *s);

/* The next member of the open object: true with its name in s->key
 * (decoded, NUL-terminated, s->key_len bytes; valid until the next call),
 * the scanner before its value, which the caller must read or skip. False
 * at the object's end (consumed) or on an error. */
bool jscan_member(struct jscan *s);

/* Whether the last member name is `name`, as strcmp compares them: up
 * to a NUL byte written as \u0000 (json-c's objects compared names so).
 * Inline and by length first, for readers that test a name against many. */
static inline bool jscan_key_is(const struct jscan *s, const char *name)
{
    size_t n = strlen(name);
    return s->key_len >= n && s->key[n] == '\0' && memcmp(s->key, name, n) == 0;
}

/* Opens the array that comes next; then jscan_item until it returns
 * false. */
bool jscan_array(struct jscan *s);

/* True when the open array has one more value (the scanner before it);
 * false at its end (consumed) or on an error. */
bool jscan_item(struct jscan *s);

/* Skips the next value, whatever it is, checking it (s->key stays the
 * name it was: the names inside are checked, not kept). With `raw` not NULL,
 * the value's text (from its first byte to its last, within the scanned
 * text) is in raw->text, raw->len. */
struct jscan_raw {
    const char *text;
    size_t len;
};
bool jscan_skip(struct jscan *s, struct jscan_raw *raw);

/* The next value as a string, decoded, in a new NUL-terminated string
 * (*out, the caller frees; *len its length, which may include NUL bytes
 * written as \u0000; `len` may be NULL). False, *out NULL, when it is not
 * a string or on an error. */
bool jscan_string_dup(struct jscan *s, char **out, size_t *len);

/* The next value as a number (false when it is not one); *out is what
 * strtod makes of it, finite (a number beyond a double's range is an
 * error). */
bool jscan_number(struct jscan *s, double *out);

/* A short, plain number at *at (before `end`), as jscan_number and
 * jscan_int read most numbers: an optional '-', 1 to 15 digits without a
 * leading zero (or a lone 0), maybe a point within them, no exponent, and
 * nothing after it that a number could go on with. *digits are its
 * digits, *decimals how many follow the point (-1: no point), and *at
 * moves past it. False, *at unchanged, for any other text (which may
 * still be a number, or not: the scanner decides). For readers of a text
 * they wrote themselves, which try the plain form first.
 * jscan_plain_value is the number, exactly as strtod reads its text. */
bool jscan_plain_number(const char **at, const char *end, bool *negative, long long *digits,
                        int *decimals);
double jscan_plain_value(bool negative, long long digits, int decimals);

/* The next value as an integer: a number written without fraction or
 * exponent that fits in a long long (false otherwise). */
bool jscan_int(struct jscan *s, long long *out);

/* The next value as true or false. */
bool jscan_bool(struct jscan *s, bool *out);

/* Consumes a null that comes next: true when it did. Anything else is
 * left unread, and is not an error. */
bool jscan_null(struct jscan *s);

/* Marks the scan failed at the current position with `reason` (a static
 * string; "the text ends too soon" at the end of the text), unless it
 * failed already; returns false. For readers that find a value of the
 * wrong kind. */
bool jscan_fail(struct jscan *s, const char *reason);

/* After the top-level value: 0 when the scan succeeded and only white
 * space is left; -1 otherwise, with "byte N: REASON" in `e`. */
int jscan_end(struct jscan *s, struct err *e);

/* The error so far as jscan_end words it (-1), or 0 when there is none. */
int jscan_error(const struct jscan *s, struct err *e);

#endif
