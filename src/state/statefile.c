/* Opening, locking, loading and saving the state file: the lock, the
 * checks a loaded document passes (each section's own, in the order of the
 * table in sections.c), the atomic save and the read without the lock for
 * `wsrelay status`. What the sections hold lives in the other files of src/state/.
 *
 * The lock file PATH.lock is never removed: removing a lock file that
 * others may have opened would let two runs hold "the" lock at once. */
#include "state.h"
#include "state/native.h"
#include "state/section.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_VERSION 2 /* 1: the native sections in the state file itself */
#define STATE_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define STATE_WRITE_MAX (STATE_MAX_BYTES / 2) /* what a save may write: half of what is read */
#define LOCK_POLL_NS 100000000L

/* --- checking a loaded document ---------------------------------------- */

/* An empty section. */
static struct json_object *new_section(const struct state_section *sec)
{
    return jsonv_need(sec->type == json_type_array ? json_object_new_array()
                                                   : json_object_new_object());
}

/* Checks a parsed document and adds the sections it lacks. */
static int check_root(struct json_object *root, struct err *e)
{
    struct json_object *v = NULL;
    for (size_t i = 0; i < state_n_sections; i++) {
        if (!json_object_object_get_ex(root, state_sections[i]->name, &v)) {
            if (!state_sections[i]->lazy)
                jsonv_put(root, state_sections[i]->name, new_section(state_sections[i]));
            continue;
        }
        if (state_sections[i]->check(v, e) < 0)
            return -1;
    }
    return outbox_check_next_id(root, e);
}

static struct json_object *new_root(void)
{
    struct json_object *root = jsonv_need(json_object_new_object());
    jsonv_put_int(root, "version", STATE_VERSION);
    jsonv_put_int(root, "next_id", 1);
    for (size_t i = 0; i < state_n_sections; i++)
        if (!state_sections[i]->lazy)
            jsonv_put(root, state_sections[i]->name, new_section(state_sections[i]));
    return root;
}

/* What a save compares to know whether the document changed since it was
 * read or written: a 64-bit hash of the text, eight bytes at a time
 * (FNV-1a's prime on each word, then a final mix), with its length folded
 * in. 0 stands for "not known" (the next save writes); a text whose digest
 * happens to be 0 is merely written once more. */
static uint64_t digest_of(const char *text, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, text + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ (unsigned char)text[i]) * 0x100000001b3ULL;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    return h ^ (h >> 32);
}

/* The index of the native section `name` in state_natives;
 * state_n_natives when it is none. */
static size_t native_named(const char *name)
{
    size_t i = 0;
    while (i < state_n_natives && strcmp(state_natives[i]->name, name) != 0)
        i++;
    return i;
}

/* Parses one member's value (`raw`) into *out with json-c as the whole
 * file used to be: strictly, UTF-8 checked. False when it is not JSON. */
static bool parse_member(struct json_object **out, const struct jscan_raw *raw)
{
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        xalloc_die();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    struct json_object *v = json_tokener_parse_ex(tok, raw->text, (int)raw->len);
    if (json_tokener_get_error(tok) == json_tokener_continue)
        v = json_tokener_parse_ex(tok, "", 1); /* a number at the very end */
    bool ok = json_tokener_get_error(tok) == json_tokener_success;
    if (!ok) {
        json_object_put(v);
        v = NULL;
    }
    json_tokener_free(tok);
    *out = v;
    return ok;
}

/* The error for a member written twice. wsrelay never writes a file so:
 * someone edited it, and which copy holds the truth (an outbox still
 * waiting, or one already delivered) cannot be known. Taking either copy
 * could drop an alert or send it again, and setting the state aside would
 * drop the outbox with it; so the state is refused as it is, like one that
 * cannot be read, with what to fix: the runs fail (no heartbeat) until a
 * person removes one copy, and nothing is lost meanwhile. */
static int twice(struct jscan *js, const char *text, struct err *e)
{
    err_set(e,
            "byte %zu: member \"%s\" written twice; wsrelay never writes a state so, and will "
            "not guess which copy is right: remove one (the file is left as it is)",
            (size_t)(js->p - text), js->key);
    return -2;
}

/* Parses `text`, a whole file, into s->root and the native sections:
 * members of a native section by its reader, every other by json-c.
 * -1 when the text is not a state, -2 when a member is written twice
 * (twice()). */
