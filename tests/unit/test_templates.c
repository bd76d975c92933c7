/* Tests of templates.c and of the files in templates/: where a template is
 * found (receiver's file, templates directory, built in), partials and
 * their check, the context, and that each built-in template renders what
 * its receiver needs: file.txt the file receiver's text block, byte for
 * byte; webhook.json the webhook document; the JSON ones valid JSON
 * whatever the device names and alert texts hold. */
#include "event.h"
#include "incident.h"
#include "notify/notify.h"
#include "proc.h"
#include "templates.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;

static void setup(void)
{
    dir = test_tmpdir();
}

static void teardown(void)
{
    test_rmtree(dir);
    free(dir);
}

TestSuite(templates, .init = setup, .fini = teardown, .timeout = 30);

static void put(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", dir, name);
    write_file(path, text);
    free(path);
}

/* Renders `t` against `ctx` and returns the text (caller frees). */
static char *render(const struct template *t, const struct json_object *ctx,
                    enum template_escape esc, const char *partial_dir)
{
    struct buf out;
    struct err e = {{0}};
    buf_init(&out, 1 << 20);
    cr_assert_eq(template_render(&out, t, ctx, esc, templates_partial, (void *)partial_dir, &e), 0,
                 "%s: %s", template_origin(t), e.msg);
    return out.data ? buf_steal(&out) : xstrdup("");
}

static char *load_render(const char *explicit_path, const char *d, const char *name)
{
    struct template *t = NULL;
    struct err e = {{0}};
    cr_assert_eq(templates_load(&t, explicit_path, d, name, &e), 0, "%s", e.msg);
    char *text = render(t, NULL, TEMPLATE_ESCAPE_NONE, d);
    template_free(t);
    return text;
}

Test(templates, builtin_files_are_embedded_as_they_are)
{
    static const char *const names[] = {"file.txt",   "webhook.json",      "email.txt",
                                        "email.html", "email-subject.txt", "slack.json",
                                        "teams.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = 0;
        const char *data = templates_builtin(names[i], &len);
        char *path = xasprintf("%s/templates/%s", WSRELAY_SOURCE_DIR, names[i]);
        char *file = read_file_str(path);
        cr_assert_not_null(data, "%s is not built in", names[i]);
        cr_assert_not_null(file, "%s", path);
        cr_assert_eq(len, strlen(file), "%s", names[i]);
        cr_assert_str_eq(data, file, "%s differs from the source tree: rebuild", names[i]);
        free(file);
        free(path);
    }
    cr_assert_null(templates_builtin("README.md", NULL));
    cr_assert_null(templates_builtin("nope.txt", NULL));
    cr_assert_null(templates_builtin(NULL, NULL));
}

Test(templates, explicit_path_then_directory_then_builtin)
{
    struct template *t = NULL;
    struct err e = {{0}};
    char *own = xasprintf("%s/own.txt", dir);
    put("own.txt", "own {{x}}");
    put("file.txt", "from the directory");

    /* The receiver's own file wins, even when the directory has one. */
    char *text = load_render(own, dir, "file.txt");
    cr_assert_str_eq(text, "own ");
    free(text);
    cr_assert_eq(templates_load(&t, own, dir, "file.txt", &e), 0);
    cr_assert_str_eq(template_origin(t), own);
    template_free(t);

    /* Then the directory. */
    text = load_render(NULL, dir, "file.txt");
    cr_assert_str_eq(text, "from the directory");
    free(text);
    char *in_dir = xasprintf("%s/file.txt", dir);
    cr_assert_eq(templates_load(&t, NULL, dir, "file.txt", &e), 0);
    cr_assert_str_eq(template_origin(t), in_dir);
    template_free(t);

    /* Then the built-in copy: for a name the directory lacks, or no directory. */
    cr_assert_eq(templates_load(&t, NULL, dir, "slack.json", &e), 0, "%s", e.msg);
    cr_assert_str_eq(template_origin(t), "builtin:slack.json");
    template_free(t);
    cr_assert_eq(templates_load(&t, NULL, NULL, "file.txt", &e), 0, "%s", e.msg);
    cr_assert_str_eq(template_origin(t), "builtin:file.txt");
    template_free(t);
    free(own);
    free(in_dir);
}

