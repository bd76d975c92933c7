/* Silences for planned work: the state's section (ids, which silence
 * covers a device and channel, expiry, pruning, the file's round trip, an
 * older state without them, a damaged member that costs them alone) and
 * the commands `wsrelay silence add|list|expire` with `wsrelay status`,
 * end to end against a real state file. Every test works in its own
 * temporary directory; times are printed in UTC (TZ is set). */
#include "proc.h"
#include "state.h"
#include "statefile.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1795000000LL /* 2026-11-18 11:06:40 UTC */
#define HOUR 3600LL

static char *dir;
static char *path;   /* DIR/state.json */
static char *config; /* DIR/wsrelay.yaml, naming it */

static void setup(void)
{
    setenv("TZ", "UTC", 1);
    unsetenv("SUDO_USER");
    dir = test_tmpdir();
    path = xasprintf("%s/state.json", dir);
    config = xasprintf("%s/wsrelay.yaml", dir);
    char *yaml = xasprintf("state_file: %s\n"
                           "accounts:\n"
                           "  - name: lab\n"
                           "    base_url: http://127.0.0.1:9\n"
                           "    api_key: SECRET-API-KEY-0123456789abcdef\n"
                           "    login_id: tbzz9999\n"
                           "    login_pass: s3cret-pass-word\n"
                           "    signals: false\n"
                           "receivers:\n"
                           "  - name: log\n"
                           "    file: {path: \"%s/out.txt\"}\n",
                           path, dir);
    write_file(config, yaml);
    cr_assert_eq(chmod(config, 0600), 0);
    free(yaml);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(dir);
    free(path);
    free(config);
}

TestSuite(silences, .init = setup, .fini = teardown);
TestSuite(silence_cli, .init = setup, .fini = teardown, .timeout = 120);

/* --- helpers ------------------------------------------------------------ */

/* Silence `id` of the state, copied into *out (free with
 * state_silences_free(out, 1)); false when there is none. */
static bool silence_of(const struct state *s, unsigned long id, struct state_silence **out)
{
    size_t n = 0;
    struct state_silence *all = state_silences(s, &n);
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        if (all[i].id == id && !found) {
            *out = xcalloc(1, sizeof **out);
            **out = all[i];
            all[i].glob = all[i].reason = all[i].by = NULL;
            found = true;
        }
    }
    state_silences_free(all, n);
    return found;
}

static size_t count_silences(const struct state *s)
{
    size_t n = 0;
    struct state_silence *all = state_silences(s, &n); /* n is set before the free reads it */
    state_silences_free(all, n);
    return n;
}

static char *fixture(const char *name)
{
    char *p = xasprintf("%s/tests/data/%s", WSRELAY_SOURCE_DIR, name);
    char *text = read_file_str(p);
    cr_assert_not_null(text, "%s", p);
    free(p);
    return text;
}

/* `wsrelay -c CONFIG ARGS...`, with a deadline that only guards against a
 * hang. */
#define wsr(...) wsrelay_cmd(60, "-c", config, __VA_ARGS__, NULL)

static void expect_line(const char *text, const char *line)
{
    size_t len = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[len] == '\n')
            return;
    cr_expect_fail("no line '%s' in:\n%s", line, text);
}

/* --- the state's section ------------------------------------------------ */

Test(silences, ids_count_from_one_and_a_copy_holds_what_was_added)
{
    struct state *s = state_open_ok(path);
    struct state_silence *v = NULL;
    cr_expect_eq(state_silence_add(s, "Freezer*", 1, T0, T0 + 2 * HOUR, "defrost", "alice"), 1);
    cr_expect_eq(state_silence_add(s, "5214*", 0, T0, T0 + HOUR, "cleaning", "bob"), 2);
    cr_assert(silence_of(s, 1, &v));
    cr_expect_str_eq(v->glob, "Freezer*");
    cr_expect_eq(v->channel, 1);
    cr_expect_eq(v->from, T0);
    cr_expect_eq(v->until, T0 + 2 * HOUR);
    cr_expect_str_eq(v->reason, "defrost");
    cr_expect_str_eq(v->by, "alice");
    state_silences_free(v, 1);
    cr_expect_eq(count_silences(s), 2);
    state_close(s);
}

