/* The state file: loading, locking, saving, and each kind of record it
 * keeps. Every test works in its own temporary directory. */
#include "budget.h"
#include "proc.h"
#include "state.h"
#include "statefile.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static char *path; /* DIR/state.json */

static void setup(void)
{
    strcpy(dir, "/tmp/wsrelay-state-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    path = xasprintf("%s/state.json", dir);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(path);
}

TestSuite(state, .init = setup, .fini = teardown);

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

/* The state file, then a newline and the fleet file it names (the
 * committed part), when it names one: what a test looks for in "the
 * state" as a save wrote it; caller frees. */
static char *slurp_state(const char *p)
{
    char *text = slurp(p);
    const char *ref = text ? strstr(text, "\"fleet\":{\"generation\":") : NULL;
    if (!ref)
        return text;
    long long gen = 0, len = 0;
    cr_assert_eq(sscanf(ref, "\"fleet\":{\"generation\":%lld,\"length\":%lld", &gen, &len), 2);
    char *fleet_path = xasprintf("%s.fleet-%lld", p, gen);
    char *fleet = slurp(fleet_path);
    cr_assert_not_null(fleet, "no %s", fleet_path);
    cr_assert_geq(strlen(fleet), (size_t)len);
    char *both = xasprintf("%s\n%.*s", text, (int)len, fleet);
    free(fleet);
    free(fleet_path);
    free(text);
    return both;
}

/* A file of tests/data/, whole; caller frees. */
static char *read_fixture(const char *name)
{
    char *p = xasprintf("%s/tests/data/%s", WSRELAY_SOURCE_DIR, name);
    char *text = slurp(p);
    cr_assert_not_null(text, "%s", p);
    free(p);
    return text;
}

static void spew(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* A state that does not load: state_peek fails (its message in *e) and
 * leaves the file alone; state_open moves the file aside whole, mode 0600,
 * with the same message, and starts empty. The aside file is removed. */
static void open_fails(struct err *e)
{
    struct state *s = (struct state *)1;
    struct stat st;
    char *before = slurp(path);
    memset(e, 0, sizeof *e);
    cr_assert_eq(state_peek(&s, path, e), -1, "state_peek of a bad state succeeded");
    cr_assert_null(s);
    cr_assert_neq(e->msg[0], '\0');
    char *after = slurp(path);
    cr_assert_str_eq(after, before, "state_peek changed the file");
    free(after);
    struct err e2 = {{0}};
    cr_assert_eq(state_open(&s, path, 0, &e2), 0, "state_open: %s", e2.msg);
    const char *why = NULL;
    const char *aside = state_set_aside(s, &why);
    cr_assert_not_null(aside, "a bad state was not moved aside");
    cr_expect_str_eq(why, e->msg);
    char *prefix = xasprintf("%s.corrupt-", path);
    cr_expect_eq(strncmp(aside, prefix, strlen(prefix)), 0, "%s", aside);
    /* YYYYmmddTHHMMSSZ */
    const char *stamp = aside + strlen(prefix);
    cr_expect(strlen(stamp) >= 16 && stamp[8] == 'T' && stamp[15] == 'Z', "%s", aside);
    free(prefix);
    cr_expect_neq(stat(path, &st), 0, "the bad file is still there");
    cr_assert_eq(stat(aside, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);
    after = slurp(aside);
    cr_expect_str_eq(after, before, "the file moved aside");
    free(after);
    cr_expect_eq(state_outbox_count(s, NULL), 0);
    unlink(aside);
    state_close(s);
    free(before);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct event sample_event(const char *serial, long long unixtime, const char *kind)
{
    struct event ev = {
        .account = xstrdup("tokyo"),
        .serial = xstrdup(serial),
        .model = xstrdup("TR-72nw"),
        .name = xstrdup("冷蔵庫 1"),
        .base_serial = xstrdup("52000001"),
        .base_model = xstrdup("RTR500BW"),
        .base_name = xstrdup("Base \"A\"/west"),
        .unixtime = unixtime,
        .kind = xstrdup(kind),
        .text = xstrdup("High Limit 8.0°C \\ exceeded"),
        .channel_name = xstrdup("温度"),
        .channel_unit = xstrdup("°C"),
        .utc_offset = -570,
    };
    return ev;
}

/* A device as the caller hands it in, owning its strings. */
static struct state_device dev(const char *serial, const char *base, const char *model,
                               const char *name, long long last_poll)
{
    struct state_device d = {
        .serial = xstrdup_or_null(serial),
        .base = xstrdup_or_null(base),
        .model = xstrdup_or_null(model),
        .name = xstrdup_or_null(name),
        .last_poll = last_poll,
    };
    return d;
}

/* Hands `n` devices named by `serials` (base "X") to state_set_devices. */
static void set_devices(struct state *s, const char *account, const char *const *serials, size_t n,
                        long long now)
{
    struct state_device *d = xcalloc(n ? n : 1, sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = dev(serials[i], "X", "M", "N", 0);
    state_set_devices(s, account, d, n, now);
    state_devices_free(d, n);
}

/* The device `serial` of the account's list (a copy), or all zero. */
static struct state_device find_device(const struct state *s, const char *account,
                                       const char *serial)
{
    struct state_device found = {0};
    size_t n = 0;
    struct state_device *d = state_devices(s, account, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(d[i].serial, serial) == 0) {
            found = d[i];
            found.serial = found.base = found.model = found.name = found.group = NULL;
        }
    state_devices_free(d, n);
    return found;
}

static void expect_times(const struct state *s, const char *account, const char *serial,
                         long long first_known, long long last_poll, long long last_ok,
                         long long refused_until)
{
    struct state_device d = find_device(s, account, serial);
    cr_expect_eq(d.first_known, first_known, "%s first_known: want %lld, got %lld", serial,
                 first_known, d.first_known);
    cr_expect_eq(d.last_poll, last_poll, "%s last_poll: want %lld, got %lld", serial, last_poll,
                 d.last_poll);
    cr_expect_eq(d.last_ok, last_ok, "%s last_ok: want %lld, got %lld", serial, last_ok, d.last_ok);
    cr_expect_eq(d.refused_until, refused_until, "%s refused_until: want %lld, got %lld", serial,
                 refused_until, d.refused_until);
}

static size_t device_count(const struct state *s, const char *account)
{
    size_t n = 0;
    struct state_device *d = state_devices(s, account, &n);
    state_devices_free(d, n);
    return n;
}

static void expect_str_eq(const char *got, const char *want, const char *what)
{
    if (!want) {
        cr_expect_null(got, "%s: want NULL, got '%s'", what, got ? got : "");
        return;
    }
    cr_expect(got && strcmp(got, want) == 0, "%s: want '%s', got '%s'", what, want,
              got ? got : "(null)");
}

static void expect_event_eq(const struct event *a, const struct event *b)
{
    expect_str_eq(a->account, b->account, "account");
    expect_str_eq(a->serial, b->serial, "serial");
    expect_str_eq(a->model, b->model, "model");
    expect_str_eq(a->name, b->name, "name");
    expect_str_eq(a->base_serial, b->base_serial, "base_serial");
    expect_str_eq(a->base_model, b->base_model, "base_model");
    expect_str_eq(a->base_name, b->base_name, "base_name");
    cr_expect_eq(a->unixtime, b->unixtime);
    expect_str_eq(a->kind, b->kind, "kind");
    expect_str_eq(a->text, b->text, "text");
    expect_str_eq(a->channel_name, b->channel_name, "channel_name");
    expect_str_eq(a->channel_unit, b->channel_unit, "channel_unit");
    cr_expect_eq(a->utc_offset, b->utc_offset);
}

/* --- open and load ----------------------------------------------------- */

Test(state, missing_file_is_empty)
{
    struct state *s = state_open_ok(path);
    size_t n = 99;
    struct ratelimit rl;
    long long at = 5;
    cr_expect_not(state_seen(s, "5214000A", 1795000000, "ch1"));
    cr_expect_eq(state_seen_count(s, "5214000A"), 0);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 0);
    cr_expect_null(state_devices(s, "tokyo", &n));
    cr_expect_eq(n, 0);
    cr_expect_eq(state_calls_since(s, "tbzz9999", PLATFORM_ALERT, 0), 0);
    cr_expect_eq(state_last_call(s, "tbzz9999", PLATFORM_ALERT), 0);
    cr_expect_eq(state_blocked_until(s, "tbzz9999", PLATFORM_CURRENT), 0);
    cr_expect_not(state_ratelimit(s, "tbzz9999", PLATFORM_ALERT, &rl, &at));
    cr_expect_eq(at, 0);
    cr_expect_eq(state_outbox_count(s, NULL), 0);
    cr_expect_null(state_outbox_due(s, "ops", 1LL << 40, &n));
    cr_expect_eq(n, 0);
    struct throttle_entry t = {.last_sent = 1, .held = 2, .held_since = 3};
    cr_expect_not(state_throttle(s, "r", "5214000A", "ch1", &t));
    cr_expect(t.last_sent == 0 && t.held == 0 && t.held_since == 0);
    cr_expect_eq(state_prune_throttles(s, 1LL << 40), 0);
    cr_expect_eq(state_counter(s, "dropped"), 0);
    /* Opening does not write the state file. */
    cr_expect_eq(access(path, F_OK), -1);
    state_save_ok(s);
    char *text = slurp(path);
    cr_assert_not_null(text);
    cr_expect_eq(strncmp(text, "{\"version\":2,", 13), 0, "file: %s", text);
    cr_expect_eq(text[strlen(text) - 1], '\n');
    free(text);
    state_close(s);
}

/* A delivery's error may have been cut anywhere, even inside a character
 * (struct err holds 1024 bytes), and may hold control characters: the
 * state keeps it as valid UTF-8 on one line, so that the next load does
 * not take the file for a corrupt one. */
Test(state, a_delivery_error_cut_inside_a_character_keeps_the_state_whole)
{
    struct state *s = state_open_ok(path);
    struct event ev = sample_event("5214000A", 1795000000, "ch1");
    state_enqueue(s, "mail", &ev, 1795000210);
    event_clear(&ev);
    /* "冷" is E5 86 B7: its first two bytes, then the end of the text. */
    state_outbox_failed(s, 1, "template /etc/wsrelay/\xe5\x86 line\n2\tend \xe5\x86", 1795000220);
    s = state_reopen_ok(s, path);
    cr_assert_null(state_set_aside(s, NULL), "the state was not set aside");
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "mail", 1795009999, &n);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(items[0].last_error, "template /etc/wsrelay/?? line 2 end ??");
    cr_expect_eq(items[0].attempts, 1);
    state_outbox_free(items, n);
    state_close(s);
}

Test(state, round_trip_of_every_kind_of_data)
{
    struct state *s = state_open_ok(path);
    struct state_device *devs = xcalloc(2, sizeof *devs);
    devs[0] = dev("5214000A", "52000001", "TR-72nw", "冷蔵庫", 0);
    devs[1] = dev("5214000B", "52000001", "TR-71nw", "", 0);
    struct ratelimit rl = {.present = true, .limit = 12, .remaining = 3, .reset = 1800};
    struct event ev = sample_event("5214000A", 1795000000, "ch1");

    state_mark_seen(s, "5214000A", 1795000000, "ch1");
    state_mark_seen(s, "5214000A", 1795000000, "battery-level");
    state_set_devices(s, "tokyo", devs, 2, 1795000100);
    state_set_discovered(s, "tokyo", 1795000100);
    state_devices_free(devs, 2);
    state_device_polled(s, "tokyo", "5214000A", "52000001", 1795000200, true);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 1795000150);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 1795000200);
    state_record_call(s, "tbzz9999", PLATFORM_CURRENT, 1795000100);
    state_block(s, "tbzz9999", PLATFORM_ALERT, 1795003800);
    state_set_ratelimit(s, "tbzz9999", PLATFORM_ALERT, &rl, 1795000200);
    state_enqueue(s, "ops-hook", &ev, 1795000210);
    state_enqueue(s, "mail", &ev, 1795000210);
    state_outbox_failed(s, 2, "SMTP 451 try later", 1795000220);

    s = state_reopen_ok(s, path);

    cr_expect(state_seen(s, "5214000A", 1795000000, "ch1"));
    cr_expect(state_seen(s, "5214000A", 1795000000, "battery-level"));
    cr_expect_not(state_seen(s, "5214000A", 1795000000, "ch2"));
    cr_expect_eq(state_seen_count(s, "5214000A"), 2);

    cr_expect_eq(state_discovered_at(s, "tokyo"), 1795000100);
    size_t n = 0;
    struct state_device *got = state_devices(s, "tokyo", &n);
    cr_assert_eq(n, 2);
    expect_str_eq(got[0].serial, "5214000A", "serial");
    expect_str_eq(got[0].base, "52000001", "base");
    expect_str_eq(got[0].model, "TR-72nw", "model");
    expect_str_eq(got[0].name, "冷蔵庫", "name");
    cr_expect_eq(got[0].last_poll, 1795000200);
    expect_str_eq(got[1].serial, "5214000B", "serial");
    expect_str_eq(got[1].name, "", "name");
    cr_expect_eq(got[1].last_poll, 0);
    state_devices_free(got, n);

    cr_expect_eq(state_calls_since(s, "tbzz9999", PLATFORM_ALERT, 0), 2);
    cr_expect_eq(state_calls_since(s, "tbzz9999", PLATFORM_CURRENT, 0), 1);
    cr_expect_eq(state_last_call(s, "tbzz9999", PLATFORM_ALERT), 1795000200);
    cr_expect_eq(state_blocked_until(s, "tbzz9999", PLATFORM_ALERT), 1795003800);
    cr_expect_eq(state_blocked_until(s, "tbzz9999", PLATFORM_CURRENT), 0);
    struct ratelimit back;
    long long at = 0;
    cr_assert(state_ratelimit(s, "tbzz9999", PLATFORM_ALERT, &back, &at));
    cr_expect(back.present);
    cr_expect_eq(back.limit, 12);
    cr_expect_eq(back.remaining, 3);
    cr_expect_eq(back.reset, 1800);
    cr_expect_eq(at, 1795000200);
    cr_expect_not(state_ratelimit(s, "tbzz9999", PLATFORM_CURRENT, &back, NULL));

    cr_expect_eq(state_outbox_count(s, NULL), 2);
    struct outbox_item *items = state_outbox_due(s, "ops-hook", 1795000300, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(items[0].id, 1);
    expect_str_eq(items[0].receiver, "ops-hook", "receiver");
    cr_expect_eq(items[0].attempts, 0);
    cr_expect_eq(items[0].queued_at, 1795000210);
    cr_expect_eq(items[0].next_try, 1795000210);
    cr_expect_null(items[0].last_error);
    expect_event_eq(&items[0].event, &ev);
    state_outbox_free(items, n);
    items = state_outbox_due(s, "mail", 1795000300, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(items[0].id, 2);
    cr_expect_eq(items[0].attempts, 1);
    cr_expect_eq(items[0].next_try, 1795000280);
    expect_str_eq(items[0].last_error, "SMTP 451 try later", "last_error");
    state_outbox_free(items, n);

    /* Ids are never reused, even after the queue empties. */
    state_outbox_done(s, 1);
    state_outbox_done(s, 2);
    s = state_reopen_ok(s, path);
    state_enqueue(s, "ops-hook", &ev, 1795000400);
    items = state_outbox_due(s, "ops-hook", 1795000400, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(items[0].id, 3);
    state_outbox_free(items, n);

    event_clear(&ev);
    state_close(s);
}

Test(state, file_mode_is_0600_and_no_temp_file_is_left)
{
    umask(0);
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 1, "ch1");
    state_save_ok(s);
    state_save_ok(s); /* replacing an existing file too */
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0600, "mode %o", (unsigned)(st.st_mode & 07777));
    char *tmp = xasprintf("%s.tmp", path);
    cr_expect_eq(access(tmp, F_OK), -1, "%s is left behind", tmp);
    free(tmp);
    char *lock = xasprintf("%s.lock", path);
    cr_assert_eq(stat(lock, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0600, "lock mode %o", (unsigned)(st.st_mode & 07777));
    free(lock);
    state_close(s);
}

Test(state, second_open_in_the_same_process_waits_then_fails)
{
    struct state *s1 = state_open_ok(path);
    struct state *s2 = NULL;
    struct err e = {{0}};
    double t0 = now_s();
    cr_assert_eq(state_open(&s2, path, 1, &e), -1);
    double waited = now_s() - t0;
    cr_expect_null(s2);
    cr_expect(waited >= 0.9 && waited < 2.5, "waited %.2f s", waited);
    char *want = xasprintf("%s: locked by another wsrelay run (pid %ld)", path, (long)getpid());
    expect_str_eq(e.msg, want, "message");
    free(want);
    state_close(s1);
    cr_assert_eq(state_open(&s2, path, 1, &e), 0, "%s", e.msg);
    state_close(s2);
}

Test(state, lock_held_by_another_process)
{
    int ready[2], release[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(release), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        struct state *s = NULL;
        char c = 0;
        close(ready[0]);
        close(release[1]);
        int rc = state_open(&s, path, 0, NULL);
        c = rc == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(2);
        while (read(release[0], &c, 1) > 0)
            ;
        state_close(s);
        _exit(0);
    }
    close(ready[1]);
    close(release[0]);
    char c = 0;
    cr_assert_eq(read(ready[0], &c, 1), 1);
    cr_assert_eq(c, 'y', "the child could not open the state");

    struct state *s = NULL;
    struct err e = {{0}};
    double t0 = now_s();
    int rc = state_open(&s, path, 1, &e);
    double waited = now_s() - t0;
    char *want = xasprintf("%s: locked by another wsrelay run (pid %ld)", path, (long)child);
    cr_expect_eq(rc, -1);
    expect_str_eq(e.msg, want, "message");
    cr_expect(waited >= 0.9 && waited < 2.5, "waited %.2f s", waited);
    free(want);

    /* The lock is given up when the other run ends; a waiting run gets it. */
    close(release[1]);
    rc = state_open(&s, path, 5, &e);
    cr_expect_eq(rc, 0, "%s", e.msg);
    state_close(s);
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]);
}

/* The inode of the state file: every save that writes renames a new
 * file into place. */
static ino_t inode_of(const char *p)
{
    struct stat st;
    cr_assert_eq(stat(p, &st), 0, "%s: %s", p, strerror(errno));
    return st.st_ino;
}

/* A save that would write what the file already holds writes nothing:
 * most runs change nothing, and need neither the write nor the fsyncs.
 * Read back by a new run, the file is still the document. (The save after
 * one that moved seen keys into their device's file writes the state file
 * once more, without them: the journal of state/seen.c.) */
Test(state, a_save_that_changes_nothing_writes_nothing)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "5214000A", 1795000000, "ch1");
    state_save_ok(s);
    ino_t journaled = inode_of(path);
    state_save_ok(s);
    ino_t first = inode_of(path);
    cr_expect_neq(first, journaled, "the journal flushed is written out");
    state_save_ok(s);
    cr_expect_eq(inode_of(path), first, "saved again without a change");
    s = state_reopen_ok(s, path);
    cr_expect_eq(inode_of(path), first, "a new run's save without a change");
    state_save_ok(s);
    cr_expect_eq(inode_of(path), first);
    state_mark_seen(s, "5214000A", 1795000060, "ch1");
    state_save_ok(s);
    cr_expect_neq(inode_of(path), first, "a change is written");
    s = state_reopen_ok(s, path);
    cr_expect(state_seen(s, "5214000A", 1795000060, "ch1"));
    state_close(s);
}

