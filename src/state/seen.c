/* Seen keys: which alert-log entries of each device serial were already
 * handled ("seen"), and per serial the floor below which every entry was.
 * Neither holds a time a clock jump could leave in the future.
 *
 * Why the dedup and pruning rules are safe: an event is identified by
 * serial + unixtime + kind, and the caller marks it seen only once it has
 * been delivered or queued in the outbox, which is saved in the same atomic
 * write; after a crash the file has both the key and the queued item or
 * neither, so an event is never lost. (The one way to send twice is a crash
 * between a delivery and the save that records it; no file can close that
 * window, only make it short.) The platform keeps only the newest 20 alert
 * entries of a device, so an entry that has left that window can never be
 * returned again: forgetting the keys older than the oldest entry of the
 * latest response (state_prune_seen) cannot let a duplicate through, and it
 * keeps the file bounded. The pruning point is kept as the serial's floor:
 * an entry older than it is one already handled, which a lagging copy of
 * the platform serving an older page must not bring back.
 *
 * Where the keys live. Most of a large state was seen keys, yet a run
 * needs only those of the devices it polls; so each serial's keys and
 * floor live in a file of its own, PATH.d/NAME.json (seenfiles.c), read
 * when the serial is first asked about. The state file's "seen" and
 * "floors" sections keep their form but are now a journal: the keys and
 * floor raises not yet written to the device's file. state_mark_seen and
 * state_prune_seen change only the journal (and prune drops the cached
 * file's keys below the new floor, in memory); a read sees the union, and
 * the higher of the two floors.
 *
 * The write-ahead rule that keeps the guarantee above: a save (1) writes
 * the state file as before, the outbox and the journal in one rename;
 * (2) then merges each journaled serial into its file, writes the files
 * that changed (temp file, fsync, rename) and fsyncs the directory once;
 * (3) only then drops those serials from the journal in memory, so that
 * the next save of the state file no longer carries them. A key is thus
 * always on disk in the state file, in its device's file, or both: a crash
 * between (1) and (2) leaves it in the journal, and the next load sees the
 * union, losing nothing and repeating nothing. A device file that cannot
 * be written keeps its serial in the journal, and the save fails as a
 * failed write of the state file does. The last save of a run leaves its
 * journal on disk until the next run's first save writes the state file
 * again; that costs a few keys in the file, never a key. A state written
 * before this split had every key in "seen": it is simply a journal, which
 * the first save flushes into the files.
 *
 * A lost file. A device file that is corrupt is moved aside (seenfiles.c)
 * and the device reads as having only the journal's keys and floor, which
 * after a flush are none: every entry of its log would be sent again (up
 * to 20, a whole page of alarms at 3 a.m.). So the state file keeps, per
 * serial, a high-water mark ("marks", never flushed out): the newest
 * unixtime it marked seen, or its floor less one when that is higher, but
 * never above the run's clock plus MARK_SKEW (a device clock set years
 * ahead must not make every later real alarm count as handled). A lost
 * file is replaced by one whose floor is just above the mark, with a
 * warning: every entry up to the newest one handled counts as seen, and
 * nothing older is sent again. Entries still in the log below that floor
 * are marked seen when next polled (poll.c), and their keys are kept
 * though below the file's floor (merge), so that they do not look like an
 * older copy of the log at every poll. A serial's mark is raised by what
 * this run marks seen or prunes, and from its file and journal once, when
 * the file is loaded; it is dropped with the device's history, when the
 * device has left its account's list for 30 days (devices.c), and comes
 * back from its file if the device does. What that costs: an entry the platform
 * logged late, older than the newest one already handled, that reaches
 * the log only after the file was lost, is taken as seen; that needs a
 * damaged file and a late entry at once, where no mark would repeat the
 * whole log every time a file is damaged. A state written before marks
 * existed has none: a device's mark is raised to its file's newest key
 * when the file is loaded, so a device polled once since the upgrade
 * is covered; one whose file is lost before that has no mark and starts
 * over as it did before (repeats, never a loss). */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* How far ahead of the run's clock a device may date an entry and still
 * raise its mark: a device clock a little fast, never one set years ahead. */
#define MARK_SKEW 3600

/* --- checking a loaded document ---------------------------------------- */

