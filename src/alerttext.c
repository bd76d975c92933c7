/* Reads an alert text for its state, measured value and limit. One table of
 * phrases drives it; the platform does not list its texts, so what the table
 * does not know stays "other" and the raw text is what people read. */
#include "alerttext.h"
#include "util/xalloc.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What a number right after a phrase is. */
enum intro {
    INTRO_NONE,       /* whatever the rest of the rules say */
    INTRO_LIMIT_WEAK, /* an upper/lower word: the limit inside parentheses or after the value */
    INTRO_LIMIT,      /* the limit */
    INTRO_TAG,        /* a channel number, not a reading */
};

struct phrase {
    const char *text; /* UTF-8; ASCII letters match in either case, as whole words */
    /* What the phrase says. ALERT_OTHER for words that only shape the text
     * (limit words, channel tags) and for negated phrases, which are listed
     * so that the phrase inside them ("recovered" in "not recovered") is not
     * read: at each place the longest phrase wins. */
    enum alert_state state;
    int direction; /* +1 upper limit, -1 lower limit */
    enum intro intro;
};

#define UP (+1)
#define DOWN (-1)

static const struct phrase phrases[] = {
    /* English */
    {"Upper Limit Exceeded", ALERT_ALARM, UP, INTRO_NONE},
    {"Upper limit alarm", ALERT_ALARM, UP, INTRO_NONE},
    {"Upper limit warning", ALERT_ALARM, UP, INTRO_NONE},
    {"Upper limit", ALERT_ALARM, UP, INTRO_LIMIT_WEAK},
    {"High limit", ALERT_ALARM, UP, INTRO_LIMIT_WEAK},
    {"Lower Limit Exceeded", ALERT_ALARM, DOWN, INTRO_NONE},
    {"Lower limit alarm", ALERT_ALARM, DOWN, INTRO_NONE},
    {"Lower limit warning", ALERT_ALARM, DOWN, INTRO_NONE},
    {"Lower limit", ALERT_ALARM, DOWN, INTRO_LIMIT_WEAK},
    {"Low limit", ALERT_ALARM, DOWN, INTRO_LIMIT_WEAK},
    {"Limit Exceeded", ALERT_ALARM, 0, INTRO_NONE},
    {"Measurement Recovery", ALERT_RECOVERED, 0, INTRO_NONE},
    {"Recovery", ALERT_RECOVERED, 0, INTRO_NONE},
    {"Recovered", ALERT_RECOVERED, 0, INTRO_NONE},
    {"Back to normal", ALERT_RECOVERED, 0, INTRO_NONE},
    {"Returned to normal", ALERT_RECOVERED, 0, INTRO_NONE},
    {"Return to normal", ALERT_RECOVERED, 0, INTRO_NONE},
    {"Not recovered", ALERT_OTHER, 0, INTRO_NONE},
    {"No recovery", ALERT_OTHER, 0, INTRO_NONE},
    {"Recovery failed", ALERT_OTHER, 0, INTRO_NONE},
    {"Not back to normal", ALERT_OTHER, 0, INTRO_NONE},
    {"Not returned to normal", ALERT_OTHER, 0, INTRO_NONE},
    {"Sensor Error", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"Sensor failure", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"Sensor fault", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"Sensor disconnected", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"Low Battery Warning", ALERT_BATTERY, 0, INTRO_NONE},
    {"Low Battery", ALERT_BATTERY, 0, INTRO_NONE},
    {"Battery low", ALERT_BATTERY, 0, INTRO_NONE},
    {"Battery", ALERT_BATTERY, 0, INTRO_NONE},
    {"Communication Error", ALERT_COMMUNICATION, 0, INTRO_NONE},
    {"Communication failure", ALERT_COMMUNICATION, 0, INTRO_NONE},
    {"Communication lost", ALERT_COMMUNICATION, 0, INTRO_NONE},
    {"limit", ALERT_OTHER, 0, INTRO_LIMIT},
    {"threshold", ALERT_OTHER, 0, INTRO_LIMIT},
    {"CH", ALERT_OTHER, 0, INTRO_TAG},
    {"Channel", ALERT_OTHER, 0, INTRO_TAG},
    /* Japanese */
    {"上限値警報", ALERT_ALARM, UP, INTRO_NONE},
    {"上限警報", ALERT_ALARM, UP, INTRO_NONE},
    {"上限値超過", ALERT_ALARM, UP, INTRO_NONE},
    {"上限超過", ALERT_ALARM, UP, INTRO_NONE},
    {"上限値", ALERT_ALARM, UP, INTRO_LIMIT_WEAK},
    {"上限", ALERT_ALARM, UP, INTRO_LIMIT_WEAK},
    {"下限値警報", ALERT_ALARM, DOWN, INTRO_NONE},
    {"下限警報", ALERT_ALARM, DOWN, INTRO_NONE},
    {"下限値超過", ALERT_ALARM, DOWN, INTRO_NONE},
    {"下限超過", ALERT_ALARM, DOWN, INTRO_NONE},
    {"下限値", ALERT_ALARM, DOWN, INTRO_LIMIT_WEAK},
    {"下限", ALERT_ALARM, DOWN, INTRO_LIMIT_WEAK},
    {"正常復帰", ALERT_RECOVERED, 0, INTRO_NONE},
    {"復帰", ALERT_RECOVERED, 0, INTRO_NONE},
    {"回復", ALERT_RECOVERED, 0, INTRO_NONE},
    {"正常に戻", ALERT_RECOVERED, 0, INTRO_NONE},
    {"未復帰", ALERT_OTHER, 0, INTRO_NONE},
    {"復帰せず", ALERT_OTHER, 0, INTRO_NONE},
    {"復帰していません", ALERT_OTHER, 0, INTRO_NONE},
    {"復帰失敗", ALERT_OTHER, 0, INTRO_NONE},
    {"復帰不能", ALERT_OTHER, 0, INTRO_NONE},
    {"未回復", ALERT_OTHER, 0, INTRO_NONE},
    {"回復せず", ALERT_OTHER, 0, INTRO_NONE},
    {"回復していません", ALERT_OTHER, 0, INTRO_NONE},
    {"回復不能", ALERT_OTHER, 0, INTRO_NONE},
    {"センサ警報", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"センサー警報", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"センサエラー", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"センサーエラー", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"センサ異常", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"センサー異常", ALERT_SENSOR_ERROR, 0, INTRO_NONE},
    {"電池残量警報", ALERT_BATTERY, 0, INTRO_NONE},
    {"電池残量低下", ALERT_BATTERY, 0, INTRO_NONE},
    {"電池", ALERT_BATTERY, 0, INTRO_NONE},
    {"通信エラー", ALERT_COMMUNICATION, 0, INTRO_NONE},
    {"通信異常", ALERT_COMMUNICATION, 0, INTRO_NONE},
    {"通信断", ALERT_COMMUNICATION, 0, INTRO_NONE},
    {"閾値", ALERT_OTHER, 0, INTRO_LIMIT},
    {"しきい値", ALERT_OTHER, 0, INTRO_LIMIT},
};

