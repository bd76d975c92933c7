/* Loading a scenario file into the simulator's world, and turning devices
 * into the JSON records that the platform's Get Current Readings and Get
 * Alert Logs return. Loading is strict (unknown keys are errors) so that a
 * typo in a test's scenario fails loudly instead of silently using a
 * default. */
#include "scenario.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SCENARIO_MAX_BYTES (16u * 1024 * 1024)
#define ALERTS_RETURNED 20
#define DATA_ID_MAX 65535 /* data-ids run 0 to 65535, then start at 0 again */

const char *const scenario_kinds[SCENARIO_N_KINDS] = {
    "ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "battery-level", "communication-status"};

/* Where in the file a value sits, for messages: "accounts[0].devices[2]". */
struct where {
    const char *file;
    char path[256];
};

static int fail(struct err *e, const struct where *w, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct err *e, const struct where *w, const char *fmt, ...)
{
    char what[ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (w->path[0])
        return err_set(e, "%s: %s: %s", w->file, w->path, what);
    return err_set(e, "%s: %s", w->file, what);
}

static void where_sub(struct where *out, const struct where *parent, const char *key, long index)
{
    out->file = parent->file;
    const char *dot = parent->path[0] ? "." : "";
    int n;
    if (index >= 0)
        n = snprintf(out->path, sizeof out->path, "%s%s%s[%ld]", parent->path, dot, key, index);
    else
        n = snprintf(out->path, sizeof out->path, "%s%s%s", parent->path, dot, key);
    if (n < 0 || (size_t)n >= sizeof out->path)
        memcpy(out->path + sizeof out->path - 4, "...", 4); /* too deep to name in full */
}

/* Rejects members of `obj` that are not in the NULL-terminated `allowed`. */
static int check_keys(const struct json_object *obj, const char *const allowed[],
                      const struct where *w, struct err *e)
{
    json_object_object_foreach((struct json_object *)obj, key, val)
    {
        (void)val;
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i])
            return fail(e, w, "unknown key '%s'", key);
    }
    return 0;
}

static int need_object(const struct json_object *v, const struct where *w, struct err *e)
{
    if (!json_object_is_type(v, json_type_object))
        return fail(e, w, "must be an object");
    return 0;
}

/* A string member: *out is a copy, or a copy of `dflt` when the member is
 * absent and `dflt` is not NULL; absent without default is an error. */
static int get_string(char **out, const struct json_object *obj, const char *key, const char *dflt,
                      const struct where *w, struct err *e)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v)) {
        if (!dflt)
            return fail(e, w, "'%s' is required", key);
        *out = xstrdup(dflt);
        return 0;
    }
    if (!json_object_is_type(v, json_type_string))
        return fail(e, w, "'%s' must be a string", key);
    *out = xstrdup(json_object_get_string(v));
    return 0;
}

/* A value sent as a number or a numeric string, kept as text: *out is a
 * copy of a string, or the text of a number. JSON null gives *out NULL when
 * `null_ok`. Fails (nothing allocated) for any other type. */
static int value_text(char **out, const struct json_object *cv, bool null_ok)
{
    struct json_object *v = (struct json_object *)cv; /* json-c's getters take no const */
    switch (json_object_get_type(v)) {
    case json_type_string:
        *out = xstrdup(json_object_get_string(v));
        return 0;
    case json_type_int:
        *out = xasprintf("%" PRId64, json_object_get_int64(v));
        return 0;
    case json_type_double:
        *out = xstrdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        return 0;
    case json_type_null:
        if (null_ok) {
            *out = NULL;
            return 0;
        }
        break;
    default:
        break;
    }
    return -1;
}

/* A numeric member (see value_text), or a copy of `dflt` when absent. */
static int get_numtext(char **out, const struct json_object *obj, const char *key, const char *dflt,
                       bool null_ok, const struct where *w, struct err *e)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v)) {
        *out = xstrdup(dflt);
        return 0;
    }
    if (value_text(out, v, null_ok) < 0)
        return fail(e, w, "'%s' must be a string or a number", key);
    return 0;
}

