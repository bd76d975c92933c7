/* Reads the unseen mails of an email receiver's ack: mailbox over IMAP
 * (libcurl), and marks the one taken \Seen. Every command is a custom
 * request on one connection; libcurl hands each line the server answers
 * to the header callback, literals included, so a FETCH answer is taken
 * apart here by its own literal counts, never by its lines: a mail's text
 * cannot pass for the server's words. */
#include "notify/imap.h"

#include "util/buf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <curl/curl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* What one answer may hold: a FETCH of three bounded parts, or a SEARCH of
 * a mailbox's unseen uids (a few MB for a million of them). */
#define IMAP_ANSWER_MAX (8 * 1024 * 1024)
/* A header field kept: In-Reply-To, References, From. */
#define IMAP_FIELD_MAX 4096
/* How deep a first text part is looked for: 1, 1.1, 1.1.1. */
#define IMAP_PART_DEPTH 3

struct imap_session {
    const struct email_ack_conf *a;
    CURL *curl;
    long long deadline_ms; /* monotonic */
    long timeout;
    struct buf head; /* every line the server answered to the last command */
    struct buf body; /* what libcurl gave as the answer (SEARCH's untagged lines) */
    char errbuf[CURL_ERROR_SIZE];
};

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t take(char *data, size_t size, size_t n, void *userdata)
{
    return buf_append(userdata, data, size * n) < 0 ? 0 : size * n;
}

void imap_open(struct imap_session **out, const struct email_ack_conf *a, long timeout)
{
    struct imap_session *s = xcalloc(1, sizeof *s);
    s->a = a;
    s->timeout = timeout;
    s->deadline_ms = monotonic_ms() + timeout * 1000;
    buf_init(&s->head, IMAP_ANSWER_MAX);
    buf_init(&s->body, IMAP_ANSWER_MAX);
    *out = s;
}

void imap_close(struct imap_session *s)
{
    if (!s)
        return;
    if (s->curl)
        curl_easy_cleanup(s->curl); /* sends LOGOUT on the open connection */
    buf_free(&s->head);
    buf_free(&s->body);
    free(s);
}

/* The URL without its mailbox, for messages: "imaps://host:port". */
static void server_of(char *out, size_t size, const char *url)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t len = strcspn(p, "/");
    snprintf(out, size, "imaps://%.*s", (int)(len < 300 ? len : 300), p);
}

/* Sends `command` in the mailbox (libcurl logs in and selects it first
 * when the connection is new) within what is left of the time. */
static int perform(struct imap_session *s, const char *step, const char *command, struct err *e)
{
    char server[320];
    server_of(server, sizeof server, s->a->imap);
    long long left = s->deadline_ms - monotonic_ms();
    if (left <= 0)
        return err_set(e, "%s: %s: out of time (%lds)", server, step, s->timeout);
    if (!s->curl) {
        s->curl = curl_easy_init();
        if (!s->curl)
            return err_set(e, "%s: cannot start libcurl", server);
        CURL *c = s->curl;
        curl_easy_setopt(c, CURLOPT_URL, s->a->imap);
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "imaps");
#else
        curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)CURLPROTO_IMAPS);
#endif
        curl_easy_setopt(c, CURLOPT_USERNAME, s->a->username);
        curl_easy_setopt(c, CURLOPT_PASSWORD, s->a->password);
        curl_easy_setopt(c, CURLOPT_USE_SSL, (long)CURLUSESSL_ALL);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        if (s->a->ca_file)
            curl_easy_setopt(c, CURLOPT_CAINFO, s->a->ca_file);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, take);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &s->head);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &s->body);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, s->errbuf);
    }
    buf_reset(&s->head);
    buf_reset(&s->body);
    s->errbuf[0] = '\0';
    curl_easy_setopt(s->curl, CURLOPT_CUSTOMREQUEST, command);
    curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
    curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)left);
    CURLcode cc = curl_easy_perform(s->curl);
    if (cc == CURLE_OK)
        return 0;
    if (cc == CURLE_LOGIN_DENIED)
        return err_set(e, "%s: login as %s: the server refused it", server, s->a->username);
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return err_set(e, "%s: %s: no answer within %lds", server, step, s->timeout);
    return err_set(e, "%s: %s: %s", server, step,
                   s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
}

