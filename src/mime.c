/* Composing mail: addresses, header lines with RFC 2047 encoded-words,
 * quoted-printable bodies, base64 images and the multipart frame. Nothing
 * here reads the clock or the environment, so equal input gives equal
 * bytes. */
#include "mime.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEADER_LINE_MAX 76 /* RFC 2047's limit for lines with encoded-words; used for all */
#define WORD_MAX 75        /* one encoded-word, "=?UTF-8?B?...?=" */
#define WORD_OVERHEAD 12   /* the "=?UTF-8?B?" and "?=" around the base64 */
#define WORD_MIN 20        /* room for one character of up to 4 bytes */
#define TOKEN_MAX 70       /* a longer plain word is encoded (encoded-words can be folded) */
#define QP_LINE_MAX 76     /* quoted-printable, counting the '=' of a soft break */
#define LOCAL_MAX 64
#define ADDR_MAX 254
#define LABEL_MAX 63
#define B64_LINE_MAX 76            /* base64 bodies (RFC 2045 6.8) */
#define CID_MAX 62                 /* "Content-ID: <" and ">" make the line 76 */
#define IMAGE_NAME_MAX 60          /* a filename parameter on a line of its own stays within 76 */
#define IMAGE_EXT_MAX 10           /* the longest extension that a cut filename keeps */
#define IMAGES_MAX (10u << 20)     /* bytes of images in one mail (a chart is some 40 KB) */
#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/* ---- UTF-8 ---- */

/* The length (1 to 4) of the valid UTF-8 sequence at `p`, or 0 when the
 * bytes there are none: a stray continuation byte, an overlong form, a
 * surrogate, a code point beyond U+10FFFF, or a sequence cut short. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        n = 2, cp = c & 0x1Fu, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, cp = c & 0x0Fu, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, cp = c & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static bool is_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = utf8_len(p);
        if (!n || p + n > end)
            return false;
        p += n;
    }
    return true;
}

/* A copy of `s` that is valid UTF-8 (bad bytes become U+FFFD). For a
 * header value (`header`), control characters are dropped as well, a tab
 * becoming a space: no value can end a header line or start another. */
static char *clean_text(const char *s, bool header)
{
    struct buf b;
    buf_init(&b, 0);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t n = utf8_len(p);
        if (!n) {
            buf_puts(&b, REPLACEMENT);
            p++;
        } else if (header && n == 1 && (*p < 0x20 || *p == 0x7f)) {
            if (*p == '\t')
                buf_puts(&b, " ");
            p++;
        } else {
            buf_append(&b, p, n);
            p += n;
        }
    }
    return buf_steal(&b);
}

static bool is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

/* ---- addresses ---- */

static bool is_alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* RFC 5322 atext: what a dot-atom is made of. */
static bool is_atext(char c)
{
    return is_alnum(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

static bool is_wsp(char c)
{
    return c == ' ' || c == '\t';
}

/* local@domain, with exactly one '@' already known to be there. */
static int check_addr_spec(const char *a, size_t len, struct err *e)
{
    if (len > ADDR_MAX)
        return err_set(e, "the address is longer than %d characters", ADDR_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)a[i] >= 0x80)
            return err_set(e, "the address must be ASCII (only the display name may use "
                              "other characters)");
    const char *at = memchr(a, '@', len);
    size_t local = (size_t)(at - a), domain = len - local - 1;
    if (local == 0 || local > LOCAL_MAX)
        return err_set(e, "expected 1 to %d characters before the '@'", LOCAL_MAX);
    for (size_t i = 0; i < local; i++) {
        bool dot_ok = a[i] == '.' && i > 0 && i + 1 < local && a[i + 1] != '.';
        if (!is_atext(a[i]) && !dot_ok)
            return err_set(e, "the part before the '@' may hold letters, digits, single dots "
                              "inside and !#$%%&'*+-/=?^_`{|}~ (no quotes or spaces)");
    }
    const char *d = at + 1;
    size_t label = 0;
    for (size_t i = 0; i <= domain; i++) {
        char c = i < domain ? d[i] : '.';
        if (c == '.') {
            if (label == 0 || label > LABEL_MAX || d[i - 1] == '-' || d[i - label] == '-')
                return err_set(e, "expected a domain after the '@': labels of letters, digits "
                                  "and '-' separated by dots");
            label = 0;
        } else if (is_alnum(c) || c == '-') {
            label++;
        } else {
            return err_set(e, "expected a domain after the '@': labels of letters, digits and "
                              "'-' separated by dots");
        }
    }
    return 0;
}

/* The display name between `start` and `end` (trimmed): a "quoted string"
 * is unquoted; an unquoted name must not hold quotes or angle brackets. */
static int parse_name(char **out, const char *start, const char *end, struct err *e)
{
    while (start < end && is_wsp(*start))
        start++;
    while (end > start && is_wsp(end[-1]))
        end--;
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "");
    if (start < end && *start == '"') {
        if (end - start < 2 || end[-1] != '"') {
            buf_free(&b);
            return err_set(e, "the display name's double quotes are not balanced");
        }
        for (const char *p = start + 1; p < end - 1; p++) {
            if (*p == '\\' && p + 1 < end - 1)
                p++;
            else if (*p == '"' || *p == '\\') {
                buf_free(&b);
                return err_set(e, "the display name's double quotes are not balanced");
            }
            buf_append(&b, p, 1);
        }
    } else {
        for (const char *p = start; p < end; p++)
            if (*p == '"' || *p == '<' || *p == '>') {
                buf_free(&b);
                return err_set(e, "a display name holding '\"', '<' or '>' must be written in "
                                  "double quotes");
            }
        buf_append(&b, start, (size_t)(end - start));
    }
    if (!is_utf8(b.data, b.len)) {
        buf_free(&b);
        return err_set(e, "the display name is not valid UTF-8");
    }
    *out = buf_steal(&b);
    return 0;
}