Test(silences, a_glob_covers_a_device_by_its_serial_or_its_name)
{
    struct state *s = state_open_ok(path);
    unsigned long by_name = state_silence_add(s, "freezer*", 0, T0, T0 + HOUR, "defrost", "a");
    unsigned long by_serial = state_silence_add(s, "5279*", 0, T0, T0 + HOUR, "moving", "a");
    cr_expect_eq(state_silence_covering(s, "5214000A", "Freezer -80 A", 1, T0), by_name,
                 "by name, either ASCII case");
    cr_expect_eq(state_silence_covering(s, "5279000B", "Fridge 2", 1, T0), by_serial);
    cr_expect_eq(state_silence_covering(s, "5279000B", NULL, 1, T0), by_serial, "no name");
    cr_expect_eq(state_silence_covering(s, "5214000C", "Fridge 3", 1, T0), 0);
    cr_expect_eq(state_silence_covering(s, "5214000C", "", 1, T0), 0, "an empty name");
    state_close(s);
}

Test(silences, channel_0_covers_every_channel_and_kind_channel_n_only_channel_n)
{
    struct state *s = state_open_ok(path);
    unsigned long one = state_silence_add(s, "A*", 1, T0, T0 + HOUR, "probe swap", "a");
    unsigned long all = state_silence_add(s, "B*", 0, T0, T0 + HOUR, "cleaning", "a");
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0), one);
    cr_expect_eq(state_silence_covering(s, "A1", "", 2, T0), 0, "another channel");
    cr_expect_eq(state_silence_covering(s, "A1", "", 0, T0), 0,
                 "a kind without a channel (battery) needs a silence of every channel");
    for (int ch = 0; ch <= 6; ch++)
        cr_expect_eq(state_silence_covering(s, "B1", "", ch, T0), all, "channel %d", ch);
    state_close(s);
}

Test(silences, a_silence_is_active_from_its_start_up_to_but_not_at_its_end)
{
    struct state *s = state_open_ok(path);
    unsigned long id = state_silence_add(s, "A*", 0, T0, T0 + HOUR, "defrost", "a");
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0 - 1), 0, "before");
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0), id, "at its start");
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0 + HOUR - 1), id);
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0 + HOUR), 0, "at its end");
    cr_expect(state_silence_active(s, id, T0));
    cr_expect_not(state_silence_active(s, id, T0 + HOUR));
    cr_expect_not(state_silence_active(s, id + 1, T0), "an id never given");
    state_close(s);
}

Test(silences, of_several_that_cover_a_channel_the_one_that_ends_last_is_named)
{
    struct state *s = state_open_ok(path);
    state_silence_add(s, "A*", 0, T0, T0 + HOUR, "short", "a");
    unsigned long longest = state_silence_add(s, "A1", 1, T0, T0 + 3 * HOUR, "long", "a");
    state_silence_add(s, "*", 0, T0, T0 + 2 * HOUR, "middle", "a");
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0), longest);
    cr_expect_eq(state_silence_covering(s, "A1", "", 2, T0), 3, "channel 2: the middle one");
    state_close(s);
}

Test(silences, expire_ends_an_active_silence_now_and_only_once)
{
    struct state *s = state_open_ok(path);
    unsigned long id = state_silence_add(s, "A*", 0, T0, T0 + HOUR, "defrost", "a");
    unsigned long later = state_silence_add(s, "B*", 0, T0 + HOUR, T0 + 2 * HOUR, "later", "a");
    struct state_silence *v = NULL;
    cr_expect(state_silence_expire(s, id, T0 + 600));
    cr_expect_not(state_silence_active(s, id, T0 + 600));
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0 + 600), 0);
    cr_assert(silence_of(s, id, &v));
    cr_expect_eq(v->from, T0);
    cr_expect_eq(v->until, T0 + 600, "it ended when it was expired");
    state_silences_free(v, 1);
    cr_expect_not(state_silence_expire(s, id, T0 + 700), "already ended");
    cr_expect_not(state_silence_expire(s, 99, T0), "no such id");
    cr_expect(state_silence_expire(s, later, T0 + 600), "one to come");
    cr_assert(silence_of(s, later, &v));
    cr_expect_eq(v->from, T0 + 600);
    cr_expect_eq(v->until, T0 + 600);
    cr_expect_not(state_silence_active(s, later, T0 + HOUR), "it never starts");
    state_silences_free(v, 1);
    state_close(s);
}

