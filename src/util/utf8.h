/* UTF-8 for text that comes from outside: decoding one character,
 * validating, repairing (a byte that is not part of a well-formed sequence
 * becomes U+FFFD), cutting without splitting a character, copies fit
 * for a log line or a terminal, and the columns a text takes there.
 *
 * Well-formed means what RFC 3629 allows: no overlong forms, no UTF-16
 * surrogates (U+D800-U+DFFF), nothing above U+10FFFF, no sequence cut
 * short. None of these functions read past the `n` bytes they are given;
 * NUL bytes among them are characters like any other (U+0000). */
#ifndef WSRELAY_UTF8_H
#define WSRELAY_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;

#define UTF8_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD, three bytes */
#define UTF8_ELLIPSIS "\xE2\x80\xA6"    /* U+2026 "…", three bytes */

/* The length (1 to 4) of the well-formed sequence that starts `s` (`n`
 * bytes available) and its code point in *out; 0, *out untouched, when
 * there is none (n == 0 included). */
size_t utf8_decode(uint32_t *out, const char *s, size_t n);

/* True when the `n` bytes of `s` are well-formed UTF-8. */
bool utf8_valid(const char *s, size_t n);

/* The length of the longest well-formed prefix of the `n` bytes of `s`:
 * `n` when they all are, else where the first byte that is not starts. */
size_t utf8_valid_prefix(const char *s, size_t n);

/* The length of the longest prefix of `s` (`n` bytes) of at most `max`
 * bytes that does not end inside a well-formed sequence: `n` when n <=
 * max. A byte that is not UTF-8 counts as a character of its own. */
size_t utf8_cut(const char *s, size_t n, size_t max);

/* True for the control characters: C0 (U+0000-U+001F), DEL (U+007F) and
 * C1 (U+0080-U+009F, which a terminal may read as the start of an escape
 * sequence). */
bool utf8_is_control(uint32_t cp);

/* What utf8_clean does with control characters. */
enum utf8_controls {
    UTF8_CONTROLS_KEEP,  /* kept, but U+0000 (it would end a C string early) */
    UTF8_CONTROLS_LINES, /* a tab and a line feed kept, every other one a space */
    UTF8_CONTROLS_NONE,  /* every one a space: the text stays on one line */
};

/* A NUL-terminated copy of `s` (`n` bytes) that is well-formed UTF-8 of
 * at most `max` bytes: each byte that does not belong to a well-formed
 * sequence becomes U+FFFD, U+0000 becomes U+FFFD (UTF8_CONTROLS_KEEP) or a
 * space (the other modes), other control characters are treated as
 * `controls` says, and the copy ends before the first character that
 * would pass `max` bytes. The caller frees it. */
char *utf8_clean(const char *s, size_t n, size_t max, enum utf8_controls controls);

/* utf8_clean for text that people read (a name, an alert text): a copy
 * that does not hold the whole text ends with "…" (U+2026), still within
 * `max` bytes when `max` is 3 or more, so that the cut shows. */
char *utf8_clean_shown(const char *s, size_t n, size_t max, enum utf8_controls controls);

/* A NUL-terminated copy of `s` (`n` bytes) to show in a log line, quotes
 * around it and every character printable: a backslash as "\\", a quote
 * as "\"", control characters as "\n", "\r", "\t" or "\xNN" (each byte of
 * a C1 control), bytes that are not UTF-8 as "\xNN". When the shown text
 * would pass `max` bytes it ends with "…" after the quote and the
 * length: "\"5214\\x1b[2J…\" (1200 bytes)". The caller frees it. */
char *utf8_escape(const char *s, size_t n, size_t max);

/* --- display width (util/utf8width.c) --------------------------------- */

/* The columns the character `cp` takes on a terminal: 2 for East Asian
 * Width W and F (kana, kanji, hangul, fullwidth forms such as "Ａ",
 * most emoji), 0 for combining marks and other characters drawn on their
 * neighbour or not at all (general category Mn, Me, Cf; not U+00AD) and for
 * control characters, 1 for every other one. From Unicode 14.0's tables. */
int utf8_char_width(uint32_t cp);

/* The columns the `n` bytes of `s` take on a terminal: the sum of
 * utf8_char_width over its characters, each byte that is not part of a
 * well-formed sequence counting 1 (a terminal shows it as U+FFFD). For
 * lining up columns of text that holds Japanese names. */
size_t utf8_width(const char *s, size_t n);

/* Appends the NUL-terminated `s` to `b`, then spaces until it fills
 * `width` columns (none when it takes that many or more). */
void utf8_pad(struct buf *b, const char *s, size_t width);

#endif
