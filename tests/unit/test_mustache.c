/* Tests of mustache.c: every case of the Mustache spec's core modules,
 * read from tests/data/mustache-spec/, then what wsrelay adds: escaping
 * for JSON and plain text, compile errors with their positions, the
 * output cap, the limits on partials and work. */
#include "mustache.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

TestSuite(template, .timeout = 30);

static struct json_object *parse(const char *text)
{
    struct json_object *obj = json_tokener_parse(text);
    cr_assert_not_null(obj, "test JSON does not parse: %s", text);
    return obj;
}

/* Spec partials: the case's "partials" object, name -> text. */
static int spec_partial(void *ud, const char *name, char **text_out, char **origin_out)
{
    struct json_object *v = NULL;
    if (!ud || !json_object_object_get_ex(ud, name, &v) ||
        !json_object_is_type(v, json_type_string))
        return -1;
    *text_out = xstrdup(json_object_get_string(v));
    *origin_out = xasprintf("partial:%s", name);
    return 0;
}

/* Renders one spec case; NULL when it passes, else what went wrong. */
static char *spec_case(struct json_object *tc)
{
    struct json_object *tpl = NULL, *data = NULL, *want = NULL, *partials = NULL;
    struct template *t = NULL;
    struct buf out;
    struct err e = {{0}};
    char *problem = NULL;
    json_object_object_get_ex(tc, "template", &tpl);
    json_object_object_get_ex(tc, "data", &data);
    json_object_object_get_ex(tc, "expected", &want);
    json_object_object_get_ex(tc, "partials", &partials);
    buf_init(&out, 1 << 20);
    if (template_compile(&t, json_object_get_string(tpl), (size_t)json_object_get_string_len(tpl),
                         "spec", &e) < 0)
        problem = xasprintf("does not compile: %s", e.msg);
    else if (template_render(&out, t, data, TEMPLATE_ESCAPE_HTML, spec_partial, partials, &e) < 0)
        problem = xasprintf("does not render: %s", e.msg);
    else if (strcmp(buf_str(&out), json_object_get_string(want)) != 0) {
        /* Both as JSON strings, so that whitespace shows. */
        struct json_object *got = json_object_new_string(buf_str(&out));
        problem = xasprintf("expected %s, got %s", json_object_to_json_string(want),
                            json_object_to_json_string(got));
        json_object_put(got);
    }
    template_free(t);
    buf_free(&out);
    return problem;
}

/* Runs every test of one spec file and names each failing case. */
static void run_spec(const char *file)
{
    struct buf text, failures;
    struct err e = {{0}};
    char *path = xasprintf("%s/tests/data/mustache-spec/%s", WSRELAY_SOURCE_DIR, file);
    buf_init(&text, 1 << 20);
    buf_init(&failures, 0);
    cr_assert_eq(file_read(&text, path, &e), 0, "%s", e.msg);
    struct json_object *doc = parse(buf_str(&text));
    struct json_object *tests = NULL;
    cr_assert(json_object_object_get_ex(doc, "tests", &tests));
    size_t n = json_object_array_length(tests), failed = 0;
    cr_assert_gt(n, 0, "%s has no tests", file);
    for (size_t i = 0; i < n; i++) {
        struct json_object *tc = json_object_array_get_idx(tests, i), *name = NULL;
        json_object_object_get_ex(tc, "name", &name);
        char *problem = spec_case(tc);
        if (problem) {
            buf_printf(&failures, "\n  %s: \"%s\": %s", file, json_object_get_string(name),
                       problem);
            failed++;
        }
        free(problem);
    }
    cr_assert_eq(failed, 0, "%zu of %zu spec cases fail:%s", failed, n, buf_str(&failures));
    json_object_put(doc);
    buf_free(&text);
    buf_free(&failures);
    free(path);
}

Test(template, spec_interpolation)
{
    run_spec("interpolation.json");
}

Test(template, spec_sections)
{
    run_spec("sections.json");
}

Test(template, spec_inverted)
{
    run_spec("inverted.json");
}

