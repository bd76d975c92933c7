/* Look-ups for the people on call: what the platform says of a device
 * right now, outside the relay's routine. `wsrelay current` shows the
 * current readings of every device of an account, `wsrelay readings` a
 * device's readings (its latest, or over a period), `wsrelay alerts` its
 * alert log as the platform keeps it.
 *
 * Each call spends the login ID's budget as the relay's own calls do, so
 * each is recorded in the state's ledger, and the state saved, before it
 * is sent, under the state's lock (a run that starts meanwhile waits for
 * it, then counts the call); what the reply tells of the budget is saved
 * after it. A call that the ledger has no room for is not made, nor one
 * of an operation that the platform blocked. Nothing else in the state
 * changes: an alert-log entry seen here is still delivered by the next
 * run.
 *
 * Every function prints its result on `out` and its messages on stderr
 * ("wsrelay: COMMAND: ..."), and returns an exit code of run.h: RUN_OK;
 * RUN_FAILED when a call failed or was refused for want of budget, or the
 * state could not be read, locked or saved; RUN_USAGE for an unknown
 * account or device, or a serial that is not one. */
#ifndef WSRELAY_LOOKUP_H
#define WSRELAY_LOOKUP_H

#include "config.h"

#include <stdbool.h>
#include <stdio.h>

enum lookup_format {
    LOOKUP_TABLE, /* columns for a terminal, lined up by display width */
    LOOKUP_CSV,   /* RFC 4180: a header line, CRLF line ends (readings only) */
    LOOKUP_JSON,
};

/* A --from or --to: a Unix time, or a date and time on the device's
 * clock, which needs the device's time difference to become one. */
struct lookup_time {
    bool given;
    bool local; /* `t` is the device's local time read as if it were UTC */
    long long t;
};

struct lookup_options {
    const char *account; /* --account NAME: only that account; NULL: every account */
    enum lookup_format format;
    long long now; /* the clock, Unix time: ledger times, ages, --since */
    int lock_wait; /* seconds to wait for a run's lock on the state */
    /* readings */
    char unit;                   /* 'C' or 'F' converts temperatures; 0: as the device has them */
    long since;                  /* --since, seconds; 0: not given */
    struct lookup_time from, to; /* --from and --to */
    /* alerts */
    bool force; /* call even when the ledger has no alert call left (never when blocked) */
};

/* Reads a --from or --to: digits are a Unix time; "YYYY-MM-DD HH:MM" a
 * time on the device's clock. -1 for anything else (a date that does not
 * exist included). */
int lookup_parse_time(struct lookup_time *out, const char *text);

/* `wsrelay current`: one Get Current Readings call per account (or the
 * one named), and a table of its devices: serial, name, model, each
 * channel's value and unit, battery level, signal, and the age of the
 * reading, marked stale when it is older than twice the device's usual
 * interval between readings (the relay's readings memory knows it; no
 * less than 10 minutes), or than 30 minutes when that is not known. An
 * account whose call is refused or fails is reported and the others
 * still shown (exit RUN_FAILED). LOOKUP_JSON: one array of every
 * account's devices. */
int lookup_current(FILE *out, const struct config *c, const struct lookup_options *o);

/* `wsrelay readings SERIAL`: without a period, the device's latest
 * readings (Get Latest Data or its -rtr500 variant, as platform_graph_op
 * picks from the device's base unit); with one (since, from, to), those
 * of the period (Get Data by Period), both ends included. The base unit
 * comes from the configuration's or the state's device list, else from a
 * Get Current Readings call naming the device, which a local --from or
 * --to needs anyway for the device's clock. Readings oldest first, each
 * value as the platform sent it (error values too); a data count below
 * 10% of the hour's is reported on stderr. */
int lookup_readings(FILE *out, const struct config *c, const char *serial,
                    const struct lookup_options *o);

/* `wsrelay alerts SERIAL`: the device's alert log (Get Alert Logs), one
 * line per event, newest first. It spends one of the login ID's alert
 * calls, which the relay's scheduler plans with: it says so on stderr
 * before calling, and is refused when the ledger has no call left, the
 * one kept for urgent looks included (budget.h), unless `force`; never
 * when the platform blocked the operation. The device is found as for
 * lookup_readings. */
int lookup_alerts(FILE *out, const struct config *c, const char *serial,
                  const struct lookup_options *o);

#endif
