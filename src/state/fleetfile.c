/* The fleet file: PATH.fleet-GENERATION, beside the state file, holding
 * the native sections that grow with the fleet (device lists and
 * histories, readings memories, learnt limits: nearly all of the bytes at
 * a large fleet), so that a run writes what it changed rather than all of
 * them. This file knows its name, how it is read, and how a save writes
 * it; statefile.c decides when, and commits what was written.
 *
 * The file is a base, one line holding every fleet section as a save
 * writes it ({"accounts":{...},"watch":{...},"limits":{...}}), followed
 * by records, one line each, holding only the entries a save found
 * changed ({"watch":{"5214000A":{...}}}): reading it is reading the base
 * and then each record over it, entry by entry.
 *
 * Why this is safe: the state file names the generation and the length of
 * the fleet file that go with it ("fleet": {"generation": G, "length": L}),
 * and its atomic replacement is the one moment a save takes effect. A
 * record is appended at L and synced before the state file that counts it
 * is written; a crash in between leaves bytes after L, which no load reads
 * and the next append cuts off. A new base goes to a new name (generation
 * G + 1, written whole and synced) before the state file names it; the
 * old file is removed only after that, and a crash that left it is tidied
 * by the next run. A failed save may have replaced the state file all the
 * same (its directory's fsync failed after the rename), so a save never
 * writes again a generation an earlier save of the run began: the next
 * base goes to the generation after it (s->fleet_written), and what a
 * new base replaced is removed once it is committed. Records cannot
 * remove an entry: a save after one was
 * removed (s->rebase) writes a new base, as does one whose records would
 * outgrow the base, so that the file stays at most about twice the base.
 *
 * The state's lock covers these files: only the run holding it writes,
 * and state_peek, which holds nothing, reads the generation the state
 * file it read names, trying again when a save removed it meanwhile. */
#include "state.h"
#include "state/native.h"
#include "state/section.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FLEET_MAX_BYTES ((size_t)128 * 1024 * 1024)

static char *fleet_path(const char *state_path, long long gen)
{
    return xasprintf("%s.fleet-%lld", state_path, gen);
}

static bool in_fleet_file(const struct state_native *nat)
{
    return nat->write_changed != NULL;
}

static const struct state_native *fleet_section(const struct jscan *js)
{
    for (size_t i = 0; i < state_n_natives; i++)
        if (in_fleet_file(state_natives[i]) && strcmp(state_natives[i]->name, js->key) == 0)
            return state_natives[i];
    return NULL;
}

/* --- reading ----------------------------------------------------------- */

/* Reads the lines of `text` (`len` bytes, the committed part) into the
 * native sections, each entry over what an earlier line gave. */
static int parse_fleet(struct state *s, const char *text, size_t len, struct err *e)
{
    int rc = -1;
    struct jscan js = {0};
    size_t valid = utf8_valid_prefix(text, len);
    const char *nul = memchr(text, '\0', valid);
    if (nul)
        return err_set(e, "byte %zu: a NUL byte", (size_t)(nul - text));
    if (valid < len)
        return err_set(e, "byte %zu: not UTF-8", valid);
    for (size_t pos = 0; pos < len;) {
        jscan_init(&js, text, len);
        js.p = text + pos;
        if (jscan_peek(&js) != JSCAN_OBJECT || js.p != text + pos) {
            err_set(e, "byte %zu: not a line holding a JSON object", pos);
            goto out;
        }
        jscan_object(&js);
        while (jscan_member(&js)) {
            const struct state_native *nat = fleet_section(&js);
            if (!nat) {
                err_set(e, "byte %zu: not a section of the fleet file", (size_t)(js.p - text));
                goto out;
            }
            if (native_read(nat, s, &js, true, e) < 0)
                goto out;
        }
        if (js.failed) {
            jscan_error(&js, e);
            goto out;
        }
        if (js.p >= js.end || *js.p != '\n') {
            err_set(e, "byte %zu: a line that does not end after its object",
                    (size_t)(js.p - text));
            goto out;
        }
        pos = (size_t)(js.p - text) + 1;
        if (!s->fleet_base)
            s->fleet_base = pos;
        jscan_free(&js);
    }
    rc = 0;
out:
    jscan_free(&js);
    return rc;
}

int fleet_file_read(struct state *s, struct err *e)
{
    int rc = -1;
    char *path = fleet_path(s->path, s->fleet_gen);
    struct buf text;
    struct stat st;
    buf_init(&text, FLEET_MAX_BYTES);
    int fd = file_open_regular(path, FILE_NOFOLLOW, &st, e);
    if (fd < 0) {
        s->fleet_missing = errno == ENOENT;
        rc = s->fleet_missing ? -1 : -2;
        goto out;
    }
    if (file_read_fd(&text, fd, path, e) < 0) {
        rc = -2;
        goto out;
    }
    if (text.len < s->fleet_len) {
        err_set(e, "%s: %zu bytes, fewer than the %zu the state file counts", path, text.len,
                s->fleet_len);
        goto out;
    }
    s->fleet_base = 0;
    if (parse_fleet(s, text.data, s->fleet_len, e) < 0) {
        err_prefix(e, "%s", path);
        goto out;
    }
    s->fleet_text = buf_steal(&text); /* entries borrow their texts from it */
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    buf_free(&text);
    free(path);
    return rc;
}