Test(template, spec_comments)
{
    run_spec("comments.json");
}

Test(template, spec_partials)
{
    run_spec("partials.json");
}

Test(template, spec_delimiters)
{
    run_spec("delimiters.json");
}

/* Compiles and renders `tpl` against the JSON `data`; expects success. */
static char *render(const char *tpl, const char *data, enum template_escape esc)
{
    struct template *t = NULL;
    struct err e = {{0}};
    struct buf out;
    struct json_object *ctx = data ? parse(data) : NULL;
    buf_init(&out, 1 << 20);
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "t", &e), 0, "%s", e.msg);
    cr_assert_eq(template_render(&out, t, ctx, esc, NULL, NULL, &e), 0, "%s", e.msg);
    template_free(t);
    json_object_put(ctx);
    return out.data ? buf_steal(&out) : xstrdup("");
}

static void expect(const char *tpl, const char *data, enum template_escape esc, const char *want)
{
    char *got = render(tpl, data, esc);
    cr_assert_str_eq(got, want, "template %s gave %s", tpl, got);
    free(got);
}

Test(template, json_escaping_makes_a_json_string)
{
    const char *data = "{\"s\": \"say \\\"hi\\\" C:\\\\dir\\nnext\\ttab\\u0001bell\\u001f "
                       "冷凍庫 -80℃ 😀 /\"}";
    char *got = render("{\"v\": \"{{s}}\"}", data, TEMPLATE_ESCAPE_JSON);
    cr_assert_str_eq(got, "{\"v\": \"say \\\"hi\\\" C:\\\\dir\\nnext\\ttab\\u0001bell\\u001f "
                          "冷凍庫 -80℃ 😀 /\"}");
    /* The result is JSON and holds the original string. */
    struct json_object *doc = parse(got), *v = NULL;
    struct json_object *src = parse(data), *s = NULL;
    cr_assert(json_object_object_get_ex(doc, "v", &v));
    cr_assert(json_object_object_get_ex(src, "s", &s));
    cr_assert_str_eq(json_object_get_string(v), json_object_get_string(s));
    json_object_put(doc);
    json_object_put(src);
    free(got);
}

