/* The engine that reads a YAML file into C structs by tables of rows
 * (schema.h): one walker checks a mapping against its rows, and freeing and
 * the key reference come from the same rows. It knows no key of any
 * particular file; config.c holds wsrelay's tables. */
#include "schema.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "util/yamlfile.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#define SECRET_MAX_BYTES (64 * 1024)

#define N(rows) (sizeof(rows) / sizeof((rows)[0]))

/* ---- the document, and where in it the reading is ---- */

struct schema_doc {
    struct yamlfile y;
    char *file;    /* for messages */
    char *dir;     /* relative paths start here */
    struct err *e; /* where messages go: the `e` of the public call under way */
    char key[512]; /* the key path being read: "receivers[1].webhook.url" */
    size_t key_len;
    char **warned; /* secret files already warned about */
    size_t n_warned;
    struct schema_errors *errors; /* schema_collect: every message goes here too */
    bool literal;                 /* SCHEMA_LITERAL: no ${VAR} expansion */
    size_t n_inline;              /* secrets written out in the file, without a ${VAR} */
    char inline_key[512];         /* the key path of the first */
};

int schema_open(struct schema_doc **out, const char *path, size_t max_bytes, unsigned flags,
                struct err *e)
{
    int rc = -1;
    struct schema_doc *d = xcalloc(1, sizeof *d);
    d->file = xstrdup(path);
    d->dir = file_dirname(path);
    d->literal = flags & SCHEMA_LITERAL;
    *out = NULL;
    if (yamlfile_open(&d->y, path, max_bytes, e) < 0)
        goto out;
    *out = d;
    d = NULL;
    rc = 0;
out:
    schema_close(d);
    return rc;
}

void schema_close(struct schema_doc *d)
{
    if (!d)
        return;
    yamlfile_close(&d->y);
    for (size_t i = 0; i < d->n_warned; i++)
        free(d->warned[i]);
    free(d->warned);
    free(d->dir);
    free(d->file);
    free(d);
}

yaml_node_t *schema_root(struct schema_doc *d)
{
    return yaml_document_get_root_node(&d->y.doc);
}

size_t schema_push(struct schema_doc *d, const char *fmt, ...)
{
    size_t old = d->key_len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->key + old, sizeof d->key - old, fmt, ap);
    va_end(ap);
    if (n > 0)
        d->key_len = old + (size_t)n < sizeof d->key ? old + (size_t)n : sizeof d->key - 1;
    return old;
}

size_t schema_push_key(struct schema_doc *d, const char *name)
{
    return schema_push(d, d->key_len ? ".%s" : "%s", name);
}

void schema_pop(struct schema_doc *d, size_t mark)
{
    d->key_len = mark;
    d->key[mark] = '\0';
}

void schema_errors_add(struct schema_errors *list, const char *msg)
{
    if (list->n > SCHEMA_ERRORS_MAX)
        return;
    if (!list->n)
        buf_init(&list->lines, 0);
    buf_printf(&list->lines, "%s\n", msg);
    list->n++;
}

void schema_errors_free(struct schema_errors *list)
{
    if (list && list->n)
        buf_free(&list->lines);
}

void schema_collect(struct schema_doc *d, struct schema_errors *list)
{
    d->errors = list;
}

bool schema_carry_on(const struct schema_doc *d)
{
    return d->errors && d->errors->n <= SCHEMA_ERRORS_MAX;
}

/* "FILE:LINE:COL: KEY: message" in c->e, and in the list of every mistake
 * when there is one; libyaml counts from 0, people from 1. */
static int vfail(struct schema_doc *c, yaml_mark_t at, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static int vfail(struct schema_doc *c, yaml_mark_t at, const char *fmt, va_list ap)
{
    char msg[ERR_MAX];
    struct err line;
    vsnprintf(msg, sizeof msg, fmt, ap);
    err_set(&line, "%s:%zu:%zu: %s%s%s", c->file, at.line + 1, at.column + 1, c->key,
            c->key_len ? ": " : "", msg);
    if (c->errors)
        schema_errors_add(c->errors, line.msg);
    return err_set(c->e, "%s", line.msg);
}

static int fail(struct schema_doc *c, yaml_mark_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct schema_doc *c, yaml_mark_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, at, fmt, ap);
    va_end(ap);
    return -1;
}

int schema_fail(struct schema_doc *d, yaml_mark_t at, struct err *e, const char *fmt, ...)
{
    va_list ap;
    d->e = e;
    va_start(ap, fmt);
    vfail(d, at, fmt, ap);
    va_end(ap);
    return -1;
}

