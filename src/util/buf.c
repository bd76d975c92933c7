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

int buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
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