Test(template, json_escaping_replaces_bytes_that_are_not_utf8)
{
    struct json_object *ctx = json_object_new_object();
    struct template *t = NULL;
    struct err e = {{0}};
    struct buf out;
    buf_init(&out, 0);
    /* A stray continuation byte, a truncated sequence, a surrogate. */
    json_object_object_add(ctx, "s",
                           json_object_new_string("a\x80"
                                                  "b\xe6\x97"
                                                  "c\xed\xa0\x80"));
    cr_assert_eq(template_compile(&t, "\"{{s}}\"", 7, "t", &e), 0, "%s", e.msg);
    cr_assert_eq(template_render(&out, t, ctx, TEMPLATE_ESCAPE_JSON, NULL, NULL, &e), 0);
    cr_assert_str_eq(buf_str(&out), "\"a\xEF\xBF\xBD"
                                    "b\xEF\xBF\xBD\xEF\xBF\xBD"
                                    "c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
    template_free(t);
    buf_free(&out);
    json_object_put(ctx);
}

Test(template, triple_mustache_is_raw_in_json_mode)
{
    expect("{{{s}}}|{{&s}}|{{s}}", "{\"s\": \"\\\"a\\\"\\n<b>\"}", TEMPLATE_ESCAPE_JSON,
           "\"a\"\n<b>|\"a\"\n<b>|\\\"a\\\"\\n<b>");
}

Test(template, none_escaping_changes_nothing)
{
    expect("{{s}}", "{\"s\": \"<a href='x'>&\\\"\\n\\u0007</a>\"}", TEMPLATE_ESCAPE_NONE,
           "<a href='x'>&\"\n\a</a>");
}

Test(template, html_escaping_covers_quotes)
{
    expect("{{s}}", "{\"s\": \"<a href='x'>&\\\"</a>\"}", TEMPLATE_ESCAPE_HTML,
           "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
}

Test(template, text_escaping_blanks_control_characters)
{
    expect("[{{s}}]\n", "{\"s\": \"a\\r\\nBcc: x\\t\\u001b[2J\\u007f 冷蔵庫\"}",
           TEMPLATE_ESCAPE_TEXT, "[a  Bcc: x  [2J  冷蔵庫]\n");
    expect("{{{s}}}", "{\"s\": \"a\\nb\"}", TEMPLATE_ESCAPE_TEXT, "a\nb");
}

/* Renders "{{s}}" over the raw bytes `s` (a string json-c holds as it
 * is) with `esc`. */
static char *render_bytes(const char *s, enum template_escape esc)
{
    struct json_object *ctx = json_object_new_object();
    struct template *t = NULL;
    struct err e = {{0}};
    struct buf out;
    buf_init(&out, 0);
    json_object_object_add(ctx, "s", json_object_new_string(s));
    cr_assert_eq(template_compile(&t, "{{s}}", 5, "t", &e), 0, "%s", e.msg);
    cr_assert_eq(template_render(&out, t, ctx, esc, NULL, NULL, &e), 0, "%s", e.msg);
    template_free(t);
    json_object_put(ctx);
    return buf_steal(&out);
}

Test(template, html_and_text_escaping_replace_bytes_that_are_not_utf8)
{
    char *got = render_bytes("<a\x80"
                             "b\xe6\x97"
                             "c\xed\xa0\x80\xFF>",
                             TEMPLATE_ESCAPE_HTML);
    cr_assert_str_eq(got, "&lt;a\xEF\xBF\xBD"
                          "b\xEF\xBF\xBD\xEF\xBF\xBD"
                          "c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD&gt;");
    free(got);
    got = render_bytes("a\xFF\x1b[2J\xC2\x9B"
                       "1m冷",
                       TEMPLATE_ESCAPE_TEXT);
    cr_assert_str_eq(got, "a\xEF\xBF\xBD [2J 1m冷", "C1 controls blank too");
    free(got);
}

/* Slack reads its markup in every text of a message: a value must not
 * mention a channel or a person, nor hide a link. */
Test(template, slack_escaping_makes_its_markup_inert)
{
    expect("{\"text\": \"{{s}}\"}",
           "{\"s\": \"<!channel> <!here> <@U123> <http://evil|click> & \\\"q\\\" *b* \\n\"}",
           TEMPLATE_ESCAPE_SLACK,
           "{\"text\": \"&lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; "
           "&lt;http://evil|click&gt; &amp; \\\"q\\\" *b* \\n\"}");
    /* The template's own markup is the author's. */
    expect("<{{u}}|{{s}}>", "{\"u\": \"https://x/?a=1&b=2\", \"s\": \"a<b\"}",
           TEMPLATE_ESCAPE_SLACK, "<https://x/?a=1&amp;b=2|a&lt;b>");
    expect("{{{s}}}", "{\"s\": \"<!channel>\"}", TEMPLATE_ESCAPE_SLACK, "<!channel>");
    char *got = render_bytes("x\xFF<", TEMPLATE_ESCAPE_SLACK);
    cr_assert_str_eq(got, "x\xEF\xBF\xBD&lt;");
    free(got);
}

/* Teams reads TextBlocks and Facts as Markdown: a value must not make a
 * link, emphasis, a list, a heading or a DATE() call. */
Test(template, teams_escaping_makes_markdown_inert)
{
#define Z "\xE2\x80\x8B" /* a zero-width space, as JSON keeps it */
    expect("{{s}}", "{\"s\": \"[link](http://evil) **bold** _it_ ~s~ `c` a\\\\b\"}",
           TEMPLATE_ESCAPE_TEAMS,
           "[link]" Z "(http://evil) \\\\*\\\\*bold\\\\*\\\\* \\\\_it\\\\_ \\\\~s\\\\~ "
           "\\\\`c\\\\` a\\\\\\\\b");
    /* A line that would start a block, the first one included. */
    expect("{{s}}", "{\"s\": \"# title\\n- item\\n  + item\\n1. one\\n12) two\\n> quote\\n---\"}",
           TEMPLATE_ESCAPE_TEAMS,
           Z "# title\\n" Z "- item\\n  " Z "+ item\\n" Z "1. one\\n" Z "12) two\\n" Z
             "> quote\\n" Z "---");
    /* What is not a block stays as it is: values, times, serials. */
    expect("{{a}}|{{b}}|{{c}}|{{d}}",
           "{\"a\": \"-70.2°C\", \"b\": \"2026-11-18 20:07:00 +09:00\", \"c\": \"5214000A\", "
           "\"d\": \"1.5 V\"}",
           TEMPLATE_ESCAPE_TEAMS, "-70.2°C|2026-11-18 20:07:00 +09:00|5214000A|1.5 V");
    expect("{{s}}", "{\"s\": \"{{DATE(2017-02-14T06:00:00Z)}}\"}", TEMPLATE_ESCAPE_TEAMS,
           "{" Z "{DATE(2017-02-14T06:00:00Z)}}");
    /* The template's own Markdown is the author's. */
    expect("**{{s}}** [more](https://x/{{u}})", "{\"s\": \"a*b\", \"u\": \"5214000A\"}",
           TEMPLATE_ESCAPE_TEAMS, "**a\\\\*b** [more](https://x/5214000A)");
#undef Z
}

/* Google Chat reads *bold*, _italic_, ~strike~, `code`, <url|text> and
 * <users/all>, and links bare URLs and host names: none of it forms from
 * a value, while the value reads the same. */
Test(template, googlechat_escaping_leaves_no_markup)
{
#define Z "\xE2\x80\x8B"
    expect("{{s}}", "{\"s\": \"*bold* _it_ ~s~ `c` <users/all> <http://evil.example|click>\"}",
           TEMPLATE_ESCAPE_GCHAT,
           "\xE2\x88\x97"
           "bold"
           "\xE2\x88\x97"
           " "
           "\xCB\x8D"
           "it"
           "\xCB\x8D"
           " "
           "\xE2\x88\xBC"
           "s"
           "\xE2\x88\xBC"
           " "
           "\xCB\x8B"
           "c"
           "\xCB\x8B"
           " <" Z "users/all> <" Z "http:" Z "//evil." Z "example|click>");
    /* A line feed cannot start a list; numbers, times and serials stay. */
    expect("{{s}}|{{t}}", "{\"s\": \"a\\n* item\", \"t\": \"-70.2°C 20:07:00 5214000A 1.5\"}",
           TEMPLATE_ESCAPE_GCHAT, "a \xE2\x88\x97 item|-70.2°C 20:07:00 5214000A 1.5");
    /* The template's own markup is the author's. */
    expect("*{{s}}* <https://x|{{s}}>", "{\"s\": \"Freezer\"}", TEMPLATE_ESCAPE_GCHAT,
           "*Freezer* <https://x|Freezer>");
#undef Z
}

/* Chatwork's notation is tags in brackets and emoticons: none forms from a
 * value. */
Test(template, chatwork_escaping_leaves_no_tags)
{
#define Z "\xE2\x80\x8B"
    expect("{{s}}", "{\"s\": \"[toall][To:123][info][title]x[/title][/info][code]c[/code]\"}",
           TEMPLATE_ESCAPE_CHATWORK,
           "[" Z "toall][" Z "To:123][" Z "info][" Z "title]x[" Z "/title][" Z "/info][" Z
           "code]c[" Z "/code]");
    /* Emoticons and links. */
    expect("{{s}}", "{\"s\": \":) (y) 8-) ;) http://evil.example\"}", TEMPLATE_ESCAPE_CHATWORK,
           ":" Z Z ") (" Z "y" Z ") 8-" Z ") ;" Z Z ") http:" Z "//evil." Z "example");
    /* Times, values and line ends: a value stays on its line. */
    expect("{{s}}", "{\"s\": \"20:07:00 -70.2°C\\nnext\"}", TEMPLATE_ESCAPE_CHATWORK,
           "20:07:00 -70.2°C next");
    expect("[info]{{s}}[/info]", "{\"s\": \"ok\"}", TEMPLATE_ESCAPE_CHATWORK, "[info]ok[/info]");
#undef Z
}

Test(template, values_interpolate_as_text)
{
    expect("{{i}} {{neg}} {{d}} {{big}} {{whole}} {{t}} {{f}} {{n}} {{missing}}|",
           "{\"i\": 1795000000, \"neg\": -540, \"d\": 0.1, \"big\": 1e21, \"whole\": 100.0, "
           "\"t\": true, \"f\": false, \"n\": null}",
           TEMPLATE_ESCAPE_HTML, "1795000000 -540 0.1 1e+21 100 true false  |");
    expect("{{{o}}} {{{l}}}", "{\"o\": {\"a\": [1, \"x/y\"]}, \"l\": []}", TEMPLATE_ESCAPE_NONE,
           "{\"a\":[1,\"x/y\"]} []");
}

Test(template, truthiness_is_javascripts)
{
    expect("{{#a}}A{{/a}}{{#b}}B{{/b}}{{#c}}C{{/c}}{{#d}}D{{/d}}{{#e}}E{{/e}}{{#f}}F{{/f}}"
           "{{#g}}G{{/g}}{{#h}}H{{/h}}",
           "{\"a\": \"\", \"b\": 0, \"c\": 0.0, \"d\": [], \"e\": {}, \"f\": \"0\", \"g\": 2, "
           "\"h\": null}",
           TEMPLATE_ESCAPE_HTML, "EFG");
}

Test(template, digits_after_a_dot_index_a_list)
{
    const char *data = "{\"events\": [{\"name\": \"A\"}, {\"name\": \"B\"}], \"one\": [1]}";
    expect("{{events.1.name}} {{events.0.name}} {{events.2.name}}|"
           "{{#events.1}}many{{/events.1}}{{#one.1}}many{{/one.1}}",
           data, TEMPLATE_ESCAPE_HTML, "B A |many");
}

Test(template, first_and_last_mark_list_ends)
{
    expect("[{{#xs}}{{^@first}} {{/@first}}{{.}}{{^@last}},{{/@last}}{{/xs}}]",
           "{\"xs\": [1, 2, 3]}", TEMPLATE_ESCAPE_JSON, "[1, 2, 3]");
    /* The innermost list counts, also through a section that is not a list. */
    expect("{{#xs}}{{#o}}{{#@last}}L{{/@last}}{{/o}}{{#ys}}{{#@last}}l{{/@last}}{{/ys}};{{/xs}}",
           "{\"o\": {}, \"xs\": [{\"ys\": [1, 2]}, {\"ys\": [3]}]}", TEMPLATE_ESCAPE_HTML, "l;Ll;");
    /* Outside a list they are ordinary names. */
    expect("{{@first}}", "{\"@first\": \"x\"}", TEMPLATE_ESCAPE_HTML, "x");
}

/* Compiles `tpl` and expects the error `want`, exactly. */
static void compile_error(const char *tpl, const char *want)
{
    struct template *t = NULL;
    struct err e = {{0}};
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "templates/x.json", &e), -1, "compiled: %s",
                 tpl);
    cr_assert_null(t);
    cr_assert_str_eq(e.msg, want, "template %s", tpl);
}

