/* A JSON scanner: the caller walks the text value by value (jscan.h). */
#include "util/jscan.h"

#include "util/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "string_stop reads words as little-endian"
#endif

void jscan_init(struct jscan *s, const char *text, size_t len)
{
    char *key = s->key;
    size_t cap = s->key_cap;
    *s = (struct jscan){.text = text, .p = text, .end = text + len, .key = key, .key_cap = cap};
}

void jscan_free(struct jscan *s)
{
    free(s->key);
    s->key = NULL;
    s->key_cap = s->key_len = 0;
}

bool jscan_fail(struct jscan *s, const char *reason)
{
    if (!s->failed) {
        s->failed = true;
        s->fail_at = (size_t)(s->p - s->text);
        s->reason = s->p >= s->end ? "the text ends too soon" : reason;
    }
    return false;
}

/* JSON's white space; most bytes are above ' ', which one test rules out. */
static inline bool is_space(char c)
{
    return (unsigned char)c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t');
}

static inline const char *past_space(const char *p, const char *end)
{
    while (p < end && is_space(*p))
        p++;
    return p;
}

static inline void skip_space(struct jscan *s)
{
    s->p = past_space(s->p, s->end);
}

enum jscan_type jscan_peek(struct jscan *s)
{
    if (s->failed)
        return JSCAN_NONE;
    skip_space(s);
    if (s->p >= s->end)
        return JSCAN_NONE;
    switch (*s->p) {
    case '{':
        return JSCAN_OBJECT;
    case '[':
        return JSCAN_ARRAY;
    case '"':
        return JSCAN_STRING;
    case 't':
        return JSCAN_TRUE;
    case 'f':
        return JSCAN_FALSE;
    case 'n':
        return JSCAN_NULL;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        return JSCAN_NUMBER;
    default:
        return JSCAN_NONE;
    }
}

/* --- strings ------------------------------------------------------------ */

struct sink {
    char **data;
    size_t *len, *cap;
};

/* Appends to the sink, which stays NUL-terminated (nothing to append to a
 * sink that has its buffer changes nothing). */
static void sink_put(const struct sink *o, const char *bytes, size_t n)
{
    if (!o || (n == 0 && *o->data))
        return;
    if (*o->len + n + 1 > *o->cap) {
        size_t cap = *o->cap ? *o->cap : 64;
        while (cap < *o->len + n + 1)
            cap *= 2;
        *o->data = xrealloc(*o->data, cap);
        *o->cap = cap;
    }
    memcpy(*o->data + *o->len, bytes, n);
    *o->len += n;
    (*o->data)[*o->len] = '\0';
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One escape after its backslash (s->p on the letter); appends its bytes. */
static bool scan_escape(struct jscan *s, const struct sink *o)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = s->p < s->end && *s->p ? strchr(from, *s->p) : NULL;
    if (hit) {
        sink_put(o, &to[hit - from], 1);
        s->p++;
        return true;
    }
    if (s->p >= s->end || *s->p != 'u' || s->end - s->p < 5)
        return jscan_fail(s, "a bad escape in a string");
    int cp = hex4(s->p + 1);
    if (cp < 0)
        return jscan_fail(s, "a bad \\u escape in a string");
    s->p += 5;
    uint32_t code = (uint32_t)cp;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        int lo = s->end - s->p >= 6 && s->p[0] == '\\' && s->p[1] == 'u' ? hex4(s->p + 2) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            code = 0x10000 + (((uint32_t)cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            s->p += 6;
        } else {
            code = 0xFFFD;
        }
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        code = 0xFFFD;
    }
    char bytes[4];
    sink_put(o, bytes, put_utf8(bytes, code));
    return true;
}

/* A string (s->p on its opening quote), its decoded bytes appended to `o`
 * (NULL: only checked). Leniently, as jscan.h says. */
/* The first '"' or '\\' from `p` on, or `end`; eight bytes at a time
 * where eight are left: a byte of the word is one of the two when the
 * word XOR that byte repeated has a zero byte there, and the lowest bit
 * the zero-byte test sets is that of the first such byte (the machine is
 * little-endian; the build checks it). */
static const char *string_stop(const char *p, const char *end)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        uint64_t hit = ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
        if (hit)
            return p + __builtin_ctzll(hit) / 8;
        p += 8;
    }
    while (p < end && *p != '"' && *p != '\\')
        p++;
    return p;
}

static bool scan_string(struct jscan *s, const struct sink *o)
{
    s->p++;
    for (;;) {
        const char *stop = string_stop(s->p, s->end);
        sink_put(o, s->p, (size_t)(stop - s->p));
        s->p = stop;
        if (stop == s->end)
            return jscan_fail(s, "a string without its closing quote");
        if (*s->p++ == '"')
            return true;
        if (!scan_escape(s, o))
            return false;
    }
}

bool jscan_string_dup(struct jscan *s, char **out, size_t *len)
{
    char *data = NULL;
    size_t n = 0, cap = 0;
    *out = NULL;
    if (jscan_peek(s) != JSCAN_STRING)
        return jscan_fail(s, "not a string");
    struct sink o = {&data, &n, &cap};
    if (!scan_string(s, &o)) {
        free(data);
        return false;
    }
    if (!data)
        data = xstrdup("");
    *out = data;
    if (len)
        *len = n;
    return true;
}

