/* Fuzzes devicelist_parse, which reads a Get Current Readings reply
 * with util/jscan.h, against the json-c reader it replaced
 * (devices_oracle.c). When json-c takes the input as a JSON object, the
 * scanner must give the same device list, field by field, or refuse the
 * text as JSON: it refuses a few things json-c's lenient parser takes
 * (NaN, "1.", comments, trailing commas, single quotes), and for those
 * only a clean failure is asked. Anything the scanner reads must also be
 * valid UTF-8 within its bounds. */
#include "devicelist.h"
#include "devices_oracle.h"
#include "fuzz.h"
#include "platform.h"
#include "util/log.h"
#include "util/utf8.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define NOT_JSON "Get Current Readings reply is not a JSON object"

static void check(bool ok)
{
    if (!ok)
        abort();
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_text(const char *s, size_t max)
{
    check(s && strlen(s) <= max && utf8_valid(s, strlen(s)));
}

/* json-c's reading of the body as call_end did it: one value, then only
 * white space (or NUL bytes); NULL when it is not a JSON object. */
static struct json_object *json_c_object(const char *data, size_t len)
{
    struct json_object *obj = NULL;
    if (len == 0 || len > INT_MAX)
        return NULL;
    struct json_tokener *tok = json_tokener_new();
    obj = json_tokener_parse_ex(tok, data, (int)len);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(obj);
        obj = NULL;
    }
    for (size_t i = json_tokener_get_parse_end(tok); obj && i < len; i++) {
        if (!strchr(" \t\r\n", data[i])) {
            json_object_put(obj);
            obj = NULL;
        }
    }
    json_tokener_free(tok);
    if (obj && !json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        obj = NULL;
    }
    return obj;
}

/* Whether `text` has a surrogate pair escape ("\\uD877\\uDC00") whose code
 * point has 0xD800 to 0xDFFF as its low 16 bits (U+2DC00, say): json-c
 * 0.16 reads those as U+FFFD, the scanner as the code point, which is
 * right; the two are not compared on such a text. */
static int hex4(const uint8_t *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static bool has_json_c_quirk(const uint8_t *text, size_t len)
{
    for (size_t i = 0; i + 12 <= len; i++) {
        if (text[i] != '\\' || text[i + 1] != 'u' || text[i + 6] != '\\' || text[i + 7] != 'u')
            continue;
        int hi = hex4(text + i + 2), lo = hex4(text + i + 8);
        long code = 0x10000 + ((long)(hi - 0xD800) << 10) + (lo - 0xDC00);
        if (hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF &&
            (code & 0xFFFF) >= 0xD800 && (code & 0xFFFF) <= 0xDFFF)
            return true;
    }
    return false;
}

static void compare_device(const struct device_info *a, const struct device_info *b)
{
    check(same(a->serial, b->serial) && same(a->model, b->model) && same(a->name, b->name));
    check(same(a->base_serial, b->base_serial) && same(a->base_model, b->base_model) &&
          same(a->base_name, b->base_name) && same(a->group_name, b->group_name));
    check(a->unixtime == b->unixtime && a->battery == b->battery && same(a->rssi, b->rssi) &&
          a->utc_offset == b->utc_offset);
    check(a->n_channels == b->n_channels);
    for (size_t k = 0; k < a->n_channels; k++) {
        const struct channel_info *x = &a->channels[k], *y = &b->channels[k];
        check(x->num == y->num && same(x->name, y->name) && same(x->unit, y->unit) &&
              same(x->value, y->value));
    }
}

static void check_device(const struct device_info *d)
{
    const char *texts[] = {d->serial,     d->model,     d->name,       d->base_serial,
                           d->base_model, d->base_name, d->group_name, d->rssi};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        check_text(texts[i], PLATFORM_NAME_MAX);
    check(d->n_channels <= PLATFORM_CHANNELS_MAX);
    for (size_t k = 0; k < d->n_channels; k++) {
        check_text(d->channels[k].name, PLATFORM_NAME_MAX);
        check_text(d->channels[k].unit, PLATFORM_NAME_MAX);
        check_text(d->channels[k].value, PLATFORM_NAME_MAX);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct device_info *got = NULL, *want = NULL;
    size_t n_got = 0, n_want = 0;
    struct err e_got, e_want;
    log_set_level(LOG_ERROR); /* the skipped records' warnings */
    int rc_got = devicelist_parse(&got, &n_got, text, size, "fuzz", &e_got);
    check(rc_got == 0 || (!got && n_got == 0));
    for (size_t i = 0; i < n_got; i++)
        check_device(&got[i]);
    struct json_object *body = json_c_object(text, size);
    if (body) {
        int rc_want = oracle_parse_devices(&want, &n_want, body, "fuzz", &e_want);
        if (rc_got < 0 && strncmp(e_got.msg, NOT_JSON, strlen(NOT_JSON)) == 0) {
            /* json-c took what the scanner refuses: only no crash. */
        } else if (has_json_c_quirk(data, size)) {
            /* json-c reads a code point wrong: only no crash. */
        } else {
            check(rc_got == rc_want && n_got == n_want);
            if (rc_got < 0)
                check(strcmp(e_got.msg, e_want.msg) == 0);
            for (size_t i = 0; i < n_got; i++)
                compare_device(&got[i], &want[i]);
        }
        device_info_free(want, n_want);
        json_object_put(body);
    }
    device_info_free(got, n_got);
    return 0;
}
