/* The state file: one locked JSON document holding what the relay has seen,
 * the devices it knows, what it has spent of the platform's budget and what
 * it still owes to receivers. In memory it stays a json-c tree (objects are
 * hash tables), checked once on load so that every accessor can trust it.
 *
 * Why the dedup and pruning rules are safe: an event is identified by
 * serial + unixtime + kind, and the caller marks it seen only once it has
 * been delivered or queued in the outbox, which is saved in the same atomic
 * write; after a crash the file has both the key and the queued item or
 * neither, so an event is never lost. (The one way to send twice is a crash
 * between a delivery and the save that records it; no file can close that
 * window, only make it short.) The platform keeps only the newest 20 alert
 * entries of a device, so an entry that has left that window can never be
 * returned again: forgetting the keys older than the oldest entry of the
 * latest response (state_prune_seen) cannot let a duplicate through, and it
 * keeps the file bounded. The budget ledger errs the same way, towards
 * caution: calls are recorded before they are sent, and calls stamped in
 * the future (the clock went back) still count.
 *
 * The file (one line; a new file has its keys in this order):
 *
 *   {"version":1,"next_id":7,
 *    "seen":{"5214000A":{"1795000000/ch1":1,...},...},
 *    "accounts":{"tokyo":{"discovered_at":N,
 *                "devices":[{"serial":S,"base":S,"model":S,"name":S,"last_poll":N,"last_ok":N},...]}},
 *    "logins":{"tbzz9999":{"alert":{"calls":[N,...],"blocked_until":N,
 *                                   "ratelimit":{"limit":12,"remaining":3,"reset":3600,"at":N}},
 *                          "current":{...}}},
 *    "outbox":[{"id":1,"receiver":"ops-hook","event":{...event_to_json...},"attempts":0,
 *               "queued_at":N,"next_try":N,"last_error":null},...]}
 *
 * Every section may be missing (it is then empty). Members this version
 * does not know are kept as they are; members it knows must have the shape
 * above, or the file is reported corrupt rather than guessed at. The outbox
 * stays sorted by id (ids only grow), which makes lookups by id a binary
 * search. The lock file PATH.lock is never removed: removing a lock file
 * that others may have opened would let two runs hold "the" lock at once. */
#include "state.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_VERSION 1
#define STATE_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define LEDGER_KEEP 86400 /* seconds of call times kept */
#define BACKOFF_FIRST 60  /* first retry delay of the outbox */
#define BACKOFF_MAX 3600  /* longest retry delay */
#define LOCK_POLL_NS 100000000L

struct state {
    char *path;
    int lock_fd;
    struct json_object *root;
};

static const char *const op_names[PLATFORM_N_OPS] = {
    [PLATFORM_CURRENT] = "current",
    [PLATFORM_ALERT] = "alert",
};

static const char *op_name(enum platform_op op)
{
    return (unsigned)op < PLATFORM_N_OPS ? op_names[op] : NULL;
}

/* --- json-c helpers ---------------------------------------------------- */

/* json-c reports allocation failure by returning NULL or -1; like xmalloc,
 * the program ends then. */
static _Noreturn void oom(void)
{
    fputs("wsrelay: out of memory\n", stderr);
    abort();
}

static struct json_object *need(struct json_object *o)
{
    if (!o)
        oom();
    return o;
}

static void put(struct json_object *obj, const char *key, struct json_object *val)
{
    if (json_object_object_add(obj, key, val) < 0)
        oom();
}

static void put_int(struct json_object *obj, const char *key, long long v)
{
    put(obj, key, need(json_object_new_int64((int64_t)v)));
}

static void append(struct json_object *arr, struct json_object *val)
{
    if (json_object_array_add(arr, val) < 0)
        oom();
}

/* The member `key` of `obj` when it has type `type`; else NULL. */
static struct json_object *member(const struct json_object *obj, const char *key,
                                  enum json_type type)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, type))
        return NULL;
    return v;
}

static long long int_member(const struct json_object *obj, const char *key, long long dflt)
{
    struct json_object *v = member(obj, key, json_type_int);
    return v ? (long long)json_object_get_int64(v) : dflt;
}

