/* Tests of cmd/opt.c: a command line read against option tables the way
 * getopt_long reads it (permuted, "--name=VALUE", unique prefixes, letters
 * together, "--"), its mistakes named, and the synopsis and help lines
 * that the tables' rows make. */
#include "cmd/opt.h"
#include "util/buf.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(opt, .timeout = 20);

enum { NOW = 1, DRY, LOOK, LOOP, INTERVAL, CONF, DEBUG, QUIET };

static const struct opt_spec cmd[] = {
    {NOW, "now", 0, "UNIXTIME", 0, "the clock"},
    {DRY, "dry-run", 0, NULL, 0, "send nothing"},
    {LOOK, "look", 0, "SERIAL", OPT_MANY, "look at it"},
    {LOOP, "loop", 0, NULL, 0, "every minute"},
    {INTERVAL, "interval", 0, "DURATION", OPT_UNDER, "instead of a minute"},
    {0},
};

static const struct opt_spec globals[] = {
    {CONF, NULL, 'c', "FILE", 0, "configuration file"},
    {DEBUG, NULL, 'v', NULL, 0, "debug lines"},
    {QUIET, NULL, 'q', NULL, OPT_OR, "warnings only"},
    {0},
};

static const struct opt_spec *const both[] = {cmd, globals, NULL};

/* Parses the NULL-terminated words; the found options written as
 * "id=value" (or "id") separated by spaces, then "|" and the operands. */
static char *parse(int *rc, enum opt_mode mode, struct err *e, ...)
{
    char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, e);
    for (const char *w; (w = va_arg(ap, const char *));)
        argv[argc++] = (char *)w;
    va_end(ap);
    struct opt_args a;
    *rc = opt_parse(&a, both, argc, argv, mode, e);
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < a.n_found; i++)
        buf_printf(&b, "%s%d%s%s", i ? " " : "", a.found[i].spec->id, a.found[i].value ? "=" : "",
                   a.found[i].value ? a.found[i].value : "");
    buf_puts(&b, " |");
    for (size_t i = 0; i < a.n_operands; i++)
        buf_printf(&b, " %s", a.operands[i]);
    opt_args_free(&a);
    return buf_steal(&b);
}

#define OK(want, mode, ...)                                                                        \
    do {                                                                                           \
        int rc_;                                                                                   \
        struct err e_ = {{0}};                                                                     \
        char *got_ = parse(&rc_, mode, &e_, __VA_ARGS__, NULL);                                    \
        cr_expect_eq(rc_, 0, "%s", e_.msg);                                                        \
        cr_expect_str_eq(got_, want);                                                              \
        free(got_);                                                                                \
    } while (0)

#define BAD(want, ...)                                                                             \
    do {                                                                                           \
        int rc_;                                                                                   \
        struct err e_ = {{0}};                                                                     \
        char *got_ = parse(&rc_, OPT_PERMUTE, &e_, __VA_ARGS__, NULL);                             \
        cr_expect_eq(rc_, -1, "%s", got_);                                                         \
        cr_expect_str_eq(e_.msg, want);                                                            \
        free(got_);                                                                                \
    } while (0)

Test(opt, reads_options_and_operands_in_any_order)
{
    OK("1=5 2 3=A 3=B | x y", OPT_PERMUTE, "--now", "5", "x", "--dry-run", "--look=A", "y",
       "--look", "B");
    OK("6=f.yaml 7 8 | x", OPT_PERMUTE, "-c", "f.yaml", "x", "-vq");
    OK("6=f.yaml 8 | x", OPT_PERMUTE, "x", "-cf.yaml", "-q");
}

Test(opt, a_unique_prefix_names_its_option)
{
    OK("2 5=1m 4 |", OPT_PERMUTE, "--dry", "--int", "1m", "--loop");
    BAD("ambiguous option '--lo'", "--lo");
}

Test(opt, double_dash_ends_the_options_and_a_lone_dash_is_an_operand)
{
    OK("2 | - --now -v", OPT_PERMUTE, "--dry-run", "-", "--", "--now", "-v");
}

Test(opt, to_first_stops_at_the_first_operand)
{
    OK("7 6=f | run --now 5 -q", OPT_TO_FIRST, "-v", "-c", "f", "run", "--now", "5", "-q");
}

Test(opt, a_value_that_looks_like_an_option_is_a_value)
{
    OK("3=--loop 6=-v |", OPT_PERMUTE, "--look", "--loop", "-c", "-v");
}

Test(opt, mistakes_are_named)
{
    BAD("unknown option '--verbose'", "--verbose");
    BAD("unknown option '-x'", "-vx");
    BAD("option '--now' needs a value (UNIXTIME)", "--now");
    BAD("option '-c' needs a value (FILE)", "-c");
    BAD("option '--dry-run' takes no value", "--dry-run=yes");
}

Test(opt, what_was_found_before_a_mistake_is_kept)
{
    int rc;
    struct err e;
    char *got = parse(&rc, OPT_PERMUTE, &e, "-v", "--bad", "--loop", NULL);
    cr_expect_eq(rc, -1);
    cr_expect_str_eq(got, "7 |");
    free(got);
}

static char *synopsis(const struct opt_spec *t)
{
    struct buf b;
    buf_init(&b, 0);
    opt_synopsis(&b, t);
    return buf_steal(&b);
}

Test(opt, the_synopsis_groups_rows_as_their_flags_say)
{
    char *s = synopsis(cmd);
    cr_expect_str_eq(s, "[--now UNIXTIME] [--dry-run] [--look SERIAL]... [--loop [--interval "
                        "DURATION]]");
    free(s);
    s = synopsis(globals);
    cr_expect_str_eq(s, "[-c FILE] [-v | -q]");
    free(s);
    static const struct opt_spec period[] = {
        {1, "template", 0, "FILE", OPT_MUST, ""},
        {2, "since", 0, "DURATION", 0, ""},
        {3, "from", 0, "TIME", OPT_OR, ""},
        {4, "to", 0, "TIME", OPT_AND, ""},
        {0},
    };
    s = synopsis(period);
    cr_expect_str_eq(s, "--template FILE [--since DURATION | --from TIME --to TIME]");
    free(s);
    static const struct opt_spec none[] = {{0}};
    s = synopsis(none);
    cr_expect_str_eq(s, "");
    free(s);
}

Test(opt, help_lines_pad_the_names_and_wrap_a_long_one)
{
    static const struct opt_spec t[] = {
        {1, "help", 'h', NULL, 0, "show this help"},
        {2, "escape", 0, "html|json|text", 0, "how values are escaped"},
        {3, NULL, 'c', "FILE", 0, "configuration file"},
        {0},
    };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    opt_help(f, t, 13);
    fclose(f);
    cr_expect_str_eq(text, "  -h, --help   show this help\n"
                           "  --escape html|json|text\n"
                           "               how values are escaped\n"
                           "  -c FILE      configuration file\n");
    free(text);
}