Test(template, compile_errors_point_at_the_tag)
{
    compile_error("line 1\nline 2\n    {{#a}}\nx\n", "templates/x.json:3:5: unclosed section 'a'");
    compile_error("{{#a}}\n  {{#b}}x{{/a}}\n{{/b}}",
                  "templates/x.json:2:10: closing tag 'a' does not match the open section 'b' "
                  "(opened at 2:3)");
    compile_error("x\n{{/a}}", "templates/x.json:2:1: closing tag 'a' without an open section");
    compile_error("ok {{name\nmore", "templates/x.json:1:4: unclosed tag: '{{' without '}}'");
    compile_error("{{{name}}", "templates/x.json:1:1: unclosed tag: '{{{' without '}}}'");
    compile_error("{{=<% %>=}}\n<%name", "templates/x.json:2:1: unclosed tag: '<%' without '%>'");
    compile_error("a {{ }} b", "templates/x.json:1:3: empty tag name");
    compile_error("{{#}}{{/}}", "templates/x.json:1:1: empty tag name");
    compile_error("{{= <% =}}", "templates/x.json:1:1: bad delimiter change: expected two "
                                "delimiters separated by a space, as in {{=<% %>=}}");
    compile_error("{{=a b c=}}", "templates/x.json:1:1: bad delimiter change: expected two "
                                 "delimiters separated by a space, as in {{=<% %>=}}");
    compile_error("{{first name}}", "templates/x.json:1:1: tag name 'first name' contains "
                                    "whitespace");
    compile_error("{{a..b}}", "templates/x.json:1:1: malformed name 'a..b': an empty part "
                              "between dots");
    compile_error("{{> ../secret}}", "templates/x.json:1:1: partial name '../secret' is not a "
                                     "plain file name");
    compile_error("{{$block}}{{/block}}", "templates/x.json:1:1: '$' tags (template "
                                          "inheritance) are not supported");
    /* Columns count characters, not bytes. */
    compile_error("温度 {{#a}}", "templates/x.json:1:4: unclosed section 'a'");
}

