/* Child processes, temporary directories and small file helpers for the
 * tests. The child side of fork only calls async-signal-safe functions,
 * because the test process may run server threads (hooksink). */
#define _GNU_SOURCE /* close_range */
#include "proc.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char **environ;

#define READ_MAX (64u * 1024 * 1024)

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* argv[0] as execve wants it: itself when it names a path, else the first
 * executable of that name in $PATH. NULL when there is none. */
static char *resolve_program(const char *name)
{
    if (strchr(name, '/'))
        return xstrdup(name);
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char *copy = xstrdup(path), *save = NULL, *found = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *cand = xasprintf("%s/%s", *dir ? dir : ".", name);
        if (access(cand, X_OK) == 0)
            found = cand;
        else
            free(cand);
    }
    free(copy);
    return found;
}

static int make_output_file(char **out_path, const char *dir, const char *stem)
{
    *out_path = xasprintf("%s/%s-XXXXXX", dir, stem);
    int fd = mkstemp(*out_path);
    if (fd < 0)
        cr_assert_fail("cannot create %s: %s", *out_path, strerror(errno));
    return fd;
}

/* In the child: put the descriptors in place and exec; never returns. */
static void child_exec(const char *prog, char *const argv[], char *const envp[], int in_fd,
                       int out_fd, int err_fd, pid_t parent)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(127); /* the test is already gone */
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(127);
    if (close_range(3, ~0u, 0) < 0) {
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    execve(prog, argv, envp ? envp : environ);
    static const char msg[] = "proc_start: exec failed\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
}

void proc_start(struct proc *p, char *const argv[], char *const envp[], const char *dir)
{
    memset(p, 0, sizeof *p);
    cr_assert(argv && argv[0], "proc_start: empty argv");
    p->name = xstrdup(argv[0]);
    char *prog = resolve_program(argv[0]);
    if (!prog)
        cr_assert_fail("proc_start: %s: not found in $PATH", argv[0]);
    int out_fd = make_output_file(&p->out_path, dir, "stdout");
    int err_fd = make_output_file(&p->err_path, dir, "stderr");
    int in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd < 0)
        cr_assert_fail("cannot open /dev/null: %s", strerror(errno));
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(prog, argv, envp, in_fd, out_fd, err_fd, parent);
    int fork_errno = errno;
    close(in_fd);
    close(out_fd);
    close(err_fd);
    free(prog);
    if (pid < 0)
        cr_assert_fail("proc_start: fork: %s", strerror(fork_errno));
    p->pid = pid;
}

static int decode_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return 255;
}

int proc_poll(struct proc *p)
{
    if (p->exited)
        return p->status;
    if (p->pid <= 0)
        return -1;
    int st;
    pid_t r;
    do
        r = waitpid(p->pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r != p->pid)
        return -1;
    p->pid = 0;
    p->exited = true;
    p->status = decode_status(st);
    return p->status;
}

/* Waits until the child exits or `ms` pass; the status, or -1 if it runs. */
static int wait_ms(struct proc *p, long long ms)
{
    long long deadline = now_ms() + ms;
    for (;;) {
        int status = proc_poll(p);
        if (status >= 0 || (p->pid <= 0 && !p->exited))
            return status;
        if (now_ms() >= deadline)
            return -1;
        sleep_ms(5);
    }
}

/* SIGKILL and reap; the status (128+9, or what it exited with first). */
static int kill_hard(struct proc *p)
{
    if (p->pid > 0)
        kill(p->pid, SIGKILL);
    int status = wait_ms(p, 10000);
    return status >= 0 ? status : 128 + SIGKILL;
}

int proc_wait(struct proc *p, int timeout_s)
{
    cr_assert(p->pid > 0 || p->exited, "proc_wait: no child started");
    int status = wait_ms(p, (long long)timeout_s * 1000);
    if (status < 0) {
        kill_hard(p);
        char *err = proc_stderr(p);
        cr_log_error("stderr of %s:\n%.4000s", p->name, err);
        free(err);
        cr_assert_fail("%s did not exit within %d s (killed)", p->name, timeout_s);
    }
    return status;
}

int proc_terminate(struct proc *p, int timeout_s)
{
    if (p->exited)
        return p->status;
    if (p->pid <= 0)
        return -1;
    kill(p->pid, SIGTERM);
    int status = wait_ms(p, (long long)timeout_s * 1000);
    return status >= 0 ? status : kill_hard(p);
}

