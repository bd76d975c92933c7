/* The devices of a Get Current Readings reply (the platform's device
 * list), each with its latest reading: the parser of that reply, as
 * event.h is the alert log's and series.h the graph data's. It owns struct
 * device_info and struct channel_info and what devicelist_parse
 * makes of a reply; the call that fetches the reply is platform.h's. */
#ifndef WSRELAY_DEVICELIST_H
#define WSRELAY_DEVICELIST_H

#include "util/err.h"

#include <stddef.h>

/* One channel of a device's current reading. */
struct channel_info {
    int num;     /* 1-based; the record's position when it gives none */
    char *name;  /* "" when not given */
    char *unit;  /* "" when not given */
    char *value; /* a number as text, or an error value ("E…", "Sensor Error"); "" when absent */
};

#define PLATFORM_CHANNELS_MAX 8 /* channels kept of one record (the platform has up to 6) */

/* A device as Get Current Readings lists it, with its latest reading.
 * Every string is valid UTF-8 without control characters; the serials
 * follow serial.h. */
struct device_info {
    char *serial;
    char *model;
    char *name;
    char *base_serial; /* baseunit.serial; the device's own serial when standalone */
    char *base_model;
    char *base_name;
    char *group_name;   /* "" without a group */
    long long unixtime; /* the reading's time; 0 when absent or not a number */
    int battery;        /* the battery level; 0 when absent or not a number */
    char *rssi;         /* the radio signal strength as sent; "" when absent */
    int utc_offset;     /* minutes east of UTC of the device's local time: time_diff,
                           plus dst_bias (60 when absent) when dst_flg is 1; 0 when
                           absent or beyond a day */
    struct channel_info *channels;
    size_t n_channels; /* at most PLATFORM_CHANNELS_MAX */
    char *strings;     /* not NULL: the one allocation that holds every string
                          above and of the channels (devicelist_parse
                          makes them so); NULL: each is its own. device_info_free
                          frees either */
};

/* Lists the devices of a Get Current Readings body of the account named
 * `account` (for warnings; NULL: not named). `baseunit` and `group` may be
 * objects or one-element arrays; values strings or numbers. A record
 * without a serial, or whose serial or base unit's serial breaks the rule
 * of serial.h, is skipped with one warning that names the account and
 * shows the serial escaped: the platform could not be asked about it, and
 * it must not reach a log line, a mail header or the state as it came.
 * Names, models and group names are repaired rather than refused: a byte
 * that is not UTF-8 becomes U+FFFD, a control character a space, and each
 * is cut to PLATFORM_NAME_MAX bytes (platform.h); so are channel names, units and
 * values. A reading's unixtime and battery that are missing or not
 * integers are 0; a channel without a usable `num` takes its position.
 * *out (caller frees with
 * device_info_free) is an array of *n devices.
 *
 * `text` is the reply's body (`len` bytes, as platform_reply's text
 * holds it), read with util/jscan.h rather than built into a json-c tree,
 * with the results json-c's reading gave: of members of the same name the
 * last counts, a null member is absent, a member named with '_' is also
 * found named with '-' (util/jsonv.h, jsonv_member), a number reads as the
 * text json-c gives it. Fails when the text is not one JSON object (white
 * space and NUL bytes may follow it), or when its `devices` is missing or
 * not an array; the warnings of skipped records are only given when it
 * does not fail. */
int devicelist_parse(struct device_info **out, size_t *n, const char *text, size_t len,
                     const char *account, struct err *e);

/* Frees the `n` devices of `d` and the array, whether their strings are
 * one block (devicelist_parse's) or each its own. NULL is fine. */
void device_info_free(struct device_info *d, size_t n);

#endif
