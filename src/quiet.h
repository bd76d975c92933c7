/* The quiet file: until when runs have nothing to do.
 *
 * Most runs of a relay without signals make no platform call: the budget
 * spaces alert calls 5.5 minutes apart, and a device list is read every 10.
 * Such a run used to cost what loading libcurl, OpenSSL and the whole state
 * costs. So each full run that ends well leaves PATH.quiet beside the state
 * file: a time before which, as long as nothing it depended on changes, a
 * run would make no call, deliver nothing and queue nothing. The `wsrelay`
 * command (src/front.c) reads it and stops there, and otherwise execs
 * `wsrelay-net`, the program that does the work.
 *
 * What "nothing it depended on changes" means, checked by the front:
 *   - the state file is the one that run left (device, inode, size,
 *     modification and change times): any other writer of the state
 *     makes the next run a full one;
 *   - the configuration file is the one that run read (the same five);
 *   - every environment variable the configuration file names as ${NAME}
 *     has the value it had (a digest of names and values);
 *   - the clock is between the run's time and the quiet time (a clock
 *     that went back makes a full run, whose state_clamp_clock sees it).
 * The quiet time is exact or early, never late (poll.c's
 * poll_quiet_until says how); a full run deletes the file as it starts,
 * so one killed halfway leaves none. The file is a cache: losing it only
 * costs a full run. */
#ifndef WSRELAY_QUIET_H
#define WSRELAY_QUIET_H

#include "util/err.h"
#include "util/fileio.h"

#include <stdbool.h>
#include <stdint.h>

struct quiet {
    long long written_at;  /* the run's time */
    long long until;       /* no run before this needs to do anything */
    struct file_id state;  /* the state file as the run left it */
    struct file_id config; /* the configuration file as the run read it */
    uint64_t env;          /* quiet_env_digest of the configuration file */
};

/* PATH.quiet for the state file `state_path`; the caller frees. */
char *quiet_path(const char *state_path);

/* A digest of every ${NAME} the file at `path` holds, with the value the
 * environment gives it now (unset and empty differ). Any ${NAME} counts,
 * in a comment too: naming too many only costs a full run. Returns -1
 * when the file cannot be read. */
int quiet_env_digest(uint64_t *out, const char *path);

/* Reads the quiet file of `state_path` (never following a symlink).
 * Returns -1 when there is none or it is not what quiet_write writes; a
 * caller then makes a full run. */
int quiet_read(struct quiet *out, const char *state_path);

/* Writes it atomically, mode 0600. On failure returns -1 with the reason
 * in `e`; the caller may go on (no file only means full runs). */
int quiet_write(const struct quiet *q, const char *state_path, struct err *e);

/* Deletes it, if there is one. Returns -1 with the reason in `e` when one
 * is there and cannot be deleted. */
int quiet_forget(const char *state_path, struct err *e);

#endif