static int get_int64(long long *out, const struct json_object *obj, const char *key,
                     const struct where *w, struct err *e)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v))
        return fail(e, w, "'%s' is required", key);
    if (!json_object_is_type(v, json_type_int))
        return fail(e, w, "'%s' must be an integer", key);
    *out = (long long)json_object_get_int64(v);
    return 0;
}

/* An optional integer member: `dflt` when absent. */
static int get_int64_or(long long *out, const struct json_object *obj, const char *key,
                        long long dflt, const struct where *w, struct err *e)
{
    if (!json_object_object_get_ex(obj, key, NULL)) {
        *out = dflt;
        return 0;
    }
    return get_int64(out, obj, key, w, e);
}

static int get_bool(bool *out, const struct json_object *obj, const char *key, bool dflt,
                    const struct where *w, struct err *e)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v)) {
        *out = dflt;
        return 0;
    }
    if (!json_object_is_type(v, json_type_boolean))
        return fail(e, w, "'%s' must be true or false", key);
    *out = json_object_get_boolean(v);
    return 0;
}

/* An optional data-id member (0 to DATA_ID_MAX): `dflt` when absent. */
static int get_data_id(long *out, const struct json_object *obj, const char *key, long dflt,
                       const struct where *w, struct err *e)
{
    long long v = 0;
    if (!json_object_object_get_ex(obj, key, NULL)) {
        *out = dflt;
        return 0;
    }
    if (get_int64(&v, obj, key, w, e) < 0)
        return -1;
    if (v < 0 || v > DATA_ID_MAX)
        return fail(e, w, "'%s' must be 0 to %d, not %lld", key, DATA_ID_MAX, v);
    *out = (long)v;
    return 0;
}

/* An optional array member: *out NULL when absent. */
static int get_array(struct json_object **out, const struct json_object *obj, const char *key,
                     const struct where *w, struct err *e)
{
    *out = NULL;
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v))
        return 0;
    if (!json_object_is_type(v, json_type_array))
        return fail(e, w, "'%s' must be an array", key);
    *out = v;
    return 0;
}

static void alert_entry_clear(struct alert_entry *a)
{
    for (size_t k = 0; k < SCENARIO_N_KINDS; k++)
        free(a->text[k]);
    memset(a, 0, sizeof *a);
}

static int parse_alert(struct alert_entry *out, const struct json_object *obj,
                       const struct where *w, struct err *e)
{
    static const char *const keys[] = {
        "unixtime", "logged_at", "ch1", "ch2",           "ch3",
        "ch4",      "ch5",       "ch6", "battery-level", "communication-status",
        NULL};
    memset(out, 0, sizeof *out);
    if (need_object(obj, w, e) < 0 || check_keys(obj, keys, w, e) < 0 ||
        get_int64(&out->unixtime, obj, "unixtime", w, e) < 0 ||
        get_int64_or(&out->logged_at, obj, "logged_at", out->unixtime, w, e) < 0)
        return -1;
    if (out->logged_at < out->unixtime)
        return fail(e, w, "'logged_at' (%lld) lies before 'unixtime' (%lld)", out->logged_at,
                    out->unixtime);
    for (size_t k = 0; k < SCENARIO_N_KINDS; k++) {
        struct json_object *v;
        if (!json_object_object_get_ex(obj, scenario_kinds[k], &v))
            continue;
        if (!json_object_is_type(v, json_type_string)) {
            alert_entry_clear(out);
            return fail(e, w, "'%s' must be a string", scenario_kinds[k]);
        }
        out->text[k] = xstrdup(json_object_get_string(v));
    }
    return 0;
}

static void device_push_alert(struct device *d, const struct alert_entry *a)
{
    if (d->n_alerts == d->cap_alerts) {
        d->cap_alerts = d->cap_alerts ? d->cap_alerts * 2 : 8;
        d->alerts = xreallocarray(d->alerts, d->cap_alerts, sizeof *d->alerts);
    }
    d->alerts[d->n_alerts++] = *a;
}

