/* Message templates: a Mustache renderer over json-c values.
 *
 * The core modules of the Mustache spec (v1.3) are supported: variables
 * ({{x}}, {{{x}}}, {{&x}}, dotted names, {{.}}, lookup through the context
 * stack), sections, inverted sections, comments, partials (with the
 * indentation of a standalone partial tag) and set delimiters, with the
 * spec's standalone-line rules. Lambdas (an optional module) and template
 * inheritance ({{$x}}, {{<x}}) are not supported; the latter is a compile
 * error.
 *
 * What wsrelay adds, all of it outside what the spec defines:
 * - Truthiness is JavaScript's (the spec's `!!data`): missing, null, false,
 *   0, 0.0, "" and [] are falsy; everything else, {} included, is truthy.
 * - A name part after a dot that is all digits indexes a list:
 *   {{events.0.name}}, {{#events.1}}several{{/events.1}}.
 * - Inside a list section, {{#@first}}/{{#@last}} (and their inverted
 *   forms) tell the first and the last element of the innermost list, so
 *   that JSON lists can be written without a trailing comma:
 *   [{{#xs}}{{.}}{{^@last}},{{/@last}}{{/xs}}].
 * - An object or a list interpolates as its compact JSON text.
 * - Errors a spec renderer lets pass are compile errors here: an empty tag
 *   name, a name with whitespace or an empty part ("a..b"), a partial name
 *   that is not a plain file name ("../x", ".x", "a/b"), sections nested
 *   deeper than TEMPLATE_MAX_DEPTH.
 *
 * Values interpolate as: strings unchanged, integers in decimal, decimals
 * in the shortest form that reads back as the same number (1.21, 100),
 * booleans as true/false, null and missing names as nothing. */
#ifndef WSRELAY_MUSTACHE_H
#define WSRELAY_MUSTACHE_H

#include "util/buf.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stddef.h>

#define TEMPLATE_MAX_DEPTH 64         /* sections nested in one template */
#define TEMPLATE_MAX_PARTIAL_DEPTH 32 /* partials nested in one rendering */
#define TEMPLATE_MAX_STEPS 1000000    /* tags and list elements visited in one rendering */
#define TEMPLATE_MAX_PARTIAL_SIZE (1024 * 1024) /* bytes of a partial with its indentation */

/* How {{x}} escapes what it inserts; {{{x}}} and {{&x}} never escape.
 * Every mode but NONE writes valid UTF-8: a byte of a value that is not
 * UTF-8 becomes U+FFFD. */
enum template_escape {
    TEMPLATE_ESCAPE_HTML, /* & < > " ' as &amp; &lt; &gt; &quot; &#39; */
    /* The inside of a JSON string: " and \ escaped, U+0000-U+001F as \n, \t,
     * \uXXXX...; valid UTF-8 unchanged. */
    TEMPLATE_ESCAPE_JSON,
    TEMPLATE_ESCAPE_NONE, /* unchanged */
    /* Plain text for a terminal or a mail (an addition to the spec's
     * modes): control characters (C0, DEL and C1: util/utf8.h) become
     * spaces, so a value can neither move a cursor nor start a line or a
     * mail header; everything else unchanged. */
    TEMPLATE_ESCAPE_TEXT,
    /* The inside of a JSON string of a Slack message: first & < > as
     * &amp; &lt; &gt; (Slack's own escapes, which it shows as the
     * characters), so that no value can mention a channel or a person or
     * hide a link; then as JSON. */
    TEMPLATE_ESCAPE_SLACK,
    /* The inside of a JSON string of a Teams Adaptive Card, whose
     * TextBlocks and Facts Teams reads as Markdown: first the value's
     * Markdown made inert (backslash escapes for \ * _ ~ `, a zero-width
     * space after ']', before a line that would start a list, a quote or a
     * heading, and between the braces of "{{"), then as JSON. */
    TEMPLATE_ESCAPE_TEAMS,
    /* The text of a Google Chat message, which reads *bold*, _italic_,
     * ~strike~, `code`, <url|text> and <users/all>, and links bare URLs
     * and host names: as TEXT, then '*', '_', '~' and '`' as look-alikes
     * that mark nothing up (U+2217, U+02CD, U+223C, U+02CB), and a
     * zero-width space after each '<', after the ':' of "://" and after a
     * '.' that a letter follows, so that nothing forms a link, a mention
     * or a format. Not JSON: the notifier puts the text in its JSON. */
    TEMPLATE_ESCAPE_GCHAT,
    /* The body of a Chatwork message, whose notation is tags in brackets
     * ([To:123], [toall], [info], [code], ...) and emoticons (:) (y)
     * 8-)): as TEXT, then a zero-width space after each '[' and '(',
     * before each ')', after a ':' or ';' that neither a digit nor a blank
     * follows, and after a '.' that a letter follows (links), so that no
     * tag, emoticon or link forms. Not form-encoded: the notifier does. */
    TEMPLATE_ESCAPE_CHATWORK,
};

