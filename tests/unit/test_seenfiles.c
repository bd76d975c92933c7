/* Seen keys in per-device files (src/state/seen.c, seenfiles.c): the state
 * file's seen and floors sections as a journal flushed into PATH.d/ after
 * each save, a state of the previous release moved out by its first save,
 * a crash between the two writes, corrupt and unreadable device files,
 * file names made from any serial, a symlinked directory, and saves that
 * change nothing. Every test works in its own temporary directory. */
#include "proc.h"
#include "state.h"
#include "statefile.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char *path; /* DIR/state.json */
static char *sdir; /* DIR/state.json.d */

static void setup(void)
{
    strcpy(dir, "/tmp/wsrelay-seen-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    path = xasprintf("%s/state.json", dir);
    sdir = xasprintf("%s.d", path);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(path);
    free(sdir);
}

TestSuite(seenfiles, .init = setup, .fini = teardown);

/* --- helpers ----------------------------------------------------------- */

static char *slurp(const char *p)
{
    struct buf b;
    struct err e;
    buf_init(&b, 0);
    if (file_read(&b, p, &e) < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

static void spew(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* A state in which key 100/ch1 of `serial` is seen and saved, its device
 * file written (the state closed again). */
static void seen_and_saved(const char *serial)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, serial, 100, "ch1");
    s = state_reopen_ok(s, path);
    state_close(s);
}

/* DIR/state.json.d/NAME; caller frees. */
static char *in_dir(const char *name)
{
    return xasprintf("%s/%s", sdir, name);
}

/* The device file of a serial made of letters and digits. */
static char *file_of(const char *serial)
{
    return xasprintf("%s/%s.json", sdir, serial);
}

static struct stat stat_of(const char *p)
{
    struct stat st;
    cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
    return st;
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* The number of members of the state file's section `name`. */
static int section_size(const char *name)
{
    struct json_object *root = json_object_from_file(path);
    struct json_object *v = NULL;
    cr_assert_not_null(root, "%s", path);
    cr_assert(json_object_object_get_ex(root, name, &v), "no %s", name);
    int n = json_object_object_length(v);
    json_object_put(root);
    return n;
}

/* The names in the directory `d` that start with `prefix`, sorted and
 * joined by spaces; caller frees. */
static char *names_in(const char *d, const char *prefix)
{
    struct dirent **list = NULL;
    struct buf b;
    buf_init(&b, 0);
    int n = scandir(d, &list, NULL, alphasort);
    cr_assert_geq(n, 0, "%s: %s", d, strerror(errno));
    for (int i = 0; i < n; i++) {
        if (strncmp(list[i]->d_name, prefix, strlen(prefix)) == 0 &&
            strcmp(list[i]->d_name, ".") != 0 && strcmp(list[i]->d_name, "..") != 0) {
            if (b.len)
                buf_puts(&b, " ");
            buf_puts(&b, list[i]->d_name);
        }
        free(list[i]);
    }
    free(list);
    if (!b.data)
        buf_puts(&b, "");
    return buf_steal(&b);
}

/* What a call wrote on stderr (the log), caught in a file. */
struct caught {
    int saved;
    char *file;
};

static void catch_stderr(struct caught *c)
{
    c->file = xasprintf("%s/stderr.txt", dir);
    fflush(stderr);
    c->saved = dup(2);
    int fd = open(c->file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    dup2(fd, 2);
    close(fd);
}

/* Caller frees. */
static char *release_stderr(struct caught *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    char *text = slurp(c->file);
    unlink(c->file);
    free(c->file);
    return text;
}

/* --- a state of the previous release ------------------------------------ */

/* tests/data/state/0.1.0-17dc0d7.json was written by wsrelay at commit
 * 17dc0d7, the last before device files, with every key in "seen":
 * 5214000A with 16 keys and floor 1795003000, 5214000B with 3 keys and
 * floor 1795000500. It loads as it is; the first save moves the keys into
 * the devices' files (0600, in a 0700 directory); the state file's next
 * save leaves "seen" and "floors" empty; every key is still seen. */
Test(seenfiles, a_state_of_the_release_before_moves_its_keys_out)
{
    char *p = xasprintf("%s/tests/data/state/0.1.0-17dc0d7.json", WSRELAY_SOURCE_DIR);
    char *text = slurp(p);
    cr_assert_not_null(text, "%s", p);
    spew(path, text);
    free(text);
    free(p);
    umask(022);
    struct state *s = state_open_ok(path);
    cr_expect_null(state_set_aside(s, NULL));
    cr_expect_eq(state_seen_count(s, "5214000A"), 16);
    cr_expect_eq(state_seen_count(s, "5214000B"), 3);
    state_save_ok(s);
    char *a = file_of("5214000A");
    char *b = file_of("5214000B");
    cr_expect_eq(stat_of(sdir).st_mode & 07777, 0700);
    cr_expect_eq(stat_of(a).st_mode & 07777, 0600);
    cr_expect_eq(stat_of(b).st_mode & 07777, 0600);
    /* The save after the one that flushed writes the journal away. */
    state_save_ok(s);
    state_close(s);
    cr_expect_eq(section_size("seen"), 0);
    cr_expect_eq(section_size("floors"), 0);
    text = slurp(b);
    cr_expect_str_eq(text, "{\"serial\":\"5214000B\",\"floor\":1795000500,\"seen\":{"
                           "\"1795001000/ch1\":1,\"1795001000/ch2\":1,"
                           "\"1795002000/communication-status\":1}}\n");
    free(text);

    s = state_open_ok(path);
    for (int i = 5; i < 20; i++)
        cr_expect(state_seen(s, "5214000A", 1795000000 + 600LL * i, "ch1"), "%d", i);
    cr_expect(state_seen(s, "5214000A", 1795006000, "battery-level"));
    cr_expect_not(state_seen(s, "5214000A", 1795000000, "ch1"), "pruned before");
    cr_expect(state_seen(s, "5214000B", 1795001000, "ch2"));
    cr_expect(state_seen(s, "5214000B", 1795002000, "communication-status"));
    cr_expect_eq(state_seen_count(s, "5214000A"), 16);
    cr_expect_eq(state_seen_count(s, "5214000B"), 3);
    cr_expect_eq(state_seen_floor(s, "5214000A"), 1795003000);
    cr_expect_eq(state_seen_floor(s, "5214000B"), 1795000500);
    state_close(s);
    free(a);
    free(b);
}

/* --- the journal ------------------------------------------------------- */

/* A crash after the state file was written and before the device file
 * was: the key is in the state file's journal only, and is seen. */
Test(seenfiles, a_key_only_in_the_journal_is_seen_after_a_crash)
{
    seen_and_saved("A");
    char *a = file_of("A");
    cr_assert(exists(a));
    /* The state file of a save whose flush never ran: a journal that the
     * device file lacks. */
    spew(path, "{\"version\":1,\"seen\":{\"A\":{\"200/ch1\":1},\"B\":{\"300/ch2\":1}},"
               "\"floors\":{\"A\":50}}\n");
    struct state *s = state_open_ok(path);
    cr_expect(state_seen(s, "A", 100, "ch1"), "from the file");
    cr_expect(state_seen(s, "A", 200, "ch1"), "from the journal");
    cr_expect(state_seen(s, "B", 300, "ch2"), "a device without a file yet");
    cr_expect_eq(state_seen_count(s, "A"), 2);
    cr_expect_eq(state_seen_floor(s, "A"), 50);
    state_close(s); /* another crash: still nothing written */
    s = state_open_ok(path);
    state_save_ok(s);
    state_close(s);
    char *text = slurp(a);
    cr_expect_str_eq(text,
                     "{\"serial\":\"A\",\"floor\":50,\"seen\":{\"100/ch1\":1,\"200/ch1\":1}}\n");
    free(text);
    free(a);
    char *b = file_of("B");
    cr_expect(exists(b));
    free(b);
}

/* A device file that cannot be written keeps its serial in the state
 * file's journal, and the save fails naming it; the next save that can
 * write it catches up. */
Test(seenfiles, a_device_file_that_cannot_be_written_keeps_the_journal)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 100, "ch1");
    state_mark_seen(s, "B", 100, "ch1");
    s = state_reopen_ok(s, path);
    char *tmp = in_dir("A.json.tmp");
    cr_assert_eq(mkdir(tmp, 0700), 0); /* in the way of the temporary file */
    state_mark_seen(s, "A", 200, "ch1");
    state_mark_seen(s, "B", 200, "ch1");
    struct err e = {{0}};
    cr_expect_eq(state_save(s, &e), STATE_SAVED_BEHIND, "the state file is written");
    cr_expect_not_null(strstr(e.msg, "A.json.tmp"), "%s", e.msg);
    cr_expect_eq(strncmp(e.msg, path, strlen(path)), 0, "%s", e.msg);
    cr_expect_eq(state_save(s, &e), STATE_SAVED_BEHIND, "still");
    state_close(s);
    s = state_open_ok(path);
    cr_expect(state_seen(s, "A", 200, "ch1"), "kept in the journal");
    cr_expect(state_seen(s, "B", 200, "ch1"));
    cr_assert_eq(rmdir(tmp), 0);
    state_save_ok(s); /* flushes A, then the journal stays in the file... */
    state_save_ok(s); /* ...until the next save writes the file again */
    state_close(s);
    cr_expect_eq(section_size("seen"), 0);
    char *a = file_of("A");
    char *text = slurp(a);
    cr_expect_str_eq(text,
                     "{\"serial\":\"A\",\"floor\":0,\"seen\":{\"100/ch1\":1,\"200/ch1\":1}}\n");
    free(text);
    free(a);
    free(tmp);
}

/* A prune raises the floor and drops the file's keys below it: written
 * with the next save, the journal's floor gone after it. */
Test(seenfiles, a_prune_reaches_the_file)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 100, "ch1");
    state_mark_seen(s, "A", 300, "ch1");
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_seen_count(s, "A"), 2);
    state_prune_seen(s, "A", 200);
    cr_expect_eq(state_seen_count(s, "A"), 1);
    cr_expect_not(state_seen(s, "A", 100, "ch1"));
    cr_expect_eq(state_seen_floor(s, "A"), 200);
    state_prune_seen(s, "A", 150); /* an older page: nothing to record */
    state_save_ok(s);
    state_save_ok(s);
    cr_expect_eq(section_size("floors"), 0);
    state_close(s);
    char *a = file_of("A");
    char *text = slurp(a);
    cr_expect_str_eq(text, "{\"serial\":\"A\",\"floor\":200,\"seen\":{\"300/ch1\":1}}\n");
    free(text);
    free(a);
    s = state_open_ok(path);
    cr_expect_eq(state_seen_floor(s, "A"), 200);
    cr_expect_eq(state_seen_count(s, "A"), 1);
    state_close(s);
}