Test(templates, load_failures_name_the_file)
{
    struct template *t = NULL;
    struct err e = {{0}};
    char *missing = xasprintf("%s/missing.json", dir);
    cr_assert_eq(templates_load(&t, missing, NULL, "slack.json", &e), -1);
    cr_assert(strstr(e.msg, missing) && strstr(e.msg, "No such file"), "%s", e.msg);
    free(missing);

    put("slack.json", "{\n  \"text\": \"{{#events}}{{name}}\"\n}\n");
    cr_assert_eq(templates_load(&t, NULL, dir, "slack.json", &e), -1);
    char *want = xasprintf("%s/slack.json:2:12: unclosed section 'events'", dir);
    cr_assert_str_eq(e.msg, want);
    free(want);

    cr_assert_eq(templates_load(&t, NULL, dir, "pager.json", &e), -1);
    want = xasprintf("no template 'pager.json' in %s and none built in", dir);
    cr_assert_str_eq(e.msg, want);
    free(want);
    cr_assert_eq(templates_load(&t, NULL, NULL, "pager.json", &e), -1);
    cr_assert_str_eq(e.msg, "no template 'pager.json' built in");

    /* A file there that cannot be read is an error, not a reason to fall
     * back to the built-in one. */
    char *sub = xasprintf("%s/email.txt", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(templates_load(&t, NULL, dir, "email.txt", &e), -1);
    cr_assert(strncmp(e.msg, sub, strlen(sub)) == 0, "%s", e.msg);
    char *text = NULL, *origin = NULL;
    cr_assert_eq(templates_partial(dir, "email.txt", &text, &origin), -1);
    free(sub);
    cr_assert_null(t);
}

Test(templates, partials_come_from_the_directory_then_builtin)
{
    char *text = NULL, *origin = NULL;
    put("head", "[{{receiver}}]");
    cr_assert_eq(templates_partial(dir, "head", &text, &origin), 0);
    cr_assert_str_eq(text, "[{{receiver}}]");
    char *want = xasprintf("%s/head", dir);
    cr_assert_str_eq(origin, want);
    free(want);
    free(text);
    free(origin);

    /* A built-in file is a partial too, with or without a directory. */
    cr_assert_eq(templates_partial(dir, "file.txt", &text, &origin), 0);
    cr_assert_str_eq(origin, "builtin:file.txt");
    free(text);
    free(origin);
    cr_assert_eq(templates_partial(NULL, "email.txt", &text, &origin), 0);
    free(text);
    free(origin);

    cr_assert_eq(templates_partial(dir, "nothing", &text, &origin), -1);
    cr_assert_eq(templates_partial(NULL, "head", &text, &origin), -1);
    /* Only plain file names: nothing outside the directory. */
    put("secret", "s3cr3t");
    char *sub = xasprintf("%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    free(sub);
    cr_assert_eq(templates_partial(dir, "../secret", &text, &origin), -1);
    cr_assert_eq(templates_partial(dir, "sub/../secret", &text, &origin), -1);
    cr_assert_eq(templates_partial(dir, ".hidden", &text, &origin), -1);
}

Test(templates, a_template_renders_its_partials)
{
    struct template *t = NULL;
    struct err e = {{0}};
    put("mail.txt", "to {{> head}}:\n  {{> body}}\n{{> nowhere}}end\n");
    put("head", "[{{receiver}}]");
    put("body", "one\ntwo\n");
    cr_assert_eq(templates_load(&t, NULL, dir, "mail.txt", &e), 0, "%s", e.msg);
    struct json_object *ctx = json_tokener_parse("{\"receiver\": \"ops\"}");
    char *text = render(t, ctx, TEMPLATE_ESCAPE_TEXT, dir);
    cr_assert_str_eq(text, "to [ops]:\n  one\n  two\nend\n");
    free(text);
    /* `check` finds the missing one, where it is used. */
    cr_assert_eq(templates_check(t, dir, &e), -1);
    char *want = xasprintf("%s/mail.txt:3:1: partial 'nowhere' not found (looked in %s and the "
                           "built-in templates)",
                           dir, dir);
    cr_assert_str_eq(e.msg, want);
    free(want);
    json_object_put(ctx);
    template_free(t);
}

Test(templates, check_follows_partials_of_partials_and_stops_at_cycles)
{
    struct template *t = NULL;
    struct err e = {{0}};
    const char *tpl = "{{#events}}{{>a}}{{/events}}";
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "main", &e), 0);
    put("a", "{{>b}}{{>a}}");
    put("b", "x\n{{>a}}{{>file.txt}}");
    cr_assert_eq(templates_check(t, dir, &e), 0, "%s", e.msg);
    put("b", "x\n{{>a}}{{>c}}");
    cr_assert_eq(templates_check(t, dir, &e), -1);
    char *want = xasprintf("%s/b:2:7: partial 'c' not found (looked in %s and the built-in "
                           "templates)",
                           dir, dir);
    cr_assert_str_eq(e.msg, want);
    free(want);
    put("c", "{{#open}}");
    cr_assert_eq(templates_check(t, dir, &e), -1);
    want = xasprintf("%s/c:1:1: unclosed section 'open'", dir);
    cr_assert_str_eq(e.msg, want);
    free(want);
    /* Without a directory only the built-in files count. */
    cr_assert_eq(templates_check(t, NULL, &e), -1);
    cr_assert_str_eq(e.msg, "main:1:12: partial 'a' not found (looked in the built-in "
                            "templates)");
    template_free(t);
}

Test(templates, every_builtin_template_passes_check)
{
    for (size_t i = 0; i < templates_builtin_count; i++) {
        struct template *t = NULL;
        struct err e = {{0}};
        const char *name = templates_builtin_files[i].name;
        cr_assert_eq(templates_load(&t, NULL, NULL, name, &e), 0, "%s", e.msg);
        cr_assert_eq(templates_check(t, NULL, &e), 0, "%s", e.msg);
        template_free(t);
    }
}

/* Events: owning their strings (event_clear frees them). */
static struct event make_event(const char *name, const char *model, const char *text,
                               const char *kind)
{
    struct event ev = {
        .account = xstrdup("tokyo"),
        .serial = xstrdup("52C10001"),
        .model = xstrdup(model),
        .name = xstrdup(name),
        .base_serial = xstrdup("52C10001"),
        .base_model = xstrdup(model),
        .base_name = xstrdup(name),
        .unixtime = 1795000000,
        .kind = xstrdup(kind),
        .text = xstrdup(text),
        .utc_offset = 540,
    };
    if (strncmp(kind, "ch", 2) == 0) {
        ev.channel_name = xstrdup("温度");
        ev.channel_unit = xstrdup("℃");
    }
    return ev;
}

static struct event *sample_events(size_t *n)
{
    struct event *evs = xcalloc(5, sizeof *evs);
    evs[0] = make_event("冷凍庫 A", "RTR501B", "CH1 上限値警報 -70.2℃", "ch1");
    /* A remote unit under a base unit with a name. */
    evs[1] = make_event("Freezer \"B\"", "", "CH2 Upper Limit <-75.0> & more\\", "ch2");
    free(evs[1].base_serial);
    free(evs[1].base_name);
    evs[1].base_serial = xstrdup("58210001");
    evs[1].base_name = xstrdup("本社1F");
    free(evs[1].channel_unit);
    evs[1].channel_unit = xstrdup("");
    /* ...and under one without a name; no channel; control characters. */
    evs[2] = make_event("", "TR-72A2", "battery\r\nBcc: x\x1b[2J\ttab\x7f", "battery-level");
    free(evs[2].base_serial);
    free(evs[2].base_name);
    evs[2].base_serial = xstrdup("58210002");
    evs[2].base_name = xstrdup("");
    evs[2].utc_offset = -330;
    evs[3] = make_event("Lab/1 </script>", "", "通信エラー", "communication-status");
    evs[3].unixtime = 1795000600;
    evs[4] = make_event("Line\nbreak", "M", "\x01\x1f text", "ch6");
    *n = 5;
    return evs;
}

static void free_events(struct event *evs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        event_clear(&evs[i]);
    free(evs);
}

/* The members another module adds from the text; here by kind so that
 * every state is used. */
static void add_state(struct json_object *obj, size_t i)
{
    static const char *const states[] = {"alarm",         "recovered", "sensor-error",
                                         "communication", "battery",   "other"};
    static const char *const flags[] = {"is_alarm",         "is_recovered", "is_sensor_error",
                                        "is_communication", "is_battery",   "is_other"};
    size_t s = i % 6;
    json_object_object_add(obj, "state", json_object_new_string(states[s]));
    for (size_t k = 0; k < 6; k++)
        json_object_object_add(obj, flags[k], json_object_new_boolean(k == s));
    if (s == 0) {
        json_object_object_add(obj, "value", json_object_new_string("-70.2"));
        json_object_object_add(obj, "limit", json_object_new_string("-75.0"));
    }
}

/* The members the classifier adds to an event. */
static void drop_state(struct json_object *obj)
{
    static const char *const keys[] = {
        "state",        "value",           "limit",      "recovers",         "is_alarm",
        "is_recovered", "is_sensor_error", "is_battery", "is_communication", "is_other"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        json_object_object_del(obj, keys[k]);
}

/* The context for events [0, n): with a state of each kind in turn, or
 * without any state members (as a custom context may come). */
static struct json_object *context(const struct event *evs, size_t n, bool with_state, bool test)
{
    struct json_object *list = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        struct json_object *obj = event_to_json(&evs[i]);
        drop_state(obj);
        if (with_state)
            add_state(obj, i);
        json_object_array_add(list, obj);
    }
    return templates_context("on-call", list, 1795000020, test);
}

