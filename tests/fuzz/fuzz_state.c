/* Fuzzes the state loader with arbitrary file contents (and, after a line
 * "--fleet--" in the input, the contents of its fleet file, generation 1,
 * which a state file names with "fleet":{"generation":1,"length":N}): a
 * state that loads
 * must save (in full and budget-only) and load again, also after its clock
 * was clamped, the devices of account "lab" set again, its throttles
 * pruned and set, a counter counted, the health of a login and a
 * receiver recorded, a device's readings memory and a learnt limit set
 * and a silence added (which must come back as set); one that does not load is moved aside whole by
 * state_open (and refused by state_peek). state_peek loads exactly what state_open loads. Never a
 * crash on a hand-edited or damaged file. */
#define _GNU_SOURCE /* memmem */
#include "fuzz.h"
#include "state.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;

#define FLEET_MARK "\n--fleet--\n"

/* Removes the fleet files beside PATH (moved aside or not): each input
 * starts with none but its own. */
static void remove_fleet_files(void)
{
    DIR *dh = opendir(dir);
    for (struct dirent *de; dh && (de = readdir(dh));) {
        if (strncmp(de->d_name, "state.json.fleet-", 17) != 0)
            continue;
        char *f = xasprintf("%s/%s", dir, de->d_name);
        unlink(f);
        free(f);
    }
    if (dh)
        closedir(dh);
}

/* Removes PATH.d and the device files in it: each input starts with none. */
static void remove_seen_files(const char *path)
{
    char *d = xasprintf("%s.d", path);
    DIR *dh = opendir(d);
    for (struct dirent *de; dh && (de = readdir(dh));) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *f = xasprintf("%s/%s", d, de->d_name);
        unlink(f);
        free(f);
    }
    if (dh)
        closedir(dh);
    rmdir(d);
    free(d);
}

