/* Tests of alerttext.c: a table of alert texts, English and Japanese, with
 * the state, value, limit and direction each must give. */
#include "alerttext.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

struct sample {
    const char *kind;
    const char *text;
    enum alert_state state;
    const char *value; /* NULL: none */
    const char *limit;
    int direction;
};

static const struct sample samples[] = {
    /* The simulator's demo texts. */
    {"ch1", "CH1 Upper Limit Exceeded -70.2°C (limit -75.0°C)", ALERT_ALARM, "-70.2°C", "-75.0°C",
     1},
    {"ch1", "CH1 Measurement Recovery -78.9°C", ALERT_RECOVERED, "-78.9°C", NULL, 0},
    {"battery-level", "Low Battery Warning", ALERT_BATTERY, NULL, NULL, 0},
    {"ch1", "CH1 上限値警報 12.3℃ (上限 8.0℃)", ALERT_ALARM, "12.3℃", "8.0℃", 1},
    {"ch1", "CH1 正常復帰 7.1℃", ALERT_RECOVERED, "7.1℃", NULL, 0},
    {"ch1", "CH1 Upper Limit Exceeded 9.4°C (limit 8.0°C)", ALERT_ALARM, "9.4°C", "8.0°C", 1},
    {"communication-status", "Communication Error", ALERT_COMMUNICATION, NULL, NULL, 0},
    {"ch1", "CH1 Lower Limit Exceeded 1.8°C (limit 2.0°C)", ALERT_ALARM, "1.8°C", "2.0°C", -1},
    {"ch2", "CH2 Sensor Error", ALERT_SENSOR_ERROR, NULL, NULL, 0},
    /* The fixtures' texts. */
    {"ch2", "CH2 下限値警報 20.5%", ALERT_ALARM, "20.5%", NULL, -1},
    {"battery-level", "電池残量低下", ALERT_BATTERY, NULL, NULL, 0},
    {"ch2", "CH2 Upper limit 5.2 C (limit 4.0 C)", ALERT_ALARM, "5.2", "4.0", 1},
    {"communication-status", "Communication error", ALERT_COMMUNICATION, NULL, NULL, 0},
    {"ch1", "CH1 High Limit 8.0°C \\ exceeded", ALERT_ALARM, "8.0°C", NULL, 1},
    /* Empty, bare tags, no number, unknown wording. */
    {"ch1", "", ALERT_OTHER, NULL, NULL, 0},
    {"battery-level", "", ALERT_BATTERY, NULL, NULL, 0},
    {"ch1", "CH1", ALERT_OTHER, NULL, NULL, 0},
    {"ch3", "CH 3", ALERT_OTHER, NULL, NULL, 0},
    {"ch1", "E01", ALERT_OTHER, NULL, NULL, 0},
    {"ch1", "CH1 Upper Limit Exceeded", ALERT_ALARM, NULL, NULL, 1},
    {"ch1", "CH1 late", ALERT_OTHER, NULL, NULL, 0},
    {"ch1", "CH1 Alarm 9.9", ALERT_OTHER, "9.9", NULL, 0},
    {"communication-status", "Link state 3", ALERT_COMMUNICATION, "3", NULL, 0},
    {"battery-level", "2", ALERT_BATTERY, "2", NULL, 0},
    {NULL, "Low Battery", ALERT_BATTERY, NULL, NULL, 0},
    {"ch7", "nothing known", ALERT_OTHER, NULL, NULL, 0},
    /* Case and odd spacing. */
    {"ch1", "  ch1   upper   LIMIT exceeded   -70.2°C", ALERT_ALARM, "-70.2°C", NULL, 1},
    {"ch1", "CH1\tBACK TO\u3000NORMAL 4.0°C", ALERT_RECOVERED, "4.0°C", NULL, 0},
    {"ch1", "CH1 Upper Limit Exceeded 9.4°C(limit 8.0°C)", ALERT_ALARM, "9.4°C", "8.0°C", 1},
    {"ch1", "CH1 Upper Limit Exceeded -70.2 (limit -75.0)", ALERT_ALARM, "-70.2", "-75.0", 1},
    /* Recovery wins, and says which limit it ended; negations are not recoveries. */
    {"ch1", "CH1 Upper Limit Exceeded → recovered", ALERT_RECOVERED, NULL, NULL, 1},
    {"ch1", "CH1 Upper limit recovery 7.0°C", ALERT_RECOVERED, "7.0°C", NULL, 1},
    {"ch1", "CH1 上限値警報 復帰 7.9℃", ALERT_RECOVERED, "7.9℃", NULL, 1},
    {"ch1", "CH1 Not recovered 9.0°C", ALERT_OTHER, "9.0°C", NULL, 0},
    {"ch1", "CH1 上限値警報 未復帰 9.0℃", ALERT_ALARM, "9.0℃", NULL, 1},
    {"ch1", "CH1 Unrecoverable sensor error", ALERT_SENSOR_ERROR, NULL, NULL, 0},
    {"battery-level", "Battery recovered", ALERT_RECOVERED, NULL, NULL, 0},
    {"communication-status", "通信復帰", ALERT_RECOVERED, NULL, NULL, 0},
    {"ch1", "正常に戻りました 7.0℃", ALERT_RECOVERED, "7.0℃", NULL, 0},
    /* Other states, both languages. */
    {"ch5", "CH5 センサエラー", ALERT_SENSOR_ERROR, NULL, NULL, 0},
    {"ch1", "CH1 センサ警報", ALERT_SENSOR_ERROR, NULL, NULL, 0},
    {"battery-level", "電池残量警報", ALERT_BATTERY, NULL, NULL, 0},
    {"communication-status", "通信異常", ALERT_COMMUNICATION, NULL, NULL, 0},
    {"ch1", "Communication failure", ALERT_COMMUNICATION, NULL, NULL, 0},
    {"ch1", "CH1 Sensor Error (upper limit 8.0°C)", ALERT_SENSOR_ERROR, NULL, "8.0°C", 1},
    /* Units, signs, limits after words. */
    {"ch3", "CH3 Upper Limit Exceeded 55% (limit 50%)", ALERT_ALARM, "55%", "50%", 1},
    {"ch1", "CH1 Upper limit exceeded, threshold: 8.0°C, now 9.1°C", ALERT_ALARM, "9.1°C", "8.0°C",
     1},
    {"ch4", "CH4 下限値警報 -3℃（閾値：-2℃）", ALERT_ALARM, "-3℃", "-2℃", -1},
    {"ch1", "CH1 上限 8.0℃", ALERT_ALARM, "8.0℃", NULL, 1},
    {"ch1", "CH1 12.3℃ 上限 8.0℃", ALERT_ALARM, "12.3℃", "8.0℃", 1},
    {"ch1", "CH 1 Lower limit 1.5", ALERT_ALARM, "1.5", NULL, -1},
    {"ch1", "+5.0°C", ALERT_OTHER, "+5.0°C", NULL, 0},
    {"ch1", "CH1 温度 −12.5℃", ALERT_OTHER, "−12.5℃", NULL, 0},
    {"ch2", "CH2 上限値警報 3.2mW/cm2", ALERT_ALARM, "3.2mW/cm2", NULL, 1},
    {"ch1", "12.3abcdefghijklmnop", ALERT_OTHER, "12.3", NULL, 0},
    /* Full-width digits, sign and point are read and copied as written. */
    {"ch1", "CH1 上限値警報 １２．３℃ (上限 ８．０℃)", ALERT_ALARM, "１２．３℃", "８．０℃", 1},
    {"ch1", "ＣＨ１ 下限値警報 －５℃", ALERT_ALARM, "－５℃", NULL, -1},
    /* Times, dates and versions are not readings. */
    {"ch1", "CH1 12:30 Upper limit exceeded", ALERT_ALARM, NULL, NULL, 1},
    {"ch1", "2024/05/01 CH1 上限値警報 12.3℃", ALERT_ALARM, "12.3℃", NULL, 1},
    {"ch1", "v1.2.3 TR-72 CH1 4.5", ALERT_OTHER, "4.5", NULL, 0},
    /* Broken UTF-8: kept whole characters only. */
    {"ch1", "CH1 \xff\xfe 12.3\xe2\x84 Upper limit", ALERT_ALARM, "12.3", NULL, 1},
    {"ch1", "CH1 12.3\xc2", ALERT_OTHER, "12.3", NULL, 0},
};

