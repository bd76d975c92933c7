/* The incidents (incident.h) the state keeps: open ones, and ended ones
 * for a while (what the platform logs late about an excursion must still
 * find the incident it belongs to), with the counter of their ids and the
 * journal of timeline lines not yet appended to the incident log.
 *
 *   "incidents":{"next":13,
 *                "items":[{...incident_to_json...},...],
 *                "journal":["{\"at\":N,\"incident\":\"12\",\"seq\":3,...}",...]}
 *
 * The journal goes to the incident log (state/incidentlog.h) after each
 * save that wrote it (incidents_flush): a crash in between writes its
 * lines once more, which the log's reader skips (the same incident and
 * seq). Files written before incidents existed lack the member (a lazy
 * section: a state that never had an incident is saved without it): no
 * incident, ids from 1. An item that does not read back (incident_from_json) costs
 * that incident only: it is dropped with a warning, and the rest loads. */
#include "incident.h"
#include "state.h"
#include "state/incidentlog.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- checking a loaded document ---------------------------------------- */

static int check_incidents(struct json_object *v, struct err *e)
{
    char where[64];
    if (check_type(v, json_type_object, "incidents", e) < 0 ||
        check_opt(v, "next", json_type_int, "incidents", e) < 0 ||
        check_opt(v, "items", json_type_array, "incidents", e) < 0 ||
        check_opt(v, "journal", json_type_array, "incidents", e) < 0)
        return -1;
    struct json_object *items = child_array(v, "items");
    struct json_object *kept = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *it = json_object_array_get_idx(items, i);
        struct incident inc;
        struct err ie;
        if (incident_from_json(&inc, it, &ie) < 0) {
            snprintf(where, sizeof where, "incidents.items[%zu]", i);
            log_warn("state: %s: %s; that incident is forgotten (the incident log keeps its "
                     "timeline)",
                     where, ie.msg);
            continue;
        }
        incident_clear(&inc);
        jsonv_append(kept, json_object_get(it));
    }
    jsonv_put(v, "items", kept);
    struct json_object *journal = child_array(v, "journal");
    for (size_t i = 0; i < json_object_array_length(journal); i++)
        if (!json_object_is_type(json_object_array_get_idx(journal, i), json_type_string)) {
            snprintf(where, sizeof where, "incidents.journal[%zu]", i);
            return err_set(e, "%s: not a string", where);
        }
    return 0;
}

static void clamp_incidents(struct json_object *v, const struct state_clamp *to)
{
    if (!v)
        return;
    struct json_object *items = member(v, "items", json_type_array);
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        struct json_object *it = json_object_array_get_idx(items, i);
        clamp_member(it, "opened_at", to->now);
        clamp_member(it, "ended_at", to->now);
        clamp_member(it, "last_page", to->now);
        clamp_member(it, "acked_at", to->now);
    }
}

const struct state_section state_section_incidents = {
    .name = "incidents",
    .type = json_type_object,
    .check = check_incidents,
    .clamp = clamp_incidents,
    .lazy = true,
};

/* --- incidents ----------------------------------------------------------- */

/* The section, made when missing (lazy: a state that never had an
 * incident is saved without it). */
static struct json_object *section_need(const struct state *s)
{
    return child_object(s->root, state_section_incidents.name);
}

/* The items, made when missing: for writers. */
static struct json_object *items_of(const struct state *s)
{
    return child_array(section_need(s), "items");
}

/* The items for readers, who make nothing: NULL when there are none. */
static struct json_object *items_read(const struct state *s)
{
    return member(member(s->root, state_section_incidents.name, json_type_object), "items",
                  json_type_array);
}

static size_t length(const struct json_object *arr)
{
    return arr ? json_object_array_length(arr) : 0;
}

/* The index of the incident `id` in the items; -1 when none. */
static long find_id(const struct json_object *items, unsigned long id)
{
    for (size_t i = 0; i < length(items); i++)
        if ((unsigned long)int_member(json_object_array_get_idx(items, i), "id", 0) == id)
            return (long)i;
    return -1;
}

void state_incident_add(struct state *s, struct incident *inc)
{
    struct json_object *sec = section_need(s);
    long long next = int_member(sec, "next", 1);
    struct json_object *items = items_of(s);
    /* ids stay unique among those kept, whatever "next" says */
    while (next < 1 || find_id(items, (unsigned long)next) >= 0)
        next = next < 1 ? 1 : next + 1;
    inc->id = (unsigned long)next;
    jsonv_put_int(sec, "next", next + 1);
    jsonv_append(items, incident_to_json(inc));
}

bool state_incident_put(struct state *s, const struct incident *inc)
{
    struct json_object *items = items_of(s);
    long i = find_id(items, inc->id);
    if (i < 0)
        return false;
    json_object_array_put_idx(items, (size_t)i, incident_to_json(inc));
    return true;
}

bool state_incident_set_refs(struct state *s, unsigned long id, const char *receiver,
                             struct json_object *refs)
{
    struct json_object *items = items_read(s);
    long i = find_id(items, id);
    if (i < 0) {
        json_object_put(refs);
        return false;
    }
    struct json_object *it = json_object_array_get_idx(items, (size_t)i);
    jsonv_put(child_object(it, "refs"), receiver, refs);
    return true;
}

/* The item at `i` read into *out; false (logged) when it does not read
 * back, which check_incidents made sure of on load. */
