/* Globs for routing rules: "freezer*", "冷凍庫?", "SN-[0-9][0-9]*", matched
 * against device serials, device names, models, group and account names.
 *
 * Grammar: a glob is a non-empty UTF-8 string, matched against the whole of
 * a text, character by character (a character is a UTF-8 sequence, not a
 * byte).
 *   *       any run of characters, including none and including '/' (these
 *           are names, not paths).
 *   ?       exactly one character.
 *   [...]   one character of a class. Its members are characters ("[冷凍]")
 *           and ranges by code point ("[a-z]", "[０-９]"). '!' or '^' right
 *           after '[' negates the class. ']' right after '[' (or after "[!"
 *           and "[^") is a member, so "[]]" is the class of ']' and a class
 *           is never empty. '-' first or last is a member ("[-a]", "[a-]").
 *           '\' escapes the next member ("[\]]", "[a\-z]" = a, -, z).
 *   \c      the character c itself ("\*", "\?", "\[", "\\").
 *   other   the character itself.
 * ASCII letters match either case ("freezer*" matches "Freezer 1"), ranges
 * included: a character is in a range when it or its other ASCII case is
 * ("[a-f]" matches 'C'). Other characters match only themselves: 'é' is not
 * 'É', 'Ａ' (fullwidth) is not 'A'. Nothing depends on the locale.
 *
 * Errors, each reported with the 1-based column (in characters) it starts
 * at: an empty glob, a '[' without its ']', a '\' at the very end, a range
 * whose end is below its start ("[z-a]"), and bytes that are not valid UTF-8
 * (overlong forms, surrogates and code points above U+10FFFF included).
 *
 * Texts are taken as they come: each byte of a text that is not valid UTF-8
 * is one character of its own, which '?', '*' and negated classes match and
 * nothing else does.
 *
 * Matching takes at most O(length of glob * length of text) steps, whatever
 * the glob ("*a*a*a*a*b" against 10,000 'a's included), and allocates
 * nothing. */
#ifndef WSRELAY_GLOB_H
#define WSRELAY_GLOB_H

#include "util/err.h"

#include <stdbool.h>

/* Checks that `pattern` is a valid glob. Returns 0, or -1 with a message in
 * `e` (which may be NULL) that names the 1-based character column of the
 * problem, e.g. "column 4: '[' is not closed". Every message starts with
 * "column N: "; an empty (or NULL) pattern is "column 1: the glob is
 * empty". */
int glob_check(const char *pattern, struct err *e);

/* Whether `text` matches the whole of `pattern`. A pattern that glob_check
 * refuses matches nothing, not even the empty text; a NULL text matches
 * nothing. Both are NUL-terminated UTF-8 strings. */
bool glob_match(const char *pattern, const char *text);

#endif
