/* The parser, synopsis and help of option tables (opt.h): one reading of
 * a command line for wsrelay's own options and every command's. */
#include "cmd/opt.h"

#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void found_add(struct opt_args *a, const struct opt_spec *spec, const char *value)
{
    a->found = xreallocarray(a->found, a->n_found + 1, sizeof *a->found);
    a->found[a->n_found++] = (struct opt_found){.spec = spec, .value = value};
}

/* The row whose long name is `name` (its first `len` bytes), or the one
 * row whose name starts so; NULL (said) for none or several. */
static const struct opt_spec *find_long(const struct opt_spec *const *tables, const char *name,
                                        size_t len, struct err *e)
{
    const struct opt_spec *prefix = NULL;
    size_t n_prefix = 0;
    for (size_t t = 0; tables[t]; t++)
        for (const struct opt_spec *s = tables[t]; s->id; s++) {
            if (!s->name || strncmp(s->name, name, len) != 0)
                continue;
            if (strlen(s->name) == len)
                return s;
            prefix = s;
            n_prefix++;
        }
    if (n_prefix == 1)
        return prefix;
    err_set(e, "%s option '--%.*s'", n_prefix ? "ambiguous" : "unknown", (int)len, name);
    return NULL;
}

static const struct opt_spec *find_letter(const struct opt_spec *const *tables, char letter,
                                          struct err *e)
{
    for (size_t t = 0; tables[t]; t++)
        for (const struct opt_spec *s = tables[t]; s->id; s++)
            if (s->letter && s->letter == letter)
                return s;
    err_set(e, "unknown option '-%c'", letter);
    return NULL;
}

/* Reads the long option argv[*i] ("--name" or "--name=VALUE"), and its
 * value from the next argument when it needs one. */
static int read_long(struct opt_args *out, const struct opt_spec *const *tables, int argc,
                     char **argv, int *i, struct err *e)
{
    const char *name = argv[*i] + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct opt_spec *s = find_long(tables, name, len, e);
    if (!s)
        return -1;
    if (!s->arg) {
        if (eq)
            return err_set(e, "option '--%s' takes no value", s->name);
        found_add(out, s, NULL);
    } else if (eq) {
        found_add(out, s, eq + 1);
    } else if (*i + 1 < argc) {
        found_add(out, s, argv[++*i]);
    } else {
        return err_set(e, "option '--%s' needs a value (%s)", s->name, s->arg);
    }
    return 0;
}

/* Reads the letters of argv[*i] ("-vq", "-cFILE", "-c FILE"). */
static int read_letters(struct opt_args *out, const struct opt_spec *const *tables, int argc,
                        char **argv, int *i, struct err *e)
{
    for (const char *p = argv[*i] + 1; *p; p++) {
        const struct opt_spec *s = find_letter(tables, *p, e);
        if (!s)
            return -1;
        if (!s->arg) {
            found_add(out, s, NULL);
        } else if (p[1]) {
            found_add(out, s, p + 1);
            break;
        } else if (*i + 1 < argc) {
            found_add(out, s, argv[++*i]);
            break;
        } else {
            return err_set(e, "option '-%c' needs a value (%s)", s->letter, s->arg);
        }
    }
    return 0;
}

int opt_parse(struct opt_args *out, const struct opt_spec *const *tables, int argc, char **argv,
              enum opt_mode mode, struct err *e)
{
    int rc = -1;
    *out = (struct opt_args){.operands = xcalloc((size_t)argc + 1, sizeof *out->operands)};
    bool options = true;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (options && strcmp(a, "--") == 0) {
            options = false;
        } else if (options && a[0] == '-' && a[1] == '-') {
            if (read_long(out, tables, argc, argv, &i, e) < 0)
                goto out;
        } else if (options && a[0] == '-' && a[1]) {
            if (read_letters(out, tables, argc, argv, &i, e) < 0)
                goto out;
        } else {
            out->operands[out->n_operands++] = argv[i];
            if (mode == OPT_TO_FIRST)
                options = false;
        }
    }
    rc = 0;
out:
    return rc;
}

void opt_args_free(struct opt_args *a)
{
    if (!a)
        return;
    free(a->found);
    free(a->operands);
    *a = (struct opt_args){0};
}

bool opt_in(const struct opt_spec *table, const struct opt_spec *spec)
{
    for (const struct opt_spec *s = table; s->id; s++)
        if (s == spec)
            return true;
    return false;
}

/* "--name ARG", "-x ARG", or without the ARG. */
static void put_option(struct buf *out, const struct opt_spec *s)
{
    if (s->name)
        buf_printf(out, "--%s", s->name);
    else
        buf_printf(out, "-%c", s->letter);
    if (s->arg)
        buf_printf(out, " %s", s->arg);
}

/* Ends the group that row `group` opened, then writes `after`. */
static void close_group(struct buf *out, const struct opt_spec *group, const char *after)
{
    if (!(group->usage & OPT_MUST))
        buf_puts(out, "]");
    if (group->usage & OPT_MANY)
        buf_puts(out, "...");
    buf_puts(out, after);
}

void opt_synopsis(struct buf *out, const struct opt_spec *table)
{
    const struct opt_spec *group = NULL; /* the row that opened the group being written */
    for (const struct opt_spec *s = table; s->id; s++) {
        if (group && (s->usage & OPT_OR)) {
            buf_puts(out, " | ");
            put_option(out, s);
        } else if (group && (s->usage & OPT_AND)) {
            buf_puts(out, " ");
            put_option(out, s);
        } else if (group && (s->usage & OPT_UNDER)) {
            buf_puts(out, " [");
            put_option(out, s);
            buf_puts(out, "]");
        } else {
            if (group)
                close_group(out, group, " ");
            if (!(s->usage & OPT_MUST))
                buf_puts(out, "[");
            put_option(out, s);
            group = s;
        }
    }
    if (group)
        close_group(out, group, "");
}

void opt_help(FILE *out, const struct opt_spec *table, int width)
{
    for (const struct opt_spec *s = table; s->id; s++) {
        struct buf label;
        buf_init(&label, 0);
        if (s->letter && s->name)
            buf_printf(&label, "-%c, ", s->letter);
        put_option(&label, s);
        if ((int)label.len < width)
            fprintf(out, "  %-*s%s\n", width, buf_str(&label), s->help);
        else
            fprintf(out, "  %s\n  %-*s%s\n", buf_str(&label), width, "", s->help);
        buf_free(&label);
    }
}