static bool read_item(const struct json_object *items, size_t i, struct incident *out)
{
    struct err e;
    if (incident_from_json(out, json_object_array_get_idx(items, i), &e) == 0)
        return true;
    log_warn("state: incidents.items[%zu]: %s", i, e.msg);
    return false;
}

bool state_incident_get(const struct state *s, unsigned long id, struct incident *out)
{
    struct json_object *items = items_read(s);
    long i = find_id(items, id);
    memset(out, 0, sizeof *out);
    return i >= 0 && read_item(items, (size_t)i, out);
}

bool state_incident_of_key(const struct state *s, const char *key, struct incident *out)
{
    struct json_object *items = items_read(s);
    memset(out, 0, sizeof *out);
    for (size_t n = length(items); n > 0; n--) {
        const char *k = str_member(json_object_array_get_idx(items, n - 1), "key");
        if (k && !strcmp(k, key))
            return read_item(items, n - 1, out);
    }
    return false;
}

unsigned long *state_incident_ids(const struct state *s, size_t *n)
{
    struct json_object *items = items_read(s);
    *n = length(items);
    unsigned long *ids = *n ? xcalloc(*n, sizeof *ids) : NULL;
    for (size_t i = 0; i < *n; i++)
        ids[i] = (unsigned long)int_member(json_object_array_get_idx(items, i), "id", 0);
    return ids;
}

size_t state_prune_incidents(struct state *s, long long before)
{
    struct json_object *items = items_read(s);
    if (!items)
        return 0;
    struct json_object *kept = jsonv_need(json_object_new_array());
    size_t dropped = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *it = json_object_array_get_idx(items, i);
        const char *st = str_member(it, "state");
        if (st && strcmp(st, "open") != 0 && int_member(it, "ended_at", 0) < before)
            dropped++;
        else
            jsonv_append(kept, json_object_get(it));
    }
    jsonv_put(section_need(s), "items", kept);
    return dropped;
}

/* --- the journal --------------------------------------------------------- */

void state_incident_note(struct state *s, struct incident *inc, long long now, const char *what,
                         struct json_object *line)
{
    char id[24];
    if (!line)
        line = jsonv_need(json_object_new_object());
    snprintf(id, sizeof id, "%lu", inc->id);
    jsonv_put_int(line, "at", now);
    jsonv_put(line, "incident", jsonv_need(json_object_new_string(id)));
    jsonv_put_int(line, "seq", (long long)++inc->seq);
    jsonv_put(line, "what", jsonv_need(json_object_new_string(what)));
    const struct event *ev = &inc->first;
    if (!json_object_object_get_ex(line, "account", NULL) && ev->account)
        jsonv_put(line, "account", jsonv_need(json_object_new_string(ev->account)));
    if (!json_object_object_get_ex(line, "serial", NULL) && ev->serial)
        jsonv_put(line, "serial", jsonv_need(json_object_new_string(ev->serial)));
    if (!json_object_object_get_ex(line, "device", NULL) && ev->name)
        jsonv_put(line, "device", jsonv_need(json_object_new_string(ev->name)));
    if (!json_object_object_get_ex(line, "kind", NULL) && ev->kind)
        jsonv_put(line, "kind", jsonv_need(json_object_new_string(ev->kind)));
    int channel = event_channel(ev);
    if (channel > 0 && !json_object_object_get_ex(line, "channel", NULL))
        jsonv_put_int(line, "channel", channel);
    const char *text = json_object_to_json_string_ext(line, JSON_FLAGS);
    struct json_object *journal = child_array(section_need(s), "journal");
    jsonv_append(journal, jsonv_need(json_object_new_string(text)));
    json_object_put(line);
}

const char **state_incident_journal(const struct state *s, size_t *n)
{
    struct json_object *journal =
        member(member(s->root, state_section_incidents.name, json_type_object), "journal",
               json_type_array);
    *n = length(journal);
    const char **lines = *n ? xcalloc(*n, sizeof *lines) : NULL;
    for (size_t i = 0; i < *n; i++)
        lines[i] = json_object_get_string(json_object_array_get_idx(journal, i));
    return lines;
}

void state_incident_journal_drop(struct state *s, size_t n)
{
    struct json_object *journal =
        member(member(s->root, state_section_incidents.name, json_type_object), "journal",
               json_type_array);
    size_t len = length(journal);
    if (len)
        json_object_array_del_idx(journal, 0, n < len ? n : len);
}

/* --- after a save --------------------------------------------------------- */

/* The "at" of a journal line; 0 when it has none (never: noted here). */
static long long line_at(const char *line)
{
    struct json_object *o = json_tokener_parse(line);
    long long at = int_member(o, "at", 0);
    json_object_put(o);
    return at;
}

/* The month of `t` (UTC) as a number: lines of one month go in one append. */
static long month_of(long long t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm))
        return 0;
    return (long)tm.tm_year * 12 + tm.tm_mon;
}

size_t incidents_flush(struct state *s)
{
    size_t n = 0, done = 0;
    struct err e;
    const char **lines = state_incident_journal(s, &n);
    while (done < n) {
        long long at = line_at(lines[done]);
        size_t end = done + 1;
        while (end < n && month_of(line_at(lines[end])) == month_of(at))
            end++;
        if (incidentlog_append(s->path, at, lines + done, end - done, &e) < 0) {
            log_warn("%s; the incident log gets these lines at the next save", e.msg);
            break;
        }
        done = end;
    }
    free(lines);
    state_incident_journal_drop(s, done);
    return done;
}
