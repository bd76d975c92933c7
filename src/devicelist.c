/* The devices of a Get Current Readings reply: reads the reply's text
 * without building a json-c tree and turns each record into a struct
 * device_info, its strings repaired and bounded, skipping (with one warning
 * each) the records whose serial cannot be trusted. */
#include "devicelist.h"
#include "platform.h"
#include "serial.h"
#include "util/jscan.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reply is read with util/jscan.h rather than a json-c tree, with the
 * results json-c's reading gave: a member name is looked up as given and
 * then with '_' and '-' swapped (jsonv_member), the last of members of the
 * same name wins and a null one counts as absent, numbers read as json-c
 * prints them (jsonv_text) and integers as jsonv_int takes them. The
 * members of an object that are wanted are first taken as raw spans (a
 * small table filled by one pass), then the chosen ones decoded. */

#define NUMBER_TEXT 400 /* a number's text, as util/jscan.c bounds it, and NUL */

/* The members of a device record, of a base unit and group, and of a
 * channel that are read; each name with '_' is followed by its '-'
 * spelling. */
enum {
    R_SERIAL,
    R_BASEUNIT,
    R_MODEL,
    R_NAME,
    R_GROUP,
    R_CHANNEL,
    R_UNIXTIME,
    R_BATTERY,
    R_RSSI,
    R_TIME_DIFF,
    R_TIME_DIFF_ALT,
    R_DST_FLG,
    R_DST_FLG_ALT,
    R_DST_BIAS,
    R_DST_BIAS_ALT,
    R_N
};
static const char *const record_names[R_N] = {
    "serial", "baseunit",  "model",     "name",    "group",   "channel",  "unixtime", "battery",
    "rssi",   "time_diff", "time-diff", "dst_flg", "dst-flg", "dst_bias", "dst-bias"};
enum { U_SERIAL, U_MODEL, U_NAME, U_N };
static const char *const unit_names[U_N] = {"serial", "model", "name"};
enum { C_NUM, C_NAME, C_UNIT, C_VALUE, C_N };
static const char *const channel_names[C_N] = {"num", "name", "unit", "value"};

/* The position of the member `s` is on in `names` (n of them), compared
 * as json-c compares names (up to a NUL written as \u0000); n when it is
 * none of them. */
static size_t name_index(const struct jscan *s, const char *const *names, size_t n)
{
    size_t i = 0;
    while (i < n && (s->key[0] != names[i][0] || strcmp(s->key, names[i]) != 0))
        i++;
    return i;
}

/* The object that comes next in `s` read into `found` (n spans, one per
 * name of `names`; an absent member's text NULL): the last member of each
 * name. False on an error of the scan. */
static bool read_members(struct jscan *s, const char *const *names, size_t n,
                         struct jscan_raw *found)
{
    memset(found, 0, n * sizeof *found);
    if (!jscan_object(s))
        return false;
    while (jscan_member(s)) {
        size_t i = name_index(s, names, n);
        if (!jscan_skip(s, i < n ? &found[i] : NULL))
            return false;
    }
    return !s->failed;
}

/* A device record's members (R_*), with its base unit's and its group's
 * (U_*) when they were objects, and its channels' (C_*) when "channel"
 * was an array, read in the same pass (`nested`); when they were not (an
 * array holding the object, say), read_device reads them from their
 * spans, as it reads any value. */
struct record {
    struct jscan_raw f[R_N];
    struct jscan_raw unit[U_N], group[U_N];
    struct jscan_raw channel[PLATFORM_CHANNELS_MAX][C_N];
    bool is_object[PLATFORM_CHANNELS_MAX]; /* the item was an object */
    size_t n_items;                        /* items of the array, up to the maximum */
    bool nested[3];                        /* the base unit's, the group's, the channels' */
};

/* The array that comes next in `s`: its first PLATFORM_CHANNELS_MAX items
 * that are objects read into r->channel, every other item checked. */
