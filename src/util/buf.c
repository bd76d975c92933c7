/* Growable, capped, always-terminated byte buffers. */
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t limit)
{
    memset(b, 0, sizeof *b);
    b->limit = limit;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
    if (b->limit && (len > b->limit || b->len > b->limit - len))
        return -1;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + len + 1)
            cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

void buf_reserve(struct buf *b, size_t n)
{
    if (b->len + n + 1 <= b->cap)
        return;
    size_t cap = b->len + n + 1;
    if (cap < b->cap * 2)
        cap = b->cap * 2;
    b->data = xrealloc(b->data, cap);
    if (!b->cap)
        b->data[0] = '\0';
    b->cap = cap;
}

int buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_put_ll(struct buf *b, long long v)
{
    char text[24];
    char *p = text + sizeof text;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    return buf_append(b, p, (size_t)(text + sizeof text - p));
}

int buf_json_string(struct buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t done = 0;
    int rc = buf_append(b, "\"", 1);
    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7] = {'\\', 0};
        size_t n = 2;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        switch (c) {
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        rc = buf_append(b, s + done, i - done);
        if (rc == 0)
            rc = buf_append(b, esc, n);
        done = i + 1;
    }
    if (rc == 0)
        rc = buf_append(b, s + done, len - done);
    return rc == 0 ? buf_append(b, "\"", 1) : rc;
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return -1;
    char *tmp = xmalloc((size_t)n + 1);
    vsnprintf(tmp, (size_t)n + 1, fmt, ap);
    int rc = buf_append(b, tmp, (size_t)n);
    free(tmp);
    return rc;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *buf_str(const struct buf *b)
{
    return b->data ? b->data : "";
}

char *buf_steal(struct buf *b)
{
    char *s = b->data ? b->data : xstrdup("");
    size_t limit = b->limit;
    buf_init(b, limit);
    return s;
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
    free(b->data);
    buf_init(b, b->limit);
}
