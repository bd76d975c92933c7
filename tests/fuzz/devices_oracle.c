/* The json-c reader of a Get Current Readings body that wsrelay used
 * before devicelist_parse read the text with util/jscan.h: kept,
 * unchanged but for its name, as the reference fuzz_platform_current
 * compares the scanner's reading with. Test code only. */
#include "devices_oracle.h"
#include "platform.h"
#include "serial.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* `v` when it is an object, its first element when it is an array that
 * starts with an object; else NULL. */
static struct json_object *object_or_first(struct json_object *v)
{
    if (!v)
        return NULL;
    if (json_object_is_type(v, json_type_object))
        return v;
    if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0) {
        struct json_object *first = json_object_array_get_idx(v, 0);
        if (first && json_object_is_type(first, json_type_object))
            return first;
    }
    return NULL;
}

/* A name, model or group name: repaired, one line, bounded. */
static char *name_text(struct json_object *v)
{
    char *s = jsonv_text_clean(v, PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE);
    return s ? s : xstrdup("");
}

/* The serial member of `obj` into *out (a copy) when it is a serial. 0 when
 * absent or empty (*out NULL); -1 with what is wrong in `e` when it breaks
 * serial.h's rule. */
static int read_serial(char **out, const struct json_object *obj, const char *what, struct err *e)
{
    size_t len = 0;
    const char *s = jsonv_text_raw(jsonv_member(obj, "serial"), &len);
    *out = NULL;
    return s && len > 0 ? serial_copy(out, s, len, what, e) : 0;
}

/* The reading of a device record: its time, battery and channels. What is
 * missing or not a number is 0 (or ""): a reading is a hint for the
 * scheduler, never a reason to drop the device. */
static void read_reading(struct device_info *d, struct json_object *rec)
{
    long long v;
    struct json_object *chans = jsonv_member(rec, "channel");
    d->unixtime = jsonv_int(jsonv_member(rec, "unixtime"), &v) && v > 0 ? v : 0;
    d->battery = jsonv_int(jsonv_member(rec, "battery"), &v) && v > 0 && v < 100 ? (int)v : 0;
    d->rssi = name_text(jsonv_member(rec, "rssi"));
    long long diff = 0, flag = 0, bias = 60;
    if (jsonv_int(jsonv_member(rec, "time_diff"), &diff) && diff > -1440 && diff < 1440) {
        if (jsonv_int(jsonv_member(rec, "dst_flg"), &flag) && flag == 1 &&
            !(jsonv_int(jsonv_member(rec, "dst_bias"), &bias) && bias >= 0 && bias <= 120))
            bias = 60;
        d->utc_offset = (int)(diff + (flag == 1 ? bias : 0));
    }
    if (!chans || !json_object_is_type(chans, json_type_array))
        return;
    size_t len = json_object_array_length(chans);
    if (len > PLATFORM_CHANNELS_MAX)
        len = PLATFORM_CHANNELS_MAX;
    d->channels = xcalloc(len ? len : 1, sizeof *d->channels);
    for (size_t i = 0; i < len; i++) {
        struct json_object *c = json_object_array_get_idx(chans, i);
        struct channel_info *ci = &d->channels[d->n_channels];
        if (!c || !json_object_is_type(c, json_type_object))
            continue;
        ci->num = jsonv_int(jsonv_member(c, "num"), &v) && v >= 1 && v <= 99 ? (int)v : (int)i + 1;
        ci->name = name_text(jsonv_member(c, "name"));
        ci->unit = name_text(jsonv_member(c, "unit"));
        ci->value = name_text(jsonv_member(c, "value"));
        d->n_channels++;
    }
}

/* Fills `d` from one device record; -1 with the reason in `e` when it has
 * no usable serial or base serial (d is then left empty). */
static int read_device(struct device_info *d, struct json_object *rec, struct err *e)
{
    struct json_object *unit, *group;
    char *base_serial = NULL;
    memset(d, 0, sizeof *d);
    if (!rec || !json_object_is_type(rec, json_type_object))
        return err_set(e, "not an object");
    if (read_serial(&d->serial, rec, "serial", e) < 0)
        return -1;
    if (!d->serial)
        return err_set(e, "no serial");
    unit = object_or_first(jsonv_member(rec, "baseunit"));
    if (read_serial(&base_serial, unit, "base unit serial", e) < 0) {
        err_prefix(e, "device %s", d->serial);
        free(d->serial);
        d->serial = NULL;
        return -1;
    }
    d->model = name_text(jsonv_member(rec, "model"));
    d->name = name_text(jsonv_member(rec, "name"));
    if (base_serial) {
        d->base_serial = base_serial;
        d->base_model = name_text(jsonv_member(unit, "model"));
        d->base_name = name_text(jsonv_member(unit, "name"));
    } else {
        /* No base unit given: a standalone device is its own base unit. */
        d->base_serial = xstrdup(d->serial);
        d->base_model = xstrdup(d->model);
        d->base_name = xstrdup(d->name);
    }
    group = object_or_first(jsonv_member(rec, "group"));
    d->group_name = name_text(jsonv_member(group, "name"));
    read_reading(d, rec);
    return 0;
}

int oracle_parse_devices(struct device_info **out, size_t *n, const struct json_object *body,
                         const char *account, struct err *e)
{
    int rc = -1;
    struct device_info *list = NULL;
    size_t count = 0, len = 0;
    struct json_object *devices = jsonv_member(body, "devices");
    *out = NULL;
    *n = 0;
    if (!devices || !json_object_is_type(devices, json_type_array)) {
        err_set(e, "Get Current Readings reply has no 'devices' array");
        goto out;
    }
    len = json_object_array_length(devices);
    if (len > 0)
        list = xreallocarray(NULL, len, sizeof *list);
    for (size_t i = 0; i < len; i++) {
        struct err why;
        if (read_device(&list[count], json_object_array_get_idx(devices, i), &why) < 0) {
            if (account)
                log_warn("platform: account %s: device record %zu of %zu skipped: %s", account,
                         i + 1, len, why.msg);
            else
                log_warn("platform: device record %zu of %zu skipped: %s", i + 1, len, why.msg);
            continue;
        }
        count++;
    }
    rc = 0;
out:
    if (rc == 0 && count > 0) {
        *out = list;
        *n = count;
    } else {
        free(list);
    }
    return rc;
}
