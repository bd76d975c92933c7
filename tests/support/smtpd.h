/* A real SMTP server for integration tests, and the certificates it needs.
 *
 * smtpd_start runs tests/support/smtpd.py (aiosmtpd, Debian's
 * python3-aiosmtpd, under /usr/bin/python3) on 127.0.0.1 and a free port.
 * Accepted messages land in its directory as NNN.eml with NNN.json beside
 * them: the envelope and the message as Python's email package decodes it.
 * The certificate helpers run the openssl command. Like proc.h, every
 * function here fails the current test when the setup itself fails. */
#ifndef WSRELAY_TEST_SMTPD_H
#define WSRELAY_TEST_SMTPD_H

#include "proc.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct smtpd_options {
    const char *tls_cert; /* with tls_key: offer STARTTLS */
    const char *tls_key;
    bool require_starttls;     /* nothing but EHLO and STARTTLS before TLS */
    const char *auth;          /* "USER:PASS": AUTH required for MAIL; NULL: no AUTH */
    const char *auth_mech;     /* with auth: offer only this mechanism ("PLAIN", "LOGIN") */
    bool auth_optional;        /* with auth: mail without AUTH is accepted too */
    bool auth_echo;            /* with auth: a failed AUTH's reply quotes the password */
    const char *auth_echo_cut; /* with auth: ... quotes a part of it: "first" without its
                                  first 3 characters, "last" without its last 3, "middle" */
    int fail_first;            /* the first N DATA are answered with fail_reply */
    const char *fail_reply;    /* e.g. "451 4.3.0 try again" */
    const char *refuse;        /* RCPT TO this address gets 550 5.1.1 */
};

struct smtpd {
    struct proc proc;
    char *dir; /* the mail folder, inside the `dir` given to smtpd_start */
    int port;
};

/* Starts a server writing into DIR/mail; `o` may be NULL (plain SMTP, no
 * AUTH). Returns once it listens. Stop it with smtpd_stop. */
void smtpd_start(struct smtpd *s, const char *dir, const struct smtpd_options *o);
void smtpd_stop(struct smtpd *s);

/* How many messages were accepted, and how many refused by fail_first. */
size_t smtpd_count(const struct smtpd *s);
size_t smtpd_refused(const struct smtpd *s);

/* The i-th (from 0) accepted message as received, or refused one; NULL when
 * there is none. Caller frees. */
char *smtpd_raw(const struct smtpd *s, size_t i);
char *smtpd_refused_raw(const struct smtpd *s, size_t i);

/* The i-th accepted message as Python decoded it: mail_from, rcpt_tos, tls,
 * authenticated, content_type, subject, headers {lower-case name: [values]},
 * parts [{type, charset, cte, body}] (an image part: body null, and hex,
 * size, content_id, disposition, filename), defects. A new reference. */
struct json_object *smtpd_mail(const struct smtpd *s, size_t i);

/* The server's event log ("CONNECT", "EHLO tls=no", "AUTH PLAIN ok", "MAIL
 * ...", "RCPT ...", "DATA accepted", ...), "" when empty. Caller frees. */
char *smtpd_log(const struct smtpd *s);

/* A throwaway certificate authority: DIR/NAME.pem and DIR/NAME.key. */
struct test_ca {
    char *cert;
    char *key;
};
void test_ca_make(struct test_ca *ca, const char *dir, const char *name);
void test_ca_free(struct test_ca *ca);

/* A server certificate signed by `ca` for `san` (an openssl subjectAltName
 * value: "DNS:localhost,IP:127.0.0.1"): DIR/NAME.pem and DIR/NAME.key,
 * whose paths are returned in *cert and *key (caller frees). */
void test_cert_make(char **cert, char **key, const struct test_ca *ca, const char *dir,
                    const char *name, const char *san);

#endif
