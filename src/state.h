/* The state file: what the relay has seen, what it still owes, and what it
 * has spent of the platform's budget.
 *
 * It is a JSON document, PATH (mode 0600), and beside it the fleet file
 * PATH.fleet-N (mode 0600: the device lists and histories, the readings
 * memories and learnt limits, as a base and lines of changes that PATH
 * counts; state/fleetfile.c) and a directory PATH.d (mode 0700) of one
 * small file per device serial (mode 0600); the three are one state and
 * must be backed up and restored together. They hold
 *   - seen keys per device serial: "UNIXTIME/KIND" of every alert-log event
 *     already handled (sent, queued or deliberately skipped), and per serial
 *     the floor below which every entry counts as handled. They live in the
 *     serial's file in PATH.d, which is read only when the serial is first
 *     asked about; PATH keeps, as a journal, those not yet written there
 *     (state_save: PATH first, then the files);
 *   - per account: the time of the last discovery, the device list the
 *     last discovery returned, and a history per device serial (first
 *     known, last poll, last successful poll, refused until) that
 *     discovery never drops;
 *   - the budget ledger per login ID and operation: the times of recent
 *     calls, the last X-RateLimit-* values, and any "blocked until" time;
 *   - the outbox: (event, receiver) pairs not yet delivered, with attempts
 *     and the time of the next try;
 *   - the routing rules' throttles per rule, device serial and kind: when
 *     an event last went through, and how many were held back since;
 *   - counters of events that no receiver got on purpose (dropped by a
 *     rule, held back by a throttle, taken by no rule), for `wsrelay
 *     status`;
 *   - the health of each login ID (beside its ledger) and each receiver:
 *     the last success, the failures since, and the last failure with its
 *     time and message, for `wsrelay status`;
 *   - self-monitoring (selfcheck.h): each open condition of wsrelay's own
 *     health, the time of the last relay event, the heartbeat's health;
 *   - per device serial, what its current readings were lately (readings_memory.h)
 *     and the limits its alert texts taught; per login ID, the alert calls
 *     a signal asked for and since when signals wait for the budget;
 *   - silences for planned work (`wsrelay silence`): which devices and
 *     channels page nobody, until when, why and on whose word.
 * No secret is ever written to it.
 *
 * state_open takes an exclusive lock (a `PATH.lock` file beside it, which
 * covers the fleet file and PATH.d too) that it keeps until state_close, so two overlapping
 * runs never both poll or send. state_save replaces the file atomically;
 * after a crash the file is either the old or the new one, and a seen key
 * is in the file or in its device's file, or both. state_peek reads it
 * without the lock, for `wsrelay status`, which must not wait for a run. */
#ifndef WSRELAY_STATE_H
#define WSRELAY_STATE_H

#include "event.h"
#include "incident.h"
#include "platform.h"
#include "util/err.h"
#include "readings_memory.h"

#include <stdbool.h>
#include <stddef.h>

struct state;

/* When this process runs as root and the directory of the state file
 * `path` belongs to another user (the service's), becomes that user: its
 * groups, its group and its uid, for good. Call it before anything opens or
 * writes the state, so that no file there becomes root's. Does nothing for
 * another user, or for a directory that is root's; -1 with the reason in
 * `e` when the change fails (then nothing was opened). */
int state_run_as_owner(const char *path, struct err *e);

/* When `file` (the lock or another file of the state `path`) belongs to
 * another user than the one this process runs as: "FILE is owned by root,
 * and wsrelay runs as wsrelay; run: chown -R wsrelay: PATH*", as a new
 * string the caller frees. NULL when it is this user's or cannot be
 * looked at. */
char *state_owner_fix(const char *path, const char *file);