static bool read_channel_items(struct jscan *s, struct record *r)
{
    jscan_array(s);
    r->n_items = 0;
    for (size_t i = 0; jscan_item(s); i++) {
        bool keep = i < PLATFORM_CHANNELS_MAX && jscan_peek(s) == JSCAN_OBJECT;
        if (i < PLATFORM_CHANNELS_MAX) {
            r->is_object[i] = keep;
            r->n_items = i + 1;
        }
        if (!(keep ? read_members(s, channel_names, C_N, r->channel[i]) : jscan_skip(s, NULL)))
            return false;
    }
    return !s->failed;
}

static bool read_record(struct jscan *s, struct record *r)
{
    memset(r, 0, sizeof *r);
    if (!jscan_object(s))
        return false;
    while (jscan_member(s)) {
        size_t i = name_index(s, record_names, R_N);
        bool unit = i == R_BASEUNIT, group = i == R_GROUP, channel = i == R_CHANNEL;
        int which = unit ? 0 : group ? 1 : 2;
        if (unit || group || channel)
            r->nested[which] = false; /* the last member of the name counts */
        enum jscan_type want = channel ? JSCAN_ARRAY : JSCAN_OBJECT;
        if ((unit || group || channel) && jscan_peek(s) == want) {
            const char *start = s->p;
            bool ok = channel ? read_channel_items(s, r)
                              : read_members(s, unit_names, U_N, unit ? r->unit : r->group);
            if (!ok)
                return false;
            r->f[i] = (struct jscan_raw){start, (size_t)(s->p - start)};
            r->nested[which] = true;
            continue;
        }
        if (!jscan_skip(s, i < R_N ? &r->f[i] : NULL))
            return false;
    }
    return !s->failed;
}

static bool present(const struct jscan_raw *v)
{
    return v->text && v->text[0] != 'n';
}

/* jsonv_member over a table: the member `i`, else its other spelling `alt`,
 * when not null; NULL when neither is there. */
static const struct jscan_raw *member(const struct jscan_raw *found, int i, int alt)
{
    return present(&found[i]) ? &found[i] : present(&found[alt]) ? &found[alt] : NULL;
}

static bool is_number(const struct jscan_raw *v)
{
    return v && (v->text[0] == '-' || (v->text[0] >= '0' && v->text[0] <= '9'));
}

/* A number without fraction or exponent: one json-c keeps as an integer. */
static bool is_integral(const struct jscan_raw *v)
{
    for (size_t i = 0; i < v->len; i++)
        if (v->text[i] == '.' || v->text[i] == 'e' || v->text[i] == 'E')
            return false;
    return true;
}

/* The integer json-c makes of an integral number `v`, and whether it took
 * it as unsigned (above INT64_MAX): beyond range, the nearest bound. */
static long long integer_of(const struct jscan_raw *v, unsigned long long *u, bool *is_unsigned)
{
    char text[NUMBER_TEXT];
    size_t n = v->len < sizeof text ? v->len : sizeof text - 1;
    memcpy(text, v->text, n);
    text[n] = '\0';
    *is_unsigned = false;
    if (text[0] == '-')
        return strtoll(text, NULL, 10);
    *u = strtoull(text, NULL, 10);
    *is_unsigned = *u > (unsigned long long)LLONG_MAX;
    return *is_unsigned ? LLONG_MAX : (long long)*u;
}

/* A number's text as json-c gives it (jsonv_text): an integer printed in
 * decimal, any other number as it was written. */
static size_t number_text(char out[NUMBER_TEXT], const struct jscan_raw *v)
{
    if (!is_integral(v)) {
        size_t n = v->len < NUMBER_TEXT ? v->len : NUMBER_TEXT - 1;
        memcpy(out, v->text, n);
        out[n] = '\0';
        return n;
    }
    unsigned long long u = 0;
    bool is_unsigned = false;
    long long i = integer_of(v, &u, &is_unsigned);
    int n =
        is_unsigned ? snprintf(out, NUMBER_TEXT, "%llu", u) : snprintf(out, NUMBER_TEXT, "%lld", i);
    return n > 0 ? (size_t)n : 0;
}