static int parse_text(struct state *s, const char *text, size_t len, struct err *e)
{
    int rc = -1;
    struct jscan js = {0};
    bool native_taken[STATE_N_NATIVES] = {false};
    /* What json-c refused in the whole file, the scanner would take: a NUL
     * byte (which would cut a member kept as text) and bytes that are not
     * UTF-8. */
    size_t valid = utf8_valid_prefix(text, len);
    const char *nul = memchr(text, '\0', valid); /* U+0000 is UTF-8 */
    if (nul)
        return err_set(e, "byte %zu: a NUL byte", (size_t)(nul - text));
    if (valid < len)
        return err_set(e, "byte %zu: not UTF-8", valid);
    jscan_init(&js, text, len);
    if (jscan_peek(&js) != JSCAN_OBJECT) {
        jscan_skip(&js, NULL);
        if (jscan_end(&js, e) == 0)
            err_set(e, "not a JSON object");
        goto out;
    }
    s->root = jsonv_need(json_object_new_object());
    jscan_object(&js);
    while (jscan_member(&js)) {
        size_t k = native_named(js.key);
        struct jscan_raw raw;
        if (k < state_n_natives) {
            if (native_taken[k]) {
                rc = twice(&js, text, e);
                goto out;
            }
            native_taken[k] = true;
            if (native_read(state_natives[k], s, &js, false, e) < 0)
                goto out;
            continue;
        }
        if (strlen(js.key) != js.key_len || !utf8_valid(js.key, js.key_len)) {
            jscan_fail(&js, "a member name that is not UTF-8 text");
            break;
        }
        if (json_object_object_get_ex(s->root, js.key, NULL)) {
            rc = twice(&js, text, e);
            goto out;
        }
        char *name = xstrdup(js.key);
        struct json_object *v = NULL;
        if (jscan_skip(&js, &raw)) {
            if (parse_member(&v, &raw))
                jsonv_put(s->root, name, v);
            else
                jscan_fail(&js, "a member that is not UTF-8 JSON");
        }
        free(name);
    }
    if (jscan_end(&js, e) < 0)
        goto out;
    rc = 0;
out:
    jscan_free(&js);
    return rc;
}

static void free_natives(struct state *s)
{
    outbox_free(s);
    for (size_t i = 0; i < state_n_natives; i++)
        state_natives[i]->free(s);
    free(s->text); /* after the entries that borrow from it */
    s->text = NULL;
    free(s->fleet_text);
    s->fleet_text = NULL;
}

/* The fleet file is missing or damaged (`why`): what it held (device
 * lists and histories, readings memories, learnt limits) is what polling
 * relearns, so it is forgotten rather than the whole state set aside with
 * it: the outbox, the seen keys and the budget ledger are in the state
 * file and stay. The next save writes a new generation, and removes this
 * one. */
static void fleet_relearn(struct state *s, const char *why)
{
    for (size_t i = 0; i < state_n_natives; i++)
        if (state_natives[i]->write_changed)
            state_natives[i]->free(s);
    s->fleet_len = s->fleet_base = 0;
    s->fleet_missing = false;
    s->rebase = true;
    log_warn("%s: %s; the device lists, readings memories and learnt limits start over and "
             "polling relearns them (the outbox, seen keys and budget ledger are kept)",
             s->path, why);
}

/* The fleet file the state file names ("fleet": {"generation": G,
 * "length": L}), read into the native sections; a file without one (of
 * version 1, or new) has them in itself. A fleet file that is missing or
 * damaged is relearnt (fleet_relearn), but with s->fleet_strict a missing
 * one fails (-1) so that state_peek can read again. -1 when the state
 * is corrupt (a "fleet" member that is not what it should be), -2 when
 * the fleet file cannot be read (fleet_file_read). */
static int load_fleet(struct state *s, struct err *e)
{
    struct json_object *ref = NULL;
    if (!json_object_object_get_ex(s->root, "fleet", &ref))
        goto out;
    long long gen = int_member(ref, "generation", 0);
    long long len = int_member(ref, "length", 0);
    if (!json_object_is_type(ref, json_type_object) || gen < 1 || len < 3)
        return err_set(e, "fleet: not {\"generation\": N, \"length\": N} of positive numbers");
    s->fleet_gen = gen;
    s->fleet_len = (size_t)len;
    int rc = fleet_file_read(s, e);
    if (rc == -1 && !(s->fleet_missing && s->fleet_strict))
        fleet_relearn(s, e->msg);
    else if (rc < 0)
        return rc;
out:
    fleet_loaded(s);
    return 0;
}

