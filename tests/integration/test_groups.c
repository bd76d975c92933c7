/* `wsrelay run` keeps the group discovery reports for each device in the
 * state's device list, for the routing rules to match on: the real binary
 * against the simulator. */
#include "proc.h"
#include "relay.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL

static struct relay R;

static void setup(void)
{
    relay_start_world(&R, "groups");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(groups, .init = setup, .fini = teardown, .timeout = 120);

/* The group of `serial` in account "lab"'s device list of the state. */
static char *group_of(struct json_object *state, const char *serial)
{
    struct json_object *accounts, *lab, *devices, *v;
    cr_assert(json_object_object_get_ex(state, "accounts", &accounts));
    cr_assert(json_object_object_get_ex(accounts, "lab", &lab));
    cr_assert(json_object_object_get_ex(lab, "devices", &devices));
    for (size_t i = 0; i < json_object_array_length(devices); i++) {
        struct json_object *d = json_object_array_get_idx(devices, i);
        if (json_object_object_get_ex(d, "serial", &v) &&
            strcmp(json_object_get_string(v), serial) == 0) {
            cr_assert(json_object_object_get_ex(d, "group", &v), "%s has no group", serial);
            cr_assert(json_object_is_type(v, json_type_string));
            return xstrdup(json_object_get_string(v));
        }
    }
    cr_assert_fail("%s is not in the device list", serial);
    return NULL;
}

Test(groups, discovered_groups_are_kept_in_the_device_list)
{
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct json_object *state = relay_state_doc(&R);
    static const char *const want[][2] = {
        {"5214000A", "冷凍庫 \"B1\""}, {"5214000B", ""}, {"52F00001", ""}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char *group = group_of(state, want[i][0]);
        cr_expect_str_eq(group, want[i][1], "%s", want[i][0]);
        free(group);
    }
    json_object_put(state);
}
