/* The per-device files of seen keys: PATH.d/NAME.json, one per device
 * serial, holding what seen.c has flushed out of the state file's journal.
 * This file knows the directory, the names, and how one file is read,
 * checked (with the check of seen keys that seen.c's journal shares), set
 * aside and written; seen.c decides what goes in them and when.
 *
 * The directory is never followed when it is a symlink: it is opened with
 * O_NOFOLLOW | O_DIRECTORY, and every file in it is reached relative to
 * that descriptor (openat, renameat, linkat), so that a path component
 * swapped after the open cannot send a read or a write elsewhere. The
 * state's lock (PATH.lock) covers the directory: only the run holding it
 * writes here, and state_peek, which holds nothing, only reads. */
#include "state.h"
#include "state/section.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A device's file holds about 20 log entries' keys (a few KB); anything
 * near this is damage, not data. */
#define SEEN_FILE_MAX ((size_t)1 << 20)

struct seen_files {
    char *dir;      /* PATH.d */
    int fd;         /* the directory; -1 while it does not exist */
    bool read_only; /* from state_peek: a corrupt file is not moved */
    /* serial -> the file's document (an object, empty when there is no
     * file), or a string saying why the file could not be read: such a
     * serial reads as having no file and is never written. */
    struct json_object *docs;
    /* serial -> null: the document in memory differs from the file. */
    struct json_object *dirty;
    /* serial -> a boolean: its document was just loaded, true when its file
     * was corrupt and the document stands in for it; until seen.c takes it
     * (seen_files_take_new). */
    struct json_object *news;
};

/* --- the directory ----------------------------------------------------- */

/* The file name of `serial` in the directory: every byte but
 * [A-Za-z0-9_-] as %XX, then ".json". The escape is one-to-one, and no
 * name can be "." or "..", contain '/', or end in ".tmp" or
 * ".corrupt-…", which the directory uses for itself. Caller frees. */
static char *file_name(const char *serial)
{
    static const char hex[] = "0123456789ABCDEF";
    char *name = xmalloc(strlen(serial) * 3 + sizeof ".json");
    char *p = name;
    for (const unsigned char *c = (const unsigned char *)serial; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '_' || *c == '-') {
            *p++ = (char)*c;
        } else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    strcpy(p, ".json");
    return name;
}

/* Creates the directory (0700) on the first write, and makes its entry
 * durable before any file in it is relied on. */
static int make_dir(struct seen_files *f, struct err *e)
{
    if (f->fd >= 0)
        return 0;
    int rc = -1;
    char *parent = file_dirname(f->dir);
    if (mkdir(f->dir, 0700) < 0 && errno != EEXIST) {
        err_set(e, "%s: cannot create: %s", f->dir, strerror(errno));
        goto out;
    }
    f->fd = file_open_dir(f->dir, e);
    if (f->fd < 0 || file_sync_dir(parent, e) < 0)
        goto out;
    rc = 0;
out:
    free(parent);
    return rc;
}

int seen_files_open(struct seen_files **out, const char *state_path, bool read_only, struct err *e)
{
    struct seen_files *f = xcalloc(1, sizeof *f);
    f->dir = xasprintf("%s.d", state_path);
    f->read_only = read_only;
    f->fd = file_open_dir(f->dir, e);
    if (f->fd < 0 && errno != ENOENT) {
        seen_files_free(f);
        *out = NULL;
        return -1;
    }
    f->docs = jsonv_need(json_object_new_object());
    f->dirty = jsonv_need(json_object_new_object());
    f->news = jsonv_need(json_object_new_object());
    *out = f;
    return 0;
}

void seen_files_free(struct seen_files *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    json_object_put(f->docs);
    json_object_put(f->dirty);
    json_object_put(f->news);
    free(f->dir);
    free(f);
}

int seen_files_set_aside(char **out, const char *state_path, struct err *e)
{
    int rc = -1;
    char stamp[32];
    char *dir = xasprintf("%s.d", state_path);
    char *aside = NULL;
    char *parent = file_dirname(state_path);
    time_t now = time(NULL);
    struct tm tm;
    struct stat st;
    *out = NULL;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    if (lstat(dir, &st) < 0 && errno == ENOENT) {
        rc = 0;
        goto out;
    }
    /* A free name first: rename() would replace an empty directory. */
    for (int n = 1; n < 100 && (!aside || lstat(aside, &st) == 0); n++) {
        free(aside);
        aside = n == 1 ? xasprintf("%s.corrupt-%s", dir, stamp)
                       : xasprintf("%s.corrupt-%s-%d", dir, stamp, n);
    }
    if (lstat(aside, &st) == 0 || rename(dir, aside) < 0) {
        err_set(e, "cannot move %s aside to %s: %s", dir, aside,
                lstat(aside, &st) == 0 ? "the name is taken" : strerror(errno));
        goto out;
    }
    struct err ignored; /* moved: a sync that fails only makes it less durable */
    file_sync_dir(parent, &ignored);
    *out = aside;
    aside = NULL;
    rc = 0;
out:
    free(aside);
    free(parent);
    free(dir);
    return rc;
}

