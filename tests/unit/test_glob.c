/* glob: literals, '*', '?', classes and escapes over ASCII and Japanese,
 * ASCII-only case folding, every error with its column, texts that are not
 * valid UTF-8, and globs that would make a recursive matcher explode. */
#include "glob.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static void yes(const char *pattern, const char *text)
{
    struct err e = {{0}};
    cr_assert_eq(glob_check(pattern, &e), 0, "'%s': %s", pattern, e.msg);
    cr_assert(glob_match(pattern, text), "'%s' should match '%s'", pattern, text);
}

static void no(const char *pattern, const char *text)
{
    struct err e = {{0}};
    cr_assert_eq(glob_check(pattern, &e), 0, "'%s': %s", pattern, e.msg);
    cr_assert_not(glob_match(pattern, text), "'%s' should not match '%s'", pattern, text);
}

/* The glob is refused with exactly `msg`, and matches none of a few texts,
 * the empty one and the glob itself included. */
static void refused(const char *pattern, const char *msg)
{
    struct err e = {{0}};
    const char *texts[] = {"", "a", "[", "\\", "冷凍庫", "abc]", pattern};
    cr_assert_eq(glob_check(pattern, &e), -1, "'%s' was accepted", pattern);
    cr_assert_str_eq(e.msg, msg, "'%s'", pattern);
    cr_assert_eq(glob_check(pattern, NULL), -1);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        cr_assert_not(glob_match(pattern, texts[i]), "'%s' matched '%s'", pattern, texts[i]);
}

/* ---- literals, '*' and '?' ---- */

Test(glob, literal_matches_the_whole_text)
{
    yes("SN-0001", "SN-0001");
    no("SN-0001", "SN-00011");
    no("SN-0001", "XSN-0001");
    no("SN-0001", "SN-000");
    no("SN-0001", "");
    yes("冷凍庫", "冷凍庫");
    no("冷凍庫", "冷凍");
    no("冷凍庫", "冷凍庫1");
    yes("a/b", "a/b");
}

Test(glob, star_at_the_start_middle_and_end)
{
    yes("*", "");
    yes("*", "anything/at all");
    yes("**", "");
    yes("***x**", "x");
    yes("SN-*", "SN-");
    yes("SN-*", "SN-0001");
    no("SN-*", "SX-0001");
    yes("*-0001", "SN-0001");
    yes("*-0001", "-0001");
    no("*-0001", "SN-0002");
    yes("SN*01", "SN-0001");
    yes("SN*01", "SN01");
    no("SN*01", "SN-0010");
    yes("*冷凍*", "第2冷凍庫");
    yes("*冷凍*", "冷凍");
    no("*冷凍*", "冷蔵庫");
    yes("a*b*c", "a/x/b/y/c"); /* '/' is an ordinary character */
    yes("a*b*c", "abbbc");
    no("a*b*c", "abcb");
    yes("*a*a*", "aa");
    no("*a*a*", "a");
}

Test(glob, question_mark_is_one_character)
{
    yes("SN-000?", "SN-0001");
    no("SN-000?", "SN-000");
    no("SN-000?", "SN-00012");
    yes("?", "/");
    no("?", "");
    no("??", "a");
    /* One Japanese or fullwidth character is one '?', whatever its bytes. */
    yes("冷凍庫?", "冷凍庫1");
    yes("冷凍庫?", "冷凍庫Ａ");
    yes("冷凍庫?", "冷凍庫冷");
    no("冷凍庫?", "冷凍庫");
    no("冷凍庫?", "冷凍庫Ａ1");
    no("冷凍庫??", "冷凍庫Ａ");
    yes("?", "😀"); /* four bytes */
    yes("?", "é");
    yes("???", "aé冷");
    yes("?*?", "冷凍");
    no("?*?", "冷");
}

/* ---- classes ---- */

Test(glob, classes_of_characters_and_ranges)
{
    yes("[abc]", "b");
    no("[abc]", "d");
    no("[abc]", "");
    no("[abc]", "ab");
    yes("SN-[0-9][0-9]", "SN-42");
    no("SN-[0-9][0-9]", "SN-4x");
    yes("[a-cx-z]", "y");
    no("[a-cx-z]", "m");
    yes("[a-a]", "a"); /* a range of one */
    yes("[0-9a-f]*", "3fx");
    no("[0-9a-f]*", "g3");
}

Test(glob, negated_classes)
{
    yes("[!abc]", "d");
    no("[!abc]", "a");
    yes("[^abc]", "d");
    no("[^abc]", "c");
    no("[!0-9]", "5");
    yes("[!0-9]", "x");
    yes("[!0-9]", "冷");
    no("[!abc]", "");
    yes("[a!]", "!"); /* '!' elsewhere is a member */
    yes("[a^]", "^");
    no("[a!]", "b");
}

