/* `wsrelay alerts SERIAL`: a device's alert log as the platform keeps it,
 * for one of the login ID's alert calls (lookup.h, lookup_alerts). */
#include "cmd/cmd.h"
#include "lookup.h"
#include "run/run.h"

static const struct opt_spec opts[] = {
    {LK_ACCOUNT, "account", 0, "NAME", 0, "look for the device in this account only"},
    {LK_FORCE, "force", 0, NULL, 0, "call even when the hour's alert calls are spent"},
    {LK_JSON, "json", 0, NULL, 0, "the entries as JSON"},
    {LK_NOW, "now", 0, "UNIXTIME", 0, "the clock, for the budget"},
    {0},
};

static int cmd_alerts(const struct cmd_globals *g, const struct opt_args *a)
{
    struct lookup_options o;
    struct config *c = NULL;
    const char *serial = NULL;
    int rc = RUN_USAGE;
    if (cmd_lookup_options(&o, &serial, &cmd_alerts_entry, a) < 0 || cmd_load_config(&c, g) < 0)
        goto out;
    rc = lookup_alerts(stdout, c, serial, &o);
out:
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_alerts_entry = {
    "alerts",
    "SERIAL",
    "show a device's alert log as the platform keeps it (one of the login's 12 alert calls "
    "an hour; refused when none is left, unless --force)",
    opts,
    cmd_alerts,
};
