/* Silences for planned work: a defrost, a cleaning, a calibration, a
 * freezer being moved. Each names devices by a glob on their serial or
 * name, one channel or all, and a time span; alarms it covers open
 * incidents that page nobody (the run decides that; the state only keeps
 * the silences and answers which one covers a device).
 *
 * Why a damaged member costs the silences only: they are the one section
 * a person writes by hand (through `wsrelay silence`), they are short
 * lived, and losing them errs on the safe side (alarms page again). The
 * outbox, the seen keys and the budget ledger beside them must not be set
 * aside with the file for their sake, so a "silences" member that fails
 * its check is replaced by an empty one with a warning, as a damaged fleet
 * file is relearnt rather than the whole state lost.
 *
 *   "silences":{"next_id":3,
 *               "list":[{"id":1,"glob":"Freezer*","channel":1,"from":N,"until":N,
 *                        "reason":S,"by":S},...]}
 *
 * The list is kept sorted by id; next_id is above every id, so an id is
 * never given twice while the state lives, even after a silence is
 * pruned. A lazy section (section.h): a state that never had a silence is
 * saved without the member. */
#include "glob.h"
#include "state.h"
#include "state/section.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#define SILENCE_GLOB_MAX 200       /* bytes of a glob: a device's serial or name is shorter */
#define SILENCE_TEXT_MAX 300       /* bytes of a reason or a name kept, as an error message's */
#define SILENCE_CHANNEL_MAX 6      /* the most channels a WebStorage device has */
#define SILENCE_ID_MAX 999999999LL /* ids stay short: a billion silences is never reached */

/* --- checking a loaded document ---------------------------------------- */

static int cmp_id(const void *a, const void *b)
{
    long long x = int_member(*(struct json_object *const *)a, "id", 0);
    long long y = int_member(*(struct json_object *const *)b, "id", 0);
    return (x > y) - (x < y);
}

/* One silence of the list, named `where`. */
static int check_one(struct json_object *v, const char *where, struct err *e)
{
    static const char *const ints[] = {"id", "channel", "from", "until"};
    static const char *const strings[] = {"glob", "reason", "by"};
    struct err why;
    if (check_type(v, json_type_object, where, e) < 0)
        return -1;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (check_req(v, ints[k], json_type_int, where, e) < 0)
            return -1;
    for (size_t k = 0; k < sizeof strings / sizeof strings[0]; k++)
        if (check_req(v, strings[k], json_type_string, where, e) < 0)
            return -1;
    long long channel = int_member(v, "channel", -1);
    if (int_member(v, "id", 0) < 1 || int_member(v, "id", 0) > SILENCE_ID_MAX)
        return err_set(e, "%s.id: out of range", where);
    if (channel < 0 || channel > SILENCE_CHANNEL_MAX)
        return err_set(e, "%s.channel: not 0 to %d", where, SILENCE_CHANNEL_MAX);
    if (int_member(v, "until", 0) < int_member(v, "from", 0))
        return err_set(e, "%s: ends before it starts", where);
    const char *glob = str_member(v, "glob");
    if (strlen(glob) > SILENCE_GLOB_MAX || glob_check(glob, &why) < 0)
        return err_set(e, "%s.glob: not a glob", where);
    return 0;
}

/* Checks the member and sorts its list by id; raises next_id above every
 * id (a member that passes is otherwise left as it is: a save of a state
 * that nothing changed writes nothing). */
static int check_strict(struct json_object *silences, struct err *e)
{
    char where[64];
    if (check_type(silences, json_type_object, "silences", e) < 0 ||
        check_opt(silences, "next_id", json_type_int, "silences", e) < 0 ||
        check_opt(silences, "list", json_type_array, "silences", e) < 0)
        return -1;
    struct json_object *list = member(silences, "list", json_type_array);
    size_t n = list ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(where, sizeof where, "silences.list[%zu]", i);
        if (check_one(json_object_array_get_idx(list, i), where, e) < 0)
            return -1;
    }
    if (n)
        json_object_array_sort(list, cmp_id);
    long long next = int_member(silences, "next_id", 1);
    if (next < 1 || next > SILENCE_ID_MAX + 1)
        return err_set(e, "silences.next_id: out of range");
    for (size_t i = 0; i < n; i++) {
        long long id = int_member(json_object_array_get_idx(list, i), "id", 0);
        if (i > 0 && id == int_member(json_object_array_get_idx(list, i - 1), "id", 0))
            return err_set(e, "silences: id %lld appears twice", id);
        if (id >= next)
            next = id + 1; /* check_one bounded it */
    }
    if (next != int_member(silences, "next_id", 1))
        jsonv_put_int(silences, "next_id", next);
    return 0;
}

