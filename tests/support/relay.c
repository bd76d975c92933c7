/* The integration-test fixture: simulator, webhook sink, config, runs. */
#include "relay.h"
#include "proc.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* `text` with each "@NAME@" of `names` replaced by the matching value. */
static char *substitute(const char *text, const char *const *names, const char *const *values,
                        size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    for (const char *p = text; *p;) {
        size_t k = 0;
        for (; k < n; k++)
            if (strncmp(p, names[k], strlen(names[k])) == 0)
                break;
        if (k < n) {
            buf_puts(&b, values[k]);
            p += strlen(names[k]);
        } else {
            buf_append(&b, p++, 1);
        }
    }
    return buf_steal(&b);
}

/* The default account polls in plain round robin (signals: false): most
 * integration tests count alert calls and pace runs by its arithmetic;
 * tests of signals and early warnings (test_signals.c, test_week.c) give
 * accounts of their own. */
static const char default_accounts[] = "  - name: lab\n"
                                       "    base_url: @BASE_URL@\n"
                                       "    api_key: \"${TEST_API_KEY}\"\n"
                                       "    login_id: " RELAY_LOGIN "\n"
                                       "    login_pass_file: pass.txt\n"
                                       "    signals: false\n";

static const char default_receivers[] =
    "  - name: hook\n"
    "    webhook: {url: \"@HOOK_URL@\", headers: {Authorization: \"Bearer t0ken\"}}\n"
    "  - name: log\n"
    "    file: {path: \"@OUT@\"}\n";

void relay_config_extra(struct relay *r, const char *accounts_yaml, const char *receivers_yaml,
                        const char *extra_yaml)
{
    char *raw = xasprintf("state_file: %s\ncatch_up: 1h\n%saccounts:\n%sreceivers:\n%s%s",
                          r->state_path, r->incidents ? "" : "incidents: {enabled: false}\n",
                          accounts_yaml ? accounts_yaml : default_accounts,
                          receivers_yaml ? receivers_yaml : default_receivers,
                          extra_yaml ? extra_yaml : "");
    const char *names[] = {"@BASE_URL@", "@HOOK_URL@", "@OUT@", "@DIR@"};
    const char *values[] = {r->sim.base_url, hooksink_url(r->hook), r->out_path, r->dir};
    char *text = substitute(raw, names, values, 4);
    write_file(r->config_path, text);
    free(text);
    free(raw);
}

void relay_config(struct relay *r, const char *accounts_yaml, const char *receivers_yaml)
{
    relay_config_extra(r, accounts_yaml, receivers_yaml, NULL);
}

void relay_config_platform(struct relay *r, const char *base_url)
{
    const char *names[] = {"@BASE_URL@"};
    const char *values[] = {base_url};
    char *accounts = substitute(default_accounts, names, values, 1);
    relay_config(r, accounts, NULL);
    free(accounts);
}

void relay_start(struct relay *r, const char *scenario)
{
    relay_start_slow(r, scenario, 0);
}

char *relay_world(const char *name)
{
    char *path = xasprintf("%s/tests/data/scenarios/%s.json", WSRELAY_SOURCE_DIR, name);
    char *text = read_file_str(path);
    cr_assert_not_null(text, "cannot read the scenario %s", path);
    free(path);
    return text;
}

void relay_start_world(struct relay *r, const char *name)
{
    char *scenario = relay_world(name);
    relay_start(r, scenario);
    free(scenario);
}

void relay_start_slow(struct relay *r, const char *scenario, unsigned latency_ms)
{
    memset(r, 0, sizeof *r);
    r->dir = test_tmpdir();
    r->config_path = xasprintf("%s/wsrelay.yaml", r->dir);
    r->out_path = xasprintf("%s/alerts.txt", r->dir);
    r->state_path = xasprintf("%s/state.json", r->dir);
    char *scen_path = xasprintf("%s/scenario.json", r->dir);
    char *pass_path = xasprintf("%s/pass.txt", r->dir);
    const char *names[] = {"@API_KEY@", "@LOGIN@", "@PASSWORD@"};
    const char *values[] = {RELAY_API_KEY, RELAY_LOGIN, "p\\\"ss\\\\word"};
    char *scen = substitute(scenario, names, values, 3);
    write_file(scen_path, scen);
    write_file(pass_path, RELAY_PASSWORD "\n");
    chmod(pass_path, 0600);
    sim_start_slow(&r->sim, scen_path, r->dir, latency_ms);
    r->hook = hooksink_start();
    setenv("TEST_API_KEY", RELAY_API_KEY, 1);
    relay_config(r, NULL, NULL);
    free(scen);
    free(scen_path);
    free(pass_path);
}

void relay_stop(struct relay *r)
{
    hooksink_stop(r->hook);
    sim_stop(&r->sim);
    test_rmtree(r->dir);
    free(r->dir);
    free(r->config_path);
    free(r->out_path);
    free(r->state_path);
    memset(r, 0, sizeof *r);
}

void relay_forget_state(struct relay *r)
{
    char *d = xasprintf("%s.d", r->state_path);
    unlink(r->state_path);
    for (int gen = 1; gen < 1000; gen++) {
        char *fleet = xasprintf("%s.fleet-%d", r->state_path, gen);
        unlink(fleet);
        free(fleet);
    }
    test_rmtree(d);
    free(d);
}

