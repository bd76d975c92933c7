/* Drawing a chart in the wsrelay-chart helper (chartproc.h). */
#define _GNU_SOURCE /* ppoll */
#include "chartproc.h"

#include "chart.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

char *chartproc_title(const struct event *ev)
{
    const struct series_channel *ch = &ev->trend->series.channels[0];
    const char *who = ev->name && *ev->name ? ev->name : ev->serial;
    return ch->name && *ch->name ? xasprintf("%s · %s", who, ch->name)
                                 : xasprintf("%s · ch%d", who, ch->num);
}

/* The helper beside this program; NULL when this program's path is not
 * known. */
static char *helper_path(void)
{
    char *dir = file_exe_dir();
    char *path = dir ? xasprintf("%s/" CHARTPROC_NAME, dir) : NULL;
    free(dir);
    return path;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool stopping(const struct chartproc_limits *lim)
{
    return lim && lim->stop && *lim->stop;
}

/* When the helper must be done by: CHARTPROC_TIMEOUT_MS after `start`, or
 * the run's deadline when that comes first. */
struct chart_clock {
    long long start, deadline;
};

static struct chart_clock chart_clock(const struct chartproc_limits *lim)
{
    struct chart_clock c = {.start = now_ms()};
    c.deadline = c.start + CHARTPROC_TIMEOUT_MS;
    if (lim && lim->deadline_ms && lim->deadline_ms < c.deadline)
        c.deadline = lim->deadline_ms;
    return c;
}

/* The milliseconds left before the deadline, or -1 with the reason in `e`
 * when they ran out or a stop signal came. The stop signals are blocked
 * by the caller outside its ppoll, so one that comes after this check
 * ends the ppoll that follows at once. */
static long long chart_left(const struct chart_clock *c, const struct chartproc_limits *lim,
                            struct err *e)
{
    long long now = now_ms(), left = c->deadline - now;
    if (stopping(lim)) {
        err_set(e, CHARTPROC_NAME ": stopped by a signal");
        return -1;
    }
    if (left <= 0) {
        err_set(e, CHARTPROC_NAME ": no chart after %lld.%lld s%s", (now - c->start) / 1000,
                (now - c->start) % 1000 / 100,
                c->deadline < c->start + CHARTPROC_TIMEOUT_MS ? " (the run's time is up)" : "");
        return -1;
    }
    return left;
}

static struct timespec ms_timespec(long long ms)
{
    return (struct timespec){.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};
}

/* Writes `in` to the helper (*to, closed and set to -1 once all is
 * written) and reads its answer into `out` at the same time (a pipe holds
 * only so much), until it closes its output, the time runs out or a stop
 * signal comes (it interrupts the wait: `unblocked` is the signal mask
 * the wait runs with). Returns 0, or -1 with the reason in `e`. */
static int talk(int *to, int from, const char *in, size_t in_len, struct buf *out,
                const struct chart_clock *c, const struct chartproc_limits *lim,
                const sigset_t *unblocked, struct err *e)
{
    size_t sent = 0;
    for (;;) {
        struct pollfd fds[2] = {{.fd = from, .events = POLLIN}, {.fd = *to, .events = POLLOUT}};
        nfds_t n = *to >= 0 ? 2 : 1;
        long long left = chart_left(c, lim, e);
        if (left < 0)
            return -1;
        struct timespec ts = ms_timespec(left);
        int ready = ppoll(fds, n, &ts, unblocked);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            return err_set(e, CHARTPROC_NAME ": poll: %s", strerror(errno));
        if (n == 2 && fds[1].revents) {
            bool writable = fds[1].revents & POLLOUT;
            ssize_t w = writable ? write(*to, in + sent, in_len - sent) : -1;
            if (w > 0)
                sent += (size_t)w;
            else if (!writable || (errno != EAGAIN && errno != EINTR))
                sent = in_len; /* it stopped reading: its answer says why */
            if (sent == in_len) {
                close(*to);
                *to = -1;
            }
        }
        if (fds[0].revents) {
            char chunk[65536];
            ssize_t r = read(from, chunk, sizeof chunk);
            if (r == 0)
                break;
            if (r < 0 && errno != EAGAIN && errno != EINTR)
                return err_set(e, CHARTPROC_NAME ": read: %s", strerror(errno));
            if (r > 0 && buf_append(out, chunk, (size_t)r) < 0)
                return err_set(e, CHARTPROC_NAME ": answer over %u bytes", CHART_PNG_MAX);
        }
    }
    return 0;
}

/* Waits, within the same deadline and stop signal as talk(), until the
 * helper `pid` has ended, without reaping it (its process group stays
 * ours to kill). A helper may close its output and go on running. Returns
 * 0, or -1 with the reason in `e`. */
static int helper_ended(pid_t pid, const struct chart_clock *c, const struct chartproc_limits *lim,
                        const sigset_t *unblocked, struct err *e)
{
    for (;;) {
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno != EINTR)
            return err_set(e, CHARTPROC_NAME ": wait: %s", strerror(errno));
        if (info.si_pid == pid)
            return 0;
        long long left = chart_left(c, lim, e);
        if (left < 0)
            return -1;
        struct timespec ts = ms_timespec(left < 20 ? left : 20); /* it is about to end */
        ppoll(NULL, 0, &ts, unblocked);
    }
}

