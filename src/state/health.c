/* The health of login IDs, receivers and the heartbeat: the last success,
 * the failures since, and the last failure with its time and message, for
 * `wsrelay status`. Receivers' health is the "receivers" section; a
 * login's sits in its entry of "logins", the heartbeat's in "self".
 *
 * A login's health sits beside its ledger because a dry run, which saves
 * only the `logins` section, makes real calls; a receiver's does not,
 * since a dry run delivers nothing. */
#include "state.h"
#include "state/section.h"
#include "util/buf.h"
#include "util/jsonv.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEALTH_ERROR_MAX 300 /* bytes of a failure's message kept */

/* --- checking a loaded document ---------------------------------------- */

/* The health of a login ID, a receiver or the heartbeat (state_health). */
int health_check(struct json_object *h, const char *where, struct err *e)
{
    static const char *const ints[] = {"last_ok", "failures", "error_at", "status"};
    struct json_object *v = NULL;
    if (check_type(h, json_type_object, where, e) < 0)
        return -1;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (check_opt(h, ints[k], json_type_int, where, e) < 0)
            return -1;
    if (int_member(h, "failures", 0) < 0 || int_member(h, "failures", 0) > LONG_MAX)
        return err_set(e, "%s.failures: out of range", where);
    if (int_member(h, "status", 0) < 0 || int_member(h, "status", 0) > LONG_MAX)
        return err_set(e, "%s.status: out of range", where);
    if (json_object_object_get_ex(h, "error", &v) && v && !json_object_is_type(v, json_type_string))
        return err_set(e, "%s.error: not a string or null", where);
    return 0;
}

static int check_receivers(struct json_object *receivers, struct err *e)
{
    return check_members(receivers, "receivers", health_check, e);
}

/* --- a clock that jumped ----------------------------------------------- */

void health_clamp(struct json_object *h, long long now)
{
    clamp_member(h, "last_ok", now);
    clamp_member(h, "error_at", now);
}

static void clamp_receivers(struct json_object *receivers, const struct state_clamp *to)
{
    struct json_object_iterator it = json_object_iter_begin(receivers);
    struct json_object_iterator end = json_object_iter_end(receivers);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        health_clamp(json_object_iter_peek_value(&it), to->now);
}

/* --- health of logins and receivers ------------------------------------ */

/* The length of the valid UTF-8 sequence at `p` (at most `n` bytes
 * available), or 0 when there is none: overlong forms, surrogates and
 * code points above U+10FFFF are not valid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned min;
    unsigned cp;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xE0) == 0xC0)
        len = 2, min = 0x80, cp = p[0] & 0x1Fu;
    else if ((p[0] & 0xF0) == 0xE0)
        len = 3, min = 0x800, cp = p[0] & 0x0Fu;
    else if ((p[0] & 0xF8) == 0xF0)
        len = 4, min = 0x10000, cp = p[0] & 0x07u;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

struct json_object *health_fit_text(const char *text, size_t max)
{
    struct buf b;
    const unsigned char *p = (const unsigned char *)text;
    size_t n = strlen(text);
    buf_init(&b, 0);
    while (n > 0) {
        size_t len = utf8_seq(p, n);
        const char *piece = (const char *)p;
        if (len == 0) {
            piece = "?";
            len = 1;
        } else if (p[0] < 0x20 || p[0] == 0x7f) {
            piece = " ";
        }
        if (b.len + len > max) {
            /* Cut: "…" shows it, within `max`, after whole characters. */
            if (max >= sizeof UTF8_ELLIPSIS - 1) {
                b.len = utf8_cut(b.data, b.len, max - (sizeof UTF8_ELLIPSIS - 1));
                buf_puts(&b, UTF8_ELLIPSIS);
            }
            break;
        }
        buf_append(&b, piece, len);
        p += len;
        n -= len;
    }
    struct json_object *v = jsonv_need(json_object_new_string_len(buf_str(&b), (int)b.len));
    buf_free(&b);
    return v;
}

/* Records one attempt in the health object `h`. */
void health_record(struct json_object *h, bool ok, long status, const char *error, long long now)
{
    if (ok) {
        jsonv_put_int(h, "last_ok", now);
        jsonv_put_int(h, "failures", 0);
        return;
    }
    long long failures = int_member(h, "failures", 0);
    jsonv_put_int(h, "failures", failures < LONG_MAX ? failures + 1 : failures);
    jsonv_put_int(h, "error_at", now);
    jsonv_put_int(h, "status", status > 0 ? status : 0);
    jsonv_put(h, "error", health_fit_text(error ? error : "", HEALTH_ERROR_MAX));
}

bool health_get(const struct json_object *h, struct state_health *out)
{
    memset(out, 0, sizeof *out);
    if (!h)
        return false;
    out->last_ok = int_member(h, "last_ok", 0);
    out->failures = (long)int_member(h, "failures", 0); /* check_health bounded it */
    out->error_at = int_member(h, "error_at", 0);
    out->status = (long)int_member(h, "status", 0);
    out->error = xstrdup_or_null(str_member(h, "error"));
    return true;
}

void state_login_result(struct state *s, const char *login, bool ok, long status,
                        const char *message, long long now)
{
    struct json_object *health =
        child_object(child_object(section(s, &state_section_logins), login), "health");
    health_record(health, ok, status, message, now);
}

bool state_login_health(const struct state *s, const char *login, struct state_health *out)
{
    struct json_object *l = member(section(s, &state_section_logins), login, json_type_object);
    return health_get(member(l, "health", json_type_object), out);
}

void state_receiver_result(struct state *s, const char *receiver, bool ok, const char *error,
                           long long now)
{
    health_record(child_object(section(s, &state_section_receivers), receiver), ok, 0, error, now);
}

bool state_receiver_health(const struct state *s, const char *receiver, struct state_health *out)
{
    return health_get(member(section(s, &state_section_receivers), receiver, json_type_object),
                      out);
}

void state_health_clear(struct state_health *h)
{
    if (!h)
        return;
    free(h->error);
    memset(h, 0, sizeof *h);
}

const struct state_section state_section_receivers = {
    .name = "receivers",
    .type = json_type_object,
    .check = check_receivers,
    .clamp = clamp_receivers,
};