/* ---- taking a FETCH answer apart ---- */

void imap_fetch_clear(struct imap_fetch *f)
{
    free(f->header);
    free(f->mime);
    free(f->text);
    memset(f, 0, sizeof *f);
}

/* A number at *p, within `end` (the answer is not a C string), of at
 * most 19 digits; false when none is there. */
static bool read_number(unsigned long long *out, const char **p, const char *end)
{
    const char *q = *p;
    unsigned long long n = 0;
    while (q < end && isdigit((unsigned char)*q) && q - *p < 19)
        n = n * 10 + (unsigned long long)(*q++ - '0');
    if (q == *p || (q < end && isdigit((unsigned char)*q)))
        return false;
    *out = n;
    *p = q;
    return true;
}

/* An nstring at *p (a literal {N}CRLF and N bytes, a quoted string or
 * NIL), copied into *out (NULL for NIL); false when it is not whole. */
static bool read_nstring(char **out, const char **p, const char *end)
{
    const char *q = *p;
    *out = NULL;
    if (end - q >= 3 && !strncasecmp(q, "NIL", 3)) {
        *p = q + 3;
        return true;
    }
    if (q < end && *q == '"') {
        struct buf b;
        buf_init(&b, 0);
        for (q++; q < end && *q != '"'; q++) {
            if (*q == '\\' && q + 1 < end)
                q++;
            buf_append(&b, q, 1);
        }
        if (q >= end) {
            buf_free(&b);
            return false;
        }
        *out = b.data ? buf_steal(&b) : xstrdup("");
        *p = q + 1;
        return true;
    }
    if (q >= end || *q != '{')
        return false;
    const char *stop = q + 1;
    unsigned long long n = 0;
    if (!read_number(&n, &stop, end) || end - stop < 3 || stop[0] != '}' || stop[1] != '\r' ||
        stop[2] != '\n' || n > (unsigned long long)(end - (stop + 3)))
        return false;
    *out = xstrndup(stop + 3, (size_t)n);
    *p = stop + 3 + n;
    return true;
}

/* Skips a value that is kept nowhere (a parenthesised list, a string, a
 * number, an atom) at *p; false when it is not whole. */
static bool skip_value(const char **p, const char *end)
{
    const char *q = *p;
    char *junk = NULL;
    if (q < end && (*q == '"' || *q == '{')) {
        bool ok = read_nstring(&junk, p, end);
        free(junk);
        return ok;
    }
    if (q < end && *q == '(') {
        q++;
        while (q < end && *q != ')') {
            if (*q == ' ') {
                q++;
                continue;
            }
            if (!skip_value(&q, end))
                return false;
        }
        if (q >= end)
            return false;
        *p = q + 1;
        return true;
    }
    while (q < end && *q != ' ' && *q != ')' && *q != '\r' && *q != '(')
        q++;
    if (q == *p)
        return false;
    *p = q;
    return true;
}

