/* Device serials: one rule for a serial written in the configuration and
 * one that comes in a platform reply.
 *
 * The platform documents serials as 8 characters, and every one seen is 8
 * letters or digits. Holding replies to the same rule as the configuration
 * keeps a serial safe wherever wsrelay writes it: a log line (no line
 * break, no escape sequence), a mail's Message-ID header (no line over
 * 998 characters), a state key, a file receiver's block. */
#ifndef WSRELAY_SERIAL_H
#define WSRELAY_SERIAL_H

#include "util/err.h"

#include <stddef.h>

#define SERIAL_LEN 8

/* 0 when the `n` bytes of `s` are a serial: exactly SERIAL_LEN ASCII
 * letters or digits. Otherwise -1 with "expected a device serial: exactly
 * 8 letters or digits" in `e`; the message never quotes `s`, which may
 * hold anything (serial_show does that safely). */
int serial_check(const char *s, size_t n, struct err *e);

/* *out = a copy of the `n` bytes of `s` when they are a serial (the
 * caller frees it); otherwise *out = NULL and -1 with "WHAT \"…\" is not
 * a device serial (exactly 8 letters or digits)" in `e`, the value shown
 * as serial_show shows it. For serials that come from outside. */
int serial_copy(char **out, const char *s, size_t n, const char *what, struct err *e);

/* The `n` bytes of `s` quoted and escaped for a log line or an error
 * message, at most about 64 bytes whatever `s` holds (util/utf8.h,
 * utf8_escape). The caller frees it. */
char *serial_show(const char *s, size_t n);

#endif
