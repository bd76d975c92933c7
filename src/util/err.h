/* An error message filled in by the function that failed.
 *
 * Functions that can fail return 0 or -1 and take a `struct err *`; on -1
 * they have written one line into it that names the input ("FILE:LINE:COL:
 * unknown key 'x'"). Callers print it, prefix it or pass it on. */
#ifndef WSRELAY_ERR_H
#define WSRELAY_ERR_H

#include <stddef.h>

#define ERR_MAX 1024

struct err {
    char msg[ERR_MAX];
};

/* Replaces the message (printf-style); returns -1 so that callers can write
 * `return err_set(e, "...")`. `e` may be NULL. */
int err_set(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Puts "PREFIX: " in front of the current message; returns -1. */
int err_prefix(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void err_clear(struct err *e);

#endif