/* A dry run saves the ledger only: no device file is written. */
Test(seenfiles, a_dry_run_writes_no_device_file)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 100, "ch1");
    struct err e = {{0}};
    cr_assert_eq(state_save_budget(s, &e), 0, "%s", e.msg);
    state_close(s);
    cr_expect_not(exists(sdir));
}

/* --- damaged files ----------------------------------------------------- */

/* A corrupt device file is moved aside (mode 0600, whole) with a warning
 * naming it; the device keeps the journal's keys, and the run goes on. */
Test(seenfiles, a_corrupt_device_file_is_set_aside_and_the_run_goes_on)
{
    static const char *const texts[] = {
        "not json",
        "{\"serial\":\"A\",\"seen\":{\"x/\":1}}",
        "{\"serial\":\"A\",\"floor\":\"1\"}",
        "{\"serial\":\"B\",\"seen\":{}}",
        "",
    };
    static const char *const why[] = {
        "corrupt seen file: null expected at offset 1",
        "corrupt seen file: seen.A: key 'x/' is not UNIXTIME/KIND",
        "corrupt seen file: floors.A: not an integer",
        "corrupt seen file: serial: not 'A'",
        "corrupt seen file: empty",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        seen_and_saved("A");
        spew(path, "{\"version\":1,\"seen\":{\"A\":{\"200/ch1\":1}}}");
        char *a = file_of("A");
        spew(a, texts[i]);
        struct caught c;
        catch_stderr(&c);
        struct state *s = state_open_ok(path);
        bool old = state_seen(s, "A", 100, "ch1");
        bool journaled = state_seen(s, "A", 200, "ch1");
        char *log = release_stderr(&c);
        cr_expect_not(old, "%zu: a key of the corrupt file", i);
        cr_expect(journaled, "%zu: the journal's key", i);
        char *want =
            xasprintf("wsrelay: warning: %s: %s; moved aside to %s.corrupt-", a, why[i], a);
        cr_expect_eq(strncmp(log, want, strlen(want)), 0, "%zu: %s", i, log);
        cr_expect_not_null(strstr(log, "some of its events may be sent again"), "%s", log);
        free(want);
        free(log);
        char *aside = names_in(sdir, "A.json.corrupt-");
        cr_expect_neq(aside[0], '\0', "%zu: nothing moved aside", i);
        char *aside_path = in_dir(aside);
        char *text = slurp(aside_path);
        cr_expect_str_eq(text, texts[i], "%zu", i);
        cr_expect_eq(stat_of(aside_path).st_mode & 07777, 0600);
        free(text);
        unlink(aside_path);
        free(aside_path);
        free(aside);
        state_mark_seen(s, "A", 300, "ch1");
        state_save_ok(s);
        state_close(s);
        text = slurp(a);
        cr_expect_str_eq(text,
                         "{\"serial\":\"A\",\"floor\":0,\"seen\":{\"200/ch1\":1,\"300/ch1\":1}}\n",
                         "%zu", i);
        free(text);
        unlink(a);
        free(a);
    }
}