/* What notify_context says of the whole message (notify.h), for events
 * whose states are those add_state gives them. */
static void add_whole(struct json_object *ctx, struct event *evs, size_t n)
{
    static const char *const states[] = {"alarm",         "recovered", "sensor-error",
                                         "communication", "battery",   "other"};
    for (size_t i = 0; i < n; i++) {
        free(evs[i].state);
        evs[i].state = xstrdup(states[i % 6]);
    }
    char *tally = notify_summary(evs, n, false), *devices = notify_devices(evs, n);
    json_object_object_add(ctx, "several", json_object_new_boolean(n > 1));
    json_object_object_add(ctx, "tally", json_object_new_string(tally));
    json_object_object_add(ctx, "devices", json_object_new_string(devices));
    free(tally);
    free(devices);
}

static struct template *builtin(const char *name)
{
    struct template *t = NULL;
    struct err e = {{0}};
    cr_assert_eq(templates_load(&t, NULL, NULL, name, &e), 0, "%s", e.msg);
    return t;
}

Test(templates, context_has_the_documented_members)
{
    size_t n;
    struct event *evs = sample_events(&n);
    struct json_object *ctx = context(evs, n, false, true);
    const char *want = "{\"receiver\":\"on-call\",\"count\":5,\"now_utc\":\"2026-11-18T11:07:00Z\","
                       "\"test\":true,\"version\":\"" WSRELAY_VERSION "\"}";
    struct json_object *events = NULL, *v = NULL;
    cr_assert(json_object_object_get_ex(ctx, "events", &events));
    cr_assert_eq(json_object_array_length(events), n);
    bool via[] = {false, true, true, false, false};
    for (size_t i = 0; i < n; i++) {
        cr_assert(json_object_object_get_ex(json_object_array_get_idx(events, i), "via_base", &v));
        cr_assert_eq(json_object_get_boolean(v), via[i], "event %zu", i);
    }
    json_object_get(events);
    json_object_object_del(ctx, "events");
    cr_assert_str_eq(json_object_to_json_string_ext(ctx, JSON_C_TO_STRING_PLAIN), want);
    json_object_put(events);
    json_object_put(ctx);
    free_events(evs, n);
}

/* The document webhook.c posts, built the same way. */
/* The webhook document as webhook.c builds it: the message's context
 * plus "source". */
static struct json_object *webhook_document(const struct event *evs, size_t n)
{
    struct json_object *list = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(list, event_to_json(&evs[i]));
    struct json_object *doc = templates_context("on-call", list, 1795000020, false);
    json_object_object_add(doc, "source", json_object_new_string("wsrelay"));
    return doc;
}

static struct json_object *parse_output(const char *text, const char *what)
{
    struct json_object *v = json_tokener_parse(text);
    cr_assert_not_null(v, "%s is not JSON:\n%s", what, text);
    return v;
}

static const char *member_str(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no '%s' in %s", key,
              json_object_to_json_string(obj));
    return json_object_get_string(v);
}

static struct json_object *member(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no '%s' in %s", key,
              json_object_to_json_string(obj));
    return v;
}

/* The one difference from webhook.c: Mustache cannot tell "" from null
 * (both are falsy), so a channel name or unit that the platform gives as ""
 * comes out null, as for a channel it does not name. */
static void blank_channels_are_null(struct json_object *doc)
{
    struct json_object *events = member(doc, "events");
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        struct json_object *ev = json_object_array_get_idx(events, i), *v;
        static const char *const keys[] = {"channel_name", "channel_unit"};
        for (size_t k = 0; k < 2; k++)
            if (json_object_object_get_ex(ev, keys[k], &v) && v &&
                json_object_get_string_len(v) == 0)
                json_object_object_add(ev, keys[k], NULL);
    }
}

Test(templates, webhook_json_is_the_webhook_document)
{
    size_t n;
    struct event *evs = sample_events(&n);
    struct template *t = builtin("webhook.json");
    for (size_t k = 1; k <= n; k++) {
        struct json_object *ctx = webhook_document(evs, k);
        char *got = render(t, ctx, TEMPLATE_ESCAPE_JSON, NULL);
        struct json_object *doc = parse_output(got, "webhook.json");
        struct json_object *want = webhook_document(evs, k);
        blank_channels_are_null(want);
        cr_assert(json_object_equal(doc, want), "with %zu events:\n%s\nwant\n%s", k,
                  json_object_to_json_string(doc), json_object_to_json_string(want));
        json_object_put(want);
        json_object_put(doc);
        json_object_put(ctx);
        free(got);
    }
    template_free(t);
    free_events(evs, n);
}

/* The text of every string in `v`, concatenated. */
static void all_strings(struct buf *out, struct json_object *v)
{
    if (json_object_is_type(v, json_type_string)) {
        buf_puts(out, json_object_get_string(v));
        buf_puts(out, "\n");
    } else if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++)
            all_strings(out, json_object_array_get_idx(v, i));
    } else if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, key, val)
        {
            (void)key;
            all_strings(out, val);
        }
    }
}

/* `s` with & < > as Slack's entities, as a Slack message carries it. */
static char *slack_entities(const char *s)
{
    struct buf b;
    buf_init(&b, 0);
    for (; *s; s++) {
        const char *with = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;
        if (with)
            buf_puts(&b, with);
        else
            buf_append(&b, s, 1);
    }
    return buf_steal(&b);
}

/* The escaping belongs to the role, so that a receiver's own slack.json
 * or teams.json gets the same protection as the built-in one. */
Test(templates, escape_follows_the_role)
{
    cr_assert_eq(templates_escape("slack.json"), TEMPLATE_ESCAPE_SLACK);
    cr_assert_eq(templates_escape("teams.json"), TEMPLATE_ESCAPE_TEAMS);
    cr_assert_eq(templates_escape("webhook.json"), TEMPLATE_ESCAPE_JSON);
    cr_assert_eq(templates_escape("email.html"), TEMPLATE_ESCAPE_HTML);
    cr_assert_eq(templates_escape("file.txt"), TEMPLATE_ESCAPE_TEXT);
    cr_assert_eq(templates_escape(NULL), TEMPLATE_ESCAPE_NONE);
}