/* --- numbers and words -------------------------------------------------- */

static bool digits(struct jscan *s)
{
    const char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > start;
}

/* A number's text (s->p on its first byte) copied, NUL-terminated, into
 * `out`; *integral when it has neither fraction nor exponent. */
static bool scan_number(struct jscan *s, char *out, size_t size, bool *integral)
{
    const char *start = s->p;
    *integral = true;
    if (*s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if (!digits(s))
        return jscan_fail(s, "a bad number");
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        *integral = false;
        if (!digits(s))
            return jscan_fail(s, "a bad number");
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        *integral = false;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!digits(s))
            return jscan_fail(s, "a bad number");
    }
    size_t n = (size_t)(s->p - start);
    if (n >= size)
        return jscan_fail(s, "a number too long");
    memcpy(out, start, n);
    out[n] = '\0';
    return true;
}

/* The value of a number's text without an exponent and with at most 15
 * digits, exactly as strtod gives it: the digits make an integer that a
 * double holds exactly, and dividing it by a power of ten that a double
 * holds exactly is rounded correctly (IEEE 754). False for other texts. */
static bool short_decimal(const char *text, double *out)
{
    static const double tens[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    const char *p = text + (*text == '-');
    long long m = 0;
    int digits = 0, decimals = -1;
    for (; *p; p++) {
        if (*p == '.') {
            decimals = 0;
            continue;
        }
        if (*p < '0' || *p > '9' || ++digits > 15)
            return false;
        m = m * 10 + (*p - '0');
        if (decimals >= 0)
            decimals++;
    }
    double d = (double)m / tens[decimals > 0 ? decimals : 0];
    *out = *text == '-' ? -d : d;
    return true;
}

bool jscan_plain_number(const char **at, const char *end, bool *negative, long long *digits,
                        int *decimals)
{
    const char *p = *at;
    *negative = p < end && *p == '-';
    p += *negative;
    const char *first = p;
    long long v = 0;
    int n = 0, point = -1;
    for (; p < end; p++) {
        if (*p >= '0' && *p <= '9') {
            if (++n > 15)
                return false;
            v = v * 10 + (*p - '0');
        } else if (*p == '.' && point < 0 && n > 0) {
            point = n;
        } else {
            break;
        }
    }
    if (n == 0 || p[-1] == '.' || (n > 1 && *first == '0' && point != 1))
        return false;
    if (p < end && (*p == 'e' || *p == 'E' || *p == '.'))
        return false;
    *digits = v;
    *decimals = point < 0 ? -1 : n - point;
    *at = p;
    return true;
}

double jscan_plain_value(bool negative, long long digits, int decimals)
{
    static const double tens[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    double d = (double)digits / tens[decimals > 0 ? decimals : 0]; /* as short_decimal */
    return negative ? -d : d;
}

static bool plain_number(struct jscan *s, bool *negative, long long *digits, int *decimals)
{
    return jscan_plain_number(&s->p, s->end, negative, digits, decimals);
}

bool jscan_number(struct jscan *s, double *out)
{
    char text[400];
    bool integral, negative;
    long long digits;
    int decimals;
    if (jscan_peek(s) != JSCAN_NUMBER)
        return jscan_fail(s, "not a number");
    if (plain_number(s, &negative, &digits, &decimals)) {
        *out = jscan_plain_value(negative, digits, decimals);
        return true;
    }
    const char *start = s->p;
    if (!scan_number(s, text, sizeof text, &integral))
        return false;
    if (short_decimal(text, out))
        return true;
    double d = strtod(text, NULL);
    if (!isfinite(d)) {
        s->p = start; /* the error is the number's, wherever it ends */
        return jscan_fail(s, "a number beyond range");
    }
    *out = d;
    return true;
}

bool jscan_int(struct jscan *s, long long *out)
{
    char text[400];
    bool integral, negative;
    long long digits;
    int decimals;
    if (jscan_peek(s) != JSCAN_NUMBER)
        return jscan_fail(s, "not an integer");
    const char *at = s->p;
    if (plain_number(s, &negative, &digits, &decimals)) {
        if (decimals < 0) {
            *out = negative ? -digits : digits;
            return true;
        }
        s->p = at; /* a fraction: the full reader says so */
    }
    const char *start = s->p;
    if (!scan_number(s, text, sizeof text, &integral))
        return false;
    if (!integral) {
        s->p = start; /* the error is the number's, wherever it ends */
        return jscan_fail(s, "not an integer");
    }
    const char *digit = text + (text[0] == '-');
    if (strlen(digit) <= 18) { /* fits: no overflow to check */
        long long v = 0;
        for (; *digit; digit++)
            v = v * 10 + (*digit - '0');
        *out = text[0] == '-' ? -v : v;
        return true;
    }
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE) {
        s->p = start;
        return jscan_fail(s, "an integer beyond range");
    }
    *out = v;
    return true;
}

static bool word(struct jscan *s, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
        return jscan_fail(s, "an unknown word");
    s->p += n;
    return true;
}

bool jscan_bool(struct jscan *s, bool *out)
{
    enum jscan_type t = jscan_peek(s);
    if (t != JSCAN_TRUE && t != JSCAN_FALSE)
        return jscan_fail(s, "not true or false");
    *out = t == JSCAN_TRUE;
    return word(s, *out ? "true" : "false");
}

bool jscan_null(struct jscan *s)
{
    return jscan_peek(s) == JSCAN_NULL && word(s, "null");
}

/* --- containers --------------------------------------------------------- */

static bool enter(struct jscan *s, enum jscan_type type, const char *reason)
{
    if (jscan_peek(s) != type)
        return jscan_fail(s, reason);
    if (s->depth >= JSCAN_DEPTH)
        return jscan_fail(s, "nested too deep");
    s->p++;
    s->first[++s->depth] = true;
    return true;
}

/* Before the next value of the open container closed by `close`: false
 * (and the bracket consumed) at its end. */
static bool next_in(struct jscan *s, char close)
{
    if (s->failed)
        return false;
    const char *p = past_space(s->p, s->end), *end = s->end;
    s->p = p;
    if (p < end && *p == close) {
        s->p = p + 1;
        s->depth--;
        return false;
    }
    if (!s->first[s->depth]) {
        if (p >= end || *p != ',')
            return jscan_fail(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
        s->p = p = past_space(p + 1, end);
        if (p < end && *p == close)
            return jscan_fail(s, "a comma before a closing bracket");
    }
    s->first[s->depth] = false;
    return true;
}

bool jscan_object(struct jscan *s)
{
    return enter(s, JSCAN_OBJECT, "not an object");
}

/* The next member's name, decoded into s->key when `keep` (only checked
 * otherwise, as a skip wants), and its colon. Most names have no escape:
 * they are found, and copied, in one step. */
static bool member_name(struct jscan *s, bool keep)
{
    if (!next_in(s, '}'))
        return false;
    const char *p = past_space(s->p, s->end);
    s->p = p;
    if (p >= s->end || *p != '"')
        return jscan_fail(s, "expected a member name");
    const char *stop = string_stop(p + 1, s->end);
    if (stop < s->end && *stop == '"') {
        size_t n = (size_t)(stop - p - 1);
        if (keep && n + 1 > s->key_cap) {
            s->key_cap = n + 1 > 64 ? n + 1 : 64;
            free(s->key);
            s->key = xmalloc(s->key_cap);
        }
        if (keep) {
            memcpy(s->key, p + 1, n);
            s->key[n] = '\0';
            s->key_len = n;
        }
        p = stop + 1;
    } else {
        struct sink o = {&s->key, &s->key_len, &s->key_cap};
        if (keep) {
            s->key_len = 0;
            sink_put(&o, "", 0); /* the buffer exists */
            s->key[0] = '\0';
        }
        if (!scan_string(s, keep ? &o : NULL))
            return false;
        p = s->p;
    }
    s->p = p = past_space(p, s->end);
    if (p >= s->end || *p != ':')
        return jscan_fail(s, "expected ':'");
    s->p = p + 1;
    return true;
}

bool jscan_member(struct jscan *s)
{
    return member_name(s, true);
}

bool jscan_array(struct jscan *s)
{
    return enter(s, JSCAN_ARRAY, "not an array");
}

bool jscan_item(struct jscan *s)
{
    return next_in(s, ']');
}

bool jscan_skip(struct jscan *s, struct jscan_raw *raw)
{
    char text[400];
    bool integral, ok = false;
    enum jscan_type t = jscan_peek(s);
    const char *start = s->p;
    switch (t) {
    case JSCAN_OBJECT:
        ok = jscan_object(s);
        while (ok && member_name(s, false)) /* s->key is the caller's member's */
            ok = jscan_skip(s, NULL);
        break;
    case JSCAN_ARRAY:
        ok = jscan_array(s);
        while (ok && jscan_item(s))
            ok = jscan_skip(s, NULL);
        break;
    case JSCAN_STRING:
        ok = scan_string(s, NULL);
        break;
    case JSCAN_NUMBER:
        ok = scan_number(s, text, sizeof text, &integral);
        break;
    case JSCAN_TRUE:
        ok = word(s, "true");
        break;
    case JSCAN_FALSE:
        ok = word(s, "false");
        break;
    case JSCAN_NULL:
        ok = word(s, "null");
        break;
    case JSCAN_NONE:
        ok = jscan_fail(s, "expected a value");
        break;
    }
    ok = ok && !s->failed;
    if (ok && raw)
        *raw = (struct jscan_raw){start, (size_t)(s->p - start)};
    return ok;
}

int jscan_error(const struct jscan *s, struct err *e)
{
    if (!s->failed)
        return 0;
    return err_set(e, "byte %zu: %s", s->fail_at, s->reason);
}

int jscan_end(struct jscan *s, struct err *e)
{
    skip_space(s);
    if (!s->failed && (s->depth != 0 || s->p != s->end))
        jscan_fail(s, s->depth ? "the text ends inside a value" : "text after the value");
    return jscan_error(s, e);
}
