/* The insides of the state file, shared by the files of src/state/ and by
 * nobody else: the definition of struct state, the json-c helpers every
 * section uses, and the table of sections.
 *
 * In memory most of the state is a json-c tree (objects are hash tables),
 * checked once on load so that every accessor can trust it; the three
 * per-device sections (accounts, watch, limits), the history entries of
 * the fleet file's records and the discovery times are native sections,
 * C structures read and checked by their own files (struct state_native
 * below). Each top-level member of the document is a section, described
 * by one row that the file of that section exports: for a json-c section
 * (struct state_section) the member's name and type, the check a loaded
 * document's member must pass, and what a clock that jumped back must
 * correct in it. statefile.c walks the lists of rows (sections.c) when it
 * loads a file (native sections as the scan meets them, then the others'
 * checks in the list's order, so that a file with several faults always
 * names the same one) and in state_clamp_clock. A new section is one file
 * exporting one row (or a row beside a related one, as floors beside seen)
 * and one entry in sections.c's list.
 *
 * The document (version 1 kept it in one file, one line, with the
 * json-c sections' keys in this order, then accounts, watch and limits;
 * version 2 keeps accounts, watch and limits in the fleet file, below):
 *
 *   {"version":2,"next_id":7,
 *    "seen":{"5214000A":{"1795000000/ch1":1,...},...},
 *    "floors":{"5214000A":1794990000,...},
 *    "marks":{"5214000A":1795000000,...},
 *    "accounts":{"tokyo":{"discovered_at":N,
 *                "devices":[{"serial":S,"base":S,"model":S,"name":S,"group":S},...],
 *                "history":{"5214000A":{"first_known":N,"last_poll":N,"last_ok":N,
 *                                       "refused_until":N,"refusals":N},...}}},
 *    "logins":{"tbzz9999":{"alert":{"calls":[N,...],"blocked_until":N,
 *                                   "ratelimit":{"limit":12,"remaining":3,"reset":3600,"at":N}},
 *                          "current":{...},
 *                          "health":{"last_ok":N,"failures":N,"error_at":N,"status":401,
 *                                    "error":S}}},
 *    "outbox":[{"id":1,"receiver":"ops-hook","event":{...event_to_json...},"attempts":0,
 *               "queued_at":N,"next_try":N,"last_error":null},...],
 *    "throttles":[{"rule":"freezer-critical","serial":"5214000A","kind":"ch1",
 *                  "last_sent":N,"held":12,"held_since":N},...],
 *    "counters":{"dropped":N,"throttled":N,"unrouted":N},
 *    "receivers":{"ops-hook":{"last_ok":N,"failures":N,"error_at":N,"error":S},...},
 *    "self":{"conditions":{"login-refused/tbzz9999":{"since":N,"opened":N,"retry_at":N,
 *                                                    "creds":HEX},...},
 *            "last_relay":N,"heartbeat":{...health...}},
 *    "watch":{"5214000A":{"t":N,"seen":N,"gaps":[N,...],"battery":N,"silent":false,
 *                         "pending":N,"pending_since":N,"pending_after":N,"pending_at":N,
 *                         "recheck_at":N,"told":true,
 *                         "ch":[{"num":1,"error":false,"value":X,"step":X,"history":[X,...],
 *                                "band":N,"zone":N,"at_poll":X|null,"warned_at":N,
 *                                "warned":N,"back":true},...]},...},
 *    "limits":{"5214000A":{"1":{"upper":X,"lower":X},...},...},
 *    "signals":{"tbzz9999":{"calls":[N,...],"starved_since":N}},
 *    "silences":{"next_id":N,"list":[{"id":N,"glob":S,"channel":N,"from":N,"until":N,
 *                                      "reason":S,"by":S},...]},
 *    "fleet":{"generation":G,"length":L},
 *    "discovered":{"tokyo":N,...}}
 *
 * (X: a number, written with at most 10 significant digits.)
 *
 * The state file of version 2 holds every section but accounts, watch and
 * limits, then "fleet", which names the fleet file PATH.fleet-G and the
 * length L of it that counts, and "discovered", each account's discovery
 * time (which wins over the one its entry in the fleet file may still
 * have). The fleet file (fleetfile.c) is lines of JSON objects: the base,
 * {"accounts":{...},"watch":{...},"limits":{...}}, then records of the
 * entries later saves changed, such as {"watch":{"5214000A":{...}}} or
 * {"history":{"tokyo":{"5214000A":{...history...}}}} (history entries
 * alone, of an account whose list did not change); each entry replaces
 * the one before it. A state file without "fleet" (version 1, or a new
 * one) has accounts, watch and limits in itself; its first save moves
 * them to generation 1.
 *
 * "marks" holds each serial's high-water mark, which is never flushed to
 * the device files: the newest unixtime it marked seen, or its floor less
 * one when higher, never above the run's clock plus an hour; a device
 * whose file is lost counts every entry up to it as seen (seen.c). A mark
 * goes with its device's history (30 days unlisted, devices.c). Files
 * written before it lack it: a device's mark is then taken from its file
 * when the file is loaded.
 *
 * "seen" and "floors" are a journal (seen.c): the keys and floor raises
 * not yet written to their device's file. Beside the file, the directory
 * PATH.d (0700) holds one file per serial (0600; the name is the serial
 * with every byte outside [A-Za-z0-9_-] as %XX, then ".json"), one line:
 *
 *   {"serial":"5214000A","floor":1794990000,"seen":{"1795000000/ch1":1,...}}
 *
 * checked on load like its serial's part of "seen" and "floors" (and
 * "serial" must be the file's), members this version does not know kept.
 * A serial's keys are the union of its file's and the journal's, its floor
 * the higher of the two. A file written before the directory existed has
 * every key in the journal, which the first save moves out.
 *
 * The sections live in: seen.c (seen, floors; seenfiles.c the directory
 * of device files), devices.c (accounts),
 * ledger.c (logins, but for each login's health), outbox.c (outbox and
 * next_id: checked as json-c like the others, then kept in C, with a
 * stand-in in the root that writes it in its place), throttles.c,
 * counters.c, health.c (receivers, and the health objects of logins and
 * of the heartbeat), self.c, watchfile.c (watch, limits), signals.c,
 * silences.c;
 * sections.c lists them in order, native.c holds what native sections'
 * readers share (native.h), and statefile.c the rest: version, locking,
 * loading, saving.
 *
 * Every section may be missing (it is then empty). Members this version
 * does not know are kept as they are; members it knows must have the shape
 * above, or the file is reported corrupt rather than guessed at. Files
 * written before the history existed kept last_poll and last_ok in the
 * device list; loading moves them into the history; files written before
 * device groups, throttles or counters existed lack "group" (read as "")
 * and those sections; files written before the health of logins and
 * receivers lack "health" and "receivers" (nothing recorded yet),
 * files written before self-monitoring lack "self", and files of 0.1.0
 * lack "floors" and "refusals" (no floor, no refusal in a row yet),
 * files of 0.2.0 lack "watch", "limits" and "signals" (no reading seen,
 * no limit learnt, no signal call made), files of version 1 lack
 * "fleet" and "discovered" (see above), and files written before silences
 * lack "silences" (none). A "silences" member that fails its check is the
 * one exception to "reported corrupt": it is emptied with a warning and
 * the rest of the file kept (silences.c says why). */
