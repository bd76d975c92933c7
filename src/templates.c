/* Finding templates and partials (a receiver's own file, the templates
 * directory, the copies built into the binary), checking that every
 * partial a template uses exists, and building the context that every
 * message template is rendered against. */
#include "templates.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *templates_builtin(const char *name, size_t *len)
{
    for (size_t i = 0; name && i < templates_builtin_count; i++)
        if (strcmp(templates_builtin_files[i].name, name) == 0) {
            if (len)
                *len = templates_builtin_files[i].len;
            return templates_builtin_files[i].data;
        }
    return NULL;
}

enum template_escape templates_escape(const char *name)
{
    static const struct {
        const char *role;
        enum template_escape esc;
    } roles[] = {
        {"slack.json", TEMPLATE_ESCAPE_SLACK},
        {"teams.json", TEMPLATE_ESCAPE_TEAMS},
        {"googlechat-en.txt", TEMPLATE_ESCAPE_GCHAT},
        {"googlechat-ja.txt", TEMPLATE_ESCAPE_GCHAT},
        {"chatwork-en.txt", TEMPLATE_ESCAPE_CHATWORK},
        {"chatwork-ja.txt", TEMPLATE_ESCAPE_CHATWORK},
    };
    for (size_t i = 0; name && i < sizeof roles / sizeof roles[0]; i++)
        if (strcmp(name, roles[i].role) == 0)
            return roles[i].esc;
    return template_escape_for(name);
}

/* Reads and compiles `path`. */
static int load_file(struct template **out, const char *path, struct err *e)
{
    int rc = -1;
    struct buf text;
    buf_init(&text, TEMPLATES_MAX_SIZE);
    if (file_read(&text, path, e) < 0)
        goto out;
    rc = template_compile(out, buf_str(&text), text.len, path, e);
out:
    buf_free(&text);
    return rc;
}

/* Whether `path` exists; -1 when that cannot be told ("PATH: reason"). */
static int exists(const char *path, struct err *e)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return 1;
    if (errno == ENOENT || errno == ENOTDIR)
        return 0;
    return err_set(e, "%s: %s", path, strerror(errno));
}

int templates_load(struct template **out, const char *explicit_path, const char *dir,
                   const char *name, struct err *e)
{
    int rc = -1;
    char *path = NULL, *origin = NULL;
    const char *text;
    size_t len = 0;
    if (explicit_path) {
        rc = load_file(out, explicit_path, e);
        goto out;
    }
    if (dir) {
        path = xasprintf("%s/%s", dir, name);
        int found = exists(path, e);
        if (found < 0)
            goto out;
        if (found) {
            rc = load_file(out, path, e);
            goto out;
        }
    }
    text = templates_builtin(name, &len);
    if (!text) {
        err_set(e, "no template '%s'%s%s%s", name, dir ? " in " : "", dir ? dir : "",
                dir ? " and none built in" : " built in");
        goto out;
    }
    origin = xasprintf("builtin:%s", name);
    rc = template_compile(out, text, len, origin, e);
out:
    free(path);
    free(origin);
    return rc;
}

/* The text of partial `name` as templates_partial finds it: 1 found, 0
 * not found, -1 a file that exists but cannot be read (reason in `e`). */
static int find_partial(const char *dir, const char *name, char **text_out, char **origin_out,
                        struct err *e)
{
    int rc = -1;
    struct buf text;
    char *path = NULL;
    const char *builtin;
    buf_init(&text, TEMPLATES_MAX_SIZE);
    if (!*name || name[0] == '.' || strchr(name, '/')) {
        rc = 0;
        goto out;
    }
    if (dir) {
        path = xasprintf("%s/%s", dir, name);
        int found = exists(path, e);
        if (found < 0)
            goto out;
        if (found) {
            if (file_read(&text, path, e) < 0)
                goto out;
            *text_out = text.data ? buf_steal(&text) : xstrdup("");
            *origin_out = path;
            path = NULL;
            rc = 1;
            goto out;
        }
    }
    builtin = templates_builtin(name, NULL);
    if (builtin) {
        *text_out = xstrdup(builtin);
        *origin_out = xasprintf("builtin:%s", name);
        rc = 1;
    } else {
        rc = 0;
    }
out:
    buf_free(&text);
    free(path);
    return rc;
}