static void reading_clear(struct reading *r, size_t n_values)
{
    if (r->values) {
        for (size_t i = 0; i < n_values; i++)
            free(r->values[i]);
    }
    free(r->values);
    free(r->battery);
    memset(r, 0, sizeof *r);
}

/* A reading of a device with `n_channels` channels: {at, unixtime, values,
 * battery, data_id}. `values` must give one value per channel; data_id is
 * -1 when not given (device_push_reading numbers the reading). On failure
 * nothing stays allocated. */
static int parse_reading(struct reading *out, const struct json_object *obj, size_t n_channels,
                         const struct where *w, struct err *e)
{
    static const char *const keys[] = {"at", "unixtime", "values", "battery", "data_id", NULL};
    struct json_object *values;
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (need_object(obj, w, e) < 0 || check_keys(obj, keys, w, e) < 0 ||
        get_int64(&out->at, obj, "at", w, e) < 0 ||
        get_int64_or(&out->unixtime, obj, "unixtime", out->at, w, e) < 0 ||
        get_data_id(&out->data_id, obj, "data_id", -1, w, e) < 0 ||
        get_array(&values, obj, "values", w, e) < 0)
        goto out;
    if (!values) {
        fail(e, w, "'values' is required");
        goto out;
    }
    if (json_object_array_length(values) != n_channels) {
        fail(e, w, "'values' has %zu values for %zu channels", json_object_array_length(values),
             n_channels);
        goto out;
    }
    out->values = xcalloc(n_channels ? n_channels : 1, sizeof *out->values);
    for (size_t i = 0; i < n_channels; i++) {
        if (value_text(&out->values[i], json_object_array_get_idx(values, i), false) < 0) {
            fail(e, w, "values[%zu] must be a string or a number", i);
            goto out;
        }
    }
    if (json_object_object_get_ex(obj, "battery", NULL) &&
        get_numtext(&out->battery, obj, "battery", "", false, w, e) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        reading_clear(out, n_channels);
    return rc;
}

/* Appends `r`; a reading without a data-id of its own gets the one after
 * the previous reading's (the device's data_id for the first). */
static void device_push_reading(struct device *d, const struct reading *r)
{
    if (d->n_readings == d->cap_readings) {
        d->cap_readings = d->cap_readings ? d->cap_readings * 2 : 8;
        d->readings = xreallocarray(d->readings, d->cap_readings, sizeof *d->readings);
    }
    struct reading *added = &d->readings[d->n_readings];
    *added = *r;
    if (added->data_id < 0)
        added->data_id =
            d->n_readings ? (added[-1].data_id + 1) % (DATA_ID_MAX + 1) : d->first_data_id;
    d->n_readings++;
}

size_t scenario_readings_due(const struct device *d, long long now)
{
    size_t lo = 0, hi = d->n_readings;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->readings[mid].at <= now)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The latest reading with at <= now, or NULL before the first. */
static const struct reading *reading_at(const struct device *d, long long now)
{
    size_t due = scenario_readings_due(d, now);
    return due ? &d->readings[due - 1] : NULL;
}

static int parse_channel(struct channel *out, const struct json_object *obj, const struct where *w,
                         struct err *e)
{
    static const char *const keys[] = {"name", "unit", "value", NULL};
    if (need_object(obj, w, e) < 0 || check_keys(obj, keys, w, e) < 0)
        return -1;
    if (get_string(&out->name, obj, "name", "", w, e) < 0 ||
        get_string(&out->unit, obj, "unit", "", w, e) < 0 ||
        get_numtext(&out->value, obj, "value", "", false, w, e) < 0)
        return -1;
    return 0;
}

static int parse_base(struct device *d, const struct json_object *obj, const struct where *w,
                      struct err *e)
{
    static const char *const keys[] = {"serial", "model", "name", NULL};
    if (need_object(obj, w, e) < 0 || check_keys(obj, keys, w, e) < 0)
        return -1;
    if (get_string(&d->base_serial, obj, "serial", NULL, w, e) < 0 ||
        get_string(&d->base_model, obj, "model", "", w, e) < 0 ||
        get_string(&d->base_name, obj, "name", "", w, e) < 0)
        return -1;
    return 0;
}

static int parse_group(struct device *d, const struct json_object *obj, const struct where *w,
                       struct err *e)
{
    static const char *const keys[] = {"num", "name", NULL};
    if (need_object(obj, w, e) < 0 || check_keys(obj, keys, w, e) < 0)
        return -1;
    if (get_numtext(&d->group_num, obj, "num", "0", false, w, e) < 0 ||
        get_string(&d->group_name, obj, "name", "", w, e) < 0)
        return -1;
    return 0;
}

static void device_clear(struct device *d)
{
    char **strings[] = {&d->num,         &d->serial,     &d->model,     &d->name,
                        &d->base_serial, &d->base_model, &d->base_name, &d->group_num,
                        &d->group_name,  &d->time_diff,  &d->std_bias,  &d->dst_flg,
                        &d->battery,     &d->rssi};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        free(*strings[i]);
    for (size_t i = 0; i < d->n_channels; i++) {
        free(d->channels[i].name);
        free(d->channels[i].unit);
        free(d->channels[i].value);
    }
    free(d->channels);
    for (size_t i = 0; i < d->n_alerts; i++)
        alert_entry_clear(&d->alerts[i]);
    free(d->alerts);
    for (size_t i = 0; i < d->n_readings; i++)
        reading_clear(&d->readings[i], d->n_channels);
    free(d->readings);
    memset(d, 0, sizeof *d);
}

static int parse_device(struct device *d, struct scenario *s, const struct json_object *obj,
                        const struct where *w, struct err *e)
{
    static const char *const keys[] = {
        "serial",          "model",           "name",    "num",     "base",     "group",
        "time_diff",       "std_bias",        "dst_flg", "battery", "rssi",     "channels",
        "alert_supported", "graph_supported", "data_id", "alerts",  "readings", NULL};
    struct json_object *v, *channels, *alerts, *readings;
    struct where sub;
    if (need_object(obj, w, e) < 0 || check_keys(obj, keys, w, e) < 0)
        return -1;
    if (get_string(&d->serial, obj, "serial", NULL, w, e) < 0 ||
        get_string(&d->model, obj, "model", "", w, e) < 0 ||
        get_string(&d->name, obj, "name", "", w, e) < 0 ||
        get_numtext(&d->num, obj, "num", "0", false, w, e) < 0 ||
        get_numtext(&d->time_diff, obj, "time_diff", "0", false, w, e) < 0 ||
        get_numtext(&d->std_bias, obj, "std_bias", "0", false, w, e) < 0 ||
        get_numtext(&d->dst_flg, obj, "dst_flg", "0", true, w, e) < 0 ||
        get_numtext(&d->battery, obj, "battery", "5", false, w, e) < 0 ||
        get_numtext(&d->rssi, obj, "rssi", "", false, w, e) < 0 ||
        get_bool(&d->alert_supported, obj, "alert_supported", true, w, e) < 0 ||
        get_bool(&d->graph_supported, obj, "graph_supported", true, w, e) < 0 ||
        get_data_id(&d->first_data_id, obj, "data_id", 0, w, e) < 0 ||
        get_array(&channels, obj, "channels", w, e) < 0 ||
        get_array(&alerts, obj, "alerts", w, e) < 0 ||
        get_array(&readings, obj, "readings", w, e) < 0)
        return -1;
    if (json_object_object_get_ex(obj, "base", &v)) {
        where_sub(&sub, w, "base", -1);
        if (parse_base(d, v, &sub, e) < 0)
            return -1;
    } else {
        d->base_serial = xstrdup(d->serial);
        d->base_model = xstrdup(d->model);
        d->base_name = xstrdup(d->name);
    }
    if (json_object_object_get_ex(obj, "group", &v)) {
        where_sub(&sub, w, "group", -1);
        if (parse_group(d, v, &sub, e) < 0)
            return -1;
    } else {
        d->group_num = xstrdup("0");
        d->group_name = xstrdup("");
    }
    size_t n = channels ? json_object_array_length(channels) : 0;
    d->channels = xcalloc(n ? n : 1, sizeof *d->channels);
    for (size_t i = 0; i < n; i++) {
        d->n_channels = i + 1;
        where_sub(&sub, w, "channels", (long)i);
        if (parse_channel(&d->channels[i], json_object_array_get_idx(channels, i), &sub, e) < 0)
            return -1;
    }
    n = alerts ? json_object_array_length(alerts) : 0;
    for (size_t i = 0; i < n; i++) {
        struct alert_entry a;
        where_sub(&sub, w, "alerts", (long)i);
        if (parse_alert(&a, json_object_array_get_idx(alerts, i), &sub, e) < 0)
            return -1;
        a.seq = s->next_seq++;
        device_push_alert(d, &a);
    }
    n = readings ? json_object_array_length(readings) : 0;
    for (size_t i = 0; i < n; i++) {
        struct reading r;
        where_sub(&sub, w, "readings", (long)i);
        if (parse_reading(&r, json_object_array_get_idx(readings, i), d->n_channels, &sub, e) < 0)
            return -1;
        if (d->n_readings && r.at < d->readings[d->n_readings - 1].at) {
            fail(e, &sub,
                 "'at' (%lld) lies before the previous reading's (%lld): readings "
                 "must be sorted by 'at'",
                 r.at, d->readings[d->n_readings - 1].at);
            reading_clear(&r, d->n_channels);
            return -1;
        }
        device_push_reading(d, &r);
    }
    return 0;
}

static void account_clear(struct account *a)
{
    free(a->api_key);
    free(a->login_id);
    free(a->login_pass);
    for (size_t i = 0; i < a->n_devices; i++)
        device_clear(&a->devices[i]);
    free(a->devices);
    memset(a, 0, sizeof *a);
}

static int parse_account(struct account *a, struct scenario *s, const struct json_object *obj,
                         const struct where *w, struct err *e)
{
    static const char *const keys[] = {"api_key", "login_id", "login_pass",
                                       "dialect", "devices",  NULL};
    char *dialect = NULL;
    struct json_object *devices;
    int rc = -1;
    if (need_object(obj, w, e) < 0 || check_keys(obj, keys, w, e) < 0)
        goto out;
    if (get_string(&a->api_key, obj, "api_key", NULL, w, e) < 0 ||
        get_string(&a->login_id, obj, "login_id", NULL, w, e) < 0 ||
        get_string(&a->login_pass, obj, "login_pass", NULL, w, e) < 0 ||
        get_string(&dialect, obj, "dialect", "strings", w, e) < 0 ||
        get_array(&devices, obj, "devices", w, e) < 0)
        goto out;
    if (strcmp(dialect, "strings") == 0) {
        a->dialect = DIALECT_STRINGS;
    } else if (strcmp(dialect, "numbers") == 0) {
        a->dialect = DIALECT_NUMBERS;
    } else {
        fail(e, w, "'dialect' must be \"strings\" or \"numbers\", not \"%s\"", dialect);
        goto out;
    }
    size_t n = devices ? json_object_array_length(devices) : 0;
    a->devices = xcalloc(n ? n : 1, sizeof *a->devices);
    for (size_t i = 0; i < n; i++) {
        struct where sub;
        where_sub(&sub, w, "devices", (long)i);
        a->n_devices = i + 1;
        if (parse_device(&a->devices[i], s, json_object_array_get_idx(devices, i), &sub, e) < 0)
            goto out;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(a->devices[j].serial, a->devices[i].serial) == 0) {
                fail(e, &sub, "serial '%s' is already used by devices[%zu]", a->devices[i].serial,
                     j);
                goto out;
            }
        }
    }
    rc = 0;