int mime_address_parse(struct mime_address *out, const char *text, struct err *e)
{
    int rc = -1;
    char *name = NULL;
    memset(out, 0, sizeof *out);
    size_t ats = 0;
    for (const char *p = text; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            err_set(e, "an address must not contain a line break or other control character");
            goto out;
        }
        ats += *p == '@';
    }
    if (ats != 1) {
        err_set(e, ats ? "expected exactly one '@' (a display name must not contain one)"
                       : "expected an address such as name@example.org or "
                         "Display Name <name@example.org>");
        goto out;
    }
    const char *start = text, *end = text + strlen(text);
    while (start < end && is_wsp(*start))
        start++;
    while (end > start && is_wsp(end[-1]))
        end--;
    const char *addr = start, *addr_end = end;
    if (end[-1] == '>') {
        const char *lt = end - 1;
        while (lt > start && *lt != '<')
            lt--;
        if (*lt != '<') {
            err_set(e, "a '>' without a '<' before it");
            goto out;
        }
        if (parse_name(&name, start, lt, e) < 0)
            goto out;
        addr = lt + 1;
        addr_end = end - 1;
    }
    for (const char *p = addr; p < addr_end; p++)
        if (is_wsp(*p) || strchr("<>\"(),:;[]\\", *p)) {
            err_set(e, "expected name@example.org or Display Name <name@example.org>");
            goto out;
        }
    if (!memchr(addr, '@', (size_t)(addr_end - addr))) {
        err_set(e, "expected the address inside <...> to hold the '@'");
        goto out;
    }
    if (check_addr_spec(addr, (size_t)(addr_end - addr), e) < 0)
        goto out;
    out->name = name ? name : xstrdup("");
    out->addr = xstrndup(addr, (size_t)(addr_end - addr));
    name = NULL;
    rc = 0;
out:
    free(name);
    return rc;
}

void mime_address_clear(struct mime_address *a)
{
    if (!a)
        return;
    free(a->name);
    free(a->addr);
    a->name = a->addr = NULL;
}

/* ---- header lines ---- */

/* A header line being written: tokens separated by spaces, folded (CRLF
 * and a space) before a token that would pass HEADER_LINE_MAX. */
struct hdr {
    struct buf *b;
    size_t col;
    bool fresh; /* nothing but the name, or nothing at all, on this line yet */
};

static void hdr_begin(struct hdr *h, struct buf *b, const char *name)
{
    h->b = b;
    buf_printf(b, "%s:", name);
    h->col = strlen(name) + 1;
    h->fresh = true;
}

static void hdr_fold(struct hdr *h)
{
    buf_puts(h->b, "\r\n");
    h->col = 0;
    h->fresh = true;
}