int chartproc_png(unsigned char **png, size_t *len, const struct event *ev,
                  const struct chartproc_limits *lim, struct err *e)
{
    int rc = -2;
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    pid_t pid = -1;
    char *path = NULL;
    struct buf answer;
    struct json_object *doc = NULL;
    struct sigaction ignore = {.sa_handler = SIG_IGN}, was;
    bool sigpipe = false, masked = false;
    sigset_t unblocked;
    buf_init(&answer, CHART_PNG_MAX);
    *png = NULL;
    *len = 0;
    if (!ev->trend) {
        rc = -1;
        err_set(e, "no trend to draw");
        goto out;
    }
    path = helper_path();
    if (!path || access(path, X_OK) < 0) {
        err_set(e, "%s: %s", path ? path : CHARTPROC_NAME,
                path ? strerror(errno) : "this program's directory is not known");
        goto out;
    }
    doc = event_to_json(ev);
    size_t doc_len = 0;
    const char *text = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN, &doc_len);
    if (pipe(in) < 0 || pipe(out) < 0) {
        err_set(e, CHARTPROC_NAME ": pipe: %s", strerror(errno));
        goto out;
    }
    for (int i = 0; i < 2; i++) { /* the helper gets them as 0 and 1 only */
        fcntl(in[i], F_SETFD, FD_CLOEXEC);
        fcntl(out[i], F_SETFD, FD_CLOEXEC);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    /* A group of its own: whatever it starts dies with it. */
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    char *argv[] = {(char *)CHARTPROC_NAME, NULL};
    int err = posix_spawn(&pid, path, &fa, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) {
        pid = -1;
        err_set(e, "%s: %s", path, strerror(err));
        goto out;
    }
    close(in[0]);
    close(out[1]);
    in[0] = out[1] = -1;
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    /* A helper that dies before reading everything must not kill us. */
    sigpipe = sigaction(SIGPIPE, &ignore, &was) == 0;
    /* The stop signals only interrupt the waits (ppoll), so that one that
     * comes between a check of the stop flag and the wait is not missed. */
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    masked = pthread_sigmask(SIG_BLOCK, &stops, &unblocked) == 0;
    if (!masked)
        sigemptyset(&unblocked);
    struct chart_clock clk = chart_clock(lim);
    if (talk(&in[1], out[0], text, doc_len, &answer, &clk, lim, &unblocked, e) < 0 ||
        helper_ended(pid, &clk, lim, &unblocked, e) < 0)
        goto out;
    int status = 0;
    kill(-pid, SIGKILL); /* what it left behind; it is not reaped yet */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        size_t n = strcspn(buf_str(&answer), "\n");
        bool said = WIFEXITED(status) && WEXITSTATUS(status) == 1 && n;
        if (said) /* it read the event and says why it cannot draw it */
            rc = -1;
        err_set(e, "%.*s", (int)(n < 300 ? n : 300),
                said ? buf_str(&answer) : CHARTPROC_NAME " failed");
        goto out;
    }
    if (answer.len < 8 || memcmp(answer.data, "\x89PNG\r\n\x1a\n", 8) != 0) {
        err_set(e, CHARTPROC_NAME ": the answer is not a PNG");
        goto out;
    }
    *len = answer.len;
    *png = (unsigned char *)buf_steal(&answer);
    rc = 0;
out:
    if (pid > 0) {
        kill(-pid, SIGKILL); /* the helper and all it started */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (masked)
        pthread_sigmask(SIG_SETMASK, &unblocked, NULL);
    if (sigpipe)
        sigaction(SIGPIPE, &was, NULL);
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
    }
    json_object_put(doc);
    buf_free(&answer);
    free(path);
    return rc;
}