/* Never fails: a member that fails its check is emptied (its next_id kept
 * when it can be, so that no id comes back), with a warning. One that is
 * not even an object cannot be replaced from here: it reads as no silence
 * until the next add or prune replaces it (silences_of). */
static int check_silences(struct json_object *silences, struct err *e)
{
    (void)e;
    struct err why;
    if (check_strict(silences, &why) == 0)
        return 0;
    log_warn("state file: %s; its silences are forgotten (alarms page again), the rest of the "
             "state is kept",
             why.msg);
    if (json_object_is_type(silences, json_type_object)) {
        long long next = int_member(silences, "next_id", 1);
        struct json_object *list = member(silences, "list", json_type_array);
        size_t n = list ? json_object_array_length(list) : 0;
        for (size_t i = 0; i < n; i++) {
            long long id = int_member(json_object_array_get_idx(list, i), "id", 0);
            if (id >= next && id <= SILENCE_ID_MAX)
                next = id + 1;
        }
        if (next < 1 || next > SILENCE_ID_MAX + 1)
            next = 1;
        jsonv_put_int(silences, "next_id", next);
        jsonv_put(silences, "list", jsonv_need(json_object_new_array()));
    }
    return 0;
}

/* --- a clock that jumped ----------------------------------------------- */

static void clamp_silences(struct json_object *silences, const struct state_clamp *to)
{
    struct json_object *list = member(silences, "list", json_type_array);
    size_t n = list ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++)
        clamp_member(json_object_array_get_idx(list, i), "from", to->now);
}

/* --- silences ---------------------------------------------------------- */

/* The member, made an empty one first when it is not an object (a
 * damaged one the check could not empty in place). */
static struct json_object *silences_of(struct state *s)
{
    struct json_object *silences = child_object(s->root, state_section_silences.name);
    child_array(silences, "list");
    if (int_member(silences, "next_id", 0) < 1)
        jsonv_put_int(silences, "next_id", 1);
    return silences;
}

/* The list to read; NULL when there is none. */
static struct json_object *list_of(const struct state *s)
{
    return member(section(s, &state_section_silences), "list", json_type_array);
}