/* The text jsonv_text_raw gives of `v` (NULL: absent) and its length: a
 * string decoded, whole (NUL bytes included), a number as number_text
 * writes it into `num`; NULL for any other value. A string with escapes
 * is decoded into *tmp, which the caller frees. */
static const char *value_text(const struct jscan_raw *v, char num[NUMBER_TEXT], char **tmp,
                              size_t *len)
{
    *tmp = NULL;
    if (!v)
        return NULL;
    if (is_number(v)) {
        *len = number_text(num, v);
        return num;
    }
    if (v->text[0] != '"')
        return NULL;
    if (!memchr(v->text, '\\', v->len)) {
        *len = v->len - 2;
        return v->text + 1;
    }
    struct jscan s = {0};
    jscan_init(&s, v->text, v->len);
    if (!jscan_string_dup(&s, tmp, len))
        return NULL; /* cannot happen: the span was scanned already */
    return *tmp;
}

/* The strings of one device, gathered as its record is read, then copied
 * into one allocation (struct device_info's `strings`): a record has a
 * dozen strings, and at 2000 devices their allocations and frees were a
 * tenth of a readings run. A piece is a span of the reply (a string as it
 * was written, with nothing to repair) or of a text made on the way
 * (repaired, decoded, a serial's copy), which the gather owns until it is
 * done. */
#define DEVICE_STRINGS (8 + 3 * PLATFORM_CHANNELS_MAX)
struct gather {
    struct piece {
        const char *p;
        size_t n;
        char **to; /* where its copy's address goes */
    } piece[DEVICE_STRINGS];
    char *owned[DEVICE_STRINGS];
    size_t n, n_owned, bytes;
};

/* Adds a piece; returns its index. */
static size_t gather_put(struct gather *g, const char *p, size_t n, char **to)
{
    g->piece[g->n] = (struct piece){p, n, to};
    g->bytes += n + 1;
    return g->n++;
}

/* Adds `text` (allocated; the gather frees it) as a piece. */
static size_t gather_own(struct gather *g, char *text, char **to)
{
    g->owned[g->n_owned++] = text;
    return gather_put(g, text, strlen(text), to);
}

/* The piece `i` once more, for another field. */
static void gather_again(struct gather *g, size_t i, char **to)
{
    gather_put(g, g->piece[i].p, g->piece[i].n, to);
}

static void gather_clear(struct gather *g)
{
    for (size_t i = 0; i < g->n_owned; i++)
        free(g->owned[i]);
    g->n = g->n_owned = g->bytes = 0;
}

/* Copies every piece into d->strings and points the fields at them. */
static void gather_done(struct gather *g, struct device_info *d)
{
    char *at = d->strings = xmalloc(g->bytes ? g->bytes : 1);
    for (size_t i = 0; i < g->n; i++) {
        memcpy(at, g->piece[i].p, g->piece[i].n);
        at[g->piece[i].n] = '\0';
        *g->piece[i].to = at;
        at += g->piece[i].n + 1;
    }
    gather_clear(g);
}

static bool printable_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

/* A name, model or group name into *to: repaired, one line, bounded; ""
 * when absent or not text. Returns its piece. */
static size_t name_text(struct gather *g, const struct jscan_raw *v, char **to)
{
    char num[NUMBER_TEXT], *tmp = NULL;
    size_t len = 0, i;
    const char *s = value_text(v, num, &tmp, &len);
    if (!s)
        i = gather_put(g, "", 0, to);
    else if (s != num && !tmp && len <= PLATFORM_NAME_MAX && printable_ascii(s, len))
        i = gather_put(g, s, len, to); /* what utf8_clean would copy as it is */
    else
        i = gather_own(g, utf8_clean_shown(s, len, PLATFORM_NAME_MAX, UTF8_CONTROLS_NONE), to);
    free(tmp);
    return i;
}

/* jsonv_int of `v`: an integer number, or a string of digits (an optional
 * '-' first) read up to its first NUL. */
