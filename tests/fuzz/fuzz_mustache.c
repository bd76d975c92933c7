/* Fuzzes the template compiler and renderer: any text either compiles or
 * fails with "ORIGIN:LINE:COL: ..."; a template that compiles renders in
 * every escaping against a context of lists, objects and awkward strings,
 * with partials that include the input itself, and either succeeds or
 * fails leaving the output as it was. The same bytes as a value must
 * come out of JSON escaping as a JSON string that reads back as them, and
 * out of text escaping without a control character. */
#include "fuzz.h"
#include "mustache.h"
#include "util/xalloc.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char context_json[] =
    "{\"receiver\": \"on-call\", \"count\": 2, \"test\": false, \"n\": null, \"zero\": 0,"
    " \"pi\": 3.14159, \"empty\": \"\", \"obj\": {\"a\": {\"b\": [1, 2.5, \"c\"]}},"
    " \"events\": [{\"name\": \"冷凍庫 <A> & \\\"B\\\"\", \"text\": \"CH1 "
    "上限値警報\\n\\t\\u0001\","
    " \"is_alarm\": true, \"list\": [[], [null], [{}]]},"
    " {\"name\": \"\", \"serial\": \"5214000A\", \"is_alarm\": false, \"value\": \"-70.2\"}]}";

static struct json_object *context;

/* The input (kept for the partial "self"). */
static const uint8_t *input;
static size_t input_len;

static int partial(void *ud, const char *name, char **text_out, char **origin_out)
{
    (void)ud;
    if (strcmp(name, "self") == 0)
        *text_out = xstrndup((const char *)input, input_len);
    else if (strcmp(name, "p") == 0)
        *text_out = xstrdup("{{#events}}\n  [{{name}}]{{>p2}}\n{{/events}}\n");
    else if (strcmp(name, "p2") == 0)
        *text_out = xstrdup("{{=| |=}}|#list||.||/list|");
    else if (strcmp(name, "broken") == 0)
        *text_out = xstrdup("{{#a}}");
    else
        return -1;
    *origin_out = xasprintf("fuzz-partial:%s", name);
    return 0;
}

/* Whether `s` is UTF-8 (Unicode's Table 3-7: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static bool valid_utf8(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t n;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            n = 2;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        else
            return false;
        if (len - i < n || s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k < n; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
        i += n;
    }
    return true;
}

/* The input as a value: JSON and TEXT escaping keep their promises. */
static void check_escaping(const uint8_t *data, size_t size)
{
    static const char tpl[] = "\"{{s}}\"";
    struct template *t = NULL;
    struct err e;
    struct buf out;
    struct json_object *ctx = json_object_new_object();
    json_object_object_add(ctx, "s", json_object_new_string_len((const char *)data, (int)size));
    if (template_compile(&t, tpl, strlen(tpl), "escape", &e) < 0)
        abort();
    buf_init(&out, 0);
    if (template_render(&out, t, ctx, TEMPLATE_ESCAPE_JSON, NULL, NULL, &e) < 0)
        abort();
    struct json_tokener *tok = json_tokener_new();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    struct json_object *back = json_tokener_parse_ex(tok, buf_str(&out), (int)out.len + 1);
    if (!back || !json_object_is_type(back, json_type_string))
        abort(); /* not a JSON string */
    if (valid_utf8(data, size) && ((size_t)json_object_get_string_len(back) != size ||
                                   memcmp(json_object_get_string(back), data, size) != 0))
        abort(); /* valid UTF-8 must come back unchanged */
    json_object_put(back);
    json_tokener_free(tok);

    buf_reset(&out);
    if (template_render(&out, t, ctx, TEMPLATE_ESCAPE_TEXT, NULL, NULL, &e) < 0)
        abort();
    for (size_t i = 0; i < out.len; i++)
        if ((unsigned char)out.data[i] < 0x20 || out.data[i] == 0x7f)
            abort();
    if (!valid_utf8((const uint8_t *)out.data, out.len))
        abort();

    /* Slack's and Teams' JSON: still one JSON string, and what it holds can
     * start no Slack markup (no '<') and no Markdown link (no "]("). */
    static const enum template_escape chat[] = {TEMPLATE_ESCAPE_SLACK, TEMPLATE_ESCAPE_TEAMS};
    for (size_t m = 0; m < 2; m++) {
        buf_reset(&out);
        if (template_render(&out, t, ctx, chat[m], NULL, NULL, &e) < 0)
            abort();
        tok = json_tokener_new();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        back = json_tokener_parse_ex(tok, buf_str(&out), (int)out.len + 1);
        if (!back || !json_object_is_type(back, json_type_string))
            abort();
        const char *text = json_object_get_string(back);
        if (chat[m] == TEMPLATE_ESCAPE_SLACK ? strchr(text, '<') != NULL
                                             : strstr(text, "](") != NULL)
            abort();
        json_object_put(back);
        json_tokener_free(tok);
    }
    buf_free(&out);
    template_free(t);
    json_object_put(ctx);
}

static int count_partial(void *ud, const char *name, unsigned line, unsigned col)
{
    (void)name;
    if (line == 0 || col == 0)
        abort();
    (*(size_t *)ud)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum template_escape modes[] = {TEMPLATE_ESCAPE_HTML,  TEMPLATE_ESCAPE_JSON,
                                                 TEMPLATE_ESCAPE_NONE,  TEMPLATE_ESCAPE_TEXT,
                                                 TEMPLATE_ESCAPE_SLACK, TEMPLATE_ESCAPE_TEAMS};
    struct template *t = NULL;
    struct err e;
    if (!context && !(context = json_tokener_parse(context_json)))
        abort();
    if (size > 64 * 1024)
        return 0;
    input = data;
    input_len = size;
    check_escaping(data, size);
    if (template_compile(&t, (const char *)data, size, "fuzz", &e) < 0) {
        if (strncmp(e.msg, "fuzz:", 5) != 0)
            abort(); /* every compile error names its place */
        return 0;
    }
    size_t n = 0;
    template_each_partial(t, count_partial, &n);
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        struct buf out;
        buf_init(&out, 256 * 1024);
        buf_puts(&out, "x");
        if (template_render(&out, t, context, modes[i], partial, NULL, &e) < 0 &&
            (out.len != 1 || strcmp(buf_str(&out), "x") != 0 || !*e.msg))
            abort(); /* a failure leaves the output as it was */
        buf_free(&out);
    }
    template_free(t);
    return 0;
}