static void hdr_token(struct hdr *h, const char *tok, size_t len)
{
    if (!h->fresh && h->col + 1 + len > HEADER_LINE_MAX)
        hdr_fold(h);
    buf_puts(h->b, " ");
    buf_append(h->b, tok, len);
    h->col += 1 + len;
    h->fresh = false;
}

static void hdr_end(struct hdr *h)
{
    buf_puts(h->b, "\r\n");
}

static void base64(struct buf *b, const unsigned char *p, size_t len)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        char out[4] = {abc[v >> 18], abc[(v >> 12) & 63], i + 1 < len ? abc[(v >> 6) & 63] : '=',
                       i + 2 < len ? abc[v & 63] : '='};
        buf_append(b, out, 4);
    }
}

/* Base64 of a body, in lines of B64_LINE_MAX characters separated by
 * CRLF; the last line has no line end of its own. */
static void base64_lines(struct buf *b, const unsigned char *p, size_t len)
{
    const size_t chunk = B64_LINE_MAX / 4 * 3;
    for (size_t i = 0; i < len; i += chunk) {
        if (i)
            buf_puts(b, "\r\n");
        base64(b, p + i, len - i < chunk ? len - i : chunk);
    }
}

/* `s` (valid UTF-8) as "=?UTF-8?B?...?=" words of at most WORD_MAX
 * characters, each holding whole characters only, so that every word
 * decodes to valid UTF-8 by itself. The spaces between adjacent words
 * vanish on decoding (RFC 2047 6.2), so the text comes back exactly. */
static void hdr_encoded(struct hdr *h, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    struct buf word;
    buf_init(&word, 0);
    while (*p) {
        if (!h->fresh && h->col + 1 + WORD_MIN > HEADER_LINE_MAX)
            hdr_fold(h);
        size_t room = HEADER_LINE_MAX - h->col - 1;
        if (room > WORD_MAX)
            room = WORD_MAX;
        size_t max_bytes = (room - WORD_OVERHEAD) / 4 * 3;
        size_t take = 0;
        while (p[take]) {
            size_t n = utf8_len(p + take);
            if (take + n > max_bytes)
                break;
            take += n;
        }
        buf_reset(&word);
        buf_puts(&word, "=?UTF-8?B?");
        base64(&word, p, take);
        buf_puts(&word, "?=");
        hdr_token(h, word.data, word.len);
        p += take;
    }
    buf_free(&word);
}

/* True when `s` cannot be written as plain words: non-ASCII, something
 * that would read as an encoded-word, or a word too long to fold. */
static bool needs_encoding(const char *s)
{
    if (!is_ascii(s) || strstr(s, "=?"))
        return true;
    size_t run = 0;
    for (; *s; s++) {
        run = *s == ' ' ? 0 : run + 1;
        if (run > TOKEN_MAX)
            return true;
    }
    return false;
}

/* Plain ASCII text as words, one space between them. */
static void hdr_words(struct hdr *h, const char *s)
{
    while (*s) {
        while (*s == ' ')
            s++;
        size_t n = strcspn(s, " ");
        if (n)
            hdr_token(h, s, n);
        s += n;
    }
}

/* A display name: plain words when it is made of atext and spaces, a
 * quoted string when it holds other ASCII, encoded-words otherwise. */
static void hdr_name(struct hdr *h, const char *name)
{
    bool atoms = true;
    for (const char *p = name; *p; p++)
        atoms &= is_atext(*p) || *p == ' ';
    if (needs_encoding(name) || strlen(name) + 2 > TOKEN_MAX) {
        hdr_encoded(h, name);
    } else if (atoms) {
        hdr_words(h, name);
    } else {
        struct buf q;
        buf_init(&q, 0);
        buf_puts(&q, "\"");
        for (const char *p = name; *p; p++) {
            if (*p == '"' || *p == '\\')
                buf_puts(&q, "\\");
            buf_append(&q, p, 1);
        }
        buf_puts(&q, "\"");
        hdr_token(h, q.data, q.len);
        buf_free(&q);
    }
}

/* "Name: mailbox, mailbox"; `what` names the field in errors: "from", or
 * "to" and "cc" with the index. */