/* Reads and checks s->path into s->root and the native sections; a
 * missing file is an empty state. The file is opened without following a
 * symlink and without blocking (a FIFO or a device there is refused,
 * never waited on or moved), and with *fd (may be NULL) the caller keeps
 * the descriptor of what was read, -1 when nothing was: state_open moves
 * a corrupt file aside through it. *corrupt (may be NULL) tells a file
 * that was read but is not a state this version understands (including
 * one over the size limit) from one that could not be read at all.
 * *digest (may be NULL) gets the digest of the text read without its
 * final newline (what a save of the same document writes, when this
 * version wrote the file); 0 when there was no file or it is not a
 * state. On failure s->root is NULL and the native sections empty. */
static int load(struct state *s, int *fd, bool *corrupt, uint64_t *digest, struct err *e)
{
    bool read = false;
    int rc = -1;
    int in = -1;
    const char *path = s->path;
    struct buf text;
    struct json_object *v = NULL;
    struct stat st;

    buf_init(&text, STATE_MAX_BYTES);
    if (digest)
        *digest = 0;
    in = file_open_regular(path, FILE_NOFOLLOW, &st, e);
    if (in < 0 && errno == ENOENT) {
        s->root = new_root();
        outbox_take(s);
        rc = 0;
        goto out;
    }
    if (in < 0)
        goto out;
    if ((size_t)st.st_size > STATE_MAX_BYTES) {
        read = true;
        err_set(e, "%s: corrupt state file: %lld bytes, more than the %zu MiB wsrelay reads", path,
                (long long)st.st_size, STATE_MAX_BYTES >> 20);
        goto out;
    }
    if (file_read_fd(&text, in, path, e) < 0)
        goto out;
    read = true;
    if (text.len == 0) {
        err_set(e, "%s: corrupt state file: empty", path);
        goto out;
    }
    int parsed = parse_text(s, text.data, text.len, e);
    if (parsed == -2) { /* a person's edit to undo: refused, never set aside */
        read = false;
        err_prefix(e, "%s", path);
        goto out;
    }
    if (parsed < 0) {
        err_prefix(e, "%s: corrupt state file", path);
        goto out;
    }
    if (!json_object_object_get_ex(s->root, "version", &v) ||
        !json_object_is_type(v, json_type_int)) {
        err_set(e, "%s: corrupt state file: no integer 'version'", path);
        goto out;
    }
    long long version = (long long)json_object_get_int64(v);
    if (version > STATE_VERSION) {
        err_set(e, "%s: written by a newer wsrelay (version %lld)", path, version);
        goto out;
    }
    if (version < 1) {
        err_set(e, "%s: corrupt state file: version %lld", path, version);
        goto out;
    }
    if (check_root(s->root, e) < 0) {
        err_prefix(e, "%s: corrupt state file", path);
        goto out;
    }
    outbox_take(s);
    int fleet = load_fleet(s, e);
    if (fleet == -2) { /* like a state file that cannot be read: it stays */
        read = false;
        err_prefix(e, "%s", path);
        goto out;
    }
    if (fleet < 0) {
        err_prefix(e, "%s: corrupt state file", path);
        goto out;
    }
    if (digest)
        *digest = digest_of(text.data, text.len - (text.data[text.len - 1] == '\n'));
    s->size_hint = text.len;
    s->text = buf_steal(&text); /* the native entries' texts are spans of it */
    rc = 0;
out:
    if (corrupt)
        *corrupt = rc < 0 && read;
    if (fd)
        *fd = in;
    else if (in >= 0)
        close(in);
    if (rc < 0) {
        json_object_put(s->root);
        s->root = NULL;
        free_natives(s);
        s->fleet_gen = 0;
        s->fleet_len = s->fleet_base = 0;
    }
    buf_free(&text);
    return rc;
}

/* --- locking ----------------------------------------------------------- */

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The pid written in the lock file by its holder; 0 when unreadable. */
static long lock_holder(int fd)
{
    char text[32];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    return end != text && pid > 0 ? pid : 0;
}

/* Opens and locks PATH.lock, waiting up to `wait` seconds, and writes our
 * pid into it. Creating the file also proves that the directory is
 * writable, which is checked again for a lock file that already existed. */
