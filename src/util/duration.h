/* Durations as people write them in configuration: "90s", "30m", "1h",
 * "7d", or combined, "1h30m". A bare number is seconds. */
#ifndef WSRELAY_DURATION_H
#define WSRELAY_DURATION_H

/* Parses `text` into seconds. Returns -1 (out untouched) when the text is not
 * a duration or exceeds ten years. */
int duration_parse(long *out, const char *text);

/* Writes `seconds` the way duration_parse reads it, largest units first and
 * zero parts left out: 5400 is "1h30m", 90 is "1m30s", 0 is "0s"; a
 * negative value is written as 0s. `out` of at least 24 bytes. */
void duration_format(char *out, unsigned long size, long seconds);

/* Writes an age for people, in the largest unit that reads well: minutes
 * below two hours ("75 min"), then hours and minutes ("5 h 12 min"), then
 * from two days days and hours ("9 d 3 h"); a part that is zero is left
 * out, and an age below a minute or negative is "0 min". `out` of at
 * least 32 bytes. */
void duration_format_age(char *out, unsigned long size, long long seconds);

#endif
