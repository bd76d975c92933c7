/* The SMTP session of the email receiver: hands one composed mail to the
 * receiver's server with libESMTP (STARTTLS with our own OpenSSL context,
 * AUTH PLAIN or LOGIN when a username is configured), the whole session
 * within the receiver's `timeout`, in a child process. It owns the talk
 * with the server and the verdict on it; what the mail says, and to whom,
 * is notify/email.c's. */
#ifndef WSRELAY_NOTIFY_SMTP_H
#define WSRELAY_NOTIFY_SMTP_H

#include "config.h"
#include "util/err.h"

#include <stddef.h>

/* One mail to hand over: `message` (the whole mail as mime.h composes it)
 * from `sender` to the `n` addr-specs in `rcpts`, over the server, TLS
 * and login settings of `r`'s email block. Nothing is copied: all of it
 * is borrowed for the call. */
struct smtp_job {
    const struct receiver_conf *r;
    const char *sender;
    char *const *rcpts;
    size_t n;
    const char *message;
};

/* Sends the mail of `j` within the receiver's `timeout`, in a child
 * process (see the top of notify/smtp.c): 0 when the server accepted it
 * for every recipient (or had accepted it when the time ran out), -1
 * otherwise with the reason in `e`, naming the server ("host:port") and
 * the step the session was in. No secret reaches `e`: the server's replies
 * are quoted with the receiver's secrets taken out. */
int smtp_send(const struct smtp_job *j, struct err *e);

#endif
