/* What the readers of native sections share (native.h): a reader's
 * place named for its message, and the read of one member that names the
 * section when the scan itself stopped. */
#include "state/native.h"
#include "util/buf.h"

/* Appends the path of `at` to `b`, outermost first. */
static void where_text(struct buf *b, const struct where *at)
{
    if (at->up)
        where_text(b, at->up);
    if (at->key)
        buf_printf(b, at->up ? ".%s" : "%s", at->key);
    else
        buf_printf(b, "[%zu]", at->index);
}

int native_fail(struct jscan *js, const struct where *at, const char *what, struct err *e)
{
    struct err scan;
    struct buf where;
    buf_init(&where, ERR_MAX);
    where_text(&where, at);
    jscan_fail(js, what);
    if (js->reason != what) { /* the text itself is broken, or ends: say how */
        jscan_error(js, &scan);
        err_set(e, "%s: %s", buf_str(&where), scan.msg);
    } else {
        err_set(e, "%s: %s (byte %zu)", buf_str(&where), what, js->fail_at);
    }
    buf_free(&where);
    return -1;
}

int native_read(const struct state_native *nat, struct state *s, struct jscan *js, bool merge,
                struct err *e)
{
    err_clear(e);
    if (nat->read(s, js, merge, e) == 0)
        return 0;
    /* A reader names where the text broke when it knows; when the scan
     * itself stopped (a truncated file), the section. */
    if (!e->msg[0]) {
        struct err scan;
        jscan_error(js, &scan);
        err_set(e, "%s: %s", nat->name, scan.msg);
    }
    return -1;
}
