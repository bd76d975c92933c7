/* Tests of util/utf8.c: what is well-formed (RFC 3629 and Unicode's table
 * of well-formed byte sequences), repair with U+FFFD, cutting at a
 * character boundary, the escaped form for log lines, and the display
 * width that lines up tables of Japanese names. */
#include "util/utf8.h"
#include "util/buf.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define LEN(s) (sizeof(s) - 1)

TestSuite(utf8, .timeout = 20);

Test(utf8, decodes_each_length)
{
    static const struct {
        const char *s;
        size_t n, len;
        uint32_t cp;
    } ok[] = {
        {"A", 1, 1, 0x41},
        {"", 1, 1, 0}, /* the NUL is a character like any other */
        {"\x7F", 1, 1, 0x7F},
        {"\xC2\x80", 2, 2, 0x80},
        {"\xDF\xBF", 2, 2, 0x7FF},
        {"\xE0\xA0\x80", 3, 3, 0x800},
        {"\xE5\x86\xB7", 3, 3, 0x51B7}, /* 冷 */
        {"\xED\x9F\xBF", 3, 3, 0xD7FF},
        {"\xEE\x80\x80", 3, 3, 0xE000},
        {"\xEF\xBF\xBD", 3, 3, 0xFFFD},
        {"\xF0\x90\x80\x80", 4, 4, 0x10000},
        {"\xF0\x9F\x94\xB4", 4, 4, 0x1F534}, /* 🔴 */
        {"\xF4\x8F\xBF\xBF", 4, 4, 0x10FFFF},
        {"\xE5\x86\xB7xyz", 6, 3, 0x51B7}, /* only the first character */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint32_t cp = 0xDEAD;
        cr_assert_eq(utf8_decode(&cp, ok[i].s, ok[i].n), ok[i].len, "case %zu", i);
        cr_assert_eq(cp, ok[i].cp, "case %zu: U+%04X", i, (unsigned)cp);
    }
}

