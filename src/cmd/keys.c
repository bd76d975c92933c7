/* `wsrelay keys`: the reference of every configuration key, or of every
 * rule-file key, from the key rows themselves (config.h). */
#include "cmd/cmd.h"
#include "run/run.h"

#include <stdbool.h>
#include <stdlib.h>

enum { OPT_RULES = 1 };

static const struct opt_spec opts[] = {
    {OPT_RULES, "rules", 0, NULL, 0, "the keys of a rule file instead of the configuration's"},
    {0},
};

static int cmd_keys(const struct cmd_globals *g, const struct opt_args *a)
{
    (void)g;
    bool rules = a->n_found > 0;
    if (a->n_operands > 0) {
        cmd_usage(stderr, &cmd_keys_entry);
        return RUN_USAGE;
    }
    char *text = rules ? config_rules_reference() : config_reference();
    fputs(text, stdout);
    free(text);
    return RUN_OK;
}

const struct cmd_entry cmd_keys_entry = {
    "keys",
    "",
    "list every configuration key (or rule-file key) with its type, default and meaning",
    opts,
    cmd_keys,
};