#ifndef WSRELAY_STATE_SECTION_H
#define WSRELAY_STATE_SECTION_H

#include "state.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/jscan.h"
#include "util/jsonv.h"
#include "util/xalloc.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEDGER_KEEP 7200 /* seconds of call times kept: two of the longest span */

/* How json-c writes the document (and measures an outbox item's share). */
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct state {
    char *path;
    int lock_fd;
    bool read_only; /* from state_peek: never saved */
    struct json_object *root;
    char *aside;                /* state_open moved a corrupt file here; NULL when not */
    char *aside_why;            /* what was wrong with it */
    size_t max_bytes;           /* the size a save keeps the file under */
    uint64_t saved;             /* digest of the text on disk, when it is the
                                   document's (read or written by this run);
                                   0: not known. A save that would write the
                                   same text writes nothing */
    struct state_trim *trimmed; /* what saves gave up for it, not yet taken */
    size_t n_trimmed;
    struct seen_files *files;  /* the per-device files of seen keys, PATH.d/ */
    struct readings *readings; /* the watch and limits sections (watchfile.c); NULL: empty */
    struct fleet *fleet;       /* the accounts section (devices.c); NULL: empty */
    struct outbox *outbox;     /* the outbox section (outbox.c), once taken from
                                  the root (outbox_take), which keeps a stand-in
                                  in its place */
    char *text;                /* the file as load() read it, which native entries
                                  borrow their texts from (struct entry_text);
                                  freed after them */
    size_t size_hint;          /* bytes of the file last read or written: what
                                  a save makes room for at once */
    /* The fleet file (PATH.fleet-GENERATION) the state file names: its
     * generation (0: none yet, the native sections are in the state file
     * itself, as in state version 1), the length the state file commits (bytes
     * after it are an append no save committed), and the length of its
     * first document, the base (what follows are records of changes). */
    long long fleet_gen;
    /* The highest generation a save of this process began to write. A
     * failed save may still have replaced the state file (a directory
     * fsync that fails after the rename), so the disk may name it: no
     * later save writes it again. */
    long long fleet_written;
    size_t fleet_len, fleet_base;
    char *fleet_text; /* the fleet file as read: native entries borrow from it too */
    struct discovery_times *discovered; /* the "discovered" section as read,
                                           until fleet_loaded (devices.c) */
    bool fleet_missing; /* load found no fleet file where the state file names one */
    bool fleet_strict;  /* state_peek: a missing fleet file fails the load, which
                           it tries again (a save may have just replaced it),
                           rather than being relearnt */
    long long now;      /* the run's time, from state_clamp_clock; 0: not
                           given (time() then bounds a mark, seen.c) */
    bool rebase;        /* a native entry was removed, or a save failed after
                           entries took their texts: the next save writes the
                           whole fleet file anew rather than a record */
};

