/* The commands of `wsrelay-net`, one file each in src/cmd/, each exporting
 * one row (struct cmd_entry): its name, its summary, its option table and
 * its function. main.c gathers the rows into the table that the command
 * line is dispatched on; the option parsing, the usage lines and every
 * --help come from the rows (opt.h).
 *
 * A command's function returns an exit status of run.h: RUN_OK, RUN_FAILED
 * for a run-time failure the next run retries, RUN_USAGE for a usage or
 * configuration error. */
#ifndef WSRELAY_CMD_H
#define WSRELAY_CMD_H

#include "cmd/opt.h"
#include "config.h"

#include <stdio.h>

/* What the global options (-c, -v, -q) set, before or after the command. */
struct cmd_globals {
    const char *config_path;
};

struct cmd_entry {
    const char *name;
    const char *operands; /* before the options in the synopsis ("SERIAL"); "" for none */
    const char *summary;  /* one line, lower case, no full stop */
    const struct opt_spec *opts;
    /* Runs the command on what the dispatch parsed of its arguments: its
     * own options (a->found) and its operands, which the function
     * checks. */
    int (*fn)(const struct cmd_globals *g, const struct opt_args *a);
};

extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_check_entry;
extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_current_entry;
extern const struct cmd_entry cmd_readings_entry;
extern const struct cmd_entry cmd_alerts_entry;
extern const struct cmd_entry cmd_explain_entry;
extern const struct cmd_entry cmd_keys_entry;
extern const struct cmd_entry cmd_test_receiver_entry;
extern const struct cmd_entry cmd_render_entry;
extern const struct cmd_entry cmd_ack_entry;
extern const struct cmd_entry cmd_incidents_entry;

/* A command made of subcommands (`wsrelay silence add|list|expire`): the
 * word after its name picks one of its rows, each named "NAME WORD", which
 * is then dispatched as a command of its own (its options, its --help). */
struct cmd_group {
    const char *name;
    const char *summary;                 /* one line, lower case, no full stop */
    const struct cmd_entry *const *subs; /* NULL-terminated */
};

extern const struct cmd_group cmd_silence_group;

/* The subcommand of `grp` that `word` names ("add" for "silence add");
 * NULL when none does. */
const struct cmd_entry *cmd_group_sub(const struct cmd_group *grp, const char *word);

/* Appends "WORD|WORD|... [ARGS]" of `grp` (what follows its name in
 * wsrelay's list of commands and in the first line of its --help). */
void cmd_group_synopsis(struct buf *out, const struct cmd_group *grp);

/* Writes the usage line of each subcommand of `grp`, as a command says
 * it after a usage error. */
void cmd_group_usage(FILE *out, const struct cmd_group *grp);

/* Writes `wsrelay NAME --help` of a group: its usage line and summary,
 * then each subcommand's usage line, summary and options, then the
 * global ones. */
void cmd_group_help(FILE *out, const struct cmd_group *grp);

/* The global options: -c FILE, -v, -q, accepted before the command and
 * after it (ids CMD_OPT_CONFIG, CMD_OPT_DEBUG, CMD_OPT_QUIET). */
enum { CMD_OPT_CONFIG = 1, CMD_OPT_DEBUG, CMD_OPT_QUIET };
extern const struct opt_spec cmd_global_opts[];

/* Applies global option `f` (a row of cmd_global_opts) to *g and the log
 * level. */
void cmd_global_apply(struct cmd_globals *g, const struct opt_found *f);

/* Writes "usage: wsrelay NAME OPERANDS SYNOPSIS" and a line feed, as a
 * command says it after a usage error. */
void cmd_usage(FILE *out, const struct cmd_entry *c);

/* Writes `wsrelay NAME --help`: the usage line with the global options,
 * the summary, the command's options and the global ones. */
void cmd_help(FILE *out, const struct cmd_entry *c);

/* Appends "OPERANDS SYNOPSIS" of `c` (what follows its name in a usage
 * line) to `out`. */
void cmd_synopsis(struct buf *out, const struct cmd_entry *c);

/* Loads the configuration, then, when run as root against a state that is
 * another user's (the service's), becomes that user (state_run_as_owner):
 * root reads what only root may, and writes nothing there as root. -1
 * after logging why. */
int cmd_load_config(struct config **out, const struct cmd_globals *g);

/* The name of the person running the command, for `--by`: $SUDO_USER
 * (the person behind sudo), else the login name of the uid, else "uid N";
 * one line, at most 64 bytes. A new string the caller frees. */
char *cmd_user_name(void);

/* Opens the state locked for a command that changes it (ack, silence),
 * waiting up to CMD_LOCK_WAIT seconds for a run: a state that does not
 * read (corrupt) fails without being moved aside, which the next run
 * does and reports. -1 with the reason in `e`; *out is then NULL. */
#define CMD_LOCK_WAIT 30
struct state;
int cmd_open_state(struct state **out, const struct config *c, struct err *e);

/* Reads a --now: a Unix time, digits only, not negative. -1 otherwise. */
int cmd_parse_time(long long *out, const char *text);

/* ---- the look-ups' options (lookopts.c), shared by current, readings and alerts ---- */

struct lookup_options;

/* Option ids of the look-ups' tables. */
enum {
    LK_ACCOUNT = 1,
    LK_JSON,
    LK_NOW,
    LK_CSV,
    LK_UNIT,
    LK_SINCE,
    LK_FROM,
    LK_TO,
    LK_FORCE,
};

/* Reads the options of look-up `c` into *o and, when `serial` is not
 * NULL, its one operand into *serial. -1 (said) for a usage error. */
int cmd_lookup_options(struct lookup_options *o, const char **serial, const struct cmd_entry *c,
                       const struct opt_args *a);

#endif