Test(silences, prune_forgets_only_those_that_ended_before_the_bound)
{
    struct state *s = state_open_ok(path);
    unsigned long a = state_silence_add(s, "A*", 0, T0, T0 + HOUR, "a", "a");
    unsigned long b = state_silence_add(s, "B*", 0, T0, T0 + 2 * HOUR, "b", "a");
    state_prune_silences(s, T0 + HOUR); /* a ended at the bound itself: kept */
    cr_expect_eq(count_silences(s), 2);
    state_prune_silences(s, T0 + HOUR + 1);
    cr_expect_eq(count_silences(s), 1);
    cr_expect_not(state_silence_active(s, a, T0));
    cr_expect(state_silence_active(s, b, T0));
    state_close(s);
}

Test(silences, an_id_is_never_given_twice_after_expire_prune_and_a_reload)
{
    struct state *s = state_open_ok(path);
    cr_expect_eq(state_silence_add(s, "A*", 0, T0, T0 + HOUR, "a", "a"), 1);
    cr_expect_eq(state_silence_add(s, "B*", 0, T0, T0 + HOUR, "b", "a"), 2);
    cr_expect(state_silence_expire(s, 2, T0 + 1));
    state_prune_silences(s, T0 + 2 * HOUR); /* both gone */
    cr_expect_eq(count_silences(s), 0);
    cr_expect_eq(state_silence_add(s, "C*", 0, T0, T0 + HOUR, "c", "a"), 3);
    s = state_reopen_ok(s, path);
    state_prune_silences(s, T0 + 2 * HOUR);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_silence_add(s, "D*", 0, T0, T0 + HOUR, "d", "a"), 4);
    state_close(s);
}

Test(silences, a_save_and_a_reload_keep_every_field)
{
    struct state *s = state_open_ok(path);
    state_silence_add(s, "冷凍庫*", 3, T0, T0 + HOUR, "déshuffage\tdu congélateur", "山田");
    state_silence_add(s, "5214000A", 0, T0 + 60, T0 + 2 * HOUR, "move", "bob");
    s = state_reopen_ok(s, path);
    size_t n = 0;
    struct state_silence *v = state_silences(s, &n);
    cr_assert_eq(n, 2);
    cr_expect_eq(v[0].id, 1);
    cr_expect_str_eq(v[0].glob, "冷凍庫*");
    cr_expect_eq(v[0].channel, 3);
    cr_expect_eq(v[0].from, T0);
    cr_expect_eq(v[0].until, T0 + HOUR);
    cr_expect_str_eq(v[0].reason, "déshuffage du congélateur", "a tab becomes a space");
    cr_expect_str_eq(v[0].by, "山田");
    cr_expect_eq(v[1].id, 2);
    cr_expect_str_eq(v[1].glob, "5214000A");
    cr_expect_eq(v[1].channel, 0);
    cr_expect_eq(v[1].from, T0 + 60);
    cr_expect_eq(v[1].until, T0 + 2 * HOUR);
    state_silences_free(v, n);
    cr_expect_eq(state_silence_covering(s, "X", "冷凍庫 1", 3, T0), 1);
    state_close(s);
}

Test(silences, add_refuses_what_would_make_the_file_fail_its_check)
{
    struct state *s = state_open_ok(path);
    cr_expect_eq(state_silence_add(s, "x[", 0, T0, T0 + HOUR, "r", "a"), 0, "not a glob");
    cr_expect_eq(state_silence_add(s, "", 0, T0, T0 + HOUR, "r", "a"), 0, "empty glob");
    cr_expect_eq(state_silence_add(s, "A*", 7, T0, T0 + HOUR, "r", "a"), 0, "channel 7");
    cr_expect_eq(state_silence_add(s, "A*", -1, T0, T0 + HOUR, "r", "a"), 0, "channel -1");
    cr_expect_eq(state_silence_add(s, "A*", 0, T0, T0, "r", "a"), 0, "ends as it starts");
    cr_expect_eq(state_silence_add(s, "A*", 0, T0, T0 + HOUR, NULL, "a"), 0, "no reason");
    cr_expect_eq(count_silences(s), 0);
    cr_expect_eq(state_silence_add(s, "A*", 6, T0, T0 + HOUR, "r", "a"), 1, "ids not spent");
    state_close(s);
}

