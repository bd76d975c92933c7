/* Allocation wrappers that end the program on out-of-memory. */
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void xalloc_die(void)
{
    fputs("wsrelay: out of memory\n", stderr);
    abort();
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        xalloc_die();
    return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        xalloc_die();
    return p;
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        xalloc_die();
    return p;
}

void *xreallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size)
        xalloc_die();
    return xrealloc(ptr, nmemb * size);
}

/* Growing by one at a time with realloc would copy the whole array each
 * time: minutes for a long list under the sanitizers. */
void *xgrowarray(void *ptr, size_t n, size_t size)
{
    if (n & (n - 1))
        return ptr; /* not a power of two, nor 0: there is room */
    return xreallocarray(ptr, n ? 2 * n : 1, size);
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xstrdup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        xalloc_die();
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