Test(state, corrupt_json_is_moved_aside)
{
    static const char *const texts[] = {
        "{\"version\":1,\"seen\":{", "{\"version\":1} trailing", "{\"version\":1,}", "", "not json",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct err e;
        spew(path, texts[i]);
        open_fails(&e);
        char *want = xasprintf("%s: corrupt state file: ", path);
        cr_expect_eq(strncmp(e.msg, want, strlen(want)), 0, "text %zu: %s", i, e.msg);
        free(want);
    }
    /* Text after a NUL byte is not ignored. */
    static const char nul[] = "{\"version\":1}\0{\"version\":1}";
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(nul, 1, sizeof nul - 1, f), sizeof nul - 1);
    cr_assert_eq(fclose(f), 0);
    struct err e;
    open_fails(&e);
    cr_expect_not_null(strstr(e.msg, "corrupt state file"), "%s", e.msg);

    /* A failed open releases the lock. */
    spew(path, "{\"version\":1}");
    state_close(state_open_ok(path));
}

Test(state, newer_version_is_refused)
{
    struct err e;
    spew(path, "{\"version\":3,\"whatever\":[]}\n");
    open_fails(&e);
    char *want = xasprintf("%s: written by a newer wsrelay (version 3)", path);
    expect_str_eq(e.msg, want, "message");
    free(want);
}

Test(state, wrong_shapes_inside_are_corrupt)
{
    static const char *const docs[] = {
        "[]",
        "{}",
        "{\"version\":\"1\"}",
        "{\"version\":1.5}",
        "{\"version\":0}",
        "{\"version\":1,\"next_id\":\"7\"}",
        "{\"version\":1,\"seen\":[]}",
        "{\"version\":1,\"seen\":{\"A\":[\"1/ch1\"]}}",
        "{\"version\":1,\"seen\":{\"A\":{\"ch1\":1}}}",
        "{\"version\":1,\"seen\":{\"A\":{\"12x/ch1\":1}}}",
        "{\"version\":1,\"seen\":{\"A\":{\"12/\":1}}}",
        "{\"version\":1,\"accounts\":{\"t\":[]}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"discovered_at\":\"x\"}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"devices\":{}}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"devices\":[7]}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"devices\":[{\"base\":\"B\"}]}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"devices\":[{\"serial\":1}]}}}",
        ("{\"version\":1,\"accounts\":{\"t\":{\"devices\":[{\"serial\":\"A\",\"last_poll\":null}]}}"
         "}"),
        "{\"version\":1,\"accounts\":{\"t\":{\"history\":[]}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"history\":{\"A\":1}}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"history\":{\"A\":{\"last_ok\":\"5\"}}}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"history\":{\"A\":{\"refused_until\":1.5}}}}}",
        "{\"version\":1,\"logins\":[]}",
        "{\"version\":1,\"logins\":{\"x\":1}}",
        "{\"version\":1,\"logins\":{\"x\":{\"alert\":[]}}}",
        "{\"version\":1,\"logins\":{\"x\":{\"alert\":{\"calls\":[1,\"2\"]}}}}",
        "{\"version\":1,\"logins\":{\"x\":{\"current\":{\"calls\":{}}}}}",
        "{\"version\":1,\"logins\":{\"x\":{\"alert\":{\"blocked_until\":true}}}}",
        "{\"version\":1,\"logins\":{\"x\":{\"alert\":{\"ratelimit\":{\"limit\":\"12\"}}}}}",
        "{\"version\":1,\"outbox\":{}}",
        "{\"version\":1,\"outbox\":[1]}",
        "{\"version\":1,\"outbox\":[{\"receiver\":\"r\",\"event\":{}}]}",
        "{\"version\":1,\"outbox\":[{\"id\":0,\"receiver\":\"r\"}]}",
        "{\"version\":1,\"outbox\":[{\"id\":1}]}",
        "{\"version\":1,\"outbox\":[{\"id\":1,\"receiver\":\"r\",\"attempts\":-1}]}",
        "{\"version\":1,\"outbox\":[{\"id\":1,\"receiver\":\"r\",\"next_try\":\"soon\"}]}",
        "{\"version\":1,\"outbox\":[{\"id\":1,\"receiver\":\"r\",\"last_error\":5}]}",
        "{\"version\":1,\"outbox\":[{\"id\":3,\"receiver\":\"r\"},{\"id\":3,\"receiver\":\"q\"}]}",
        "{\"version\":1,\"accounts\":{\"t\":{\"devices\":[{\"serial\":\"A\",\"group\":null}]}}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"devices\":[{\"serial\":\"A\",\"group\":[\"g\"]}]}}}",
        "{\"version\":1,\"throttles\":{}}",
        "{\"version\":1,\"throttles\":[1]}",
        "{\"version\":1,\"throttles\":[{\"serial\":\"A\",\"kind\":\"ch1\"}]}",
        "{\"version\":1,\"throttles\":[{\"rule\":\"r\",\"kind\":\"ch1\"}]}",
        "{\"version\":1,\"throttles\":[{\"rule\":\"r\",\"serial\":\"A\"}]}",
        "{\"version\":1,\"throttles\":[{\"rule\":1,\"serial\":\"A\",\"kind\":\"ch1\"}]}",
        "{\"version\":1,\"throttles\":[{\"rule\":\"r\",\"serial\":\"A\",\"kind\":\"ch1\","
        "\"last_sent\":\"5\"}]}",
        "{\"version\":1,\"throttles\":[{\"rule\":\"r\",\"serial\":\"A\",\"kind\":\"ch1\","
        "\"held\":1.5}]}",
        "{\"version\":1,\"throttles\":[{\"rule\":\"r\",\"serial\":\"A\",\"kind\":\"ch1\","
        "\"held\":-1}]}",
        "{\"version\":1,\"throttles\":[{\"rule\":\"r\",\"serial\":\"A\",\"kind\":\"ch1\","
        "\"held_since\":null}]}",
        ("{\"version\":1,\"throttles\":[{\"rule\":\"r\",\"serial\":\"A\",\"kind\":\"ch1\"},"
         "{\"rule\":\"q\",\"serial\":\"A\",\"kind\":\"ch1\"},"
         "{\"rule\":\"r\",\"serial\":\"A\",\"kind\":\"ch1\",\"held\":2}]}"),
        "{\"version\":1,\"counters\":[]}",
        "{\"version\":1,\"counters\":{\"dropped\":\"3\"}}",
        "{\"version\":1,\"counters\":{\"dropped\":1,\"throttled\":2.5}}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        struct err e;
        spew(path, docs[i]);
        open_fails(&e);
        char *want = xasprintf("%s: corrupt state file: ", path);
        cr_expect_eq(strncmp(e.msg, want, strlen(want)), 0, "doc %zu (%s): %s", i, docs[i], e.msg);
        free(want);
    }
}

Test(state, unknown_members_are_kept)
{
    spew(path, "{\"version\":1,\"future\":{\"x\":[1,2]},\"logins\":{\"l\":{\"other\":1}}}");
    struct state *s = state_open_ok(path);
    state_save_ok(s);
    state_close(s);
    char *text = slurp(path);
    cr_expect_not_null(strstr(text, "\"future\":{\"x\":[1,2]}"), "%s", text);
    cr_expect_not_null(strstr(text, "\"other\":1"), "%s", text);
    free(text);
}

Test(state, unwritable_directory_fails_at_open)
{
    struct state *s = NULL;
    struct err e = {{0}};
    char *file = xasprintf("%s/plain", dir);
    spew(file, "x");
    char *bad = xasprintf("%s/state.json", file);
    cr_expect_eq(state_open(&s, bad, 0, &e), -1);
    cr_expect_null(s);
    char *want = xasprintf("%s: state directory %s is not writable: ", bad, file);
    cr_expect_eq(strncmp(e.msg, want, strlen(want)), 0, "%s", e.msg);
    free(want);
    free(bad);

    bad = xasprintf("%s/missing/state.json", dir);
    cr_expect_eq(state_open(&s, bad, 0, &e), -1);
    cr_expect_null(s);
    cr_expect_not_null(strstr(e.msg, "is not writable"), "%s", e.msg);
    free(bad);
    free(file);
}

/* --- seen keys --------------------------------------------------------- */

Test(state, seen_mark_prune_count)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 100, "ch1");
    state_mark_seen(s, "A", 100, "ch1"); /* twice is once */
    state_mark_seen(s, "A", 100, "ch2");
    state_mark_seen(s, "A", 200, "ch1");
    state_mark_seen(s, "A", 300, "battery-level");
    state_mark_seen(s, "B", 100, "ch1");
    cr_expect_eq(state_seen_count(s, "A"), 4);
    cr_expect_eq(state_seen_count(s, "B"), 1);
    cr_expect(state_seen(s, "A", 100, "ch2"));
    cr_expect_not(state_seen(s, "A", 101, "ch2"));
    cr_expect_not(state_seen(s, "C", 100, "ch1"));

    state_prune_seen(s, "A", 200); /* strictly older only */
    cr_expect_eq(state_seen_count(s, "A"), 2);
    cr_expect_not(state_seen(s, "A", 100, "ch1"));
    cr_expect_not(state_seen(s, "A", 100, "ch2"));
    cr_expect(state_seen(s, "A", 200, "ch1"));
    cr_expect(state_seen(s, "A", 300, "battery-level"));
    cr_expect_eq(state_seen_count(s, "B"), 1, "another serial is untouched");
    state_prune_seen(s, "C", 1000); /* unknown serial: nothing */
    state_prune_seen(s, "A", 1000);
    cr_expect_eq(state_seen_count(s, "A"), 0);

    s = state_reopen_ok(s, path);
    cr_expect_eq(state_seen_count(s, "A"), 0);
    cr_expect(state_seen(s, "B", 100, "ch1"));
    state_close(s);
}

/* --- devices ----------------------------------------------------------- */

Test(state, devices_keep_last_poll_across_discovery)
{
    struct state *s = state_open_ok(path);
    struct state_device *first = xcalloc(2, sizeof *first);
    first[0] = dev("A", "X", "TR-71", "one", 0);
    first[1] = dev("B", "X", "TR-72", "two", 0);
    state_set_devices(s, "tokyo", first, 2, 1000);
    state_devices_free(first, 2);
    state_device_polled(s, "tokyo", "A", "X", 1100, true);
    state_device_polled(s, "tokyo", "B", "X", 1200, false);

    struct state_device *second = xcalloc(2, sizeof *second);
    second[0] = dev("C", "Y", NULL, NULL, 0);
    second[1] = dev("A", "Y", "TR-71nw", "renamed", 5);
    state_set_devices(s, "tokyo", second, 2, 2000);
    state_set_discovered(s, "tokyo", 2000);
    state_devices_free(second, 2);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 2000);
    cr_expect_eq(state_discovered_at(s, "osaka"), 0);

    size_t n = 0;
    struct state_device *d = state_devices(s, "tokyo", &n);
    cr_assert_eq(n, 2, "B is gone, C is new");
    expect_str_eq(d[0].serial, "C", "serial");
    expect_str_eq(d[0].model, "", "model");
    expect_str_eq(d[0].name, "", "name");
    cr_expect_eq(d[0].last_poll, 0);
    expect_str_eq(d[1].serial, "A", "serial");
    expect_str_eq(d[1].base, "Y", "base");
    expect_str_eq(d[1].model, "TR-71nw", "model");
    expect_str_eq(d[1].name, "renamed", "name");
    cr_expect_eq(d[1].last_poll, 1100, "kept, got %lld", d[1].last_poll);
    cr_expect_eq(d[1].last_ok, 1100, "kept, got %lld", d[1].last_ok);
    cr_expect_eq(d[0].last_ok, 0);
    /* A copy: changing it does not change the state. */
    d[1].last_poll = 7;
    state_devices_free(d, n);
    d = state_devices(s, "tokyo", &n);
    cr_expect_eq(d[1].last_poll, 1100);
    state_devices_free(d, n);
    state_devices_free(NULL, 0);
    state_close(s);
}

Test(state, polling_an_unlisted_device_adds_it)
{
    struct state *s = state_open_ok(path);
    state_device_polled(s, "osaka", "HAND1", "BASE9", 500, false);
    cr_expect_eq(state_discovered_at(s, "osaka"), 0, "a poll is not a discovery");
    s = state_reopen_ok(s, path);
    size_t n = 0;
    struct state_device *d = state_devices(s, "osaka", &n);
    cr_assert_eq(n, 1);
    expect_str_eq(d[0].serial, "HAND1", "serial");
    expect_str_eq(d[0].base, "BASE9", "base");
    expect_str_eq(d[0].model, "", "model");
    expect_str_eq(d[0].name, "", "name");
    cr_expect_eq(d[0].last_poll, 500);
    cr_expect_eq(d[0].last_ok, 0, "a failed poll is not a successful one");
    state_devices_free(d, n);
    /* Polled again, through another base: still one entry, which follows. */
    state_device_polled(s, "osaka", "HAND1", "BASE7", 600, true);
    d = state_devices(s, "osaka", &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(d[0].last_poll, 600);
    cr_expect_eq(d[0].last_ok, 600);
    expect_str_eq(d[0].base, "BASE7", "base");
    state_devices_free(d, n);
    state_close(s);
}

Test(state, history_survives_empty_and_partial_discovery)
{
    static const char *const ab[] = {"A", "B"};
    static const char *const b[] = {"B"};
    struct state *s = state_open_ok(path);
    set_devices(s, "tokyo", ab, 2, 1000);
    state_device_polled(s, "tokyo", "A", "X", 1100, true);
    state_device_polled(s, "tokyo", "B", "X", 1200, false);

    /* One empty reply: no device is listed, none is forgotten. */
    set_devices(s, "tokyo", NULL, 0, 1300);
    cr_expect_eq(device_count(s, "tokyo"), 0);
    s = state_reopen_ok(s, path);
    /* A partial one: B is listed, A is not. */
    set_devices(s, "tokyo", b, 1, 1400);
    cr_expect_eq(device_count(s, "tokyo"), 1);
    expect_times(s, "tokyo", "B", 1000, 1200, 0, 0);
    /* A comes back with its history, whatever the caller says of it. */
    struct state_device *back = xcalloc(2, sizeof *back);
    back[0] = dev("A", "Y", "TR-71", "one", 5);
    back[0].last_ok = 6;
    back[0].first_known = 7;
    back[0].refused_until = 8;
    back[1] = dev("B", "X", "", "", 0);
    state_set_devices(s, "tokyo", back, 2, 1500);
    state_devices_free(back, 2);
    expect_times(s, "tokyo", "A", 1000, 1100, 1100, 0);
    expect_times(s, "tokyo", "B", 1000, 1200, 0, 0);
    s = state_reopen_ok(s, path);
    cr_expect_eq(device_count(s, "tokyo"), 2);
    expect_times(s, "tokyo", "A", 1000, 1100, 1100, 0);
    struct state_device *d = NULL;
    size_t n = 0;
    d = state_devices(s, "tokyo", &n);
    cr_assert_eq(n, 2);
    expect_str_eq(d[0].base, "Y", "the list is the discovery's");
    expect_str_eq(d[0].model, "TR-71", "model");
    state_devices_free(d, n);
    state_close(s);
}

Test(state, first_known_is_set_once)
{
    static const char *const all[] = {"HAND", "NEW"};
    struct state *s = state_open_ok(path);
    /* By a poll of an unlisted device. */
    state_device_polled(s, "tokyo", "HAND", "X", 500, false);
    expect_times(s, "tokyo", "HAND", 500, 500, 0, 0);
    /* By state_set_devices for a new one, which takes the caller's other
     * times but not its first_known. */
    struct state_device *d = xcalloc(2, sizeof *d);
    d[0] = dev("HAND", "X", "", "", 0);
    d[1] = dev("NEW", "X", "", "", 300);
    d[1].last_ok = 200;
    d[1].first_known = 42;
    d[1].refused_until = 700;
    state_set_devices(s, "tokyo", d, 2, 600);
    state_devices_free(d, 2);
    expect_times(s, "tokyo", "HAND", 500, 500, 0, 0);
    expect_times(s, "tokyo", "NEW", 600, 300, 200, 700);
    /* Later calls never move it. */
    state_device_polled(s, "tokyo", "HAND", "X", 900, true);
    state_device_polled(s, "tokyo", "NEW", "X", 950, true);
    set_devices(s, "tokyo", all, 2, 1000);
    s = state_reopen_ok(s, path);
    set_devices(s, "tokyo", all, 2, 2000);
    state_device_polled(s, "tokyo", "NEW", "X", 2100, false);
    expect_times(s, "tokyo", "HAND", 500, 900, 900, 0);
    expect_times(s, "tokyo", "NEW", 600, 2100, 950, 700);
    state_close(s);
}

Test(state, set_devices_does_not_set_the_discovery_time)
{
    static const char *const a[] = {"A"};
    struct state *s = state_open_ok(path);
    set_devices(s, "tokyo", a, 1, 1000);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 0);
    state_set_discovered(s, "tokyo", 1200);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 1200);
    set_devices(s, "tokyo", a, 1, 1300);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 1200);
    /* A new account: the time, and no devices. */
    state_set_discovered(s, "osaka", 1400);
    cr_expect_eq(device_count(s, "osaka"), 0);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 1200);
    cr_expect_eq(state_discovered_at(s, "osaka"), 1400);
    cr_expect_eq(device_count(s, "tokyo"), 1);
    state_close(s);
}

Test(state, refused_until_set_cleared_and_saved)
{
    static const char *const ab[] = {"A", "B"};
    struct state *s = state_open_ok(path);
    set_devices(s, "tokyo", ab, 1, 1000);
    state_device_refused(s, "tokyo", "A", 5000, 1);
    expect_times(s, "tokyo", "A", 1000, 0, 0, 5000);
    s = state_reopen_ok(s, path);
    expect_times(s, "tokyo", "A", 1000, 0, 0, 5000);
    state_device_polled(s, "tokyo", "A", "X", 1100, false);
    expect_times(s, "tokyo", "A", 1000, 1100, 0, 5000);
    state_device_refused(s, "tokyo", "A", 0, 0);
    s = state_reopen_ok(s, path);
    expect_times(s, "tokyo", "A", 1000, 1100, 0, 0);

    /* Refusing an unlisted device lists nothing and does not make it
     * known; listed later, it keeps the refusal and becomes known then. */
    state_device_refused(s, "tokyo", "B", 6000, 1);
    cr_expect_eq(device_count(s, "tokyo"), 1);
    s = state_reopen_ok(s, path);
    set_devices(s, "tokyo", ab, 2, 1200);
    expect_times(s, "tokyo", "B", 1200, 0, 0, 6000);
    state_close(s);
}

Test(state, history_of_devices_gone_30_days_is_dropped)
{
    const long long t0 = 1800000000, keep = 30LL * 86400;
    static const char *const abc[] = {"A", "B", "C"};
    static const char *const c[] = {"C"};
    struct state *s = state_open_ok(path);
    set_devices(s, "tokyo", abc, 3, t0);
    state_device_polled(s, "tokyo", "A", "X", t0 + 100, true);
    state_device_polled(s, "tokyo", "B", "X", t0 + 100, true);
    /* B has an item in the outbox, C stays listed. */
    struct event ev = sample_event("B", t0, "ch1");
    state_enqueue(s, "hook", &ev, t0 + 100);
    event_clear(&ev);

    /* Exactly 30 days after the last poll: kept. */
    set_devices(s, "tokyo", c, 1, t0 + 100 + keep);
    set_devices(s, "tokyo", abc, 3, t0 + 100 + keep);
    expect_times(s, "tokyo", "A", t0, t0 + 100, t0 + 100, 0);
    /* A second later: gone, unless listed or in the outbox. */
    set_devices(s, "tokyo", c, 1, t0 + 100 + keep);
    s = state_reopen_ok(s, path);
    set_devices(s, "tokyo", c, 1, t0 + 100 + keep + 1);
    s = state_reopen_ok(s, path);
    set_devices(s, "tokyo", abc, 3, t0 + 200 + keep);
    expect_times(s, "tokyo", "A", t0 + 200 + keep, 0, 0, 0);
    expect_times(s, "tokyo", "B", t0, t0 + 100, t0 + 100, 0);
    expect_times(s, "tokyo", "C", t0, 0, 0, 0);

    /* Kept while the time limit is not reached. */
    set_devices(s, "tokyo", c, 1, t0 + 100 + keep);
    set_devices(s, "tokyo", abc, 3, t0 + 300 + keep);
    expect_times(s, "tokyo", "A", t0 + 200 + keep, 0, 0, 0);

    /* Once its outbox item is delivered, B goes the same way. */
    state_outbox_done(s, 1);
    set_devices(s, "tokyo", c, 1, t0 + 101 + keep);
    set_devices(s, "tokyo", abc, 3, t0 + 400 + keep);
    expect_times(s, "tokyo", "B", t0 + 400 + keep, 0, 0, 0);
    state_close(s);
}