static const char *str_member(const struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_string);
    return v ? json_object_get_string(v) : NULL;
}

/* The object member `key` of `obj`, created (or replacing a member of
 * another type) when needed. */
static struct json_object *child_object(struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_object);
    if (!v) {
        v = need(json_object_new_object());
        put(obj, key, v);
    }
    return v;
}

static struct json_object *child_array(struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_array);
    if (!v) {
        v = need(json_object_new_array());
        put(obj, key, v);
    }
    return v;
}

/* --- checking a loaded document ---------------------------------------- */

/* Splits a seen key "UNIXTIME/KIND"; -1 when it has another form. */
static int parse_seen_key(const char *key, long long *unixtime)
{
    char *end = NULL;
    errno = 0;
    long long t = strtoll(key, &end, 10);
    if (end == key || errno || *end != '/' || end[1] == '\0')
        return -1;
    *unixtime = t;
    return 0;
}

/* Each check_* fails with a message naming the member, e.g.
 * "seen.5214000A: not an object". */

static const char *type_name(enum json_type type)
{
    switch (type) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return "a boolean";
    case json_type_double:
        return "a number";
    case json_type_int:
        return "an integer";
    case json_type_object:
        return "an object";
    case json_type_array:
        return "an array";
    case json_type_string:
        return "a string";
    }
    return "?";
}

static int check_type(const struct json_object *v, enum json_type type, const char *where,
                      struct err *e)
{
    if (json_object_is_type(v, type))
        return 0;
    return err_set(e, "%s: not %s", where, type_name(type));
}

/* A member that may be absent but, when present, has type `type`. */
static int check_opt(const struct json_object *obj, const char *key, enum json_type type,
                     const char *where, struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, type))
        return 0;
    return err_set(e, "%s.%s: not %s", where, key, type_name(type));
}

static int check_req(const struct json_object *obj, const char *key, enum json_type type,
                     const char *where, struct err *e)
{
    if (!json_object_object_get_ex(obj, key, NULL))
        return err_set(e, "%s: no '%s'", where, key);
    return check_opt(obj, key, type, where, e);
}

