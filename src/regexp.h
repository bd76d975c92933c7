/* Regular expressions of rules (`match.text`): PCRE2 patterns in UTF mode,
 * searched anywhere in an alert's raw text. A thin layer over libpcre2-8
 * that words its errors for a person editing a rule file and bounds the
 * work of one search. */
#ifndef WSRELAY_REGEXP_H
#define WSRELAY_REGEXP_H

#include "util/err.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* Compiles `pattern` (UTF-8, NUL-terminated) with PCRE2_UTF and
 * PCRE2_MATCH_INVALID_UTF, so that a text with invalid UTF-8 is searched
 * rather than refused. On success *out belongs to the caller
 * (pcre2_code_free). On failure returns -1 with "invalid regular expression
 * at offset N: WHAT" in `e`, N counting bytes from 0 as PCRE2 does. */
int regexp_compile(pcre2_code **out, const char *pattern, struct err *e);

/* Searches `text` (NUL-terminated) for `re`: 1 when found, 0 when not, -1
 * with the reason in `e` when the search gave up (a pattern that would
 * backtrack without end hits PCRE2's match limit of 1,000,000 steps). */
int regexp_search(const pcre2_code *re, const char *text, struct err *e);

#endif