Test(template, nesting_is_capped)
{
    struct buf b;
    buf_init(&b, 0);
    for (int i = 0; i < TEMPLATE_MAX_DEPTH; i++)
        buf_printf(&b, "{{#s%d}}", i);
    for (int i = TEMPLATE_MAX_DEPTH - 1; i >= 0; i--)
        buf_printf(&b, "{{/s%d}}", i);
    struct template *t = NULL;
    struct err e = {{0}};
    cr_assert_eq(template_compile(&t, b.data, b.len, "deep", &e), 0, "%s", e.msg);
    template_free(t);
    buf_reset(&b);
    for (int i = 0; i <= TEMPLATE_MAX_DEPTH; i++)
        buf_printf(&b, "{{#s%d}}", i);
    cr_assert_eq(template_compile(&t, b.data, b.len, "deep", &e), -1);
    cr_assert(strstr(e.msg, "sections nested deeper than 64"), "%s", e.msg);
    buf_free(&b);
}

Test(template, output_over_the_cap_fails_and_leaves_the_buffer)
{
    struct template *t = NULL;
    struct err e = {{0}};
    struct buf out;
    struct json_object *ctx = parse("{\"xs\": [\"0123456789\", \"0123456789\", \"0123456789\"]}");
    const char *tpl = "{{#xs}}{{.}}{{/xs}}";
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "t", &e), 0);
    buf_init(&out, 34);
    buf_puts(&out, "head:");
    cr_assert_eq(template_render(&out, t, ctx, TEMPLATE_ESCAPE_HTML, NULL, NULL, &e), -1);
    cr_assert_str_eq(e.msg, "output larger than 34 bytes");
    cr_assert_str_eq(buf_str(&out), "head:");
    out.limit = 35;
    cr_assert_eq(template_render(&out, t, ctx, TEMPLATE_ESCAPE_HTML, NULL, NULL, &e), 0, "%s",
                 e.msg);
    cr_assert_eq(out.len, 35);
    template_free(t);
    buf_free(&out);
    json_object_put(ctx);
}