static const char *const state_names[] = {
    [ALERT_OTHER] = "other",         [ALERT_ALARM] = "alarm",
    [ALERT_RECOVERED] = "recovered", [ALERT_SENSOR_ERROR] = "sensor-error",
    [ALERT_BATTERY] = "battery",     [ALERT_COMMUNICATION] = "communication",
};
#define N_STATES (sizeof state_names / sizeof state_names[0])

/* When a text names several states, the highest rank wins (see the header). */
static const int state_rank[] = {
    [ALERT_OTHER] = 0, [ALERT_BATTERY] = 1,      [ALERT_COMMUNICATION] = 2,
    [ALERT_ALARM] = 3, [ALERT_SENSOR_ERROR] = 4, [ALERT_RECOVERED] = 5,
};

/* The state a kind implies when its text names none. */
static const struct {
    const char *kind;
    enum alert_state state;
} kind_states[] = {
    {"battery-level", ALERT_BATTERY},
    {"communication-status", ALERT_COMMUNICATION},
};

/* Longest unit kept after a number, in characters; a longer run of letters
 * is a word, not a unit, and the number is kept without it. */
#define UNIT_MAX 12

#define REPLACEMENT 0xFFFDu

const char *alert_state_name(enum alert_state s)
{
    return (unsigned)s < N_STATES ? state_names[s] : state_names[ALERT_OTHER];
}

bool alert_state_from_name(enum alert_state *out, const char *name)
{
    for (size_t i = 0; name && i < N_STATES; i++) {
        if (strcmp(state_names[i], name) == 0) {
            *out = (enum alert_state)i;
            return true;
        }
    }
    return false;
}

void alert_reading_clear(struct alert_reading *r)
{
    if (!r)
        return;
    free(r->value);
    free(r->limit);
    memset(r, 0, sizeof *r);
}