/* Locks and loads `path`; a missing file is an empty state. Waits up to
 * `lock_wait` seconds for another run's lock, then fails naming the pid
 * that holds it. A file that was read but is corrupt (not JSON, fails the
 * checks, or has a newer "version") is moved aside (state_set_aside says
 * where), logged as an error, and the state starts empty (its fleet files
 * go aside with it, to PATH.fleet-N.corrupt-…, and PATH.d to
 * PATH.d.corrupt-YYYYmmddTHHMMSSZ: its device files mark seen what the
 * lost outbox held); it is not saved until state_save. With no PATH at
 * all, fleet files and a PATH.d left beside it are moved aside the same
 * way (PATH.fleet-N.orphan-…), with a warning. A fleet file that is
 * missing, shorter than the state file counts or damaged costs what it
 * held only (device lists and histories, readings memories, learnt
 * limits: polling relearns them), with a warning naming it; the rest of
 * the state is kept, and the next save writes a new fleet file. Fails on a state file or
 * fleet file that cannot be read (permissions, not a regular file), a
 * state file with a member written twice (named, and left as it is: which
 * copy is right cannot be known, and a person must remove one), one
 * that cannot be moved aside,
 * when the directory is not writable (checked now, before anything is
 * sent), and when PATH.d exists but is a symbolic link (never followed)
 * or not a directory. A device file is read later, when its serial is
 * first asked about; one that is corrupt is then moved aside in PATH.d
 * (NAME.json.corrupt-YYYYmmddTHHMMSSZ) with a warning, and its serial
 * keeps the journal's keys and counts every entry up to its high-water
 * mark in the state file as seen (state/seen.c says what that costs). On
 * success *out belongs to the caller (state_close). */
int state_open(struct state **out, const char *path, int lock_wait, struct err *e);

/* Loads `path` for reading only, without taking the lock or waiting for
 * it: a run may hold it for as long as it likes. Every save replaces the
 * file by a rename, so what is read is one complete save (with the part
 * of the fleet file it counts; read again when a save removed that
 * generation meanwhile); device files
 * are read when needed, never written or moved (a corrupt one is warned
 * about and read as empty). A missing file is an empty state. Fails like
 * state_open on an unreadable or corrupt file and on PATH.d; does not
 * check that the directory is writable. The state can be changed in
 * memory but never saved: state_save and state_save_budget fail. On
 * success *out belongs to the caller (state_close). */
int state_peek(struct state **out, const char *path, struct err *e);

/* Writes the fleet file first (the entries changed, appended and synced,
 * or a new generation written whole; nothing when no entry changed), then
 * the state file atomically (temp file, fsync, rename, fsync dir), which
 * is when the save takes effect; a save that would write the file's text
 * writes nothing. Then writes the
 * device files whose seen keys changed the same way (one fsync of PATH.d
 * for them all; PATH.d is created when missing) and only after that drops
 * their keys from the journal, so that the next save's file no longer
 * holds them. The incidents' timeline lines noted since the last save go
 * to the incident log after the state file is written (state/incidentlog.h),
 * and the file is then written once more without them. Returns 0 when all is written; -1 when the
 * state file could not be (the previous file is intact); STATE_SAVED_BEHIND when the state file is
 * written but a device file could not be (the error in `e` names it): its keys stay in the journal,
 * which the written state file holds, so nothing is lost or repeated and the next save tries again.
 * Fails for a state of state_peek. The file is kept under a size limit (32 MiB; half of what
 * state_open reads, so a saved state always loads again): when it would be larger, the oldest
 * outbox items are given up first, whatever their receiver, and state_take_trimmed tells which. */
#define STATE_SAVED_BEHIND 1
int state_save(struct state *s, struct err *e);

/* What saves gave up to stay under the size limit since the last call:
 * per receiver, how many outbox items. The caller owns the array
 * (state_trimmed_free); NULL with *n = 0 when nothing was. */
struct state_trim {
    char *receiver;
    size_t count;
};
struct state_trim *state_take_trimmed(struct state *s, size_t *n);
void state_trimmed_free(struct state_trim *t, size_t n);

/* Sets the size limit of state_save to `max` bytes (for tests). */
void state_set_max_bytes(struct state *s, size_t max);

/* For a dry run: writes only the `logins` section (the budget ledger,
 * and each login ID's health: a dry run's platform calls are real) of the
 * state in memory to the file, leaving everything else in the file as it
 * is on disk. Reads the file again (the lock is still held), replaces its
 * `logins` with a copy of the one in memory and writes it atomically as
 * state_save does; a missing file becomes a new state holding just that.
 * Seen keys, devices, outbox, throttles, counters and receivers' health
 * changed in memory never reach the disk this way; no device file is
 * written. Fails without writing
 * when the file on disk cannot be read, parsed or checked, when the write
 * fails (the previous file is then intact), and for a state of
 * state_peek. */
