/* What an alert text says: its state (alarm, recovered, ...), the measured
 * value and the limit.
 *
 * The platform does not publish its alert texts ("a channel tag, an event
 * phrase ... or a battery-level state phrase"), so this reading is a guess
 * made from a table of known phrases in English and Japanese, and it is
 * conservative: wording it does not know gives ALERT_OTHER, never an error,
 * and the raw text always travels with the event, unchanged, for a person
 * to read. Pure: no I/O, no clock, no JSON. */
#ifndef WSRELAY_ALERTTEXT_H
#define WSRELAY_ALERTTEXT_H

#include <stdbool.h>

enum alert_state {
    ALERT_OTHER,         /* nothing known in the text (and the kind says nothing) */
    ALERT_ALARM,         /* a limit was crossed: "Upper Limit Exceeded", 上限値警報 */
    ALERT_RECOVERED,     /* back to normal: "Measurement Recovery", 正常復帰 */
    ALERT_SENSOR_ERROR,  /* "Sensor Error", センサエラー */
    ALERT_BATTERY,       /* "Low Battery Warning", 電池残量警報, or a battery-level text */
    ALERT_COMMUNICATION, /* "Communication Error", 通信異常, or a communication-status text */
};

/* "other", "alarm", "recovered", "sensor-error", "battery", "communication";
 * "other" for a value outside the enum. A static string. */
const char *alert_state_name(enum alert_state s);

/* The state whose name is `name` (as alert_state_name writes it). False,
 * *out untouched, for NULL or any other string. */
bool alert_state_from_name(enum alert_state *out, const char *name);

struct alert_reading {
    enum alert_state state;
    char *value;   /* the measured value as written, with a unit that follows it
                      directly ("-70.2°C", "12.3℃", "55%"); NULL when not shown */
    char *limit;   /* the limit, likewise; NULL when not shown */
    int direction; /* +1 upper limit, -1 lower limit, 0 not said */
};

/* Reads `text` (any bytes; NULL is taken as "") of an alert of `kind`
 * ("ch1".."ch6", "battery-level", "communication-status"; NULL or any other
 * string is a kind that says nothing) into `out`, whose previous contents
 * are overwritten, not freed. Cannot fail; `value` and `limit` are new
 * strings owned by the caller (alert_reading_clear).
 *
 * The rules, in full:
 * - Phrases come from the table in alerttext.c. ASCII letters match in
 *   either case and only as whole words ("recovered" is not found in
 *   "unrecoverable"); Japanese phrases match exactly; a space in a phrase
 *   matches any run of spaces, tabs or ideographic spaces. At each place in the
 *   text the longest phrase wins, so "Not recovered" and 未復帰 ("not yet
 *   recovered") are read as themselves, not as recoveries.
 * - When phrases of several states appear, the state is the one ranked
 *   highest in: recovered, sensor-error, alarm, communication, battery.
 *   Recovered wins because a recovery text names what it recovers from
 *   ("Upper limit recovery", 上限値警報 復帰), while an alarm text has no
 *   reason to say "recovered".
 * - When the text names no state, the kind decides: battery-level gives
 *   battery, communication-status gives communication, a channel other.
 * - direction comes from the first phrase that names the upper or lower
 *   limit (also in a recovery: "Upper limit recovery" is +1).
 * - A number is an optional sign, digits, and optionally a decimal point
 *   and digits. Full-width digits, sign and point (－１２．３) are read too
 *   and copied as written. A number that continues a word ("CH1", "E01",
 *   "TR-72"), follows a channel tag ("CH 1"), or is part of a time or date
 *   ("12:30", "2024/05") is not a reading. A unit is kept when it follows
 *   the number directly: ASCII letters, %, ％, °, ℃, ℉, µ, ², ³ and '/'
 *   ("9.4°C", "3.2mW/cm2"); "5.2 C" gives "5.2".
 * - The limit is the first number introduced by a limit word ("limit",
 *   "threshold", 閾値, しきい値), or by an upper/lower word ("Upper limit",
 *   上限, 下限 ...) when it is inside parentheses or the value came before
 *   it; only spaces, ':', '=' and '(' may stand between the word and the
 *   number. "CH1 Upper Limit Exceeded -70.2°C (limit -75.0°C)" and
 *   "CH1 上限値警報 12.3℃ (上限 8.0℃)" give both; "CH2 Upper limit 5.2 C"
 *   gives the value 5.2.
 * - The value is the first number that is none of the above. */
void alert_classify(struct alert_reading *out, const char *kind, const char *text);

/* Frees value and limit and zeroes `r`; accepts NULL. */
void alert_reading_clear(struct alert_reading *r);

#endif