/* `wsrelay status` reads without the lock: a corrupt device file is
 * warned about and read as empty, never moved. */
Test(seenfiles, state_peek_leaves_a_corrupt_device_file_where_it_is)
{
    seen_and_saved("A");
    spew(path, "{\"version\":1}"); /* the journal written away */
    char *a = file_of("A");
    spew(a, "{");
    struct caught c;
    struct err e = {{0}};
    struct state *s = NULL;
    catch_stderr(&c);
    cr_assert_eq(state_peek(&s, path, &e), 0, "%s", e.msg);
    cr_expect_eq(state_seen_count(s, "A"), 0);
    state_close(s);
    char *log = release_stderr(&c);
    cr_expect_not_null(strstr(log, "corrupt seen file: unexpected end of data"), "%s", log);
    char *text = slurp(a);
    cr_expect_str_eq(text, "{");
    free(text);
    free(log);
    free(a);
}

/* A corrupt state file goes aside with its device files: they mark seen
 * what its outbox held, and would otherwise keep those events from ever
 * being sent again. */
Test(seenfiles, a_corrupt_state_file_takes_its_device_files_aside)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 100, "ch1");
    state_save_ok(s);
    state_close(s);
    spew(path, "{\"version\":1,");
    struct caught c;
    catch_stderr(&c);
    s = state_open_ok(path);
    char *log = release_stderr(&c);
    cr_assert_not_null(state_set_aside(s, NULL));
    cr_expect_not(state_seen(s, "A", 100, "ch1"), "an empty state, as before the split");
    char *aside = names_in(dir, "state.json.d.corrupt-");
    cr_expect_neq(aside[0], '\0', "the directory was not moved aside");
    char *want = xasprintf("its device files to %s/%s: starting over", dir, aside);
    cr_expect_not_null(strstr(log, want), "%s", log);
    char *moved = xasprintf("%s/%s/A.json", dir, aside);
    cr_expect(exists(moved));
    cr_expect_not(exists(sdir));
    state_save_ok(s);
    state_close(s);
    free(moved);
    free(want);
    free(aside);
    free(log);
}

