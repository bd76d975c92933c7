/* A real IMAP server for integration tests: Debian's Dovecot
 * (dovecot-imapd), private to one test.
 *
 * imapd_start writes a configuration of its own into a new directory (its
 * base_dir, state, log, a passwd-file with one user and a Maildir there;
 * nothing of the system's Dovecot is read or touched), makes a throwaway
 * certificate authority and a certificate for 127.0.0.1, and runs
 * `dovecot -F -c CONF` listening for IMAP over TLS (imaps) on 127.0.0.1
 * and a free port. As root the login processes run as dovenull, the
 * internal ones as dovecot and the mailbox as nobody (Dovecot refuses
 * root for them); otherwise all of them as the user running the test.
 * A test puts mail in the mailbox as a delivery agent would: a file in
 * the Maildir's new/ directory. Like proc.h, every function here fails the
 * current test when the setup itself fails. */
#ifndef WSRELAY_TEST_IMAPD_H
#define WSRELAY_TEST_IMAPD_H

#include "proc.h"
#include "smtpd.h"

#include <stdbool.h>

struct imapd {
    struct proc proc;
    char *dir;     /* its directory (removed by imapd_stop) */
    char *maildir; /* the user's Maildir */
    char *ca_file; /* the certificate authority a client trusts (ca_file) */
    int port;
    /* private */
    struct test_ca ca;
    unsigned long delivered;
};

/* Starts Dovecot with one user, `user` with `password`, and an empty
 * INBOX. Returns once it accepts connections. Stop it with imapd_stop. */
void imapd_start(struct imapd *d, const char *user, const char *password);
void imapd_stop(struct imapd *d);

/* Delivers `message` (a whole mail, CRLF or LF line ends) into the INBOX
 * as new and unseen, as a delivery agent does (written in tmp/, renamed
 * into new/). Returns the mail's Maildir name (caller frees). */
char *imapd_deliver(struct imapd *d, const char *message);

/* Whether the mail of that name carries the \Seen flag now (its file in
 * cur/ has 'S' among its flags). */
bool imapd_seen(const struct imapd *d, const char *name);

/* Dovecot's log so far ("" when empty). Caller frees. */
char *imapd_log(const struct imapd *d);

#endif