/* ---- characters ---- */

/* The code point at s[i] and its length in *len (0 at the end). A byte that
 * does not begin a well-formed UTF-8 sequence stands alone as U+FFFD, so
 * the text is only ever cut between characters. */
static unsigned decode(const unsigned char *s, size_t n, size_t i, size_t *len)
{
    unsigned c, cp, lo = 0x80, hi = 0xBF;
    size_t need;
    *len = i < n ? 1 : 0;
    if (i >= n)
        return 0;
    c = s[i];
    if (c < 0x80)
        return c;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        cp = c & 0x0F;
        lo = c == 0xE0 ? 0xA0 : lo; /* overlong */
        hi = c == 0xED ? 0x9F : hi; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        cp = c & 0x07;
        lo = c == 0xF0 ? 0x90 : lo;
        hi = c == 0xF4 ? 0x8F : hi;
    } else {
        return REPLACEMENT;
    }
    if (n - i <= need)
        return REPLACEMENT;
    for (size_t k = 1; k <= need; k++) {
        unsigned b = s[i + k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
            return REPLACEMENT;
        cp = cp << 6 | (b & 0x3F);
    }
    *len = need + 1;
    return cp;
}

static bool ascii_letter(unsigned c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(unsigned c)
{
    return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19); /* ０-９ */
}

static bool is_sign(unsigned c)
{
    return c == '-' || c == '+' || c == 0x2212 || c == 0xFF0D || c == 0xFF0B; /* − － ＋ */
}

static bool is_point(unsigned c)
{
    return c == '.' || c == 0xFF0E; /* ． */
}

/* Before a digit, these make it part of a word or of a larger number. */
static bool joins(unsigned c)
{
    return ascii_letter(c) || is_digit(c) || is_sign(c) || is_point(c) || c == '_' ||
           (c >= 0xFF21 && c <= 0xFF3A) || (c >= 0xFF41 && c <= 0xFF5A); /* Ａ-Ｚ ａ-ｚ */
}

/* Characters that may begin a unit: letters, % ％ ° º ℃ ℉ µ μ ² ³. */
static bool is_unit(unsigned c)
{
    static const unsigned signs[] = {'%',    0xFF05, 0x00B0, 0x00BA, 0x2103,
                                     0x2109, 0x00B5, 0x03BC, 0x00B2, 0x00B3};
    if (ascii_letter(c))
        return true;
    for (size_t i = 0; i < sizeof signs / sizeof signs[0]; i++)
        if (signs[i] == c)
            return true;
    return false;
}

/* Between a limit word and its number. */
static bool is_gap(unsigned c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0x3000 || c == ':' ||
           c == 0xFF1A || c == '=' || c == 0xFF1D; /* ideographic space, ： ＝ */
}