/* A device file that cannot be read (here: a directory in its place) is
 * never overwritten: its serial stays in the journal, and saves fail
 * naming it. */
Test(seenfiles, an_unreadable_device_file_is_never_overwritten)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "B", 100, "ch1");
    s = state_reopen_ok(s, path);
    char *a = file_of("A");
    cr_assert_eq(mkdir(a, 0700), 0);
    struct caught c;
    catch_stderr(&c);
    state_mark_seen(s, "A", 100, "ch1");
    struct err e = {{0}};
    int rc = state_save(s, &e);
    char *log = release_stderr(&c);
    cr_expect_eq(rc, STATE_SAVED_BEHIND);
    char *want =
        xasprintf("%s: seen keys kept in the state file for now: %s: not a regular file (a "
                  "directory)",
                  path, a);
    cr_expect_str_eq(e.msg, want);
    cr_expect_not_null(strstr(log, "device A reads as having no seen file"), "%s", log);
    cr_expect_not(state_seen_known(s, "A"), "its keys are unknown");
    cr_expect(state_seen_known(s, "B"));
    cr_expect(state_seen_known(s, "C"), "no file: nothing seen yet, and that is known");
    state_close(s);
    s = state_open_ok(path);
    cr_expect(state_seen(s, "A", 100, "ch1"), "kept in the journal");
    state_close(s);
    cr_expect(S_ISDIR(stat_of(a).st_mode));
    free(want);
    free(log);
    free(a);
}

