/* What the commands share (cmd.h): the global options, the usage line and
 * --help of a row, reading the configuration, opening the state, the
 * name of whoever runs the command. */
#include "cmd/cmd.h"

#include "state.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct opt_spec cmd_global_opts[] = {
    {CMD_OPT_CONFIG, NULL, 'c', "FILE", 0,
     "configuration file (default $WSRELAY_CONFIG, else " CONFIG_DEFAULT_PATH ")"},
    {CMD_OPT_DEBUG, NULL, 'v', NULL, 0, "show debug lines too"},
    {CMD_OPT_QUIET, NULL, 'q', NULL, OPT_OR, "show only warnings and errors"},
    {0},
};

void cmd_global_apply(struct cmd_globals *g, const struct opt_found *f)
{
    switch (f->spec->id) {
    case CMD_OPT_CONFIG:
        g->config_path = f->value;
        break;
    case CMD_OPT_DEBUG:
        log_set_level(LOG_DEBUG);
        break;
    case CMD_OPT_QUIET:
        log_set_level(LOG_WARN);
        break;
    }
}

void cmd_synopsis(struct buf *out, const struct cmd_entry *c)
{
    buf_puts(out, c->operands);
    if (*c->operands && c->opts[0].id)
        buf_puts(out, " ");
    opt_synopsis(out, c->opts);
}

void cmd_usage(FILE *out, const struct cmd_entry *c)
{
    struct buf syn;
    buf_init(&syn, 0);
    cmd_synopsis(&syn, c);
    fprintf(out, "usage: wsrelay %s%s%s\n", c->name, syn.len ? " " : "", buf_str(&syn));
    buf_free(&syn);
}

/* The usage line with the global options, the summary and the options of
 * command `c`. */
static void help_of(FILE *out, const struct cmd_entry *c, const char *globals)
{
    struct buf syn;
    buf_init(&syn, 0);
    cmd_synopsis(&syn, c);
    fprintf(out, "usage: wsrelay %s %s%s%s\n  %s\n", globals, c->name, syn.len ? " " : "",
            buf_str(&syn), c->summary);
    if (c->opts[0].id) {
        fprintf(out, "\nOptions:\n");
        opt_help(out, c->opts, 22);
    }
    buf_free(&syn);
}

void cmd_help(FILE *out, const struct cmd_entry *c)
{
    struct buf globals;
    buf_init(&globals, 0);
    opt_synopsis(&globals, cmd_global_opts);
    help_of(out, c, buf_str(&globals));
    fprintf(out, "\nGlobal options, before or after the command:\n");
    opt_help(out, cmd_global_opts, 22);
    buf_free(&globals);
}

const struct cmd_entry *cmd_group_sub(const struct cmd_group *grp, const char *word)
{
    size_t len = strlen(grp->name);
    for (size_t i = 0; grp->subs[i]; i++) {
        const char *name = grp->subs[i]->name;
        if (strncmp(name, grp->name, len) == 0 && name[len] == ' ' &&
            strcmp(name + len + 1, word) == 0)
            return grp->subs[i];
    }
    return NULL;
}

void cmd_group_synopsis(struct buf *out, const struct cmd_group *grp)
{
    size_t len = strlen(grp->name);
    for (size_t i = 0; grp->subs[i]; i++)
        buf_printf(out, "%s%s", i ? "|" : "", grp->subs[i]->name + len + 1);
    buf_puts(out, " [ARGS]");
}

void cmd_group_usage(FILE *out, const struct cmd_group *grp)
{
    struct buf syn;
    buf_init(&syn, 0);
    for (size_t i = 0; grp->subs[i]; i++) {
        buf_reset(&syn);
        cmd_synopsis(&syn, grp->subs[i]);
        fprintf(out, "%s wsrelay %s%s%s\n", i ? "      " : "usage:", grp->subs[i]->name,
                syn.len ? " " : "", buf_str(&syn));
    }
    buf_free(&syn);
}

void cmd_group_help(FILE *out, const struct cmd_group *grp)
{
    struct buf globals;
    buf_init(&globals, 0);
    opt_synopsis(&globals, cmd_global_opts);
    struct buf syn;
    buf_init(&syn, 0);
    cmd_group_synopsis(&syn, grp);
    fprintf(out, "usage: wsrelay %s %s %s\n  %s\n", buf_str(&globals), grp->name, buf_str(&syn),
            grp->summary);
    buf_free(&syn);
    for (size_t i = 0; grp->subs[i]; i++) {
        fputs("\n", out);
        help_of(out, grp->subs[i], buf_str(&globals));
    }
    fprintf(out, "\nGlobal options, before or after the command:\n");
    opt_help(out, cmd_global_opts, 22);
    buf_free(&globals);
}

int cmd_load_config(struct config **out, const struct cmd_globals *g)
{
    struct err e;
    if (config_load(out, g->config_path, &e) < 0) {
        log_plain(LOG_ERROR, "%s", e.msg);
        return -1;
    }
    if (state_run_as_owner((*out)->state_file, &e) < 0) {
        log_plain(LOG_ERROR, "%s", e.msg);
        config_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int cmd_parse_time(long long *out, const char *text)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

char *cmd_user_name(void)
{
    const char *sudo = getenv("SUDO_USER");
    if (sudo && *sudo)
        return utf8_clean(sudo, strlen(sudo), 64, UTF8_CONTROLS_NONE);
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_name && *pw->pw_name)
        return utf8_clean(pw->pw_name, strlen(pw->pw_name), 64, UTF8_CONTROLS_NONE);
    return xasprintf("uid %u", (unsigned)getuid());
}

int cmd_open_state(struct state **out, const struct config *c, struct err *e)
{
    struct state *peek = NULL;
    int rc = -1;
    *out = NULL;
    /* state_open would set a corrupt state aside, and the run that
     * reports that (selfcheck.h) would never know: leave it to the run. */
    if (state_peek(&peek, c->state_file, e) == 0 &&
        state_open(out, c->state_file, CMD_LOCK_WAIT, e) == 0)
        rc = 0;
    state_close(peek);
    return rc;
}
