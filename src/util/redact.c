/* Finding secrets in echoed text. The text is read in views: as it is, and
 * with one, two and three levels of escapes undone, each byte of a view
 * remembering the bytes of the text it came from. A secret found in any
 * view marks those bytes, and every run of marked bytes becomes one
 * "[redacted]". Decoding the text rather than encoding the secrets covers
 * every mix of escapes at once, where listing the encodings of a secret
 * would grow with each choice of which characters a far end escapes. */
#include "util/redact.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define REDACTED "[redacted]"
#define DECODE_LEVELS 3 /* "%25252F" is "/" encoded three times */
#define WORD_MAX 20

struct secret {
    char *text;
    size_t len;
    bool runs; /* every run of REDACT_RUN_MIN bytes of it is a secret too */
};

struct redact {
    struct secret *secrets; /* each at least REDACT_MIN bytes, none twice */
    size_t n, cap;
    /* The runs of REDACT_RUN_MIN bytes of the secrets with `runs`, each read
     * as a big-endian number (never 0: no byte of a secret is NUL), in an open
     * addressing set (0 is empty) of `slots` entries, a power of two at
     * least twice `n_runs`: a lookup costs the same however many secrets. */
    uint64_t *run_set;
    size_t slots, n_runs;
};

struct redact *redact_new(void)
{
    return xcalloc(1, sizeof(struct redact));
}

void redact_free(struct redact *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->secrets[i].text);
    free(r->secrets);
    free(r->run_set);
    free(r);
}

static size_t run_slot(uint64_t key, size_t slots)
{
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (slots - 1);
}

static bool run_find(const struct redact *r, uint64_t key)
{
    if (!r->slots)
        return false;
    for (size_t i = run_slot(key, r->slots);; i = (i + 1) & (r->slots - 1)) {
        if (r->run_set[i] == key)
            return true;
        if (!r->run_set[i])
            return false;
    }
}

static void run_put(struct redact *r, uint64_t key)
{
    if (2 * (r->n_runs + 1) > r->slots) {
        size_t old_slots = r->slots;
        uint64_t *old = r->run_set;
        r->slots = old_slots ? old_slots * 2 : 64;
        r->run_set = xcalloc(r->slots, sizeof *r->run_set);
        r->n_runs = 0;
        for (size_t i = 0; i < old_slots; i++)
            if (old[i])
                run_put(r, old[i]);
        free(old);
    }
    size_t i = run_slot(key, r->slots);
    while (r->run_set[i] && r->run_set[i] != key)
        i = (i + 1) & (r->slots - 1);
    if (!r->run_set[i]) {
        r->run_set[i] = key;
        r->n_runs++;
    }
}

