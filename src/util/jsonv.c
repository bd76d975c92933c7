/* Member lookup and value conversion that tolerate both of the platform's
 * JSON dialects. */
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct json_object *jsonv_member(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    char alt[64];
    size_t len = strlen(key);
    if (!obj || !json_object_is_type(obj, json_type_object))
        return NULL;
    if (json_object_object_get_ex(obj, key, &v) && v)
        return v;
    if (len >= sizeof alt)
        return NULL;
    for (size_t i = 0; i <= len; i++)
        alt[i] = key[i] == '_' ? '-' : key[i] == '-' ? '_' : key[i];
    if (json_object_object_get_ex(obj, alt, &v) && v)
        return v;
    return NULL;
}

char *jsonv_text(struct json_object *v)
{
    if (!v)
        return NULL;
    switch (json_object_get_type(v)) {
    case json_type_string:
    case json_type_int:
    case json_type_double:
        return xstrdup(json_object_get_string(v));
    default:
        return NULL;
    }
}

const char *jsonv_text_raw(struct json_object *v, size_t *len)
{
    if (!v)
        return NULL;
    switch (json_object_get_type(v)) {
    case json_type_string:
        *len = (size_t)json_object_get_string_len(v);
        return json_object_get_string(v);
    case json_type_int:
    case json_type_double: {
        const char *s = json_object_get_string(v);
        *len = strlen(s);
        return s;
    }
    default:
        return NULL;
    }
}

char *jsonv_text_clean(struct json_object *v, size_t max, enum utf8_controls controls)
{
    size_t len = 0;
    const char *s = jsonv_text_raw(v, &len);
    return s ? utf8_clean_shown(s, len, max, controls) : NULL;
}

bool jsonv_int(struct json_object *v, long long *out)
{
    if (!v)
        return false;
    if (json_object_is_type(v, json_type_int)) {
        *out = json_object_get_int64(v);
        return true;
    }
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        const char *digits = *s == '-' ? s + 1 : s;
        char *end = NULL;
        if (*digits < '0' || *digits > '9')
            return false;
        errno = 0;
        long long n = strtoll(s, &end, 10);
        if (errno || *end)
            return false;
        *out = n;
        return true;
    }
    return false;
}

struct json_object *jsonv_need(struct json_object *o)
{
    if (!o)
        xalloc_die();
    return o;
}

void jsonv_put(struct json_object *obj, const char *key, struct json_object *val)
{
    if (json_object_object_add(obj, key, val) < 0)
        xalloc_die();
}

void jsonv_put_int(struct json_object *obj, const char *key, long long v)
{
    jsonv_put(obj, key, jsonv_need(json_object_new_int64((int64_t)v)));
}

void jsonv_append(struct json_object *arr, struct json_object *val)
{
    if (json_object_array_add(arr, val) < 0)
        xalloc_die();
}
