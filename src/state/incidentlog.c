/* The incident log (incidentlog.h): month files of JSON lines in
 * PATH.incidents/, appended to, read back and pruned, and written as CSV.
 *
 * The files are append-only so that a record once written is never lost
 * to a later write: a crash can tear at most the line being written, and
 * the reader skips it. The directory is opened with O_NOFOLLOW |
 * O_DIRECTORY and every file in it reached relative to that descriptor,
 * as the state's own directory of seen keys is (seenfiles.c). */
#include "state/incidentlog.h"

#include "util/buf.h"
#include "util/fileio.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A cell holds at most what a spreadsheet's cell does (32767 characters
 * in Excel and LibreOffice), counted in bytes so that it holds for any
 * text, and with room for the "'" that may go before it. */
#define CSV_CELL_MAX 32766

/* --- the directory and the month files --------------------------------- */

static char *log_dir(const char *state_path)
{
    return xasprintf("%s.incidents", state_path);
}

/* The month file's name of `at`: "YYYY-MM.jsonl" in UTC. */
static int month_name(char *out, size_t size, long long at, struct err *e)
{
    time_t t = (time_t)at;
    struct tm tm;
    if ((long long)t != at || !gmtime_r(&t, &tm) || tm.tm_year + 1900 < 1 ||
        tm.tm_year + 1900 > 9999)
        return err_set(e, "incident log: time %lld is out of range", at);
    snprintf(out, size, "%04d-%02d.jsonl", tm.tm_year + 1900, tm.tm_mon + 1);
    return 0;
}

/* When `name` is a month file's ("YYYY-MM.jsonl"), the first second of the
 * month after it in *end; false for any other name. */