/* --- names and the directory -------------------------------------------- */

/* Every byte outside [A-Za-z0-9_-] of a serial is escaped: no name can
 * leave the directory or be one of its own temporary names. */
Test(seenfiles, any_serial_maps_to_a_safe_name_inside_the_directory)
{
    static const char *const serials[] = {"../up", "a/b",        "..",   ".", "\xc3\xa9t\xc3\xa9",
                                          "%41",   "x.json.tmp", "ok_-9"};
    struct state *s = state_open_ok(path);
    for (size_t i = 0; i < sizeof serials / sizeof serials[0]; i++)
        state_mark_seen(s, serials[i], 100 + (long long)i, "ch1");
    s = state_reopen_ok(s, path);
    for (size_t i = 0; i < sizeof serials / sizeof serials[0]; i++) {
        cr_expect(state_seen(s, serials[i], 100 + (long long)i, "ch1"), "%s", serials[i]);
        cr_expect_eq(state_seen_count(s, serials[i]), 1, "%s", serials[i]);
    }
    state_close(s);
    char *names = names_in(sdir, "");
    cr_expect_str_eq(names, "%2541.json %2E%2E%2Fup.json %2E%2E.json %2E.json %C3%A9t%C3%A9.json "
                            "a%2Fb.json ok_-9.json x%2Ejson%2Etmp.json");
    free(names);
    names = names_in(dir, "");
    cr_expect_str_eq(names, "state.json state.json.d state.json.fleet-1 state.json.lock");
    free(names);
}

/* A symlink in place of the directory is refused, by a run and by
 * `wsrelay status` alike, and nothing is written where it points. */
Test(seenfiles, a_symlinked_directory_is_refused)
{
    /* Beside a state file: without one, whatever is there goes aside. */
    struct state *first = state_open_ok(path);
    state_save_ok(first);
    state_close(first);
    char *elsewhere = xasprintf("%s/elsewhere", dir);
    cr_assert_eq(mkdir(elsewhere, 0700), 0);
    cr_assert_eq(symlink("elsewhere", sdir), 0);
    struct state *s = NULL;
    struct err e = {{0}};
    char *want =
        xasprintf("%s: is a symbolic link (refused: wsrelay never follows one here)", sdir);
    cr_expect_eq(state_open(&s, path, 0, &e), -1);
    cr_expect_null(s);
    cr_expect_str_eq(e.msg, want);
    memset(&e, 0, sizeof e);
    cr_expect_eq(state_peek(&s, path, &e), -1);
    cr_expect_str_eq(e.msg, want);
    char *names = names_in(elsewhere, "");
    cr_expect_str_eq(names, "");
    free(names);
    /* A file in its place is no directory either. */
    unlink(sdir);
    spew(sdir, "x");
    memset(&e, 0, sizeof e);
    cr_expect_eq(state_open(&s, path, 0, &e), -1);
    free(want);
    want = xasprintf("%s: not a directory", sdir);
    cr_expect_str_eq(e.msg, want);
    free(want);
    free(elsewhere);
}

/* A symlink planted as a device file is not followed: the read refuses it,
 * and it is never written through. */