yaml_node_t *schema_node(struct schema_doc *d, int id)
{
    return yaml_document_get_node(&d->y.doc, id);
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

bool schema_is_null(const yaml_node_t *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    for (size_t i = 0; i < N(nulls); i++)
        if (!strcmp(scalar(n), nulls[i]))
            return true;
    return false;
}

const char *schema_describe(const yaml_node_t *n)
{
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    return schema_is_null(n) ? "an empty value" : "a string";
}

/* ---- scalar values: ${VAR}, secrets, paths, numbers ---- */

static bool is_name_start(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

/* ${NAME} becomes the variable's value, $${ a literal ${. An unset
 * variable is named, except inside a secret that holds more than "${NAME}":
 * an inline password may well contain "${", and its message names no part
 * of it. A value that is "${NAME}" and nothing else is a reference, and
 * naming it is what tells the administrator what to set. */
static int expand(struct schema_doc *c, yaml_mark_t at, const char *in, bool secret, char **out,
                  bool *from_env)
{
    *from_env = false;
    if (c->literal) {
        *out = xstrdup(in);
        return 0;
    }
    int rc = -1;
    struct buf b;
    buf_init(&b, 0);
    char *var = NULL;
    const char *p = in;
    while (*p) {
        const char *dollar = strchr(p, '$');
        if (!dollar) {
            buf_puts(&b, p);
            break;
        }
        buf_append(&b, p, (size_t)(dollar - p));
        p = dollar;
        if (!strncmp(p, "$${", 3)) {
            buf_puts(&b, "${");
            p += 3;
        } else if (!strncmp(p, "${", 2)) {
            const char *name = p + 2, *end = name;
            if (is_name_start(*end))
                while (is_name_start(*end) || (*end >= '0' && *end <= '9'))
                    end++;
            if (end == name || *end != '}') {
                fail(c, at,
                     "malformed ${...}: expected ${NAME}, NAME made of letters, digits "
                     "and '_' (write $${ for a literal ${)");
                goto out;
            }
            var = xstrndup(name, (size_t)(end - name));
            const char *value = getenv(var);
            bool whole = name - 2 == in && !end[1];
            if (!value && secret && !whole) {
                fail(c, at,
                     "the value refers to an environment variable that is not set (write $${ "
                     "for a literal ${)");
                goto out;
            }
            if (!value) {
                fail(c, at, "environment variable '%s' is not set", var);
                goto out;
            }
            buf_puts(&b, value);
            *from_env = true;
            free(var);
            var = NULL;
            p = end + 1;
        } else {
            buf_append(&b, p, 1);
            p++;
        }
    }
    *out = buf_steal(&b);
    rc = 0;
out:
    free(var);
    buf_free(&b);
    return rc;
}

static bool is_alnum(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool is_ctl(char ch)
{
    return (unsigned char)ch < 0x20 || ch == 0x7f;
}

static bool is_space(char ch)
{
    return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* A secret is one line of printable text, wherever it comes from: the
 * whitespace at its end (the newline an editor adds, a CRLF, a stray
 * space) is dropped, and what is left may hold no control character, so
 * that it can never split a header or a request line. Returns the length
 * left, or -1 when a control character remains. */
static long secret_trim(const char *v, size_t len)
{
    while (len && is_space(v[len - 1]))
        len--;
    for (size_t i = 0; i < len; i++)
        if (is_ctl(v[i]))
            return -1;
    return (long)len;
}

/* Counts a secret written out in the file, for schema_warn_exposed. */
static void note_inline_secret(struct schema_doc *c)
{
    if (!c->n_inline++)
        snprintf(c->inline_key, sizeof c->inline_key, "%s", c->key);
}

/* The expanded text of a scalar node that should be a string; `secret`: the
 * text is a secret (see expand and secret_trim). A value that takes an
 * environment variable may hold no control character either. */
static int string_of(struct schema_doc *c, yaml_node_t *n, const char *expected, bool secret,
                     char **out)
{
    bool from_env;
    if (n->type != YAML_SCALAR_NODE || schema_is_null(n))
        return fail(c, n->start_mark, "expected %s, got %s", expected, schema_describe(n));
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
        return fail(c, n->start_mark, "the value contains a NUL character");
    if (expand(c, n->start_mark, scalar(n), secret, out, &from_env) < 0)
        return -1;
    long len = (long)strlen(*out);
    if (secret) {
        len = secret_trim(*out, (size_t)len);
        if (len >= 0)
            (*out)[len] = '\0';
        if (!from_env && !c->literal)
            note_inline_secret(c);
    } else if (from_env && secret_trim(*out, (size_t)len) < 0) {
        len = -1;
    }
    if (len < 0) {
        free(*out);
        *out = NULL;
        return fail(c, n->start_mark,
                    "the value must not contain a line break or other control "
                    "character%s",
                    from_env ? " (it comes from an environment variable)" : "");
    }
    return 0;
}

static char *resolve_path(struct schema_doc *c, const char *path)
{
    if (path[0] == '/' || !strcmp(path, "-"))
        return xstrdup(path);
    return xasprintf("%s/%s", c->dir, path);
}

int schema_path(char **out, struct schema_doc *d, yaml_node_t *n, struct err *e)
{
    char *text = NULL;
    d->e = e;
    *out = NULL;
    if (string_of(d, n, "a string", false, &text) < 0)
        return -1;
    if (!*text) {
        free(text);
        return fail(d, n->start_mark, "expected a non-empty string");
    }
    *out = resolve_path(d, text);
    free(text);
    return 0;
}

static void warn_if_readable(struct schema_doc *c, const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0 || !(st.st_mode & (S_IRGRP | S_IROTH)))
        return;
    for (size_t i = 0; i < c->n_warned; i++)
        if (!strcmp(c->warned[i], path))
            return;
    c->warned = xgrowarray(c->warned, c->n_warned, sizeof *c->warned);
    c->warned[c->n_warned++] = xstrdup(path);
    log_warn("secret file %s is readable by group or others; make it mode 0600 (chmod 600 %s)",
             path, path);
}

/* A file that others may read should not hold secrets: warns when it
 * holds some written out and gives "other" any permission. Secrets from
 * *_file keys or ${VAR} are not in the file. */
void schema_warn_exposed(const struct schema_doc *d)
{
    mode_t mode = d->y.mode;
    if (!d->n_inline || !(mode & S_IRWXO))
        return;
    char more[48] = "";
    if (d->n_inline > 1)
        snprintf(more, sizeof more, " and %zu more", d->n_inline - 1);
    log_warn("%s is mode %04o, open to other users, and holds secrets written out in it (%s%s); "
             "chmod 0640 %s (or 0600), or move the secrets to *_file keys, ${VAR} or systemd "
             "credentials",
             d->file, (unsigned)(mode & 07777), d->inline_key, more, d->file);
}

/* The contents of the secret file `name`, less trailing whitespace (see
 * secret_trim). */
static int read_secret(struct schema_doc *c, yaml_mark_t at, const char *name, char **out)
{
    int rc = -1;
    char *path = resolve_path(c, name);
    struct buf b;
    buf_init(&b, SECRET_MAX_BYTES);
    struct err fe;
    if (file_read(&b, path, &fe) < 0) {
        fail(c, at, "cannot read secret file: %s", fe.msg);
        goto out;
    }
    long len = secret_trim(b.data, b.len);
    if (!len) {
        fail(c, at, "secret file %s is empty", path);
        goto out;
    }
    if (len < 0) {
        fail(c, at,
             "secret file %s contains a line break, tab, NUL or other control character "
             "before its end; a secret is one line (whitespace at its end is removed)",
             path);
        goto out;
    }
    warn_if_readable(c, path);
    *out = xstrndup(b.data, (size_t)len);
    rc = 0;
out:
    buf_free(&b);
    free(path);
    return rc;
}

/* "a, b or c" from a NULL-terminated list of words. */
static char *words_text(const char *const *words)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; words[i]; i++)
        buf_printf(&b, "%s%s", i == 0 ? "" : words[i + 1] ? ", " : " or ", words[i]);
    return buf_steal(&b);
}

/* A number as YAML writes a decimal int or float: an optional sign, digits
 * with at most one '.', an optional exponent ("-75", "-75.0", "8.5",
 * "+.5", "1e3"); finite once read. Not hexadecimal, not .inf or .nan. */
static bool number_parse(double *out, const char *text)
{
    const char *p = text;
    size_t digits = 0;
    if (*p == '+' || *p == '-')
        p++;
    for (; *p >= '0' && *p <= '9'; p++)
        digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return false;
    double d = strtod(text, NULL); /* the C locale: wsrelay never calls setlocale */
    if (!isfinite(d))
        return false;
    *out = d;
    return true;
}

/* Stores the expanded text `text` (taken over) for a scalar row. */
static int store_scalar(struct schema_doc *c, const struct key *k, yaml_mark_t at, char *text,
                        void *obj)
{
    int rc = -1;
    char *value = NULL;
    char *field = (char *)obj + k->off;
    if (k->kind == K_DURATION) {
        long seconds;
        if (duration_parse(&seconds, text) < 0) {
            fail(c, at, "expected a duration such as 90s, 30m, 1h");
            goto out;
        }
        if (k->max && (seconds < k->min || seconds > k->max)) {
            char lo[24], hi[24];
            duration_format(lo, sizeof lo, k->min);
            duration_format(hi, sizeof hi, k->max);
            fail(c, at, "expected a duration from %s to %s", lo, hi);
            goto out;
        }
        *(long *)(void *)field = seconds;
        rc = 0;
        goto out;
    }
    if (k->kind == K_BOOL) {
        if (strcmp(text, "true") && strcmp(text, "false")) {
            fail(c, at, "expected true or false");
            goto out;
        }
        *(bool *)(void *)field = !strcmp(text, "true");
        rc = 0;
        goto out;
    }
    if (k->kind == K_INT) {
        char *end;
        errno = 0;
        long n = strtol(text, &end, 10);
        if (*text < '0' || *text > '9' || *end || errno || n < k->min || n > k->max) {
            fail(c, at, "expected a whole number from %ld to %ld", k->min, k->max);
            goto out;
        }
        *(long *)(void *)field = n;
        rc = 0;
        goto out;
    }
    if (k->kind == K_NUMBER) {
        double d;
        if (!number_parse(&d, text)) {
            fail(c, at, "expected a number such as -75, -75.0 or 8.5");
            goto out;
        }
        *(double *)(void *)field = d;
        *(bool *)(void *)((char *)obj + k->count_off) = true;
        rc = 0;
        goto out;
    }
    if (k->kind == K_ENUM) {
        int i = 0;
        while (k->words[i] && strcmp(k->words[i], text))
            i++;
        if (!k->words[i]) {
            char *words = words_text(k->words);
            fail(c, at, "expected %s", words);
            free(words);
            goto out;
        }
        *(int *)(void *)field = i;
        rc = 0;
        goto out;
    }
    if (!*text) {
        fail(c, at, "expected a non-empty %s", k->kind == K_GLOB ? "glob" : "string");
        goto out;
    }
    if (k->kind == K_PATH) {
        value = resolve_path(c, text);
    } else if (k->kind == K_SECRET_FILE) {
        if (read_secret(c, at, text, &value) < 0)
            goto out;
    } else {
        value = text;
        text = NULL;
    }
    struct err problem;
    if (k->check && k->check(value, &problem) < 0) {
        fail(c, at, "%s", problem.msg);
        goto out;
    }
    *(char **)(void *)field = value;
    value = NULL;
    rc = 0;
out:
    free(text);
    free(value);
    return rc;
}

/* ---- lists, headers and mappings ---- */

static int parse_map(struct schema_doc *c, const struct schema *s, yaml_node_t *map, void *obj);

/* One item of a K_GLOBS or K_STRINGS row, passed through the row's check. */
static int add_string(struct schema_doc *c, const struct key *k, yaml_node_t *n, char ***items,
                      size_t *count)
{
    const char *what = k->kind == K_GLOBS ? "glob" : "string";
    char *text = NULL;
    struct err problem;
    char an[32];
    snprintf(an, sizeof an, "a %s", what);
    if (string_of(c, n, an, false, &text) < 0)
        return -1;
    if (!*text) {
        free(text);
        return fail(c, n->start_mark, "expected a non-empty %s", what);
    }
    if (k->check && k->check(text, &problem) < 0) {
        free(text);
        return fail(c, n->start_mark, "%s", problem.msg);
    }
    *items = xgrowarray(*items, *count, sizeof **items);
    (*items)[(*count)++] = text;
    return 0;
}

/* One string or a list of strings; for K_STRINGS the list must not be
 * empty (an empty K_GLOBS list may mean "all", unless F_NOT_EMPTY). */
static int parse_strings(struct schema_doc *c, const struct key *k, yaml_node_t *n, void *obj)
{
    const char *what = k->kind == K_GLOBS ? "glob" : "string";
    char ***items = (char ***)(void *)((char *)obj + k->off);
    size_t *count = (size_t *)(void *)((char *)obj + k->count_off);
    if (n->type == YAML_SCALAR_NODE && !schema_is_null(n))
        return add_string(c, k, n, items, count);
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(c, n->start_mark, "expected a %s or a list of %ss, got %s", what, what,
                    schema_describe(n));
    yaml_node_item_t *start = n->data.sequence.items.start;
    if ((k->kind == K_STRINGS || (k->flags & F_NOT_EMPTY)) && start == n->data.sequence.items.top)
        return fail(c, n->start_mark, "the list is empty; give at least one");
    int rc = 0;
    for (size_t i = 0; start + i < n->data.sequence.items.top; i++) {
        size_t mark = schema_push(c, "[%zu]", i);
        int r = add_string(c, k, schema_node(c, start[i]), items, count);
        schema_pop(c, mark);
        if (r < 0 && !schema_carry_on(c))
            return -1;
        rc |= r;
    }
    return rc;
}

/* One word of the row's `words` or a non-empty list of them (K_FLAGS):
 * word i sets bit 1 << i; a word given twice is a mistake, as it is
 * likely a slip for another. The field is set only when every word reads. */
static int parse_flags(struct schema_doc *c, const struct key *k, yaml_node_t *n, void *obj)
{
    char *words = words_text(k->words);
    unsigned bits = 0;
    int rc = -1;
    bool list = n->type == YAML_SEQUENCE_NODE;
    if (!list && (n->type != YAML_SCALAR_NODE || schema_is_null(n))) {
        fail(c, n->start_mark, "expected %s, or a list of them, got %s", words, schema_describe(n));
        goto out;
    }
    yaml_node_item_t *start = list ? n->data.sequence.items.start : NULL;
    size_t count = list ? (size_t)(n->data.sequence.items.top - start) : 1;
    if (!count) {
        fail(c, n->start_mark, "the list is empty; give at least one of %s", words);
        goto out;
    }
    bool failed = false;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = list ? schema_node(c, start[i]) : n;
        size_t mark = list ? schema_push(c, "[%zu]", i) : c->key_len;
        char *text = NULL;
        int r = string_of(c, item, words, false, &text);
        size_t w = 0;
        while (r == 0 && k->words[w] && strcmp(k->words[w], text))
            w++;
        if (r == 0 && !k->words[w])
            r = fail(c, item->start_mark, "expected %s", words);
        else if (r == 0 && (bits & (1u << w)))
            r = fail(c, item->start_mark, "'%s' is given twice", text);
        else if (r == 0)
            bits |= 1u << w;
        free(text);
        schema_pop(c, mark);
        if (r < 0 && !schema_carry_on(c))
            goto out;
        failed |= r < 0;
    }
    if (failed)
        goto out;
    *(unsigned *)(void *)((char *)obj + k->off) = bits;
    rc = 0;
out:
    free(words);
    return rc;
}

