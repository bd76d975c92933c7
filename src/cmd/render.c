/* `wsrelay render`: a message template tried on JSON data, printed as a
 * receiver would get it. */
#include "cmd/cmd.h"
#include "run/run.h"
#include "mustache.h"
#include "templates.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/jsonfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RENDER_MAX_DATA (16 * 1024 * 1024)
#define RENDER_MAX_OUTPUT (16 * 1024 * 1024)

enum { OPT_TEMPLATE = 1, OPT_DATA, OPT_PARTIALS, OPT_ESCAPE };

static const struct opt_spec opts[] = {
    {OPT_TEMPLATE, "template", 0, "FILE", OPT_MUST,
     "the template: a file, or builtin:NAME for one built into wsrelay"},
    {OPT_DATA, "data", 0, "FILE.json", OPT_MUST, "the JSON data to render it with"},
    {OPT_PARTIALS, "partials", 0, "DIR", 0, "where its partials ({{> name}}) are"},
    {OPT_ESCAPE, "escape", 0, "html|json|text|none|slack|teams|googlechat|chatwork", 0,
     "how values are escaped (default html)"},
    {0},
};

static int parse_escape(enum template_escape *out, const char *name)
{
    static const struct {
        const char *name;
        enum template_escape esc;
    } table[] = {
        {"html", TEMPLATE_ESCAPE_HTML},        {"json", TEMPLATE_ESCAPE_JSON},
        {"text", TEMPLATE_ESCAPE_TEXT},        {"none", TEMPLATE_ESCAPE_NONE},
        {"slack", TEMPLATE_ESCAPE_SLACK},      {"teams", TEMPLATE_ESCAPE_TEAMS},
        {"googlechat", TEMPLATE_ESCAPE_GCHAT}, {"chatwork", TEMPLATE_ESCAPE_CHATWORK},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) {
            *out = table[i].esc;
            return 0;
        }
    return -1;
}

/* Prints the rendering of a template: FILE, or "builtin:NAME" for a
 * template built into wsrelay. Everything that goes wrong is the
 * template's or the data's: exit 2. */
static int cmd_render(const struct cmd_globals *g, const struct opt_args *a)
{
    const char *template_path = NULL, *data_path = NULL, *partials = NULL;
    enum template_escape esc = TEMPLATE_ESCAPE_HTML;
    struct template *t = NULL;
    struct json_object *data = NULL;
    struct buf out;
    struct err e;
    int rc = RUN_USAGE;
    (void)g;
    buf_init(&out, RENDER_MAX_OUTPUT);
    for (size_t i = 0; i < a->n_found; i++) {
        const char *arg = a->found[i].value;
        switch (a->found[i].spec->id) {
        case OPT_TEMPLATE:
            template_path = arg;
            break;
        case OPT_DATA:
            data_path = arg;
            break;
        case OPT_PARTIALS:
            partials = arg;
            break;
        case OPT_ESCAPE:
            if (parse_escape(&esc, arg) < 0) {
                fprintf(stderr,
                        "wsrelay: render: --escape expects html, json, text, none, "
                        "slack, teams, googlechat or chatwork, got '%s'\n",
                        arg);
                goto out;
            }
            break;
        }
    }
    if (a->n_operands || !template_path || !data_path)
        goto usage;
    if (strncmp(template_path, "builtin:", 8) == 0
            ? templates_load(&t, NULL, NULL, template_path + 8, &e) < 0
            : templates_load(&t, template_path, NULL, NULL, &e) < 0) {
        fprintf(stderr, "wsrelay: %s\n", e.msg);
        goto out;
    }
    /* A missing partial renders as nothing; say so, as `check` would. */
    if (templates_check(t, partials, &e) < 0)
        fprintf(stderr, "wsrelay: warning: %s\n", e.msg);
    if (!(data = jsonfile_read(data_path, RENDER_MAX_DATA, &e))) {
        fprintf(stderr, "wsrelay: %s\n", e.msg);
        goto out;
    }
    if (template_render(&out, t, data, esc, templates_partial, (void *)partials, &e) < 0) {
        fprintf(stderr, "wsrelay: %s\n", e.msg);
        goto out;
    }
    fflush(stdout);
    if (file_write_all(STDOUT_FILENO, buf_str(&out), out.len) < 0) {
        fprintf(stderr, "wsrelay: standard output: %s\n", strerror(errno));
        rc = RUN_FAILED;
        goto out;
    }
    rc = RUN_OK;
    goto out;
usage:
    cmd_usage(stderr, &cmd_render_entry);
out:
    template_free(t);
    json_object_put(data);
    buf_free(&out);
    return rc;
}

const struct cmd_entry cmd_render_entry = {
    "render", "", "try a message template on JSON data", opts, cmd_render,
};