Test(state, old_file_with_times_in_the_device_list_loads)
{
    spew(path, "{\"version\":1,\"accounts\":{"
               "\"tokyo\":{\"discovered_at\":900,\"devices\":["
               "{\"serial\":\"A\",\"base\":\"X\",\"model\":\"M\",\"name\":\"N\",\"last_poll\":1000,"
               "\"last_ok\":800},"
               "{\"serial\":\"B\",\"base\":\"X\",\"model\":\"\",\"name\":\"\",\"last_poll\":0,"
               "\"last_ok\":0},"
               "{\"serial\":\"C\",\"base\":\"X\"}]},"
               "\"osaka\":{\"devices\":[{\"serial\":\"D\",\"last_poll\":50,\"last_ok\":40}],"
               "\"history\":{\"D\":{\"first_known\":10,\"last_poll\":60}}}}}\n");
    struct state *s = state_open_ok(path);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 900);
    cr_expect_eq(device_count(s, "tokyo"), 3);
    expect_times(s, "tokyo", "A", 800, 1000, 800, 0);
    expect_times(s, "tokyo", "B", 0, 0, 0, 0);
    expect_times(s, "tokyo", "C", 0, 0, 0, 0);
    /* The history wins over the list; it takes only what it lacks. */
    expect_times(s, "osaka", "D", 10, 60, 40, 0);

    /* Saved in the new shape, and an empty discovery forgets nothing. */
    s = state_reopen_ok(s, path);
    char *text = slurp_state(path);
    cr_expect_null(strstr(text, "\"name\":\"N\",\"last_poll\""), "%s", text);
    cr_expect_not_null(strstr(text, "\"history\":{\"A\":{\"first_known\":800,\"last_poll\":1000,"
                                    "\"last_ok\":800,\"refused_until\":0}"),
                       "%s", text);
    free(text);
    state_set_devices(s, "tokyo", NULL, 0, 2000);
    static const char *const abc[] = {"A", "B", "C"};
    set_devices(s, "tokyo", abc, 3, 2100);
    expect_times(s, "tokyo", "A", 800, 1000, 800, 0);
    expect_times(s, "tokyo", "B", 2100, 0, 0, 0);
    state_close(s);
}

/* --- budget ledger ----------------------------------------------------- */

Test(state, ledger_counts_since_and_drops_after_two_hours)
{
    const long long t = 1800000000;
    struct state *s = state_open_ok(path);
    state_record_call(s, "L", PLATFORM_ALERT, t - 3700);
    state_record_call(s, "L", PLATFORM_ALERT, t - 3600);
    state_record_call(s, "L", PLATFORM_ALERT, t - 10);
    state_record_call(s, "L", PLATFORM_ALERT, t);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, t - 3600), 3, "since is inclusive");
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, t - 3599), 2);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, t - 86400), 4);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_CURRENT, 0), 0, "ops are separate");
    cr_expect_eq(state_calls_since(s, "M", PLATFORM_ALERT, 0), 0, "logins are separate");
    cr_expect_eq(state_last_call(s, "L", PLATFORM_ALERT), t);

    /* Two hours later the first two fall out; one exactly two hours old
     * stays. */
    state_record_call(s, "L", PLATFORM_ALERT, t - 3600 + 7200);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 4);
    state_record_call(s, "L", PLATFORM_ALERT, t - 10 + 7200 + 1);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 3);

    s = state_reopen_ok(s, path);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 3);
    cr_expect_eq(state_last_call(s, "L", PLATFORM_ALERT), t + 7200 - 9);
    state_close(s);
}

Test(state, ledger_counts_calls_in_the_future)
{
    const long long t = 1800000000;
    struct state *s = state_open_ok(path);
    state_record_call(s, "L", PLATFORM_CURRENT, t);
    state_record_call(s, "L", PLATFORM_CURRENT, t + 60);
    /* The clock went back by ten minutes. */
    state_record_call(s, "L", PLATFORM_CURRENT, t - 600);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_CURRENT, t - 600 - 120), 3);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_CURRENT, t - 599), 2);
    cr_expect_eq(state_last_call(s, "L", PLATFORM_CURRENT), t + 60);
    /* Going back a long way does not drop what lies ahead of it. */
    state_record_call(s, "L", PLATFORM_CURRENT, t - 200000);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_CURRENT, t - 200000), 4);
    state_close(s);
}

Test(state, block_and_ratelimit)
{
    struct state *s = state_open_ok(path);
    state_block(s, "L", PLATFORM_ALERT, 5000);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_ALERT), 5000);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_CURRENT), 0);
    state_block(s, "L", PLATFORM_ALERT, 4000);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_ALERT), 4000, "the last word counts");

    struct ratelimit rl = {.present = true, .limit = 10, .remaining = 0, .reset = 90};
    state_set_ratelimit(s, "L", PLATFORM_CURRENT, &rl, 3000);
    struct ratelimit missing = {.present = false, .limit = 1, .remaining = 1, .reset = 1};
    state_set_ratelimit(s, "L", PLATFORM_CURRENT, &missing, 3100);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_ALERT), 4000);
    struct ratelimit got;
    long long at = 0;
    cr_assert(state_ratelimit(s, "L", PLATFORM_CURRENT, &got, &at));
    cr_expect_eq(got.limit, 10);
    cr_expect_eq(got.remaining, 0);
    cr_expect_eq(got.reset, 90);
    cr_expect_eq(at, 3000, "headers that were absent are not stored");
    char *text = slurp(path);
    cr_expect_not_null(
        strstr(text, "\"ratelimit\":{\"limit\":10,\"remaining\":0,\"reset\":90,\"at\":3000}"), "%s",
        text);
    free(text);
    state_close(s);
}

Test(state, oldest_call_since)
{
    struct state *s = state_open_ok(path);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 0), 0);
    state_record_call(s, "L", PLATFORM_ALERT, 100);
    state_record_call(s, "L", PLATFORM_ALERT, 300);
    state_record_call(s, "L", PLATFORM_ALERT, 200);
    state_record_call(s, "L", PLATFORM_ALERT, 50);
    state_record_call(s, "L", PLATFORM_CURRENT, 10);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 0), 50);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 150), 200);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 200), 200, "inclusive");
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 300), 300);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 301), 0);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_CURRENT, 0), 10);
    cr_expect_eq(state_oldest_call_since(s, "M", PLATFORM_ALERT, 0), 0);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 51), 100);
    state_close(s);
}

Test(state, clamp_clock_brings_future_times_back)
{
    const long long now = 1800000000;
    static const char *const fut[] = {"F", "P"};
    static const char *const past[] = {"P"};
    struct state *s = state_open_ok(path);
    /* Ledger: calls, a block and rate-limit headers from the future. */
    state_record_call(s, "L", PLATFORM_ALERT, now - 10);
    state_record_call(s, "L", PLATFORM_ALERT, now);
    state_record_call(s, "L", PLATFORM_ALERT, now + 100);
    state_record_call(s, "L", PLATFORM_ALERT, now + 900);
    state_record_call(s, "L", PLATFORM_CURRENT, now - 50);
    state_block(s, "L", PLATFORM_ALERT, now + 5000);
    state_block(s, "L", PLATFORM_CURRENT, now + 3600);
    struct ratelimit rl = {.present = true, .limit = 12, .remaining = 1, .reset = 60};
    state_set_ratelimit(s, "L", PLATFORM_ALERT, &rl, now + 300);
    state_set_ratelimit(s, "L", PLATFORM_CURRENT, &rl, now - 300);
    /* Devices: P is known and polled in the past, F in the future. */
    set_devices(s, "tokyo", past, 1, now - 1000);
    state_device_polled(s, "tokyo", "P", "X", now - 5, true);
    state_device_refused(s, "tokyo", "P", now + 86400, 3);
    set_devices(s, "tokyo", fut, 2, now + 50);
    state_device_polled(s, "tokyo", "F", "X", now + 60, true);
    state_device_refused(s, "tokyo", "F", now + 100000, 3);
    state_set_discovered(s, "tokyo", now + 10);
    state_set_discovered(s, "osaka", now - 10);
    /* Outbox: queued in the future, and a next try far ahead. */
    struct event ev = sample_event("F", now, "ch1");
    state_enqueue(s, "hook", &ev, now + 500);   /* id 1 */
    state_enqueue(s, "hook", &ev, now - 500);   /* id 2 */
    state_outbox_failed(s, 2, "x", now + 7000); /* next try now + 7060 */
    state_enqueue(s, "hook", &ev, now - 400);   /* id 3 */
    state_outbox_failed(s, 3, "x", now + 3540); /* next try now + 3600 */
    event_clear(&ev);

    state_clamp_clock(s, now, 3600);
    s = state_reopen_ok(s, path);

    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, now - 3600), 4, "still counted");
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, now), 3);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, now + 1), 0, "none left ahead");
    cr_expect_eq(state_last_call(s, "L", PLATFORM_ALERT), now);
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_ALERT, 0), now - 10, "untouched");
    cr_expect_eq(state_oldest_call_since(s, "L", PLATFORM_CURRENT, 0), now - 50);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_ALERT), now + 3600);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_CURRENT), now + 3600);
    struct ratelimit got;
    long long at = 0;
    cr_assert(state_ratelimit(s, "L", PLATFORM_ALERT, &got, &at));
    cr_expect_eq(at, now);
    cr_assert(state_ratelimit(s, "L", PLATFORM_CURRENT, &got, &at));
    cr_expect_eq(at, now - 300);

    expect_times(s, "tokyo", "F", now, now, now, now + 86400);
    expect_times(s, "tokyo", "P", now - 1000, now - 5, now - 5, now + 86400);
    cr_expect_eq(state_discovered_at(s, "tokyo"), now);
    cr_expect_eq(state_discovered_at(s, "osaka"), now - 10);

    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", now + 3600, &n);
    cr_assert_eq(n, 3, "every item is due within the longest backoff");
    cr_expect_eq(items[0].id, 2);
    cr_expect_eq(items[0].next_try, now + 3600);
    cr_expect_eq(items[0].queued_at, now - 500);
    cr_expect_eq(items[1].id, 3);
    cr_expect_eq(items[1].next_try, now + 3600);
    cr_expect_eq(items[2].id, 1);
    cr_expect_eq(items[2].queued_at, now);
    cr_expect_eq(items[2].next_try, now + 500, "within an hour: left as it was");
    state_outbox_free(items, n);

    /* A negative max_block is no block at all; times at the bounds stay. */
    state_clamp_clock(s, now, -5);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_ALERT), now);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, now), 3);
    expect_times(s, "tokyo", "F", now, now, now, now + 86400);
    state_close(s);
}

/* --- outbox ------------------------------------------------------------ */

Test(state, outbox_due_order_and_counts)
{
    struct state *s = state_open_ok(path);
    struct event ev = sample_event("A", 100, "ch1");
    state_enqueue(s, "hook", &ev, 300); /* id 1 */
    state_enqueue(s, "mail", &ev, 100); /* id 2 */
    state_enqueue(s, "hook", &ev, 200); /* id 3 */
    state_enqueue(s, "hook", &ev, 200); /* id 4 */
    state_enqueue(s, "hook", &ev, 900); /* id 5: not due at 500 */
    cr_expect_eq(state_outbox_count(s, NULL), 5);
    cr_expect_eq(state_outbox_count(s, "hook"), 4);
    cr_expect_eq(state_outbox_count(s, "mail"), 1);
    cr_expect_eq(state_outbox_count(s, "slack"), 0);

    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", 500, &n);
    cr_assert_eq(n, 3);
    cr_expect_eq(items[0].id, 3);
    cr_expect_eq(items[1].id, 4);
    cr_expect_eq(items[2].id, 1);
    state_outbox_free(items, n);
    cr_expect_null(state_outbox_due(s, "slack", 500, &n));
    cr_expect_eq(n, 0);

    state_outbox_failed(s, 3, "HTTP 500", 500);
    items = state_outbox_due(s, "hook", 500, &n);
    cr_assert_eq(n, 2, "a failed item waits");
    cr_expect_eq(items[0].id, 4);
    state_outbox_free(items, n);
    items = state_outbox_due(s, "hook", 560, &n);
    cr_assert_eq(n, 3, "and is due again after its backoff");
    cr_expect_eq(items[0].id, 3);
    state_outbox_free(items, n);

    state_outbox_done(s, 4);
    state_outbox_done(s, 4); /* already gone: nothing */
    state_outbox_done(s, 99);
    state_outbox_failed(s, 99, "x", 1);
    cr_expect_eq(state_outbox_count(s, NULL), 4);
    cr_expect_eq(state_outbox_count(s, "hook"), 3);
    state_outbox_done(s, 2);
    cr_expect_eq(state_outbox_count(s, "mail"), 0);
    cr_expect_eq(state_outbox_count(s, NULL), 3);
    state_outbox_free(NULL, 0);
    event_clear(&ev);
    state_close(s);
}

Test(state, outbox_backoff_doubles_to_an_hour)
{
    static const long long delays[] = {60, 120, 240, 480, 960, 1920, 3600, 3600, 3600};
    struct state *s = state_open_ok(path);
    struct event ev = sample_event("A", 100, "ch1");
    state_enqueue(s, "hook", &ev, 1000);
    long long now = 1000;
    for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++) {
        char error[32];
        snprintf(error, sizeof error, "failure %zu", i + 1);
        state_outbox_failed(s, 1, error, now);
        size_t n = 0;
        struct outbox_item *items = state_outbox_due(s, "hook", now + delays[i] - 1, &n);
        cr_expect_eq(n, 0, "attempt %zu: due too early", i + 1);
        state_outbox_free(items, n);
        items = state_outbox_due(s, "hook", now + delays[i], &n);
        cr_assert_eq(n, 1, "attempt %zu: not due after %lld s", i + 1, delays[i]);
        cr_expect_eq(items[0].next_try - now, delays[i], "attempt %zu", i + 1);
        cr_expect_eq(items[0].attempts, (int)i + 1);
        expect_str_eq(items[0].last_error, error, "last_error");
        cr_expect_eq(items[0].queued_at, 1000);
        state_outbox_free(items, n);
        now += delays[i] + 7;
    }
    event_clear(&ev);
    state_close(s);
}

Test(state, stored_event_round_trips_every_field)
{
    struct state *s = state_open_ok(path);
    struct event ev = sample_event("5214000A", 1795000000, "communication-status");
    struct event bare = {
        .account = xstrdup("a"),
        .serial = xstrdup("B"),
        .model = xstrdup(""),
        .name = xstrdup(""),
        .unixtime = -5,
        .kind = xstrdup("ch6"),
        .text = xstrdup(""),
        .utc_offset = 540,
    };
    state_enqueue(s, "hook", &ev, 10);
    state_enqueue(s, "hook", &bare, 11);
    s = state_reopen_ok(s, path);
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", 11, &n);
    cr_assert_eq(n, 2);
    expect_event_eq(&items[0].event, &ev);
    expect_event_eq(&items[1].event, &bare);
    state_outbox_free(items, n);
    event_clear(&ev);
    event_clear(&bare);
    state_close(s);
}

