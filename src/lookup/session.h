/* The insides of the look-up commands (lookup.h), shared by the files of
 * src/lookup/ and by nobody else: one file per command (current.c,
 * readings.c, alerts.c) on top of a session (session.c), which holds the
 * locked state and the platform clients, lets a call through only when
 * the ledger has room for it, records it before it is sent, and finds the
 * device a serial names; and the bits of output the commands share. */
#ifndef WSRELAY_LOOKUP_SESSION_H
#define WSRELAY_LOOKUP_SESSION_H

#include "config.h"
#include "lookup.h"
#include "platform.h"
#include "state.h"
#include "util/buf.h"
#include "util/table.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

/* One command's use of the state and the platform. */
struct session {
    const struct config *c;
    const struct lookup_options *o;
    const char *cmd;              /* the command's name, for messages */
    struct state *st;             /* locked (state_open) */
    struct platform **clients;    /* per account of c, made when first needed */
    struct platform_multi *multi; /* the calls' connections (tick_call), made when first needed */
};

/* A device to look at: its account, its serial as the account spells it,
 * its base unit, and its clock when a current reading told it. */
struct target {
    const struct account_conf *a;
    char *serial;
    char *base;
    int utc_offset; /* minutes east of UTC, when session_find was asked for the clock */
};

/* Prints "wsrelay: CMD: " and the message on stderr. */
void session_say(const struct session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reads and locks the state for command `cmd` (waiting o->lock_wait
 * seconds for a run). A state that cannot be read as it is (a corrupt
 * one included) fails without being touched: setting it aside and
 * reporting it is a run's job. 0, or -1 after saying why; either way *s
 * must be closed with session_close. */
int session_open(struct session *s, const struct config *c, const struct lookup_options *o,
                 const char *cmd);

/* Frees the clients and releases the state (saved by every call already). */
void session_close(struct session *s);

/* The accounts to look in, --account's or all, *n of them; NULL (said)
 * when --account names none. */
const struct account_conf *session_accounts(const struct session *s, size_t *n);

/* Whether the login of `a` may call `op` now by the ledger: no block, and
 * room in the window (for the alert operation, scheduler_urgent: the call
 * kept for urgent looks counts). `force` passes a full window, never a
 * block. Says why not. */
bool session_may_call(const struct session *s, const struct account_conf *a, enum platform_op op,
                      bool force);

/* Makes one call of `op` for account `a`: `q` says what it asks (for the
 * current readings q->serial alone or nothing; for the alert log serial
 * and base; for the graph-data operations all of it). The call is
 * recorded in the ledger and the state saved before it is sent; nothing
 * is sent when that save fails. What the reply tells of the budget is
 * saved after it. 0 on success; -1 after saying what failed, with the
 * reply in `r` (zeroed by the caller, released with platform_reply_free). */
int session_call(struct session *s, const struct account_conf *a, enum platform_op op,
                 const struct platform_query *q, struct platform_reply *r);

/* Finds the device `serial` names in the accounts to look in: the
 * configuration's `devices:` and the state's device list first, else
 * (and when `need_clock`, for its time difference) a Get Current Readings
 * call naming it. RUN_OK with *t filled (release with target_clear);
 * RUN_USAGE (said) for a serial that is not one or that no account has;
 * RUN_FAILED (said) when a call was refused or failed. */
int session_find(struct session *s, const char *serial, bool need_clock, struct target *t);

void target_clear(struct target *t);

/* ---- output ---- */

/* "YYYY-MM-DD HH:MM:SS" of `t` on a clock `offset` minutes east of UTC. */
void lookup_local_time(char *out, size_t size, long long t, int offset);

/* "UTC+09:00" for an offset of 540 minutes. */
void lookup_offset_name(char *out, size_t size, int offset);

/* "-18.5 °C" for a number and a unit; an error value, or a value without
 * a unit, as it came. The caller frees it. */
char *lookup_with_unit(const char *value, const char *unit);

/* "SERIAL NAME (MODEL)" appended to `b`, without what is "". */
void lookup_device_title(struct buf *b, const char *serial, const char *name, const char *model);

/* Adds the row of `n` cells that the caller allocated to `t`, frees the
 * cells and sets them to NULL for the next row. */
void lookup_add_row(struct table *t, char **row, size_t n);

/* A JSON string of `s` ("" for NULL). */
struct json_object *lookup_jstr(const char *s);

/* Appends `o` as indented JSON and a line feed to `b`. */
void lookup_put_json(struct buf *b, struct json_object *o);

/* Writes `b` to `out`: RUN_OK, or RUN_FAILED (said) when that fails. */
int lookup_emit(const struct session *s, FILE *out, const struct buf *b);

#endif