int state_save_budget(struct state *s, struct err *e);

/* After a state_open that found the file corrupt (not JSON, failing the
 * checks, or written by a newer wsrelay): the path the file was moved to
 * (PATH.corrupt-YYYYmmddTHHMMSSZ, UTC, mode 0600), and in *why (may be
 * NULL) what was wrong with it; NULL when the file was fine. Both belong
 * to the state. */
const char *state_set_aside(const struct state *s, const char **why);

/* Releases the lock (if held) and frees; NULL is fine. Does not save. */
void state_close(struct state *s);

/* --- seen keys -------------------------------------------------------- */

/* Whether the key was marked seen (in the journal or the serial's file,
 * which the first question about a serial reads). */
bool state_seen(const struct state *s, const char *serial, long long unixtime, const char *kind);

/* Marks the key seen, in the journal: the next state_save writes it to
 * the state file, then to the serial's file. Raises the serial's mark in
 * the state file (its newest unixtime handled, but never above the run's
 * clock plus an hour: a device clock set ahead must not make its real
 * alarms count as handled), which stands in for its file if that is
 * lost. */
void state_mark_seen(struct state *s, const char *serial, long long unixtime, const char *kind);

/* Forgets the keys of `serial` older than `before`: entries that have left
 * the device's 20-entry log can never come back, so this bounds the file.
 * Raises the serial's floor (state_seen_floor) to `before`; never lowers
 * it. */
void state_prune_seen(struct state *s, const char *serial, long long before);

/* The high-water mark of what was handled for `serial`: every entry older
 * than it had left the device's log (or was about to) when its keys were
 * pruned, so an entry below it is one already handled, even though its key
 * is gone. A lagging copy of the platform serving an older page of the
 * log must not bring such entries back. 0 when nothing was pruned yet.
 * A serial whose file was lost (corrupt) has a floor just above its mark:
 * every entry up to the newest one handled counts as seen. */
long long state_seen_floor(const struct state *s, const char *serial);

/* Number of seen keys kept for `serial` (the journal's and the file's,
 * each counted once). */
size_t state_seen_count(const struct state *s, const char *serial);

/* False when `serial`'s device file exists but could not be read (not a
 * regular file, permissions, an I/O error; logged once when first asked):
 * its keys and floor are unknown, so a poll of the device could take old
 * entries for new ones. True otherwise, a missing or corrupt (moved
 * aside) file included. Reads the file on first use. */
bool state_seen_known(const struct state *s, const char *serial);

/* --- devices ---------------------------------------------------------- */

/* A device as the account's last discovery listed it (serial, base, model,
 * name, group), joined with what wsrelay has done with it (the times). The
 * times live in a per-serial history that discovery never drops: a device
 * that is missing from one discovery and listed again by the next keeps
 * them. */
struct state_device {
    char *serial;
    char *base;
    char *model;             /* "" when unknown */
    char *name;              /* "" when unknown */
    char *group;             /* the device's group name; "" when none or unknown */
    long long first_known;   /* when wsrelay first knew the device: the first
                                state_set_devices or state_device_polled naming
                                it; 0: not yet. Later calls never move it (only
                                state_clamp_clock lowers one in the future) */
    long long last_poll;     /* last poll, successful or not; 0: never */
    long long last_ok;       /* last successful poll; 0: never (catch_up still applies) */
    long long refused_until; /* the platform's alert operation refused this
                                device until then; 0: not refused */
    long refusals;           /* refusals in a row (state_device_refused); a
                                successful poll sets it back to 0 */
};

/* Time of the account's last successful discovery (state_set_discovered);
 * 0 if never. */
long long state_discovered_at(const struct state *s, const char *account);

/* Records `now` as the account's discovery time. */
void state_set_discovered(struct state *s, const char *account, long long now);

/* Replaces the account's device list (serial, base, model, name and group;
 * a NULL one of these but the serial is "") with `devs`; entries without a
 * serial are skipped. The history of a serial already known is kept and
 * the caller's times for it are ignored (except that a first_known of 0
 * becomes `now`); a new serial gets a history with first_known = `now` and
 * last_poll, last_ok and refused_until from the caller. Then drops the
 * history of serials that are neither in the list nor named by an outbox
 * item and whose first_known, last_poll and last_ok are all more than 30
 * days before `now`, and the seen mark of such a serial that no other
 * account knows (its device file stays). Does not set the discovery time
 * (state_set_discovered does). */