out:
    free(dialect);
    return rc;
}

/* Parses the whole text as one JSON value; "line L, column C" on failure. */
static struct json_object *parse_json(const char *text, size_t len, const char *name, struct err *e)
{
    struct json_object *root = NULL;
    struct json_tokener *tok = json_tokener_new();
    root = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    if (jerr == json_tokener_continue)
        jerr = json_tokener_error_parse_eof;
    while (jerr == json_tokener_success && used < len && text[used] != '\0' &&
           strchr(" \t\r\n", text[used]))
        used++;
    if (jerr != json_tokener_success || used < len) {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < used && i < len; i++) {
            if (text[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        err_set(e, "%s: line %zu, column %zu: %s", name, line, col,
                jerr != json_tokener_success ? json_tokener_error_desc(jerr)
                                             : "text after the JSON value");
        json_object_put(root);
        root = NULL;
    }
    json_tokener_free(tok);
    return root;
}

int scenario_parse(struct scenario **out, const char *text, size_t len, const char *name,
                   struct err *e)
{
    static const char *const keys[] = {"now", "accounts", NULL};
    struct scenario *s = xcalloc(1, sizeof *s);
    struct where top = {.file = name, .path = ""};
    struct json_object *accounts;
    int rc = -1;
    struct json_object *root = parse_json(text, len, name, e);
    if (!root)
        goto out;
    if (!json_object_is_type(root, json_type_object)) {
        fail(e, &top, "the scenario must be a JSON object");
        goto out;
    }
    if (check_keys(root, keys, &top, e) < 0)
        goto out;
    if (json_object_object_get_ex(root, "now", NULL)) {
        if (get_int64(&s->now, root, "now", &top, e) < 0)
            goto out;
    } else {
        s->now = (long long)time(NULL);
    }
    if (get_array(&accounts, root, "accounts", &top, e) < 0)
        goto out;
    if (!accounts || json_object_array_length(accounts) == 0) {
        fail(e, &top, "'accounts' must list at least one account");
        goto out;
    }
    size_t n = json_object_array_length(accounts);
    s->accounts = xcalloc(n, sizeof *s->accounts);
    for (size_t i = 0; i < n; i++) {
        struct where sub;
        where_sub(&sub, &top, "accounts", (long)i);
        s->n_accounts = i + 1;
        if (parse_account(&s->accounts[i], s, json_object_array_get_idx(accounts, i), &sub, e) < 0)
            goto out;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(s->accounts[j].login_id, s->accounts[i].login_id) == 0) {
                fail(e, &sub, "login_id '%s' is already used by accounts[%zu]",
                     s->accounts[i].login_id, j);
                goto out;
            }
        }
    }
    *out = s;
    s = NULL;
    rc = 0;
out:
    json_object_put(root);
    scenario_free(s);
    return rc;
}