void proc_stop(struct proc *p)
{
    if (!p)
        return;
    if (p->pid > 0)
        proc_terminate(p, 5);
    free(p->out_path);
    free(p->err_path);
    free(p->name);
    memset(p, 0, sizeof *p);
}

static char *read_or_fail(const char *path)
{
    struct buf b;
    struct err e;
    buf_init(&b, READ_MAX);
    if (file_read(&b, path, &e) < 0) {
        buf_free(&b);
        cr_assert_fail("%s", e.msg);
    }
    return buf_steal(&b);
}

char *proc_stdout(const struct proc *p)
{
    cr_assert(p->out_path, "proc_stdout: no child started");
    return read_or_fail(p->out_path);
}

char *proc_stderr(const struct proc *p)
{
    cr_assert(p->err_path, "proc_stderr: no child started");
    return read_or_fail(p->err_path);
}

int run_cmd(char **out_stdout, char **out_stderr, int timeout_s, char *const argv[],
            char *const envp[])
{
    char *dir = test_tmpdir();
    struct proc p;
    proc_start(&p, argv, envp, dir);
    int status = proc_wait(&p, timeout_s);
    if (out_stdout)
        *out_stdout = proc_stdout(&p);
    if (out_stderr)
        *out_stderr = proc_stderr(&p);
    proc_stop(&p);
    test_rmtree(dir);
    free(dir);
    return status;
}

struct cmd_result cmd_run(int timeout_s, const char *const argv[])
{
    struct cmd_result r;
    r.status = run_cmd(&r.out, &r.err, timeout_s, (char *const *)argv, NULL);
    return r;
}

struct cmd_result wsrelay_cmd(int timeout_s, const char *arg, ...)
{
    const char *argv[32] = {WSRELAY_BIN};
    size_t n = 1;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        cr_assert_lt(n + 1, sizeof argv / sizeof argv[0], "wsrelay_cmd: too many arguments");
        argv[n++] = a;
    }
    va_end(ap);
    argv[n] = NULL;
    return cmd_run(timeout_s, argv);
}

void cmd_result_free(struct cmd_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

char *test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    char *dir = xasprintf("%s/wsrelay-test-XXXXXX", base);
    if (!mkdtemp(dir))
        cr_assert_fail("mkdtemp %s: %s", dir, strerror(errno));
    return dir;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    if (remove(path) < 0 && errno != ENOENT)
        cr_log_warn("cannot remove %s: %s", path, strerror(errno));
    return 0;
}

/* Set by open_entry when a pass met a directory it could not read or an
 * entry it could not stat: the next pass reaches further. */
static bool rmtree_blocked;

static int open_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_D || type == FTW_DNR)
        chmod(path, (st->st_mode & 07777) | S_IRWXU);
    if (type == FTW_DNR || type == FTW_NS)
        rmtree_blocked = true;
    return 0;
}

void test_rmtree(const char *dir)
{
    if (!dir || !*dir || strcmp(dir, "/") == 0)
        return;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return;
    /* Give the owner back every directory a test closed (chmod -R u+rwx),
     * a level deeper each pass, then remove. */
    for (int pass = 0; pass < 16; pass++) {
        rmtree_blocked = false;
        nftw(dir, open_entry, 16, FTW_PHYS);
        if (!rmtree_blocked)
            break;
    }
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

size_t test_count_files(const char *dir, const char *prefix)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    if (!d)
        cr_assert_fail("cannot read %s: %s", dir, strerror(errno));
    for (struct dirent *de; (de = readdir(d));)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        cr_assert_fail("cannot create %s: %s", path, strerror(errno));
    size_t len = strlen(text);
    bool ok = fwrite(text, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok)
        cr_assert_fail("cannot write %s: %s", path, strerror(errno));
}

char *read_file_str(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0 && errno == ENOENT)
        return NULL;
    return read_or_fail(path);
}

void test_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int test_read_port(const char *path)
{
    char *text = read_file_str(path);
    if (!text)
        return 0;
    char *end;
    long port = strtol(text, &end, 10);
    bool ok = end != text && (*end == '\n' || *end == '\0') && port > 0 && port < 65536;
    free(text);
    return ok ? (int)port : 0;
}

char **proc_environ_for_kills(void)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 2, sizeof *env);
    const char *asan = getenv("ASAN_OPTIONS");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "ASAN_OPTIONS=", 13) != 0)
            env[k++] = xstrdup(environ[i]);
    env[k] = asan && *asan ? xasprintf("ASAN_OPTIONS=%s:detect_leaks=0", asan)
                           : xstrdup("ASAN_OPTIONS=detect_leaks=0");
    return env;
}

void proc_environ_free(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}