yaml_node_t *schema_lookup(struct schema_doc *d, yaml_node_t *map, const char *name)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = schema_node(d, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), name))
            return schema_node(d, p->value);
    }
    return NULL;
}

/* One value of a list and where it stands, for first_repeat. */
struct ranked {
    const char *value;
    size_t index;
};

static int ranked_cmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int by_value = strcmp(x->value, y->value);
    return by_value ? by_value : (x->index > y->index) - (x->index < y->index);
}

static int ranked_casecmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int by_value = strcasecmp(x->value, y->value);
    return by_value ? by_value : (x->index > y->index) - (x->index < y->index);
}

/* Where the `n` values of `v` (reordered) first repeat one: the smallest
 * index whose value an earlier one has (*second), and the earliest of
 * those (*first). Sorting keeps a long list from costing the square of its
 * length, as comparing every pair would. */
static bool first_repeat(struct ranked *v, size_t n, bool nocase, size_t *first, size_t *second)
{
    bool found = false;
    if (n < 2)
        return false;
    qsort(v, n, sizeof *v, nocase ? ranked_casecmp : ranked_cmp);
    for (size_t k = 1, start = 0; k < n; k++) {
        if ((nocase ? strcasecmp : strcmp)(v[start].value, v[k].value)) {
            start = k;
            continue;
        }
        if (k == start + 1 && (!found || v[k].index < *second)) {
            *first = v[start].index;
            *second = v[k].index;
            found = true;
        }
    }
    return found;
}

