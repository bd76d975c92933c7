/* Fuzzes the alert-text classifier. The first byte picks the kind ('0' is
 * ch1 ... '5' ch6, '6' battery-level, '7' communication-status, '8' none;
 * other bytes wrap around), the rest is the text. Checks that the reading
 * is a known state and direction, that value and limit are pieces of the
 * text, whole UTF-8 characters when the text is valid UTF-8, and that the
 * same text always reads the same. */
#include "alerttext.h"
#include "fuzz.h"
#include "util/xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {
    "ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "battery-level", "communication-status", NULL};

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
static bool valid_utf8(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, lo = 0x80, hi = 0xBF;
        size_t need = 0;
        if (c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 2, lo = c == 0xE0 ? 0xA0 : lo, hi = c == 0xED ? 0x9F : hi;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 3, lo = c == 0xF0 ? 0x90 : lo, hi = c == 0xF4 ? 0x8F : hi;
        else
            return false;
        for (size_t k = 1; k <= need; k++) {
            unsigned b = s[k];
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
                return false;
        }
        s += need + 1;
    }
    return true;
}

static void check_piece(const char *piece, const char *text, bool utf8)
{
    if (!piece)
        return;
    if (!*piece || !strstr(text, piece))
        abort();
    if (utf8 && !valid_utf8((const unsigned char *)piece))
        abort();
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct alert_reading r, again;
    enum alert_state s;
    const char *kind;
    char *text;
    bool utf8;
    if (size == 0)
        return 0;
    kind = kinds[(unsigned)(data[0] - '0') % (sizeof kinds / sizeof kinds[0])];
    text = xstrndup((const char *)data + 1, size - 1);
    utf8 = valid_utf8((const unsigned char *)text);
    alert_classify(&r, kind, text);
    if (!alert_state_from_name(&s, alert_state_name(r.state)) || s != r.state)
        abort();
    if (r.direction < -1 || r.direction > 1)
        abort();
    check_piece(r.value, text, utf8);
    check_piece(r.limit, text, utf8);
    alert_classify(&again, kind, text);
    if (again.state != r.state || again.direction != r.direction || !same(again.value, r.value) ||
        !same(again.limit, r.limit))
        abort();
    alert_reading_clear(&again);
    alert_reading_clear(&r);
    free(text);
    return 0;
}