Test(state, unreadable_outbox_event_is_skipped)
{
    struct event ev = sample_event("A", 100, "ch1");
    struct json_object *good = event_to_json(&ev);
    char *text = xasprintf(
        "{\"version\":1,\"next_id\":2,\"outbox\":["
        "{\"id\":9,\"receiver\":\"hook\",\"event\":%s,\"attempts\":0,\"queued_at\":5,"
        "\"next_try\":5,\"last_error\":null},"
        "{\"id\":4,\"receiver\":\"hook\",\"event\":\"garbage\",\"queued_at\":1,\"next_try\":1},"
        "{\"id\":5,\"receiver\":\"hook\",\"event\":{\"serial\":\"A\"},\"queued_at\":2},"
        "{\"id\":6,\"receiver\":\"hook\",\"queued_at\":3}]}\n",
        json_object_to_json_string_ext(good, JSON_C_TO_STRING_PLAIN));
    spew(path, text);

    /* Catch the warnings. */
    char *log = xasprintf("%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);

    struct state *s = state_open_ok(path);
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", 100, &n);
    fflush(stderr);
    char *warnings = slurp(log);

    cr_assert_eq(n, 1);
    cr_expect_eq(items[0].id, 9);
    expect_event_eq(&items[0].event, &ev);
    state_outbox_free(items, n);
    cr_expect_eq(state_outbox_count(s, "hook"), 4, "unreadable items stay queued");
    cr_expect_not_null(strstr(warnings, "outbox item 4 for hook skipped"), "%s", warnings);
    cr_expect_not_null(strstr(warnings, "outbox item 5 for hook skipped"), "%s", warnings);
    cr_expect_not_null(strstr(warnings, "outbox item 6 for hook skipped"), "%s", warnings);

    /* The file's outbox was out of order and next_id too low: new ids still
     * go above every id in use, and lookups by id still work. */
    state_enqueue(s, "hook", &ev, 50);
    state_outbox_done(s, 6);
    state_outbox_failed(s, 9, "boom", 60);
    items = state_outbox_due(s, "hook", 60, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(items[0].id, 10);
    state_outbox_free(items, n);
    cr_expect_eq(state_outbox_count(s, NULL), 4);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    free(warnings);
    free(log);
    free(text);
    json_object_put(good);
    event_clear(&ev);
    state_close(s);
}

/* --- the outbox as the release before wrote it --------------------------- */

/* A trend of three readings of channel 1, one of them 0.1 + 0.2 (a double
 * that needs all 17 digits), owned by the event it is put in. */
static struct event_trend *three_readings(void)
{
    struct event_trend *t = xcalloc(1, sizeof *t);
    t->since = 1794996400;
    t->until = 1795000000;
    t->has_upper = true;
    t->upper = 8.0;
    t->series.serial = xstrdup("5214000B");
    t->series.model = xstrdup("TR-72nw");
    t->series.name = xstrdup("");
    t->series.base_serial = xstrdup("52000001");
    t->series.utc_offset = 540;
    t->series.channels[0] =
        (struct series_channel){.num = 1, .name = xstrdup("温度"), .unit = xstrdup("°C")};
    t->series.n_channels = 1;
    t->series.n_points = 3;
    t->series.points = xcalloc(3, sizeof *t->series.points);
    double values[] = {7.25, 0.1 + 0.2, -8.5};
    for (size_t i = 0; i < 3; i++)
        t->series.points[i] = (struct series_point){
            .unixtime = 1794996400 + 1800 * (long long)i, .data_id = 40 + (long)i, .valid = 1};
    for (size_t i = 0; i < 3; i++)
        t->series.points[i].v[0] = values[i];
    return t;
}

/* What a run and the next do to an outbox, at fixed times: items queued
 * for three receivers, failures with and without a message, a Retry-After,
 * a trend attached after the item was queued, a delivery; then a save and
 * more failures and a trend, on items as that save wrote them. */
static void outbox_story(struct state *s)
{
    struct event a = sample_event("5214000A", 1795000000, "ch1");
    struct event b = sample_event("5214000B", 1795000060, "battery-level");
    a.rule = xstrdup("cold");
    a.severity = xstrdup("critical");
    a.held = 3;
    a.held_since = 1794990000;
    a.group = xstrdup("lab/west");
    state_enqueue(s, "hook", &a, 1795000100);
    state_enqueue(s, "mail", &a, 1795000100);
    state_enqueue(s, "hook", &b, 1795000110);
    state_enqueue(s, "chat", &b, 1795000110);
    state_outbox_failed(s, 1, "HTTP 503: \"busy\"/retry\tlater", 1795000120);
    state_outbox_failed(s, 1, NULL, 1795000300);
    state_outbox_failed(s, 2, "SMTP 451 try later", 1795000120);
    state_outbox_not_before(s, 2, 1795009000);
    b.trend = three_readings();
    state_outbox_set_event(s, 3, &b);
    state_outbox_done(s, 4);
    state_enqueue(s, "chat", &a, 1795000130);
    /* The next run: the items as the save wrote them change again. */
    state_save_ok(s);
    state_outbox_failed(s, 3, "HTTP 500", 1795000400);
    state_outbox_failed(s, 1, "HTTP 503", 1795000500);
    state_outbox_set_event(s, 5, &b);
    event_clear(&a);
    event_clear(&b);
}

/* The state file as a save left it equals tests/data/`name`. */
static void expect_state_file(const char *name)
{
    char *got = slurp(path);
    char *want = read_fixture(name);
    cr_assert_not_null(got);
    cr_expect_str_eq(got, want, "the state file differs from tests/data/%s", name);
    free(got);
    free(want);
}

/* tests/data/state/outbox-0af75e8.json is what wsrelay at commit 0af75e8
 * (the release before the outbox was kept in C structures) saved after
 * outbox_story from an empty state. The same calls save the same bytes:
 * the outbox's form on disk did not change. */
Test(state, an_outbox_is_saved_byte_for_byte_as_the_release_before_saved_it)
{
    struct state *s = state_open_ok(path);
    outbox_story(s);
    state_save_ok(s);
    state_close(s);
    expect_state_file("state/outbox-0af75e8.json");
}

/* A state of the release before, edited by hand: white space, an item
 * with a member this version does not know, an event of 0.1.0 (no
 * state), items out of order, next_id too low. */
static const char hand_edited[] =
    "{ \"version\": 2, \"next_id\": 3,\n"
    "  \"outbox\": [\n"
    "    {\"id\": 12, \"receiver\": \"hook\", \"note\": \"kept\", \"event\": {\"account\": "
    "\"lab\", \"serial\": \"5214000A\", \"model\": \"TR-71nw\", \"name\": \"Fridge\", "
    "\"unixtime\": 1795000000, \"kind\": \"ch1\", \"text\": \"High Limit 8.0\\u00b0C exceeded\"}, "
    "\"attempts\": 2, \"queued_at\": 1795000100, \"next_try\": 1795000400, \"last_error\": "
    "\"HTTP 500\"},\n"
    "    {\"id\": 7, \"receiver\": \"mail\", \"queued_at\": 1795000050},\n"
    "    {\"id\": 9, \"receiver\": \"hook\", \"event\": {\"account\": \"lab\", \"serial\": "
    "\"5214000B\", \"model\": \"\", \"name\": \"\", \"unixtime\": 1795000010, \"kind\": "
    "\"battery-level\", \"text\": \"Battery low\", \"state\": \"battery\"}, "
    "\"attempts\": 0, \"queued_at\": 1795009999, \"next_try\": 1795099999, \"last_error\": null}\n"
    "  ]\n"
    "}\n";

/* tests/data/state/outbox-0af75e8-edited.json is what wsrelay at commit
 * 0af75e8 saved after loading hand_edited, going through the calls below
 * and the clamp of a clock that went back. The same calls on the same
 * file save the same bytes: a loaded item keeps what it had, members
 * unknown to this version and their order included. */
Test(state, a_loaded_outbox_changes_as_the_release_before_changed_it)
{
    spew(path, hand_edited);
    struct state *s = state_open_ok(path);
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", 1795000400, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(items[0].id, 12);
    cr_expect_str_eq(items[0].event.state, "alarm");
    cr_expect_str_eq(items[0].last_error, "HTTP 500");
    state_outbox_free(items, n);
    state_clamp_clock(s, 1795000200, 7200);
    state_outbox_failed(s, 12, "HTTP 502", 1795000200);
    state_outbox_not_before(s, 7, 1795001000);
    state_outbox_failed(s, 7, "SMTP 421", 1795000200);
    struct event ev = sample_event("5214000C", 1795000150, "ch2");
    state_enqueue(s, "hook", &ev, 1795000200);
    event_clear(&ev);
    state_save_ok(s);
    state_close(s);
    expect_state_file("state/outbox-0af75e8-edited.json");
}

/* tests/data/state/0.1.0-0af75e8.json is what wsrelay at commit 0af75e8
 * saved after loading tests/data/state/0.1.0.json (23 items written by
 * 0.1.0, whose events lack every member added since) and the calls
 * below: the same bytes again. */
Test(state, a_state_of_0_1_0_saves_its_outbox_as_the_release_before_saved_it)
{
    char *text = read_fixture("state/0.1.0.json");
    spew(path, text);
    free(text);
    struct state *s = state_open_ok(path);
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", LLONG_MAX, &n);
    cr_assert_eq(n, 23);
    state_outbox_failed(s, items[0].id, "HTTP 502", 1795090000);
    state_outbox_set_event(s, items[1].id, &items[2].event);
    state_outbox_done(s, items[3].id);
    state_outbox_free(items, n);
    state_clamp_clock(s, 1795000000, 7200);
    state_save_ok(s);
    state_close(s);
    expect_state_file("state/0.1.0-0af75e8.json");
}

Test(state, failed_save_leaves_the_previous_file)
{
    struct state *s = state_open_ok(path);
    state_mark_seen(s, "A", 1, "ch1");
    state_save_ok(s);
    char *before = slurp(path);
    state_mark_seen(s, "A", 2, "ch1");
    char *tmp = xasprintf("%s.tmp", path);
    cr_assert_eq(mkdir(tmp, 0700), 0);
    struct err e = {{0}};
    cr_expect_eq(state_save(s, &e), -1);
    cr_expect_not_null(strstr(e.msg, path), "%s", e.msg);
    char *after = slurp(path);
    expect_str_eq(after, before, "state file");
    /* Once the obstacle is gone the save goes through. */
    cr_assert_eq(rmdir(tmp), 0);
    state_save_ok(s);
    state_close(s);
    s = state_open_ok(path);
    cr_expect(state_seen(s, "A", 2, "ch1"));
    state_close(s);
    free(before);
    free(after);
    free(tmp);
}

Test(state, outbox_receivers)
{
    struct state *s = state_open_ok(path);
    size_t n = 99;
    cr_expect_null(state_outbox_receivers(s, &n));
    cr_expect_eq(n, 0);
    struct event ev = sample_event("A", 100, "ch1");
    state_enqueue(s, "hook", &ev, 1);  /* id 1 */
    state_enqueue(s, "mail", &ev, 1);  /* id 2 */
    state_enqueue(s, "hook", &ev, 1);  /* id 3 */
    state_enqueue(s, "alpha", &ev, 1); /* id 4 */
    event_clear(&ev);
    char **r = state_outbox_receivers(s, &n);
    cr_assert_eq(n, 3);
    expect_str_eq(r[0], "alpha", "receiver 0");
    expect_str_eq(r[1], "hook", "receiver 1");
    expect_str_eq(r[2], "mail", "receiver 2");
    for (size_t i = 0; i < n; i++)
        free(r[i]);
    free(r);
    state_outbox_done(s, 2);
    s = state_reopen_ok(s, path);
    r = state_outbox_receivers(s, &n);
    cr_assert_eq(n, 2);
    expect_str_eq(r[0], "alpha", "receiver 0");
    expect_str_eq(r[1], "hook", "receiver 1");
    for (size_t i = 0; i < n; i++)
        free(r[i]);
    free(r);
    state_close(s);
}

/* --- budget-only save -------------------------------------------------- */

static void save_budget_ok(struct state *s)
{
    struct err e = {{0}};
    cr_assert_eq(state_save_budget(s, &e), 0, "state_save_budget: %s", e.msg);
}

Test(state, save_budget_writes_only_the_ledger)
{
    static const char *const a[] = {"A"};
    static const char *const b[] = {"B"};
    struct state *s = state_open_ok(path);
    struct event ev = sample_event("A", 100, "ch1");
    state_mark_seen(s, "A", 100, "ch1");
    set_devices(s, "tokyo", a, 1, 1000);
    state_set_discovered(s, "tokyo", 1000);
    state_enqueue(s, "hook", &ev, 1000); /* id 1 */
    state_record_call(s, "L", PLATFORM_ALERT, 1000);
    state_save_ok(s);
    state_close(s);
    /* An unknown member on disk stays too. */
    char *before = slurp(path);
    cr_assert_eq(before[strlen(before) - 2], '}');
    before[strlen(before) - 2] = '\0';
    char *edited = xasprintf("%s,\"future\":[1]}\n", before);
    spew(path, edited);
    free(edited);
    free(before);

    /* What a dry run does in memory. */
    s = state_open_ok(path);
    state_mark_seen(s, "B", 200, "ch1");
    state_prune_seen(s, "A", 1000);
    set_devices(s, "tokyo", b, 1, 2000);
    state_set_discovered(s, "tokyo", 2000);
    state_device_polled(s, "tokyo", "B", "X", 2000, true);
    state_outbox_done(s, 1);
    state_enqueue(s, "mail", &ev, 2000);
    state_record_call(s, "L", PLATFORM_ALERT, 2000);
    state_record_call(s, "L", PLATFORM_CURRENT, 2000);
    state_block(s, "L", PLATFORM_ALERT, 5000);
    struct ratelimit rl = {.present = true, .limit = 12, .remaining = 0, .reset = 3000};
    state_set_ratelimit(s, "L", PLATFORM_ALERT, &rl, 2000);
    save_budget_ok(s);
    save_budget_ok(s); /* twice is once */
    state_close(s);    /* without a save */

    s = state_open_ok(path);
    /* The new ledger... */
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 2);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_CURRENT, 0), 1);
    cr_expect_eq(state_blocked_until(s, "L", PLATFORM_ALERT), 5000);
    struct ratelimit got;
    cr_expect(state_ratelimit(s, "L", PLATFORM_ALERT, &got, NULL));
    /* ...and everything else as it was. */
    cr_expect(state_seen(s, "A", 100, "ch1"));
    cr_expect_not(state_seen(s, "B", 200, "ch1"));
    cr_expect_eq(state_discovered_at(s, "tokyo"), 1000);
    cr_expect_eq(device_count(s, "tokyo"), 1);
    expect_times(s, "tokyo", "A", 1000, 0, 0, 0);
    cr_expect_eq(state_outbox_count(s, NULL), 1);
    cr_expect_eq(state_outbox_count(s, "hook"), 1);
    char *text = slurp(path);
    cr_expect_null(strstr(text, "\"B\""), "%s", text);
    cr_expect_not_null(strstr(text, "\"future\":[1]"), "%s", text);
    free(text);
    /* The next real id still follows the file's, not the dry run's. */
    state_enqueue(s, "hook", &ev, 3000);
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", 3000, &n);
    cr_assert_eq(n, 2);
    cr_expect_eq(items[1].id, 2);
    state_outbox_free(items, n);
    event_clear(&ev);
    state_close(s);
}

Test(state, save_budget_creates_a_missing_file)
{
    umask(022);
    struct state *s = state_open_ok(path);
    state_record_call(s, "L", PLATFORM_CURRENT, 1000);
    state_mark_seen(s, "A", 100, "ch1");
    state_device_polled(s, "tokyo", "A", "X", 1000, true);
    save_budget_ok(s);
    state_close(s);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0600, "mode %o", (unsigned)(st.st_mode & 07777));
    char *text = slurp(path);
    cr_expect_eq(strncmp(text, "{\"version\":2,", 13), 0, "file: %s", text);
    free(text);
    s = state_open_ok(path);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_CURRENT, 0), 1);
    cr_expect_not(state_seen(s, "A", 100, "ch1"));
    cr_expect_eq(device_count(s, "tokyo"), 0);
    state_close(s);
}

Test(state, save_budget_leaves_a_file_it_cannot_read)
{
    static const char *const texts[] = {"{\"version\":1,", "{\"version\":3}",
                                        "{\"version\":1,\"seen\":[]}"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct state *s = state_open_ok(path);
        state_record_call(s, "L", PLATFORM_ALERT, 1000);
        spew(path, texts[i]); /* a hand edit behind the lock's back */
        struct err e = {{0}};
        cr_expect_eq(state_save_budget(s, &e), -1, "text %zu", i);
        cr_expect_not_null(strstr(e.msg, "cannot save the budget"), "%s", e.msg);
        char *after = slurp(path);
        expect_str_eq(after, texts[i], "file after a failed budget save");
        free(after);
        state_close(s);
        cr_assert_eq(unlink(path), 0);
    }
}

Test(state, close_accepts_null)
{
    state_close(NULL);
}

Test(state, retry_after_only_ever_postpones)
{
    struct state *s = state_open_ok(path);
    struct event ev = sample_event("5214000A", 900, "ch1");
    state_enqueue(s, "slack", &ev, 1000);
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "slack", 1000, &n);
    cr_assert_eq(n, 1);
    unsigned long long id = items[0].id;
    state_outbox_free(items, n);
    state_outbox_failed(s, id, "HTTP 429", 1000); /* next try 1060 */
    state_outbox_not_before(s, id, 1030);
    items = state_outbox_due(s, "slack", 1059, &n);
    cr_expect_eq(n, 0, "1030 does not bring 1060 forward");
    state_outbox_free(items, n);
    state_outbox_not_before(s, id, 1500);
    items = state_outbox_due(s, "slack", 1499, &n);
    cr_expect_eq(n, 0);
    state_outbox_free(items, n);
    items = state_outbox_due(s, "slack", 1500, &n);
    cr_expect_eq(n, 1);
    state_outbox_free(items, n);
    event_clear(&ev);
    state_close(s);
}

/* --- device groups ----------------------------------------------------- */

Test(state, device_group_round_trips)
{
    struct state *s = state_open_ok(path);
    struct state_device *d = xcalloc(3, sizeof *d);
    d[0] = dev("A", "X", "TR-71", "one", 0);
    d[0].group = xstrdup("冷凍庫 \"B1\"");
    d[1] = dev("B", "X", "TR-72", "two", 0);
    d[1].group = xstrdup("");
    d[2] = dev("C", "X", "TR-72", "three", 0); /* group NULL: "" */
    state_set_devices(s, "tokyo", d, 3, 1000);
    state_devices_free(d, 3);
    /* A poll of a listed device keeps its group; an unlisted one has none. */
    state_device_polled(s, "tokyo", "A", "Y", 1100, true);
    state_device_polled(s, "tokyo", "D", "Y", 1100, true);
    s = state_reopen_ok(s, path);

    size_t n = 0;
    struct state_device *got = state_devices(s, "tokyo", &n);
    cr_assert_eq(n, 4);
    expect_str_eq(got[0].group, "冷凍庫 \"B1\"", "A group");
    expect_str_eq(got[1].group, "", "B group");
    expect_str_eq(got[2].group, "", "C group");
    expect_str_eq(got[3].serial, "D", "serial");
    expect_str_eq(got[3].group, "", "D group");
    state_devices_free(got, n);
    char *text = slurp_state(path);
    cr_expect_not_null(strstr(text, "{\"serial\":\"A\",\"base\":\"Y\",\"model\":\"TR-71\","
                                    "\"name\":\"one\",\"group\":\"冷凍庫 \\\"B1\\\"\"}"),
                       "%s", text);
    free(text);

    /* The next discovery replaces it, like the name. */
    d = xcalloc(1, sizeof *d);
    d[0] = dev("A", "X", "TR-71", "one", 0);
    d[0].group = xstrdup("lab");
    state_set_devices(s, "tokyo", d, 1, 2000);
    state_devices_free(d, 1);
    got = state_devices(s, "tokyo", &n);
    cr_assert_eq(n, 1);
    expect_str_eq(got[0].group, "lab", "A group");
    state_devices_free(got, n);
    state_close(s);
}

Test(state, old_file_without_groups_throttles_or_counters_loads)
{
    spew(path, "{\"version\":1,\"next_id\":1,\"seen\":{},"
               "\"accounts\":{\"tokyo\":{\"discovered_at\":900,"
               "\"devices\":[{\"serial\":\"A\",\"base\":\"X\",\"model\":\"M\",\"name\":\"N\"}],"
               "\"history\":{}}},\"logins\":{},\"outbox\":[]}\n");
    struct state *s = state_open_ok(path);
    size_t n = 0;
    struct state_device *d = state_devices(s, "tokyo", &n);
    cr_assert_eq(n, 1);
    expect_str_eq(d[0].group, "", "group");
    state_devices_free(d, n);
    struct throttle_entry t;
    cr_expect_not(state_throttle(s, "r", "A", "ch1", &t));
    cr_expect_eq(state_counter(s, "unrouted"), 0);
    /* Both sections are there once saved. */
    state_set_throttle(s, "r", "A", "ch1", &(struct throttle_entry){.last_sent = 5});
    state_count(s, "unrouted", 1);
    s = state_reopen_ok(s, path);
    cr_expect(state_throttle(s, "r", "A", "ch1", &t));
    cr_expect_eq(t.last_sent, 5);
    cr_expect_eq(state_counter(s, "unrouted"), 1);
    state_close(s);
}

/* --- throttles --------------------------------------------------------- */

static void expect_throttle(const struct state *s, const char *rule, const char *serial,
                            const char *kind, long long last_sent, long held, long long held_since)
{
    struct throttle_entry t;
    cr_assert(state_throttle(s, rule, serial, kind, &t), "no throttle %s/%s/%s", rule, serial,
              kind);
    cr_expect(t.last_sent == last_sent && t.held == held && t.held_since == held_since,
              "throttle %s/%s/%s: want %lld/%ld/%lld, got %lld/%ld/%lld", rule, serial, kind,
              last_sent, held, held_since, t.last_sent, t.held, t.held_since);
}

static void expect_no_throttle(const struct state *s, const char *rule, const char *serial,
                               const char *kind)
{
    struct throttle_entry t = {.last_sent = 9, .held = 9, .held_since = 9};
    cr_expect_not(state_throttle(s, rule, serial, kind, &t), "throttle %s/%s/%s is there", rule,
                  serial, kind);
    cr_expect(t.last_sent == 0 && t.held == 0 && t.held_since == 0, "not zeroed");
}