Test(silences, a_clock_that_jumped_back_starts_a_silence_stamped_ahead_now)
{
    struct state *s = state_open_ok(path);
    unsigned long id = state_silence_add(s, "A*", 0, T0 + HOUR, T0 + 3 * HOUR, "r", "a");
    struct state_silence *v = NULL;
    state_clamp_clock(s, T0, 3600);
    cr_assert(silence_of(s, id, &v));
    cr_expect_eq(v->from, T0);
    cr_expect_eq(v->until, T0 + 3 * HOUR, "its end stays");
    state_silences_free(v, 1);
    cr_expect(state_silence_active(s, id, T0));
    state_close(s);
}

/* tests/data/state/0.1.0-637411d.json was written by wsrelay at commit
 * 637411d (the last release of one state file, before silences) against
 * the simulator's demo scenario. It loads with no silence, and a silence
 * added to it survives the save that moves it to version 2. */
Test(silences, a_state_of_an_older_release_loads_with_no_silence)
{
    char *text = fixture("state/0.1.0-637411d.json");
    cr_assert_null(strstr(text, "silences"));
    write_file(path, text);
    free(text);
    struct state *s = state_open_ok(path);
    cr_expect_null(state_set_aside(s, NULL), "the old state was set aside");
    cr_expect_eq(count_silences(s), 0);
    cr_expect_eq(state_silence_covering(s, "5214A001", "", 1, T0), 0);
    cr_expect_eq(state_outbox_count(s, "hook"), 6);
    cr_expect_eq(state_silence_add(s, "5214A001", 1, T0, T0 + HOUR, "defrost", "a"), 1);
    s = state_reopen_ok(s, path);
    cr_expect_eq(state_silence_covering(s, "5214A001", "", 1, T0), 1);
    cr_expect_eq(state_outbox_count(s, "hook"), 6);
    state_close(s);
}

/* A state whose "silences" member fails its check, with a counter beside
 * it: it loads (nothing set aside), with no silence and the counter kept,
 * and ids go on above the damaged ones. */
static void expect_damage_costs_the_silences_only(const char *member, unsigned long next)
{
    char *text = xasprintf("{\"version\":2,\"next_id\":1,\"counters\":{\"dropped\":5},"
                           "\"silences\":%s}",
                           member);
    write_file(path, text);
    free(text);
    struct state *s = state_open_ok(path);
    cr_expect_null(state_set_aside(s, NULL), "%s: the state was set aside", member);
    cr_expect_eq(count_silences(s), 0, "%s", member);
    cr_expect_eq(state_silence_covering(s, "A1", "", 1, T0 + 10), 0, "%s", member);
    cr_expect_eq(state_counter(s, "dropped"), 5, "%s", member);
    cr_expect_eq(state_silence_add(s, "B*", 0, T0, T0 + HOUR, "r", "a"), next, "%s", member);
    s = state_reopen_ok(s, path);
    cr_expect_eq(count_silences(s), 1, "%s", member);
    cr_expect_eq(state_counter(s, "dropped"), 5, "%s", member);
    state_close(s);
}