static bool month_end(const char *name, long long *end)
{
    static const char form[] = "dddd-dd.jsonl";
    if (strlen(name) != sizeof form - 1)
        return false;
    for (size_t i = 0; form[i]; i++) {
        bool digit = name[i] >= '0' && name[i] <= '9';
        if (form[i] == 'd' ? !digit : name[i] != form[i])
            return false;
    }
    int year = atoi(name);
    int month = atoi(name + 5);
    if (month < 1 || month > 12)
        return false;
    struct tm tm = {.tm_year = year - 1900 + (month == 12), .tm_mon = month % 12, .tm_mday = 1};
    *end = (long long)timegm(&tm);
    return true;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the month files in the directory open as `fd`, oldest
 * first, in *out (the caller frees each and the array). */
static int month_files(char ***out, size_t *n_out, int fd, const char *dir, struct err *e)
{
    char **names = NULL;
    size_t n = 0;
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        err_set(e, "%s: cannot list: %s", dir, strerror(errno));
        if (dup_fd >= 0)
            close(dup_fd);
        return -1;
    }
    rewinddir(d);
    for (struct dirent *de; (de = readdir(d));) {
        long long end;
        if (!month_end(de->d_name, &end))
            continue;
        names = xgrowarray(names, n, sizeof *names);
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    *out = names;
    *n_out = n;
    return 0;
}

static void names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* --- appending ---------------------------------------------------------- */

/* Opens (creating it as needed) the month file `name` in the directory
 * open as `dirfd` for appending, never through a symlink and only when it
 * is a regular file; *created says whether it is new. */
static int open_month(bool *created, int dirfd, const char *name, const char *path, struct err *e)
{
    int flags = O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL, 0600);
    *created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = openat(dirfd, name, flags);
    if (fd < 0) {
        int err = errno;
        struct stat st;
        if (err == ELOOP && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode))
            return err_set(e, "%s: is a symbolic link (refused: wsrelay never follows one here)",
                           path);
        return err_set(e, "%s: cannot open: %s", path, strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        err_set(e, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* Ends a torn last line (a crash in the middle of a write) with its
 * newline, so that the next line starts a line of its own. */
static int end_torn_line(int fd, const char *path, struct err *e)
{
    struct stat st;
    char last;
    if (fstat(fd, &st) < 0)
        return err_set(e, "%s: %s", path, strerror(errno));
    if (st.st_size == 0)
        return 0;
    if (pread(fd, &last, 1, st.st_size - 1) != 1)
        return err_set(e, "%s: cannot read its end: %s", path, strerror(errno));
    if (last != '\n' && file_write_all(fd, "\n", 1) < 0)
        return err_set(e, "%s: cannot append: %s", path, strerror(errno));
    return 0;
}

int incidentlog_append(const char *state_path, long long at, const char *const *lines, size_t n,
                       struct err *e)
{
    int rc = -1;
    int dirfd = -1;
    int fd = -1;
    bool dir_created = false;
    bool created = false;
    char name[32];
    char *dir = log_dir(state_path);
    char *path = NULL;
    struct buf line;
    buf_init(&line, 0);
    if (n == 0) {
        rc = 0;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(lines[i]);
        if (memchr(lines[i], '\n', len) || len > INCIDENTLOG_LINE_MAX) {
            err_set(e, "%s: line %zu of %zu not appended: %s", dir, i + 1, n,
                    len > INCIDENTLOG_LINE_MAX ? "longer than the log takes" : "holds a newline");
            goto out;
        }
    }
    if (month_name(name, sizeof name, at, e) < 0)
        goto out;
    path = xasprintf("%s/%s", dir, name);
    dirfd = file_open_dir(dir, e);
    if (dirfd < 0 && errno == ENOENT) {
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
            err_set(e, "%s: cannot create: %s", dir, strerror(errno));
            goto out;
        }
        dir_created = true;
        dirfd = file_open_dir(dir, e);
    }
    if (dirfd < 0)
        goto out;
    fd = open_month(&created, dirfd, name, path, e);
    if (fd < 0 || end_torn_line(fd, path, e) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        buf_reset(&line);
        buf_puts(&line, lines[i]);
        buf_append(&line, "\n", 1);
        if (file_write_all(fd, line.data, line.len) < 0) {
            err_set(e, "%s: cannot append: %s", path, strerror(errno));
            goto out;
        }
    }
    if (fsync(fd) < 0) {
        err_set(e, "%s: cannot sync: %s", path, strerror(errno));
        goto out;
    }
    if (created && fsync(dirfd) < 0) {
        err_set(e, "%s: cannot sync directory: %s", dir, strerror(errno));
        goto out;
    }
    if (dir_created) {
        char *parent = file_dirname(dir);
        int synced = file_sync_dir(parent, e);
        free(parent);
        if (synced < 0)
            goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    buf_free(&line);
    free(path);
    free(dir);
    return rc;
}

/* --- pruning ------------------------------------------------------------ */

int incidentlog_prune(const char *state_path, long long before, struct err *e)
{
    int rc = -1;
    char **names = NULL;
    size_t n = 0;
    size_t removed = 0;
    char *dir = log_dir(state_path);
    int dirfd = file_open_dir(dir, e);
    if (dirfd < 0) {
        rc = errno == ENOENT ? 0 : -1;
        goto out;
    }
    if (month_files(&names, &n, dirfd, dir, e) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        long long end;
        month_end(names[i], &end);
        if (end > before)
            break; /* oldest first: the rest are later still */
        if (unlinkat(dirfd, names[i], 0) < 0) {
            err_set(e, "%s/%s: cannot remove: %s", dir, names[i], strerror(errno));
            goto out;
        }
        removed++;
    }
    rc = 0;
out:
    if (removed && fsync(dirfd) < 0 && rc == 0)
        rc = err_set(e, "%s: cannot sync directory: %s", dir, strerror(errno));
    if (dirfd >= 0)
        close(dirfd);
    names_free(names, n);
    free(dir);
    return rc;
}

/* --- reading ------------------------------------------------------------ */

struct reader {
    long long since;
    bool (*fn)(const struct json_object *line, void *ctx);
    void *ctx;
    struct json_object *given; /* "SEQ INCIDENT" -> null, for each line given */
    size_t damaged;
    bool stopped;
};

/* The line's object when it is one with an integer "at", a string
 * "incident" and an integer "seq"; NULL otherwise. */
static struct json_object *parse_line(const char *text, size_t len)
{
    struct json_object *v = NULL;
    struct json_object *at, *incident, *seq;
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        xalloc_die();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    /* The final NUL tells the tokener that the text ends there. */
    v = json_tokener_parse_ex(tok, text, (int)len + 1);
    size_t end = json_tokener_get_parse_end(tok);
    if (json_tokener_get_error(tok) != json_tokener_success)
        goto bad;
    while (end < len && strchr(" \t\r", text[end]))
        end++;
    if (end < len || !json_object_is_type(v, json_type_object) ||
        !json_object_object_get_ex(v, "at", &at) || !json_object_is_type(at, json_type_int) ||
        !json_object_object_get_ex(v, "incident", &incident) ||
        !json_object_is_type(incident, json_type_string) ||
        !json_object_object_get_ex(v, "seq", &seq) || !json_object_is_type(seq, json_type_int))
        goto bad;
    json_tokener_free(tok);
    return v;
bad:
    json_object_put(v);
    json_tokener_free(tok);
    return NULL;
}

/* One whole line of a file (its newline taken off); `too_long` when it
 * passed INCIDENTLOG_LINE_MAX and was not kept. */
static void read_line(struct reader *r, const struct buf *text, bool too_long)
{
    struct json_object *v = too_long ? NULL : parse_line(buf_str(text), text->len);
    struct json_object *member;
    if (!v) {
        r->damaged++;
        return;
    }
    json_object_object_get_ex(v, "at", &member);
    if (json_object_get_int64(member) >= r->since) {
        json_object_object_get_ex(v, "seq", &member);
        long long seq = (long long)json_object_get_int64(member);
        json_object_object_get_ex(v, "incident", &member);
        char *key = xasprintf("%lld %s", seq, json_object_get_string(member));
        if (!json_object_object_get_ex(r->given, key, NULL)) {
            if (json_object_object_add(r->given, key, NULL) < 0)
                xalloc_die();
            r->stopped = !r->fn(v, r->ctx);
        }
        free(key);
    }
    json_object_put(v);
}

/* Reads the month file `name` line by line, up to INCIDENTLOG_FILE_MAX. */
static int read_month(struct reader *r, int dirfd, const char *dir, const char *name, struct err *e)
{
    int rc = -1;
    char chunk[64 << 10];
    struct stat st;
    struct buf text;
    bool too_long = false;
    size_t total = 0;
    char *path = xasprintf("%s/%s", dir, name);
    buf_init(&text, INCIDENTLOG_LINE_MAX);
    int fd = file_open_regular_at(dirfd, name, path, FILE_NOFOLLOW, &st, e);
    if (fd < 0)
        goto out;
    bool capped = (unsigned long long)st.st_size > INCIDENTLOG_FILE_MAX;
    if (capped)
        log_warn("%s: larger than %zu MiB; only its first %zu MiB read", path,
                 INCIDENTLOG_FILE_MAX >> 20, INCIDENTLOG_FILE_MAX >> 20);
    while (!r->stopped && total < INCIDENTLOG_FILE_MAX) {
        size_t want = sizeof chunk;
        if (want > INCIDENTLOG_FILE_MAX - total)
            want = INCIDENTLOG_FILE_MAX - total;
        ssize_t got = read(fd, chunk, want);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            err_set(e, "%s: cannot read: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        total += (size_t)got;
        for (const char *p = chunk, *end = chunk + got; p < end && !r->stopped;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = (size_t)((nl ? nl : end) - p);
            if (!too_long && buf_append(&text, p, len) < 0)
                too_long = true;
            if (!nl)
                break;
            read_line(r, &text, too_long);
            buf_reset(&text);
            too_long = false;
            p = nl + 1;
        }
    }
    /* What is left without its newline is a torn last line, unless the
     * reading stopped at the cap before the line's end. */
    if (!r->stopped && (text.len > 0 || too_long) && !(capped && total >= INCIDENTLOG_FILE_MAX))
        r->damaged++;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    buf_free(&text);
    free(path);
    return rc;
}

int incidentlog_read(size_t *out, const char *state_path, long long since,
                     bool (*fn)(const struct json_object *line, void *ctx), void *ctx,
                     struct err *e)
{
    int rc = -1;
    char **names = NULL;
    size_t n = 0;
    struct reader r = {.since = since, .fn = fn, .ctx = ctx};
    char *dir = log_dir(state_path);
    int dirfd = file_open_dir(dir, e);
    *out = 0;
    if (dirfd < 0) {
        rc = errno == ENOENT ? 0 : -1;
        goto out;
    }
    if (month_files(&names, &n, dirfd, dir, e) < 0)
        goto out;
    r.given = jsonv_need(json_object_new_object());
    for (size_t i = 0; i < n && !r.stopped; i++) {
        long long end;
        month_end(names[i], &end);
        if (end <= since)
            continue; /* every line of it is older */
        if (read_month(&r, dirfd, dir, names[i], e) < 0)
            goto out;
    }
    rc = 0;
out:
    *out = r.damaged;
    json_object_put(r.given);
    if (dirfd >= 0)
        close(dirfd);
    names_free(names, n);
    free(dir);
    return rc;
}

/* --- CSV ---------------------------------------------------------------- */

/* The columns, in their order: each a member of the line. */
static const char *const csv_columns[] = {
    "at",    "incident", "seq",  "what",     "account",    "serial", "device",
    "kind",  "channel",  "rule", "severity", "receivers",  "by",     "note",
    "value", "limit",    "peak", "duration", "event_time", "text",
};

/* True when the text after a leading '-' reads as a negative number,
 * perhaps with a unit, that no spreadsheet can take for a formula: a
 * digit first, and no operator, parenthesis, separator or reference sign
 * after it ("68.1°C", "3 min"; not "1+A1" nor "1*HYPERLINK(…)"). */
static bool plain_negative(const char *p)
{
    return *p >= '0' && *p <= '9' && !strpbrk(p, "=+-*/^&|!()<>;,:\t\r\n");
}

/* Whether a spreadsheet could read the cell `s` as a formula: it starts,
 * after any spaces or line feeds (which some imports trim), with '=',
 * '+', '@', a tab, a CR, or a '-' that does not start a plain negative
 * number. */
static bool formula_like(const char *s)
{
    s += strspn(s, " \n");
    switch (*s) {
    case '=':
    case '+':
    case '@':
    case '\t':
    case '\r':
        return true;
    case '-':
        return !plain_negative(s + 1);
    default:
        return false;
    }
}

/* Writes the `n` bytes of `s` as one cell: valid UTF-8 of at most
 * CSV_CELL_MAX bytes, control characters but tab, CR and LF as spaces, a
 * "'" first when it could be a formula, quoted when it must be. */
static void csv_cell(FILE *out, const char *s, size_t n)
{
    char *clean = utf8_clean_shown(s, n, CSV_CELL_MAX, UTF8_CONTROLS_KEEP);
    size_t len = strlen(clean);
    struct buf text;
    buf_init(&text, 0);
    buf_reserve(&text, len);
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t k = utf8_decode(&cp, clean + i, len - i);
        if (k == 0) /* not after utf8_clean_shown; kept out of the loop's way */
            k = 1;
        if (utf8_is_control(cp) && cp != '\t' && cp != '\r' && cp != '\n')
            buf_append(&text, " ", 1);
        else
            buf_append(&text, clean + i, k);
        i += k;
    }
    const char *t = buf_str(&text);
    bool quoted = strpbrk(t, ",\"\r\n") != NULL;
    if (quoted)
        fputc('"', out);
    if (formula_like(t))
        fputc('\'', out);
    for (; *t; t++) {
        if (*t == '"')
            fputc('"', out);
        fputc(*t, out);
    }
    if (quoted)
        fputc('"', out);
    buf_free(&text);
    free(clean);
}

/* A cell's text of any JSON value but a time: a string as it is, a
 * number as the JSON wrote it, an array or object as its JSON text;
 * nothing for null. */
static void value_text(struct buf *b, struct json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        break;
    case json_type_string:
        buf_append(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        break;
    case json_type_int:
        buf_put_ll(b, (long long)json_object_get_int64(v));
        break;
    case json_type_object:
    case json_type_array:
        buf_puts(b, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE));
        break;
    default: /* a double as written, a boolean */
        buf_puts(b, json_object_get_string(v));
        break;
    }
}

/* The cell of the member `key` of `line`. */
static void csv_member(FILE *out, const struct json_object *line, const char *key)
{
    struct json_object *v = NULL;
    struct buf b;
    buf_init(&b, 0);
    json_object_object_get_ex(line, key, &v);
    if ((!strcmp(key, "at") || !strcmp(key, "event_time")) &&
        json_object_is_type(v, json_type_int)) {
        time_t t = (time_t)json_object_get_int64(v);
        struct tm tm;
        char when[32];
        if (gmtime_r(&t, &tm) && tm.tm_year + 1900 >= 0 && tm.tm_year + 1900 <= 9999 &&
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm))
            buf_puts(&b, when);
        else
            value_text(&b, v);
    } else if (!strcmp(key, "receivers") && json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            if (i > 0)
                buf_append(&b, " ", 1);
            value_text(&b, json_object_array_get_idx(v, i));
        }
    } else {
        value_text(&b, v);
    }
    csv_cell(out, buf_str(&b), b.len);
    buf_free(&b);
}

void incidentlog_csv_header(FILE *out)
{
    for (size_t i = 0; i < sizeof csv_columns / sizeof *csv_columns; i++)
        fprintf(out, "%s%s", i ? "," : "", csv_columns[i]);
    fputs("\r\n", out);
}

void incidentlog_csv_line(FILE *out, const struct json_object *line)
{
    for (size_t i = 0; i < sizeof csv_columns / sizeof *csv_columns; i++) {
        if (i > 0)
            fputc(',', out);
        csv_member(out, line, csv_columns[i]);
    }
    fputs("\r\n", out);
}