bool imap_parse_fetch(struct imap_fetch *out, const char *answer, size_t len)
{
    const char *end = answer + len, *p = answer;
    memset(out, 0, sizeof *out);
    for (;;) { /* the untagged FETCH line among the greeting, login and select ones */
        if (end - p > 2 && p[0] == '*' && p[1] == ' ') {
            const char *q = p + 2;
            while (q < end && isdigit((unsigned char)*q))
                q++;
            if (q > p + 2 && end - q >= 8 && !strncasecmp(q, " FETCH (", 8)) {
                p = q + 8;
                break;
            }
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        p = nl + 1;
    }
    while (p < end && *p != ')') {
        while (p < end && *p == ' ')
            p++;
        const char *name = p;
        int brackets = 0;
        while (p < end && (brackets || (*p != ' ' && *p != ')'))) {
            brackets += *p == '[';
            brackets -= *p == ']';
            p++;
        }
        size_t name_len = (size_t)(p - name);
        if (p >= end || *p != ' ')
            break;
        p++;
        char **into = NULL;
        if (name_len == 3 && !strncasecmp(name, "UID", 3)) {
            unsigned long long uid = 0;
            if (!read_number(&uid, &p, end) || uid > ULONG_MAX)
                break;
            out->uid = (unsigned long)uid;
            continue;
        }
        if (name_len > 17 && !strncasecmp(name, "BODY[HEADER.FIELDS", 18))
            into = &out->header;
        else if (name_len > 11 && !strncasecmp(name, "BODY[", 5) &&
                 !strncasecmp(name + name_len - 6, ".MIME]", 6))
            into = &out->mime;
        else if (name_len > 5 && !strncasecmp(name, "BODY[", 5))
            into = &out->text;
        if (into) {
            free(*into);
            if (!read_nstring(into, &p, end))
                break;
        } else if (!skip_value(&p, end)) {
            break;
        }
    }
    if (p >= end || *p != ')' || !out->uid) {
        imap_fetch_clear(out);
        return false;
    }
    return true;
}

/* ---- header fields ---- */

/* The field `name` of a header block, unfolded (each line break with the
 * blanks after it one space), at most IMAP_FIELD_MAX bytes; NULL when it
 * has none. */
static char *header_field(const char *header, const char *name)
{
    size_t nl = strlen(name);
    const char *p = header;
    while (p && *p) {
        if (!strncasecmp(p, name, nl) && p[nl] == ':') {
            struct buf b;
            buf_init(&b, IMAP_FIELD_MAX);
            const char *q = p + nl + 1;
            while (*q == ' ' || *q == '\t')
                q++;
            for (; *q; q++) {
                if (*q == '\r' || *q == '\n') {
                    const char *after = q + strspn(q, "\r\n");
                    if (*after != ' ' && *after != '\t')
                        break;
                    q = after + strspn(after, " \t") - 1;
                    buf_append(&b, " ", 1);
                    continue;
                }
                buf_append(&b, q, 1);
            }
            return b.data ? buf_steal(&b) : xstrdup("");
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return NULL;
}

/* Whether `field` (a Content-Type) starts with the media type `type`. */
static bool media_is(const char *field, const char *type)
{
    size_t n = strlen(type);
    return field && !strncasecmp(field, type, n) &&
           (field[n] == '\0' || field[n] == ';' || field[n] == ' ' || field[n] == '/');
}

char *imap_from_address(const char *field)
{
    struct buf b;
    buf_init(&b, 512);
    const char *angle = NULL, *angle_end = NULL;
    int depth = 0;
    bool ok = true, quoted = false;
    for (const char *p = field; *p && ok; p++) {
        if (*p == '"' && depth == 0) { /* a quoted display name: skipped whole */
            ok = !angle;               /* not after the <address> */
            quoted = true;
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (!*p) {
                ok = false; /* unbalanced: and the end of the field */
                break;
            }
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')' && depth > 0) {
            depth--;
            if (depth == 0 && !angle) /* a comment parts words: no address pieced around it */
                buf_append(&b, " ", 1);
        } else if (*p == '\\' && depth > 0 && p[1]) {
            p++;
        } else if (depth == 0 && (*p == ',' || *p == ';' || *p == ':')) {
            ok = false; /* a list or a group: more than one mailbox, or none */
        } else if (depth == 0 && *p == '<') {
            const char *close = strchr(p + 1, '>');
            ok = !angle && close;
            if (ok) {
                angle = p + 1;
                angle_end = close;
                p = close;
            }
        } else if (depth == 0 && !angle) {
            buf_append(&b, p, 1);
        } else if (depth == 0 && *p != ' ' && *p != '\t') {
            ok = false; /* words after the <address> */
        }
    }
    /* a quoted string is a display name, which goes with an <address>:
     * without one, the address would be pieced together around it */
    ok = ok && depth == 0 && (angle || !quoted);
    const char *addr = b.data ? b.data : "";
    size_t len = b.len;
    if (angle) {
        addr = angle;
        len = (size_t)(angle_end - angle);
    } else {
        while (len && (addr[len - 1] == ' ' || addr[len - 1] == '\t'))
            len--;
        size_t lead = strspn(addr, " \t");
        addr += lead;
        len -= lead;
    }
    /* an addr-spec of printable ASCII with one '@' between two non-empty
     * sides; a quoted local part is not taken */
    size_t ats = 0, at = 0;
    for (size_t i = 0; i < len && ok; i++) {
        unsigned char ch = (unsigned char)addr[i];
        ok = ch > 0x20 && ch < 0x7f && !strchr("\"(),:;<>[]\\", ch);
        if (ch == '@') {
            ats++;
            at = i;
        }
    }
    char *out = NULL;
    if (ok && ats == 1 && at > 0 && at + 1 < len && len <= 254) {
        out = xstrndup(addr, len);
        for (char *q = out; *q; q++)
            *q = (char)tolower((unsigned char)*q);
    }
    buf_free(&b);
    return out;
}

bool imap_next_id(char *out, size_t size, const char **next)
{
    const char *p = *next;
    while (p && (p = strchr(p, '<'))) {
        const char *close = strchr(p, '>');
        if (!close)
            break;
        size_t len = (size_t)(close - p + 1);
        const char *after = close + 1;
        if (len < size && memchr(p, '@', len) && !memchr(p + 1, '<', len - 1)) {
            memcpy(out, p, len);
            out[len] = '\0';
            *next = after;
            return true;
        }
        p = after;
    }
    *next = NULL;
    return false;
}

/* ---- decoding a text part ---- */

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static char *decode_qp(const char *s)
{
    struct buf b;
    buf_init(&b, 0);
    for (const char *p = s; *p; p++) {
        if (*p == '=' && (p[1] == '\r' || p[1] == '\n')) { /* a soft line break */
            p += p[1] == '\r' && p[2] == '\n' ? 2 : 1;
            continue;
        }
        int hi = *p == '=' ? hex_value(p[1]) : -1, lo = hi >= 0 ? hex_value(p[2]) : -1;
        if (lo >= 0) {
            char c = (char)(hi * 16 + lo);
            buf_append(&b, &c, 1);
            p += 2;
            continue;
        }
        buf_append(&b, p, 1);
    }
    return b.data ? buf_steal(&b) : xstrdup("");
}

static char *decode_base64(const char *s)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    struct buf b;
    buf_init(&b, 0);
    uint32_t acc = 0;
    int bits = 0;
    for (const char *p = s; *p && *p != '='; p++) {
        const char *at = strchr(alphabet, *p);
        if (!at || !*p)
            continue; /* line breaks and anything else */
        acc = (acc << 6) | (uint32_t)(at - alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            char c = (char)((acc >> bits) & 0xff);
            buf_append(&b, &c, 1);
        }
    }
    return b.data ? buf_steal(&b) : xstrdup("");
}

/* ---- the commands ---- */

/* Fetches mail `uid`: its header fields, and its first text part, looked
 * for in part 1 and, while that is a multipart, in its first part. -1
 * when the server fails (the session is done for), -2 when only this
 * mail's answer does not parse. */
static int fetch_mail(struct imap_session *s, unsigned long uid, struct imap_mail *out,
                      struct err *e)
{
    char section[16] = "1", command[256];
    struct imap_fetch f = {0};
    for (int depth = 0; depth < IMAP_PART_DEPTH; depth++) {
        snprintf(command, sizeof command,
                 "UID FETCH %lu (UID BODY.PEEK[HEADER.FIELDS (FROM IN-REPLY-TO REFERENCES)] "
                 "BODY.PEEK[%s.MIME] BODY.PEEK[%s]<0.%d>)",
                 uid, section, section, IMAP_TEXT_MAX);
        if (perform(s, "fetch", command, e) < 0)
            return -1;
        imap_fetch_clear(&f);
        if (!imap_parse_fetch(&f, s->head.data ? s->head.data : "", s->head.len) || f.uid != uid) {
            imap_fetch_clear(&f);
            err_set(e, "imap: mail %lu: an answer to FETCH that does not parse", uid);
            return -2;
        }
        char *type = f.mime ? header_field(f.mime, "Content-Type") : NULL;
        bool multipart = media_is(type, "multipart");
        bool plain = !type || media_is(type, "text/plain") || !*type;
        free(type);
        if (!multipart || depth + 1 == IMAP_PART_DEPTH) {
            char *cte = f.mime ? header_field(f.mime, "Content-Transfer-Encoding") : NULL;
            const char *raw = plain && !multipart && f.text ? f.text : "";
            out->text = media_is(cte, "quoted-printable") ? decode_qp(raw)
                        : media_is(cte, "base64")         ? decode_base64(raw)
                                                          : xstrdup(raw);
            free(cte);
            break;
        }
        strncat(section, ".1", sizeof section - strlen(section) - 1);
    }
    out->uid = uid;
    out->from = f.header ? header_field(f.header, "From") : NULL;
    out->in_reply_to = f.header ? header_field(f.header, "In-Reply-To") : NULL;
    out->references = f.header ? header_field(f.header, "References") : NULL;
    if (!out->text)
        out->text = xstrdup("");
    imap_fetch_clear(&f);
    return 0;
}

void imap_mails_free(struct imap_mail *mails, size_t n)
{
    for (size_t i = 0; mails && i < n; i++) {
        free(mails[i].from);
        free(mails[i].in_reply_to);
        free(mails[i].references);
        free(mails[i].text);
    }
    free(mails);
}

int imap_unseen(struct imap_session *s, struct imap_mail **out, size_t *n, struct err *e)
{
    *out = NULL;
    *n = 0;
    if (perform(s, "search", "UID SEARCH UNSEEN", e) < 0)
        return -1;
    unsigned long uids[IMAP_MAILS_MAX];
    size_t n_uids = 0, seen_total = 0;
    const char *p = s->body.data ? s->body.data : "";
    while ((p = strstr(p, "* SEARCH"))) { /* one line, or a few */
        p += 8;
        while (*p == ' ') {
            char *stop = NULL;
            unsigned long uid = strtoul(p + 1, &stop, 10);
            if (stop == p + 1)
                break;
            p = stop;
            /* keep the newest IMAP_MAILS_MAX: uids grow with arrival */
            if (n_uids == IMAP_MAILS_MAX)
                memmove(uids, uids + 1, (IMAP_MAILS_MAX - 1) * sizeof *uids);
            uids[n_uids < IMAP_MAILS_MAX ? n_uids++ : IMAP_MAILS_MAX - 1] = uid;
            seen_total++;
        }
    }
    if (seen_total > n_uids)
        log_info("imap: %zu unseen mails; reading the newest %zu", seen_total, n_uids);
    struct imap_mail *mails = n_uids ? xcalloc(n_uids, sizeof *mails) : NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n_uids; i++) {
        struct err why;
        int rc = fetch_mail(s, uids[i], &mails[kept], &why);
        if (rc == 0) {
            kept++;
        } else if (rc == -2) {
            log_info("%s: left as it is", why.msg);
        } else {
            imap_mails_free(mails, kept + 1);
            return err_set(e, "%s", why.msg);
        }
    }
    *out = mails;
    *n = kept;
    return 0;
}

int imap_mark_seen(struct imap_session *s, unsigned long uid, struct err *e)
{
    char command[64];
    snprintf(command, sizeof command, "UID STORE %lu +FLAGS.SILENT (\\Seen)", uid);
    return perform(s, "store", command, e);
}
