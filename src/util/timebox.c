/* Running work in a child process that is killed when its time is up.
 *
 * The parent does nothing but wait on the pipe with poll(), counting the
 * time left from a monotonic clock each time round, so that neither a
 * signal nor a chatty child can move the deadline. */
#include "util/timebox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int timebox_tell(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The child's side: never returns. */
static _Noreturn void child(int fd, pid_t parent, int (*work)(int fd, void *arg), void *arg)
{
    /* Killed with its parent, so a run killed by systemd (or by hand)
     * leaves no session behind holding the state's lock (an flock, which
     * the child shares). The check after it catches a parent that died
     * before the request was made. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    int rc = work(fd, arg);
    /* _exit, not exit: the parent's atexit handlers, stdio buffers and
     * (in sanitizer builds) the leak check belong to the parent. */
    _exit(rc == 0 ? 0 : 1);
}

/* Reads what the child has written so far, without blocking; false at the
 * end of the pipe (the child has exited). */
static bool drain(int fd, void (*heard)(const char *, size_t, void *), void *heard_arg)
{
    char chunk[4096];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            heard(chunk, (size_t)n, heard_arg);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

/* Waits for the child, reaped by the end. */
static int reap(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

int timebox_run(struct timebox_report *out, long long timeout_ms, int (*work)(int fd, void *arg),
                void *work_arg, void (*heard)(const char *data, size_t len, void *arg),
                void *heard_arg, struct err *e)
{
    int fds[2];
    long long start = now_ms(), deadline = start + timeout_ms;
    memset(out, 0, sizeof *out);
    if (pipe(fds) < 0)
        return err_set(e, "cannot make a pipe: %s", strerror(errno));
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        return err_set(e, "cannot start a process: %s", strerror(err));
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], parent, work, work_arg);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);

    bool talking = true, reaped = false;
    int status = 0;
    while (talking) {
        long long left = deadline - now_ms();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n > 0)
            talking = drain(fds[0], heard, heard_arg);
        /* n == 0 or EINTR: round again, with the time left counted anew */
    }
    /* The pipe ends when the child exits: it is gone or about to be. */
    while (!talking) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) {
            reaped = true;
            break;
        }
        if (now_ms() >= deadline)
            break;
        struct timespec pause = {0, 1000000L};
        nanosleep(&pause, NULL);
    }
    if (!reaped) {
        if (talking)
            drain(fds[0], heard, heard_arg); /* what came at the last moment */
        kill(pid, SIGKILL);
        status = reap(pid);
    }
    close(fds[0]);

    out->ms = now_ms() - start;
    if (!reaped) {
        out->end = TIMEBOX_TIMED_OUT;
    } else if (WIFEXITED(status)) {
        out->end = TIMEBOX_DONE;
        out->status = WEXITSTATUS(status);
    } else {
        out->end = TIMEBOX_DIED;
        out->status = WIFSIGNALED(status) ? WTERMSIG(status) : status;
    }
    return 0;
}