static int lock(int *out, const char *path, int wait, struct err *e)
{
    int rc = -1;
    char *lockpath = xasprintf("%s.lock", path);
    char *dir = file_dirname(path);
    /* Not blocking, not following a link: a FIFO or a symlink planted as
     * the lock file must make the run fail, not wait or write elsewhere. */
    int fd =
        open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
    struct stat lst;
    if (fd >= 0 && (fstat(fd, &lst) < 0 || !S_ISREG(lst.st_mode))) {
        err_set(e, "%s: lock file %s is not a regular file", path, lockpath);
        goto out;
    }
    if (fd < 0) {
        int err = errno;
        struct stat st;
        char *fix = NULL;
        if (err == ENOENT || err == ENOTDIR || err == EROFS ||
            ((err == EACCES || err == EPERM) && lstat(lockpath, &st) < 0))
            err_set(e, "%s: state directory %s is not writable: %s", path, dir, strerror(err));
        else if ((err == EACCES || err == EPERM) && (fix = state_owner_fix(path, lockpath)))
            err_set(e, "%s: cannot open lock file: %s", path, fix);
        else
            err_set(e, "%s: cannot open lock file %s: %s", path, lockpath, strerror(err));
        free(fix);
        goto out;
    }
    long long deadline = monotonic_ms() + (wait > 0 ? (long long)wait * 1000 : 0);
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            err_set(e, "%s: cannot lock %s: %s", path, lockpath, strerror(errno));
            goto out;
        }
        if (monotonic_ms() >= deadline) {
            long pid = lock_holder(fd);
            if (pid)
                err_set(e, "%s: locked by another wsrelay run (pid %ld)", path, pid);
            else
                err_set(e, "%s: locked by another wsrelay run (pid unknown)", path);
            goto out;
        }
        struct timespec pause = {0, LOCK_POLL_NS};
        nanosleep(&pause, NULL);
    }
    if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
        err_set(e, "%s: state directory %s is not writable: %s", path, dir, strerror(errno));
        goto out;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        err_set(e, "%s: cannot write lock file %s: %s", path, lockpath, strerror(errno));
        goto out;
    }
    *out = fd;
    fd = -1;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(lockpath);
    free(dir);
    return rc;
}

/* --- open, save, close ------------------------------------------------- */

/* Whether `path` names the very file open as `fd`, without following a
 * symlink: the name may have been replaced since it was opened. */
