/* The command line: global options, then one command from the table below
 * (one file each in src/cmd/, cmd.h). Exit codes: 0 all went well, 1 a
 * run-time failure that the next run retries (state saved), 2 a usage or
 * configuration error (nothing done). */
#include "cmd/cmd.h"
#include "config.h"
#include "run/run.h"
#include "util/log.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cmd_entry *const commands[] = {
    &cmd_run_entry,           &cmd_check_entry,  &cmd_status_entry,  &cmd_current_entry,
    &cmd_readings_entry,      &cmd_alerts_entry, &cmd_explain_entry, &cmd_keys_entry,
    &cmd_test_receiver_entry, &cmd_render_entry, &cmd_ack_entry,     &cmd_incidents_entry,
};

/* The commands made of subcommands (cmd.h), after the others. */
static const struct cmd_group *const groups[] = {&cmd_silence_group};

/* The options of wsrelay alone, before any command. */
enum { OPT_HELP = CMD_OPT_QUIET + 1, OPT_VERSION };

static const struct opt_spec main_opts[] = {
    {OPT_HELP, "help", 'h', NULL, 0, "show this help"},
    {OPT_VERSION, "version", 0, NULL, 0, "show the version"},
    {0},
};

static void usage(FILE *out)
{
    struct buf syn;
    buf_init(&syn, 0);
    opt_synopsis(&syn, cmd_global_opts);
    fprintf(out,
            "usage: wsrelay %s COMMAND [ARGS]\n\n"
            "Relays the alert logs of T&D WebStorage devices to the people on call.\n\n"
            "Commands:\n",
            buf_str(&syn));
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        buf_reset(&syn);
        cmd_synopsis(&syn, commands[i]);
        fprintf(out, "  %s%s%s\n      %s\n", commands[i]->name, syn.len ? " " : "", buf_str(&syn),
                commands[i]->summary);
    }
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        buf_reset(&syn);
        cmd_group_synopsis(&syn, groups[i]);
        fprintf(out, "  %s %s\n      %s\n", groups[i]->name, buf_str(&syn), groups[i]->summary);
    }
    fprintf(out, "\nOptions:\n");
    opt_help(out, cmd_global_opts, 13);
    opt_help(out, main_opts, 13);
    fprintf(out, "\nExit status: 0 all went well; 1 a failure the next run retries;\n"
                 "2 a usage or configuration error.\n");
    buf_free(&syn);
}

/* Runs command `cmd` on its arguments (argv[0] is its name): its options
 * and the global ones, which may follow it, parsed from its row. */
static int dispatch(struct cmd_globals *g, const struct cmd_entry *cmd, int argc, char **argv)
{
    const struct opt_spec *const tables[] = {cmd->opts, cmd_global_opts, NULL};
    struct opt_args a;
    struct err e;
    int rc = RUN_USAGE;
    /* `wsrelay COMMAND --help` (or -h, before any "--"): the command's row
     * of the table on stdout, exit 0, nothing read or done. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cmd_help(stdout, cmd);
            return RUN_OK;
        }
    }
    if (opt_parse(&a, tables, argc - 1, argv + 1, OPT_PERMUTE, &e) < 0) {
        fprintf(stderr, "wsrelay: %s: %s\n", cmd->name, e.msg);
        cmd_usage(stderr, cmd);
        goto out;
    }
    /* The global options out, in their order; the command sees its own. */
    size_t kept = 0;
    for (size_t i = 0; i < a.n_found; i++) {
        if (opt_in(cmd_global_opts, a.found[i].spec))
            cmd_global_apply(g, &a.found[i]);
        else
            a.found[kept++] = a.found[i];
    }
    a.n_found = kept;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_plain(LOG_ERROR, "cannot initialise libcurl");
        rc = RUN_FAILED;
        goto out;
    }
    rc = cmd->fn(g, &a);
    curl_global_cleanup();
out:
    opt_args_free(&a);
    return rc;
}

/* Runs a subcommand of `grp` on argv (argv[0] is the group's name, argv[1]
 * the subcommand's word); without one, --help shows the group's help and
 * anything else is a usage error. */
static int dispatch_group(struct cmd_globals *g, const struct cmd_group *grp, int argc, char **argv)
{
    const struct cmd_entry *sub = argc > 1 ? cmd_group_sub(grp, argv[1]) : NULL;
    if (sub)
        return dispatch(g, sub, argc - 1, argv + 1);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cmd_group_help(stdout, grp);
            return RUN_OK;
        }
    }
    if (argc > 1)
        fprintf(stderr, "wsrelay: %s: unknown subcommand '%s'\n", grp->name, argv[1]);
    cmd_group_usage(stderr, grp);
    return RUN_USAGE;
}

int main(int argc, char **argv)
{
    const struct opt_spec *const tables[] = {cmd_global_opts, main_opts, NULL};
    struct cmd_globals g = {.config_path = getenv("WSRELAY_CONFIG")};
    struct opt_args a;
    struct err e;
    int rc = RUN_USAGE;
    /* A file size limit (ulimit -f, LimitFSIZE=) below what a save writes
     * must fail that write (EFBIG), which is reported and loses nothing,
     * rather than kill the run by SIGXFSZ with nothing said. */
    signal(SIGXFSZ, SIG_IGN);
    /* The front's mark that it exec'd this program (front.c): a front that
     * finds it knows it was exec'd as wsrelay-net, and nothing run from
     * here inherits it. */
    unsetenv("WSRELAY_FRONT_EXECED");
    if (!g.config_path || !*g.config_path)
        g.config_path = CONFIG_DEFAULT_PATH;
    /* Up to the command; its own options follow it. What was found before
     * a mistake counts, in order: `--help -x` shows the help. */
    int parsed = opt_parse(&a, tables, argc - 1, argv + 1, OPT_TO_FIRST, &e);
    for (size_t i = 0; i < a.n_found; i++) {
        switch (a.found[i].spec->id) {
        case OPT_HELP:
            usage(stdout);
            rc = RUN_OK;
            goto out;
        case OPT_VERSION:
            printf("wsrelay %s\n", WSRELAY_VERSION);
            rc = RUN_OK;
            goto out;
        default:
            cmd_global_apply(&g, &a.found[i]);
        }
    }
    if (parsed < 0) {
        fprintf(stderr, "wsrelay: %s\n", e.msg);
        usage(stderr);
        goto out;
    }
    if (!a.n_operands) {
        usage(stderr);
        goto out;
    }
    const struct cmd_entry *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(a.operands[0], commands[i]->name) == 0)
            cmd = commands[i];
    for (size_t i = 0; !cmd && i < sizeof groups / sizeof groups[0]; i++)
        if (strcmp(a.operands[0], groups[i]->name) == 0) {
            rc = dispatch_group(&g, groups[i], (int)a.n_operands, a.operands);
            fflush(stdout);
            goto out;
        }
    if (!cmd) {
        fprintf(stderr, "wsrelay: unknown command '%s' (try wsrelay --help)\n", a.operands[0]);
        goto out;
    }
    rc = dispatch(&g, cmd, (int)a.n_operands, a.operands);
    fflush(stdout);
out:
    opt_args_free(&a);
    return rc;
}
