/* `wsrelay run`: one tick of the relay (run.h), or with --loop a tick every
 * interval until SIGTERM or SIGINT, which let the step under way finish
 * and the state be saved. */
#include "cmd/cmd.h"
#include "run/run.h"
#include "util/duration.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OPT_NOW = 1, OPT_DRY_RUN, OPT_LOOK, OPT_LOOP, OPT_INTERVAL };

static const struct opt_spec opts[] = {
    {OPT_NOW, "now", 0, "UNIXTIME", 0, "run as if the clock said so (for tests and the simulator)"},
    {OPT_DRY_RUN, "dry-run", 0, NULL, 0,
     "poll as a run would but send nothing: print each message, save only the budget ledger"},
    {OPT_LOOK, "look", 0, "SERIAL", OPT_MANY,
     "poll that device now, ahead of the routine, on the call kept in reserve if need be"},
    {OPT_LOOP, "loop", 0, NULL, 0,
     "a run every minute until SIGTERM or SIGINT, the configuration read again each time"},
    {OPT_INTERVAL, "interval", 0, "DURATION", OPT_UNDER,
     "with --loop: the time between runs instead of a minute (60s, 5m)"},
    {0},
};

/* Set by SIGTERM or SIGINT during `run`, with or without --loop. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* SIGTERM (a systemd stop or timeout, a container stop) and SIGINT let the
 * step under way finish, then the run saves and ends: a stop repeats no
 * delivery and loses nothing. Without SA_RESTART, a signal ends a sleep or
 * a wait early. */
static void catch_stop_signals(struct run_options *ro)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ro->stop = &stop_requested;
}

/* Sleeps until `until` (CLOCK_MONOTONIC seconds) or a stop signal. */
static void sleep_until(long long until)
{
    struct timespec now;
    while (!stop_requested && clock_gettime(CLOCK_MONOTONIC, &now) == 0 && now.tv_sec < until) {
        struct timespec step = {.tv_sec = 1};
        nanosleep(&step, NULL); /* a signal cuts it short */
    }
}

/* `run --loop`: a tick every `interval` seconds until SIGTERM or SIGINT,
 * which let the current tick finish its step, save, and end with 0. The
 * configuration is read again before each tick, so an edit takes effect
 * without a restart; a broken edit is logged and the last good
 * configuration kept. Takes over `c`. */
static int run_loop(const struct cmd_globals *g, struct config *c, struct run_options *ro,
                    long interval)
{
    log_info("loop: a tick every %ld s; SIGTERM stops it after the current step", interval);
    while (!stop_requested) {
        struct timespec started;
        clock_gettime(CLOCK_MONOTONIC, &started);
        struct config *fresh = NULL;
        struct err e;
        if (config_load(&fresh, g->config_path, &e) == 0) {
            config_free(c);
            c = fresh;
        } else {
            log_error("%s (keeping the configuration read before)", e.msg);
        }
        ro->now = (long long)time(NULL);
        run_once(c, ro);
        sleep_until((long long)started.tv_sec + interval);
    }
    log_info("loop: stopped by a signal; the state is saved");
    config_free(c);
    return RUN_OK;
}

static int cmd_run(const struct cmd_globals *g, const struct opt_args *a)
{
    struct run_options ro = {.now = (long long)time(NULL), .lock_wait = 10};
    const char **looks = xcalloc(a->n_found + 1, sizeof *looks);
    size_t n_looks = 0;
    struct config *c = NULL;
    bool loop = false, now_given = false, interval_given = false;
    long interval = 60;
    int rc = RUN_USAGE;
    for (size_t i = 0; i < a->n_found; i++) {
        const char *arg = a->found[i].value;
        switch (a->found[i].spec->id) {
        case OPT_NOW:
            if (cmd_parse_time(&ro.now, arg) < 0) {
                fprintf(stderr, "wsrelay: run: --now expects a Unix time, got '%s'\n", arg);
                goto out;
            }
            now_given = true;
            break;
        case OPT_DRY_RUN:
            ro.dry_run = true;
            break;
        case OPT_LOOP:
            loop = true;
            break;
        case OPT_INTERVAL:
            if (duration_parse(&interval, arg) < 0 || interval < 1) {
                fprintf(stderr,
                        "wsrelay: run: --interval expects a duration such as 60s or "
                        "5m, got '%s'\n",
                        arg);
                goto out;
            }
            interval_given = true;
            break;
        case OPT_LOOK:
            if (!*arg) {
                fprintf(stderr, "wsrelay: run: --look expects a device's serial\n");
                goto out;
            }
            looks[n_looks++] = arg;
            break;
        }
    }
    if (a->n_operands) {
        fprintf(stderr, "wsrelay: run: unexpected argument '%s'\n", a->operands[0]);
        goto out;
    }
    if (loop && now_given) {
        fprintf(stderr, "wsrelay: run: --loop follows the clock; --now cannot be used with it\n");
        goto out;
    }
    if (interval_given && !loop) {
        fprintf(stderr, "wsrelay: run: --interval needs --loop\n");
        goto out;
    }
    if (loop && n_looks) {
        fprintf(stderr, "wsrelay: run: --look is for one run; it cannot be used with --loop\n");
        goto out;
    }
    ro.looks = looks;
    ro.n_looks = n_looks;
    if (cmd_load_config(&c, g) < 0)
        goto out;
    catch_stop_signals(&ro);
    if (loop) {
        rc = run_loop(g, c, &ro, interval);
        c = NULL; /* run_loop took it */
        goto out;
    }
    rc = run_once(c, &ro);
    if (stop_requested)
        log_info("run: stopped by a signal after the step under way; the state is saved");
out:
    free(looks);
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_run_entry = {
    "run",
    "",
    "poll the platform within its budget and deliver new alerts (--look: that device now, on "
    "the call kept in reserve if need be; --loop: every minute, until SIGTERM)",
    opts,
    cmd_run,
};