void state_set_devices(struct state *s, const char *account, const struct state_device *devs,
                       size_t n, long long now);

/* A copy of the account's device list joined with the history (caller
 * frees with state_devices_free); *n is 0 (and NULL comes back) for an
 * unknown account or an empty list. */
struct state_device *state_devices(const struct state *s, const char *account, size_t *n);
void state_devices_free(struct state_device *d, size_t n);

/* Whether `d` is a remote unit: it has a base unit other than itself (a
 * standalone device is its own base unit, or has none). */
bool state_device_remote(const struct state_device *d);

/* For callers that only look: the account's i-th listed device joined with
 * its history as state_devices gives it, but borrowed (its strings are the
 * state's, valid until the state next changes), and no copy of the list.
 * False, *out zeroed, past the end of the list or for an unknown
 * account. state_device_count is the length of the list. */
bool state_device_at(const struct state *s, const char *account, size_t i,
                     struct state_device *out);
size_t state_device_count(const struct state *s, const char *account);

/* Records a poll of the device at `now`: last_poll, last_ok too when `ok`
 * (its alert log was received and processed, which also clears the count
 * of refusals), and first_known when it had none. A device missing from the list is added to it
 * with `base` and an empty model, name and group; a listed one takes `base` (NULL: unchanged). */
void state_device_polled(struct state *s, const char *account, const char *serial, const char *base,
                         long long now, bool ok);

/* The alert operation refused the device: do not ask again before `until`
 * (0 clears it); `refusals` is how many times in a row it has now been
 * refused (0 forgets the count). Neither lists the device nor sets
 * first_known. */
void state_device_refused(struct state *s, const char *account, const char *serial, long long until,
                          long refusals);

/* --- budget ledger (per login ID and operation) ----------------------- */

/* Records one call at `now`. Call it before the request is sent: a call
 * counts from the moment it is sent, whatever becomes of it. Times older
 * than two hours (twice the longest span) are dropped. */
void state_record_call(struct state *s, const char *login, enum platform_op op, long long now);

/* Calls recorded at `since` or later: pass now - span. A call stamped
 * after now (the clock went back) counts as well; state_clamp_clock at the
 * start of a run makes such a call one made now, so that it counts for one
 * more full span and then expires. */
size_t state_calls_since(const struct state *s, const char *login, enum platform_op op,
                         long long since);

/* The oldest recorded call at `since` or later (when the budget of the
 * span starting at `since` frees up again); 0 if none. */
long long state_oldest_call_since(const struct state *s, const char *login, enum platform_op op,
                                  long long since);

/* Time of the most recent recorded call; 0 if none. */
long long state_last_call(const struct state *s, const char *login, enum platform_op op);

/* The operation may not be called before `until` (after a 429 or
 * X-RateLimit-Remaining: 0). */
void state_block(struct state *s, const char *login, enum platform_op op, long long until);
long long state_blocked_until(const struct state *s, const char *login, enum platform_op op);

/* Remembers the last rate-limit headers seen, with their time. Values
 * without `present` (the headers were missing) are not stored. */
void state_set_ratelimit(struct state *s, const char *login, enum platform_op op,
                         const struct ratelimit *rl, long long now);

/* The last rate-limit headers stored by state_set_ratelimit, in *out, and
 * when they were seen, in *at (may be NULL). False (and *out zeroed, *at 0)
 * when none were stored. */
bool state_ratelimit(const struct state *s, const char *login, enum platform_op op,
                     struct ratelimit *out, long long *at);

/* --- a clock that jumped ---------------------------------------------- */