static int check_seen(struct json_object *seen, struct err *e)
{
    if (check_type(seen, json_type_object, "seen", e) < 0)
        return -1;
    struct json_object_iterator it = json_object_iter_begin(seen);
    struct json_object_iterator end = json_object_iter_end(seen);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (seen_check_keys(json_object_iter_peek_value(&it), json_object_iter_peek_name(&it), e) <
            0)
            return -1;
    return 0;
}

static int check_floors(struct json_object *floors, struct err *e)
{
    return check_ints(floors, "floors", e);
}

/* --- seen keys --------------------------------------------------------- */

static void seen_key(char *out, size_t size, long long unixtime, const char *kind)
{
    snprintf(out, size, "%lld/%s", unixtime, kind);
}

/* --- the high-water mark ------------------------------------------------ */

/* The journal's keys of `serial` (NULL: none). */
static struct json_object *journal_keys(const struct state *s, const char *serial)
{
    return member(section(s, &state_section_seen), serial, json_type_object);
}

/* The highest mark there can be: the run's time and MARK_SKEW. An entry
 * the log dates later (a device clock set years ahead) must not make every
 * real alarm of its device count as handled once its file is lost. */
static long long mark_bound(const struct state *s)
{
    return (s->now ? s->now : (long long)time(NULL)) + MARK_SKEW;
}

/* The mark of `serial` (0: none), no higher than mark_bound: a state
 * written before marks were bounded may hold one further ahead. */
static long long mark_of(const struct state *s, const char *serial)
{
    long long mark = int_member(section(s, &state_section_marks), serial, 0);
    long long bound = mark_bound(s);
    return mark > bound ? bound : mark;
}

static void raise_mark(const struct state *s, const char *serial, long long t)
{
    long long bound = mark_bound(s);
    if (t > bound)
        t = bound;
    if (t > mark_of(s, serial))
        jsonv_put_int(section(s, &state_section_marks), serial, t);
}

/* The newest unixtime among `keys` (an object of seen keys); 0: none. */
static long long newest_key(struct json_object *keys)
{
    long long newest = 0;
    struct json_object_iterator it = json_object_iter_begin(keys);
    struct json_object_iterator end = json_object_iter_end(keys);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        long long t;
        if (parse_seen_key(json_object_iter_peek_name(&it), &t) == 0 && t > newest)
            newest = t;
    }
    return newest;
}

/* Raises the mark of `serial` to what its file `doc` and its journal
 * hold (newest keys, floors less one): the journal's own raises already
 * did for what this run marks, so this gives a state written before marks
 * existed its marks, and a device whose mark was dropped (seen_forget_mark)
 * its mark back when it is polled again. */
static void raise_mark_from(const struct state *s, const char *serial, struct json_object *doc)
{
    struct json_object *keys = member(doc, "seen", json_type_object);
    struct json_object *journal = journal_keys(s, serial);
    raise_mark(s, serial, keys ? newest_key(keys) : 0);
    raise_mark(s, serial, journal ? newest_key(journal) : 0);
    raise_mark(s, serial, int_member(doc, "floor", 0) - 1);
    raise_mark(s, serial, int_member(section(s, &state_section_floors), serial, 0) - 1);
}

/* The document of `serial`'s file (NULL: it cannot be read), read on
 * first use. A file found corrupt is replaced by one whose floor is just
 * above the serial's mark (see "A lost file" above); a file read raises
 * the mark once, as it is loaded (raise_mark_from). */
static struct json_object *device_doc(const struct state *s, const char *serial)
{
    bool lost = false;
    struct json_object *doc = seen_files_get(s->files, serial);
    if (!doc || !seen_files_take_new(s->files, serial, &lost))
        return doc;
    long long mark = mark_of(s, serial);
    if (lost && mark > 0 && mark + 1 > int_member(doc, "floor", 0)) {
        jsonv_put_int(doc, "floor", mark + 1);
        seen_files_touch(s->files, serial);
        log_warn("device %s: its seen file is lost; its entries up to %lld, the newest it had "
                 "handled (kept in the state file), count as seen and are not sent again",
                 serial, mark);
    } else if (lost && mark == 0) {
        log_warn("device %s: its seen file is lost and the state file has no mark for it "
                 "(written by an older wsrelay, or the device had left its account's list for "
                 "30 days): some of its events may be sent again",
                 serial);
    }
    raise_mark_from(s, serial, doc);
    return doc;
}