static bool same_file(const char *path, int fd)
{
    struct stat a, b;
    return lstat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Moves the corrupt file open as `fd` (the one load read at s->path)
 * aside, to PATH.corrupt-YYYYmmddTHHMMSSZ (with "-N" added when that name
 * is taken), mode 0600, so that a person can look at it while the relay
 * starts over. link() + unlink() rather than rename(): rename would replace
 * an earlier file of the same name. Everything is done to what was opened:
 * the mode is set through `fd`, and each name is checked to still be that
 * file before it is linked or removed, so a file swapped in meanwhile (a
 * symlink to something else, say) is never touched. `why` is copied
 * first: it may be e->msg itself. */
static int set_aside(struct state *s, int fd, const char *why, struct err *e)
{
    int rc = -1;
    char stamp[32];
    char *reason = xstrdup(why);
    char *aside = NULL;
    char *files_aside = NULL;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    if (fchmod(fd, 0600) < 0) {
        err_set(e, "%s: cannot move the corrupt state file aside: %s (%s)", s->path,
                strerror(errno), reason);
        goto out;
    }
    /* The device files first: they mark seen what the outbox of this file
     * held, and starting over without the outbox but with them would lose
     * those events for good (without either, catch_up sends them again).
     * Should the file's own move then fail, the next run tries again. */
    if (seen_files_set_aside(&files_aside, s->path, e) < 0) {
        err_prefix(e, "%s: cannot move the corrupt state file's device files aside (%s)", s->path,
                   reason);
        goto out;
    }
    bool linked = false;
    for (int n = 1; n < 100 && !linked; n++) {
        free(aside);
        aside = n == 1 ? xasprintf("%s.corrupt-%s", s->path, stamp)
                       : xasprintf("%s.corrupt-%s-%d", s->path, stamp, n);
        if (!same_file(s->path, fd)) {
            err_set(e,
                    "%s: the corrupt state file was replaced while being read; not moved "
                    "(%s)",
                    s->path, reason);
            goto out;
        }
        linked = link(s->path, aside) == 0;
        if (!linked && errno != EEXIST) {
            err_set(e, "%s: cannot move the corrupt state file aside to %s: %s (%s)", s->path,
                    aside, strerror(errno), reason);
            goto out;
        }
    }
    if (!linked) {
        err_set(e,
                "%s: cannot move the corrupt state file aside: %s and 98 more names are taken "
                "(%s)",
                s->path, aside, reason);
        goto out;
    }
    if (!same_file(aside, fd) || !same_file(s->path, fd)) {
        if (!same_file(aside, fd))
            unlink(aside); /* our own new link, to whatever was swapped in */
        err_set(e, "%s: the corrupt state file was replaced while being moved; not moved (%s)",
                s->path, reason);
        goto out;
    }
    if (unlink(s->path) < 0) {
        err_set(e, "%s: cannot move the corrupt state file aside to %s: %s (%s)", s->path, aside,
                strerror(errno), reason);
        goto out;
    }
    /* Its fleet files after it: without the state file they are no one's,
     * and a new state's first save starts at generation 1 again. */
    if (fleet_files_set_aside(s->path, aside + strlen(s->path), e) < 0) {
        err_prefix(e, "%s: moved aside to %s, but not its fleet files (%s)", s->path, aside,
                   reason);
        goto out;
    }
    char *dir = file_dirname(s->path);
    struct err ignored; /* moved: a sync that fails only makes it less durable */
    file_sync_dir(dir, &ignored);
    free(dir);
    if (files_aside)
        log_error("%s; moved aside to %s, its device files to %s: starting over with an empty "
                  "state (catch_up applies)",
                  reason, aside, files_aside);
    else
        log_error("%s; moved aside to %s: starting over with an empty state (catch_up applies)",
                  reason, aside);
    s->aside = aside;
    s->aside_why = reason;
    aside = reason = NULL;
    rc = 0;
out:
    free(aside);
    free(files_aside);
    free(reason);
    return rc;
}

const char *state_set_aside(const struct state *s, const char **why)
{
    if (why)
        *why = s->aside_why;
    return s->aside;
}

/* No state file (removed to start over, or never there): device files
 * left beside it would mark seen what its outbox held, which is gone, so
 * they go aside too and the relay starts over whole (catch_up applies). */
static int forget_files(const char *path, struct err *e)
{
    char *aside = NULL;
    char stamp[48];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, ".orphan-%Y%m%dT%H%M%SZ", &tm);
    int fleet = fleet_files_set_aside(path, stamp, e);
    if (fleet < 0 || seen_files_set_aside(&aside, path, e) < 0)
        return err_prefix(e, "%s: no state file", path);
    if (fleet > 0)
        log_warn("%s: no state file, but %d fleet file%s beside it: moved aside to "
                 "%s.fleet-N%s",
                 path, fleet, fleet == 1 ? "" : "s", path, stamp);
    if (aside)
        log_warn("%s: no state file, but device files beside it: moved them aside to %s; "
                 "starting over with an empty state (catch_up applies)",
                 path, aside);
    free(aside);
    return 0;
}

int state_open(struct state **out, const char *path, int lock_wait, struct err *e)
{
    int rc = -1;
    int fd = -1;
    struct state *s = xcalloc(1, sizeof *s);
    s->lock_fd = -1;
    s->max_bytes = STATE_WRITE_MAX;
    *out = NULL;
    if (!path || !*path) {
        err_set(e, "no state file given");
        goto out;
    }
    s->path = xstrdup(path);
    if (lock(&s->lock_fd, path, lock_wait, e) < 0)
        goto out;
    bool corrupt = false;
    if (load(s, &fd, &corrupt, &s->saved, e) < 0) {
        if (!corrupt || set_aside(s, fd, e->msg, e) < 0)
            goto out;
        s->root = new_root();
        outbox_take(s);
    } else if (fd < 0 && forget_files(path, e) < 0) {
        goto out;
    }
    if (seen_files_open(&s->files, path, false, e) < 0)
        goto out;
    /* A crash may have left the generation before the one named (between
     * the state file naming a new one and the removal of the old), or the
     * one after it (a new one the state file never came to name). */
    if (s->fleet_gen > 1)
        fleet_file_tidy(s, s->fleet_gen - 1);
    if (s->fleet_gen > 0)
        fleet_file_tidy(s, s->fleet_gen + 1);
    *out = s;
    s = NULL;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    state_close(s);
    return rc;
}