int scenario_load(struct scenario **out, const char *path, struct err *e)
{
    struct buf text;
    buf_init(&text, SCENARIO_MAX_BYTES);
    int rc = file_read(&text, path, e);
    if (rc == 0)
        rc = scenario_parse(out, buf_str(&text), text.len, path, e);
    buf_free(&text);
    return rc;
}

void scenario_free(struct scenario *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_accounts; i++)
        account_clear(&s->accounts[i]);
    free(s->accounts);
    free(s);
}

struct device *scenario_find_device(const struct account *a, const char *serial)
{
    for (size_t i = 0; i < a->n_devices; i++) {
        if (strcmp(a->devices[i].serial, serial) == 0)
            return &a->devices[i];
    }
    return NULL;
}

int scenario_add_alert(struct scenario *s, const char *serial, const struct json_object *alert,
                       struct err *e)
{
    struct where w = {.file = "alert", .path = ""};
    struct alert_entry a;
    size_t added = 0;
    if (parse_alert(&a, alert, &w, e) < 0)
        return -1;
    a.seq = s->next_seq++;
    for (size_t i = 0; i < s->n_accounts; i++) {
        struct device *d = scenario_find_device(&s->accounts[i], serial);
        if (!d)
            continue;
        struct alert_entry copy = a;
        for (size_t k = 0; k < SCENARIO_N_KINDS; k++)
            copy.text[k] = xstrdup_or_null(a.text[k]);
        device_push_alert(d, &copy);
        added++;
    }
    alert_entry_clear(&a);
    if (!added)
        return err_set(e, "no device has serial '%s'", serial);
    return 0;
}