Test(silences, a_damaged_member_costs_the_silences_only)
{
    static const char ok[] = "\"glob\":\"A*\",\"channel\":0,\"from\":1795000000,"
                             "\"until\":1795003600,\"reason\":\"r\",\"by\":\"a\"";
    char *bad_channel = xasprintf("{\"next_id\":8,\"list\":[{\"id\":7,%s},"
                                  "{\"id\":4,\"glob\":\"A*\",\"channel\":9,\"from\":1,\"until\":2,"
                                  "\"reason\":\"r\",\"by\":\"a\"}]}",
                                  ok);
    char *twice = xasprintf("{\"next_id\":3,\"list\":[{\"id\":2,%s},{\"id\":2,%s}]}", ok, ok);
    char *bad_glob = xasprintf("{\"list\":[{\"id\":1,\"glob\":\"x[\",\"channel\":0,\"from\":1,"
                               "\"until\":2,\"reason\":\"r\",\"by\":\"a\"}]}");
    char *no_id = xasprintf("{\"next_id\":12,\"list\":[{%s}]}", ok);
    expect_damage_costs_the_silences_only(bad_channel, 8);
    expect_damage_costs_the_silences_only(twice, 3);
    expect_damage_costs_the_silences_only(bad_glob, 2);
    expect_damage_costs_the_silences_only(no_id, 12);
    expect_damage_costs_the_silences_only("{\"list\":{}}", 1);
    expect_damage_costs_the_silences_only("7", 1);

    /* One that is not an object is replaced by the next prune, as by an add. */
    write_file(path, "{\"version\":2,\"next_id\":1,\"silences\":\"x\"}");
    struct state *s = state_open_ok(path);
    state_prune_silences(s, T0);
    state_save_ok(s);
    state_close(s);
    char *text = read_file_str(path);
    cr_expect(strstr(text, "\"silences\":{\"list\":[],\"next_id\":1}"), "%s", text);
    free(text);
    expect_damage_costs_the_silences_only("[]", 1);
    free(bad_channel);
    free(twice);
    free(bad_glob);
    free(no_id);
}

Test(silences, a_member_that_passes_its_check_is_read_and_ids_go_on_above_it)
{
    write_file(path, "{\"version\":2,\"next_id\":1,\"silences\":{\"list\":["
                     "{\"id\":9,\"glob\":\"A*\",\"channel\":2,\"from\":1795000000,"
                     "\"until\":1795003600,\"reason\":\"r\",\"by\":\"a\"},"
                     "{\"id\":4,\"glob\":\"B*\",\"channel\":0,\"from\":1795000000,"
                     "\"until\":1795003600,\"reason\":\"r\",\"by\":\"a\"}]}}");
    struct state *s = state_open_ok(path);
    size_t n = 0;
    struct state_silence *v = state_silences(s, &n);
    cr_assert_eq(n, 2);
    cr_expect_eq(v[0].id, 4, "by id");
    cr_expect_eq(v[1].id, 9);
    state_silences_free(v, n);
    cr_expect_eq(state_silence_covering(s, "A1", "", 2, T0), 9);
    cr_expect_eq(state_silence_add(s, "C*", 0, T0, T0 + HOUR, "r", "a"), 10, "no next_id: max + 1");
    state_close(s);
}

/* --- the commands --------------------------------------------------------- */