Test(glob, bracket_and_dash_as_members)
{
    yes("[]]", "]");
    no("[]]", "a");
    yes("[]a]", "a");
    yes("[]a]", "]");
    yes("[!]]", "a");
    no("[!]]", "]");
    yes("[^]]", "a");
    no("[^]]", "]");
    yes("[-a]", "-");
    yes("[-a]", "a");
    no("[-a]", "b");
    yes("[a-]", "-");
    yes("[a-]", "a");
    no("[a-]", "b");
    yes("[!-]", "a");
    no("[!-]", "-");
    yes("[a-]]", "-]"); /* the class {a, -}, then a literal ']' */
    no("[a-]]", "-");
    yes("[]-a]", "_"); /* ']' (0x5D) to 'a' (0x61) */
    no("[]-a]", "-");
    yes("]", "]");
    yes("a]b", "a]b");
}

Test(glob, utf8_classes)
{
    yes("[冷凍]庫", "冷庫");
    yes("[冷凍]庫", "凍庫");
    no("[冷凍]庫", "蔵庫");
    no("[冷凍]庫", "冷凍庫");
    yes("[!冷凍]庫", "蔵庫");
    no("[!冷凍]庫", "冷庫");
    yes("冷凍庫[０-９]", "冷凍庫５"); /* fullwidth digits */
    no("冷凍庫[０-９]", "冷凍庫5");
    yes("[ぁ-ん]", "れ"); /* hiragana */
    no("[ぁ-ん]", "レ");  /* katakana */
    yes("[a😀]", "😀");
    yes("[😀-😂]", "😁");
    yes("[é]", "é");
}

/* ---- escapes ---- */

Test(glob, escapes_match_literally)
{
    yes("\\*", "*");
    no("\\*", "x");
    no("\\*", "");
    yes("\\?", "?");
    no("\\?", "x");
    yes("\\[a]", "[a]");
    no("\\[a]", "a");
    yes("a\\\\b", "a\\b");
    yes("\\a", "a");
    yes("\\冷", "冷");
    yes("*\\*", "5*");
    no("*\\*", "5");
    yes("\\**", "*abc");
    no("\\**", "abc");
    /* In classes too. */
    yes("[\\]]", "]");
    yes("[\\]a]", "a");
    yes("[a\\-z]", "-");
    no("[a\\-z]", "m");
    yes("[\\!a]", "!");
    no("[\\!a]", "b");
    yes("[\\\\]", "\\");
    yes("[\\a-\\c]", "b");
}

/* ---- case ---- */

Test(glob, ascii_letters_fold_and_nothing_else_does)
{
    yes("freezer*", "Freezer 1");
    yes("FREEZER*", "freezer 1");
    yes("FrEeZeR", "fReEzEr");
    yes("[a-f]", "C");
    yes("[A-F]", "c");
    no("[a-f]", "G");
    yes("[!a-f]", "G");
    no("[!a-f]", "C");
    yes("[xyz]", "Y");
    yes("\\A", "a");
    no("é", "É");
    no("É", "é");
    no("[é]", "É");
    no("[à-ê]", "É");
    no("Ａ", "ａ"); /* fullwidth letters are not ASCII */
    no("A", "Ａ");
    yes("@", "@"); /* '@' (0x40) and '`' (0x60) are not letters */
    no("@", "`");
    no("[[]", "{");
    yes("[Z-a]", "z"); /* 'Z' is in the range, so 'z' is too */
    yes("[Z-a]", "A");
    yes("[Z-a]", "_");
    no("[Z-a]", "b");
}

/* ---- errors ---- */

Test(glob, errors_name_the_column)
{
    refused("", "column 1: the glob is empty");
    cr_assert_eq(glob_check(NULL, NULL), -1);
    cr_assert_not(glob_match(NULL, "x"));

    refused("[", "column 1: '[' is not closed");
    refused("abc[def", "column 4: '[' is not closed");
    refused("冷凍庫[12", "column 4: '[' is not closed"); /* columns count characters */
    refused("冷凍庫[a]x[b", "column 8: '[' is not closed");
    refused("[]", "column 1: '[' is not closed"); /* ']' right after '[' is a member */
    refused("[!]", "column 1: '[' is not closed");
    refused("[^]", "column 1: '[' is not closed");
    refused("[\\]", "column 1: '[' is not closed"); /* the ']' is escaped */
    refused("[a\\", "column 1: '[' is not closed");
    refused("[a-", "column 1: '[' is not closed");

    refused("\\", "column 1: '\\' at the end escapes nothing");
    refused("ab\\", "column 3: '\\' at the end escapes nothing");
    refused("冷凍\\", "column 3: '\\' at the end escapes nothing");
    refused("\\\\\\", "column 3: '\\' at the end escapes nothing");

    refused("[z-a]", "column 2: range 'z-a' ends before it starts");
    refused("冷[ab9-0]", "column 5: range '9-0' ends before it starts");
    refused("[a-Z]", "column 2: range 'a-Z' ends before it starts"); /* by code point */
    refused("[凍-冷]", "column 2: range '凍-冷' ends before it starts");
    refused("[!\\z-\\a]", "column 3: range '\\z-\\a' ends before it starts");
    refused("[a-z][z-a", "column 7: range 'z-a' ends before it starts"); /* found first */
}

