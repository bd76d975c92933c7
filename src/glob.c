/* Globs over UTF-8 characters for routing rules, checked with columns for
 * their error messages and matched without recursion.
 *
 * The matcher is the classic one with a single backtracking point: on a
 * mismatch it returns to the last '*' seen and lets it swallow one more
 * character of the text. An earlier '*' never needs to be revisited, because
 * whatever it could swallow the later one can too, so the work stays within
 * (glob length x text length) where a recursive matcher goes exponential on
 * globs such as "*a*a*a*a*b". */
#include "glob.h"

#include <stddef.h>
#include <stdint.h>

/* A byte of the text that is not valid UTF-8 becomes this plus the byte: a
 * character above Unicode that no literal and no range can name. */
#define GLOB_INVALID_BYTE 0x110000u

/* A place in the glob: the next byte to read and its 1-based column in
 * characters. */
struct cursor {
    const char *p;
    size_t col;
    struct err *e;
};

enum token_kind { TOKEN_STAR, TOKEN_ANY, TOKEN_CHAR, TOKEN_CLASS };

/* One element of the glob: for TOKEN_CHAR the character, for TOKEN_CLASS
 * where its '[' is. */
struct token {
    enum token_kind kind;
    uint32_t c;
    struct cursor at;
};

/* Decodes the UTF-8 character at `str` (which is not the NUL) into *cp and
 * returns its length, or returns 0 when the bytes there are not valid UTF-8.
 * Stops at the first byte that is not a continuation byte, so it never reads
 * past the NUL. */
static size_t utf8_decode(const char *str, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    uint32_t c = s[0];
    size_t len;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        c &= 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        c &= 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        c &= 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || (c >= 0xD800 && c <= 0xDFFF) ||
        c > 0x10FFFF)
        return 0;
    *cp = c;
    return len;
}

/* The character of the text at `s` (not the NUL) into *c; returns what
 * follows it. */
static const char *text_next(const char *s, uint32_t *c)
{
    size_t n = utf8_decode(s, c);
    if (n == 0) {
        *c = GLOB_INVALID_BYTE + (unsigned char)*s;
        n = 1;
    }
    return s + n;
}

/* Reads the character at the cursor (not the NUL). */
static int cursor_char(struct cursor *cur, uint32_t *c)
{
    size_t n = utf8_decode(cur->p, c);
    if (n == 0)
        return err_set(cur->e, "column %zu: invalid UTF-8 (byte 0x%02X)", cur->col,
                       (unsigned)(unsigned char)*cur->p);
    cur->p += n;
    cur->col++;
    return 0;
}

/* Steps over an ASCII character of syntax. */
static void cursor_skip(struct cursor *cur)
{
    cur->p++;
    cur->col++;
}

static uint32_t ascii_other_case(uint32_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c + ('a' - 'A');
    if (c >= 'a' && c <= 'z')
        return c - ('a' - 'A');
    return c;
}

static bool in_range(uint32_t c, uint32_t lo, uint32_t hi)
{
    uint32_t other = ascii_other_case(c);
    return (c >= lo && c <= hi) || (other >= lo && other <= hi);
}

static int not_closed(struct cursor *cur, size_t open_col)
{
    return err_set(cur->e, "column %zu: '[' is not closed", open_col);
}

/* A member of a class, maybe escaped; the cursor is on neither the NUL nor
 * the closing ']'. */
static int class_char(struct cursor *cur, uint32_t *c, size_t open_col)
{
    if (*cur->p == '\\') {
        cursor_skip(cur);
        if (*cur->p == '\0')
            return not_closed(cur, open_col);
    }
    return cursor_char(cur, c);
}

/* Reads the class whose '[' is at the cursor, leaving the cursor after its
 * ']', and sets *hit to whether the class holds `c`. */
static int class_read(struct cursor *cur, uint32_t c, bool *hit)
{
    size_t open_col = cur->col;
    bool negate = false, in = false;
    cursor_skip(cur);
    if (*cur->p == '!' || *cur->p == '^') {
        negate = true;
        cursor_skip(cur);
    }
    for (bool first = true;; first = false) {
        struct cursor start = *cur;
        uint32_t lo, hi;
        if (*cur->p == '\0')
            return not_closed(cur, open_col);
        if (*cur->p == ']' && !first)
            break;
        if (class_char(cur, &lo, open_col) < 0)
            return -1;
        hi = lo;
        if (cur->p[0] == '-' && cur->p[1] != ']' && cur->p[1] != '\0') {
            cursor_skip(cur);
            if (class_char(cur, &hi, open_col) < 0)
                return -1;
            if (hi < lo)
                return err_set(cur->e, "column %zu: range '%.*s' ends before it starts", start.col,
                               (int)(cur->p - start.p), start.p);
        }
        if (in_range(c, lo, hi))
            in = true;
    }
    cursor_skip(cur);
    *hit = in != negate;
    return 0;
}

/* Reads the token at the cursor (not the NUL) and steps over it. */
static int token_read(struct cursor *cur, struct token *t)
{
    bool hit;
    t->at = *cur;
    if (*cur->p == '*') {
        t->kind = TOKEN_STAR;
        cursor_skip(cur);
        return 0;
    }
    if (*cur->p == '?') {
        t->kind = TOKEN_ANY;
        cursor_skip(cur);
        return 0;
    }
    if (*cur->p == '[') {
        t->kind = TOKEN_CLASS;
        return class_read(cur, 0, &hit);
    }
    if (*cur->p == '\\') {
        cursor_skip(cur);
        if (*cur->p == '\0')
            return err_set(cur->e, "column %zu: '\\' at the end escapes nothing", t->at.col);
    }
    t->kind = TOKEN_CHAR;
    return cursor_char(cur, &t->c);
}

/* Whether the token (not a star) of a checked glob matches the character
 * `c` of the text. */
static bool token_matches(const struct token *t, uint32_t c)
{
    struct cursor at = t->at;
    bool hit = false;
    if (t->kind == TOKEN_ANY)
        return true;
    if (t->kind == TOKEN_CHAR)
        return c == t->c || ascii_other_case(c) == t->c;
    return class_read(&at, c, &hit) == 0 && hit;
}

int glob_check(const char *pattern, struct err *e)
{
    struct cursor cur = {pattern, 1, e};
    struct token t;
    if (!pattern || *pattern == '\0')
        return err_set(e, "column 1: the glob is empty");
    while (*cur.p != '\0') {
        if (token_read(&cur, &t) < 0)
            return -1;
    }
    return 0;
}

bool glob_match(const char *pattern, const char *text)
{
    struct cursor cur = {pattern, 1, NULL};
    struct cursor after_star = cur;
    const char *s = text;
    const char *star_s = NULL; /* where the text stood when the last '*' was read */
    if (!text || glob_check(pattern, NULL) < 0)
        return false;
    while (*s != '\0') {
        if (*cur.p != '\0') {
            struct cursor next = cur;
            struct token t;
            uint32_t c;
            const char *s_next;
            if (token_read(&next, &t) < 0)
                return false; /* cannot happen after glob_check */
            if (t.kind == TOKEN_STAR) {
                after_star = next;
                star_s = s;
                cur = next;
                continue;
            }
            s_next = text_next(s, &c);
            if (token_matches(&t, c)) {
                cur = next;
                s = s_next;
                continue;
            }
        }
        if (!star_s)
            return false;
        /* Let the last '*' take one more character and try again from there. */
        uint32_t skipped;
        star_s = text_next(star_s, &skipped);
        s = star_s;
        cur = after_star;
    }
    while (*cur.p == '*')
        cur.p++;
    return *cur.p == '\0';
}
