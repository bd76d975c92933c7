/* `wsrelay current`: every device's current readings, one Get Current
 * Readings call per account (lookup.h, lookup_current). */
#include "cmd/cmd.h"
#include "lookup.h"
#include "run/run.h"

static const struct opt_spec opts[] = {
    {LK_ACCOUNT, "account", 0, "NAME", 0, "only the devices of this account"},
    {LK_JSON, "json", 0, NULL, 0, "one JSON array of every account's devices"},
    {LK_NOW, "now", 0, "UNIXTIME", 0, "the clock, for the budget and the readings' ages"},
    {0},
};

static int cmd_current(const struct cmd_globals *g, const struct opt_args *a)
{
    struct lookup_options o;
    struct config *c = NULL;
    int rc = RUN_USAGE;
    if (cmd_lookup_options(&o, NULL, &cmd_current_entry, a) < 0 || cmd_load_config(&c, g) < 0)
        goto out;
    rc = lookup_current(stdout, c, &o);
out:
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_current_entry = {
    "current",
    "",
    "show every device's current readings (one current-readings call per account)",
    opts,
    cmd_current,
};