Test(glob, invalid_utf8_in_the_glob)
{
    refused("\xff", "column 1: invalid UTF-8 (byte 0xFF)");
    refused("ab\x80", "column 3: invalid UTF-8 (byte 0x80)");           /* stray continuation */
    refused("冷凍\xe5\xba", "column 3: invalid UTF-8 (byte 0xE5)");     /* cut short */
    refused("冷\xe5\xbax", "column 2: invalid UTF-8 (byte 0xE5)");      /* cut short */
    refused("\xc0\xaf", "column 1: invalid UTF-8 (byte 0xC0)");         /* overlong '/' */
    refused("x\xe0\x80\xaf", "column 2: invalid UTF-8 (byte 0xE0)");    /* overlong '/' */
    refused("\xed\xa0\x80", "column 1: invalid UTF-8 (byte 0xED)");     /* surrogate U+D800 */
    refused("\xf4\x90\x80\x80", "column 1: invalid UTF-8 (byte 0xF4)"); /* U+110000 */
    refused("\xf5\x80\x80\x80", "column 1: invalid UTF-8 (byte 0xF5)");
    refused("[a\xff]", "column 3: invalid UTF-8 (byte 0xFF)");
    refused("[a-\xff]", "column 4: invalid UTF-8 (byte 0xFF)");
    refused("\\\xff", "column 2: invalid UTF-8 (byte 0xFF)");
    refused("*\xff", "column 2: invalid UTF-8 (byte 0xFF)");
    /* The largest and the longest valid sequences are fine. */
    yes("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");
    yes("\xef\xbf\xbf", "\xef\xbf\xbf");
    yes("\xc2\x80", "\xc2\x80");
}

/* ---- texts that are not valid UTF-8 ---- */

Test(glob, invalid_bytes_in_the_text_are_characters_of_their_own)
{
    yes("?", "\xff");
    yes("??", "\xe5\xba"); /* a cut-short sequence is two characters */
    no("?", "\xe5\xba");
    yes("冷?", "冷\xe5");
    yes("?x", "\xe5x"); /* 'x' is not swallowed as a continuation */
    yes("*", "\xff\xfe\x80");
    yes("a*z", "a\xff\xc0\xafz");
    yes("???", "\xc0\xafx"); /* an overlong form is one character a byte */
    yes("[!a]", "\xff");
    no("[a]", "\xff");
    no("[\x01-\xf4\x8f\xbf\xbf]", "\xff"); /* above every code point */
    no("a", "\xff");
    no("?", "\xed\xa0\x80"); /* a surrogate is three bytes, three characters */
    yes("???", "\xed\xa0\x80");
    no("*a", "a\xf0\x9f\x98"); /* a cut-short emoji at the very end */
    yes("a???", "a\xf0\x9f\x98");
}

Test(glob, a_text_cut_short_at_the_nul_is_not_read_past)
{
    /* A lead byte that promises three more bytes, then the NUL, then the end
     * of the allocation: reading on would be caught by ASan. */
    char *t = malloc(2);
    cr_assert_not_null(t);
    memcpy(t, "\xf0", 2);
    cr_assert(glob_match("?", t));
    cr_assert(glob_match("*", t));
    cr_assert_not(glob_match("??", t));
    memcpy(t, "\xe5", 2);
    cr_assert(glob_match("?", t));
    cr_assert(glob_match("[!x]", t));
    free(t);
}

/* ---- speed ---- */

Test(glob, many_stars_do_not_backtrack_exponentially, .timeout = 10)
{
    static char text[100001];
    memset(text, 'a', 10000);
    text[10000] = '\0';
    no("*a*a*a*a*a*b", text);
    no("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", text);
    no("*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*b", text);
    no("*[a]*[!b]*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*[b]", text);
    yes("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a", text);
    text[9999] = 'b';
    yes("*a*a*a*a*a*b", text);
    memset(text, 'a', 100000);
    text[100000] = '\0';
    no("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", text);
}