/* --- reading one file -------------------------------------------------- */

int seen_check_keys(struct json_object *keys, const char *serial, struct err *e)
{
    if (!json_object_is_type(keys, json_type_object))
        return err_set(e, "seen.%s: not an object", serial);
    struct json_object_iterator it = json_object_iter_begin(keys);
    struct json_object_iterator end = json_object_iter_end(keys);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        long long t;
        if (parse_seen_key(json_object_iter_peek_name(&it), &t) < 0)
            return err_set(e, "seen.%s: key '%s' is not UNIXTIME/KIND", serial,
                           json_object_iter_peek_name(&it));
    }
    return 0;
}

static struct json_object *new_doc(const char *serial)
{
    struct json_object *doc = jsonv_need(json_object_new_object());
    jsonv_put(doc, "serial", jsonv_need(json_object_new_string(serial)));
    jsonv_put_int(doc, "floor", 0);
    jsonv_put(doc, "seen", jsonv_need(json_object_new_object()));
    return doc;
}

/* The checks of the state file's seen and floors sections, on one
 * device's part (the same messages), and that the file is this serial's. */
static int check_doc(struct json_object *doc, const char *serial, struct err *e)
{
    struct json_object *v = NULL;
    const char *named = str_member(doc, "serial");
    if (!named || strcmp(named, serial) != 0)
        return err_set(e, "serial: not '%s'", serial);
    if (json_object_object_get_ex(doc, "floor", &v) && !json_object_is_type(v, json_type_int))
        return err_set(e, "floors.%s: not an integer", serial);
    if (!json_object_object_get_ex(doc, "seen", &v))
        return 0;
    return seen_check_keys(v, serial, e);
}

/* Parses the text of a file into *out, an object that passed check_doc. */
static int parse_doc(struct json_object **out, const struct buf *text, const char *serial,
                     struct err *e)
{
    int rc = -1;
    struct json_object *doc = NULL;
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        xalloc_die();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    doc = json_tokener_parse_ex(tok, text->data, (int)text->len + 1);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (text->len == 0)
        err_set(e, "empty");
    else if (jerr != json_tokener_success)
        err_set(e, "%s at offset %zu",
                jerr == json_tokener_continue ? "unexpected end of data"
                                              : json_tokener_error_desc(jerr),
                json_tokener_get_parse_end(tok));
    else if (json_tokener_get_parse_end(tok) < text->len)
        err_set(e, "unexpected data at offset %zu", json_tokener_get_parse_end(tok));
    else if (!json_object_is_type(doc, json_type_object))
        err_set(e, "not a JSON object");
    else if (check_doc(doc, serial, e) == 0)
        rc = 0;
    json_tokener_free(tok);
    if (rc < 0)
        json_object_put(doc);
    *out = rc == 0 ? doc : NULL;
    return rc;
}