static bool value_int(const struct jscan_raw *v, long long *out)
{
    char num[NUMBER_TEXT], *tmp = NULL;
    size_t len = 0;
    bool ok = false;
    if (!v)
        return false;
    if (is_number(v)) {
        if (!is_integral(v))
            return false;
        unsigned long long u = 0;
        bool is_unsigned = false;
        *out = integer_of(v, &u, &is_unsigned);
        return true;
    }
    if (v->text[0] != '"')
        return false;
    const char *s = value_text(v, num, &tmp, &len);
    if (s && !tmp && len > 0 && len <= 18) {
        /* Most are short digit strings ("1795717800"): what strtoll makes
         * of them, without the copy. */
        size_t i = s[0] == '-';
        long long n = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            n = n * 10 + (s[i++] - '0');
        if (i == len && len > (size_t)(s[0] == '-')) {
            *out = s[0] == '-' ? -n : n;
            return true;
        }
    }
    if (s && !tmp) {
        /* Borrowed from the reply, which goes on after it: a copy ends it. */
        char *copy = len < sizeof num ? num : (tmp = xmalloc(len + 1));
        memcpy(copy, s, len);
        copy[len] = '\0';
        s = copy;
    }
    if (s) {
        const char *digits = *s == '-' ? s + 1 : s;
        char *end = NULL;
        if (*digits >= '0' && *digits <= '9') {
            errno = 0;
            long long n = strtoll(s, &end, 10);
            if (!errno && !*end) {
                *out = n;
                ok = true;
            }
        }
    }
    free(tmp);
    return ok;
}

/* The serial `v` into *out (a copy) when it is a serial. 0 when absent or
 * empty (*out NULL); -1 with what is wrong in `e` when it breaks
 * serial.h's rule. */
static int read_serial(char **out, const struct jscan_raw *v, const char *what, struct err *e)
{
    char num[NUMBER_TEXT], *tmp = NULL;
    size_t len = 0;
    int rc = 0;
    const char *s = value_text(v, num, &tmp, &len);
    *out = NULL;
    if (s && len > 0)
        rc = serial_copy(out, s, len, what, e);
    free(tmp);
    return rc;
}

/* object_or_first of `v` into *out: `v` when it is an object, its first
 * element when it is an array that starts with an object; else false. */
static bool object_or_first(struct jscan *s, const struct jscan_raw *v, struct jscan_raw *out)
{
    if (!v)
        return false;
    if (v->text[0] == '{') {
        *out = *v;
        return true;
    }
    if (v->text[0] != '[')
        return false;
    jscan_init(s, v->text, v->len);
    return jscan_array(s) && jscan_item(s) && jscan_peek(s) == JSCAN_OBJECT && jscan_skip(s, out);
}

/* The members `names` of the object `v` (NULL: none) into `found`. */
static void read_object(struct jscan *s, const struct jscan_raw *v, const char *const *names,
                        size_t n, struct jscan_raw *found)
{
    memset(found, 0, n * sizeof *found);
    if (!v)
        return;
    jscan_init(s, v->text, v->len);
    read_members(s, names, n, found);
}

/* The channels of a record: the first PLATFORM_CHANNELS_MAX values of the
 * array "channel", of which the objects are kept (read with the record
 * when it was an array: r->channel; `v` otherwise, which is then not one). */
static void read_channels(struct device_info *d, struct gather *g, const struct record *r,
                          const struct jscan_raw *v)
{
    long long num;
    if (!v || !r->nested[2])
        return;
    d->channels = xcalloc(PLATFORM_CHANNELS_MAX, sizeof *d->channels);
    for (size_t i = 0; i < r->n_items; i++) {
        const struct jscan_raw *f = r->channel[i];
        struct channel_info *ci = &d->channels[d->n_channels];
        if (!r->is_object[i])
            continue;
        ci->num = value_int(member(f, C_NUM, C_NUM), &num) && num >= 1 && num <= 99 ? (int)num
                                                                                    : (int)i + 1;
        name_text(g, member(f, C_NAME, C_NAME), &ci->name);
        name_text(g, member(f, C_UNIT, C_UNIT), &ci->unit);
        name_text(g, member(f, C_VALUE, C_VALUE), &ci->value);
        d->n_channels++;
    }
}

/* The reading of a device record: its time, battery and channels. What is
 * missing or not a number is 0 (or ""): a reading is a hint for the
 * scheduler, never a reason to drop the device. */