/* The key of the REDACT_RUN_MIN bytes at s. */
static uint64_t run_key_at(const unsigned char *s)
{
    uint64_t key = 0;
    for (size_t i = 0; i < REDACT_RUN_MIN; i++)
        key = key << 8 | s[i];
    return key;
}

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The value of `n` hex digits at s (all there), or -1. */
static long hex_value(const unsigned char *s, size_t n)
{
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(s[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Writes code point `cp` as UTF-8 into out; returns its length, or 0 for
 * what must not be decoded (NUL, surrogates, beyond Unicode). */
static size_t utf8_put(unsigned char out[4], long cp)
{
    if (cp <= 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON "\uXXXX" at s (n bytes available), with its low surrogate when it
 * is a high one; the code point, or -1. *used is the bytes it took. */
static long json_u(const unsigned char *s, size_t n, size_t *used)
{
    if (n < 6)
        return -1;
    long hi = hex_value(s + 2, 4);
    *used = 6;
    if (hi < 0xD800 || hi > 0xDBFF)
        return hi;
    if (n < 12 || s[6] != '\\' || s[7] != 'u')
        return -1;
    long lo = hex_value(s + 8, 4);
    if (lo < 0xDC00 || lo > 0xDFFF)
        return -1;
    *used = 12;
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
}

/* An HTML character reference at s ("&#47;", "&#x2F;", "&amp;"...); the
 * code point, or -1. */
static long html_ref(const unsigned char *s, size_t n, size_t *used)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        size_t len = strlen(named[k].name);
        if (n >= len && memcmp(s, named[k].name, len) == 0) {
            *used = len;
            return named[k].c;
        }
    }
    if (n < 4 || s[1] != '#')
        return -1;
    bool hex = s[2] == 'x' || s[2] == 'X';
    size_t i = hex ? 3 : 2;
    long v = 0;
    size_t digits = 0;
    for (; i < n && digits < 8; i++, digits++) {
        int d = hex ? hex_digit(s[i]) : s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : -1;
        if (d < 0)
            break;
        v = v * (hex ? 16 : 10) + d;
    }
    if (!digits || i >= n || s[i] != ';')
        return -1;
    *used = i + 1;
    return v;
}

/* Undoes the escape that starts at s (n bytes available), if any: writes
 * what it stands for into out (*out_len bytes) and returns the bytes it
 * took; 0 when no escape starts there. */
static size_t decode_one(const unsigned char *s, size_t n, unsigned char out[4], size_t *out_len)
{
    size_t used = 0;
    long cp = -1;
    if (s[0] == '%' && n >= 3) {
        cp = hex_value(s + 1, 2);
        used = 3;
    } else if (s[0] == '\\' && n >= 2) {
        static const char from[] = "/\\\"'bfnrt", to[] = "/\\\"'\b\f\n\r\t";
        const char *k = memchr(from, s[1], sizeof from - 1);
        if (k) {
            cp = (unsigned char)to[k - from];
            used = 2;
        } else if (s[1] == 'u') {
            cp = json_u(s, n, &used);
        } else if (s[1] == 'x' && n >= 4) {
            cp = hex_value(s + 2, 2);
            used = 4;
        }
    } else if (s[0] == '&') {
        cp = html_ref(s, n, &used);
    }
    if (cp < 0)
        return 0;
    /* A percent or \x escape is one byte, maybe part of a UTF-8 sequence. */
    if ((s[0] == '%' || (s[0] == '\\' && s[1] == 'x')) && cp > 0) {
        out[0] = (unsigned char)cp;
        *out_len = 1;
        return used;
    }
    *out_len = utf8_put(out, cp);
    return *out_len ? used : 0;
}

/* The text, or a decoding of it: byte k came from the text's bytes
 * [from[k], to[k]). NUL-terminated: no escape decodes to NUL. */
struct view {
    unsigned char *b;
    size_t len;
    size_t *from, *to;
};

static void view_free(struct view *v)
{
    free(v->b);
    free(v->from);
    free(v->to);
}

/* `v` with one level of escapes undone, into *out; false (and *out left
 * empty) when there was none to undo. */
static bool view_decode(struct view *out, const struct view *v)
{
    bool changed = false;
    *out = (struct view){0};
    out->b = xmalloc(v->len + 1);
    out->from = xreallocarray(NULL, v->len + 1, sizeof *out->from);
    out->to = xreallocarray(NULL, v->len + 1, sizeof *out->to);
    for (size_t i = 0; i < v->len;) {
        unsigned char dec[4];
        size_t dec_len = 0;
        size_t used = decode_one(v->b + i, v->len - i, dec, &dec_len);
        if (!used) {
            dec[0] = v->b[i];
            dec_len = 1;
            used = 1;
        } else {
            changed = true;
        }
        for (size_t k = 0; k < dec_len; k++) {
            out->b[out->len] = dec[k];
            out->from[out->len] = v->from[i];
            out->to[out->len] = v->to[i + used - 1];
            out->len++;
        }
        i += used;
    }
    out->b[out->len] = '\0';
    if (!changed)
        view_free(out);
    return changed;
}

/* Marks the text's bytes that view bytes [k, k + m) came from; *done is
 * how far marking went already (hits come in order, so each text byte is
 * marked once however much they overlap). */
static void mark_span(bool *marked, size_t *done, const struct view *v, size_t k, size_t m)
{
    size_t i = v->from[k] > *done ? v->from[k] : *done;
    size_t end = v->to[k + m - 1];
    for (; i < end; i++)
        marked[i] = true;
    if (end > *done)
        *done = end;
}

/* Marks the text's bytes under every occurrence of every secret in `v`,
 * under every run of REDACT_RUN_MIN bytes of a secret whose runs count, and
 * under the start of a secret that the end of `v` cuts short. Time: one pass
 * over `v` for the runs, and one search of `v` per secret that is looked
 * for whole only. */
static void mark(bool *marked, size_t text_len, const struct view *v, const struct redact *r)
{
    const char *text = (const char *)v->b;
    if (r->n_runs && v->len >= REDACT_RUN_MIN) {
        size_t done = 0;
        uint64_t key = run_key_at(v->b) >> 8;
        for (size_t k = 0; k + REDACT_RUN_MIN <= v->len; k++) {
            key = key << 8 | v->b[k + REDACT_RUN_MIN - 1];
            if (run_find(r, key))
                mark_span(marked, &done, v, k, REDACT_RUN_MIN);
        }
    }
    for (size_t s = 0; s < r->n; s++) {
        const char *secret = r->secrets[s].text;
        size_t m = r->secrets[s].len;
        /* Its runs were found above, the whole among them. */
        if (!(r->secrets[s].runs && m >= REDACT_RUN_MIN)) {
            size_t done = 0;
            for (const char *hit = strstr(text, secret); hit; hit = strstr(hit + 1, secret))
                mark_span(marked, &done, v, (size_t)(hit - text), m); /* hit + 1: overlaps */
        }
        for (size_t k = m - 1 < v->len ? m - 1 : v->len; k >= REDACT_TAIL_MIN; k--) {
            if (v->b[v->len - k] == (unsigned char)secret[0] &&
                memcmp(v->b + v->len - k, secret, k) == 0) {
                for (size_t i = v->from[v->len - k]; i < text_len; i++)
                    marked[i] = true;
                break;
            }
        }
    }
}

char *redact_text(const struct redact *r, const char *text)
{
    size_t len = strlen(text);
    if (!r || !r->n || !len)
        return xstrdup(text);
    bool *marked = xcalloc(len, sizeof *marked);
    struct view v = {
        .b = (unsigned char *)xstrdup(text),
        .len = len,
        .from = xreallocarray(NULL, len, sizeof *v.from),
        .to = xreallocarray(NULL, len, sizeof *v.to),
    };
    for (size_t i = 0; i < len; i++)
        v.from[i] = i, v.to[i] = i + 1;
    mark(marked, len, &v, r);
    for (int level = 0; level < DECODE_LEVELS; level++) {
        struct view next;
        if (!view_decode(&next, &v))
            break;
        view_free(&v);
        v = next;
        mark(marked, len, &v, r);
    }
    view_free(&v);
    struct buf out;
    buf_init(&out, 0);
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && marked[j] == marked[i])
            j++;
        if (marked[i])
            buf_puts(&out, REDACTED);
        else
            buf_append(&out, text + i, j - i);
        i = j;
    }
    free(marked);
    return buf_steal(&out);
}

/* Adds `s` as it is, if new and long enough; with `runs`, each of its runs
 * of REDACT_RUN_MIN bytes too. */
static void add_one(struct redact *r, const char *s, size_t len, bool runs)
{
    if (len < REDACT_MIN || memchr(s, '\0', len))
        return;
    if (runs)
        for (size_t k = 0; k + REDACT_RUN_MIN <= len; k++)
            run_put(r, run_key_at((const unsigned char *)s + k));
    for (size_t i = 0; i < r->n; i++) {
        if (r->secrets[i].len == len && memcmp(r->secrets[i].text, s, len) == 0) {
            r->secrets[i].runs |= runs;
            return;
        }
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->secrets = xreallocarray(r->secrets, r->cap, sizeof *r->secrets);
    }
    r->secrets[r->n++] = (struct secret){.text = xstrndup(s, len), .len = len, .runs = runs};
}

/* s[0..len) with its %XX escapes undone (but %00), as a new string of
 * *out_len bytes. */
static char *percent_decoded(const char *s, size_t len, size_t *out_len)
{
    char *dec = xmalloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        long v = s[i] == '%' && i + 2 < len ? hex_value((const unsigned char *)s + i + 1, 2) : -1;
        if (v > 0) {
            dec[n++] = (char)v;
            i += 2;
        } else {
            dec[n++] = s[i];
        }
    }
    dec[n] = '\0';
    *out_len = n;
    return dec;
}