/* What state_clamp_clock corrects to: each section's clamp lowers its
 * times above `now` to `now`, and a time set ahead on purpose (a block, a
 * next try, a refusal) to a bound above `now` when it is further. */
struct state_clamp {
    long long now;
    long long max_block; /* the furthest a ledger's blocked_until may be ahead; >= 0 */
};

/* One top-level member of the document. */
struct state_section {
    const char *name;    /* the member */
    enum json_type type; /* json_type_object or json_type_array; a missing
                            member is made an empty one */
    /* Checks the member of a loaded document (any type: the check says
     * when it is not `type`), and may repair what the format allows
     * (sorting, moving an older file's members); fails with a message
     * naming the member, e.g. "seen.5214000A: not an object". */
    int (*check)(struct json_object *v, struct err *e);
    /* Lowers the times a clock that jumped back left in the future (the
     * member has passed its check); NULL when the section keeps no time. */
    void (*clamp)(struct json_object *v, const struct state_clamp *to);
    /* Made only when first written (its file's accessors create it): a
     * file without it loads and saves without it, byte for byte, so that
     * a section added later leaves the files of those who never use it
     * as they were. A lazy section's clamp may get NULL. */
    bool lazy;
};

/* A section kept in its own form rather than as json-c objects: C
 * structures, with the text of each entry as the file had it, written
 * back as it was unless the entry changed. The per-device sections (the
 * device lists and histories, the readings memory, the learnt limits) are
 * most of the file's bytes at a large fleet, and json-c's objects cost
 * more to build, write and free than the rest of a run; a run that polls
 * one device or finds nothing new leaves nearly all of their entries
 * untouched. The document, and so the file, is the same either way.
 *
 * statefile.c reads the top-level object with a scanner (util/jscan.h): the
 * members of native sections go to their `read`, every other member is
 * parsed by json-c into the root as before. A save writes the root, then
 * each native section's member. */
