/* The file receiver: one readable block of text per message (the file.txt
 * template), appended to a file or written to standard output ("-"), in
 * valid UTF-8. Meant for people at a terminal, for log collectors, and for
 * the demo. */
#include "notify/notify.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int file_send(const struct notify_env *env, const struct receiver_conf *r,
                     const struct notify_message *m, struct notify_result *res, struct err *e)
{
    int rc = -1;
    int fd = -1;
    struct stat st;
    struct buf text;
    buf_init(&text, 0);
    (void)res;
    if (notify_render_text(&text, env, r->file.template, r->name, m, e) < 0)
        goto out;
    /* Its readers (a terminal, a log collector) expect UTF-8: a byte that
     * is not, from a template's own text or a value it inserts raw,
     * becomes U+FFFD. */
    char *clean = utf8_clean(buf_str(&text), text.len, SIZE_MAX, UTF8_CONTROLS_KEEP);
    buf_reset(&text);
    buf_puts(&text, clean);
    free(clean);
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