Test(seenfiles, a_symlinked_device_file_is_not_followed)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "B", 100, "ch1");
    s = state_reopen_ok(s, path);
    state_close(s);
    char *target = xasprintf("%s/target", dir);
    spew(target, "{\"serial\":\"A\",\"seen\":{\"1/ch1\":1}}");
    char *a = file_of("A");
    cr_assert_eq(symlink(target, a), 0);
    struct caught c;
    catch_stderr(&c);
    s = state_open_ok(path);
    cr_expect_not(state_seen(s, "A", 1, "ch1"));
    state_mark_seen(s, "A", 2, "ch1");
    struct err e = {{0}};
    cr_expect_eq(state_save(s, &e), STATE_SAVED_BEHIND);
    state_close(s);
    free(release_stderr(&c));
    char *text = slurp(target);
    cr_expect_str_eq(text, "{\"serial\":\"A\",\"seen\":{\"1/ch1\":1}}");
    free(text);
    free(target);
    free(a);
}

/* --- saves that change nothing ------------------------------------------ */

/* A save that changes nothing writes no device file: not the one after a
 * flush, not a new run's first save over a journal already flushed (the
 * last save of a run leaves it in the state file), not a prune that
 * raises nothing. */
Test(seenfiles, a_save_that_changes_nothing_writes_no_device_file)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 100, "ch1");
    state_mark_seen(s, "A", 200, "ch1");
    state_prune_seen(s, "A", 150);
    state_save_ok(s);
    char *a = file_of("A");
    struct stat first = stat_of(a);
    state_save_ok(s);
    state_save_ok(s);
    state_close(s); /* the journal is still in the state file */
    s = state_open_ok(path);
    cr_expect_eq(section_size("seen"), 0, "flushed, then written away");
    state_close(s);

    struct stat after = stat_of(a);
    cr_expect_eq(after.st_ino, first.st_ino);
    cr_expect_eq(after.st_mtim.tv_sec, first.st_mtim.tv_sec);
    cr_expect_eq(after.st_mtim.tv_nsec, first.st_mtim.tv_nsec);
    /* A run that ended right after flushing: its state file still holds
     * the journal, which the next run's first save finds in the files. */
    spew(path, "{\"version\":1,\"seen\":{\"A\":{\"200/ch1\":1}},\"floors\":{\"A\":150}}\n");
    s = state_open_ok(path);
    state_prune_seen(s, "A", 150);
    state_save_ok(s);
    state_save_ok(s);
    state_close(s);
    after = stat_of(a);
    cr_expect_eq(after.st_ino, first.st_ino);
    cr_expect_eq(after.st_mtim.tv_sec, first.st_mtim.tv_sec);
    cr_expect_eq(after.st_mtim.tv_nsec, first.st_mtim.tv_nsec);
    cr_expect_eq(section_size("seen"), 0);
    cr_expect_eq(section_size("floors"), 0);
    free(a);
}

/* A state file removed to start over takes its device files with it: they
 * would mark seen what its outbox held, which is gone. They go aside with
 * a warning, and the relay starts over whole. */
Test(seenfiles, device_files_without_their_state_file_go_aside)
{
    seen_and_saved("A");
    char *a = file_of("A");
    cr_assert(exists(a));
    cr_assert_eq(unlink(path), 0);
    struct caught c;
    catch_stderr(&c);
    struct state *s = state_open_ok(path);
    char *log = release_stderr(&c);
    cr_expect_not_null(strstr(log, "no state file, but device files beside it: moved them aside"),
                       "%s", log);
    cr_expect_not(state_seen(s, "A", 100, "ch1"), "starting over");
    cr_expect_not(exists(a));
    state_close(s);
    free(log);
    free(a);
}

/* --- the high-water mark ------------------------------------------------ */

/* A device file that is lost (corrupt, moved aside) falls back to the
 * device's high-water mark, which the state file keeps: every entry up to
 * the newest one handled counts as seen (its floor is just above it), with
 * a warning, and the new file keeps that floor. Before, the device started
 * over with no key and its log was sent again. */