struct state_native {
    const char *name; /* the member */
    /* Reads the member's value, `js` positioned on it, into `s` (replacing
     * what an earlier member of the same name gave: the last one wins, as
     * json-c's does; with `merge`, a record of the fleet file, only the
     * entries it names are replaced). Checks what `check` would: fails
     * (the scan failed or not) with a message naming the member, as check
     * does. */
    int (*read)(struct state *s, struct jscan *js, bool merge, struct err *e);
    /* Appends the member's value as JSON ({} when empty); NULL for a
     * section that only records of the fleet file have. */
    void (*write)(const struct state *s, struct buf *out);
    /* Appends the entries changed since they were read or last written
     * ("KEY":VALUE,... without braces), which then keep that text; returns
     * how many. An entry removed is not among them: whoever removes one
     * sets s->rebase. NULL for a section kept in the state file itself. */
    size_t (*write_changed)(const struct state *s, struct buf *out);
    /* As state_section's clamp, on `s`. */
    void (*clamp)(struct state *s, const struct state_clamp *to);
    /* Frees what `read` and the accessors kept in `s`. */
    void (*free)(struct state *s);
};

extern const struct state_native state_native_accounts;   /* devices.c */
extern const struct state_native state_native_watch;      /* watchfile.c */
extern const struct state_native state_native_limits;     /* watchfile.c */
extern const struct state_native state_native_history;    /* devices.c */
extern const struct state_native state_native_discovered; /* devices.c */

/* The fleet file PATH.fleet-GENERATION (fleetfile.c, which says why a
 * crash at any moment is harmless).
 *
 * fleet_file_read reads the generation s->fleet_gen up to s->fleet_len
 * into the native sections (s->fleet_text, s->fleet_base); fails naming
 * the file: -1 when it is missing (s->fleet_missing set), shorter than
 * the length or not a fleet file (statefile.c then relearns what it held), -2
 * when it cannot be read (not a regular file, permissions, I/O).
 *
 * fleet_file_write writes what a save needs before the state file that
 * commits it: a record of the entries changed (appended at s->fleet_len
 * and synced), or a new base in the next generation (written whole, 0600)
 * when there is no fleet file yet, s->rebase is set or the records would
 * outgrow the base. *to is what the state file must then name;
 * fleet_file_commit takes it once the state file is written, and removes
 * the generations a new base replaced (the committed one, and those of
 * failed saves before it: a new base never reuses a generation a save of
 * this process began, s->fleet_written). Nothing is committed on failure,
 * and the entries written keep their texts: the caller sets s->rebase.
 *
 * fleet_file_tidy removes generation `gen`, when there (a crash between a
 * new base and the removal of the old one leaves it).
 *
 * fleet_files_set_aside renames every STATE_PATH.fleet-N to
 * STATE_PATH.fleet-N`suffix`, with the corrupt state file they belong to
 * (or none); returns how many, or -1 naming the file it could not move. */
struct fleet_commit {
    long long gen;
    size_t len, base;
    bool rebased; /* a new generation */
};

int fleet_file_read(struct state *s, struct err *e);
int fleet_file_write(struct state *s, struct fleet_commit *to, struct err *e);
void fleet_file_commit(struct state *s, const struct fleet_commit *c);
void fleet_file_tidy(const struct state *s, long long gen);
int fleet_files_set_aside(const char *state_path, const char *suffix, struct err *e);

/* After every file is read: each account takes the discovery time the
 * state file's "discovered" section gave it (devices.c). */
void fleet_loaded(struct state *s);

/* A native entry's JSON text: a span of s->text as the file had it
 * (borrowed, `own` false) or a text of its own written after a change;
 * `p` NULL when the entry must be written from its structure. */
struct entry_text {
    const char *p;
    size_t len;
    bool own;
};

/* The entry changed: its text is gone. */
static inline void entry_text_drop(struct entry_text *t)
{
    if (t->own)
        free((char *)t->p);
    *t = (struct entry_text){0};
}

