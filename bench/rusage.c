/* Runs a command and records what it cost: wall time, CPU time, the
 * largest resident set and the bytes it wrote. The benchmark (bench/bench.py) starts wsrelay
 * through it because Linux charges a process the peak memory of the one
 * that forked it (exec carries the old high-water mark over), so a
 * process started straight from Python would report Python's peak; this
 * program stays small.
 *
 *   wsrelay-rusage OUT COMMAND [ARG...]
 *
 * OUT gets one line: wall seconds, CPU seconds (user + system), the peak
 * resident set in KiB, COMMAND's exit status (128 + the signal when a
 * signal ended it), and the bytes its process passed to write calls
 * (wchar of /proc/PID/io, read while it is a zombie: files, pipes and
 * terminals, not sockets; -1 when unknown). wsrelay execs its network
 * half in the same process, so that is the whole run's. Exit status 0
 * when OUT was written, 2 otherwise. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    struct timespec start, end;
    struct rusage ru;
    int status = 0;
    if (argc < 3) {
        fputs("usage: wsrelay-rusage OUT COMMAND [ARG...]\n", stderr);
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "wsrelay-rusage: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        fprintf(stderr, "wsrelay-rusage: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    /* Its counters are readable until it is reaped. */
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    long long written = -1;
    char io_path[64];
    snprintf(io_path, sizeof io_path, "/proc/%ld/io", (long)pid);
    FILE *io = fopen(io_path, "r");
    char line[128];
    while (io && fgets(line, sizeof line, io))
        if (sscanf(line, "wchar: %lld", &written) == 1)
            break;
    if (io)
        fclose(io);
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "wsrelay-rusage: wait4: %s\n", strerror(errno));
            return 2;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double wall = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        fprintf(stderr, "wsrelay-rusage: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    fprintf(out, "%.6f %.6f %ld %d %lld\n", wall, seconds(ru.ru_utime) + seconds(ru.ru_stime),
            ru.ru_maxrss, code, written);
    if (fclose(out) != 0) {
        fprintf(stderr, "wsrelay-rusage: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    return 0;
}
