/* UTF-8 decoding, repair and cutting, for text that wsrelay did not write
 * itself: replies of the platform, answers of receivers, files. */
#include "util/utf8.h"

#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <string.h>

size_t utf8_decode(uint32_t *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char lo = 0x80, hi = 0xBF; /* where the second byte must lie */
    size_t len;
    uint32_t cp;
    if (n == 0)
        return 0;
    if (p[0] < 0x80) {
        *out = p[0];
        return 1;
    }
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        len = 2;
        cp = p[0] & 0x1Fu;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        len = 3;
        cp = p[0] & 0x0Fu;
        if (p[0] == 0xE0)
            lo = 0xA0; /* below is an overlong form */
        else if (p[0] == 0xED)
            hi = 0x9F; /* above are the surrogates */
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        len = 4;
        cp = p[0] & 0x07u;
        if (p[0] == 0xF0)
            lo = 0x90; /* below is an overlong form */
        else if (p[0] == 0xF4)
            hi = 0x8F; /* above is beyond U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong), or F5-FF */
    }
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    cp = cp << 6 | (p[1] & 0x3Fu);
    for (size_t i = 2; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    *out = cp;
    return len;
}

size_t utf8_valid_prefix(const char *s, size_t n)
{
    uint32_t cp;
    size_t i = 0;
    while (i < n) {
        uint64_t w;
        if (n - i >= 8 && (memcpy(&w, s + i, 8), (w & 0x8080808080808080ULL) == 0)) {
            i += 8; /* eight ASCII bytes */
            continue;
        }
        size_t len = utf8_decode(&cp, s + i, n - i);
        if (len == 0)
            break;
        i += len;
    }
    return i;
}

bool utf8_valid(const char *s, size_t n)
{
    return utf8_valid_prefix(s, n) == n;
}

size_t utf8_cut(const char *s, size_t n, size_t max)
{
    uint32_t cp;
    size_t i = 0;
    if (n <= max)
        return n;
    while (i < n) {
        size_t len = utf8_decode(&cp, s + i, n - i);
        if (len == 0)
            len = 1;
        if (i + len > max)
            break;
        i += len;
    }
    return i;
}

bool utf8_is_control(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

/* utf8_clean, and with `ellipsis` a "…" at the end of a copy that was
 * cut. */
static char *clean(const char *s, size_t n, size_t max, enum utf8_controls controls, bool ellipsis)
{
    struct buf b;
    size_t plain = 0;
    /* Printable ASCII, most of what passes here, stays as it is. */
    while (plain < n && plain < max && (unsigned char)s[plain] >= 0x20 &&
           (unsigned char)s[plain] < 0x7f)
        plain++;
    if (plain == n) {
        char *copy = xmalloc(n + 1);
        memcpy(copy, s, n);
        copy[n] = '\0';
        return copy;
    }
    buf_init(&b, 0);
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t len = utf8_decode(&cp, s + i, n - i);
        const char *piece = s + i;
        size_t piece_len = len;
        if (len == 0) {
            piece = UTF8_REPLACEMENT;
            piece_len = 3;
            len = 1;
        } else if (cp == 0 && controls == UTF8_CONTROLS_KEEP) {
            piece = UTF8_REPLACEMENT;
            piece_len = 3;
        } else if (utf8_is_control(cp) &&
                   (cp == 0 || controls == UTF8_CONTROLS_NONE ||
                    (controls == UTF8_CONTROLS_LINES && cp != '\t' && cp != '\n'))) {
            piece = " ";
            piece_len = 1;
        }
        if (b.len + piece_len > max) {
            /* Cut: make room for the ellipsis, at a character boundary. */
            if (ellipsis && max >= sizeof UTF8_ELLIPSIS - 1) {
                b.len = utf8_cut(b.data, b.len, max - (sizeof UTF8_ELLIPSIS - 1));
                buf_puts(&b, UTF8_ELLIPSIS);
            }
            break;
        }
        buf_append(&b, piece, piece_len);
        i += len;
    }
    return buf_steal(&b);
}

char *utf8_clean(const char *s, size_t n, size_t max, enum utf8_controls controls)
{
    return clean(s, n, max, controls, false);
}

char *utf8_clean_shown(const char *s, size_t n, size_t max, enum utf8_controls controls)
{
    return clean(s, n, max, controls, true);
}

/* The escaped form of one character (or of a byte that is not UTF-8 when
 * len is 0) into `out` (at least 17 bytes); returns its length. */
static size_t escape_one(char *out, const char *s, size_t len, uint32_t cp)
{
    const unsigned char *p = (const unsigned char *)s;
    if (len == 0)
        return (size_t)snprintf(out, 17, "\\x%02X", p[0]);
    if (cp == '\\' || cp == '"') {
        out[0] = '\\';
        out[1] = (char)cp;
        return 2;
    }
    if (cp == '\n' || cp == '\r' || cp == '\t') {
        out[0] = '\\';
        out[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
        return 2;
    }
    if (utf8_is_control(cp)) {
        size_t k = 0;
        for (size_t i = 0; i < len; i++)
            k += (size_t)snprintf(out + k, 17 - k, "\\x%02X", p[i]);
        return k;
    }
    for (size_t i = 0; i < len; i++)
        out[i] = s[i];
    return len;
}

char *utf8_escape(const char *s, size_t n, size_t max)
{
    struct buf b;
    size_t i = 0;
    buf_init(&b, 0);
    buf_puts(&b, "\"");
    while (i < n) {
        char piece[17];
        uint32_t cp = 0;
        size_t len = utf8_decode(&cp, s + i, n - i);
        size_t k = escape_one(piece, s + i, len, cp);
        if (b.len - 1 + k > max)
            break;
        buf_append(&b, piece, k);
        i += len ? len : 1;
    }
    if (i < n)
        buf_printf(&b, "…\" (%zu bytes)", n);
    else
        buf_puts(&b, "\"");
    return buf_steal(&b);
}