/* The span from `start` to the scanner's position, borrowed. */
static inline struct entry_text entry_text_span(const char *start, const struct jscan *js)
{
    return (struct entry_text){start, (size_t)(js->p - start), false};
}

/* Keeps `b`'s text as the entry's own and appends it to `out`. */
static inline void entry_text_keep(struct entry_text *t, struct buf *b, struct buf *out)
{
    t->len = b->len;
    t->p = buf_steal(b);
    t->own = true;
    buf_append(out, t->p, t->len);
}

/* --- the text a save writes, read in one pass ---------------------------
 *
 * Nearly every entry of a native section is exactly as its writer wrote
 * it: members in that order, no white space, plain numbers, strings
 * without escapes. A reader may try that form first with these, from left
 * to right and without the scanner, and give up at the first byte that
 * differs; the caller then starts the generic reader from the entry's
 * start, and frees what the fast try allocated. What the fast form accepts,
 * the generic reader must accept alike: each such reader says how that is
 * checked. */

struct text {
    const char *p, *end;
};

/* Inlined always: called some 30 times an entry, and the literal's
 * length known where it is called makes the compare a few instructions. */
#define TEXT_INLINE static inline __attribute__((always_inline))

TEXT_INLINE bool take(struct text *t, const char *literal, size_t n)
{
    if ((size_t)(t->end - t->p) < n || memcmp(t->p, literal, n) != 0)
        return false;
    t->p += n;
    return true;
}
#define TAKE(t, literal) take(t, literal, sizeof literal - 1)

TEXT_INLINE bool take_int(struct text *t, long long *out)
{
    bool negative;
    long long digits;
    int decimals;
    const char *p = t->p;
    if (!jscan_plain_number(&p, t->end, &negative, &digits, &decimals) || decimals >= 0)
        return false;
    t->p = p;
    *out = negative ? -digits : digits;
    return true;
}

static inline bool take_double(struct text *t, double *out)
{
    bool negative;
    long long digits;
    int decimals;
    if (!jscan_plain_number(&t->p, t->end, &negative, &digits, &decimals))
        return false;
    *out = jscan_plain_value(negative, digits, decimals);
    return true;
}

static inline bool take_bool(struct text *t, bool *out)
{
    *out = TAKE(t, "true");
    return *out || TAKE(t, "false");
}

/* A string without escapes: a copy of its bytes (*out, the caller's).
 * The file is UTF-8 without NUL bytes (checked whole on load), so these
 * are what the scanner would decode. */
static inline bool take_string(struct text *t, char **out)
{
    if (t->p >= t->end || *t->p != '"')
        return false;
    const char *close = memchr(t->p + 1, '"', (size_t)(t->end - t->p - 1));
    if (!close || memchr(t->p + 1, '\\', (size_t)(close - t->p - 1)))
        return false;
    size_t n = (size_t)(close - t->p - 1);
    *out = xmalloc(n + 1);
    memcpy(*out, t->p + 1, n);
    (*out)[n] = '\0';
    t->p = close + 1;
    return true;
}

extern const struct state_section state_section_seen;      /* seen.c */
extern const struct state_section state_section_floors;    /* seen.c */
extern const struct state_section state_section_marks;     /* seen.c */
extern const struct state_section state_section_logins;    /* ledger.c */
extern const struct state_section state_section_outbox;    /* outbox.c */
extern const struct state_section state_section_throttles; /* throttles.c */
extern const struct state_section state_section_counters;  /* counters.c */
extern const struct state_section state_section_receivers; /* health.c */
extern const struct state_section state_section_self;      /* self.c */
extern const struct state_section state_section_signals;   /* signals.c */
extern const struct state_section state_section_incidents; /* incidents.c */
extern const struct state_section state_section_silences;  /* silences.c */

/* The table of sections (sections.c). state_sections: the json-c
 * sections, in the order a new file writes them and a loaded one is
 * checked in, so that a file with two faults is always reported by the
 * first. state_natives: every native section, in the order statefile.c writes
 * them; those with a write_changed live in the fleet file, the others in
 * the state file itself. */
