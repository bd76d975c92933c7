/* Dotted paths into JSON documents for tests (jsonpath.h). */
#include "jsonpath.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

struct json_object *json_at(struct json_object *o, const char *path)
{
    char *copy = xstrdup(path);
    char *save = NULL;
    for (char *part = strtok_r(copy, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
        if (json_object_is_type(o, json_type_array)) {
            size_t i = (size_t)strtoul(part, NULL, 10);
            cr_assert_lt(i, json_object_array_length(o), "%s: no element %s", path, part);
            o = json_object_array_get_idx(o, i);
        } else {
            cr_assert(json_object_object_get_ex(o, part, &o), "%s: no '%s'", path, part);
        }
    }
    free(copy);
    return o;
}

const char *json_str_at(struct json_object *o, const char *path)
{
    struct json_object *v = json_at(o, path);
    cr_assert(json_object_is_type(v, json_type_string), "%s: %s", path,
              json_object_to_json_string(v));
    return json_object_get_string(v);
}

long long json_int_at(struct json_object *o, const char *path)
{
    struct json_object *v = json_at(o, path);
    cr_assert(json_object_is_type(v, json_type_int), "%s: %s", path, json_object_to_json_string(v));
    return (long long)json_object_get_int64(v);
}