/* Partials from a NULL-terminated list of name, text pairs. */
static int list_partial(void *ud, const char *name, char **text_out, char **origin_out)
{
    const char *const *pairs = ud;
    for (size_t i = 0; pairs[i]; i += 2)
        if (strcmp(pairs[i], name) == 0) {
            *text_out = xstrdup(pairs[i + 1]);
            *origin_out = xasprintf("partials/%s", name);
            return 0;
        }
    return -1;
}

/* Renders `tpl` against `ctx` (taken) with the partials of `pairs`. */
static int render_ctx(struct buf *out, const char *tpl, struct json_object *ctx, const char **pairs,
                      struct err *e)
{
    struct template *t = NULL;
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "main.txt", e), 0, "%s", e->msg);
    int rc = template_render(out, t, ctx, TEMPLATE_ESCAPE_NONE, list_partial, pairs, e);
    template_free(t);
    json_object_put(ctx);
    return rc;
}

static int render_with(struct buf *out, const char *tpl, const char *data, const char **pairs,
                       struct err *e)
{
    return render_ctx(out, tpl, parse(data), pairs, e);
}

Test(template, a_missing_partial_renders_nothing)
{
    const char *pairs[] = {"there", "[{{x}}]", NULL};
    struct err e = {{0}};
    struct buf out;
    buf_init(&out, 0);
    cr_assert_eq(render_with(&out, "a{{>nowhere}}b{{>there}}c", "{\"x\": 1}", pairs, &e), 0);
    cr_assert_str_eq(buf_str(&out), "ab[1]c");
    buf_free(&out);
}