struct json_object *relay_state_doc(const struct relay *r)
{
    char *text = read_file_str(r->state_path);
    cr_assert_not_null(text, "%s", r->state_path);
    struct json_object *doc = json_tokener_parse(text), *ref, *gen, *len;
    cr_assert_not_null(doc, "%s", text);
    free(text);
    if (!json_object_object_get_ex(doc, "fleet", &ref))
        return doc;
    cr_assert(json_object_object_get_ex(ref, "generation", &gen) &&
              json_object_object_get_ex(ref, "length", &len));
    char *path = xasprintf("%s.fleet-%d", r->state_path, json_object_get_int(gen));
    text = read_file_str(path);
    cr_assert_not_null(text, "%s", path);
    cr_assert_geq(strlen(text), (size_t)json_object_get_int(len), "%s: shorter than committed",
                  path);
    text[json_object_get_int(len)] = '\0'; /* bytes after it were never committed */
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        cr_assert_not_null(next, "%s: a line without its end", path);
        *next++ = '\0';
        struct json_object *record = json_tokener_parse(line);
        cr_assert_not_null(record, "%s: %s", path, line);
        json_object_object_foreach(record, name, entries)
        {
            struct json_object *section, *account, *history;
            if (strcmp(name, "history") == 0) { /* entries of accounts the base has */
                cr_assert(json_object_object_get_ex(doc, "accounts", &section));
                json_object_object_foreach(entries, key, patch)
                {
                    cr_assert(json_object_object_get_ex(section, key, &account) &&
                              json_object_object_get_ex(account, "history", &history));
                    json_object_object_foreach(patch, serial, entry)
                        json_object_object_add(history, serial, json_object_get(entry));
                }
                continue;
            }
            if (!json_object_object_get_ex(doc, name, &section)) {
                section = json_object_new_object();
                json_object_object_add(doc, name, section);
            }
            json_object_object_foreach(entries, key, entry)
                json_object_object_add(section, key, json_object_get(entry));
        }
        json_object_put(record);
    }
    free(text);
    free(path);
    struct json_object *discovered, *accounts, *account;
    if (json_object_object_get_ex(doc, "discovered", &discovered) &&
        json_object_object_get_ex(doc, "accounts", &accounts)) {
        json_object_object_foreach(discovered, name,
                                   at) if (json_object_object_get_ex(accounts, name, &account))
            json_object_object_add(account, "discovered_at", json_object_get(at));
    }
    return doc;
}

int relay_run_at(struct relay *r, long long now, char **err)
{
    return relay_run_with(r, now, NULL, err);
}

int relay_run_with(struct relay *r, long long now, const char *look, char **err)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&r->sim, now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",    r->config_path,
                    (char *)"run",       (char *)"--now", when,
                    (char *)"--look",    (char *)look,    NULL};
    if (!look)
        argv[6] = NULL;
    char *out = NULL, *errs = NULL;
    int status = run_cmd(&out, &errs, 60, argv, NULL);
    free(out);
    if (err)
        *err = errs;
    else
        free(errs);
    return status;
}

static const char *member_string(struct json_object *obj, const char *key)
{
    struct json_object *v;
    cr_assert(json_object_object_get_ex(obj, key, &v), "event without '%s'", key);
    return json_object_get_string(v);
}

void relay_scenario_open(struct buf *b, long long now)
{
    buf_printf(b,
               "{\"now\": %lld, \"accounts\": [{\"api_key\": \"@API_KEY@\", "
               "\"login_id\": \"@LOGIN@\", \"login_pass\": \"@PASSWORD@\", \"devices\": [",
               now);
}

char *relay_hook_keys(struct relay *r, size_t *count)
{
    return hook_keys(r->hook, 0, hooksink_count(r->hook), count);
}

char *hook_keys(struct hooksink *h, size_t from, size_t to, size_t *count)
{
    struct buf keys;
    buf_init(&keys, 0);
    *count = 0;
    for (size_t i = from; i < to; i++) {
        struct hook_request *rq = hooksink_request(h, i);
        cr_assert_str_eq(rq->method, "POST");
        cr_assert(strstr(rq->content_type, "application/json"));
        cr_assert_str_eq(rq->authorization, "Bearer t0ken");
        struct json_object *doc = json_tokener_parse(rq->body);
        cr_assert_not_null(doc, "webhook body is not JSON: %s", rq->body);
        struct json_object *events, *cnt;
        cr_assert(json_object_object_get_ex(doc, "events", &events));
        cr_assert(json_object_object_get_ex(doc, "count", &cnt));
        cr_assert_eq((size_t)json_object_get_int(cnt), json_object_array_length(events));
        for (size_t k = 0; k < json_object_array_length(events); k++) {
            struct json_object *ev = json_object_array_get_idx(events, k);
            struct json_object *t;
            cr_assert(json_object_object_get_ex(ev, "unixtime", &t));
            cr_assert_gt(strlen(member_string(ev, "text")), 0);
            /* An early warning's key names its channel (kind "reading"). */
            const char *kind = member_string(ev, "kind");
            struct json_object *ch = NULL;
            char reading[32];
            if (!strcmp(kind, "reading") && json_object_object_get_ex(ev, "channel", &ch)) {
                snprintf(reading, sizeof reading, "reading-ch%d", json_object_get_int(ch));
                kind = reading;
            }
            char *key = xasprintf("%s/%lld/%s", member_string(ev, "serial"),
                                  (long long)json_object_get_int64(t), kind);
            cr_assert_str_eq(member_string(ev, "id"), key, "the id is the dedup key");
            buf_printf(&keys, "%s\n", key);
            free(key);
            (*count)++;
        }
        json_object_put(doc);
        hook_request_free(rq);
    }
    return buf_steal(&keys);
}

size_t occurrences(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}