Test(state, throttles_set_get_replace_and_persist)
{
    struct state *s = state_open_ok(path);
    /* Set in no particular order: lookups must not depend on it. */
    state_set_throttle(s, "warm", "B", "ch1", &(struct throttle_entry){1000, 0, 0});
    state_set_throttle(s, "freezer-critical", "A", "ch2", &(struct throttle_entry){900, 3, 950});
    state_set_throttle(s, "freezer-critical", "A", "ch1", &(struct throttle_entry){800, 12, 850});
    state_set_throttle(s, "warm", "A", "battery-level", &(struct throttle_entry){700, 1, 710});
    state_set_throttle(s, "freezer-critical", "B", "ch1", &(struct throttle_entry){600, 0, 0});
    expect_throttle(s, "freezer-critical", "A", "ch1", 800, 12, 850);
    expect_throttle(s, "freezer-critical", "A", "ch2", 900, 3, 950);
    expect_throttle(s, "freezer-critical", "B", "ch1", 600, 0, 0);
    expect_throttle(s, "warm", "A", "battery-level", 700, 1, 710);
    expect_throttle(s, "warm", "B", "ch1", 1000, 0, 0);
    /* Each part of the key counts. */
    expect_no_throttle(s, "freezer-critical", "A", "ch3");
    expect_no_throttle(s, "freezer-critical", "C", "ch1");
    expect_no_throttle(s, "warm", "A", "ch1");
    expect_no_throttle(s, "cold", "A", "ch1");

    /* A negative count is none (the file would not load again otherwise). */
    state_set_throttle(s, "warm", "B", "ch2", &(struct throttle_entry){1000, -3, 0});
    expect_throttle(s, "warm", "B", "ch2", 1000, 0, 0);

    /* Replacing keeps one entry. */
    state_set_throttle(s, "freezer-critical", "A", "ch1", &(struct throttle_entry){2000, 0, 0});
    expect_throttle(s, "freezer-critical", "A", "ch1", 2000, 0, 0);

    s = state_reopen_ok(s, path);
    expect_throttle(s, "freezer-critical", "A", "ch1", 2000, 0, 0);
    expect_throttle(s, "freezer-critical", "A", "ch2", 900, 3, 950);
    expect_throttle(s, "freezer-critical", "B", "ch1", 600, 0, 0);
    expect_throttle(s, "warm", "A", "battery-level", 700, 1, 710);
    expect_throttle(s, "warm", "B", "ch1", 1000, 0, 0);
    char *text = slurp(path);
    cr_expect_not_null(strstr(text,
                              "\"throttles\":[{\"rule\":\"freezer-critical\",\"serial\":\"A\","
                              "\"kind\":\"ch1\",\"last_sent\":2000,\"held\":0,"
                              "\"held_since\":0},"),
                       "%s", text);
    const char *first =
        strstr(text, "\"rule\":\"freezer-critical\",\"serial\":\"A\",\"kind\":\"ch1\"");
    cr_expect_not_null(first);
    cr_expect_null(
        strstr(first + 1, "\"rule\":\"freezer-critical\",\"serial\":\"A\",\"kind\":\"ch1\""),
        "an entry appears twice: %s", text);
    free(text);
    state_close(s);
}

Test(state, throttles_of_a_hand_edited_file_are_found_in_any_order)
{
    spew(path, "{\"version\":1,\"throttles\":["
               "{\"rule\":\"z\",\"serial\":\"A\",\"kind\":\"ch1\",\"last_sent\":1},"
               "{\"rule\":\"a\",\"serial\":\"B\",\"kind\":\"ch1\",\"held\":4,\"held_since\":3},"
               "{\"rule\":\"a\",\"serial\":\"A\",\"kind\":\"ch2\",\"last_sent\":2,\"x\":true}]}");
    struct state *s = state_open_ok(path);
    expect_throttle(s, "z", "A", "ch1", 1, 0, 0);
    expect_throttle(s, "a", "B", "ch1", 0, 4, 3);
    expect_throttle(s, "a", "A", "ch2", 2, 0, 0);
    state_set_throttle(s, "m", "A", "ch1", &(struct throttle_entry){5, 0, 0});
    expect_throttle(s, "z", "A", "ch1", 1, 0, 0);
    expect_throttle(s, "m", "A", "ch1", 5, 0, 0);
    state_close(s);
}

Test(state, throttles_untouched_for_a_month_are_pruned)
{
    const long long now = 1800000000, before = now - 30 * 86400;
    struct state *s = state_open_ok(path);
    /* Sent recently. */
    state_set_throttle(s, "r", "A", "ch1", &(struct throttle_entry){now - 60, 0, 0});
    /* Sent long ago but holding back events since lately. */
    state_set_throttle(s, "r", "A", "ch2", &(struct throttle_entry){before - 5, 7, now - 3600});
    /* Exactly at the bound: kept (only "before" goes). */
    state_set_throttle(s, "r", "B", "ch1", &(struct throttle_entry){before, 0, 0});
    state_set_throttle(s, "r", "B", "ch2", &(struct throttle_entry){0, 1, before});
    /* Old on both counts, or never used. */
    state_set_throttle(s, "r", "C", "ch1", &(struct throttle_entry){before - 1, 0, 0});
    state_set_throttle(s, "r", "C", "ch2", &(struct throttle_entry){before - 100, 2, before - 50});
    state_set_throttle(s, "q", "C", "ch1", &(struct throttle_entry){0, 0, 0});
    cr_expect_eq(state_prune_throttles(s, before), 3);
    cr_expect_eq(state_prune_throttles(s, before), 0, "twice is once");
    s = state_reopen_ok(s, path);
    expect_throttle(s, "r", "A", "ch1", now - 60, 0, 0);
    expect_throttle(s, "r", "A", "ch2", before - 5, 7, now - 3600);
    expect_throttle(s, "r", "B", "ch1", before, 0, 0);
    expect_throttle(s, "r", "B", "ch2", 0, 1, before);
    expect_no_throttle(s, "r", "C", "ch1");
    expect_no_throttle(s, "r", "C", "ch2");
    expect_no_throttle(s, "q", "C", "ch1");
    /* What is left is still found after another entry comes. */
    state_set_throttle(s, "a", "A", "ch1", &(struct throttle_entry){now, 0, 0});
    expect_throttle(s, "r", "B", "ch2", 0, 1, before);
    expect_throttle(s, "a", "A", "ch1", now, 0, 0);
    state_close(s);
}

Test(state, clamp_clock_brings_throttles_back)
{
    const long long now = 1800000000;
    struct state *s = state_open_ok(path);
    state_set_throttle(s, "r", "A", "ch1", &(struct throttle_entry){now + 500, 2, now + 900});
    state_set_throttle(s, "r", "A", "ch2", &(struct throttle_entry){now - 500, 2, now + 1});
    state_set_throttle(s, "r", "B", "ch1", &(struct throttle_entry){now, 1, now - 10});
    state_clamp_clock(s, now, 3600);
    s = state_reopen_ok(s, path);
    expect_throttle(s, "r", "A", "ch1", now, 2, now);
    expect_throttle(s, "r", "A", "ch2", now - 500, 2, now);
    expect_throttle(s, "r", "B", "ch1", now, 1, now - 10);
    state_close(s);
}

/* --- counters ---------------------------------------------------------- */

Test(state, counters_add_up_and_persist)
{
    struct state *s = state_open_ok(path);
    state_count(s, "dropped", 2);
    state_count(s, "dropped", 3);
    state_count(s, "throttled", 1);
    state_count(s, "unrouted", 0);
    cr_expect_eq(state_counter(s, "dropped"), 5);
    cr_expect_eq(state_counter(s, "throttled"), 1);
    cr_expect_eq(state_counter(s, "unrouted"), 0);
    cr_expect_eq(state_counter(s, "other"), 0);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_counter(s, "dropped"), 5);
    cr_expect_eq(state_counter(s, "throttled"), 1);
    char *text = slurp(path);
    cr_expect_not_null(strstr(text, "\"counters\":{\"dropped\":5,\"throttled\":1,\"unrouted\":0}"),
                       "%s", text);
    free(text);
    /* A counter stops at the ends of a long long. */
    state_count(s, "dropped", LLONG_MAX);
    cr_expect_eq(state_counter(s, "dropped"), LLONG_MAX);
    state_count(s, "dropped", -1);
    cr_expect_eq(state_counter(s, "dropped"), LLONG_MAX - 1);
    state_count(s, "throttled", LLONG_MIN);
    state_count(s, "throttled", LLONG_MIN);
    cr_expect_eq(state_counter(s, "throttled"), LLONG_MIN);
    state_close(s);
}

Test(state, save_budget_leaves_throttles_and_counters_on_disk)
{
    struct state *s = state_open_ok(path);
    state_set_throttle(s, "r", "A", "ch1", &(struct throttle_entry){1000, 2, 1100});
    state_count(s, "dropped", 4);
    state_save_ok(s);
    state_close(s);

    /* What a dry run does in memory. */
    s = state_open_ok(path);
    state_set_throttle(s, "r", "A", "ch1", &(struct throttle_entry){2000, 0, 0});
    state_set_throttle(s, "r", "B", "ch1", &(struct throttle_entry){2000, 0, 0});
    state_prune_throttles(s, 1LL << 40);
    state_count(s, "dropped", 10);
    state_count(s, "unrouted", 1);
    state_record_call(s, "L", PLATFORM_ALERT, 2000);
    save_budget_ok(s);
    state_close(s); /* without a save */

    s = state_open_ok(path);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 1, "the ledger is written");
    expect_throttle(s, "r", "A", "ch1", 1000, 2, 1100);
    expect_no_throttle(s, "r", "B", "ch1");
    cr_expect_eq(state_counter(s, "dropped"), 4);
    cr_expect_eq(state_counter(s, "unrouted"), 0);
    state_close(s);
}

/* --- health of logins and receivers ------------------------------------ */

static void expect_health(const struct state_health *h, long long last_ok, long failures,
                          long long error_at, long status, const char *error)
{
    cr_expect_eq(h->last_ok, last_ok, "last_ok %lld, want %lld", h->last_ok, last_ok);
    cr_expect_eq(h->failures, failures, "failures %ld, want %ld", h->failures, failures);
    cr_expect_eq(h->error_at, error_at, "error_at %lld, want %lld", h->error_at, error_at);
    cr_expect_eq(h->status, status, "status %ld, want %ld", h->status, status);
    expect_str_eq(h->error, error, "error");
}

Test(state, health_of_logins_and_receivers_round_trips)
{
    struct state *s = state_open_ok(path);
    struct state_health h;
    cr_expect_not(state_login_health(s, "tbzz9999", &h));
    expect_health(&h, 0, 0, 0, 0, NULL);
    cr_expect_not(state_receiver_health(s, "hook", &h));

    state_login_result(s, "tbzz9999", false, 503, "HTTP 503 (code 503: busy)", 1000);
    state_login_result(s, "tbzz9999", false, 0, "connection refused", 1100);
    state_login_result(s, "other", true, 200, NULL, 1200);
    state_receiver_result(s, "hook", true, NULL, 1000);
    state_receiver_result(s, "hook", false, "webhook hook: HTTP 503", 1300);
    state_receiver_result(s, "hook", false, "webhook hook: HTTP 502", 1360);
    state_receiver_result(s, "mail", false, NULL, 1400);
    s = state_reopen_ok(s, path);

    cr_assert(state_login_health(s, "tbzz9999", &h));
    expect_health(&h, 0, 2, 1100, 0, "connection refused");
    state_health_clear(&h);
    cr_assert(state_login_health(s, "other", &h));
    expect_health(&h, 1200, 0, 0, 0, NULL);
    state_health_clear(&h);
    cr_assert(state_receiver_health(s, "hook", &h));
    expect_health(&h, 1000, 2, 1360, 0, "webhook hook: HTTP 502");
    state_health_clear(&h);
    cr_assert(state_receiver_health(s, "mail", &h));
    expect_health(&h, 0, 1, 1400, 0, "");
    state_health_clear(&h);

    /* A success clears the failures and keeps the last error for people
     * to read. */
    state_login_result(s, "tbzz9999", true, 200, NULL, 1500);
    state_receiver_result(s, "hook", true, NULL, 1500);
    s = state_reopen_ok(s, path);
    cr_assert(state_login_health(s, "tbzz9999", &h));
    expect_health(&h, 1500, 0, 1100, 0, "connection refused");
    state_health_clear(&h);
    cr_assert(state_receiver_health(s, "hook", &h));
    expect_health(&h, 1500, 0, 1360, 0, "webhook hook: HTTP 502");
    state_health_clear(&h);

    /* The login's health lives beside its ledger, the receivers' in a
     * section of their own. */
    char *text = slurp(path);
    cr_expect_not_null(strstr(text, "\"logins\":{\"tbzz9999\":{\"health\":{\"failures\":0,"
                                    "\"error_at\":1100,\"status\":0,"
                                    "\"error\":\"connection refused\",\"last_ok\":1500}}"),
                       "%s", text);
    cr_expect_not_null(strstr(text, "\"receivers\":{\"hook\":{"), "%s", text);
    free(text);
    state_health_clear(NULL);
    state_close(s);
}

Test(state, health_messages_are_cut_cleaned_and_stay_utf8)
{
    struct state *s = state_open_ok(path);
    struct buf long_msg;
    buf_init(&long_msg, 0);
    buf_puts(&long_msg, "x");
    for (int i = 0; i < 200; i++)
        buf_puts(&long_msg, "認"); /* 3 bytes each: 301 bytes in all once past 300 */
    state_login_result(s, "L", false, 401, buf_str(&long_msg), 1000);
    /* A control character, a lone continuation byte, a cut sequence at
     * the end (an error message cut by a fixed buffer). */
    state_receiver_result(s, "hook", false, "line one\nline\ttwo \x80 end \xe8\xaa", 1000);
    s = state_reopen_ok(s, path); /* the file must load again: valid UTF-8 */
    struct state_health h;
    cr_assert(state_login_health(s, "L", &h));
    cr_expect_eq(h.status, 401);
    cr_expect_eq(strlen(h.error), 1 + 99 * 3, "cut at a character: %zu bytes", strlen(h.error));
    /* The cut shows: "…" after the whole characters that fit. */
    cr_expect_eq(strncmp(h.error, buf_str(&long_msg), strlen(h.error) - 3), 0);
    cr_expect_str_eq(h.error + strlen(h.error) - 3, UTF8_ELLIPSIS, "%s", h.error);
    state_health_clear(&h);
    cr_assert(state_receiver_health(s, "hook", &h));
    expect_str_eq(h.error, "line one line two ? end ??", "cleaned");
    state_health_clear(&h);
    buf_free(&long_msg);
    state_close(s);
}

Test(state, old_file_without_health_loads)
{
    spew(path, "{\"version\":1,\"next_id\":1,\"seen\":{},\"accounts\":{},"
               "\"logins\":{\"L\":{\"alert\":{\"calls\":[900]}}},\"outbox\":[],"
               "\"throttles\":[],\"counters\":{}}\n");
    struct state *s = state_open_ok(path);
    struct state_health h;
    cr_expect_not(state_login_health(s, "L", &h));
    cr_expect_not(state_receiver_health(s, "hook", &h));
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 1);
    state_login_result(s, "L", true, 200, NULL, 1000);
    state_receiver_result(s, "hook", true, NULL, 1000);
    s = state_reopen_ok(s, path);
    cr_expect(state_login_health(s, "L", &h));
    cr_expect_eq(h.last_ok, 1000);
    cr_expect(state_receiver_health(s, "hook", &h));
    cr_expect_eq(h.last_ok, 1000);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 1);
    state_close(s);
}

Test(state, malformed_health_is_corrupt)
{
    static const char *const docs[] = {
        "{\"version\":1,\"logins\":{\"L\":{\"health\":[]}}}",
        "{\"version\":1,\"logins\":{\"L\":{\"health\":{\"last_ok\":\"5\"}}}}",
        "{\"version\":1,\"logins\":{\"L\":{\"health\":{\"failures\":-1}}}}",
        "{\"version\":1,\"logins\":{\"L\":{\"health\":{\"failures\":1.5}}}}",
        "{\"version\":1,\"logins\":{\"L\":{\"health\":{\"error_at\":null}}}}",
        "{\"version\":1,\"logins\":{\"L\":{\"health\":{\"status\":-401}}}}",
        "{\"version\":1,\"logins\":{\"L\":{\"health\":{\"error\":401}}}}",
        "{\"version\":1,\"receivers\":[]}",
        "{\"version\":1,\"receivers\":{\"hook\":1}}",
        "{\"version\":1,\"receivers\":{\"hook\":{\"last_ok\":true}}}",
        "{\"version\":1,\"receivers\":{\"hook\":{\"failures\":\"2\"}}}",
        "{\"version\":1,\"receivers\":{\"hook\":{\"error\":[\"x\"]}}}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        struct err e;
        spew(path, docs[i]);
        open_fails(&e);
        char *want = xasprintf("%s: corrupt state file: ", path);
        cr_expect_eq(strncmp(e.msg, want, strlen(want)), 0, "doc %zu (%s): %s", i, docs[i], e.msg);
        free(want);
    }
    /* null is a fine error: none. */
    spew(path, "{\"version\":1,\"receivers\":{\"hook\":{\"error\":null,\"failures\":0}}}");
    state_close(state_open_ok(path));
}

Test(state, save_budget_writes_login_health_but_not_receivers)
{
    struct state *s = state_open_ok(path);
    state_receiver_result(s, "hook", true, NULL, 1000);
    state_save_ok(s);
    state_close(s);

    /* What a dry run does in memory: real platform calls, no delivery
     * (run.c records none, but the state would not save one either). */
    s = state_open_ok(path);
    state_login_result(s, "L", false, 401, "HTTP 401", 2000);
    state_receiver_result(s, "hook", false, "would not be saved", 2000);
    save_budget_ok(s);
    state_close(s);

    s = state_open_ok(path);
    struct state_health h;
    cr_assert(state_login_health(s, "L", &h));
    expect_health(&h, 0, 1, 2000, 401, "HTTP 401");
    state_health_clear(&h);
    cr_assert(state_receiver_health(s, "hook", &h));
    expect_health(&h, 1000, 0, 0, 0, NULL);
    state_health_clear(&h);
    state_close(s);
}

Test(state, clamp_clock_brings_health_times_back)
{
    struct state *s = state_open_ok(path);
    state_login_result(s, "L", true, 200, NULL, 5000);
    state_login_result(s, "L", false, 503, "busy", 5100);
    state_login_result(s, "M", true, 200, NULL, 500);
    state_receiver_result(s, "hook", true, NULL, 5000);
    state_receiver_result(s, "hook", false, "down", 5200);
    state_heartbeat_result(s, true, 200, NULL, 5000);
    state_heartbeat_result(s, false, 500, "down", 5300);
    state_clamp_clock(s, 1000, 3600);
    struct state_health h;
    state_login_health(s, "L", &h);
    expect_health(&h, 1000, 1, 1000, 503, "busy");
    state_health_clear(&h);
    state_login_health(s, "M", &h);
    cr_expect_eq(h.last_ok, 500, "a time in the past stays");
    state_health_clear(&h);
    state_receiver_health(s, "hook", &h);
    expect_health(&h, 1000, 1, 1000, 0, "down");
    state_health_clear(&h);
    cr_assert(state_heartbeat(s, &h));
    expect_health(&h, 1000, 1, 1000, 500, "down");
    state_health_clear(&h);
    state_close(s);
}

/* --- outbox summary ----------------------------------------------------- */

Test(state, outbox_summary)
{
    struct state *s = state_open_ok(path);
    struct outbox_summary sum = {.count = 9, .oldest = 9, .next_try = 9};
    state_outbox_summary(s, "hook", &sum);
    cr_expect(sum.count == 0 && sum.oldest == 0 && sum.next_try == 0);
    struct event ev = sample_event("A", 100, "ch1");
    state_enqueue(s, "hook", &ev, 1000);     /* id 1 */
    state_enqueue(s, "hook", &ev, 900);      /* id 2 */
    state_enqueue(s, "mail", &ev, 800);      /* id 3 */
    state_outbox_failed(s, 2, "down", 1000); /* next try 1060 */
    state_outbox_summary(s, "hook", &sum);
    cr_expect_eq(sum.count, 2);
    cr_expect_eq(sum.oldest, 900);
    cr_expect_eq(sum.next_try, 1000);
    state_outbox_summary(s, NULL, &sum);
    cr_expect_eq(sum.count, 3);
    cr_expect_eq(sum.oldest, 800);
    cr_expect_eq(sum.next_try, 800);
    state_outbox_summary(s, "nobody", &sum);
    cr_expect_eq(sum.count, 0);
    event_clear(&ev);
    state_close(s);
}