/* Adds s[0..len) and, when it has %XX escapes, its percent-decoded form:
 * a far end may echo a token as it decoded it. */
static void add_len(struct redact *r, const char *s, size_t len, bool runs)
{
    size_t n;
    char *dec = percent_decoded(s, len, &n);
    add_one(r, s, len, runs);
    if (n != len)
        add_one(r, dec, n, runs);
    free(dec);
}

void redact_add(struct redact *r, const char *secret)
{
    if (secret)
        add_len(r, secret, strlen(secret), true);
}

char *redact_base64(const void *data, size_t len)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *d = data;
    char *out = xmalloc(4 * ((len + 2) / 3) + 1);
    size_t j = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned long v = (unsigned long)d[i] << 16;
        if (i + 1 < len)
            v |= (unsigned long)d[i + 1] << 8;
        if (i + 2 < len)
            v |= d[i + 2];
        out[j++] = digits[v >> 18 & 63];
        out[j++] = digits[v >> 12 & 63];
        out[j++] = i + 1 < len ? digits[v >> 6 & 63] : '=';
        out[j++] = i + 2 < len ? digits[v & 63] : '=';
    }
    out[j] = '\0';
    return out;
}

static bool is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

/* redact_is_token over s[0..len). */
static bool is_token(const char *s, size_t len)
{
    if (len < REDACT_PART_MIN)
        return false;
    if (len > WORD_MAX)
        return true;
    for (size_t i = 0; i < len; i++) {
        bool separator = s[i] == '-' || s[i] == '_' || s[i] == '.';
        if (!is_lower(s[i]) && !(i == 0 && is_upper(s[i])) && !separator)
            return true;
    }
    return false;
}