/* No lock: a run holding it must not make `wsrelay status` wait, and
 * status must not make a run wait either. Saves are renames, so the file
 * read is a whole save, old or new. */
int state_peek(struct state **out, const char *path, struct err *e)
{
    int rc = -1;
    struct state *s = xcalloc(1, sizeof *s);
    s->lock_fd = -1;
    s->read_only = true;
    *out = NULL;
    if (!path || !*path) {
        err_set(e, "no state file given");
        goto out;
    }
    s->path = xstrdup(path);
    /* A save that wrote a new fleet file removes the old one after the
     * state file naming it replaced the one read here: read both again. */
    s->fleet_strict = true;
    int loaded = load(s, NULL, NULL, NULL, e);
    for (int tries = 0; loaded < 0 && s->fleet_missing && tries < 4; tries++) {
        s->fleet_missing = false;
        s->fleet_strict = tries < 2; /* the last time, missing is missing */
        loaded = load(s, NULL, NULL, NULL, e);
    }
    if (loaded < 0 || seen_files_open(&s->files, path, true, e) < 0)
        goto out;
    *out = s;
    s = NULL;
    rc = 0;
out:
    state_close(s);
    return rc;
}

/* The state file's text: the root's members, then each native section's
 * that is not in the fleet file (all of them with `all`, as version 1
 * wrote); with a newline after it when `newline`. */
static void document_text(struct buf *out, const struct state *s, bool all, bool newline)
{
    size_t len = 0;
    const char *json = json_object_to_json_string_length(s->root, JSON_FLAGS, &len);
    if (!json || len < 2)
        xalloc_die(); /* json-c fails only when out of memory */
    buf_append(out, json, len - 1);
    for (size_t i = 0; i < state_n_natives; i++) {
        if ((state_natives[i]->write_changed && !all) || !state_natives[i]->write)
            continue;
        if (out->len > 1)
            buf_append(out, ",", 1);
        buf_json_string(out, state_natives[i]->name, strlen(state_natives[i]->name));
        buf_append(out, ":", 1);
        state_natives[i]->write(s, out);
    }
    buf_append(out, newline ? "}\n" : "}", newline ? 2 : 1);
}

/* A state read without the lock must never overwrite what a run that
 * holds it saves. */
static int refuse_read_only(const struct state *s, struct err *e)
{
    return err_set(e, "%s: read without the lock (state_peek): never saved", s->path);
}

/* The state must stay small enough to be read again: a file over the
 * loader's limit would stop every later run. Only the outbox can grow
 * without bound (receivers that fail for days), so a save that would
 * write more than max_bytes gives up its oldest items first, and tells
 * (state_take_trimmed): the caller reports them like outbox.max_items
 * does. Seen keys, devices and the ledger are bounded by the fleet (and
 * seen keys are mostly in the device files, which this limit is not
 * about). */
static int write_state_file(struct state *s, struct err *e)
{
    int rc = -1;
    struct fleet_commit fleet;
    struct buf text;
    buf_init(&text, 0);
    if (fleet_file_write(s, &fleet, e) < 0)
        goto out;
    struct json_object *ref = jsonv_need(json_object_new_object());
    jsonv_put_int(ref, "generation", fleet.gen);
    jsonv_put_int(ref, "length", (long long)fleet.len);
    jsonv_put(s->root, "fleet", ref);
    jsonv_put_int(s->root, "version", STATE_VERSION);
    buf_reserve(&text, s->size_hint + s->size_hint / 8 + 4096);
    document_text(&text, s, false, true);
    s->size_hint = text.len;
    /* Down to 15/16 of the limit: the relay event that reports it, and
     * the next events, must not make every following save trim again. */
    for (int tries = 0; text.len > s->max_bytes && tries < 3; tries++) {
        if (!outbox_shed(s, text.len - s->max_bytes / 16 * 15))
            break;
        buf_reset(&text);
        document_text(&text, s, false, true);
    }
    if (text.len > s->max_bytes)
        log_error("%s: the state holds %zu bytes, more than the %zu it should, with an empty "
                  "outbox",
                  s->path, text.len, s->max_bytes);
    /* A run that changed nothing (most runs find nothing due) rewrites
     * nothing: no write, no fsync, the file as it was. */
    uint64_t digest = digest_of(text.data, text.len - 1);
    if (digest && digest == s->saved) {
        rc = 0;
        goto out;
    }
    s->saved = 0; /* a write that fails may still have replaced the file */
    if (file_write_atomic(s->path, text.data, text.len, 0600, e) < 0)
        goto out;
    s->saved = digest;
    rc = 0;
out:
    if (rc == 0)
        fleet_file_commit(s, &fleet);
    else
        s->rebase = true; /* entries may hold texts no committed file has */
    buf_free(&text);
    return rc;
}