static unsigned char fold(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* ---- the scan ---- */

struct scan {
    const unsigned char *s;
    size_t n, i;
    unsigned prev, prev2; /* the two code points before i; 0 at the start */
    size_t depth;         /* parentheses open at i */
    enum intro intro;     /* what a number at i would be */
};

static void advance(struct scan *sc, size_t to)
{
    while (sc->i < to) {
        size_t len;
        unsigned c = decode(sc->s, sc->n, sc->i, &len);
        sc->prev2 = sc->prev;
        sc->prev = c;
        sc->i += len;
    }
}

/* The length of the run of spaces (ASCII or ideographic) at s[i]. */
static size_t space_run(const struct scan *sc, size_t i)
{
    size_t start = i, len;
    unsigned c;
    while ((c = decode(sc->s, sc->n, i, &len)) == ' ' || c == '\t' || c == 0x3000)
        i += len;
    return i - start;
}

/* How many bytes of the text at sc->i spell `p`, else 0. A space in `p`
 * stands for any run of spaces, so odd spacing does not hide a phrase. */
static size_t match(const struct scan *sc, const char *p)
{
    const unsigned char *q = (const unsigned char *)p;
    size_t j = sc->i, w;
    if (ascii_letter(q[0]) && ascii_letter(sc->prev))
        return 0;
    for (; *q; q++) {
        if (*q == ' ' && (w = space_run(sc, j)) != 0) {
            j += w;
            continue;
        }
        if (j >= sc->n || fold(sc->s[j]) != fold(*q))
            return 0;
        j++;
    }
    if (ascii_letter(q[-1]) && j < sc->n && ascii_letter(sc->s[j]))
        return 0;
    return j - sc->i;
}

/* The longest phrase at sc->i and its length in the text, or NULL. */
static const struct phrase *longest_phrase(const struct scan *sc, size_t *len)
{
    const struct phrase *best = NULL;
    *len = 0;
    for (size_t k = 0; k < sizeof phrases / sizeof phrases[0]; k++) {
        size_t m = match(sc, phrases[k].text);
        if (m > *len) {
            best = &phrases[k];
            *len = m;
        }
    }
    return best;
}

/* When a reading starts at sc->i: where it ends, after its unit; else 0. */
static size_t number_at(const struct scan *sc)
{
    const unsigned char *s = sc->s;
    size_t n = sc->n, i = sc->i, len, l2, bare, end, units = 0;
    unsigned c = decode(s, n, i, &len), last = 0;
    if (joins(sc->prev) || ((sc->prev == ':' || sc->prev == '/') && is_digit(sc->prev2)))
        return 0;
    if (is_sign(c)) {
        i += len;
        c = decode(s, n, i, &len);
    }
    if (!is_digit(c))
        return 0;
    while (is_digit(c)) {
        i += len;
        c = decode(s, n, i, &len);
    }
    if (is_point(c) && is_digit(decode(s, n, i + len, &l2))) {
        i += len;
        c = decode(s, n, i, &len);
        while (is_digit(c)) {
            i += len;
            c = decode(s, n, i, &len);
        }
    }
    /* A time, a date, a version: not a reading. */
    if ((c == ':' || c == 0xFF1A || c == '/' || is_point(c)) &&
        is_digit(decode(s, n, i + len, &l2)))
        return 0;
    bare = end = i;
    while (units <= UNIT_MAX &&
           (is_unit(c) || (units && c == '/') || (c >= '0' && c <= '9' && ascii_letter(last)))) {
        i += len;
        units++;
        if (c != '/')
            end = i;
        last = c;
        c = decode(s, n, i, &len);
    }
    return units > UNIT_MAX ? bare : end;
}

static void take_phrase(struct alert_reading *out, struct scan *sc, const struct phrase *p)
{
    if (state_rank[p->state] > state_rank[out->state])
        out->state = p->state;
    if (!out->direction)
        out->direction = p->direction;
    sc->intro = p->intro;
    if (sc->intro == INTRO_LIMIT_WEAK && (sc->depth > 0 || out->value))
        sc->intro = INTRO_LIMIT;
}

static void take_number(struct alert_reading *out, struct scan *sc, size_t end)
{
    char **slot = sc->intro == INTRO_TAG     ? NULL
                  : sc->intro == INTRO_LIMIT ? &out->limit
                                             : &out->value;
    if (slot && !*slot)
        *slot = xstrndup((const char *)sc->s + sc->i, end - sc->i);
    sc->intro = INTRO_NONE;
}

static void take_char(struct scan *sc, unsigned c)
{
    if (c == '(' || c == 0xFF08) { /* （ */
        sc->depth++;
        sc->intro = sc->intro == INTRO_LIMIT_WEAK ? INTRO_LIMIT
                    : sc->intro == INTRO_TAG      ? INTRO_NONE
                                                  : sc->intro;
    } else if (c == ')' || c == 0xFF09) { /* ） */
        sc->depth -= sc->depth > 0;
        sc->intro = INTRO_NONE;
    } else if (!is_gap(c)) {
        sc->intro = INTRO_NONE;
    }
}

void alert_classify(struct alert_reading *out, const char *kind, const char *text)
{
    struct scan sc;
    memset(out, 0, sizeof *out);
    memset(&sc, 0, sizeof sc);
    sc.s = (const unsigned char *)(text ? text : "");
    sc.n = strlen((const char *)sc.s);
    while (sc.i < sc.n) {
        size_t end, len;
        const struct phrase *p = longest_phrase(&sc, &len);
        if (p) {
            take_phrase(out, &sc, p);
            advance(&sc, sc.i + len);
        } else if ((end = number_at(&sc)) != 0) {
            take_number(out, &sc, end);
            advance(&sc, end);
        } else {
            take_char(&sc, decode(sc.s, sc.n, sc.i, &len));
            advance(&sc, sc.i + len);
        }
    }
    for (size_t k = 0;
         out->state == ALERT_OTHER && kind && k < sizeof kind_states / sizeof kind_states[0]; k++)
        if (strcmp(kind, kind_states[k].kind) == 0)
            out->state = kind_states[k].state;
}
