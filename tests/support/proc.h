/* Child processes and scratch files for tests: start a program with its
 * stdout and stderr going to files, wait for it with a deadline, stop it.
 *
 * Every function here ends the current Criterion test (cr_assert_fail) when
 * the setup itself fails (fork, a file that cannot be created, a timeout)
 * instead of returning an error, unless its comment says otherwise. A
 * child is killed with SIGKILL if the test process dies first, so that no
 * simulator outlives a crashed test. */
#ifndef WSRELAY_TEST_PROC_H
#define WSRELAY_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct proc {
    pid_t pid;      /* 0 once the child has been reaped */
    char *out_path; /* the child's stdout, a file in the `dir` of proc_start */
    char *err_path; /* the child's stderr */
    /* private */
    char *name; /* argv[0], for messages */
    bool exited;
    int status; /* exit status or 128+signal, once exited */
};

/* Starts argv[0] (a path, or a name looked up in $PATH) with `argv` and
 * `envp` (NULL: this process's environment), stdin from /dev/null, stdout
 * and stderr into new files in the existing directory `dir`. *p is
 * overwritten; release it with proc_stop. */
void proc_start(struct proc *p, char *const argv[], char *const envp[], const char *dir);

/* Waits up to `timeout_s` seconds for the child to exit and returns its exit
 * status (WEXITSTATUS), or 128+N when signal N ended it. On timeout it
 * kills the child (SIGKILL) and fails the test. Calling it again after the
 * child was reaped returns the same status. p stays valid for proc_stdout,
 * proc_stderr and proc_stop. */
int proc_wait(struct proc *p, int timeout_s);

/* Returns -1 while the child runs; once it has exited, reaps it and returns
 * what proc_wait would. Never blocks, never fails the test. */
int proc_poll(struct proc *p);

/* Sends SIGTERM, waits up to `timeout_s` seconds, then SIGKILL; returns
 * the status as proc_wait does (128+9 when it had to be killed). For a
 * child already reaped, returns its status. Does not free. */
int proc_terminate(struct proc *p, int timeout_s);

/* proc_terminate with 5 s unless already reaped, then frees the paths (the
 * files stay) and zeroes *p. Accepts a zeroed or already stopped proc. */
void proc_stop(struct proc *p);

/* The current contents of the child's stdout or stderr file ("" when
 * empty). Caller frees. */
char *proc_stdout(const struct proc *p);
char *proc_stderr(const struct proc *p);

/* Runs argv to completion (see proc_start) within `timeout_s` seconds and
 * returns its exit status; the output goes to *out_stdout and *out_stderr
 * (caller frees; either pointer may be NULL to discard). Fails the test on
 * timeout. */
int run_cmd(char **out_stdout, char **out_stderr, int timeout_s, char *const argv[],
            char *const envp[]);

/* How a command that ran to completion ended: its exit status (as run_cmd
 * returns it) and all it printed. */
struct cmd_result {
    int status;
    char *out; /* its stdout ("" when it printed nothing) */
    char *err; /* its stderr */
};

/* run_cmd of `argv` (argv[0] a path, or a name looked up in $PATH; the
 * array ends with NULL) within `timeout_s` seconds, keeping both outputs.
 * Release the result with cmd_result_free. */
struct cmd_result cmd_run(int timeout_s, const char *const argv[]);

/* cmd_run of the wsrelay of this build (WSRELAY_BIN) with the arguments
 * that follow `arg`, up to a NULL (at most 30; `arg` NULL: none). */
struct cmd_result wsrelay_cmd(int timeout_s, const char *arg, ...);

/* Frees what a cmd_result holds; accepts one already freed. */
void cmd_result_free(struct cmd_result *r);

/* This process's environment with LeakSanitizer's exit check off, for
 * runs that a test kills on purpose: one killed while LeakSanitizer checks
 * it at exit leaves a report ("Unable to get registers from thread") that
 * is no finding. The other sanitizer checks stay on. Free it with
 * proc_environ_free. */
char **proc_environ_for_kills(void);
void proc_environ_free(char **env);

/* A fresh empty directory (mkdtemp) under $TMPDIR, or /tmp. Caller frees
 * the string and removes the directory with test_rmtree. */
char *test_tmpdir(void);

/* Removes `dir` and everything under it (symbolic links are removed, not
 * followed), first giving the owner read, write and search permission on
 * every directory below it, as `chmod -R u+rwx DIR; rm -rf DIR` would. A
 * missing directory is fine; "" and "/" are refused. */
void test_rmtree(const char *dir);

/* How many entries of the directory `dir` have a name that starts with
 * `prefix` (not looking below it); fails the test when `dir` cannot be
 * read. */
size_t test_count_files(const char *dir, const char *prefix);

/* Creates or replaces `path` with `text`. */
void write_file(const char *path, const char *text);

/* The contents of `path` (caller frees), or NULL when it does not exist. */
char *read_file_str(const char *path);

/* Sleeps `ms` milliseconds. */
void test_sleep_ms(long ms);

/* The port number in a port file that a server writes (by renaming a
 * complete file into place), or 0 while there is none yet. */
int test_read_port(const char *path);

#endif