bool schema_find_repeat(size_t *first, size_t *second, const char *const *values, size_t n,
                        bool nocase)
{
    struct ranked *v = xcalloc(n ? n : 1, sizeof *v);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (values[i])
            v[m++] = (struct ranked){values[i], i};
    bool found = first_repeat(v, m, nocase, first, second);
    free(v);
    return found;
}

/* The string field of row `k` in element `i` of array `arr` of `s`. */
static char **field_of(const struct schema *s, const struct key *k, char *arr, size_t i)
{
    return (char **)(void *)(arr + i * s->size + k->off);
}

/* Reports the second of two list elements that share a F_UNIQUE value. */
static int check_unique(struct schema_doc *c, const struct schema *s, yaml_node_t *seq, char *arr)
{
    int rc = -1;
    yaml_node_item_t *items = seq->data.sequence.items.start;
    size_t n = (size_t)(seq->data.sequence.items.top - items);
    const char **values = xcalloc(n ? n : 1, sizeof *values);
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        if (!(k->flags & F_UNIQUE))
            continue;
        size_t i, j;
        for (size_t at = 0; at < n; at++)
            values[at] = *field_of(s, k, arr, at);
        if (!schema_find_repeat(&i, &j, values, n, false))
            continue;
        yaml_node_t *first = schema_node(c, items[i]), *second = schema_node(c, items[j]);
        yaml_node_t *v1 = schema_lookup(c, first, k->name);
        yaml_node_t *v2 = schema_lookup(c, second, k->name);
        const char *b = *field_of(s, k, arr, j);
        schema_push(c, "[%zu].%s", j, k->name);
        fail(c, (v2 ? v2 : second)->start_mark, "duplicate %s %s '%s' (first at line %zu)", s->what,
             k->name, b, (v1 ? v1 : first)->start_mark.line + 1);
        goto out;
    }
    rc = 0;