void seen_forget_mark(struct state *s, const char *serial)
{
    json_object_object_del(section(s, &state_section_marks), serial);
}

/* The keys of `serial`'s file (NULL: none), read on first use. */
static struct json_object *file_keys(const struct state *s, const char *serial)
{
    return member(device_doc(s, serial), "seen", json_type_object);
}

static long long file_floor(const struct state *s, const char *serial)
{
    return int_member(device_doc(s, serial), "floor", 0);
}

/* Removes the keys of `keys` older than `before`; returns how many. */
static size_t drop_below(struct json_object *keys, long long before)
{
    size_t n = 0;
    char **drop = xcalloc((size_t)json_object_object_length(keys) + 1, sizeof *drop);
    struct json_object_iterator it = json_object_iter_begin(keys);
    struct json_object_iterator end = json_object_iter_end(keys);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        long long t;
        const char *key = json_object_iter_peek_name(&it);
        if (parse_seen_key(key, &t) == 0 && t < before)
            drop[n++] = xstrdup(key);
    }
    for (size_t i = 0; i < n; i++) {
        json_object_object_del(keys, drop[i]);
        free(drop[i]);
    }
    free(drop);
    return n;
}

bool state_seen(const struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    seen_key(key, sizeof key, unixtime, kind);
    struct json_object *keys = journal_keys(s, serial);
    if (keys && json_object_object_get_ex(keys, key, NULL))
        return true;
    keys = file_keys(s, serial);
    return keys && json_object_object_get_ex(keys, key, NULL);
}

void state_mark_seen(struct state *s, const char *serial, long long unixtime, const char *kind)
{
    char key[256];
    seen_key(key, sizeof key, unixtime, kind);
    jsonv_put(child_object(section(s, &state_section_seen), serial), key,
              jsonv_need(json_object_new_int(1)));
    raise_mark(s, serial, unixtime);
}

void state_prune_seen(struct state *s, const char *serial, long long before)
{
    if (state_seen_floor(s, serial) < before)
        jsonv_put_int(section(s, &state_section_floors), serial, before);
    raise_mark(s, serial, before - 1);
    struct json_object *seen = section(s, &state_section_seen);
    struct json_object *keys = journal_keys(s, serial);
    if (keys) {
        drop_below(keys, before);
        if (json_object_object_length(keys) == 0)
            json_object_object_del(seen, serial);
    }
    /* The file keeps them until the next flush writes it without them;
     * the floor in the journal covers them meanwhile. */
    keys = file_keys(s, serial);
    if (keys && drop_below(keys, before) > 0)
        seen_files_touch(s->files, serial);
}

long long state_seen_floor(const struct state *s, const char *serial)
{
    long long journal = int_member(section(s, &state_section_floors), serial, 0);
    long long file = file_floor(s, serial);
    return journal > file ? journal : file;
}

size_t state_seen_count(const struct state *s, const char *serial)
{
    struct json_object *journal = journal_keys(s, serial);
    struct json_object *file = file_keys(s, serial);
    size_t n = file ? (size_t)json_object_object_length(file) : 0;
    if (!journal)
        return n;
    struct json_object_iterator it = json_object_iter_begin(journal);
    struct json_object_iterator end = json_object_iter_end(journal);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (!file || !json_object_object_get_ex(file, json_object_iter_peek_name(&it), NULL))
            n++;
    return n;
}

bool state_seen_known(const struct state *s, const char *serial)
{
    return device_doc(s, serial) != NULL;
}

/* --- flushing the journal into the files (state_save) -------------------- */

/* Adds the keys of `keys` at or above `floor` that `have` lacks; true
 * when it added one. */
static bool add_keys(struct json_object *have, struct json_object *keys, long long floor)
{
    bool added = false;
    struct json_object_iterator it = json_object_iter_begin(keys);
    struct json_object_iterator end = json_object_iter_end(keys);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        long long t;
        const char *key = json_object_iter_peek_name(&it);
        if (parse_seen_key(key, &t) == 0 && t >= floor &&
            !json_object_object_get_ex(have, key, NULL)) {
            jsonv_put(have, key, jsonv_need(json_object_new_int(1)));
            added = true;
        }
    }
    return added;
}

/* Merges the journal's `keys` (may be NULL) and `floor` into the file's
 * document `doc`; keys below the journal's floor (a prune's) go. Keys
 * below the file's own floor stay: a floor set from a lost file's mark
 * lies above entries still in the log, which poll marks seen so that they
 * do not count as stale at every poll (and a later prune drops them).
 * True when `doc` changed. */