extern const struct state_section *const state_sections[];

/* After a save wrote the state file: appends the incidents' journal to the
 * incident log and drops from memory what went there, returning how many
 * lines (the save then writes the file again without them); a failure is
 * logged and the rest waits for the next save (incidents.c). */
size_t incidents_flush(struct state *s);
extern const size_t state_n_sections;

#define STATE_N_NATIVES 5 /* the rows of state_natives */
extern const struct state_native *const state_natives[];
extern const size_t state_n_natives;

/* --- what sections lend each other ------------------------------------- */

/* Checks "next_id" of the root and raises it above every id of the
 * (checked, sorted) outbox, whatever a hand edit did (outbox.c). Runs
 * after every section's check. */
int outbox_check_next_id(struct json_object *root, struct err *e);

/* The outbox of a checked document (its root's member, sorted) taken into
 * s->outbox, and the member replaced by a stand-in that writes it in its
 * place (outbox.c): after a load's checks, and for a new root.
 * outbox_free frees s->outbox (NULL is fine) and sets it NULL. */
void outbox_take(struct state *s);
void outbox_free(struct state *s);

/* Whether an outbox item's event is about `serial` (outbox.c), whose
 * history devices.c then keeps. */
bool outbox_names_serial(const struct state *s, const char *serial);

/* Gives up the oldest outbox items until about `excess` bytes of the
 * serialised file are gone, counting them in s->trimmed for
 * state_take_trimmed; false when the outbox was empty (outbox.c). */
bool outbox_shed(struct state *s, size_t excess);

/* `text` fit for the state and for one line of `wsrelay status`, as a new
 * string: at most `max` bytes, never cutting a character, and ending with
 * "…" when it was cut (`max` of 3 or more); control
 * characters become spaces and bytes that are not UTF-8 '?'. Error
 * messages go into the state through it: they may have been cut anywhere,
 * and the file must stay valid UTF-8 (a load refuses any other as
 * corrupt). Defined in health.c. */
struct json_object *health_fit_text(const char *text, size_t max);

/* The health of a login ID, a receiver or the heartbeat (struct
 * state_health) as an object `h` of the document (health.c):
 * health_check checks one, naming it `where`; health_clamp lowers its
 * last_ok and error_at to `now`; health_record records one attempt in it
 * (the message fit for the file and for `wsrelay status`); health_get
 * reads it into *out (false, *out zeroed, when `h` is NULL). */
int health_check(struct json_object *h, const char *where, struct err *e);
void health_clamp(struct json_object *h, long long now);
void health_record(struct json_object *h, bool ok, long status, const char *error, long long now);
bool health_get(const struct json_object *h, struct state_health *out);

/* The times of recent calls, as the "calls" array of `obj` (ledger.c; the
 * signals section keeps its own the same way): calls_record appends `now`
 * and drops the times older than LEDGER_KEEP before it; calls_since counts
 * the times at `since` or later (0 for a NULL obj). */
void calls_record(struct json_object *obj, long long now);
size_t calls_since(const struct json_object *obj, long long since);

/* --- seen keys in per-device files --------------------------------------- */

/* Checks the seen keys of one serial (an object of "UNIXTIME/KIND": 1),
 * naming it "seen.SERIAL" (seenfiles.c): for a device's file and for the
 * state file's seen section alike. */
int seen_check_keys(struct json_object *keys, const char *serial, struct err *e);

/* The second half of state_save, after the state file was written (seen.c):
 * merges each serial's journal (the seen and floors sections) into its
 * device file and writes the files that changed (and those left dirty by
 * state_prune_seen), then one fsync of the directory; only then drops
 * those serials from the journal in memory. A serial whose file cannot be
 * read or written keeps its journal; the first such failure is in `e`. */
int seen_flush(struct state *s, struct err *e);

/* Drops the high-water mark of `serial` (seen.c), for a device that left
 * its account's list for good (devices.c): its entry would otherwise stay
 * in the state file, which every save writes, for ever. Its device file
 * stays, as it does for such a device; if the device comes back, the mark
 * is raised again from the file when it is next read. */