/* Call at the start of each run. When the clock went back, times stamped
 * in the future would block polling until the real clock caught up with
 * them. Instead, a call stamped in the future is treated as made now: it
 * still counts for a full span, then expires. Likewise:
 *   - ledger: call times, and the time of the stored rate-limit headers,
 *     above `now` become `now`; blocked_until above now + max_block
 *     becomes now + max_block (max_block < 0 counts as 0);
 *   - devices: discovered_at, first_known, last_poll and last_ok above
 *     `now` become `now`; refused_until above now + 1 day becomes now +
 *     1 day;
 *   - outbox: queued_at above `now` becomes `now`; next_try above now +
 *     1 h (the longest backoff) becomes now + 1 h;
 *   - throttles: last_sent and held_since above `now` become `now`;
 *   - health of logins and receivers: last_ok and error_at above `now`
 *     become `now`;
 *   - self-monitoring: the last relay time, the heartbeat's last_ok and
 *     error_at, and a condition's since and opened above `now` become
 *     `now`; retry_at above now + 1 h becomes now + 1 h;
 *   - readings memory: seen, pending_since and pending_at above `now`
 *     become `now`; recheck_at above now + 1 h becomes now + 1 h;
 *   - signal calls: starved_since above `now` becomes `now`;
 *   - seen marks: a mark above now + 1 h becomes now + 1 h (an entry is
 *     never taken to raise one further, whatever its date);
 *   - silences: a `from` above `now` becomes `now` (the silence starts at
 *     once; its `until` stays).
 * Times at or below those bounds are left as they are. */
void state_clamp_clock(struct state *s, long long now, long max_block);

/* --- outbox ----------------------------------------------------------- */

struct outbox_item {
    unsigned long long id; /* stable within the state file */
    char *receiver;
    struct event event;
    int attempts; /* failed deliveries so far */
    long long queued_at;
    long long next_try; /* not before this time */
    char *last_error;   /* NULL until a delivery fails */
};

/* Queues `ev` for `receiver`, due at once. The state keeps its own copy. */
void state_enqueue(struct state *s, const char *receiver, const struct event *ev, long long now);

/* A copy of the items of `receiver` due at `now` (next_try <= now), oldest
 * first; caller frees with state_outbox_free. */
struct outbox_item *state_outbox_due(const struct state *s, const char *receiver, long long now,
                                     size_t *n);

/* Number of items queued for `receiver` (NULL: for all receivers). */
size_t state_outbox_count(const struct state *s, const char *receiver);

/* What waits for one receiver, at a glance. */
struct outbox_summary {
    size_t count;       /* items queued */
    long long oldest;   /* queued_at of the oldest; 0 when none */
    long long next_try; /* the earliest next try; 0 when none */
};

/* Sums up the items of `receiver` (NULL: of all receivers) in *out. */
void state_outbox_summary(const struct state *s, const char *receiver, struct outbox_summary *out);

void state_outbox_free(struct outbox_item *items, size_t n);

/* The distinct receiver names of the outbox's items, sorted (to warn about
 * items whose receiver is no longer configured). The caller frees each
 * string and the array; NULL with *n = 0 for an empty outbox. */
char **state_outbox_receivers(const struct state *s, size_t *n);

/* The item was delivered: removes it. */
void state_outbox_done(struct state *s, unsigned long long id);

/* The delivery failed: counts the attempt, keeps `error` (no secrets) and
 * sets the next try to now + backoff (1 min doubling, at most 1 h). */
void state_outbox_failed(struct state *s, unsigned long long id, const char *error, long long now);

/* Replaces the item's event with `ev` (copied): the same event, with
 * something learnt since it was queued (its trend). Nothing when no item
 * has that id. */
void state_outbox_set_event(struct state *s, unsigned long long id, const struct event *ev);

/* The far end asked for a pause (Retry-After): the item is not tried
 * before `until`. Never brings a later next try forward. */
void state_outbox_not_before(struct state *s, unsigned long long id, long long until);

/* --- throttles (per rule, device and kind) ---------------------------- */

/* What a routing rule's throttle remembers of one device and kind. */
struct throttle_entry {
    long long last_sent;  /* unixtime of the event last let through; 0: never */
    long held;            /* events held back since then */
    long long held_since; /* unixtime of the first of those; 0 when held is 0 */
};

/* The entry of rule+serial+kind in *out; false (and *out zeroed) when there
 * is none. */
bool state_throttle(const struct state *s, const char *rule, const char *serial, const char *kind,
                    struct throttle_entry *out);