int scenario_add_reading(struct scenario *s, const char *serial, const struct json_object *reading,
                         struct err *e)
{
    struct where w = {.file = "reading", .path = ""};
    size_t found = 0;
    /* Check against every device first, so that a failure adds nothing. */
    for (size_t i = 0; i < s->n_accounts; i++) {
        const struct device *d = scenario_find_device(&s->accounts[i], serial);
        if (!d)
            continue;
        struct reading r;
        if (parse_reading(&r, reading, d->n_channels, &w, e) < 0)
            return -1;
        long long at = r.at;
        reading_clear(&r, d->n_channels);
        if (d->n_readings && at < d->readings[d->n_readings - 1].at)
            return fail(e, &w, "'at' (%lld) lies before the last reading of '%s' (%lld)", at,
                        serial, d->readings[d->n_readings - 1].at);
        found++;
    }
    if (!found)
        return err_set(e, "no device has serial '%s'", serial);
    for (size_t i = 0; i < s->n_accounts; i++) {
        struct device *d = scenario_find_device(&s->accounts[i], serial);
        if (!d)
            continue;
        struct reading r;
        if (parse_reading(&r, reading, d->n_channels, &w, e) < 0)
            return -1; /* cannot happen: checked above */
        device_push_reading(d, &r);
    }
    return 0;
}