void seen_forget_mark(struct state *s, const char *serial);

/* The directory PATH.d of per-device files (seenfiles.c), one file per
 * serial: {"serial":S,"floor":N,"seen":{"UNIXTIME/KIND":1,...}}.
 *
 * seen_files_open opens PATH.d when it exists, never following a symlink
 * (fails naming it when it is one, or not a directory, or cannot be
 * opened); a missing one is created by the first write. `read_only` (for
 * state_peek): a corrupt file is only warned about, never moved aside.
 * *out belongs to the caller (seen_files_free, NULL is fine).
 *
 * seen_files_get returns the document of `serial`'s file, loaded on first
 * use and kept (owned by `f`; a missing file is an empty document, a
 * corrupt one is moved aside with a warning and is an empty document
 * too); seen_files_take_new then says true once for its serial, with
 * *lost true when its file was corrupt;
 * NULL when the file could not be read (logged once, and
 * seen_files_why says why): the serial then reads as having no file and
 * seen_files_write refuses to replace what is there.
 *
 * seen_files_touch records that the document in memory was changed (it is
 * "dirty"), seen_files_dirty asks, seen_files_dirty_set is the object
 * whose names are the dirty serials (owned by `f`). seen_files_write
 * replaces the serial's file with its document (temp file, fsync, rename
 * in the directory, created 0700 first when missing) and makes it clean;
 * seen_files_sync fsyncs the directory, which makes the writes before it
 * durable. Both fail with the file or directory named in `e`. */
struct seen_files;

/* Moves STATE_PATH.d aside to STATE_PATH.d.corrupt-YYYYmmddTHHMMSSZ[-N]
 * (a rename, which moves a symlink itself and never what it points to),
 * for a state file that is moved aside: its device files must not outlive
 * the outbox that held what they mark seen. *out is the new path (the
 * caller's), NULL when there was no directory. Fails naming both paths. */
int seen_files_set_aside(char **out, const char *state_path, struct err *e);

int seen_files_open(struct seen_files **out, const char *state_path, bool read_only, struct err *e);
void seen_files_free(struct seen_files *f);
struct json_object *seen_files_get(struct seen_files *f, const char *serial);
bool seen_files_take_new(struct seen_files *f, const char *serial, bool *lost);
const char *seen_files_why(struct seen_files *f, const char *serial);
void seen_files_touch(struct seen_files *f, const char *serial);
bool seen_files_dirty(const struct seen_files *f, const char *serial);
struct json_object *seen_files_dirty_set(const struct seen_files *f);
int seen_files_write(struct seen_files *f, const char *serial, struct err *e);
int seen_files_sync(struct seen_files *f, struct err *e);

/* --- json-c helpers ---------------------------------------------------- */

/* The member `key` of `obj` when it has type `type`; else NULL. */
static inline struct json_object *member(const struct json_object *obj, const char *key,
                                         enum json_type type)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, type))
        return NULL;
    return v;
}

static inline long long int_member(const struct json_object *obj, const char *key, long long dflt)
{
    struct json_object *v = member(obj, key, json_type_int);
    return v ? (long long)json_object_get_int64(v) : dflt;
}

static inline const char *str_member(const struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_string);
    return v ? json_object_get_string(v) : NULL;
}

/* The object member `key` of `obj`, created (or replacing a member of
 * another type) when needed. */
static inline struct json_object *child_object(struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_object);
    if (!v) {
        v = jsonv_need(json_object_new_object());
        jsonv_put(obj, key, v);
    }
    return v;
}

static inline struct json_object *child_array(struct json_object *obj, const char *key)
{
    struct json_object *v = member(obj, key, json_type_array);
    if (!v) {
        v = jsonv_need(json_object_new_array());
        jsonv_put(obj, key, v);
    }
    return v;
}

/* A top-level section of the state; loading made sure each exists. */
static inline struct json_object *section(const struct state *s, const struct state_section *sec)
{
    return member(s->root, sec->name, sec->type);
}

