/* Tests of serial.c: the one rule for device serials, and how a serial
 * that breaks it is shown. */
#include "serial.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(serial, .timeout = 20);

Test(serial, eight_letters_or_digits)
{
    const char *good[] = {"5214000A", "52c10001", "ABCDEFGH", "00000000"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_assert_eq(serial_check(good[i], strlen(good[i]), NULL), 0, "%s", good[i]);
    const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {"", 0},         {"5214000", 7},    {"5214000AB", 9}, {"5214-00A", 8},
        {"5214 00A", 8}, {"5214\r\n0A", 8}, {"5214000\0", 8}, {"521400\xC3\xA9", 8},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct err e = {{0}};
        cr_assert_eq(serial_check(bad[i].s, bad[i].n, &e), -1, "case %zu", i);
        cr_assert_str_eq(e.msg, "expected a device serial: exactly 8 letters or digits");
    }
}

Test(serial, shown_escaped_and_short)
{
    char *s = serial_show("5214\r\n\x1b[2J", 10);
    cr_assert_str_eq(s, "\"5214\\r\\n\\x1B[2J\"");
    free(s);
    char long_one[1200];
    memset(long_one, 'A', sizeof long_one);
    s = serial_show(long_one, sizeof long_one);
    cr_assert_lt(strlen(s), 80, "%s", s);
    cr_assert_not_null(strstr(s, "(1200 bytes)"), "%s", s);
    free(s);
}