/* A compiled template: immutable, can be rendered any number of times. */
struct template;

/* Compiles `text` (`len` bytes, NUL bytes allowed); `origin` names it in
 * errors ("templates/slack.json", "builtin:slack.json"). On success *out
 * belongs to the caller (template_free). Fails with
 * "ORIGIN:LINE:COL: message" (LINE and COL from 1, COL in characters) for
 * an unclosed tag, an unclosed section (pointing at its opening tag), a
 * closing tag that does not match the open section (naming both and where
 * the open one began), a bad delimiter change, an empty or malformed
 * name, an unsupported tag or nesting deeper than TEMPLATE_MAX_DEPTH. */
int template_compile(struct template **out, const char *text, size_t len, const char *origin,
                     struct err *e);

/* The `origin` given to template_compile; owned by `t`. */
const char *template_origin(const struct template *t);

/* Looks a partial up by name. Returns 0 with *text_out (a NUL-terminated
 * string) and *origin_out (NULL, or the name for errors: a path) that the
 * caller frees; -1 when there is no such partial, which renders as nothing
 * (as the spec says). */
typedef int (*template_partial_fn)(void *ud, const char *name, char **text_out, char **origin_out);

/* Appends the rendering of `t` against `ctx` (any json-c value; NULL is
 * an empty context) to `out`, whose cap (out->limit) applies. `partials`
 * may be NULL (every partial is then missing). Fails, leaving `out` as it
 * was, on a partial that does not compile (its ORIGIN:LINE:COL in the
 * message), output over the cap, partials nested deeper than
 * TEMPLATE_MAX_PARTIAL_DEPTH (a recursive partial whose data never ends),
 * more than TEMPLATE_MAX_STEPS steps (nested lists that multiply), or an
 * indented partial larger than TEMPLATE_MAX_PARTIAL_SIZE. A partial is
 * looked up and compiled once per rendering (and indentation). Give `out`
 * a limit: with none, a template can repeat a large value a million
 * times. */
int template_render(struct buf *out, const struct template *t, const struct json_object *ctx,
                    enum template_escape esc, template_partial_fn partials, void *ud,
                    struct err *e);

/* Calls `fn` with the name and position (LINE, COL as in errors) of every
 * partial tag of `t`, in order (a name used twice comes twice), until `fn`
 * returns non-zero, which is returned; 0 otherwise. Partials of partials
 * are not visited: that needs a lookup (templates_check does it). */
int template_each_partial(const struct template *t,
                          int (*fn)(void *ud, const char *name, unsigned line, unsigned col),
                          void *ud);

void template_free(struct template *t);

/* The escaping for an output file name: ".json" is JSON, ".html" and ".htm"
 * HTML, ".txt" TEXT, anything else NONE (case ignored). */
enum template_escape template_escape_for(const char *filename);

#endif
