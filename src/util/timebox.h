/* Work with a deadline that nothing can stretch: the work runs in a child
 * process, and the parent kills it when its time is up.
 *
 * For libraries whose time limits apply step by step and restart with
 * every byte the far end sends, and that retry a wait a signal interrupts:
 * no signal, flag or callback in the same process can end such a wait on
 * time. A process can always be killed. */
#ifndef WSRELAY_TIMEBOX_H
#define WSRELAY_TIMEBOX_H

#include "util/err.h"

#include <stddef.h>

enum timebox_end {
    TIMEBOX_DONE,      /* the work returned: `status` is 0 when it returned 0, else 1 */
    TIMEBOX_TIMED_OUT, /* the time ran out and the child was killed */
    TIMEBOX_DIED,      /* the child ended without returning: `status` is the signal that
                          ended it, or its exit status */
};

struct timebox_report {
    enum timebox_end end;
    int status;
    long long ms; /* how long the child ran */
};

/* Runs work(fd, work_arg) in a child process within `timeout_ms`. What the
 * work writes to `fd` (the write end of a pipe; the work must not close
 * it) reaches heard(data, len, heard_arg) in the parent as it arrives, in
 * order, also when the child is killed afterwards; a report the child
 * wrote just before its time ran out is read before it is killed.
 *
 * The child is a fork of the caller: it sees the caller's memory as it
 * was, and what it changes or allocates stays in the child. It ends with
 * _exit: no atexit handler runs and no stdio buffer is flushed there, so
 * the work must put everything it has to say through `fd`. It is killed
 * (SIGKILL) as well when the caller dies, so it never outlives the run.
 * Signals that interrupt the parent's wait do not end it.
 *
 * Returns 0 with *out filled; -1 with `e` set when no child could be
 * started (no work was done). */
int timebox_run(struct timebox_report *out, long long timeout_ms, int (*work)(int fd, void *arg),
                void *work_arg, void (*heard)(const char *data, size_t len, void *arg),
                void *heard_arg, struct err *e);

/* Writes all `len` bytes of `data` to `fd`, going on after interruptions;
 * for the work's reports. Returns 0, or -1 when the pipe is gone. */
int timebox_tell(int fd, const void *data, size_t len);

#endif