static void remove_dir(void)
{
    char *lock = xasprintf("%s/state.json.lock", dir);
    unlink(lock);
    free(lock);
    rmdir(dir);
    free(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct state *s = NULL;
    struct err e;
    if (!dir) {
        char tmpl[] = "/tmp/wsrelay-fuzz-state-XXXXXX";
        if (!mkdtemp(tmpl))
            abort();
        dir = xstrdup(tmpl);
        atexit(remove_dir);
    }
    char *path = xasprintf("%s/state.json", dir);
    const uint8_t *mark = memmem(data, size, FLEET_MARK, sizeof FLEET_MARK - 1);
    if (mark) {
        const uint8_t *fleet = mark + sizeof FLEET_MARK - 1;
        char *fleet_path = xasprintf("%s.fleet-1", path);
        if (file_write_atomic(fleet_path, fleet, size - (size_t)(fleet - data), 0600, &e) < 0)
            abort();
        free(fleet_path);
        size = (size_t)(mark - data);
    }
    if (file_write_atomic(path, data, size, 0600, &e) < 0)
        abort();
    struct state *peeked = NULL;
    int peek_rc = state_peek(&peeked, path, &e);
    state_close(peeked);
    if (state_open(&s, path, 0, &e) == 0 && state_set_aside(s, NULL)) {
        /* A file that does not load is moved aside, whole, and the state
         * starts empty; state_peek refused it. */
        struct buf b;
        if (peek_rc == 0)
            abort();
        buf_init(&b, 0);
        if (file_read(&b, state_set_aside(s, NULL), &e) < 0 || b.len != size ||
            memcmp(buf_str(&b), data, size) != 0 || access(path, F_OK) == 0)
            abort();
        buf_free(&b);
        unlink(state_set_aside(s, NULL));
        if (state_outbox_count(s, NULL) != 0)
            abort();
        state_close(s);
    } else if (s) {
        size_t n = 0;
        if (peek_rc < 0)
            abort();
        /* Two statements: the order in which arguments are evaluated is
         * unspecified, and `n` must be read after the call sets it. */
        struct outbox_item *items = state_outbox_due(s, "x", 0x7fffffffLL, &n);
        state_outbox_free(items, n);
        char **receivers = state_outbox_receivers(s, &n);
        for (size_t i = 0; i < n; i++)
            free(receivers[i]);
        free(receivers);
        if (state_save_budget(s, &e) < 0)
            abort(); /* the file on disk loaded a moment ago */
        state_clamp_clock(s, 1795000000, 3600);
        struct state_device *devs = state_devices(s, "lab", &n);
        state_set_devices(s, "lab", devs, n, 1795000000);
        state_devices_free(devs, n);
        struct throttle_entry t;
        state_throttle(s, "freezer-critical", "5214000A", "ch1", &t);
        state_prune_throttles(s, 1795000000 - 30 * 86400);
        if (t.held < LONG_MAX)
            t.held++;
        state_set_throttle(s, "freezer-critical", "5214000A", "ch1", &t);
        state_set_throttle(s, "a", "5214000A", "ch1", &t);
        state_count(s, "throttled", 1);
        struct state_health h;
        state_login_health(s, "tbzz9999", &h);
        state_login_result(s, "tbzz9999", false, 503, h.error ? h.error : "x\x80\n", 1795000000);
        state_health_clear(&h);
        state_receiver_health(s, "hook", &h);
        state_receiver_result(s, "hook", h.failures % 2 == 0, h.error, 1795000000);
        state_health_clear(&h);
        struct outbox_summary sum;
        state_outbox_summary(s, NULL, &sum);
        if (sum.count != state_outbox_count(s, NULL))
            abort();
        /* A readings memory and a learnt limit changed: what is saved of
         * them comes back (the other entries go back as they were read). */
        struct watch w, got;
        if (!state_watch(s, "5214000A", &w)) {
            w = (struct watch){.unixtime = 1795000000, .n_ch = 1, .n_gaps = 1, .gaps = {60}};
            w.ch[0] = (struct watch_channel){.num = 1,
                                             .value = -79.8,
                                             .n_history = 2,
                                             .history = {-80.1, 1e300},
                                             .has_at_poll = true,
                                             .at_poll_error = true};
        }
        w.seen_at = w.seen_at < 1795000000 ? 1795000000 : w.seen_at + 1;
        state_set_watch(s, "5214000A", &w);
        state_learn_limit(s, "5214000A", 2, false, -0.5);
        /* The silences read come by id, each once; one added gets an id
         * above them all, and covers what it names. */
        size_t n_sil = 0;
        struct state_silence *sil = state_silences(s, &n_sil);
        unsigned long top = 0;
        for (size_t i = 0; i < n_sil; i++) {
            if (sil[i].id <= top)
                abort();
            top = sil[i].id;
            state_silence_covering(s, sil[i].glob, sil[i].by, sil[i].channel, sil[i].from);
        }
        state_silences_free(sil, n_sil);
        state_prune_silences(s, 1795000000 - 7 * 86400);
        unsigned long added = state_silence_add(s, "5214*", 1, 1795000000, 1795003600, "r", "a");
        if (added && (added <= top || !state_silence_covering(s, "5214000A", "", 1, 1795000000)))
            abort();
        if (state_save(s, &e) < 0)
            abort();
        state_close(s);
        if (state_open(&s, path, 0, &e) < 0 || state_set_aside(s, NULL))
            abort(); /* what we saved must load */
        struct watch_limit l;
        if (!state_watch(s, "5214000A", &got) || got.seen_at != w.seen_at ||
            got.unixtime != w.unixtime || got.n_ch != w.n_ch || got.n_gaps != w.n_gaps ||
            !state_learnt_limit(s, "5214000A", 2, &l) || !l.has_lower || l.lower != -0.5 ||
            (added && !state_silence_active(s, added, 1795000000)))
            abort();
        for (int i = 0; i < w.n_ch; i++)
            if (got.ch[i].num != w.ch[i].num || got.ch[i].n_history != w.ch[i].n_history)
                abort();
        state_close(s);
    } else {
        abort(); /* a file that can be read always opens, moved aside if need be */
    }
    unlink(path);
    remove_seen_files(path);
    remove_fleet_files();
    free(path);
    return 0;
}