/* --- reading without the lock ------------------------------------------ */

static struct state *peek_ok(void)
{
    struct state *s = NULL;
    struct err e = {{0}};
    cr_assert_eq(state_peek(&s, path, &e), 0, "state_peek: %s", e.msg);
    cr_assert_not_null(s);
    return s;
}

Test(state, peek_of_a_missing_file_is_empty_and_creates_nothing)
{
    struct state *s = peek_ok();
    cr_expect_eq(state_outbox_count(s, NULL), 0);
    cr_expect_eq(state_last_call(s, "L", PLATFORM_ALERT), 0);
    state_close(s);
    char *lock = xasprintf("%s.lock", path);
    cr_expect_eq(access(path, F_OK), -1, "no state file");
    cr_expect_eq(access(lock, F_OK), -1, "no lock file");
    free(lock);
}

Test(state, peek_reads_while_a_run_holds_the_lock)
{
    struct state *run = state_open_ok(path);
    state_record_call(run, "L", PLATFORM_ALERT, 1000);
    state_login_result(run, "L", true, 200, NULL, 1000);
    state_save_ok(run);
    state_record_call(run, "L", PLATFORM_ALERT, 1300); /* not saved yet */

    double t0 = now_s();
    struct state *s = peek_ok();
    cr_expect_lt(now_s() - t0, 0.5, "state_peek waited for the lock");
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_ALERT, 0), 1, "what was saved");
    struct state_health h;
    cr_expect(state_login_health(s, "L", &h));
    cr_expect_eq(h.last_ok, 1000);
    state_health_clear(&h);
    state_close(s);

    /* Closing the peek left the run's lock alone: another run still
     * cannot get it. */
    struct state *other = NULL;
    struct err e = {{0}};
    cr_expect_eq(state_open(&other, path, 0, &e), -1);
    cr_expect_not_null(strstr(e.msg, "locked by another wsrelay run"), "%s", e.msg);
    state_save_ok(run);
    state_close(run);
}

Test(state, peek_reads_while_another_process_holds_the_lock)
{
    struct state *s0 = state_open_ok(path);
    state_count(s0, "unrouted", 3);
    state_save_ok(s0);
    state_close(s0);
    int ready[2], release[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(release), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        struct state *held = NULL;
        char c;
        close(ready[0]);
        close(release[1]);
        c = state_open(&held, path, 0, NULL) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(2);
        while (read(release[0], &c, 1) > 0)
            ;
        state_close(held);
        _exit(0);
    }
    close(ready[1]);
    close(release[0]);
    char c = 0;
    cr_assert_eq(read(ready[0], &c, 1), 1);
    cr_assert_eq(c, 'y', "the child could not open the state");
    struct state *s = peek_ok();
    cr_expect_eq(state_counter(s, "unrouted"), 3);
    state_close(s);
    close(release[1]);
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]);
}

Test(state, a_peeked_state_is_never_saved)
{
    struct state *s0 = state_open_ok(path);
    state_count(s0, "dropped", 1);
    state_save_ok(s0);
    state_close(s0);
    char *before = slurp(path);

    struct state *s = peek_ok();
    state_count(s, "dropped", 5);
    state_record_call(s, "L", PLATFORM_ALERT, 1000);
    struct err e = {{0}};
    cr_expect_eq(state_save(s, &e), -1);
    char *want = xasprintf("%s: read without the lock (state_peek): never saved", path);
    expect_str_eq(e.msg, want, "state_save");
    memset(&e, 0, sizeof e);
    cr_expect_eq(state_save_budget(s, &e), -1);
    expect_str_eq(e.msg, want, "state_save_budget");
    free(want);
    state_close(s);
    char *after = slurp(path);
    expect_str_eq(after, before, "the file");
    free(before);
    free(after);
}

Test(state, peek_of_a_corrupt_file_fails)
{
    spew(path, "{\"version\":1,\"seen\":[]}");
    struct state *s = (struct state *)1;
    struct err e = {{0}};
    cr_expect_eq(state_peek(&s, path, &e), -1);
    cr_expect_null(s);
    char *want = xasprintf("%s: corrupt state file: ", path);
    cr_expect_eq(strncmp(e.msg, want, strlen(want)), 0, "%s", e.msg);
    free(want);
    spew(path, "{\"version\":9}");
    cr_expect_eq(state_peek(&s, path, &e), -1);
    cr_expect_not_null(strstr(e.msg, "newer wsrelay"), "%s", e.msg);
}

/* ---- self-monitoring ---- */

Test(state, conditions_survive_a_save_and_hold_no_secret)
{
    struct state *s = state_open_ok(path);
    struct state_condition c = {
        .since = 100, .opened = 120, .retry_at = 3720, .creds = xstrdup("ab12")};
    state_set_condition(s, "login-refused/tbzz9999", &c);
    state_condition_clear(&c);
    state_set_condition(s, "receiver-failing/hook", &(struct state_condition){.since = 50});
    cr_expect_eq(state_relay_time(s, 200), 200);
    cr_expect_eq(state_relay_time(s, 200), 201, "ids of one run stay unique");
    cr_expect_eq(state_relay_time(s, 150), 202, "and across a clock that went back");
    state_heartbeat_result(s, false, 500, "GET https://hc/…: HTTP 500", 300);
    s = state_reopen_ok(s, path);
    cr_assert(state_condition(s, "login-refused/tbzz9999", &c));
    cr_expect_eq(c.since, 100);
    cr_expect_eq(c.opened, 120);
    cr_expect_eq(c.retry_at, 3720);
    cr_expect_str_eq(c.creds, "ab12");
    state_condition_clear(&c);
    size_t n = 0;
    char **keys = state_condition_keys(s, &n);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(keys[0], "login-refused/tbzz9999");
    cr_expect_str_eq(keys[1], "receiver-failing/hook");
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    state_drop_condition(s, "receiver-failing/hook");
    cr_expect_not(state_condition(s, "receiver-failing/hook", &c));
    struct state_health h;
    cr_assert(state_heartbeat(s, &h));
    cr_expect_eq(h.failures, 1);
    cr_expect_eq(h.status, 500);
    state_health_clear(&h);
    state_close(s);
}

Test(state, a_bad_self_section_is_corrupt)
{
    static const char *const docs[] = {
        "{\"version\":1,\"self\":[]}",
        "{\"version\":1,\"self\":{\"conditions\":[]}}",
        "{\"version\":1,\"self\":{\"conditions\":{\"x/y\":{}}}}",
        "{\"version\":1,\"self\":{\"conditions\":{\"x/y\":{\"since\":1,\"creds\":2}}}}",
        "{\"version\":1,\"self\":{\"conditions\":{\"x/y\":{\"since\":1,\"retry_at\":\"1\"}}}}",
        "{\"version\":1,\"self\":{\"last_relay\":\"1\"}}",
        "{\"version\":1,\"self\":{\"heartbeat\":{\"failures\":-1}}}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        struct err e;
        spew(path, docs[i]);
        open_fails(&e);
        char *want = xasprintf("%s: corrupt state file: ", path);
        cr_expect_eq(strncmp(e.msg, want, strlen(want)), 0, "doc %zu (%s): %s", i, docs[i], e.msg);
        free(want);
    }
}

Test(state, outbox_expire_and_trim_drop_the_oldest_of_one_receiver)
{
    struct state *s = state_open_ok(path);
    for (int i = 0; i < 5; i++) {
        struct event ev = sample_event("5214000A", 1000 + i, "ch1");
        state_enqueue(s, "hook", &ev, 1000 + i);
        state_enqueue(s, "log", &ev, 1000 + i);
        event_clear(&ev);
    }
    cr_expect_eq(state_outbox_expire(s, "hook", 1002), 2);
    cr_expect_eq(state_outbox_count(s, "hook"), 3);
    cr_expect_eq(state_outbox_count(s, "log"), 5);
    cr_expect_eq(state_outbox_trim(s, "log", 2), 3);
    cr_expect_eq(state_outbox_trim(s, "log", 2), 0);
    size_t n = 0;
    struct outbox_item *items = state_outbox_due(s, "log", 5000, &n);
    cr_assert_eq(n, 2);
    cr_expect_eq(items[0].event.unixtime, 1003, "the newest are kept");
    cr_expect_eq(items[1].event.unixtime, 1004);
    state_outbox_free(items, n);
    state_close(s);
}

Test(state, state_peek_never_moves_a_corrupt_file)
{
    struct state *s = NULL;
    struct err e;
    spew(path, "not json");
    cr_assert_eq(state_peek(&s, path, &e), -1);
    char *text = slurp(path);
    cr_expect_str_eq(text, "not json");
    free(text);
}

Test(state, an_unreadable_file_is_an_error_not_moved_aside)
{
    if (geteuid() == 0)
        cr_skip_test("root reads any file");
    struct state *s = NULL;
    struct err e = {{0}};
    spew(path, "{\"version\":1}");
    cr_assert_eq(chmod(path, 0), 0);
    cr_expect_eq(state_open(&s, path, 0, &e), -1);
    cr_expect_null(s);
    chmod(path, 0600);
    char *text = slurp(path);
    cr_expect_str_eq(text, "{\"version\":1}");
    free(text);
}

/* --- a state path of the wrong type ------------------------------------- */

/* A symlink at the state's path is refused, never followed: not read,
 * not moved aside, and its target (here a corrupt file, mode 0644, that
 * the old move-aside would have made 0600) keeps its contents and mode. */
Test(state, a_symlink_is_refused_and_its_target_untouched)
{
    struct state *s = NULL;
    struct err e = {{0}};
    char *target = xasprintf("%s/elsewhere", dir);
    spew(target, "not json");
    cr_assert_eq(chmod(target, 0644), 0);
    cr_assert_eq(symlink(target, path), 0);
    cr_expect_eq(state_open(&s, path, 0, &e), -1);
    cr_expect_null(s);
    cr_expect_not_null(strstr(e.msg, "symbolic link"), "%s", e.msg);
    cr_expect_not_null(strstr(e.msg, path), "%s", e.msg);
    struct stat st;
    cr_assert_eq(stat(target, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0644, "the target's mode was changed");
    cr_assert_eq(lstat(path, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the symlink was moved");
    char *text = slurp(target);
    cr_expect_str_eq(text, "not json");
    free(text);
    cr_expect_eq(state_peek(&s, path, &e), -1);
    cr_expect_not_null(strstr(e.msg, "symbolic link"), "%s", e.msg);
    free(target);
}

/* A FIFO at the state's path (or its lock's) fails at once, for a run and
 * for `status`, instead of blocking while holding the lock. The test runs
 * the open in a child that an alarm kills, so a regression fails rather
 * than hanging the suite. True when the open failed with `why`. */
static bool fails_at_once(bool peek, const char *why)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct state *s = NULL;
        struct err e;
        alarm(5);
        int rc = peek ? state_peek(&s, path, &e) : state_open(&s, path, 0, &e);
        _exit(rc == -1 && strstr(e.msg, why) ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status), "status %#x: it blocked", status);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Test(state, a_fifo_fails_at_once)
{
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_expect(fails_at_once(false, "not a regular file (a FIFO)"), "state_open");
    cr_expect(fails_at_once(true, "not a regular file (a FIFO)"), "state_peek");
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_expect(S_ISFIFO(st.st_mode), "the FIFO was moved");
}

Test(state, a_fifo_as_lock_file_fails_at_once)
{
    char *lockpath = xasprintf("%s.lock", path);
    cr_assert_eq(mkfifo(lockpath, 0600), 0);
    cr_expect(fails_at_once(false, "is not a regular file"));
    free(lockpath);
}

Test(state, a_directory_is_refused)
{
    struct state *s = NULL;
    struct err e = {{0}};
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_expect_eq(state_open(&s, path, 0, &e), -1);
    cr_expect_not_null(strstr(e.msg, "not a regular file (a directory)"), "%s", e.msg);
}

/* When a corrupt file cannot be moved aside (every name of this second
 * and the next few is taken), the message says why, whole: the reason it
 * was corrupt is not overwritten by the message built from it. None of
 * the files already there is touched. */
Test(state, a_failed_move_aside_says_why_and_removes_nothing)
{
    struct state *s = NULL;
    struct err e = {{0}};
    spew(path, "not json");
    time_t start = time(NULL);
    for (time_t t = start; t < start + 5; t++) {
        char stamp[32];
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
        for (int n = 1; n < 100; n++) {
            char *name = n == 1 ? xasprintf("%s.corrupt-%s", path, stamp)
                                : xasprintf("%s.corrupt-%s-%d", path, stamp, n);
            spew(name, "earlier");
            free(name);
        }
    }
    cr_assert_lt(time(NULL), start + 5, "the machine is too slow for this test");
    cr_expect_eq(state_open(&s, path, 0, &e), -1);
    cr_expect_null(s);
    cr_expect_not_null(strstr(e.msg, "cannot move the corrupt state file aside"), "%s", e.msg);
    cr_expect_not_null(strstr(e.msg, "("), "%s", e.msg);
    cr_expect_not_null(strstr(e.msg, "corrupt state file: "), "the reason is lost: %s", e.msg);
    char *text = slurp(path);
    cr_expect_str_eq(text, "not json");
    free(text);
    char *cmd = xasprintf("grep -l earlier '%s'/state.json.corrupt-* | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int count = 0;
    cr_assert_eq(fscanf(p, "%d", &count), 1);
    pclose(p);
    cr_expect_eq(count, 5 * 99, "an earlier file was removed or changed");
    free(cmd);
}

/* A state file over the size wsrelay reads is set aside like a corrupt
 * one, so that the relay works again instead of failing every run. */
Test(state, an_oversized_file_is_moved_aside)
{
    struct state *s = NULL;
    struct err e = {{0}};
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)65 * 1024 * 1024), 0); /* sparse */
    close(fd);
    cr_assert_eq(state_open(&s, path, 0, &e), 0, "%s", e.msg);
    const char *why = NULL;
    const char *aside = state_set_aside(s, &why);
    cr_assert_not_null(aside);
    cr_expect_not_null(strstr(why, "MiB"), "%s", why);
    unlink(aside);
    state_close(s);
}

/* --- the floor of seen keys and refusals in a row ------------------------- */

Test(state, pruning_raises_the_floor_and_never_lowers_it)
{
    struct state *s = state_open_ok(path);
    cr_expect_eq(state_seen_floor(s, "A"), 0);
    state_mark_seen(s, "A", 100, "ch1");
    state_mark_seen(s, "A", 300, "ch1");
    state_prune_seen(s, "A", 200);
    cr_expect_eq(state_seen_floor(s, "A"), 200);
    state_prune_seen(s, "A", 150); /* an older page: the floor stays */
    cr_expect_eq(state_seen_floor(s, "A"), 200);
    state_prune_seen(s, "A", 400); /* every key goes, the floor stays */
    cr_expect_eq(state_seen_count(s, "A"), 0);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_seen_floor(s, "A"), 400);
    cr_expect_eq(state_seen_floor(s, "B"), 0);
    state_close(s);
}

Test(state, refusals_count_until_a_successful_poll)
{
    static const char *const a[] = {"A"};
    struct state *s = state_open_ok(path);
    set_devices(s, "tokyo", a, 1, 1000);
    state_device_refused(s, "tokyo", "A", 2000, 2);
    s = state_reopen_ok(s, path);
    size_t n = 0;
    struct state_device *d = state_devices(s, "tokyo", &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(d[0].refusals, 2);
    state_devices_free(d, n);
    state_device_polled(s, "tokyo", "A", NULL, 2100, false); /* a failure is no success */
    d = state_devices(s, "tokyo", &n);
    cr_expect_eq(d[0].refusals, 2);
    state_devices_free(d, n);
    state_device_polled(s, "tokyo", "A", NULL, 2200, true);
    s = state_reopen_ok(s, path);
    d = state_devices(s, "tokyo", &n);
    cr_expect_eq(d[0].refusals, 0);
    state_devices_free(d, n);
    state_close(s);
}

Test(state, floors_and_refusals_of_the_wrong_shape_are_corrupt)
{
    static const char *const bad[] = {
        "{\"version\":1,\"floors\":[]}",
        "{\"version\":1,\"floors\":{\"A\":\"200\"}}",
        "{\"version\":1,\"accounts\":{\"t\":{\"history\":{\"A\":{\"refusals\":\"x\"}}}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct state *s = NULL;
        struct err e;
        spew(path, bad[i]);
        cr_expect_eq(state_peek(&s, path, &e), -1, "%s", bad[i]);
        cr_expect_not_null(strstr(e.msg, "corrupt state file"), "%s", e.msg);
    }
}

/* --- the size limit of a save ------------------------------------------ */

/* A save that would pass the limit gives up the oldest outbox items,
 * whatever their receiver, says which, and writes a file under the limit
 * that loads again. */
Test(state, a_save_over_the_limit_gives_up_the_oldest_outbox_items)
{
    struct state *s = state_open_ok(path);
    for (int i = 0; i < 300; i++) {
        struct event ev = sample_event("5214000A", 1795000000 + i, "ch1");
        state_enqueue(s, i % 3 ? "hook" : "mail", &ev, 1795000000 + i);
        event_clear(&ev);
    }
    state_save_ok(s);
    size_t n = 0;
    cr_expect_null(state_take_trimmed(s, &n));
    cr_expect_eq(n, 0);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    size_t full = (size_t)st.st_size;

    state_set_max_bytes(s, full / 2);
    state_save_ok(s);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_leq((size_t)st.st_size, full / 2);
    cr_expect_gt((size_t)st.st_size, full / 2 - full / 20, "more was given up than needed");
    struct state_trim *t = state_take_trimmed(s, &n);
    cr_assert_eq(n, 2);
    size_t gone = t[0].count + t[1].count;
    cr_expect_eq(state_outbox_count(s, NULL), 300 - gone);
    cr_expect_str_eq(t[0].receiver, "mail", "the oldest item was mail's");
    cr_expect_str_eq(t[1].receiver, "hook");
    state_trimmed_free(t, n);
    cr_expect_null(state_take_trimmed(s, &n), "taken once");
    state_close(s);

    s = state_open_ok(path);
    size_t due = 0;
    struct outbox_item *items = state_outbox_due(s, "hook", 1795001000, &due);
    cr_assert_gt(due, 0);
    cr_expect_gt(items[0].event.unixtime, 1795000000 + 100, "the newest are kept");
    state_outbox_free(items, due);
    state_close(s);
}

/* --- a state written by the previous release ----------------------------- */

/* tests/data/state/0.1.0.json was written by wsrelay 0.1.0 (commit
 * 4efe218) against the simulator: three devices of account "lab", one of
 * them refused for a day, 23 events waiting for a webhook that could not
 * be reached. This release adds each device's floor of seen keys and its
 * refusals in a row; the file loads as it is, with neither yet, and keeps
 * everything it had through a save. */
Test(state, a_state_of_0_1_0_loads_and_keeps_what_it_had)
{
    char *text = read_fixture("state/0.1.0.json");
    spew(path, text);
    free(text);
    struct state *s = state_open_ok(path);
    cr_expect_null(state_set_aside(s, NULL), "the old state was set aside");
    cr_expect_eq(state_seen_count(s, "5214000A"), 20);
    cr_expect_eq(state_seen_floor(s, "5214000A"), 0);
    cr_expect_eq(state_outbox_count(s, "hook"), 23);
    s = state_reopen_ok(s, path);
    size_t n = 0;
    struct state_device *d = state_devices(s, "lab", &n);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(d[i].refusals, 0, "%s", d[i].serial);
        if (strcmp(d[i].serial, "5214000B") == 0)
            cr_expect_eq(d[i].refused_until, 1795086760);
    }
    state_devices_free(d, n);
    cr_expect_eq(state_seen_count(s, "5214000A"), 20);
    cr_expect_eq(state_outbox_count(s, "hook"), 23);
    struct state_health h;
    cr_expect(state_receiver_health(s, "hook", &h));
    cr_expect_gt(h.failures, 0);
    state_health_clear(&h);
    state_close(s);
}