out:
    free(values);
    return rc;
}

/* A list of mappings, each read with the row's sub-schema; or, for
 * K_AUTO_OR_LIST, the word auto. */
static int parse_list(struct schema_doc *c, const struct key *k, yaml_node_t *n, void *obj)
{
    int rc = -1;
    char *text = NULL;
    bool allow_auto = k->kind == K_AUTO_OR_LIST;
    const char *expected = allow_auto ? "'auto' or a list" : "a list";
    if (allow_auto && n->type == YAML_SCALAR_NODE && !schema_is_null(n)) {
        if (string_of(c, n, expected, false, &text) < 0)
            goto out;
        if (strcmp(text, "auto")) {
            if (k->shape)
                fail(c, n->start_mark, "expected 'auto' or a list of %s", k->shape);
            else
                fail(c, n->start_mark, "expected %s", expected);
            goto out;
        }
        rc = 0;
        goto out;
    }
    if (n->type != YAML_SEQUENCE_NODE) {
        fail(c, n->start_mark, "expected %s, got %s", expected, schema_describe(n));
        goto out;
    }
    yaml_node_item_t *items = n->data.sequence.items.start;
    size_t count = (size_t)(n->data.sequence.items.top - items);
    if (!count) {
        fail(c, n->start_mark, "the list is empty; give at least one %s", k->sub->what);
        goto out;
    }
    const struct schema *s = k->sub;
    char *arr = xcalloc(count, s->size);
    *(void **)(void *)((char *)obj + k->off) = arr;
    *(size_t *)(void *)((char *)obj + k->count_off) = count;
    bool failed = false;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = schema_node(c, items[i]);
        size_t mark = schema_push(c, "[%zu]", i);
        int r =
            item->type == YAML_MAPPING_NODE
                ? parse_map(c, s, item, arr + i * s->size)
                : fail(c, item->start_mark, "expected a mapping, got %s", schema_describe(item));
        schema_pop(c, mark);
        if (r < 0 && !schema_carry_on(c))
            goto out;
        failed |= r < 0;
    }
    /* An item that did not read takes part with what it has: a name left
     * out (NULL) is no repeat. */
    if ((!failed || schema_carry_on(c)) && check_unique(c, s, n, arr) < 0)
        goto out;
    if (failed)
        goto out;
    rc = 0;
out:
    free(text);
    return rc;
}

/* RFC 9110's tchar: what a header name is made of. */
static bool is_token_char(char ch)
{
    return is_alnum(ch) || (ch && strchr("!#$%&'*+.^_`|~-", ch));
}