/* Whether `name` in the directory is the very file open as `fd`. */
static bool same_file(int dirfd, const char *name, int fd)
{
    struct stat a, b;
    return fstatat(dirfd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 && fstat(fd, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Moves the corrupt file `name`, open as `fd`, to
 * NAME.corrupt-YYYYmmddTHHMMSSZ[-N] in the directory, mode 0600, the way
 * statefile.c moves a corrupt state file: link + unlink (a rename would replace
 * an earlier file of that name), each name checked to still be what was
 * read. Returns the new name (caller frees), or NULL with `e` set. */
static char *set_aside(const struct seen_files *f, const char *name, int fd, struct err *e)
{
    char stamp[32];
    char *aside = NULL;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    if (fchmod(fd, 0600) < 0) {
        err_set(e, "%s", strerror(errno));
        return NULL;
    }
    for (int n = 1; n < 100; n++) {
        free(aside);
        aside = n == 1 ? xasprintf("%s.corrupt-%s", name, stamp)
                       : xasprintf("%s.corrupt-%s-%d", name, stamp, n);
        if (!same_file(f->fd, name, fd))
            break;
        if (linkat(f->fd, name, f->fd, aside, 0) == 0) {
            if (same_file(f->fd, aside, fd) && same_file(f->fd, name, fd) &&
                unlinkat(f->fd, name, 0) == 0)
                return aside;
            if (!same_file(f->fd, aside, fd))
                unlinkat(f->fd, aside, 0);
            break;
        }
        if (errno != EEXIST) {
            err_set(e, "%s/%s: %s", f->dir, aside, strerror(errno));
            free(aside);
            return NULL;
        }
    }
    err_set(e, "replaced while being read, or 99 names taken");
    free(aside);
    return NULL;
}

/* A corrupt file: moved aside (not by state_peek), with a warning. Its
 * device then reads as having a new, empty file, which seen.c gives the
 * state file's high-water mark (see "A lost file" there). Returns the
 * document to use in its place, or a string (why) when the file could not
 * even be moved: it is then never overwritten either, so a person can
 * still look at it. */
static struct json_object *corrupt(const struct seen_files *f, const char *name, int fd,
                                   const char *serial, const char *why)
{
    struct err e;
    if (f->read_only) {
        log_warn("%s/%s: corrupt seen file: %s; read as empty", f->dir, name, why);
        jsonv_put(f->news, serial, jsonv_need(json_object_new_boolean(true)));
        return new_doc(serial);
    }
    char *aside = set_aside(f, name, fd, &e);
    if (!aside) {
        char *msg = xasprintf("%s/%s: corrupt seen file: %s; cannot move it aside (%s)", f->dir,
                              name, why, e.msg);
        log_error("%s: its device's keys stay in the state file until it is removed", msg);
        struct json_object *failed = jsonv_need(json_object_new_string(msg));
        free(msg);
        return failed;
    }
    log_warn("%s/%s: corrupt seen file: %s; moved aside to %s/%s", f->dir, name, why, f->dir,
             aside);
    free(aside);
    jsonv_put(f->news, serial, jsonv_need(json_object_new_boolean(true)));
    return new_doc(serial);
}

/* What seen_files_get caches for `serial`: its document or why not. */
static struct json_object *load(const struct seen_files *f, const char *serial)
{
    struct json_object *doc = NULL;
    struct err e;
    struct buf text;
    struct stat st;
    char *name = file_name(serial);
    char *path = xasprintf("%s/%s", f->dir, name);
    int fd = f->fd < 0 ? -1 : file_open_regular_at(f->fd, name, path, FILE_NOFOLLOW, &st, &e);
    bool missing = f->fd < 0 || (fd < 0 && errno == ENOENT);
    buf_init(&text, SEEN_FILE_MAX);
    if (missing) {
        doc = new_doc(serial);
    } else if (fd < 0 ||
               ((size_t)st.st_size <= SEEN_FILE_MAX && file_read_fd(&text, fd, path, &e) < 0)) {
        log_error("%s; device %s reads as having no seen file", e.msg, serial);
        doc = jsonv_need(json_object_new_string(e.msg));
    } else if ((size_t)st.st_size > SEEN_FILE_MAX) {
        err_set(&e, "%lld bytes, more than the %zu KiB wsrelay reads", (long long)st.st_size,
                SEEN_FILE_MAX >> 10);
        doc = corrupt(f, name, fd, serial, e.msg);
    } else if (parse_doc(&doc, &text, serial, &e) < 0) {
        doc = corrupt(f, name, fd, serial, e.msg);
    }
    if (fd >= 0)
        close(fd);
    buf_free(&text);
    free(path);
    free(name);
    return doc;
}

struct json_object *seen_files_get(struct seen_files *f, const char *serial)
{
    struct json_object *doc = NULL;
    if (!json_object_object_get_ex(f->docs, serial, &doc)) {
        doc = load(f, serial);
        jsonv_put(f->docs, serial, doc);
        if (json_object_is_type(doc, json_type_object) &&
            !json_object_object_get_ex(f->news, serial, NULL))
            jsonv_put(f->news, serial, jsonv_need(json_object_new_boolean(false)));
    }
    return json_object_is_type(doc, json_type_object) ? doc : NULL;
}

bool seen_files_take_new(struct seen_files *f, const char *serial, bool *lost)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(f->news, serial, &v))
        return false;
    *lost = json_object_get_boolean(v);
    json_object_object_del(f->news, serial);
    return true;
}

const char *seen_files_why(struct seen_files *f, const char *serial)
{
    return str_member(f->docs, serial);
}

/* --- writing ----------------------------------------------------------- */

void seen_files_touch(struct seen_files *f, const char *serial)
{
    jsonv_put(f->dirty, serial, NULL);
}

bool seen_files_dirty(const struct seen_files *f, const char *serial)
{
    return json_object_object_get_ex(f->dirty, serial, NULL);
}

struct json_object *seen_files_dirty_set(const struct seen_files *f)
{
    return f->dirty;
}

int seen_files_write(struct seen_files *f, const char *serial, struct err *e)
{
    int rc = -1;
    size_t len = 0;
    char *name = file_name(serial);
    struct buf line;
    buf_init(&line, 0);
    struct json_object *doc = seen_files_get(f, serial);
    if (!doc) {
        err_set(e, "%s", seen_files_why(f, serial));
        goto out;
    }
    const char *text = json_object_to_json_string_length(doc, JSON_FLAGS, &len);
    if (!text) {
        err_set(e, "%s/%s: cannot serialise", f->dir, name);
        goto out;
    }
    buf_append(&line, text, len);
    buf_append(&line, "\n", 1);
    /* Relative to the directory's descriptor, never through a path, and
     * without the directory's fsync: seen_files_sync does one a batch. */
    if (make_dir(f, e) < 0 ||
        file_write_atomic_at(f->fd, f->dir, name, line.data, line.len, 0600, e) < 0)
        goto out;
    json_object_object_del(f->dirty, serial);
    rc = 0;
out:
    buf_free(&line);
    free(name);
    return rc;
}

int seen_files_sync(struct seen_files *f, struct err *e)
{
    if (f->fd >= 0 && fsync(f->fd) < 0)
        return err_set(e, "%s: cannot sync directory: %s", f->dir, strerror(errno));
    return 0;
}
