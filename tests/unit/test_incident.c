/* Incidents as records (incident.h) and as the state keeps them
 * (state.h): what an event is to them, their JSON, their readings, their
 * messages, and the state's section with its journal. */
#include "incident.h"
#include "proc.h"
#include "state.h"
#include "state/incidentlog.h"
#include "statefile.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1795000000LL

static char dir[64];
static char *path;

static void setup(void)
{
    strcpy(dir, "/tmp/wsrelay-incident-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    path = xasprintf("%s/state.json", dir);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(path);
}

TestSuite(incident, .init = setup, .fini = teardown);

/* A freezer's event: kind, state, text, value and limit as given. */
static struct event freezer(const char *kind, const char *state, long long at, const char *value,
                            const char *limit)
{
    struct event ev = {
        .account = xstrdup("lab"),
        .serial = xstrdup("5214000A"),
        .model = xstrdup("TR-71A"),
        .name = xstrdup("Freezer A"),
        .unixtime = at,
        .kind = xstrdup(kind),
        .state = xstrdup(state),
        .text = xasprintf("CH1 %s %s", state, value ? value : ""),
        .value = value ? xstrdup(value) : NULL,
        .limit = limit ? xstrdup(limit) : NULL,
        .channel = strcmp(kind, "reading") ? 0 : 1,
        .utc_offset = 540,
        .rule = xstrdup("freezers"),
    };
    return ev;
}

Test(incident, alarms_open_recoveries_resolve_and_one_shots_are_none)
{
    struct event a = freezer("ch1", "alarm", T0, "-65.0°C", "-70.0°C");
    struct event w = freezer("reading", "alarm", T0, "-65.0°C", "-70°C");
    struct event r = freezer("ch1", "recovered", T0 + 600, "-78.0°C", NULL);
    struct event b = freezer("battery-level", "battery", T0, NULL, NULL);
    struct event g = freezer("gap", "other", T0, NULL, NULL);
    struct event o = freezer("ch2", "other", T0, NULL, NULL);
    cr_expect_eq(incident_role_of(&a), INCIDENT_OPENS);
    cr_expect_eq(incident_role_of(&w), INCIDENT_OPENS);
    cr_expect_eq(incident_role_of(&r), INCIDENT_RESOLVES);
    cr_expect_eq(incident_role_of(&b), INCIDENT_OPENS);
    cr_expect_eq(incident_role_of(&g), INCIDENT_NONE);
    cr_expect_eq(incident_role_of(&o), INCIDENT_NONE);
    /* the alarm and its early warning share their key */
    char *ka = incident_key(&a), *kw = incident_key(&w), *kr = incident_key(&r),
         *kb = incident_key(&b);
    cr_expect_str_eq(ka, "5214000A/ch1");
    cr_expect_str_eq(kw, "5214000A/ch1");
    cr_expect_str_eq(kr, "5214000A/ch1");
    cr_expect_str_eq(kb, "5214000A/battery-level");
    cr_expect_null(incident_key(&g));
    free(ka);
    free(kw);
    free(kr);
    free(kb);
    event_clear(&a);
    event_clear(&w);
    event_clear(&r);
    event_clear(&b);
    event_clear(&g);
    event_clear(&o);
}

/* An open incident of the freezer's ch1 alarm at T0, told to two receivers. */
static struct incident sample(void)
{
    struct incident inc = {.key = xstrdup("5214000A/ch1"),
                           .state = INCIDENT_OPEN,
                           .opened_at = T0 + 30,
                           .paged = true,
                           .last_page = T0 + 30};
    inc.first = freezer("ch1", "alarm", T0, "-65.0°C", "-70.0°C");
    incident_tell(&inc, "oncall");
    incident_tell(&inc, "mail");
    cr_expect_not(incident_tell(&inc, "oncall"), "a receiver is told once");
    incident_note_reading(&inc, -65.0, T0);
    return inc;
}

Test(incident, the_peak_is_the_farthest_reading_beyond_the_limit)
{
    struct incident inc = sample();
    cr_expect_eq(inc.direction, 1, "-65 is above the limit -70");
    incident_note_reading(&inc, -62.5, T0 + 600);
    incident_note_reading(&inc, -68.0, T0 + 1200);
    cr_expect(inc.has_peak);
    cr_expect_float_eq(inc.peak, -62.5, 1e-9);
    cr_expect_eq(inc.peak_at, T0 + 600);
    cr_expect_float_eq(inc.live, -68.0, 1e-9);
    cr_expect_eq(inc.live_at, T0 + 1200);
    incident_clear(&inc);
}

Test(incident, its_json_reads_back_whole)
{
    struct incident inc = sample(), back;
    struct err e;
    inc.id = 12;
    inc.acked_at = T0 + 1500;
    inc.acked_by = xstrdup("night shift");
    inc.ack_note = xstrdup("moving the samples to freezer B");
    inc.step = 1;
    inc.reminders = 2;
    inc.seq = 7;
    incident_note_reading(&inc, -60.0, T0 + 900);
    struct json_object *o = incident_to_json(&inc);
    cr_assert_eq(incident_from_json(&back, o, &e), 0, "%s", e.msg);
    struct json_object *again = incident_to_json(&back);
    cr_expect_str_eq(json_object_to_json_string(again), json_object_to_json_string(o));
    cr_expect_eq(back.id, 12);
    cr_expect_eq(back.n_told, 2);
    cr_expect_str_eq(back.first.rule, "freezers");
    json_object_put(o);
    json_object_put(again);
    incident_clear(&back);

    /* a damaged record names what is wrong */
    o = incident_to_json(&inc);
    json_object_object_add(o, "state", json_object_new_string("melted"));
    cr_expect_eq(incident_from_json(&back, o, &e), -1);
    cr_expect(strstr(e.msg, "state"), "%s", e.msg);
    json_object_put(o);
    incident_clear(&inc);
}

Test(incident, messages_say_what_each_notice_is)
{
    struct incident inc = sample();
    struct event m;
    inc.id = 4;
    incident_note_reading(&inc, -62.0, T0 + 600);
    incident_note_reading(&inc, -68.1, T0 + 2040);
    inc.reminders = 2;
    incident_message(&m, &inc, NOTICE_REMINDER, NULL, T0 + 2070);
    cr_expect(strstr(m.text, "Reminder 2: incident 4 open for 34 min, not acknowledged."), "%s",
              m.text);
    /* T0 is 11:06:40 UTC, 20:06 at the device (+09:00) */
    cr_expect(strstr(m.text, "Now -68.1°C at 20:40 (limit -70.0°C, peak -62.0°C at 20:16)."), "%s",
              m.text);
    cr_expect(strstr(m.text, "wsrelay ack 4"), "%s", m.text);
    struct json_object *v;
    cr_assert(json_object_object_get_ex(m.incident, "is_reminder", &v));
    cr_expect(json_object_get_boolean(v));
    cr_assert(json_object_object_get_ex(m.incident, "id", &v));
    cr_expect_str_eq(json_object_get_string(v), "4");
    cr_assert(json_object_object_get_ex(m.incident, "peak", &v));
    cr_expect_str_eq(json_object_get_string(v), "-62.0°C");
    event_clear(&m);

    inc.acked_at = T0 + 1530;
    inc.acked_by = xstrdup("night shift");
    inc.ack_note = xstrdup("moving the samples");
    incident_message(&m, &inc, NOTICE_ACKNOWLEDGED, NULL, T0 + 1560);
    cr_expect_str_eq(m.text, "Incident 4 acknowledged by night shift at 20:32: moving the samples");
    event_clear(&m);

    struct event back = freezer("ch1", "recovered", T0 + 2820, "-78.0°C", NULL);
    inc.state = INCIDENT_RESOLVED;
    inc.ended = T0 + 2820;
    incident_message(&m, &inc, NOTICE_RESOLVED, &back, T0 + 2850);
    cr_expect_eq(m.unixtime, T0 + 2820, "the resolution is the recovery");
    cr_expect(strstr(m.text, "Incident 4: beyond its limit for 47 min, peak -62.0°C at 20:16; "
                             "acknowledged by night shift at 20:32."),
              "%s", m.text);
    cr_assert(json_object_object_get_ex(m.incident, "duration", &v));
    cr_expect_eq(json_object_get_int64(v), 2820);
    event_clear(&m);
    event_clear(&back);
    incident_clear(&inc);
}

/* An incidentlog_read callback that keeps the first line. */
static bool take_line(const struct json_object *line, void *ctx)
{
    struct json_object **out = ctx;
    if (!*out)
        *out = json_object_get((struct json_object *)line);
    return true;
}

Test(incident, the_state_keeps_them_with_ids_and_a_journal)
{
    struct state *s = state_open_ok(path);
    struct incident a = sample(), b = sample(), got;
    state_incident_add(s, &a);
    free(b.key);
    b.key = xstrdup("5214000A/battery-level");
    state_incident_add(s, &b);
    cr_expect_eq(a.id, 1);
    cr_expect_eq(b.id, 2);
    state_incident_note(s, &a, T0 + 40, "opened", NULL);
    cr_expect_eq(a.seq, 1);
    cr_assert(state_incident_put(s, &a));
    s = state_reopen_ok(s, path);

    cr_assert(state_incident_of_key(s, "5214000A/ch1", &got));
    cr_expect_eq(got.id, 1);
    cr_expect_eq(got.seq, 1);
    incident_clear(&got);
    /* the save put the journal's line in the incident log, and the file
     * no longer holds it */
    size_t n = 0;
    const char **lines = state_incident_journal(s, &n);
    cr_expect_eq(n, 0);
    free(lines);
    struct json_object *line = NULL;
    size_t damaged = 0;
    struct err e;
    cr_assert_eq(incidentlog_read(&damaged, path, 0, take_line, &line, &e), 0, "%s", e.msg);
    cr_assert_not_null(line, "the line is in the log");
    struct json_object *v;
    cr_assert(json_object_object_get_ex(line, "incident", &v));
    cr_expect_str_eq(json_object_get_string(v), "1");
    cr_assert(json_object_object_get_ex(line, "what", &v));
    cr_expect_str_eq(json_object_get_string(v), "opened");
    cr_assert(json_object_object_get_ex(line, "serial", &v));
    cr_expect_str_eq(json_object_get_string(v), "5214000A");
    json_object_put(line);
    /* a line noted and not yet saved is in the journal; dropping it
     * leaves none */
    state_incident_note(s, &a, T0 + 50, "reminder", NULL);
    lines = state_incident_journal(s, &n);
    cr_expect_eq(n, 1);
    free(lines);
    state_incident_journal_drop(s, n);
    lines = state_incident_journal(s, &n);
    cr_expect_eq(n, 0);
    free(lines);

    /* ended ones go after their day; open ones stay; ids are not reused */
    a.state = INCIDENT_RESOLVED;
    a.ended_at = T0 + 100;
    cr_assert(state_incident_put(s, &a));
    cr_expect_eq(state_prune_incidents(s, T0 + 101), 1);
    cr_expect_not(state_incident_get(s, 1, &got));
    cr_expect(state_incident_get(s, 2, &got));
    incident_clear(&got);
    struct incident c = sample();
    state_incident_add(s, &c);
    cr_expect_eq(c.id, 3);
    incident_clear(&a);
    incident_clear(&b);
    incident_clear(&c);
    state_close(s);
}

/* A state that never had an incident is saved without the section, and
 * one written before incidents existed loads with none. */
Test(incident, a_state_without_incidents_stays_without_them)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"version\":2,\"next_id\":1,\"outbox\":[],\"counters\":{\"routed\":3}}\n", f);
    fclose(f);
    struct state *s = state_open_ok(path);
    size_t n = 0;
    free(state_incident_ids(s, &n));
    cr_expect_eq(n, 0);
    cr_expect_eq(state_prune_incidents(s, T0), 0);
    state_save_ok(s);
    state_close(s);
    char buf[4096] = {0};
    f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    cr_expect_gt(len, 0);
    cr_expect_null(strstr(buf, "incidents"), "%s", buf);
}

