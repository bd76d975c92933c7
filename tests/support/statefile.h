/* The state file in a test: open and save it, and fail the current
 * Criterion test (cr_assert) with the state's own message when either
 * fails, for the tests whose subject is something else than that failure. */
#ifndef WSRELAY_TEST_STATEFILE_H
#define WSRELAY_TEST_STATEFILE_H

#include "state.h"

/* state_open of `path` without waiting for the lock; fails the test,
 * naming state_open's error, unless it succeeds with a state. The caller
 * closes it (state_close). */
struct state *state_open_ok(const char *path);

/* state_save of `s`; fails the test, naming state_save's error, unless it
 * returns 0 (a save behind, STATE_SAVED_BEHIND, fails it too). */
void state_save_ok(struct state *s);

/* state_save_ok of `s`, state_close, then state_open_ok of `path`: the
 * state as the next run finds it. */
struct state *state_reopen_ok(struct state *s, const char *path);

#endif