Test(seenfiles, a_lost_device_file_falls_back_to_the_state_files_mark)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 1795000100, "ch1");
    state_mark_seen(s, "A", 1795000300, "ch1");
    state_mark_seen(s, "A", 1795000200, "battery-level");
    state_save_ok(s);
    state_save_ok(s); /* the keys are in A's file alone now */
    state_close(s);
    char *a = file_of("A");
    spew(a, "{\"serial\":\"A\",\"seen\":");
    struct caught c;
    catch_stderr(&c);
    s = state_open_ok(path);
    long long floor = state_seen_floor(s, "A");
    char *log = release_stderr(&c);
    cr_expect_eq(floor, 1795000301, "%s", log);
    cr_expect_not_null(strstr(log, "device A: its seen file is lost; its entries up to "
                                   "1795000300"),
                       "%s", log);
    free(log);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_seen_floor(s, "A"), 1795000301, "the new file keeps it");
    state_close(s);
    char *text = slurp(a);
    cr_expect_not_null(strstr(text, "\"floor\":1795000301"), "%s", text);
    free(text);
    free(a);
}

/* A state written by the release before marks (version 2, its keys in the
 * device files, no "marks" section) loads as it is and gets a device's
 * mark when its file is first read (its next poll); from then on a lost
 * file falls back to it. */
Test(seenfiles, a_state_of_the_release_before_marks_gets_them_from_its_files)
{
    spew(path, "{\"version\":2,\"next_id\":1,\"seen\":{},\"floors\":{},\"outbox\":[]}\n");
    cr_assert_eq(mkdir(sdir, 0700), 0);
    char *a = file_of("5214000A");
    spew(a, "{\"serial\":\"5214000A\",\"floor\":1794998320,\"seen\":{\"1794999400/ch1\":1,"
            "\"1794999460/ch1\":1,\"1794999400/battery-level\":1}}");
    struct state *s = state_open_ok(path);
    cr_expect(state_seen(s, "5214000A", 1794999460, "ch1"));
    s = state_reopen_ok(s, path);
    state_close(s);
    char *text = slurp(path);
    cr_expect_not_null(strstr(text, "\"marks\":{\"5214000A\":1794999460}"), "%s", text);
    free(text);
    spew(a, "");
    s = state_open_ok(path);
    cr_expect_eq(state_seen_floor(s, "5214000A"), 1794999461);
    state_close(s);
    free(a);
}

/* The state of the release before device files (every key in the
 * journal) gets its marks from the journal. */
Test(seenfiles, a_state_of_the_release_before_device_files_gets_its_marks)
{
    char *p = xasprintf("%s/tests/data/state/0.1.0-17dc0d7.json", WSRELAY_SOURCE_DIR);
    char *fixture = slurp(p);
    cr_assert_not_null(fixture, "%s", p);
    spew(path, fixture);
    free(fixture);
    free(p);
    struct state *s = state_open_ok(path);
    cr_expect_eq(state_seen_count(s, "5214000B"), 3);
    s = state_reopen_ok(s, path);
    s = state_reopen_ok(s, path);
    state_close(s);
    char *b = file_of("5214000B");
    char *text = slurp(b);
    cr_assert_not_null(text);
    spew(b, "{");
    s = state_open_ok(path);
    long long floor = state_seen_floor(s, "5214000B");
    cr_expect_gt(floor, 1795000500, "no fallback: floor %lld\n%s", floor, text);
    state_close(s);
    free(text);
    free(b);
}

/* An entry dated years ahead (a device clock set wrong) raises the mark no
 * further than the run's clock and a little skew, and a mark that far ahead
 * in a state already written is brought down the same way: a lost file
 * then counts as handled what was handled, not every real alarm until 2099
 * (before: the mark stayed at the 2099 entry). */