static int check_seen(struct json_object *seen, struct err *e)
{
    if (check_type(seen, json_type_object, "seen", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(seen);
    struct json_object_iterator end = json_object_iter_end(seen);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *serial = json_object_iter_peek_name(&it);
        struct json_object *keys = json_object_iter_peek_value(&it);
        if (!json_object_is_type(keys, json_type_object))
            return err_set(e, "seen.%s: not an object", serial);
        struct json_object_iterator kit = json_object_iter_begin(keys);
        struct json_object_iterator kend = json_object_iter_end(keys);
        for (; !json_object_iter_equal(&kit, &kend); json_object_iter_next(&kit)) {
            long long t;
            if (parse_seen_key(json_object_iter_peek_name(&kit), &t) < 0)
                return err_set(e, "seen.%s: key '%s' is not UNIXTIME/KIND", serial,
                               json_object_iter_peek_name(&kit));
        }
    }
    return 0;
}

static int check_accounts(struct json_object *accounts, struct err *e)
{
    char where[256];
    if (check_type(accounts, json_type_object, "accounts", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(accounts);
    struct json_object_iterator end = json_object_iter_end(accounts);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *acc = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "accounts.%s", json_object_iter_peek_name(&it));
        if (check_type(acc, json_type_object, where, e) < 0 ||
            check_opt(acc, "discovered_at", json_type_int, where, e) < 0 ||
            check_opt(acc, "devices", json_type_array, where, e) < 0)
            return -1;
        struct json_object *devs = member(acc, "devices", json_type_array);
        size_t n = devs ? json_object_array_length(devs) : 0;
        for (size_t i = 0; i < n; i++) {
            struct json_object *d = json_object_array_get_idx(devs, i);
            snprintf(where, sizeof where, "accounts.%s.devices[%zu]",
                     json_object_iter_peek_name(&it), i);
            if (check_type(d, json_type_object, where, e) < 0 ||
                check_req(d, "serial", json_type_string, where, e) < 0 ||
                check_opt(d, "base", json_type_string, where, e) < 0 ||
                check_opt(d, "model", json_type_string, where, e) < 0 ||
                check_opt(d, "name", json_type_string, where, e) < 0 ||
                check_opt(d, "last_poll", json_type_int, where, e) < 0 ||
                check_opt(d, "last_ok", json_type_int, where, e) < 0)
                return -1;
        }
    }
    return 0;
}

static int check_logins(struct json_object *logins, struct err *e)
{
    char where[256];
    if (check_type(logins, json_type_object, "logins", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(logins);
    struct json_object_iterator end = json_object_iter_end(logins);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        struct json_object *login = json_object_iter_peek_value(&it);
        snprintf(where, sizeof where, "logins.%s", json_object_iter_peek_name(&it));
        if (check_type(login, json_type_object, where, e) < 0)
            return -1;
        for (int op = 0; op < PLATFORM_N_OPS; op++) {
            struct json_object *led = NULL;
            if (!json_object_object_get_ex(login, op_names[op], &led))
                continue;
            snprintf(where, sizeof where, "logins.%s.%s", json_object_iter_peek_name(&it),
                     op_names[op]);
            if (check_type(led, json_type_object, where, e) < 0 ||
                check_opt(led, "calls", json_type_array, where, e) < 0 ||
                check_opt(led, "blocked_until", json_type_int, where, e) < 0 ||
                check_opt(led, "ratelimit", json_type_object, where, e) < 0)
                return -1;
            struct json_object *calls = member(led, "calls", json_type_array);
            size_t n = calls ? json_object_array_length(calls) : 0;
            for (size_t i = 0; i < n; i++)
                if (!json_object_is_type(json_object_array_get_idx(calls, i), json_type_int))
                    return err_set(e, "%s.calls[%zu]: not an integer", where, i);
            struct json_object *rl = member(led, "ratelimit", json_type_object);
            if (rl) {
                static const char *const keys[] = {"limit", "remaining", "reset", "at"};
                size_t len = strlen(where);
                snprintf(where + len, sizeof where - len, ".ratelimit");
                for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                    if (check_opt(rl, keys[k], json_type_int, where, e) < 0)
                        return -1;
            }
        }
    }
    return 0;
}

static long long item_id(const struct json_object *item)
{
    return int_member(item, "id", 0);
}

static int cmp_item_id(const void *a, const void *b)
{
    long long x = item_id(*(struct json_object *const *)a);
    long long y = item_id(*(struct json_object *const *)b);
    return (x > y) - (x < y);
}

/* Checks the outbox and sorts it by id; the event itself is not checked
 * here: an unreadable one is skipped (and reported) by state_outbox_due
 * while the rest of the state stays usable. */
static int check_outbox(struct json_object *outbox, struct err *e)
{
    char where[64];
    if (check_type(outbox, json_type_array, "outbox", e) < 0)
        return -1;
    size_t n = json_object_array_length(outbox);
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        struct json_object *v = NULL;
        snprintf(where, sizeof where, "outbox[%zu]", i);
        if (check_type(item, json_type_object, where, e) < 0 ||
            check_req(item, "id", json_type_int, where, e) < 0 ||
            check_req(item, "receiver", json_type_string, where, e) < 0 ||
            check_opt(item, "attempts", json_type_int, where, e) < 0 ||
            check_opt(item, "queued_at", json_type_int, where, e) < 0 ||
            check_opt(item, "next_try", json_type_int, where, e) < 0)
            return -1;
        if (item_id(item) < 1)
            return err_set(e, "%s.id: not a positive integer", where);
        if (int_member(item, "attempts", 0) < 0 || int_member(item, "attempts", 0) > INT_MAX)
            return err_set(e, "%s.attempts: out of range", where);
        if (json_object_object_get_ex(item, "last_error", &v) && v &&
            !json_object_is_type(v, json_type_string))
            return err_set(e, "%s.last_error: not a string or null", where);
    }
    json_object_array_sort(outbox, cmp_item_id);
    for (size_t i = 1; i < n; i++) {
        long long id = item_id(json_object_array_get_idx(outbox, i));
        if (id == item_id(json_object_array_get_idx(outbox, i - 1)))
            return err_set(e, "outbox: id %lld appears twice", id);
    }
    return 0;
}

/* Checks a parsed document and adds the sections it lacks. */
static int check_root(struct json_object *root, struct err *e)
{
    static const struct {
        const char *key;
        int (*check)(struct json_object *, struct err *);
        struct json_object *(*make)(void);
    } sections[] = {
        {"seen", check_seen, json_object_new_object},
        {"accounts", check_accounts, json_object_new_object},
        {"logins", check_logins, json_object_new_object},
        {"outbox", check_outbox, json_object_new_array},
    };
    struct json_object *v = NULL;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        if (!json_object_object_get_ex(root, sections[i].key, &v)) {
            put(root, sections[i].key, need(sections[i].make()));
            continue;
        }
        if (sections[i].check(v, e) < 0)
            return -1;
    }
    if (check_opt(root, "next_id", json_type_int, "state", e) < 0)
        return -1;
    /* next_id must stay above every id in use, whatever a hand edit did. */
    struct json_object *outbox = member(root, "outbox", json_type_array);
    size_t n = json_object_array_length(outbox);
    long long max = n ? item_id(json_object_array_get_idx(outbox, n - 1)) : 0;
    long long next = int_member(root, "next_id", 1);
    if (next <= max)
        next = max + 1;
    if (next < 1)
        next = 1;
    put_int(root, "next_id", next);
    return 0;
}