/* True when `text` is a JSON number; *is_int when it has no fraction or
 * exponent. */
static bool json_number_text(const char *text, bool *is_int)
{
    const char *p = text;
    *is_int = true;
    if (*p == '-')
        p++;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (*p >= '0' && *p <= '9')
            p++;
    } else {
        return false;
    }
    if (*p == '.') {
        *is_int = false;
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        *is_int = false;
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

bool scenario_is_number(const char *text)
{
    bool is_int;
    return json_number_text(text, &is_int);
}

struct json_object *scenario_numeric(enum dialect d, const char *text)
{
    bool is_int;
    if (d == DIALECT_NUMBERS && json_number_text(text, &is_int)) {
        if (is_int) {
            errno = 0;
            long long v = strtoll(text, NULL, 10);
            if (errno == 0)
                return json_object_new_int64(v);
        }
        return json_object_new_double_s(strtod(text, NULL), text);
    }
    return json_object_new_string(text);
}

struct json_object *scenario_numeric_ll(enum dialect d, long long v)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", v);
    return scenario_numeric(d, text);
}

static void add_str(struct json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, json_object_new_string(value));
}

struct json_object *scenario_device_record(const struct account *a, const struct device *d,
                                           long long now)
{
    enum dialect dl = a->dialect;
    const struct reading *r = reading_at(d, now);
    const char *battery = r && r->battery ? r->battery : d->battery;
    struct json_object *rec = json_object_new_object();
    json_object_object_add(rec, "num", scenario_numeric(dl, d->num));
    add_str(rec, "serial", d->serial);
    add_str(rec, "model", d->model);
    add_str(rec, "name", d->name);
    json_object_object_add(rec, "battery", scenario_numeric(dl, battery));
    json_object_object_add(rec, "rssi", scenario_numeric(dl, d->rssi));
    json_object_object_add(rec, "time_diff", scenario_numeric(dl, d->time_diff));
    json_object_object_add(rec, "std_bias", scenario_numeric(dl, d->std_bias));
    if (d->dst_flg)
        json_object_object_add(rec, "dst_flg", scenario_numeric(dl, d->dst_flg));
    json_object_object_add(rec, "dst_bias", scenario_numeric(dl, "60"));
    json_object_object_add(rec, "unixtime", scenario_numeric_ll(dl, r ? r->unixtime : now));
    struct json_object *channels = json_object_new_array();
    for (size_t i = 0; i < d->n_channels; i++) {
        struct json_object *ch = json_object_new_object();
        json_object_object_add(ch, "num", scenario_numeric_ll(dl, (long long)i + 1));
        add_str(ch, "name", d->channels[i].name);
        json_object_object_add(ch, "value",
                               scenario_numeric(dl, r ? r->values[i] : d->channels[i].value));
        add_str(ch, "unit", d->channels[i].unit);
        json_object_array_add(channels, ch);
    }
    json_object_object_add(rec, "channel", channels);
    struct json_object *base = json_object_new_object();
    add_str(base, "serial", d->base_serial);
    add_str(base, "model", d->base_model);
    add_str(base, "name", d->base_name);
    json_object_object_add(rec, "baseunit", base);
    struct json_object *group = json_object_new_object();
    json_object_object_add(group, "num", scenario_numeric(dl, d->group_num));
    add_str(group, "name", d->group_name);
    json_object_object_add(rec, "group", group);
    return rec;
}

