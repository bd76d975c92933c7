/* Mail messages as bytes: a complete RFC 5322 message with MIME parts,
 * made from plain values. Pure: no clock, no network, no SMTP library.
 *
 * What comes out is safe to hand to any SMTP client: CRLF line ends, 7-bit
 * only (text bodies quoted-printable, images base64, non-ASCII header text
 * as RFC 2047 encoded-words), lines of at most 78 characters (76 where
 * encoded-words, quoted-printable or base64 are involved), and no value can
 * add a header line: CR, LF and the other control characters are removed
 * from everything that reaches a header, addresses must parse, and an
 * image's content id must be of a plain form. */
#ifndef WSRELAY_MIME_H
#define WSRELAY_MIME_H

#include "util/err.h"

#include <stddef.h>

/* A mailbox taken apart. Both strings belong to the struct. */
struct mime_address {
    char *name; /* the display name, UTF-8, without quotes; "" when none */
    char *addr; /* the addr-spec, local@domain, ASCII */
};

/* Parses "local@domain" or "Display Name <local@domain>" (the name may be a
 * "quoted string"). The rules are strict on purpose: printable characters
 * only (no CR, LF, NUL or other control character), exactly one '@' in the
 * whole value, a dot-atom local part of at most 64 characters (no quoted
 * local parts), a domain of letters, digits and '-' labels, at most 254
 * characters in all, ASCII (the display name may be any UTF-8). On success
 * *out is filled (free with mime_address_clear); on failure returns -1 with
 * what is wrong in `e`, which does not quote the value, and *out is zeroed. */
int mime_address_parse(struct mime_address *out, const char *text, struct err *e);

void mime_address_clear(struct mime_address *a);

/* An image that the HTML part shows inline, as <img src="cid:CONTENT_ID">.
 * Everything is borrowed. */
struct mime_image {
    /* The id the HTML refers to, without the angle brackets: "chart-1@wsrelay".
     * Checked, never changed: id-left '@' id-right, each side letters,
     * digits, '-', '_' and single dots between them, at most 62 characters
     * in all (the Content-ID line stays within 76), and no two images of a
     * mail alike. It needs to be unique only within the mail. */
    const char *content_id;
    const char *content_type; /* "image/png" or "image/jpeg", nothing else */
    /* The name a client shows when it lists the image or saves it, or NULL
     * (or "") for none. Cleaned, never refused: letters, digits, '-', '_',
     * '.', '+' and spaces stay, any other byte or UTF-8 character becomes
     * one '_', and a name of more than 60 characters is cut, keeping its
     * extension. */
    const char *filename;
    const unsigned char *data; /* the image file's bytes, len >= 1 */
    size_t len;
};

/* Everything a message is made of. Strings and arrays are borrowed; only
 * `html`, `cc`, `in_reply_to` and `images` may be NULL (n_cc, n_images 0). */
struct mime_mail {
    const char *from;      /* an address as mime_address_parse reads it */
    const char *const *to; /* n_to >= 1 addresses */
    size_t n_to;
    const char *const *cc;
    size_t n_cc;
    const char *subject;     /* UTF-8 */
    const char *text;        /* UTF-8; "\n" or "\r\n" line ends */
    const char *html;        /* UTF-8, or NULL for a text-only message */
    long long date;          /* unixtime of the Date header */
    const char *message_id;  /* "<left@right>", as mime_message_id makes it */
    const char *in_reply_to; /* NULL, or the Message-ID this mail follows up:
                                written as In-Reply-To and References */
    /* n_images images for the HTML part to show (or NULL and 0). They are
     * checked even without `html`, then left out: a text-only message has
     * nothing to show them in, and it still goes out. */
    const struct mime_image *images;
    size_t n_images;
};

/* The whole message in *out (the caller frees it), ending with CRLF:
 * Date, From, To, Cc, Subject, Message-ID, [In-Reply-To, References],
 * Auto-Submitted: auto-generated, MIME-Version: 1.0, then one of
 *
 *   text/plain                         without html
 *
 *   multipart/alternative              with html
 *     text/plain
 *     text/html
 *
 *   multipart/alternative              with html and images
 *     text/plain
 *     multipart/related; type="text/html"
 *       text/html
 *       image/png (or image/jpeg), one part per image, in order
 *
 * Text bodies are charset=UTF-8, quoted-printable; bytes that are not
 * valid UTF-8 become U+FFFD. An image part is base64 in lines of 76
 * characters, with Content-ID: <CONTENT_ID> and Content-Disposition:
 * inline, the filename (when there is one) as its filename parameter and
 * as the name parameter of its Content-Type. Only display names and the
 * subject are encoded, never an addr-spec. The MIME boundaries are derived
 * from the content, so equal input gives equal bytes, and no boundary can
 * occur in a part. Fails (-1, *out NULL) when an address does not parse,
 * naming which ("to[1]: ..."), or when an image is refused, naming which
 * ("images[1]: ..."): a content_id or content_type that struct mime_image
 * does not allow, one content_id twice, no data, or more than 10 MiB of
 * images in all. */
int mime_compose(char **out, const struct mime_mail *m, struct err *e);

/* The Message-ID of the mail whose first event is (serial, kind, unixtime)
 * sent to `receiver`: "<wsrelay.RECEIVER.SERIAL.KIND.UNIXTIME@HOST>" for a
 * mail of one event, "…UNIXTIME+COUNT@HOST>" for a mail of `count` > 1. The
 * same arguments always give the same id, so a retried mail keeps its id,
 * while a batch that grew before its retry gets a new one (mail services
 * that drop repeated ids must not hide it). The id of a lone alarm's mail
 * can be computed again later, from the alarm alone, to thread a recovery
 * mail under it (In-Reply-To). In the
 * four parts, bytes other than letters, digits, '-' and '_' are written
 * "=XX" (so distinct values give distinct ids); in `host` anything but
 * letters, digits, '-' and '.' becomes '-' ("localhost" when empty or
 * NULL). The caller frees the result. */
char *mime_message_id(const char *receiver, const char *serial, const char *kind,
                      long long unixtime, size_t count, const char *host);

/* `unixtime` as an RFC 5322 date in UTC, "Wed, 18 Nov 2026 11:06:40 +0000",
 * in `out` (at least 32 bytes). */
void mime_date(char *out, size_t size, long long unixtime);

#endif