Test(silence_cli, add_list_status_and_expire_end_to_end)
{
    char now[32], later[32], after[32];
    snprintf(now, sizeof now, "%lld", T0);
    snprintf(later, sizeof later, "%lld", T0 + 600);
    snprintf(after, sizeof after, "%lld", T0 + 1200);
    struct cmd_result before = wsr("status", "--json", "--now", later);
    struct json_object *jb = json_tokener_parse(before.out);
    cr_assert_not_null(jb, "%s", before.out);

    struct cmd_result r = wsr("silence", "add", "Freezer*", "--channel", "1", "--for", "3h24m",
                              "--reason", "defrost", "--by", "alice", "--now", now);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "1 Freezer* ch1 until 14:30 (defrost, by alice)\n");
    cr_expect(strstr(r.err, "warning: no device known yet has a serial or name that 'Freezer*' "
                            "matches"),
              "%s", r.err);
    cmd_result_free(&r);

    r = wsr("silence", "list", "--now", later);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "1 Freezer* ch1 until 14:30 (defrost, by alice)\n");
    cmd_result_free(&r);

    r = wsr("status", "--now", later);
    expect_line(r.out, "  silenced: Freezer* ch1 until 14:30 (defrost, by alice)");
    cr_expect_eq(r.status, before.status, "a silence is no problem");
    cmd_result_free(&r);
    r = wsr("status", "--json", "--now", later);
    struct json_object *j = json_tokener_parse(r.out);
    cr_assert_not_null(j, "%s", r.out);
    struct json_object *arr = NULL, *problems = NULL, *problems_before = NULL;
    cr_assert(json_object_object_get_ex(j, "silences", &arr));
    cr_assert_eq(json_object_array_length(arr), 1);
    struct json_object *one = json_object_array_get_idx(arr, 0);
    cr_expect_str_eq(json_object_to_json_string_ext(one, JSON_C_TO_STRING_PLAIN),
                     "{\"id\":1,\"glob\":\"Freezer*\",\"channel\":1,\"from\":1795000000,"
                     "\"until\":1795012240,\"reason\":\"defrost\",\"by\":\"alice\"}");
    json_object_object_get_ex(j, "problems", &problems);
    json_object_object_get_ex(jb, "problems", &problems_before);
    cr_expect_str_eq(json_object_to_json_string(problems),
                     json_object_to_json_string(problems_before), "a silence is no problem");
    json_object_put(j);
    cmd_result_free(&r);

    r = wsr("silence", "expire", "1", "--now", later);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "silence 1 ended\n");
    cmd_result_free(&r);

    r = wsr("silence", "list", "--now", after);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "no active silence\n");
    cmd_result_free(&r);
    r = wsr("silence", "list", "--all", "--now", after);
    cr_expect_str_eq(r.out, "1 Freezer* ch1 ended 11:16 (defrost, by alice)\n");
    cmd_result_free(&r);
    r = wsr("status", "--now", after);
    expect_line(r.out, "  no active silence");
    cr_expect_null(strstr(r.out, "silenced:"), "%s", r.out);
    cmd_result_free(&r);

    struct state *s = state_open_ok(path);
    cr_expect_not(state_silence_active(s, 1, T0 + 600));
    cr_expect_eq(count_silences(s), 1, "kept for list --all");
    state_close(s);
    json_object_put(jb);
    cmd_result_free(&before);
}

Test(silence_cli, add_in_json_and_list_in_json)
{
    char now[32];
    snprintf(now, sizeof now, "%lld", T0);
    struct cmd_result r = wsr("silence", "add", "5214*", "--for", "90m", "--reason", "cleaning",
                              "--json", "--now", now);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct json_object *j = json_tokener_parse(r.out);
    cr_assert_not_null(j, "%s", r.out);
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(j, "id", &v));
    cr_expect_eq(json_object_get_int64(v), 1);
    cr_assert(json_object_object_get_ex(j, "until", &v));
    cr_expect_eq(json_object_get_int64(v), T0 + 5400);
    cr_assert(json_object_object_get_ex(j, "channel", &v));
    cr_expect_eq(json_object_get_int64(v), 0);
    json_object_put(j);
    cmd_result_free(&r);
    r = wsr("silence", "list", "--json", "--now", now);
    j = json_tokener_parse(r.out);
    cr_assert_not_null(j, "%s", r.out);
    cr_assert(json_object_object_get_ex(j, "silences", &v));
    cr_assert_eq(json_object_array_length(v), 1);
    struct json_object *active = NULL;
    cr_assert(json_object_object_get_ex(json_object_array_get_idx(v, 0), "active", &active));
    cr_expect(json_object_get_boolean(active));
    json_object_put(j);
    cmd_result_free(&r);
}

Test(silence_cli, by_is_sudo_user_else_the_login_name_of_who_runs_it)
{
    char now[32];
    snprintf(now, sizeof now, "%lld", T0);
    const struct passwd *pw = getpwuid(getuid());
    cr_assert_not_null(pw);
    char *want = xasprintf("1 A* until 12:06 (r, by %s)\n", pw->pw_name);
    struct cmd_result r = wsr("silence", "add", "A*", "--for", "1h", "--reason", "r", "--now", now);
    cr_expect_str_eq(r.out, want);
    cmd_result_free(&r);
    free(want);
    setenv("SUDO_USER", "night-shift", 1);
    r = wsr("silence", "add", "B*", "--for", "1h", "--reason", "r", "--now", now);
    unsetenv("SUDO_USER");
    cr_expect_str_eq(r.out, "2 B* until 12:06 (r, by night-shift)\n");
    cmd_result_free(&r);
}