static struct json_object *new_root(void)
{
    struct json_object *root = need(json_object_new_object());
    put_int(root, "version", STATE_VERSION);
    put_int(root, "next_id", 1);
    put(root, "seen", need(json_object_new_object()));
    put(root, "accounts", need(json_object_new_object()));
    put(root, "logins", need(json_object_new_object()));
    put(root, "outbox", need(json_object_new_array()));
    return root;
}

/* Reads and checks `path` into *out; a missing file is an empty state. */
static int load(struct json_object **out, const char *path, struct err *e)
{
    int rc = -1;
    struct buf text;
    struct json_tokener *tok = NULL;
    struct json_object *root = NULL;
    struct json_object *v = NULL;
    struct stat st;

    buf_init(&text, STATE_MAX_BYTES);
    if (stat(path, &st) < 0 && errno == ENOENT) {
        root = new_root();
        rc = 0;
        goto out;
    }
    if (file_read(&text, path, e) < 0)
        goto out;
    if (text.len == 0) {
        err_set(e, "%s: corrupt state file: empty", path);
        goto out;
    }
    tok = json_tokener_new();
    if (!tok)
        oom();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    /* The length includes the final NUL so that the tokener knows the text
     * ends there; it must then have consumed everything before it. */
    root = json_tokener_parse_ex(tok, text.data, (int)text.len + 1);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (jerr != json_tokener_success) {
        err_set(e, "%s: corrupt state file: %s at offset %zu", path,
                jerr == json_tokener_continue ? "unexpected end of data"
                                              : json_tokener_error_desc(jerr),
                json_tokener_get_parse_end(tok));
        goto out;
    }
    if (json_tokener_get_parse_end(tok) < text.len) {
        err_set(e, "%s: corrupt state file: unexpected data at offset %zu", path,
                json_tokener_get_parse_end(tok));
        goto out;
    }
    if (!json_object_is_type(root, json_type_object)) {
        err_set(e, "%s: corrupt state file: not a JSON object", path);
        goto out;
    }
    if (!json_object_object_get_ex(root, "version", &v) || !json_object_is_type(v, json_type_int)) {
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
    if (check_root(root, e) < 0) {
        err_prefix(e, "%s: corrupt state file", path);
        goto out;
    }
    rc = 0;
out:
    if (rc < 0) {
        json_object_put(root);
        root = NULL;
    }
    *out = root;
    if (tok)
        json_tokener_free(tok);
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
    int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int err = errno;
        struct stat st;
        if (err == ENOENT || err == ENOTDIR || err == EROFS ||
            ((err == EACCES || err == EPERM) && lstat(lockpath, &st) < 0))
            err_set(e, "%s: state directory %s is not writable: %s", path, dir, strerror(err));
        else
            err_set(e, "%s: cannot open lock file %s: %s", path, lockpath, strerror(err));
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

int state_open(struct state **out, const char *path, int lock_wait, struct err *e)
{
    int rc = -1;
    struct state *s = xcalloc(1, sizeof *s);
    s->lock_fd = -1;
    *out = NULL;
    if (!path || !*path) {
        err_set(e, "no state file given");
        goto out;
    }
    s->path = xstrdup(path);
    if (lock(&s->lock_fd, path, lock_wait, e) < 0)
        goto out;
    if (load(&s->root, path, e) < 0)
        goto out;
    *out = s;
    s = NULL;
    rc = 0;
out:
    state_close(s);
    return rc;
}

int state_save(struct state *s, struct err *e)
{
    int rc = -1;
    struct buf text;
    buf_init(&text, 0);
    const char *json = json_object_to_json_string_ext(s->root, JSON_C_TO_STRING_PLAIN |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!json) {
        err_set(e, "%s: cannot serialise the state", s->path);
        goto out;
    }
    buf_puts(&text, json);
    buf_puts(&text, "\n");
    if (file_write_atomic(s->path, text.data, text.len, 0600, e) < 0) {
        err_prefix(e, "%s: cannot save state", s->path);
        goto out;
    }
    rc = 0;
out:
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
    free(s->path);
    free(s);
}

static struct json_object *section(const struct state *s, const char *key)
{
    return member(s->root, key, strcmp(key, "outbox") == 0 ? json_type_array : json_type_object);
}

/* --- seen keys --------------------------------------------------------- */

static void seen_key(char *out, size_t size, long long unixtime, const char *kind)
{
    snprintf(out, size, "%lld/%s", unixtime, kind);
}

bool state_seen(const struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    struct json_object *keys = member(section(s, "seen"), serial, json_type_object);
    seen_key(key, sizeof key, unixtime, kind);
    return keys && json_object_object_get_ex(keys, key, NULL);
}

void state_mark_seen(struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    seen_key(key, sizeof key, unixtime, kind);
    put(child_object(section(s, "seen"), serial), key, need(json_object_new_int(1)));
}

void state_prune_seen(struct state *s, const char *serial, long long before)
{
    struct json_object *seen = section(s, "seen");
    struct json_object *keys = member(seen, serial, json_type_object);
    if (!keys)
        return;
    size_t n = 0;
    char **drop = xcalloc((size_t)json_object_object_length(keys) + 1, sizeof *drop);
    struct json_object_iterator it = json_object_iter_begin(keys);
    struct json_object_iterator end = json_object_iter_end(keys);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        long long t;
        const char *key = json_object_iter_peek_name(&it);
        if (parse_seen_key(key, &t) == 0 && t < before)
            drop[n++] = xstrdup(key);
    }
    for (size_t i = 0; i < n; i++) {
        json_object_object_del(keys, drop[i]);
        free(drop[i]);
    }
    free(drop);
    if (json_object_object_length(keys) == 0)
        json_object_object_del(seen, serial);
}

size_t state_seen_count(const struct state *s, const char *serial)
{
    struct json_object *keys = member(section(s, "seen"), serial, json_type_object);
    return keys ? (size_t)json_object_object_length(keys) : 0;
}

/* --- devices ----------------------------------------------------------- */

long long state_discovered_at(const struct state *s, const char *account)
{
    return int_member(member(section(s, "accounts"), account, json_type_object), "discovered_at",
                      0);
}

static struct json_object *account_object(struct state *s, const char *account)
{
    struct json_object *accounts = section(s, "accounts");
    struct json_object *acc = member(accounts, account, json_type_object);
    if (!acc) {
        acc = need(json_object_new_object());
        put_int(acc, "discovered_at", 0);
        put(acc, "devices", need(json_object_new_array()));
        put(accounts, account, acc);
    }
    return acc;
}

static struct json_object *device_object(const char *serial, const char *base, const char *model,
                                         const char *name, long long last_poll, long long last_ok)
{
    struct json_object *d = need(json_object_new_object());
    put(d, "serial", need(json_object_new_string(serial)));
    put(d, "base", need(json_object_new_string(base ? base : "")));
    put(d, "model", need(json_object_new_string(model ? model : "")));
    put(d, "name", need(json_object_new_string(name ? name : "")));
    put_int(d, "last_poll", last_poll);
    put_int(d, "last_ok", last_ok);
    return d;
}

/* A device given with a last_poll (last_ok) of its own keeps it only when
 * the device is new to the list: the state's record of polls wins. */
void state_set_devices(struct state *s, const char *account, const struct state_device *devs,
                       size_t n, long long now)
{
    struct json_object *acc = account_object(s, account);
    struct json_object *old = member(acc, "devices", json_type_array);
    struct json_object *polls = need(json_object_new_object());
    struct json_object *oks = need(json_object_new_object());
    struct json_object *list = need(json_object_new_array());
    size_t old_n = old ? json_object_array_length(old) : 0;
    for (size_t i = 0; i < old_n; i++) {
        struct json_object *d = json_object_array_get_idx(old, i);
        const char *serial = str_member(d, "serial");
        if (serial) {
            put_int(polls, serial, int_member(d, "last_poll", 0));
            put_int(oks, serial, int_member(d, "last_ok", 0));
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!devs[i].serial)
            continue;
        long long last_poll = int_member(polls, devs[i].serial, devs[i].last_poll);
        long long last_ok = int_member(oks, devs[i].serial, devs[i].last_ok);
        append(list, device_object(devs[i].serial, devs[i].base, devs[i].model, devs[i].name,
                                   last_poll, last_ok));
    }
    put(acc, "devices", list);
    put_int(acc, "discovered_at", now);
    json_object_put(polls);
    json_object_put(oks);
}

struct state_device *state_devices(const struct state *s, const char *account, size_t *n)
{
    struct json_object *acc = member(section(s, "accounts"), account, json_type_object);
    struct json_object *list = member(acc, "devices", json_type_array);
    size_t len = list ? json_object_array_length(list) : 0;
    struct state_device *out = NULL;
    *n = 0;
    if (len == 0)
        return NULL;
    out = xcalloc(len, sizeof *out);
    for (size_t i = 0; i < len; i++) {
        struct json_object *d = json_object_array_get_idx(list, i);
        const char *serial = str_member(d, "serial");
        const char *base = str_member(d, "base");
        const char *model = str_member(d, "model");
        const char *name = str_member(d, "name");
        if (!serial)
            continue;
        struct state_device *o = &out[(*n)++];
        o->serial = xstrdup(serial);
        o->base = xstrdup(base ? base : "");
        o->model = xstrdup(model ? model : "");
        o->name = xstrdup(name ? name : "");
        o->last_poll = int_member(d, "last_poll", 0);
        o->last_ok = int_member(d, "last_ok", 0);
    }
    return out;
}

void state_devices_free(struct state_device *d, size_t n)
{
    if (!d)
        return;
    for (size_t i = 0; i < n; i++) {
        free(d[i].serial);
        free(d[i].base);
        free(d[i].model);
        free(d[i].name);
    }
    free(d);
}

/* A listed device also takes the base it was polled through (NULL leaves
 * it as it was). */
void state_device_polled(struct state *s, const char *account, const char *serial, const char *base,
                         long long now, bool ok)
{
    struct json_object *acc = account_object(s, account);
    struct json_object *list = child_array(acc, "devices");
    size_t n = json_object_array_length(list);
    for (size_t i = 0; i < n; i++) {
        struct json_object *d = json_object_array_get_idx(list, i);
        const char *have = str_member(d, "serial");
        if (have && strcmp(have, serial) == 0) {
            put_int(d, "last_poll", now);
            if (ok)
                put_int(d, "last_ok", now);
            if (base)
                put(d, "base", need(json_object_new_string(base)));
            return;
        }
    }
    append(list, device_object(serial, base, "", "", now, ok ? now : 0));
}

/* --- budget ledger ----------------------------------------------------- */

/* The ledger object of `login` and `op`; NULL when absent (or, with
 * `create`, made). */
static struct json_object *ledger(const struct state *s, const char *login, enum platform_op op,
                                  bool create)
{
    const char *name = op_name(op);
    struct json_object *logins = section(s, "logins");
    if (!name)
        return NULL;
    if (!create)
        return member(member(logins, login, json_type_object), name, json_type_object);
    return child_object(child_object(logins, login), name);
}

void state_record_call(struct state *s, const char *login, enum platform_op op, long long now)
{
    struct json_object *led = ledger(s, login, op, true);
    if (!led)
        return;
    struct json_object *old = member(led, "calls", json_type_array);
    struct json_object *calls = need(json_object_new_array());
    size_t n = old ? json_object_array_length(old) : 0;
    for (size_t i = 0; i < n; i++) {
        long long t = (long long)json_object_get_int64(json_object_array_get_idx(old, i));
        if (t >= now - LEDGER_KEEP)
            append(calls, need(json_object_new_int64((int64_t)t)));
    }
    append(calls, need(json_object_new_int64((int64_t)now)));
    put(led, "calls", calls);
}

size_t state_calls_since(const struct state *s, const char *login, enum platform_op op,
                         long long since)
{
    struct json_object *calls = member(ledger(s, login, op, false), "calls", json_type_array);
    size_t n = calls ? json_object_array_length(calls) : 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if ((long long)json_object_get_int64(json_object_array_get_idx(calls, i)) >= since)
            count++;
    return count;
}

long long state_last_call(const struct state *s, const char *login, enum platform_op op)
{
    struct json_object *calls = member(ledger(s, login, op, false), "calls", json_type_array);
    size_t n = calls ? json_object_array_length(calls) : 0;
    long long last = 0;
    for (size_t i = 0; i < n; i++) {
        long long t = (long long)json_object_get_int64(json_object_array_get_idx(calls, i));
        if (t > last)
            last = t;
    }
    return last;
}

void state_block(struct state *s, const char *login, enum platform_op op, long long until)
{
    struct json_object *led = ledger(s, login, op, true);
    if (led)
        put_int(led, "blocked_until", until);
}

long long state_blocked_until(const struct state *s, const char *login, enum platform_op op)
{
    return int_member(ledger(s, login, op, false), "blocked_until", 0);
}

void state_set_ratelimit(struct state *s, const char *login, enum platform_op op,
                         const struct ratelimit *rl, long long now)
{
    struct json_object *led = ledger(s, login, op, true);
    if (!led || !rl->present)
        return;
    struct json_object *o = need(json_object_new_object());
    put_int(o, "limit", rl->limit);
    put_int(o, "remaining", rl->remaining);
    put_int(o, "reset", rl->reset);
    put_int(o, "at", now);
    put(led, "ratelimit", o);
}

bool state_ratelimit(const struct state *s, const char *login, enum platform_op op,
                     struct ratelimit *out, long long *at)
{
    struct json_object *rl = member(ledger(s, login, op, false), "ratelimit", json_type_object);
    memset(out, 0, sizeof *out);
    if (at)
        *at = 0;
    if (!rl)
        return false;
    out->present = true;
    out->limit = (long)int_member(rl, "limit", 0);
    out->remaining = (long)int_member(rl, "remaining", 0);
    out->reset = (long)int_member(rl, "reset", 0);
    if (at)
        *at = int_member(rl, "at", 0);
    return true;
}

/* --- outbox ------------------------------------------------------------ */

void state_enqueue(struct state *s, const char *receiver, const struct event *ev, long long now)
{
    long long id = int_member(s->root, "next_id", 1);
    struct json_object *item = need(json_object_new_object());
    put_int(item, "id", id);
    put(item, "receiver", need(json_object_new_string(receiver)));
    put(item, "event", need(event_to_json(ev)));
    put_int(item, "attempts", 0);
    put_int(item, "queued_at", now);
    put_int(item, "next_try", now);
    put(item, "last_error", NULL);
    append(section(s, "outbox"), item);
    put_int(s->root, "next_id", id + 1);
}

static int cmp_due(const void *a, const void *b)
{
    const struct outbox_item *x = a, *y = b;
    if (x->queued_at != y->queued_at)
        return (x->queued_at > y->queued_at) - (x->queued_at < y->queued_at);
    return (x->id > y->id) - (x->id < y->id);
}

struct outbox_item *state_outbox_due(const struct state *s, const char *receiver, long long now,
                                     size_t *n)
{
    struct json_object *outbox = section(s, "outbox");
    size_t len = json_object_array_length(outbox);
    struct outbox_item *out = NULL;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        struct json_object *item = json_object_array_get_idx(outbox, i);
        const char *rcpt = str_member(item, "receiver");
        struct err e;
        if (!rcpt || strcmp(rcpt, receiver) != 0 || int_member(item, "next_try", 0) > now)
            continue;
        if (!out)
            out = xcalloc(len, sizeof *out);
        struct outbox_item *o = &out[*n];
        struct json_object *ev = NULL;
        json_object_object_get_ex(item, "event", &ev);
        if (event_from_json(&o->event, ev, &e) < 0) {
            log_warn("%s: outbox item %lld for %s skipped: %s", s->path, item_id(item), rcpt,
                     e.msg);
            continue;
        }
        o->id = (unsigned long long)item_id(item);
        o->receiver = xstrdup(rcpt);
        o->attempts = (int)int_member(item, "attempts", 0);
        o->queued_at = int_member(item, "queued_at", 0);
        o->next_try = int_member(item, "next_try", 0);
        o->last_error = xstrdup_or_null(str_member(item, "last_error"));
        (*n)++;
    }
    if (*n > 1)
        qsort(out, *n, sizeof *out, cmp_due);
    if (out && *n == 0) {
        free(out);
        out = NULL;
    }
    return out;
}

