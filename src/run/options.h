/* What a run is asked to do (struct run_options) and the exit codes the
 * run shares with the command line: the words of src/run/ that its
 * callers (run.h) and its steps (tick.h) both need, apart so that no step
 * includes the run's own header. */
#ifndef WSRELAY_RUN_OPTIONS_H
#define WSRELAY_RUN_OPTIONS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

struct run_options {
    long long now; /* the clock of this run (Unix time) */
    bool dry_run;  /* print instead of sending; keep seen keys and outbox unsaved */
    int lock_wait; /* seconds to wait for an overlapping run's lock */
    /* Serials to look at in this run (`run --look`), before the routine
     * polls: each on a routine slot when one is free, else on the call
     * kept in reserve (budget.h). A look that cannot be made, or names no
     * device being polled, fails the run. */
    const char *const *looks;
    size_t n_looks;
    /* NULL, or a flag a signal handler sets (SIGTERM or SIGINT): once it
     * is set, the tick starts no further platform call or delivery, saves
     * what it has and returns. What it did not get to is done next time. */
    const volatile sig_atomic_t *stop;
};

/* Exit codes shared with the command line. */
enum { RUN_OK = 0, RUN_FAILED = 1, RUN_USAGE = 2 };

#endif