static bool merge(struct json_object *doc, struct json_object *keys, long long floor)
{
    bool changed = false;
    if (floor > int_member(doc, "floor", 0)) {
        jsonv_put_int(doc, "floor", floor);
        changed = true;
    }
    struct json_object *have = child_object(doc, "seen");
    if (keys && add_keys(have, keys, floor))
        changed = true;
    return drop_below(have, floor) > 0 || changed;
}

/* The names of `obj`, added to the set `names`. */
static void add_names(struct json_object *names, struct json_object *obj)
{
    struct json_object_iterator it = json_object_iter_begin(obj);
    struct json_object_iterator end = json_object_iter_end(obj);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        jsonv_put(names, json_object_iter_peek_name(&it), NULL);
}

/* Brings the file of `serial` up to date with its journal: merged, and
 * written when that (or a prune) changed it. *wrote tells a write. */
static int flush_one(struct state *s, const char *serial, bool *wrote, struct err *e)
{
    struct json_object *doc = device_doc(s, serial);
    if (!doc)
        return err_set(e, "%s", seen_files_why(s->files, serial));
    long long floor = int_member(section(s, &state_section_floors), serial, 0);
    if (merge(doc, journal_keys(s, serial), floor))
        seen_files_touch(s->files, serial);
    if (!seen_files_dirty(s->files, serial))
        return 0;
    if (seen_files_write(s->files, serial, e) < 0)
        return -1;
    *wrote = true;
    return 0;
}

int seen_flush(struct state *s, struct err *e)
{
    int rc = 0;
    bool wrote = false;
    struct err one;
    struct json_object *todo = jsonv_need(json_object_new_object());
    struct json_object *done = jsonv_need(json_object_new_object());
    add_names(todo, section(s, &state_section_seen));
    add_names(todo, section(s, &state_section_floors));
    add_names(todo, seen_files_dirty_set(s->files));
    struct json_object_iterator it = json_object_iter_begin(todo);
    struct json_object_iterator end = json_object_iter_end(todo);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *serial = json_object_iter_peek_name(&it);
        bool w = false;
        if (flush_one(s, serial, &w, &one) < 0) {
            if (rc == 0)
                err_set(e, "%s", one.msg);
            rc = -1;
            continue;
        }
        wrote = wrote || w;
        jsonv_put(done, serial, jsonv_need(json_object_new_boolean(w)));
    }
    /* Until the directory is synced, a rename may not survive a crash: the
     * journal must keep every serial, and the files written must be
     * written again. */
    bool synced = !wrote || seen_files_sync(s->files, &one) == 0;
    if (!synced) {
        if (rc == 0)
            err_set(e, "%s", one.msg);
        rc = -1;
    }
    it = json_object_iter_begin(done);
    end = json_object_iter_end(done);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *serial = json_object_iter_peek_name(&it);
        if (synced) {
            json_object_object_del(section(s, &state_section_seen), serial);
            json_object_object_del(section(s, &state_section_floors), serial);
        } else if (json_object_get_boolean(json_object_iter_peek_value(&it))) {
            seen_files_touch(s->files, serial);
        }
    }
    json_object_put(todo);
    json_object_put(done);
    return rc;
}

const struct state_section state_section_seen = {
    .name = "seen",
    .type = json_type_object,
    .check = check_seen,
};

const struct state_section state_section_floors = {
    .name = "floors",
    .type = json_type_object,
    .check = check_floors,
};

static int check_marks(struct json_object *marks, struct err *e)
{
    return check_ints(marks, "marks", e);
}

/* A mark further ahead than the bound (seen.c's mark_bound) comes down to
 * it, as raise_mark would have kept it. */
static void clamp_marks(struct json_object *marks, const struct state_clamp *to)
{
    struct json_object_iterator it = json_object_iter_begin(marks);
    struct json_object_iterator end = json_object_iter_end(marks);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (json_object_get_int64(json_object_iter_peek_value(&it)) > to->now + MARK_SKEW)
            json_object_set_int64(json_object_iter_peek_value(&it), to->now + MARK_SKEW);
}

const struct state_section state_section_marks = {
    .name = "marks",
    .type = json_type_object,
    .check = check_marks,
    .clamp = clamp_marks,
};