/* The state file first, then the device files (seen_flush): the journal
 * in the state file is what makes a crash between the two harmless. */
int state_save(struct state *s, struct err *e)
{
    if (s->read_only)
        return refuse_read_only(s, e);
    if (write_state_file(s, e) < 0)
        return err_prefix(e, "%s: cannot save state", s->path);
    /* The log has the journal's lines now: the file must not keep them,
     * or the next run would append them again. Should this second write
     * fail, it does once, and the log's reader skips the repeats. */
    if (incidents_flush(s) > 0 && write_state_file(s, e) < 0)
        log_warn("%s: %s (the incident log may get its last lines twice)", s->path, e->msg);
    if (seen_flush(s, e) < 0) {
        err_prefix(e, "%s: seen keys kept in the state file for now", s->path);
        return STATE_SAVED_BEHIND;
    }
    return 0;
}

void state_set_max_bytes(struct state *s, size_t max)
{
    s->max_bytes = max;
}

struct state_trim *state_take_trimmed(struct state *s, size_t *n)
{
    struct state_trim *t = s->trimmed;
    *n = s->n_trimmed;
    s->trimmed = NULL;
    s->n_trimmed = 0;
    return t;
}

void state_trimmed_free(struct state_trim *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++)
        free(t[i].receiver);
    free(t);
}

/* The file on disk is the one state_open loaded or the last save wrote:
 * the lock keeps every other run away from it. Loading it again with the
 * full check (rather than only parsing it) means a file this version
 * would refuse is not rewritten either. */
int state_save_budget(struct state *s, struct err *e)
{
    int rc = -1;
    struct state disk = {.path = s->path};
    struct json_object *copy = NULL;
    struct buf text;
    buf_init(&text, 0);
    if (s->read_only)
        return refuse_read_only(s, e);
    if (load(&disk, NULL, NULL, NULL, e) < 0)
        goto out;
    if (json_object_deep_copy(section(s, &state_section_logins), &copy, NULL) < 0 || !copy)
        xalloc_die();
    jsonv_put(disk.root, state_section_logins.name, copy);
    document_text(&text, &disk, disk.fleet_gen == 0, true);
    s->saved = 0; /* the file is no longer the document's text */
    if (file_write_atomic(s->path, text.data, text.len, 0600, e) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        err_prefix(e, "%s: cannot save the budget", s->path);
    json_object_put(disk.root);
    free_natives(&disk);
    buf_free(&text);
    return rc;
}

void state_close(struct state *s)
{
    if (!s)
        return;
    if (s->lock_fd >= 0) {
        /* An empty lock file says nobody holds it; a failure here is
         * harmless, the pid is only shown to a run that waits. */
        if (ftruncate(s->lock_fd, 0) < 0)
            log_debug("%s.lock: %s", s->path, strerror(errno));
        flock(s->lock_fd, LOCK_UN);
        close(s->lock_fd);
    }
    json_object_put(s->root);
    free_natives(s);
    seen_files_free(s->files);
    state_trimmed_free(s->trimmed, s->n_trimmed);
    free(s->path);
    free(s->aside);
    free(s->aside_why);
    free(s);
}

/* --- a clock that jumped ----------------------------------------------- */

void state_clamp_clock(struct state *s, long long now, long max_block)
{
    struct state_clamp to = {.now = now, .max_block = max_block > 0 ? max_block : 0};
    s->now = now;
    for (size_t i = 0; i < state_n_sections; i++)
        if (state_sections[i]->clamp)
            state_sections[i]->clamp(section(s, state_sections[i]), &to);
    for (size_t i = 0; i < state_n_natives; i++)
        state_natives[i]->clamp(s, &to);
}
