/* Where a receiver's template comes from, and what it renders.
 *
 * A template is looked up in this order: the path the receiver names
 * (`template:`), then the file of that name in the configured templates
 * directory (`templates:`), then the copy built into the binary from the
 * source tree's templates/ directory. Partials ({{> name}}) are looked up
 * in the directory, then among the built-in files. templates/README.md
 * documents the context (templates_context) and the files. */
#ifndef WSRELAY_TEMPLATES_H
#define WSRELAY_TEMPLATES_H

#include "mustache.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define TEMPLATES_MAX_SIZE (1024 * 1024) /* bytes in a template or partial file */

/* A file of templates/, embedded by the build (scripts/embed-templates.cmake
 * writes the table). */
struct templates_file {
    const char *name; /* "slack.json" */
    const char *data; /* NUL-terminated */
    size_t len;       /* without the NUL */
};

extern const struct templates_file templates_builtin_files[];
extern const size_t templates_builtin_count;

/* The built-in template `name` ("slack.json"), NUL-terminated and static,
 * with its length in *len (when `len` is not NULL); NULL when there is none. */
const char *templates_builtin(const char *name, size_t *len);

/* The escaping of {{x}} in the template of the role `name` ("slack.json"),
 * whatever file the receiver uses for it: SLACK for "slack.json", TEAMS
 * for "teams.json" (their services read markup in the text: a value
 * must not mention anyone, hide a link or change the look), else the one
 * of the name's extension (template_escape_for). A user's own template
 * gets the same protection as the built-in one. */
enum template_escape templates_escape(const char *name);

/* Compiles the template for `name` ("slack.json"): `explicit_path` when
 * not NULL, else DIR/NAME when `dir` is not NULL and that file exists, else
 * the built-in one. The template's origin (in its errors) is the path
 * read, or "builtin:NAME". Relative paths are used as given. On success
 * *out belongs to the caller (template_free). Fails when the file cannot be
 * read ("PATH: reason"), is larger than TEMPLATES_MAX_SIZE, does not
 * compile ("ORIGIN:LINE:COL: ..."), or when nothing is found. */
int templates_load(struct template **out, const char *explicit_path, const char *dir,
                   const char *name, struct err *e);

/* A template_partial_fn: `ud` is the templates directory (a `char *`, or
 * NULL for the built-in files only). Looks `name` up as DIR/NAME, then
 * among the built-in files; the origin is the path or "builtin:NAME". A
 * name that is not a plain file name (a '/', a leading '.') is never
 * found; neither is a file that exists but cannot be read (a warning is
 * logged; templates_check reports it). */
int templates_partial(void *ud, const char *name, char **text_out, char **origin_out);

/* For `wsrelay check`: every partial that `t` uses, and every partial that
 * those use, must exist (as templates_partial finds them, with `dir`) and
 * compile. A missing partial renders as nothing, which is what the spec
 * wants and rarely what the author meant. Fails with
 * "ORIGIN:LINE:COL: partial 'NAME' not found (looked in DIR and the
 * built-in templates)" or the partial's own error. */
int templates_check(const struct template *t, const char *dir, struct err *e);

/* The context of a message: {"receiver": RECEIVER, "count": N, "events":
 * EVENTS, "now_utc": "YYYY-MM-DDTHH:MM:SSZ", "test": TEST, "version":
 * WSRELAY_VERSION}, with N the length of `events`. `events` (a JSON array
 * of event objects, taken over) gets in each object that lacks it
 * "via_base": true when the device reports through a base unit other than
 * itself (base_serial differs from serial). Returns a new reference. */
struct json_object *templates_context(const char *receiver, struct json_object *events,
                                      long long now, bool test);

#endif