static void expect_str(const char *got, const char *want, const char *what, const char *text)
{
    if (!want)
        cr_expect_null(got, "%s: %s: want NULL, got '%s'", text, what, got ? got : "");
    else
        cr_expect(got && strcmp(got, want) == 0, "%s: %s: want '%s', got '%s'", text, what, want,
                  got ? got : "(null)");
}

TestSuite(alerttext, .timeout = 20);

Test(alerttext, samples)
{
    cr_assert_geq(sizeof samples / sizeof samples[0], 30);
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        const struct sample *s = &samples[i];
        struct alert_reading r;
        alert_classify(&r, s->kind, s->text);
        cr_expect_str_eq(alert_state_name(r.state), alert_state_name(s->state), "%s", s->text);
        expect_str(r.value, s->value, "value", s->text);
        expect_str(r.limit, s->limit, "limit", s->text);
        cr_expect_eq(r.direction, s->direction, "%s: direction %d, want %d", s->text, r.direction,
                     s->direction);
        alert_reading_clear(&r);
        cr_expect_null(r.value);
        cr_expect_null(r.limit);
    }
}

Test(alerttext, null_text_and_kind)
{
    struct alert_reading r;
    alert_classify(&r, "communication-status", NULL);
    cr_expect_eq(r.state, ALERT_COMMUNICATION);
    cr_expect_null(r.value);
    alert_reading_clear(&r);
    alert_classify(&r, NULL, NULL);
    cr_expect_eq(r.state, ALERT_OTHER);
    alert_reading_clear(&r);
    alert_reading_clear(NULL);
}