/* Lowers the integer member `key` of `obj` to `max` when it is above. */
static inline void clamp_member(struct json_object *obj, const char *key, long long max)
{
    struct json_object *v = member(obj, key, json_type_int);
    if (v && (long long)json_object_get_int64(v) > max)
        jsonv_put_int(obj, key, max);
}

/* Splits a seen key "UNIXTIME/KIND"; -1 when it has another form. */
static inline int parse_seen_key(const char *key, long long *unixtime)
{
    char *end = NULL;
    errno = 0;
    long long t = strtoll(key, &end, 10);
    if (end == key || errno || *end != '/' || end[1] == '\0')
        return -1;
    *unixtime = t;
    return 0;
}

/* For qsort over an array of strings. */
static inline int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* --- checking a loaded document ---------------------------------------- */

/* Each check fails with a message naming the member, e.g.
 * "seen.5214000A: not an object". */

static inline const char *type_name(enum json_type type)
{
    switch (type) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return "a boolean";
    case json_type_double:
        return "a number";
    case json_type_int:
        return "an integer";
    case json_type_object:
        return "an object";
    case json_type_array:
        return "an array";
    case json_type_string:
        return "a string";
    }
    return "?";
}

static inline int check_type(const struct json_object *v, enum json_type type, const char *where,
                             struct err *e)
{
    if (json_object_is_type(v, type))
        return 0;
    return err_set(e, "%s: not %s", where, type_name(type));
}

/* A member that may be absent but, when present, has type `type`. */
static inline int check_opt(const struct json_object *obj, const char *key, enum json_type type,
                            const char *where, struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, type))
        return 0;
    return err_set(e, "%s.%s: not %s", where, key, type_name(type));
}

static inline int check_req(const struct json_object *obj, const char *key, enum json_type type,
                            const char *where, struct err *e)
{
    if (!json_object_object_get_ex(obj, key, NULL))
        return err_set(e, "%s: no '%s'", where, key);
    return check_opt(obj, key, type, where, e);
}

/* An object whose every member is an integer. */
static inline int check_ints(struct json_object *obj, const char *where, struct err *e)
{
    if (check_type(obj, json_type_object, where, e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(obj);
    struct json_object_iterator end = json_object_iter_end(obj);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (!json_object_is_type(json_object_iter_peek_value(&it), json_type_int))
            return err_set(e, "%s.%s: not an integer", where, json_object_iter_peek_name(&it));
    return 0;
}

/* A number: JSON's integers and doubles alike. */
static inline bool is_number(const struct json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

/* An array (when present) of numbers (`ints`: of integers). */
static inline int check_numbers(const struct json_object *obj, const char *key, bool ints,
                                const char *where, struct err *e)
{
    struct json_object *arr = NULL;
    if (!json_object_object_get_ex(obj, key, &arr))
        return 0;
    if (!json_object_is_type(arr, json_type_array))
        return err_set(e, "%s.%s: not an array", where, key);
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(arr, i);
        if (ints ? !json_object_is_type(v, json_type_int) : !is_number(v))
            return err_set(e, "%s.%s[%zu]: not %s", where, key, i,
                           ints ? "an integer" : "a number");
    }
    return 0;
}

/* Checks that `obj` (named `where` in messages) is an object, and each of
 * its members with `one`, naming it "WHERE.KEY". Returns 0, or -1 with the
 * first member `one` refuses (or the type) in `e`. */
static inline int check_members(struct json_object *obj, const char *where,
                                int (*one)(struct json_object *v, const char *where, struct err *e),
                                struct err *e)
{
    char at[300];
    if (check_type(obj, json_type_object, where, e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(obj);
    struct json_object_iterator end = json_object_iter_end(obj);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        snprintf(at, sizeof at, "%s.%s", where, json_object_iter_peek_name(&it));
        if (one(json_object_iter_peek_value(&it), at, e) < 0)
            return -1;
    }
    return 0;
}

#endif
