/* The simulated platform's world: accounts, their devices and each device's
 * alert log, loaded from a scenario file (format in tests/sim/README.md),
 * and the JSON records the platform answers with, in either dialect.
 *
 * The structures are plain data owned by the `struct scenario` that holds
 * them; scenario_free releases everything. Numeric-looking fields are kept
 * as the text they will be sent as, so that the "strings" dialect sends
 * them verbatim and the "numbers" dialect converts only what is a number. */
#ifndef WSRELAY_SIM_SCENARIO_H
#define WSRELAY_SIM_SCENARIO_H

#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Names of the text members of an alert-log entry, in the order they are
 * sent: ch1 ... ch6, battery-level, communication-status. */
#define SCENARIO_N_KINDS 8
extern const char *const scenario_kinds[SCENARIO_N_KINDS];

enum dialect {
    DIALECT_STRINGS, /* the current API: every numeric value is a JSON string */
    DIALECT_NUMBERS, /* the earlier API: numeric values are JSON numbers */
};

struct alert_entry {
    long long unixtime;
    long long logged_at;          /* served from this virtual time on (>= unixtime) */
    char *text[SCENARIO_N_KINDS]; /* NULL when the entry has no such kind */
    unsigned long seq;            /* insertion order; breaks unixtime ties */
};

struct channel {
    char *name;
    char *unit;
    char *value; /* a number as text, or an error word such as "Sensor Error" */
};

/* What a device uploaded: served by Get Current Readings from `at` on, until
 * the next reading's `at`, and by the graph-data operations from `at` on. */
struct reading {
    long long at;       /* the upload's virtual time */
    long long unixtime; /* the measurement's time, sent as the record's unixtime */
    char **values;      /* one per channel of the device, as text */
    char *battery;      /* NULL: the device's own battery field */
    long data_id;       /* 0 to 65535: the given one, or the previous reading's + 1 */
};

struct device {
    char *num; /* remote unit number; "0" for a standalone device */
    char *serial, *model, *name;
    char *base_serial, *base_model, *base_name;
    char *group_num, *group_name;
    char *time_diff, *std_bias;
    char *dst_flg; /* NULL: the member is left out of responses */
    char *battery, *rssi;
    bool alert_supported;
    bool graph_supported; /* false: the graph-data operations answer 400 */
    long first_data_id;   /* the data-id of the first reading that gives none */
    struct channel *channels;
    size_t n_channels;
    struct alert_entry *alerts; /* unordered; responses sort them */
    size_t n_alerts, cap_alerts;
    struct reading *readings; /* sorted by `at` (ties keep their order) */
    size_t n_readings, cap_readings;
};

struct account {
    char *api_key, *login_id, *login_pass;
    enum dialect dialect;
    struct device *devices;
    size_t n_devices;
};

struct scenario {
    long long now; /* the initial virtual clock */
    struct account *accounts;
    size_t n_accounts;
    unsigned long next_seq;
};

/* Loads and validates the scenario in `path` (at most 16 MiB). On failure
 * returns -1 with "PATH: WHERE: what" in `e` (e.g. "s.json: accounts[0].
 * devices[2]: unknown key 'seriall'"); *out is untouched. The caller frees
 * *out with scenario_free. */
int scenario_load(struct scenario **out, const char *path, struct err *e);

/* The same from text already in memory; `name` prefixes messages. */
int scenario_parse(struct scenario **out, const char *text, size_t len, const char *name,
                   struct err *e);

void scenario_free(struct scenario *s);

/* The device with `serial` in `a`, or NULL. */
struct device *scenario_find_device(const struct account *a, const char *serial);

/* Adds an alert-log entry (an object as in the scenario file's "alerts") to
 * every device whose serial is `serial`, in any account. Fails (nothing
 * added) when the entry is malformed or no device has that serial. */
int scenario_add_alert(struct scenario *s, const char *serial, const struct json_object *alert,
                       struct err *e);

/* Appends a reading (an object as in the scenario file's "readings") to
 * every device whose serial is `serial`, in any account. Fails (nothing
 * added) when the reading is malformed, its values do not match a device's
 * channels, its `at` lies before a device's last reading, or no device has
 * that serial. */
int scenario_add_reading(struct scenario *s, const char *serial, const struct json_object *reading,
                         struct err *e);

/* How many of d's readings are uploaded at `now` (at <= now): they are the
 * first ones of d->readings. A binary search. */
size_t scenario_readings_due(const struct device *d, long long now);

/* True when `text` is a JSON number ("-7.5", "12", "1e3"; not "", " 1",
 * "Sensor Error"). */
bool scenario_is_number(const char *text);

/* A numeric field as the dialect sends it: always a string in the current
 * dialect; a number in the earlier one when the text is a number (an empty
 * rssi or an error word stays a string, as on the real platform). New
 * reference. */
struct json_object *scenario_numeric(enum dialect d, const char *text);

/* scenario_numeric of the decimal text of `v`. */
struct json_object *scenario_numeric_ll(enum dialect d, long long v);

/* A device record of Get Current Readings, as of `now`: the latest reading
 * with at <= now (its unixtime, values and battery), or, before the first
 * one and for devices without readings, the static fields with unixtime =
 * now. New reference. */
struct json_object *scenario_device_record(const struct account *a, const struct device *d,
                                           long long now);

/* The alert log record of Get Alert Logs: of the entries already logged
 * (logged_at <= now), the 20 newest by unixtime, newest first. New
 * reference. */
struct json_object *scenario_alert_record(const struct account *a, const struct device *d,
                                          long long now);

#endif
