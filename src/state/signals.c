/* Per login ID, the alert calls a signal asked for (for `wsrelay status`:
 * signal calls against routine ones), since when signals have waited for
 * the budget, and how long after a device's last upload the platform logs
 * its communication error, in the "signals" section. A file written before
 * the last member existed has none: not seen yet. */
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

/* The longest delay of a communication error kept: runs learn none longer
 * (run/intake.c, SILENT_LOOKS); a longer one in the file was edited by
 * hand, and would hold back every silence of the login. */
#define SILENCE_AFTER_MAX (6 * 3600)

/* --- checking a loaded document ---------------------------------------- */

static int check_login_signals(struct json_object *l, const char *where, struct err *e)
{
    if (check_type(l, json_type_object, where, e) < 0 ||
        check_numbers(l, "calls", true, where, e) < 0 ||
        check_opt(l, "starved_since", json_type_int, where, e) < 0 ||
        check_opt(l, "silence_after", json_type_int, where, e) < 0)
        return -1;
    return 0;
}

static int check_signals(struct json_object *signals, struct err *e)
{
    return check_members(signals, "signals", check_login_signals, e);
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_signals(struct json_object *signals, const struct state_clamp *to)
{
    struct json_object_iterator it = json_object_iter_begin(signals);
    struct json_object_iterator end = json_object_iter_end(signals);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        clamp_member(json_object_iter_peek_value(&it), "starved_since", to->now);
}

/* --- signal calls ------------------------------------------------------ */

void state_record_signal_call(struct state *s, const char *login, long long now)
{
    calls_record(child_object(section(s, &state_section_signals), login), now);
}

size_t state_signal_calls_since(const struct state *s, const char *login, long long since)
{
    return calls_since(member(section(s, &state_section_signals), login, json_type_object), since);
}

long long state_signals_starved(const struct state *s, const char *login)
{
    return int_member(member(section(s, &state_section_signals), login, json_type_object),
                      "starved_since", 0);
}

void state_set_signals_starved(struct state *s, const char *login, long long since)
{
    jsonv_put_int(child_object(section(s, &state_section_signals), login), "starved_since", since);
}

long long state_silence_after(const struct state *s, const char *login)
{
    long long v = int_member(member(section(s, &state_section_signals), login, json_type_object),
                             "silence_after", 0);
    return v > 0 && v <= SILENCE_AFTER_MAX ? v : 0;
}

void state_set_silence_after(struct state *s, const char *login, long long seconds)
{
    jsonv_put_int(child_object(section(s, &state_section_signals), login), "silence_after",
                  seconds);
}

const struct state_section state_section_signals = {
    .name = "signals",
    .type = json_type_object,
    .check = check_signals,
    .clamp = clamp_signals,
};