/* The silence `id` of `list` (sorted by id); NULL when none. */
static struct json_object *find_silence(const struct json_object *list, unsigned long id)
{
    size_t lo = 0, hi = list ? json_object_array_length(list) : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        struct json_object *v = json_object_array_get_idx(list, mid);
        unsigned long at = (unsigned long)int_member(v, "id", 0);
        if (at == id)
            return v;
        if (at < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool is_active(const struct json_object *v, long long now)
{
    return int_member(v, "from", 0) <= now && now < int_member(v, "until", 0);
}

unsigned long state_silence_add(struct state *s, const char *glob, int channel, long long from,
                                long long until, const char *reason, const char *by)
{
    struct err why;
    if (!glob || strlen(glob) > SILENCE_GLOB_MAX || glob_check(glob, &why) < 0 || channel < 0 ||
        channel > SILENCE_CHANNEL_MAX || until <= from || !reason || !by)
        return 0;
    struct json_object *silences = silences_of(s);
    long long id = int_member(silences, "next_id", 1);
    if (id > SILENCE_ID_MAX)
        return 0;
    struct json_object *v = jsonv_need(json_object_new_object());
    jsonv_put_int(v, "id", id);
    jsonv_put(v, "glob", jsonv_need(json_object_new_string(glob)));
    jsonv_put_int(v, "channel", channel);
    jsonv_put_int(v, "from", from);
    jsonv_put_int(v, "until", until);
    jsonv_put(v, "reason", health_fit_text(reason, SILENCE_TEXT_MAX));
    jsonv_put(v, "by", health_fit_text(by, SILENCE_TEXT_MAX));
    jsonv_append(child_array(silences, "list"), v); /* the highest id: still sorted */
    jsonv_put_int(silences, "next_id", id + 1);
    return (unsigned long)id;
}

bool state_silence_expire(struct state *s, unsigned long id, long long now)
{
    struct json_object *v = find_silence(list_of(s), id);
    if (!v || int_member(v, "until", 0) <= now)
        return false;
    if (int_member(v, "from", 0) > now)
        jsonv_put_int(v, "from", now);
    jsonv_put_int(v, "until", now);
    return true;
}

struct state_silence *state_silences(const struct state *s, size_t *n)
{
    struct json_object *list = list_of(s);
    size_t len = list ? json_object_array_length(list) : 0;
    struct state_silence *out = NULL;
    *n = len;
    if (!len)
        return NULL;
    out = xcalloc(len, sizeof *out);
    for (size_t i = 0; i < len; i++) {
        struct json_object *v = json_object_array_get_idx(list, i);
        out[i] = (struct state_silence){
            .id = (unsigned long)int_member(v, "id", 0),
            .glob = xstrdup(str_member(v, "glob")),
            .channel = (int)int_member(v, "channel", 0),
            .from = int_member(v, "from", 0),
            .until = int_member(v, "until", 0),
            .reason = xstrdup(str_member(v, "reason")),
            .by = xstrdup(str_member(v, "by")),
        };
    }
    return out;
}

void state_silences_free(struct state_silence *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].glob);
        free(v[i].reason);
        free(v[i].by);
    }
    free(v);
}

/* Of the silences that cover the device and channel, the one that ends
 * last (the lowest id of those that end together): an incident it
 * silences pages when it ends, and no sooner. */
unsigned long state_silence_covering(const struct state *s, const char *serial, const char *name,
                                     int channel, long long now)
{
    struct json_object *list = list_of(s);
    size_t n = list ? json_object_array_length(list) : 0;
    unsigned long best = 0;
    long long best_until = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(list, i);
        long long ch = int_member(v, "channel", 0);
        const char *glob = str_member(v, "glob");
        if (!is_active(v, now) || (ch != 0 && ch != channel))
            continue;
        if (!(serial && glob_match(glob, serial)) && !(name && *name && glob_match(glob, name)))
            continue;
        if (!best || int_member(v, "until", 0) > best_until) {
            best = (unsigned long)int_member(v, "id", 0);
            best_until = int_member(v, "until", 0);
        }
    }
    return best;
}

bool state_silence_active(const struct state *s, unsigned long id, long long now)
{
    const struct json_object *v = find_silence(list_of(s), id);
    return v && is_active(v, now);
}

void state_prune_silences(struct state *s, long long before)
{
    struct json_object *member_v = NULL;
    if (json_object_object_get_ex(s->root, state_section_silences.name, &member_v) &&
        !json_object_is_type(member_v, json_type_object))
        silences_of(s); /* a member damaged beyond its check's repair */
    struct json_object *list = list_of(s);
    size_t n = list ? json_object_array_length(list) : 0;
    size_t ended = 0;
    for (size_t i = 0; i < n; i++)
        ended += int_member(json_object_array_get_idx(list, i), "until", 0) < before;
    if (!ended)
        return; /* nothing changes: a save has nothing to write */
    struct json_object *kept = jsonv_need(json_object_new_array());
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(list, i);
        if (int_member(v, "until", 0) >= before)
            jsonv_append(kept, json_object_get(v));
    }
    jsonv_put(silences_of(s), "list", kept); /* still sorted: the order is kept */
}

const struct state_section state_section_silences = {
    .name = "silences",
    .type = json_type_object,
    .check = check_silences,
    .clamp = clamp_silences,
    .lazy = true,
};
