/* Command-line options as rows of a table: each command (cmd.h) and
 * wsrelay itself describe their options once, and the parsing, the
 * synopsis of a usage line and the option list of --help all come from
 * those rows. */
#ifndef WSRELAY_CMD_OPT_H
#define WSRELAY_CMD_OPT_H

#include "util/buf.h"
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How a row shows in a synopsis; by default "[--name ARG]" on its own. */
enum opt_usage {
    OPT_MUST = 1 << 0,  /* required: no brackets ("--template FILE") */
    OPT_OR = 1 << 1,    /* an alternative to the row before, in its brackets ("[--csv | --json]") */
    OPT_AND = 1 << 2,   /* goes with the row before, in its brackets ("--from TIME --to TIME") */
    OPT_UNDER = 1 << 3, /* needs the row before, nested in its brackets ("[--loop [--interval]]") */
    OPT_MANY = 1 << 4,  /* may be repeated: "..." after its brackets */
};

/* One option. A table is an array of rows that ends with a row whose id
 * is 0. */
struct opt_spec {
    int id;           /* what a parse reports for it (not 0); the command's own numbering */
    const char *name; /* the long name, without "--"; NULL: none */
    char letter;      /* the short name, without "-"; 0: none */
    const char *arg;  /* the value's name in usage and help ("UNIXTIME"); NULL: takes none */
    unsigned usage;   /* enum opt_usage flags */
    const char *help; /* one line, lower case, no full stop */
};

/* One option found on a command line, in the order given. */
struct opt_found {
    const struct opt_spec *spec;
    const char *value; /* borrowed from argv; NULL for an option without one */
};

/* What opt_parse found: options in the order given, then operands. */
struct opt_args {
    struct opt_found *found;
    size_t n_found;
    char **operands; /* borrowed from argv */
    size_t n_operands;
};

enum opt_mode {
    OPT_PERMUTE,  /* options and operands mixed, as a command takes them */
    OPT_TO_FIRST, /* options up to the first operand, which starts the operands */
};

/* Reads argv[0..argc) against the tables of `tables` (NULL-terminated),
 * the way getopt_long reads: "--name VALUE", "--name=VALUE", a long name
 * abbreviated to any prefix that names one option only, "-x VALUE",
 * "-xVALUE", letters together ("-vq"), "--" ending the options, "-"
 * alone an operand. *out is filled in order (the caller frees it with
 * opt_args_free, also after a failure, when it holds the options found
 * before the mistake). Returns 0, or -1 with `e` saying what is wrong
 * ("unknown option '--x'", "option '--now' needs a value"). */
int opt_parse(struct opt_args *out, const struct opt_spec *const *tables, int argc, char **argv,
              enum opt_mode mode, struct err *e);

void opt_args_free(struct opt_args *a);

/* Whether row `spec` is one of `table`'s. */
bool opt_in(const struct opt_spec *table, const struct opt_spec *spec);

/* Appends the synopsis of `table` to `out`: "[--now UNIXTIME] [--dry-run]"
 * (the rows' usage flags say how they group); nothing for an empty table. */
void opt_synopsis(struct buf *out, const struct opt_spec *table);

/* Writes one line per row of `table` to `out`: two spaces, "-x, --name
 * ARG" padded to `width` columns, the help; a longer name gets its help
 * on the next line. */
void opt_help(FILE *out, const struct opt_spec *table, int width);

#endif