/* --- writing ----------------------------------------------------------- */

/* The base: every fleet section whole, one line. */
static void base_text(struct buf *out, const struct state *s)
{
    bool first = true;
    buf_append(out, "{", 1);
    for (size_t i = 0; i < state_n_natives; i++) {
        if (!in_fleet_file(state_natives[i]) || !state_natives[i]->write)
            continue;
        if (!first)
            buf_append(out, ",", 1);
        first = false;
        buf_json_string(out, state_natives[i]->name, strlen(state_natives[i]->name));
        buf_append(out, ":", 1);
        state_natives[i]->write(s, out);
    }
    buf_append(out, "}\n", 2);
}

/* A record: the entries changed, by section, one line; nothing when no
 * entry changed. */
static void record_text(struct buf *out, const struct state *s)
{
    size_t n = 0;
    for (size_t i = 0; i < state_n_natives; i++) {
        if (!in_fleet_file(state_natives[i]))
            continue;
        size_t mark = out->len;
        buf_append(out, n ? "," : "{", 1);
        buf_json_string(out, state_natives[i]->name, strlen(state_natives[i]->name));
        buf_append(out, ":{", 2);
        size_t wrote = state_natives[i]->write_changed(s, out);
        if (!wrote) {
            out->len = mark; /* the section has no change: not in the record */
            continue;
        }
        buf_append(out, "}", 1);
        n += wrote;
    }
    if (n)
        buf_append(out, "}\n", 2);
}

/* Appends `text` to the file of generation s->fleet_gen at the length the
 * state file commits, cutting off what an uncommitted save left after it,
 * and syncs it. */
static int append(const struct state *s, const struct buf *text, struct err *e)
{
    int rc = -1;
    char *path = fleet_path(s->path, s->fleet_gen);
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        err_set(e, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(e, "%s: not a regular file", path);
        goto out;
    }
    if (ftruncate(fd, (off_t)s->fleet_len) < 0 || lseek(fd, (off_t)s->fleet_len, SEEK_SET) < 0 ||
        file_write_all(fd, text->data, text->len) < 0 || fdatasync(fd) < 0) {
        err_set(e, "%s: cannot write: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

int fleet_file_write(struct state *s, struct fleet_commit *to, struct err *e)
{
    int rc = -1;
    struct buf text;
    buf_init(&text, 0);
    *to = (struct fleet_commit){s->fleet_gen, s->fleet_len, s->fleet_base, false};
    record_text(&text, s);
    size_t journal = s->fleet_len - s->fleet_base;
    if (s->fleet_gen > 0 && !s->rebase && journal + text.len <= s->fleet_base) {
        if (text.len && append(s, &text, e) < 0)
            goto out;
        to->len += text.len;
        rc = 0;
        goto out;
    }
    buf_reset(&text);
    buf_reserve(&text, s->fleet_base + s->fleet_base / 8 + 4096);
    base_text(&text, s);
    long long gen = (s->fleet_written > s->fleet_gen ? s->fleet_written : s->fleet_gen) + 1;
    s->fleet_written = gen;
    char *path = fleet_path(s->path, gen);
    int written = file_write_atomic(path, text.data, text.len, 0600, e);
    free(path);
    if (written < 0)
        goto out;
    *to = (struct fleet_commit){gen, text.len, text.len, true};
    rc = 0;
out:
    buf_free(&text);
    return rc;
}

void fleet_file_commit(struct state *s, const struct fleet_commit *c)
{
    long long old = s->fleet_gen;
    s->fleet_gen = c->gen;
    s->fleet_len = c->len;
    s->fleet_base = c->base;
    s->rebase = false;
    for (long long gen = old > 0 ? old : 1; c->rebased && gen < c->gen; gen++)
        fleet_file_tidy(s, gen);
}

void fleet_file_tidy(const struct state *s, long long gen)
{
    char *path = fleet_path(s->path, gen);
    if (unlink(path) < 0 && errno != ENOENT)
        log_warn("%s: cannot remove an old fleet file: %s", path, strerror(errno));
    free(path);
}

/* --- setting aside ------------------------------------------------------- */

int fleet_files_set_aside(const char *state_path, const char *suffix, struct err *e)
{
    int rc = -1, moved = 0;
    char *dir = file_dirname(state_path);
    const char *slash = strrchr(state_path, '/');
    const char *base = slash ? slash + 1 : state_path;
    char *prefix = xasprintf("%s.fleet-", base);
    size_t plen = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d) {
        err_set(e, "%s: cannot read directory: %s", dir, strerror(errno));
        goto out;
    }
    for (struct dirent *ent; (ent = readdir(d));) {
        const char *rest = ent->d_name + plen;
        if (strncmp(ent->d_name, prefix, plen) != 0 || !*rest ||
            strspn(rest, "0123456789") != strlen(rest))
            continue;
        char *from = xasprintf("%s/%s", dir, ent->d_name);
        char *to = xasprintf("%s%s", from, suffix);
        int renamed = rename(from, to);
        if (renamed < 0)
            err_set(e, "%s: cannot move aside to %s: %s", from, to, strerror(errno));
        free(from);
        free(to);
        if (renamed < 0)
            goto out;
        moved++;
    }
    rc = moved;
out:
    if (d)
        closedir(d);
    free(prefix);
    free(dir);
    return rc;
}
