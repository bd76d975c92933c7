/* The quiet file (quiet.h). Plain lines that an administrator can read:
 *
 *   wsrelay-quiet 1
 *   written_at 1795699620
 *   until 1795699917
 *   state DEV INO SIZE MTIME_NS CTIME_NS
 *   config DEV INO SIZE MTIME_NS CTIME_NS
 *   env 0123456789abcdef
 *
 * Anything else, a line missing or out of order, makes the file unusable,
 * and the run a full one. */
#include "quiet.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUIET_MAGIC "wsrelay-quiet 1"
#define QUIET_MAX_BYTES 1024

char *quiet_path(const char *state_path)
{
    return xasprintf("%s.quiet", state_path);
}

/* FNV-1a over `len` bytes, continuing from `h`. */
static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static bool name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

int quiet_env_digest(uint64_t *out, const char *path)
{
    struct buf text;
    struct err e;
    int rc = -1;
    buf_init(&text, 1024 * 1024);
    if (file_read(&text, path, &e) < 0)
        goto out;
    uint64_t h = 0xcbf29ce484222325ULL;
    const char *s = buf_str(&text);
    for (const char *p = strstr(s, "${"); p; p = strstr(p + 2, "${")) {
        size_t n = 0;
        while (name_char(p[2 + n]))
            n++;
        if (n == 0 || p[2 + n] != '}')
            continue;
        char *name = xasprintf("%.*s", (int)n, p + 2);
        const char *value = getenv(name);
        /* Name, then 0 for unset or 1 and the value with its length: no
         * two different environments give the same bytes. */
        h = fnv(h, name, n + 1);
        h = fnv(h, value ? "\1" : "\0", 1);
        if (value) {
            size_t len = strlen(value);
            h = fnv(h, &len, sizeof len);
            h = fnv(h, value, len);
        }
        free(name);
    }
    *out = h;
    rc = 0;
out:
    buf_free(&text);
    return rc;
}

static int read_id(struct file_id *out, const char *line, const char *what)
{
    char tag[16];
    int end = 0;
    if (sscanf(line, "%15s %llu %llu %llu %lld %lld%n", tag, &out->dev, &out->ino, &out->size,
               &out->mtime_ns, &out->ctime_ns, &end) != 6 ||
        strcmp(tag, what) != 0 || line[end] != '\n')
        return -1;
    return 0;
}

static int read_time(long long *out, const char *line, const char *what)
{
    char tag[16];
    int end = 0;
    if (sscanf(line, "%15s %lld%n", tag, out, &end) != 2 || strcmp(tag, what) != 0 ||
        line[end] != '\n')
        return -1;
    return 0;
}

static int parse(struct quiet *out, char *text)
{
    char *lines[6];
    size_t n = 0;
    for (char *p = text; *p && n < 6; n++) {
        lines[n] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            return -1;
        p = nl + 1;
    }
    int end = 0;
    if (n != 6 || strncmp(lines[0], QUIET_MAGIC "\n", sizeof QUIET_MAGIC) != 0 ||
        read_time(&out->written_at, lines[1], "written_at") < 0 ||
        read_time(&out->until, lines[2], "until") < 0 ||
        read_id(&out->state, lines[3], "state") < 0 ||
        read_id(&out->config, lines[4], "config") < 0 ||
        sscanf(lines[5], "env %16" SCNx64 "%n", &out->env, &end) != 1 || lines[5][end] != '\n' ||
        lines[5][end + 1] != '\0')
        return -1;
    return 0;
}

int quiet_read(struct quiet *out, const char *state_path)
{
    char *path = quiet_path(state_path);
    struct buf text;
    struct err e;
    int rc = -1;
    buf_init(&text, QUIET_MAX_BYTES);
    int fd = file_open_regular(path, FILE_NOFOLLOW, NULL, &e);
    if (fd < 0 || file_read_fd(&text, fd, path, &e) < 0)
        goto out;
    rc = parse(out, (char *)buf_str(&text));
out:
    if (fd >= 0)
        close(fd);
    buf_free(&text);
    free(path);
    return rc;
}

int quiet_write(const struct quiet *q, const char *state_path, struct err *e)
{
    char *path = quiet_path(state_path);
    char *text = xasprintf(QUIET_MAGIC "\n"
                                       "written_at %lld\n"
                                       "until %lld\n"
                                       "state %llu %llu %llu %lld %lld\n"
                                       "config %llu %llu %llu %lld %lld\n"
                                       "env %016" PRIx64 "\n",
                           q->written_at, q->until, q->state.dev, q->state.ino, q->state.size,
                           q->state.mtime_ns, q->state.ctime_ns, q->config.dev, q->config.ino,
                           q->config.size, q->config.mtime_ns, q->config.ctime_ns, q->env);
    int rc = file_write_atomic(path, text, strlen(text), 0600, e);
    free(text);
    free(path);
    return rc;
}

int quiet_forget(const char *state_path, struct err *e)
{
    char *path = quiet_path(state_path);
    int rc = 0;
    if (unlink(path) < 0 && errno != ENOENT)
        rc = err_set(e, "%s: %s", path, strerror(errno));
    free(path);
    return rc;
}