/* A usage error: exit status 2, `message` on stderr, nothing on stdout. */
static void expect_usage_error(struct cmd_result r, const char *message)
{
    cr_expect_eq(r.status, 2, "%s: status %d", message, r.status);
    cr_expect(strstr(r.err, message), "'%s' not in:\n%s", message, r.err);
    cr_expect_str_eq(r.out, "", "%s", message);
    cmd_result_free(&r);
}

Test(silence_cli, bad_input_is_a_usage_error_that_changes_nothing)
{
    expect_usage_error(wsr("silence", "add", "A*", "--for", "2 hours", "--reason", "r"),
                       "wsrelay: silence add: --for: '2 hours' is not a duration (such as 2h, "
                       "90m or 1h30m)");
    expect_usage_error(wsr("silence", "add", "A*", "--for", "0s", "--reason", "r"),
                       "--for: '0s' is not a duration");
    expect_usage_error(
        wsr("silence", "add", "A*", "--for", "2h", "--reason", "r", "--channel", "7"),
        "wsrelay: silence add: --channel: '7' is not a channel (1 to 6)");
    expect_usage_error(
        wsr("silence", "add", "A*", "--for", "2h", "--reason", "r", "--channel", "0"),
        "--channel: '0' is not a channel (1 to 6)");
    expect_usage_error(wsr("silence", "add", "A*", "--for", "2h", "--reason", " "),
                       "wsrelay: silence add: --reason: empty");
    expect_usage_error(wsr("silence", "add", "A*", "--for", "2h"),
                       "wsrelay: silence add: --reason TEXT is required");
    expect_usage_error(wsr("silence", "add", "A*", "--reason", "r"),
                       "wsrelay: silence add: --for DURATION is required");
    expect_usage_error(wsr("silence", "add", "[A*", "--for", "2h", "--reason", "r"),
                       "wsrelay: silence add: '[A*' is not a glob: column 1: '[' is not closed");
    expect_usage_error(wsr("silence", "add", "--for", "2h", "--reason", "r"),
                       "usage: wsrelay silence add GLOB");
    expect_usage_error(wsr("silence", "expire", "1"), "wsrelay: silence expire: no silence 1");
    expect_usage_error(wsr("silence", "expire", "one"),
                       "wsrelay: silence expire: 'one' is not a silence id");
    expect_usage_error(wsr("silence", "expire", "0"), "'0' is not a silence id");
    expect_usage_error(wsr("silence", "frobnicate"),
                       "wsrelay: silence: unknown subcommand 'frobnicate'");
    expect_usage_error(wsr("silence"), "usage: wsrelay silence add GLOB");
    struct state *s = state_open_ok(path);
    cr_expect_eq(count_silences(s), 0);
    state_close(s);

    char now[32], later[32];
    snprintf(now, sizeof now, "%lld", T0);
    snprintf(later, sizeof later, "%lld", T0 + 60);
    struct cmd_result r = wsr("silence", "add", "A*", "--for", "1m", "--reason", "r", "--now", now);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cmd_result_free(&r);
    expect_usage_error(wsr("silence", "expire", "1", "--now", later),
                       "wsrelay: silence expire: silence 1 has already ended");
}

Test(silence_cli, help_of_the_group_and_of_each_subcommand)
{
    struct cmd_result r = wsrelay_cmd(30, "silence", "--help", NULL);
    cr_expect_eq(r.status, 0);
    static const char first[] =
        "usage: wsrelay [-c FILE] [-v | -q] silence add|list|expire [ARGS]\n";
    cr_expect(strncmp(r.out, first, strlen(first)) == 0, "%s", r.out);
    cr_expect(strstr(r.out, "silence add GLOB [--channel N] --for DURATION --reason TEXT [--by "
                            "NAME] [--json] [--now UNIXTIME]\n"),
              "%s", r.out);
    cr_expect(strstr(r.out, "silence list [--all] [--json] [--now UNIXTIME]\n"), "%s", r.out);
    cr_expect(strstr(r.out, "silence expire ID [--now UNIXTIME]\n"), "%s", r.out);
    cmd_result_free(&r);
    r = wsrelay_cmd(30, "silence", "expire", "--help", NULL);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "silence expire ID [--now UNIXTIME]\n"), "%s", r.out);
    cr_expect_null(strstr(r.out, "silence add"), "%s", r.out);
    cmd_result_free(&r);
    r = wsrelay_cmd(30, "--help", NULL);
    cr_expect(strstr(r.out, "\n  silence add|list|expire [ARGS]\n"), "%s", r.out);
    cmd_result_free(&r);
}

