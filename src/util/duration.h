/* Durations as people write them in configuration: "90s", "30m", "1h",
 * "7d", or combined, "1h30m". A bare number is seconds. */
#ifndef WSRELAY_DURATION_H
#define WSRELAY_DURATION_H

/* Parses `text` into seconds. Returns -1 (out untouched) when the text is not
 * a duration or exceeds ten years. */
int duration_parse(long *out, const char *text);

#endif