static void read_reading(struct device_info *d, struct gather *g, const struct record *r)
{
    const struct jscan_raw *f = r->f;
    long long v;
    d->unixtime = value_int(member(f, R_UNIXTIME, R_UNIXTIME), &v) && v > 0 ? v : 0;
    d->battery = value_int(member(f, R_BATTERY, R_BATTERY), &v) && v > 0 && v < 100 ? (int)v : 0;
    name_text(g, member(f, R_RSSI, R_RSSI), &d->rssi);
    long long diff = 0, flag = 0, bias = 60;
    if (value_int(member(f, R_TIME_DIFF, R_TIME_DIFF_ALT), &diff) && diff > -1440 && diff < 1440) {
        if (value_int(member(f, R_DST_FLG, R_DST_FLG_ALT), &flag) && flag == 1 &&
            !(value_int(member(f, R_DST_BIAS, R_DST_BIAS_ALT), &bias) && bias >= 0 && bias <= 120))
            bias = 60;
        d->utc_offset = (int)(diff + (flag == 1 ? bias : 0));
    }
    read_channels(d, g, r, member(f, R_CHANNEL, R_CHANNEL));
}

/* Fills `d` from one device record `r`, `s` a scanner for the values
 * within it; -1 with the reason in `e` when it has no usable serial or
 * base serial (d is then left empty). */
static int read_device(struct device_info *d, struct jscan *s, const struct record *r,
                       struct err *e)
{
    const struct jscan_raw *f = r->f;
    struct jscan_raw unit_span, group_span, read_unit[U_N], read_group[U_N];
    const struct jscan_raw *unit = r->unit, *group = r->group;
    char *serial = NULL, *base_serial = NULL;
    struct gather g = {0};
    memset(d, 0, sizeof *d);
    if (read_serial(&serial, member(f, R_SERIAL, R_SERIAL), "serial", e) < 0)
        return -1;
    if (!serial)
        return err_set(e, "no serial");
    size_t own = gather_own(&g, serial, &d->serial);
    if (!r->nested[0]) {
        bool has_unit = object_or_first(s, member(f, R_BASEUNIT, R_BASEUNIT), &unit_span);
        read_object(s, has_unit ? &unit_span : NULL, unit_names, U_N, read_unit);
        unit = read_unit;
    }
    if (read_serial(&base_serial, member(unit, U_SERIAL, U_SERIAL), "base unit serial", e) < 0) {
        err_prefix(e, "device %s", serial);
        gather_clear(&g);
        return -1;
    }
    size_t model = name_text(&g, member(f, R_MODEL, R_MODEL), &d->model);
    size_t name = name_text(&g, member(f, R_NAME, R_NAME), &d->name);
    if (base_serial) {
        gather_own(&g, base_serial, &d->base_serial);
        name_text(&g, member(unit, U_MODEL, U_MODEL), &d->base_model);
        name_text(&g, member(unit, U_NAME, U_NAME), &d->base_name);
    } else {
        /* No base unit given: a standalone device is its own base unit. */
        gather_again(&g, own, &d->base_serial);
        gather_again(&g, model, &d->base_model);
        gather_again(&g, name, &d->base_name);
    }
    if (!r->nested[1]) {
        bool has_group = object_or_first(s, member(f, R_GROUP, R_GROUP), &group_span);
        read_object(s, has_group ? &group_span : NULL, unit_names, U_N, read_group);
        group = read_group;
    }
    name_text(&g, member(group, U_NAME, U_NAME), &d->group_name);
    read_reading(d, &g, r);
    gather_done(&g, d);
    return 0;
}

/* A record skipped, to be said once the whole reply has been read. */
struct skipped {
    size_t index;
    struct err why;
};

/* What one `devices` array gave. */
struct device_list {
    struct device_info *items;
    size_t count, cap, records;
    struct skipped *skipped;
    size_t n_skipped, cap_skipped;
};

static void device_list_clear(struct device_list *l)
{
    device_info_free(l->items, l->count);
    free(l->skipped);
    memset(l, 0, sizeof *l);
}