Test(templates, slack_json_is_a_block_kit_payload)
{
    size_t n;
    struct event *evs = sample_events(&n);
    struct template *t = builtin("slack.json");
    for (size_t k = 1; k <= n; k++) {
        for (int test = 0; test < 2; test++) {
            struct json_object *ctx = context(evs, k, k != 2, test);
            char *got = render(t, ctx, templates_escape("slack.json"), NULL);
            struct json_object *doc = parse_output(got, "slack.json");
            cr_assert(strstr(member_str(doc, "text"), "冷凍庫 A: CH1 上限値警報 -70.2℃"), "%s",
                      got);
            struct json_object *blocks = member(doc, "blocks");
            size_t headers = 0;
            for (size_t i = 0; i < json_object_array_length(blocks); i++) {
                struct json_object *b = json_object_array_get_idx(blocks, i);
                if (strcmp(member_str(b, "type"), "header") == 0) {
                    cr_assert_leq(strlen(member_str(member(b, "text"), "text")), 150);
                    headers++;
                }
            }
            cr_assert_eq(headers, k);
            cr_assert_eq(json_object_array_length(blocks), 2 * k + 1 + (size_t)test);
            /* Raw text and local time of every event are there. */
            struct buf strings;
            buf_init(&strings, 0);
            all_strings(&strings, blocks);
            for (size_t i = 0; i < k; i++) {
                char local[40];
                char *text = slack_entities(evs[i].text);
                event_local_time(local, sizeof local, &evs[i]);
                cr_assert(strstr(buf_str(&strings), text), "%s", got);
                free(text);
                cr_assert(strstr(buf_str(&strings), local), "%s", got);
            }
            buf_free(&strings);
            json_object_put(doc);
            json_object_put(ctx);
            free(got);
        }
    }
    template_free(t);
    free_events(evs, n);
}

Test(templates, teams_json_is_an_adaptive_card_message)
{
    static const char wrapper[] =
        "{\"type\":\"message\",\"attachments\":[{\"contentType\":\"application\\/vnd.microsoft."
        "card.adaptive\",\"contentUrl\":null,\"content\":{\"$schema\":\"http:\\/\\/adaptivecards."
        "io\\/schemas\\/adaptive-card.json\",\"type\":\"AdaptiveCard\",\"version\":\"1.4\"}}]}";
    size_t n;
    struct event *evs = sample_events(&n);
    struct template *t = builtin("teams.json");
    for (size_t k = 1; k <= n; k++) {
        struct json_object *ctx = context(evs, k, true, k == 3);
        char *got = render(t, ctx, templates_escape("teams.json"), NULL);
        struct json_object *doc = parse_output(got, "teams.json");
        struct json_object *content =
            member(json_object_array_get_idx(member(doc, "attachments"), 0), "content");
        struct json_object *body = member(content, "body");
        size_t facts = 0;
        for (size_t i = 0; i < json_object_array_length(body); i++) {
            struct json_object *b = json_object_array_get_idx(body, i);
            const char *type = member_str(b, "type");
            cr_assert(strcmp(type, "TextBlock") == 0 || strcmp(type, "FactSet") == 0, "%s", type);
            if (strcmp(type, "FactSet") == 0)
                facts++;
            else
                cr_assert_str_neq(member_str(b, "text"), "");
            if (json_object_object_get_ex(b, "color", NULL))
                cr_assert_str_neq(member_str(b, "color"), "");
        }
        cr_assert_eq(facts, k);
        cr_assert_eq(json_object_array_length(body), 1 + 3 * k);
        /* Apart from the body, exactly the wrapper Teams expects. */
        json_object_object_del(content, "body");
        cr_assert_str_eq(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN), wrapper);
        json_object_put(doc);
        json_object_put(ctx);
        free(got);
    }
    template_free(t);
    free_events(evs, n);
}

Test(templates, email_templates_lead_with_state_and_device)
{
    size_t n;
    struct event *evs = sample_events(&n);
    struct template *subject = builtin("email-subject.txt");
    struct template *text = builtin("email.txt");
    struct template *html = builtin("email.html");
    struct json_object *ctx = context(evs, 1, true, false);
    char *got = render(subject, ctx, TEMPLATE_ESCAPE_TEXT, NULL);
    cr_assert_str_eq(got, "[ALARM] 冷凍庫 A: CH1 上限値警報 -70.2℃");
    free(got);
    json_object_put(ctx);

    ctx = context(evs, n, true, true);
    add_whole(ctx, evs, n);
    got = render(subject, ctx, TEMPLATE_ESCAPE_TEXT, NULL);
    cr_assert_str_eq(got,
                     "[TEST] [ALARM] 冷凍庫 A: 1 alarm, 1 sensor error, 1 communication "
                     "alert, 1 battery alert, 1 recovery",
                     "one serial: one device");
    free(got);
    got = render(text, ctx, TEMPLATE_ESCAPE_TEXT, NULL);
    cr_assert(strncmp(got, "TEST MESSAGE", 12) == 0, "%s", got);
    cr_assert(
        strstr(got, "\n[ALARM] 冷凍庫 A\nCH1 上限値警報 -70.2℃\n2026-11-18 20:06:40 +09:00\n"),
        "%s", got);
    cr_assert(strstr(got, "\n[RECOVERED] Freezer \"B\"\n"), "%s", got);
    cr_assert(strstr(got, "\n[SENSOR ERROR] 52C10001\nbattery  Bcc: x [2J tab \n"), "%s", got);
    cr_assert(strstr(got, "\n[COMMUNICATION] Lab/1 </script>\n"), "%s", got);
    cr_assert(strstr(got, "\n[BATTERY] Line break\n"), "%s", got);
    cr_assert(strstr(got, "value -70.2  limit -75.0"), "%s", got);
    free(got);
    got = render(html, ctx, TEMPLATE_ESCAPE_HTML, NULL);
    cr_assert(strstr(got, "ALARM</span> 冷凍庫 A</div>"), "%s", got);
    cr_assert(strstr(got, "Lab/1 &lt;/script&gt;"), "%s", got);
    cr_assert(strstr(got, "Freezer &quot;B&quot;"), "%s", got);
    cr_assert(strstr(got, "CH2 Upper Limit &lt;-75.0&gt; &amp; more\\"), "%s", got);
    cr_assert_null(strstr(got, "</script>"), "%s", got);
    free(got);
    json_object_put(ctx);

    /* An event without a state (a context from elsewhere) is an ALERT. */
    ctx = context(evs, 1, false, false);
    got = render(subject, ctx, TEMPLATE_ESCAPE_TEXT, NULL);
    cr_assert_str_eq(got, "[ALERT] 冷凍庫 A: CH1 上限値警報 -70.2℃");
    free(got);
    json_object_put(ctx);
    template_free(subject);
    template_free(text);
    template_free(html);
    free_events(evs, n);
}

/* --- what a routing rule decided ---------------------------------------- */