/* tests/data/state/0.1.0-3c9c2ca.json was written by wsrelay at commit
 * 3c9c2ca (the release before signals, which still called itself 0.1.0)
 * against the simulator's demo scenario: four devices of account "lab",
 * 10 events waiting for a webhook that could not be reached. This release
 * adds the readings memory, learnt limits and signal calls; the file loads
 * as it is, with none of them yet, and keeps everything through a save. */
Test(state, a_state_of_the_release_before_signals_loads_and_keeps_what_it_had)
{
    char *text = read_fixture("state/0.1.0-3c9c2ca.json");
    spew(path, text);
    free(text);
    struct state *s = state_open_ok(path);
    struct watch w;
    struct watch_limit l;
    cr_expect_null(state_set_aside(s, NULL), "the old state was set aside");
    cr_expect_not(state_watch(s, "5214A001", &w));
    cr_expect_not(state_learnt_limit(s, "5214A001", 1, &l));
    cr_expect_eq(state_signal_calls_since(s, "demo0001", 0), 0);
    cr_expect_eq(state_outbox_count(s, "hook"), 10);
    state_set_watch(s, "5214A001", &(struct watch){.unixtime = 1795003600, .seen_at = 1795003600});
    s = state_reopen_ok(s, path);
    size_t n = 0;
    struct state_device *d = state_devices(s, "lab", &n);
    cr_expect_eq(n, 4);
    state_devices_free(d, n);
    cr_expect_eq(state_seen_count(s, "5279B002"), 2);
    cr_expect_eq(state_outbox_count(s, "hook"), 10);
    cr_expect(state_watch(s, "5214A001", &w));
    cr_expect_eq(w.unixtime, 1795003600);
    struct state_condition c;
    cr_expect(state_condition(s, "receiver-failing/hook", &c));
    state_condition_clear(&c);
    state_close(s);
}

/* tests/data/state/0.1.0-637411d.json was written by wsrelay at commit
 * 637411d (the last release with one state file, version 1) against the
 * simulator's demo scenario: four devices of account "demo-lab", their
 * readings memories and learnt limits, 6 events waiting for a webhook that
 * could not be reached. It loads as it is; its first save moves the
 * per-device sections to the fleet file, generation 1, and the state file
 * becomes version 2 without them. Its login's signals have no delay of the
 * platform's communication error yet (silence_after): 0, until one is
 * learnt and kept. */
Test(state, a_state_of_the_release_before_the_fleet_file_moves_to_it)
{
    char *text = read_fixture("state/0.1.0-637411d.json");
    spew(path, text);
    free(text);
    for (int round = 0; round < 2; round++) {
        struct state *s = state_open_ok(path);
        struct watch w;
        struct watch_limit l;
        size_t n = 0;
        cr_expect_null(state_set_aside(s, NULL), "the old state was set aside");
        struct state_device *d = state_devices(s, "demo-lab", &n);
        cr_expect_eq(n, 4);
        state_devices_free(d, n);
        cr_expect_eq(state_discovered_at(s, "demo-lab"), 1795003600);
        cr_assert(state_watch(s, "5214A001", &w));
        cr_expect_eq(w.unixtime, 1795003600);
        cr_expect_eq(w.ch[0].value, -79.6);
        cr_assert(state_learnt_limit(s, "5214A001", 1, &l));
        cr_expect(l.has_upper && l.upper == -75);
        cr_expect_eq(state_outbox_count(s, "hook"), 6);
        cr_expect_eq(state_signal_calls_since(s, "demo0001", 0), 1);
        cr_expect_eq(state_silence_after(s, "demo0001"), round ? 1230 : 0);
        state_set_silence_after(s, "demo0001", 6 * 3600 + 1);
        cr_expect_eq(state_silence_after(s, "demo0001"), 0, "more than a run learns");
        state_set_silence_after(s, "demo0001", 1230);
        state_save_ok(s);
        state_close(s);
    }
    char *main_text = slurp(path);
    cr_expect_eq(strncmp(main_text, "{\"version\":2,", 13), 0, "%s", main_text);
    cr_expect_null(strstr(main_text, "\"watch\""), "%s", main_text);
    cr_expect_not_null(strstr(main_text, "\"fleet\":{\"generation\":1,"), "%s", main_text);
    cr_expect_not_null(strstr(main_text, "\"discovered\":{\"demo-lab\":1795003600}"), "%s",
                       main_text);
    free(main_text);
    char *fleet = xasprintf("%s.fleet-1", path);
    struct stat st;
    cr_assert_eq(stat(fleet, &st), 0, "%s", fleet);
    cr_expect_eq(st.st_mode & 07777, 0600, "mode %o", (unsigned)(st.st_mode & 07777));
    free(fleet);
}

/* --- the fleet file ---------------------------------------------------------- */

/* A memory of one channel whose reading was taken at `t`. */
static struct watch one_reading(long long t, double value)
{
    struct watch w = {.unixtime = t, .seen_at = t, .n_ch = 1};
    w.ch[0] = (struct watch_channel){.num = 1, .value = value};
    return w;
}

static long long size_of(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* The fleet file of generation `gen`; caller frees. */
static char *fleet_of(int gen)
{
    return xasprintf("%s.fleet-%d", path, gen);
}

/* How many of the 40 serials below have a memory. */
static int memories(const struct state *s)
{
    char serial[16];
    struct watch w;
    int n = 0;
    for (int i = 0; i < 40; i++) {
        snprintf(serial, sizeof serial, "52140%03d", i);
        n += state_watch(s, serial, &w);
    }
    return n;
}

/* A state of 40 memories, saved: the fleet file's first generation. */
static struct state *forty_memories(void)
{
    struct state *s = state_open_ok(path);
    char serial[16];
    for (int i = 0; i < 40; i++) {
        snprintf(serial, sizeof serial, "52140%03d", i);
        struct watch w = one_reading(1795000000, i);
        state_set_watch(s, serial, &w);
    }
    state_set_discovered(s, "tokyo", 1795000000);
    state_save_ok(s);
    return s;
}

/* A save after one memory changed appends that entry alone; a save that
 * changed nothing of the fleet writes no fleet file at all. */
Test(state, a_save_writes_the_entries_that_changed_and_no_others)
{
    struct state *s = forty_memories();
    char *fleet = fleet_of(1);
    long long base = size_of(fleet);
    cr_assert_gt(base, 40 * 40);
    struct watch w = one_reading(1795000600, 7.5);
    state_set_watch(s, "52140007", &w);
    state_save_ok(s);
    long long grown = size_of(fleet) - base;
    cr_expect(grown > 20 && grown < 400, "one entry appended %lld bytes", grown);
    state_record_call(s, "L", PLATFORM_CURRENT, 1795000600);
    state_set_discovered(s, "tokyo", 1795000600);
    state_save_ok(s);
    cr_expect_eq(state_discovered_at(s, "tokyo"), 1795000600);
    cr_expect_eq(size_of(fleet) - base, grown, "a save without a fleet change appended");
    state_close(s);
    s = state_open_ok(path);
    struct watch got;
    cr_assert(state_watch(s, "52140007", &got));
    cr_expect_eq(got.unixtime, 1795000600);
    cr_expect_eq(got.ch[0].value, 7.5);
    cr_assert(state_watch(s, "52140008", &got));
    cr_expect_eq(got.unixtime, 1795000000);
    cr_expect_eq(got.ch[0].value, 8);
    cr_expect_eq(state_calls_since(s, "L", PLATFORM_CURRENT, 0), 1);
    state_close(s);
    free(fleet);
}

/* A poll changes one device's history: the record carries that entry
 * alone, under its account, not the account's 40 devices; the entry
 * comes back over the base's, and a new base has the account whole. */
Test(state, a_poll_writes_its_history_entry_alone)
{
    struct state *s = state_open_ok(path);
    struct state_device devs[40];
    char serials[40][16], base_serial[] = "B", name[] = "Freezer";
    for (int i = 0; i < 40; i++) {
        snprintf(serials[i], sizeof serials[i], "52140%03d", i);
        devs[i] = (struct state_device){.serial = serials[i], .base = base_serial, .name = name};
    }
    state_set_devices(s, "tokyo", devs, 40, 1795000000);
    state_save_ok(s);
    char *fleet = fleet_of(1);
    long long base = size_of(fleet);
    state_device_polled(s, "tokyo", "52140007", "B", 1795000600, true);
    state_device_refused(s, "tokyo", "52140009", 1795086400, 2);
    state_set_discovered(s, "tokyo", 1795000660); /* after the poll: still not whole */
    state_save_ok(s);
    char *text = slurp(fleet);
    cr_expect_lt(strlen(text) - (size_t)base, 250, "%s", text + base);
    cr_expect_eq(strncmp(text + base, "{\"history\":{\"tokyo\":{\"52140007\":{", 33), 0, "%s",
                 text + base);
    cr_expect_not_null(strstr(text + base, "\"52140009\":{"), "%s", text + base);
    free(text);
    state_close(s);
    for (int round = 0; round < 2; round++) { /* the second after a new base */
        s = state_open_ok(path);
        size_t n = 0;
        struct state_device *d = state_devices(s, "tokyo", &n);
        cr_assert_eq(n, 40);
        cr_expect_eq(d[7].last_poll, 1795000600);
        cr_expect_eq(d[7].last_ok, 1795000600);
        cr_expect_eq(d[7].first_known, 1795000000);
        cr_expect_eq(d[9].refused_until, 1795086400);
        cr_expect_eq(d[9].refusals, 2);
        cr_expect_eq(d[8].last_poll, 0);
        cr_expect_eq(state_discovered_at(s, "tokyo"), 1795000660);
        state_devices_free(d, n);
        if (round == 0) {
            struct watch w = one_reading(1795000000, 1);
            state_set_watch(s, "52140001", &w);
            state_prune_watches(s, 1795000001); /* a removal: a new base */
            state_save_ok(s);
        }
        state_close(s);
    }
    char *second = fleet_of(2);
    cr_expect_eq(access(second, F_OK), 0);
    free(second);
    free(fleet);
}

/* Records that would outgrow the base make a new generation, written
 * whole; the old one is removed once the state file names the new. */
Test(state, records_that_outgrow_the_base_make_a_new_generation)
{
    struct state *s = forty_memories();
    char *first = fleet_of(1), *second = fleet_of(2);
    long long base = size_of(first);
    for (int round = 1; round <= 60 && access(second, F_OK) < 0; round++) {
        struct watch w = one_reading(1795000000 + 60 * round, round);
        state_set_watch(s, "52140001", &w);
        state_save_ok(s);
        cr_assert_lt(size_of(first), 2 * base + 400, "the first generation grew to %lld bytes",
                     size_of(first));
    }
    cr_expect_eq(access(second, F_OK), 0, "no second generation");
    cr_expect_eq(access(first, F_OK), -1, "the first generation is still there");
    state_close(s);
    s = state_open_ok(path);
    struct watch got;
    cr_assert(state_watch(s, "52140001", &got));
    cr_expect_gt(got.unixtime, 1795000000);
    cr_expect_eq(memories(s), 40);
    state_close(s);
    free(first);
    free(second);
}

/* An entry removed cannot be a record: the save after it writes a new
 * base without it. */
Test(state, a_removed_memory_makes_a_new_generation_without_it)
{
    struct state *s = forty_memories();
    struct watch w = one_reading(1795003600, 1);
    state_set_watch(s, "52140001", &w);
    cr_expect_eq(state_prune_watches(s, 1795001000), 39);
    state_save_ok(s);
    char *second = fleet_of(2);
    cr_expect_eq(access(second, F_OK), 0);
    state_close(s);
    s = state_open_ok(path);
    cr_expect_eq(memories(s), 1);
    state_close(s);
    free(second);
}

/* Bytes after the length the state file commits are a save that did not
 * take effect (a crash between the fleet file and the state file): no
 * load reads them, and the next record replaces them. */
Test(state, bytes_after_the_committed_length_are_not_read)
{
    struct state *s = forty_memories();
    state_close(s);
    char *fleet = fleet_of(1);
    long long base = size_of(fleet);
    FILE *f = fopen(fleet, "a");
    cr_assert_not_null(f);
    fputs("{\"watch\":{\"52140003\":{\"t\":1,\"seen\":1}}}\n{\"watch\":", f);
    fclose(f);
    s = state_open_ok(path);
    struct watch got;
    cr_assert(state_watch(s, "52140003", &got));
    cr_expect_eq(got.unixtime, 1795000000);
    struct watch w = one_reading(1795000600, 3.5);
    state_set_watch(s, "52140004", &w);
    state_save_ok(s);
    state_close(s);
    char *text = slurp(fleet);
    cr_expect_null(strstr(text + base, "\"52140003\""), "%s", text + base);
    cr_expect_not_null(strstr(text + base, "\"52140004\""), "%s", text + base);
    free(text);
    s = state_open_ok(path);
    cr_assert(state_watch(s, "52140004", &got));
    cr_expect_eq(got.ch[0].value, 3.5);
    state_close(s);
    free(fleet);
}

/* A fleet file that is missing or damaged costs what it held only: the
 * device lists, histories, readings memories and limits that polling
 * relearns. The state is not set aside: its outbox, seen keys and budget
 * ledger stay, and the next save writes a new generation in place of the
 * damaged one. */
Test(state, a_missing_or_damaged_fleet_file_is_relearnt_and_the_rest_kept)
{
    static const char *const damage[] = {NULL, "{\"watch\":{\"A\":[]}}\n", "{\"watch\"",
                                         "{\"seen\":{}}\n", ""};
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        struct state *s = forty_memories();
        struct event ev = sample_event("5214000A", 1795000000, "ch1");
        state_mark_seen(s, "5214000A", 1795000000, "ch1");
        state_enqueue(s, "ops-hook", &ev, 1795000010);
        state_record_call(s, "tbzz9999", PLATFORM_ALERT, 1795000005);
        event_clear(&ev);
        state_save_ok(s);
        state_close(s);
        char *fleet = fleet_of(1);
        if (damage[i])
            spew(fleet, damage[i]);
        else
            cr_assert_eq(unlink(fleet), 0);
        s = state_open_ok(path);
        const char *why = NULL;
        cr_expect_null(state_set_aside(s, &why), "case %zu was set aside: %s", i, why);
        cr_expect_eq(memories(s), 0, "case %zu", i);
        cr_expect_eq(state_outbox_count(s, NULL), 1, "case %zu", i);
        cr_expect(state_seen(s, "5214000A", 1795000000, "ch1"), "case %zu", i);
        cr_expect_eq(state_calls_since(s, "tbzz9999", PLATFORM_ALERT, 1795000000), 1, "case %zu",
                     i);
        state_save_ok(s);
        state_close(s);
        char *second = fleet_of(2);
        cr_expect_eq(access(second, F_OK), 0, "case %zu: no new generation", i);
        cr_expect_eq(access(fleet, F_OK), -1, "case %zu: the damaged generation was left", i);
        s = state_open_ok(path);
        cr_expect_null(state_set_aside(s, &why), "case %zu: %s", i, why);
        cr_expect_eq(state_outbox_count(s, NULL), 1, "case %zu", i);
        state_close(s);
        unlink(second);
        unlink(path);
        free(second);
        free(fleet);
    }
}

/* A member written twice (wsrelay never writes one so: a person's edit)
 * is refused by name, never taken last copy first: which copy is right
 * cannot be known, and setting the state aside would drop the outbox.
 * state_open and state_peek fail naming it, and the file stays as it is. */
Test(state, a_member_written_twice_is_refused_by_name_and_the_file_kept)
{
    static const char *const texts[] = {
        "{\"version\":2,\"next_id\":3,\"outbox\":[],\"outbox\":[]}\n",
        "{\"version\":2,\"seen\":{},\"counters\":{},\"seen\":{}}\n",
        "{\"version\":1,\"watch\":{},\"limits\":{},\"watch\":{}}\n",
        "{\"version\":2,\"version\":2}\n",
    };
    static const char *const names[] = {"\"outbox\"", "\"seen\"", "\"watch\"", "\"version\""};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        spew(path, texts[i]);
        struct err e = {{0}};
        struct state *s = (struct state *)1;
        cr_expect_eq(state_open(&s, path, 0, &e), -1, "case %zu was taken", i);
        cr_expect_null(s);
        cr_expect_not_null(strstr(e.msg, names[i]), "case %zu: %s", i, e.msg);
        cr_expect_not_null(strstr(e.msg, "twice"), "case %zu: %s", i, e.msg);
        cr_expect_not_null(strstr(e.msg, path), "case %zu: %s", i, e.msg);
        s = (struct state *)1;
        cr_expect_eq(state_peek(&s, path, &e), -1, "case %zu was taken by state_peek", i);
        char *after = slurp(path);
        cr_expect_str_eq(after, texts[i], "case %zu: the file changed", i);
        free(after);
        DIR *d = opendir(dir);
        for (struct dirent *de; d && (de = readdir(d));)
            cr_expect_null(strstr(de->d_name, "corrupt"), "case %zu: %s", i, de->d_name);
        if (d)
            closedir(d);
    }
}

/* A fleet file that cannot be read (here a directory in its place) is an
 * error, as a state file that cannot be read is: nothing is moved aside,
 * nothing started over. */
Test(state, a_fleet_file_that_cannot_be_read_is_an_error_and_stays)
{
    struct state *s = forty_memories();
    state_close(s);
    char *fleet = fleet_of(1);
    cr_assert_eq(unlink(fleet), 0);
    cr_assert_eq(mkdir(fleet, 0700), 0);
    struct err e = {{0}};
    s = (struct state *)1;
    cr_expect_eq(state_open(&s, path, 0, &e), -1);
    cr_expect_null(s);
    cr_expect_not_null(strstr(e.msg, fleet), "%s", e.msg);
    cr_expect_null(strstr(e.msg, "corrupt"), "%s", e.msg);
    cr_expect_eq(access(path, F_OK), 0, "the state file was moved");
    rmdir(fleet);
    free(fleet);
}

/* A state file removed to start over leaves its fleet file no one's: the
 * next run moves it aside (STATE.fleet-N.orphan-TIME) and starts empty,
 * and its first save begins again at generation 1. */
Test(state, a_fleet_file_without_its_state_file_is_moved_aside)
{
    struct state *s = forty_memories();
    state_close(s);
    cr_assert_eq(unlink(path), 0);
    s = state_open_ok(path);
    cr_expect_eq(memories(s), 0);
    char *fleet = fleet_of(1);
    cr_expect_eq(access(fleet, F_OK), -1, "the fleet file is still there");
    int orphans = 0;
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *de; (de = readdir(d));)
        orphans += strncmp(de->d_name, "state.json.fleet-1.orphan-", 26) == 0;
    closedir(d);
    cr_expect_eq(orphans, 1);
    state_save_ok(s);
    cr_expect_eq(access(fleet, F_OK), 0);
    state_close(s);
    free(fleet);
}

