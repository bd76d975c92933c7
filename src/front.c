/* `wsrelay`: the command people and timers start. It answers one question
 * itself, whether `wsrelay run` has nothing to do now (quiet.h), and hands
 * everything else to `wsrelay-net` (src/main.c), the program that holds
 * the platform client, the notifiers and the rest, by exec with the same
 * arguments. So a quiet run loads neither libcurl nor OpenSSL nor the
 * state: it reads the configuration's `state_file`, the quiet file beside
 * the state and three stat()s, and exits 0.
 *
 * The front never judges a command line or a configuration: whatever it
 * does not recognise as a plain `run` (global -c FILE, -v and -q, before
 * or after `run`, and at most --now UNIXTIME), and any doubt about the quiet
 * file, goes to wsrelay-net, which reports problems as it always did.
 *
 * wsrelay-net is looked for beside this program first (a build directory,
 * or a copy of both in one place), then in the libexec directory of the
 * installation that holds this program (WSRELAY_LIBEXEC_FROM_BIN from its
 * own directory, so a package staged under another prefix than the build's
 * still finds its own), then in WSRELAY_LIBEXECDIR, where the install puts
 * it.
 *
 * A front must never exec itself: a `wsrelay-net` that is this very file
 * (a link) is refused before the exec, and one that is a copy of the front
 * finds FRONT_MARK, which the front sets for the program it execs and
 * wsrelay-net clears, and refuses to go on. Either way the error names the
 * path, where an installation mistake would otherwise loop for ever. */
#include "config.h"
#include "quiet.h"
#include "run/run.h"
#include "schema.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NET_NAME "wsrelay-net"
/* Set to the path of the program the front execs; wsrelay-net unsets it. */
#define FRONT_MARK "WSRELAY_FRONT_EXECED"

/* What a plain `run` command line asks for. */
struct plain_run {
    const char *config_path;
    long long now;        /* --now, or 0 for the clock */
    enum log_level level; /* -v: LOG_DEBUG, -q: LOG_WARN; the last one wins */
};

static int parse_now(long long *out, const char *text)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v <= 0)
        return -1;
    *out = v;
    return 0;
}

/* Reads the global option at argv[*i] (-c FILE, -v or -q) into *r; false
 * when it is none of them. */
static bool global_option(struct plain_run *r, int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "-v") == 0)
        r->level = LOG_DEBUG;
    else if (strcmp(argv[*i], "-q") == 0)
        r->level = LOG_WARN;
    else if (strcmp(argv[*i], "-c") == 0 && *i + 1 < argc)
        r->config_path = argv[++*i];
    else
        return false;
    return true;
}

/* Fills *r when argv is [-c FILE | -v | -q]... run [--now UNIXTIME], with
 * the global options before `run` or after it (as wsrelay-net takes them);
 * false for any other command line, left to wsrelay-net. */
static bool plain_run(struct plain_run *r, int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!global_option(r, argc, argv, &i))
            return false;
    }
    if (i >= argc || strcmp(argv[i], "run") != 0)
        return false;
    for (i++; i < argc; i++) {
        if (strcmp(argv[i], "--now") == 0 && i + 1 < argc && parse_now(&r->now, argv[i + 1]) == 0)
            i++;
        else if (!global_option(r, argc, argv, &i))
            return false;
    }
    return true;
}

/* The configuration's state_file, as config_load reads it; NULL when the
 * file cannot be read or the key is anything but a usable string. */
static char *state_file_of(const char *config_path)
{
    struct schema_doc *d = NULL;
    struct err e;
    char *path = NULL;
    if (schema_open(&d, config_path, CONFIG_MAX_BYTES, 0, &e) < 0)
        goto out;
    yaml_node_t *root = schema_root(d);
    if (!root || root->type != YAML_MAPPING_NODE)
        goto out;
    yaml_node_t *n = schema_lookup(d, root, "state_file");
    if (!n)
        path = xstrdup(CONFIG_DEFAULT_STATE);
    else if (schema_path(&path, d, n, &e) < 0)
        path = NULL;
out:
    schema_close(d);
    return path;
}

/* Whether the last full run said that a run now has nothing to do, and
 * nothing it depended on has changed since (quiet.h). */
static bool quiet_now(const struct plain_run *r)
{
    struct quiet q;
    struct file_id id;
    uint64_t env;
    bool quiet = false;
    long long now = r->now ? r->now : (long long)time(NULL);
    char *state = state_file_of(r->config_path);
    if (!state || quiet_read(&q, state) < 0)
        goto out;
    quiet = now >= q.written_at && now < q.until && file_id_of(&id, state) == 0 &&
            file_id_same(&id, &q.state) && file_id_of(&id, r->config_path) == 0 &&
            file_id_same(&id, &q.config) && quiet_env_digest(&env, r->config_path) == 0 &&
            env == q.env;
    if (quiet)
        log_debug("run: nothing is due for %lld s (the last run left %s.quiet)", q.until - now,
                  state);
out:
    free(state);
    return quiet;
}

/* Replaces this process with wsrelay-net and the same arguments: the one
 * beside this program, or when there is none there, the one of this
 * program's installation, or the one of the configured install. One that
 * is there but does not run is an error, never a reason to run another
 * (which could be another version). Returns only on failure. */
static int exec_net(char **argv)
{
    char *dir = file_exe_dir();
    char *paths[3];
    size_t n = 0;
    if (dir) {
        paths[n++] = xasprintf("%s/" NET_NAME, dir);
        paths[n++] = xasprintf("%s/" WSRELAY_LIBEXEC_FROM_BIN "/" NET_NAME, dir);
    }
    paths[n++] = xstrdup(WSRELAY_LIBEXECDIR "/" NET_NAME);
    struct file_id self, net;
    bool have_self = file_id_of(&self, "/proc/self/exe") == 0;
    size_t i = 0;
    for (; i < n; i++) {
        if (have_self && file_id_of(&net, paths[i]) == 0 && net.dev == self.dev &&
            net.ino == self.ino) {
            log_plain(LOG_ERROR,
                      "%s is this program (wsrelay) itself, not the " NET_NAME
                      " helper; reinstall wsrelay so that it holds " NET_NAME,
                      paths[i]);
            goto out;
        }
        if (setenv(FRONT_MARK, paths[i], 1) < 0)
            xalloc_die();
        execv(paths[i], argv);
        if (errno != ENOENT)
            break;
    }
    int saved = errno;
    log_plain(LOG_ERROR, "cannot run %s: %s", paths[i < n ? i : n - 1], strerror(saved));
out:
    for (i = 0; i < n; i++)
        free(paths[i]);
    free(dir);
    return RUN_USAGE;
}

int main(int argc, char **argv)
{
    const char *execed = getenv(FRONT_MARK);
    if (execed) {
        log_plain(
            LOG_ERROR,
            "%s is a copy of wsrelay, not the " NET_NAME
            " helper (it answered as the front); reinstall wsrelay so that it holds " NET_NAME,
            execed);
        return RUN_USAGE;
    }
    struct plain_run r = {.config_path = getenv("WSRELAY_CONFIG"), .level = LOG_INFO};
    if (!r.config_path || !*r.config_path)
        r.config_path = CONFIG_DEFAULT_PATH;
    if (plain_run(&r, argc, argv)) {
        log_set_level(r.level);
        if (quiet_now(&r))
            return RUN_OK;
    }
    return exec_net(argv);
}