static void note_skipped(struct device_list *l, const struct err *why)
{
    if (l->n_skipped == l->cap_skipped) {
        l->cap_skipped = l->cap_skipped ? 2 * l->cap_skipped : 8;
        l->skipped = xreallocarray(l->skipped, l->cap_skipped, sizeof *l->skipped);
    }
    l->skipped[l->n_skipped].index = l->records;
    l->skipped[l->n_skipped++].why = *why;
}

/* The devices array that comes next in `s`, `sub` a second scanner for
 * the values within each record. */
static void read_devices(struct device_list *l, struct jscan *s, struct jscan *sub)
{
    jscan_array(s);
    while (jscan_item(s)) {
        struct record r;
        struct err why;
        if (jscan_peek(s) != JSCAN_OBJECT) {
            if (!jscan_skip(s, NULL))
                return;
            err_set(&why, "not an object");
            note_skipped(l, &why);
            l->records++;
            continue;
        }
        if (!read_record(s, &r))
            return;
        if (l->count == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 64;
            l->items = xreallocarray(l->items, l->cap, sizeof *l->items);
        }
        if (read_device(&l->items[l->count], sub, &r, &why) < 0)
            note_skipped(l, &why);
        else
            l->count++;
        l->records++;
    }
}

int devicelist_parse(struct device_info **out, size_t *n, const char *text, size_t len,
                     const char *account, struct err *e)
{
    int rc = -1;
    struct jscan s = {0}, sub = {0};
    struct device_list list = {0};
    bool found = false;
    struct err why;
    *out = NULL;
    *n = 0;
    /* What follows the value may be white space or NUL bytes, as call_end
     * used to allow. */
    while (text && len > 0 && strchr(" \t\r\n", text[len - 1]))
        len--;
    jscan_init(&s, text ? text : "", text ? len : 0);
    jscan_init(&sub, "", 0);
    if (jscan_object(&s)) {
        while (jscan_member(&s)) {
            if (strcmp(s.key, "devices") != 0) {
                jscan_skip(&s, NULL);
                continue;
            }
            /* json-c kept the last of members of the same name. */
            device_list_clear(&list);
            found = jscan_peek(&s) == JSCAN_ARRAY;
            if (found)
                read_devices(&list, &s, &sub);
            else
                jscan_skip(&s, NULL);
        }
    }
    if (jscan_end(&s, &why) < 0) {
        err_set(e, "Get Current Readings reply is not a JSON object: %s", why.msg);
        goto out;
    }
    if (!found) {
        err_set(e, "Get Current Readings reply has no 'devices' array");
        goto out;
    }
    for (size_t i = 0; i < list.n_skipped; i++) {
        const struct skipped *k = &list.skipped[i];
        if (account)
            log_warn("platform: account %s: device record %zu of %zu skipped: %s", account,
                     k->index + 1, list.records, k->why.msg);
        else
            log_warn("platform: device record %zu of %zu skipped: %s", k->index + 1, list.records,
                     k->why.msg);
    }
    rc = 0;
out:
    if (rc == 0 && list.count > 0) {
        *out = list.items;
        *n = list.count;
        list.items = NULL;
        list.count = 0;
    }
    device_list_clear(&list);
    jscan_free(&s);
    jscan_free(&sub);
    return rc;
}

void device_info_free(struct device_info *d, size_t n)
{
    if (!d)
        return;
    for (size_t i = 0; i < n; i++) {
        if (d[i].strings) { /* the parser's: every string in one block */
            free(d[i].strings);
            free(d[i].channels);
            continue;
        }
        free(d[i].serial);
        free(d[i].model);
        free(d[i].name);
        free(d[i].base_serial);
        free(d[i].base_model);
        free(d[i].base_name);
        free(d[i].group_name);
        free(d[i].rssi);
        for (size_t k = 0; k < d[i].n_channels; k++) {
            free(d[i].channels[k].name);
            free(d[i].channels[k].unit);
            free(d[i].channels[k].value);
        }
        free(d[i].channels);
    }
    free(d);
}
