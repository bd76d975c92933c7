/* `wsrelay readings SERIAL`: a device's latest readings, or those of a
 * period, in one graph-data call (lookup.h, lookup_readings). */
#include "cmd/cmd.h"
#include "lookup.h"
#include "run/run.h"

static const struct opt_spec opts[] = {
    {LK_ACCOUNT, "account", 0, "NAME", 0, "look for the device in this account only"},
    {LK_SINCE, "since", 0, "DURATION", 0, "the readings of the last DURATION (2h, 30m)"},
    {LK_FROM, "from", 0, "TIME", OPT_OR,
     "the period's start: a Unix time or YYYY-MM-DD HH:MM on the device's clock"},
    {LK_TO, "to", 0, "TIME", OPT_AND, "the period's end, as --from"},
    {LK_CSV, "csv", 0, NULL, 0, "CSV with a header line (RFC 4180)"},
    {LK_JSON, "json", 0, NULL, OPT_OR, "JSON"},
    {LK_UNIT, "unit", 0, "C|F", 0, "temperatures converted to Celsius or Fahrenheit"},
    {LK_NOW, "now", 0, "UNIXTIME", 0, "the clock, for the budget and --since"},
    {0},
};

static int cmd_readings(const struct cmd_globals *g, const struct opt_args *a)
{
    struct lookup_options o;
    struct config *c = NULL;
    const char *serial = NULL;
    int rc = RUN_USAGE;
    if (cmd_lookup_options(&o, &serial, &cmd_readings_entry, a) < 0 || cmd_load_config(&c, g) < 0)
        goto out;
    rc = lookup_readings(stdout, c, serial, &o);
out:
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_readings_entry = {
    "readings",
    "SERIAL",
    "show a device's latest readings, or those of a period (one graph-data call)",
    opts,
    cmd_readings,
};