/* An incident that does not read back costs that incident only. */
Test(incident, a_damaged_incident_costs_itself_only)
{
    struct state *s = state_open_ok(path);
    struct incident a = sample(), b = sample();
    state_incident_add(s, &a);
    state_incident_add(s, &b);
    state_save_ok(s);
    state_close(s);
    char *text = NULL;
    size_t cap = 0;
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_gt(getdelim(&text, &cap, '\0', f), 0);
    fclose(f);
    /* the first incident's state becomes nonsense */
    char *at = strstr(text, "\"state\":\"open\"");
    cr_assert_not_null(at);
    memcpy(at, "\"state\":\"oops\"", strlen("\"state\":\"oops\""));
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    s = state_open_ok(path);
    struct incident got;
    cr_expect_not(state_incident_get(s, 1, &got));
    cr_expect(state_incident_get(s, 2, &got));
    incident_clear(&got);
    incident_clear(&a);
    incident_clear(&b);
    state_close(s);
}

/* What a receiver's service gave back stays with the incident, per
 * receiver, through a save and every later change. */
Test(incident, refs_are_kept_per_receiver)
{
    struct state *s = state_open_ok(path);
    struct incident a = sample(), got;
    state_incident_add(s, &a);
    struct json_object *ts = json_object_new_object();
    json_object_object_add(ts, "ts", json_object_new_string("1795000000.000100"));
    cr_assert(state_incident_set_refs(s, a.id, "oncall-slack", ts));
    cr_expect_not(state_incident_set_refs(s, 99, "oncall-slack", json_object_new_object()));
    s = state_reopen_ok(s, path);
    cr_assert(state_incident_get(s, a.id, &got));
    got.reminders = 1; /* a later change keeps them */
    cr_assert(state_incident_put(s, &got));
    incident_clear(&got);
    cr_assert(state_incident_get(s, a.id, &got));
    struct json_object *mine = NULL, *v = NULL;
    cr_assert(json_object_object_get_ex(got.refs, "oncall-slack", &mine));
    cr_assert(json_object_object_get_ex(mine, "ts", &v));
    cr_expect_str_eq(json_object_get_string(v), "1795000000.000100");
    incident_clear(&got);
    incident_clear(&a);
    state_close(s);
}
