/* The mailbox of an email receiver's `ack:`, read over IMAP with libcurl:
 * its unseen mails, each as the few header fields that tell a reply and
 * its sender and the start of its first text part (fetched with PEEK, so
 * reading marks nothing), and the one mail taken marked \Seen. Which mail
 * acknowledges what is notify/email.c's; this module only talks to the
 * server and takes its answers apart. */
#ifndef WSRELAY_NOTIFY_IMAP_H
#define WSRELAY_NOTIFY_IMAP_H

#include "config.h"
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>

/* The most unseen mails one run reads (the newest): a mailbox flooded
 * with mail costs a run no more than this many fetches. */
#define IMAP_MAILS_MAX 50
/* How much of a mail's first text part is read: an ACK line is at its top. */
#define IMAP_TEXT_MAX 8192

/* One unseen mail, as far as acknowledgements need it. */
struct imap_mail {
    unsigned long uid;
    char *from;        /* the From: field, unfolded; NULL: none */
    char *in_reply_to; /* In-Reply-To:, unfolded; NULL: none */
    char *references;  /* References:, unfolded; NULL: none */
    char *text;        /* its first text/plain part, decoded (quoted-printable, base64), at
                          most IMAP_TEXT_MAX bytes of it; "" when none; not checked as UTF-8 */
};

void imap_mails_free(struct imap_mail *mails, size_t n);

struct imap_session;

/* Opens a session with the mailbox of `a`, everything it does bounded by
 * `timeout` seconds in all (the receiver's timeout). Nothing is sent
 * before the first call. *out belongs to the caller (imap_close). */
void imap_open(struct imap_session **out, const struct email_ack_conf *a, long timeout);

/* Logs out and frees. Accepts NULL. */
void imap_close(struct imap_session *s);

/* The unseen mails of the mailbox, oldest first, at most IMAP_MAILS_MAX
 * (the newest of them), into *out (*n of them; imap_mails_free). A mail
 * whose answer cannot be taken apart is left out (logged). -1 with the
 * reason in `e` (the server and the step, never the password) when the
 * login, the search or the time fails; *out is then NULL. */
int imap_unseen(struct imap_session *s, struct imap_mail **out, size_t *n, struct err *e);

/* Marks the mail `uid` \Seen. 0, or -1 with the reason in `e`. */
int imap_mark_seen(struct imap_session *s, unsigned long uid, struct err *e);

/* The parts of one FETCH answer that a mail is read from. */
struct imap_fetch {
    unsigned long uid;
    char *header; /* BODY[HEADER.FIELDS (...)]: the header fields asked for */
    char *mime;   /* BODY[SECTION.MIME]: the header of the part */
    char *text;   /* BODY[SECTION]<0>: the start of the part's body, as sent */
};

/* Takes apart the first "* N FETCH (...)" among the `len` bytes of
 * `answer` (every line the server sent for one command: libcurl's header
 * data), by its own literal counts: text inside a literal never ends it
 * or passes for another answer. Fills *out (imap_fetch_clear) and returns
 * true; false (and *out zeroed) when there is none, it is not whole or
 * it has no UID. */
bool imap_parse_fetch(struct imap_fetch *out, const char *answer, size_t len);
void imap_fetch_clear(struct imap_fetch *f);

/* The address of a From: field, lower case, or NULL when the field does
 * not name exactly one mailbox: "Ann <ann@lab.example>" and
 * "ann@lab.example (Ann)" give "ann@lab.example"; a display name is
 * skipped whatever it holds ("\"boss@lab.example\" <eve@evil.example>"
 * gives eve's), and a list, a group or an address without '@' gives NULL.
 * The caller frees it. */
char *imap_from_address(const char *field);

/* The msg-ids ("<left@right>") of an In-Reply-To: or References: field,
 * one after the other: *next is where the search goes on (start it at the
 * field). Returns the next one, copied into `out` (`size` bytes; a longer
 * one is skipped), or false when there is none. */
bool imap_next_id(char *out, size_t size, const char **next);

#endif
