/* Secrets taken out of text that came back from outside.
 *
 * A far end may echo what it was sent: a webhook URL, a token from it, a
 * header value, a password, or a part of one. A `struct redact` is a set of
 * secrets, and redact_text replaces every occurrence of any of them, and
 * every run of REDACT_RUN_MIN bytes of a password or token, by "[redacted]",
 * whatever form it comes back in:
 *   - as it is, or percent-decoded when it has %XX escapes ("a%2Fb" as
 *     "a/b");
 *   - escaped by the far end, up to three levels deep, in any mix: JSON ("\/",
 *     "\uXXXX", "\\", "\""), percent-encoding ("%2F" or "%2f") and HTML
 *     ("&#47;", "&#x2F;", "&amp;", "&quot;", "&lt;", "&gt;", "&apos;");
 *   - cut short at the very end of the text by a length cap, when at least
 *     REDACT_TAIL_MIN bytes of it are left.
 * Overlapping and adjacent occurrences become one "[redacted]".
 *
 * What counts as a secret: a value added with redact_add when it has at
 * least REDACT_MIN bytes (shorter ones would match ordinary text), and the
 * parts of URLs and header values that could be tokens (redact_add_url,
 * redact_add_header). Of a value added with redact_add and of each such part,
 * any REDACT_RUN_MIN bytes in a row count as the secret itself: "…word is
 * 7uXq2mPz9…", a password quoted without its first or last characters,
 * leaks most of it. A whole URL or header value is looked for whole only,
 * so that its host and scheme words ("hooks.slack.com", "Bearer") stay.
 *
 * Time: redact_text reads the text once per level of escapes for all the
 * runs together (a hash set), plus one search per secret looked for whole;
 * a 64 KiB text full of escapes against 20 passwords and 20 URLs takes
 * about 15 ms on one core of a small server. */
#ifndef WSRELAY_REDACT_H
#define WSRELAY_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACT_MIN 4      /* bytes of the shortest secret looked for */
#define REDACT_PART_MIN 6 /* bytes of the shortest part of a URL or header looked for alone */
#define REDACT_TAIL_MIN 8 /* bytes of a secret cut at the end of a text that are caught */
#define REDACT_RUN_MIN 8  /* bytes in a row of a password or token that are caught anywhere */

struct redact;

/* An empty set; free it with redact_free. */
struct redact *redact_new(void);

void redact_free(struct redact *r);

/* Adds `secret` (copied), and each run of REDACT_RUN_MIN bytes of it. NULL,
 * or shorter than REDACT_MIN bytes: nothing. */
void redact_add(struct redact *r, const char *secret);

/* Adds a URL: whole (unless it is only "scheme://host[:port][/]", which
 * messages show); what follows the host (path, query and fragment
 * together, the path alone and the query alone); the userinfo, its
 * password and the userinfo in base64 (as "Authorization: Basic" sends it);
 * and every path segment, query name and value, fragment and user name that
 * could be a token (redact_is_token) and is not plainly a date
 * ("2016-06-01"), a path of words (Teams' "sp=%2Ftriggers%2Fmanual%2Frun")
 * or a mail address ("alerts%40example.com"). The password, the userinfo in
 * base64 and the token parts count with their runs of REDACT_RUN_MIN bytes;
 * the rest (the userinfo, a user name that is an address) whole only, so
 * that "example." or "triggers" stay in messages. Text that is not a URL is
 * added as with redact_add. NULL: nothing. */
void redact_add_url(struct redact *r, const char *url);

/* Adds a header value: whole; what follows its first word when that word
 * is an authentication scheme ("Bearer TOKEN", "Basic BLOB": TOKEN and
 * BLOB); and every blank-separated word that could be a token. TOKEN, BLOB
 * and the token words count with their runs of REDACT_RUN_MIN bytes. NULL:
 * nothing. */
void redact_add_header(struct redact *r, const char *value);

/* True when `part` (a path segment, a query value, a word of a header)
 * could be a token, and so is looked for on its own: at least
 * REDACT_PART_MIN bytes and not a word. A word is ASCII letters, all lower
 * case or with only the first one a capital, possibly with '-', '_' or '.'
 * between, at most 20 bytes: "services", "workflows", "api-version",
 * "Bearer". Anything with a digit, another character or mixed case counts
 * as a token: "T0AB12CD", "2016-06-01", "XkqPzRtwLm", and so does a lower
 * case string longer than 20 bytes. */
bool redact_is_token(const char *part);

/* A copy of `text` with every occurrence of every secret of `r`, in every
 * form above, replaced by "[redacted]". Caller frees. `r` may be NULL or
 * empty (then a plain copy). */
char *redact_text(const struct redact *r, const char *text);

/* `data` (`len` bytes) in base64 with padding, as a new string the caller
 * frees: the form in which SMTP AUTH and HTTP Basic send a secret. */
char *redact_base64(const void *data, size_t len);

#endif