/* Events a rule routed: the first with a severity and 12 events held back
 * since 02:14 local time that day; the second with a rule but neither a
 * severity nor anything held back; the third held back by no named rule
 * and without a time (a context from elsewhere may hold anything). */
static struct event *routed_events(size_t *n)
{
    struct event *evs = sample_events(n);
    for (size_t i = 0; i < *n; i++)
        evs[i].group = xstrdup(i % 2 ? "" : "冷凍庫 \"B1\"");
    evs[0].rule = xstrdup("freezer-critical");
    evs[0].severity = xstrdup("critical");
    evs[0].held = 12;
    evs[0].held_since = 1794935640; /* 2026-11-18 02:14:00 +09:00 */
    evs[1].rule = xstrdup("warm \"room\"");
    evs[2].held = 3;
    evs[3].rule = xstrdup("comms");
    evs[3].severity = xstrdup("<low> & \"slow\"");
    evs[3].held = 1;
    evs[3].held_since = 1794900000; /* 2026-11-17 16:20:00 +09:00, the day before */
    return evs;
}

/* How many times `needle` is in `text`. */
static size_t occurrences(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(templates, text_templates_show_severity_and_what_was_held_back)
{
    size_t n;
    struct event *evs = routed_events(&n);
    struct json_object *ctx = context(evs, n, true, false);

    struct template *t = builtin("file.txt");
    char *got = render(t, ctx, TEMPLATE_ESCAPE_TEXT, NULL);
    cr_assert(strstr(got, "\n[ALARM · critical] 冷凍庫 A (RTR501B, 52C10001) - ch1 温度 [℃]\n"
                          "  2026-11-18 20:06:40 +09:00  account tokyo\n"
                          "  CH1 上限値警報 -70.2℃\n"
                          "  and 12 more since 02:14 (held back by rule freezer-critical)\n"),
              "%s", got);
    cr_assert(strstr(got, "\n[RECOVERED] Freezer \"B\" (52C10001) - ch2 温度\n"), "%s", got);
    cr_assert(strstr(got, "\n  and 3 more (held back)\n"), "%s", got);
    cr_assert(strstr(got, "\n[COMMUNICATION · <low> & \"slow\"] Lab/1 </script> (52C10001)"), "%s",
              got);
    cr_assert(strstr(got, "\n  and 1 more since 11-17 16:20 (held back by rule comms)\n"), "%s",
              got);
    cr_assert_eq(occurrences(got, "held back"), 3, "%s", got);
    free(got);
    template_free(t);

    t = builtin("email.txt");
    got = render(t, ctx, TEMPLATE_ESCAPE_TEXT, NULL);
    static const char first[] = "[ALARM · critical] 冷凍庫 A\nCH1 上限値警報 -70.2℃\n"
                                "and 12 more since 02:14 (held back by rule freezer-critical)\n"
                                "2026-11-18 20:06:40 +09:00\n";
    cr_assert(strncmp(got, first, strlen(first)) == 0, "%s", got);
    cr_assert(strstr(got, "\n[RECOVERED] Freezer \"B\"\nCH2 Upper Limit <-75.0> & more\\\n2026-"),
              "%s", got);
    cr_assert(strstr(got, "\nand 3 more (held back)\n"), "%s", got);
    cr_assert_eq(occurrences(got, "held back"), 3, "%s", got);
    free(got);
    template_free(t);

    t = builtin("email.html");
    got = render(t, ctx, TEMPLATE_ESCAPE_HTML, NULL);
    cr_assert(strstr(got, "ALARM · critical</span> 冷凍庫 A</div>"), "%s", got);
    cr_assert(strstr(got, ">and 12 more since 02:14 (held back by rule freezer-critical)</div>"),
              "%s", got);
    cr_assert(strstr(got, "RECOVERED</span> Freezer &quot;B&quot;</div>"), "%s", got);
    cr_assert(strstr(got, "COMMUNICATION · &lt;low&gt; &amp; &quot;slow&quot;</span>"), "%s", got);
    cr_assert(strstr(got, ">and 3 more (held back)</div>"), "%s", got);
    cr_assert_eq(occurrences(got, "held back"), 3, "%s", got);
    free(got);
    template_free(t);

    json_object_put(ctx);
    free_events(evs, n);
}

Test(templates, chat_templates_show_severity_and_what_was_held_back)
{
    size_t n;
    struct event *evs = routed_events(&n);
    struct json_object *ctx = context(evs, n, true, false);
    struct buf strings;

    struct template *t = builtin("slack.json");
    char *got = render(t, ctx, TEMPLATE_ESCAPE_JSON, NULL);
    struct json_object *doc = parse_output(got, "slack.json");
    cr_assert(strncmp(member_str(doc, "text"), "🔴 ALARM · critical 冷凍庫 A: CH1", 37) == 0, "%s",
              got);
    struct json_object *blocks = member(doc, "blocks");
    cr_assert_eq(json_object_array_length(blocks), 2 * n + 1, "%s", got);
    struct json_object *header = json_object_array_get_idx(blocks, 0);
    struct json_object *section = json_object_array_get_idx(blocks, 1);
    cr_assert_str_eq(member_str(member(header, "text"), "text"), "🔴 ALARM · critical 冷凍庫 A");
    cr_assert_str_eq(member_str(member(section, "text"), "text"),
                     "CH1 上限値警報 -70.2℃\n"
                     "and 12 more since 02:14 (held back by rule freezer-critical)");
    section = json_object_array_get_idx(blocks, 3);
    cr_assert_str_eq(member_str(member(section, "text"), "text"),
                     "CH2 Upper Limit <-75.0> & more\\");
    buf_init(&strings, 0);
    all_strings(&strings, blocks);
    cr_assert(strstr(buf_str(&strings), "📡 COMMUNICATION · <low> & \"slow\" Lab/1 </script>"), "%s",
              got);
    cr_assert_eq(occurrences(buf_str(&strings), "held back"), 3, "%s", got);
    buf_free(&strings);
    json_object_put(doc);
    free(got);
    template_free(t);

    t = builtin("teams.json");
    got = render(t, ctx, TEMPLATE_ESCAPE_JSON, NULL);
    doc = parse_output(got, "teams.json");
    struct json_object *body =
        member(member(json_object_array_get_idx(member(doc, "attachments"), 0), "content"), "body");
    /* A TextBlock more for each event that held others back. */
    cr_assert_eq(json_object_array_length(body), 1 + 3 * n + 3, "%s", got);
    cr_assert_str_eq(member_str(json_object_array_get_idx(body, 1), "text"),
                     "🔴 ALARM · critical 冷凍庫 A");
    cr_assert_str_eq(member_str(json_object_array_get_idx(body, 3), "text"),
                     "and 12 more since 02:14 (held back by rule freezer-critical)");
    cr_assert_str_eq(member_str(json_object_array_get_idx(body, 3), "type"), "TextBlock");
    buf_init(&strings, 0);
    all_strings(&strings, body);
    cr_assert(strstr(buf_str(&strings), "and 3 more (held back)\n"), "%s", got);
    cr_assert(strstr(buf_str(&strings), "and 1 more since 11-17 16:20 (held back by rule comms)"),
              "%s", got);
    buf_free(&strings);
    json_object_put(doc);
    free(got);
    template_free(t);

    json_object_put(ctx);
    free_events(evs, n);
}

Test(templates, webhook_json_carries_group_and_routing)
{
    size_t n;
    struct event *evs = routed_events(&n);
    struct template *t = builtin("webhook.json");
    struct json_object *ctx = webhook_document(evs, n);
    char *got = render(t, ctx, TEMPLATE_ESCAPE_JSON, NULL);
    struct json_object *doc = parse_output(got, "webhook.json");
    struct json_object *want = webhook_document(evs, n);
    blank_channels_are_null(want);
    cr_assert(json_object_equal(doc, want), "got\n%s\nwant\n%s", json_object_to_json_string(doc),
              json_object_to_json_string(want));
    struct json_object *ev = json_object_array_get_idx(member(doc, "events"), 0);
    cr_assert_str_eq(member_str(ev, "group"), "冷凍庫 \"B1\"");
    cr_assert_str_eq(member_str(ev, "rule"), "freezer-critical");
    cr_assert_str_eq(member_str(ev, "severity"), "critical");
    cr_assert_eq(json_object_get_int64(member(ev, "held")), 12);
    cr_assert_eq(json_object_get_int64(member(ev, "held_since")), 1794935640);
    cr_assert_str_eq(member_str(ev, "held_since_time"), "02:14");
    ev = json_object_array_get_idx(member(doc, "events"), 1);
    cr_assert_str_eq(member_str(ev, "group"), "");
    cr_assert_null(member(ev, "severity"));
    cr_assert_eq(json_object_get_int64(member(ev, "held")), 0);
    cr_assert_null(member(ev, "held_since_time"));
    ev = json_object_array_get_idx(member(doc, "events"), 2);
    cr_assert_null(member(ev, "rule"));
    json_object_put(want);
    json_object_put(doc);
    json_object_put(ctx);
    free(got);

    /* A context without any of these members (from elsewhere) still makes
     * a JSON document, with the defaults. */
    struct json_object *list = json_object_new_array();
    struct json_object *bare = event_to_json(&evs[0]);
    static const char *const keys[] = {"group", "rule",       "severity",
                                       "held",  "held_since", "held_since_time"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        json_object_object_del(bare, keys[k]);
    json_object_array_add(list, bare);
    ctx = templates_context("on-call", list, 1795000020, false);
    got = render(t, ctx, TEMPLATE_ESCAPE_JSON, NULL);
    doc = parse_output(got, "webhook.json");
    ev = json_object_array_get_idx(member(doc, "events"), 0);
    cr_assert_str_eq(member_str(ev, "group"), "");
    cr_assert_null(member(ev, "rule"));
    cr_assert_null(member(ev, "severity"));
    cr_assert_eq(json_object_get_int64(member(ev, "held")), 0);
    cr_assert_eq(json_object_get_int64(member(ev, "held_since")), 0);
    cr_assert_null(member(ev, "held_since_time"));
    json_object_put(doc);
    json_object_put(ctx);
    free(got);
    template_free(t);
    free_events(evs, n);
}

/* --- incidents ----------------------------------------------------------- */

/* 03:00 at the device (+09:00): 2026-11-17 18:00:00 UTC. */
#define ALARM_AT 1794938400LL

/* The freezer's ch1 alarm at 03:00, as routed by the rule "freezers". */
static struct event freezer_event(const char *state, long long at, const char *text,
                                  const char *value, const char *limit)
{
    struct event ev = make_event("Freezer -80 A", "TR-71A", text, "ch1");
    free(ev.serial);
    free(ev.base_serial);
    free(ev.channel_name);
    free(ev.channel_unit);
    free(ev.account);
    ev.account = xstrdup("lab");
    ev.serial = xstrdup("5214000A");
    ev.base_serial = xstrdup("5214000A");
    ev.channel_name = xstrdup("Temperature");
    ev.channel_unit = xstrdup("°C");
    ev.unixtime = at;
    ev.state = xstrdup(state);
    ev.value = value ? xstrdup(value) : NULL;
    ev.limit = limit ? xstrdup(limit) : NULL;
    ev.rule = xstrdup("freezers");
    ev.severity = xstrdup("critical");
    return ev;
}

/* Incident 12 of that alarm, opened 30 s after it; the channel peaked at
 * -66.0°C at 03:20 and read -68.1°C at 03:34. */
static struct incident freezer_incident(void)
{
    struct incident inc = {.id = 12,
                           .key = xstrdup("5214000A/ch1"),
                           .state = INCIDENT_OPEN,
                           .opened_at = ALARM_AT + 30,
                           .paged = true,
                           .last_page = ALARM_AT + 30};
    inc.first = freezer_event("alarm", ALARM_AT, "CH1 Upper Limit -70.2°C", "-70.2°C", "-75.0°C");
    incident_tell(&inc, "on-call");
    incident_note_reading(&inc, -70.2, ALARM_AT);
    incident_note_reading(&inc, -66.0, ALARM_AT + 1200);
    incident_note_reading(&inc, -68.1, ALARM_AT + 2040);
    return inc;
}

static void acknowledge(struct incident *inc, const char *by, const char *note)
{
    inc->acked_at = ALARM_AT + 1500; /* 03:25 */
    inc->acked_by = xstrdup(by);
    inc->ack_note = note ? xstrdup(note) : NULL;
}

/* The message of each notice, as run/incidents.c queues it. */
enum { N_NOTICES = 6 };

static void notice_events(struct event out[N_NOTICES], const char *note)
{
    struct incident inc = freezer_incident();
    incident_message(&out[NOTICE_OPENED], &inc, NOTICE_OPENED, NULL, ALARM_AT + 30);
    inc.step = 1;
    incident_message(&out[NOTICE_ESCALATION], &inc, NOTICE_ESCALATION, NULL, ALARM_AT + 1230);
    inc.reminders = 2;
    incident_message(&out[NOTICE_REMINDER], &inc, NOTICE_REMINDER, NULL, ALARM_AT + 2070);
    struct incident lone = freezer_incident();
    lone.state = INCIDENT_CLOSED;
    lone.ended = lone.ended_at = lone.opened_at + 7 * 86400;
    incident_message(&out[NOTICE_CLOSED], &lone, NOTICE_CLOSED, NULL, lone.ended_at);
    incident_clear(&lone);
    acknowledge(&inc, "night shift", note);
    incident_message(&out[NOTICE_ACKNOWLEDGED], &inc, NOTICE_ACKNOWLEDGED, NULL, ALARM_AT + 1530);
    struct event back =
        freezer_event("recovered", ALARM_AT + 2820, "CH1 Recovered -79.5°C", "-79.5°C", NULL);
    back.recovers = ALARM_AT;
    inc.state = INCIDENT_RESOLVED;
    inc.ended = ALARM_AT + 2820;
    inc.ended_at = ALARM_AT + 2850;
    incident_message(&out[NOTICE_RESOLVED], &inc, NOTICE_RESOLVED, &back, ALARM_AT + 2850);
    event_clear(&back);
    incident_clear(&inc);
}

static void clear_notices(struct event evs[N_NOTICES])
{
    for (size_t i = 0; i < N_NOTICES; i++)
        event_clear(&evs[i]);
}

/* The built-in template `name` rendered for the message of `ev` alone, as
 * its receiver renders it. */
static char *render_one(const char *name, const struct event *ev)
{
    struct notify_message m = {.events = ev, .n = 1, .now = ALARM_AT + 2850};
    struct json_object *ctx = notify_context("on-call", &m);
    struct template *t = builtin(name);
    char *got = render(t, ctx, templates_escape(name), NULL);
    template_free(t);
    json_object_put(ctx);
    return got;
}

static const char *const notice_labels[N_NOTICES] = {
    [NOTICE_OPENED] = "ALARM",         [NOTICE_REMINDER] = "REMINDER 2",
    [NOTICE_ESCALATION] = "ESCALATED", [NOTICE_ACKNOWLEDGED] = "ACKNOWLEDGED",
    [NOTICE_RESOLVED] = "RESOLVED",    [NOTICE_CLOSED] = "CLOSED",
};

static const char *const notice_emoji[N_NOTICES] = {
    [NOTICE_OPENED] = "🔴",       [NOTICE_REMINDER] = "⏰", [NOTICE_ESCALATION] = "📣",
    [NOTICE_ACKNOWLEDGED] = "👍", [NOTICE_RESOLVED] = "✅", [NOTICE_CLOSED] = "🔒",
};

#define NOTE "moving the samples to freezer B"

static const char *const notice_lines[N_NOTICES] = {
    [NOTICE_OPENED] = "incident 12 · open 0 min · not acknowledged · wsrelay ack 12",
    [NOTICE_REMINDER] = "incident 12 · open 34 min · not acknowledged · wsrelay ack 12",
    [NOTICE_ESCALATION] = "incident 12 · open 20 min · not acknowledged · wsrelay ack 12",
    [NOTICE_ACKNOWLEDGED] =
        "incident 12 · open 25 min · acknowledged by night shift at 03:25: " NOTE,
    [NOTICE_RESOLVED] = "incident 12 · 47 min beyond its limit, peak -66.0°C at 03:20 · "
                        "acknowledged by night shift at 03:25: " NOTE,
    [NOTICE_CLOSED] = "incident 12 · closed after 7 d 0 h without a recovery · nobody "
                      "acknowledged it",
};

Test(templates, file_txt_shows_each_notice_with_its_label_and_incident_line)
{
    struct event evs[N_NOTICES];
    notice_events(evs, NOTE);
    for (size_t i = 0; i < N_NOTICES; i++) {
        char *got = render_one("file.txt", &evs[i]);
        char *head = xasprintf("\n[%s · critical] Freezer -80 A (TR-71A, 5214000A) - ch1 "
                               "Temperature [°C]\n  %s\n  2026-11-18 03:",
                               notice_labels[i], notice_lines[i]);
        cr_assert(strstr(got, head), "notice %s:\n%s\nwant\n%s", incident_notice_name(i), got,
                  head);
        cr_assert(strstr(got, evs[i].text), "%s", got);
        free(head);
        free(got);
    }
    /* The whole block of a reminder and of a resolution. */
    char *got = render_one("file.txt", &evs[NOTICE_REMINDER]);
    cr_assert_str_eq(got,
                     "== wsrelay: 1 new alert for on-call ==\n"
                     "\n"
                     "[REMINDER 2 · critical] Freezer -80 A (TR-71A, 5214000A) - ch1 Temperature "
                     "[°C]\n"
                     "  incident 12 · open 34 min · not acknowledged · wsrelay ack 12\n"
                     "  2026-11-18 03:00:00 +09:00  account lab\n"
                     "  Reminder 2: incident 12 open for 34 min, not acknowledged. Now -68.1°C "
                     "at 03:34 (limit -75.0°C, peak -66.0°C at 03:20). CH1 Upper Limit -70.2°C "
                     "Acknowledge: wsrelay ack 12\n");
    free(got);
    got = render_one("file.txt", &evs[NOTICE_RESOLVED]);
    cr_assert_str_eq(got, "== wsrelay: 1 new alert for on-call ==\n"
                          "\n"
                          "[RESOLVED · critical] Freezer -80 A (TR-71A, 5214000A) - ch1 "
                          "Temperature [°C]\n"
                          "  incident 12 · 47 min beyond its limit, peak -66.0°C at 03:20 · "
                          "acknowledged by night shift at 03:25: " NOTE "\n"
                          "  2026-11-18 03:47:00 +09:00  account lab\n"
                          "  CH1 Recovered -79.5°C Incident 12: beyond its limit for 47 min, peak "
                          "-66.0°C at 03:20; acknowledged by night shift at 03:25.\n");
    free(got);
    clear_notices(evs);
}

Test(templates, the_mail_subject_gives_the_notice_and_the_incident)
{
    struct event evs[N_NOTICES];
    notice_events(evs, NOTE);
    for (size_t i = 0; i < N_NOTICES; i++) {
        char *got = render_one("email-subject.txt", &evs[i]);
        /* the first notice says what the platform said, as an alarm does */
        char *want = i == NOTICE_OPENED
                         ? xstrdup("[ALARM] Freezer -80 A: CH1 Upper Limit -70.2°C")
                         : xasprintf("[%s] Freezer -80 A: %s", notice_labels[i], notice_lines[i]);
        cr_assert_str_eq(got, want, "notice %s", incident_notice_name(i));
        free(want);
        free(got);
    }
    clear_notices(evs);
}

Test(templates, mail_bodies_show_each_notice_with_its_incident_line)
{
    struct event evs[N_NOTICES];
    notice_events(evs, "<b>moved</b> & \"done\"");
    for (size_t i = 0; i < N_NOTICES; i++) {
        char *got = render_one("email.txt", &evs[i]);
        char *want = xasprintf("[%s · critical] Freezer -80 A\nincident 12 · ", notice_labels[i]);
        cr_assert(strstr(got, want), "notice %s:\n%s", incident_notice_name(i), got);
        free(want);
        free(got);
        got = render_one("email.html", &evs[i]);
        want = xasprintf("%s · critical</span> Freezer -80 A</div>\n"
                         "<div style=\"margin:4px 0;font-weight:bold\">incident 12 · ",
                         notice_labels[i]);
        cr_assert(strstr(got, want), "notice %s:\n%s", incident_notice_name(i), got);
        cr_assert_null(strstr(got, "<b>moved"), "%s", got);
        if (i == NOTICE_ACKNOWLEDGED)
            cr_assert(strstr(got, "at 03:25: &lt;b&gt;moved&lt;/b&gt; &amp; &quot;done&quot;"
                                  "</div>"),
                      "%s", got);
        free(want);
        free(got);
    }
    clear_notices(evs);
}

/* A note as a person types it, meant to ping everyone, shout and hide a
 * link. */
#define HOSTILE_NOTE "<!channel> *bold* [x](http://x) ](http://x) \"q\\ <@U123>"

Test(templates, slack_shows_each_notice_under_its_header_and_stays_json)
{
    struct event evs[N_NOTICES];
    notice_events(evs, HOSTILE_NOTE);
    for (size_t i = 0; i < N_NOTICES; i++) {
        char *got = render_one("slack.json", &evs[i]);
        struct json_object *doc = parse_output(got, "slack.json");
        struct json_object *blocks = member(doc, "blocks");
        /* header, the incident, the text, the footer */
        cr_assert_eq(json_object_array_length(blocks), 4, "%s", got);
        struct json_object *header = json_object_array_get_idx(blocks, 0);
        struct json_object *line = json_object_array_get_idx(blocks, 1);
        char *want = xasprintf("%s %s · critical Freezer -80 A", notice_emoji[i], notice_labels[i]);
        cr_assert_str_eq(member_str(header, "type"), "header");
        cr_assert_str_eq(member_str(member(header, "text"), "text"), want);
        free(want);
        cr_assert_str_eq(member_str(member(line, "text"), "type"), "plain_text");
        const char *text = member_str(member(line, "text"), "text");
        if (i == NOTICE_ACKNOWLEDGED || i == NOTICE_RESOLVED) {
            /* the note as Slack shows it: its & < > as entities, so that it
             * mentions nobody and links nowhere */
            cr_assert(strstr(text, "at 03:25: &lt;!channel&gt; *bold* [x](http://x) ](http://x) "
                                   "\"q\\ &lt;@U123&gt;"),
                      "%s", text);
            cr_assert_null(strstr(got, "<!channel>"), "%s", got);
            cr_assert_null(strstr(got, "<@U123>"), "%s", got);
        } else {
            cr_assert_str_eq(text, notice_lines[i]);
        }
        want = xasprintf("%s %s · critical Freezer -80 A: ", notice_emoji[i], notice_labels[i]);
        cr_assert(strncmp(member_str(doc, "text"), want, strlen(want)) == 0, "%s",
                  member_str(doc, "text"));
        free(want);
        json_object_put(doc);
        free(got);
    }
    clear_notices(evs);
}

Test(templates, teams_shows_each_notice_under_its_header_and_stays_json)
{
    struct event evs[N_NOTICES];
    notice_events(evs, HOSTILE_NOTE);
    for (size_t i = 0; i < N_NOTICES; i++) {
        char *got = render_one("teams.json", &evs[i]);
        struct json_object *doc = parse_output(got, "teams.json");
        struct json_object *body = member(
            member(json_object_array_get_idx(member(doc, "attachments"), 0), "content"), "body");
        /* the heading, then header, incident, text and facts */
        cr_assert_eq(json_object_array_length(body), 5, "%s", got);
        char *want = xasprintf("%s %s · critical Freezer -80 A", notice_emoji[i], notice_labels[i]);
        cr_assert_str_eq(member_str(json_object_array_get_idx(body, 1), "text"), want);
        free(want);
        const char *text = member_str(json_object_array_get_idx(body, 2), "text");
        cr_assert_str_eq(member_str(json_object_array_get_idx(body, 2), "weight"), "Bolder");
        if (i == NOTICE_ACKNOWLEDGED || i == NOTICE_RESOLVED) {
            /* the note's Markdown inert: no emphasis, no link */
            cr_assert(strstr(text, "\\*bold\\*"), "%s", text);
            cr_assert_null(strstr(text, "](http"), "%s", text);
        } else {
            cr_assert_str_eq(text, notice_lines[i]);
        }
        json_object_put(doc);
        free(got);
    }
    clear_notices(evs);
}

Test(templates, webhook_json_carries_the_incident_whole)
{
    struct event evs[N_NOTICES];
    notice_events(evs, HOSTILE_NOTE);
    struct template *t = builtin("webhook.json");
    for (size_t i = 0; i < N_NOTICES; i++) {
        struct json_object *ctx = webhook_document(&evs[i], 1);
        char *got = render(t, ctx, TEMPLATE_ESCAPE_JSON, NULL);
        struct json_object *doc = parse_output(got, "webhook.json");
        struct json_object *ev = json_object_array_get_idx(member(doc, "events"), 0);
        cr_assert(json_object_equal(member(ev, "incident"), evs[i].incident), "%s", got);
        cr_assert_str_eq(member_str(member(ev, "incident"), "notice"), incident_notice_name(i));
        struct json_object *want = webhook_document(&evs[i], 1);
        blank_channels_are_null(want);
        cr_assert(json_object_equal(doc, want), "got\n%s\nwant\n%s",
                  json_object_to_json_string(doc), json_object_to_json_string(want));
        json_object_put(want);
        json_object_put(doc);
        json_object_put(ctx);
        free(got);
    }
    template_free(t);
    clear_notices(evs);
}

/* Two notices in one message: each keeps its own label and line. */
Test(templates, several_notices_in_one_message_each_say_their_own)
{
    struct event evs[N_NOTICES];
    notice_events(evs, NOTE);
    struct event two[2] = {evs[NOTICE_REMINDER], evs[NOTICE_RESOLVED]};
    struct notify_message m = {.events = two, .n = 2, .now = ALARM_AT + 2850};
    struct json_object *ctx = notify_context("on-call", &m);
    struct template *t = builtin("file.txt");
    char *got = render(t, ctx, TEMPLATE_ESCAPE_TEXT, NULL);
    cr_assert(strstr(got, "[REMINDER 2 · critical] Freezer -80 A"), "%s", got);
    cr_assert(strstr(got, "\n  "
                          "incident 12 · open 34 min · not acknowledged"),
              "%s", got);
    cr_assert(strstr(got, "[RESOLVED · critical] Freezer -80 A"), "%s", got);
    cr_assert(strstr(got, "\n  incident 12 · 47 min beyond its limit"), "%s", got);
    free(got);
    template_free(t);
    json_object_put(ctx);
    clear_notices(evs);
}