/* name: value pairs, built so that no header can smuggle in another: a
 * name is a token, a value one line. Which names are refused beyond that
 * (those the caller sets itself) is the row's check. */
static int parse_headers(struct schema_doc *c, const struct key *k, yaml_node_t *n, void *obj)
{
    const struct schema *s = k->sub;
    const struct key *name_row = &s->keys[0], *value_row = &s->keys[1];
    char **headers = (char **)(void *)((char *)obj + k->off);
    size_t *count = (size_t *)(void *)((char *)obj + k->count_off);
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n->start_mark, "expected a mapping of header names to values, got %s",
                    schema_describe(n));
    bool failed = false;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = schema_node(c, p->key), *vn = schema_node(c, p->value);
        if (kn->type != YAML_SCALAR_NODE) {
            fail(c, kn->start_mark, "expected a header name, got %s", schema_describe(kn));
            if (!schema_carry_on(c))
                return -1;
            failed = true;
            continue;
        }
        const char *name = scalar(kn);
        size_t mark = schema_push(c, ".%s", name);
        int rc = -1;
        char *copy = NULL, *value = NULL;
        struct err problem;
        const char *bad = name;
        while (is_token_char(*bad))
            bad++;
        if (!*name || *bad || bad != name + kn->data.scalar.length) {
            fail(c, kn->start_mark,
                 "expected a header name made of letters, digits and "
                 "!#$%%&'*+.^_`|~-");
            goto next;
        }
        copy = xstrdup(name);
        if (k->check && k->check(copy, &problem) < 0) {
            fail(c, kn->start_mark, "%s", problem.msg);
            goto next;
        }
        if (string_of(c, vn, "a string", value_row->flags & F_SECRET, &value) < 0)
            goto next;
        if (!*value) {
            fail(c, vn->start_mark, "expected a non-empty string");
            goto next;
        }
        *headers = xgrowarray(*headers, *count, s->size);
        memset(*headers + *count * s->size, 0, s->size);
        *field_of(s, name_row, *headers, *count) = copy;
        *field_of(s, value_row, *headers, *count) = value;
        (*count)++;
        copy = NULL;
        value = NULL;
        rc = 0;
    next:
        free(copy);
        free(value);
        schema_pop(c, mark);
        if (rc < 0 && !schema_carry_on(c))
            return -1;
        failed |= rc < 0;
    }
    if (failed)
        return -1;
    /* One header per pair, in order: header i was written at pair i. */
    const char **names = xcalloc(*count ? *count : 1, sizeof *names);
    for (size_t i = 0; i < *count; i++)
        names[i] = *field_of(s, name_row, *headers, i);
    size_t first, second;
    bool repeated = schema_find_repeat(&first, &second, names, *count, true);
    free(names);
    if (!repeated)
        return 0;
    const char *name = *field_of(s, name_row, *headers, second);
    schema_push(c, ".%s", name);
    return fail(c, schema_node(c, n->data.mapping.pairs.start[second].key)->start_mark,
                "duplicate header '%s' (header names ignore case)", name);
}