static int hdr_addresses(struct buf *b, const char *name, const char *what, const char *const *list,
                         size_t n, struct err *e)
{
    struct hdr h;
    hdr_begin(&h, b, name);
    for (size_t i = 0; i < n; i++) {
        struct mime_address a;
        if (mime_address_parse(&a, list[i], e) < 0)
            return strcmp(what, "from") ? err_prefix(e, "%s[%zu]", what, i)
                                        : err_prefix(e, "%s", what);
        if (*a.name)
            hdr_name(&h, a.name);
        char *tok = xasprintf(*a.name ? "<%s>%s" : "%s%s", a.addr, i + 1 < n ? "," : "");
        hdr_token(&h, tok, strlen(tok));
        free(tok);
        mime_address_clear(&a);
    }
    hdr_end(&h);
    return 0;
}

/* An id header: the value stripped of anything that is not printable
 * ASCII, so that it stays one token on one line. */
static void hdr_id(struct buf *b, const char *name, const char *id)
{
    buf_printf(b, "%s: ", name);
    for (const char *p = id; *p; p++)
        if (*p > ' ' && *p < 0x7f)
            buf_append(b, p, 1);
    buf_puts(b, "\r\n");
}

/* ---- bodies ---- */

static bool at_line_end(const unsigned char *p)
{
    return *p == '\0' || *p == '\n' || (p[0] == '\r' && p[1] == '\n');
}

/* Quoted-printable (RFC 2045 6.7) of `text` (valid UTF-8). Line breaks,
 * "\n" or "\r\n", become CRLF; other lines longer than QP_LINE_MAX get soft
 * breaks, never inside a character's bytes (so each line is valid UTF-8
 * once decoded). Spaces and tabs before a line end, '=', a lone CR,
 * other control bytes and all non-ASCII are encoded; so are a '.' or the
 * 'F' of "From " that would start a line, which some mail software alters. */
static void qp_encode(struct buf *b, const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t col = 0;
    while (*p) {
        if (*p == '\n' || (p[0] == '\r' && p[1] == '\n')) {
            buf_puts(b, "\r\n");
            col = 0;
            p += *p == '\r' ? 2 : 1;
            continue;
        }
        size_t n = utf8_len(p);
        if (!n)
            n = 1; /* not reached for cleaned text */
        if (col + 3 * n > QP_LINE_MAX - 1) {
            buf_puts(b, "=\r\n");
            col = 0;
        }
        bool last = at_line_end(p + n);
        for (size_t k = 0; k < n; k++) {
            unsigned char c = p[k];
            bool literal = (c > ' ' && c < 0x7f && c != '=') || ((c == ' ' || c == '\t') && !last);
            if (col == 0 && (c == '.' || (c == 'F' && !strncmp((const char *)p, "From ", 5))))
                literal = false;
            if (literal) {
                buf_append(b, &c, 1);
                col++;
            } else {
                buf_printf(b, "=%02X", c);
                col += 3;
            }
        }
        p += n;
    }
}

/* FNV-1a, for a boundary that depends on the content only. */
static uint64_t fnv1a_bytes(uint64_t h, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    return s ? fnv1a_bytes(h, (const unsigned char *)s, strlen(s)) : h;
}

static void part_headers(struct buf *b, const char *type)
{
    buf_printf(b,
               "Content-Type: %s; charset=UTF-8\r\n"
               "Content-Transfer-Encoding: quoted-printable\r\n",
               type);
}

/* ---- images ---- */

static bool is_id_char(char c)
{
    return is_alnum(c) || c == '-' || c == '_';
}

/* One side of a content id: id characters with single dots between them,
 * a dot-atom that a cid: URL and an HTML attribute take as it is. */