Test(template, endless_partial_recursion_is_stopped)
{
    /* Each level descends one step into data that never ends: the
     * partial calls itself for as long as `n` is truthy. */
    const char *pairs[] = {"loop", "{{#n}}.{{>loop}}{{/n}}", NULL};
    struct err e = {{0}};
    struct buf out;
    buf_init(&out, 0);
    cr_assert_eq(render_with(&out, "{{>loop}}", "{\"n\": true}", pairs, &e), -1);
    cr_assert_str_eq(e.msg, "partials/loop:1:8: partials nested deeper than 32 ('loop' "
                            "includes itself without end?)");
    cr_assert_eq(out.len, 0);
    /* Thirty-two levels are fine: {"n": {"n": ... {"n": false}}} with 31
     * truthy n on the way down. */
    struct json_object *ctx = json_object_new_object();
    json_object_object_add(ctx, "n", json_object_new_boolean(0));
    for (int i = 0; i < 31; i++) {
        struct json_object *outer = json_object_new_object();
        json_object_object_add(outer, "n", ctx);
        ctx = outer;
    }
    cr_assert_eq(render_ctx(&out, "{{>loop}}", ctx, pairs, &e), 0, "%s", e.msg);
    cr_assert_eq(out.len, 31);
    buf_free(&out);
}

Test(template, a_partial_that_does_not_compile_is_named)
{
    const char *pairs[] = {"bad", "ok\n  {{#open}}", NULL};
    struct err e = {{0}};
    struct buf out;
    buf_init(&out, 0);
    cr_assert_eq(render_with(&out, "x\n  {{>bad}}\n", "{}", pairs, &e), -1);
    /* The position is that of the partial as written, not as indented. */
    cr_assert_str_eq(e.msg, "partials/bad:2:3: unclosed section 'open' (partial 'bad' "
                            "included at main.txt:2:3)");
    buf_free(&out);
}

Test(template, indentation_cannot_blow_a_partial_up)
{
    /* 2000 lines indented by 600 spaces: 1.2 MB. */
    struct buf lines, tpl;
    buf_init(&lines, 0);
    buf_init(&tpl, 0);
    for (int i = 0; i < 2000; i++)
        buf_puts(&lines, "x\n");
    buf_printf(&tpl, "%600s{{>many}}\n", "");
    const char *pairs[] = {"many", lines.data, NULL};
    struct err e = {{0}};
    struct buf out;
    buf_init(&out, 0);
    cr_assert_eq(render_with(&out, tpl.data, "{}", pairs, &e), -1);
    cr_assert_str_eq(e.msg, "main.txt:1:601: partial 'many' is larger than 1048576 bytes once "
                            "indented");
    /* 100 spaces are fine. */
    buf_reset(&tpl);
    buf_printf(&tpl, "%100s{{>many}}\n", "");
    cr_assert_eq(render_with(&out, tpl.data, "{}", pairs, &e), 0, "%s", e.msg);
    cr_assert_eq(out.len, 2000 * 102);
    buf_free(&lines);
    buf_free(&tpl);
    buf_free(&out);
}