/* A run holds the state's lock: `silence add` waits for it (it changes
 * nothing meanwhile), then adds once the run lets go. The 20 s bound only
 * guards against a hang. */
Test(silence_cli, add_waits_for_a_run_that_holds_the_lock)
{
    char now[32];
    snprintf(now, sizeof now, "%lld", T0);
    struct state *run = state_open_ok(path);
    state_count(run, "dropped", 1);
    state_save_ok(run);
    char *const argv[] = {(char *)WSRELAY_BIN,
                          (char *)"-c",
                          config,
                          (char *)"silence",
                          (char *)"add",
                          (char *)"A*",
                          (char *)"--for",
                          (char *)"1h",
                          (char *)"--reason",
                          (char *)"defrost",
                          (char *)"--now",
                          now,
                          NULL};
    struct proc p;
    proc_start(&p, argv, NULL, dir);
    test_sleep_ms(1500);
    cr_expect_eq(proc_poll(&p), -1, "it did not wait for the lock");
    cr_expect_eq(count_silences(run), 0);
    state_close(run);
    cr_expect_eq(proc_wait(&p, 20), 0);
    char *out = proc_stdout(&p);
    static const char want[] = "1 A* until 12:06 (defrost, by ";
    cr_expect(strncmp(out, want, strlen(want)) == 0, "%s", out);
    free(out);
    proc_stop(&p);
    struct state *s = state_open_ok(path);
    cr_expect_eq(count_silences(s), 1);
    cr_expect_eq(state_counter(s, "dropped"), 1, "the run's save is kept");
    state_close(s);
}

/* What list --all shows of each kind, and status's JSON when there is no
 * silence and when the state cannot be read. */
Test(silence_cli, list_all_and_status_json_without_silences)
{
    char now[32];
    snprintf(now, sizeof now, "%lld", T0);
    struct state *s = state_open_ok(path);
    state_silence_add(s, "A*", 0, T0 - 3 * HOUR, T0 - 2 * HOUR, "ended", "a");
    state_silence_add(s, "B*", 2, T0 - HOUR, T0 + HOUR, "active", "b");
    state_silence_add(s, "C*", 0, T0 + HOUR, T0 + 2 * HOUR, "to come", "c");
    state_silence_add(s, "D*", 0, T0 - 8 * 86400, T0 - 7 * 86400 - 1, "too old", "d");
    state_save_ok(s);
    state_close(s);
    struct cmd_result r = wsr("silence", "list", "--all", "--now", now);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "1 A* ended 09:06 (ended, by a)\n"
                            "2 B* ch2 until 12:06 (active, by b)\n"
                            "3 C* from 12:06 until 13:06 (to come, by c)\n");
    cmd_result_free(&r);
    r = wsr("silence", "list", "--now", now);
    cr_expect_str_eq(r.out, "2 B* ch2 until 12:06 (active, by b)\n");
    cmd_result_free(&r);

    write_file(path, "{\"version\":2,\"next_id\":1}");
    r = wsr("status", "--json", "--now", now);
    struct json_object *j = json_tokener_parse(r.out);
    cr_assert_not_null(j, "%s", r.out);
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(j, "silences", &v));
    cr_expect(json_object_is_type(v, json_type_array) && json_object_array_length(v) == 0, "%s",
              r.out);
    json_object_put(j);
    cmd_result_free(&r);

    write_file(path, "not json");
    r = wsr("status", "--json", "--now", now);
    j = json_tokener_parse(r.out);
    cr_assert_not_null(j, "%s", r.out);
    cr_assert(json_object_object_get_ex(j, "silences", &v));
    cr_expect_null(v, "an unreadable state: null");
    json_object_put(j);
    cmd_result_free(&r);
}