/* Creates or replaces the entry of rule+serial+kind with a copy of `*t`
 * (a negative `held` is taken as 0). */
void state_set_throttle(struct state *s, const char *rule, const char *serial, const char *kind,
                        const struct throttle_entry *t);

/* Drops the entries whose last_sent and held_since are both before
 * `before` (callers pass now - 30 days), which bounds the file; returns
 * how many were dropped. A dropped entry is as if there had never been
 * one. */
size_t state_prune_throttles(struct state *s, long long before);

/* --- health of logins and receivers --------------------------------- */

/* How the calls of a login ID, or the deliveries to a receiver, have gone
 * lately. */
struct state_health {
    long long last_ok;  /* the last success; 0: never */
    long failures;      /* failures since the last success (or since the
                           start when none); 0: the last attempt succeeded */
    long long error_at; /* the last failure; 0: never */
    long status;        /* its HTTP status; 0 when no HTTP answer came, and
                           for receivers */
    char *error;        /* its message; NULL when none failed yet */
};

/* Records the outcome of one platform call made as `login` at `now`: a
 * success sets last_ok and clears the failures; a failure counts one and
 * keeps `status` and `message` (no secret; cut to 300 bytes at a character
 * boundary, control characters become spaces, bytes that are not UTF-8
 * '?'). Lives in the `logins` section, so state_save_budget saves it too. */
void state_login_result(struct state *s, const char *login, bool ok, long status,
                        const char *message, long long now);

/* Likewise for one delivery attempt to `receiver` (`error` is NULL on
 * success). */
void state_receiver_result(struct state *s, const char *receiver, bool ok, const char *error,
                           long long now);

/* The health of `login` or `receiver` in *out (its `error` belongs to the
 * caller: state_health_clear). False, and *out zeroed, when nothing was
 * recorded. */
bool state_login_health(const struct state *s, const char *login, struct state_health *out);
bool state_receiver_health(const struct state *s, const char *receiver, struct state_health *out);

/* Frees what *h holds and zeroes it; NULL is fine. */
void state_health_clear(struct state_health *h);

/* --- self-monitoring (selfcheck.h) ------------------------------------ */

/* One condition of wsrelay's own health, keyed "WHAT/SUBJECT"
 * ("login-refused/tbzz9999", "receiver-failing/hook"). */
struct state_condition {
    long long since;    /* when the symptom was first seen */
    long long opened;   /* when its relay event was made; 0: not (yet) reported */
    long long retry_at; /* login-refused: no call of the login before then; else 0 */
    char *creds;        /* login-refused: hex SHA-256 of the login's credentials when
                           refused (never the credentials); else NULL */
};

/* The condition `key` in *out (its creds belong to the caller:
 * state_condition_clear); false, and *out zeroed, when there is none. */
bool state_condition(const struct state *s, const char *key, struct state_condition *out);

/* Creates or replaces condition `key` with a copy of *c. */
void state_set_condition(struct state *s, const char *key, const struct state_condition *c);

/* Forgets condition `key` (nothing happens when there is none). */
void state_drop_condition(struct state *s, const char *key);

/* The keys of all conditions, sorted; the caller frees each and the array
 * (NULL with *n = 0 when there are none). */
char **state_condition_keys(const struct state *s, size_t *n);

void state_condition_clear(struct state_condition *c);

/* The unixtime of a new relay event: `now`, or one second after the
 * previous relay event's when that was at or after `now`, so that each
 * relay event's id (wsrelay/UNIXTIME/relay) is unique. Records it. */
long long state_relay_time(struct state *s, long long now);

/* Records the outcome of a heartbeat GET (`status` 0: no HTTP answer);
 * state_heartbeat reads it back like state_login_health. */
void state_heartbeat_result(struct state *s, bool ok, long status, const char *error,
                            long long now);
bool state_heartbeat(const struct state *s, struct state_health *out);

/* --- readings (readings_memory.h) -------------------------------------- */

/* The readings memory of `serial` in *out; false, and *out zeroed, when
 * there is none. */
bool state_watch(const struct state *s, const char *serial, struct watch *out);

/* Creates or replaces the readings memory of `serial` with a copy of *w. */
void state_set_watch(struct state *s, const char *serial, const struct watch *w);