Test(template, work_is_capped)
{
    /* 100^4 iterations with no output. */
    struct buf data;
    buf_init(&data, 0);
    buf_puts(&data, "{\"l\": [");
    for (int i = 0; i < 100; i++)
        buf_printf(&data, "%s0", i ? "," : "");
    buf_puts(&data, "]}");
    const char *pairs[] = {NULL};
    struct err e = {{0}};
    struct buf out;
    buf_init(&out, 0);
    cr_assert_eq(render_with(&out, "{{#l}}{{#l}}{{#l}}{{#l}}{{x}}{{/l}}{{/l}}{{/l}}{{/l}}",
                             data.data, pairs, &e),
                 -1);
    cr_assert(strstr(e.msg, "rendering takes more than 1000000 steps"), "%s", e.msg);
    buf_free(&data);
    buf_free(&out);
}

static int note_partial(void *ud, const char *name, unsigned line, unsigned col)
{
    buf_printf(ud, "%s@%u:%u ", name, line, col);
    return strcmp(name, "stop") == 0 ? 7 : 0;
}

Test(template, each_partial_lists_partial_tags)
{
    const char *tpl = "{{>a}}{{#s}}{{^t}}\n  {{>b}}\n{{/t}}{{/s}}{{>a}}";
    struct template *t = NULL;
    struct err e = {{0}};
    struct buf seen;
    buf_init(&seen, 0);
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "t", &e), 0);
    cr_assert_eq(template_each_partial(t, note_partial, &seen), 0);
    cr_assert_str_eq(buf_str(&seen), "a@1:1 b@2:3 a@3:13 ");
    cr_assert_str_eq(template_origin(t), "t");
    template_free(t);
    /* A non-zero answer stops the walk. */
    buf_reset(&seen);
    tpl = "{{>a}}{{#s}}{{>stop}}{{/s}}{{>b}}";
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "t", &e), 0);
    cr_assert_eq(template_each_partial(t, note_partial, &seen), 7);
    cr_assert_str_eq(buf_str(&seen), "a@1:1 stop@1:13 ");
    template_free(t);
    buf_free(&seen);
}

Test(template, escape_follows_the_file_name)
{
    cr_assert_eq(template_escape_for("templates/slack.json"), TEMPLATE_ESCAPE_JSON);
    cr_assert_eq(template_escape_for("email.html"), TEMPLATE_ESCAPE_HTML);
    cr_assert_eq(template_escape_for("EMAIL.HTM"), TEMPLATE_ESCAPE_HTML);
    cr_assert_eq(template_escape_for("email-subject.txt"), TEMPLATE_ESCAPE_TEXT);
    cr_assert_eq(template_escape_for("notes.md"), TEMPLATE_ESCAPE_NONE);
    cr_assert_eq(template_escape_for(".json"), TEMPLATE_ESCAPE_NONE);
    cr_assert_eq(template_escape_for(NULL), TEMPLATE_ESCAPE_NONE);
}

Test(template, compiled_once_rendered_many_times)
{
    const char *tpl = "{{#events}}{{name}};{{/events}}";
    struct template *t = NULL;
    struct err e = {{0}};
    cr_assert_eq(template_compile(&t, tpl, strlen(tpl), "t", &e), 0);
    for (int i = 0; i < 3; i++) {
        struct buf out;
        char *data = xasprintf("{\"events\": [{\"name\": \"n%d\"}]}", i);
        struct json_object *ctx = parse(data);
        char *want = xasprintf("n%d;", i);
        buf_init(&out, 0);
        cr_assert_eq(template_render(&out, t, ctx, TEMPLATE_ESCAPE_HTML, NULL, NULL, &e), 0);
        cr_assert_str_eq(buf_str(&out), want);
        buf_free(&out);
        free(want);
        free(data);
        json_object_put(ctx);
    }
    template_free(t);
}
