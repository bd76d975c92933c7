/* Allocation that cannot fail: on out-of-memory the program ends with a
 * message. A relay that lives for a second gains nothing from untestable
 * recovery branches. Every function here returns memory the caller frees. */
#ifndef WSRELAY_XALLOC_H
#define WSRELAY_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
/* Grows an array of `nmemb` elements of `size` bytes; checks for overflow. */
void *xreallocarray(void *ptr, size_t nmemb, size_t size);
/* `ptr`, an array holding `n` elements of `size` bytes, with room for one
 * more. The capacity is the power of two at or above `n`, doubled when
 * full, so appending one at a time costs linear time, not the square of
 * the length: every append through it must start from n = 0. */
void *xgrowarray(void *ptr, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* NULL in, NULL out. */
char *xstrdup_or_null(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Ends the program with "wsrelay: out of memory". For allocations made
 * elsewhere (e.g. by json-c) that report failure by returning NULL. */
_Noreturn void xalloc_die(void);

#endif
