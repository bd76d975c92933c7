/* A device's readings over time, as the platform's graph-data operations
 * give them (Get Latest Data, Get Data by Period and Number, and their
 * base-attached -rtr500 variants): the device's names and clock, its
 * channels, and the readings, oldest first.
 *
 * series_parse_json reads the JSON record of either operation family
 * (standalone members such as `time_diff`, base-attached ones such as
 * `time-diff`) in either dialect (values as strings, or as numbers);
 * series_parse_csv reads the csv2 layout (and csv, which standalone
 * devices answer in the same layout). Both repair rather than refuse what
 * a reading holds (an error value such as "E-001" or "Sensor Error" is a
 * reading without a value), and refuse only a body that is not a record
 * at all. */
#ifndef WSRELAY_SERIES_H
#define WSRELAY_SERIES_H

#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define SERIES_CHANNELS_MAX 4 /* ch1 to ch4: the most a graph-data record has */

struct series_channel {
    int num;    /* 1 to 4: the data member ch<num> (a record numbering from 0 is shifted) */
    char *name; /* "" when not given */
    char *unit; /* "" when not given; as sent ("°C", "C", "%", ...) */
};

/* One reading: v[c] is the value of member ch<c+1>, the channel whose num
 * is c+1. A channel without a value (absent, or an error value) has its
 * bit in `valid` clear and its `v` 0. */
struct series_point {
    long long unixtime;
    long data_id;   /* 0 to 65535; -1 when absent (csv layouts have none) */
    unsigned valid; /* bit c: v[c] holds channel c+1's value */
    double v[SERIES_CHANNELS_MAX];
};

struct series {
    char *serial; /* remote-serial (serial for a standalone record); "" when absent */
    char *model, *name;
    char *base_serial; /* the serial itself for a standalone record */
    int utc_offset;    /* minutes east of UTC of the device's local time: time difference,
                          plus dst_bias (60 when absent) when daylight saving is on */
    struct series_channel channels[SERIES_CHANNELS_MAX];
    size_t n_channels;
    struct series_point *points; /* oldest first, by unixtime (ties keep their order) */
    size_t n_points;
};

/* Reads a graph-data JSON record into *out (zeroed by the caller; release
 * with series_free). Texts are repaired as the device list's are
 * (platform.h: valid UTF-8, no control characters, cut to
 * PLATFORM_NAME_MAX bytes). Readings without a usable unixtime are
 * skipped. Fails only when `body` is not an object or has no `data`
 * array. */
int series_parse_json(struct series *out, const struct json_object *body, struct err *e);

/* Reads a csv2 (or standalone csv) body of `len` bytes into *out (zeroed
 * by the caller). The readings' times come from the first column (local
 * date and time) and the time difference and daylight saving of line 2;
 * the channel names come from line 2, the units from line 3. Fails, with
 * the line named, when the first three lines are not that layout or a
 * reading's time cannot be read; *out is then empty. */
int series_parse_csv(struct series *out, const char *text, size_t len, struct err *e);

/* The index in channels[] of the channel numbered `num` (1 to 4), or -1
 * when the series has none. */
int series_channel_index(const struct series *s, int num);

/* Whether `b` follows `a` without a reading missing between them: their
 * data-ids are consecutive, 65535 being followed by 0. Points without a
 * data-id (csv) always follow. */
bool series_follows(const struct series_point *a, const struct series_point *b);

/* Releases what *s owns and zeroes it; NULL is accepted. */
void series_free(struct series *s);

#endif