static int parse_value(struct schema_doc *c, const struct key *k, yaml_node_t *n, void *obj)
{
    char *text = NULL;
    switch (k->kind) {
    case K_DURATION:
        if (string_of(c, n, "a duration such as 90s, 30m, 1h", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_INT:
        if (string_of(c, n, "a whole number", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_NUMBER:
        if (string_of(c, n, "a number", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_ENUM:
        if (string_of(c, n, "one of the words listed", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_BOOL:
        /* Only YAML's plain true and false; no ${VAR}, no "yes", no quotes. */
        if (n->type != YAML_SCALAR_NODE || schema_is_null(n))
            return fail(c, n->start_mark, "expected true or false, got %s", schema_describe(n));
        if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
            return fail(c, n->start_mark, "expected true or false, without quotes");
        return store_scalar(c, k, n->start_mark, xstrdup(scalar(n)), obj);
    case K_GLOB:
        if (string_of(c, n, "a glob", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_STRING:
    case K_PATH:
    case K_SECRET_FILE:
        /* A *_file value is where a secret is, not the secret. */
        if (string_of(c, n, "a string", k->kind == K_STRING && (k->flags & F_SECRET), &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_GLOBS:
    case K_STRINGS:
        return parse_strings(c, k, n, obj);
    case K_FLAGS:
        return parse_flags(c, k, n, obj);
    case K_LIST:
    case K_AUTO_OR_LIST:
        return parse_list(c, k, n, obj);
    case K_MAP:
        if (n->type != YAML_MAPPING_NODE)
            return fail(c, n->start_mark, "expected a mapping, got %s", schema_describe(n));
        return parse_map(c, k->sub, n, (char *)obj + k->off);
    case K_HEADERS:
        return parse_headers(c, k, n, obj);
    }
    return fail(c, n->start_mark, "internal error: unknown key kind");
}

/* "a, b or c", each name optionally quoted. */
static char *group_names(const struct schema *s, int group, bool quote)
{
    struct buf b;
    buf_init(&b, 0);
    size_t total = 0, seen = 0;
    for (size_t i = 0; i < s->n_keys; i++)
        total += s->keys[i].group == group;
    for (size_t i = 0; i < s->n_keys; i++) {
        if (s->keys[i].group != group)
            continue;
        if (seen++)
            buf_puts(&b, seen == total ? " or " : ", ");
        buf_printf(&b, quote ? "'%s'" : "%s", s->keys[i].name);
    }
    return buf_steal(&b);
}

/* The defaults of the scalar keys of `s`, for a mapping left out. */
static int defaults_of(struct schema_doc *c, const struct schema *s, yaml_mark_t at, void *obj)
{
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        bool scalar_kind = k->kind == K_DURATION || k->kind == K_BOOL || k->kind == K_INT ||
                           k->kind == K_NUMBER || k->kind == K_ENUM;
        if (k->def && scalar_kind && store_scalar(c, k, at, xstrdup(k->def), obj) < 0)
            return -1;
    }
    return 0;
}

/* Checks the keys of `map` against the rows of `s`, then reads each value.
 * When the document collects every mistake (schema_collect), a mistake
 * skips its key and the reading goes on; the checks across keys and the
 * finish wait for a mapping read without one. */
static int parse_map(struct schema_doc *c, const struct schema *s, yaml_node_t *map, void *obj)
{
    int rc = -1;
    bool failed = false;
    yaml_node_t **given = xcalloc(s->n_keys, sizeof *given);
    yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    size_t n_pairs = (size_t)(map->data.mapping.pairs.top - pairs);
    size_t *row_of = xcalloc(n_pairs, sizeof *row_of); /* the row each pair was found in */

    for (size_t p = 0; p < n_pairs; p++) {
        yaml_node_t *kn = schema_node(c, pairs[p].key);
        row_of[p] = SIZE_MAX; /* until found: a mistake's value is not read */
        if (kn->type != YAML_SCALAR_NODE) {
            fail(c, kn->start_mark, "expected a key name, got %s", schema_describe(kn));
            goto mistake;
        }
        const char *name = scalar(kn);
        size_t i = 0;
        while (i < s->n_keys && strcmp(s->keys[i].name, name))
            i++;
        if (i == s->n_keys) {
            struct buf list;
            buf_init(&list, 0);
            for (size_t j = 0; j < s->n_keys; j++)
                buf_printf(&list, "%s%s", j ? ", " : "", s->keys[j].name);
            fail(c, kn->start_mark, "unknown key '%s' (expected one of: %s)", name, buf_str(&list));
            buf_free(&list);
            goto mistake;
        }
        if (given[i]) {
            fail(c, kn->start_mark, "duplicate key '%s' (first at line %zu)", name,
                 given[i]->start_mark.line + 1);
            goto mistake;
        }
        bool clash = false;
        for (size_t j = 0; s->keys[i].group && j < s->n_keys && !clash; j++)
            clash = given[j] && s->keys[j].group == s->keys[i].group;
        if (clash) {
            char *names = group_names(s, s->keys[i].group, false);
            fail(c, kn->start_mark, "give %s, not both", names);
            free(names);
            goto mistake;
        }
        given[i] = kn;
        row_of[p] = i;
        continue;
    mistake:
        if (!schema_carry_on(c))
            goto out;
        failed = true;
    }
    for (size_t i = 0; i < s->n_keys; i++) {
        const struct key *k = &s->keys[i];
        if ((k->flags & F_REQUIRED) && !given[i]) {
            fail(c, map->start_mark, "missing required key '%s'", k->name);
            if (!schema_carry_on(c))
                goto out;
            failed = true;
        }
        bool group_given = false;
        for (size_t j = 0; k->group && j < s->n_keys; j++)
            group_given |= given[j] && s->keys[j].group == k->group;
        /* The group is named once, at its first row. */
        bool first_of_group = true;
        for (size_t j = 0; k->group && j < i; j++)
            first_of_group &=
                !(s->keys[j].group == k->group && !(s->keys[j].flags & F_GROUP_OPTIONAL));
        if (k->group && !group_given && !(k->flags & F_GROUP_OPTIONAL) && first_of_group) {
            char *names = group_names(s, k->group, true);
            fail(c, map->start_mark, "missing required key %s", names);
            free(names);
            if (!schema_carry_on(c))
                goto out;
            failed = true;
        }
    }
    for (size_t p = 0; p < n_pairs; p++) {
        if (row_of[p] == SIZE_MAX)
            continue;
        const struct key *k = &s->keys[row_of[p]];
        size_t mark = schema_push_key(c, k->name);
        int r = parse_value(c, k, schema_node(c, pairs[p].value), obj);
        schema_pop(c, mark);
        if (r < 0 && !schema_carry_on(c))
            goto out;
        failed |= r < 0;
    }
    if (failed)
        goto out;
    for (size_t i = 0; i < s->n_keys; i++) {
        const struct key *k = &s->keys[i];
        /* A list's default is its absence (as `auto`); finish hooks do the rest. */
        bool scalar_kind = k->kind == K_STRING || k->kind == K_PATH || k->kind == K_GLOB ||
                           k->kind == K_DURATION || k->kind == K_BOOL || k->kind == K_INT ||
                           k->kind == K_NUMBER || k->kind == K_ENUM;
        if (!given[i] && k->kind == K_MAP && (k->flags & F_DEFAULTS)) {
            if (defaults_of(c, k->sub, map->start_mark, (char *)obj + k->off) < 0)
                goto out;
            continue;
        }
        if (given[i] || !k->def || !scalar_kind)
            continue;
        size_t mark = schema_push_key(c, k->name);
        int r = store_scalar(c, k, map->start_mark, xstrdup(k->def), obj);
        schema_pop(c, mark);
        if (r < 0)
            goto out;
    }
    size_t off = 0;
    struct err problem;
    if (s->check && s->check(obj, &off, &problem) < 0) {
        /* Point at the value of the given key that holds the field. */
        yaml_node_t *at = NULL;
        size_t mark = c->key_len;
        for (size_t i = 0; i < s->n_keys && !at; i++)
            if (given[i] && s->keys[i].off == off && (at = schema_lookup(c, map, s->keys[i].name)))
                schema_push_key(c, s->keys[i].name);
        fail(c, (at ? at : map)->start_mark, "%s", problem.msg);
        schema_pop(c, mark);
        goto out;
    }
    if (s->finish)
        s->finish(obj);
    rc = 0;
out:
    free(given);
    free(row_of);
    return rc;
}

int schema_parse(void *out, const struct schema *s, struct schema_doc *d, yaml_node_t *map,
                 struct err *e)
{
    d->e = e;
    return parse_map(d, s, map, out);
}

/* ---- freeing, from the same rows ---- */

void schema_clear(const struct schema *s, void *obj)
{
    if (!obj)
        return;
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        char *field = (char *)obj + k->off;
        switch (k->kind) {
        case K_STRING:
        case K_PATH:
        case K_SECRET_FILE:
        case K_GLOB: {
            char **p = (char **)(void *)field;
            free(*p);
            *p = NULL; /* a key and its *_file twin share one field */
            break;
        }
        case K_DURATION:
        case K_BOOL:
        case K_INT:
        case K_NUMBER:
        case K_ENUM:
        case K_FLAGS:
            break;
        case K_GLOBS:
        case K_STRINGS: {
            char ***v = (char ***)(void *)field;
            size_t *n = (size_t *)(void *)((char *)obj + k->count_off);
            for (size_t i = 0; i < *n; i++)
                free((*v)[i]);
            free(*v);
            *v = NULL;
            *n = 0;
            break;
        }
        case K_LIST:
        case K_AUTO_OR_LIST:
        case K_HEADERS: {
            char **arr = (char **)(void *)field;
            size_t *n = (size_t *)(void *)((char *)obj + k->count_off);
            for (size_t i = 0; i < *n; i++)
                schema_clear(k->sub, *arr + i * k->sub->size);
            free(*arr);
            *arr = NULL;
            *n = 0;
            break;
        }
        case K_MAP:
            schema_clear(k->sub, field);
            break;
        }
    }
}

/* ---- the key reference ---- */

static const char *kind_text(enum key_kind kind)
{
    switch (kind) {
    case K_STRING:
        return "string";
    case K_PATH:
        return "path";
    case K_SECRET_FILE:
        return "path of a secret file";
    case K_GLOB:
        return "glob";
    case K_DURATION:
        return "duration";
    case K_BOOL:
        return "boolean";
    case K_INT:
        return "whole number";
    case K_NUMBER:
        return "number";
    case K_ENUM:
        return "word";
    case K_FLAGS:
        return "words";
    case K_GLOBS:
        return "glob or list of globs";
    case K_STRINGS:
        return "string or list of strings";
    case K_LIST:
        return "list";
    case K_AUTO_OR_LIST:
        return "auto or list";
    case K_MAP:
        return "mapping";
    case K_HEADERS:
        return "mapping of header names to values";
    }
    return "?";
}

static void reference(struct buf *b, const struct schema *s, const char *prefix)
{
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        buf_printf(b, "%s%s (", prefix, k->name);
        if (k->kind == K_INT) {
            buf_printf(b, "whole number from %ld to %ld", k->min, k->max);
        } else if (k->kind == K_DURATION && k->max) {
            char lo[24], hi[24];
            duration_format(lo, sizeof lo, k->min);
            duration_format(hi, sizeof hi, k->max);
            buf_printf(b, "duration from %s to %s", lo, hi);
        } else if (k->kind == K_ENUM || k->kind == K_FLAGS) {
            char *words = words_text(k->words);
            buf_printf(b, "%s%s", words, k->kind == K_FLAGS ? ", or a list of them" : "");
            free(words);
        } else {
            buf_puts(b, kind_text(k->kind));
        }
        if (k->flags & F_REQUIRED)
            buf_puts(b, "; required");
        if (k->group) {
            char *names = group_names(s, k->group, false);
            buf_printf(b, "; give %s of %s",
                       k->flags & F_GROUP_OPTIONAL ? "at most one" : "exactly one", names);
            free(names);
        }
        if (k->def)
            buf_printf(b, "; default %s", k->def);
        if (k->flags & F_SECRET)
            buf_puts(b, "; secret");
        if (k->flags & F_UNIQUE)
            buf_puts(b, "; unique");
        buf_printf(b, ")\n    %s\n", k->help);
        if (k->sub && k->kind != K_HEADERS) {
            char *sub = xasprintf("%s%s%s", prefix, k->name, k->kind == K_MAP ? "." : "[].");
            reference(b, k->sub, sub);
            free(sub);
        }
    }
}

char *schema_reference(const struct schema *s)
{
    struct buf b;
    buf_init(&b, 0);
    reference(&b, s, "");
    return buf_steal(&b);
}