/* Newest first; of two entries at the same time, the one added later. */
static int cmp_newest_first(const void *x, const void *y)
{
    const struct alert_entry *a = *(const struct alert_entry *const *)x;
    const struct alert_entry *b = *(const struct alert_entry *const *)y;
    if (a->unixtime != b->unixtime)
        return a->unixtime < b->unixtime ? 1 : -1;
    return (a->seq < b->seq) - (a->seq > b->seq);
}

struct json_object *scenario_alert_record(const struct account *a, const struct device *d,
                                          long long now)
{
    enum dialect dl = a->dialect;
    struct json_object *rec = json_object_new_object();
    add_str(rec, "remote-serial", d->serial);
    add_str(rec, "remote-model", d->model);
    add_str(rec, "remote-name", d->name);
    add_str(rec, "base-serial", d->base_serial);
    add_str(rec, "base-model", d->base_model);
    add_str(rec, "base-name", d->base_name);
    json_object_object_add(rec, "time-diff", scenario_numeric(dl, d->time_diff));
    json_object_object_add(rec, "std-bias", scenario_numeric(dl, d->std_bias));
    if (d->dst_flg)
        json_object_object_add(rec, "dst-flg", scenario_numeric(dl, d->dst_flg));
    json_object_object_add(rec, "dst-bias", scenario_numeric(dl, "60"));
    struct json_object *channels = json_object_new_array();
    for (size_t i = 0; i < d->n_channels; i++) {
        struct json_object *ch = json_object_new_object();
        add_str(ch, "name", d->channels[i].name);
        json_object_object_add(ch, "num", scenario_numeric_ll(dl, (long long)i + 1));
        add_str(ch, "unit", d->channels[i].unit);
        json_object_array_add(channels, ch);
    }
    json_object_object_add(rec, "channel", channels);

    const struct alert_entry **due = xcalloc(d->n_alerts ? d->n_alerts : 1, sizeof *due);
    size_t n = 0;
    for (size_t i = 0; i < d->n_alerts; i++) {
        if (d->alerts[i].logged_at <= now)
            due[n++] = &d->alerts[i];
    }
    qsort(due, n, sizeof *due, cmp_newest_first);
    struct json_object *logs = json_object_new_array();
    for (size_t i = 0; i < n && i < ALERTS_RETURNED; i++) {
        struct json_object *entry = json_object_new_object();
        json_object_object_add(entry, "unixtime", scenario_numeric_ll(dl, due[i]->unixtime));
        for (size_t k = 0; k < SCENARIO_N_KINDS; k++) {
            if (due[i]->text[k])
                add_str(entry, scenario_kinds[k], due[i]->text[k]);
        }
        json_object_array_add(logs, entry);
    }
    free(due);
    json_object_object_add(rec, "alert-logs", logs);
    return rec;
}