/* Forgets the readings memory (and the learnt limits) of serials whose
 * last reading was seen before `before` (callers pass now - 30 days);
 * returns how many serials were forgotten. */
size_t state_prune_watches(struct state *s, long long before);

/* The limits of channel `channel` of `serial` that alert texts taught
 * (state_learn_limit) in *out; false, and *out zeroed, when none. */
bool state_learnt_limit(const struct state *s, const char *serial, int channel,
                        struct watch_limit *out);

/* Records what an alert text said of channel `channel` of `serial`: its
 * upper (`upper` true) or lower limit is `value`. Returns true when that
 * changed what was known. */
bool state_learn_limit(struct state *s, const char *serial, int channel, bool upper, double value);

/* Records an alert call of `login` made at `now` because of a signal
 * (for `wsrelay status`: signal calls against routine ones). Times older
 * than two hours are dropped. */
void state_record_signal_call(struct state *s, const char *login, long long now);

/* Signal calls of `login` at `since` or later. */
size_t state_signal_calls_since(const struct state *s, const char *login, long long since);

/* Since when signals of `login` have been waiting for the budget without
 * a break (0: they are not); state_set_signals_starved sets it (0 clears). */
long long state_signals_starved(const struct state *s, const char *login);
void state_set_signals_starved(struct state *s, const char *login, long long since);

/* How long after a device's last upload the platform of `login` logged
 * its communication error, as the alert log last showed it (seconds; 0:
 * not seen yet): a silence is looked at when that error is there
 * (readings_memory.h, watch_idle); a value over 6 hours in the file (no
 * run learns one) reads as 0. state_set_silence_after sets it. */
long long state_silence_after(const struct state *s, const char *login);
void state_set_silence_after(struct state *s, const char *login, long long seconds);

/* --- outbox limits ---------------------------------------------------- */

/* Removes the items of `receiver` queued before `before`; returns how
 * many. */
size_t state_outbox_expire(struct state *s, const char *receiver, long long before);

/* Removes the oldest items of `receiver` until at most `max` remain;
 * returns how many were removed. */
size_t state_outbox_trim(struct state *s, const char *receiver, size_t max);

/* --- counters --------------------------------------------------------- */

/* Adds `n` to the counter `name` ("dropped", "throttled", "unrouted":
 * events a rule dropped, a throttle held back, no rule or default receiver
 * took). Kept in the state file for `wsrelay status`; a counter stops at
 * the largest (or smallest) value a long long holds. */
void state_count(struct state *s, const char *name, long long n);

/* The counter's value; 0 when never counted. */
long long state_counter(const struct state *s, const char *name);

/* Sets the counter `name` to `value` (for values that are not sums, such
 * as the time of the last good run). */
void state_set_counter(struct state *s, const char *name, long long value);

/* The names of all counters, sorted; the caller frees each and the array
 * (NULL with *n = 0 when there are none). */
char **state_counter_names(const struct state *s, size_t *n);

/* --- incidents (incident.h) -------------------------------------------- */

/* Stores a copy of `inc` as a new incident, giving it the next id
 * (inc->id is set): ids count from 1 and are never given twice while an
 * incident with that id is kept. */
void state_incident_add(struct state *s, struct incident *inc);

/* Replaces the stored incident of inc->id with a copy of `inc`; false when
 * there is none (pruned). */
bool state_incident_put(struct state *s, const struct incident *inc);

/* A copy of the incident `id` in *out (incident_clear), or of the newest
 * incident of `key` (incident_key), whatever its state; false, *out
 * zeroed, when none is kept. */
bool state_incident_get(const struct state *s, unsigned long id, struct incident *out);
bool state_incident_of_key(const struct state *s, const char *key, struct incident *out);

/* Keeps `refs` (an object, taken over) as what receiver `receiver`'s
 * service gave back for incident `id` (incident.h: refs), replacing what
 * it gave before; false (refs freed) when no such incident is kept. */
bool state_incident_set_refs(struct state *s, unsigned long id, const char *receiver,
                             struct json_object *refs);

/* The ids of the incidents kept, oldest first; the caller frees the
 * array (NULL with *n = 0 when there is none). */
unsigned long *state_incident_ids(const struct state *s, size_t *n);