static bool id_side_ok(const char *s, size_t len)
{
    if (len == 0 || s[0] == '.' || s[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '.' ? s[i + 1] == '.' : !is_id_char(s[i]))
            return false;
    return true;
}

static int check_image(const struct mime_image *im, struct err *e)
{
    const char *id = im->content_id ? im->content_id : "";
    const char *at = strchr(id, '@');
    size_t len = strlen(id);
    if (len > CID_MAX)
        return err_set(e, "the content_id is longer than %d characters", CID_MAX);
    if (!at || strchr(at + 1, '@') || !id_side_ok(id, (size_t)(at - id)) ||
        !id_side_ok(at + 1, len - (size_t)(at - id) - 1))
        return err_set(e, "expected a content_id such as chart-1@wsrelay, without angle "
                          "brackets: letters, digits, '-', '_' and single dots inside, on both "
                          "sides of one '@'");
    if (!im->content_type ||
        (strcmp(im->content_type, "image/png") && strcmp(im->content_type, "image/jpeg")))
        return err_set(e, "the content_type must be image/png or image/jpeg");
    if (!im->data || im->len == 0)
        return err_set(e, "the image has no data");
    return 0;
}

/* Each image checked (check_image), no content id twice, at most
 * IMAGES_MAX bytes in all. */
static int check_images(const struct mime_mail *m, struct err *e)
{
    size_t total = 0;
    for (size_t i = 0; i < m->n_images; i++) {
        const struct mime_image *im = &m->images[i];
        if (check_image(im, e) < 0)
            return err_prefix(e, "images[%zu]", i);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(m->images[j].content_id, im->content_id))
                return err_set(e, "images[%zu]: the content_id is the same as images[%zu]'s", i, j);
        if (im->len > IMAGES_MAX - total)
            return err_set(e,
                           "images[%zu]: the images come to more than the %u MiB a mail may "
                           "carry",
                           i, IMAGES_MAX >> 20);
        total += im->len;
    }
    return 0;
}

/* The filename as mime.h promises it: letters, digits and "-_.+ " kept,
 * any other byte or UTF-8 character one '_', at most IMAGE_NAME_MAX
 * characters with the extension kept; NULL for none. The result has no
 * quote, backslash or control character, so it goes between double
 * quotes as it is. Caller frees. */
static char *clean_filename(const char *s)
{
    if (!s || !*s)
        return NULL;
    struct buf b;
    buf_init(&b, 0);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_len(p);
        bool keep = n == 1 && (is_alnum((char)*p) || strchr("-_.+ ", *p));
        buf_append(&b, keep ? (const char *)p : "_", 1);
        p += n ? n : 1;
    }
    size_t len = b.len;
    char *name = buf_steal(&b);
    if (len > IMAGE_NAME_MAX) {
        const char *dot = strrchr(name, '.');
        size_t ext = dot && dot > name ? len - (size_t)(dot - name) : 0;
        if (ext > IMAGE_EXT_MAX)
            ext = 0;
        memmove(name + IMAGE_NAME_MAX - ext, name + len - ext, ext);
        name[IMAGE_NAME_MAX] = '\0';
    }
    return name;
}

/* One image's part, from the delimiter before it to its last base64 line. */
static void image_part(struct buf *b, const char *boundary, const struct mime_image *im)
{
    char *name = clean_filename(im->filename);
    struct hdr h;
    buf_printf(b, "\r\n--%s\r\n", boundary);
    hdr_begin(&h, b, "Content-Type");
    if (name) {
        char *type = xasprintf("%s;", im->content_type);
        char *param = xasprintf("name=\"%s\"", name);
        hdr_token(&h, type, strlen(type));
        hdr_token(&h, param, strlen(param));
        free(type);
        free(param);
    } else {
        hdr_token(&h, im->content_type, strlen(im->content_type));
    }
    hdr_end(&h);
    buf_printf(b,
               "Content-Transfer-Encoding: base64\r\n"
               "Content-ID: <%s>\r\n",
               im->content_id);
    hdr_begin(&h, b, "Content-Disposition");
    if (name) {
        char *param = xasprintf("filename=\"%s\"", name);
        hdr_token(&h, "inline;", 7);
        hdr_token(&h, param, strlen(param));
        free(param);
    } else {
        hdr_token(&h, "inline", 6);
    }
    hdr_end(&h);
    buf_puts(b, "\r\n");
    base64_lines(b, im->data, im->len);
    free(name);
}

/* ---- the message ---- */