/* A crash after the state file named a new generation, before the old
 * one was removed, leaves it: the next run removes it. */
Test(state, an_old_generation_left_by_a_crash_is_removed)
{
    struct state *s = forty_memories();
    state_prune_watches(s, 1795000001);
    state_save_ok(s); /* generation 2 */
    state_close(s);
    char *first = fleet_of(1);
    spew(first, "{}\n");
    s = state_open_ok(path);
    cr_expect_eq(access(first, F_OK), -1);
    state_close(s);
    free(first);
}

/* --- readings (readings_memory.h) ------------------------------------------ */

Test(state, a_readings_memory_comes_back_as_it_was_saved)
{
    struct state *s = state_open_ok(path);
    struct watch w = {.unixtime = 1795000000,
                      .seen_at = 1795000030,
                      .gaps = {60, 120, 60},
                      .n_gaps = 3,
                      .battery = 4,
                      .silent = true,
                      .pending = WATCH_LIMIT | WATCH_BAND,
                      .pending_since = 1795000030,
                      .pending_after = 1794999940,
                      .pending_at = 1795000000,
                      .recheck_at = 1795000300,
                      .pending_told = true,
                      .hint_at = 1794999700,
                      .n_ch = 2};
    w.ch[0] = (struct watch_channel){.num = 1,
                                     .value = -79.8,
                                     .step = 0.1,
                                     .n_history = 3,
                                     .history = {-79.9, -80.1, -79.8},
                                     .band = 1,
                                     .zone = 1,
                                     .has_at_poll = true,
                                     .at_poll = -80.0,
                                     .warned_at = 1794999000,
                                     .warned = 1,
                                     .back = true,
                                     .out = 7,
                                     .alarmed = true};
    w.ch[1] = (struct watch_channel){
        .num = 3, .error = true, .has_at_poll = true, .at_poll_error = true, .zone = -1};
    state_set_watch(s, "5214000A", &w);
    s = state_reopen_ok(s, path);
    struct watch got;
    cr_assert(state_watch(s, "5214000A", &got));
    cr_expect_eq(got.unixtime, 1795000000);
    cr_expect_eq(got.seen_at, 1795000030);
    cr_expect_eq(got.n_gaps, 3);
    cr_expect_eq(got.gaps[1], 120);
    cr_expect_eq(got.battery, 4);
    cr_expect(got.silent);
    cr_expect_eq(got.pending, WATCH_LIMIT | WATCH_BAND);
    cr_expect_eq(got.pending_since, 1795000030);
    cr_expect_eq(got.pending_after, 1794999940);
    cr_expect_eq(got.pending_at, 1795000000);
    cr_expect_eq(got.recheck_at, 1795000300);
    cr_expect(got.pending_told);
    cr_expect_eq(got.hint_at, 1794999700, "an unusual reading's hint");
    cr_assert_eq(got.n_ch, 2);
    cr_expect_eq(got.ch[0].num, 1);
    cr_expect_not(got.ch[0].error);
    cr_expect_eq(got.ch[0].value, -79.8);
    cr_expect_eq(got.ch[0].step, 0.1);
    cr_expect_eq(got.ch[0].n_history, 3);
    cr_expect_eq(got.ch[0].history[1], -80.1);
    cr_expect_eq(got.ch[0].band, 1);
    cr_expect_eq(got.ch[0].zone, 1);
    cr_expect(got.ch[0].has_at_poll);
    cr_expect_eq(got.ch[0].at_poll, -80.0);
    cr_expect_eq(got.ch[0].warned_at, 1794999000);
    cr_expect_eq(got.ch[0].warned, 1);
    cr_expect(got.ch[0].back);
    cr_expect_not(got.ch[1].back);
    cr_expect_eq(got.ch[0].out, 7, "readings in a row out of the band");
    cr_expect_eq(got.ch[1].out, 0);
    cr_expect(got.ch[0].alarmed, "its alarm's recovery is still to come");
    cr_expect_not(got.ch[1].alarmed);
    cr_expect_eq(got.ch[1].num, 3);
    cr_expect(got.ch[1].error);
    cr_expect(got.ch[1].at_poll_error);
    cr_expect_eq(got.ch[1].zone, -1);
    cr_expect_not(state_watch(s, "5214000B", &got));
    cr_expect_eq(got.unixtime, 0);
    /* What the file says of -79.8 is "-79.8", not its binary expansion. */
    char *text = slurp_state(path);
    cr_expect_not_null(strstr(text, "-79.8,"), "%s", text);
    free(text);
    state_close(s);
}

/* Numbers are written as "%.10g" writes them, however they are written. */
Test(state, readings_are_written_with_ten_significant_digits)
{
    static const double values[] = {
        -79.8, 0.1,    4,     1234.5678, 1e-5, 123456789.5, 0.30000000000000004,
        -0.0,  2.5e12, 99.99, -1.25,     1e300};
    size_t n = sizeof values / sizeof values[0];
    struct state *s = state_open_ok(path);
    struct watch w = {.unixtime = 1795000000, .n_ch = 1};
    w.ch[0] = (struct watch_channel){.num = 1, .n_history = (int)n};
    memcpy(w.ch[0].history, values, sizeof values);
    state_set_watch(s, "5214000A", &w);
    s = state_reopen_ok(s, path);
    char *text = slurp_state(path);
    char want[512] = "\"history\":[";
    for (size_t i = 0; i < n; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), i ? ",%.10g" : "%.10g",
                 values[i]);
    strcat(want, "]");
    cr_expect_not_null(strstr(text, want), "%s not in %s", want, text);
    free(text);
    state_close(s);
}

Test(state, learnt_limits_are_kept_per_serial_and_channel)
{
    struct state *s = state_open_ok(path);
    struct watch_limit l;
    cr_expect(state_learn_limit(s, "5214000A", 1, true, -75.0));
    cr_expect_not(state_learn_limit(s, "5214000A", 1, true, -75.0), "nothing new");
    cr_expect(state_learn_limit(s, "5214000A", 1, false, -90.5));
    cr_expect(state_learn_limit(s, "5214000A", 2, true, 60));
    s = state_reopen_ok(s, path);
    cr_assert(state_learnt_limit(s, "5214000A", 1, &l));
    cr_expect(l.has_upper && l.has_lower);
    cr_expect_eq(l.upper, -75.0);
    cr_expect_eq(l.lower, -90.5);
    cr_assert(state_learnt_limit(s, "5214000A", 2, &l));
    cr_expect(l.has_upper && !l.has_lower);
    cr_expect_not(state_learnt_limit(s, "5214000A", 3, &l));
    cr_expect_not(l.has_upper || l.has_lower);
    cr_expect_not(state_learnt_limit(s, "5214000B", 1, &l));
    state_close(s);
}

Test(state, readings_unused_for_a_month_are_forgotten_with_their_limits)
{
    struct state *s = state_open_ok(path);
    state_set_watch(s, "5214000A", &(struct watch){.unixtime = 100, .seen_at = 1000});
    state_set_watch(s, "5214000B", &(struct watch){.unixtime = 100, .seen_at = 5000});
    state_learn_limit(s, "5214000A", 1, true, 8);
    state_learn_limit(s, "5214000B", 1, true, 8);
    cr_expect_eq(state_prune_watches(s, 2000), 1);
    struct watch w;
    struct watch_limit l;
    cr_expect_not(state_watch(s, "5214000A", &w));
    cr_expect_not(state_learnt_limit(s, "5214000A", 1, &l));
    cr_expect(state_watch(s, "5214000B", &w));
    cr_expect(state_learnt_limit(s, "5214000B", 1, &l));
    state_close(s);
}

Test(state, signal_calls_and_starvation_are_kept_per_login)
{
    struct state *s = state_open_ok(path);
    state_record_signal_call(s, "tbzz9999", 1000);
    state_record_signal_call(s, "tbzz9999", 9000);
    state_record_signal_call(s, "tbzz9999", 9100); /* drops what is over two hours old */
    state_set_signals_starved(s, "tbzz9999", 8000);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_signal_calls_since(s, "tbzz9999", 0), 2);
    cr_expect_eq(state_signal_calls_since(s, "tbzz9999", 9050), 1);
    cr_expect_eq(state_signal_calls_since(s, "other", 0), 0);
    cr_expect_eq(state_signals_starved(s, "tbzz9999"), 8000);
    state_set_signals_starved(s, "tbzz9999", 0);
    cr_expect_eq(state_signals_starved(s, "tbzz9999"), 0);
    state_close(s);
}

/* The alert budget's last call is the round robin's: a signal's look
 * after it does not push the next routine call a spacing later; and the
 * calls kept free for signals follow the rate of the last hour. */
Test(state, the_alert_budget_counts_its_spacing_from_the_last_routine_call)
{
    struct state *s = state_open_ok(path);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 10000);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 10100);
    state_record_signal_call(s, "tbzz9999", 10100);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 10200);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 10200);
    state_record_signal_call(s, "tbzz9999", 10200);
    struct sched_budget b = budget_read(s, "tbzz9999", PLATFORM_ALERT, 10300);
    cr_expect_eq(b.used, 4);
    cr_expect_eq(b.last_call, 10200, "one of the two calls at 10200 was routine");
    state_record_signal_call(s, "tbzz9999", 10250);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 10250);
    state_record_signal_call(s, "tbzz9999", 10260);
    state_record_call(s, "tbzz9999", PLATFORM_ALERT, 10260);
    b = budget_read(s, "tbzz9999", PLATFORM_ALERT, 10300);
    cr_expect_eq(b.last_call, 10200, "signal calls after it do not count");
    cr_expect_eq(state_last_call(s, "tbzz9999", PLATFORM_ALERT), 10260);
    cr_expect_eq(budget_headroom(s, "tbzz9999", 10300), 1, "4 signal calls: one kept free");
    cr_expect_eq(budget_headroom(s, "tbzz9999", 10300 + 3600), 0, "an hour without: none");
    for (int i = 0; i < 20; i++)
        state_record_signal_call(s, "tbzz9999", 10270 + i);
    cr_expect_eq(budget_headroom(s, "tbzz9999", 10300), 4, "24 signal calls: four");
    for (int i = 0; i < 20; i++)
        state_record_signal_call(s, "tbzz9999", 10290 + i);
    cr_expect_eq(budget_headroom(s, "tbzz9999", 10400), BUDGET_HEADROOM_MAX);
    state_close(s);
}

/* A file cut short inside a per-device section says so, naming the
 * section, in a message a log line can carry. */
Test(state, a_file_cut_short_in_a_device_section_says_where)
{
    static const char *const cut[] = {
        "{\"version\":1,\"watch\":{\"5214000A\":{\"t\":1,",
        "{\"version\":1,\"limits\":{\"5214000A\":{\"1\":{\"upper\":",
        "{\"version\":1,\"accounts\":{\"t\":{\"devices\":[{\"serial\":\"A\"",
        "{\"version\":1,\"accounts\":{\"t\":{\"history\":{\"A\":{\"x\":[1,",
    };
    static const char *const section[] = {"watch", "limits", "accounts", "accounts"};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        const char *why = NULL;
        spew(path, cut[i]);
        struct state *s = state_open_ok(path);
        cr_assert_not_null(state_set_aside(s, &why), "%s was taken as good", cut[i]);
        char *want = xasprintf("corrupt state file: %s", section[i]);
        cr_expect_not_null(strstr(why, want), "%s: %s", cut[i], why);
        cr_expect_not_null(strstr(why, "the text ends too soon"), "%s: %s", cut[i], why);
        cr_expect(utf8_valid(why, strlen(why)), "%s", cut[i]);
        free(want);
        state_close(s);
    }
}

/* A NUL byte or a byte that is not UTF-8, anywhere (here inside members
 * this version does not know, which it keeps as their text), makes the
 * file corrupt, as json-c's reading made it. */
Test(state, a_nul_byte_or_bad_utf8_anywhere_is_corrupt)
{
    static const struct {
        const char *text;
        size_t len;
        const char *why;
    } bad[] = {
#define CASE(text, why) {text, sizeof text - 1, why}
        CASE("{\"version\":1,\"accounts\":{\"t\":{\"x\":\"a\0b\"}}}", "byte 36: a NUL byte"),
        CASE("{\"version\":1,\"watch\":{\"A\":{\"x\":\"\xff\"}}}", "byte 32: not UTF-8"),
#undef CASE
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = NULL;
        struct err e;
        cr_assert_eq(file_write_atomic(path, bad[i].text, bad[i].len, 0600, &e), 0, "%s", e.msg);
        struct state *s = state_open_ok(path);
        cr_assert_not_null(state_set_aside(s, &why), "case %zu was taken as good", i);
        cr_expect_not_null(strstr(why, bad[i].why), "case %zu: %s", i, why);
        state_close(s);
    }
}

/* Members this version does not know, inside an account, a device or a
 * history entry, are kept under their own names when the account changes
 * and is written again. */
Test(state, unknown_members_of_an_account_are_kept_when_it_changes)
{
    spew(path, "{\"version\":1,\"accounts\":{\"t\":{\"discovered_at\":5,"
               "\"later\":[{\"serial\":\"Z\",\"group\":\"g\"}],"
               "\"devices\":[{\"serial\":\"A\",\"base\":\"A\",\"new\":{\"k\":1}}],"
               "\"history\":{\"A\":{\"first_known\":1,\"also\":[2]}}}}}");
    struct state *s = state_open_ok(path);
    cr_assert_null(state_set_aside(s, NULL));
    state_set_discovered(s, "t", 1795000000);
    state_device_polled(s, "t", "A", NULL, 1795000000, true);
    s = state_reopen_ok(s, path);
    char *text = slurp_state(path);
    cr_expect_not_null(strstr(text, "\"later\":[{\"serial\":\"Z\",\"group\":\"g\"}]"), "%s", text);
    cr_expect_not_null(strstr(text, "\"new\":{\"k\":1}"), "%s", text);
    cr_expect_not_null(strstr(text, "\"also\":[2]"), "%s", text);
    cr_expect_null(strstr(text, "\"group\":[{"), "a member under another's name: %s", text);
    size_t n = 0;
    struct state_device *d = state_devices(s, "t", &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(d[0].last_ok, 1795000000);
    cr_expect_eq(state_discovered_at(s, "t"), 1795000000);
    state_devices_free(d, n);
    free(text);
    state_close(s);
}

/* The borrowed view is the copy, device by device, without the copy. */
Test(state, a_device_at_its_place_is_the_copy_borrowed)
{
    struct state *s = state_open_ok(path);
    static const char *const serials[] = {"A", "B", "C"};
    set_devices(s, "t", serials, 3, 1795000000);
    state_device_refused(s, "t", "B", 1795003600, 2);
    size_t n = 0;
    struct state_device *copy = state_devices(s, "t", &n);
    cr_assert_eq(n, 3);
    cr_expect_eq(state_device_count(s, "t"), 3);
    cr_expect_eq(state_device_count(s, "nobody"), 0);
    struct state_device d;
    for (size_t i = 0; i < n; i++) {
        cr_assert(state_device_at(s, "t", i, &d));
        cr_expect_str_eq(d.serial, copy[i].serial);
        cr_expect_str_eq(d.base, copy[i].base);
        cr_expect_str_eq(d.model, copy[i].model);
        cr_expect_str_eq(d.name, copy[i].name);
        cr_expect_str_eq(d.group, copy[i].group);
        cr_expect_eq(d.first_known, copy[i].first_known);
        cr_expect_eq(d.refused_until, copy[i].refused_until);
        cr_expect_eq(d.refusals, copy[i].refusals);
    }
    cr_expect_eq(copy[1].refusals, 2);
    cr_expect(!state_device_at(s, "t", 3, &d));
    cr_expect_null(d.serial);
    cr_expect(!state_device_at(s, "nobody", 0, &d));
    state_devices_free(copy, n);
    state_close(s);
}

/* A readings run finds the list unchanged and sets its time: the account
 * is written as the file had it, but for that number, when its text is
 * written at all (here a version 1 file's first save, which writes the
 * fleet file whole); after that, a new time goes to the state file's
 * "discovered" alone, and the fleet file is not written. One given twice
 * in the file is written from the structures (which one is stale?). */
Test(state, an_account_whose_discovery_time_alone_changed_keeps_its_text)
{
    static const char *const account =
        "{ \"later\" : [1, 2],\"discovered_at\" : 1794999000 ,"
        "\"devices\":[{\"serial\":\"A\",\"base\":\"A\",\"model\":\"\",\"name\":\"\","
        "\"group\":\"\"}],\"history\":{\"A\":{\"first_known\":1,\"last_poll\":0,"
        "\"last_ok\":0,\"refused_until\":0}}}";
    char *file = xasprintf("{\"version\":1,\"accounts\":{\"t\":%s}}", account);
    spew(path, file);
    struct state *s = state_open_ok(path);
    cr_assert_null(state_set_aside(s, NULL));
    state_set_discovered(s, "t", 1795000000);
    state_save_ok(s);
    char *text = slurp_state(path);
    char *want = xasprintf("\"accounts\":{\"t\":%.*s1795000000%s}", 37, account, account + 47);
    cr_expect_not_null(strstr(text, want), "%s not in %s", want, text);
    free(text);
    free(want);
    state_set_discovered(s, "t", 1795000060);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_discovered_at(s, "t"), 1795000060);
    size_t n = 0;
    struct state_device *d = state_devices(s, "t", &n);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(d[0].serial, "A");
    cr_expect_eq(d[0].first_known, 1);
    state_devices_free(d, n);
    /* The second time, only the state file changed: its "discovered"
     * has the new time, and the fleet file still the text written above. */
    text = slurp_state(path);
    cr_expect_not_null(strstr(text, "\"discovered\":{\"t\":1795000060}"), "%s", text);
    cr_expect_not_null(strstr(text, "\"later\" : [1, 2],\"discovered_at\" : 1795000000 ,"), "%s",
                       text);
    free(text);
    state_close(s);

    free(file);
    file = xasprintf("{\"version\":1,\"accounts\":{\"t\":{\"discovered_at\":1,"
                     "\"discovered_at\":2,\"devices\":[],\"history\":{}}}}");
    spew(path, file);
    s = state_open_ok(path);
    state_set_discovered(s, "t", 1795000000);
    s = state_reopen_ok(s, path);
    text = slurp_state(path);
    cr_expect_not_null(strstr(text, "\"t\":{\"discovered_at\":1795000000,\"devices\":[]"), "%s",
                       text);
    cr_expect_eq(state_discovered_at(s, "t"), 1795000000);
    free(text);
    free(file);
    state_close(s);
}

Test(state, a_readings_memory_of_the_wrong_shape_is_corrupt)
{
    static const char *const bad[] = {
        "{\"version\":1,\"watch\":{\"5214000A\":[]}}",
        "{\"version\":1,\"watch\":{\"5214000A\":{\"t\":\"x\"}}}",
        "{\"version\":1,\"watch\":{\"5214000A\":{\"ch\":[{\"value\":1}]}}}",
        "{\"version\":1,\"watch\":{\"5214000A\":{\"ch\":[{\"num\":1,\"history\":[1,\"2\"]}]}}}",
        "{\"version\":1,\"watch\":{\"5214000A\":{\"gaps\":[1.5]}}}",
        "{\"version\":1,\"limits\":{\"5214000A\":{\"1\":{\"upper\":\"8\"}}}}",
        "{\"version\":1,\"signals\":{\"tbzz9999\":{\"calls\":{}}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        spew(path, bad[i]);
        struct state *s = state_open_ok(path);
        cr_expect_not_null(state_set_aside(s, NULL), "%s was taken as good", bad[i]);
        state_close(s);
    }
}