int templates_partial(void *ud, const char *name, char **text_out, char **origin_out)
{
    struct err e;
    int rc = find_partial(ud, name, text_out, origin_out, &e);
    if (rc < 0)
        log_warn("partial '%s': %s; rendered as nothing", name, e.msg);
    return rc == 1 ? 0 : -1;
}

/* templates_check's walk: the partials met so far (each is checked once,
 * which also ends cycles) and where the current template came from. */
struct check {
    const char *dir;
    const char *origin;
    char **seen;
    size_t n_seen;
    struct err *e;
};

static int check_partials(struct check *c, const struct template *t);

static int check_one(void *ud, const char *name, unsigned line, unsigned col)
{
    struct check *c = ud;
    char *text = NULL, *origin = NULL;
    struct template *t = NULL;
    int rc = -1;
    for (size_t i = 0; i < c->n_seen; i++)
        if (strcmp(c->seen[i], name) == 0)
            return 0;
    c->seen = xreallocarray(c->seen, c->n_seen + 1, sizeof *c->seen);
    c->seen[c->n_seen++] = xstrdup(name);
    switch (find_partial(c->dir, name, &text, &origin, c->e)) {
    case -1:
        err_prefix(c->e, "%s:%u:%u: partial '%s'", c->origin, line, col, name);
        goto out;
    case 0:
        err_set(c->e, "%s:%u:%u: partial '%s' not found (looked in %s%sthe built-in templates)",
                c->origin, line, col, name, c->dir ? c->dir : "", c->dir ? " and " : "");
        goto out;
    }
    if (template_compile(&t, text, strlen(text), origin, c->e) < 0)
        goto out;
    rc = check_partials(c, t);
out:
    template_free(t);
    free(text);
    free(origin);
    return rc;
}

static int check_partials(struct check *c, const struct template *t)
{
    const char *outer = c->origin;
    c->origin = template_origin(t);
    int rc = template_each_partial(t, check_one, c);
    c->origin = outer;
    return rc;
}

int templates_check(const struct template *t, const char *dir, struct err *e)
{
    struct check c = {.dir = dir, .e = e};
    int rc = check_partials(&c, t);
    for (size_t i = 0; i < c.n_seen; i++)
        free(c.seen[i]);
    free(c.seen);
    return rc;
}

/* "via_base" in an event object that lacks it. */
static void add_via_base(struct json_object *ev)
{
    struct json_object *serial = NULL, *base = NULL;
    if (!json_object_is_type(ev, json_type_object) ||
        json_object_object_get_ex(ev, "via_base", NULL))
        return;
    json_object_object_get_ex(ev, "serial", &serial);
    json_object_object_get_ex(ev, "base_serial", &base);
    const char *s = json_object_get_string(serial), *b = json_object_get_string(base);
    bool via = json_object_is_type(base, json_type_string) && *b &&
               !(json_object_is_type(serial, json_type_string) && strcmp(s, b) == 0);
    json_object_object_add(ev, "via_base", json_object_new_boolean(via));
}

struct json_object *templates_context(const char *receiver, struct json_object *events,
                                      long long now, bool test)
{
    struct json_object *ctx = json_object_new_object();
    char utc[32];
    time_t t = (time_t)now;
    struct tm tm;
    if (!events)
        events = json_object_new_array();
    size_t n = json_object_is_type(events, json_type_array) ? json_object_array_length(events) : 0;
    for (size_t i = 0; i < n; i++)
        add_via_base(json_object_array_get_idx(events, i));
    gmtime_r(&t, &tm);
    strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_object_add(ctx, "receiver", json_object_new_string(receiver ? receiver : ""));
    json_object_object_add(ctx, "count", json_object_new_int64((int64_t)n));
    json_object_object_add(ctx, "events", events);
    json_object_object_add(ctx, "now_utc", json_object_new_string(utc));
    json_object_object_add(ctx, "test", json_object_new_boolean(test));
    json_object_object_add(ctx, "version", json_object_new_string(WSRELAY_VERSION));
    return ctx;
}
