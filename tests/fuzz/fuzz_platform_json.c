/* Fuzzes the readers of platform replies: an alert-log body and a current-
 * readings body, then checks that every string they give out is valid
 * UTF-8 within its bound, every serial a serial, and that every event
 * survives the JSON form kept in the outbox unchanged. */
#include "devicelist.h"
#include "event.h"
#include "fuzz.h"
#include "platform.h"
#include "serial.h"
#include "util/utf8.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* NULL, or valid UTF-8 of at most `max` bytes. */
static void check_text(const char *s, size_t max)
{
    if (s && (strlen(s) > max || !utf8_valid(s, strlen(s))))
        abort();
}

static void check_serial(const char *s)
{
    if (!s || serial_check(s, strlen(s), NULL) < 0)
        abort();
}

static void check_event(const struct event *ev)
{
    check_serial(ev->serial);
    check_serial(ev->base_serial);
    check_text(ev->model, PLATFORM_NAME_MAX);
    check_text(ev->name, PLATFORM_NAME_MAX);
    check_text(ev->base_model, PLATFORM_NAME_MAX);
    check_text(ev->base_name, PLATFORM_NAME_MAX);
    check_text(ev->channel_name, PLATFORM_NAME_MAX);
    check_text(ev->channel_unit, PLATFORM_NAME_MAX);
    check_text(ev->text, PLATFORM_TEXT_MAX);
}

static void check_device(const struct device_info *d)
{
    check_serial(d->serial);
    check_serial(d->base_serial);
    check_text(d->model, PLATFORM_NAME_MAX);
    check_text(d->name, PLATFORM_NAME_MAX);
    check_text(d->base_model, PLATFORM_NAME_MAX);
    check_text(d->base_name, PLATFORM_NAME_MAX);
    check_text(d->group_name, PLATFORM_NAME_MAX);
    check_text(d->rssi, PLATFORM_NAME_MAX);
}

static void check_round_trip(const struct event *ev)
{
    struct json_object *obj = event_to_json(ev);
    struct event back;
    struct err e;
    char local[40];
    event_local_time(local, sizeof local, ev);
    if (event_from_json(&back, obj, &e) < 0)
        abort();
    if (!same(ev->serial, back.serial) || !same(ev->kind, back.kind) ||
        !same(ev->text, back.text) || !same(ev->name, back.name) ||
        !same(ev->channel_name, back.channel_name) || ev->unixtime != back.unixtime ||
        ev->utc_offset != back.utc_offset)
        abort();
    event_clear(&back);
    json_object_put(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *body = json_tokener_parse_ex(tok, (const char *)data, (int)size);
    json_tokener_free(tok);
    if (!body)
        return 0;
    struct event_list list = {0};
    struct err e;
    if (event_parse_alert_log(&list, body, "fuzz", &e) == 0) {
        for (size_t i = 0; i < list.n; i++) {
            check_event(&list.items[i]);
            check_round_trip(&list.items[i]);
        }
        event_list_free(&list);
    }
    struct device_info *devs = NULL;
    size_t n = 0;
    if (devicelist_parse(&devs, &n, (const char *)data, size, NULL, &e) == 0) {
        for (size_t i = 0; i < n; i++)
            check_device(&devs[i]);
        device_info_free(devs, n);
    }
    json_object_put(body);
    return 0;
}
