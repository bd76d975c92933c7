/* util/timebox: work in a child process, killed when its time is up. The
 * work here is real (sleeps, writes, a crash); the times asserted are
 * upper bounds with a wide margin. */
#include "util/buf.h"
#include "util/timebox.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

TestSuite(timebox, .timeout = 60);

static void heard(const char *data, size_t len, void *arg)
{
    buf_append(arg, data, len);
}

static int say_hello(int fd, void *arg)
{
    (void)arg;
    timebox_tell(fd, "hello", 5);
    return 0;
}

static int fail(int fd, void *arg)
{
    (void)fd;
    (void)arg;
    return -1;
}

/* Says something, then never ends: a pause() that no signal ends. */
static int hang(int fd, void *arg)
{
    timebox_tell(fd, arg, strlen(arg));
    for (;;)
        pause();
    return 0;
}

static int crash(int fd, void *arg)
{
    (void)fd;
    (void)arg;
    raise(SIGKILL);
    return 0;
}

/* Changes memory that the parent shares by copy only. */
static int scribble(int fd, void *arg)
{
    (void)fd;
    *(int *)arg = 42;
    return 0;
}

Test(timebox, work_that_ends_reports_what_it_said_and_returned)
{
    struct timebox_report r;
    struct buf b;
    buf_init(&b, 0);
    cr_assert_eq(timebox_run(&r, 10000, say_hello, NULL, heard, &b, NULL), 0);
    cr_assert_eq(r.end, TIMEBOX_DONE);
    cr_assert_eq(r.status, 0);
    cr_assert_str_eq(buf_str(&b), "hello");
    cr_assert_lt(r.ms, 5000);
    buf_free(&b);

    buf_init(&b, 0);
    cr_assert_eq(timebox_run(&r, 10000, fail, NULL, heard, &b, NULL), 0);
    cr_assert_eq(r.end, TIMEBOX_DONE);
    cr_assert_eq(r.status, 1);
    cr_assert_str_eq(buf_str(&b), "");
    buf_free(&b);
}

Test(timebox, work_that_never_ends_is_killed_and_what_it_said_is_kept)
{
    struct timebox_report r;
    struct buf b;
    buf_init(&b, 0);
    cr_assert_eq(timebox_run(&r, 300, hang, (char[]){"step 1"}, heard, &b, NULL), 0);
    cr_assert_eq(r.end, TIMEBOX_TIMED_OUT);
    cr_assert_geq(r.ms, 300);
    cr_assert_lt(r.ms, 5000, "took %lld ms", r.ms);
    cr_assert_str_eq(buf_str(&b), "step 1");
    buf_free(&b);
}

Test(timebox, a_child_that_dies_is_told_apart)
{
    struct timebox_report r;
    struct buf b;
    buf_init(&b, 0);
    cr_assert_eq(timebox_run(&r, 10000, crash, NULL, heard, &b, NULL), 0);
    cr_assert_eq(r.end, TIMEBOX_DIED);
    cr_assert_eq(r.status, SIGKILL);
    buf_free(&b);
}

Test(timebox, the_child_changes_only_its_own_copy)
{
    struct timebox_report r;
    struct buf b;
    int value = 7;
    buf_init(&b, 0);
    cr_assert_eq(timebox_run(&r, 10000, scribble, &value, heard, &b, NULL), 0);
    cr_assert_eq(r.end, TIMEBOX_DONE);
    cr_assert_eq(value, 7);
    buf_free(&b);
}

static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

/* Signals every 50 ms (no SA_RESTART, as wsrelay's stop signal) interrupt
 * the parent's wait over and over: the deadline holds, neither cut short
 * nor stretched. */
Test(timebox, signals_to_the_parent_neither_shorten_nor_stretch_the_wait)
{
    struct sigaction sa = {.sa_handler = on_tick}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    struct itimerval every = {{0, 50000}, {0, 50000}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &every, NULL);
    struct timebox_report r;
    struct buf b;
    buf_init(&b, 0);
    int rc = timebox_run(&r, 1000, hang, (char[]){"x"}, heard, &b, NULL);
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    cr_assert_eq(rc, 0);
    cr_assert_eq(r.end, TIMEBOX_TIMED_OUT);
    cr_assert_geq(r.ms, 1000);
    cr_assert_lt(r.ms, 6000, "took %lld ms", r.ms);
    cr_assert_gt(ticks, 5, "the signals did arrive (%d)", (int)ticks);
    buf_free(&b);
}
