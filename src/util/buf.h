/* A growable byte buffer with a size cap, for text that comes from outside
 * (HTTP bodies, files): appending past the cap fails instead of growing
 * without bound. The data is always NUL-terminated. */
#ifndef WSRELAY_BUF_H
#define WSRELAY_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;   /* allocated bytes */
    size_t limit; /* most bytes `len` may reach; 0 means no limit */
};

/* An empty buffer that holds at most `limit` bytes (0: no limit). */
void buf_init(struct buf *b, size_t limit);

/* Appends; returns -1 (and appends nothing) when the cap would be passed. */
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);

/* Makes room for `n` more bytes (and the NUL) in one allocation, for a
 * writer that knows about how much comes: appends up to it then copy
 * nothing. The cap is not checked here (buf_append checks it). */
void buf_reserve(struct buf *b, size_t n);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);

/* Appends `len` bytes of `s` as a JSON string, quotes included, escaped
 * as json-c writes the state (JSON_C_TO_STRING_NOSLASHESCAPE): '"', '\\'
 * and the control characters; other bytes as they are. */
int buf_json_string(struct buf *b, const char *s, size_t len);

/* Appends `v` in decimal (as "%lld" writes it, without printf's cost). */
int buf_put_ll(struct buf *b, long long v);

/* The contents as a string: "" for a buffer never appended to. */
const char *buf_str(const struct buf *b);

/* Hands the string over to the caller (who frees it) and empties `b`. */
char *buf_steal(struct buf *b);

void buf_reset(struct buf *b);
void buf_free(struct buf *b);

#endif