static const char *const wdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void mime_date(char *out, size_t size, long long unixtime)
{
    time_t t = (time_t)unixtime;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        t = 0;
        gmtime_r(&t, &tm);
    }
    snprintf(out, size, "%s, %d %s %04d %02d:%02d:%02d +0000", wdays[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int mime_compose(char **out, const struct mime_mail *m, struct err *e)
{
    int rc = -1;
    char *subject = clean_text(m->subject, true);
    char *text = clean_text(m->text, false);
    char *html = m->html ? clean_text(m->html, false) : NULL;
    char date[64];
    struct buf b;
    struct hdr h;
    buf_init(&b, 0);
    *out = NULL;

    mime_date(date, sizeof date, m->date);
    buf_printf(&b, "Date: %s\r\n", date);
    const char *from[] = {m->from};
    if (hdr_addresses(&b, "From", "from", from, 1, e) < 0 ||
        hdr_addresses(&b, "To", "to", m->to, m->n_to, e) < 0 ||
        (m->n_cc && hdr_addresses(&b, "Cc", "cc", m->cc, m->n_cc, e) < 0) || check_images(m, e) < 0)
        goto out;
    hdr_begin(&h, &b, "Subject");
    if (needs_encoding(subject))
        hdr_encoded(&h, subject);
    else
        hdr_words(&h, subject);
    hdr_end(&h);
    hdr_id(&b, "Message-ID", m->message_id);
    if (m->in_reply_to) {
        hdr_id(&b, "In-Reply-To", m->in_reply_to);
        hdr_id(&b, "References", m->in_reply_to);
    }
    /* RFC 3834: vacation responders and the like must not answer. */
    buf_puts(&b, "Auto-Submitted: auto-generated\r\nMIME-Version: 1.0\r\n");
    if (!html) {
        part_headers(&b, "text/plain");
        buf_puts(&b, "\r\n");
        qp_encode(&b, text);
        if (b.len < 2 || memcmp(b.data + b.len - 2, "\r\n", 2))
            buf_puts(&b, "\r\n");
    } else {
        /* No part can contain a boundary: quoted-printable writes every
         * '=' as "=3D" and base64 has no '_' (and '=' only as padding at
         * the end), so no body line can contain "=_", and every header
         * line of a part starts with a name. The related boundary has
         * "rel_" where the alternative's has a hex digit, so neither
         * begins the other (RFC 2046 5.1.1). */
        uint64_t hash = 0xcbf29ce484222325ULL;
        hash = fnv1a(fnv1a(fnv1a(fnv1a(hash, m->message_id), subject), text), html);
        for (size_t i = 0; i < m->n_images; i++) {
            const struct mime_image *im = &m->images[i];
            hash = fnv1a(fnv1a(fnv1a(hash, im->content_id), im->content_type), im->filename);
            hash = fnv1a_bytes(hash, im->data, im->len);
        }
        char boundary[40], related[40];
        snprintf(boundary, sizeof boundary, "=_wsrelay_%016llx", (unsigned long long)hash);
        snprintf(related, sizeof related, "=_wsrelay_rel_%016llx", (unsigned long long)hash);
        buf_printf(&b, "Content-Type: multipart/alternative; boundary=\"%s\"\r\n\r\n", boundary);
        buf_printf(&b, "--%s\r\n", boundary);
        part_headers(&b, "text/plain");
        buf_puts(&b, "\r\n");
        qp_encode(&b, text);
        buf_printf(&b, "\r\n--%s\r\n", boundary);
        if (m->n_images)
            buf_printf(&b,
                       "Content-Type: multipart/related; type=\"text/html\";\r\n"
                       " boundary=\"%s\"\r\n\r\n--%s\r\n",
                       related, related);
        part_headers(&b, "text/html");
        buf_puts(&b, "\r\n");
        qp_encode(&b, html);
        for (size_t i = 0; i < m->n_images; i++)
            image_part(&b, related, &m->images[i]);
        if (m->n_images)
            buf_printf(&b, "\r\n--%s--", related);
        buf_printf(&b, "\r\n--%s--\r\n", boundary);
    }
    *out = buf_steal(&b);
    rc = 0;
out:
    buf_free(&b);
    free(subject);
    free(text);
    free(html);
    return rc;
}

/* ---- ids ---- */

static void id_part(struct buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (is_alnum((char)*p) || *p == '-' || *p == '_')
            buf_append(b, p, 1);
        else
            buf_printf(b, "=%02X", *p);
    }
}

char *mime_message_id(const char *receiver, const char *serial, const char *kind,
                      long long unixtime, size_t count, const char *host)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "<wsrelay.");
    id_part(&b, receiver);
    buf_puts(&b, ".");
    id_part(&b, serial);
    buf_puts(&b, ".");
    id_part(&b, kind);
    buf_printf(&b, ".%lld", unixtime);
    if (count > 1)
        buf_printf(&b, "+%zu", count);
    buf_puts(&b, "@");
    if (!host || !*host)
        host = "localhost";
    for (const char *p = host; *p; p++)
        buf_append(&b, is_alnum(*p) || *p == '.' ? p : "-", 1);
    buf_puts(&b, ">");
    return buf_steal(&b);
}