/* Forgets the resolved and closed incidents that ended before `before`
 * (their record is in the incident log); returns how many. Open ones stay. */
size_t state_prune_incidents(struct state *s, long long before);

/* Adds a line to `inc`'s timeline: `line` (taken over; NULL: an empty
 * object) gets at = now, incident, seq (inc->seq counts it: the caller then
 * puts `inc`), what, and the device's account, serial, name, kind and
 * channel unless it has them, and goes to the journal, which state_save
 * appends to the incident log after the state file is written. */
void state_incident_note(struct state *s, struct incident *inc, long long now, const char *what,
                         struct json_object *line);

/* The journal's lines (JSON texts, borrowed until the state next changes)
 * in the order noted; the caller frees the array only. */
const char **state_incident_journal(const struct state *s, size_t *n);

/* Drops the first `n` lines of the journal (they are in the incident log). */
void state_incident_journal_drop(struct state *s, size_t n);
/* --- silences --- */

/* A silence for planned work (a defrost, a cleaning, a calibration): the
 * devices whose serial or name matches `glob`, one channel or all, page
 * nobody from `from` until `until`. Alarms it covers still open incidents
 * (the run records them); what it changes is who is told. */
struct state_silence {
    unsigned long id;      /* short, stable, unique among the state's silences: a counter from 1
                              that never gives an id twice, even after a prune */
    char *glob;            /* glob.h pattern on the device's serial or name */
    int channel;           /* 1..6; 0: every channel and kind of the device */
    long long from, until; /* wsrelay's clock; active while from <= now < until */
    char *reason, *by;     /* why, and on whose word (as stored: at most 300 bytes of
                              valid UTF-8, control characters as spaces) */
};

/* Adds a silence and returns its id (the state's next one). `from` is
 * normally now: one in the future is brought back to now by the next
 * state_clamp_clock, as a clock that jumped back would have left it.
 * `reason` and `by` are stored cut to 300 bytes at a character, made
 * valid UTF-8. Returns 0, adding nothing, when `glob` is not a valid glob
 * (glob_check) or longer than 200 bytes, `channel` is not 0 to 6,
 * `until` is not after `from`, or `reason` or `by` is NULL (the caller
 * says what is wrong, this only keeps the file loadable), and once a
 * billion ids were given. */
unsigned long state_silence_add(struct state *s, const char *glob, int channel, long long from,
                                long long until, const char *reason, const char *by);

/* Ends silence `id` at `now` (its `until` becomes `now`; a silence that
 * had not started yet ends before it starts, its `from` brought to `now`
 * too). False, changing nothing, when there is no such id or it had
 * already ended (until <= now). */
bool state_silence_expire(struct state *s, unsigned long id, long long now);

/* A copy of every silence the state keeps (active, to come, and ended
 * but not yet pruned), by id; the caller frees it with
 * state_silences_free. NULL with *n = 0 when there is none. */
struct state_silence *state_silences(const struct state *s, size_t *n);

/* Frees the array and its strings; NULL is fine. */
void state_silences_free(struct state_silence *v, size_t n);

/* The id of the active silence (at `now`) that covers the device (its
 * serial or name matches the glob; NULL or "" names match nothing) and
 * `channel` (0 asks for a kind without a channel: only a silence of
 * channel 0 covers it); 0: none. When several do, the one that ends last
 * (of those, the lowest id): an incident it silences must wait for it. */
unsigned long state_silence_covering(const struct state *s, const char *serial, const char *name,
                                     int channel, long long now);

/* Whether silence `id` is active at `now` (from <= now < until); false for
 * an unknown id (pruned, or never given). */
bool state_silence_active(const struct state *s, unsigned long id, long long now);

/* How long an ended silence is kept (and listed by `silence list --all`). */
#define STATE_SILENCE_KEEP (7 * 86400LL)

/* Forgets the silences that ended before `before` (until < before), which
 * bounds the file: a run and `wsrelay silence` prune those ended more than
 * STATE_SILENCE_KEEP ago, and `silence list --all` shows the rest. Their ids
 * are never given again. Changes nothing when none ended before it (a
 * save then has nothing to write), but replaces a member that a load
 * found damaged beyond repair (not an object) with an empty one. */
void state_prune_silences(struct state *s, long long before);

#endif