Test(utf8, refuses_what_is_not_well_formed)
{
    static const struct {
        const char *s;
        size_t n;
        const char *why;
    } bad[] = {
        {"\x80", 1, "a continuation byte alone"},
        {"\xBF", 1, "a continuation byte alone"},
        {"\xC0\xAF", 2, "overlong '/'"},
        {"\xC1\xBF", 2, "overlong U+007F"},
        {"\xE0\x80\xAF", 3, "overlong '/' in three bytes"},
        {"\xE0\x9F\xBF", 3, "overlong U+07FF"},
        {"\xF0\x80\x80\xAF", 4, "overlong '/' in four bytes"},
        {"\xF0\x8F\xBF\xBF", 4, "overlong U+FFFF"},
        {"\xED\xA0\x80", 3, "surrogate U+D800"},
        {"\xED\xBF\xBF", 3, "surrogate U+DFFF"},
        {"\xF4\x90\x80\x80", 4, "U+110000"},
        {"\xF5\x80\x80\x80", 4, "a lead byte beyond Unicode"},
        {"\xFF", 1, "0xFF"},
        {"\xFE", 1, "0xFE"},
        {"\xC3", 1, "two bytes cut at the end"},
        {"\xE5\x86", 2, "three bytes cut at the end"},
        {"\xF0\x9F\x94", 3, "four bytes cut at the end"},
        {"\xE5\x86\xB7", 2, "a sequence longer than the bytes given"},
        {"\xC3(", 2, "a lead byte before ASCII"},
        {"\xE5\x86(", 3, "a three-byte sequence broken by ASCII"},
        {"\xF0\x9F\x94(", 4, "a four-byte sequence broken by ASCII"},
        {"A", 0, "nothing at all"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t cp = 0xDEAD;
        cr_assert_eq(utf8_decode(&cp, bad[i].s, bad[i].n), 0, "%s", bad[i].why);
        cr_assert_eq(cp, 0xDEAD, "%s: untouched", bad[i].why);
        if (bad[i].n)
            cr_assert_not(utf8_valid(bad[i].s, bad[i].n), "%s", bad[i].why);
    }
}

Test(utf8, validates_whole_texts)
{
    cr_assert(utf8_valid("", 0));
    cr_assert(utf8_valid("plain ASCII", LEN("plain ASCII")));
    cr_assert(utf8_valid("冷凍庫 -70.2°C 🔴", strlen("冷凍庫 -70.2°C 🔴")));
    cr_assert(utf8_valid("a\0b", 3), "U+0000 is well-formed");
    cr_assert_not(utf8_valid("冷凍庫\xFF", strlen("冷凍庫\xFF")));
    cr_assert_not(utf8_valid("冷凍庫", strlen("冷凍庫") - 1), "cut inside the last character");
}

Test(utf8, cuts_between_characters)
{
    const char *s = "a冷🔴"; /* 1 + 3 + 4 bytes */
    size_t n = strlen(s);
    cr_assert_eq(utf8_cut(s, n, 100), n);
    cr_assert_eq(utf8_cut(s, n, n), n);
    cr_assert_eq(utf8_cut(s, n, 7), 4, "not inside the 4-byte sequence");
    cr_assert_eq(utf8_cut(s, n, 5), 4);
    cr_assert_eq(utf8_cut(s, n, 4), 4);
    cr_assert_eq(utf8_cut(s, n, 3), 1, "not inside the 3-byte sequence");
    cr_assert_eq(utf8_cut(s, n, 1), 1);
    cr_assert_eq(utf8_cut(s, n, 0), 0);
    /* A byte that is not UTF-8 is a character of its own. */
    cr_assert_eq(utf8_cut("\xFF\xFF\xFF", 3, 2), 2);
    cr_assert_eq(utf8_cut("\xE5\x86\xE5\x86\xB7", 5, 4), 2, "a broken sequence, then 冷");
}

Test(utf8, tells_control_characters)
{
    const uint32_t yes[] = {0, '\t', '\n', '\r', 0x1B, 0x1F, 0x7F, 0x80, 0x85, 0x9B, 0x9F};
    const uint32_t no[] = {' ', '~', 0xA0, 0xFFFD, 0x51B7};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        cr_assert(utf8_is_control(yes[i]), "U+%04X", (unsigned)yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_assert_not(utf8_is_control(no[i]), "U+%04X", (unsigned)no[i]);
}

static void expect_clean(const char *s, size_t n, size_t max, enum utf8_controls c,
                         const char *want)
{
    char *got = utf8_clean(s, n, max, c);
    cr_assert_str_eq(got, want);
    cr_assert(utf8_valid(got, strlen(got)));
    cr_assert_leq(strlen(got), max);
    free(got);
}

Test(utf8, clean_replaces_bad_bytes_with_U_FFFD)
{
    expect_clean("Freezer\xFF A", 10, 100, UTF8_CONTROLS_KEEP, "Freezer\xEF\xBF\xBD A");
    /* One U+FFFD per byte that starts no well-formed sequence. */
    expect_clean("\xE5\x86x", 3, 100, UTF8_CONTROLS_KEEP, UTF8_REPLACEMENT UTF8_REPLACEMENT "x");
    expect_clean("\xED\xA0\x80", 3, 100, UTF8_CONTROLS_KEEP,
                 UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT);
    expect_clean("\xC0\xAF", 2, 100, UTF8_CONTROLS_KEEP, UTF8_REPLACEMENT UTF8_REPLACEMENT);
    expect_clean("end\xF0\x9F\x94", 6, 100, UTF8_CONTROLS_KEEP,
                 "end" UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT);
    expect_clean("冷凍庫 🔴", strlen("冷凍庫 🔴"), 100, UTF8_CONTROLS_KEEP, "冷凍庫 🔴");
    expect_clean("", 0, 100, UTF8_CONTROLS_NONE, "");
}

/* Text for people shows where it was cut: "…" within the bound, after
 * whole characters only. */
Test(utf8, clean_shown_ends_a_cut_text_with_an_ellipsis)
{
    const char *s = "a冷🔴b";
    size_t n = strlen(s);
    struct {
        size_t max;
        const char *want;
    } cases[] = {{9, "a冷🔴b"}, {8, "a冷…"}, {7, "a冷…"}, {6, "a…"}, {3, "…"}, {2, "a"}, {0, ""}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = utf8_clean_shown(s, n, cases[i].max, UTF8_CONTROLS_NONE);
        cr_expect_str_eq(got, cases[i].want, "max %zu", cases[i].max);
        cr_expect_leq(strlen(got), cases[i].max);
        free(got);
    }
    char *got = utf8_clean_shown("Freezer Room 12", 15, 10, UTF8_CONTROLS_NONE);
    cr_expect_str_eq(got, "Freezer…");
    free(got);
    got = utf8_clean_shown("Freezer Room 12", 15, 15, UTF8_CONTROLS_NONE);
    cr_expect_str_eq(got, "Freezer Room 12");
    free(got);
}

Test(utf8, clean_handles_control_characters_by_mode)
{
    const char s[] = "a\0b\tc\nd\re\x1b[2Jf\x7Fg\xC2\x9Bh";
    size_t n = LEN(s);
    expect_clean(s, n, 100, UTF8_CONTROLS_KEEP,
                 "a" UTF8_REPLACEMENT "b\tc\nd\re\x1b[2Jf\x7Fg\xC2\x9Bh");
    expect_clean(s, n, 100, UTF8_CONTROLS_LINES, "a b\tc\nd e [2Jf g h");
    expect_clean(s, n, 100, UTF8_CONTROLS_NONE, "a b c d e [2Jf g h");
}

Test(utf8, clean_stops_before_the_character_that_would_pass_max)
{
    const char *s = "a冷🔴b";
    size_t n = strlen(s);
    expect_clean(s, n, 9, UTF8_CONTROLS_NONE, "a冷🔴b");
    expect_clean(s, n, 8, UTF8_CONTROLS_NONE, "a冷🔴");
    expect_clean(s, n, 7, UTF8_CONTROLS_NONE, "a冷");
    expect_clean(s, n, 3, UTF8_CONTROLS_NONE, "a");
    expect_clean(s, n, 0, UTF8_CONTROLS_NONE, "");
    /* A replacement takes three bytes of the budget. */
    expect_clean("ab\xFF", 3, 4, UTF8_CONTROLS_NONE, "ab");
    expect_clean("ab\xFF", 3, 5, UTF8_CONTROLS_NONE, "ab" UTF8_REPLACEMENT);
}

static void expect_escape(const char *s, size_t n, size_t max, const char *want)
{
    char *got = utf8_escape(s, n, max);
    cr_assert_str_eq(got, want);
    for (const char *p = got; *p; p++)
        cr_assert((unsigned char)*p >= 0x20 && *p != 0x7F, "a control byte in %s", got);
    cr_assert(utf8_valid(got, strlen(got)));
    free(got);
}

Test(utf8, escape_shows_every_character)
{
    expect_escape("5214000A", 8, 64, "\"5214000A\"");
    expect_escape("52\r\nwsrelay: ERROR: x", 21, 64, "\"52\\r\\nwsrelay: ERROR: x\"");
    expect_escape("\x1b[2J\t\"q\"\\", 9, 64, "\"\\x1B[2J\\t\\\"q\\\"\\\\\"");
    expect_escape("a\0b", 3, 64, "\"a\\x00b\"");
    expect_escape("\xFF冷\xC2\x9B", 6, 64, "\"\\xFF冷\\xC2\\x9B\"");
    expect_escape("", 0, 64, "\"\"");
}

Test(utf8, escape_is_bounded_and_says_how_long_the_text_was)
{
    char long_serial[1201];
    memset(long_serial, 'A', 1200);
    long_serial[1200] = '\0';
    char *got = utf8_escape(long_serial, 1200, 16);
    cr_assert_str_eq(got, "\"AAAAAAAAAAAAAAAA…\" (1200 bytes)");
    free(got);
    /* Never half an escape or half a character. */
    expect_escape("abc\x1b", 4, 5, "\"abc…\" (4 bytes)");
    expect_escape("ab冷", 5, 4, "\"ab…\" (5 bytes)");
}

#define WIDTH(s) utf8_width(s, LEN(s))

Test(utf8, width_of_ascii_is_its_length)
{
    cr_assert_eq(WIDTH(""), 0);
    cr_assert_eq(WIDTH("Freezer A"), 9);
    cr_assert_eq(WIDTH("-18.5"), 5);
}

Test(utf8, kana_and_kanji_take_two_columns)
{
    cr_assert_eq(WIDTH("冷蔵庫"), 6);
    cr_assert_eq(WIDTH("冷蔵庫 2F"), 9);
    cr_assert_eq(WIDTH("ひらがな"), 8);
    cr_assert_eq(WIDTH("カタカナ"), 8);
    cr_assert_eq(WIDTH("한국"), 4);             /* hangul syllables */
    cr_assert_eq(WIDTH("\xE3\x80\x80"), 2);     /* U+3000 ideographic space */
    cr_assert_eq(WIDTH("\xF0\xA0\x80\x8B"), 2); /* U+2000B, a kanji beyond the BMP */
    cr_assert_eq(WIDTH("\xF0\x9F\x94\xB4"), 2); /* U+1F534, a red circle */
}

Test(utf8, fullwidth_forms_take_two_columns_and_halfwidth_kana_one)
{
    cr_assert_eq(WIDTH("ＡＢＣ"), 6); /* U+FF21.. */
    cr_assert_eq(WIDTH("１２"), 4);   /* U+FF11.. */
    cr_assert_eq(WIDTH("￥"), 2);     /* U+FFE5 */
    cr_assert_eq(WIDTH("ｶﾀｶﾅ"), 4);   /* U+FF76.. halfwidth katakana */
    cr_assert_eq(WIDTH("°C"), 2);     /* ambiguous width counts 1 */
    cr_assert_eq(WIDTH("℃"), 1);
    cr_assert_eq(WIDTH("é"), 1); /* precomposed */
}

Test(utf8, combining_marks_take_no_column)
{
    cr_assert_eq(WIDTH("e\xCC\x81"), 1);                /* e + U+0301 */
    cr_assert_eq(WIDTH("\xE3\x81\x8B\xE3\x82\x99"), 2); /* か + U+3099 (が) */
    cr_assert_eq(WIDTH("a\xE2\x80\x8B"
                       "b"),
                 2);                                    /* U+200B zero width space */
    cr_assert_eq(WIDTH("\xE2\x9C\x8B\xEF\xB8\x8F"), 2); /* U+270B + variation selector 16 */
    cr_assert_eq(utf8_char_width(0x0301), 0);
    cr_assert_eq(utf8_char_width(0x20DD), 0); /* enclosing circle (Me) */
    cr_assert_eq(utf8_char_width(0x00AD), 1); /* the soft hyphen is shown */
}

Test(utf8, width_counts_each_invalid_byte_once_and_controls_not_at_all)
{
    cr_assert_eq(WIDTH("\xFF"), 1);
    cr_assert_eq(WIDTH("a\x80\x80z"), 4);
    cr_assert_eq(WIDTH("\xE5\x86"), 2);     /* a kanji cut short: two bad bytes */
    cr_assert_eq(WIDTH("\xC0\xAF"), 2);     /* overlong */
    cr_assert_eq(WIDTH("\xED\xA0\x80"), 3); /* a surrogate: three bad bytes */
    cr_assert_eq(WIDTH("a\tb\x1b"), 2);
    cr_assert_eq(utf8_width("a\0b", 3), 2);
}

Test(utf8, pad_fills_to_display_width)
{
    struct buf b;
    buf_init(&b, 0);
    utf8_pad(&b, "冷蔵庫", 8);
    utf8_pad(&b, "|", 0);
    utf8_pad(&b, "ab", 4);
    utf8_pad(&b, "|", 1);
    utf8_pad(&b, "toolong", 3);
    cr_assert_str_eq(buf_str(&b), "冷蔵庫  |ab  |toolong");
    buf_free(&b);
}