Test(alerttext, state_names)
{
    static const char *const names[] = {"other",        "alarm",   "recovered",
                                        "sensor-error", "battery", "communication"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        enum alert_state s = ALERT_OTHER;
        cr_expect_str_eq(alert_state_name((enum alert_state)i), names[i]);
        cr_expect(alert_state_from_name(&s, names[i]));
        cr_expect_eq(s, (enum alert_state)i);
    }
    cr_expect_str_eq(alert_state_name((enum alert_state)99), "other");
    enum alert_state s = ALERT_BATTERY;
    cr_expect_not(alert_state_from_name(&s, "Alarm"));
    cr_expect_not(alert_state_from_name(&s, NULL));
    cr_expect_not(alert_state_from_name(&s, ""));
    cr_expect_eq(s, ALERT_BATTERY);
}

/* Every byte string of up to three bytes from an alphabet of awkward bytes:
 * whatever comes back lies inside the text, whole characters only. */
Test(alerttext, short_byte_strings)
{
    static const unsigned char alphabet[] = {'1',  '-',  '.',  '(',  'C',  ' ',
                                             0xe2, 0x84, 0x83, 0xff, 0xef, 0xbc};
    const size_t n = sizeof alphabet;
    char text[4];
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b <= n; b++)
            for (size_t c = 0; c <= n; c++) {
                struct alert_reading r;
                text[0] = (char)alphabet[a];
                text[1] = b < n ? (char)alphabet[b] : '\0';
                text[2] = b < n && c < n ? (char)alphabet[c] : '\0';
                text[3] = '\0';
                alert_classify(&r, "ch1", text);
                cr_assert(r.state == ALERT_OTHER);
                if (r.value)
                    cr_assert_not_null(strstr(text, r.value));
                alert_reading_clear(&r);
            }
}