bool redact_is_token(const char *part)
{
    return is_token(part, strlen(part));
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* True when s[0..len) is a date "YYYY-MM-DD" ("api-version=2016-06-01"). */
static bool is_date(const char *s, size_t len)
{
    static const char shape[] = "0000-00-00";
    if (len != sizeof shape - 1)
        return false;
    for (size_t i = 0; i < len; i++)
        if (shape[i] == '-' ? s[i] != '-' : !is_digit(s[i]))
            return false;
    return true;
}

/* True when s[0..len) is a path of words ("/triggers/manual/run", Teams'
 * "sp" value decoded): a '/' first and no segment that could be a token. */
static bool is_word_path(const char *s, size_t len)
{
    if (!len || s[0] != '/')
        return false;
    for (size_t i = 1; i <= len;) {
        size_t j = i;
        while (j < len && s[j] != '/')
            j++;
        if (is_token(s + i, j - i))
            return false;
        i = j + 1;
    }
    return true;
}

/* True when s[0..len) is a mail address ("alerts@example.com"): one '@'
 * between letters, digits and "._+-", and a '.' in the domain. */
static bool is_address(const char *s, size_t len)
{
    const char *at = memchr(s, '@', len);
    if (!at || at == s || !memchr(at, '.', len - (size_t)(at - s)))
        return false;
    for (size_t i = 0; i < len; i++) {
        bool ok = is_lower(s[i]) || is_upper(s[i]) || is_digit(s[i]) || strchr("._+-", s[i]) ||
                  s + i == at;
        if (!ok || !s[i])
            return false;
    }
    return true;
}

/* Adds s[0..len) with its runs when it could be a token, as it is or
 * percent-decoded, and is plainly none of what a URL holds besides
 * tokens: a date, a path of words, a mail address. Their runs would be
 * ordinary words ("triggers", "example.") that messages need. */
static void add_if_token(struct redact *r, const char *s, size_t len)
{
    size_t n;
    char *dec = percent_decoded(s, len, &n);
    bool plain = is_date(dec, n) || is_word_path(dec, n) || is_address(dec, n);
    if (!plain && (is_token(s, len) || is_token(dec, n)))
        add_len(r, s, len, true);
    free(dec);
}

/* Adds every piece of s[0..len) between the characters of `seps` that
 * could be a token; with `values`, the part after '=' of each piece too. */
static void add_pieces(struct redact *r, const char *s, size_t len, const char *seps, bool values)
{
    for (size_t i = 0; i <= len;) {
        size_t j = i;
        while (j < len && !strchr(seps, s[j]))
            j++;
        const char *eq = values ? memchr(s + i, '=', j - i) : NULL;
        if (eq) {
            /* "name=value": the pair whole, and the runs of each half that
             * could be a token ("api-version" is not one). */
            add_len(r, s + i, j - i, false);
            add_if_token(r, s + i, (size_t)(eq - (s + i)));
            add_if_token(r, eq + 1, (size_t)(s + j - eq - 1));
        } else {
            add_if_token(r, s + i, j - i);
        }
        i = j + 1;
    }
}

void redact_add_url(struct redact *r, const char *url)
{
    if (!url)
        return;
    const char *scheme_end = strstr(url, "://");
    if (!scheme_end) {
        redact_add(r, url);
        return;
    }
    size_t url_len = strlen(url);
    const char *authority = scheme_end + 3;
    const char *rest = authority + strcspn(authority, "/?#");
    const char *at = NULL;
    for (const char *p = authority; p < rest; p++)
        if (*p == '@')
            at = p;
    /* "scheme://host:port" alone holds no secret, and messages show it. */
    if (at || (*rest && strcmp(rest, "/") != 0))
        add_len(r, url, url_len, false);
    if (at) {
        size_t user_len = strcspn(authority, ":@");
        size_t info_len = (size_t)(at - authority);
        /* Whole only: the user name is often an address, whose runs
         * are host words. The password counts with its runs. */
        add_len(r, authority, info_len, false);
        add_if_token(r, authority, user_len);
        if (authority[user_len] == ':')
            add_len(r, authority + user_len + 1, info_len - user_len - 1, true);
        /* What a client sends as "Authorization: Basic ...". */
        size_t n;
        char *dec = percent_decoded(authority, info_len, &n);
        char *basic = redact_base64(dec, n);
        add_one(r, basic, strlen(basic), true);
        free(basic);
        free(dec);
    }
    if (!*rest)
        return;
    add_len(r, rest, strlen(rest), false);
    const char *query = rest + strcspn(rest, "?#");
    add_len(r, rest, (size_t)(query - rest), false);
    add_pieces(r, rest, (size_t)(query - rest), "/", false);
    if (*query == '?') {
        size_t n = strcspn(query + 1, "#");
        add_len(r, query + 1, n, false);
        add_pieces(r, query + 1, n, "&;", true);
        query += 1 + n;
    }
    if (*query == '#') {
        add_if_token(r, query + 1, strlen(query + 1));
        add_pieces(r, query + 1, strlen(query + 1), "&;/", true);
    }
}

void redact_add_header(struct redact *r, const char *value)
{
    if (!value)
        return;
    add_len(r, value, strlen(value), false);
    size_t scheme = 0;
    while (is_lower(value[scheme]) || is_upper(value[scheme]) || value[scheme] == '-')
        scheme++;
    if (scheme && (value[scheme] == ' ' || value[scheme] == '\t')) {
        const char *cred = value + scheme;
        while (*cred == ' ' || *cred == '\t')
            cred++;
        size_t n = strlen(cred);
        while (n && (cred[n - 1] == ' ' || cred[n - 1] == '\t'))
            n--;
        add_len(r, cred, n, true);
    }
    add_pieces(r, value, strlen(value), " \t,;", true);
}