Test(seenfiles, a_mark_is_never_far_ahead_of_the_clock)
{
    struct state *s = state_open_ok(path);
    state_clamp_clock(s, 1795000000, 0);
    state_mark_seen(s, "A", 1795000100, "ch1");
    state_mark_seen(s, "A", 4070908800, "ch1"); /* 2099-01-01 */
    state_save_ok(s);
    state_save_ok(s);
    state_close(s);
    char *text = slurp(path);
    cr_expect_null(strstr(text, "4070908800"), "%s", text);
    free(text);
    char *a = file_of("A");
    spew(a, "{");
    s = state_open_ok(path);
    state_clamp_clock(s, 1795000600, 0);
    long long floor = state_seen_floor(s, "A");
    cr_expect(floor > 1795000100 && floor <= 1795000000 + 86400, "floor %lld", floor);
    state_close(s);

    spew(path,
         "{\"version\":2,\"next_id\":1,\"seen\":{},\"floors\":{},\"marks\":{\"B\":4070908800},"
         "\"outbox\":[]}\n");
    char *b = file_of("B");
    spew(b, "{");
    s = state_open_ok(path);
    state_clamp_clock(s, 1795000600, 0);
    floor = state_seen_floor(s, "B");
    cr_expect(floor > 1795000000 && floor <= 1795000600 + 86400, "floor %lld", floor);
    state_close(s);
    free(b);
    free(a);
}

/* Whether the saved state file holds a mark for `serial`. */
static bool has_mark(const char *serial)
{
    struct json_object *root = json_object_from_file(path);
    struct json_object *marks = NULL;
    cr_assert_not_null(root, "%s", path);
    bool has = json_object_object_get_ex(root, "marks", &marks) &&
               json_object_object_get_ex(marks, serial, NULL);
    json_object_put(root);
    return has;
}

/* A device that left its account's list for good (its history dropped
 * after 30 days) leaves no mark in the state file, and a later read of its
 * keys in the same run does not bring the mark back: a device's file
 * raises its mark once, when it is loaded (before: marks stayed for every
 * serial ever seen, and every read scanned the file's keys again). */
Test(seenfiles, a_device_gone_for_good_leaves_no_mark)
{
    const long long t = 1795000000;
    char serial[] = "A", base[] = "B1", model[] = "TR-72wb", name[] = "a";
    struct state_device d = {.serial = serial, .base = base, .model = model, .name = name};
    struct state *s = state_open_ok(path);
    state_clamp_clock(s, t, 0);
    state_set_devices(s, "lab", &d, 1, t);
    state_mark_seen(s, "A", t - 100, "ch1");
    s = state_reopen_ok(s, path);
    state_save_ok(s);
    state_save_ok(s); /* its key is in its file alone */
    state_close(s);
    cr_assert_eq(section_size("seen"), 0);
    cr_expect(has_mark("A"));

    s = state_open_ok(path);
    state_clamp_clock(s, t + 31 * 86400, 0);
    cr_expect(state_seen(s, "A", t - 100, "ch1"));
    state_set_devices(s, "lab", &d, 0, t + 31 * 86400);
    cr_expect(state_seen(s, "A", t - 100, "ch1"), "its file stays");
    state_save_ok(s);
    state_close(s);
    cr_expect_not(has_mark("A"));
}

/* The cost of marks: one member per device in the state file, which every
 * save writes. Reports the bytes of 2000 devices' marks (docs/PERFORMANCE.md). */
Test(seenfiles, the_marks_of_2000_devices_cost_a_few_bytes_each)
{
    struct state *s = state_open_ok(path);
    state_clamp_clock(s, 1795000000, 0);
    for (int i = 0; i < 2000; i++) {
        char serial[16];
        snprintf(serial, sizeof serial, "5214%04X", (unsigned)i);
        state_mark_seen(s, serial, 1795000000 - i, "ch1");
    }
    s = state_reopen_ok(s, path);
    state_save_ok(s); /* the journal is in the device files */
    state_save_ok(s); /* and no longer in the state file */
    state_close(s);
    cr_assert_eq(section_size("marks"), 2000);
    cr_assert_eq(section_size("seen"), 0);
    struct json_object *root = json_object_from_file(path);
    struct json_object *marks = NULL;
    cr_assert(json_object_object_get_ex(root, "marks", &marks));
    size_t bytes = strlen(json_object_to_json_string_ext(marks, JSON_C_TO_STRING_PLAIN));
    char *text = slurp(path);
    fprintf(stderr, "marks of 2000 devices: %zu bytes (%.1f a device) in a state file of %zu\n",
            bytes, bytes / 2000.0, strlen(text));
    cr_expect_lt(bytes, 2000 * 24, "%zu bytes", bytes);
    free(text);
    json_object_put(root);
}