size_t state_outbox_count(const struct state *s, const char *receiver)
{
    struct json_object *outbox = section(s, "outbox");
    size_t len = json_object_array_length(outbox);
    if (!receiver)
        return len;
    size_t count = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rcpt = str_member(json_object_array_get_idx(outbox, i), "receiver");
        if (rcpt && strcmp(rcpt, receiver) == 0)
            count++;
    }
    return count;
}

void state_outbox_free(struct outbox_item *items, size_t n)
{
    if (!items)
        return;
    for (size_t i = 0; i < n; i++) {
        free(items[i].receiver);
        event_clear(&items[i].event);
        free(items[i].last_error);
    }
    free(items);
}

/* The index of item `id` in the outbox (sorted by id); -1 when absent. */
static long find_item(struct json_object *outbox, unsigned long long id)
{
    size_t lo = 0, hi = json_object_array_length(outbox);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        unsigned long long have =
            (unsigned long long)item_id(json_object_array_get_idx(outbox, mid));
        if (have == id)
            return (long)mid;
        if (have < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

void state_outbox_done(struct state *s, unsigned long long id)
{
    struct json_object *outbox = section(s, "outbox");
    long i = find_item(outbox, id);
    if (i >= 0)
        json_object_array_del_idx(outbox, (size_t)i, 1);
}

void state_outbox_failed(struct state *s, unsigned long long id, const char *error, long long now)
{
    struct json_object *outbox = section(s, "outbox");
    long i = find_item(outbox, id);
    if (i < 0)
        return;
    struct json_object *item = json_object_array_get_idx(outbox, (size_t)i);
    long long attempts = int_member(item, "attempts", 0);
    if (attempts < INT_MAX)
        attempts++;
    long long delay = BACKOFF_MAX;
    if (attempts - 1 < 16) {
        delay = (long long)BACKOFF_FIRST << (attempts - 1);
        if (delay > BACKOFF_MAX)
            delay = BACKOFF_MAX;
    }
    put_int(item, "attempts", attempts);
    put(item, "last_error", error ? need(json_object_new_string(error)) : NULL);
    put_int(item, "next_try", now + delay);
}
