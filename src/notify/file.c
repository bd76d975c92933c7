/* The file receiver: one readable block of text per message, appended to a
 * file or written to standard output ("-"). Meant for people at a terminal,
 * for log collectors, and for the demo. */
#include "notify/notify.h"
#include "util/buf.h"
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Appends `s` with control characters (which could move a terminal's
 * cursor or forge a line) replaced by spaces; UTF-8 passes unchanged. */
static void put_clean(struct buf *b, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        char out = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
        buf_append(b, &out, 1);
    }
}

void notify_render_text(struct buf *out, const char *receiver, const struct event *events,
                        size_t n)
{
    buf_printf(out, "== wsrelay: %zu new alert%s for %s ==\n", n, n == 1 ? "" : "s", receiver);
    for (size_t i = 0; i < n; i++) {
        const struct event *ev = &events[i];
        char local[40];
        event_local_time(ev, local, sizeof local);
        buf_puts(out, "\n");
        put_clean(out, *ev->name ? ev->name : ev->serial);
        buf_puts(out, " (");
        if (*ev->model) {
            put_clean(out, ev->model);
            buf_puts(out, ", ");
        }
        put_clean(out, ev->serial);
        buf_puts(out, ") - ");
        put_clean(out, ev->kind);
        if (ev->channel_name) {
            buf_puts(out, " ");
            put_clean(out, ev->channel_name);
        }
        if (ev->channel_unit && *ev->channel_unit) {
            buf_puts(out, " [");
            put_clean(out, ev->channel_unit);
            buf_puts(out, "]");
        }
        buf_puts(out, "\n  ");
        put_clean(out, local);
        buf_puts(out, "  account ");
        put_clean(out, ev->account);
        if (ev->base_serial && strcmp(ev->base_serial, ev->serial) != 0) {
            buf_puts(out, ", base unit ");
            put_clean(out, ev->base_name && *ev->base_name ? ev->base_name : ev->base_serial);
        }
        buf_puts(out, "\n  ");
        put_clean(out, ev->text);
        buf_puts(out, "\n");
    }
}

static int file_send(const struct notify_env *env, const struct receiver_conf *r,
                     const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    int fd = -1;
    struct stat st;
    struct buf text;
    buf_init(&text, 0);
    (void)env;
    (void)res;
    notify_render_text(&text, r->name, m->events, m->n);
    buf_puts(&text, "\n");
    if (strcmp(r->file.path, "-") == 0) {
        fflush(stdout);
        if (file_write_all(STDOUT_FILENO, text.data, text.len) < 0) {
            err_set(e, "standard output: %s", strerror(errno));
            goto out;
        }
        rc = 0;
        goto out;
    }
    /* Only a regular file, never through a symlink, and never waiting on a
     * FIFO while the state is locked. One write with O_APPEND keeps each
     * block whole even when another process appends to the same file. */
    fd = open(r->file.path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
              0600);
    if (fd < 0) {
        err_set(e, "%s: %s", r->file.path, strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        err_set(e, "%s: not a regular file", r->file.path);
        goto out;
    }
    if (fcntl(fd, F_SETFL, O_APPEND) < 0 || file_write_all(fd, text.data, text.len) < 0 ||
        fsync(fd) < 0) {
        err_set(e, "%s: %s", r->file.path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    buf_free(&text);
    return rc;
}

const struct notifier notifier_file = {
    .type = RECEIVER_FILE,
    .name = "file",
    .send = file_send,
};
