/* An SMTP server that misbehaves on purpose (tests/support/brokensmtp.py,
 * standard Python only) on 127.0.0.1 and a free port: it drips a reply
 * that never ends, closes the connection early, or refuses. Like proc.h,
 * setup failures fail the current test. */
#ifndef WSRELAY_TEST_BROKENSMTP_H
#define WSRELAY_TEST_BROKENSMTP_H

#include "proc.h"

struct brokensmtp {
    struct proc proc;
    char *dir; /* its log is DIR/log */
    int port;
};

/* Starts the server in `mode` ("drip-greeting", "drip-ehlo", "drip-body",
 * "drip-quit", "close", "close-data", "refuse", "refuse-rcpt"; brokensmtp.py says what
 * each does), dripping one line every `drip_ms` in the drip modes, and
 * writing into DIR/brokensmtp. It exits by itself after `lifetime_s`
 * seconds. Returns once it listens; stop it with brokensmtp_stop. */
void brokensmtp_start(struct brokensmtp *b, const char *dir, const char *mode, int drip_ms,
                      int lifetime_s);
void brokensmtp_stop(struct brokensmtp *b);

/* What the server saw: "CONNECT", "EHLO", "DRIP EHLO", "CLOSE", ... one a
 * line; "" when nothing yet. Caller frees. */
char *brokensmtp_log(const struct brokensmtp *b);

#endif
